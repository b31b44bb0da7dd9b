#!/usr/bin/env python3
"""Compare a mounted ONNX model with independent readings of it.

Usage: onnx_check.py EXPECTED_JSON KEY MODEL MOUNTPOINT

Every tensor that expected.json (written from onnx 1.12's own reading of
the fixture) lists under KEY is looked up in the mount by its path:
its bytes (raw_data, converted typed values, external data) must have the
listed sha256 and its xattrs the listed dtype and shape.  String tensors
must be in metadata.json.  When the onnx package is installed, every
main-graph initializer (external data loaded by onnx) and Constant value
is also converted by onnx.numpy_helper and compared byte for byte with the
file.  Prints "N tensors ok" or the
mismatches, and exits 1 on any.
"""
import hashlib
import json
import os
import sys

exp_path, key, model, mnt = sys.argv[1:5]
entry = json.load(open(exp_path))["valid"][key]
bad = []
count = 0


def xattr(path, name):
    try:
        return os.getxattr(path, "user.tensorfs." + name).decode()
    except OSError:
        return None


def read(path):
    with open(path, "rb") as f:
        return f.read()


def check_file(t):
    global count
    p = os.path.join(mnt, t["path"])
    if xattr(p, "dtype") != t["dtype"]:
        bad.append("%s: dtype %s" % (t["name"], xattr(p, "dtype")))
    if xattr(p, "shape") != json.dumps(t["shape"], separators=(",", ":")):
        bad.append("%s: shape %s" % (t["name"], xattr(p, "shape")))
    if os.path.getsize(p) != t["nbytes"]:
        bad.append("%s: size %d" % (t["name"], os.path.getsize(p)))
    if xattr(p, "unreadable") is not None:
        bad.append("%s: unreadable: %s" % (t["name"], xattr(p, "unreadable")))
        return
    got = hashlib.sha256(read(p)).hexdigest()
    if got != t["sha256"]:
        bad.append("%s: sha256 %s" % (t["name"], got))
    count += 1


meta = json.load(open(os.path.join(mnt, ".tensorfs", "metadata.json")))
for t in entry["tensors"]:
    if t["dtype"] == "string":
        got = meta.get("string_tensors", {}).get(t["name"], {})
        if got.get("values") != t["values"]:
            bad.append("%s: strings %r" % (t["name"], got))
        count += 1
    elif t.get("kind") == "sparse":
        g = os.path.join(mnt, t["path"])
        if xattr(g, "format") != "sparse_coo":
            bad.append("%s: not a sparse group" % t["name"])
        for c in t["components"].values():
            c = dict(c, path=t["path"] + "/" + c["name"].rsplit("/", 1)[1])
            check_file(c)
    else:
        check_file(t)

try:
    import onnx
    from onnx import numpy_helper
except ImportError:
    onnx = None

if onnx is not None and not entry.get("bare_tensor"):
    # the main graph: initializers at the root, Constant values under
    # @constants (spec section 8), converted by onnx itself
    m = onnx.load(model)
    pairs = []
    for t in m.graph.initializer:
        pairs.append((t.name, t))
    for n in m.graph.node:
        if n.op_type == "Constant" and n.domain in ("", "ai.onnx"):
            for a in n.attribute:
                if a.name == "value" and n.output:
                    pairs.append(("@constants/" + n.output[0], a.t))
    for name, t in pairs:
        if t.data_type == onnx.TensorProto.STRING:
            continue
        segs = name.split("/", 1) if name.startswith("@constants/") else [name]
        parts = []
        for s in segs:
            if s.startswith("/"):
                s = s[1:]
            parts += s.replace("/", ".").split(".")
        p = os.path.join(mnt, *parts)
        if t.data_type in (onnx.TensorProto.COMPLEX64,
                           onnx.TensorProto.COMPLEX128) and not t.raw_data:
            continue  # onnx 1.12's to_array cannot read these
        if t.data_type == onnx.TensorProto.BFLOAT16:
            continue  # to_array gives float32 values, not the bit patterns
        want = numpy_helper.to_array(t).tobytes()
        if read(p) != want:
            bad.append("%s: bytes differ from onnx.numpy_helper" % name)
        count += 1

for b in bad:
    print(key + ": " + b, file=sys.stderr)
print("%d tensors ok" % count if not bad else "%d mismatches" % len(bad))
sys.exit(1 if bad else 0)
