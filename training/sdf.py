"""Batched signed-distance primitives and CSG in torch (CPU or GPU).

Convention: points are given as separate coordinate tensors x, y, z of shape [B, P]; every size/centre parameter is a
tensor of shape [B, 1] (one value per shape, broadcast over its points) or a plain float. Y is up. Negative = inside.
Most functions are exact SDFs; CSG min/max results are bounds (exact sign, distance a lower bound), which is all the
data pipeline needs (sign for occupancy, a few projection steps for surface samples).
"""
import math
import torch

BIG = 1e3


def length2(a, b):
    return torch.sqrt(a * a + b * b + 1e-12)


def length3(a, b, c):
    return torch.sqrt(a * a + b * b + c * c + 1e-12)


def box(x, y, z, hx, hy, hz):
    qx, qy, qz = x.abs() - hx, y.abs() - hy, z.abs() - hz
    outside = length3(qx.clamp(min=0), qy.clamp(min=0), qz.clamp(min=0))
    inside = torch.maximum(torch.maximum(qx, qy), qz).clamp(max=0)
    return outside + inside


def round_box(x, y, z, hx, hy, hz, r):
    return box(x, y, z, hx - r, hy - r, hz - r) - r


def sphere(x, y, z, r):
    return length3(x, y, z) - r


def ellipsoid(x, y, z, rx, ry, rz):
    k0 = length3(x / rx, y / ry, z / rz)
    k1 = length3(x / (rx * rx), y / (ry * ry), z / (rz * rz))
    return k0 * (k0 - 1.0) / k1.clamp(min=1e-6)


def cyl_y(x, y, z, r, h):
    """Capped cylinder around the Y axis, radius r, half-height h."""
    dx = length2(x, z) - r
    dy = y.abs() - h
    return torch.maximum(dx, dy).clamp(max=0) + length2(dx.clamp(min=0), dy.clamp(min=0))


def cyl_x(x, y, z, r, h):
    return cyl_y(y, x, z, r, h)


def cyl_z(x, y, z, r, h):
    return cyl_y(x, z, y, r, h)


def capsule(x, y, z, a, b, r):
    """Segment a->b (tuples of [B,1] tensors or floats), radius r."""
    pax, pay, paz = x - a[0], y - a[1], z - a[2]
    bax, bay, baz = b[0] - a[0], b[1] - a[1], b[2] - a[2]
    bb = bax * bax + bay * bay + baz * baz
    if not torch.is_tensor(bb):
        bb = torch.tensor(bb)
    h = ((pax * bax + pay * bay + paz * baz) / bb.clamp(min=1e-9)).clamp(0.0, 1.0)
    return length3(pax - bax * h, pay - bay * h, paz - baz * h) - r


def capped_cone_y(x, y, z, r1, r2, h):
    """Cone frustum around Y: radius r1 at y=-h, r2 at y=+h (IQ's exact sdCappedCone)."""
    qx = length2(x, z)
    qy = y
    zero = torch.zeros_like(qx)
    k2x, k2y = r2 - r1, 2.0 * h
    rsel = torch.where(qy < 0, zero + r1, zero + r2)
    cax = qx - torch.minimum(qx, rsel)
    cay = qy.abs() - h
    k1x, k1y = r2, h
    dot = ((k1x - qx) * k2x + (k1y - qy) * k2y) / (k2x * k2x + k2y * k2y)
    t = dot.clamp(0.0, 1.0)
    cbx = qx - k1x + k2x * t
    cby = qy - k1y + k2y * t
    s = torch.where((cbx < 0) & (cay < 0), -torch.ones_like(qx), torch.ones_like(qx))
    return s * torch.sqrt(torch.minimum(cax * cax + cay * cay, cbx * cbx + cby * cby) + 1e-12)


def torus_y(x, y, z, R, r):
    return length2(length2(x, z) - R, y) - r


def torus_z(x, y, z, R, r):
    return length2(length2(x, y) - R, z) - r


