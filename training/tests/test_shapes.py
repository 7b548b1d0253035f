"""Shape library tests (CPU): every family yields a non-empty, closed shape inside the unit box after normalisation,
is deterministic from its seed, and its parts are at least two grid cells thick at rb 7 (a 2x2x2 morphological
opening of the rb-7 occupancy keeps almost every voxel).
Usage: /usr/bin/python3 training/tests/test_shapes.py [--quick]   (also collected by pytest)"""
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import captions as CAP  # noqa: E402
import data as D  # noqa: E402
import shapes as S  # noqa: E402
from evaluate import largest_component_fraction  # noqa: E402

torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))


def normalized(fi, n, seed, n_cand=8192, G2=64):
    """The data pipeline's normalisation with its own settings (D.generate_dataset: 8192 candidates, G2 64, a seeded
    generator). A sparser search (1024 / 48, unseeded global RNG) missed crown extents by > 1 cell in 2 of 40
    draws and made this test flaky; with the pipeline's settings 0 of 40 draws fail for crown, pagoda, cactus, sword."""
    prm, av = S.sample_family(fi, n, seed)
    gen = torch.Generator().manual_seed(seed + 17)
    cand, nrm, valid, lo, hi = D.surface_and_bbox(fi, prm, "cpu", n_cand=n_cand, G2=G2, gen=gen)
    center = 0.5 * (lo + hi)
    scale = 2 * D.HALF / (hi - lo).amax(-1)
    return prm, av, center, scale, valid


def rb_grid(fi, prm, center, scale, rb):
    M = 2 ** rb + 1
    return D.occupancy_grid_adaptive(fi, prm, center, scale, res=M).view(-1, M, M, M)


def opening_retention(occ):
    """Share of occupied voxels that lie in, or touch (26-neighbourhood), a fully occupied 2x2x2 block of voxels.
    A part thinner than two grid cells has no full 2x2x2 block, so its voxels are not covered; the one-voxel
    tolerance only forgives the staircase bumps of round cross-sections and cone tips."""
    o = occ.float()[:, None]
    ero = -F.max_pool3d(-o, 2, 1)                  # 1 where a 2x2x2 block starting here is full
    op = F.max_pool3d(F.pad(ero, (1, 1, 1, 1, 1, 1)), 2, 1)  # the opening: union of full blocks
    near = F.max_pool3d(op, 3, 1, 1)
    kept = (near[:, 0] > 0) & occ
    return kept.float().sum((1, 2, 3)) / occ.float().sum((1, 2, 3)).clamp(min=1)


def test_families_count_and_nouns():
    assert len(S.FAMILIES) >= 40
    names = [f.name for f in S.FAMILIES]
    for need in ("chair", "stool", "table", "bench", "bed", "bookshelf", "door", "lamp", "mug", "bowl", "vase", "bottle",
                 "mushroom", "round_tree", "pine_tree", "cactus", "rock", "snowman", "house", "tower", "pagoda", "arch",
                 "bridge", "fence", "car", "rocket", "boat", "sword", "axe", "hammer", "shield", "crown", "key",
                 "barrel", "crate", "chest", "ladder", "burger", "cat", "cube", "sphere", "cylinder", "cone",
                 "pyramid", "torus", "capsule"):
        assert need in names, need
    all_nouns = {}
    for f in S.FAMILIES:
        nouns = [n for n, _ in f.nouns]
        assert len(nouns) >= 5, f.name
        assert len(f.attrs) >= 1, f.name
        for n in nouns:
            assert n not in all_nouns, f"noun '{n}' in {f.name} and {all_nouns[n]}"
            all_nouns[n] = f.name
    for syn, fam in (("armchair", "chair"), ("cup", "mug"), ("truck", "car"), ("cheeseburger", "burger"),
                     ("kitty", "cat"), ("orb", "sphere"), ("ball", "sphere"), ("box", "crate"), ("toadstool", "mushroom"),
                     ("dagger", "sword")):
        assert all_nouns.get(syn) == fam, syn


def test_deterministic():
    for fi in (0, 24, 38):
        a, av = S.sample_family(fi, 5, 123)
        b, bv = S.sample_family(fi, 5, 123)
        assert torch.equal(av, bv)
        assert all(torch.equal(a[k], b[k]) for k in a)
        c, _ = S.sample_family(fi, 5, 124)
        assert any(not torch.equal(a[k], c[k]) for k in a)


