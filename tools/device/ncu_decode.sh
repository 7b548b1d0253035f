#!/usr/bin/env bash
# GPU-machine Nsight Compute profile of decode kernels inside the bench's graphs (session 39): one ncu run per
# (kernel regex, batch), `--set full`, clocks left alone, each landing mid-sequence of the measured run at that batch
# (the bench's earlier runs at batch 1 are counted in the skip). Prints the sections that say where a kernel waits
# (speed of light, memory workload, warp states, occupancy, launch) and packs the text reports and logs into $OUT (not the .ncu-rep files).
# Usage (device tool, repo root): BIN=/tmp/cfgen PROFILES="attn_decode:4 attn_decode:1 mlp_kernel:1" bash tools/device/ncu_decode.sh
#   MODEL (v0.5), TOKENS (the preset's), PER_STEP (launches of a profiled kernel per step: 24 for the per-layer
#   kernels of the real presets), COUNT (kernels profiled per run, 2)
# The skip is an estimate: in session 39 it landed at v0.5's last positions (grid x = 35 splits, ~1100 keys), not
# mid-sequence, so read the position off the attention's grid (x = splits of 32 keys) before comparing profiles.
set -uo pipefail
. tools/device/common.sh
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
BIN=${BIN:?binary}
MODEL=${MODEL:-v0.5}
PER_STEP=${PER_STEP:-24}
COUNT=${COUNT:-2}
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
[ -n "$NCU" ] || { echo "ncu not found"; exit 1; }
OUTDIR=${OUT:-/tmp/ncu-out}
export RUN_LOG_DIR=/tmp/ncu-logs
rm -rf "$RUN_LOG_DIR"; mkdir -p "$RUN_LOG_DIR"
N=${TOKENS:-$([ "$MODEL" = v0.5 ] && echo 1024 || echo 512)}
for pr in ${PROFILES:?"kernel:batch ..."}; do
  k=${pr%%:*}; b=${pr##*:}
  # runs before the profiled one: at batch 1 the capture run (the rep run is profiled); above, the capture, the rep
  # and the 1-step graph at batch 1, then the warm run at this batch
  before=$([ "$b" -eq 1 ] && echo 1 || echo 4)
  skip=$(( (before * N + N / 2) * PER_STEP ))
  name=ncu_${k}_b$b
  run "$name" 420 "$NCU" --clock-control none --set full --kernel-name "regex:$k" --launch-skip "$skip" \
    --launch-count "$COUNT" -f -o "$RUN_LOG_DIR/$name" \
    "$BIN" bench --synthetic "$MODEL" --quick --batches "$b" --reps 1 ${TOKENS:+--tokens $TOKENS}
  tail -3 "$RUN_LOG_DIR/$name.log"
  "$NCU" --import "$RUN_LOG_DIR/$name.ncu-rep" --print-units base \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy \
    --section LaunchStats --section SchedulerStats > "$RUN_LOG_DIR/$name.txt" 2>&1
  echo "######## $name (skip $skip)"
  grep -vE "^\s*$|----" "$RUN_LOG_DIR/$name.txt" | grep -vE "OPT|INF|WRN|^\s{6,}[a-z]" | head -120
done
(cd "$RUN_LOG_DIR" && tar czf "$OUTDIR/ncu-logs.tgz" --exclude="*.ncu-rep" .) && echo "logs: ncu-logs.tgz"
