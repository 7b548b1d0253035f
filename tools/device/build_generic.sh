#!/usr/bin/env bash
# Binaries for the generic-width CUDA GPT checks on the GPU machine (tools/device/generic_gpt_run.sh): builds
# cubeforge-gen and inference_tests in a CUDA CMake build (default build-generic: no editor, no mesh IO), relinks
# them with yaml-cpp, OpenBLAS, libgfortran, libgomp and libstdc++ static (the GPU machine has other versions or
# none), strips and xz-compresses them into OUTDIR, and copies the golden cases and the CLIP vocabulary beside them
# (../shared does not travel). Usage: build_generic.sh [BUILD_DIR] [OUTDIR]   (defaults build-generic, .devcarry/generic)
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${1:-build-generic}
OUT_DIR=${2:-.devcarry/generic}
[ -f "$B/CMakeCache.txt" ] || cmake -S . -B "$B" -G Ninja -DCUBEFORGE_BUILD_EDITOR=OFF -DCUBEFORGE_WITH_MESH_IO=OFF \
  -DCMAKE_BUILD_TYPE=Release
cmake --build "$B" -j"${JOBS:-2}" --target cubeforge-gen inference_tests
mkdir -p "$OUT_DIR/shared/golden/cube3d"
A=/usr/lib/x86_64-linux-gnu
STATIC="$A/libyaml-cpp.a $A/libopenblas.a $(g++ -print-file-name=libgfortran.a) $(g++ -print-file-name=libquadmath.a) $(g++ -print-file-name=libgomp.a)"
for t in cubeforge-gen inference_tests; do
  cmd=$(ninja -C "$B" -t commands "bin/$t" | tail -1)
  cmd=${cmd#: && }
  cmd=${cmd%% && *}  # the link itself, without the post-build steps (test discovery)
  cmd=$(echo "$cmd" | sed -e "s# -o bin/$t # -o bin/$t.static #" \
    -e "s#[^ ]*libyaml-cpp.so[^ ]*##g" -e "s#[^ ]*libopenblas.so[^ ]*##g" -e "s#[^ ]*libgomp.so[^ ]*##g")
  (cd "$B" && eval "$cmd $STATIC -static-libstdc++ -static-libgcc -ldl -lm")
  strip "$B/bin/$t.static"
  xz -T1 -6 -c "$B/bin/$t.static" > "$OUT_DIR/$t.xz"
  echo "$t: $(ldd "$B/bin/$t.static" | grep -c '=>') shared libraries: $(ldd "$B/bin/$t.static" | awk '{print $1}' | tr '\n' ' ')"
done
cp ../shared/golden/cube3d/* "$OUT_DIR/shared/golden/cube3d/"
mkdir -p "$OUT_DIR/shared/data/clip-tokenizer"
cp ../shared/data/clip-tokenizer/vocab.json ../shared/data/clip-tokenizer/merges.txt "$OUT_DIR/shared/data/clip-tokenizer/"
du -sh "$OUT_DIR"
