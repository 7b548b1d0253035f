#!/usr/bin/env bash
# Session 45: is the e2e decode's ~1.1% over the GPT bench (sessions 41-45) the SM clock? Session 45's first call
# sampled 1966 MHz in the e2e against 1980 in the bench, but over runs that included the rb 8 shape stage. Here the
# e2e runs at rb 7 (its shape stage ~13 of ~925 ms), so its busy samples are the decode's; two rounds, alternated with
# the bench, each with its mean SM clock and power over the samples with the GPU busy (50 ms sampling) and the busy
# samples' clocks as a histogram. The e2e's previews runs (after its rows) are in its window too: a reduced clock in
# only some samples shows up in the histogram.
# Usage (device tool, repo root, carry .devcarry/shape-xz): bash tools/device/sessions/s45_clock.sh
set -uo pipefail
. tools/device/common.sh
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
unpack_xz .devcarry/shape-xz/cubeforge-gen.xz /tmp/new || exit 1
export SAMPLE_MS=50
for r in 1 2; do
  echo "== e2e v0.5 rb 7, 2 rows, round $r"
  sampled bash -c "timeout 60 /tmp/new bench-shape-gpu --e2e-only --synthetic v0.5 --rb 7 --reps 2 --e2e-rows 2 2>&1 |
    grep -E '^[12] |median'"
  echo "== bench v0.5 (graphs of 8 steps), round $r"
  sampled bash -c "timeout 90 /tmp/new bench --synthetic v0.5 --quick --batches 1 --reps 2 2>&1 | grep -E 'TPOT mean|per step'"
done
