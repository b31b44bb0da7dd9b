#!/usr/bin/python3
"""Expectations for tests/e2e/inspect.sh, computed with numpy.

  valuecheck.py make DIR          write DIR/a.safetensors, DIR/b.safetensors
  valuecheck.py make_utf8 DIR     write DIR/utf8.safetensors (wide names)
  valuecheck.py ls_aligned OUT    OUT (tensorfs ls) has aligned columns
  valuecheck.py stats FILE JSON   check `tensorfs stats --json FILE` (JSON)
  valuecheck.py diff A B JSON     check `tensorfs diff --json A B` (JSON)
  valuecheck.py make_tol DIR      write DIR/c.safetensors (a's layer.w
                                  changed only) and DIR/z.safetensors (a's
                                  "shape" all zeros)
  valuecheck.py isclose A B NAME ATOL RTOL   "close" when numpy.isclose
                                  holds for every element, else "differ"
  valuecheck.py asf32 FILE MNT    every tensor file of the -o as=float32
                                  mount MNT holds FILE's values as float32
  valuecheck.py make_pictures DIR write DIR/pic.safetensors, collide...
  valuecheck.py previews FILE MNT the -o previews pictures of FILE in MNT
  valuecheck.py preview_fortran MNT PATH  the picture of a column-major one
Exits 1 with a message on the first mismatch.
"""
import json
import math
import os
import struct
import sys

import numpy as np

ST = {"F16": "<f2", "BF16": None, "F32": "<f4", "F64": "<f8", "I8": "i1",
      "I16": "<i2", "I32": "<i4", "I64": "<i8", "U8": "u1", "U16": "<u2",
      "U32": "<u4", "U64": "<u8", "BOOL": "?"}


def write_st(path, tensors):
    """tensors: {name: (dtype string, shape, raw bytes)}"""
    hdr, off, blob = {}, 0, b""
    for name, (dt, shape, raw) in tensors.items():
        hdr[name] = {"dtype": dt, "shape": list(shape),
                     "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        blob += raw
    h = json.dumps(hdr).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + blob)


def read_st(path):
    """{name: (dtype string, shape, float64 values)} by the spec"""
    with open(path, "rb") as f:
        b = f.read()
    n = struct.unpack("<Q", b[:8])[0]
    hdr = json.loads(b[8:8 + n])
    out = {}
    for name, t in hdr.items():
        if name == "__metadata__":
            continue
        raw = b[8 + n + t["data_offsets"][0]:8 + n + t["data_offsets"][1]]
        out[name] = (t["dtype"], t["shape"], values(t["dtype"], raw))
    return out


def values(dt, raw):
    if dt == "BF16":
        u = np.frombuffer(raw, "<u2").astype("<u4") << 16
        return u.view("<f4").astype("f8")
    return np.frombuffer(raw, ST[dt]).astype("f8")


def bf16(x):
    """float32 -> bfloat16 bits, rounding to nearest even"""
    u = np.asarray(x, "<f4").view("<u4").astype("<u8")
    u = (u + 0x7fff + ((u >> 16) & 1)) >> 16
    return u.astype("<u2")


def make(d):
    rng = np.random.default_rng(5)
    big = rng.standard_normal(300000).astype("<f4")   # > 4 chunks of 64 Ki
    big[[7, 70000, 299999]] = [np.nan, np.inf, -np.inf]
    big[100:110] = 0
    h = (rng.standard_normal(1000) * 3).astype("<f2")
    h[:4] = [np.nan, np.nan, -np.inf, 0]
    w = rng.standard_normal((30, 40)).astype("<f4")
    ints = rng.integers(-1000, 1000, 500).astype("<i4")
    a = {
        "big": ("F32", big.shape, big.tobytes()),
        "half": ("F16", h.shape, h.tobytes()),
        "layer.w": ("BF16", w.shape, bf16(w).tobytes()),
        "ints": ("I32", ints.shape, ints.tobytes()),
        "mask": ("BOOL", (16,), bytes([1, 0, 3] + [0] * 13)),
        "gone": ("U8", (3,), b"\x01\x02\x03"),
        "shape": ("F32", (2, 3), np.arange(6, dtype="<f4").tobytes()),
    }
    write_st(os.path.join(d, "a.safetensors"), a)
    w2 = w.copy()
    w2[3, 4] += 0.5
    b = dict(a)
    del b["gone"]
    b["layer.w"] = ("BF16", w.shape, bf16(w2).tobytes())   # values differ
    b["ints"] = ("I64", ints.shape, ints.astype("<i8").tobytes())  # dtype
    b["shape"] = ("F32", (3, 2), np.arange(6, dtype="<f4").tobytes())
    b["new"] = ("I8", (2,), b"\x05\x06")
    write_st(os.path.join(d, "b.safetensors"), b)


