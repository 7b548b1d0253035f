#!/usr/bin/env bash
# Session 43, fifth call (prepared, not run: the budget was spent). Carry .devcarry/proto (persist_proto built with
# attention_phase's arguments by value: no local memory around the layer loop's stages) and .devcarry/shape-xz (the
# shape build of the same commit, tools/device/build_cuda_shape.sh then xz): the same runs as s43_call4.sh and a
# 4-layer check; then the e2e decode on the bench's weights and conditioning (--e2e-weights bench) beside the default
# ones and beside the bench, all with engines for 2 rows: is the e2e decode's ~1.2% over the bench the values?
# Usage (device tool, repo root): bash tools/device/sessions/s43_call5.sh
set -uo pipefail
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
B=.devcarry/proto/persist_proto
timeout 40 $B --layers 4 --reps 2 --check | grep -E "^check"
timeout 40 $B --layers 23 --reps 10 --nostream
timeout 40 $B --layers 23 --reps 10 --mma --nostream
. tools/device/common.sh
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
unpack_xz .devcarry/shape-xz/cubeforge-gen.xz /tmp/cfg || exit 1
for r in 1 2; do
  timeout 90 /tmp/cfg bench --synthetic v0.5 --quick --batches 1 --reps 1 2>&1 | grep -E "TPOT mean"
  for w in init bench; do
    echo "== e2e v0.5 rb 8, 2 rows, weights $w, round $r"
    timeout 60 /tmp/cfg bench-shape-gpu --e2e-only --synthetic v0.5 --rb 8 --reps 2 --e2e-rows 2 --e2e-weights $w 2>&1 |
      grep -E "^[12] |median"
  done
done
