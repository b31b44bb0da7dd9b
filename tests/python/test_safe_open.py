# SPDX-License-Identifier: MIT
"""tensorfs.safe_open / load_file (safetensors' API) against independent
readers: numpy, torch.load, h5py and onnx on files they write or read
themselves, the safetensors spec parsed here, `tensorfs cat` over a file of
every format; slices against numpy slicing; errors against the CLI's
lines; docs/python.md's safetensors example.  Run by tests/python/run.sh."""
import glob
import json
import os
import re
import struct
import subprocess

import numpy as np
import pytest

import tensorfs
from tensorfs import load_file, safe_open

ROOT = os.environ.get("TFS_SOURCE_ROOT",
                      os.path.join(os.path.dirname(__file__), "..", ".."))
FIX = os.path.join(ROOT, "tests", "fixtures")
TENSORFS = os.environ.get("TENSORFS")

# index expressions checked against numpy's own slicing
INDEXES = [
    (), 0, -1, slice(1, 3), slice(None, None, 2), slice(None, None, -1),
    (slice(None), 1), (Ellipsis, 0), (1, slice(0, 2)), (slice(0, 3, 2),
                                                         slice(1, None)),
    (slice(2, 2),),
]


def applicable(idx, shape):
    try:
        np.empty(shape)[idx]
        return True
    except (IndexError, TypeError):
        return False


def check_slices(t, whole):
    """get_slice(...)[idx] == numpy's whole[idx], every index that fits"""
    for idx in INDEXES:
        if not applicable(idx, whole.shape):
            continue
        got = t[idx]
        want = whole[idx]
        assert got.shape == want.shape, (t.key, idx)
        assert got.dtype == want.dtype, (t.key, idx)
        assert np.asarray(got).tobytes() == np.ascontiguousarray(
            want).tobytes(), (t.key, idx)


