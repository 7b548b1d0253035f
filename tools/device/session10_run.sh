#!/usr/bin/env bash
# Session 10 GPU-machine call (issue 7): the down-proj's split-K combine in thread block clusters (default;
# CUBEFORGE_GPT_DNCL=0: through L2, the session-7 kernel) checked and measured against the L2 combine in one call,
# smoke tests first so a broken kernel costs seconds, not the call. (The session's merged-launch experiments,
# commits 561211b and ed08330, ran an earlier version of this script with CUBEFORGE_GPT_MLP / CUBEFORGE_GPT_OGU.)
# Carry the standalone binary's folder (tools/device/build_cuda_gpt.sh DIR): BIN=DIR/cubeforge-gen.
# Usage (device tool, repo root): BIN=.devcarry/s10/cubeforge-gen STAGES=smoke,ab,tl,check,bench,memcheck \
#   bash tools/device/session10_run.sh
set -uo pipefail
. tools/device/common.sh
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
BIN=${BIN:-.devcarry/s10/cubeforge-gen}
STAGES=${STAGES:-smoke,ab,tl,check}
export RUN_LOG_DIR=/tmp/s10-logs
rm -rf "$RUN_LOG_DIR"; mkdir -p "$RUN_LOG_DIR"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
has() { [[ ",$STAGES," == *",$1,"* ]]; }
summ() { grep -E "TPOT|prefill|capture|batch|bandwidth|decode GEMVs|rel L2|identical|DIFFERENT|cancel|cuda-check|FAIL|error|Error|trap|ERROR|passed" "$RUN_LOG_DIR/$1.log" | head -${2:-40}; }
if has smoke; then
  run smoke_tiny 60 "$BIN" bench --synthetic tiny --quick --batches 1,2 --reps 1; rc=$?; echo "--- smoke_tiny"; summ smoke_tiny
  if [ $rc -ne 0 ]; then tail -20 "$RUN_LOG_DIR/smoke_tiny.log"; STAGES=smoke; fi
  run check_tiny 90 "$BIN" cuda-check --synthetic tiny; echo "--- check_tiny"; summ check_tiny
  CUBEFORGE_GPT_DNCL=0 run check_tiny0 90 "$BIN" cuda-check --synthetic tiny; echo "--- check_tiny0 (L2 combine)"; summ check_tiny0
fi
if has ab; then  # alternating A/B, v0.1, quick: cluster combine, L2 combine
  for i in 1 2 3; do
    for m in 1 0; do
      CUBEFORGE_GPT_DNCL=$m run ab_${m}_$i 90 "$BIN" bench --synthetic v0.1 --quick --batches 1,4 --reps 1; echo "--- ab_${m}_$i (CUBEFORGE_GPT_DNCL=$m)"; grep -E "TPOT mean|batch" "$RUN_LOG_DIR/ab_${m}_$i.log" | head -6
    done
  done
fi
if has tl; then  # per-kernel timeline (variant bit 21, timing diagnostics)
  run tl_m 90 "$BIN" bench --synthetic v0.1 --quick --batches 1 --reps 1 --variant 2097152; echo "--- tl_m"; grep -E "timeline|TPOT mean" "$RUN_LOG_DIR/tl_m.log" | head -11
  CUBEFORGE_GPT_DNCL=0 run tl_s 90 "$BIN" bench --synthetic v0.1 --quick --batches 1 --reps 1 --variant 2097152; echo "--- tl_s"; grep -E "timeline|TPOT mean" "$RUN_LOG_DIR/tl_s.log" | head -11
fi
if has check; then
  run check01 240 "$BIN" cuda-check --synthetic v0.1; echo "--- check01"; summ check01
fi
if has bench; then
  run bench01 150 "$BIN" bench --synthetic v0.1; echo "--- bench01"; sed -n '/== summary/,$p' "$RUN_LOG_DIR/bench01.log" | head -30
  run bench05 150 "$BIN" bench --synthetic v0.5; echo "--- bench05"; sed -n '/== summary/,$p' "$RUN_LOG_DIR/bench05.log" | head -30
fi
if has memcheck && command -v compute-sanitizer >/dev/null; then
  run memcheck 200 compute-sanitizer --tool memcheck --leak-check no --print-limit 20 "$BIN" bench --synthetic tiny --quick --batches 1,4,8 --reps 1 --copy-mb 64
  echo "--- memcheck"; grep -E "ERROR SUMMARY|Invalid|out of bounds" "$RUN_LOG_DIR/memcheck.log" | head
fi
(cd "$RUN_LOG_DIR" && tar czf "${OUT:-/tmp}/s10-logs.tgz" .) && echo "logs: s10-logs.tgz"
exit 0
