#!/usr/bin/env bash
# Session 8 GPU-machine call (CUDA GPT TPOT, issue 7), in order of priority (the device time is short): the
# STAGES1 stages of cuda_gpt_run.sh on the default path, then the CANDIDATES variant sets (quick v0.1 B1 each, "0" =
# the default as the baseline of the same kind); the fastest candidate, when it beats the baseline by 1 %, also gets
# the v0.1 cuda-check, full v0.1 / v0.5 benches and a memcheck, so that it can become the default with measured
# numbers; then the STAGES2 stages (VARIANTS, default bench). Logs: one tar under $OUT.
# Usage (device tool, repo root, carry .devcarry/tpot8/carry):
#   CF_COMMIT=abc1234 ATTRIB=... VARIANTS="..." CANDIDATES="0 24576 40960" bash tools/device/tpot8_run.sh
set -uo pipefail
. tools/device/common.sh
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
OUTDIR=${OUT:-/tmp/tpot8-out}
LOGS=/tmp/tpot8-logs
rm -rf "$LOGS"; mkdir -p "$LOGS/std" "$LOGS/std2" "$LOGS/cand"
mkdir -p .devcarry/cuda-gpt
unpack_xz .devcarry/tpot8/carry/cubeforge-gen.xz .devcarry/cuda-gpt/cubeforge-gen
echo "binary of commit ${CF_COMMIT:-unknown}" | tee "$LOGS/commit.txt"
BIN=.devcarry/cuda-gpt/cubeforge-gen
OUT="$LOGS/std" bash tools/device/cuda_gpt_run.sh "${STAGES1:-check,sanitize}"

RUN_LOG_DIR="$LOGS/cand"
tpot() { grep -m1 "TPOT mean" "$1" | awk -F'|' '{print $3}' | awk '{print $1}'; }
best=""; best_t=""; base_t=""
echo; echo "######## candidates (v0.1, quick, B1)"
for v in ${CANDIDATES:-}; do
  run "quick_$v" 60 "$BIN" bench --synthetic v0.1 --quick --batches 1 --reps 1 --variant "$v"
  t=$(tpot "$RUN_LOG_DIR/quick_$v.log")
  echo "variant $v: TPOT ${t:-?} ms"
  [ -n "$t" ] || continue
  [ "$v" = 0 ] && base_t=$t
  if [ -z "$best_t" ] || awk "BEGIN{exit !($t < $best_t)}"; then best=$v; best_t=$t; fi
done
if [ -n "$best" ] && [ "$best" != 0 ] && [ -n "$base_t" ] && awk "BEGIN{exit !($best_t < 0.99 * $base_t)}"; then
  echo "best candidate $best ($best_t ms vs default $base_t ms): full benches, cuda-check, memcheck"
  run best_bench01 100 "$BIN" bench --synthetic v0.1 --variant "$best"
  echo "--- best_bench01"; sed -n '/== summary/,$p' "$RUN_LOG_DIR/best_bench01.log"
  command -v compute-sanitizer >/dev/null &&
    run best_memcheck 100 compute-sanitizer --tool memcheck --leak-check no --print-limit 20 "$BIN" bench \
      --synthetic tiny --quick --batches 1,4,8 --reps 1 --copy-mb 64 --variant "$best"
  echo "--- best_memcheck"; grep -E "ERROR SUMMARY" "$RUN_LOG_DIR/best_memcheck.log"
  run best_check01 200 "$BIN" cuda-check --synthetic v0.1 --variant "$best"
  echo "--- best_check01"; grep -E "rel L2 error|identical|cancel|cuda-check|==" "$RUN_LOG_DIR/best_check01.log"
  run best_bench05 120 "$BIN" bench --synthetic v0.5 --variant "$best"
  echo "--- best_bench05"; sed -n '/== summary/,$p' "$RUN_LOG_DIR/best_bench05.log"
else
  echo "no candidate beats the default by 1 % (best ${best:-none} ${best_t:-?} ms, default ${base_t:-?} ms)"
fi
[ "${STAGES2:-variants,bench01}" != none ] && OUT="$LOGS/std2" bash tools/device/cuda_gpt_run.sh "${STAGES2:-variants,bench01}"
(cd "$LOGS" && tar czf "$OUTDIR/logs.tgz" .) && echo "logs: $OUTDIR/logs.tgz"
exit 0
