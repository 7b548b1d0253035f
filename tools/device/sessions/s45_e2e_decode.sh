#!/usr/bin/env bash
# Session 45: the e2e decode's excess over the GPT bench (sessions 41-45: ~0.5-1.2%; not the weights' values, not the
# SM clock). Decodes only (`bench-shape-gpu --e2e-decodes`, no shape stage between them), on the bench's weights and
# conditioning, with the shape engine in the process and without it, alternated with the bench itself, two rounds.
# If the decode without the shape engine matches the bench, the shape engine's presence (its memory, stream, cuBLAS
# handles) is the cause; if it matches the e2e with it, the cause is in how the e2e drives the engine. Call 9 found
# both equal to the bench, so the same decodes follow a shape stage at rb 7 / 8 (--e2e-shape-rb), each decode with its
# ms per step in its first 4 chunks, the rest, and the last quarter: a transient after the shape stage or the whole.
# Carry .devcarry/shape-xz (the shape build with --e2e-decodes). Usage (device tool): bash tools/device/sessions/s45_e2e_decode.sh
set -uo pipefail
. tools/device/common.sh
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
unpack_xz .devcarry/shape-xz/cubeforge-gen.xz /tmp/cfg || exit 1
for r in 1 2; do
  echo "== round $r"
  timeout 90 /tmp/cfg bench --synthetic v0.5 --quick --batches 1 --reps 3 2>&1 | grep -E "TPOT mean"
  for se in "" --e2e-no-shape-engine "--e2e-shape-rb 7" "--e2e-shape-rb 8"; do
    timeout 90 /tmp/cfg bench-shape-gpu --synthetic v0.5 --e2e-decodes 4 --e2e-rows 2 --e2e-weights bench $se 2>&1 |
      grep -E "^decode|decodes only|rror"
  done
done
