#!/usr/bin/env bash
# Session 46, first device call: session 45's prepared carveout bisection (s45_carveout3.sh), then, only where the
# card is an H200, the final table of the same build (final_table.sh), since the targets are H200 targets and no H200
# has come since session 42. Carry .devcarry/shape-xz (the shape build of 13fa019).
# Usage (device tool, repo root): bash tools/device/s46_call1.sh
set -uo pipefail
bash tools/device/s45_carveout3.sh
if nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; then
  CF_COMMIT=13fa019 bash tools/device/final_table.sh
else
  echo "not an H200: final table skipped"
fi
