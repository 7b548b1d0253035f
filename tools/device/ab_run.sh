#!/usr/bin/env bash
# GPU-machine A/B call (issue 7): two or more values of an environment variable in one binary (session 10), or two
# or more binaries (AB_BINS, session 11: a refactor against its base). Smoke tests first (a broken kernel costs
# seconds, not the call), then cuda-check per value (its digest lines compare the values bitwise), alternating quick
# benches, the per-kernel timeline (variant bit 21), the full check / benches / memcheck of the first value.
# Session 10 ran it for its experiments (commits 561211b, ed08330, 5f2d9ac, with AB_ENV=CUBEFORGE_GPT_MLP /
# CUBEFORGE_GPT_OGU / CUBEFORGE_GPT_DNCL, AB_VALUES="1 0").
# Carry the standalone binaries' folders (tools/device/build_cuda_gpt.sh DIR).
# Since session 15, env_ab.sh does the A/B part better (configurations of several variables and/or binaries, v0.1
# and v0.5 at batches 1 and 4, a timeline of any model and batch); this script stays for its staged full runs
# (smoke, check, bench, memcheck of one binary), which the documented commands of sessions 10-14 use.
# Usage (device tool, repo root):
#   BIN=.devcarry/s13/cubeforge-gen AB_ENV=CUBEFORGE_GPT_MLP AB_VALUES="1 0" \
#     STAGES=smoke,ab,tl,check,bench,memcheck bash tools/device/ab_run.sh
#   AB_BINS=".devcarry/new/cubeforge-gen .devcarry/base/cubeforge-gen" STAGES=smoke,digest,ab,tl,check,bench,memcheck \
#     bash tools/device/ab_run.sh
# The first value (of AB_BINS, else of AB_VALUES) is the one `check`, `bench` and `memcheck` run. `digest` runs
# cuda-check tiny and v0.1 for every value (DIGEST_VALUES, if set) and says whether their digest lines agree; `tl`
# runs the timeline for every value (TL_VALUES, if set).
set -uo pipefail
. tools/device/common.sh
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
BIN=${BIN:-.devcarry/s10/cubeforge-gen}
AB_ENV=${AB_ENV:-CUBEFORGE_GPT_MLP}
AB_VALUES=${AB_VALUES:-1 0}
if [ -n "${AB_BINS:-}" ]; then AB_VALUES=$AB_BINS; fi
STAGES=${STAGES:-smoke,ab,tl,check}
REPS=${REPS:-3}
FIRST=${AB_VALUES%% *}
export RUN_LOG_DIR=/tmp/ab-logs
rm -rf "$RUN_LOG_DIR"; mkdir -p "$RUN_LOG_DIR"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
has() { [[ ",$STAGES," == *",$1,"* ]]; }
summ() { grep -E "TPOT|prefill|capture|batch|bandwidth|decode GEMVs|rel L2 error|identical|DIFFERENT|cancel|cuda-check|FAIL|error|Error|trap|ERROR" "$RUN_LOG_DIR/$1.log" | head -${2:-40}; }
with() {  # with VALUE CMD...: CMD (a shell function too) with @BIN replaced by the binary of VALUE (AB_BINS: the
          # value itself, else $BIN) and, without AB_BINS, $AB_ENV=VALUE in its environment
  local v=$1 rc a; shift
  local args=()
  for a in "$@"; do
    if [ "$a" = "@BIN" ]; then if [ -n "${AB_BINS:-}" ]; then a=$v; else a=$BIN; fi; fi
    args+=("$a")
  done
  if [ -n "${AB_BINS:-}" ]; then "${args[@]}"; return $?; fi
  export "$AB_ENV=$v"; "${args[@]}"; rc=$?; unset "$AB_ENV"; return $rc
}
tag() { if [ -n "${AB_BINS:-}" ]; then basename "$(dirname "$1")"; else echo "$1"; fi; }  # a value as a log name
if has smoke; then
  with "$FIRST" run smoke_tiny 60 @BIN bench --synthetic tiny --quick --batches 1,2 --reps 1; rc=$?; echo "--- smoke_tiny"; summ smoke_tiny
  if [ $rc -ne 0 ]; then tail -20 "$RUN_LOG_DIR/smoke_tiny.log"; STAGES=smoke; fi
  for v in $AB_VALUES; do
    t=$(tag "$v")
    with "$v" run check_tiny_$t 90 @BIN cuda-check --synthetic tiny; echo "--- check_tiny ($t)"; summ check_tiny_$t
  done
