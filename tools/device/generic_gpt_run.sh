#!/usr/bin/env bash
# GPU-machine run for the generic-width CUDA GPT path (gpt_generic.h), one call: the golden cases through the CUDA
# path (cubeforge-gen golden --backend cuda), the GoogleTest (CudaGeneric*), prompt -> tokens on the default model CPU
# vs GPU (gpt-compare), the generic kernels at the real widths against the fp32 GPU reference (cuda-check --synthetic
# tiny with CUBEFORGE_CUDA_GPT=generic), and compute-sanitizer memcheck on one golden case. Carry .devcarry/generic
# (tools/device/build_generic.sh). Usage (device tool, repo root): CF_COMMIT=<hash> bash tools/device/generic_gpt_run.sh
set -uo pipefail
OUT=${OUT:-/tmp/generic-out}
mkdir -p "$OUT"
C=.devcarry/generic
L=/tmp/cf-generic-logs
rm -rf "$L"; mkdir -p "$L"
echo "commit ${CF_COMMIT:-unknown (pass CF_COMMIT=<hash of the tree the binaries were built from>)}" | tee "$L/commit.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$L/gpu.txt"
for f in cubeforge-gen inference_tests; do
  python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" "$C/$f.xz" "/tmp/$f"
  chmod +x "/tmp/$f"
done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
ldd /tmp/cubeforge-gen | grep -i "not found"
G=$C/shared/golden/cube3d
run() {  # name timeout cmd...
  local name=$1 to=$2; shift 2
  local t0=$(date +%s%N)
  timeout "$to" "$@" > "$L/$name.log" 2>&1
  local rc=$?
  echo "== $name rc=$rc $(( ($(date +%s%N) - t0) / 1000000 )) ms"
}
run golden01 60 /tmp/cubeforge-gen golden "$G" tiny_v01 --backend cuda
run golden05 60 /tmp/cubeforge-gen golden "$G" tiny_v05 --backend cuda
run gtest 120 env CUBEFORGE_SHARED_DIR="$C/shared" CUBEFORGE_SOURCE_DIR="$PWD" /tmp/inference_tests --gtest_filter='*CudaGeneric*'
run compare 150 /tmp/cubeforge-gen gpt-compare --model assets/default-model --runs 3
run check1536 90 env CUBEFORGE_CUDA_GPT=generic /tmp/cubeforge-gen cuda-check --synthetic tiny
command -v compute-sanitizer >/dev/null &&
  run memcheck 120 compute-sanitizer --tool memcheck --leak-check no --print-limit 20 /tmp/cubeforge-gen golden "$G" tiny_v05 --backend cuda
echo; echo "######## results"
for n in golden01 golden05; do echo "--- $n"; cat "$L/$n.log"; done
echo "--- gtest"; grep -E "^\[ +(OK|FAILED|SKIPPED|PASSED) |Failure|Expected|Which is|  default model|rc=" "$L/gtest.log" | head -30
echo "--- compare"; tail -14 "$L/compare.log"
echo "--- check1536"; grep -vE '^\s*$' "$L/check1536.log" | grep -vE '^  step [12]:' | tail -16
[ -f "$L/memcheck.log" ] && { echo "--- memcheck"; grep -E "ERROR SUMMARY|Invalid|golden tiny" "$L/memcheck.log" | head -8; }
tar -C "$L" -czf "$OUT/generic-logs.tgz" .
exit 0
