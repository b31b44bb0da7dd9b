# SPDX-License-Identifier: MIT
"""The Python module (python/tensorfs) against independent expectations:
the bytes of the fixtures parsed here, arrays numpy wrote, the sha256s the
PyTorch fixture generator computed, and checkpoints torch itself writes
and loads.  Run by tests/python/run.sh (meson test python)."""
import errno
import gc
import hashlib
import json
import math
import os
import re
import struct
import subprocess
import zipfile

import numpy as np
import pytest

import tensorfs

ROOT = os.environ.get("TFS_SOURCE_ROOT",
                      os.path.join(os.path.dirname(__file__), "..", ".."))
SAMPLE = os.path.join(ROOT, "data", "sample.zt")
FIX = os.path.join(ROOT, "tests", "fixtures")
EVERY = os.path.join(FIX, "safetensors", "valid", "every_dtype.safetensors")


def sample_embed():
    # tools/make_sample.py: embed.weight = round(sin(i) / 2, 6), [8, 4]
    return np.array([round(math.sin(i) / 2, 6) for i in range(32)],
                    dtype=np.float32).reshape(8, 4)


def safetensors_parts(path):
    """header dict and the data section, by the spec (specs/safetensors.md)"""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    return json.loads(blob[8:8 + n]), blob[8 + n:]


def st_bytes(path, name):
    h, data = safetensors_parts(path)
    a, b = h[name]["data_offsets"]
    return data[a:b]


# ---- the mapping ----------------------------------------------------------
def test_sample_names_and_values():
    with tensorfs.open(SAMPLE) as m:
        assert sorted(m) == ["embed.weight", "encoder.layers.0.bias",
                             "encoder.layers.0.weight",
                             "encoder.layers.1.bias",
                             "encoder.layers.1.weight", "head.scale",
                             "head.weight", "step", "vocab.mask"]
        a = m["embed.weight"]
        assert a.dtype == np.float32 and a.shape == (8, 4)
        np.testing.assert_array_equal(a, sample_embed())
        assert m.format == "ztensor"
        assert len(m) == 9 and "step" in m and "nope" not in m
        with pytest.raises(KeyError):
            m["nope"]


def test_names_match_the_cli():
    tfs = os.environ.get("TENSORFS")
    if not tfs:
        pytest.skip("TENSORFS (the built CLI) not set")
    out = subprocess.run([tfs, "ls", EVERY], check=True,
                         capture_output=True, text=True).stdout
    names = [line.split()[0] for line in out.splitlines()]
    assert list(tensorfs.open(EVERY)) == names


def test_raw_tensors_are_zero_copy_read_only_views():
    m = tensorfs.open(SAMPLE)
    a, b = m["embed.weight"], m["embed.weight"]
    assert not a.flags.owndata and not a.flags.writeable
    # the same bytes of the mapping, not two copies
    assert a.ctypes.data == b.ctypes.data
    with pytest.raises(ValueError):
        a[0, 0] = 1
    with pytest.raises(TypeError):
        m["embed.weight"] = a


def test_views_keep_the_model_open():
    m = tensorfs.open(SAMPLE)
    a = m["embed.weight"]
    m.close()
    del m
    gc.collect()
    np.testing.assert_array_equal(a, sample_embed())


def test_closed_model_refuses():
    m = tensorfs.open(SAMPLE)
    m.close()
    with pytest.raises(ValueError):
        m["step"]


