#!/usr/bin/env bash
# GPU-machine A/B over environment configurations of one binary (session 14): each configuration is a comma-separated
# list of VAR=VALUE (e.g. "CUBEFORGE_GPT_OPROJ=0" or "CUBEFORGE_GPT_OPROJ=1,CUBEFORGE_GPT_OPROJ_MODE=2"). Per
# configuration cuda-check tiny (and v0.1 with CHECK01=1; the digest lines say whether two configurations agree
# bitwise), then REPS rounds of alternating quick benches (v0.1 and v0.5, batches 1 and 4), then the per-kernel
# timeline (variant bit 21) of each configuration. Usage (device tool, repo root):
#   BIN=.devcarry/s14b/cubeforge-gen CONFIGS="CUBEFORGE_GPT_OPROJ=0 CUBEFORGE_GPT_OPROJ=1" bash tools/device/env_ab.sh
#   CONFIGS="BIN=.devcarry/new/cubeforge-gen BIN=.devcarry/base/cubeforge-gen" bash tools/device/env_ab.sh
# BENCH_ARGS: more bench options for the quick benches (e.g. "--batch-top-p 0.9": the batch runs sample, as variations)
set -uo pipefail
. tools/device/common.sh
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
BIN=${BIN:-}
CONFIGS=${CONFIGS:?configurations}
REPS=${REPS:-2}
export RUN_LOG_DIR=/tmp/envab-logs
rm -rf "$RUN_LOG_DIR"; mkdir -p "$RUN_LOG_DIR"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
withcfg() {  # withcfg CONFIG CMD...: CMD with the configuration's variables set and @BIN replaced by $BIN (which a
            # configuration may set: "BIN=.devcarry/a/cubeforge-gen" compares binaries)
  local c=$1; shift
  ( IFS=,; for kv in $c; do export "$kv"; done; unset IFS
    local args=() a
    for a in "$@"; do [ "$a" = "@BIN" ] && a=$BIN; args+=("$a"); done
    "${args[@]}" )
}
i=0
for c in $CONFIGS; do
  i=$((i + 1))
  echo "config $i: $c"
  withcfg "$c" run check_tiny_$i 90 @BIN cuda-check --synthetic tiny
  grep -E "rel L2 error|identical|DIFFER|digest|cuda-check|FAIL|rror|trap" "$RUN_LOG_DIR/check_tiny_$i.log" | head -12
  if [ "${CHECK01:-0}" = 1 ]; then
    withcfg "$c" run check01_$i 240 @BIN cuda-check --synthetic v0.1
    grep -E "rel L2 error|identical|DIFFER|digest|cancel|cuda-check|FAIL|rror|trap" "$RUN_LOG_DIR/check01_$i.log" | head -12
  fi
done
for r in $(seq "$REPS"); do
  i=0
  for c in $CONFIGS; do
    i=$((i + 1))
    for m in v0.1 v0.5; do
      withcfg "$c" run ab_${i}_${m}_$r 90 @BIN bench --synthetic $m --quick --batches 1,4 --reps 1 ${BENCH_ARGS:-} >/dev/null
      echo "config $i $m rep $r: $(tpot_line "$RUN_LOG_DIR/ab_${i}_${m}_$r.log")"
    done
  done
done
# TL_MODEL / TL_BATCH: the timeline's model and batch (a bench prints one timeline per generate, its first one at
# batch 1, so the last block is the one asked for)
if [ "${TL:-1}" = 1 ]; then
  i=0
  for c in $CONFIGS; do
    i=$((i + 1))
    withcfg "$c" run tl_$i 90 @BIN bench --synthetic "${TL_MODEL:-v0.1}" --quick --batches "${TL_BATCH:-1}" --reps 1 \
      --variant 2097152
    echo "--- timeline config $i"
    last_timeline "$RUN_LOG_DIR/tl_$i.log"
  done
fi
(cd "$RUN_LOG_DIR" && tar czf "${OUT:-/tmp}/envab-logs.tgz" .) && echo "logs: envab-logs.tgz"
exit 0
