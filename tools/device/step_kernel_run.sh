#!/usr/bin/env bash
# Session 9 GPU-machine call (issue 7): the fused decode step (gpt_step_kernel.cuh, opt-in: CUBEFORGE_GPT_STEP=1)
# and the default per-kernel path in one call, smoke tests first so a broken kernel costs seconds, not the call.
# Carry the standalone binary's folder (tools/device/build_cuda_gpt.sh DIR): BIN=DIR/cubeforge-gen.
# Usage (device tool, repo root): BIN=.devcarry/sk/cubeforge-gen STAGES=smoke,check,bench,tl,old,v05,memcheck,default \
#   bash tools/device/step_kernel_run.sh
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
export CUBEFORGE_GPT_STEP=${FUSED:-1}  # stages below run the fused step unless FUSED=0
if has smoke; then
  run smoke_tiny 60 "$BIN" bench --synthetic tiny --quick --batches 1,2 --reps 1; rc=$?; echo "--- smoke_tiny"; summ smoke_tiny
  if [ $rc -ne 0 ]; then tail -20 "$RUN_LOG_DIR/smoke_tiny.log"; STAGES=smoke; fi
  run check_tiny 90 "$BIN" cuda-check --synthetic tiny; echo "--- check_tiny"; summ check_tiny
fi
if has check; then
  run check01 240 "$BIN" cuda-check --synthetic v0.1; echo "--- check01"; summ check01
fi
if has bench; then
  run bench01 150 "$BIN" bench --synthetic v0.1 --batches 1,2,4; echo "--- bench01"; sed -n '/== summary/,$p' "$RUN_LOG_DIR/bench01.log" | head -40; summ bench01 8
fi
if has default; then  # the default per-kernel path: cuda-check and the full benches (docs/cuda-gpt.md)
  CUBEFORGE_GPT_STEP=0 run dcheck01 240 "$BIN" cuda-check --synthetic v0.1; echo "--- dcheck01"; summ dcheck01
  CUBEFORGE_GPT_STEP=0 run dbench01 150 "$BIN" bench --synthetic v0.1; echo "--- dbench01"; sed -n '/== summary/,$p' "$RUN_LOG_DIR/dbench01.log" | head -24
  CUBEFORGE_GPT_STEP=0 run dbench05 150 "$BIN" bench --synthetic v0.5; echo "--- dbench05"; sed -n '/== summary/,$p' "$RUN_LOG_DIR/dbench05.log" | head -24
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