def test_every_combination_sampled():
    for fi, f in enumerate(S.FAMILIES):
        _, av = S.sample_family(fi, f.combos() * 2, 7)
        combos = set(tuple(r) for r in av.tolist())
        assert len(combos) == f.combos(), f.name


def test_captions_use_family_words():
    pool = CAP.all_training_captions(8, 0)
    for (fi, c), caps in pool.items():
        nouns = [n for n, _ in S.FAMILIES[fi].nouns]
        for t in caps:
            assert any(n in t for n in nouns), (S.FAMILIES[fi].name, t)


def check_family(fi, n=2, rb=7, seed=3, min_keep=0.99):
    prm, av, center, scale, valid = normalized(fi, n, seed)
    assert bool((valid.float().mean(1) > 0.25).all()), "too few surface points"
    occ = rb_grid(fi, prm, center, scale, rb)
    M = occ.shape[1]
    name = S.FAMILIES[fi].name
    vol = occ.float().sum((1, 2, 3))
    assert bool((vol > 0).all()), f"{name}: empty"
    # closed and inside the unit box: no occupied voxel on the outer faces of the [-1.05, 1.05] grid, and every
    # occupied voxel within |coord| <= 0.9625 + one cell
    border = occ[:, 0].any() or occ[:, -1].any() or occ[:, :, 0].any() or occ[:, :, -1].any() or \
        occ[:, :, :, 0].any() or occ[:, :, :, -1].any()
    assert not bool(border), f"{name}: touches the grid border"
    coords = torch.linspace(-1.05, 1.05, M)
    for b in range(n):
        idx = occ[b].nonzero()
        ext = coords[idx].abs().max()
        assert float(ext) <= D.HALF + 2.1 / (M - 1) + 1e-4, f"{name}: outside the unit box ({float(ext)})"
    keep = opening_retention(occ)
    assert bool((keep >= min_keep).all()), f"{name}: thin parts below 2 cells at rb {rb} (kept {keep.tolist()})"
    # one piece: the evaluation's validity rule (largest 26-connected component >= 90% of the voxels) must hold for
    # the family's own shapes (a pagoda whose tiers floated apart scored 0.36-0.45). rb 6: the labelling is ~20x
    # cheaper than at rb 7 and a gap of one rb-6 cell is already a separate component.
    occ6 = occ if rb == 6 else rb_grid(fi, prm, center, scale, 6)
    frac = largest_component_fraction(occ6.reshape(occ6.shape[0], -1), occ6.shape[1])
    assert bool((frac >= 0.9).all()), f"{name}: falls apart (largest component {frac.tolist()} of the voxels at rb 6)"
    return keep


def test_all_families_closed_inside_and_thick_enough():
    quick = os.environ.get("CUBEFORGE_QUICK_SHAPES") == "1"
    for fi, f in enumerate(S.FAMILIES):
        keep = check_family(fi, n=1 if quick else 2, rb=6 if quick else 7)
        print(f"{f.name:12s} opening retention {[round(float(k), 4) for k in keep]}, one piece", flush=True)


def test_every_combination_one_piece():
    """One shape per attribute combination of every family passes the evaluation's validity rule at rb 6. Two draws
    per family (above) missed that a burger without cheese had 0.01-wide gaps between its layers: 19% of the
    evaluation's burger references were several pieces (largest component down to 0.45)."""
    quick = os.environ.get("CUBEFORGE_QUICK_SHAPES") == "1"
    for fi, f in enumerate(S.FAMILIES):
        n = f.combos()
        if quick and n > 4:
            continue
        prm, av, center, scale, _ = normalized(fi, n, seed=11)
        occ6 = rb_grid(fi, prm, center, scale, 6)
        frac = largest_component_fraction(occ6.reshape(n, -1), occ6.shape[1])
        bad = [(av[i].tolist(), round(float(frac[i]), 3)) for i in range(n) if frac[i] < 0.9]
        assert not bad, f"{f.name}: combinations in pieces (attribute values, largest component): {bad}"


if __name__ == "__main__":
    if "--quick" in sys.argv:
        os.environ["CUBEFORGE_QUICK_SHAPES"] = "1"
    test_families_count_and_nouns()
    test_deterministic()
    test_every_combination_sampled()
    test_captions_use_family_words()
    test_all_families_closed_inside_and_thick_enough()
    test_every_combination_one_piece()
    print("shapes: OK")
