#!/usr/bin/python3
"""Write a DeepSeek-V3-shaped sharded safetensors directory for the
directory benchmarks (bench/moe_dir.sh): the real model's tensor names (61
layers, the first 3 dense, then 256 routed experts and a shared expert per
layer, FP8 weights with their weight_scale_inv), spread over 163 shards in
layer order with model.safetensors.index.json, as the published checkpoint
is, but each tensor tiny (its shape [4, 4], 16 bytes of F8_E4M3 or 64 of
F32): what is measured is the tree, not the bytes.

    tools/make_moe.py OUTDIR [--tree TREEDIR]

--tree also writes the same tree as plain files (one 16- or 64-byte file
per tensor at the path the mount shows), for `ls -lR` against the local
disk and squashfuse_ll.  Prints the number of tensors.
"""
import json
import os
import struct
import sys

LAYERS, DENSE, EXPERTS, SHARDS = 61, 3, 256, 163


def names():
    out = [("model.embed_tokens.weight", "BF16")]
    attn = ["q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj",
            "o_proj"]
    for i in range(LAYERS):
        p = "model.layers.%d." % i
        out += [(p + "input_layernorm.weight", "BF16"),
                (p + "post_attention_layernorm.weight", "BF16"),
                (p + "self_attn.q_a_layernorm.weight", "BF16"),
                (p + "self_attn.kv_a_layernorm.weight", "BF16")]
        for a in attn:
            out += [(p + "self_attn.%s.weight" % a, "F8_E4M3"),
                    (p + "self_attn.%s.weight_scale_inv" % a, "F32")]
        mlps = ([p + "mlp."] if i < DENSE else
                [p + "mlp.experts.%d." % e for e in range(EXPERTS)] +
                [p + "mlp.shared_experts."])
        for m in mlps:
            for w in ("gate_proj", "up_proj", "down_proj"):
                out += [(m + w + ".weight", "F8_E4M3"),
                        (m + w + ".weight_scale_inv", "F32")]
        if i >= DENSE:
            out += [(p + "mlp.gate.weight", "BF16"),
                    (p + "mlp.gate.e_score_correction_bias", "F32")]
    return out + [("model.norm.weight", "BF16"), ("lm_head.weight", "BF16")]


SIZE = {"F8_E4M3": 1, "BF16": 2, "F32": 4}


def main():
    if len(sys.argv) not in (2, 4) or (len(sys.argv) == 4 and
                                       sys.argv[2] != "--tree"):
        sys.exit(__doc__)
    out = sys.argv[1]
    tree = sys.argv[3] if len(sys.argv) == 4 else None
    os.makedirs(out, exist_ok=True)
    all_names = names()
    per = -(-len(all_names) // SHARDS)
    wmap, total = {}, 0
    for s in range(SHARDS):
        part = all_names[s * per:(s + 1) * per]
        fn = "model-%05d-of-%06d.safetensors" % (s + 1, SHARDS)
        header, off = {"__metadata__": {"format": "pt"}}, 0
        for n, dt in part:
            nb = 16 * SIZE[dt]
            header[n] = {"dtype": dt, "shape": [4, 4],
                         "data_offsets": [off, off + nb]}
            off += nb
            wmap[n] = fn
        h = json.dumps(header, separators=(",", ":")).encode()
        h += b" " * (-len(h) % 8)
        with open(os.path.join(out, fn), "wb") as f:
            f.write(struct.pack("<Q", len(h)) + h + bytes(off))
        total += off
    with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": wmap}, f,
                  indent=2)
    if tree:
        for n, dt in all_names:
            path = os.path.join(tree, *n.split("."))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(bytes(16 * SIZE[dt]))
    print(len(all_names))


if __name__ == "__main__":
    main()
