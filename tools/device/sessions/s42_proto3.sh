#!/usr/bin/env bash
# Session 42, third prototype call (prepared for session 43; carry .devcarry/proto, the binary built from this
# commit's tools/device/persist_proto.cu with the command in its header): is the prototype bound by its consumers?
# Each run times the full layer, the stream alone, and the consumers alone with and without the cross-proxy fence;
# first a warp per weight row (session 42's measured build), then the GEMVs on tensor cores (--mma, never run yet:
# its checks come first). Usage (device tool, repo root): bash tools/device/sessions/s42_proto3.sh
set -uo pipefail
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
B=.devcarry/proto/persist_proto
timeout 60 $B --layers 4 --reps 3 --mma --check
timeout 60 $B --layers 23 --reps 20
timeout 60 $B --layers 23 --reps 20 --mma
timeout 60 $B --layers 23 --reps 20 --mma --slots 6
timeout 100 $B --layers 23 --reps 3 --mma --check