def make_utf8(d):
    """names of different display widths, same dtype and shape"""
    t = {n: ("F32", (2,), b"\0" * 8) for n in
         ["\u65e5\u672c\u8a9e.w", "\u00fc", "plain_name", "e\u0301"]}
    write_st(os.path.join(d, "utf8.safetensors"), t)


def ls_aligned(path):
    """every line of `tensorfs ls` output (in PATH) has its dtype column
    at the same display column (East Asian wide characters take 2,
    combining marks 0)"""
    import unicodedata

    cols = set()
    for line in open(path, encoding="utf-8"):
        name = line[:line.index("float32")]
        w = sum(0 if unicodedata.combining(c) else
                2 if unicodedata.east_asian_width(c) in "WF" else 1
                for c in name)
        cols.add(w)
    if len(cols) != 1:
        sys.exit("ls columns not aligned: %r" % cols)


def make_pictures(d):
    """pic.safetensors: a 2-D wave with a NaN patch, a 3-D tensor, a
    column vector; collide.safetensors: tensors "x" and "x.png" """
    y, x = np.mgrid[0:768, 0:1024]
    wave = (np.sin(x / 60.0) * np.cos(y / 45.0) + x / 1024.0).astype("<f2")
    wave[100:120, 200:260] = np.nan
    cube = np.random.default_rng(1).standard_normal((4, 300, 3))
    col = np.arange(40, dtype="<i2").reshape(40, 1)
    write_st(os.path.join(d, "pic.safetensors"), {
        "wave": ("F16", wave.shape, wave.tobytes()),
        "cube": ("F32", cube.shape, cube.astype("<f4").tobytes()),
        "col": ("I16", col.shape, col.tobytes()),
        "scalar": ("F32", (), b"\0\0\x80\x3f"),
    })
    write_st(os.path.join(d, "collide.safetensors"), {
        "x": ("F32", (2,), b"\0" * 8), "x.png": ("F32", (2,), b"\0" * 8)})


