#!/usr/bin/env bash
# Session 9 GPU-machine call (issue 7): the fused decode step (gpt_step_kernel.cuh) against the per-kernel path
# (CUBEFORGE_GPT_STEP=0) in one call, smoke tests first so a broken kernel costs seconds, not the whole call.
# Carry the standalone binary's folder (tools/device/build_cuda_gpt.sh DIR): BIN=DIR/cubeforge-gen.
# Usage (device tool, repo root): BIN=.devcarry/sk/cubeforge-gen STAGES=smoke,check,bench,tl,old,v05,memcheck bash tools/device/step_kernel_run.sh
set -uo pipefail
. tools/device/common.sh
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
BIN=${BIN:-.devcarry/sk/cubeforge-gen}
STAGES=${STAGES:-smoke,check,bench,tl,old,v05}
export RUN_LOG_DIR=/tmp/sk-logs
rm -rf "$RUN_LOG_DIR"; mkdir -p "$RUN_LOG_DIR"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
has() { [[ ",$STAGES," == *",$1,"* ]]; }
summ() { grep -E "TPOT|prefill|capture|batch|bandwidth|fused|decode step|rel L2|identical|DIFFERENT|cancel|cuda-check|FAIL|error|Error|trap|ERROR" "$RUN_LOG_DIR/$1.log" | head -${2:-40}; }
if has smoke; then
  run smoke_tiny 60 "$BIN" bench --synthetic tiny --quick --batches 1,2 --reps 1; rc=$?; echo "--- smoke_tiny"; summ smoke_tiny
  if [ $rc -ne 0 ]; then tail -20 "$RUN_LOG_DIR/smoke_tiny.log"; STAGES=smoke; fi
  run check_tiny 90 "$BIN" cuda-check --synthetic tiny; echo "--- check_tiny"; summ check_tiny
fi
# L2 prefetch distance sweep (CUBEFORGE_GPT_STEP_PF, stages ahead of each ring copy; PFS="0 16 32"): quick v0.1 B1
# with the per-phase timeline; the fastest distance is exported for the later stages.
if has pf; then
  best=""; best_t=""
  for d in ${PFS:-0 16 32}; do
    CUBEFORGE_GPT_STEP_PF=$d CUBEFORGE_GPT_STEP_TL=1 run "pf$d" 90 "$BIN" bench --synthetic v0.1 --quick --batches 1 --reps 1
    t=$(grep -m1 "TPOT mean" "$RUN_LOG_DIR/pf$d.log" | awk -F'|' '{print $3}' | awk '{print $1}')
    echo "--- pf $d: TPOT ${t:-?} ms"; grep -m1 "fused step timeline" "$RUN_LOG_DIR/pf$d.log"
    [ -n "$t" ] || continue
    if [ -z "$best_t" ] || awk "BEGIN{exit !($t < $best_t)}"; then best=$d; best_t=$t; fi
  done
  [ -n "$best" ] && export CUBEFORGE_GPT_STEP_PF=$best && echo "best L2 prefetch distance: $best stages ($best_t ms)"
fi
if has check; then
  run check01 240 "$BIN" cuda-check --synthetic v0.1; echo "--- check01"; summ check01
fi
if has bench; then
  run bench01 150 "$BIN" bench --synthetic v0.1 --batches 1,2,4; echo "--- bench01"; sed -n '/== summary/,$p' "$RUN_LOG_DIR/bench01.log" | head -40; summ bench01 8
fi
if has tl; then
  CUBEFORGE_GPT_STEP_TL=1 run tl01 90 "$BIN" bench --synthetic v0.1 --quick --batches 1 --reps 1; echo "--- tl01"; grep -E "fused step timeline|TPOT mean" "$RUN_LOG_DIR/tl01.log" | head
fi
if has old; then
  CUBEFORGE_GPT_STEP=0 run old01 90 "$BIN" bench --synthetic v0.1 --quick --batches 1 --reps 1; echo "--- old01"; grep -E "TPOT mean|decode" "$RUN_LOG_DIR/old01.log" | head -4
fi
if has v05; then
  run bench05 150 "$BIN" bench --synthetic v0.5 --batches 1,2; echo "--- bench05"; sed -n '/== summary/,$p' "$RUN_LOG_DIR/bench05.log" | head -30
fi
if has memcheck && command -v compute-sanitizer >/dev/null; then
  CUBEFORGE_GPT_STEP_SPIN=4000000000 run memcheck 150 compute-sanitizer --tool memcheck --leak-check no --print-limit 20 "$BIN" bench --synthetic tiny --quick --batches 1,2 --reps 1 --copy-mb 64
  echo "--- memcheck"; grep -E "ERROR SUMMARY|Invalid|out of bounds" "$RUN_LOG_DIR/memcheck.log" | head
fi
(cd "$RUN_LOG_DIR" && tar czf "${OUT:-/tmp}/sk-logs.tgz" .) && echo "logs: sk-logs.tgz"
exit 0
