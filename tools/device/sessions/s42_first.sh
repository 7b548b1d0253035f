#!/usr/bin/env bash
# For the next session's first call (written in session 41): what session 41's H200 calls left out, in one call on
# the shape build of main (carry .devcarry/shape-xz, rebuilt if inference/ changed: tools/device/build_cuda_shape.sh):
# (1) cuda-check v0.1 (session 23's digests b9983b49 / 577e3f53 / f367b6fb / 6a1ead77 / e71bfeae expected);
# (2) why v0.5's prompt -> mesh decode ran 1.4% above the bench on session 41's H200: the engine's row capacity,
#     `--e2e-rows 2 / 8 / 16`, alternating twice (8 is the editor's, 16 the bench's);
# (3) prompt -> mesh at rb 7 and 9 (final_table.sh's other rows).
# Usage (device tool, repo root): CF_COMMIT=<hash> bash tools/device/sessions/s42_first.sh
set -uo pipefail
. tools/device/common.sh
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
echo "commit ${CF_COMMIT:-unknown}"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
unpack_xz .devcarry/shape-xz/cubeforge-gen.xz /tmp/cfg || exit 1
timeout 240 /tmp/cfg cuda-check --synthetic v0.1 2>&1 | grep -E "digest|rel L2 error|identical|cancel|cuda-check"
for r in 1 2; do
  for rows in 2 8 16; do
    echo "== v0.5 rb 8, engine for $rows rows, round $r"
    timeout 60 /tmp/cfg bench-shape-gpu --e2e-only --synthetic v0.5 --rb 8 --reps 3 --e2e-rows $rows 2>&1 |
      grep -E "^[123] |median|engines:"
  done
done
timeout 150 /tmp/cfg bench-shape-gpu --e2e-only --synthetic v0.1,v0.5 --rb 7,9 --reps 3 2>&1 | grep -E "^[123] |median"
