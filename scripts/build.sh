#!/usr/bin/env bash
# Configures and builds into build/ (or $CUBEFORGE_BUILD_DIR); extra arguments go to CMake.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${CUBEFORGE_BUILD_DIR:-build}
GEN=(); command -v ninja >/dev/null && GEN=(-G Ninja)
# A configure that was interrupted leaves CMakeCache.txt without the build files: start that one again from scratch.
if [ -f "$BUILD_DIR/CMakeCache.txt" ] && [ ! -f "$BUILD_DIR/build.ninja" ] && [ ! -f "$BUILD_DIR/Makefile" ]; then
  echo "build: $BUILD_DIR has a CMake cache but no build files (an interrupted configure?): configuring again"
  rm -rf "$BUILD_DIR/CMakeCache.txt" "$BUILD_DIR/CMakeFiles"
fi
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" "${GEN[@]}" -DCMAKE_BUILD_TYPE=${CUBEFORGE_BUILD_TYPE:-Release} "$@"
elif [ $# -gt 0 ]; then
  cmake -S . -B "$BUILD_DIR" "$@"
fi
cmake --build "$BUILD_DIR" -j"$(nproc)"
