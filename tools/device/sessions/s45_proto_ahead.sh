#!/usr/bin/env bash
# Session 45, after s45_proto.sh: with the by-value build's shorter free-weights chain (MMA 28.4 us per layer on an
# H100, under the engine's <= 29.7 from L2), does an L2 prefetch ahead of the ring now pay (session 43, with the
# longer chain: 17-28% slower)? Full layer streamed, --ahead 0 / 8 / 16 / 24 stages (a block streams ~25 a layer),
# MMA and FMA consumers. Carry .devcarry/proto.
# Usage (device tool, repo root): bash tools/device/sessions/s45_proto_ahead.sh
set -uo pipefail
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
B=.devcarry/proto/persist_proto
for r in 1 2; do
  for m in --mma ""; do
    for a in 0 8 16 24; do
      echo "== round $r ${m:-fma} ahead $a"
      timeout 40 $B --layers 23 --reps 10 $m --ahead $a | grep -E "^full layer|^stream only" | head -2
    done
  done
done
