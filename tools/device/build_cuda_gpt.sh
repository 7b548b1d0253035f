#!/usr/bin/env bash
# Standalone build of cubeforge-gen with only the CUDA GPT backend and its bench/cuda-check commands (no CPU model
# sources, no yaml/BLAS): used on the GPU machine, and here to prepare a binary to carry. Usage: build_cuda_gpt.sh OUTDIR
# (EXTRA_NVFLAGS="-DNAME=V ..." adds nvcc flags, e.g. for a compile-time A/B)
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT_DIR=${1:-.devcarry/cuda-gpt}
mkdir -p "$OUT_DIR/obj"
NVCC=${NVCC:-nvcc}
NVFLAGS=(-std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a --use_fast_math -lineinfo --expt-relaxed-constexpr
         -Xptxas -v -Iinference/include -Iinference/src -DCUBEFORGE_HAVE_CUDA=1 ${EXTRA_NVFLAGS:-})
CXXFLAGS=(-std=c++20 -O2 -Wall -Wextra -Iinference/include -DCUBEFORGE_HAVE_CUDA=1)
CUDA_INC=$(dirname "$(command -v "$NVCC")")/../include
CUDA_LIB=$(dirname "$(command -v "$NVCC")")/../lib64
pids=()
# gpt_generic.cu: the engine falls back to the generic (any-width) GPT engine, so it links that too
for f in inference/src/cuda/cuda_gpt_engine.cu inference/src/cuda/cuda_gpt_reference.cu inference/src/cuda/gpt_generic.cu; do
  o="$OUT_DIR/obj/$(basename "$f" .cu).o"
  "$NVCC" "${NVFLAGS[@]}" -c "$f" -o "$o" > "$o.log" 2>&1 & pids+=($!)
done
for f in cmd_bench cmd_cuda_check gpt_synthetic; do
  g++ "${CXXFLAGS[@]}" -I"$CUDA_INC" -c inference/cli/$f.cpp -o "$OUT_DIR/obj/$f.o"
done
g++ "${CXXFLAGS[@]}" -c inference/cli/main.cpp -o "$OUT_DIR/obj/main.o"
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
if [ $rc -ne 0 ]; then cat "$OUT_DIR"/obj/*.log; exit 1; fi
g++ -o "$OUT_DIR/cubeforge-gen" "$OUT_DIR"/obj/*.o -L"$CUDA_LIB" -lcudart_static -lcublas -ldl -lpthread -lrt
echo "built $OUT_DIR/cubeforge-gen"
