#!/usr/bin/env bash
# Session 40, H200-only call: the step with its weights free (tools/device/l2w_price.sh), which session 39 measured on
# an H100 only, then the final table of main (its inference/ equals c046adc's). On any other card it stops at once
# (the pool lends H100s under the name nvidia-h200 too, and an H100 table of the same code was call 1's).
# Carry .devcarry/shape-xz (shape build of c046adc) and .devcarry/l2diag-xz (GPT-only build with -DCF_DIAG_L2W).
set -uo pipefail
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "card: $name"
echo "$name" | grep -q H200 || { echo "not an H200: nothing run"; exit 0; }
CF_COMMIT=${CF_COMMIT:?commit} bash tools/device/sessions/s40_call1.sh
