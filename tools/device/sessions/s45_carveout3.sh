#!/usr/bin/env bash
# Session 45 (prepared, not run: no device time was left): the carveout by kernel group (CUBEFORGE_GPT_CARVEOUT,
# cuda_common.cuh; gpt_engine_upload.cuh). Every GPT kernel preferring max shared (100) made one prompt 1.3% / 1.6%
# faster on an H100 and 4 prompts 0.9% / 1.5% slower: does "one" (the one-prompt qkv, attention and MLP only) keep
# the gain without the loss, and which multi-row group (qkv8, attn8, mlp8, oproj, lm) costs 4 prompts? Also "one"'s
# digests (cuda-check v0.1: session 23's expected) and its decode after a shape stage (engine for 8 rows, as in the
# editor). ~3.5 min of command. Carry .devcarry/shape-xz (the shape build of this script's commit or later).
# Since session 46 an unset or empty CUBEFORGE_GPT_CARVEOUT means "one" (the default); "driver" is the driver's
# choice, which this script names where it first meant unset (with a build older than session 46, "driver" equals
# unset there too: it names no group).
# Usage (device tool, repo root): bash tools/device/sessions/s45_carveout3.sh
set -uo pipefail
. tools/device/common.sh
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
unpack_xz .devcarry/shape-xz/cubeforge-gen.xz /tmp/cfg || exit 1
CUBEFORGE_GPT_CARVEOUT=one timeout 120 /tmp/cfg cuda-check --synthetic v0.1 2>&1 |
  grep -E "digest|rel L2 error|identical|cancel|cuda-check|rror" | head -14
bench() {  # MODEL BATCHES CARVEOUT
  echo "== $1 batches $2 carveout ${3:-unset}"
  CUBEFORGE_GPT_CARVEOUT=$3 timeout 60 /tmp/cfg bench --synthetic "$1" --quick --batches "$2" --reps 2 2>&1 |
    grep -E "TPOT batch"
}
for co in driver one 100 one,oproj,lm; do bench v0.5 1,4 "$co"; done
for g in qkv8 attn8 mlp8 oproj lm; do bench v0.5 4 "$g"; done
for co in driver one; do bench v0.1 1,4 "$co"; done
for co in driver one; do
  echo "== decodes after a shape stage at rb 4, carveout $co"
  CUBEFORGE_GPT_CARVEOUT=$co timeout 60 /tmp/cfg bench-shape-gpu --synthetic v0.5 --e2e-decodes 3 --e2e-rows 8 \
    --e2e-weights bench --e2e-shape-rb 4 2>&1 | grep -E "decodes only|rror"
done
