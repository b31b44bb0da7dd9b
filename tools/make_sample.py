#!/usr/bin/env python3
"""Write data/sample.zt: the bundled sample checkpoint.

A small zTensor v1.0 file (magic at 0, no footer, long dtype names, a
`tensors` map, dense raw tensors), laid out exactly as the reference writer
(pie-project/ztensor 1.0) lays files out: 64-byte aligned blobs in write
order, then the CBOR manifest (struct keys in declaration order, names sorted
bytewise), then the u64 LE manifest size.  Deterministic: the same bytes on
every run, so tests can compare the committed file with a fresh one.

Standard library only.
Usage: make_sample.py [OUTPUT]             the sample (default data/sample.zt)
       make_sample.py --dump NAME          one tensor's bytes to stdout
       make_sample.py --many N BYTES OUT [DIRS]
                                           N tensors "block.<i>.data" of BYTES
                                           pseudo-random bytes each (tests)
       make_sample.py --hostile OUT        tensors with hostile names (tests)
       make_sample.py --big BYTES OUT      one uint8 tensor "big" of BYTES
                                           random bytes (benchmarks)
"""
import math
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "fixtures"))
import _lib  # noqa: E402


def cbor(v):
    """CBOR of the manifest (tests/fixtures/_lib.py); it holds no bools"""
    if isinstance(v, bool):
        raise TypeError("no bools in the manifest")
    return _lib.cbor(v)


def floats(n, f):
    return struct.pack("<%df" % n, *(f(i) for i in range(n)))


# (name, dtype, shape, bytes) in write order
TENSORS = [
    ("embed.weight", "float32", [8, 4], floats(32, lambda i: round(math.sin(i) / 2, 6))),
    ("encoder.layers.0.weight", "float32", [4, 4], floats(16, lambda i: (i - 8) / 8)),
    ("encoder.layers.0.bias", "float32", [4], floats(4, lambda i: 0.1 * i)),
    ("encoder.layers.1.weight", "float32", [4, 4], floats(16, lambda i: 1.0 if i % 5 == 0 else 0.0)),
    ("encoder.layers.1.bias", "float32", [4], floats(4, lambda i: -0.5)),
    ("head.weight", "float16", [2, 4], struct.pack("<8e", *[0.25 * i for i in range(8)])),
    ("head.scale", "float64", [], struct.pack("<d", math.pi)),
    ("step", "int64", [], struct.pack("<q", 1000)),
    ("vocab.mask", "uint8", [8], bytes([1, 1, 0, 1, 0, 0, 1, 1])),
]


def many(n, size, dirs=0):
    """n uint8 tensors of pseudo-random bytes (an LCG: deterministic);
    "block.<i>.data", or "block.<i mod dirs>.t<i>" spread over @dirs
    directories."""
    state = 12345
    result = []
    for i in range(n):
        data = bytearray(size)
        for k in range(0, size, 4):
            state = (state * 1103515245 + 12345) & 0xFFFFFFFF
            data[k:k + 4] = struct.pack("<I", state)[: size - k]
        name = ("block.%d.t%d" % (i % dirs, i) if dirs else
                "block.%d.data" % i)
        result.append((name, "uint8", [size], bytes(data)))
    return result


# Names a container may hold that must neither escape the mount nor collide
# (docs/tree.md).  CBOR text must be UTF-8, so no raw invalid bytes here;
# those are covered by the unit tests of the name rules.
HOSTILE_NAMES = [
    "../../etc/passwd", "a/../../b", "..", ".", "", "/abs/path", "x", "x.y",
    "x/y", "x~1", "new\nline\ttab\x1b[31m", "%2E%2E", "caf\u00e9.\u2603",
    "d" * 300, "d" * 301, "e." * 100 + "end", ".tensorfs", "p//q", "trail.",
]


def hostile():
    return [(name, "uint8", [4], struct.pack("<I", i))
            for i, name in enumerate(HOSTILE_NAMES)]


def build(tensors=TENSORS):
    out = bytearray(b"ZTEN1000")
    placed = {}
    for name, dtype, shape, data in tensors:
        out += b"\0" * (-len(out) % 64)
        placed[name] = (dtype, shape, len(out), len(data))
        out += data
    tensors = {}
    for name in sorted(placed, key=lambda s: s.encode()):
        dtype, shape, off, length = placed[name]
        tensors[name] = {
            "dtype": dtype,
            "shape": shape,
            "format": "dense",
            "components": {"data": {"offset": off, "length": length}},
        }
    manifest = cbor({
        "version": "1.0",
        "generator": "zTensor-Rust v0.1.0",
        "attributes": {},
        "tensors": tensors,
    })
    out += manifest + struct.pack("<Q", len(manifest))
    return bytes(out)


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--dump"]:
        sys.stdout.buffer.write(dict((t[0], t[3]) for t in TENSORS)[args[1]])
    elif args[:1] == ["--big"]:
        size = int(args[1])
        manifest = cbor({
            "version": "1.0", "generator": "zTensor-Rust v0.1.0",
            "attributes": {},
            "tensors": {"big": {"dtype": "uint8", "shape": [size],
                                "format": "dense", "components": {
                                    "data": {"offset": 64, "length": size}}}},
        })
        with open(args[2], "wb") as f:
            f.write(b"ZTEN1000" + b"\0" * 56)
            for done in range(0, size, 1 << 24):
                f.write(os.urandom(min(1 << 24, size - done)))
            f.write(manifest + struct.pack("<Q", len(manifest)))
    elif args[:1] == ["--hostile"]:
        with open(args[1], "wb") as f:
            f.write(build(hostile()))
    elif args[:1] == ["--many"]:
        with open(args[3], "wb") as f:
            f.write(build(many(int(args[1]), int(args[2]),
                               int(args[4]) if len(args) > 4 else 0)))
    else:
        with open(args[0] if args else "data/sample.zt", "wb") as f:
            f.write(build())
