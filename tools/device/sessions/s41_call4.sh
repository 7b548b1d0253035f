#!/usr/bin/env bash
# Session 41, H200-only call: the round-trip probe (every SM streaming, then --quiet; .devcarry/rt/rt_probe) and the
# free-weights pricing (tools/device/sessions/s40_call3.sh with FINAL=0 REPS=1; carry .devcarry/shape-xz and
# .devcarry/l2diag-xz). Stops at once on any other card.
set -uo pipefail
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "card: $name"
echo "$name" | grep -q H200 || { echo "not an H200: nothing run"; exit 0; }
echo "--- rt_probe"; timeout 60 .devcarry/rt/rt_probe
echo "--- rt_probe --quiet"; timeout 60 .devcarry/rt/rt_probe --quiet
FINAL=0 REPS=1 CF_COMMIT=c046adc bash tools/device/sessions/s40_call3.sh
