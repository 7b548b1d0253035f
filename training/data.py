"""Dataset generation on CPU or GPU: sample shapes, find their bounding boxes, sample surface points with normals,
normalise to the reference frame (centre of the bbox at the origin, longest side 1.925) and label occupancy samples.
"""
import math
import torch

import shapes as S

HALF = 0.9625          # normalised half extent of the longest side (1.925 / 2)
BOUND = 1.05           # reference grid bounds


def _grid_unit(G, device):
    g = (torch.arange(G, device=device, dtype=torch.float32) + 0.5) / G
    X, Y, Z = torch.meshgrid(g, g, g, indexing="ij")
    return torch.stack([X, Y, Z], -1).reshape(-1, 3)  # [G^3, 3] in (0,1)


def _sdf_and_grad(fi, prm, pts):
    with torch.enable_grad():
        p = pts.detach().requires_grad_(True)
        d = S.eval_sdf(fi, prm, p)
        (g,) = torch.autograd.grad(d.sum(), p)
    return d.detach(), g.detach()


@torch.no_grad()
def _climb_extents(fi, prm, cand, valid, blo, bhi, steps, k=8, step=0.02):
    """Sharp tips (cone apexes, spikes) have no area and are rarely sampled: from the k most extreme samples along
    each of the 6 axis directions, repeatedly step outwards and project back onto the surface; the farthest valid
    point gives the extent. All 6 directions are batched in one tensor (few kernel launches on the GPU)."""
    B = cand.shape[0]
    dirs = torch.tensor([[1., 0, 0], [-1., 0, 0], [0, 1., 0], [0, -1., 0], [0, 0, 1.], [0, 0, -1.]], device=cand.device)
    pts = []
    for j in range(6):
        key = torch.where(valid, cand @ dirs[j], torch.full_like(cand[..., 0], -1e9))
        top = key.topk(k, dim=1).indices
        pts.append(torch.gather(cand, 1, top[..., None].expand(-1, -1, 3)))
    p = torch.cat(pts, 1)                                  # [B, 6k, 3]
    dvec = dirs.repeat_interleave(k, 0)[None]              # [1, 6k, 3]
    best = torch.full((B, 6 * k), -1e9, device=cand.device)
    for _ in range(steps):
        p = p + dvec * step
        for _ in range(2):
            d, g = _sdf_and_grad(fi, prm, p)
            p = p - d[..., None] * g / g.norm(dim=-1, keepdim=True).clamp(min=1e-6)
        d, _ = _sdf_and_grad(fi, prm, p)
        best = torch.maximum(best, torch.where(d.abs() < 2e-3, (p * dvec).sum(-1), torch.full_like(d, -1e9)))
    ext = best.view(B, 6, k).amax(-1)                      # [B, 6] extent along each direction
    bhi = torch.maximum(bhi, ext[:, 0::2])
    blo = torch.minimum(blo, -ext[:, 1::2])
    return blo, bhi


def surface_and_bbox(fi, prm, device, n_cand=8192, G1=40, G2=64, gen=None, climb_steps=10):
    """Returns raw-frame surface points [B,K,3], normals [B,K,3], valid mask [B,K], bbox lo/hi [B,3]."""
    B = next(iter(prm.values())).shape[0]
    # stage 1: coarse bbox on a big fixed grid
    u1 = _grid_unit(G1, device)
    ext = 2.6
    pts1 = (u1 * 2 * ext - ext)[None].expand(B, -1, -1)
    d1 = S.eval_sdf(fi, prm, pts1)
    h1 = 2 * ext / G1
    near = d1 < h1 * 0.87
    big = torch.full_like(pts1, 1e9)
    lo = torch.where(near[..., None], pts1, big).amin(1) - h1
    hi = torch.where(near[..., None], pts1, -big).amax(1) + h1
    # stage 2: per-shape grid over the coarse bbox
    u2 = _grid_unit(G2, device)
    span = (hi - lo)
    pts2 = lo[:, None, :] + u2[None] * span[:, None, :]
    d2 = S.eval_sdf(fi, prm, pts2)
    cell = span / G2
    hd = 0.5 * cell.norm(dim=-1, keepdim=True)
    w = (d2.abs() < hd).float() + 1e-12
    idx = torch.multinomial(w, n_cand, replacement=True, generator=gen)
    cand = torch.gather(pts2, 1, idx[..., None].expand(-1, -1, 3))
    jit = torch.rand(cand.shape, device=device, generator=gen) - 0.5
    cand = cand + jit * cell[:, None, :]
    for _ in range(4):
        d, g = _sdf_and_grad(fi, prm, cand)
        gn = g / g.norm(dim=-1, keepdim=True).clamp(min=1e-6)
        cand = cand - d[..., None] * gn
    d, g = _sdf_and_grad(fi, prm, cand)
    nrm = g / g.norm(dim=-1, keepdim=True).clamp(min=1e-6)
    valid = d.abs() < 2e-3
    bigc = torch.full_like(cand, 1e9)
    blo = torch.where(valid[..., None], cand, bigc).amin(1)
    bhi = torch.where(valid[..., None], cand, -bigc).amax(1)
    if climb_steps > 0:
        blo, bhi = _climb_extents(fi, prm, cand, valid, blo, bhi, climb_steps)
    return cand, nrm, valid, blo, bhi


