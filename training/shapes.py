"""Procedural shape library: 46 object families built from SDF primitives and CSG, with captions.

Every family has discrete attributes that change the geometry (all combinations are sampled uniformly), continuous
random proportions and part counts, at least five nouns (synonyms users type) and caption phrases for each attribute
value. Shapes are deterministic from (seed, family, index). Evaluation is batched in torch and runs on CPU or GPU.

Frame: Y up. Raw shapes live roughly in [-1.1, 1.1]^3; `normalize_shapes` (in data.py) recentres them on their
bounding-box centre and scales the longest side to 1.925 (the reference's +-0.9625 normalisation). Thin parts are at
least 0.045 raw units thick before `sdf.DILATION`, which grows every solid outwards by 0.02 (cavities cut with sub()
keep their size), so free-standing thin parts are >= 0.085 thick: >= 2.5 cells at the default rb 6 (cell 2.1/64 = 0.033) and >= 5 at rb 7. Thinner parts
broke up in rb-6 meshes, and a half-cell reconstruction shift alone cost thin families half their 64^3 IoU.
"""
import math
import torch

from sdf import (box, round_box, sphere, ellipsoid, cyl_y, cyl_x, cyl_z, capsule, capped_cone_y, torus_y, torus_z,
                 torus_x, pyramid_sq, pyramid_tri, prism_gable, union, inter, sub, smin, masked, rot_y, rot_z,
                 polar_repeat, repeat_limited, length2, DILATION)

PI = math.pi


class V:
    """One attribute value: adjectives (before the noun) and phrases (after the noun)."""

    def __init__(self, label, adjs=(), phrases=()):
        self.label, self.adjs, self.phrases = label, list(adjs), list(phrases)


class A:
    def __init__(self, key, *values):
        self.key, self.values = key, list(values)


class Rand:
    """Per-family parameter sampler for n shapes from a torch.Generator (CPU, deterministic)."""

    def __init__(self, gen, n):
        self.g, self.n = gen, n

    def u(self, lo, hi, k=None):
        shape = (self.n,) if k is None else (self.n, k)
        return lo + (hi - lo) * torch.rand(shape, generator=self.g)

    def i(self, lo, hi):  # integer in [lo, hi]
        return torch.randint(lo, hi + 1, (self.n,), generator=self.g).float()

    def b(self, p=0.5):
        return (torch.rand((self.n,), generator=self.g) < p).float()


# Azimuth of a stool's legs, a cactus's arms and a rocket's fins: a canonical pose (4 legs on the diagonals like a
# chair's, 3 legs with one at the back; arms left/right in the front view; fins on the axes) +- this jitter (rad).
# They used to be uniform over 360 deg: no caption controls it, and the VAE could not encode it (8 stools at 64^3:
# leg-region recall 0.10-0.60, tall stools' reconstructions broken into pieces, largest component 0.64-0.69), which
# made these three families the worst in VAE IoU (stool 0.50) and family accuracy (arms/fins lost -> capsule-like).
AZ_JITTER = 0.15


def W(cond, a, b):
    """where(cond, a, b) over per-shape tensors."""
    return torch.where(cond.bool(), a, b)


class Family:
    name = ""
    nouns = []          # list of (noun, {attr_key: value_label}) -- empty dict = any attributes
    attrs = []

    def combos(self):
        n = 1
        for a in self.attrs:
            n *= len(a.values)
        return n

    def combo_to_attr(self, combo):
        """combo index -> list of value indices (one per attribute)."""
        out = []
        for a in reversed(self.attrs):
            out.append(combo % len(a.values))
            combo //= len(a.values)
        return list(reversed(out))

    def attr_labels(self, vals):
        return {a.key: a.values[v].label for a, v in zip(self.attrs, vals)}

    def params(self, r, av):  # av: LongTensor [n, n_attrs]
        raise NotImplementedError

    def sdf(self, p, x, y, z):
        raise NotImplementedError


def C(t):
    return t[:, None]


# ----------------------------------------------------------------------------------------------------------------------
# furniture

class Chair(Family):
    name = "chair"
    nouns = [("chair", {}), ("seat", {}), ("dining chair", {}), ("side chair", {}), ("kitchen chair", {}),
             ("desk chair", {}), ("armchair", {"arms": "arms"})]
    attrs = [A("back", V("high", ["high-backed", "tall-backed"], ["with a high back", "with a tall backrest"]),
               V("low", ["low-backed"], ["with a low back", "with a short backrest"])),
             A("arms", V("arms", [], ["with arms", "with armrests"]),
               V("noarms", ["armless"], ["without arms", "with no armrests"]))]

    def params(self, r, av):
        hw, hd, t = r.u(0.32, 0.48), r.u(0.3, 0.45), r.u(0.05, 0.09)
        H = r.u(0.7, 0.95)
        lt = r.u(0.028, 0.045)
        bh = W(av[:, 0] == 0, r.u(0.9, 1.2), r.u(0.3, 0.45))
        return dict(hw=hw, hd=hd, t=t, H=H, lt=lt, bh=bh, bt=r.u(0.045, 0.07), arms=(av[:, 1] == 0).float(),
                    slats=r.b(0.4), ah=r.u(0.22, 0.32))

    def sdf(self, p, x, y, z):
        hw, hd, t, H, lt, bh, bt, ah = (C(p[k]) for k in ("hw", "hd", "t", "H", "lt", "bh", "bt", "ah"))
        seat = box(x, y, z, hw, t / 2, hd)
        legs = box(x.abs() - (hw - lt), y + t / 2 + H / 2, z.abs() - (hd - lt), lt, H / 2, lt)
        bz = z + hd - bt / 2
        back_panel = box(x, y - t / 2 - bh / 2, bz, hw, bh / 2, bt / 2)
        posts = box(x.abs() - (hw - lt), y - t / 2 - bh / 2, bz, lt, bh / 2, bt / 2)
        rail = box(x, y - t / 2 - bh + 0.06, bz, hw, 0.06, bt / 2)
        slat_back = union(posts, rail, box(x, y - t / 2 - bh / 2, bz, 0.05, bh / 2, bt / 2))
        back = torch.where(C(p["slats"]).bool(), slat_back, back_panel)
        arm_top = box(x.abs() - (hw - 0.035), y - t / 2 - ah, z, 0.04, 0.03, hd)
        arm_post = box(x.abs() - (hw - 0.035), y - t / 2 - ah / 2, z - hd + 0.04, 0.032, ah / 2, 0.032)
        arms = masked(union(arm_top, arm_post), C(p["arms"]).bool())
        return union(seat, legs, back, arms)


class Stool(Family):
    name = "stool"
    nouns = [("stool", {}), ("tabouret", {}), ("step stool", {}), ("milking stool", {}), ("seat stool", {}),
             ("bar stool", {"height": "tall"}), ("barstool", {"height": "tall"}), ("footstool", {"height": "short"})]
    attrs = [A("legs", V("three", ["three-legged"], ["with three legs"]), V("four", ["four-legged"], ["with four legs"])),
             A("height", V("tall", ["tall", "high"], []), V("short", ["short", "low"], [])),
             A("seat", V("round", ["round", "circular"], []), V("square", ["square"], []))]

    def params(self, r, av):
        return dict(n=W(av[:, 0] == 0, torch.full((r.n,), 3.0), torch.full((r.n,), 4.0)),
                    H=W(av[:, 1] == 0, r.u(1.2, 1.6), r.u(0.4, 0.6)), R=r.u(0.3, 0.42), t=r.u(0.06, 0.1),
                    round=(av[:, 2] == 0).float(), splay=r.u(1.0, 1.35), lr=r.u(0.036, 0.05),
                    ph=W(av[:, 0] == 0, torch.full((r.n,), PI / 2), torch.full((r.n,), PI / 4)) + r.u(-AZ_JITTER, AZ_JITTER),
                    ring=r.b(0.6) * (av[:, 1] == 0).float())

    def sdf(self, p, x, y, z):
        H, R, t, lr, splay = (C(p[k]) for k in ("H", "R", "t", "lr", "splay"))
        seat = torch.where(C(p["round"]).bool(), cyl_y(x, y, z, R, t / 2), box(x, y, z, R * 0.9, t / 2, R * 0.9))
        r1 = R * 0.7
        r2 = r1 * splay
        d = seat
        n = C(p["n"])
        for k in range(4):
            ang = C(p["ph"]) + 2 * PI * k / n
            a = (r1 * torch.cos(ang), -t / 2, r1 * torch.sin(ang))
            b = (r2 * torch.cos(ang), -t / 2 - H, r2 * torch.sin(ang))
            d = union(d, masked(capsule(x, y, z, a, b, lr), n > k))
        rr = r1 + (r2 - r1) * 0.6
        ring = masked(torus_y(x, y + t / 2 + 0.6 * H, z, rr, lr * 0.9), C(p["ring"]).bool())
        return union(d, ring)


class Table(Family):
    name = "table"
    nouns = [("table", {}), ("desk", {"top": "square"}), ("dining table", {"height": "tall"}), ("kitchen table", {}),
             ("side table", {}), ("coffee table", {"height": "low"})]
    attrs = [A("top", V("round", ["round", "circular"], ["with a round top"]),
               V("square", ["square", "rectangular"], ["with a square top"])),
             A("height", V("tall", ["tall", "high"], []), V("low", ["low", "short"], [])),
             A("base", V("legs", ["four-legged"], ["with four legs"]),
               V("pedestal", ["pedestal"], ["with one leg", "with a single leg"]))]

    def params(self, r, av):
        return dict(round=(av[:, 0] == 0).float(), R=r.u(0.7, 0.95), hx=r.u(0.75, 1.0), hz=r.u(0.45, 0.7),
                    t=r.u(0.05, 0.09), H=W(av[:, 1] == 0, r.u(0.75, 1.0), r.u(0.22, 0.38)),
                    ped=(av[:, 2] == 1).float(), lt=r.u(0.035, 0.06), pr=r.u(0.06, 0.1), fr=r.u(0.3, 0.45))

    def sdf(self, p, x, y, z):
        R, hx, hz, t, H, lt, pr, fr = (C(p[k]) for k in ("R", "hx", "hz", "t", "H", "lt", "pr", "fr"))
        rnd = C(p["round"]).bool()
        top = torch.where(rnd, cyl_y(x, y, z, R, t / 2), box(x, y, z, hx, t / 2, hz))
        lx = torch.where(rnd, R * 0.62, hx - lt - 0.03)
        lz = torch.where(rnd, R * 0.62, hz - lt - 0.03)
        legs = box(x.abs() - lx, y + t / 2 + H / 2, z.abs() - lz, lt, H / 2, lt)
        ped = union(cyl_y(x, y + t / 2 + H / 2, z, pr, H / 2), cyl_y(x, y + t / 2 + H - 0.025, z, fr, 0.025))
        base = torch.where(C(p["ped"]).bool(), ped, legs)
        return union(top, base)


