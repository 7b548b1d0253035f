#!/usr/bin/env bash
# Session 44, first call: the LayerNorm by linearity (CUBEFORGE_GPT_LN_LINEAR, gpt_gemv.cuh ln_linear) checked and
# priced. Carry .devcarry/base-xz (the shape build of main before it) and .devcarry/shape-xz (the build with it):
# cuda-check v0.1 with it on (logits against fp32, graph = eager, batch 8 = batch 1 bitwise, cancel); env_ab over
# the base binary, the new one with it off (its digests must equal the base's) and on, two rounds, with timelines;
# then prompt -> mesh v0.5 on the new binary with it off and on, and the e2e on the bench's weights (session 43's
# open question: is the e2e decode's ~1.2% over the bench the weights' values? each run with its mean SM clock and
# power under load, since values that toggle more bits can draw more power and lower the clock).
# SHORT=1: the check and env_ab without timelines only (a short device budget).
# Usage (device tool, repo root): bash tools/device/sessions/s44_call1.sh
# Session 45 ran it (docs/cuda-gpt.md, session 45) and then removed the knob: on later builds knob 1 = knob 0.
set -uo pipefail
. tools/device/common.sh
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
unpack_xz .devcarry/base-xz/cubeforge-gen.xz /tmp/base || exit 1
unpack_xz .devcarry/shape-xz/cubeforge-gen.xz /tmp/new || exit 1
echo "== cuda-check v0.1, LN by linearity"
CUBEFORGE_GPT_LN_LINEAR=1 timeout 240 /tmp/new cuda-check --synthetic v0.1 2>&1 |
  grep -E "rel L2 error|identical|DIFFER|digest|cancel|cuda-check|FAIL|rror|trap" | head -16
CONFIGS="BIN=/tmp/base BIN=/tmp/new,CUBEFORGE_GPT_LN_LINEAR=0 BIN=/tmp/new,CUBEFORGE_GPT_LN_LINEAR=1" \
  REPS=2 TL=$([ "${SHORT:-0}" = 1 ] && echo 0 || echo 1) CHECK01=0 bash tools/device/env_ab.sh
[ "${SHORT:-0}" = 1 ] && exit 0
# sampled (common.sh): each run's mean SM clock and power with the GPU busy: is the e2e decode's excess over the
# bench a lower clock (data-dependent power)?
for r in 1 2; do
  for ll in 0 1; do
    echo "== e2e v0.5 rb 8, 2 rows, LN_LINEAR=$ll, round $r"
    sampled bash -c "CUBEFORGE_GPT_LN_LINEAR=$ll timeout 60 /tmp/new bench-shape-gpu --e2e-only --synthetic v0.5 --rb 8 \
      --reps 2 --e2e-rows 2 2>&1 | grep -E '^[12] |median'"
  done
  echo "== e2e v0.5 rb 8, 2 rows, bench weights, round $r"
  sampled bash -c "timeout 60 /tmp/new bench-shape-gpu --e2e-only --synthetic v0.5 --rb 8 --reps 2 --e2e-rows 2 \
    --e2e-weights bench 2>&1 | grep -E '^[12] |median'"
  echo "== bench v0.5, round $r"
  sampled bash -c "timeout 90 /tmp/new bench --synthetic v0.5 --quick --batches 1 --reps 1 2>&1 | grep -E 'TPOT mean'"
done
