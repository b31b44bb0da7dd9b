#!/usr/bin/python3
"""A GPTQ v1 4-bit layer (OUT x IN, group 128) as DIR/model.safetensors +
DIR/config.json, random, for bench/quant_read.sh; then, with --ref, the
numpy reference dequantization (quantized-views.md section 3, vectorized)
timed over the same file: prints 'numpy SECONDS SHA256'.

Usage: mkgptq.py DIR [SIZE] [--ref]
"""
import hashlib
import json
import os
import struct
import sys
import time

import numpy as np

d = sys.argv[1]
size = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else 4096
out, inp, G, b = size, size, 128, 4
os.chdir(d)
rng = np.random.default_rng(1)
k = 32 // b
q = rng.integers(0, 16, size=(inp, out), dtype=np.uint32)
qw = np.zeros((inp // k, out), dtype=np.uint32)
for j in range(k):
    qw |= q[j::k, :] << (j * b)
ng = inp // G
z = rng.integers(0, 15, size=(ng, out), dtype=np.uint32)
qz = np.zeros((ng, out // k), dtype=np.uint32)
for j in range(k):
    qz |= z[:, j::k] << (j * b)
sc = (rng.random((ng, out), dtype=np.float32) * 0.01).astype(np.float16)
gidx = (np.arange(inp) // G).astype(np.int32)
t = {"l.qweight": ("I32", qw.view(np.int32)), "l.qzeros": ("I32", qz.view(np.int32)),
     "l.scales": ("F16", sc), "l.g_idx": ("I32", gidx)}
hdr = {}; off = 0; blobs = []
for n, (dt, a) in t.items():
    by = a.tobytes(); hdr[n] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(by)]}; off += len(by); blobs.append(by)
h = json.dumps(hdr).encode(); h += b" " * ((8 - len(h) % 8) % 8)
open("model.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
with open("config.json", "w") as f:
    json.dump({"quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": G, "desc_act": False, "sym": False, "checkpoint_format": "gptq"}}, f)

if "--ref" in sys.argv:
    raw = open("model.safetensors", "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    hd = json.loads(raw[8:8 + n])

    def get(name, dt, sh):
        s, e = hd[name]["data_offsets"]
        return np.frombuffer(raw[8 + n + s:8 + n + e], dt).reshape(sh)
    t0 = time.perf_counter()
    qw = get("l.qweight", "<u4", (inp // k, out))
    qz = get("l.qzeros", "<u4", (inp // G, out // k))
    sc = get("l.scales", "<f2", (inp // G, out)).astype(np.float32)
    g = get("l.g_idx", "<i4", (inp,))
    shifts = np.arange(k, dtype=np.uint32) * 4
    q = ((qw[:, None, :] >> shifts[None, :, None]) & 15).reshape(
        inp, out).astype(np.int32)
    z = (((qz[:, :, None] >> shifts[None, None, :]) & 15).reshape(
        inp // G, out) + 1).astype(np.int32)
    W = ((q - z[g]).astype(np.float32) * sc[g]).T.copy()
    t1 = time.perf_counter()
    print("numpy %.4f %s" % (t1 - t0, hashlib.sha256(W.tobytes()).hexdigest()))
