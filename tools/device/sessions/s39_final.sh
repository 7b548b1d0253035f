#!/usr/bin/env bash
# Session 39, last call: the step's structure priced (tools/device/l2w_price.sh: weights from L2 against the
# production binary), then the final table of main (tools/device/final_table.sh), in one call.
# Carry .devcarry/shape-xz (shape build of main) and .devcarry/l2diag-xz (GPT-only build with -DCF_DIAG_L2W).
set -uo pipefail
. tools/device/common.sh
unpack_xz .devcarry/shape-xz/cubeforge-gen.xz /tmp/cfgen || exit 1
unpack_xz .devcarry/l2diag-xz/cubeforge-gen.xz /tmp/l2diag || exit 1
PROD=/tmp/cfgen DIAG=/tmp/l2diag REPS=${REPS:-2} bash tools/device/l2w_price.sh 2>&1 | grep -vE "^timeline .*(%|share)" | head -150
mkdir -p .devcarry/cuda-shape
CF_COMMIT=${CF_COMMIT:?commit} bash tools/device/final_table.sh 2>&1 | sed -n '/######## final table/,$p'
