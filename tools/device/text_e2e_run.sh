#!/usr/bin/env bash
# GPU-machine run for the CUDA text encoder (cuda_text.h) and prompt -> mesh through Cube3D, one call: the golden
# cases through the CUDA paths (GPT, CLIP, shape: cubeforge-gen golden --backend cuda), the GoogleTests (CudaText*,
# CudaGeneric*, CudaShape*), bench-text-gpu (CPU fp32 vs GPU fp32: time and error) on a random CLIP ViT-L/14 text
# tower and on the default model, compute-sanitizer memcheck on one golden case, the default model end to end with
# every stage on the GPU (and on the CPU), then random-weight v0.1 / v0.5 models of the real sizes written with
# make-test-model and run end to end with `generate --backend auto` (CUDA text + CUDA GPT + GPU shape stage + CPU
# clean-up). Variations (generate --variations 4 --top-p 0.9: one GPU batch) are compared with the single generation
# of one of their seeds (tokens digest) on the default model and, in the e2e stages, at the real sizes; the negative
# prompt runs on the default model (GPU and CPU); `check` runs cuda-check --synthetic v0.1 (fast kernels, including
# the 4-variation batch against single runs). Carry the folder tools/device/build_generic.sh wrote.
# Usage (device tool, repo root): CF_COMMIT=<hash> [CARRY=.devcarry/generic] bash tools/device/text_e2e_run.sh [STAGES]
#   STAGES: comma list of golden,tests,text,memcheck,check,default,e2e01,e2e05 (default: all, in this order);
#   E2E_RB (default 7); an e2e stage starts only while the call is younger than E2E_BEFORE_S seconds (default 330).
set -uo pipefail
. tools/device/common.sh
OUT=${OUT:-/tmp/text-e2e-out}
mkdir -p "$OUT"
STAGES=${1:-golden,tests,text,memcheck,check,default,e2e01,e2e05}
has() { [[ ",$STAGES," == *",$1,"* ]]; }
C=${CARRY:-.devcarry/generic}  # what build_generic.sh wrote (CARRY=... for another copy)
L=/tmp/cf-text-logs
rm -rf "$L"; mkdir -p "$L"
echo "commit ${CF_COMMIT:-unknown (pass CF_COMMIT=<hash of the tree the binaries were built from>)}" | tee "$L/commit.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader | tee "$L/gpu.txt"
echo "CPU: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)" | tee -a "$L/gpu.txt"
for f in cubeforge-gen inference_tests; do
  unpack_xz "$C/$f.xz" "/tmp/$f"
done
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
ldd /tmp/cubeforge-gen | grep -i "not found"
G=$C/shared/golden/cube3d
TOK=$C/shared/data/clip-tokenizer
RUN_LOG_DIR="$L"
summary() {  # the fields of generate --json that make the prompt -> mesh table
  python3 - "$1" <<'PY'
import json, sys
t = open(sys.argv[1]).read()
j = json.loads(t[t.index('{'):])
keys = ["backend", "text_backend", "shape_backend", "runs_total_ms", "load_ms", "warm_up_ms", "text_ms", "prefill_ms", "gpt_ms",
        "tpot_mean_ms", "latent_decode_ms", "occupancy_ms", "points_evaluated", "points_dense", "meshing_ms",
        "cleanup_ms", "total_ms", "vertices", "faces", "tokens_fnv1a"]
for k in keys: print(f"  {k}: {j.get(k)}")
for v in j.get("variations", []):
    print(f"  variation seed {v['seed']}: tokens_fnv1a {v['tokens_fnv1a']} vertices {v['vertices']} "
          f"gpt_ms {v['gpt_ms']:.1f} cleanup_ms {v.get('cleanup_ms', 0):.1f} total_ms {v['total_ms']:.1f} "
          f"backend {v['backend']}")
PY
}
same_tokens() {  # LOG_OF_VARIATIONS INDEX LOG_OF_SINGLE: is variation INDEX the single generation's token list?
  python3 - "$@" <<'PY'
import json, sys
def load(p):
    t = open(p).read()
    return json.loads(t[t.index('{'):])
v, one = load(sys.argv[1])["variations"][int(sys.argv[2])], load(sys.argv[3])
print(f"  variation {sys.argv[2]} (seed {v['seed']}) vs the single generation of that seed: tokens "
      f"{'EQUAL' if v['tokens_fnv1a'] == one['tokens_fnv1a'] else 'DIFFERENT'}; prompt -> mesh of 4 variations "
      f"{load(sys.argv[1])['runs_total_ms']} ms vs one {one['runs_total_ms']} ms")
PY
}
T0=$(date +%s)
if has golden; then
  for c in tiny_v01 tiny_v05; do
    run golden_$c 60 /tmp/cubeforge-gen golden "$G" $c --backend cuda; cat "$L/golden_$c.log"
  done
fi
if has tests; then
  run gtest 120 env CUBEFORGE_SHARED_DIR="$C/shared" CUBEFORGE_SOURCE_DIR="$PWD" /tmp/inference_tests \
      --gtest_filter='*CudaText*:*CudaGeneric*:*CudaShape*'
  grep -E "^\[ +(OK|FAILED|SKIPPED|PASSED) |Failure|Expected|Which is" "$L/gtest.log" | head -30
