#!/usr/bin/env python3
"""A zTensor 2 root whose parts live in shard files beside it (upstream's
positional convention: DIR/STEM.zt, shard N is DIR/STEM-N.zt), for
companions.sh.  Writes, into argv[1]: model.zt (a local part and two
shard parts), model-00001-of-00002.zt (the shard) and prints, one per
line, "PART-PATH SHA256" of what each part must read back as."""
import hashlib
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "fixtures", "ztensor2"))
import generate as g  # noqa: E402


def main():
    out = sys.argv[1]
    far = struct.pack("<4f", 1.5, -2.0, 3.25, 0.0)
    big = bytes((i * 7) & 0xff for i in range(8192))
    here = b"\x05\x06"
    # the shard: any zTensor 2 file; its blobs at 4096 and 8192
    shard = g.container([(4096, far), (8192, big)], g.model([]))
    table = {"00001-of-00002": {"size": len(shard),
                                "digest": "sha256:" +
                                hashlib.sha256(shard).hexdigest()}}
    objects = [
        g.obj("far", "dense", [4], {"data": g.part(
            "data", 4096, far, "f32", shard="00001-of-00002")}),
        g.obj("big", "dense", [8192], {"data": g.part(
            "data", 8192, big, "u8", shard="00001-of-00002",
            digest="sha256:" + hashlib.sha256(big).hexdigest())}),
        g.obj("here", "dense", [2], {"data": g.part(
            "data", 4096, here, "u8")}),
    ]
    root = g.container([(4096, here)], g.model(objects, shards=table))
    with open(os.path.join(out, "model.zt"), "wb") as f:
        f.write(root)
    with open(os.path.join(out, "model-00001-of-00002.zt"), "wb") as f:
        f.write(shard)
    for name, data in (("far", far), ("big", big), ("here", here)):
        print(name, hashlib.sha256(data).hexdigest())


if __name__ == "__main__":
    main()
