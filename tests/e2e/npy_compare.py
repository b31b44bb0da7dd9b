#!/usr/bin/python3
"""A mounted .npy/.npz against numpy's own reading of the same file.

Usage: npy_compare.py ORIGINAL PLAIN_MOUNT NPY_MOUNT
PLAIN_MOUNT is ORIGINAL mounted as is, NPY_MOUNT with -o npy.  For every
array np.load(ORIGINAL) returns (one for .npy, every key for .npz):
  - the plain mount has exactly one tensor file per array (the manifest's
    names are the keys; .npy: "tensor"), whose bytes are the array's bytes
    as stored (C or Fortran order, the file's byte order), read both whole
    and through numpy's own mmap;
  - its xattrs: user.tensorfs.npy.descr is numpy's descr for simple
    dtypes, byte_order=big exactly for big-endian multi-byte types,
    order=F exactly for Fortran-ordered arrays;
  - the -o npy mount's NAME.npy loads (mmap_mode='r') to the same values,
    dtype and shape, strings and structured records included (when their
    descr is not ASCII, |V<n> records of the same bytes).
Prints one line per failure; exits 1 on any.
"""
import json
import os
import sys

import numpy as np


def arrays(path):
    if path.endswith(".npy"):
        return {"tensor": np.load(path, mmap_mode="r")}
    with np.load(path) as z:
        # members that are not .npy files come back as bytes: skipped
        return {k: z[k] for k in z.files
                if isinstance(z[k], np.ndarray)}


def stored_bytes(a):
    fortran = a.flags.f_contiguous and not a.flags.c_contiguous
    return a.tobytes(order="F" if fortran else "C"), fortran


def xattr(path, name):
    try:
        return os.getxattr(path, "user.tensorfs." + name).decode()
    except OSError:
        return None


def main():
    orig, plain, view = sys.argv[1:4]
    want = arrays(orig)
    with open(os.path.join(plain, ".tensorfs/manifest.json")) as f:
        man = {t["name"]: t for t in json.load(f)["tensors"]}
    bad = []
    if sorted(man) != sorted(want):
        bad.append(f"tensors {sorted(man)}, numpy has {sorted(want)}")
    for key, a in want.items():
        if key not in man:
            continue
        path = os.path.join(plain, man[key]["path"])
        data, fortran = stored_bytes(a)
        with open(path, "rb") as f:
            got = f.read()
        if got != data:
            bad.append(f"{key}: bytes differ from numpy's")
        if len(data) and np.memmap(path, dtype="u1", mode="r").tobytes() \
                != data:
            bad.append(f"{key}: mmap of the file differs")
        simple = a.dtype.fields is None and a.dtype.kind in "biufc"
        descr = np.lib.format.dtype_to_descr(a.dtype)
        if simple and xattr(path, "npy.descr") != descr:
            bad.append(f"{key}: npy.descr {xattr(path, 'npy.descr')}, "
                       f"numpy says {descr}")
        big = a.dtype.byteorder == ">" and a.dtype.itemsize > 1 and \
            a.dtype.kind in "biufcU"
        if (xattr(path, "byte_order") == "big") != big:
            bad.append(f"{key}: byte_order {xattr(path, 'byte_order')}")
        if (xattr(path, "order") == "F") != fortran:
            bad.append(f"{key}: order {xattr(path, 'order')}")
        v = np.load(os.path.join(view, man[key]["path"] + ".npy"),
                    mmap_mode="r")
        # records keep numpy's descr, unless it is not ASCII (then |V<n>)
        if simple or str(descr).isascii():
            if v.dtype != a.dtype or v.shape != a.shape or \
                    not np.array_equal(v, a):
                bad.append(f"{key}: -o npy loads as {v.dtype} {v.shape}")
        elif v.tobytes(order="A") != data:
            bad.append(f"{key}: -o npy records differ")
    for line in bad:
        print(f"{orig}: {line}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
