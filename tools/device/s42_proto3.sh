#!/usr/bin/env bash
# Session 42, third prototype call: is the prototype's consumer (one warp per weight row, FMA dot products) what
# bounds it? Times the full layer, the stream alone, and the consumers alone (with and without the cross-proxy fence),
# then the check. Usage (device tool, repo root): bash tools/device/s42_proto3.sh
set -uo pipefail
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
B=.devcarry/proto/persist_proto
timeout 60 $B --layers 23 --reps 20
timeout 60 $B --layers 23 --reps 20 --slots 6
timeout 100 $B --layers 23 --reps 3 --check
