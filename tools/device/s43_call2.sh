#!/usr/bin/env bash
# Session 43, second call (carry .devcarry/proto and .devcarry/shape-xz): the persistent prototype's bound with free
# weights (--nostream: the chain and the consumers alone) for both GEMV paths, and whether an L2 prefetch ahead of the
# ring (--ahead N) keeps DRAM working while a chain holds the ring full; then the engine's TPOT on this card.
# Usage (device tool, repo root): bash tools/device/s43_call2.sh
set -uo pipefail
. tools/device/common.sh
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
B=.devcarry/proto/persist_proto
timeout 60 $B --layers 23 --reps 20 --nostream
timeout 60 $B --layers 23 --reps 20 --mma --nostream
for a in 4 8 12; do timeout 60 $B --layers 23 --reps 20 --ahead $a | grep -E "^(device|full|stream)"; done
timeout 60 $B --layers 23 --reps 20 --ahead 8 --mma | grep -E "^(device|full|stream)"
timeout 60 $B --layers 23 --reps 20 --ahead 8 --slots 6 | grep -E "^(device|full|stream)"
timeout 100 $B --layers 23 --reps 3 --ahead 8 --check | grep -E "^(device|full|check)"
unpack_xz .devcarry/shape-xz/cubeforge-gen.xz /tmp/cfg || exit 1
timeout 120 /tmp/cfg bench --synthetic v0.1 --quick --batches 1 --reps 2 2>&1 | grep -E "TPOT mean|achieved"
# the e2e decode against the bench at equal row capacity (v0.5): the bench's B1 with an engine for 16 rows (--batches
# 1,8) and for 2 (--batches 1), prompt -> mesh with the engine for 2 and 16 rows
for r in 1 2; do
  for bb in 1 1,8; do
    echo "== bench v0.5 --batches $bb, round $r"
    timeout 120 /tmp/cfg bench --synthetic v0.5 --quick --batches $bb --reps 1 2>&1 | grep -E "^engine:|TPOT mean|TPOT batch"
  done
  for rows in 2 16; do
    echo "== v0.5 rb 8 e2e, $rows rows, round $r"
    timeout 60 /tmp/cfg bench-shape-gpu --e2e-only --synthetic v0.5 --rb 8 --reps 2 --e2e-rows $rows 2>&1 |
      grep -E "^[12] |median|engines:"
  done
done
