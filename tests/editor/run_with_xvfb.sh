#!/usr/bin/env bash
# Runs a command on a private Xvfb display chosen by Xvfb itself (-displayfd), so parallel GUI tests do not collide.
set -euo pipefail
dfile=$(mktemp)
Xvfb -displayfd 3 -screen 0 1280x800x24 -nolisten tcp 3>"$dfile" 2>/dev/null &
xpid=$!
trap 'kill $xpid 2>/dev/null || true; wait $xpid 2>/dev/null || true; rm -f "$dfile"' EXIT
for _ in $(seq 200); do [ -s "$dfile" ] && break; sleep 0.05; done
[ -s "$dfile" ] || { echo "run_with_xvfb: Xvfb did not start" >&2; exit 1; }
export DISPLAY=":$(head -n1 "$dfile")"
"$@"
