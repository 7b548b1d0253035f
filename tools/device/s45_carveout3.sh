#!/usr/bin/env bash
# Session 45 (prepared, not run: no device time was left): the carveout policies (cuda_common.cuh,
# gpt_engine_upload.cuh): "one" (the one-prompt kernels prefer max shared) against the default (no preference) and
# 100 (every kernel), the GPT bench of v0.5 and v0.1 at 1 and 4 prompts; "one"'s digests (cuda-check v0.1: session
# 23's) and its decode after a shape stage at 8 rows of capacity, as in the editor. Carry .devcarry/shape-xz (the
# shape build of b1fe4c2 or later).
# Usage (device tool, repo root): bash tools/device/s45_carveout3.sh
set -uo pipefail
. tools/device/common.sh
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
unpack_xz .devcarry/shape-xz/cubeforge-gen.xz /tmp/cfg || exit 1
CUBEFORGE_GPT_CARVEOUT=one timeout 120 /tmp/cfg cuda-check --synthetic v0.1 2>&1 |
  grep -E "digest|rel L2 error|identical|cancel|cuda-check|rror" | head -14
for m in v0.5 v0.1; do
  for co in "" one 100; do
    echo "== $m carveout ${co:-unset}"
    CUBEFORGE_GPT_CARVEOUT=$co timeout 60 /tmp/cfg bench --synthetic $m --quick --batches 1,4 --reps 2 2>&1 |
      grep -E "TPOT batch"
  done
done
for co in "" one; do
  echo "== decodes after a shape stage at rb 4, carveout ${co:-unset}"
  CUBEFORGE_GPT_CARVEOUT=$co timeout 60 /tmp/cfg bench-shape-gpu --synthetic v0.5 --e2e-decodes 3 --e2e-rows 8 \
    --e2e-weights bench --e2e-shape-rb 4 2>&1 | grep -E "decodes only|rror"
done
