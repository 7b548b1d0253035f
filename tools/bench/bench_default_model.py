#!/usr/bin/env python3
"""Prompt -> mesh benchmark of the shipped default model on the CPU (the default-model issue's speed targets:
prompt -> final mesh <= 3 s and first preview <= 0.5 s at the default resolution on a 2-core CPU).

Runs `cubeforge-gen generate --json` for a fixed prompt set (model loaded once per process, so load time is
reported apart), prints one row per run and the medians. Usage:
  python3 tools/bench/bench_default_model.py [--bin build/bin/cubeforge-gen] [--runs 2] [--threads 0] [--resolution 6]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

PROMPTS = ["a burger", "a tall chair with a high back", "a pine tree with three tiers", "a red car with six wheels",
           "a mug with a handle", "a round table with one leg", "a sitting cat", "a two-story house with a chimney"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default="build/bin/cubeforge-gen")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--resolution", type=int, default=0, help="0: the CLI default")
    ap.add_argument("--preview-every", type=int, default=8)
    a = ap.parse_args()
    if not os.access(a.bin, os.X_OK):
        sys.exit(f"no executable at {a.bin} (build first: bash scripts/build.sh)")
    rows = []
    with tempfile.TemporaryDirectory() as td:
        for r in range(a.runs):
            for p in PROMPTS:
                cmd = [a.bin, "generate", "-p", p, "-o", os.path.join(td, "m.glb"), "--json",
                       "--preview-every", str(a.preview_every), "--threads", str(a.threads)]
                if a.resolution:
                    cmd += ["--resolution", str(a.resolution)]
                out = subprocess.run(cmd, capture_output=True, text=True)
                if out.returncode != 0:
                    sys.exit(f"failed: {' '.join(cmd)}\n{out.stderr}")
                j = json.loads(out.stdout[out.stdout.index("{"):])
                rows.append(j)
                print(f"run {r} {p!r:40s} total {j['total_ms']:7.0f} ms  first preview {j['first_preview_ms']:6.0f} ms"
                      f"  GPT {j['gpt_ms']:6.0f}  occupancy {j['occupancy_ms']:6.0f} ({j['points_evaluated']} pts)"
                      f"  export {j['export_ms']:5.0f}  load {j['load_ms']:5.0f}", flush=True)
    med = lambda k: statistics.median(x[k] for x in rows)  # noqa: E731
    print(f"\nmedian over {len(rows)} runs: prompt -> mesh {med('total_ms'):.0f} ms (max "
          f"{max(x['total_ms'] for x in rows):.0f}), first preview {med('first_preview_ms'):.0f} ms (max "
          f"{max(x['first_preview_ms'] for x in rows):.0f}), GPT {med('gpt_ms'):.0f} ms, occupancy "
          f"{med('occupancy_ms'):.0f} ms, model load {med('load_ms'):.0f} ms; load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
