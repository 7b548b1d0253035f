#!/usr/bin/env bash
# GPU-machine run for the generic-width CUDA shape engine (issue 8: golden decoder tensors through the CUDA shape path,
# the default model's shape stage on the GPU). One call, logs under $OUT, a short summary last. Needs the binaries of
# tools/device/build_generic.sh (xz) and the golden cases in the carried folder D (default .devcarry/shapegen):
#   CF_COMMIT=<hash> [STAGES=a,b,..] bash D/run_shape_generic.sh D   (the device's .git is stale: pass the commit
#   literally; STAGES: golden,gtest,checksmall,checknew,memcheck,model,bench01 = the default; memcheck_tests:
#   memcheck over the CUDA shape GoogleTests)
# Steps: golden shape cases through CUDA (tiny_v01, tiny_v05), the CUDA shape GoogleTests, bench-shape-gpu checks
# (small: the full-size kernels' instantiations; default/tiny/hd16/hd128: the new head dims and masked widths),
# compute-sanitizer memcheck on a golden shape case, the default model's shape stage GPU vs CPU at rb 8, and the
# full-size v0.1 rb-8 bench rows (the fast path's timings).
set -uo pipefail
. tools/device/common.sh
D=${1:-.devcarry/shapegen}
STAGES=${STAGES:-golden,gtest,checksmall,checknew,memcheck,model,bench01}
has() { [[ ",$STAGES," == *",$1,"* ]]; }
OUT=${OUT:-/tmp/shape-generic-out}
mkdir -p "$OUT" /tmp/sg
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
echo "commit ${CF_COMMIT:-unknown}" | tee "$OUT/commit.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
for t in cubeforge-gen inference_tests; do
  unpack_xz "$D/$t.xz" /tmp/sg/$t
done
G=/tmp/sg/cubeforge-gen
GOLD=$D/shared/golden/cube3d
export CUBEFORGE_SHARED_DIR=$PWD/$D/shared CUBEFORGE_SOURCE_DIR=$PWD
RUN_LOG_DIR="$OUT"
has golden && run golden01 20 $G golden "$GOLD" tiny_v01 --backend cuda --stage shape
has golden && run golden05 20 $G golden "$GOLD" tiny_v05 --backend cuda --stage shape
has gtest && run gtest 40 /tmp/sg/inference_tests --gtest_filter='*CudaShape*'
has checksmall && run checksmall 30 $G bench-shape-gpu --check-only --synthetic small
has checknew && run checknew 40 $G bench-shape-gpu --check-only --synthetic default,tiny,hd16,hd128
has memcheck && run memcheck 40 compute-sanitizer --tool memcheck --leak-check no --print-limit 20 $G golden "$GOLD" tiny_v01 --backend cuda --stage shape
# memcheck over the CUDA shape GoogleTests: both golden cases (head_dim 8) and the default model (width 192, masked rows)
has memcheck_tests && run memcheck_tests 60 compute-sanitizer --tool memcheck --leak-check no --print-limit 20 /tmp/sg/inference_tests --gtest_filter='*CudaShape*'
has model && run model 40 $G shape-pipeline-check --model assets/default-model --rb 8
has bench01 && run bench01 40 $G bench-shape-gpu --synthetic v0.1 --rb 8 --reps 2 --no-dense
echo; echo "######## results"
for f in golden01 golden05; do [ -f "$OUT/$f.log" ] || continue; echo "--- $f"; cut -c1-230 "$OUT/$f.log" | tail -7; done
[ -f "$OUT/gtest.log" ] && echo "--- gtest" && grep -E '^\[ +(OK|FAILED|SKIPPED|PASSED) |default model|tests ran' "$OUT/gtest.log" | head -12
for f in checksmall checknew; do
  [ -f "$OUT/$f.log" ] || continue
  echo "--- $f"; grep -E ' FAIL |aborted|^== check|failures|error|latents \(|arbitrary points \(GPU' "$OUT/$f.log" | cut -c1-200 | head -24
  echo "ok lines: $(grep -c ' ok  ' "$OUT/$f.log")  FAIL lines: $(grep -c ' FAIL ' "$OUT/$f.log")"
done
[ -f "$OUT/memcheck.log" ] && echo "--- memcheck" && grep -E 'ERROR SUMMARY|golden .*cuda shape' "$OUT/memcheck.log" | head -4
[ -f "$OUT/memcheck_tests.log" ] && echo "--- memcheck_tests" && grep -E 'ERROR SUMMARY|PASSED|FAILED' "$OUT/memcheck_tests.log" | head -6
[ -f "$OUT/model.log" ] && echo "--- model" && cut -c1-260 "$OUT/model.log" | tail -12
[ -f "$OUT/bench01.log" ] && echo "--- bench01" && grep -vE '^\s*$' "$OUT/bench01.log" | grep -vE '^CUDA shape engine on' | tail -${SUMMARY_LINES:-30} | cut -c1-220
exit 0