def read_png(path):
    """(width, height, rows of palette indices, tEXt chunks), checking the
    signature, every chunk's CRC, IHDR (8-bit palette, not interlaced) and
    that the file ends with IEND"""
    import zlib

    b = open(path, "rb").read()
    if b[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit("%s: not a PNG" % path)
    at, idat, ihdr, end, text = 8, b"", None, False, {}
    while at < len(b):
        n, = struct.unpack(">I", b[at:at + 4])
        kind, data = b[at + 4:at + 8], b[at + 8:at + 8 + n]
        crc, = struct.unpack(">I", b[at + 8 + n:at + 12 + n])
        if zlib.crc32(kind + data) != crc:
            sys.exit("%s: bad CRC in %r" % (path, kind))
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", data)
        elif kind == b"IDAT":
            idat += data
        elif kind == b"tEXt":
            k, v = data.split(b"\0", 1)
            text[k.decode("latin-1")] = v.decode("latin-1")
        elif kind == b"IEND":
            end = at + 12 + n == len(b)
        at += 12 + n
    w, h, depth, ctype, _, _, interlace = ihdr
    if not end or depth != 8 or ctype != 3 or interlace:
        sys.exit("%s: IHDR %r, IEND at the end %r" % (path, ihdr, end))
    raw = zlib.decompress(idat)
    if len(raw) != h * (w + 1):
        sys.exit("%s: %d bytes of pixels" % (path, len(raw)))
    rows = []
    for i in range(h):
        if raw[i * (w + 1)] != 0:
            sys.exit("%s: row %d filtered" % (path, i))
        rows.append(raw[i * (w + 1) + 1:(i + 1) * (w + 1)])
    return w, h, rows, text


def check_picture(p, a):
    """PNG @p is the picture of @a (rows x cols, logical order) as
    documented: larger than 512 on a side, both sides scaled by 512/the
    larger (aspect kept), then at least 64 x 16 and at most 512; row i of H
    from tensor row i*rows//H, column j of W from column j*cols//W, in 252
    colours from the 1st to the 99th percentile of the sampled finite
    values (k = (n-1)//100: the k-th smallest and largest), clipped, NaN
    252; then a black row, the histogram, a black row, the colour bar
    (column x is x*251//(W-1)), the scale's values as text; tEXt chunks
    tensorfs.min/max/scale_low/scale_high"""
    import math as m

    rows, cols = a.shape
    if rows > 512 or cols > 512:
        big = max(rows, cols)
        cols_, rows_ = cols * 512 // big, rows * 512 // big
    else:
        cols_, rows_ = cols, rows
    W, H = min(max(cols_, 64), 512), min(max(rows_, 16), 512)
    w, h, px, text = read_png(p)
    if (w, h) != (W, H + 1 + 48 + 22):
        sys.exit("%s: %dx%d, want %dx%d" % (p, w, h, W, H + 71))
    s = np.array([[a[i * rows // H, j * cols // W] for j in range(W)]
                  for i in range(H)])
    fin = np.sort(s[np.isfinite(s)])
    k = (fin.size - 1) // 100
    lo, hi = float(fin[k]), float(fin[fin.size - 1 - k])
    for key, want in (("min", fin[0]), ("max", fin[-1]), ("scale_low", lo),
                      ("scale_high", hi)):
        got = text.get("tensorfs." + key)
        if got is None or len(got) != 24 or float(got) != float(want):
            sys.exit("%s: tEXt tensorfs.%s %r, want %r" % (p, key, got, want))
        # and as an xattr of the mount's file
        x = os.getxattr(p, "user.tensorfs.preview." + key).decode()
        if x != got.strip() or float(x) != float(want):
            sys.exit("%s: xattr preview.%s %r, want %r" % (p, key, x, want))
    names = os.listxattr(p)
    if not all("user.tensorfs.preview." + k in names
               for k in ("min", "max", "scale_low", "scale_high")):
        sys.exit("%s: listxattr %r" % (p, names))
    for i in range(H):
        for j in range(W):
            x = s[i, j]
            if m.isnan(x):
                want = 252
            elif hi > lo:
                f = min(max((x - lo) / (hi - lo), 0.0), 1.0)
                want = int(m.floor(f * 251 + 0.5))
            else:
                want = 126
            if px[i][j] != want:
                sys.exit("%s: pixel (%d,%d) %d, want %d" %
                         (p, i, j, px[i][j], want))
    if set(px[H]) != {254} or set(px[H + 49]) != {254}:
        sys.exit("%s: no separator rows" % p)
    for y in range(H + 50, H + 58):
        if list(px[y]) != [x * 251 // (W - 1) for x in range(W)]:
            sys.exit("%s: colour bar row %d" % (p, y))
    for y0 in (H + 59, H + 65):   # the low value, then the high one
        txt = b"".join(px[y0:y0 + 5])
        if set(txt) != {253, 254}:
            sys.exit("%s: scale text at row %d: %r" % (p, y0, set(txt)))
    if os.path.getsize(p) != len(open(p, "rb").read()):
        sys.exit("%s: st_size is not the size" % p)


def previews(path, mnt):
    """every tensor of FILE with 1+ dimensions has PATH.png in MNT, the
    picture of its values (check_picture); scalars have none"""
    for name, (dt, shape, v) in read_st(path).items():
        p = os.path.join(mnt, name.replace(".", "/")) + ".png"
        if not shape:
            if os.path.exists(p):
                sys.exit("%s: a scalar has no picture" % p)
            continue
        rows = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
        check_picture(p, v.reshape(rows, shape[-1]))


def preview_fortran(mnt, path):
    """MNT/PATH is a column-major float32 tensor (order=F): its picture
    shows it in logical order"""
    f = os.path.join(mnt, path)
    if os.getxattr(f, "user.tensorfs.order") != b"F":
        sys.exit("%s: not column-major" % f)
    shape = json.loads(os.getxattr(f, "user.tensorfs.shape"))
    a = np.fromfile(f, "<f4").astype("f8").reshape(shape, order="F")
    rows = int(np.prod(shape[:-1]))
    check_picture(f + ".png", a.reshape(rows, shape[-1]))


def make_tol(d):
    a = {}
    for name, (dt, shape, raw) in read_raw(os.path.join(d, "a.safetensors")).items():
        a[name] = (dt, shape, raw)
    b = read_raw(os.path.join(d, "b.safetensors"))
    c = dict(a)
    c["layer.w"] = b["layer.w"]
    write_st(os.path.join(d, "c.safetensors"), c)
    z = dict(a)
    z["shape"] = ("F32", (2, 3), bytes(24))
    write_st(os.path.join(d, "z.safetensors"), z)


def read_raw(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
        data = f.read()
    return {k: (v["dtype"], tuple(v["shape"]),
                data[v["data_offsets"][0]:v["data_offsets"][1]])
            for k, v in h.items() if k != "__metadata__"}


def isclose(a, b, name, atol, rtol):
    x, y = read_st(a)[name][2], read_st(b)[name][2]
    ok = np.isclose(x, y, atol=float(atol), rtol=float(rtol), equal_nan=True)
    print("close" if ok.all() else "differ")


def close(got, want, what):
    if want is None or got is None:
        if got is not want:
            sys.exit("%s: got %r, want %r" % (what, got, want))
        return
    if not math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12):
        sys.exit("%s: got %r, want %r" % (what, got, want))


def stats(path, js):
    got = {t["name"]: t for t in json.load(open(js))}
    want = read_st(path)
    if set(got) != set(want):
        sys.exit("stats: tensors %s, want %s" % (sorted(got), sorted(want)))
    for name, (dt, shape, v) in want.items():
        g = got[name]
        fin = v[np.isfinite(v)]
        exp = {"count": v.size, "nan": int(np.isnan(v).sum()),
               "pos_inf": int(np.isposinf(v).sum()),
               "neg_inf": int(np.isneginf(v).sum()),
               "zeros": int((v == 0).sum())}
        for k, e in exp.items():
            if g[k] != e:
                sys.exit("stats %s %s: got %r, want %r" % (name, k, g[k], e))
        for k, f in [("min", np.min), ("max", np.max), ("mean", np.mean),
                     ("std", np.std)]:
            close(g[k], float(f(fin)) if fin.size else None,
                  "stats %s %s" % (name, k))
        if g["shape"] != list(shape):
            sys.exit("stats %s shape %r" % (name, g["shape"]))


def diff(a, b, js):
    doc = json.load(open(js))
    got = {t["name"]: t for t in doc["tensors"]}
    ta, tb = read_st(a), read_st(b)
    for name in sorted(set(ta) | set(tb)):
        g = got.get(name)
        if g is None:
            sys.exit("diff: %s missing" % name)
        if name not in tb:
            want = "only-a"
        elif name not in ta:
            want = "only-b"
        elif ta[name][1] != tb[name][1]:
            want = "shape"
        elif ta[name][0] != tb[name][0]:
            want = "dtype"
        elif np.array_equal(ta[name][2], tb[name][2], equal_nan=True):
            want = "same"
        else:
            want = "differ"
        if g["status"] != want:
            sys.exit("diff %s: %s, want %s" % (name, g["status"], want))
        if want in ("differ", "dtype"):
            x, y = ta[name][2], tb[name][2]
            ok = np.isfinite(x) & np.isfinite(y)
            dd = np.abs(x[ok] - y[ok])
            close(g["max_abs_diff"], float(dd.max()), name + " max abs")
            close(g["mean_abs_diff"], float(dd.mean()), name + " mean abs")
            close(g["rel_l2"], float(np.linalg.norm(x[ok] - y[ok]) /
                                     np.linalg.norm(x[ok])), name + " rel")
    s = doc["summary"]
    if (s["same"], s["differ"], s["dtype"], s["shape"], s["only_a"],
            s["only_b"]) != (3, 1, 1, 1, 1, 1):
        sys.exit("diff summary %r" % s)


FLOATING = ("F16", "BF16", "F32", "F64")


def asf32(path, mnt, all_=""):
    """-o as=float32 converts floating tensors; with all_ ("all") every
    numeric one; the others stay as stored (bytes, dtype, size)"""
    raw = read_raw(path)
    for name, (dt, shape, v) in read_st(path).items():
        p = os.path.join(mnt, name.replace(".", "/"))
        if not all_ and dt not in FLOATING:
            with open(p, "rb") as f:
                if f.read() != raw[name][2]:
                    sys.exit("%s: not the stored bytes" % p)
            dtype = os.getxattr(p, "user.tensorfs.dtype").decode()
            if dtype == "float32":
                sys.exit("%s: %s converted without all" % (p, dt))
            try:
                os.getxattr(p, "user.tensorfs.stored_dtype")
                sys.exit("%s: a stored_dtype without a view" % p)
            except OSError:
                pass
            continue
        got = np.fromfile(p, "<f4")
        if os.path.getsize(p) != 4 * v.size:
            sys.exit("%s: size %d, want %d" % (p, os.path.getsize(p),
                                               4 * v.size))
        if not np.array_equal(got, v.astype("<f4"), equal_nan=True):
            sys.exit("%s: values differ" % p)
        dtype = os.getxattr(p, "user.tensorfs.dtype").decode()
        if dtype != "float32":
            sys.exit("%s: dtype %s" % (p, dtype))
        if dt != "F32":
            sd = os.getxattr(p, "user.tensorfs.stored_dtype").decode()
            if not sd:
                sys.exit("%s: no stored_dtype" % p)
        # reads at odd offsets: the same bytes as the whole file
        whole = got.tobytes()
        with open(p, "rb") as f:
            for off in (1, 4 * v.size // 3 + 3, max(0, 4 * v.size - 5)):
                f.seek(off)
                if f.read(4099) != whole[off:off + 4099]:
                    sys.exit("%s: read at %d differs" % (p, off))


def asf32npy(path, mnt, all_=""):
    """-o as=float32,npy: np.load gives the float32 values, shape kept
    (floating tensors; every numeric one with all_)"""
    for name, (dt, shape, v) in read_st(path).items():
        p = os.path.join(mnt, name.replace(".", "/") + ".npy")
        a = np.load(p, mmap_mode="r")
        if not all_ and dt not in FLOATING:
            if a.dtype == np.float32 or not np.array_equal(
                    np.asarray(a).reshape(-1), v):
                sys.exit("%s: %s, not as stored" % (p, a.dtype))
            continue
        if a.dtype != np.float32 or list(a.shape) != list(shape):
            sys.exit("%s: %s %s" % (p, a.dtype, a.shape))
        if not np.array_equal(np.asarray(a).reshape(-1), v.astype("<f4"),
                              equal_nan=True):
            sys.exit("%s: values differ" % p)


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "make":
        make(sys.argv[2])
    elif cmd == "make_pictures":
        make_pictures(sys.argv[2])
    elif cmd == "previews":
        previews(sys.argv[2], sys.argv[3])
    elif cmd == "preview_fortran":
        preview_fortran(sys.argv[2], sys.argv[3])
    elif cmd == "make_utf8":
        make_utf8(sys.argv[2])
    elif cmd == "ls_aligned":
        ls_aligned(sys.argv[2])
    elif cmd == "stats":
        stats(sys.argv[2], sys.argv[3])
    elif cmd == "diff":
        diff(sys.argv[2], sys.argv[3], sys.argv[4])
    elif cmd == "make_tol":
        make_tol(sys.argv[2])
    elif cmd == "isclose":
        isclose(*sys.argv[2:7])
    elif cmd == "asf32":
        asf32(*sys.argv[2:5])
    elif cmd == "asf32npy":
        asf32npy(*sys.argv[2:5])
    else:
        sys.exit("unknown command " + cmd)
