#!/usr/bin/env bash
# GPU-machine A/B call for a decode-path alternative selected by an environment variable (issue 7; session 10):
# smoke tests first (a broken kernel costs seconds, not the call), then alternating quick benches, the per-kernel
# timeline (variant bit 21) and cuda-check. Session 10 ran it for its three experiments (commits 561211b, ed08330,
# 5f2d9ac, with AB_ENV=CUBEFORGE_GPT_MLP / CUBEFORGE_GPT_OGU / CUBEFORGE_GPT_DNCL, AB_VALUES="1 0").
# Carry the standalone binary's folder (tools/device/build_cuda_gpt.sh DIR): BIN=DIR/cubeforge-gen.
# Usage (device tool, repo root): BIN=.devcarry/s10/cubeforge-gen AB_ENV=CUBEFORGE_GPT_STEP AB_VALUES="1 0" \
#   STAGES=smoke,ab,tl,check,bench,memcheck bash tools/device/ab_run.sh
# The first value of AB_VALUES is the one `check` and `bench` run.
set -uo pipefail
. tools/device/common.sh
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
BIN=${BIN:-.devcarry/s10/cubeforge-gen}
AB_ENV=${AB_ENV:-CUBEFORGE_GPT_STEP}
AB_VALUES=${AB_VALUES:-1 0}
STAGES=${STAGES:-smoke,ab,tl,check}
REPS=${REPS:-3}
FIRST=${AB_VALUES%% *}
export RUN_LOG_DIR=/tmp/ab-logs
rm -rf "$RUN_LOG_DIR"; mkdir -p "$RUN_LOG_DIR"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
has() { [[ ",$STAGES," == *",$1,"* ]]; }
summ() { grep -E "TPOT|prefill|capture|batch|bandwidth|decode GEMVs|rel L2 error|identical|DIFFERENT|cancel|cuda-check|FAIL|error|Error|trap|ERROR" "$RUN_LOG_DIR/$1.log" | head -${2:-40}; }
with() {  # with VALUE CMD...: CMD (a shell function too) with $AB_ENV=VALUE in its environment
  local v=$1 rc; shift
  export "$AB_ENV=$v"; "$@"; rc=$?; unset "$AB_ENV"; return $rc
}
if has smoke; then
  with "$FIRST" run smoke_tiny 60 "$BIN" bench --synthetic tiny --quick --batches 1,2 --reps 1; rc=$?; echo "--- smoke_tiny"; summ smoke_tiny
  if [ $rc -ne 0 ]; then tail -20 "$RUN_LOG_DIR/smoke_tiny.log"; STAGES=smoke; fi
  for v in $AB_VALUES; do
    with "$v" run check_tiny_$v 90 "$BIN" cuda-check --synthetic tiny; echo "--- check_tiny ($AB_ENV=$v)"; summ check_tiny_$v
  done
fi
if has ab; then  # alternating, v0.1, quick
  for i in $(seq "$REPS"); do
    for v in $AB_VALUES; do
      with "$v" run ab_${v}_$i 90 "$BIN" bench --synthetic v0.1 --quick --batches 1,4 --reps 1; echo "--- ab_${v}_$i ($AB_ENV=$v)"; grep -E "TPOT mean|batch" "$RUN_LOG_DIR/ab_${v}_$i.log" | head -6
    done
  done
fi
if has tl; then  # per-kernel timeline of one step (variant bit 21, timing diagnostics)
  for v in $AB_VALUES; do
    with "$v" run tl_$v 90 "$BIN" bench --synthetic v0.1 --quick --batches 1 --reps 1 --variant 2097152; echo "--- tl ($AB_ENV=$v)"; grep -E "timeline|TPOT mean" "$RUN_LOG_DIR/tl_$v.log" | head -11
  done
fi
if has check; then
  with "$FIRST" run check01 240 "$BIN" cuda-check --synthetic v0.1; echo "--- check01"; summ check01
fi
if has bench; then
  with "$FIRST" run bench01 150 "$BIN" bench --synthetic v0.1; echo "--- bench01"; sed -n '/== summary/,$p' "$RUN_LOG_DIR/bench01.log" | head -30
  with "$FIRST" run bench05 150 "$BIN" bench --synthetic v0.5; echo "--- bench05"; sed -n '/== summary/,$p' "$RUN_LOG_DIR/bench05.log" | head -30
fi
if has memcheck && command -v compute-sanitizer >/dev/null; then
  with "$FIRST" run memcheck 200 compute-sanitizer --tool memcheck --leak-check no --print-limit 20 "$BIN" bench --synthetic tiny --quick --batches 1,4,8 --reps 1 --copy-mb 64
  echo "--- memcheck"; grep -E "ERROR SUMMARY|Invalid|out of bounds" "$RUN_LOG_DIR/memcheck.log" | head
fi
(cd "$RUN_LOG_DIR" && tar czf "${OUT:-/tmp}/ab-logs.tgz" .) && echo "logs: ab-logs.tgz"
exit 0
