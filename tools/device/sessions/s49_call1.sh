#!/usr/bin/env bash
# Session 49, first device call; H200 only (on any other card it prints the card and runs nothing: session 48 ran
# main's table on an H100). The final table of the shape build under the default carveout "one" (final_table.sh),
# then, while the deadline allows, the per-card knobs again under "one" (they were chosen on the H200 in session 39,
# under the driver's carveout): alternating quick benches (batches 1 and 4) of the default, the driver's carveout,
# six MLP ring slots (the H100's 3-8-row depth; the H200's is 5) and both early triggers (the H100's setting).
# QUICK=1 (for a call with little budget left): no final table, and only the default and the driver's carveout.
# Carry .devcarry/shape-xz (a shape build; CF_COMMIT names its commit). ~8 min on an H200 (QUICK=1: ~1.5 min).
# Usage (device tool, repo root):
#   [QUICK=1] [SHAPE_STAGES=e2e] [DEADLINE=s] CF_COMMIT=<hash> bash tools/device/sessions/s49_call1.sh
set -uo pipefail
. tools/device/common.sh
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
T0=$(date +%s)
DEADLINE=${DEADLINE:-540}  # seconds after the start past which no new bench starts
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
case "$(nvidia-smi --query-gpu=name --format=csv,noheader)" in
  *H200*) ;;
  *) echo "not an H200: nothing run"; exit 0 ;;
esac
if [ "${QUICK:-0}" = 1 ]; then
  unpack_xz .devcarry/shape-xz/cubeforge-gen.xz /tmp/cfg || exit 1
else
  CF_COMMIT=${CF_COMMIT:-unknown} bash tools/device/final_table.sh
  cp .devcarry/cuda-shape/cubeforge-gen /tmp/cfg
fi
export RUN_LOG_DIR=/tmp/s49-knobs
rm -rf "$RUN_LOG_DIR"; mkdir -p "$RUN_LOG_DIR"  # a warm machine keeps /tmp: no earlier call's logs
CONFIGS=("BASE=1" "CUBEFORGE_GPT_CARVEOUT=driver" "CUBEFORGE_GPT_MLP_SLOTS=6" "CUBEFORGE_GPT_EARLY_TRIG=3")
[ "${QUICK:-0}" = 1 ] && CONFIGS=("BASE=1" "CUBEFORGE_GPT_CARVEOUT=driver")
for r in 1 2; do
  for m in v0.1 v0.5; do
    for c in "${CONFIGS[@]}"; do
      if [ $(( $(date +%s) - T0 )) -gt "$DEADLINE" ]; then echo "deadline: stopped before round $r $m $c"; break 3; fi
      name="r${r}_${m}_${c%%=*}"
      ( export "$c"; run "$name" 60 /tmp/cfg bench --synthetic "$m" --quick --batches 1,4 --reps 2 ) > /dev/null
      echo "round $r $m $c: $(tpot_line "$RUN_LOG_DIR/$name.log")"
    done
  done
done
tar -C "$RUN_LOG_DIR" -czf "${OUT:-/tmp}/knob-logs.tgz" . && echo "logs: knob-logs.tgz"
exit 0
