"""The training code's own inference, with the reference semantics (spec §6-§8): CLIP text tower on the prompt and
on "", bbox token (zeros when absent, always zeros for the unconditional row), guidance with the linear schedule
gamma_i = g*(N-i)/N, greedy argmax over [0, K), single-stream block in 'reference' mode (slot-0 attention, §4.4)."""
import torch

import models as M


def tokenize(tok, prompts, device):
    ids, masks = zip(*[tok(p) for p in prompts])
    return torch.tensor(ids, device=device), torch.tensor(masks, device=device)


@torch.no_grad()
def conditioning(gpt, clip, tok, prompts, bboxes, device):
    """Returns cond [2P, s, D]: rows [0,P) conditional, [P,2P) unconditional (empty prompt, zero bbox)."""
    P = len(prompts)
    ids, masks = tokenize(tok, list(prompts) + [""], device)
    hid = clip(ids, masks)
    hc, hu = hid[:P], hid[P:].expand(P, -1, -1)
    bb = torch.zeros(P, 3, device=device)
    if bboxes is not None:
        for i, b in enumerate(bboxes):
            if b is not None:
                bb[i] = torch.tensor(b, dtype=torch.float32, device=device)
    cc = gpt.encode_cond(hc, bb)
    cu = gpt.encode_cond(hu, torch.zeros_like(bb))
    return torch.cat([cc, cu], 0)


def normalize_bbox(b):
    m = max(b)
    return [1.925 * v / m for v in b]


class KVDecoder:
    """KV-cached incremental forward of a DualStreamRoformer, mathematically identical to the full forward
    (models.DualStreamRoformer.forward) for the same single_mode; used for fast generation."""

    def __init__(self, gpt, cond, single_mode="reference"):
        self.gpt, self.mode = gpt, single_mode
        self.s = cond.shape[1]
        self.cache = []      # per dual block: (K [B,H,T,hd] rotated, V)
        self.scache = []     # per single block: (K, V)
        self._prefill(cond)

    def _prefill(self, c):
        gpt = self.gpt
        x = gpt.transformer.wte.weight[gpt.bos_id][None, None, :].expand(c.shape[0], 1, -1)
        dev = c.device
        s = self.s
        pos_joint = torch.cat([torch.zeros(s, dtype=torch.long, device=dev), torch.zeros(1, dtype=torch.long, device=dev)])
        mask = torch.ones(s + 1, s + 1, dtype=torch.bool, device=dev).tril()
        inv = gpt.inv_freq
        for blk in gpt.transformer.dual_blocks:
            qx, kx, vx = blk.attn.pre_x(M.layer_norm(x, blk.eps))
            qc, kc, vc = blk.attn.pre_c(M.layer_norm(c, blk.eps))
            K = M.apply_rope(torch.cat([kc, kx], 2), pos_joint, inv)
            V = torch.cat([vc, vx], 2)
            self.cache.append([K, V])
            if blk.cond_pre_only:
                a = M.sdpa(M.apply_rope(qx, pos_joint[s:], inv), K, V, mask[s:])
                x = blk.post_1(x, M.merge(a))
                c = None
            else:
                Q = M.apply_rope(torch.cat([qc, qx], 2), pos_joint, inv)
                a = M.merge(M.sdpa(Q, K, V, mask))
                x, c = blk.post_1(x, a[:, s:]), blk.post_2(c, a[:, :s])
        x = self._single(x, 0)
        self.logits = gpt.lm_head(M.layer_norm(x, gpt.cfg.eps))[:, -1]

    def _single(self, x, pos, new=True):
        gpt = self.gpt
        p = torch.tensor([pos], device=x.device)
        for j, blk in enumerate(gpt.transformer.single_blocks):
            at = blk.attn
            h = M.layer_norm(x, blk.eps)
            q, k = at.c_qk(h).chunk(2, dim=-1)
            q = M.apply_rope(at.q_norm(M.heads(q, at.n_head)), p, gpt.inv_freq)
            k = M.apply_rope(at.k_norm(M.heads(k, at.n_head)), p, gpt.inv_freq)
            v = M.heads(at.c_v(h), at.n_head)
            if pos == 0:
                self.scache.append([k, v])
            else:
                self.scache[j][0] = torch.cat([self.scache[j][0], k], 2)
                self.scache[j][1] = torch.cat([self.scache[j][1], v], 2)
            K, V = self.scache[j]
            if self.mode == "reference":
                K, V = K[:, :, :1], V[:, :, :1]   # the reference's cached decode reads slot 0 only (spec 4.4)
            x = x + at.c_proj(M.merge(M.sdpa(q, K, V)))
            x = x + blk.mlp(M.layer_norm(x, blk.eps))
        return x

    def step(self, emb, pos):
        """emb [B,1,D] = embedding of the token at shape position `pos` (>= 1); returns logits [B, V]."""
        gpt = self.gpt
        x = emb
        p = torch.tensor([pos], device=x.device)
        for blk, kv in zip(gpt.transformer.dual_blocks, self.cache):
            qx, kx, vx = blk.attn.pre_x(M.layer_norm(x, blk.eps))
            kv[0] = torch.cat([kv[0], M.apply_rope(kx, p, gpt.inv_freq)], 2)
            kv[1] = torch.cat([kv[1], vx], 2)
            a = M.sdpa(M.apply_rope(qx, p, gpt.inv_freq), kv[0], kv[1])
            x = blk.post_1(x, M.merge(a))
        x = self._single(x, pos)
        return gpt.lm_head(M.layer_norm(x, gpt.cfg.eps))[:, -1]


