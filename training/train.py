"""Train the default Cubeforge model end to end: procedural data -> shape VQ-VAE -> CLIP-architecture text tower +
dual-stream GPT (bbox conditioning, prompt dropout) -> export to the reference formats -> evaluation.

Every stage runs for a wall-clock budget (seconds), so a run fits a fixed GPU lease. Example (H200, ~9 min):
  PYTHONUNBUFFERED=1 python3 training/train.py --out $OUT --vae-seconds 250 --gpt-seconds 170
CPU smoke test (tiny sizes, a few families):
  /usr/bin/python3 training/train.py --tiny --out /tmp/cf_tiny
"""
import argparse
import json
import math
import os
import random
import sys
import tarfile
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import captions as CAP  # noqa: E402
import clip_bpe  # noqa: E402
import data as D  # noqa: E402
import evaluate as EV  # noqa: E402
import export as E  # noqa: E402
import infer as I  # noqa: E402
import models as M  # noqa: E402
import shapes as S  # noqa: E402

T_START = time.time()
LOG = None
CHOSEN = {}  # batch sizes picked by --auto-batch, recorded in report.json


def log(msg):
    line = f"[{time.time() - T_START:7.1f}s] {msg}"
    print(line, flush=True)
    if LOG:
        with open(LOG, "a") as f:
            f.write(line + "\n")


def autocast(enabled):
    import contextlib
    if not enabled:
        return contextlib.nullcontext()
    return torch.autocast(device_type="cuda", dtype=torch.bfloat16)


def lr_at(base, step, warmup, frac, floor=0.05):
    w = min(1.0, (step + 1) / warmup)
    return base * w * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(frac, 1.0))))


def make_opt(params, lr, wd, betas, device):
    decay = [p for n, p in params if p.requires_grad and p.dim() >= 2 and "embedding" not in n and "wte" not in n
             and "codebook" not in n and "query" not in n and "positional" not in n]
    ids = set(id(p) for p in decay)
    rest = [p for n, p in params if p.requires_grad and id(p) not in ids]
    kw = dict(lr=lr, betas=betas)
    if device.startswith("cuda"):
        kw["fused"] = True
    return torch.optim.AdamW([{"params": decay, "weight_decay": wd}, {"params": rest, "weight_decay": 0.0}], **kw)


# ----------------------------------------------------------------------------------------------------------------------

def calibrate_batch(step_fn, bs, dev, factors=(1, 2, 4), min_gain=1.15, log_name="", steps=6):
    """Pick the batch size with the best samples/s among bs*factors (small models on a big GPU can be launch-bound, so
    a larger batch may be nearly free; the learning rate is kept). The timed steps are real training steps. A larger batch must beat the best
    smaller one by min_gain to be taken (more optimiser updates are worth something). OOM skips a candidate."""
    sync = torch.cuda.synchronize if dev.startswith("cuda") else (lambda: None)
    best_bs, best_rate = bs, 0.0
    for f in factors:
        b = bs * f
        try:
            step_fn(b)
            step_fn(b)
            sync()
            t = time.time()
            for _ in range(steps):
                step_fn(b)
            sync()
            rate = b * steps / (time.time() - t)
        except torch.cuda.OutOfMemoryError:
            torch.cuda.empty_cache()
            log(f"{log_name} batch {b}: out of memory, skipped")
            break
        log(f"{log_name} batch {b}: {rate:.0f} samples/s")
        if rate > best_rate * min_gain:
            best_bs, best_rate = b, rate
    log(f"{log_name} batch chosen: {best_bs}")
    return best_bs


