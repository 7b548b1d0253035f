#!/usr/bin/env bash
# Session 43, fifth call (carry .devcarry/proto, built with attention_phase's arguments by value: no local memory
# around the layer loop's stages): the same runs as s43_call4.sh, and a 4-layer check.
# Usage (device tool, repo root): bash tools/device/s43_call5.sh
set -uo pipefail
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
B=.devcarry/proto/persist_proto
timeout 40 $B --layers 4 --reps 2 --check | grep -E "^check"
timeout 40 $B --layers 23 --reps 10 --nostream
timeout 40 $B --layers 23 --reps 10 --mma --nostream
