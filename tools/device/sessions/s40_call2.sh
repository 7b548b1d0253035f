#!/usr/bin/env bash
# Session 40, call 2: the attention polls the one-prompt qkv's tagged outputs instead of waiting for the qkv's grid
# (CUBEFORGE_GPT_QKV_TAGS=1; with 100 ns between polls: CUBEFORGE_GPT_QKV_TAG_SLEEP=100) against the same binary
# without (the default) and against main's binary (c046adc): cuda-check tiny per configuration, two rounds of quick
# benches, timelines, then cuda-check v0.1 with the tags (its digests must be session 23's).
# Carry .devcarry/ab40 (base.xz: shape build of c046adc; new.xz: shape build of 3148bdd, the tags change).
# Measured slower (docs/cuda-gpt.md, session 40) and reverted: the knobs exist only in 618f333-3148bdd's builds.
set -uo pipefail
. tools/device/common.sh
unpack_xz .devcarry/ab40/base.xz /tmp/base || exit 1
unpack_xz .devcarry/ab40/new.xz /tmp/new || exit 1
nvidia-smi --query-gpu=name --format=csv,noheader
CONFIGS="BIN=/tmp/base BIN=/tmp/new BIN=/tmp/new,CUBEFORGE_GPT_QKV_TAGS=1 BIN=/tmp/new,CUBEFORGE_GPT_QKV_TAGS=1,CUBEFORGE_GPT_QKV_TAG_SLEEP=100" \
  CHECK01=0 REPS=${REPS:-2} TL=1 bash tools/device/env_ab.sh 2>&1 | grep -vE "^timeline .*(%|share)"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
RUN_LOG_DIR=/tmp; CUBEFORGE_GPT_QKV_TAGS=1 run check01_tags 240 /tmp/new cuda-check --synthetic v0.1
grep -E "rel L2 error|identical|digest|cancel|cuda-check|FAIL|rror|trap" /tmp/check01_tags.log | head -14
