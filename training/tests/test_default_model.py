"""CI subset of the evaluation on the shipped default model (CPU): 6 families, one held-out prompt per attribute
combination, 24^3 grids. Skipped when assets/default-model holds no trained model."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.environ.get("CUBEFORGE_DEFAULT_MODEL") or os.path.join(HERE, "..", "..", "assets", "default-model")


def test_eval_subset():
    if not os.path.exists(os.path.join(MODEL, "config.yaml")):
        from run_test import Skip
        raise Skip(f"no trained default model in {MODEL}")
    out = os.path.join(os.environ.get("TMPDIR", "/tmp"), "cf_eval_subset.json")
    r = subprocess.run([sys.executable, os.path.join(os.path.dirname(HERE), "evaluate.py"), "--model", MODEL, "--tiny",
                        "--device", "cpu", "--out", out, "--min-family-acc", "0.6"], capture_output=True, text=True,
                       timeout=1400)
    print(r.stdout[-3000:])
    assert r.returncode == 0, r.stderr[-3000:]
    rep = json.load(open(out))
    assert rep["nonempty_share"] >= 0.9


if __name__ == "__main__":
    sys.path.insert(0, HERE)
    test_eval_subset()
