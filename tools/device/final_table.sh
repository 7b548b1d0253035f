#!/usr/bin/env bash
# GPU-machine run of the numbers a session's final table reports, in one call (session 36): cuda-check v0.1 (digests,
# teacher-forced errors), the GPT benches of v0.1 and v0.5 at batches 1, 2, 4 and 8 (quick, three rounds), then the
# shape stage (tokens -> mesh at rb 7, 8, 9) and prompt -> mesh end to end (three runs) through run_shape_bench.sh.
# Uses the shape build (tools/device/build_cuda_shape.sh here, then xz: .devcarry/shape-xz/cubeforge-gen.xz), whose
# binary serves every command. Logs in one archive under $OUT; a short summary is printed last.
# Usage (device tool, repo root, carry .devcarry/shape-xz): CF_COMMIT=<hash> bash tools/device/final_table.sh
set -uo pipefail
. tools/device/common.sh
OUTDIR=${OUT:-/tmp/cf-final-out}
LOGS=/tmp/cf-final-logs
rm -rf "$LOGS"; mkdir -p "$LOGS/shape"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
echo "commit ${CF_COMMIT:-unknown (pass CF_COMMIT=<hash of the tree the binary was built from>)}" | tee "$LOGS/commit.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee "$LOGS/gpu.txt"
# unpacked once, where run_shape_bench.sh looks for its binary (SHAPE_XZ below keeps it from unpacking again)
BIN=.devcarry/cuda-shape/cubeforge-gen
mkdir -p "$(dirname "$BIN")"
unpack_xz .devcarry/shape-xz/cubeforge-gen.xz "$BIN" || exit 1
export SHAPE_XZ=/nonexistent
RUN_LOG_DIR=$LOGS
run check01 240 "$BIN" cuda-check --synthetic v0.1
for m in v0.1 v0.5; do run "bench_$m" 150 "$BIN" bench --synthetic "$m" --quick --batches 1,2,4,8 --reps 3; done
OUT="$LOGS/shape" bash tools/device/run_shape_bench.sh "${SHAPE_STAGES:-check,bench01,bench05,e2e}" > "$LOGS/shape/summary.log" 2>&1
echo; echo "######## final table"
grep -E "digest|rel L2 error|identical|cancel|cuda-check|memory peak" "$LOGS/check01.log"
for m in v0.1 v0.5; do echo "--- bench $m"; sed -n '/== summary/,$p' "$LOGS/bench_$m.log"; done
sed -n '/######## results/,$p' "$LOGS/shape/summary.log" | tail -70
tar -C "$LOGS" -czf "$OUTDIR/final-logs.tgz" . && echo "logs: final-logs.tgz"
exit 0
