#!/usr/bin/env bash
# Session 41, call 1: the round-trip probe (tools/device/rt_probe.cu, built here and carried as .devcarry/rt/rt_probe)
# twice, then on an H200 session 40's pending call (tools/device/sessions/s40_call3.sh: the free-weights pricing and
# the final table; carry .devcarry/shape-xz and .devcarry/l2diag-xz too).
set -uo pipefail
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
for r in 1 2; do echo "--- rt_probe round $r"; timeout 120 .devcarry/rt/rt_probe; done
CF_COMMIT=${CF_COMMIT:?commit} bash tools/device/sessions/s40_call3.sh
