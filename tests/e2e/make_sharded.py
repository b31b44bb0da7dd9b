#!/usr/bin/env python3
"""An independent writer of a sharded Hugging Face safetensors model, from
specs/safetensors.md and the Hugging Face layout (plain Python, no
tensorfs code):

    make_sharded.py DIR [--shards N] [--tensors N] [--break KIND]

writes DIR/model-0000K-of-0000N.safetensors and
DIR/model.safetensors.index.json, and DIR/expected/<name> holding each
tensor's bytes.  --break makes one thing wrong: missing-shard,
missing-tensor (the index lists a tensor no shard has), wrong-shard,
corrupt-shard, unlisted (a shard tensor the index omits: a warning),
total (a wrong total_size: a warning).
"""
import argparse
import json
import os
import random
import struct


def write_shard(path, tensors):
    header, data = {"__metadata__": {"format": "pt"}}, b""
    for name, dtype, shape, blob in tensors:
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(data), len(data) + len(blob)]}
        data += blob
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--shards", type=int, default=3)
    ap.add_argument("--tensors", type=int, default=12)
    ap.add_argument("--break", dest="brk", default="")
    a = ap.parse_args()
    rnd = random.Random(7)
    os.makedirs(os.path.join(a.dir, "expected"), exist_ok=True)
    tensors = []
    for i in range(a.tensors):
        dtype, size, fmt = [("F32", 4, "<f"), ("F16", 2, "<e"),
                            ("I64", 8, "<q")][i % 3]
        shape = [1 + i % 4, 3]
        n = shape[0] * shape[1]
        vals = [rnd.randint(-100, 100) for _ in range(n)]
        blob = b"".join(struct.pack(fmt, v) for v in vals)
        name = f"model.layers.{i // 3}.w{i % 3}"
        tensors.append((name, dtype, shape, blob))
        with open(os.path.join(a.dir, "expected", name), "wb") as f:
            f.write(blob)
    names = [f"model-{k + 1:05d}-of-{a.shards:05d}.safetensors"
             for k in range(a.shards)]
    weight_map, total = {}, 0
    for k, shard in enumerate(names):
        part = tensors[k::a.shards]
        for t in part:
            weight_map[t[0]] = shard
            total += len(t[3])
        if a.brk == "unlisted" and k == 0:
            part = part + [("extra.bias", "U8", [2], b"\x01\x02")]
        if a.brk == "missing-shard" and k == 1:
            continue
        write_shard(os.path.join(a.dir, shard), part)
    if a.brk == "corrupt-shard":
        with open(os.path.join(a.dir, names[1]), "r+b") as f:
            f.seek(8)
            f.write(b"[")
    if a.brk == "missing-tensor":
        weight_map["model.ghost"] = names[0]
    if a.brk == "wrong-shard":
        weight_map[tensors[0][0]] = names[1]
    if a.brk == "total":
        total += 1
    with open(os.path.join(a.dir, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total},
                   "weight_map": weight_map}, f, indent=2)


if __name__ == "__main__":
    main()
