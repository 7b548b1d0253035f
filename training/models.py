"""Cube 3D reference architecture in PyTorch, with the reference module names so that state_dict keys are the
checkpoint keys of spec §2: DualStreamRoformer (shape_gpt), OneDAutoEncoder (shape_tokenizer) and a Hugging Face
CLIPTextModelWithProjection-compatible text tower. Written from the spec (../shared/docs/cube3d-reference.md).
"""
import math
from dataclasses import dataclass, field, asdict
from typing import List

import torch
import torch.nn as nn
import torch.nn.functional as F


# ----------------------------------------------------------------------------------------------------------------------
# configs (reference YAML keys)

@dataclass
class GPTConfig:
    n_layer: int = 4
    n_single_layer: int = 1
    rope_theta: float = 10000
    n_head: int = 4
    n_embd: int = 256
    bias: bool = True
    eps: float = 1e-6
    shape_model_vocab_size: int = 1024
    text_model_embed_dim: int = 128
    use_pooled_text_embed: bool = False
    shape_model_embed_dim: int = 16
    encoder_with_cls_token: bool = True
    use_bbox: bool = True


@dataclass
class ShapeConfig:
    encoder_with_cls_token: bool = True
    num_encoder_latents: int = 64
    num_decoder_latents: int = 0
    embed_dim: int = 16
    width: int = 192
    num_heads: int = 6
    out_dim: int = 1
    eps: float = 1e-6
    num_freqs: int = 64
    point_feats: int = 3
    embed_point_feats: bool = False
    num_encoder_layers: int = 4
    encoder_cross_attention_levels: List[int] = field(default_factory=lambda: [0, 2])
    num_decoder_layers: int = 6
    num_codes: int = 1024


@dataclass
class TextConfig:  # Hugging Face CLIPTextConfig keys
    vocab_size: int = 49408
    hidden_size: int = 128
    intermediate_size: int = 512
    num_hidden_layers: int = 3
    num_attention_heads: int = 4
    max_position_embeddings: int = 77
    projection_dim: int = 128
    hidden_act: str = "quick_gelu"
    layer_norm_eps: float = 1e-5
    bos_token_id: int = 49406
    eos_token_id: int = 49407
    pad_token_id: int = 49407


# ----------------------------------------------------------------------------------------------------------------------
# shared pieces

class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float()
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight.float()
        return y.to(x.dtype)


def layer_norm(x, eps):
    return F.layer_norm(x.float(), (x.shape[-1],), eps=eps).to(x.dtype)


def heads(t, n):
    B, T, D = t.shape
    return t.view(B, T, n, D // n).transpose(1, 2)


def merge(t):
    B, H, T, d = t.shape
    return t.transpose(1, 2).reshape(B, T, H * d)


def rope_inv_freq(hd, theta):
    return 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))


def apply_rope(t, pos, inv_freq):
    """Interleaved RoPE: pairs (2j, 2j+1). t [B,H,T,hd]; pos [T] (int)."""
    ang = pos.float()[:, None] * inv_freq.to(t.device)[None, :]   # [T, hd/2]
    cos, sin = torch.cos(ang), torch.sin(ang)
    tf = t.float()
    a, b = tf[..., 0::2], tf[..., 1::2]
    out = torch.stack([a * cos - b * sin, a * sin + b * cos], -1).flatten(-2)
    return out.to(t.dtype)


_HAS_SDPA = hasattr(F, "scaled_dot_product_attention")


