#!/usr/bin/env bash
# GPU-machine run for the CUDA GPT backend (issue 7): correctness (cuda-check), benchmarks (bench), variants and
# compute-sanitizer, in one call. Logs go to $OUT; a short table is printed last.
# Usage (device tool, repo root): bash tools/device/cuda_gpt_run.sh [STAGES]   STAGES: comma list of
#   check,checkmicro,bench01,bench05,variants,profile,sanitize (default: all)
# Env: FALLBACK=0     variant bits added to every command if the default path fails the smoke test;
#      SANITIZE_BEFORE_S / SANITIZE_S / NO_INITCHECK / INITCHECK_S: run memcheck only if started within that many
#      seconds, its timeout, skip initcheck, initcheck's timeout (default 150 s).
#      ATTRIB="16,32"  engine variants teacher-forced against the same fp32 reference in check01 (error attribution);
#      VARIANTS="16 256" variant bit sets benchmarked (v0.1, quick, batch 1) in the variants stage.
set -uo pipefail
. tools/device/common.sh
OUT=${OUT:-/tmp/cuda-gpt-out}
mkdir -p "$OUT"
STAGES=${1:-check,checkmicro,bench01,bench05,variants,profile,sanitize}
ATTRIB=${ATTRIB:-}
VARIANTS=${VARIANTS:-16 256}
has() { [[ ",$STAGES," == *",$1,"* ]]; }
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee "$OUT/gpu.txt"
BIN=.devcarry/cuda-gpt/cubeforge-gen
if ! "$BIN" --help >/dev/null 2>&1; then
  echo "carried binary does not run here ($(ldd "$BIN" 2>&1 | grep -i 'not found' | head -3)); building"
  t0=$(date +%s)
  bash tools/device/build_cuda_gpt.sh /tmp/cfbuild > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
  BIN=/tmp/cfbuild/cubeforge-gen
  echo "built in $(( $(date +%s) - t0 )) s"
fi
RUN_LOG_DIR="$OUT"
T_START=$(date +%s)
# smoke test first: a hang or crash here stops the run before it burns the lease. If the default decode path
# fails, FALLBACK (variant bits of a known-good path) is added to every later command so the call still measures.
DEFV=()
if ! run smoke 45 "$BIN" bench --synthetic tiny --quick --batches 1 --reps 1; then
  tail -30 "$OUT/smoke.log"
  [ -n "${FALLBACK:-}" ] || exit 1
  echo "default path failed: retrying with --variant $FALLBACK"
  DEFV=(--variant "$FALLBACK")
  run smoke_fallback 45 "$BIN" bench --synthetic tiny --quick --batches 1 --reps 1 "${DEFV[@]}" || { tail -30 "$OUT/smoke_fallback.log"; exit 1; }
fi
grep -E "TPOT mean|error|decode GEMVs" "$OUT"/smoke*.log
has checkmicro && run checkmicro1 40 "$BIN" cuda-check --synthetic micro1
has checkmicro && run checkmicro2 40 "$BIN" cuda-check --synthetic micro2
has check && run check01 200 "$BIN" cuda-check --synthetic v0.1 ${ATTRIB:+--attribute "$ATTRIB"} "${DEFV[@]}"
has bench01 && run bench01 100 "$BIN" bench --synthetic v0.1 "${DEFV[@]}"
if has variants; then
  i=0
  for bits in $VARIANTS; do
    v="--variant $bits"
    i=$((i+1)); run "var$i" 60 "$BIN" bench --synthetic v0.1 --quick --batches 1 --reps 1 $v
    sed -i "1i variant: $v" "$OUT/var$i.log"
  done
fi
has bench05 && run bench05 120 "$BIN" bench --synthetic v0.5 "${DEFV[@]}"
if has profile && command -v ncu >/dev/null; then
  run profile 120 ncu --clock-control none --metrics gpu__time_duration.sum -k "regex:gemv_kernel|gemv_ring_kernel|attn_decode|topp" \
      --launch-skip 72 --launch-count 36 --csv "$BIN" bench --synthetic tiny --quick --batches 1 --reps 1 "${DEFV[@]}"
  python3 - "$OUT/profile.log" > "$OUT/profile_summary.txt" <<'PY' || true
import csv, sys, re, collections
rows = [l for l in open(sys.argv[1]) if l.startswith('"')]
agg = collections.OrderedDict()
for r in csv.DictReader(rows):
    if r.get("Metric Name") != "gpu__time_duration.sum": continue
    n = r["Kernel Name"]; m = re.search(r"(gemv_kernel|gemv_ring_kernel)<(.*?)>", n)
    key = (m.group(1) + "<" + m.group(2) + ">") if m else n.split("(")[0]
    v = float(r["Metric Value"].replace(",", "")); u = r["Metric Unit"]
    v = v / 1000.0 if u in ("nsecond", "ns") else (v * 1000.0 if u in ("msecond", "ms") else v)
    agg.setdefault(key, []).append(v)
for k, v in agg.items(): print(f"{sum(v)/len(v):8.2f} us  x{len(v):3d}  {k[:110]}")
PY
fi
if has sanitize && command -v compute-sanitizer >/dev/null && [ $(( $(date +%s) - T_START )) -lt ${SANITIZE_BEFORE_S:-100000} ]; then
  # --copy-mb 64: the bench's 2 GiB reference copy (10 reps) made initcheck run past its 100 s limit in session 7
  run sanitize ${SANITIZE_S:-100} compute-sanitizer --tool memcheck --leak-check no --print-limit 20 "$BIN" bench --synthetic tiny --quick --batches 1,4,8 --reps 1 --copy-mb 64
  [ -n "${NO_INITCHECK:-}" ] || run initcheck ${INITCHECK_S:-150} compute-sanitizer --tool initcheck --print-limit 20 "$BIN" bench --synthetic tiny --quick --batches 1 --reps 1 --copy-mb 64
fi
echo; echo "######## results"
for f in "$OUT"/check01.log; do [ -f "$f" ] && { echo "--- $(basename "$f")"; grep -vE '^\s*$' "$f" | grep -vE '^  step [12]:' | tail -18; }; done
for f in "$OUT"/bench01.log "$OUT"/bench05.log; do [ -f "$f" ] && { echo "--- $(basename "$f")"; sed -n '/== summary/,$p' "$f"; grep -E "WARNING|error|top-p:" "$f"; }; done
for f in "$OUT"/var*.log; do [ -f "$f" ] && { echo "--- $(basename "$f") $(head -1 "$f")"; grep -E "TPOT mean|TPOT batch|error" "$f"; }; done
[ -f "$OUT/profile_summary.txt" ] && { echo "--- profile (tiny, per kernel, isolated)"; cat "$OUT/profile_summary.txt"; }
for f in "$OUT"/checkmicro1.log "$OUT"/checkmicro2.log; do [ -f "$f" ] && { echo "--- $(basename "$f")"; grep -E "rel L2|identical|cancel|cuda-check|bitwise|step " "$f"; }; done
for f in "$OUT"/sanitize.log "$OUT"/initcheck.log; do [ -f "$f" ] && { echo "--- $(basename "$f")"; grep -E "ERROR SUMMARY|Invalid|Uninitialized|error" "$f" | head -8; }; done
# at most 8 files come back: one archive of every log
(cd "$OUT" && tar czf logs.tgz --remove-files *.log *.txt 2>/dev/null)
exit 0
