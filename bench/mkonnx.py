#!/usr/bin/env python3
"""Write a large ONNX model for bench/onnx_mount.sh (not a test).

    mkonnx.py OUT.onnx TENSORS MIB_EACH [external]

TENSORS float32 initializers of MIB_EACH MiB each, named
layers.N.weight, in raw_data (the default) or, with "external", all in
OUT.onnx_data back to back (location/offset/length, as onnx's
save_as_external_data with all_tensors_to_one_file writes them).  The
element bytes are left as holes (zeros): the files are sparse.
"""
import sys


def varint(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def key(n, w):
    return varint(n << 3 | w)


def ln(n, b):
    return key(n, 2) + varint(len(b)) + b


out, n, mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
external = len(sys.argv) > 4 and sys.argv[4] == "external"
size = mib << 20
heads = []
for i in range(n):
    name = b"layers.%d.weight" % i
    t = key(1, 0) + varint(size // 4) + key(2, 0) + varint(1) + ln(8, name)
    if external:
        loc = out.rsplit("/", 1)[-1] + "_data"
        t += ln(13, ln(1, b"location") + ln(2, loc.encode()))
        t += ln(13, ln(1, b"offset") + ln(2, b"%d" % (i * size)))
        t += ln(13, ln(1, b"length") + ln(2, b"%d" % size))
        t += key(14, 0) + varint(1)
        heads.append((t, 0))
    else:
        t += key(9, 2) + varint(size)
        heads.append((t, size))
glen = sum(len(key(5, 2)) + len(varint(len(h) + s)) + len(h) + s for h, s in heads)
with open(out, "wb") as f:
    f.write(key(1, 0) + varint(8) + ln(2, b"bench")[:0] + key(7, 2) + varint(glen))
    for h, s in heads:
        f.write(key(5, 2) + varint(len(h) + s) + h)
        f.seek(s, 1)
    f.write(ln(8, key(2, 0) + varint(17)))
    f.truncate()
if external:
    with open(out + "_data", "wb") as f:
        f.truncate(n * size)
