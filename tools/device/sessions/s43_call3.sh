#!/usr/bin/env bash
# Session 43, the short form of s43_call2.sh (1b14f10, since removed) for a small remaining budget: the prototype's
# free-weights bound for both GEMV paths and the L2 prefetch ahead of the ring, then one bench / e2e pair (v0.5).
# Usage (device tool, repo root; carry .devcarry/proto and .devcarry/shape-xz): bash tools/device/sessions/s43_call3.sh
set -uo pipefail
. tools/device/common.sh
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
B=.devcarry/proto/persist_proto
timeout 40 $B --layers 23 --reps 10 --nostream
timeout 40 $B --layers 23 --reps 10 --mma --nostream
for a in 4 8; do timeout 40 $B --layers 23 --reps 10 --ahead $a | grep -E "^(device|full|stream)"; done
timeout 40 $B --layers 23 --reps 10 --ahead 8 --mma | grep -E "^(device|full|stream)"
unpack_xz .devcarry/shape-xz/cubeforge-gen.xz /tmp/cfg || exit 1
timeout 90 /tmp/cfg bench --synthetic v0.5 --quick --batches 1,8 --reps 1 2>&1 | grep -E "^engine:|TPOT mean|TPOT batch"
timeout 60 /tmp/cfg bench-shape-gpu --e2e-only --synthetic v0.5 --rb 8 --reps 2 --e2e-rows 2 2>&1 | grep -E "^[12] |median|engines:"
