#!/usr/bin/env python3
"""Write a llama-like GGUF for the mount-time benchmark (bench/gguf_mount.sh):
a VOCAB-token vocabulary (tokenizer.ggml.tokens, .scores, .token_type and as
many merges), a few dozen scalar KVs, and TENSORS small tensors of mixed
ggml types (F32, F16, Q4_K, Q6_K, Q8_0).  Plain struct, from specs/gguf.md.
    bench/mkgguf.py OUT [VOCAB] [TENSORS]
"""
import random
import struct
import sys

out = sys.argv[1]
vocab = int(sys.argv[2]) if len(sys.argv) > 2 else 150000
ntensors = int(sys.argv[3]) if len(sys.argv) > 3 else 300
rnd = random.Random(1)


def s(x):
    b = x.encode()
    return struct.pack("<Q", len(b)) + b


def kv(key, t, payload):
    return s(key) + struct.pack("<I", t) + payload


letters = "abcdefghijklmnopqrstuvwxyz\u0120\u010a"
tokens = ["".join(rnd.choice(letters) for _ in range(rnd.randint(1, 12)))
          + str(i) for i in range(vocab)]
kvs = [kv("general.architecture", 8, s("llama")),
       kv("general.name", 8, s("bench")),
       kv("general.file_type", 4, struct.pack("<I", 15)),
       kv("llama.context_length", 4, struct.pack("<I", 8192)),
       kv("llama.embedding_length", 4, struct.pack("<I", 4096)),
       kv("llama.rope.freq_base", 6, struct.pack("<f", 500000.0)),
       kv("tokenizer.ggml.model", 8, s("gpt2")),
       kv("tokenizer.ggml.tokens", 9,
          struct.pack("<IQ", 8, vocab) + b"".join(s(t) for t in tokens)),
       kv("tokenizer.ggml.scores", 9,
          struct.pack("<IQ", 6, vocab) +
          struct.pack(f"<{vocab}f", *[-i / 10 for i in range(vocab)])),
       kv("tokenizer.ggml.token_type", 9,
          struct.pack("<IQ", 5, vocab) + struct.pack(f"<{vocab}i", *[1] * vocab)),
       kv("tokenizer.ggml.merges", 9,
          struct.pack("<IQ", 8, vocab) +
          b"".join(s(tokens[i][:3] + " " + tokens[i + 1][:3])
                   for i in range(vocab - 1)) + s("a b"))]
for i in range(30):
    kvs.append(kv(f"llama.extra.k{i}", 5, struct.pack("<i", i)))
# (type, block elements, block bytes)
types = [(0, 1, 4), (1, 1, 2), (12, 256, 144), (14, 256, 210), (8, 32, 34)]
infos, data, off = b"", b"", 0
for i in range(ntensors):
    t, be, bb = types[i % len(types)]
    ne = [256, 2]
    n = ne[0] * ne[1] // be * bb
    infos += s(f"blk.{i // 9}.t{i % 9}.weight") + struct.pack("<I", 2)
    infos += struct.pack("<QQ", *ne) + struct.pack("<IQ", t, off)
    pad = -n % 32
    data += bytes(n) + bytes(pad)
    off += n + pad
head = b"GGUF" + struct.pack("<IQQ", 3, ntensors, len(kvs)) + b"".join(kvs)
head += infos
head += bytes(-len(head) % 32)
with open(out, "wb") as f:
    f.write(head + data)
