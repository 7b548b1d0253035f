#!/usr/bin/env bash
# The README's test command: installs packages, builds, runs every test; then, when CUBEFORGE_SANITIZE_TESTS=1
# (CI sets it), the same tests under ASan+UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
( cd build && ctest --output-on-failure -j"$(nproc)" --timeout 900 )
if [ "${CUBEFORGE_SANITIZE_TESTS:-0}" = "1" ]; then
  CUBEFORGE_BUILD_DIR=build-asan CUBEFORGE_BUILD_TYPE=RelWithDebInfo bash scripts/build.sh \
    -DCUBEFORGE_SANITIZE=ON -DCUBEFORGE_ENABLE_CUDA=OFF -DCUBEFORGE_BUILD_EDITOR=OFF
  ( cd build-asan && ASAN_OPTIONS=detect_leaks=0 ctest --output-on-failure -j"$(nproc)" --timeout 900 -LE "slow|training|gui" )
fi
echo "all tests passed"
