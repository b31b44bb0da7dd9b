#!/usr/bin/python3
"""The .npy view (--npy / -o npy): numpy loads every tensor file of every
container given, with mmap_mode='r', and gets the tensor's own bytes with
the dtype and shape the manifest states (row- or column-major as flagged).

Usage: npyview.py TENSORFS MOUNTED_NPY_DIR MOUNTED_PLAIN_DIR
Both directories are mounts of the same container, one with -o npy.
Prints one line per failure; exits 1 on any.
"""
import io
import json
import os
import sys

import numpy as np

# dtype names numpy has (the rest are records of their block size)
NUMPY = {"float64": "f8", "float32": "f4", "float16": "f2", "int64": "i8",
         "int32": "i4", "int16": "i2", "int8": "i1", "uint64": "u8",
         "uint32": "u4", "uint16": "u2", "uint8": "u1", "bool": "b1",
         "complex64": "c8", "complex128": "c16"}


def main():
    npy_root, plain_root = sys.argv[1], sys.argv[2]
    with open(os.path.join(npy_root, ".tensorfs/manifest.json")) as f:
        npy_man = json.load(f)
    with open(os.path.join(plain_root, ".tensorfs/manifest.json")) as f:
        plain_man = json.load(f)
    files = []
    for a, b in zip(npy_man["tensors"], plain_man["tensors"]):
        if "components" in a:
            files += zip(a["components"], b["components"])
        else:
            files.append((a, b))
    bad = 0
    for a, b in files:
        if not a["path"].endswith(".npy"):
            print("not a .npy path:", a["path"])
            bad += 1
            continue
        if "unreadable" in b:
            # listed but not served (builder.h): every read fails
            try:
                open(os.path.join(plain_root, b["path"]), "rb").read()
                print(f"{b['path']}: unreadable, yet it reads")
                bad += 1
            except OSError:
                pass
            continue
        raw = open(os.path.join(plain_root, b["path"]), "rb").read()
        arr = np.load(os.path.join(npy_root, a["path"]), mmap_mode="r")
        path = os.path.join(plain_root, b["path"])
        xattrs = os.listxattr(path) + (
            os.listxattr(os.path.dirname(path)) if "role" in b else [])
        big = "user.tensorfs.byte_order" in xattrs
        fortran = "user.tensorfs.order" in xattrs
        with open(os.path.join(npy_root, a["path"]), "rb") as f:
            version = np.lib.format.read_magic(f)
            _, header_fortran, _ = np.lib.format._read_array_header(
                f, version)
        name = b["dtype"]
        if name in NUMPY:
            want_dtype = np.dtype((">" if big else "<") + NUMPY[name])
            want_shape = tuple(b["shape"])
        else:
            want_dtype = arr.dtype  # records: the bytes are what counts
            want_shape = arr.shape
        if arr.dtype != want_dtype or arr.shape != want_shape:
            print(f"{a['path']}: {arr.dtype} {arr.shape}, want "
                  f"{want_dtype} {want_shape}")
            bad += 1
            continue
        if header_fortran != fortran:
            print(f"{a['path']}: fortran_order {header_fortran}, want "
                  f"{fortran}")
            bad += 1
            continue
        # the header is the one numpy itself writes for this array
        want = io.BytesIO()
        np.lib.format._write_array_header(
            want, {"descr": np.lib.format.dtype_to_descr(arr.dtype),
                   "fortran_order": header_fortran, "shape": arr.shape})
        with open(os.path.join(npy_root, a["path"]), "rb") as f:
            mine = f.read(len(want.getvalue()))
        if mine != want.getvalue():
            print(f"{a['path']}: header differs from numpy's: {mine!r}")
            bad += 1
            continue
        got = np.asarray(arr).tobytes(order="F" if fortran else "C")
        if got != raw:
            print(f"{a['path']}: values differ from the tensor's bytes")
            bad += 1
    print(f"{len(files)} tensor files checked, {bad} bad")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
