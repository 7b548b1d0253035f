#!/usr/bin/env bash
# Session 10 GPU-machine call (issue 7): the merged o-proj + gate/up launch (ogu1_kernel, default;
# CUBEFORGE_GPT_OGU=2 its variant with every gate/up item requested before the wait; =0 the two session-8 kernels)
# checked and measured against the separate kernels in one call, smoke tests first so a broken kernel costs seconds.
# Carry the standalone binary's folder (tools/device/build_cuda_gpt.sh DIR): BIN=DIR/cubeforge-gen.
# Usage (device tool, repo root): BIN=.devcarry/s10/cubeforge-gen STAGES=smoke,ab,tl,check,bench,memcheck \
#   bash tools/device/merge_run.sh
set -uo pipefail
. tools/device/common.sh
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
BIN=${BIN:-.devcarry/s10/cubeforge-gen}
STAGES=${STAGES:-smoke,ab,tl,check}
export RUN_LOG_DIR=/tmp/merge-logs
rm -rf "$RUN_LOG_DIR"; mkdir -p "$RUN_LOG_DIR"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
has() { [[ ",$STAGES," == *",$1,"* ]]; }
summ() { grep -E "TPOT|prefill|capture|batch|bandwidth|decode GEMVs|rel L2|identical|DIFFERENT|cancel|cuda-check|FAIL|error|Error|trap|ERROR|passed" "$RUN_LOG_DIR/$1.log" | head -${2:-40}; }
if has smoke; then
  run smoke_tiny 60 "$BIN" bench --synthetic tiny --quick --batches 1,2 --reps 1; rc=$?; echo "--- smoke_tiny"; summ smoke_tiny
  if [ $rc -ne 0 ]; then tail -20 "$RUN_LOG_DIR/smoke_tiny.log"; STAGES=smoke; fi
  run check_tiny 90 "$BIN" cuda-check --synthetic tiny; echo "--- check_tiny"; summ check_tiny
  CUBEFORGE_GPT_OGU=0 run check_tiny0 90 "$BIN" cuda-check --synthetic tiny; echo "--- check_tiny0 (separate)"; summ check_tiny0
fi
if has ab; then  # alternating A/B/C, v0.1, quick: merged, merged with every gate/up item early, separate
  for i in 1 2; do
    for m in 1 2 0; do
      CUBEFORGE_GPT_OGU=$m run ab_${m}_$i 90 "$BIN" bench --synthetic v0.1 --quick --batches 1,4 --reps 1; echo "--- ab_${m}_$i (CUBEFORGE_GPT_OGU=$m)"; grep -E "TPOT mean|batch" "$RUN_LOG_DIR/ab_${m}_$i.log" | head -6
    done
  done
fi
if has tl; then  # per-kernel timeline (variant bit 21, timing diagnostics)
  run tl_m 90 "$BIN" bench --synthetic v0.1 --quick --batches 1 --reps 1 --variant 2097152; echo "--- tl_m"; grep -E "timeline|TPOT mean" "$RUN_LOG_DIR/tl_m.log" | head -20
  CUBEFORGE_GPT_OGU=0 run tl_s 90 "$BIN" bench --synthetic v0.1 --quick --batches 1 --reps 1 --variant 2097152; echo "--- tl_s"; grep -E "timeline|TPOT mean" "$RUN_LOG_DIR/tl_s.log" | head -20
fi
if has check; then
  run check01 240 "$BIN" cuda-check --synthetic v0.1; echo "--- check01"; summ check01
fi
if has bench; then
  run bench01 150 "$BIN" bench --synthetic v0.1; echo "--- bench01"; sed -n '/== summary/,$p' "$RUN_LOG_DIR/bench01.log" | head -30
  run bench05 150 "$BIN" bench --synthetic v0.5; echo "--- bench05"; sed -n '/== summary/,$p' "$RUN_LOG_DIR/bench05.log" | head -30
fi
if has memcheck && command -v compute-sanitizer >/dev/null; then
  run memcheck 150 compute-sanitizer --tool memcheck --leak-check no --print-limit 20 "$BIN" bench --synthetic tiny --quick --batches 1,4,8 --reps 1 --copy-mb 64
  echo "--- memcheck"; grep -E "ERROR SUMMARY|Invalid|out of bounds" "$RUN_LOG_DIR/memcheck.log" | head
fi
(cd "$RUN_LOG_DIR" && tar czf "${OUT:-/tmp}/merge-logs.tgz" .) && echo "logs: merge-logs.tgz"
exit 0