class DivergenceGuard:
    """Every `every` steps: if the loss is not finite, restore the last good snapshot (model + optimiser) and halve the
    learning rate; otherwise take a new snapshot. (A run at a 1.4x VAE learning rate went NaN at step ~300 and
    wasted a whole GPU call: a stage must never silently train on NaNs.)"""

    def __init__(self, modules, opt, every=100, name=""):
        self.modules, self.opt, self.every, self.name = modules, opt, every, name
        self.scale, self.snap, self.restores = 1.0, None, 0
        self._take()

    def _take(self):
        import copy
        self.snap = ([{k: v.detach().clone() for k, v in m.state_dict().items()} for m in self.modules],
                     copy.deepcopy(self.opt.state_dict()))

    def check(self, step, loss):
        if step % self.every != self.every - 1:
            return False
        if torch.isfinite(loss.detach()).all():
            self._take()
            return False
        for m, sd in zip(self.modules, self.snap[0]):
            m.load_state_dict(sd)
        self.opt.load_state_dict(self.snap[1])
        self.scale *= 0.5
        self.restores += 1
        log(f"{self.name}: non-finite loss at step {step + 1}: restored the last snapshot, lr scale {self.scale}")
        if self.restores > 6:
            raise RuntimeError(f"{self.name}: training keeps diverging")
        return True


def train_vae(vae, dat, dev, seconds, bs, nq, lr, amp, auto_batch=False):
    vq = vae.bottleneck.block
    opt = make_opt(list(vae.named_parameters()), lr, 0.01, (0.9, 0.99), dev)
    S_ = dat["surf"].shape[0]
    nocc = dat["occ_pts"].shape[1]
    usage = torch.zeros(vae.cfg.num_codes, device=dev)

    def one_step(b):
        idx = torch.randint(0, S_, (b,), device=dev)
        surf = dat["surf"][idx].float()
        qi = torch.randint(0, nocc, (b, nq), device=dev)
        pts = torch.gather(dat["occ_pts"][idx], 1, qi[..., None].expand(-1, -1, 3)).float()
        occ = torch.gather(dat["occ"][idx], 1, qi).float()
        with autocast(amp):
            h = vae.encoder(surf)
        z = vq.encode_z(h.float())
        ids, zq = vq.quantize(z)
        zst = z + (zq - z).detach()
        with autocast(amp):
            lat = vae.decoder(vq.c_out(zst))
            logits = vae.query(lat, pts)
        l_occ = F.binary_cross_entropy_with_logits(logits.float(), occ)
        l_vq = F.mse_loss(zq, z.detach()) + 0.25 * F.mse_loss(z, zq.detach())
        loss = l_occ + l_vq
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(vae.parameters(), 1.0)
        opt.step()
        return z, ids, logits, occ, l_occ, l_vq

    t0 = time.time()
    if auto_batch:
        for g in opt.param_groups:
            g["lr"] = lr * 0.05  # calibration steps run at a warm-up rate
        bs = calibrate_batch(one_step, bs, dev, log_name="vae")
        CHOSEN["vae_batch"] = bs
    guard = DivergenceGuard([vae], opt, name="vae")
    step, last = 0, t0
    hist = []
    while True:
        el = time.time() - t0
        if el > seconds:
            break
        frac = el / seconds
        for g in opt.param_groups:
            g["lr"] = lr_at(lr, step, 200, frac) * guard.scale
        z, ids, logits, occ, l_occ, l_vq = one_step(bs)
        if guard.check(step, l_occ + l_vq):
            step += 1
            continue
        with torch.no_grad():
            usage += torch.bincount(ids.flatten(), minlength=vae.cfg.num_codes).float()
            if step % 100 == 99:
                dead = (usage == 0).nonzero()[:, 0]
                if dead.numel() > 0:
                    zf = z.reshape(-1, z.shape[-1])
                    pick = zf[torch.randint(0, zf.shape[0], (dead.numel(),), device=dev)]
                    pick = pick + 0.01 * torch.randn_like(pick)
                    vq.codebook.weight[dead] = (pick - vq.cb_bias) / vq.cb_weight.clamp(min=1e-3)
                hist.append(int((usage > 0).sum()))
                usage.zero_()
        step += 1
        if time.time() - last > 15 or step == 1:
            last = time.time()
            with torch.no_grad():
                acc = ((logits.float() > 0) == (occ > 0.5)).float().mean()
                pr = (logits.float() > 0)
                gt = occ > 0.5
                iou = (pr & gt).sum() / (pr | gt).sum().clamp(min=1)
            log(f"vae step {step} lr {opt.param_groups[0]['lr']:.2e} occ {l_occ.item():.4f} vq {l_vq.item():.4f} "
                f"acc {acc.item():.4f} sampleIoU {iou.item():.3f} codes_used {hist[-1] if hist else -1}")
    log(f"vae done: {step} steps in {time.time() - t0:.1f}s")
    return step


