#!/usr/bin/env python3
"""xwd2png.py IN.xwd OUT.png: a screenshot of `xwd -root` (ZPixmap, 24 or
32 bits a pixel, as Xvfb's TrueColor screens make) as an RGB PNG.
Python's standard library only (the test keeps it as an artefact)."""
import struct
import sys
import zlib


def main(src, dst):
    d = open(src, "rb").read()
    f = struct.unpack(">25I", d[:100])
    header_size, fmt, width, height = f[0], f[2], f[4], f[5]
    byte_order, bpp, bpl, ncolors = f[7], f[11], f[12], f[19]
    rmask, gmask, bmask = f[14], f[15], f[16]
    if fmt != 2 or bpp not in (24, 32):
        sys.exit("xwd2png: not a 24/32-bit ZPixmap (format %d, %d bpp)"
                 % (fmt, bpp))
    pix = d[header_size + 12 * ncolors:]
    step = bpp // 8
    shifts = [(m & -m).bit_length() - 1 for m in (rmask, gmask, bmask)]
    rows = []
    for y in range(height):
        line = pix[y * bpl:y * bpl + width * step]
        row = bytearray(b"\0")
        for x in range(0, len(line), step):
            v = int.from_bytes(line[x:x + step],
                               "little" if byte_order == 0 else "big")
            row += bytes((v >> s) & 0xFF for s in shifts)
        rows.append(bytes(row))

    def chunk(kind, data):
        c = struct.pack(">I", len(data)) + kind + data
        return c + struct.pack(">I", zlib.crc32(kind + data))

    with open(dst, "wb") as out:
        out.write(b"\x89PNG\r\n\x1a\n")
        out.write(chunk(b"IHDR", struct.pack(">IIBBBBB", width, height,
                                             8, 2, 0, 0, 0)))
        out.write(chunk(b"IDAT", zlib.compress(b"".join(rows), 6)))
        out.write(chunk(b"IEND", b""))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