class Bench(Family):
    name = "bench"
    nouns = [("bench", {}), ("park bench", {}), ("garden bench", {}), ("pew", {}), ("picnic bench", {}),
             ("wooden bench", {})]
    attrs = [A("back", V("back", [], ["with a backrest", "with a back"]),
               V("noback", ["backless"], ["without a backrest", "without a back"])),
             A("length", V("long", ["long"], []), V("short", ["short"], []))]

    def params(self, r, av):
        return dict(back=(av[:, 0] == 0).float(), L=W(av[:, 1] == 0, r.u(1.0, 1.25), r.u(0.5, 0.7)),
                    d=r.u(0.18, 0.28), t=r.u(0.05, 0.08), H=r.u(0.35, 0.5), slab=r.b(0.5), lt=r.u(0.03, 0.05),
                    bh=r.u(0.35, 0.5))

    def sdf(self, p, x, y, z):
        L, d, t, H, lt, bh = (C(p[k]) for k in ("L", "d", "t", "H", "lt", "bh"))
        seat = box(x, y, z, L, t / 2, d)
        slab_legs = box(x.abs() - (L - 0.12), y + t / 2 + H / 2, z, lt, H / 2, d * 0.9)
        post_legs = box(x.abs() - (L - 0.1), y + t / 2 + H / 2, z.abs() - (d - lt - 0.02), lt, H / 2, lt)
        legs = torch.where(C(p["slab"]).bool(), slab_legs, post_legs)
        bz = z + d - 0.03
        boards = union(box(x, y - t / 2 - bh * 0.55, bz, L, 0.06, 0.03), box(x, y - t / 2 - bh + 0.06, bz, L, 0.06, 0.03))
        posts = box(x.abs() - (L - 0.1), y - t / 2 - bh / 2, bz, 0.035, bh / 2, 0.03)
        back = masked(union(boards, posts), C(p["back"]).bool())
        return union(seat, legs, back)


class Bed(Family):
    name = "bed"
    nouns = [("bed", {}), ("double bed", {}), ("single bed", {}), ("cot", {}), ("daybed", {}), ("bedstead", {}),
             ("bunk bed", {"levels": "bunk"}), ("four-poster bed", {"head": "posts"})]
    attrs = [A("levels", V("single", [], ["with one level"]), V("bunk", ["bunk", "two-level"], ["with two levels"])),
             A("head", V("headboard", [], ["with a headboard"]), V("posts", ["four-poster"], ["with four posts"]))]

    def params(self, r, av):
        return dict(bunk=(av[:, 0] == 1).float(), posts=(av[:, 1] == 1).float(), L=r.u(0.9, 1.05), Wd=r.u(0.45, 0.75),
                    fh=r.u(0.12, 0.2), mh=r.u(0.08, 0.14), lh=r.u(0.12, 0.25), hb=r.u(0.35, 0.6), gap=r.u(0.55, 0.75),
                    ph=r.u(0.7, 1.0))

    def sdf(self, p, x, y, z):
        L, Wd, fh, mh, lh, hb, gap, ph = (C(p[k]) for k in ("L", "Wd", "fh", "mh", "lh", "hb", "gap", "ph"))
        bunk = C(p["bunk"]).bool()

        def level(yy):
            frame = box(x, yy, z, Wd, fh / 2, L)
            mat = round_box(x, yy - fh / 2 - mh / 2 + 0.02, z, Wd - 0.04, mh / 2 + 0.02, L - 0.04, 0.04)
            return union(frame, mat)

        d = level(y)
        d = union(d, masked(level(y - gap), bunk))
        top = torch.where(bunk, gap, torch.zeros_like(gap))
        legs = box(x.abs() - (Wd - 0.05), y + fh / 2 + lh / 2, z.abs() - (L - 0.05), 0.05, lh / 2, 0.05)
        head = box(x, y - top / 2 - hb / 2 + lh / 2 - fh / 2 - lh / 2, z + L - 0.03, Wd, (top + hb + lh + fh) / 2, 0.04)
        post_h = torch.maximum(top + ph, hb + 0.3)
        posts = box(x.abs() - (Wd - 0.05), y - post_h / 2 + fh / 2 + lh / 2 - lh, z.abs() - (L - 0.05), 0.05,
                    (post_h + lh + fh) / 2 - fh / 2, 0.05)
        bunk_posts = masked(box(x.abs() - (Wd - 0.05), y - gap / 2, z.abs() - (L - 0.05), 0.05, gap / 2 + fh / 2, 0.05),
                            bunk)
        headpart = torch.where(C(p["posts"]).bool(), posts, head)
        return union(d, legs, headpart, bunk_posts)


class Bookshelf(Family):
    name = "bookshelf"
    nouns = [("bookshelf", {}), ("bookcase", {}), ("shelf", {}), ("shelves", {}), ("shelving unit", {}),
             ("book shelf", {})]
    attrs = [A("shelves", V("2", ["two-shelf"], ["with two shelves"]), V("3", ["three-shelf"], ["with three shelves"]),
               V("4", ["four-shelf"], ["with four shelves"]), V("5", ["five-shelf"], ["with five shelves"])),
             A("shape", V("tall", ["tall", "narrow"], []), V("wide", ["wide", "low"], []))]

    def params(self, r, av):
        tall = av[:, 1] == 0
        return dict(k=av[:, 0].float() + 2, hx=W(tall, r.u(0.4, 0.6), r.u(0.9, 1.1)), hy=W(tall, r.u(0.95, 1.1), r.u(0.45, 0.6)),
                    hz=r.u(0.18, 0.3), t=r.u(0.035, 0.05), backp=r.b(0.7))

    def sdf(self, p, x, y, z):
        hx, hy, hz, t, k = (C(p[q]) for q in ("hx", "hy", "hz", "t", "k"))
        shell = sub(box(x, y, z, hx, hy, hz), box(x, y, z - t, hx - 2 * t, hy - 2 * t, hz))
        shell = torch.where(C(p["backp"]).bool(), shell, sub(box(x, y, z, hx, hy, hz), box(x, y, z, hx - 2 * t, hy - 2 * t, hz + 1)))
        spacing = (2 * hy - 2 * t) / k
        # internal shelves at y = -hy + t + spacing*j, j = 1..k-1
        yy = y + hy - t
        j = torch.clamp(torch.round(yy / spacing), torch.ones_like(k), k - 1)
        shelves = box(x, yy - spacing * j, z, hx - t, t, hz - 0.01)
        return union(shell, shelves)


class Door(Family):
    name = "door"
    nouns = [("door", {}), ("front door", {}), ("doorway", {}), ("entrance door", {}), ("entry door", {}),
             ("house door", {})]
    attrs = [A("top", V("arched", ["arched", "round-topped"], ["with an arched top"]),
               V("rect", ["rectangular", "square"], ["with a flat top"])),
             A("window", V("window", [], ["with a window", "with a glass window"]),
               V("nowindow", ["plain", "solid"], ["without a window"]))]

    def params(self, r, av):
        return dict(arch=(av[:, 0] == 0).float(), win=(av[:, 1] == 0).float(), hx=r.u(0.38, 0.55), hy=r.u(0.85, 1.0),
                    t=r.u(0.05, 0.08), frame=r.b(0.6), fw=r.u(0.06, 0.1), wr=r.u(0.1, 0.18), kn=r.u(0.035, 0.05))

    def sdf(self, p, x, y, z):
        hx, hy, t, fw, wr, kn = (C(p[k]) for k in ("hx", "hy", "t", "fw", "wr", "kn"))
        arch = C(p["arch"]).bool()
        rect = box(x, y, z, hx, hy, t)
        body_h = hy - hx
        arched = union(box(x, y + hx / 2, z, hx, hy - hx / 2, t), cyl_z(x, y - body_h + hx / 2, z, hx, t))
        slab = torch.where(arch, arched, rect)
        win = torch.where(arch, cyl_z(x, y - hy * 0.45, z, wr, t + 0.1),
                          box(x, y - hy * 0.45, z, wr, wr * 1.2, t + 0.1))
        slab = torch.where(C(p["win"]).bool(), sub(slab, win), slab)
        outer = torch.where(arch,
                            union(box(x, y + (hx + fw) / 2, z, hx + fw, hy - (hx + fw) / 2 + fw / 2, t + 0.03),
                                  cyl_z(x, y - body_h + hx / 2, z, hx + fw, t + 0.03)),
                            box(x, y + fw / 2, z, hx + fw, hy + fw / 2, t + 0.03))
        frame = masked(sub(outer, torch.where(arch, arched, rect) - 0.0), C(p["frame"]).bool())
        frame = masked(sub(frame, box(x, y + hy + fw, z, hx + fw + 1, fw, t + 1)), C(p["frame"]).bool())
        knob = sphere(x - hx * 0.7, y + 0.05, z.abs() - t - kn * 0.6, kn)
        return union(slab, frame, knob)


class Lamp(Family):
    name = "lamp"
    nouns = [("lamp", {}), ("light", {}), ("reading lamp", {}), ("lamp light", {}), ("floor lamp", {"height": "tall"}),
             ("standing lamp", {"height": "tall"}), ("table lamp", {"height": "short"}), ("desk lamp", {"height": "short"}),
             ("bedside lamp", {"height": "short"})]
    attrs = [A("height", V("tall", ["tall"], []), V("short", ["short", "small-base"], [])),
             A("shade", V("cone", ["conical"], ["with a conical shade", "with a cone shade"]),
               V("dome", [], ["with a round shade", "with a dome shade"]),
               V("drum", [], ["with a cylindrical shade", "with a drum shade"]))]

    def params(self, r, av):
        return dict(H=W(av[:, 0] == 0, r.u(1.5, 1.9), r.u(0.45, 0.65)), shade=av[:, 1].float(), br=r.u(0.18, 0.3),
                    pr=r.u(0.04, 0.055), sr=r.u(0.28, 0.4), sh=r.u(0.22, 0.35), w=r.u(0.05, 0.065))

    def sdf(self, p, x, y, z):
        H, br, pr, sr, sh, w = (C(p[k]) for k in ("H", "br", "pr", "sr", "sh", "w"))
        base = cyl_y(x, y, z, br, 0.04)
        pole = cyl_y(x, y - H / 2, z, pr, H / 2)
        ys = y - H
        cone = capped_cone_y(x, ys, z, sr, sr * 0.45, sh / 2)
        wk = w * torch.sqrt(1 + (sr * 0.55 / sh) ** 2)  # radial offset giving a wall of thickness w
        cone = sub(cone, capped_cone_y(x, ys, z, sr - wk, sr * 0.45 - wk, sh / 2 + 0.05))
        drum = sub(cyl_y(x, ys, z, sr * 0.8, sh / 2), cyl_y(x, ys, z, sr * 0.8 - w, sh / 2 + 0.05))
        dome = inter(sub(sphere(x, ys + sh / 2, z, sr), sphere(x, ys + sh / 2, z, sr - w)), -(ys + sh / 2))
        s = C(p["shade"])
        shade = torch.where(s == 0, cone, torch.where(s == 1, dome, drum))
        spokes = box(x, ys + sh * 0.1, z, sr * 0.8, 0.04, 0.04)
        return union(base, pole, shade, inter(spokes, torch.where(s == 1, sphere(x, ys + sh / 2, z, sr - 0.01), shade - 1)))


# ----------------------------------------------------------------------------------------------------------------------
# containers / household

class Mug(Family):
    name = "mug"
    nouns = [("mug", {}), ("cup", {}), ("coffee mug", {}), ("coffee cup", {}), ("tea cup", {}), ("teacup", {}),
             ("tumbler", {"handle": "nohandle"})]
    attrs = [A("handle", V("handle", [], ["with a handle"]), V("nohandle", ["handleless"], ["without a handle"])),
             A("height", V("tall", ["tall"], []), V("short", ["short", "squat"], []))]

    def params(self, r, av):
        return dict(handle=(av[:, 0] == 0).float(), R=r.u(0.35, 0.45), h=W(av[:, 1] == 0, r.u(0.6, 0.8), r.u(0.22, 0.32)),
                    w=r.u(0.05, 0.08), hr=r.u(0.035, 0.06))

    def sdf(self, p, x, y, z):
        R, h, w, hr = (C(p[k]) for k in ("R", "h", "w", "hr"))
        outer = cyl_y(x, y, z, R, h)
        hR = torch.minimum(h * 0.6, R * 0.7)
        handle = masked(torus_z(x - R - hR * 0.5, y, z, hR, hr), C(p["handle"]).bool())
        cavity = cyl_y(x, y - w - 0.2, z, R - w, h + 0.2)
        return sub(union(outer, handle), cavity)


