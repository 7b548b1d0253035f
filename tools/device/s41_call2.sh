#!/usr/bin/env bash
# Session 41, call 2: the round-trip probe (tools/device/rt_probe.cu, carried as .devcarry/rt/rt_probe) with every SM
# streaming and with the prober's SMs quiet (--quiet), two rounds each; then on an H200 session 40's pending call
# (tools/device/s40_call3.sh; carry .devcarry/shape-xz and .devcarry/l2diag-xz too).
set -uo pipefail
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
for r in 1 2; do
  echo "--- rt_probe round $r"; timeout 120 .devcarry/rt/rt_probe
  echo "--- rt_probe --quiet round $r"; timeout 120 .devcarry/rt/rt_probe --quiet
done
CF_COMMIT=${CF_COMMIT:?commit} bash tools/device/s40_call3.sh
