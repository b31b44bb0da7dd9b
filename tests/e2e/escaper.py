#!/usr/bin/env python3
"""Containers whose names and strings hold control bytes, for escaper.sh:
valid ones (every tensor must still be listed, every line printable) and
refused ones (one printable line).  Written into the directory argv[1]."""
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(ROOT, "tools"))
sys.path.insert(0, os.path.join(ROOT, "tests", "fixtures", "gguf"))
import make_sample  # noqa: E402
import generate as gguf_gen  # noqa: E402

# newline, ESC (a colour), BEL, DEL, C1 CSI (U+009B), tab
EVIL = ["we\nght\x1b[31m", "bell\x07", "del\x7f", "csi\u009b2J", "t\tab"]


def safetensors(names, dtype="F32"):
    hdr, off = {}, 0
    for n in names:
        hdr[n] = {"dtype": dtype, "shape": [1], "data_offsets": [off, off + 4]}
        off += 4
    hdr["__metadata__"] = {"note\x1b]0;title\x07": "v\x7f\u0085"}
    h = json.dumps(hdr).encode()
    return struct.pack("<Q", len(h)) + h + b"\0" * off


def safetensors_dup():
    """the same evil name twice"""
    e = json.dumps(EVIL[0])
    t = '{"dtype":"F32","shape":[1],"data_offsets":[0,4]}'
    h = ("{%s:%s,%s:%s}" % (e, t, e, t)).encode()
    return struct.pack("<Q", len(h)) + h + b"\0" * 4


def ztensor_bad():
    """zTensor 1.x: an evil name with an unknown, evil dtype (issue 22)"""
    manifest = make_sample.cbor({
        "version": "1.2", "generator": "x", "attributes": {},
        "tensors": {EVIL[0]: {"dtype": "bogus\nx", "shape": [1],
                              "format": "dense", "components": {
                                  "data": {"offset": 64, "length": 1}}}}})
    return (b"ZTEN1000" + b"\0" * 56 + b"\0" * 8 + manifest +
            struct.pack("<Q", len(manifest)))


def gguf_del():
    """GGUF whose metadata string holds DEL and a C1 control"""
    blob, _ = gguf_gen.gguf(
        [("general.architecture", gguf_gen.STR, "llama\x7f\u009b[2J"),
         ("evil\nkey", gguf_gen.STR, "x\x1b[0m")],
        [(EVIL[1], [4], 0)])
    return blob


def main():
    out = sys.argv[1]
    files = {
        "valid/evil.safetensors": safetensors(EVIL),
        "valid/evil.zt": make_sample.build(make_sample.hostile()),
        "valid/evil.gguf": gguf_del(),
        "reject/evil_dtype.zt": ztensor_bad(),
        "reject/evil_dtype.safetensors": safetensors(EVIL[:1], "F\x1b3"),
        "reject/evil_dup.safetensors": safetensors_dup(),
    }
    for rel, blob in files.items():
        path = os.path.join(out, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(blob)


if __name__ == "__main__":
    main()
