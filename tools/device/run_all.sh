#!/usr/bin/env bash
# One GPU-machine call for both CUDA stages: unpacks the carried binary (.devcarry/all/cubeforge-gen.xz, made by
# tools/device/build_cuda_shape.sh + xz, so the carried tree stays far under the 64 MiB limit), then runs
# cuda_gpt_run.sh and run_shape_bench.sh with their logs in one tar under $OUT (the tool returns at most 8 files).
# Usage (device tool, repo root, carry .devcarry/all): bash tools/device/run_all.sh [GPT_STAGES] [SHAPE_STAGES]
#   a stage list of "none" skips that script.
set -uo pipefail
. tools/device/common.sh
OUTDIR=${OUT:-/tmp/cf-all-out}
GPT_STAGES=${1:-check,bench01,bench05,variants,profile}
SHAPE_STAGES=${2:-check,bench01,bench05}
if [ -f .devcarry/all/cubeforge-gen.xz ]; then
  mkdir -p .devcarry/cuda-gpt .devcarry/cuda-shape
  unpack_xz .devcarry/all/cubeforge-gen.xz .devcarry/cuda-shape/cubeforge-gen
  cp .devcarry/cuda-shape/cubeforge-gen .devcarry/cuda-gpt/cubeforge-gen
fi
LOGS=/tmp/cf-all-logs
rm -rf "$LOGS"; mkdir -p "$LOGS/gpt" "$LOGS/shape"
# The device's copy of .git is the session's starting checkout, not the working tree that was sent, so its
# `git log` names the wrong commit: the caller passes the hash literally (CF_COMMIT=abc123 bash ...).
echo "commit ${CF_COMMIT:-unknown (pass CF_COMMIT=<hash of the tree the binary was built from>)}" | tee "$LOGS/commit.txt"
[ "$GPT_STAGES" != none ] && OUT="$LOGS/gpt" bash tools/device/cuda_gpt_run.sh "$GPT_STAGES"
# when the binary was unpacked above, run_shape_bench.sh uses it as is (no second unpack of a SHAPE_XZ)
[ -f .devcarry/all/cubeforge-gen.xz ] && export SHAPE_XZ=/nonexistent
[ "$SHAPE_STAGES" != none ] && OUT="$LOGS/shape" bash tools/device/run_shape_bench.sh "$SHAPE_STAGES"
tar -C "$LOGS" -cf "$OUTDIR/logs.tar" .
echo "logs: $OUTDIR/logs.tar"
