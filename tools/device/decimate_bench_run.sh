#!/usr/bin/env bash
# GPU-machine run of `cubeforge-bench-mesh --decimate` (what build_decimate_bench.sh carried): the default model's rb 8
# meshes (generated on the CPU here, greedy) decimated to 20 K faces in one pass and in parallel cells, on all cores
# and on THREADS_ALSO (default 4) threads. Usage (device tool, repo root): [CARRY=.devcarry/dec] bash tools/device/decimate_bench_run.sh
set -uo pipefail
. tools/device/common.sh
C=${CARRY:-.devcarry/dec}
unpack_xz "$C/cubeforge-bench-mesh.xz" /tmp/cubeforge-bench-mesh
export LD_LIBRARY_PATH=$C:${LD_LIBRARY_PATH:-}
echo "CPU: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
mkdir -p /tmp/cf-mesh-cache
/tmp/cubeforge-bench-mesh --decimate --cache /tmp/cf-mesh-cache --reps 5
/tmp/cubeforge-bench-mesh --decimate --cache /tmp/cf-mesh-cache --reps 5 --threads "${THREADS_ALSO:-4}"
