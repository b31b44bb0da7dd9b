#!/usr/bin/python3
"""The safetensors export, value for value.

Usage: export.py MOUNTED_DIR EXPORT.safetensors|EXPORT_DIR
Every tensor file of the mount whose dtype safetensors has is found in the
export (under its stored name, or its path joined with '.' when names
collide) with the values numpy reads from the file itself (its dtype,
shape, byte_order and order xattrs: numpy swaps and transposes, not
tensorfs); every other one is listed in __metadata__ tensorfs.left_out.
The export is read by an independent reader (st_read.py).  Prints one
line per failure; exits 1 on any; prints the number of tensors compared.
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "export"))
import st_read  # noqa: E402

NUMPY = {"float64": "f8", "float32": "f4", "float16": "f2", "int64": "i8",
         "int32": "i4", "int16": "i2", "int8": "i1", "uint64": "u8",
         "uint32": "u4", "uint16": "u2", "uint8": "u1", "bool": "b1",
         "complex64": "c8"}
# safetensors dtypes numpy lacks: compared as bytes
BYTES = {"bfloat16": 2, "float8_e4m3": 1, "float8_e5m2": 1,
         "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1, "float8_e8m0": 1}


def xattr(path, name):
    try:
        return os.getxattr(path, "user.tensorfs." + name).decode("utf-8",
                                                                "replace")
    except OSError:
        return None


def load_export(where):
    if os.path.isdir(where):
        idx = json.load(open(os.path.join(where,
                                          "model.safetensors.index.json")))
        meta, out = None, {}
        for f in sorted(set(idx["weight_map"].values())):
            m, t = st_read.load(os.path.join(where, f))
            meta = meta or m
            for k in t:
                assert idx["weight_map"][k] == f, k
            out.update(t)
        assert set(out) == set(idx["weight_map"])
        total = sum(a.nbytes for a in out.values())
        assert idx["metadata"]["total_size"] == total
        return meta, out
    return st_read.load(where)


def main():
    root, where = sys.argv[1], sys.argv[2]
    meta, ts = load_export(where)
    left = json.loads((meta or {}).get("tensorfs.left_out", "{}"))
    bad = compared = 0
    for dirpath, dirs, files in os.walk(root):
        if dirpath == root:
            dirs[:] = [d for d in dirs if d != ".tensorfs"]
        for fn in files:
            path = os.path.join(dirpath, fn)
            dtype = xattr(path, "dtype")
            if dtype is None:
                continue
            rel = os.path.relpath(path, root)
            name = xattr(path, "name")
            parent = os.path.dirname(path)
            role = xattr(path, "role")
            if role is not None:
                name = None
            cands = [n for n in (name, rel.replace("/", ".")) if n]
            got = next((ts[n] for n in cands if n in ts), None)
            if got is None:
                if not any(n in left for n in cands) and \
                        (dtype in NUMPY or dtype in BYTES) and \
                        xattr(path, "unreadable") is None:
                    print(f"{rel}: {dtype} neither exported nor left out")
                    bad += 1
                continue
            shape = json.loads(xattr(path, "shape"))
            raw = open(path, "rb").read()
            flags = [xattr(p, k) for p in (path, parent)
                     for k in ("byte_order", "order", "stored_byte_order")]
            big = "big" in (flags[0], flags[3])
            fortran = "F" in (flags[1], flags[4])
            if dtype in NUMPY:
                dt = np.dtype((">" if big else "<") + NUMPY[dtype])
                want = np.frombuffer(raw, dtype=dt).reshape(
                    shape, order="F" if fortran else "C")
                want = want.astype(dt.newbyteorder("<"))
                ok = (want.shape == got.shape and
                      want.tobytes() == got.tobytes())
            else:
                n = BYTES.get(dtype)
                if n is None:
                    # packed kinds (float4, float6): bytes as stored
                    ok = fortran or raw == got.tobytes()
                else:
                    want = np.frombuffer(raw, dtype=f"V{n}").reshape(
                        shape, order="F" if fortran else "C")
                    if big:
                        want = np.frombuffer(
                            np.frombuffer(raw, dtype=f"u{n}").byteswap()
                            .tobytes(), dtype=f"V{n}").reshape(
                                shape, order="F" if fortran else "C")
                    ok = want.tobytes() == got.tobytes()
            if not ok:
                print(f"{rel}: the export's values differ")
                bad += 1
            compared += 1
    print(compared)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
