#!/usr/bin/env bash
# GPU-machine run for session 21's determinism bug (docs/cuda-gpt.md, session 21): how many greedy generations of the
# same prompt differ from the first (`bench --quick --batches 1 --reps R`) and their token digests, in the
# configurations where it was seen and the ones where it was not, with the poison diagnostic (variant bit 23: a read
# of a previous run's values shows as NaN logits, i.e. tokens 0) and cuda-check's repeatability check.
# Session 22 found the race with output hashes (variant bit 24, a binary built with EXTRA_NVFLAGS=-DCF_DIAG_HASH):
# HASH_BIN=<that binary> adds its runs, which name the first (step, kernel, word) whose outputs differ between runs
# and count the fused-MLP launches whose ring weights differ from step 1's (docs/cuda-gpt.md, session 22).
# Usage (device tool, repo root):
#   BIN=.devcarry/x/cubeforge-gen [REPS=8] [EXTRA="--no-pdl"] [HASH_BIN=...] bash tools/device/determinism_run.sh
set -uo pipefail
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
BIN=${BIN:?binary}
REPS=${REPS:-8}
d() {  # d ENV-OR-- ARGS...: one bench, the count of runs differing from the first and where the first one differs
  local e=$1; shift
  local o
  o=$(timeout 150 env ${e/#-/} "$BIN" bench --quick --batches 1 --reps "$REPS" ${EXTRA:-} "$@" 2>&1)
  echo "[${e/#-/}] $*: differing $(echo "$o" | grep -c WARNING)/$((REPS - 1)); $(echo "$o" | grep -E 'TPOT mean' |
    sed 's/.*graphs of 8 steps | //; s/ (runs.*//') $(echo "$o" | grep -iE ' error|trap' | head -2)"
  echo "$o" | grep WARNING | sort | uniq -c | head -3
  # the runs' token digests (warm-up first): poisoned runs that all agree on garbage show here as a digest other than
  # the clean configuration's, with tokens 0
  echo "  digests: $(echo "$o" | grep -oE 'tokens\[0\.\.3\] [0-9 ]+, digest [0-9a-f]+' |
    sed 's/tokens\[0..3\] //' | uniq -c | tr -s ' ' | tr '\n' ';')"
}
d - --synthetic v0.1 --cond-len 78
d - --synthetic v0.1 --cond-len 78 --variant 8388608
d - --synthetic v0.5
d - --synthetic v0.5 --variant 8388608
d - --synthetic v0.1
d - --synthetic v0.1 --tokens 1024
for args in "--synthetic v0.1 --cond-len 78" "--synthetic v0.5"; do
  echo "== cuda-check $args"
  timeout 200 "$BIN" cuda-check $args 2>&1 | grep -E "repeat:|cancel:|identical|cuda-check" | head -8
done
if [ -n "${HASH_BIN:-}" ]; then
  for args in "--synthetic v0.5" "--synthetic v0.1 --cond-len 78"; do
    echo "== output hashes $args"
    timeout 150 "$HASH_BIN" bench --quick --batches 1 --reps "$REPS" $args --variant 16777216 2>&1 |
      grep -E "^HASHES|WARNING" | sort | uniq -c | head -8
  done
fi
exit 0