fi
if has text; then
  run text_clipl 120 /tmp/cubeforge-gen bench-text-gpu --synthetic clip-l --tokenizer "$TOK" --reps 7; tail -8 "$L/text_clipl.log"
  run text_default 60 /tmp/cubeforge-gen bench-text-gpu --model assets/default-model --reps 7; tail -7 "$L/text_default.log"
fi
if has memcheck && command -v compute-sanitizer >/dev/null; then
  run memcheck 90 compute-sanitizer --tool memcheck --leak-check no --print-limit 20 /tmp/cubeforge-gen golden "$G" tiny_v01 --backend cuda
  grep -E "ERROR SUMMARY|Invalid|golden tiny" "$L/memcheck.log" | head -8
fi
if has check; then  # the fast kernels at the real v0.1 size: accuracy, graph = eager, batch = single, variations
  run check01 150 /tmp/cubeforge-gen cuda-check --synthetic v0.1
  grep -E "rel L2 error|bitwise|variations|cancel|digest|cuda-check" "$L/check01.log" | head -20
fi
if has default; then  # the shipped default model, every stage on the GPU (generic GPT, text encoder, shape stage)
  for rb in 6 8; do
    run default_rb$rb 90 /tmp/cubeforge-gen generate --model assets/default-model -p "a tall wooden chair with a high back" \
        --backend auto --resolution $rb --no-output --repeat 5 --json
    summary "$L/default_rb$rb.log" || tail -20 "$L/default_rb$rb.log"
  done
  run default_cpu 120 /tmp/cubeforge-gen generate --model assets/default-model -p "a tall wooden chair with a high back" \
      --backend cpu --resolution 6 --no-output --repeat 3 --json
  summary "$L/default_cpu.log" || tail -20 "$L/default_cpu.log"
  P="a tall wooden chair with a high back"
  run default_var 90 /tmp/cubeforge-gen generate --model assets/default-model -p "$P" --backend auto --top-p 0.9 --seed 7 \
      --variations 4 --no-output --repeat 3 --json
  run default_one 90 /tmp/cubeforge-gen generate --model assets/default-model -p "$P" --backend auto --top-p 0.9 --seed 9 \
      --no-output --repeat 3 --json
  summary "$L/default_var.log" || tail -20 "$L/default_var.log"
  same_tokens "$L/default_var.log" 2 "$L/default_one.log" || tail -5 "$L/default_one.log"
  for b in auto cpu; do  # the negative prompt, never run on the GPU before
    run default_neg_$b 90 /tmp/cubeforge-gen generate --model assets/default-model -p "a wooden chair with armrests" \
        --negative-prompt legs --backend $b --no-output --json
    summary "$L/default_neg_$b.log" | grep -E "backend|vertices|tokens_fnv1a" || tail -5 "$L/default_neg_$b.log"
  done
fi
RB=${E2E_RB:-7}
for v in 01 05; do
  has e2e$v || continue
  [ $(( $(date +%s) - T0 )) -lt ${E2E_BEFORE_S:-330} ] || { echo "== e2e$v skipped (time)"; continue; }
  M=/tmp/cf-model-v$v
  run make$v 200 /tmp/cubeforge-gen make-test-model --preset v0.${v#0} --out "$M" --tokenizer "$TOK" --storage bf16
  du -sh "$M" | tee -a "$L/make$v.log"
  bbox=""; [ $v = 05 ] && bbox="--bbox 1,2,1"
  run e2e$v 200 /tmp/cubeforge-gen generate --model "$M" -p "a tall wooden chair with a high back" $bbox \
      --backend auto --resolution $RB --no-output --repeat 3 --json
  run e2e${v}_warm 200 /tmp/cubeforge-gen generate --model "$M" -p "a tall wooden chair with a high back" $bbox \
      --backend auto --resolution $RB --no-output --repeat 2 --warm-up --json
  summary "$L/e2e$v.log" || tail -20 "$L/e2e$v.log"
  summary "$L/e2e${v}_warm.log" || tail -20 "$L/e2e${v}_warm.log"
  # 4 variations in one GPU batch (fast kernels, 8 rows) against the single generation of variation 2's seed
  run var$v 200 /tmp/cubeforge-gen generate --model "$M" -p "a tall wooden chair with a high back" $bbox --top-p 0.9 \
      --seed 7 --variations 4 --backend auto --resolution $RB --no-output --repeat 2 --warm-up --json
  run one$v 200 /tmp/cubeforge-gen generate --model "$M" -p "a tall wooden chair with a high back" $bbox --top-p 0.9 \
      --seed 9 --backend auto --resolution $RB --no-output --repeat 2 --warm-up --json
  summary "$L/var$v.log" || tail -20 "$L/var$v.log"
  same_tokens "$L/var$v.log" 2 "$L/one$v.log" || tail -5 "$L/one$v.log"
  # the same variations with each clean-up after its shape stage instead of beside the next one (session 19's
  # overlap off): the baseline of the overlap
  run var${v}_serial 200 env CUBEFORGE_SERIAL_CLEANUP=1 /tmp/cubeforge-gen generate --model "$M" \
      -p "a tall wooden chair with a high back" $bbox --top-p 0.9 --seed 7 --variations 4 --backend auto \
      --resolution $RB --no-output --repeat 2 --warm-up --json
  summary "$L/var${v}_serial.log" || tail -20 "$L/var${v}_serial.log"
  rm -rf "$M"
done
tar -C "$L" -czf "$OUT/text-e2e-logs.tgz" .
exit 0