def sdpa(q, k, v, mask=None):
    """softmax(q k^T / sqrt(d) + mask) v; mask is boolean (True = attend), broadcastable to [B,H,Tq,Tk]."""
    if _HAS_SDPA:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    att = (q.float() @ k.float().transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if mask is not None:
        att = att.masked_fill(~mask, float("-inf"))
    return (att.softmax(-1) @ v.float()).to(q.dtype)


# ----------------------------------------------------------------------------------------------------------------------
# GPT (DualStreamRoformer)

class SwiGLUMLP(nn.Module):
    def __init__(self, d, hidden, bias):
        super().__init__()
        self.gate_proj = nn.Linear(d, hidden, bias=bias)
        self.up_proj = nn.Linear(d, hidden, bias=bias)
        self.down_proj = nn.Linear(hidden, d, bias=bias)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class PreAttn(nn.Module):
    def __init__(self, cfg, cond_pre_only=False):
        super().__init__()
        D, hd = cfg.n_embd, cfg.n_embd // cfg.n_head
        self.cond_pre_only = cond_pre_only
        if cond_pre_only:
            self.c_k = nn.Linear(D, D, bias=True)
        else:
            self.c_qk = nn.Linear(D, 2 * D, bias=False)
            self.q_norm = RMSNorm(hd)
        self.k_norm = RMSNorm(hd)
        self.c_v = nn.Linear(D, D, bias=cfg.bias)
        self.n_head = cfg.n_head

    def forward(self, h):
        if self.cond_pre_only:
            q, k = None, self.c_k(h)
        else:
            q, k = self.c_qk(h).chunk(2, dim=-1)
        v = self.c_v(h)
        k = self.k_norm(heads(k, self.n_head))
        if q is not None:
            q = self.q_norm(heads(q, self.n_head))
        return q, k, heads(v, self.n_head)


class PostAttn(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=cfg.bias)
        self.mlp = SwiGLUMLP(cfg.n_embd, 4 * cfg.n_embd, cfg.bias)
        self.eps = cfg.eps

    def forward(self, x, a):
        x = x + self.c_proj(a)
        return x + self.mlp(layer_norm(x, self.eps))


class DualAttn(nn.Module):
    def __init__(self, cfg, cond_pre_only):
        super().__init__()
        self.pre_x = PreAttn(cfg)
        self.pre_c = PreAttn(cfg, cond_pre_only=cond_pre_only)


class DualStreamBlock(nn.Module):
    def __init__(self, cfg, cond_pre_only=False):
        super().__init__()
        self.cond_pre_only = cond_pre_only
        self.attn = DualAttn(cfg, cond_pre_only)
        self.post_1 = PostAttn(cfg)
        if not cond_pre_only:
            self.post_2 = PostAttn(cfg)
        self.eps = cfg.eps

    def forward(self, x, c, pos_joint, mask, inv_freq):
        s = c.shape[1]
        qx, kx, vx = self.attn.pre_x(layer_norm(x, self.eps))
        qc, kc, vc = self.attn.pre_c(layer_norm(c, self.eps))
        K = apply_rope(torch.cat([kc, kx], 2), pos_joint, inv_freq)
        V = torch.cat([vc, vx], 2)
        if self.cond_pre_only:
            Q = apply_rope(qx, pos_joint[s:], inv_freq)
            a = sdpa(Q, K, V, mask[s:])
            return self.post_1(x, merge(a)), None
        Q = apply_rope(torch.cat([qc, qx], 2), pos_joint, inv_freq)
        a = merge(sdpa(Q, K, V, mask))
        x = self.post_1(x, a[:, s:])
        c = self.post_2(c, a[:, :s])
        return x, c


class SingleAttn(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        D, hd = cfg.n_embd, cfg.n_embd // cfg.n_head
        self.c_qk = nn.Linear(D, 2 * D, bias=False)
        self.c_v = nn.Linear(D, D, bias=cfg.bias)
        self.c_proj = nn.Linear(D, D, bias=cfg.bias)
        self.q_norm = RMSNorm(hd)
        self.k_norm = RMSNorm(hd)
        self.n_head = cfg.n_head


class SingleStreamBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.attn = SingleAttn(cfg)
        self.mlp = SwiGLUMLP(cfg.n_embd, 4 * cfg.n_embd, cfg.bias)
        self.eps = cfg.eps

    def forward(self, x, pos, mask, inv_freq):
        at = self.attn
        h = layer_norm(x, self.eps)
        q, k = at.c_qk(h).chunk(2, dim=-1)
        q = apply_rope(at.q_norm(heads(q, at.n_head)), pos, inv_freq)
        k = apply_rope(at.k_norm(heads(k, at.n_head)), pos, inv_freq)
        v = heads(at.c_v(h), at.n_head)
        x = x + at.c_proj(merge(sdpa(q, k, v, mask)))
        return x + self.mlp(layer_norm(x, self.eps))


class Transformer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        V = cfg.shape_model_vocab_size + 3
        self.wte = nn.Embedding(V, cfg.n_embd, padding_idx=V - 1)
        self.dual_blocks = nn.ModuleList([DualStreamBlock(cfg, cond_pre_only=(i == cfg.n_layer - 1))
                                          for i in range(cfg.n_layer)])
        self.single_blocks = nn.ModuleList([SingleStreamBlock(cfg) for _ in range(cfg.n_single_layer)])


class DualStreamRoformer(nn.Module):
    """single_mode: 'reference' (every shape position attends to slot 0 only in the single blocks, which is what the
    reference's KV-cached decode computes, spec §4.4) or 'causal' (true causal attention)."""

    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.cfg = cfg
        D = cfg.n_embd
        self.text_proj = nn.Linear(cfg.text_model_embed_dim, D, bias=cfg.bias)
        self.shape_proj = nn.Linear(cfg.shape_model_embed_dim, D)
        if cfg.use_bbox:
            self.bbox_proj = nn.Linear(3, D)
        self.transformer = Transformer(cfg)
        self.lm_head = nn.Linear(D, cfg.shape_model_vocab_size + 3, bias=False)
        self.register_buffer("inv_freq", rope_inv_freq(D // cfg.n_head, cfg.rope_theta), persistent=False)
        self.bos_id = cfg.shape_model_vocab_size

    def code_embeddings(self, codebook_norm):
        """wte rows 0..K-1 as the engine rebuilds them: shape_proj(normalised codebook) (spec §2.3)."""
        return self.shape_proj(codebook_norm)

    def encode_cond(self, text_hidden, bbox=None):
        c = self.text_proj(text_hidden)
        if self.cfg.use_bbox:
            if bbox is None:
                bbox = torch.zeros(c.shape[0], 3, device=c.device, dtype=c.dtype)
            c = torch.cat([c, self.bbox_proj(bbox)[:, None, :]], 1)
        return c

    def embed_tokens(self, tokens, code_emb):
        """tokens [B, T] in [0, K) -> BOS + embeddings of tokens (the shape stream input, length T+1)."""
        B = tokens.shape[0]
        bos = self.transformer.wte.weight[self.bos_id][None, None, :].expand(B, 1, -1)
        return torch.cat([bos, code_emb[tokens].to(bos.dtype)], 1)

    def forward(self, x, c, single_mode="reference"):
        s, L = c.shape[1], x.shape[1]
        dev = x.device
        pos_x = torch.arange(L, device=dev)
        pos_joint = torch.cat([torch.zeros(s, dtype=torch.long, device=dev), pos_x])
        mask = torch.ones(s + L, s + L, dtype=torch.bool, device=dev).tril()
        for blk in self.transformer.dual_blocks:
            x, c = blk(x, c, pos_joint, mask, self.inv_freq)
        if single_mode == "reference":
            smask = torch.zeros(L, L, dtype=torch.bool, device=dev)
            smask[:, 0] = True
        else:
            smask = torch.ones(L, L, dtype=torch.bool, device=dev).tril()
        for blk in self.transformer.single_blocks:
            x = blk(x, pos_x, smask, self.inv_freq)
        x = layer_norm(x, self.cfg.eps)
        return self.lm_head(x)


# ----------------------------------------------------------------------------------------------------------------------
# CLIP text tower (Hugging Face CLIPTextModelWithProjection layout)

class ClipAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        H = cfg.hidden_size
        self.q_proj, self.k_proj = nn.Linear(H, H), nn.Linear(H, H)
        self.v_proj, self.out_proj = nn.Linear(H, H), nn.Linear(H, H)
        self.n = cfg.num_attention_heads

    def forward(self, h, mask):
        q, k, v = heads(self.q_proj(h), self.n), heads(self.k_proj(h), self.n), heads(self.v_proj(h), self.n)
        return self.out_proj(merge(sdpa(q, k, v, mask)))


class ClipMLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.fc1 = nn.Linear(cfg.hidden_size, cfg.intermediate_size)
        self.fc2 = nn.Linear(cfg.intermediate_size, cfg.hidden_size)

    def forward(self, h):
        h = self.fc1(h)
        return self.fc2(h * torch.sigmoid(1.702 * h))


class ClipLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.self_attn = ClipAttention(cfg)
        self.layer_norm1 = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)
        self.mlp = ClipMLP(cfg)
        self.layer_norm2 = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)

    def forward(self, h, mask):
        h = h + self.self_attn(self.layer_norm1(h), mask)
        return h + self.mlp(self.layer_norm2(h))


class ClipEmbeddings(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.token_embedding = nn.Embedding(cfg.vocab_size, cfg.hidden_size)
        self.position_embedding = nn.Embedding(cfg.max_position_embeddings, cfg.hidden_size)


class ClipEncoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.layers = nn.ModuleList([ClipLayer(cfg) for _ in range(cfg.num_hidden_layers)])


class ClipTextTransformer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embeddings = ClipEmbeddings(cfg)
        self.encoder = ClipEncoder(cfg)
        self.final_layer_norm = nn.LayerNorm(cfg.hidden_size, eps=cfg.layer_norm_eps)


class ClipTextModel(nn.Module):
    def __init__(self, cfg: TextConfig):
        super().__init__()
        self.cfg = cfg
        self.text_model = ClipTextTransformer(cfg)
        self.text_projection = nn.Linear(cfg.hidden_size, cfg.projection_dim, bias=False)
        # training-only: one shared vector for "unknown" token positions (written into every untrained row at export)
        self.unk_embedding = nn.Parameter(torch.zeros(cfg.hidden_size))

    def forward(self, ids, attn_mask, unk=None):
        """ids, attn_mask [B,77] -> last_hidden_state [B,77,H] (causal + key-padding mask, like HF CLIP)."""
        tm = self.text_model
        T = ids.shape[1]
        h = tm.embeddings.token_embedding(ids)
        if unk is not None:
            h = torch.where(unk[..., None], self.unk_embedding.to(h.dtype).expand_as(h), h)
        h = h + tm.embeddings.position_embedding.weight[:T][None]
        causal = torch.ones(T, T, dtype=torch.bool, device=ids.device).tril()
        mask = (causal[None] & attn_mask.bool()[:, None, :])[:, None]   # [B,1,T,T]
        for layer in tm.encoder.layers:
            h = layer(h, mask)
        return tm.final_layer_norm(h)


# ----------------------------------------------------------------------------------------------------------------------
# Shape tokenizer (OneDAutoEncoder)

class PhaseModulatedFourierEmbedder(nn.Module):
    def __init__(self, num_freqs, input_dim=3):
        super().__init__()
        # log-spaced frequencies (0.7 .. 90 rad/unit) with a small per-axis jitter; fixed (not trained)
        base = 2.0 ** torch.linspace(-0.5, 6.5, num_freqs)
        g = torch.Generator().manual_seed(1234)
        jitter = 1.0 + 0.03 * torch.randn(input_dim, num_freqs, generator=g)
        self.weight = nn.Parameter(base[None, :] * jitter, requires_grad=False)
        self.register_buffer("carrier", self.make_carrier(num_freqs), persistent=False)
        self.num_freqs = num_freqs
        self.out_dim = input_dim * (2 * num_freqs + 1)

    @staticmethod
    def make_carrier(num_freqs):
        lam = torch.linspace(1, 0, num_freqs, dtype=torch.float32)
        mu = torch.linspace(0, 1, num_freqs, dtype=torch.float32)
        c = torch.pow(torch.tensor(num_freqs / 8, dtype=torch.float32), lam)
        return ((c + mu) * 2) * math.pi

    def forward(self, x):
        xf = x.float()
        f = (xf[..., :, None] * self.weight.float()).flatten(-2)                      # [.., 3F]
        p = ((xf[..., :, None] * 0.5) * math.pi + self.carrier.float()).flatten(-2)   # [.., 3F]
        out = torch.cat([xf, torch.cos(f) + torch.cos(p), torch.sin(f) + torch.sin(p)], -1)
        return out


class MLPEmbedder(nn.Module):
    def __init__(self, din, dout):
        super().__init__()
        self.in_layer = nn.Linear(din, dout)
        self.out_layer = nn.Linear(dout, dout)

    def forward(self, x):
        return self.out_layer(F.silu(self.in_layer(x)))


class GeluMLP(nn.Module):
    def __init__(self, W):
        super().__init__()
        self.up_proj = nn.Linear(W, 4 * W)
        self.down_proj = nn.Linear(4 * W, W)

    def forward(self, x):
        return self.down_proj(F.gelu(self.up_proj(x)))


class SelfAttn(nn.Module):
    def __init__(self, W, nh):
        super().__init__()
        self.c_qk = nn.Linear(W, 2 * W)
        self.c_v = nn.Linear(W, W)
        self.c_proj = nn.Linear(W, W)
        self.q_norm = RMSNorm(W // nh)
        self.k_norm = RMSNorm(W // nh)
        self.nh = nh

    def forward(self, h):
        q, k = self.c_qk(h).chunk(2, dim=-1)
        q, k = self.q_norm(heads(q, self.nh)), self.k_norm(heads(k, self.nh))
        return self.c_proj(merge(sdpa(q, k, heads(self.c_v(h), self.nh))))


class CrossAttn(nn.Module):
    def __init__(self, W, nh):
        super().__init__()
        self.c_q, self.c_k = nn.Linear(W, W), nn.Linear(W, W)
        self.c_v, self.c_proj = nn.Linear(W, W), nn.Linear(W, W)
        self.nh = nh

    def kv(self, data):
        return heads(self.c_k(data), self.nh), heads(self.c_v(data), self.nh)

    def forward(self, h, data=None, kv=None):
        k, v = kv if kv is not None else self.kv(data)
        return self.c_proj(merge(sdpa(heads(self.c_q(h), self.nh), k, v)))


class SelfBlock(nn.Module):
    def __init__(self, W, nh, eps):
        super().__init__()
        self.attn = SelfAttn(W, nh)
        self.mlp = GeluMLP(W)
        self.eps = eps

    def forward(self, h):
        h = h + self.attn(layer_norm(h, self.eps))
        return h + self.mlp(layer_norm(h, self.eps))


class CrossBlock(nn.Module):
    def __init__(self, W, nh, eps):
        super().__init__()
        self.attn = CrossAttn(W, nh)
        self.mlp = GeluMLP(W)
        self.eps = eps

    def forward(self, h, data=None, kv=None):
        if kv is None:
            kv = self.attn.kv(layer_norm(data, self.eps))
        h = h + self.attn(layer_norm(h, self.eps), kv=kv)
        return h + self.mlp(layer_norm(h, self.eps))

    def latent_kv(self, data):
        return self.attn.kv(layer_norm(data, self.eps))


class OneDEncoder(nn.Module):
    def __init__(self, cfg, embedder):
        super().__init__()
        W = cfg.width
        self.embedder = embedder
        self.query = nn.Parameter(torch.randn(cfg.num_encoder_latents + 1, W) * 0.02)
        self.feat_in = MLPEmbedder(embedder.out_dim + cfg.point_feats, W)
        self.blocks = nn.ModuleList([CrossBlock(W, cfg.num_heads, cfg.eps) if i in cfg.encoder_cross_attention_levels
                                     else SelfBlock(W, cfg.num_heads, cfg.eps) for i in range(cfg.num_encoder_layers)])
        self.ln_f = nn.LayerNorm(W, eps=cfg.eps)

    def forward(self, pts):
        data = self.feat_in(torch.cat([self.embedder(pts[..., :3]), pts[..., 3:].float()], -1))
        h = self.query[None].expand(pts.shape[0], -1, -1).to(data.dtype)
        for blk in self.blocks:
            h = blk(h, data) if isinstance(blk, CrossBlock) else blk(h)
        return self.ln_f(h)[:, 1:]


class SphericalVQ(nn.Module):
    def __init__(self, W, d, K):
        super().__init__()
        self.codebook = nn.Embedding(K, d)
        nn.init.normal_(self.codebook.weight)
        self.c_in = nn.Linear(W, d)
        self.c_x = nn.Linear(W, d)      # present in the reference file; unused here
        self.c_out = nn.Linear(d, W)
        self.norm = RMSNorm(d)
        self.norm.weight.requires_grad_(False)
        self.cb_weight = nn.Parameter(torch.ones(d))
        self.cb_bias = nn.Parameter(torch.zeros(d))

    def get_codebook(self):
        return self.norm(self.codebook.weight.float() * self.cb_weight.float() + self.cb_bias.float())

    def encode_z(self, h):
        return self.norm(self.c_in(h).float())

    def quantize(self, z):
        C = self.get_codebook()
        d = (z.pow(2).sum(-1, keepdim=True) - 2 * z @ C.t() + C.pow(2).sum(-1)[None, None])
        ids = d.argmin(-1)
        return ids, C[ids]

    def lookup(self, ids):
        return self.c_out(self.get_codebook()[ids])


class Bottleneck(nn.Module):
    def __init__(self, W, d, K):
        super().__init__()
        self.block = SphericalVQ(W, d, K)


class OneDDecoder(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.positional_encodings = nn.Parameter(torch.randn(cfg.num_encoder_latents, cfg.width) * 0.02)
        self.blocks = nn.ModuleList([SelfBlock(cfg.width, cfg.num_heads, cfg.eps) for _ in range(cfg.num_decoder_layers)])

    def forward(self, z):
        h = z + self.positional_encodings[: z.shape[1]][None].to(z.dtype)
        for blk in self.blocks:
            h = blk(h)
        return h


class OneDOccupancyDecoder(nn.Module):
    def __init__(self, cfg, embedder):
        super().__init__()
        W = cfg.width
        self.embedder = embedder
        self.query_in = MLPEmbedder(embedder.out_dim, W)
        self.attn_out = CrossBlock(W, cfg.num_heads, cfg.eps)
        self.ln_f = nn.LayerNorm(W, eps=cfg.eps)
        self.c_head = nn.Linear(W, cfg.out_dim)

    def forward(self, pts, latents=None, kv=None):
        q = self.query_in(self.embedder(pts))
        if kv is None:
            kv = self.attn_out.latent_kv(latents)
        q = self.attn_out(q, kv=kv)
        return self.c_head(self.ln_f(q))[..., 0]


class OneDAutoEncoder(nn.Module):
    def __init__(self, cfg: ShapeConfig):
        super().__init__()
        self.cfg = cfg
        self.embedder = PhaseModulatedFourierEmbedder(cfg.num_freqs)
        self.encoder = OneDEncoder(cfg, self.embedder)
        self.bottleneck = Bottleneck(cfg.width, cfg.embed_dim, cfg.num_codes)
        self.decoder = OneDDecoder(cfg)
        self.occupancy_decoder = OneDOccupancyDecoder(cfg, self.embedder)

    def encode(self, pts):
        """pts [B,P,6] -> (z [B,N,d] fp32 spherical, ids [B,N], zq [B,N,d])."""
        h = self.encoder(pts)
        vq = self.bottleneck.block
        z = vq.encode_z(h)
        ids, zq = vq.quantize(z)
        return z, ids, zq

    def decode_latents(self, zq):
        return self.decoder(self.bottleneck.block.c_out(zq))

    def decode_ids(self, ids):
        return self.decoder(self.bottleneck.block.lookup(ids))

    def query(self, latents, pts, chunk=None):
        kv = self.occupancy_decoder.attn_out.latent_kv(latents)
        if chunk is None or pts.shape[1] <= chunk:
            return self.occupancy_decoder(pts, kv=kv)
        return torch.cat([self.occupancy_decoder(pts[:, s:s + chunk], kv=kv) for s in range(0, pts.shape[1], chunk)], 1)


def count_params(m):
    return sum(p.numel() for p in m.parameters())