THIN_REF = 0.05     # normalised inscribed radius at and below which a surface point gets the full thin-part weight
THIN_BOOST = 8.0    # weight ratio between a part of radius <= THIN_REF and one of radius >= THIN_BOOST * THIN_REF
THIN_DEPTHS = (0.01, 0.02, 0.035, 0.05, 0.07, 0.1, 0.14, 0.2, 0.28, 0.4)


@torch.no_grad()
def local_thickness(fi, prm, cand, nrm):
    """Inscribed radius (raw units) under each surface point: the deepest SDF value met walking inwards along the
    normal (a leg of radius r gives ~r, a thick body up to the largest probe depth). [B,K,3] x2 -> [B,K]."""
    best = torch.zeros(cand.shape[:2], device=cand.device)
    for t in THIN_DEPTHS:
        d = S.eval_sdf(fi, prm, cand - nrm * t)
        best = torch.maximum(best, -d)
    return best


@torch.no_grad()
def build_batch(fi, prm, device, n_surface=2048, n_occ=16384, gen=None, n_cand=8192, G2=64, climb_steps=10,
                thin_share=0.0):
    """Everything the VQ-VAE needs for one batch of shapes of family fi (prm on device).

    Returns dict: surf [B,n_surface,6] (normalised xyz + normal), occ_pts [B,n_occ,3], occ [B,n_occ] bool,
    center [B,3], scale [B], bbox [B,3] (normalised extents), ok [B] (enough valid surface points).
    """
    cand, nrm, valid, blo, bhi = surface_and_bbox(fi, prm, device, n_cand=n_cand, gen=gen, G2=G2, climb_steps=climb_steps)
    center = 0.5 * (blo + bhi)
    extent = (bhi - blo)
    scale = 2 * HALF / extent.amax(-1)
    ok = valid.float().sum(1) > n_cand * 0.25
    B = cand.shape[0]
    # surface subset for the encoder
    sel = torch.multinomial(valid.float() + 1e-9, n_surface, replacement=True, generator=gen)
    sp = torch.gather(cand, 1, sel[..., None].expand(-1, -1, 3))
    sn = torch.gather(nrm, 1, sel[..., None].expand(-1, -1, 3))
    spn = (sp - center[:, None]) * scale[:, None, None]
    surf = torch.cat([spn, sn], -1)
    # occupancy samples in the normalised frame
    n_u = n_occ // 5
    n_b = n_occ // 5
    n_s = n_occ - n_u - n_b
    pu = (torch.rand((B, n_u, 3), device=device, generator=gen) * 2 - 1) * BOUND
    ext_n = extent * scale[:, None] / 2 + 0.06
    pb = (torch.rand((B, n_b, 3), device=device, generator=gen) * 2 - 1) * ext_n[:, None, :]
    # near-surface samples: half spread by surface area, half by thinness (surface points of thin parts, where the
    # 64^3 IoU is decided by a cell or two, get up to THIN_BOOST x the density of thick parts' surfaces)
    n_thin = int(n_s * thin_share)
    sel_a = torch.multinomial(valid.float() + 1e-9, n_s - n_thin, replacement=True, generator=gen)
    if n_thin > 0:
        r = local_thickness(fi, prm, cand, nrm) * scale[:, None]            # inscribed radius, normalised units
        w_thin = (THIN_REF / r.clamp(min=THIN_REF, max=THIN_REF * THIN_BOOST)) * valid.float()
        sel_t = torch.multinomial(w_thin + 1e-9, n_thin, replacement=True, generator=gen)
        sel2 = torch.cat([sel_a, sel_t], 1)
    else:
        sel2 = sel_a
    base = (torch.gather(cand, 1, sel2[..., None].expand(-1, -1, 3)) - center[:, None]) * scale[:, None, None]
    sig_choice = torch.randint(0, 3, (B, n_s, 1), device=device, generator=gen)
    sig = torch.tensor([0.006, 0.018, 0.05], device=device)[sig_choice]
    ps = base + torch.randn((B, n_s, 3), device=device, generator=gen) * sig
    pts = torch.cat([pu, pb, ps], 1).clamp(-BOUND, BOUND)
    occ = S.eval_sdf_normalized(fi, prm, center, scale, pts) < 0
    return dict(surf=surf, occ_pts=pts, occ=occ, center=center, scale=scale, bbox=extent * scale[:, None], ok=ok)


@torch.no_grad()
def occupancy_grid(fi, prm, center, scale, res=64, device="cpu", chunk=16):
    """Occupancy of normalised shapes on a res^3 grid over [-1.05,1.05]^3 (ij indexing). Returns bool [B,res^3]."""
    g = torch.linspace(-BOUND, BOUND, res, device=device)
    X, Y, Z = torch.meshgrid(g, g, g, indexing="ij")
    pts = torch.stack([X, Y, Z], -1).reshape(1, -1, 3)
    B = center.shape[0]
    out = []
    for s in range(0, B, chunk):
        e = min(B, s + chunk)
        sub = S.slice_params(prm, slice(s, e))
        out.append(S.eval_sdf_normalized(fi, sub, center[s:e], scale[s:e], pts.expand(e - s, -1, -1)) < 0)
    return torch.cat(out, 0)