@torch.no_grad()
def encode_all(vae, dat, dev, bs=512, amp=True):
    out = []
    for s in range(0, dat["surf"].shape[0], bs):
        with autocast(amp):
            h = vae.encoder(dat["surf"][s:s + bs].float())
        z = vae.bottleneck.block.encode_z(h.float())
        ids, _ = vae.bottleneck.block.quantize(z)
        out.append(ids)
    return torch.cat(out, 0)


def build_caption_tensors(tok, n_per_combo, seed, dev, p_unk=0.12):
    pools = CAP.all_training_captions(n_per_combo, seed)
    keys = sorted(pools)
    key_index = {k: i for i, k in enumerate(keys)}
    rng = random.Random(seed + 5)
    ids = torch.zeros(len(keys), n_per_combo, 77, dtype=torch.long)
    msk = torch.zeros(len(keys), n_per_combo, 77, dtype=torch.long)
    unk = torch.zeros(len(keys), n_per_combo, 77, dtype=torch.bool)
    known = set()
    for ki, k in enumerate(keys):
        for j, t in enumerate(pools[k]):
            a, m = tok(t)
            known.update(a)
            u = [False] * 77
            n = sum(m)
            if rng.random() < p_unk and n < 76:
                pos = rng.randint(1, n - 1)
                a = a[:pos] + [0] + a[pos:76]
                m = [1] * (n + 1) + [0] * (77 - n - 1)
                u = [False] * pos + [True] + [False] * (76 - pos)
            ids[ki, j] = torch.tensor(a)
            msk[ki, j] = torch.tensor(m)
            unk[ki, j] = torch.tensor(u)
    all_caps = set(t for v in pools.values() for t in v)
    return ids.to(dev), msk.to(dev), unk.to(dev), key_index, known, all_caps


def train_gpt(gpt, clip, code_norm, tokens, bbox, keyidx, cap, dev, seconds, bs, lr, amp, p_text_drop=0.1,
              p_bbox_drop=0.35, auto_batch=False, shape_weight=None):
    """shape_weight [S] (optional): relative sampling weight of each training shape (uniform when None)."""
    ids_pool, msk_pool, unk_pool = cap
    M_ = ids_pool.shape[1]
    params = list(gpt.named_parameters()) + [("clip." + n, p) for n, p in clip.named_parameters()]
    opt = make_opt(params, lr, 0.05, (0.9, 0.95), dev)
    K = gpt.cfg.shape_model_vocab_size
    S_ = tokens.shape[0]
    empty_ids = torch.full((77,), 49407, dtype=torch.long, device=dev)
    empty_ids[0] = 49406
    empty_msk = torch.zeros(77, dtype=torch.long, device=dev)
    empty_msk[:2] = 1

    def one_step(b):
        if shape_weight is None:
            idx = torch.randint(0, S_, (b,), device=dev)
        else:
            idx = torch.multinomial(shape_weight, b, replacement=True)
        j = torch.randint(0, M_, (b,), device=dev)
        ki = keyidx[idx]
        ids, msk, unk = ids_pool[ki, j], msk_pool[ki, j], unk_pool[ki, j]
        drop = torch.rand(b, device=dev) < p_text_drop
        ids = torch.where(drop[:, None], empty_ids[None], ids)
        msk = torch.where(drop[:, None], empty_msk[None], msk)
        unk = unk & ~drop[:, None]
        bdrop = drop | (torch.rand(b, device=dev) < p_bbox_drop)
        bb = torch.where(bdrop[:, None], torch.zeros_like(bbox[idx]), bbox[idx])
        tgt = tokens[idx]
        with autocast(amp):
            hid = clip(ids, msk, unk)
            cond = gpt.encode_cond(hid.float(), bb)
            code_emb = gpt.code_embeddings(code_norm)
            x = gpt.embed_tokens(tgt[:, :-1], code_emb)
            logits = gpt(x, cond, single_mode="reference")
        loss = F.cross_entropy(logits[..., :K].float().reshape(-1, K), tgt.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params_list(gpt, clip), 1.0)
        opt.step()
        return logits, tgt, loss

    t0 = time.time()
    if auto_batch:
        for g in opt.param_groups:
            g["lr"] = lr * 0.01
        bs = calibrate_batch(one_step, bs, dev, log_name="gpt")
        CHOSEN["gpt_batch"] = bs
    guard = DivergenceGuard([gpt, clip], opt, name="gpt")
    step, last = 0, t0
    ema = None
    while True:
        el = time.time() - t0
        if el > seconds:
            break
        for g in opt.param_groups:
            g["lr"] = lr_at(lr, step, 150, el / seconds) * guard.scale
        logits, tgt, loss = one_step(bs)
        if guard.check(step, loss):
            step += 1
            continue
        ema = loss.item() if ema is None else 0.98 * ema + 0.02 * loss.item() if step % 10 == 0 else ema
        step += 1
        if time.time() - last > 15 or step == 1:
            last = time.time()
            with torch.no_grad():
                acc = (logits[..., :K].argmax(-1) == tgt).float().mean()
            log(f"gpt step {step} lr {opt.param_groups[0]['lr']:.2e} loss {loss.item():.4f} ema {ema:.4f} "
                f"tok_acc {acc.item():.3f}")
    log(f"gpt done: {step} steps in {time.time() - t0:.1f}s")
    return step