def write_safetensors(path, tensors, metadata=None):
    """a safetensors file by its spec (specs/safetensors.md)"""
    codes = {"<f4": "F32", "<f2": "F16", "<i8": "I64", "|u1": "U8",
             "<i4": "I32", "|b1": "BOOL", "<f8": "F64"}
    header, blobs, off = {}, [], 0
    for name, a in tensors.items():
        b = np.ascontiguousarray(a).tobytes()
        header[name] = {"dtype": codes[a.dtype.str], "shape": list(a.shape),
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def sample_arrays(rng):
    return {
        "embed.weight": rng.standard_normal((7, 5)).astype(np.float32),
        "h": rng.standard_normal((3, 4, 6)).astype(np.float16),
        "ids": np.arange(24, dtype=np.int64).reshape(2, 3, 4),
        "mask": np.array([True, False, True]),
        "scalar": np.array(2.5, dtype=np.float64),
    }


def check_model(path, want, framework="np", torch=None):
    """the safetensors calls over @path against @want (name -> array)"""
    with safe_open(path, framework=framework) as f:
        assert sorted(f.keys()) == sorted(want)
        for k, w in want.items():
            got = f.get_tensor(k)
            if framework == "pt":
                assert got.dtype == torch.from_numpy(w).dtype, k
                got = got.numpy()
            assert got.shape == w.shape and got.dtype == w.dtype, k
            np.testing.assert_array_equal(got, w)
            t = f.get_slice(k)
            assert t.get_shape() == list(w.shape)
            if framework == "np":
                check_slices(t, w)
    got = load_file(path, framework=framework)
    assert sorted(got) == sorted(want)


# ---- formats an independent library writes -------------------------------
def test_safetensors_by_the_spec(tmp_path):
    want = sample_arrays(np.random.default_rng(1))
    path = str(tmp_path / "model.safetensors")
    write_safetensors(path, want, {"format": "pt", "note": "x"})
    check_model(path, want)
    with safe_open(path) as f:
        assert f.metadata() == {"format": "pt", "note": "x"}
        t = f.get_slice("embed.weight")
        assert t.get_dtype() == "F32" and t.dtype == "float32"
        assert t.name == "embed.weight" and t.path == "embed/weight"
        assert t.xattrs["dtype"] == "float32"


def test_numpy_npz_and_npy(tmp_path):
    want = sample_arrays(np.random.default_rng(2))
    for save in (np.savez, np.savez_compressed):
        path = str(tmp_path / (save.__name__ + ".npz"))
        save(path, **want)
        # the independent reader: numpy's own np.load
        with np.load(path) as z:
            assert sorted(z.files) == sorted(want)
            check_model(path, {k: z[k] for k in z.files})
    path = str(tmp_path / "a.npy")
    np.save(path, want["ids"])
    with safe_open(path) as f:
        (k,) = f.keys()
        check_slices(f.get_slice(k), np.load(path))


def torch_or_skip():
    try:
        import torch
        return torch
    except ImportError:
        pytest.skip("torch is not installed (Debian's python3-torch)")


@pytest.mark.parametrize("zipped", [True, False])
def test_torch_save_against_torch_load(tmp_path, zipped):
    torch = torch_or_skip()
    g = torch.Generator().manual_seed(5)
    sd = {
        "w": torch.randn(6, 5, generator=g),
        "bf": torch.randn(4, 3, generator=g).to(torch.bfloat16),
        "h": torch.randn(3, generator=g).half(),
        "ids": torch.arange(12).reshape(3, 4),
        "row": torch.randn(5, 4, generator=g)[3],
    }
    path = str(tmp_path / "pytorch_model.bin")
    torch.save(sd, path, _use_new_zipfile_serialization=zipped)
    want = torch.load(path, weights_only=True)
    with safe_open(path, framework="pt") as f:
        assert sorted(f.keys()) == sorted(want)
        for k in want:
            got = f.get_tensor(k)
            assert got.dtype == want[k].dtype and got.shape == want[k].shape
            assert torch.equal(got, want[k]), k
        rows = f.get_slice("w")[1:4]
        assert torch.equal(rows, want["w"][1:4])
        assert torch.equal(f.get_slice("bf")[2], want["bf"][2])
    got = load_file(path, framework="pt")
    assert all(torch.equal(got[k], want[k]) for k in want)
    # numpy: bfloat16's exact bytes, never float32 values
    bf = load_file(path)["bf"]
    assert bf.dtype != np.float32
    assert bf.tobytes() == want["bf"].view(torch.int16).numpy().tobytes()


def test_torch_tensors_share_the_mapping(tmp_path):
    torch = torch_or_skip()
    want = {"w": np.arange(64, dtype=np.float32).reshape(8, 8)}
    path = str(tmp_path / "m.safetensors")
    write_safetensors(path, want)
    with safe_open(path, framework="pt") as f:
        a, b = f.get_tensor("w"), f.get_tensor("w")
        # the same bytes of the mapping, no copy
        assert a.data_ptr() == b.data_ptr()
        m = f.model()
        addr = m._h.lib.tfs_tensor_data(m._ptr(), 0)
        assert a.data_ptr() == addr
        assert torch.equal(a, torch.from_numpy(want["w"]))


def test_h5py_against_h5py(tmp_path):
    h5py = pytest.importorskip("h5py")
    rng = np.random.default_rng(3)
    path = str(tmp_path / "m.h5")
    want = {}
    with h5py.File(path, "w") as h:
        want["a"] = rng.standard_normal((9, 4)).astype(np.float32)
        h.create_dataset("a", data=want["a"])
        want["g/b"] = np.arange(30, dtype=np.int32).reshape(5, 6)
        h.create_dataset("g/b", data=want["g/b"], chunks=(2, 3),
                         compression="gzip")
    with h5py.File(path, "r") as h:  # the independent reader
        indep = {k: h[k][()] for k in want}
    with safe_open(path) as f:
        paths = {f.get_slice(k).path: k for k in f.keys()}
        for p, w in indep.items():
            t = f.tensor(paths[p])
            np.testing.assert_array_equal(t.get(), w)
            check_slices(t, w)


def test_onnx_against_onnx():
    onnx = pytest.importorskip("onnx")
    from onnx import numpy_helper
    path = os.path.join(FIX, "onnx", "models", "mlp.onnx")
    model = onnx.load(path)
    want = {t.name: numpy_helper.to_array(t)
            for t in model.graph.initializer}
    assert want
    with safe_open(path) as f:
        for name, w in want.items():
            t = f.tensor(name)
            np.testing.assert_array_equal(t.get(), w)
            check_slices(t, w)


# ---- every format: safe_open against `tensorfs cat` -----------------------
def every_format_files():
    files = []
    for fmt in sorted(os.listdir(FIX)):
        found = []
        for sub in ("valid", "models", "model", "torch_written"):
            found += sorted(p for p in glob.glob(os.path.join(
                FIX, fmt, sub, "*")) if os.path.isfile(p) and
                not p.endswith((".json", ".py", ".tsv", ".md", ".txt")))
        files += found[:3]
    return files


def cat_bytes(path, tensor_path):
    return subprocess.run([TENSORFS, "cat", path, tensor_path], check=True,
                          capture_output=True).stdout


def stored_bytes(arr, t):
    """@arr (what get_tensor gave) back as `tensorfs cat` gives the bytes"""
    if t.byte_order == "big" and arr.dtype.itemsize > 1:
        arr = arr.astype(arr.dtype.newbyteorder(">"))
    return arr.tobytes(order="F" if t.order == "F" else "C")


@pytest.mark.parametrize("path", every_format_files(),
                         ids=lambda p: os.path.relpath(p, FIX))
def test_every_format_against_the_cli(path):
    if not TENSORFS:
        pytest.skip("TENSORFS (the built CLI) not set")
    try:
        f = safe_open(path)
    except tensorfs.Error as e:
        # a fixture the CLI refuses too (e.g. needs a companion file)
        r = subprocess.run([TENSORFS, "ls", path], capture_output=True,
                           text=True)
        assert r.returncode != 0, (path, str(e))
        return
    with f:
        keys = f.keys()
        assert len(keys) == len(f.paths())
        for k in keys[:6]:
            t = f.get_slice(k)
            try:
                arr = f.get_tensor(k)
            except tensorfs.Error:
                # listed but unreadable (ncnn's .param without its .bin):
                # the CLI refuses its bytes too
                r = subprocess.run([TENSORFS, "cat", path, t.path],
                                   capture_output=True)
                assert r.returncode != 0, k
                continue
            assert stored_bytes(arr, t) == cat_bytes(path, t.path), k
            if arr.dtype.kind != "V" and arr.ndim:
                check_slices(t, arr)
    # framework="pt": the same values, where torch has the dtype
    try:
        import torch
    except ImportError:
        return
    with safe_open(path, framework="pt") as f, safe_open(path) as g:
        for k in f.keys()[:6]:
            try:
                got = f.get_tensor(k)
            except tensorfs.Error as e:
                # a dtype torch lacks (ENOTSUP), or unreadable as above
                assert (e.errno == 95 and "torch" in str(e)) or (
                    e.errno == 5 and subprocess.run(
                        [TENSORFS, "cat", path, g.get_slice(k).path],
                        capture_output=True).returncode != 0), k
                continue
            want = np.ascontiguousarray(g.get_tensor(k))
            if got.dtype == torch.bfloat16:
                got = got.view(torch.int16)
            got = got.numpy()
            if want.dtype.kind == "V":  # bfloat16's bytes
                want = want.view(got.dtype)
            # the values (uint16/32 widened by torch 1.13)
            np.testing.assert_array_equal(got, want.astype(got.dtype))


# ---- names -------------------------------------------------------------
def test_colliding_names_are_keyed_by_path(tmp_path):
    rng = np.random.default_rng(4)
    a = {"w": rng.standard_normal((3, 2)).astype(np.float32),
         "only_a": np.arange(3, dtype=np.int32)}
    b = {"w": rng.standard_normal((4, 2)).astype(np.float32)}
    write_safetensors(str(tmp_path / "a.safetensors"), a)
    write_safetensors(str(tmp_path / "b.safetensors"), b)
    with safe_open(str(tmp_path)) as f:
        keys = f.keys()
        # every tensor reachable: three keys for three tensors
        assert len(keys) == len(f.paths()) == 3
        assert "only_a" in keys and "w" not in keys
        # a container's directory is its name without the extension
        assert sorted(keys) == ["a/w", "b/w", "only_a"]
        wa, wb = "a/w", "b/w"
        np.testing.assert_array_equal(f.get_tensor(wa), a["w"])
        np.testing.assert_array_equal(f.get_tensor(wb), b["w"])
        assert f.get_slice(wa).name == f.get_slice(wb).name == "w"
        assert f.paths() == ["a/only_a", "a/w", "b/w"]
        np.testing.assert_array_equal(f.get_tensor("a/only_a"),
                                      a["only_a"])


# ---- errors: the CLI's lines -------------------------------------------
def cli_line(*args):
    r = subprocess.run([TENSORFS] + list(args), capture_output=True,
                       text=True)
    assert r.returncode != 0
    line = r.stderr.splitlines()[0]
    assert line.startswith("tensorfs: ")
    return line[len("tensorfs: "):]


def test_errors_are_the_cli_lines(tmp_path):
    if not TENSORFS:
        pytest.skip("TENSORFS (the built CLI) not set")
    missing = str(tmp_path / "missing.safetensors")
    with pytest.raises(FileNotFoundError) as e:
        safe_open(missing)
    assert str(e.value) == cli_line("ls", missing)
    assert isinstance(e.value, tensorfs.Error)
    rejects = sorted(glob.glob(os.path.join(FIX, "safetensors", "reject",
                                            "*.safetensors")))
    assert rejects
    for path in rejects:
        with pytest.raises(tensorfs.Error) as e:
            safe_open(path)
        assert str(e.value) == cli_line("ls", path), path
    sample = os.path.join(ROOT, "data", "sample.zt")
    with safe_open(sample) as f:
        with pytest.raises(KeyError) as e:
            f.get_tensor("nope")
        assert str(e.value) == cli_line("cat", sample, "nope")
    # a tensor whose digest fails: the line the CLI logs for it
    bad = os.path.join(FIX, "npy", "corrupt", "stored_crc_mismatch.npz")
    with safe_open(bad) as f:
        for _ in range(2):  # and again: the reason stays
            with pytest.raises(tensorfs.Error) as e:
                f.get_tensor("w")
            assert e.value.errno == 5
            assert str(e.value) == cli_line("cat", bad, "w")
    # verify="off": the bytes as stored, unchecked (as `-o verify=off`)
    with safe_open(bad, verify="off") as f:
        assert f.get_tensor("w").shape == (4,)
    with pytest.raises(ValueError):
        safe_open(sample, framework="tf")


# ---- docs/python.md ------------------------------------------------------
def test_docs_safetensors_example():
    """docs/python.md's safetensors example prints what the page says"""
    with open(os.path.join(ROOT, "docs", "python.md")) as f:
        doc = f.read()
    doc = doc[doc.index("## safetensors"):]
    m = re.search(r"```python\n(.*?)```\n\n((?:    [^\n]*\n)+)", doc, re.S)
    assert m, "docs/python.md: no safetensors example with its output"
    assert "from tensorfs import safe_open" in m.group(1)
    want = "".join(line[4:] + "\n" for line in m.group(2).splitlines())
    out = subprocess.run(["/usr/bin/python3", "-c", m.group(1)], cwd=ROOT,
                         check=True, capture_output=True, text=True).stdout
    assert out == want


# ---- a slice over http: only its bytes (plus whole chunks) are fetched ---
SLICE_CLIENT = """
import sys, numpy as np, tensorfs
rows, width = 512, 8192
w = np.arange(rows * width, dtype=np.float32).reshape(rows, width)
try:
    f = tensorfs.safe_open(sys.argv[1])
except tensorfs.Error as e:
    sys.exit(77 if "not a container" in str(e) else 1)
with f:
    np.testing.assert_array_equal(f.get_slice("w")[300], w[300])
    np.testing.assert_array_equal(f.get_slice("w")[5:7, 100:104],
                                  w[5:7, 100:104])
"""


def test_remote_slice_fetches_the_row_only(tmp_path):
    served = tmp_path / "served"
    served.mkdir()
    rows, width = 512, 8192  # a 16 MiB float32 tensor, 32 KiB a row
    w = np.arange(rows * width, dtype=np.float32).reshape(rows, width)
    write_safetensors(str(served / "m.safetensors"), {"w": w})
    log, faults = tmp_path / "log", tmp_path / "faults.json"
    faults.write_text("{}")
    srv = subprocess.Popen(["/usr/bin/python3", os.path.join(
        ROOT, "tests", "remote", "server.py"), str(served),
        str(tmp_path / "port"), str(log), str(faults)])
    try:
        for _ in range(100):
            if (tmp_path / "port").exists() and \
                    (tmp_path / "port").read_text():
                break
            subprocess.run(["sleep", "0.05"])
        url = "http://127.0.0.1:%s/m.safetensors" % (
            tmp_path / "port").read_text().strip()
        # without prefetch (it fetches the rest of a tensor read, by
        # default: docs/remote.md), in a process of its own (tfs_init)
        env = dict(os.environ,
                   TENSORFS_REMOTE_OPTIONS="no_cache,remote_prefetch=0")
        r = subprocess.run(["/usr/bin/python3", "-c", SLICE_CLIENT, url],
                           env=env)
        if r.returncode == 77:
            pytest.skip("built without remote sources")
        assert r.returncode == 0
    finally:
        srv.terminate()
        srv.wait()
    fetched = 0
    for line in log.read_text().splitlines():
        f = line.split()
        if f[2] == "206":
            a, b = f[3].split("-")
            fetched += int(b) - int(a) + 1
    chunk = 256 << 10
    # the probe's first chunk, the row's chunk, the two rows' chunk
    assert fetched <= 3 * chunk, fetched


def test_as_float32_converts_every_real_dtype(tmp_path):
    path = os.path.join(FIX, "safetensors", "valid", "every_dtype.safetensors")
    with safe_open(path) as f, safe_open(path, as_="float32") as g:
        for k in f.keys():
            t = f.get_slice(k)
            a = f.get_tensor(k)
            b = g.get_tensor(k)
            if t.dtype.startswith("complex"):
                assert b.dtype == a.dtype, k  # never a magnitude
            elif a.shape != t.shape:  # sub-byte: bytes, or float32 values
                if f.model().info(k)["numeric"]:
                    assert b.dtype == np.float32 and b.shape == t.shape, k
            elif a.dtype.kind in "fiub":
                assert b.dtype == np.float32, k
                np.testing.assert_array_equal(b, a.astype(np.float32))
                if b.ndim:
                    check_slices(g.get_slice(k), b)
            elif t.dtype in ("bfloat16", "float8_e5m2"):
                assert b.dtype == np.float32, k
                if b.ndim:
                    check_slices(g.get_slice(k), b)