class Bowl(Family):
    name = "bowl"
    nouns = [("bowl", {}), ("dish", {}), ("basin", {}), ("soup bowl", {}), ("salad bowl", {}), ("cereal bowl", {})]
    attrs = [A("depth", V("deep", ["deep"], []), V("shallow", ["shallow", "flat"], [])),
             A("foot", V("foot", ["footed"], ["with a foot", "with a stand"]), V("nofoot", [], ["without a foot"]))]

    def params(self, r, av):
        return dict(R=r.u(0.85, 1.0), w=r.u(0.05, 0.08), cut=W(av[:, 0] == 0, r.u(-0.1, 0.15), r.u(-0.6, -0.45)),
                    foot=(av[:, 1] == 0).float(), fh=r.u(0.1, 0.2), fr=r.u(0.3, 0.45))

    def sdf(self, p, x, y, z):
        R, w, cut, fh, fr = (C(p[k]) for k in ("R", "w", "cut", "fh", "fr"))
        shell = sphere(x, y, z, R - w / 2).abs() - w / 2
        bowl = inter(shell, y - cut * R)
        foot = masked(cyl_y(x, y + R - 0.02 + fh / 2, z, fr, fh / 2 + 0.02), C(p["foot"]).bool())
        foot = sub(foot, sphere(x, y, z, R - w))
        # bowls without a foot get a small flat base ring so they stand
        flat = masked(cyl_y(x, y + R - 0.03, z, fr * 0.6, 0.03), ~C(p["foot"]).bool())
        return union(bowl, foot, sub(flat, sphere(x, y, z, R - w)))


class Vase(Family):
    name = "vase"
    nouns = [("vase", {}), ("urn", {}), ("flower vase", {}), ("jar", {}), ("pot", {}), ("amphora", {})]
    attrs = [A("height", V("tall", ["tall", "slender"], []), V("short", ["short", "squat"], [])),
             A("neck", V("narrow", [], ["with a narrow neck", "with a thin neck"]),
               V("wide", [], ["with a wide mouth", "with a wide opening"]))]

    def params(self, r, av):
        tall = av[:, 0] == 0
        return dict(bh=W(tall, r.u(0.7, 0.9), r.u(0.35, 0.45)), br=W(tall, r.u(0.35, 0.45), r.u(0.5, 0.62)),
                    nr=W(av[:, 1] == 0, r.u(0.1, 0.16), r.u(0.3, 0.42)), nh=r.u(0.2, 0.35), lip=r.b(0.6))

    def sdf(self, p, x, y, z):
        bh, br, nr, nh = (C(p[k]) for k in ("bh", "br", "nr", "nh"))
        body = ellipsoid(x, y, z, br, bh, br)
        neck = cyl_y(x, y - bh - nh / 2 + 0.1, z, nr, nh / 2 + 0.1)
        d = smin(body, neck, 0.12)
        lip = masked(torus_y(x, y - bh - nh + 0.02, z, nr, 0.035), C(p["lip"]).bool())
        d = union(d, lip)
        d = sub(d, cyl_y(x, y - bh - nh, z, nr - 0.05, 0.25))
        return inter(d, -(y + bh * 0.92))


class Bottle(Family):
    name = "bottle"
    nouns = [("bottle", {}), ("flask", {}), ("wine bottle", {}), ("water bottle", {}), ("beer bottle", {}),
             ("soda bottle", {})]
    attrs = [A("neck", V("long", [], ["with a long neck"]), V("short", [], ["with a short neck"])),
             A("body", V("round", ["round", "cylindrical"], []), V("square", ["square", "boxy"], []))]

    def params(self, r, av):
        return dict(nh=W(av[:, 0] == 0, r.u(0.4, 0.55), r.u(0.08, 0.14)), sq=(av[:, 1] == 1).float(),
                    R=r.u(0.26, 0.36), bh=r.u(0.5, 0.7), nr=r.u(0.07, 0.11), sh=r.u(0.12, 0.22))

    def sdf(self, p, x, y, z):
        nh, R, bh, nr, sh = (C(p[k]) for k in ("nh", "R", "bh", "nr", "sh"))
        body = torch.where(C(p["sq"]).bool(), round_box(x, y, z, R * 0.9, bh, R * 0.9, 0.05), cyl_y(x, y, z, R, bh))
        shoulder = capped_cone_y(x, y - bh - sh / 2, z, R * 0.95, nr, sh / 2)
        neck = cyl_y(x, y - bh - sh - nh / 2 + 0.02, z, nr, nh / 2 + 0.02)
        cap = cyl_y(x, y - bh - sh - nh, z, nr + 0.025, 0.04)
        return union(body, shoulder, neck, cap)


class Mushroom(Family):
    name = "mushroom"
    nouns = [("mushroom", {}), ("toadstool", {}), ("fungus", {}), ("shroom", {}), ("champignon", {}), ("porcini", {})]
    attrs = [A("cap", V("round", ["round", "dome-capped"], ["with a round cap"]),
               V("flat", ["flat-capped"], ["with a flat cap"]),
               V("pointed", ["pointed", "conical"], ["with a pointed cap"])),
             A("stem", V("tall", ["tall"], ["with a tall stem", "with a long stem"]),
               V("short", ["short", "stubby"], ["with a short stem"]))]

    def params(self, r, av):
        return dict(cap=av[:, 0].float(), sh=W(av[:, 1] == 0, r.u(0.8, 1.1), r.u(0.25, 0.4)), sr=r.u(0.12, 0.2),
                    cr=r.u(0.5, 0.75), ch=r.u(0.3, 0.45))

    def sdf(self, p, x, y, z):
        sh, sr, cr, ch = (C(p[k]) for k in ("sh", "sr", "cr", "ch"))
        stem = capped_cone_y(x, y - sh / 2, z, sr * 1.2, sr * 0.85, sh / 2)
        dome = inter(ellipsoid(x, y - sh, z, cr, ch, cr), -(y - sh + 0.05))
        flat = inter(ellipsoid(x, y - sh, z, cr * 1.1, ch * 0.45, cr * 1.1), -(y - sh + 0.05))
        cone = capped_cone_y(x, y - sh - ch * 0.6, z, cr, 0.03, ch * 0.65)
        c = C(p["cap"])
        cap = torch.where(c == 0, dome, torch.where(c == 1, flat, cone))
        return union(stem, cap)


class RoundTree(Family):
    name = "round_tree"
    nouns = [("tree", {}), ("oak tree", {}), ("oak", {}), ("maple tree", {}), ("leafy tree", {}),
             ("deciduous tree", {}), ("round tree", {})]
    attrs = [A("crown", V("ball", ["round", "ball-shaped"], ["with a round crown"]),
               V("bushy", ["bushy", "lumpy"], ["with a bushy crown"])),
             A("trunk", V("tall", ["tall"], ["with a tall trunk", "with a long trunk"]),
               V("short", ["short"], ["with a short trunk"]))]

    def params(self, r, av):
        return dict(bushy=(av[:, 0] == 1).float(), th=W(av[:, 1] == 0, r.u(0.9, 1.2), r.u(0.25, 0.45)),
                    tr=r.u(0.07, 0.12), cr=r.u(0.45, 0.65), o=r.u(-1, 1, 8), ph=r.u(0, 2 * PI))

    def sdf(self, p, x, y, z):
        th, tr, cr = (C(p[k]) for k in ("th", "tr", "cr"))
        trunk = capped_cone_y(x, y - th / 2, z, tr * 1.3, tr, th / 2 + 0.05)
        yc = th + cr * 0.8
        ball = sphere(x, y - yc, z, cr)
        o = p["o"]
        bush = sphere(x, y - yc, z, cr * 0.72)
        for k in range(5):
            ang = C(p["ph"]) + 2 * PI * k / 5
            rad = cr * (0.45 + 0.1 * C(o[:, k]))
            cy = yc + cr * 0.25 * C(o[:, k + 3 if k < 5 else 0]) if k < 5 else yc
            bush = smin(bush, sphere(x - rad * torch.cos(ang), y - cy, z - rad * torch.sin(ang), cr * 0.5), 0.08)
        bush = smin(bush, sphere(x, y - yc - cr * 0.55, z, cr * 0.5), 0.08)
        crown = torch.where(C(p["bushy"]).bool(), bush, ball)
        return union(trunk, crown)


class PineTree(Family):
    name = "pine_tree"
    nouns = [("pine tree", {}), ("pine", {}), ("fir tree", {}), ("fir", {}), ("spruce", {}), ("christmas tree", {}),
             ("conifer", {}), ("evergreen tree", {})]
    attrs = [A("tiers", V("2", ["two-tiered"], ["with two tiers", "with two layers"]),
               V("3", ["three-tiered"], ["with three tiers", "with three layers"]),
               V("4", ["four-tiered"], ["with four tiers", "with four layers"])),
             A("width", V("narrow", ["narrow", "slim"], []), V("wide", ["wide", "broad"], []))]

    def params(self, r, av):
        return dict(k=av[:, 0].float() + 2, R=W(av[:, 1] == 0, r.u(0.3, 0.4), r.u(0.6, 0.75)), H=r.u(1.3, 1.6),
                    th=r.u(0.15, 0.3), tr=r.u(0.06, 0.1))

    def sdf(self, p, x, y, z):
        k, R, H, th, tr = (C(p[q]) for q in ("k", "R", "H", "th", "tr"))
        trunk = cyl_y(x, y - th / 2, z, tr, th / 2 + 0.05)
        d = trunk
        step = (H - th) / (k + 0.6)
        for j in range(4):
            jj = float(j)
            rr = R * (1.0 - 0.55 * jj / k)
            hh = step * 0.9
            y0 = th + step * jj
            cone = capped_cone_y(x, y - y0 - hh, z, rr, 0.02, hh)
            d = union(d, masked(cone, k > jj))
        return d


class Cactus(Family):
    name = "cactus"
    nouns = [("cactus", {}), ("saguaro", {}), ("succulent", {}), ("cacti", {}), ("desert cactus", {}),
             ("desert plant", {})]
    attrs = [A("arms", V("0", ["armless"], ["without arms", "with no arms"]), V("1", ["one-armed"], ["with one arm"]),
               V("2", ["two-armed"], ["with two arms"])),
             A("height", V("tall", ["tall"], []), V("short", ["short", "stubby"], []))]

    def params(self, r, av):
        return dict(n=av[:, 0].float(), H=W(av[:, 1] == 0, r.u(1.4, 1.8), r.u(0.7, 0.9)), r=r.u(0.13, 0.2),
                    ay=r.u(0.35, 0.55, 2), al=r.u(0.25, 0.4, 2), ah=r.u(0.25, 0.45, 2), ar=r.u(0.08, 0.12),
                    pot=r.b(0.35), ph=r.u(-AZ_JITTER, AZ_JITTER))

    def sdf(self, p, x, y, z):
        H, rr, ar = (C(p[k]) for k in ("H", "r", "ar"))
        body = capsule(x, y, z, (0.0, 0.0, 0.0), (0.0, H, 0.0), rr)
        d = body
        xr, zr = rot_y(x, z, C(p["ph"]))
        for j in range(2):
            s = 1.0 if j == 0 else -1.0
            ay = C(p["ay"][:, j]) * H
            al = C(p["al"][:, j])
            ah = C(p["ah"][:, j]) * H * 0.6
            seg1 = capsule(xr, y, zr, (0.0, ay, 0.0), (s * al, ay, 0.0 * al), ar)
            seg2 = capsule(xr, y, zr, (s * al, ay, 0.0 * al), (s * al, ay + ah, 0.0 * al), ar)
            d = union(d, masked(union(seg1, seg2), C(p["n"]) > j))
        pot = masked(capped_cone_y(x, y + 0.15, z, rr + 0.12, rr + 0.22, 0.2), C(p["pot"]).bool())
        return union(d, pot)