def _setup(gpt, clip, vae, tok, prompts, bboxes, guidance, device):
    """What both generators start from: prompt count, token count, vocabulary, cond rows and the code embeddings."""
    P = len(prompts)
    N = vae.cfg.num_encoder_latents
    K = gpt.cfg.shape_model_vocab_size
    cond = conditioning(gpt, clip, tok, prompts, bboxes, device)
    if guidance <= 0:
        cond = cond[:P]
    return P, N, K, cond, gpt.transformer.wte.weight[:K]


def _pick(logits, i, N, P, guidance, code_emb, margins):
    """Step i's guided greedy choice (spec: gamma_i = g (N - i) / N): the tokens, their top-2 margin appended to
    margins, and the next input embedding (repeated for the unconditional rows)."""
    if guidance > 0:
        g = guidance * (N - i) / N
        logits = (1 + g) * logits[:P] - g * logits[P:]
    top2 = logits.topk(2, dim=-1).values
    margins.append(top2[:, 0] - top2[:, 1])
    t = logits.argmax(-1)
    e = code_emb[t]
    if guidance > 0:
        e = torch.cat([e, e], 0)
    return t, e


def _result(out, margins, return_margins):
    toks = torch.stack(out, 1)
    return (toks, torch.stack(margins, 1)) if return_margins else toks


@torch.no_grad()
def generate(gpt, clip, vae, tok, prompts, bboxes=None, guidance=3.0, mode="reference", device="cpu",
             return_margins=False):
    """KV-cached greedy generation with guidance (reference semantics). Returns tokens [P, N] (and margins)."""
    P, N, K, cond, code_emb = _setup(gpt, clip, vae, tok, prompts, bboxes, guidance, device)
    dec = KVDecoder(gpt, cond, mode)
    logits = dec.logits
    out, margins = [], []
    for i in range(N):
        t, e = _pick(logits[:, :K].float(), i, N, P, guidance, code_emb, margins)
        out.append(t)
        if i == N - 1:
            break
        logits = dec.step(e[:, None, :], i + 1)
    return _result(out, margins, return_margins)


@torch.no_grad()
def generate_full(gpt, clip, vae, tok, prompts, bboxes=None, guidance=3.0, mode="reference", device="cpu",
                  return_margins=False):
    """Same as generate() but recomputes the whole sequence every step (the training forward)."""
    P, N, K, cond, code_emb = _setup(gpt, clip, vae, tok, prompts, bboxes, guidance, device)
    B = cond.shape[0]
    x = gpt.transformer.wte.weight[gpt.bos_id][None, None, :].expand(B, 1, -1).clone()
    out, margins = [], []
    for i in range(N):
        t, e = _pick(gpt(x, cond, single_mode=mode)[:, -1, :K].float(), i, N, P, guidance, code_emb, margins)
        out.append(t)
        x = torch.cat([x, e[:, None, :]], 1)
    return _result(out, margins, return_margins)


def grid_points(res, device, bound=1.05):
    g = torch.linspace(-bound, bound, res, device=device)
    X, Y, Z = torch.meshgrid(g, g, g, indexing="ij")
    return torch.stack([X, Y, Z], -1).reshape(1, -1, 3)


@torch.no_grad()
def decode_occupancy(vae, ids, res=64, device="cpu", chunk=65536, batch=16):
    """ids [B,N] -> occupancy bool [B, res^3] on the reference grid over [-1.05, 1.05]^3 (logit > 0)."""
    pts = grid_points(res, device)
    outs = []
    for s in range(0, ids.shape[0], batch):
        lat = vae.decode_ids(ids[s:s + batch])
        p = pts.expand(lat.shape[0], -1, -1)
        outs.append(vae.query(lat, p, chunk=chunk) > 0)
    return torch.cat(outs, 0)
