#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check one mounted zTensor 2.x file against its case of expected.json.

  ztensor2_check.py EXPECTED.JSON CASE-FILE CONTAINER MOUNTPOINT

Every listed part must be a file of the mount (found through
.tensorfs/manifest.json by object name and part role): a part whose decoded
bytes the table lists reads back byte for byte as the container's stored
extent (raw parts: compared with the bytes at blob [offset, length] of the
container, the `cmp` of the two) and with the listed sha256; a part without
them (in a shard, under an unknown encoding) or one whose content breaks a
rule reads EIO.  No other tensor file is present.  Prints one line per
failure; exits 1 if any.
"""
import errno
import hashlib
import json
import os
import sys


def main():
    table, rel, container, mnt = sys.argv[1:5]
    cases = {c["file"]: c for c in json.load(open(table))["cases"]}
    case = cases[rel]
    # a file checked only at open that equals a reject opening fine has
    # that reject's content outcome (corpus: f4-packed-odd-count)
    twin = [c for c in cases.values()
            if c is not case and c["sha256_file"] == case["sha256_file"]
            and c["expect"] == "reject" and c["opens"]]
    data_case = twin[0] if case["operation"] == "open" and twin else case
    man = json.load(open(os.path.join(mnt, ".tensorfs/manifest.json")))
    files = {}
    for t in man["tensors"]:
        if "components" in t:
            for c in t["components"]:
                files[(t["name"], c["role"])] = c["path"]
        else:
            files[(t["name"], None)] = t["path"]
    raw = open(container, "rb").read()
    bad = []
    n = 0
    for o in case.get("objects", []):
        lone = len(o["parts"]) == 1 and o["parts"][0]["part"] == "data"
        for p in o["parts"]:
            key = (o["name"], None if lone else p["part"])
            if key not in files:
                bad.append("no file for %s/%s" % (o["name"], p["part"]))
                continue
            n += 1
            path = os.path.join(mnt, files[key])
            op = data_case["operation"]
            covered = op in ("verify:%s/%s" % (o["name"], p["part"]),
                             "view:%s/%s" % (o["name"], p["part"]),
                             "read_csr:%s" % o["name"])
            want_eio = p.get("decoded_sha256") is None or (
                covered and data_case["expect"] in ("reject", "unsupported"))
            try:
                with open(path, "rb") as f:
                    got = f.read()
                err = None
            except OSError as e:
                got, err = None, e.errno
            size = p.get("decoded_length", p["blob"][1])
            if os.stat(path).st_size != size:
                bad.append("%s: st_size %d, want %d" %
                           (path, os.stat(path).st_size, size))
            if want_eio:
                if err != errno.EIO and not (size == 0 and got == b""):
                    bad.append("%s: read gave %s, want EIO" %
                               (files[key], err if err else "data"))
                continue
            if err is not None:
                bad.append("%s: read failed: %s" % (files[key],
                                                    os.strerror(err)))
                continue
            if hashlib.sha256(got).hexdigest() != p["decoded_sha256"]:
                bad.append("%s: sha256 differs" % files[key])
            off, ln = p["blob"]
            if "encoding" not in p and got != raw[off:off + ln]:
                bad.append("%s: bytes differ from the container's "
                           "[%d, +%d)" % (files[key], off, ln))
    if n != len(files):
        bad.append("%d files in the mount, %d parts listed" %
                   (len(files), n))
    for b in bad:
        print("FAIL: %s: %s" % (rel, b))
    print("ok: %s: %d files checked" % (rel, n))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
