#!/usr/bin/env bash
# Session 39, call 1: what the card allows. On an H200: the attention's early trigger alone against the card's
# default (none) and both triggers, then the final table. On an H100: the CLI split's binary checked on the device
# (cuda-check digests) and Nsight Compute profiles of the attention at 2 and 8 rows and of the fused MLP.
set -uo pipefail
. tools/device/common.sh
unpack_xz .devcarry/shape-xz/cubeforge-gen.xz /tmp/cfgen || exit 1
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "card: $name"
if echo "$name" | grep -q H200; then
  BIN=/tmp/cfgen CONFIGS="CUBEFORGE_BASE=1 CUBEFORGE_GPT_EARLY_TRIG=1 CUBEFORGE_GPT_EARLY_TRIG=3" REPS=2 TL=0 \
    bash tools/device/env_ab.sh
  mkdir -p .devcarry/cuda-shape
  CF_COMMIT=${CF_COMMIT:-ee48d43} bash tools/device/final_table.sh 2>&1 | sed -n '/######## final table/,$p'
else
  export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
  RUN_LOG_DIR=/tmp; run check_tiny 90 /tmp/cfgen cuda-check --synthetic tiny
  grep -E "digest|cuda-check|FAIL" /tmp/check_tiny.log | head
  run check01 240 /tmp/cfgen cuda-check --synthetic v0.1
  grep -E "digest|rel L2 error|cuda-check|FAIL" /tmp/check01.log | head
  BIN=/tmp/cfgen PROFILES="${PROFILES:-attn_decode:4 attn_decode:1 mlp_kernel:1}" bash tools/device/ncu_decode.sh
fi