class Rock(Family):
    name = "rock"
    nouns = [("rock", {}), ("stone", {}), ("boulder", {}), ("pebble", {}), ("crag", {}), ("rock chunk", {})]
    attrs = [A("shape", V("flat", ["flat"], []), V("round", ["round", "roundish"], []),
               V("tall", ["tall", "pointy"], []))]

    def params(self, r, av):
        s = av[:, 0]
        rx = W(s == 0, r.u(0.8, 1.0), W(s == 1, r.u(0.7, 0.85), r.u(0.4, 0.5)))
        ry = W(s == 0, r.u(0.25, 0.35), W(s == 1, r.u(0.55, 0.75), r.u(0.85, 1.0)))
        rz = W(s == 0, r.u(0.6, 0.85), W(s == 1, r.u(0.6, 0.8), r.u(0.35, 0.5)))
        return dict(rx=rx, ry=ry, rz=rz, f=r.u(3.0, 5.0, 3), ph=r.u(0, 2 * PI, 3), amp=r.u(0.03, 0.06),
                    cut=r.u(-1, 1, 6))

    def sdf(self, p, x, y, z):
        rx, ry, rz, amp = (C(p[k]) for k in ("rx", "ry", "rz", "amp"))
        d = ellipsoid(x, y, z, rx, ry, rz)
        f, ph = p["f"], p["ph"]
        d = d + amp * torch.sin(C(f[:, 0]) * x + C(ph[:, 0])) * torch.sin(C(f[:, 1]) * y + C(ph[:, 1])) * \
            torch.sin(C(f[:, 2]) * z + C(ph[:, 2]))
        c = p["cut"]
        # two flat facets
        for j in range(2):
            nx, ny, nz = C(c[:, 3 * j]), C(c[:, 3 * j + 1]) * 0.5, C(c[:, 3 * j + 2])
            nn = torch.sqrt(nx * nx + ny * ny + nz * nz) + 1e-6
            facet = (x * nx + y * ny + z * nz) / nn - 0.75 * torch.minimum(torch.minimum(rx, ry), rz) - 0.1
            d = torch.maximum(d, facet)
        return d


class Snowman(Family):
    name = "snowman"
    nouns = [("snowman", {}), ("snow man", {}), ("snowwoman", {}), ("snow figure", {}), ("snow sculpture", {}),
             ("frosty", {})]
    attrs = [A("balls", V("2", [], ["with two balls", "made of two snowballs"]),
               V("3", [], ["with three balls", "made of three snowballs"])),
             A("hat", V("hat", [], ["with a hat", "with a top hat"]), V("nohat", ["hatless"], ["without a hat"]))]

    def params(self, r, av):
        return dict(three=(av[:, 0] == 1).float(), hat=(av[:, 1] == 0).float(), r0=r.u(0.45, 0.55), s=r.u(0.65, 0.8),
                    arms=r.b(0.6), hh=r.u(0.18, 0.28))

    def sdf(self, p, x, y, z):
        r0, s, hh = (C(p[k]) for k in ("r0", "s", "hh"))
        three = C(p["three"]).bool()
        r1 = r0 * s
        r2 = r1 * s
        y1 = r0 + r1 * 0.8
        y2 = y1 + r1 + r2 * 0.8
        b0 = sphere(x, y - r0, z, r0)
        b1 = sphere(x, y - y1, z, r1)
        b2 = masked(sphere(x, y - y2, z, r2), three)
        rh = torch.where(three, r2, r1)
        yh = torch.where(three, y2, y1)
        d = union(b0, b1, b2)
        nose = capped_cone_y(x, z - rh - 0.08, y - yh, 0.05, 0.02, 0.12)
        brim = cyl_y(x, y - yh - rh * 0.85, z, rh * 0.95, 0.03)
        crown = cyl_y(x, y - yh - rh * 0.85 - hh / 2, z, rh * 0.6, hh / 2)
        hat = masked(union(brim, crown), C(p["hat"]).bool())
        arm = masked(capsule(x.abs(), y, z, (r1 * 0.8, y1 + 0.05, 0.0), (r1 + 0.35, y1 + 0.3, 0.0), 0.028),
                     C(p["arms"]).bool())
        return union(d, nose, hat, arm)


# ----------------------------------------------------------------------------------------------------------------------
# buildings / structures

class House(Family):
    name = "house"
    nouns = [("house", {}), ("home", {}), ("cottage", {}), ("hut", {}), ("cabin", {}), ("bungalow", {}),
             ("building", {})]
    attrs = [A("roof", V("pointed", ["gabled"], ["with a pointed roof", "with a gable roof"]),
               V("flat", ["flat-roofed"], ["with a flat roof"])),
             A("floors", V("1", ["one-story", "single-story"], []), V("2", ["two-story"], ["with two floors"])),
             A("chimney", V("chimney", [], ["with a chimney"]), V("nochimney", [], ["without a chimney"]))]

    def params(self, r, av):
        return dict(flat=(av[:, 0] == 1).float(), H=W(av[:, 1] == 0, r.u(0.35, 0.5), r.u(0.75, 0.95)),
                    hx=r.u(0.7, 0.95), hz=r.u(0.5, 0.7), rh=r.u(0.35, 0.55), ch=(av[:, 2] == 0).float(),
                    cx=r.u(0.2, 0.5))

    def sdf(self, p, x, y, z):
        H, hx, hz, rh, cx = (C(p[k]) for k in ("H", "hx", "hz", "rh", "cx"))
        walls = box(x, y - H, z, hx, H, hz)
        door = box(x, y - 0.25, z - hz, 0.13, 0.25, 0.04)
        wy = torch.where(H > 0.6, H * 1.45, H * 1.1)
        windows = box(x.abs() - hx * 0.55, y - wy, z - hz, 0.1, 0.09, 0.035)
        windows2 = box(x.abs() - hx * 0.55, y - H * 0.55, z - hz, 0.1, 0.09, 0.035)
        windows2 = masked(windows2, H > 0.6)
        walls = sub(walls, union(door, windows, windows2))
        gable = prism_gable(x, y, z, hx + 0.06, 2 * H, hz + 0.1, rh)
        flat = sub(box(x, y - 2 * H - 0.04, z, hx + 0.04, 0.04, hz + 0.04),
                   box(x, y - 2 * H - 0.1, z, hx - 0.05, 0.05, hz - 0.05))
        roof = torch.where(C(p["flat"]).bool(), flat, gable)
        chim_top = torch.where(C(p["flat"]).bool(), 2 * H + 0.3, 2 * H + rh * 0.9)
        chim = box(x - cx, y - (2 * H + chim_top) / 2, z, 0.08, (chim_top - 2 * H) / 2 + 0.05, 0.08)
        chim = masked(chim, C(p["ch"]).bool())
        return union(walls, roof, chim)


class Tower(Family):
    name = "tower"
    nouns = [("tower", {}), ("turret", {}), ("watchtower", {}), ("castle tower", {}), ("keep", {}),
             ("stone tower", {})]
    attrs = [A("section", V("round", ["round", "cylindrical"], []), V("square", ["square"], [])),
             A("top", V("battlements", ["crenellated"], ["with battlements", "with a crenellated top"]),
               V("roof", [], ["with a pointed roof", "with a cone roof"]))]

    def params(self, r, av):
        return dict(round=(av[:, 0] == 0).float(), bat=(av[:, 1] == 0).float(), R=r.u(0.28, 0.4), H=r.u(1.5, 1.8),
                    rh=r.u(0.35, 0.55), n=r.i(6, 9), door=r.b(0.6))

    def sdf(self, p, x, y, z):
        R, H, rh, n = (C(p[k]) for k in ("R", "H", "rh", "n"))
        rnd = C(p["round"]).bool()
        body = torch.where(rnd, cyl_y(x, y - H / 2, z, R, H / 2), box(x, y - H / 2, z, R, H / 2, R))
        ring_top = torch.where(rnd, cyl_y(x, y - H - 0.06, z, R + 0.08, 0.06), box(x, y - H - 0.06, z, R + 0.08, 0.06, R + 0.08))
        # merlons: polar repetition of small boxes on the ring
        px, pz = polar_repeat(x, z, n)
        merlon_r = box(px - R, y - H - 0.12 - 0.08, pz, 0.07, 0.08, 0.07)
        mq = repeat_limited(x, 2 * (R + 0.04) / 3, -1, 1)
        merlon_s = union(box(mq, y - H - 0.2, z.abs() - R, 0.07, 0.08, 0.07), box(x.abs() - R, y - H - 0.2, repeat_limited(z, 2 * (R + 0.04) / 3, -1, 1), 0.07, 0.08, 0.07))
        merlons = torch.where(rnd, merlon_r, merlon_s)
        bat = union(ring_top, merlons)
        roof = torch.where(rnd, capped_cone_y(x, y - H - rh / 2, z, R + 0.1, 0.02, rh / 2),
                           pyramid_sq(x, y - H, z, R + 0.1, rh))
        top = torch.where(C(p["bat"]).bool(), bat, roof)
        door = masked(box(x, y - 0.2, z - R, 0.12, 0.2, 0.1), C(p["door"]).bool())
        return sub(union(body, top), door)


class Pagoda(Family):
    name = "pagoda"
    nouns = [("pagoda", {}), ("temple", {}), ("shrine", {}), ("chinese pagoda", {}), ("japanese pagoda", {}),
             ("pagoda temple", {})]
    attrs = [A("tiers", V("3", ["three-tier", "three-tiered"], ["with three tiers", "with three roofs"]),
               V("4", ["four-tier", "four-tiered"], ["with four tiers", "with four roofs"]),
               V("5", ["five-tier", "five-tiered"], ["with five tiers", "with five roofs"]))]

    def params(self, r, av):
        return dict(k=av[:, 0].float() + 3, R=r.u(0.55, 0.7), H=r.u(1.6, 1.9), sp=r.u(0.15, 0.3), shrink=r.u(0.12, 0.18))

    def sdf(self, p, x, y, z):
        k, R, H, sp, shrink = (C(p[q]) for q in ("k", "R", "H", "sp", "shrink"))
        lh = (H - sp) / k
        d = cyl_y(x, y - H + sp / 2, z, 0.035, sp / 2)
        for j in range(5):
            jj = float(j)
            s = 1.0 - shrink * jj
            y0 = lh * jj
            body = box(x, y - y0 - lh * 0.35, z, R * 0.55 * s, lh * 0.35, R * 0.55 * s)
            # flared eaves: the pyramid from the body's upper part (y0 + 0.62 lh) cut flat at the tier's top (y0 + lh),
            # where the next tier's body (or the spire) stands on it
            roof = inter(pyramid_sq(x, y - y0 - lh * 0.62, z, R * s, lh * 0.6), y - y0 - lh)
            tier = union(body, roof)
            d = union(d, masked(tier, k > jj))
        return d