def test_every_dtype_against_the_file_bytes():
    h, _ = safetensors_parts(EVERY)
    m = tensorfs.open(EVERY)
    native = {"F32": "<f4", "F64": "<f8", "F16": "<f2", "I8": "i1",
              "I16": "<i2", "I32": "<i4", "I64": "<i8", "U8": "u1",
              "U16": "<u2", "U32": "<u4", "U64": "<u8", "BOOL": "?",
              "C64": "<c8"}
    checked = 0
    for name, spec in h.items():
        if name == "__metadata__" or spec["dtype"] not in native:
            continue
        want = np.frombuffer(st_bytes(EVERY, name),
                             dtype=native[spec["dtype"]]).reshape(
                                 spec["shape"])
        got = m[name]
        assert got.dtype == want.dtype and got.shape == want.shape, name
        np.testing.assert_array_equal(got, want)
        checked += 1
    assert checked >= 12
    # bfloat16 and float8: their exact bytes (ml_dtypes' types when it is
    # there, else |V2 and |V1), never float32 values
    bits = np.frombuffer(st_bytes(EVERY, "bf16"), dtype="<u2")
    got = m["bf16"]
    assert got.dtype.itemsize == 2 and got.shape == (2,)
    assert got.dtype != np.float32
    assert got.tobytes() == st_bytes(EVERY, "bf16")
    f8 = np.frombuffer(st_bytes(EVERY, "f8a"), dtype="u1")
    assert m["f8a"].dtype.itemsize == 1
    assert m["f8a"].tobytes() == f8.tobytes()
    # as_="float32": values, asked for. bfloat16: the top half of a float32
    m32 = tensorfs.open(EVERY, as_="float32")
    want = (bits.astype(np.uint32) << 16).view(np.float32)
    got = m32["bf16"]
    assert got.dtype == np.float32 and got.shape == (2,)
    np.testing.assert_array_equal(got, want)
    # float8_e5m2: the top byte of a float16
    want = (f8.astype(np.uint16) << 8).view("<f2").astype(np.float32)
    np.testing.assert_array_equal(m32["f8a"], want)


def test_numpy_files_decoded_converted_and_fortran(tmp_path):
    rng = np.random.default_rng(7)
    arrays = {
        "w": rng.standard_normal((5, 3)).astype(np.float32),
        "big": rng.standard_normal(6).astype(">f4"),
        "fort": np.asfortranarray(np.arange(12, dtype=np.int16)
                                  .reshape(3, 4)),
        "ids": np.arange(10, dtype=np.int64),
    }
    plain, packed = tmp_path / "p.npz", tmp_path / "c.npz"
    np.savez(plain, **arrays)
    np.savez_compressed(packed, **arrays)
    for path in (plain, packed):
        got = tensorfs.load(str(path))
        assert sorted(got) == sorted(arrays)
        for k, want in arrays.items():
            assert got[k].shape == want.shape, (path, k)
            assert got[k].dtype == want.dtype.newbyteorder("="), (path, k)
            np.testing.assert_array_equal(got[k], want)
    with tensorfs.open(str(packed)) as m:
        info = m.info("w")
        assert not info["raw"]  # deflated: decoded, not a view
        # two reads of a decoded tensor are two copies
        a, b = m["w"], m["w"]
        assert a.ctypes.data != b.ctypes.data
        assert m.info("big")["byte_order"] == "big"
        assert m.info("fort")["order"] == "F"


def test_info_metadata_xattr():
    m = tensorfs.open(SAMPLE)
    info = m.info()
    assert info["format"] == "ztensor" and info["tensors"] == 9
    assert info["parameters"] == sum(int(np.prod(m[k].shape)) for k in m)
    assert info["bytes"] == sum(m[k].nbytes for k in m)
    assert info["dtypes"]["float64"] == 8
    t = m.info("embed.weight")
    assert t["path"] == "embed/weight" and t["shape"] == (8, 4)
    assert t["dtype"] == "float32" and t["nbytes"] == 128
    assert t["byte_order"] == "little" and t["order"] == "C"
    assert m.xattr("embed.weight", "dtype") == b"float32"
    assert m.xattr("embed.weight", "user.tensorfs.shape") == b"[8,4]"
    assert m.xattr("embed.weight", "no_such") is None
    meta = m.metadata
    assert meta["format"] == "ztensor"
    tfs = os.environ.get("TENSORFS")
    if tfs:
        out = subprocess.run([tfs, "cat", SAMPLE, ".tensorfs/metadata.json"],
                             check=True, capture_output=True).stdout
        assert meta == json.loads(out)


