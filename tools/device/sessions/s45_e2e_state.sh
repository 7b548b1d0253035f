#!/usr/bin/env bash
# Session 45, after s45_e2e_decode.sh (a shape stage before each decode slows the whole decode by ~0.7%, uniformly to
# its last quarter, not a transient): is it what the shape stage leaves on the GPU (then a tiny stage at rb 4 does it
# too, and it may fade with idle time) or the GPU's power and thermal state after the stage's tensor-core work (then rb
# 4 does not, and 2 s of idle clears it)? Each configuration with the clock event reasons, SM clock and power sampled.
# Carry .devcarry/shape-xz. Usage (device tool, repo root): bash tools/device/sessions/s45_e2e_state.sh
set -uo pipefail
. tools/device/common.sh
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.limit --format=csv,noheader
unpack_xz .devcarry/shape-xz/cubeforge-gen.xz /tmp/cfg || exit 1
for se in "" "--e2e-shape-rb 4" "--e2e-shape-rb 8" "--e2e-shape-rb 8 --e2e-idle-ms 2000" "--e2e-idle-ms 2000"; do
  echo "== ${se:-decodes only}"
  sampled bash -c "timeout 120 /tmp/cfg bench-shape-gpu --synthetic v0.5 --e2e-decodes 4 --e2e-rows 2 --e2e-weights bench \
    $se 2>&1 | grep -E '^decode|decodes only|rror'"
done
