#!/usr/bin/env bash
# Session 40, call 2: the attention polls the one-prompt qkv's tagged outputs instead of waiting for the qkv's grid
# (CUBEFORGE_GPT_QKV_TAGS=1) against the same binary without (the default) and against main's binary (c046adc):
# cuda-check tiny and v0.1 per configuration (the digests must not move), two rounds of quick benches, timelines.
# Carry .devcarry/ab40 (base.xz: shape build of c046adc; new.xz: shape build of the tags change).
set -uo pipefail
. tools/device/common.sh
unpack_xz .devcarry/ab40/base.xz /tmp/base || exit 1
unpack_xz .devcarry/ab40/new.xz /tmp/new || exit 1
nvidia-smi --query-gpu=name --format=csv,noheader
CONFIGS="BIN=/tmp/base BIN=/tmp/new BIN=/tmp/new,CUBEFORGE_GPT_QKV_TAGS=1" CHECK01=1 REPS=${REPS:-2} TL=1 \
  bash tools/device/env_ab.sh 2>&1 | grep -vE "^timeline .*(%|share)"
