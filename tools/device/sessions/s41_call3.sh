#!/usr/bin/env bash
# Session 41, call 3: (1) the round-trip probe, every SM streaming and with the prober's SMs quiet (rt_probe.cu,
# carried as .devcarry/rt/rt_probe); (2) the fused MLP's ring stages requested behind its LN input
# (CUBEFORGE_GPT_MLP_POST, GPT-only builds .devcarry/ab41/base = main before it, .devcarry/ab41/new = with it), A/B
# by env_ab.sh: fewer stages before the wait, the rest right after the X loads, against the card's default (H100: 7
# slots, 6 before the wait; H200: 5 slots, 4); (3) on an H200 the free-weights pricing (s40_call3.sh, FINAL=0).
set -uo pipefail
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "card: $name"
echo "--- rt_probe"; timeout 60 .devcarry/rt/rt_probe
echo "--- rt_probe --quiet"; timeout 60 .devcarry/rt/rt_probe --quiet
B=BIN=.devcarry/ab41/base/cubeforge-gen N=BIN=.devcarry/ab41/new/cubeforge-gen
P=CUBEFORGE_GPT_MLP_PRE Q=CUBEFORGE_GPT_MLP_POST
if echo "$name" | grep -q H200; then
  CONFIGS="$B $N $N,$P=2 $N,$P=2,$Q=2 $N,$P=3,$Q=1"
else
  CONFIGS="$B $N $N,$P=2 $N,$P=2,$Q=4 $N,$P=3,$Q=3"
fi
CONFIGS="$CONFIGS" REPS=${REPS:-2} TL=${TL:-0} bash tools/device/env_ab.sh
if echo "$name" | grep -q H200; then FINAL=0 REPS=1 CF_COMMIT=c046adc bash tools/device/sessions/s40_call3.sh; fi