def torus_x(x, y, z, R, r):
    return length2(length2(y, z) - R, x) - r


def plane(x, y, z, nx, ny, nz, d):
    """Signed distance to the half-space n.p <= d (n normalised inside)."""
    inv = 1.0 / math.sqrt(nx * nx + ny * ny + nz * nz) if not torch.is_tensor(nx) else 1.0 / torch.sqrt(nx * nx + ny * ny + nz * nz)
    return (x * nx + y * ny + z * nz - d) * inv


def pyramid_sq(x, y, z, a, h):
    """Square pyramid, base half-width a at y=0, apex at y=h (intersection of planes: exact sign)."""
    n = torch.sqrt(h * h + a * a) if torch.is_tensor(h) else math.sqrt(h * h + a * a)
    sx = (h * x.abs() + a * y - a * h) / n
    sz = (h * z.abs() + a * y - a * h) / n
    return torch.maximum(torch.maximum(sx, sz), -y)


def pyramid_tri(x, y, z, a, h):
    """Triangular pyramid: equilateral base with inradius a at y=0, apex at y=h."""
    d = -y
    n = torch.sqrt(h * h + a * a) if torch.is_tensor(h) else math.sqrt(h * h + a * a)
    for k in range(3):
        ang = 2 * math.pi * k / 3 + math.pi / 2
        c, s = math.cos(ang), math.sin(ang)
        r = x * c + z * s
        d = torch.maximum(d, (h * r + a * y - a * h) / n)
    return d


def prism_gable(x, y, z, hx, base_y, half_w, height):
    """Gable roof: triangular prism along X, ridge at base_y+height, eaves at base_y with half width half_w (along Z)."""
    n = torch.sqrt(height * height + half_w * half_w) if torch.is_tensor(height) else math.sqrt(height * height + half_w * half_w)
    slant = (height * z.abs() + half_w * (y - base_y) - half_w * height) / n
    return torch.maximum(torch.maximum(slant, base_y - y), x.abs() - hx)


def union(*ds):
    out = ds[0]
    for d in ds[1:]:
        out = torch.minimum(out, d)
    return out


def inter(*ds):
    out = ds[0]
    for d in ds[1:]:
        out = torch.maximum(out, d)
    return out


# Outward offset applied to every family's surface by shapes.eval_sdf (raw units). Cavities cut with sub() keep their
# size (the cutter grows by the same amount), so openings stay open while every solid part gains thickness.
DILATION = 0.02


def sub(a, b):
    return torch.maximum(a, DILATION - b)


def smin(a, b, k):
    h = (0.5 + 0.5 * (b - a) / k).clamp(0.0, 1.0)
    return b * (1 - h) + a * h - k * h * (1 - h)


def masked(d, mask):
    """Remove a part where mask (bool [B,1]) is False."""
    return torch.where(mask, d, torch.full_like(d, BIG))


def rot_y(x, z, ang):
    c, s = torch.cos(ang), torch.sin(ang)
    return c * x - s * z, s * x + c * z


def rot_z(x, y, ang):
    c, s = torch.cos(ang), torch.sin(ang)
    return c * x - s * y, s * x + c * y


def rot_x(y, z, ang):
    c, s = torch.cos(ang), torch.sin(ang)
    return c * y - s * z, s * y + c * z


def polar_repeat(x, z, count, phase=0.0):
    """Fold (x, z) into the first of `count` angular sectors around Y (count: [B,1] tensor); sector centred on +X."""
    ang = torch.atan2(z, x) - phase
    sector = 2 * math.pi / count
    a = torch.remainder(ang + sector / 2, sector) - sector / 2
    r = length2(x, z)
    return r * torch.cos(a), r * torch.sin(a)


def repeat_limited(t, spacing, lo, hi):
    """Domain repetition along one axis: t - spacing*clamp(round(t/spacing), lo, hi)."""
    k = torch.clamp(torch.round(t / spacing), lo, hi)
    return t - spacing * k
