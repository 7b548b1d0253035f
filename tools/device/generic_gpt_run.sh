#!/usr/bin/env bash
# GPU-machine run for the generic-width CUDA GPT path (gpt_generic.h), one call: the golden cases through the CUDA
# path (cubeforge-gen golden --backend cuda), the GoogleTest (CudaGeneric*), prompt -> tokens on the default model CPU
# vs GPU (gpt-compare), the generic kernels at the real widths against the fp32 GPU reference (cuda-check --synthetic
# tiny with CUBEFORGE_CUDA_GPT=generic), and compute-sanitizer memcheck on one golden case. The GoogleTest runs
# twice: decode Linears as one-warp-per-column GEMVs (default) and as the tiled GEMM (CUBEFORGE_GENERIC_TILED=1). Carry .devcarry/generic
# (tools/device/build_generic.sh). Usage (device tool, repo root): CF_COMMIT=<hash> bash tools/device/generic_gpt_run.sh
set -uo pipefail
. tools/device/common.sh
OUT=${OUT:-/tmp/generic-out}
mkdir -p "$OUT"
C=.devcarry/generic
L=/tmp/cf-generic-logs
rm -rf "$L"; mkdir -p "$L"
echo "commit ${CF_COMMIT:-unknown (pass CF_COMMIT=<hash of the tree the binaries were built from>)}" | tee "$L/commit.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$L/gpu.txt"
for f in cubeforge-gen inference_tests; do
  unpack_xz "$C/$f.xz" "/tmp/$f"
done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
ldd /tmp/cubeforge-gen | grep -i "not found"
G=$C/shared/golden/cube3d
RUN_LOG_DIR="$L"
T0=$(date +%s)
run golden01 40 /tmp/cubeforge-gen golden "$G" tiny_v01 --backend cuda; cat "$L/golden01.log"
run golden05 40 /tmp/cubeforge-gen golden "$G" tiny_v05 --backend cuda; cat "$L/golden05.log"
run gtest 60 env CUBEFORGE_SHARED_DIR="$C/shared" CUBEFORGE_SOURCE_DIR="$PWD" /tmp/inference_tests --gtest_filter='*CudaGeneric*'
grep -E "^\[ +(OK|FAILED|SKIPPED|PASSED) |Failure|Expected|Which is|  default model" "$L/gtest.log" | head -30
# the same tests with the tiled GEMM for every Linear (the first version's decode): timing comparison
run gtest_tiled 60 env CUBEFORGE_GENERIC_TILED=1 CUBEFORGE_SHARED_DIR="$C/shared" CUBEFORGE_SOURCE_DIR="$PWD" /tmp/inference_tests --gtest_filter='*CudaGeneric*'
grep -E "^\[ +(OK|FAILED|PASSED) |Failure|  default model" "$L/gtest_tiled.log" | head -12
run compare 60 /tmp/cubeforge-gen gpt-compare --model assets/default-model --runs 3; tail -14 "$L/compare.log"
run check1536 45 env CUBEFORGE_CUDA_GPT=generic /tmp/cubeforge-gen cuda-check --synthetic tiny
grep -vE '^\s*$' "$L/check1536.log" | grep -vE '^  step [12]:' | tail -16
# memcheck only while the call is still short (SANITIZE_BEFORE_S seconds since the first stage)
if command -v compute-sanitizer >/dev/null && [ $(( $(date +%s) - T0 )) -lt ${SANITIZE_BEFORE_S:-120} ]; then
  run memcheck 60 compute-sanitizer --tool memcheck --leak-check no --print-limit 20 /tmp/cubeforge-gen golden "$G" tiny_v05 --backend cuda
  grep -E "ERROR SUMMARY|Invalid|golden tiny" "$L/memcheck.log" | head -8
fi
tar -C "$L" -czf "$OUT/generic-logs.tgz" .
exit 0