def params_list(*mods):
    return [p for m in mods for p in m.parameters() if p.requires_grad]


def split_tar(src_dir, out_dir, name="model.tar", part=15 * 1024 * 1024):
    tpath = os.path.join(out_dir, name)
    with tarfile.open(tpath, "w") as tf:
        for root, _, files in os.walk(src_dir):
            for fn in sorted(files):
                if fn in ("vocab.json", "merges.txt"):
                    continue  # shipped from shared/data/clip-tokenizer; copied again on unpack
                p = os.path.join(root, fn)
                tf.add(p, arcname=os.path.relpath(p, src_dir))
    data = open(tpath, "rb").read()
    os.remove(tpath)
    n = 0
    for s in range(0, len(data), part):
        with open(os.path.join(out_dir, f"{name}.part{n}"), "wb") as f:
            f.write(data[s:s + part])
        n += 1
    return n


def preflight(a, dev, amp, tok, gcfg, scfg, tcfg):
    """Exercise every stage on the real device with the real model sizes for a few seconds (catches device-only
    errors before the long budgets are spent)."""
    t = time.time()
    fams = [S.FAMILY_INDEX["chair"], S.FAMILY_INDEX["cat"]]
    dat = D.generate_dataset(4, 1, dev, n_surface=512, n_occ=2048, families=fams, n_cand=1024, chunk=4, climb_steps=2,
                             thin_share=a.thin_share)
    vae = M.OneDAutoEncoder(scfg).to(dev).train()
    train_vae(vae, dat, dev, 2.0, 4, 512, 1e-4, amp)
    vae.eval()
    tokens = encode_all(vae, dat, dev, amp=amp)
    ids_pool, msk_pool, unk_pool, key_index, known_ids, caps = build_caption_tensors(tok, 4, 0, dev)
    keyidx = torch.tensor([key_index[(int(f), int(c))] for f, c in zip(dat["fam"].tolist(), dat["combo"].tolist())],
                          device=dev)
    g = M.GPTConfig(**vars(gcfg))
    g.shape_model_vocab_size, g.shape_model_embed_dim, g.text_model_embed_dim = scfg.num_codes, scfg.embed_dim, tcfg.hidden_size
    gpt, clip = M.DualStreamRoformer(g).to(dev).train(), M.ClipTextModel(tcfg).to(dev).train()
    train_gpt(gpt, clip, vae.bottleneck.block.get_codebook().detach(), tokens, dat["bbox"].float(), keyidx,
              (ids_pool, msk_pool, unk_pool), dev, 2.0, 4, 1e-4, amp,
              shape_weight=1.0 + (dat["fam"] == fams[0]).float())  # the weighted-sampling path too
    gpt.eval(); clip.eval()
    pdir = os.path.join(a.out, "preflight_model")
    E.export_model(pdir, gpt, vae, clip, known_ids, a.tokenizer_dir)
    gpt2, vae2, clip2, _ = E.load_model_dir(pdir, dev)
    refs = EV.reference_set(4242, 2, dev, res=16, families=fams, climb_steps=2)
    ekw = dict(refs_per_family=2, res=16, families=fams, bbox_prompts_per_family=1, log=log, climb_steps=2, refs=refs,
               min_attr_prompts=2, extra_plain=1)
    rep, _, _ = EV.run_eval(gpt2, vae2, clip2, tok, dev, ref_validity=True, **ekw)
    if a.compare_model:  # the comparison's code path too, on the real comparison model
        g0, v0, c0, cd0 = E.load_model_dir(a.compare_model, dev)
        EV.run_eval(g0, v0, c0, clip_bpe.ClipTokenizer(cd0), dev, **ekw)
    import shutil
    shutil.rmtree(pdir)
    log(f"preflight ok in {time.time() - t:.1f}s (family acc {rep['family_accuracy']})")


