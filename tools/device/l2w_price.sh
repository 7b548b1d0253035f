#!/usr/bin/env bash
# GPU-machine pricing of the step's structure (session 39): what one decode step costs when its weights cost no DRAM
# time. The diagnostic binary (tools/device/build_cuda_gpt.sh with EXTRA_NVFLAGS=-DCF_DIAG_L2W) runs with variant
# bit 19: every dual layer reads layer 0's weights, each GEMV a 2 MB window, the fused MLP's and the ring lm_head's
# blocks the first 4 blocks' streams, all with an L2 evict-last policy, so the weights come from L2 while the keys and
# values still come from DRAM (wrong outputs, timing only). Alternating rounds against the production binary, then
# both timelines (bit 21). Usage (device tool, repo root):
#   PROD=/tmp/cfgen DIAG=/tmp/l2diag REPS=2 bash tools/device/l2w_price.sh
set -uo pipefail
. tools/device/common.sh
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
PROD=${PROD:?production binary}
DIAG=${DIAG:?diagnostic binary}
export RUN_LOG_DIR=/tmp/l2w-logs
rm -rf "$RUN_LOG_DIR"; mkdir -p "$RUN_LOG_DIR"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
for r in $(seq "${REPS:-2}"); do
  for m in v0.1 v0.5; do
    run prod_${m}_$r 90 "$PROD" bench --synthetic $m --quick --batches 1,4 --reps 1 >/dev/null
    echo "prod $m rep $r: $(tpot_line "$RUN_LOG_DIR/prod_${m}_$r.log")"
    run diag_${m}_$r 90 "$DIAG" bench --synthetic $m --quick --batches 1,4 --reps 1 --variant 524288 >/dev/null
    echo "diag $m rep $r: $(tpot_line "$RUN_LOG_DIR/diag_${m}_$r.log")"
  done
done
grep -m1 "DIAGNOSTIC\|fused MLP" "$RUN_LOG_DIR/diag_v0.1_1.log"
for b in 1 4; do
  run tl_prod_$b 90 "$PROD" bench --synthetic v0.1 --quick --batches $b --reps 1 --variant 2097152
  run tl_diag_$b 90 "$DIAG" bench --synthetic v0.1 --quick --batches $b --reps 1 --variant 2621440
  for w in prod diag; do
    echo "--- timeline $w, batch $b"
    last_timeline "$RUN_LOG_DIR/tl_${w}_$b.log" | head -40
  done
done
(cd "$RUN_LOG_DIR" && tar czf "${OUT:-/tmp}/l2w-logs.tgz" .) && echo "logs: l2w-logs.tgz"