class Arch(Family):
    name = "arch"
    nouns = [("arch", {}), ("archway", {}), ("gateway", {}), ("arc", {}), ("arched gate", {}), ("portal", {}),
             ("triumphal arch", {})]
    attrs = [A("top", V("round", ["round", "semicircular"], []), V("pointed", ["pointed", "gothic"], [])),
             A("width", V("wide", ["wide"], []), V("narrow", ["narrow", "tall"], []))]

    def params(self, r, av):
        return dict(pointed=(av[:, 0] == 1).float(), hw=W(av[:, 1] == 0, r.u(0.55, 0.75), r.u(0.25, 0.35)),
                    H=r.u(0.7, 1.0), pw=r.u(0.15, 0.25), t=r.u(0.15, 0.3))

    def sdf(self, p, x, y, z):
        hw, H, pw, t = (C(p[k]) for k in ("hw", "H", "pw", "t"))
        outer_h = H + hw + pw
        block = box(x, y - outer_h / 2, z, hw + pw, outer_h / 2, t)
        rect = box(x, y - H / 2 + 0.5, z, hw, H / 2 + 0.5, t + 1)
        round_top = cyl_z(x, y - H, z, hw, t + 1)
        # pointed (gothic): intersection of two circles centred at +-hw*0.5 with radius 1.5*hw
        c1 = cyl_z(x - hw * 0.5, y - H, z, hw * 1.5, t + 1)
        c2 = cyl_z(x + hw * 0.5, y - H, z, hw * 1.5, t + 1)
        gothic = inter(c1, c2, -(y - H) - 0.0 * hw)
        gothic = inter(union(inter(c1, c2), rect), -(y) + 0 * hw + 10)
        opening = torch.where(C(p["pointed"]).bool(), union(gothic, rect), union(round_top, rect))
        ext = torch.where(C(p["pointed"]).bool(), hw * 1.12, hw)
        block = box(x, y - (H + ext + pw) / 2, z, hw + pw, (H + ext + pw) / 2, t)
        return sub(block, opening)


class Bridge(Family):
    name = "bridge"
    nouns = [("bridge", {}), ("footbridge", {}), ("foot bridge", {}), ("viaduct", {}), ("overpass", {}),
             ("river bridge", {})]
    attrs = [A("style", V("arched", ["arched", "curved"], ["with an arch"]),
               V("beam", ["flat", "straight"], ["with pillars"])),
             A("rails", V("rails", [], ["with railings", "with handrails"]), V("norails", [], ["without railings"]))]

    def params(self, r, av):
        return dict(arched=(av[:, 0] == 0).float(), rails=(av[:, 1] == 0).float(), L=r.u(1.0, 1.1), hw=r.u(0.2, 0.35),
                    t=r.u(0.06, 0.1), H=r.u(0.35, 0.55), np=r.i(2, 3), rh=r.u(0.12, 0.2))

    def sdf(self, p, x, y, z):
        L, hw, t, H, np_, rh = (C(p[k]) for k in ("L", "hw", "t", "H", "np", "rh"))
        deck = box(x, y - H, z, L, t / 2, hw)
        # arch: a solid under the deck minus a big cylinder along Z
        R = (L * L * 0.8 + (H * 0.9) ** 2) / (2 * H * 0.9)
        arch_solid = sub(box(x, y - H / 2, z, L * 0.92, H / 2, hw * 0.85), cyl_z(x, y - H * 0.9 + R, z, R, hw + 1))
        arch_solid = sub(arch_solid, cyl_z(x, y + R - H * 0.9 - 0.0 + 0.0, z, R - 0.0, hw + 1))
        ring = inter(sub(cyl_z(x, y + R - H * 0.9, z, R + 0.1, hw * 0.85), cyl_z(x, y + R - H * 0.9, z, R - 0.0, hw + 1)),
                     y - H, -y)
        ring = union(ring, box(x.abs() - L * 0.88, y - H / 2, z, 0.06, H / 2, hw * 0.85))
        spacing = 2 * L / (np_ + 1)
        pill_x = repeat_limited(x + L - spacing, spacing, torch.zeros_like(np_), np_ - 1)
        pillars = box(pill_x, y - H / 2, z, 0.07, H / 2, hw * 0.7)
        support = torch.where(C(p["arched"]).bool(), ring, pillars)
        posts = box(repeat_limited(x, 2 * L / 6, -3, 3), y - H - t / 2 - rh / 2, z.abs() - hw + 0.03, 0.03, rh / 2, 0.03)
        rail = box(x, y - H - t / 2 - rh, z.abs() - hw + 0.03, L, 0.03, 0.03)
        rails = masked(union(posts, rail), C(p["rails"]).bool())
        return union(deck, support, rails)


class Fence(Family):
    name = "fence"
    nouns = [("fence", {}), ("picket fence", {}), ("fencing", {}), ("palisade", {}), ("garden fence", {}),
             ("paling", {})]
    attrs = [A("tops", V("pointed", ["pointed", "spiky"], ["with pointed tops"]),
               V("flat", ["flat-topped"], ["with flat tops"])),
             A("length", V("long", ["long"], []), V("short", ["short"], []))]

    def params(self, r, av):
        n = W(av[:, 1] == 0, r.i(7, 11), r.i(3, 4))
        return dict(pointed=(av[:, 0] == 0).float(), n=n, s=r.u(0.2, 0.26), H=r.u(0.55, 0.8), pw=r.u(0.05, 0.07),
                    t=r.u(0.035, 0.05))

    def sdf(self, p, x, y, z):
        n, s, H, pw, t = (C(p[k]) for k in ("n", "s", "H", "pw", "t"))
        half = (n - 1) / 2
        xr = repeat_limited(x + 0.0, s, -torch.floor(half), torch.floor(half))
        xr = torch.where((n % 2) == 0, repeat_limited(x - s / 2, s, -half - 0.5 + 0.5, half - 0.5), xr)
        picket = box(xr, y - H / 2, z, pw, H / 2, t)
        tip = inter(pyramid_sq(xr, y - H, z, pw, pw * 1.6), z.abs() - t)
        pick = torch.where(C(p["pointed"]).bool(), union(picket, tip), picket)
        L = s * half + pw
        rails = union(box(x, y - H * 0.25, z - t - 0.035, L + 0.05, 0.045, 0.035),
                      box(x, y - H * 0.72, z - t - 0.035, L + 0.05, 0.045, 0.035))
        return union(pick, rails)


# ----------------------------------------------------------------------------------------------------------------------
# vehicles

class Car(Family):
    name = "car"
    nouns = [("car", {}), ("automobile", {}), ("vehicle", {}), ("auto", {}), ("motorcar", {}),
             ("sedan", {"body": "sedan"}), ("truck", {"body": "truck"}), ("pickup truck", {"body": "truck"}),
             ("lorry", {"body": "truck"}), ("van", {"body": "van"}), ("minivan", {"body": "van"})]
    attrs = [A("body", V("sedan", [], []), V("truck", [], ["with a cargo bed"]), V("van", ["boxy"], [])),
             A("wheels", V("4", ["four-wheeled"], ["with four wheels"]), V("6", ["six-wheeled"], ["with six wheels"]))]

    def params(self, r, av):
        return dict(body=av[:, 0].float(), six=(av[:, 1] == 1).float(), L=r.u(0.9, 1.05), hw=r.u(0.38, 0.48),
                    bh=r.u(0.14, 0.2), wr=r.u(0.14, 0.19), ww=r.u(0.06, 0.09), ch=r.u(0.18, 0.26), cl=r.u(0.35, 0.5))

    def sdf(self, p, x, y, z):
        L, hw, bh, wr, ww, ch, cl = (C(p[k]) for k in ("L", "hw", "bh", "wr", "ww", "ch", "cl"))
        b = C(p["body"])
        y0 = wr + bh  # body centre height
        base = round_box(x, y - y0, z, L, bh, hw, 0.05)
        sedan_cab = round_box(x + 0.05, y - y0 - bh - ch / 2, z, cl, ch / 2 + 0.02, hw * 0.88, 0.06)
        truck_cab = round_box(x - L + cl * 0.55, y - y0 - bh - ch / 2, z, cl * 0.5, ch / 2 + 0.02, hw * 0.9, 0.05)
        bed_walls = sub(box(x + L * 0.35, y - y0 - bh - 0.06, z, L * 0.6, 0.08, hw), box(x + L * 0.35, y - y0 - bh - 0.1, z, L * 0.6 - 0.04, 0.1, hw - 0.04))
        truck = union(truck_cab, bed_walls)
        van = round_box(x + 0.08, y - y0 - bh - ch * 0.75, z, L * 0.92, ch * 0.8, hw * 0.95, 0.06)
        top = torch.where(b == 0, sedan_cab, torch.where(b == 1, truck, van))
        wx = L * 0.68
        wheels = cyl_z(x.abs() - wx, y - wr, z.abs() - hw + ww * 0.3, wr, ww)
        mid = masked(cyl_z(x, y - wr, z.abs() - hw + ww * 0.3, wr, ww), C(p["six"]).bool())
        wheels6 = union(cyl_z(x - wx, y - wr, z.abs() - hw + ww * 0.3, wr, ww),
                        cyl_z(x + wx, y - wr, z.abs() - hw + ww * 0.3, wr, ww),
                        cyl_z(x + wx - 2.3 * wr, y - wr, z.abs() - hw + ww * 0.3, wr, ww))
        wheels = torch.where(C(p["six"]).bool(), wheels6, wheels)
        del mid
        return union(base, top, wheels)


class Rocket(Family):
    name = "rocket"
    nouns = [("rocket", {}), ("spaceship", {}), ("space rocket", {}), ("rocket ship", {}), ("missile", {}),
             ("spacecraft", {})]
    attrs = [A("fins", V("3", [], ["with three fins"]), V("4", [], ["with four fins"])),
             A("shape", V("slim", ["slim", "slender", "tall"], []), V("stubby", ["stubby", "fat", "short"], []))]

    def params(self, r, av):
        return dict(n=W(av[:, 0] == 0, torch.full((r.n,), 3.0), torch.full((r.n,), 4.0)),
                    R=W(av[:, 1] == 0, r.u(0.15, 0.2), r.u(0.3, 0.38)), H=r.u(1.3, 1.6), nh=r.u(0.3, 0.5),
                    fl=r.u(0.2, 0.32), fh=r.u(0.3, 0.45), ft=r.u(0.025, 0.035), ph=r.u(-AZ_JITTER, AZ_JITTER))

    def sdf(self, p, x, y, z):
        R, H, nh, fl, fh, ft = (C(p[k]) for k in ("R", "H", "nh", "fl", "fh", "ft"))
        body = cyl_y(x, y - H / 2, z, R, H / 2)
        nose = capped_cone_y(x, y - H - nh / 2, z, R, 0.02, nh / 2)
        nozzle = capped_cone_y(x, y + 0.08, z, R * 0.6, R * 0.8, 0.08)
        xr, zr = rot_y(x, z, C(p["ph"]))
        px, pz = polar_repeat(xr, zr, C(p["n"]))
        # fin: plate in the radial (x) direction, thickness ft in z, swept back
        fin = box(px - R - fl / 2 + 0.02, y - fh / 2, pz, fl / 2, fh / 2, ft)
        fin = inter(fin, (px - R) * 0.8 + (y - fh) * 0.6)
        return union(body, nose, nozzle, fin)


