#!/usr/bin/env bash
# Session 47, first device call. On an H200: the final table of the shape build (final_table.sh: cuda-check v0.1,
# the GPT benches under the default carveout "one", the shape stage, prompt -> mesh), then the one-prompt and 4-prompt
# benches under "driver" (the driver's choice, the default before session 46) and the decode after a shape stage under
# driver / one. On any other card (unless H200_ONLY=1, which then runs nothing): cuda-check v0.1 under "one" (session
# 23's digests expected) and the decode after a shape stage under driver / one.
# Carry .devcarry/shape-xz (a shape build; CF_COMMIT names its commit). ~1 min on an H100, ~5 min on an H200.
# Usage (device tool, repo root): [H200_ONLY=1] CF_COMMIT=<hash> bash tools/device/sessions/s47_call1.sh
set -uo pipefail
. tools/device/common.sh
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader)
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
h200=0; case "$gpu" in *H200*) h200=1 ;; esac
if [ $h200 = 0 ] && [ "${H200_ONLY:-0}" = 1 ]; then echo "not an H200 (H200_ONLY=1): nothing run"; exit 0; fi
decodes() {
  for co in driver one; do
    echo "== decodes after a shape stage at rb 4, carveout $co"
    CUBEFORGE_GPT_CARVEOUT=$co timeout 60 /tmp/cfg bench-shape-gpu --synthetic v0.5 --e2e-decodes 3 --e2e-rows 8 \
      --e2e-weights bench --e2e-shape-rb 4 2>&1 | grep -E "decodes only|rror"
  done
}
if [ $h200 = 1 ]; then
  CF_COMMIT=${CF_COMMIT:-unknown} bash tools/device/final_table.sh
  cp .devcarry/cuda-shape/cubeforge-gen /tmp/cfg
  for m in v0.5 v0.1; do
    echo "== $m batches 1,4 carveout driver (the final table above: one)"
    CUBEFORGE_GPT_CARVEOUT=driver timeout 60 /tmp/cfg bench --synthetic "$m" --quick --batches 1,4 --reps 2 2>&1 |
      grep -E "TPOT batch"
  done
  decodes
  exit 0
fi
unpack_xz .devcarry/shape-xz/cubeforge-gen.xz /tmp/cfg || exit 1
echo "== cuda-check v0.1, default carveout (one)"
timeout 150 /tmp/cfg cuda-check --synthetic v0.1 2>&1 |
  grep -E "digest|rel L2 error|identical|cancel|cuda-check|rror" | head -14
decodes
