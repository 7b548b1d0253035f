#!/usr/bin/env bash
# cubeforge-bench-mesh (with --decimate) for the GPU machine's CPU, where the editor's decimation runs next to the GPU
# stages: linked against a CPU build's inference library (default build/), yaml-cpp, OpenBLAS, libgfortran, libgomp
# and libstdc++ static, with Debian's libmeshoptimizer.so beside it; stripped and xz-compressed into OUTDIR.
# Usage: build_decimate_bench.sh [BUILD_DIR] [OUTDIR]   (defaults build, .devcarry/dec); run: decimate_bench_run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build}
OUT_DIR=${2:-.devcarry/dec}
cmake --build "$B" --target cubeforge_inference
mkdir -p "$OUT_DIR"
A=/usr/lib/x86_64-linux-gnu
g++ -std=c++20 -O3 -march=x86-64-v3 -fopenmp -DCUBEFORGE_HAVE_MESH_IO=1 tools/bench/bench_mesh.cpp \
  inference/src/export/decimate.cpp -Iinference/include "$B/inference/libcubeforge_inference.a" \
  "$A/libyaml-cpp.a" "$A/libopenblas.a" "$(g++ -print-file-name=libgfortran.a)" "$(g++ -print-file-name=libquadmath.a)" \
  "$(g++ -print-file-name=libgomp.a)" "$A/libmeshoptimizer.so" -static-libstdc++ -static-libgcc -ldl -lm -lpthread \
  -o "$OUT_DIR/cubeforge-bench-mesh"
strip "$OUT_DIR/cubeforge-bench-mesh"
xz -T2 -6 -c "$OUT_DIR/cubeforge-bench-mesh" > "$OUT_DIR/cubeforge-bench-mesh.xz"
rm "$OUT_DIR/cubeforge-bench-mesh"
cp -L "$A/libmeshoptimizer.so.2d" "$OUT_DIR/"
echo "built $OUT_DIR/cubeforge-bench-mesh.xz"