class Boat(Family):
    name = "boat"
    nouns = [("boat", {}), ("ship", {}), ("vessel", {}), ("yacht", {}), ("sailboat", {"type": "sail"}),
             ("sailing boat", {"type": "sail"}), ("rowboat", {"type": "open"}), ("dinghy", {"type": "open"}),
             ("motorboat", {"type": "cabin"})]
    attrs = [A("type", V("sail", [], ["with a sail", "with a mast"]), V("cabin", [], ["with a cabin"]),
               V("open", ["open"], ["with oars", "without a sail"]))]

    def params(self, r, av):
        return dict(type=av[:, 0].float(), L=r.u(0.95, 1.05), hw=r.u(0.28, 0.4), d=r.u(0.25, 0.35),
                    mh=r.u(1.0, 1.3), sw=r.u(0.45, 0.65), cl=r.u(0.3, 0.45), ch=r.u(0.2, 0.3))

    def sdf(self, p, x, y, z):
        L, hw, d, mh, sw, cl, ch = (C(p[k]) for k in ("L", "hw", "d", "mh", "sw", "cl", "ch"))
        t = C(p["type"])
        hull = inter(ellipsoid(x, y, z, L, d * 2, hw), y - 0.05)
        # open boats are hollowed; the others get a deck
        hollow = sub(hull, inter(ellipsoid(x, y - 0.1, z, L - 0.06, d * 2, hw - 0.06), y - 1))
        hull = torch.where(t == 2, hollow, hull)
        seat = masked(box(x, y + 0.05, z, 0.06, 0.03, hw * 0.85), t == 2)
        seat = inter(seat, ellipsoid(x, y, z, L, d * 2, hw))
        mast = cyl_y(x + 0.1, y - mh / 2, z, 0.035, mh / 2)
        sail = inter(box(x - sw / 2 + 0.08, y - mh / 2 - 0.05, z, sw / 2, mh / 2 - 0.1, 0.025),
                     (x + 0.05) * mh * 0.9 + (y - mh) * sw * 0.9)
        sail = union(mast, sail)
        cabin = round_box(x + 0.1, y - ch / 2 - 0.05, z, cl, ch / 2 + 0.05, hw * 0.6, 0.04)
        top = torch.where(t == 0, sail, torch.where(t == 1, cabin, seat))
        return union(hull, top)


# ----------------------------------------------------------------------------------------------------------------------
# tools / weapons / props

class Sword(Family):
    name = "sword"
    nouns = [("sword", {}), ("blade", {}), ("saber", {}), ("sabre", {}), ("knight sword", {}),
             ("longsword", {"length": "long"}), ("broadsword", {"width": "wide"}), ("dagger", {"length": "short"}),
             ("rapier", {"width": "narrow"})]
    attrs = [A("length", V("long", ["long"], ["with a long blade"]), V("short", ["short"], ["with a short blade"])),
             A("width", V("wide", ["wide", "broad"], []), V("narrow", ["narrow", "thin"], []))]

    def params(self, r, av):
        return dict(bl=W(av[:, 0] == 0, r.u(1.1, 1.35), r.u(0.45, 0.6)), bw=W(av[:, 1] == 0, r.u(0.11, 0.15), r.u(0.045, 0.06)),
                    bt=r.u(0.03, 0.04), gw=r.u(0.25, 0.35), gl=r.u(0.22, 0.3), pr=r.u(0.05, 0.07), round=r.b(0.3))

    def sdf(self, p, x, y, z):
        bl, bw, bt, gw, gl, pr = (C(p[k]) for k in ("bl", "bw", "bt", "gw", "gl", "pr"))
        blade = box(x, y - bl / 2, z, bw, bl / 2, bt)
        tip = (x.abs() * bl * 0.3 + (y - bl) * bw) / torch.sqrt(bw * bw + (bl * 0.3) ** 2) + 0.0 * bw
        blade = inter(blade, tip + bw * bl * 0.3 / torch.sqrt(bw * bw + (bl * 0.3) ** 2) * 0.0 - 0.0,
                      (x.abs() * 0.6 + (y - bl) * 1.0 * bw / bw) / 1.17)
        guard = box(x, y, z, gw, 0.04, 0.045)
        guard = torch.where(C(p["round"]).bool(), cyl_y(x, y, z, gw * 0.5, 0.04), guard)
        grip = cyl_y(x, y + gl / 2, z, 0.04, gl / 2)
        pommel = sphere(x, y + gl + pr * 0.6, z, pr)
        return union(blade, guard, grip, pommel)


class Axe(Family):
    name = "axe"
    nouns = [("axe", {}), ("ax", {}), ("wood axe", {}), ("chopping axe", {}), ("felling axe", {}),
             ("hatchet", {"handle": "short", "head": "single"}), ("battle axe", {"head": "double"})]
    attrs = [A("head", V("single", ["single-bladed"], ["with one blade"]),
               V("double", ["double-bladed", "double-headed"], ["with two blades"])),
             A("handle", V("long", [], ["with a long handle"]), V("short", [], ["with a short handle"]))]

    def params(self, r, av):
        return dict(double=(av[:, 0] == 1).float(), H=W(av[:, 1] == 0, r.u(1.3, 1.6), r.u(0.55, 0.75)),
                    hr=r.u(0.035, 0.05), bw=r.u(0.25, 0.35), bh=r.u(0.2, 0.3), bt=r.u(0.04, 0.06))

    def sdf(self, p, x, y, z):
        H, hr, bw, bh, bt = (C(p[k]) for k in ("H", "hr", "bw", "bh", "bt"))
        handle = cyl_y(x, y - H / 2, z, hr, H / 2)
        yh = y - H + bh * 0.6
        # wedge blade growing from the handle to an edge of height bh at distance bw
        def wedge(xx):
            blade = box(xx - bw / 2, yh, z, bw / 2, bh, bt)
            taper = (yh.abs() - (0.35 * bh + 0.65 * bh * (xx / bw).clamp(0, 1)))
            return inter(blade, taper)
        right = wedge(x)
        left = torch.where(C(p["double"]).bool(), wedge(-x), box(x + 0.06, yh, z, 0.08, 0.08, bt * 1.1))
        eye = box(x, yh, z, hr + 0.04, bh * 0.4, bt + 0.01)
        return union(handle, right, left, eye)


class Hammer(Family):
    name = "hammer"
    nouns = [("hammer", {}), ("hand hammer", {}), ("tool hammer", {}), ("warhammer", {}), ("claw hammer", {"head": "claw"}),
             ("mallet", {"head": "mallet"}), ("sledgehammer", {"head": "mallet", "handle": "long"}),
             ("gavel", {"head": "mallet", "handle": "short"})]
    attrs = [A("head", V("claw", [], ["with a claw"]), V("mallet", ["double-faced"], ["with a block head"])),
             A("handle", V("long", [], ["with a long handle"]), V("short", [], ["with a short handle"]))]

    def params(self, r, av):
        return dict(claw=(av[:, 0] == 0).float(), H=W(av[:, 1] == 0, r.u(1.3, 1.6), r.u(0.6, 0.8)),
                    hr=r.u(0.04, 0.055), hl=r.u(0.3, 0.42), hs=r.u(0.08, 0.13))

    def sdf(self, p, x, y, z):
        H, hr, hl, hs = (C(p[k]) for k in ("H", "hr", "hl", "hs"))
        handle = cyl_y(x, y - H / 2, z, hr, H / 2)
        yh = y - H - hs * 0.5
        mallet = cyl_x(x, yh, z, hs, hl)
        face = cyl_x(x - hl * 0.45, yh, z, hs * 0.8, hl * 0.55)
        claw = inter(torus_z(x + 0.02, yh + hs * 2.2, z, hs * 2.6, hs * 0.45), -(x + 0.02), yh + hs * 0.2 - 0.0)
        claw = inter(claw, -(yh - hs * 0.9) - 0.0)
        clawhead = union(face, box(x, yh, z, hs * 0.9, hs * 0.9, hs * 0.7), inter(box(x + hl * 0.5, yh, z, hl * 0.5, hs * 0.5, hs * 0.45),
                                                                                 (yh + (x + hl * 0.02) * 0.4 - hs * 0.5)))
        head = torch.where(C(p["claw"]).bool(), clawhead, mallet)
        return union(handle, head)


class Shield(Family):
    name = "shield"
    nouns = [("shield", {}), ("buckler", {}), ("targe", {}), ("battle shield", {}), ("knight shield", {}),
             ("kite shield", {"shape": "kite"}), ("round shield", {"shape": "round"})]
    attrs = [A("shape", V("round", ["round", "circular"], []), V("kite", ["pointed", "kite-shaped"], []),
               V("square", ["square", "rectangular"], [])),
             A("boss", V("boss", ["bossed"], ["with a boss", "with a center boss"]),
               V("plain", ["plain", "flat"], []))]

    def params(self, r, av):
        return dict(shape=av[:, 0].float(), boss=(av[:, 1] == 0).float(), R=r.u(0.8, 0.95), t=r.u(0.05, 0.08),
                    rim=r.b(0.6), asp=r.u(0.65, 0.85))

    def sdf(self, p, x, y, z):
        R, t, asp = (C(p[k]) for k in ("R", "t", "asp"))
        s = C(p["shape"])

        def plate_at(zz):
            rnd = cyl_z(x, y, zz, R, t)
            kite_top = cyl_z(x, y - R * 0.25, zz, R * asp, t)
            kite_bot = inter((x.abs() * R * 1.3 - (y + R) * R * asp) / torch.sqrt((R * 1.3) ** 2 + (R * asp) ** 2),
                             y - R * 0.25, zz.abs() - t)
            kite = union(kite_top, kite_bot)
            sq = round_box(x, y, zz, R * asp, R, t, 0.04)
            return torch.where(s == 0, rnd, torch.where(s == 1, kite, sq))

        plate = plate_at(z)
        outline = plate_at(torch.zeros_like(z))  # in-plane distance to the outline (inside: negative)
        rim = torch.maximum((outline + 0.04).abs() - 0.04, z.abs() - t - 0.03)
        rim = masked(rim, C(p["rim"]).bool())
        boss = masked(torch.maximum(sphere(x, y, z + t * 0.2, R * 0.22), z), C(p["boss"]).bool())
        return union(plate, rim, boss)


class Crown(Family):
    name = "crown"
    nouns = [("crown", {}), ("tiara", {}), ("diadem", {}), ("coronet", {}), ("royal crown", {}), ("king crown", {}),
             ("circlet", {})]
    attrs = [A("points", V("5", ["five-pointed"], ["with five points", "with five spikes"]),
               V("8", ["eight-pointed"], ["with eight points", "with eight spikes"])),
             A("height", V("tall", ["tall", "high"], []), V("short", ["short", "low"], []))]

    def params(self, r, av):
        return dict(n=W(av[:, 0] == 0, torch.full((r.n,), 5.0), torch.full((r.n,), 8.0)),
                    ph=W(av[:, 1] == 0, r.u(0.5, 0.7), r.u(0.18, 0.28)), R=r.u(0.7, 0.85), bh=r.u(0.18, 0.28),
                    w=r.u(0.05, 0.07), jewel=r.b(0.6))

    def sdf(self, p, x, y, z):
        R, bh, w, ph = (C(p[k]) for k in ("R", "bh", "w", "ph"))
        band = sub(cyl_y(x, y - bh / 2, z, R, bh / 2), cyl_y(x, y - bh / 2, z, R - w, bh))
        px, pz = polar_repeat(x, z, C(p["n"]))
        sector = 2 * PI / C(p["n"])
        half_w = R * torch.sin(sector / 2) * 0.75
        # spike: triangle in the (tangential, y) plane on the band radius, thickness w radially
        tri = torch.maximum((pz.abs() * ph + (y - bh) * half_w - ph * half_w) / torch.sqrt(ph * ph + half_w * half_w),
                            -(y - bh) - 0.02)
        spike = inter(tri, (px - R + w / 2).abs() - w / 2)
        jewel = masked(sphere(px - R + w / 2, y - bh - ph, pz, 0.055), C(p["jewel"]).bool())
        return union(band, spike, jewel)