fi
if has digest; then  # cuda-check tiny and v0.1 per value: are the digests (tokens, logits) the same?
  DIGEST_VALUES=${DIGEST_VALUES:-$AB_VALUES}
  for preset in tiny v0.1; do
    for v in $DIGEST_VALUES; do
      t=$(tag "$v")
      with "$v" run digest_${preset}_$t 240 @BIN cuda-check --synthetic $preset
      grep "^digest:" "$RUN_LOG_DIR/digest_${preset}_$t.log" > "$RUN_LOG_DIR/digest_${preset}_$t.txt"
      echo "--- digest $preset ($t): $(grep -c . "$RUN_LOG_DIR/digest_${preset}_$t.txt") lines"; summ digest_${preset}_$t 12
    done
    n=$(cat "$RUN_LOG_DIR"/digest_${preset}_*.txt | sort | uniq -c | awk -v k="$(echo $DIGEST_VALUES | wc -w)" '$1 != k' | wc -l)
    if [ "$n" -eq 0 ]; then echo "DIGESTS $preset: identical across all values"; else echo "DIGESTS $preset: DIFFER"; cat "$RUN_LOG_DIR"/digest_${preset}_*.txt; fi
  done
fi
if has ab; then  # alternating, v0.1, quick
  for i in $(seq "$REPS"); do
    for v in $AB_VALUES; do
      t=$(tag "$v")
      with "$v" run ab_${t}_$i 90 @BIN bench --synthetic v0.1 --quick --batches 1,4 --reps 1; echo "--- ab_${t}_$i"; grep -E "TPOT mean|batch" "$RUN_LOG_DIR/ab_${t}_$i.log" | head -6
    done
  done
fi
if has tl; then  # per-kernel timeline of one step (variant bit 21, timing diagnostics)
  for v in ${TL_VALUES:-$AB_VALUES}; do
    t=$(tag "$v")
    with "$v" run tl_$t 90 @BIN bench --synthetic v0.1 --quick --batches 1 --reps 1 --variant 2097152; echo "--- tl ($t)"; grep -E "timeline|TPOT mean" "$RUN_LOG_DIR/tl_$t.log" | head -11
  done
fi
if has check; then
  with "$FIRST" run check01 240 @BIN cuda-check --synthetic v0.1; echo "--- check01"; summ check01
fi
if has bench; then
  with "$FIRST" run bench01 150 @BIN bench --synthetic v0.1; echo "--- bench01"; sed -n '/== summary/,$p' "$RUN_LOG_DIR/bench01.log" | head -30
  with "$FIRST" run bench05 150 @BIN bench --synthetic v0.5; echo "--- bench05"; sed -n '/== summary/,$p' "$RUN_LOG_DIR/bench05.log" | head -30
fi
if has memcheck && command -v compute-sanitizer >/dev/null; then
  with "$FIRST" run memcheck 200 compute-sanitizer --tool memcheck --leak-check no --print-limit 20 @BIN bench --synthetic tiny --quick --batches 1,4,8 --reps 1 --copy-mb 64
  echo "--- memcheck"; grep -E "ERROR SUMMARY|Invalid|out of bounds" "$RUN_LOG_DIR/memcheck.log" | head
fi
(cd "$RUN_LOG_DIR" && tar czf "${OUT:-/tmp}/ab-logs.tgz" .) && echo "logs: ab-logs.tgz"
exit 0
