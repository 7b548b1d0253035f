#!/usr/bin/env bash
# Session 40, call 1: session 39's shape-engine split (separate .cu files) run on a GPU for the first time (the
# shape checks of the small and v0.1 random models, inside the final table), the final table of main, and on an H200
# the step with its weights free (tools/device/l2w_price.sh), which session 39 measured on an H100 only.
# Carry .devcarry/shape-xz (shape build of main) and .devcarry/l2diag-xz (GPT-only build with -DCF_DIAG_L2W).
set -uo pipefail
. tools/device/common.sh
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "card: $name"
if echo "$name" | grep -q H200 && [ -f .devcarry/l2diag-xz/cubeforge-gen.xz ]; then
  unpack_xz .devcarry/shape-xz/cubeforge-gen.xz /tmp/cfgen || exit 1
  unpack_xz .devcarry/l2diag-xz/cubeforge-gen.xz /tmp/l2diag || exit 1
  PROD=/tmp/cfgen DIAG=/tmp/l2diag REPS=${REPS:-2} bash tools/device/l2w_price.sh 2>&1 | grep -vE "^timeline .*(%|share)" | head -150
fi
[ "${FINAL:-1}" = 1 ] || exit 0  # FINAL=0: the free-weights pricing only
mkdir -p .devcarry/cuda-shape
SHAPE_STAGES=checksmall,check,bench01,bench05,e2e CF_COMMIT=${CF_COMMIT:?commit} bash tools/device/final_table.sh 2>&1 |
  sed -n '/######## final table/,$p'
