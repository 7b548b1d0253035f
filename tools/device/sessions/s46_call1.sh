#!/usr/bin/env bash
# Session 46, first device call: session 45's prepared carveout bisection (s45_carveout3.sh), then, with FINAL=1 and
# only where the card is an H200, the final table of the same build (final_table.sh), since the targets are H200
# targets and no H200 has come since session 42. Carry .devcarry/shape-xz (a shape build; CF_COMMIT names its commit).
# Usage (device tool, repo root): [FINAL=1] [CF_COMMIT=<hash>] bash tools/device/sessions/s46_call1.sh
set -uo pipefail
bash tools/device/sessions/s45_carveout3.sh
if [ "${FINAL:-0}" = 1 ] && nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  CF_COMMIT=${CF_COMMIT:-13fa019} bash tools/device/final_table.sh
else
  echo "final table skipped (FINAL=1 on an H200 runs it)"
fi
