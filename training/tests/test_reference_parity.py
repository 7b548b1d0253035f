"""The training code's modules compute what the reference Cube 3D implementation computes: run them on the shared
golden cases (random weights, reference fp32 outputs) and compare every tensor. Runs on the CPU in seconds.
Usage: /usr/bin/python3 training/tests/test_reference_parity.py   (also collected by pytest)"""
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import export as E  # noqa: E402
import infer as I  # noqa: E402
import models as M  # noqa: E402

GOLDEN = os.environ.get("CUBEFORGE_GOLDEN_DIR") or os.path.join(
    os.environ.get("CUBEFORGE_SHARED_DIR", os.path.join(HERE, "..", "..", "..", "shared")), "golden", "cube3d")


def rel(a, b):
    return float((a.float() - b.float()).norm() / b.float().norm().clamp(min=1e-12))


def load_case(name):
    with open(os.path.join(GOLDEN, f"{name}_config.json")) as f:
        cfg = json.load(f)
    g = M.GPTConfig(**cfg["gpt_model"])
    s = M.ShapeConfig(**cfg["shape_model"])
    tc = M.TextConfig(**{k: v for k, v in cfg["text_model"].items() if k in M.TextConfig.__dataclass_fields__})
    gpt, vae, clip = M.DualStreamRoformer(g), M.OneDAutoEncoder(s), M.ClipTextModel(tc)
    gsd, _ = E.load_safetensors(os.path.join(GOLDEN, f"{name}_gpt.safetensors"))
    vsd, meta = E.load_safetensors(os.path.join(GOLDEN, f"{name}_shape.safetensors"))
    csd, _ = E.load_safetensors(os.path.join(GOLDEN, f"{name}_clip.safetensors"))
    for alias, tgt in meta.items():
        vsd[alias] = vsd[tgt]
    vae.load_state_dict(vsd, strict=True)
    K = g.shape_model_vocab_size
    gsd["transformer.wte.weight"][:K] = E.codebook_from_rounded(vsd) @ gsd["shape_proj.weight"].t() + gsd["shape_proj.bias"]
    gpt.load_state_dict(gsd, strict=True)
    csd["unk_embedding"] = torch.zeros(tc.hidden_size)
    clip.load_state_dict(csd, strict=True)
    io, _ = E.load_safetensors(os.path.join(GOLDEN, f"{name}_io.safetensors"))
    return cfg, gpt.eval(), vae.eval(), clip.eval(), io


@torch.no_grad()
def check_case(name, tol=1e-4):
    cfg, gpt, vae, clip, io = load_case(name)
    errs = {}
    hid = clip(io["clip_input_ids"], io["clip_attention_mask"])
    errs["clip_last_hidden_state"] = rel(hid, io["clip_last_hidden_state"])
    bb = cfg.get("bounding_box_xyz")
    bbt = torch.zeros(2, 3)
    if bb is not None:
        bbt[0] = torch.tensor(bb)
    cond = gpt.encode_cond(hid, bbt if gpt.cfg.use_bbox else None)
    errs["cond"] = rel(cond, io["cond"])
    N = vae.cfg.num_encoder_latents
    K = gpt.cfg.shape_model_vocab_size
    x = gpt.transformer.wte.weight[gpt.bos_id][None, None].expand(2, 1, -1)
    errs["bos_embed"] = rel(x, io["bos_embed"])
    ref = io["step_logits_cond_uncond_guided"]
    toks = io["token_ids"][0]
    step_err = 0.0
    mine = []
    for i in range(N):
        lg = gpt(x, cond, single_mode="reference")[:, -1, :K]
        gam = cfg["guidance_scale"] * (N - i) / N
        guided = (1 + gam) * lg[0] - gam * lg[1]
        step_err = max(step_err, rel(torch.stack([lg[0], lg[1], guided]), ref[i]))
        mine.append(int(guided.argmax()))
        e = gpt.transformer.wte.weight[toks[i]][None, None].expand(2, 1, -1)  # teacher forcing
        x = torch.cat([x, e], 1)
    errs["step_logits(reference mode)"] = step_err
    # the KV-cached decoder must give the same per-step logits (teacher forced)
    dec = I.KVDecoder(gpt, cond, "reference")
    lg, kv_err = dec.logits, 0.0
    for i in range(N):
        gam = cfg["guidance_scale"] * (N - i) / N
        guided = (1 + gam) * lg[0, :K] - gam * lg[1, :K]
        kv_err = max(kv_err, rel(torch.stack([lg[0, :K], lg[1, :K], guided]), ref[i]))
        if i < N - 1:
            lg = dec.step(gpt.transformer.wte.weight[toks[i]][None, None].expand(2, 1, -1), i + 1)
    errs["step_logits(kv cache, reference mode)"] = kv_err
    xs = torch.cat([gpt.transformer.wte.weight[gpt.bos_id][None], gpt.transformer.wte.weight[toks[:-1]]], 0)
    full = gpt(xs[None].expand(2, -1, -1), cond, single_mode="causal")
    errs["full_forward_logits(causal)"] = rel(full, io["full_forward_logits"])
    lat = vae.decode_ids(io["token_ids"])
    errs["latents"] = rel(lat, io["latents"])
    q = vae.query(lat, io["query_points"])
    errs["query_logits"] = rel(q, io["query_logits"])
    g = vae.query(lat, I.grid_points(17, "cpu"))[0].reshape(17, 17, 17)
    errs["grid_res4_logits"] = rel(g, io["grid_res4_logits"])
    _, enc_ids, _ = vae.encode(io["encoder_point_cloud"])
    tokens_match = mine == toks.tolist()
    enc_match = enc_ids.tolist() == io["encoder_indices"].tolist()
    for k, v in errs.items():
        print(f"{name} {k}: rel_err={v:.2e}")
    print(f"{name}: tokens {'match' if tokens_match else 'MISMATCH'}, encoder indices {'match' if enc_match else 'MISMATCH'}")
    assert all(v < tol for v in errs.values()), errs
    assert tokens_match and enc_match


def test_v05():
    check_case("tiny_v05")


def test_v01():
    check_case("tiny_v01")


if __name__ == "__main__":
    test_v01()
    test_v05()
    print("reference parity: OK")
