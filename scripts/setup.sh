#!/usr/bin/env bash
# Installs the Debian packages the build and tests need; skips what is already installed (idempotent).
set -euo pipefail
PKGS=(cmake ninja-build g++ pkg-config googletest libgtest-dev libgmock-dev libbenchmark-dev
  libimgui-dev libglfw3-dev python3-glad libassimp-dev libstb-dev libgl1-mesa-dev libegl-dev
  xvfb xauth x11-utils xdotool imagemagick mesa-utils libosmesa6-dev libegl1-mesa-dev
  nlohmann-json3-dev libglm-dev libmeshoptimizer-dev libcli11-dev libspdlog-dev libfmt-dev
  libtbb-dev libeigen3-dev libopenblas-dev libyaml-cpp-dev libpng-dev python3-numpy
  python3-torch python3-yaml)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PKGS[@]} packages present"
  exit 0
fi
echo "setup: installing ${missing[*]}"
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
