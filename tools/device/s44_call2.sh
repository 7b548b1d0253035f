#!/usr/bin/env bash
# Session 44, the short form of s44_call1.sh for the last ~200 s of a device budget: cuda-check v0.1 with the LN by
# linearity on, then one prompt's TPOT with it off and on (the new binary only), v0.1 and v0.5, two rounds in turn.
# Carry .devcarry/shape-xz. Usage (device tool, repo root): bash tools/device/s44_call2.sh
set -uo pipefail
. tools/device/common.sh
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
unpack_xz .devcarry/shape-xz/cubeforge-gen.xz /tmp/new || exit 1
echo "== cuda-check v0.1, LN by linearity"
CUBEFORGE_GPT_LN_LINEAR=1 timeout 90 /tmp/new cuda-check --synthetic v0.1 2>&1 |
  grep -E "rel L2 error|identical|DIFFER|digest|cancel|cuda-check|FAIL|rror|trap" | head -16
for r in 1 2; do
  for m in v0.1 v0.5; do
    for ll in 0 1; do
      echo "round $r $m LN_LINEAR=$ll: $(CUBEFORGE_GPT_LN_LINEAR=$ll timeout 40 /tmp/new bench --synthetic $m --quick \
        --batches 1 --reps 1 2>&1 | grep -E 'TPOT mean' | tr -s ' ')"
    done
  done
done
