#!/usr/bin/env bash
# Session 43, first call (carry .devcarry/proto and .devcarry/shape-xz): (1) session 42's prepared prototype runs
# (s42_proto3.sh: the tensor-core consumers' check first, then the consume-only modes that say what a stage costs the
# consumers), (2) the engine's TPOT on this card as the baseline (v0.1 and v0.5 bench, one prompt), (3) whether the
# e2e decode's excess over the bench at v0.5 is the weights' values: the bench and prompt -> mesh at the bench's
# 16 rows, on one warm machine. Usage (device tool, repo root): CF_COMMIT=<hash> bash tools/device/sessions/s43_call1.sh
set -uo pipefail
. tools/device/common.sh
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
echo "commit ${CF_COMMIT:-unknown}"
bash tools/device/sessions/s42_proto3.sh
unpack_xz .devcarry/shape-xz/cubeforge-gen.xz /tmp/cfg || exit 1
for m in v0.1 v0.5; do
  echo "== bench $m"
  timeout 120 /tmp/cfg bench --synthetic $m --quick --batches 1 --reps 2 2>&1 | sed -n '/== summary/,$p'
done
for r in 1 2; do
  echo "== v0.5 rb 8 e2e, 16 rows, round $r"
  timeout 60 /tmp/cfg bench-shape-gpu --e2e-only --synthetic v0.5 --rb 8 --reps 3 --e2e-rows 16 2>&1 |
    grep -E "^[123] |median|engines:"
  echo "== bench v0.5 round $r"
  timeout 120 /tmp/cfg bench --synthetic v0.5 --quick --batches 1 --reps 1 2>&1 | sed -n '/== summary/,$p'
done
