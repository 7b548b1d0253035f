#!/usr/bin/env bash
# End-to-end test of the real editor window under Xvfb, through the script mode: import a mesh, move it with the
# gizmo, undo/redo, save, quit; reopen and check it is as it was left; separate an imported mesh's parts. Then: a failing action exits non-zero with a
# clear message, a window screenshot captures the whole window, the plugin sidebar's edge drags, and the
# EGL-surfaceless --headless path writes a screenshot (and refuses a window screenshot).
# usage: e2e_gui.sh <cubeforge binary> <tests/editor dir>
set -euo pipefail
BIN=$1
HERE=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export CUBEFORGE_CONFIG_DIR=$T/config
XV="$HERE/run_with_xvfb.sh"

cat > "$T/edit.json" <<JSON
[
  {"do": "import", "path": "$HERE/data/tetra.obj", "rename": "Tetra"},
  {"do": "expect", "name": "Tetra", "triangles": 4, "position": [0, 0, 0]},
  {"do": "select", "name": "Tetra"},
  {"do": "gizmo_drag", "axis": "x", "units": 3},
  {"do": "expect", "name": "Tetra", "position": [3, 0, 0], "tolerance": 0.05},
  {"do": "expect", "undo_top": "Move Tetra"},
  {"do": "undo"},
  {"do": "expect", "name": "Tetra", "position": [0, 0, 0]},
  {"do": "redo"},
  {"do": "gizmo_drag", "axis": "y", "units": 1},
  {"do": "undo"},
  {"do": "expect", "name": "Tetra", "position": [3, 0, 0], "tolerance": 0.05},
  {"do": "save", "path": "$T/level.cfscene"},
  {"do": "expect", "dirty": false},
  {"do": "quit"}
]
JSON
"$XV" "$BIN" --no-plugins --script "$T/edit.json"
test -f "$T/level.cfscene"
grep -q '"Tetra"' "$T/level.cfscene"

cat > "$T/check.json" <<JSON
[
  {"do": "open", "path": "$T/level.cfscene"},
  {"do": "expect", "entity_count": 1},
  {"do": "expect", "name": "Tetra", "position": [3, 0, 0], "tolerance": 0.05, "triangles": 4},
  {"do": "expect", "dirty": false},
  {"do": "screenshot", "path": "$T/gui.png"},
  {"do": "screenshot", "path": "$T/window.png", "window": true},
  {"do": "quit"}
]
JSON
"$XV" "$BIN" --no-plugins --script "$T/check.json"
test -s "$T/gui.png"
# Edit > Separate parts on an imported mesh of two pieces: two entities named by part, one undo step.
cat > "$T/pair.obj" <<OBJ
v 0 0 0
v 1 0 0
v 0 1 0
v 0 0 1
v 3 0 0
v 4 0 0
v 3 1 0
v 3 0 1
f 1 3 2
f 1 2 4
f 1 4 3
f 2 3 4
f 5 7 6
f 5 6 8
f 5 8 7
f 6 7 8
OBJ
cat > "$T/parts.json" <<JSON
[
  {"do": "import", "path": "$T/pair.obj", "rename": "Pair"},
  {"do": "expect", "entity_count": 1},
  {"do": "expect", "name": "Pair", "triangles": 8},
  {"do": "separate", "name": "Pair"},
  {"do": "expect", "entity_count": 2},
  {"do": "expect", "name": "Pair part 1", "triangles": 4},
  {"do": "expect", "name": "Pair part 2", "triangles": 4, "position": [3.5, 0, 0.5], "tolerance": 0.001},
  {"do": "expect", "undo_top": "Separate Pair"},
  {"do": "undo"},
  {"do": "expect", "entity_count": 1},
  {"do": "expect", "name": "Pair", "triangles": 8},
  {"do": "quit"}
]
JSON
"$XV" "$BIN" --no-plugins --script "$T/parts.json"

# The window screenshot: the whole window (larger than the viewport in both directions), menu bar text included
# (more than a few colours in its top rows), written without a temporary file left behind.
read -r vw vh _ < <(python3 "$HERE/png_probe.py" "$T/gui.png" 1)
read -r ww wh wcolors < <(python3 "$HERE/png_probe.py" "$T/window.png" 24)
echo "viewport ${vw}x${vh}, window ${ww}x${wh}, ${wcolors} colours in the window's top rows"
if [ "$ww" -le "$vw" ] || [ "$wh" -le "$vh" ] || [ "$wcolors" -lt 4 ]; then
  echo "the window screenshot is not the whole window" >&2
  exit 1
fi
if ls "$T" | grep -q '\.tmp'; then
  echo "a screenshot left a temporary file behind" >&2
  exit 1
fi

# The plugin sidebar's bottom edge drags (the Properties panel takes the rest): at 1000x700 the column is 656 px
# high and the edge at 20 + 0.55 x 656; 100 px down makes the sidebar 0.70 of the column. (The runs above leave the
# sidebar alone, so it starts at the default 0.55.)
cat > "$T/split.json" <<JSON
[
  {"do": "wait_for", "condition": "frames", "value": 3},
  {"do": "expect", "sidebar_fraction": 0.55, "tolerance": 0.005},
  {"do": "mouse_drag", "from": [870, 379], "to": [870, 479]},
  {"do": "wait_for", "condition": "frames", "value": 2},
  {"do": "expect", "sidebar_fraction": 0.702, "tolerance": 0.01},
  {"do": "quit"}
]
JSON
"$XV" "$BIN" --no-plugins --size 1000x700 --script "$T/split.json"
# ... and the next session opens with the sidebar as it was left (editor.json in the config directory)
echo '[{"do": "wait_for", "condition": "frames", "value": 3}, {"do": "expect", "sidebar_fraction": 0.702, "tolerance": 0.01}]' \
  > "$T/split2.json"
"$XV" "$BIN" --no-plugins --size 1000x700 --script "$T/split2.json"
grep -q sidebar_fraction "$CUBEFORGE_CONFIG_DIR/editor.json"

# A failing action: non-zero exit and a message naming the action.
echo '[{"do": "select", "name": "Nope"}]' > "$T/bad.json"
if "$XV" "$BIN" --no-plugins --script "$T/bad.json" 2> "$T/err.txt"; then
  echo "expected a failure exit code" >&2
  exit 1
fi
grep -q "script action #1 (select) failed: no entity named 'Nope'" "$T/err.txt"

# Headless (no X): EGL surfaceless render path.
cat > "$T/headless.json" <<JSON
[
  {"do": "open", "path": "$T/level.cfscene"},
  {"do": "insert", "part": "wedge", "position": [-2, 0, 0]},
  {"do": "camera", "frame": true},
  {"do": "screenshot", "path": "$T/headless.png", "width": 320, "height": 240}
]
JSON
env -u DISPLAY "$BIN" --no-plugins --headless --script "$T/headless.json"
test -s "$T/headless.png"
# --headless has no window to capture: a clear failure, not an empty file
echo '[{"do": "screenshot", "path": "'"$T"'/nowin.png", "window": true}]' > "$T/nowin.json"
if env -u DISPLAY "$BIN" --no-plugins --headless --script "$T/nowin.json" 2> "$T/nowin.txt"; then
  echo "expected a failure for a window screenshot in --headless mode" >&2
  exit 1
fi
grep -q 'needs the editor window' "$T/nowin.txt"
test ! -e "$T/nowin.png"
echo "e2e_gui: all checks passed"
