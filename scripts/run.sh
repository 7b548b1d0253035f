#!/usr/bin/env bash
# The README's main command: installs packages, builds, then opens the editor with the AI sidebar and the default
# model. Without a display (no $DISPLAY) it runs the generator instead: the golden cases, then a prompt → mesh
# with the default model into out/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
BIN=build/bin
MODEL=assets/default-model
if [ -n "${DISPLAY:-}" ] && [ -x "$BIN/cubeforge" ] && [ "${1:-}" != "--cli" ]; then
  exec "$BIN/cubeforge" "$@"
fi
SHARED=${CUBEFORGE_SHARED_DIR:-../shared}
if [ -d "$SHARED/golden/cube3d" ]; then
  for c in tiny_v01 tiny_v05; do "$BIN/cubeforge-gen" golden "$SHARED/golden/cube3d" "$c" | tail -1; done
fi
mkdir -p out
if [ -f "$MODEL/shape_gpt.safetensors" ]; then
  "$BIN/cubeforge-gen" generate --model "$MODEL" --prompt "${PROMPT:-a wooden chair with a high back}" -o out/generated.glb
else
  echo "default model not found in $MODEL; using a random-weight test model"
  "$BIN/cubeforge-gen" make-test-model --out out/test-model --tokenizer "$SHARED/data/clip-tokenizer"
  "$BIN/cubeforge-gen" generate --model out/test-model --prompt "${PROMPT:-a wooden chair}" --resolution 5 -o out/generated.glb
fi
