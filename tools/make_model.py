#!/usr/bin/python3
"""Write a GPT-2-small-shaped checkpoint (124M parameters, random values) in
the layouts users hold, for the whole-model page-cache benchmark
(bench/pagecache_model.sh) and, with --small (4 layers of width 256, 4.3M
parameters) or --medium (4 layers of width 512, 21M), its test
(tests/e2e/pagecache.sh).  Each layout is written by the real writer where
Debian has it (torch.save, numpy.savez) and by hand from ../shared/specs
otherwise (safetensors, GGUF, zTensor).

    tools/make_model.py [--small|--medium] OUTDIR [LAYOUT...]

LAYOUT: pt (torch.save zip, lm_head tied to wte), st-sharded (two fp32
safetensors shards and model.safetensors.index.json), st-bf16 (one bf16
safetensors file), gguf-f16 (GGUF v3, 2-D tensors f16, the rest f32, as
llama.cpp converts), npz (np.savez, stored members), zt-zstd (zTensor 1.0,
every tensor a zstd frame).  Default: all.  Each goes to OUTDIR/LAYOUT/;
OUTDIR/LAYOUT.bytes holds the bytes its tensor files serve.
"""
import json
import os
import struct
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "fixtures"))
import _lib  # noqa: E402  (CBOR of the zTensor manifest)

D, V, P, L = 768, 50257, 1024, 12


def gpt2_shapes():
    """GPT-2's tensors, in the order GPT-2 checkpoints store them"""
    out = [("wte.weight", (V, D)), ("wpe.weight", (P, D))]
    for i in range(L):
        h = "h.%d." % i
        out += [(h + "ln_1.weight", (D,)), (h + "ln_1.bias", (D,)),
                (h + "attn.c_attn.weight", (D, 3 * D)),
                (h + "attn.c_attn.bias", (3 * D,)),
                (h + "attn.c_proj.weight", (D, D)),
                (h + "attn.c_proj.bias", (D,)),
                (h + "ln_2.weight", (D,)), (h + "ln_2.bias", (D,)),
                (h + "mlp.c_fc.weight", (D, 4 * D)),
                (h + "mlp.c_fc.bias", (4 * D,)),
                (h + "mlp.c_proj.weight", (4 * D, D)),
                (h + "mlp.c_proj.bias", (D,))]
    return out + [("ln_f.weight", (D,)), ("ln_f.bias", (D,))]


def weights():
    rng = np.random.default_rng(1)
    return [(n, (rng.standard_normal(s, dtype=np.float32) * 0.02))
            for n, s in gpt2_shapes()]


def bf16(a):
    return (a.view(np.uint32) >> 16).astype(np.uint16)


def write_safetensors(path, items):
    """items: (name, dtype string, array of the stored bytes' dtype)"""
    header, off = {}, 0
    for name, dt, a in items:
        header[name] = {"dtype": dt, "shape": list(a.shape),
                        "data_offsets": [off, off + a.nbytes]}
        off += a.nbytes
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for _, _, a in items:
            f.write(a.tobytes())
    return off


def st_sharded(out, w):
    half = len(w) // 2
    total, wmap = 0, {}
    for k, part in enumerate((w[:half], w[half:])):
        name = "model-%05d-of-00002.safetensors" % (k + 1)
        total += write_safetensors(os.path.join(out, name),
                                   [(n, "F32", a) for n, a in part])
        wmap.update((n, name) for n, _ in part)
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": wmap}, f)
    return total


def st_bf16(out, w):
    return write_safetensors(os.path.join(out, "model.safetensors"),
                             [(n, "BF16", bf16(a)) for n, a in w])


def gguf_f16(out, w):
    def s(x):
        b = x.encode()
        return struct.pack("<Q", len(b)) + b

    items = [(n, a.astype(np.float16) if a.ndim == 2 else a) for n, a in w]
    kv = s("general.architecture") + struct.pack("<I", 8) + s("gpt2")
    kv += s("general.alignment") + struct.pack("<II", 4, 32)
    infos, off = b"", 0
    for n, a in items:
        off += -off % 32
        # ggml lists dimensions innermost first
        infos += s(n) + struct.pack("<I", a.ndim)
        infos += struct.pack("<%dQ" % a.ndim, *reversed(a.shape))
        infos += struct.pack("<IQ", 1 if a.dtype == np.float16 else 0, off)
        off += a.nbytes
    head = b"GGUF" + struct.pack("<IQQ", 3, len(items), 2) + kv + infos
    total = 0
    with open(os.path.join(out, "model.gguf"), "wb") as f:
        f.write(head + b"\0" * (-len(head) % 32))
        pos = 0
        for _, a in items:
            f.write(b"\0" * (-pos % 32))
            pos += -pos % 32
            f.write(a.tobytes())
            pos += a.nbytes
            total += a.nbytes
    return total


def pt(out, w):
    import torch
    sd = {n: torch.from_numpy(a) for n, a in w}
    sd["lm_head.weight"] = sd["wte.weight"]  # tied, as GPT-2 saves it
    torch.save(sd, os.path.join(out, "pytorch_model.bin"))
    return sum(a.nbytes for _, a in w) + w[0][1].nbytes


def npz(out, w):
    np.savez(os.path.join(out, "model.npz"), **dict(w))
    return sum(a.nbytes for _, a in w)


def zt_zstd(out, w):
    blob, tensors, total = bytearray(b"ZTEN1000"), {}, 0
    for n, a in w:
        blob += b"\0" * (-len(blob) % 64)
        z = subprocess.run(["zstd", "-q", "-3", "-c", "--no-check"],
                           input=a.tobytes(), stdout=subprocess.PIPE,
                           check=True).stdout
        tensors[n] = {"dtype": "float32", "shape": list(a.shape),
                      "format": "dense",
                      "components": {"data": {"offset": len(blob),
                                              "length": len(z),
                                              "encoding": "zstd"}}}
        blob += z
        total += a.nbytes
    m = _lib.cbor({"version": "1.0", "generator": "zTensor-Rust v0.1.0",
                   "attributes": {},
                   "tensors": {k: tensors[k] for k in
                               sorted(tensors, key=lambda s: s.encode())}})
    with open(os.path.join(out, "model.zt"), "wb") as f:
        f.write(bytes(blob) + m + struct.pack("<Q", len(m)))
    return total


LAYOUTS = {"pt": pt, "st-sharded": st_sharded, "st-bf16": st_bf16,
           "gguf-f16": gguf_f16, "npz": npz, "zt-zstd": zt_zstd}


def main():
    global D, V, P, L
    args = sys.argv[1:]
    if args[:1] == ["--small"]:
        D, V, P, L = 256, 4096, 256, 4
        args = args[1:]
    elif args[:1] == ["--medium"]:
        D, V, P, L = 512, 16384, 512, 4
        args = args[1:]
    if not args or any(a not in LAYOUTS for a in args[1:]):
        sys.exit(__doc__)
    names = args[1:] or list(LAYOUTS)
    w = weights()
    for name in names:
        d = os.path.join(args[0], name)
        os.makedirs(d, exist_ok=True)
        total = LAYOUTS[name](d, w)
        with open(d + ".bytes", "w") as f:
            f.write("%d\n" % total)
        print("%s: %d tensor bytes" % (name, total))


if __name__ == "__main__":
    main()
