"""Tiny dependency-free previews: orthographic depth-shaded views of occupancy grids, written as PNG."""
import struct
import zlib

import torch


def write_png(path, img):
    """img: uint8 tensor [H, W] or [H, W, 3]."""
    if img.dim() == 2:
        img = img[..., None].expand(-1, -1, 3)
    H, W, _ = img.shape
    raw = b"".join(b"\x00" + bytes(img[y].contiguous().view(-1).tolist()) for y in range(H))

    def chunk(tag, data):
        c = struct.pack(">I", len(data)) + tag + data
        return c + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", W, H, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b"")
    with open(path, "wb") as f:
        f.write(png)


def views(occ):
    """occ: bool [R,R,R] indexed [x,y,z] (Y up). Returns uint8 [R, 3R]: front (looking -z), side (looking -x), top."""
    R = occ.shape[0]
    o = occ.float()
    ar = torch.arange(R, dtype=torch.float32)

    def depth(vol, axis_len):  # first hit along last dim, from the high end toward low
        hit = vol.flip(-1)
        any_ = hit.amax(-1) > 0
        first = torch.argmax(hit, dim=-1).float()
        shade = 255 - first / axis_len * 180
        return torch.where(any_, shade, torch.full_like(shade, 30.0))

    front = depth(o, R)                       # [x, y] seen from +z
    side = depth(o.permute(2, 1, 0), R)       # [z, y] seen from +x
    top = depth(o.permute(0, 2, 1), R)        # [x, z] seen from +y
    f = front.t().flip(0)                     # rows = y (top first), cols = x
    s = side.t().flip(0)
    t = top.t()                               # rows = z, cols = x
    img = torch.cat([f, s, t], 1)
    return img.clamp(0, 255).to(torch.uint8)


def sheet(grids, labels=None, cols=6):
    """grids: list of bool [R,R,R]. Returns uint8 image with a 2-pixel separator."""
    tiles = [views(g) for g in grids]
    R = tiles[0].shape[0]
    h, w = R + 2, 3 * R + 4
    rows = (len(tiles) + cols - 1) // cols
    img = torch.zeros(rows * h, cols * w, dtype=torch.uint8)
    for i, t in enumerate(tiles):
        r, c = divmod(i, cols)
        img[r * h:r * h + R, c * w:c * w + 3 * R] = t
    return img


SAMPLE_PROMPTS = ["a burger", "a tall chair with a high back", "a pine tree with three tiers", "a red car with six wheels",
                  "a mug with a handle", "a round table with one leg", "a sitting cat", "a two-story house with a chimney",
                  "a three-tier pagoda", "a tall lamp with a drum shade", "a four-legged bar stool", "a castle tower",
                  "a sword", "a wooden barrel", "a snowman", "a rocket", "a crown with eight points", "a cactus with two arms"]


def main():
    """Sample sheet of a model directory: greedy generations of SAMPLE_PROMPTS (guidance 3, reference mode), front /
    side / top depth views of each 48^3 occupancy grid, in prompt order, 6 per row."""
    import argparse
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import clip_bpe
    import export as E
    import infer as I
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "assets",
                                                     "default-model"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--res", type=int, default=48)
    a = ap.parse_args()
    gpt, vae, clip, clip_dir = E.load_model_dir(a.model, "cpu")
    tok = clip_bpe.ClipTokenizer(clip_dir)
    with torch.no_grad():
        ids = I.generate(gpt, clip, vae, tok, SAMPLE_PROMPTS, guidance=3.0, mode="reference")
        occ = I.decode_occupancy(vae, ids, res=a.res, batch=4, chunk=16384)
    grids = [g.view(a.res, a.res, a.res) for g in occ]
    write_png(a.out, sheet(grids))
    for i, p in enumerate(SAMPLE_PROMPTS):
        r, c = divmod(i, 6)
        print(f"row {r + 1}, column {c + 1}: {p}")


if __name__ == "__main__":
    main()
