#!/usr/bin/env bash
# Session 43, fourth call (carry .devcarry/proto): where the prototype's phases spend their time with free weights:
# the LayerNorms stamped apart from the GEMV phases, and the consumers alone without the cross-proxy fence.
# Usage (device tool, repo root): bash tools/device/sessions/s43_call4.sh
set -uo pipefail
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
B=.devcarry/proto/persist_proto
timeout 40 $B --layers 23 --reps 10 --nostream
timeout 40 $B --layers 23 --reps 10 --mma --nostream
