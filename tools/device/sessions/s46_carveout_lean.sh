#!/usr/bin/env bash
# Session 46: s45_carveout3.sh without its cuda-check and its decodes after a shape stage (the device budget left
# after refused starts): the GPT carveout by kernel group, "one" against none and all (100) at 1 and 4 prompts, and
# each multi-row group alone at 4 prompts (v0.5), then "one" at v0.1. A carveout preference changes no arithmetic
# (session 45: cuda-check with 100 gave session 23's digests). Carry .devcarry/shape-xz.
# Usage (device tool, repo root): bash tools/device/sessions/s46_carveout_lean.sh
set -uo pipefail
. tools/device/common.sh
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
unpack_xz .devcarry/shape-xz/cubeforge-gen.xz /tmp/cfg || exit 1
bench() {  # MODEL BATCHES CARVEOUT
  echo "== $1 batches $2 carveout ${3:-unset}"
  CUBEFORGE_GPT_CARVEOUT=$3 timeout 60 /tmp/cfg bench --synthetic "$1" --quick --batches "$2" --reps 2 2>&1 |
    grep -E "TPOT batch"
}
for co in "" one 100; do bench v0.5 1,4 "$co"; done
for g in qkv8 attn8 mlp8 oproj lm; do bench v0.5 4 "$g"; done
for co in "" one; do bench v0.1 1,4 "$co"; done
