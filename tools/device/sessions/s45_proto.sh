#!/usr/bin/env bash
# Session 45: session 43's open question on the persistent layer prototype (tools/device/persist_proto.cu): with
# attention_phase's arguments by value (no local memory around the layer loop's stages, 935c51b), does a stage inside
# a phase still cost ~0.8 us with free weights (session 43: 34.2 us per layer, the consumers alone 0.4 us a stage)?
# The 4-layer check first, then the full layer streamed and with free weights (--nostream), FMA and MMA consumers.
# Carry .devcarry/proto (persist_proto built with the command in its header).
# Usage (device tool, repo root): bash tools/device/sessions/s45_proto.sh
set -uo pipefail
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
B=.devcarry/proto/persist_proto
timeout 40 $B --layers 4 --reps 2 --check | grep -E "^check"
timeout 40 $B --layers 4 --reps 2 --mma --check | grep -E "^check"
for r in 1 2; do
  echo "== round $r"
  timeout 40 $B --layers 23 --reps 10
  timeout 40 $B --layers 23 --reps 10 --nostream
  timeout 40 $B --layers 23 --reps 10 --mma --nostream
done
