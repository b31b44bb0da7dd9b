#!/usr/bin/python3
"""The quant view over the quantized fixtures (../shared/fixtures/quantized).

Usage: quantized.py TENSORFS FIXTURES_DIR WORK_DIR

The expectations are the fixture kit's (expected.json: the sha256 of each
logical tensor's float32 bytes, computed by its own numpy dequantizers
from the spec; the stored tensors' sha256).  For every valid directory,
mounted with -o as=float32: each logical tensor's file has those bytes,
the shape and dtype stated, a user.tensorfs.quant xattr naming its method
and parts; the stored tensors it consumed are gone from the tree and the
manifest; a read at an offset is that slice.  Mounted without the option,
every stored tensor is there with its own bytes.  The malformed directories
(reject/) show every stored tensor as stored, never dequantized.  The
families tensorfs does not decode yet (bitsandbytes 4-bit) must be left as
stored.  Prints one line per failure; exits 1 on any.
"""
import hashlib
import json
import os
import subprocess
import sys

NOT_DECODED = {"bnb_nf4", "bnb_fp4_nested"}
TAGS = ("gptq", "awq", "ct_", "fp8", "mxfp4", "nvfp4", "bnb", "mlx")
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def mount(tfs, src, mnt, opts):
    os.makedirs(mnt, exist_ok=True)
    r = subprocess.run([tfs] + opts + [src, mnt], capture_output=True,
                       text=True)
    if r.returncode:
        fail("mount %s %s: %s" % (" ".join(opts), src, r.stderr.strip()))
        return None
    with open(os.path.join(mnt, ".tensorfs/manifest.json")) as f:
        man = json.load(f)
    return {t["name"]: t for t in man["tensors"] if "name" in t}


def umount(mnt):
    subprocess.run(["fusermount3", "-u", mnt], check=False)


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def check_stored(d, mnt, got, stored):
    """every stored tensor there, as stored (its bytes through the plain
    mount: the fixtures' stored dtypes are not converted by it)"""
    for name, st in stored.items():
        t = got.get(name)
        if not t:
            fail("%s: stored %s missing" % (d, name))
        elif t.get("dtype", "").startswith(TAGS):
            fail("%s: %s dequantized (%s)" % (d, name, t["dtype"]))
        elif sha(os.path.join(mnt, t["path"])) != st["sha256"]:
            fail("%s: %s: not its stored bytes" % (d, name))


def check_view(tfs, d, src, mnt, want):
    got = mount(tfs, src, mnt, ["-o", "as=float32"])
    if got is None:
        return
    try:
        if d in NOT_DECODED:
            for name in want["hidden_in_view"]:
                if name not in got:
                    fail("%s: %s hidden but not decoded" % (d, name))
            return
        for name, lg in want["logical"].items():
            t = got.get(name)
            if not t:
                fail("%s: logical %s missing" % (d, name))
                continue
            path = os.path.join(mnt, t["path"])
            with open(path, "rb") as f:
                data = f.read()
            if hashlib.sha256(data).hexdigest() != lg["sha256"]:
                fail("%s: %s: not the expected float32 bytes" % (d, name))
                continue
            if t["shape"] != lg["shape"] or len(data) != 4 * _n(lg):
                fail("%s: %s: shape %s" % (d, name, t["shape"]))
            # a read at an offset inside a row: that slice
            with open(path, "rb") as f:
                f.seek(len(data) // 3 + 1)
                part = f.read(777)
            if part != data[len(data) // 3 + 1:len(data) // 3 + 778]:
                fail("%s: %s: read at an offset" % (d, name))
            q = json.loads(os.getxattr(path, "user.tensorfs.quant"))
            if not q.get("method") or len(q.get("components", [])) < 2:
                fail("%s: %s: quant xattr %s" % (d, name, q))
            if os.getxattr(path, "user.tensorfs.dtype") != b"float32":
                fail("%s: %s: dtype xattr" % (d, name))
        for name in want["hidden_in_view"]:
            if name in got:
                fail("%s: %s not hidden" % (d, name))
        shown = set(got) - set(want["logical"])
        for name in shown:
            if name not in want["stored"]:
                fail("%s: unexpected tensor %s" % (d, name))
        # the tree holds what the manifest lists, no more
        files = sum(len(fs) for r, _, fs in os.walk(mnt)
                    if "/.tensorfs" not in r + "/")
        if files != len(got):
            fail("%s: %d files for %d tensors" % (d, files, len(got)))
    finally:
        umount(mnt)


def _n(lg):
    n = 1
    for s in lg["shape"]:
        n *= s
    return n


def main():
    tfs, root, work = sys.argv[1:4]
    with open(os.path.join(root, "expected.json")) as f:
        exp = json.load(f)
    mnt = os.path.join(work, "quantized")
    for d, want in sorted(exp["valid"].items()):
        src = os.path.join(root, "valid", d)
        check_view(tfs, d, src, mnt, want)
        got = mount(tfs, src, mnt, [])
        if got is not None:
            try:
                check_stored(d, mnt, got, want["stored"])
            finally:
                umount(mnt)
    for d, want in sorted(exp["reject"].items()):
        got = mount(tfs, os.path.join(root, "reject", d), mnt,
                    ["-o", "as=float32"])
        if got is not None:
            try:
                for name in want["stored"]:
                    if name not in got or got[name].get(
                            "dtype", "").startswith(TAGS):
                        fail("reject %s: %s not as stored" % (d, name))
            finally:
                umount(mnt)
    print("%d valid, %d reject directories; %d failures"
          % (len(exp["valid"]), len(exp["reject"]), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