class Key(Family):
    name = "key"
    nouns = [("key", {}), ("door key", {}), ("house key", {}), ("skeleton key", {}), ("latchkey", {}), ("lock key", {})]
    attrs = [A("bow", V("round", ["round-headed"], ["with a round head", "with a ring handle"]),
               V("square", ["square-headed"], ["with a square head"])),
             A("length", V("long", ["long"], []), V("short", ["short"], []))]

    def params(self, r, av):
        return dict(round=(av[:, 0] == 0).float(), L=W(av[:, 1] == 0, r.u(1.2, 1.4), r.u(0.5, 0.7)),
                    br=r.u(0.28, 0.38), t=r.u(0.04, 0.06), sw=r.u(0.05, 0.07), nt=r.i(2, 3))

    def sdf(self, p, x, y, z):
        L, br, t, sw, nt = (C(p[k]) for k in ("L", "br", "t", "sw", "nt"))
        ring = sub(cyl_z(x + br, y, z, br, t), cyl_z(x + br, y, z, br * 0.5, t + 1))
        sq = sub(box(x + br, y, z, br, br, t), box(x + br, y, z, br * 0.5, br * 0.5, t + 1))
        bow = torch.where(C(p["round"]).bool(), ring, sq)
        shaft = box(x - L / 2 + 0.02, y, z, L / 2, sw, t)
        tx = repeat_limited(x - L + 0.08, 0.14, -(nt - 1), torch.zeros_like(nt))
        teeth = box(tx, y + sw + 0.08, z, 0.045, 0.09, t)
        return union(bow, shaft, teeth)


class Barrel(Family):
    name = "barrel"
    nouns = [("barrel", {}), ("cask", {}), ("keg", {}), ("wine barrel", {}), ("rain barrel", {}), ("tun", {})]
    attrs = [A("height", V("tall", ["tall"], []), V("short", ["short", "squat"], [])),
             A("pose", V("upright", ["upright", "standing"], []), V("lying", [], ["lying on its side", "on its side"]))]

    def params(self, r, av):
        return dict(h=W(av[:, 0] == 0, r.u(0.8, 1.0), r.u(0.4, 0.55)), R=r.u(0.45, 0.55), bulge=r.u(0.06, 0.12),
                    lying=(av[:, 1] == 1).float(), hoops=r.b(0.8))

    def sdf(self, p, x, y, z):
        h, R, bulge = (C(p[k]) for k in ("h", "R", "bulge"))
        ly = C(p["lying"]).bool()
        yy = torch.where(ly, x, y)
        xx = torch.where(ly, y, x)
        rr = R + bulge * (1 - (yy / h) ** 2).clamp(min=0)
        body = torch.maximum(length2(xx, z) - rr, yy.abs() - h) * 0.9
        hoop = torch.maximum((length2(xx, z) - (R + bulge * 0.3 + 0.02)).abs() - 0.02, (yy.abs() - h * 0.72).abs() - 0.04)
        hoop = masked(hoop, C(p["hoops"]).bool())
        return union(body, hoop)


class Crate(Family):
    name = "crate"
    nouns = [("crate", {}), ("box", {}), ("shipping crate", {}), ("container", {}), ("carton", {}), ("package", {}),
             ("wooden crate", {})]
    attrs = [A("shape", V("cube", ["square", "cubic"], []), V("long", ["long", "flat"], []), V("tall", ["tall"], []))]

    def params(self, r, av):
        s = av[:, 0]
        hx = W(s == 0, r.u(0.85, 0.95), W(s == 1, r.u(0.95, 1.0), r.u(0.5, 0.6)))
        hy = W(s == 0, r.u(0.85, 0.95), W(s == 1, r.u(0.35, 0.5), r.u(0.95, 1.0)))
        hz = W(s == 0, r.u(0.85, 0.95), W(s == 1, r.u(0.5, 0.65), r.u(0.5, 0.6)))
        return dict(hx=hx, hy=hy, hz=hz, f=r.u(0.07, 0.1), dep=r.u(0.04, 0.06), brace=r.b(0.5))

    def sdf(self, p, x, y, z):
        hx, hy, hz, f, dep = (C(p[k]) for k in ("hx", "hy", "hz", "f", "dep"))
        d = box(x, y, z, hx, hy, hz)
        d = sub(d, box(x, y, z.abs() - hz, hx - f, hy - f, dep))
        d = sub(d, box(x.abs() - hx, y, z, dep, hy - f, hz - f))
        d = sub(d, box(x, y.abs() - hy, z, hx - f, dep, hz - f))
        # diagonal brace on the front/back faces
        dn = torch.sqrt(hx * hx + hy * hy)
        diag = ((x * hy - y * hx) / dn).abs() - f * 0.5
        brace = inter(box(x, y, z.abs() - hz + dep / 2, hx - f, hy - f, dep / 2), diag)
        return union(d, masked(brace, C(p["brace"]).bool()))


class Chest(Family):
    name = "chest"
    nouns = [("chest", {}), ("treasure chest", {}), ("trunk", {}), ("coffer", {}), ("strongbox", {}),
             ("storage chest", {})]
    attrs = [A("lid", V("domed", ["domed", "rounded"], ["with a domed lid", "with a round lid"]),
               V("flat", ["flat-lidded"], ["with a flat lid"])),
             A("feet", V("feet", ["footed"], ["with feet", "with legs"]), V("nofeet", [], ["without feet"]))]

    def params(self, r, av):
        return dict(dome=(av[:, 0] == 0).float(), feet=(av[:, 1] == 0).float(), hx=r.u(0.8, 1.0), hz=r.u(0.45, 0.6),
                    hy=r.u(0.35, 0.45), fh=r.u(0.08, 0.14))

    def sdf(self, p, x, y, z):
        hx, hz, hy, fh = (C(p[k]) for k in ("hx", "hz", "hy", "fh"))
        base = box(x, y - hy, z, hx, hy, hz)
        dome = inter(cyl_x(x, y - 2 * hy, z, hz, hx), -(y - 2 * hy))
        flat = box(x, y - 2 * hy - 0.08, z, hx + 0.02, 0.08, hz + 0.02)
        lid = torch.where(C(p["dome"]).bool(), dome, flat)
        bands = box(x.abs() - hx * 0.6, y - hy * 1.2, z, 0.05, hy * 1.25, hz + 0.025)
        bands = inter(bands, torch.where(C(p["dome"]).bool(), cyl_x(x, y - 2 * hy, z, hz + 0.025, hx) , box(x, y - hy - 0.08, z, hx, hy + 0.17, hz + 0.03)))
        bands = union(bands, inter(box(x.abs() - hx * 0.6, y - hy, z, 0.05, hy, hz + 0.025), y - 2 * hy))
        lock = box(x, y - 2 * hy + 0.02, z - hz - 0.03, 0.08, 0.1, 0.04)
        feet = masked(box(x.abs() - hx + 0.1, y + fh / 2, z.abs() - hz + 0.1, 0.08, fh / 2 + 0.01, 0.08), C(p["feet"]).bool())
        return union(base, lid, bands, lock, feet)


class Ladder(Family):
    name = "ladder"
    nouns = [("ladder", {}), ("climbing ladder", {}), ("library ladder", {}), ("wooden ladder", {}),
             ("extension ladder", {"type": "straight"}), ("stepladder", {"type": "aframe"}),
             ("step ladder", {"type": "aframe"})]
    attrs = [A("type", V("straight", ["straight"], []), V("aframe", ["folding", "a-frame"], [])),
             A("height", V("tall", ["tall", "long"], ["with many rungs"]), V("short", ["short"], ["with few rungs"]))]

    def params(self, r, av):
        tall = av[:, 1] == 0
        return dict(aframe=(av[:, 0] == 1).float(), n=W(tall, r.i(7, 9), r.i(3, 4)), s=r.u(0.2, 0.25),
                    hw=r.u(0.22, 0.3), rr=r.u(0.03, 0.045), rw=r.u(0.035, 0.05), tilt=r.u(0.25, 0.35))

    def sdf(self, p, x, y, z):
        n, s, hw, rr, rw, tilt = (C(p[k]) for k in ("n", "s", "hw", "rr", "rw", "tilt"))
        H = s * (n + 1)
        af = C(p["aframe"]).bool()
        # A-frame: front ladder leans: z offset = tilt*(H - y)/H*... ; straight: vertical
        lean = torch.where(af, tilt * 0.5, torch.zeros_like(tilt))
        zf = z + lean * (H - y) / H * 1.0 - 0.0
        rails = box(x.abs() - hw, y - H / 2, zf, rw, H / 2, rw)
        yr = repeat_limited(y - s, s, torch.zeros_like(n), n - 1)
        rungs = cyl_x(x, yr, zf, rr, hw)
        front = union(rails, rungs)
        zb = z - lean * (H - y) / H
        back = union(box(x.abs() - hw, y - H / 2, zb, rw, H / 2, rw), cyl_x(x, y - H * 0.4, zb, rr, hw))
        top = box(x, y - H, z, hw + rw, 0.04, 0.1)
        aframe = union(front, back, top)
        return torch.where(af, aframe, front)


class Burger(Family):
    name = "burger"
    nouns = [("burger", {}), ("hamburger", {}), ("sandwich", {}), ("beef burger", {}), ("veggie burger", {}),
             ("slider", {}), ("cheeseburger", {"cheese": "cheese"})]
    attrs = [A("patties", V("1", ["single"], ["with one patty"]), V("2", ["double"], ["with two patties"]),
               V("3", ["triple"], ["with three patties"])),
             A("cheese", V("cheese", ["cheesy"], ["with cheese", "with a cheese slice"]),
               V("nocheese", [], ["without cheese"]))]

    def params(self, r, av):
        return dict(k=av[:, 0].float() + 1, cheese=(av[:, 1] == 0).float(), R=r.u(0.8, 0.95), bh=r.u(0.15, 0.22),
                    th=r.u(0.3, 0.45), ph=r.u(0.1, 0.14), lettuce=r.b(0.5))

    def sdf(self, p, x, y, z):
        k, R, bh, th, ph = (C(p[q]) for q in ("k", "R", "bh", "th", "ph"))
        bottom = round_box(x, y - bh / 2, z, R, bh / 2, R, bh * 0.45)
        bottom = inter(bottom, length2(x, z) - R)
        d = bottom
        y0 = bh
        ch = C(p["cheese"]).bool()
        for j in range(3):
            jj = float(j)
            yj = y0 + jj * (ph + 0.05)
            patty = cyl_y(x, y - yj - ph / 2, z, R * 1.04, ph / 2 - 0.01) - 0.01
            cheese = box(x, y - yj - ph - 0.025, z, R * 0.82, 0.025, R * 0.82)
            # without cheese a sauce disc fills the 0.05 gap above the patty (set in from the patty's rim, unlike the
            # cheese slice whose corners stick out), so the layers touch and a burger stays one piece
            sauce = cyl_y(x, y - yj - ph - 0.025, z, R * 0.9, 0.03)
            layer = union(patty, torch.where(ch, cheese, sauce))
            d = union(d, masked(layer, k > jj))
        ytop = y0 + k * (ph + 0.05)
        top = inter(ellipsoid(x, y - ytop, z, R, th, R), -(y - ytop))
        lettuce = masked(cyl_y(x, y - ytop + 0.01, z, R * 1.08, 0.025), C(p["lettuce"]).bool())
        return union(d, top, lettuce)


