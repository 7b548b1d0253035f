#!/usr/bin/env bash
# End-to-end test of the AI sidebar in the real editor window under Xvfb, through the editor's scripted mode and the
# plugin loaded from bin/plugins: type a prompt into the panel (Ctrl+Enter), watch a live preview arrive before the
# job completes, find the mesh placed at the chosen spot as one undo step, undo, redo, see its history thumbnail
# uploaded as a GL texture, save; reopen the scene, find
# the history persisted, and run a batch of prompts that writes the latency report (CSV + JSON).
# usage: e2e_gui.sh <cubeforge> <cubeforge-gen> <clip tokenizer dir> <run_with_xvfb.sh>
set -euo pipefail
BIN=$1
GEN=$2
TOK=$3
XV=$4
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export CUBEFORGE_CONFIG_DIR=$T/config
export CUBEFORGE_MODEL_DIR=$T/model
export HOME=$T
"$GEN" make-test-model --out "$T/model" --preset tiny --tokenizer "$TOK" > /dev/null

ready='{"do": "wait_for", "condition": "plugin_command", "command": "ai.check", "args": {"path": "/model/state", "equals": "ready"}, "equals": true, "timeout_s": 120}'
cat > "$T/generate.json" <<JSON
[
  $ready,
  {"do": "plugin_command", "command": "ai.set", "args": {"resolution": 6, "preview_resolution": 4, "preview_every": 4, "face_cap": 3000}},
  {"do": "plugin_command", "command": "ai.pick", "args": {"point": [2, 0, 1]}, "expect": {"ok": true, "hit": true, "spot": [2.0, 0.0, 1.0]}},
  {"do": "plugin_command", "command": "ai.ui_type", "args": {"text": "a red chair"}},
  {"do": "wait_for", "condition": "plugin_command", "command": "ai.check", "args": {"path": "/busy", "equals": true}, "equals": true, "timeout_s": 20},
  {"do": "wait_for", "condition": "plugin_command", "command": "ai.check",
   "args": {"all": [{"path": "/job/previews", "op": ">=", "value": 1}, {"path": "/busy", "equals": true}]}, "equals": true, "timeout_s": 120},
  {"do": "screenshot", "path": "$T/preview.png"},
  {"do": "wait_for", "condition": "plugin_command", "command": "ai.check", "args": {"path": "/busy", "equals": false}, "equals": true, "timeout_s": 600},
  {"do": "wait_for", "condition": "plugin_command", "command": "ai.check", "args": {"path": "/last/state", "equals": "done"}, "equals": true, "timeout_s": 1},
  {"do": "wait_for", "condition": "plugin_command", "command": "ai.check", "args": {"path": "/form/prompt", "equals": "a red chair"}, "equals": true, "timeout_s": 1},
  {"do": "expect", "entity_count": 1},
  {"do": "expect", "name": "a red chair", "position": [2, 0, 1]},
  {"do": "expect", "undo_top": "Generate: a red chair"},
  {"do": "wait_for", "condition": "plugin_command", "command": "ai.check",
   "args": {"all": [{"path": "/last/previews", "op": ">=", "value": 1}, {"path": "/last/latency/ui_frame_ms/p50", "op": "<", "value": 50}]}, "equals": true, "timeout_s": 1},
  {"do": "undo"},
  {"do": "expect", "entity_count": 0},
  {"do": "redo"},
  {"do": "expect", "entity_count": 1},
  {"do": "expect", "name": "a red chair", "position": [2, 0, 1]},
  {"do": "screenshot", "path": "$T/placed.png"},
  {"do": "plugin_command", "command": "ai.ui_fold", "args": {"settings": false, "latency": false}},
  {"do": "wait_for", "condition": "plugin_command", "command": "ai.check", "args": {"path": "/ui/textures", "op": ">=", "value": 1}, "equals": true, "timeout_s": 10},
  {"do": "plugin_command", "command": "ai.latency_export", "args": {"csv": "$T/latency.csv", "json": "$T/latency.json"}},
  {"do": "save", "path": "$T/level.cfscene"},
  {"do": "expect", "dirty": false},
  {"do": "quit"}
]
JSON
"$XV" "$BIN" --script "$T/generate.json" > "$T/run1.log" 2>&1 || { cat "$T/run1.log" >&2; exit 1; }
test -s "$T/preview.png"
test -s "$T/placed.png"
grep -q '"a red chair"' "$T/level.cfscene"
grep -q 'a red chair' "$T/latency.csv"
python3 - "$T/latency.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
j = r["jobs"][-1]
assert j["state"] == "done" and j["prompt"] == "a red chair", j
assert j["previews"] >= 1 and j["first_preview_ms"] > 0 and j["ttft_ms"] > 0, j
print("e2e: ttft %.1f ms, first preview %.1f ms, tpot p50/p95/max %.2f/%.2f/%.2f ms, gpt %.0f ms, decode %.0f ms, "
      "meshing %.0f ms, total %.0f ms; UI frame p50/p95/max %.1f/%.1f/%.1f ms over %d frames" % (
      j["ttft_ms"], j["first_preview_ms"], j["tpot_ms"]["p50"], j["tpot_ms"]["p95"], j["tpot_ms"]["max"], j["gpt_ms"],
      j["decode_ms"], j["meshing_ms"], j["total_ms"], j["ui_frame_ms"]["p50"], j["ui_frame_ms"]["p95"],
      j["ui_frame_ms"]["max"], j["ui_frame_ms"]["n"]))
PY

cat > "$T/reopen.json" <<JSON
[
  {"do": "open", "path": "$T/level.cfscene"},
  {"do": "expect", "entity_count": 1},
  {"do": "expect", "name": "a red chair", "position": [2, 0, 1]},
  $ready,
  {"do": "wait_for", "condition": "plugin_command", "command": "ai.check", "args": {"path": "/history", "equals": 1}, "equals": true, "timeout_s": 1},
  {"do": "plugin_command", "command": "ai.run_prompts",
   "args": {"prompts": ["a lamp", "a wooden table"], "csv": "$T/batch.csv", "json": "$T/batch.json", "resolution": 4, "previews": false}},
  {"do": "wait_for", "condition": "plugin_command", "command": "ai.check", "args": {"path": "/batch/complete", "equals": true}, "equals": true, "timeout_s": 600},
  {"do": "expect", "entity_count": 1},
  {"do": "quit"}
]
JSON
"$XV" "$BIN" --script "$T/reopen.json" > "$T/run2.log" 2>&1 || { cat "$T/run2.log" >&2; exit 1; }
test "$(wc -l < "$T/batch.csv")" -eq 3
grep -q '"done": 2' "$T/batch.json"
echo "ai e2e_gui: all checks passed"
