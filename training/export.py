"""Export to the reference file formats (spec §1-§2) and load them back.

Model directory layout:
  config.yaml                 reference keys (gpt_model / shape_model / text_model_pretrained_model_name_or_path)
  shape_gpt.safetensors       DualStreamRoformer (wte rows 0..K-1 already = shape_proj(codebook), rebuilt at load anyway)
  shape_tokenizer.safetensors OneDAutoEncoder (shared Fourier embedder stored once as embedder.weight + alias metadata)
  clip/config.json            Hugging Face CLIPTextConfig keys
  clip/model.safetensors      text_model.* + text_projection.weight (CLIPTextModelWithProjection naming)
  clip/vocab.json, clip/merges.txt   the CLIP BPE files (copied)
"""
import json
import os
import shutil
import struct
from dataclasses import asdict

import numpy as np
import torch

import models as M

DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int64: "I64", torch.int32: "I32"}
NP = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}


def save_safetensors(path, tensors, metadata=None):
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().cpu().contiguous()
        if t.dtype == torch.bfloat16:
            b = t.view(torch.int16).numpy().tobytes()
        else:
            b = t.numpy().tobytes()
        header[name] = {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def load_safetensors(path):
    with open(path, "rb") as f:
        buf = f.read()
    n = struct.unpack("<Q", buf[:8])[0]
    header = json.loads(buf[8:8 + n])
    meta = header.pop("__metadata__", None) or {}
    out = {}
    base = 8 + n
    for name, info in header.items():
        s, e = info["data_offsets"]
        dt = info["dtype"]
        if dt == "BF16":
            a = np.frombuffer(buf, dtype=np.int16, count=(e - s) // 2, offset=base + s).copy()
            t = torch.from_numpy(a).view(torch.bfloat16).float()
        else:
            a = np.frombuffer(buf, dtype=NP[dt], count=(e - s) // np.dtype(NP[dt]).itemsize, offset=base + s).copy()
            t = torch.from_numpy(a)
            if t.is_floating_point():
                t = t.float()
        out[name] = t.reshape(info["shape"])
    return out, meta


def _yaml(cfg_g, cfg_s, clip_dir):
    def val(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, float):
            return repr(v) if v >= 1e-3 or v == 0 else f"{v:.1e}"
        if isinstance(v, list):
            return "[" + ", ".join(str(x) for x in v) + "]"
        return str(v)

    lines = ["gpt_model:"] + [f"  {k}: {val(v)}" for k, v in asdict(cfg_g).items()]
    lines += ["", "shape_model:"] + [f"  {k}: {val(v)}" for k, v in asdict(cfg_s).items()]
    lines += ["", f'text_model_pretrained_model_name_or_path: "{clip_dir}"', ""]
    return "\n".join(lines)


def text_config_json(tc):
    d = {"architectures": ["CLIPTextModelWithProjection"], "model_type": "clip_text_model"}
    d.update(asdict(tc))
    d.update({"attention_dropout": 0.0, "dropout": 0.0, "initializer_factor": 1.0, "initializer_range": 0.02,
              "torch_dtype": "float16"})
    return d


def gpt_state(gpt, codebook_norm, dtype):
    sd = {k: v.detach().float().cpu() for k, v in gpt.state_dict().items()}
    K = gpt.cfg.shape_model_vocab_size
    # rows 0..K-1 exactly as the engine rebuilds them (from the stored, rounded tensors)
    sp_w = sd["shape_proj.weight"].to(dtype).float()
    sp_b = sd["shape_proj.bias"].to(dtype).float()
    sd["transformer.wte.weight"][:K] = codebook_norm.float().cpu() @ sp_w.t() + sp_b
    return {k: v.to(dtype) for k, v in sd.items()}


def vae_state(vae, dtype):
    sd = {k: v.detach().float().cpu() for k, v in vae.state_dict().items()}
    for alias in ("encoder.embedder.weight", "occupancy_decoder.embedder.weight"):
        sd.pop(alias, None)
    return {k: v.to(dtype) for k, v in sd.items()}


def clip_state(clip, known_ids, dtype):
    sd = {k: v.detach().float().cpu() for k, v in clip.state_dict().items()}
    unk = sd.pop("unk_embedding")
    tok = sd["text_model.embeddings.token_embedding.weight"]
    known = torch.zeros(tok.shape[0], dtype=torch.bool)
    known[torch.tensor(sorted(known_ids), dtype=torch.long)] = True
    tok[~known] = unk
    return {k: v.to(dtype) for k, v in sd.items()}


def codebook_from_rounded(vae_sd):
    """Normalised codebook computed from the stored tensors (spec §2.3)."""
    cb = vae_sd["bottleneck.block.codebook.weight"].float()
    w = vae_sd["bottleneck.block.cb_weight"].float()
    b = vae_sd["bottleneck.block.cb_bias"].float()
    nw = vae_sd["bottleneck.block.norm.weight"].float()
    x = cb * w + b
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * nw


def export_model(out_dir, gpt, vae, clip, known_ids, tokenizer_dir, dtype=torch.float16):
    os.makedirs(os.path.join(out_dir, "clip"), exist_ok=True)
    vsd = vae_state(vae, dtype)
    save_safetensors(os.path.join(out_dir, "shape_tokenizer.safetensors"), vsd,
                     {"occupancy_decoder.embedder.weight": "embedder.weight",
                      "encoder.embedder.weight": "embedder.weight"})
    cbn = codebook_from_rounded({k: v.float() for k, v in vsd.items()})
    save_safetensors(os.path.join(out_dir, "shape_gpt.safetensors"), gpt_state(gpt, cbn, dtype))
    save_safetensors(os.path.join(out_dir, "clip", "model.safetensors"), clip_state(clip, known_ids, dtype))
    with open(os.path.join(out_dir, "clip", "config.json"), "w") as f:
        json.dump(text_config_json(clip.cfg), f, indent=2)
    for fn in ("vocab.json", "merges.txt"):
        shutil.copyfile(os.path.join(tokenizer_dir, fn), os.path.join(out_dir, "clip", fn))
    with open(os.path.join(out_dir, "config.yaml"), "w") as f:
        f.write(_yaml(gpt.cfg, vae.cfg, "clip"))


def read_config(path):
    import yaml
    with open(path) as f:
        y = yaml.safe_load(f)
    g = M.GPTConfig(**y["gpt_model"])
    s = M.ShapeConfig(**y["shape_model"])
    return g, s, y.get("text_model_pretrained_model_name_or_path", "clip")


def load_model_dir(d, device="cpu"):
    """Loads the exported files strictly (key sets must match), fp32, wte rows rebuilt from the codebook."""
    gcfg, scfg, clip_rel = read_config(os.path.join(d, "config.yaml"))
    clip_dir = os.path.join(d, clip_rel)
    with open(os.path.join(clip_dir, "config.json")) as f:
        tj = json.load(f)
    tcfg = M.TextConfig(**{k: tj[k] for k in M.TextConfig.__dataclass_fields__})
    vae, gpt, clip = M.OneDAutoEncoder(scfg), M.DualStreamRoformer(gcfg), M.ClipTextModel(tcfg)
    vsd, meta = load_safetensors(os.path.join(d, "shape_tokenizer.safetensors"))
    for alias, target in meta.items():
        vsd[alias] = vsd[target]
    vae.load_state_dict(vsd, strict=True)
    gsd, _ = load_safetensors(os.path.join(d, "shape_gpt.safetensors"))
    K = gcfg.shape_model_vocab_size
    cbn = codebook_from_rounded(vsd)
    gsd["transformer.wte.weight"][:K] = cbn @ gsd["shape_proj.weight"].t() + gsd["shape_proj.bias"]
    gpt.load_state_dict(gsd, strict=True)
    csd, _ = load_safetensors(os.path.join(clip_dir, "model.safetensors"))
    csd["unk_embedding"] = torch.zeros(tcfg.hidden_size)
    clip.load_state_dict(csd, strict=True)
    for m in (vae, gpt, clip):
        m.to(device).eval()
    return gpt, vae, clip, clip_dir


def expected_gpt_keys(cfg):
    """§2.1 key list for a config (used by the tests)."""
    keys = ["text_proj.weight", "shape_proj.weight", "shape_proj.bias", "transformer.wte.weight", "lm_head.weight"]
    if cfg.bias:
        keys.append("text_proj.bias")
    if cfg.use_bbox:
        keys += ["bbox_proj.weight", "bbox_proj.bias"]
    mlp = [f"mlp.{p}.{w}" for p in ("gate_proj", "up_proj", "down_proj") for w in ("weight", "bias")]
    for i in range(cfg.n_layer):
        p = f"transformer.dual_blocks.{i}."
        keys += [p + f"attn.pre_x.{n}" for n in ("c_qk.weight", "q_norm.weight", "k_norm.weight", "c_v.weight", "c_v.bias")]
        if i < cfg.n_layer - 1:
            keys += [p + f"attn.pre_c.{n}" for n in ("c_qk.weight", "q_norm.weight", "k_norm.weight", "c_v.weight", "c_v.bias")]
            posts = ("post_1", "post_2")
        else:
            keys += [p + f"attn.pre_c.{n}" for n in ("c_k.weight", "c_k.bias", "k_norm.weight", "c_v.weight", "c_v.bias")]
            posts = ("post_1",)
        for q in posts:
            keys += [p + f"{q}.c_proj.weight", p + f"{q}.c_proj.bias"] + [p + f"{q}.{m}" for m in mlp]
    for j in range(cfg.n_single_layer):
        p = f"transformer.single_blocks.{j}."
        keys += [p + f"attn.{n}" for n in ("c_qk.weight", "c_v.weight", "c_v.bias", "c_proj.weight", "c_proj.bias",
                                           "q_norm.weight", "k_norm.weight")] + [p + m for m in mlp]
    return sorted(keys)


def expected_tokenizer_keys(cfg):
    """§2.2 key list for a config (embedder stored once)."""
    keys = ["embedder.weight", "encoder.query", "encoder.ln_f.weight", "encoder.ln_f.bias",
            "decoder.positional_encodings", "occupancy_decoder.ln_f.weight", "occupancy_decoder.ln_f.bias",
            "occupancy_decoder.c_head.weight", "occupancy_decoder.c_head.bias"]
    lin = lambda p: [p + ".weight", p + ".bias"]
    keys += lin("encoder.feat_in.in_layer") + lin("encoder.feat_in.out_layer")
    keys += lin("occupancy_decoder.query_in.in_layer") + lin("occupancy_decoder.query_in.out_layer")
    keys += ["bottleneck.block.codebook.weight", "bottleneck.block.norm.weight", "bottleneck.block.cb_weight",
             "bottleneck.block.cb_bias"] + lin("bottleneck.block.c_in") + lin("bottleneck.block.c_x") + lin("bottleneck.block.c_out")

    def cross(p):
        return sum((lin(f"{p}.attn.{n}") for n in ("c_q", "c_k", "c_v", "c_proj")), []) + lin(f"{p}.mlp.up_proj") + lin(f"{p}.mlp.down_proj")

    def selfb(p):
        return lin(f"{p}.attn.c_qk") + lin(f"{p}.attn.c_v") + lin(f"{p}.attn.c_proj") + \
            [f"{p}.attn.q_norm.weight", f"{p}.attn.k_norm.weight"] + lin(f"{p}.mlp.up_proj") + lin(f"{p}.mlp.down_proj")

    for i in range(cfg.num_encoder_layers):
        keys += cross(f"encoder.blocks.{i}") if i in cfg.encoder_cross_attention_levels else selfb(f"encoder.blocks.{i}")
    for i in range(cfg.num_decoder_layers):
        keys += selfb(f"decoder.blocks.{i}")
    keys += cross("occupancy_decoder.attn_out")
    return sorted(keys)
