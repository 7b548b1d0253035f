#!/usr/bin/env bash
# Session 47, first device call. On any card: cuda-check v0.1 under the default carveout "one" (session 23's digests
# expected) and the decode after a shape stage under driver / one (is "one" immune to what ran before, as 100 was?).
# Only on an H200: the one-prompt and 4-prompt benches under driver / one, then the final table of the same build
# (final_table.sh). H100 bisection results are in docs/cuda-gpt.md, session 46; only the H200 is new there.
# Carry .devcarry/shape-xz (a shape build; CF_COMMIT names its commit). ~1.5 min on an H100, ~5-6 min on an H200
# (there the final table's cuda-check is the one run).
# H200_ONLY=1: on any other card run nothing (when the H100 part has already run).
# Usage (device tool, repo root): [H200_ONLY=1] CF_COMMIT=<hash> bash tools/device/s47_call1.sh
set -uo pipefail
. tools/device/common.sh
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader)
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
case "$gpu" in *H200*) ;; *) [ "${H200_ONLY:-0}" = 1 ] && { echo "not an H200 (H200_ONLY=1): nothing run"; exit 0; } ;; esac
unpack_xz .devcarry/shape-xz/cubeforge-gen.xz /tmp/cfg || exit 1
case "$gpu" in
  *H200*) echo "(cuda-check v0.1 under the default carveout: in the final table below)" ;;
  *) echo "== cuda-check v0.1, default carveout (one)"
     timeout 150 /tmp/cfg cuda-check --synthetic v0.1 2>&1 |
       grep -E "digest|rel L2 error|identical|cancel|cuda-check|rror" | head -14 ;;
esac
for co in driver one; do
  echo "== decodes after a shape stage at rb 4, carveout $co"
  CUBEFORGE_GPT_CARVEOUT=$co timeout 60 /tmp/cfg bench-shape-gpu --synthetic v0.5 --e2e-decodes 3 --e2e-rows 8 \
    --e2e-weights bench --e2e-shape-rb 4 2>&1 | grep -E "decodes only|rror"
done
case "$gpu" in *H200*) ;; *) echo "not an H200: benches and final table skipped"; exit 0 ;; esac
for m in v0.5 v0.1; do
  for co in driver one; do
    echo "== $m batches 1,4 carveout $co"
    CUBEFORGE_GPT_CARVEOUT=$co timeout 60 /tmp/cfg bench --synthetic "$m" --quick --batches 1,4 --reps 2 2>&1 |
      grep -E "TPOT batch"
  done
done
CF_COMMIT=${CF_COMMIT:-unknown} bash tools/device/final_table.sh
