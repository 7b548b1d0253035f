#!/usr/bin/env bash
# Session 42: the persistent layer prototype (tools/device/persist_proto.cu, carried as .devcarry/proto/persist_proto)
# against the engine's one-prompt step on the same machine (the shape build of main, .devcarry/shape-xz).
# Usage (device tool, repo root): bash tools/device/sessions/s42_proto.sh
set -uo pipefail
. tools/device/common.sh
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
B=.devcarry/proto/persist_proto
echo "== check, 4 layers"
if timeout 60 $B --layers 4 --reps 3 --check; then
  echo "== 23 layers, 8 slots"; timeout 60 $B --layers 23 --reps 20
  echo "== 23 layers, 6 slots"; timeout 60 $B --layers 23 --reps 20 --slots 6
  echo "== 23 layers, pos 96"; timeout 60 $B --layers 23 --reps 20 --pos 96
  PROTO_OK=1
fi
if unpack_xz .devcarry/shape-xz/cubeforge-gen.xz /tmp/cfg; then
  echo "== engine (main), one prompt"
  timeout 120 /tmp/cfg bench --synthetic v0.1 --quick --batches 1 --reps 2 2>&1 | grep -E "TPOT batch 1 |copy" | head -6
fi
[ -n "${PROTO_OK:-}" ] && { echo "== check, 23 layers"; timeout 100 $B --layers 23 --reps 3 --check; }
