#!/usr/bin/env bash
# Session 48, first device call (ran on an H100: refuted, and the code removed after 21b024d, so it needs a build of
# 21b024d or earlier): the multi-row fused MLP's prefetch of the next layer's keys and values into L2 (gpt_mlp.cuh,
# CUBEFORGE_GPT_KVPF 0 = off, the default / 1 = with the weight requests before the wait /
# 2 = once the block's last weight stage is requested), A/B'd by env_ab.sh in one binary: cuda-check tiny per
# configuration (a prefetch changes no arithmetic: the digests must agree), two rounds of quick benches (v0.1, v0.5 at
# 1 and 4 prompts; only the 4-prompt runs use the multi-row MLP), then each configuration's timeline at v0.5, 4 prompts.
# The fourth configuration lifts the cap (56 MB: every prefix up to v0.5's last position). With FINAL=1 on an H200
# the final table (final_table.sh) runs first, then one round of the first three. ~5 min (H100), ~9 with FINAL=1.
# Carry .devcarry/shape-xz (the shape build of CF_COMMIT).
# Usage (device tool, repo root): [FINAL=1] [CONFIGS="..."] CF_COMMIT=<hash> bash tools/device/sessions/s48_call1.sh
set -uo pipefail
. tools/device/common.sh
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader)
echo "commit ${CF_COMMIT:-unknown}; $gpu"
lite=0
if [ "${FINAL:-0}" = 1 ]; then
  case "$gpu" in
    *H200*) CF_COMMIT=${CF_COMMIT:-unknown} bash tools/device/final_table.sh; lite=1 ;;
    *) echo "not an H200: no final table" ;;
  esac
fi
# after a final table, a lighter A/B (three configurations, one round) so the call stays within 10 minutes
[ $lite = 1 ] && DEF3="CUBEFORGE_GPT_KVPF=0 CUBEFORGE_GPT_KVPF=1 CUBEFORGE_GPT_KVPF=2" && REPS=${REPS:-1}
BIN=/tmp/cfg-s48
unpack_xz .devcarry/shape-xz/cubeforge-gen.xz "$BIN" || exit 1
DEF="CUBEFORGE_GPT_KVPF=0 CUBEFORGE_GPT_KVPF=1 CUBEFORGE_GPT_KVPF=2 CUBEFORGE_GPT_KVPF=1,CUBEFORGE_GPT_KVPF_MB=56"
BIN=$BIN CONFIGS=${CONFIGS:-${DEF3:-$DEF}} REPS=${REPS:-2} \
  TL_MODEL=v0.5 TL_BATCH=4 bash tools/device/env_ab.sh