def test_verify_finds_a_corrupt_member(tmp_path):
    path = tmp_path / "v.npz"
    np.savez(path, a=np.arange(64, dtype=np.float32),
             b=np.ones(64, dtype=np.float32))
    assert tensorfs.open(str(path)).verify() == {}
    # flip a byte of b's data (its zip member's CRC-32 no longer matches)
    with zipfile.ZipFile(path) as z:
        zi = z.getinfo("b.npy")
    blob = bytearray(path.read_bytes())
    (nlen, xlen) = struct.unpack("<HH", blob[zi.header_offset + 26:
                                           zi.header_offset + 30])
    at = zi.header_offset + 30 + nlen + xlen + zi.file_size - 1
    blob[at] ^= 0xFF
    path.write_bytes(bytes(blob))
    bad = tensorfs.open(str(path)).verify()
    assert list(bad) == ["b"]
    assert re.search("crc|digest|mismatch", bad["b"], re.I)
    with pytest.raises(OSError) as e:
        tensorfs.open(str(path))["b"]
    assert e.value.errno == errno.EIO


def test_open_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        tensorfs.open(str(tmp_path / "missing.safetensors"))
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x00" * 7)
    with pytest.raises(OSError) as e:
        tensorfs.open(str(junk))
    assert e.value.errno in (errno.ENOEXEC, errno.EBADMSG)
    with pytest.raises(ValueError):
        tensorfs.load(SAMPLE, framework="jax")


# ---- PyTorch checkpoints -----------------------------------------------
def test_pytorch_fixtures_match_the_generator():
    """tests/fixtures/pytorch: sha256 of each tensor's row-major bytes as
    the generator computed them by index arithmetic"""
    with open(os.path.join(FIX, "pytorch", "expected.json")) as f:
        expected = json.load(f)["valid"]
    for name, exp in expected.items():
        got = tensorfs.load(os.path.join(FIX, "pytorch", "valid", name))
        assert sorted(got) == sorted(exp["tensors"]), name
        for k, t in exp["tensors"].items():
            a = got[k]
            assert a.dtype == np.dtype(t["dtype"]), (name, k)
            digest = hashlib.sha256(np.ascontiguousarray(a).tobytes())
            assert digest.hexdigest() == t["sha256"], (name, k)


def torch_or_skip():
    try:
        import torch
    except ImportError:
        pytest.skip("torch is not installed (Debian's python3-torch)")
    return torch


@pytest.mark.parametrize("zipped", [True, False])
def test_torch_saved_checkpoint(tmp_path, zipped):
    torch = torch_or_skip()
    g = torch.Generator().manual_seed(3)
    base = torch.randn(6, 4, generator=g)
    sd = {
        "w": torch.randn(3, 5, generator=g),
        "h": torch.randn(4, 2, generator=g).half(),
        "bf": torch.randn(7, generator=g).to(torch.bfloat16),
        "ids": torch.arange(9, dtype=torch.int64).reshape(3, 3),
        "mask": torch.tensor([True, False, True]),
        "t": base.t(),  # a transposed view: not contiguous
        "row": base[2],  # a view at an offset of a shared storage
        "s": torch.tensor(2.5, dtype=torch.float64),
        "u": torch.arange(4, dtype=torch.uint8),
    }
    path = tmp_path / "pytorch_model.bin"
    torch.save(sd, path, _use_new_zipfile_serialization=zipped)
    want = torch.load(path, weights_only=True)
    got = tensorfs.load(str(path), framework="torch")
    assert sorted(got) == sorted(want)
    for k in want:
        assert got[k].dtype == want[k].dtype, k
        assert got[k].shape == want[k].shape, k
        assert torch.equal(got[k], want[k]), k
    arrays = tensorfs.load(str(path))
    np.testing.assert_array_equal(arrays["t"], want["t"].numpy())
    assert arrays["bf"].tobytes() == want["bf"].view(torch.int16).numpy(
    ).tobytes()
    np.testing.assert_array_equal(tensorfs.load(str(path), as_="float32")[
        "bf"], want["bf"].float().numpy())


def test_docs_python_example():
    """docs/python.md's example prints what the page says it prints"""
    with open(os.path.join(ROOT, "docs", "python.md")) as f:
        doc = f.read()
    m = re.search(r"```python\n(.*?)```\n\n((?:    [^\n]*\n)+)", doc, re.S)
    assert m, "docs/python.md: no example followed by its output"
    want = "".join(line[4:] + "\n" for line in m.group(2).splitlines())
    out = subprocess.run(["/usr/bin/python3", "-c", m.group(1)], cwd=ROOT,
                         check=True, capture_output=True, text=True).stdout
    assert out == want
    # and what it prints agrees with the sample's generator
    row = sample_embed()[1]
    assert ("%s" % row) in out
