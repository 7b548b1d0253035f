#!/usr/bin/env bash
# Session 45, after s45_e2e_state.sh (even a shape stage at rb 4 slows the next decode by ~0.6% for its whole length,
# and 2 s of idle does not clear it; no clock event reasons): is it the SMs' shared-memory carveout that the shape
# stage's cuBLASLt kernels leave behind? CUBEFORGE_GPT_CARVEOUT (cuda_common.cuh) sets the GPT kernels' preferred
# carveout: 100 (max shared) should reproduce the slowdown without a shape stage if so; 0 (max L1, the driver still
# gives what a kernel needs) may remove it after one. Carry .devcarry/shape-xz.
# Usage (device tool, repo root): bash tools/device/sessions/s45_carveout.sh
set -uo pipefail
. tools/device/common.sh
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
unpack_xz .devcarry/shape-xz/cubeforge-gen.xz /tmp/cfg || exit 1
for co in "" 100 0; do
  for se in "" "--e2e-shape-rb 4"; do
    echo "== carveout ${co:-unset} ${se:-decodes only}"
    CUBEFORGE_GPT_CARVEOUT=$co timeout 100 /tmp/cfg bench-shape-gpu --synthetic v0.5 --e2e-decodes 3 --e2e-rows 2 \
      --e2e-weights bench $se 2>&1 | grep -E "decodes only|rror"
  done
done
CUBEFORGE_GPT_CARVEOUT=0 timeout 90 /tmp/cfg bench --synthetic v0.5 --quick --batches 1,4 --reps 2 2>&1 | grep -E "TPOT mean|TPOT batch"
timeout 90 /tmp/cfg bench --synthetic v0.5 --quick --batches 1,4 --reps 2 2>&1 | grep -E "TPOT mean|TPOT batch"