class Cat(Family):
    name = "cat"
    nouns = [("cat", {}), ("kitty", {}), ("kitten", {}), ("feline", {}), ("kitty cat", {}), ("pussycat", {}),
             ("tomcat", {})]
    attrs = [A("pose", V("sitting", ["sitting", "seated"], []), V("standing", ["standing", "walking"], []),
               V("lying", ["lying", "sleeping"], ["lying down"])),
             A("tail", V("up", [], ["with its tail up", "with a raised tail"]),
               V("down", [], ["with its tail down", "with a lowered tail"]))]

    def params(self, r, av):
        return dict(pose=av[:, 0].float(), tail=(av[:, 1] == 0).float(), br=r.u(0.26, 0.32), bl=r.u(0.55, 0.7),
                    hr=r.u(0.22, 0.27), lr=r.u(0.055, 0.07), tr=r.u(0.045, 0.06), eh=r.u(0.12, 0.18))

    def sdf(self, p, x, y, z):
        br, bl, hr, lr, tr, eh = (C(p[k]) for k in ("br", "bl", "hr", "lr", "tr", "eh"))
        pose = C(p["pose"])
        up = C(p["tail"]).bool()
        # cat faces +x
        def ears(hx, hy, hz):
            e = union(capped_cone_y(x - hx, y - hy - hr * 0.8, (z - hz).abs() - hr * 0.55, hr * 0.38, 0.02, eh / 2 + 0.02),
                      sphere(x - hx, y - hy - hr * 1.3, z, 0.0) + 10)
            return e
        # standing
        sy = lr * 2 + 0.45
        s_body = ellipsoid(x, y - sy, z, bl, br, br * 0.9)
        s_legs = capsule(x.abs(), y, z.abs(), (bl * 0.6, sy, br * 0.5), (bl * 0.6, 0.0 + lr, br * 0.5), lr)
        s_head = sphere(x - bl - hr * 0.4, y - sy - br * 0.9, z, hr)
        s_ears = ears(bl + hr * 0.4, sy + br * 0.9, 0.0)
        s_tail_up = capsule(x, y, z, (-bl * 0.9, sy, 0.0), (-bl * 1.1, sy + 0.65, 0.0), tr)
        s_tail_dn = capsule(x, y, z, (-bl * 0.9, sy, 0.0), (-bl * 1.4, sy - 0.35, 0.0), tr)
        standing = union(s_body, s_legs, s_head, s_ears, torch.where(up, s_tail_up, s_tail_dn))
        # sitting: upright body, head on top
        t_body = ellipsoid(x, y - bl * 0.75, z, br * 1.2, bl * 0.78, br * 1.1)
        t_head = sphere(x - br * 0.3, y - bl * 1.55 - hr * 0.6, z, hr)
        t_ears = ears(br * 0.3, bl * 1.55 + hr * 0.6, 0.0)
        t_legs = capsule(x, y, z.abs(), (br * 0.9, bl * 0.9, br * 0.45), (br * 1.0, lr, br * 0.45), lr)
        t_tail_up = capsule(x, y, z, (-br * 1.0, 0.15, 0.0), (-br * 1.3, 0.85, 0.0), tr)
        t_tail_dn = capsule(x, y, z, (-br * 1.0, lr, 0.0), (-br * 1.0 - 0.55, lr, 0.25), tr)
        sitting = union(t_body, t_head, t_ears, t_legs, torch.where(up, t_tail_up, t_tail_dn))
        # lying: low flat body, head resting forward
        l_body = ellipsoid(x, y - br * 0.75, z, bl * 1.05, br * 0.75, br * 1.05)
        l_head = sphere(x - bl - hr * 0.2, y - br * 0.75 - hr * 0.3, z, hr)
        l_ears = ears(bl + hr * 0.2, br * 0.75 + hr * 0.3, 0.0)
        l_paws = capsule(x, y, z.abs(), (bl * 0.5, lr, br * 0.4), (bl * 1.25, lr, br * 0.4), lr)
        l_tail_up = capsule(x, y, z, (-bl * 0.9, br * 0.6, 0.0), (-bl * 1.1, br * 0.6 + 0.6, 0.0), tr)
        l_tail_dn = capsule(x, y, z, (-bl * 0.9, br * 0.4, 0.0), (-bl * 1.2, tr, 0.45), tr)
        lying = union(l_body, l_head, l_ears, l_paws, torch.where(up, l_tail_up, l_tail_dn))
        return torch.where(pose == 0, sitting, torch.where(pose == 1, standing, lying))


# ----------------------------------------------------------------------------------------------------------------------
# primitives

class Cube(Family):
    name = "cube"
    nouns = [("cube", {}), ("block", {}), ("dice", {}), ("die", {}), ("square block", {}), ("building block", {}),
             ("cube shape", {})]
    attrs = [A("edges", V("sharp", ["sharp-edged", "sharp"], ["with sharp edges"]),
               V("rounded", ["rounded", "round-edged"], ["with rounded edges"]))]

    def params(self, r, av):
        return dict(rr=W(av[:, 0] == 0, r.u(0.0, 0.02), r.u(0.15, 0.25)))

    def sdf(self, p, x, y, z):
        return round_box(x, y, z, 0.9, 0.9, 0.9, C(p["rr"]))


class Sphere(Family):
    name = "sphere"
    nouns = [("sphere", {}), ("ball", {}), ("orb", {}), ("globe", {}), ("marble", {}), ("bead", {})]
    attrs = [A("shape", V("round", ["round", "perfect"], []), V("flat", ["flattened", "squashed"], []))]

    def params(self, r, av):
        return dict(ry=W(av[:, 0] == 0, torch.full((r.n,), 0.9), r.u(0.45, 0.6)))

    def sdf(self, p, x, y, z):
        return ellipsoid(x, y, z, 0.9, C(p["ry"]), 0.9)


class Cylinder(Family):
    name = "cylinder"
    nouns = [("cylinder", {}), ("column", {}), ("pillar", {}), ("rod", {}), ("can", {}), ("tube", {}),
             ("disc", {"height": "flat"}), ("disk", {"height": "flat"})]
    attrs = [A("height", V("tall", ["tall", "long"], []), V("flat", ["flat", "short"], []))]

    def params(self, r, av):
        return dict(h=W(av[:, 0] == 0, r.u(0.8, 0.95), r.u(0.12, 0.25)),
                    R=W(av[:, 0] == 0, r.u(0.25, 0.45), r.u(0.8, 0.9)))

    def sdf(self, p, x, y, z):
        return cyl_y(x, y, z, C(p["R"]), C(p["h"]))


class Cone(Family):
    name = "cone"
    nouns = [("cone", {}), ("spike", {}), ("cone shape", {}), ("conical shape", {}), ("traffic cone", {"height": "tall"}),
             ("party hat", {})]
    attrs = [A("height", V("tall", ["tall", "pointy"], []), V("short", ["short", "wide"], []))]

    def params(self, r, av):
        return dict(h=W(av[:, 0] == 0, r.u(0.85, 0.95), r.u(0.3, 0.45)),
                    R=W(av[:, 0] == 0, r.u(0.35, 0.5), r.u(0.85, 0.95)))

    def sdf(self, p, x, y, z):
        return capped_cone_y(x, y, z, C(p["R"]), 0.0, C(p["h"]))


class Pyramid(Family):
    name = "pyramid"
    nouns = [("pyramid", {}), ("pyramid shape", {}), ("egyptian pyramid", {"base": "square"}),
             ("square pyramid", {"base": "square"}), ("tetrahedron", {"base": "tri"}),
             ("triangular pyramid", {"base": "tri"})]
    attrs = [A("base", V("square", ["square-based", "four-sided"], ["with a square base"]),
               V("tri", ["three-sided"], ["with a triangular base"])),
             A("height", V("tall", ["tall", "steep"], []), V("flat", ["flat", "low"], []))]

    def params(self, r, av):
        return dict(tri=(av[:, 0] == 1).float(), h=W(av[:, 1] == 0, r.u(1.5, 1.8), r.u(0.5, 0.7)))

    def sdf(self, p, x, y, z):
        h = C(p["h"])
        return torch.where(C(p["tri"]).bool(), pyramid_tri(x, y, z, 0.55, h), pyramid_sq(x, y, z, 0.9, h))


class Torus(Family):
    name = "torus"
    nouns = [("torus", {}), ("donut", {}), ("doughnut", {}), ("ring", {}), ("bagel", {}), ("hoop", {}),
             ("life ring", {})]
    attrs = [A("thickness", V("thick", ["thick", "fat"], []), V("thin", ["thin", "slim"], []))]

    def params(self, r, av):
        return dict(r=W(av[:, 0] == 0, r.u(0.28, 0.36), r.u(0.08, 0.13)), R=r.u(0.55, 0.65))

    def sdf(self, p, x, y, z):
        return torus_y(x, y, z, C(p["R"]), C(p["r"]))


class Capsule(Family):
    name = "capsule"
    nouns = [("capsule", {}), ("pill", {}), ("lozenge", {}), ("pill shape", {}), ("capsule shape", {}),
             ("vitamin pill", {})]
    attrs = [A("length", V("long", ["long", "elongated"], []), V("short", ["short", "stubby"], []))]

    def params(self, r, av):
        return dict(h=W(av[:, 0] == 0, r.u(0.6, 0.75), r.u(0.15, 0.25)), R=r.u(0.3, 0.4))

    def sdf(self, p, x, y, z):
        h, R = C(p["h"]), C(p["R"])
        return capsule(x, y, z, (0.0, -h, 0.0), (0.0, h, 0.0), R)


FAMILIES = [Chair(), Stool(), Table(), Bench(), Bed(), Bookshelf(), Door(), Lamp(), Mug(), Bowl(), Vase(), Bottle(),
            Mushroom(), RoundTree(), PineTree(), Cactus(), Rock(), Snowman(), House(), Tower(), Pagoda(), Arch(),
            Bridge(), Fence(), Car(), Rocket(), Boat(), Sword(), Axe(), Hammer(), Shield(), Crown(), Key(), Barrel(),
            Crate(), Chest(), Ladder(), Burger(), Cat(), Cube(), Sphere(), Cylinder(), Cone(), Pyramid(), Torus(),
            Capsule()]
FAMILY_INDEX = {f.name: i for i, f in enumerate(FAMILIES)}


def family_seed(seed, fam_idx, salt=0):
    return (seed * 1000003 + fam_idx * 7919 + salt * 104729) % (2 ** 62)


def sample_family(fam_idx, n, seed, combos=None):
    """Deterministic: returns (params dict of CPU tensors [n,...], attr value indices LongTensor [n, n_attrs])."""
    fam = FAMILIES[fam_idx]
    g = torch.Generator().manual_seed(family_seed(seed, fam_idx))
    nc = fam.combos()
    if combos is None:
        # every combination equally often (cyclic), then shuffled
        combos = torch.arange(n) % nc
        combos = combos[torch.randperm(n, generator=g)]
    av = torch.tensor([fam.combo_to_attr(int(c)) for c in combos], dtype=torch.long).reshape(n, len(fam.attrs))
    prm = fam.params(Rand(g, n), av)
    prm = {k: v.float() for k, v in prm.items()}
    return prm, av


def eval_sdf(fam_idx, prm, pts):
    """pts: [B, P, 3] in the raw frame; prm: dict of tensors [B,...] on pts.device. Returns [B, P]."""
    x, y, z = pts[..., 0], pts[..., 1], pts[..., 2]
    return FAMILIES[fam_idx].sdf(prm, x, y, z) - DILATION


def eval_sdf_normalized(fam_idx, prm, center, scale, pts):
    """SDF in the normalised frame: sdf_n(q) = s * sdf(q / s + c). center [B,3], scale [B]."""
    raw = pts / scale[:, None, None] + center[:, None, :]
    return eval_sdf(fam_idx, prm, raw) * scale[:, None]


def slice_params(prm, idx):
    return {k: v[idx] for k, v in prm.items()}


def params_to(prm, device):
    return {k: v.to(device) for k, v in prm.items()}
