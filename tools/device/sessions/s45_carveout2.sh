#!/usr/bin/env bash
# Session 45: the max-shared carveout for the GPT kernels (CUBEFORGE_GPT_CARVEOUT=100; s45_carveout.sh: -1.4% at v0.5
# one prompt, and the decode no longer slowed by a shape stage before it) checked and priced: cuda-check v0.1 with it
# (the digests must be session 23's: no arithmetic changes), the GPT bench of v0.1 and v0.5 at 1 and 4 prompts
# without and with it, and prompt -> mesh v0.5 rb 8 with it. Carry .devcarry/shape-xz.
# Usage (device tool, repo root): bash tools/device/sessions/s45_carveout2.sh
set -uo pipefail
. tools/device/common.sh
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
unpack_xz .devcarry/shape-xz/cubeforge-gen.xz /tmp/cfg || exit 1
CUBEFORGE_GPT_CARVEOUT=100 timeout 120 /tmp/cfg cuda-check --synthetic v0.1 2>&1 |
  grep -E "digest|rel L2 error|identical|cancel|cuda-check|rror" | head -14
for m in v0.1 v0.5; do
  for co in "" 100; do
    echo "== $m carveout ${co:-unset}"
    CUBEFORGE_GPT_CARVEOUT=$co timeout 60 /tmp/cfg bench --synthetic $m --quick --batches 1,4 --reps 2 2>&1 |
      grep -E "TPOT mean|TPOT batch"
  done
done
echo "== e2e v0.5 rb 8 carveout 100"
CUBEFORGE_GPT_CARVEOUT=100 timeout 60 /tmp/cfg bench-shape-gpu --e2e-only --synthetic v0.5 --rb 8 --reps 2 \
  --e2e-rows 8 2>&1 | grep -E "^[12] |median"