def main():
    global LOG
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tiny", action="store_true")
    ap.add_argument("--n-per-family", type=int, default=900)
    ap.add_argument("--vae-seconds", type=float, default=240)
    ap.add_argument("--gpt-seconds", type=float, default=170)
    ap.add_argument("--vae-batch", type=int, default=128)
    ap.add_argument("--vae-queries", type=int, default=4096)
    ap.add_argument("--vae-lr", type=float, default=6e-4)
    ap.add_argument("--gpt-batch", type=int, default=256)
    ap.add_argument("--gpt-lr", type=float, default=1e-3)
    ap.add_argument("--captions-per-combo", type=int, default=64)
    ap.add_argument("--init-vae", default=None, help="model dir whose shape_tokenizer to reuse (skips VAE training)")
    ap.add_argument("--init-gpt", default=None,
                    help="model dir whose text tower + GPT to continue training (needs --init-vae of the same model, "
                         "without --continue-vae, so the tokens are the ones it was trained on)")
    ap.add_argument("--gpt-lr-scale", type=float, default=1.0, help="GPT learning rate multiplier (e.g. 0.3 to fine-tune)")
    ap.add_argument("--continue-vae", action="store_true",
                    help="with --init-vae: keep training that VAE for --vae-seconds instead of freezing it")
    ap.add_argument("--eval-refs", type=int, default=EV.REFS_PER_FAMILY)
    ap.add_argument("--compare-model", default=None,
                    help="also evaluate this model dir against the same references and prompts (report['compare'])")
    ap.add_argument("--gpt-family-weights", default="",
                    help="e.g. 'capsule:2,cactus:2': GPT samples these families' shapes this many times as often")
    ap.add_argument("--thin-share", type=float, default=0.5,
                    help="share of the near-surface occupancy samples placed by thinness instead of area (data.py)")
    ap.add_argument("--no-eval", action="store_true")
    ap.add_argument("--tokenizer-dir", default=clip_bpe.DEFAULT_DIR)
    ap.add_argument("--deadline", type=float, default=None, help="seconds since start by which everything must end")
    ap.add_argument("--eval-reserve", type=float, default=80, help="seconds kept for export + eval before the deadline")
    ap.add_argument("--data-seconds", type=float, default=None, help="no new data round starts past this")
    ap.add_argument("--data-chunk", type=int, default=400, help="shapes per family per data round")
    ap.add_argument("--climb-steps", type=int, default=10)
    ap.add_argument("--eval-res", type=int, default=64)
    ap.add_argument("--eval-climb", type=int, default=10)
    ap.add_argument("--gpt-min", type=float, default=120, help="seconds of GPT training the VAE budget must leave")
    ap.add_argument("--auto-batch", action="store_true",
                    help="time 1x/2x/4x the given batch sizes at the start of each stage and keep the fastest")
    ap.add_argument("--preflight", action="store_true", help="run every stage for a few seconds on tiny data first")
    a = ap.parse_args()
    if a.init_gpt and (not a.init_vae or a.continue_vae
                       or os.path.realpath(a.init_gpt) != os.path.realpath(a.init_vae)):
        ap.error("--init-gpt needs --init-vae of the same model directory (its VAE unchanged: no --continue-vae)")
    os.makedirs(a.out, exist_ok=True)
    LOG = os.path.join(a.out, "train_log.txt")
    dev = a.device
    torch.manual_seed(a.seed)
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    amp = dev.startswith("cuda")
    gcfg, scfg, tcfg = M.GPTConfig(), M.ShapeConfig(), M.TextConfig()
    families = None
    n_surface, n_occ, n_cand = 2048, 16384, 8192
    if a.tiny:
        gcfg = M.GPTConfig(n_layer=2, n_single_layer=1, n_head=2, n_embd=32, shape_model_vocab_size=64,
                           text_model_embed_dim=32, shape_model_embed_dim=8)
        scfg = M.ShapeConfig(num_encoder_latents=8, embed_dim=8, width=32, num_heads=2, num_freqs=8,
                             num_encoder_layers=2, encoder_cross_attention_levels=[0], num_decoder_layers=1, num_codes=64)
        tcfg = M.TextConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                            projection_dim=32)
        families = [S.FAMILY_INDEX[n] for n in ("chair", "mug", "torus")]
        n_surface, n_occ, n_cand = 128, 512, 512
        a.n_per_family = min(a.n_per_family, 6)
        a.vae_batch, a.vae_queries, a.gpt_batch = 4, 256, 8
        a.captions_per_combo = min(a.captions_per_combo, 8)
        a.eval_refs = 2
    log(f"device {dev} torch {torch.__version__} config gpt={gcfg} shape={scfg} text={tcfg}")
    tok = clip_bpe.ClipTokenizer(a.tokenizer_dir)
    timings = {}
    if a.preflight:
        preflight(a, dev, amp, tok, gcfg, scfg, tcfg)

    # 1. data
    t = time.time()
    dat = D.generate_dataset(a.n_per_family, a.seed, dev, n_surface=n_surface, n_occ=n_occ, families=families,
                             n_cand=n_cand, chunk=a.data_chunk if not a.tiny else 3, log=log,
                             max_seconds=a.data_seconds, climb_steps=a.climb_steps, thin_share=a.thin_share)
    if dev.startswith("cuda"):
        torch.cuda.synchronize()
    timings["data_s"] = round(time.time() - t, 1)
    log(f"data: {dat['surf'].shape[0]} shapes, occ share {dat['occ'].float().mean().item():.3f}, {timings['data_s']}s")

    # 2. VAE
    t = time.time()
    reused = None  # (gpt, vae, clip, clip_dir) of --init-vae when its VAE is kept as it is (--init-gpt continues it)
    if a.init_vae and not a.continue_vae:
        reused = E.load_model_dir(a.init_vae, dev)
        vae = reused[1]
        scfg = vae.cfg
        vae.eval()
        timings["vae_steps"] = 0
    else:
        if a.init_vae:  # fine-tune a shipped VAE (warm restart of the schedule): VAE training time adds up over runs
            _, vae, _, _ = E.load_model_dir(a.init_vae, dev)
            scfg = vae.cfg
            log(f"vae: continuing from {a.init_vae}")
        else:
            vae = M.OneDAutoEncoder(scfg).to(dev)
        log(f"vae params {M.count_params(vae)}")
        vae.train()
        vae_seconds = a.vae_seconds
        if a.deadline:
            vae_seconds = max(10.0, min(vae_seconds, a.deadline - (time.time() - T_START) - a.eval_reserve - a.gpt_min))
            log(f"vae budget {vae_seconds:.0f}s")
        timings["vae_steps"] = train_vae(vae, dat, dev, vae_seconds, a.vae_batch, a.vae_queries, a.vae_lr, amp,
                                         auto_batch=a.auto_batch)
        vae.eval()
        if not a.tiny:
            E.save_safetensors(os.path.join(a.out, "vae_stage.safetensors"), E.vae_state(vae, torch.float16),
                               {"occupancy_decoder.embedder.weight": "embedder.weight",
                                "encoder.embedder.weight": "embedder.weight"})
    timings["vae_s"] = round(time.time() - t, 1)

    # 3. tokens for every training shape
    tokens = encode_all(vae, dat, dev, amp=amp)
    used = torch.unique(tokens).numel()
    log(f"tokens: {tuple(tokens.shape)}, {used} distinct codes used")
    code_norm = vae.bottleneck.block.get_codebook().detach().float()

    # 4. captions
    t = time.time()
    ids_pool, msk_pool, unk_pool, key_index, known_ids, train_caps = build_caption_tensors(
        tok, a.captions_per_combo, a.seed, dev)
    keyidx = torch.tensor([key_index[(int(f), int(c))] for f, c in zip(dat["fam"].tolist(), dat["combo"].tolist())],
                          device=dev)
    timings["captions_s"] = round(time.time() - t, 1)
    log(f"captions: {len(train_caps)} distinct, {len(known_ids)} known token ids, {timings['captions_s']}s")

    # 5. GPT + text tower
    t = time.time()
    gcfg.shape_model_vocab_size = scfg.num_codes
    gcfg.shape_model_embed_dim = scfg.embed_dim
    gcfg.text_model_embed_dim = tcfg.hidden_size
    if a.init_gpt:  # continue a shipped text tower + GPT on the same (unchanged) VAE's tokens
        gpt, _, clip, _ = reused
        with torch.no_grad():  # export wrote the shared "unknown" vector into every untrained row: take it back
            emb = clip.text_model.embeddings.token_embedding.weight
            unknown = torch.ones(emb.shape[0], dtype=torch.bool)
            unknown[torch.tensor(sorted(known_ids), dtype=torch.long)] = False
            clip.unk_embedding.copy_(emb[int(unknown.nonzero()[0])])
        log(f"gpt: continuing from {a.init_gpt}")
    else:
        gpt = M.DualStreamRoformer(gcfg).to(dev)
        clip = M.ClipTextModel(tcfg).to(dev)
        for m in (gpt, clip):
            for n, p in m.named_parameters():
                if p.dim() >= 2:
                    torch.nn.init.normal_(p, std=0.02)
    log(f"gpt params {M.count_params(gpt)}, clip params {M.count_params(clip)}")
    shape_weight = None
    if a.gpt_family_weights:
        fw = torch.ones(len(S.FAMILIES), device=dev)
        for item in a.gpt_family_weights.split(","):
            name, w = item.split(":")
            fw[S.FAMILY_INDEX[name.strip()]] = float(w)
        shape_weight = fw[dat["fam"]]
        log(f"gpt family weights {a.gpt_family_weights}")
    gpt.train()
    clip.train()
    gpt_seconds = a.gpt_seconds
    if a.deadline:
        gpt_seconds = max(10.0, min(gpt_seconds, a.deadline - (time.time() - T_START) - a.eval_reserve))
        log(f"gpt budget {gpt_seconds:.0f}s")
    timings["gpt_steps"] = train_gpt(gpt, clip, code_norm, tokens, dat["bbox"].float(), keyidx,
                                     (ids_pool, msk_pool, unk_pool), dev, gpt_seconds, a.gpt_batch,
                                     a.gpt_lr * a.gpt_lr_scale, amp,
                                     auto_batch=a.auto_batch, shape_weight=shape_weight)
    gpt.eval()
    clip.eval()
    timings["gpt_s"] = round(time.time() - t, 1)
    del dat

    # 6. export (fp16 storage) and reload exactly as the engine will
    mdir = os.path.join(a.out, "model")
    E.export_model(mdir, gpt, vae, clip, known_ids, a.tokenizer_dir)
    words = CAP.known_words(train_caps)
    with open(os.path.join(a.out, "known_words.txt"), "w") as f:
        f.write("\n".join(words) + "\n")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    gpt2, vae2, clip2, clip_dir = E.load_model_dir(mdir, dev)
    log(f"exported to {mdir}; {len(words)} known words")
    ref_prompts = ["a chair", "a tall pine tree with three tiers", "a red car with six wheels"]
    toks, marg = I.generate(gpt2, clip2, vae2, tok, ref_prompts, None, guidance=3.0, mode="reference", device=dev,
                            return_margins=True)
    with open(os.path.join(a.out, "reference_tokens_device.json"), "w") as f:
        json.dump([dict(prompt=p, tokens=toks[i].tolist(), min_margin=float(marg[i].min()))
                   for i, p in enumerate(ref_prompts)], f)

    if not a.tiny:
        nparts = split_tar(mdir, a.out)
        log(f"packed model into {nparts} parts")
    # 7. evaluation
    rep = {}
    if not a.no_eval:
        t = time.time()
        eres = a.eval_res if not a.tiny else 16
        full = {} if a.tiny else dict(EV.FULL_EVAL)
        refs = EV.reference_set(4242, a.eval_refs, dev, res=eres, families=families, climb_steps=a.eval_climb)
        rep, _, _ = EV.run_eval(gpt2, vae2, clip2, tok, dev, refs_per_family=a.eval_refs, res=eres, families=families,
                                train_captions=train_caps, log=log, climb_steps=a.eval_climb, refs=refs,
                                ref_validity=True, **full)
        if a.compare_model:
            try:
                g0, v0, c0, cd0 = E.load_model_dir(a.compare_model, dev)
                tok0 = clip_bpe.ClipTokenizer(cd0)
                rep0, _, _ = EV.run_eval(g0, v0, c0, tok0, dev, refs_per_family=a.eval_refs, res=eres,
                                         families=families, train_captions=train_caps, log=log,
                                         climb_steps=a.eval_climb, refs=refs, **full)
                rep["compare"] = dict(model=a.compare_model, report=rep0)
                log("compare: " + json.dumps({k: v for k, v in rep0.items() if not isinstance(v, (dict, list))}))
            except Exception as ex:  # the comparison must never cost the run's own results
                log(f"compare failed: {ex!r}")
        timings["eval_s"] = round(time.time() - t, 1)
        log("eval: " + json.dumps({k: v for k, v in rep.items() if not isinstance(v, (dict, list))}))
        log("eval per family: " + json.dumps(rep["family_accuracy_per_family"]))
        log("vae per family: " + json.dumps(rep["vae_recon_iou_per_family"]))
    timings["total_s"] = round(time.time() - T_START, 1)
    rep["timings"] = timings
    rep["config"] = dict(gpt=vars(gcfg), shape=vars(scfg), text=vars(tcfg), n_per_family=a.n_per_family,
                         vae_batch=CHOSEN.get("vae_batch", a.vae_batch), vae_queries=a.vae_queries,
                         gpt_batch=CHOSEN.get("gpt_batch", a.gpt_batch), vae_lr=a.vae_lr,
                         init_vae=a.init_vae, continue_vae=bool(a.continue_vae), part_dilation=S.DILATION,
                         thin_share=a.thin_share, thin_ref=D.THIN_REF, thin_boost=D.THIN_BOOST,
                         gpt_family_weights=a.gpt_family_weights, eval_refs=a.eval_refs, init_gpt=a.init_gpt,
                         gpt_lr=a.gpt_lr * a.gpt_lr_scale)
    with open(os.path.join(a.out, "report.json"), "w") as f:
        json.dump(rep, f, indent=1)
    if not a.tiny:
        import shutil
        shutil.rmtree(mdir)
    log(f"all done, timings {timings}")


if __name__ == "__main__":
    main()