def generate_dataset(n_per_family, seed, device, n_surface=2048, n_occ=16384, chunk=200, families=None, log=None,
                     n_cand=8192, store_dtype=torch.float16, max_seconds=None, G2=64, climb_steps=10, thin_share=0.0):
    """Generate the families in rounds of `chunk` shapes per family (every round covers every family, so the data
    stays balanced); with max_seconds, no new round starts once the next one would end past the cap.
    Returns dict of concatenated tensors on `device` plus per-shape family / attribute-combination ids."""
    import time
    fams = list(range(len(S.FAMILIES))) if families is None else list(families)
    out = {k: [] for k in ("surf", "occ_pts", "occ", "bbox", "fam", "combo", "center", "scale")}
    gen = torch.Generator(device=device).manual_seed(seed + 17)
    sampled = {}
    for fi in fams:
        prm, av = S.sample_family(fi, n_per_family, seed)
        fam = S.FAMILIES[fi]
        combos = torch.zeros(n_per_family, dtype=torch.long)
        for j, a in enumerate(fam.attrs):
            combos = combos * len(a.values) + av[:, j]
        sampled[fi] = (S.params_to(prm, device), combos)
    t0 = time.time()
    rounds = 0
    for s in range(0, n_per_family, chunk):
        tr = time.time()
        e = min(n_per_family, s + chunk)
        for fi in fams:
            prm_d, combos = sampled[fi]
            b = build_batch(fi, S.slice_params(prm_d, slice(s, e)), device, n_surface, n_occ, gen=gen, n_cand=n_cand,
                            G2=G2, climb_steps=climb_steps, thin_share=thin_share)
            keep = b["ok"]
            out["surf"].append(b["surf"][keep].to(store_dtype))
            out["occ_pts"].append(b["occ_pts"][keep].to(store_dtype))
            out["occ"].append(b["occ"][keep])
            out["bbox"].append(b["bbox"][keep].float())
            out["center"].append(b["center"][keep])
            out["scale"].append(b["scale"][keep])
            nk = int(keep.sum())
            out["fam"].append(torch.full((nk,), fi, dtype=torch.long, device=device))
            out["combo"].append(combos[s:e].to(device)[keep])
        if str(device).startswith("cuda"):
            torch.cuda.synchronize()
        rounds += 1
        now = time.time()
        if log:
            log(f"  data round {rounds}: shapes {s}..{e} of every family, {now - tr:.1f}s")
        if max_seconds is not None and (now - t0) + (now - tr) > max_seconds:
            break
    return {k: torch.cat(v, 0) for k, v in out.items()}


@torch.no_grad()
def occupancy_grid_adaptive(fi, prm, center, scale, res=129, step=4, device="cpu", chunk=262144):
    """Same result as occupancy_grid (up to SDF-bound assumptions) but evaluates the SDF densely only near the
    surface: samples every `step`-th grid point first and copies its sign to fine points that are provably farther
    from the surface than their distance to that sample (with a 1.5x safety factor). Returns bool [B, res^3]."""
    g = torch.linspace(-BOUND, BOUND, res, device=device)
    h = 2 * BOUND / (res - 1)
    ci = torch.arange(0, res, step, device=device)
    if ci[-1] != res - 1:
        ci = torch.cat([ci, torch.tensor([res - 1], device=device)])
    gc = g[ci]
    Xc, Yc, Zc = torch.meshgrid(gc, gc, gc, indexing="ij")
    pc = torch.stack([Xc, Yc, Zc], -1).reshape(1, -1, 3)
    # nearest coarse index for every fine index along one axis
    fine = torch.arange(res, device=device)
    near = torch.bucketize(fine.float(), ((ci[1:] + ci[:-1]).float() / 2))
    dmax = (fine - ci[near]).abs().max().item() * h * math.sqrt(3)
    X, Y, Z = torch.meshgrid(g, g, g, indexing="ij")
    pf = torch.stack([X, Y, Z], -1).reshape(-1, 3)
    nidx = (near[:, None, None] * len(ci) + near[None, :, None]) * len(ci) + near[None, None, :]
    nidx = nidx.reshape(-1)
    out = []
    B = center.shape[0]
    for b in range(B):
        sub = S.slice_params(prm, slice(b, b + 1))
        dc = S.eval_sdf_normalized(fi, sub, center[b:b + 1], scale[b:b + 1], pc)[0]
        dn = dc[nidx]
        occ = dn < 0
        unsure = (dn.abs() <= 1.5 * dmax + 0.02).nonzero()[:, 0]
        for s in range(0, unsure.numel(), chunk):
            ids = unsure[s:s + chunk]
            d = S.eval_sdf_normalized(fi, sub, center[b:b + 1], scale[b:b + 1], pf[ids][None])[0]
            occ[ids] = d < 0
        out.append(occ)
    return torch.stack(out, 0)
