#!/usr/bin/env python3
"""Reads a PNG written by the editor (8-bit RGBA, non-interlaced) and prints "WIDTH HEIGHT COLORS": the number of
distinct colours in its top ROWS rows (default 24: the menu bar of a window screenshot). Used by e2e_gui.sh to check
that a window screenshot has the window's size and is not one flat colour. Standard library only."""
import struct
import sys
import zlib


def probe(path, rows):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"{path}: not a PNG")
    pos, idat, w, h = 8, b"", 0, 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype != 6 or interlace != 0:
                raise SystemExit(f"{path}: expected 8-bit RGBA, non-interlaced")
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride, prev, colors = w * 4, bytearray(w * 4), set()
    for y in range(min(rows, h)):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - 4] if i >= 4 else 0
            b = prev[i]
            c = prev[i - 4] if i >= 4 else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        colors.update(bytes(line[i:i + 3]) for i in range(0, stride, 4))
        prev = line
    return w, h, len(colors)


if __name__ == "__main__":
    print(*probe(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 24))
