#!/usr/bin/env bash
# Session 42, second prototype call: persist_proto with its GEMV inputs in registers (bf16, as the reference's autocast)
# (168 registers: 224 did not fit 288 threads): the check, ring depths, polling backoff, a short prefix, 4 splits; then the
# engine's per-kernel timeline on the same machine. Usage (device tool, repo root):
#   bash tools/device/sessions/s42_proto2.sh
set -uo pipefail
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
B=.devcarry/proto/persist_proto
echo "== check, 4 layers"
timeout 60 $B --layers 4 --reps 3 --check || echo "CHECK FAILED (timings below are not of a correct kernel)"
for args in "--slots 8" "--slots 7" "--slots 6" "--slots 8 --backoff 64" "--slots 8 --backoff 256" "--slots 8 --pos 96" "--slots 8 --splits 4"; do
  echo "== 23 layers, $args"; timeout 60 $B --layers 23 --reps 20 $args
done
echo "== check, 23 layers"; timeout 100 $B --layers 23 --reps 3 --check
. tools/device/common.sh
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
if [ -f .devcarry/shape-xz/cubeforge-gen.xz ] && unpack_xz .devcarry/shape-xz/cubeforge-gen.xz /tmp/cfg; then
  echo "== engine (main), one prompt, v0.1"
  for m in v0.1; do
    timeout 120 /tmp/cfg bench --synthetic $m --quick --batches 1 --reps 1 --variant 2097152 2>&1 |
      grep -E "greedy B1 K=8|^timeline" | tail -14
  done
fi
