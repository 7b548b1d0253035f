#!/usr/bin/env bash
# GPU-machine A/B of the variations clean-up overlap (session 19): the default model, 4 variations (top-p 0.9, seed 7)
# at rb 8 and 9 through generate --backend auto, with the overlap (CUBEFORGE_SERIAL_CLEANUP=0) and without (1), three
# alternating rounds; prints each run's prompt -> mesh times and every variation's occupancy, clean-up and total. Carry
# the folder tools/device/build_generic.sh wrote. Usage (device tool, repo root): bash tools/device/variations_overlap_run.sh
set -uo pipefail
. tools/device/common.sh
unpack_xz .devcarry/generic/cubeforge-gen.xz /tmp/cfg
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
for r in 1 2 3; do for s in 0 1; do
  for rb in 8 9; do
  CUBEFORGE_SERIAL_CLEANUP=$s /tmp/cfg generate --model assets/default-model -p "a tall wooden chair with a high back" --backend auto --top-p 0.9 --seed 7 --variations 4 --resolution $rb --no-output --repeat 3 --warm-up --json > /tmp/v.json 2>/tmp/v.err
  python3 - $s $r $rb <<'PY'
import json,sys
t=open('/tmp/v.json').read(); j=json.loads(t[t.index('{'):])
print(f"round {sys.argv[2]} rb {sys.argv[3]} serial={sys.argv[1]}: runs_total_ms {[round(x,1) for x in j['runs_total_ms']]} gpt {j['gpt_ms']:.1f} | " + " | ".join(f"v{i} occ {v['occupancy_ms']:.1f} clean {v['cleanup_ms']:.1f} total {v['total_ms']:.1f} faces {v['faces']}" for i,v in enumerate(j['variations'])))
PY
  done
done; done
