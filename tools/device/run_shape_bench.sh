#!/usr/bin/env bash
# GPU-machine run for the CUDA shape stage (issue 8), one call: checks against the CPU fp32 path (small and v0.1
# random weights), then the benches (v0.1 and v0.5, rb 7/8/9, two runs each). Logs go to $OUT; a short summary is
# printed last. Uses the binary carried in .devcarry/cuda-shape (tools/device/build_cuda_shape.sh here, or a link of
# a cmake build's objects with static OpenBLAS/libgomp: see docs/cuda-shape.md); builds it there when it does not run. Usage (device tool, repo root, carry .devcarry/cuda-shape):
#   bash tools/device/run_shape_bench.sh [STAGES]   STAGES: comma list of checksmall,check,bench01,bench05,e2e,sanitize
#   (default check,bench01,bench05,e2e); BENCH_FLAGS adds options to the bench runs (e.g. --no-dense)
set -uo pipefail
. tools/device/common.sh
OUT=${OUT:-/tmp/cuda-shape-out}
mkdir -p "$OUT"
STAGES=${1:-check,bench01,bench05,e2e}
BENCH_FLAGS=${BENCH_FLAGS:-}
has() { [[ ",$STAGES," == *",$1,"* ]]; }
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw,memory.used --format=csv |
  tee "$OUT/gpu.txt"
# The device's copy of .git is the session's starting checkout, not the working tree that was sent, so its
# `git log` names the wrong commit: the caller passes the hash literally (CF_COMMIT=abc123 bash ...).
echo "commit ${CF_COMMIT:-unknown (pass CF_COMMIT=<hash of the tree the binary was built from>)}" | tee "$OUT/commit.txt"
BIN=.devcarry/cuda-shape/cubeforge-gen
XZ=${SHAPE_XZ:-.devcarry/shape-xz/cubeforge-gen.xz}  # compressed carry (keeps the carried tree under 64 MiB)
if [ -f "$XZ" ]; then
  mkdir -p /tmp/cf-shape-bin
  unpack_xz "$XZ" /tmp/cf-shape-bin/cubeforge-gen
  BIN=/tmp/cf-shape-bin/cubeforge-gen
fi
if ! "$BIN" --help >/dev/null 2>&1; then
  echo "carried binary does not run here ($(ldd "$BIN" 2>&1 | grep -i 'not found' | head -3)); building"
  t0=$(date +%s)
  JOBS=$(nproc) bash tools/device/build_cuda_shape.sh /tmp/cfshape > "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
  BIN=/tmp/cfshape/cubeforge-gen
  echo "built in $(( $(date +%s) - t0 )) s"
fi
RUN_LOG_DIR="$OUT"
has checksmall && run checksmall 30 "$BIN" bench-shape-gpu --check-only --synthetic small
has check && run check01 60 "$BIN" bench-shape-gpu --check-only --synthetic v0.1
has bench01 && run bench01 50 "$BIN" bench-shape-gpu --synthetic v0.1 --rb 7,8,9 --reps 2 $BENCH_FLAGS
has bench05 && run bench05 50 "$BIN" bench-shape-gpu --synthetic v0.5 --rb 7,8,9 --reps 2 $BENCH_FLAGS
has e2e && run e2e 150 "$BIN" bench-shape-gpu --e2e-only --synthetic v0.1,v0.5 --rb 7,8,9 --reps 3
# compute-sanitizer (memcheck, then initcheck) over the shape engine's checks on the small random model: latent
# decode, dense + adaptive occupancy, marching cubes, the preview path
if has sanitize && command -v compute-sanitizer >/dev/null; then
  run sanitize 120 compute-sanitizer --tool memcheck --leak-check no --print-limit 20 "$BIN" bench-shape-gpu --check-only --synthetic small
  run initcheck 120 compute-sanitizer --tool initcheck --print-limit 20 "$BIN" bench-shape-gpu --check-only --synthetic small
fi
echo; echo "######## results"
for f in "$OUT"/sanitize.log "$OUT"/initcheck.log; do
  [ -f "$f" ] && { echo "--- $(basename "$f")"; grep -E 'ERROR SUMMARY|Error|error' "$f" | head -8; }
done
for f in "$OUT"/checksmall.log "$OUT"/check01.log; do
  [ -f "$f" ] && { echo "--- $(basename "$f")"; grep -E ' ok  | FAIL |aborted|checks:|setup|error|logits range' "$f" | cut -c1-200; }
done
for f in "$OUT"/bench01.log "$OUT"/bench05.log; do
  [ -f "$f" ] && { echo "--- $(basename "$f")"; grep -vE '^\s*$' "$f" | grep -vE '^CUDA shape engine on' | grep -E "${SUMMARY_RE:-.}" | tail -${SUMMARY_LINES:-48}; }
done
[ -f "$OUT/e2e.log" ] && { echo "--- e2e.log"; grep -vE '^\s*$' "$OUT/e2e.log" | tail -60; }
exit 0
