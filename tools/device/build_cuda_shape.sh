#!/usr/bin/env bash
# Standalone build of cubeforge-gen with the CUDA backends (GPT + shape) and the CPU shape stage it is checked
# against (core, shape, mesh; no yaml, no CLIP, no GPT CPU code): commands bench-shape-gpu, bench (CUDA GPT), cuda-check.
# Used here to prepare a binary to carry to the GPU machine (OpenBLAS/libgomp/libstdc++ linked statically where
# their static libraries exist, so only libcublas*.so.13 and the driver are needed there), and there as the
# fall-back build. Usage: build_cuda_shape.sh [OUTDIR]   (default .devcarry/cuda-shape)
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT_DIR=${1:-.devcarry/cuda-shape}
mkdir -p "$OUT_DIR/obj"
NVCC=${NVCC:-nvcc}
JOBS=${JOBS:-$(nproc)}
NVFLAGS=(-std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a --use_fast_math -lineinfo --expt-relaxed-constexpr
         -Xptxas -v -Iinference/include -Iinference/src -DCUBEFORGE_HAVE_CUDA=1)
CXXFLAGS=(-std=c++20 -O3 -march=x86-64-v3 -fno-math-errno -fopenmp -Wall -Wextra -Iinference/include -Iinference/src
          -Iinference/cli -DCUBEFORGE_HAVE_CUDA=1)
CUDA_LIB=$(dirname "$(command -v "$NVCC")")/../lib64
for d in /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/openblas /usr/include/x86_64-linux-gnu; do
  [ -f "$d/cblas.h" ] && CXXFLAGS+=(-I"$d") && break
done

SRCS=(inference/src/core/cpu_ops.cpp inference/src/core/safetensors.cpp inference/src/core/safetensors_writer.cpp
      inference/src/core/weights.cpp inference/src/shape/codebook.cpp inference/src/shape/occupancy.cpp
      inference/src/shape/shape_kernels.cpp inference/src/shape/shape_model.cpp inference/src/mesh/analytic_fields.cpp
      inference/src/mesh/marching_cubes.cpp inference/src/mesh/mesh_metrics.cpp inference/src/mesh/occupancy_grid.cpp
      inference/cli/main.cpp inference/cli/cmd_bench_shape_cuda.cpp inference/cli/cmd_bench.cpp
      inference/cli/cmd_cuda_check.cpp inference/cli/gpt_synthetic.cpp)

# compile in parallel, JOBS at a time; the .cu files first (slowest)
pids=()
run_job() {
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do sleep 0.2; done
  "$@" &
  pids+=($!)
}
# incremental: an object newer than its source and every header of inference/ is kept
NEWEST_HDR=$(find inference -name '*.h' -o -name '*.cuh' | xargs stat -c %Y | sort -n | tail -1)
fresh() { [ -f "$2" ] && [ "$(stat -c %Y "$2")" -gt "$NEWEST_HDR" ] && [ "$2" -nt "$1" ]; }
for f in inference/src/cuda/*.cu; do
  o="$OUT_DIR/obj/$(basename "$f" .cu).o"
  fresh "$f" "$o" && continue
  run_job bash -c "'$NVCC' ${NVFLAGS[*]} -c '$f' -o '$o' > '$o.log' 2>&1 || { cat '$o.log'; exit 1; }"
done
for f in "${SRCS[@]}"; do
  o="$OUT_DIR/obj/$(basename "$f" .cpp).o"
  fresh "$f" "$o" && continue
  run_job bash -c "g++ ${CXXFLAGS[*]} -c '$f' -o '$o' 2> '$o.log' || { cat '$o.log'; exit 1; }"
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
[ $rc -eq 0 ] || { echo "build failed"; exit 1; }

LIBS=()
if [ -f "$(g++ -print-file-name=libopenblas.a)" ] && [ "$(g++ -print-file-name=libopenblas.a)" != "libopenblas.a" ]; then
  LIBS+=(-Wl,-Bstatic -lopenblas -Wl,-Bdynamic)
elif [ -f /usr/lib/x86_64-linux-gnu/libopenblas.a ]; then
  LIBS+=(/usr/lib/x86_64-linux-gnu/libopenblas.a)
else
  LIBS+=(-lopenblas)
fi
GOMP_A=$(g++ -print-file-name=libgomp.a)
if [ -f "$GOMP_A" ]; then LIBS+=("$GOMP_A"); else LIBS+=(-lgomp); fi
# libgfortran only if this OpenBLAS needs it (static archives built with LAPACK)
g++ -o "$OUT_DIR/cubeforge-gen" "$OUT_DIR"/obj/*.o -L"$CUDA_LIB" -lcudart_static -lcublas -lcublasLt "${LIBS[@]}" \
    -static-libstdc++ -static-libgcc -ldl -lpthread -lrt -lm 2> "$OUT_DIR/link.log" ||
  g++ -o "$OUT_DIR/cubeforge-gen" "$OUT_DIR"/obj/*.o -L"$CUDA_LIB" -lcudart_static -lcublas -lcublasLt "${LIBS[@]}" \
      -lgfortran -static-libstdc++ -static-libgcc -ldl -lpthread -lrt -lm ||
  { cat "$OUT_DIR/link.log"; exit 1; }
strip "$OUT_DIR/cubeforge-gen"  # symbols off: the carried tree must stay under the 64 MiB transfer limit
echo "built $OUT_DIR/cubeforge-gen"
