# SPDX-License-Identifier: MIT
"""Read tensor containers (model checkpoints) with libtensorfs, without FUSE.

    import tensorfs
    with tensorfs.open("model.safetensors") as m:   # also .gguf, .bin, .npz,
        w = m["embed.weight"]                       # a directory, a URL...
    weights = tensorfs.load("pytorch_model.bin")    # a dict; no pickle is run
    tensors = tensorfs.load("model.gguf", framework="torch")

A model is a read-only mapping from stored name to numpy array.  A tensor
stored raw and little-endian in a local file is a zero-copy, read-only view
of the file's mapping (the model stays open while any such array lives);
any other is decoded into a new array: compressed tensors in their dtype,
big-endian ones converted to native order, dtypes numpy has no type for
(bfloat16, float8, float4, ggml's quantized blocks...) as float32 values.
docs/python.md says more.  ctypes over libtensorfs.so.0 and numpy only.
"""
import ctypes
import errno as _errno
import json
import os
import threading
from collections.abc import Mapping

import numpy as np

__all__ = ["open", "load", "Model", "version"]


class _Info(ctypes.Structure):
    # struct tfs_tensor_info (include/tensorfs/tensorfs.h)
    _fields_ = [
        ("name", ctypes.c_void_p),
        ("name_len", ctypes.c_size_t),
        ("path", ctypes.c_char_p),
        ("dtype", ctypes.c_char_p),
        ("shape", ctypes.POINTER(ctypes.c_uint64)),
        ("ndim", ctypes.c_uint32),
        ("itemsize", ctypes.c_uint32),
        ("nbytes", ctypes.c_uint64),
        ("count", ctypes.c_uint64),
        ("byte_order", ctypes.c_char_p),
        ("order", ctypes.c_char_p),
        ("role", ctypes.c_char_p),
        ("group", ctypes.c_void_p),
        ("group_len", ctypes.c_size_t),
        ("raw", ctypes.c_int),
        ("numeric", ctypes.c_int),
    ]


_lib = None
_lib_lock = threading.Lock()


def _candidates():
    env = os.environ.get("TENSORFS_LIBRARY")
    if env:
        return [env]
    names = ["libtensorfs.so.0"]
    try:  # where meson installed the library (written at install)
        from . import _paths
        names.append(os.path.join(_paths.LIBDIR, "libtensorfs.so.0"))
    except ImportError:
        pass
    return names


def _library():
    global _lib
    with _lib_lock:
        if _lib is not None:
            return _lib
        err = None
        for name in _candidates():
            try:
                lib = ctypes.CDLL(name)
                break
            except OSError as e:
                err = e
        else:
            raise ImportError("tensorfs: cannot load libtensorfs.so.0 (%s)"
                              % err)
        P, S, Z = ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_size_t
        sig = {
            "tfs_open": (ctypes.c_int, [ctypes.c_char_p, P, ctypes.POINTER(P),
                                        ctypes.c_char_p, Z]),
            "tfs_close": (None, [P]),
            "tfs_format": (ctypes.c_char_p, [P]),
            "tfs_tensor_count": (Z, [P]),
            "tfs_tensor_info": (ctypes.c_int,
                                [P, Z, ctypes.POINTER(_Info), Z]),
            "tfs_read": (S, [P, Z, ctypes.c_uint64, P, Z]),
            "tfs_tensor_data": (P, [P, Z]),
            "tfs_read_float32": (ctypes.c_int,
                                 [P, Z, ctypes.c_uint64, Z, P]),
            "tfs_verify": (ctypes.c_int, [P, Z, ctypes.c_char_p, Z]),
            "tfs_getxattr": (S, [P, ctypes.c_char_p, ctypes.c_char_p, P, Z]),
            "tfs_metadata_json": (P, [P, ctypes.POINTER(Z)]),
            "tfs_version": (ctypes.c_char_p, []),
        }
        for fn, (res, args) in sig.items():
            f = getattr(lib, fn)
            f.restype = res
            f.argtypes = args
        _lib = lib
        return lib


def _fail(ret, what, msg=""):
    """OSError(errno, ...): FileNotFoundError, PermissionError... by errno"""
    code = -ret
    raise OSError(code, msg or os.strerror(code), what)


class _Handle:
    """Owns the C model: closed when the last user (a Model or a zero-copy
    array's base) lets go of it."""

    def __init__(self, ptr):
        self.lib = _library()
        self.ptr = ptr

    def __del__(self):
        if self.ptr:
            self.lib.tfs_close(self.ptr)
            self.ptr = None


class _Mapped:
    """The base of a zero-copy array: its bytes in the mapping, and the
    handle that keeps the mapping alive."""

    def __init__(self, handle, address, dtype, shape):
        self._handle = handle
        self.__array_interface__ = {
            "version": 3,
            "data": (address, True),  # read-only
            "typestr": dtype.str,
            "descr": dtype.descr,
            "shape": tuple(shape),
        }


# numpy's type of each dtype numpy has (little-endian as stored)
_NUMPY = {
    "float64": "<f8", "float32": "<f4", "float16": "<f2",
    "int64": "<i8", "int32": "<i4", "int16": "<i2", "int8": "i1",
    "uint64": "<u8", "uint32": "<u4", "uint16": "<u2", "uint8": "u1",
    "bool": "?", "complex64": "<c8", "complex128": "<c16",
}


def _numpy_dtype(info):
    dt = info["dtype"]
    if dt in _NUMPY:
        d = np.dtype(_NUMPY[dt])
        return d.newbyteorder(">") if info["byte_order"] == "big" else d
    if dt == "complex32":  # (real, imaginary) float16 pairs
        d = np.dtype("<f2")
        return d.newbyteorder(">") if info["byte_order"] == "big" else d
    if dt.startswith("void") and info["itemsize"]:
        return np.dtype("V%d" % info["itemsize"])
    return None


class Model(Mapping):
    """An open container: a read-only mapping from stored name to array."""

    def __init__(self, path, flat=False):
        lib = _library()
        ptr = ctypes.c_void_p()
        err = ctypes.create_string_buffer(1024)

        class _Opts(ctypes.Structure):
            _fields_ = [("size", ctypes.c_uint32), ("flags", ctypes.c_uint32),
                        ("cache_size", ctypes.c_uint64)]

        opts = _Opts(ctypes.sizeof(_Opts), 1 if flat else 0, 0)
        self.path = path
        ret = lib.tfs_open(os.fsencode(path), ctypes.byref(opts),
                           ctypes.byref(ptr), err, len(err))
        if ret:
            _fail(ret, path, err.value.decode("utf-8", "replace"))
        self._h = _Handle(ptr)
        self._infos = []
        self._index = {}
        for i in range(lib.tfs_tensor_count(ptr)):
            c = _Info()
            ret = lib.tfs_tensor_info(ptr, i, ctypes.byref(c),
                                      ctypes.sizeof(c))
            if ret:
                _fail(ret, path)
            info = {
                "name": ctypes.string_at(c.name, c.name_len).decode(
                    "utf-8", "surrogateescape"),
                "path": c.path.decode("utf-8", "surrogateescape"),
                "dtype": c.dtype.decode(),
                "shape": tuple(c.shape[k] for k in range(c.ndim)),
                "itemsize": c.itemsize,
                "nbytes": c.nbytes,
                "count": c.count,
                "byte_order": c.byte_order.decode(),
                "order": c.order.decode(),
                "role": c.role.decode("utf-8", "surrogateescape")
                if c.role else None,
                "raw": bool(c.raw),
                "numeric": bool(c.numeric),
            }
            if c.role:  # a group's component: "GROUP[ROLE]"
                group = ctypes.string_at(c.group, c.group_len).decode(
                    "utf-8", "surrogateescape")
                info["name"] = "%s[%s]" % (group, info["role"])
            self._infos.append(info)
            self._index.setdefault(info["name"], i)

    # ---- the mapping ------------------------------------------------------
    def _ptr(self):
        if self._h is None:
            raise ValueError("tensorfs: the model is closed")
        return self._h.ptr

    def __getitem__(self, name):
        return self._array(self._index[name])

    def __iter__(self):
        return iter(self._index)

    def __len__(self):
        return len(self._index)

    def __contains__(self, name):
        return name in self._index

    def __repr__(self):
        return "<tensorfs.Model %r: %d tensors>" % (self.path, len(self))

    def close(self):
        """Let go of the container.  Arrays that are views of its mapping
        keep it open until they are gone."""
        self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- arrays -----------------------------------------------------------
    def _array(self, i):
        ptr = self._ptr()
        lib, info = self._h.lib, self._infos[i]
        shape, order = info["shape"], info["order"]
        dt = _numpy_dtype(info)
        if info["dtype"] == "complex32":
            shape = shape + (2,)
        if dt is None:
            return self._decoded(i, info)
        if dt.byteorder != ">" and info["raw"]:
            addr = lib.tfs_tensor_data(ptr, i)
            if addr:
                arr = np.asarray(_Mapped(self._h, addr, dt,
                                         (info["nbytes"] // dt.itemsize,)))
                return self._shaped(arr, shape, order)
        buf = np.empty(info["nbytes"] // dt.itemsize if dt.itemsize else 0,
                       dtype=dt)
        n = lib.tfs_read(ptr, i, 0, buf.ctypes.data, info["nbytes"])
        if n < 0:
            _fail(n, info["name"])
        if n != info["nbytes"]:
            _fail(-_errno.EIO, info["name"], "short read")
        if dt.byteorder == ">":
            buf = buf.astype(dt.newbyteorder("="))
        buf = self._shaped(buf, shape, order)
        buf.flags.writeable = False
        return buf

    @staticmethod
    def _shaped(arr, shape, order):
        if order == "F":
            return arr.reshape(shape, order="F")
        return arr.reshape(shape)

    def _decoded(self, i, info):
        """float32 values of a dtype numpy lacks; opaque bytes as uint8"""
        ptr = self._ptr()
        lib = self._h.lib
        if info["numeric"]:
            out = np.empty(info["count"], dtype=np.float32)
            ret = lib.tfs_read_float32(ptr, i, 0, info["count"],
                                       out.ctypes.data)
            if ret:
                _fail(ret, info["name"])
            out = self._shaped(out, info["shape"], info["order"])
        else:
            out = np.empty(info["nbytes"], dtype=np.uint8)
            n = lib.tfs_read(ptr, i, 0, out.ctypes.data, info["nbytes"])
            if n < 0:
                _fail(n, info["name"])
        out.flags.writeable = False
        return out

    def raw_bytes(self, name):
        """the tensor's own bytes, as stored (decoded when compressed)"""
        i = self._index[name]
        info = self._infos[i]
        buf = ctypes.create_string_buffer(info["nbytes"] or 1)
        ptr = self._ptr()
        n = self._h.lib.tfs_read(ptr, i, 0, buf, info["nbytes"])
        if n < 0:
            _fail(n, name)
        return buf.raw[:n]

    # ---- about the container ---------------------------------------------
    @property
    def format(self):
        ptr = self._ptr()
        return self._h.lib.tfs_format(ptr).decode()

    @property
    def metadata(self):
        """.tensorfs/metadata.json, parsed"""
        n = ctypes.c_size_t()
        ptr = self._ptr()
        p = self._h.lib.tfs_metadata_json(ptr, ctypes.byref(n))
        if not p:
            raise MemoryError("tensorfs: metadata")
        return json.loads(ctypes.string_at(p, n.value).decode("utf-8"))

    def info(self, name=None):
        """With @name: that tensor's description (path, dtype, shape, bytes,
        byte order, order...).  Without: the container's summary (format,
        tensors, parameters, bytes, bytes per dtype)."""
        if name is not None:
            return dict(self._infos[self._index[name]])
        per = {}
        for x in self._infos:
            per[x["dtype"]] = per.get(x["dtype"], 0) + x["nbytes"]
        return {
            "format": self.format,
            "tensors": len(self._infos),
            "parameters": sum(x["count"] for x in self._infos),
            "bytes": sum(x["nbytes"] for x in self._infos),
            "dtypes": per,
        }

    def xattr(self, name, key):
        """xattr @key ("dtype" or "user.tensorfs.dtype") of tensor @name's
        file in the mount (name "" : the root), as bytes; None if absent"""
        path = self._infos[self._index[name]]["path"] if name else ""
        ptr = self._ptr()
        lib = self._h.lib
        n = lib.tfs_getxattr(ptr, os.fsencode(path), key.encode(), None, 0)
        if n == -_errno.ENODATA:
            return None
        if n < 0:
            _fail(n, name)
        buf = ctypes.create_string_buffer(n or 1)
        n = lib.tfs_getxattr(ptr, os.fsencode(path), key.encode(), buf, n)
        if n < 0:
            _fail(n, name)
        return buf.raw[:n]

    def verify(self):
        """What `tensorfs verify` checks, every tensor: a dict of the
        tensors that fail, name -> why (empty: all good)."""
        ptr = self._ptr()
        lib = self._h.lib
        msg = ctypes.create_string_buffer(512)
        bad = {}
        for i, x in enumerate(self._infos):
            ret = lib.tfs_verify(ptr, i, msg, len(msg))
            if ret < 0:
                bad[x["name"]] = (msg.value.decode("utf-8", "replace") or
                                  os.strerror(-ret))
        return bad


def open(path_or_url, flat=False):
    """Open a container file, a directory or a URL (docs/remote.md)."""
    return Model(path_or_url, flat=flat)


def _to_torch(torch, model, name, arr):
    info = model.info(name)
    if info["dtype"] == "bfloat16" and info["byte_order"] == "little":
        raw = np.frombuffer(model.raw_bytes(name), dtype="<i2").copy()
        return torch.from_numpy(raw.reshape(info["shape"])).view(
            torch.bfloat16)
    widen = {np.dtype("uint16"): np.int32, np.dtype("uint32"): np.int64}
    if arr.dtype in widen:
        arr = arr.astype(widen[arr.dtype])
    # a copy: torch has no read-only tensors, and the mapping is read-only
    return torch.from_numpy(np.array(arr, order="C"))


def load(path, framework=None):
    """Every tensor of @path in a dict, stored name -> numpy array (or torch
    tensor with framework="torch", copied into torch's own memory)."""
    with open(path) as m:
        if framework is None or framework == "numpy":
            return {k: m[k] for k in m}
        if framework != "torch":
            raise ValueError("tensorfs.load: framework is numpy or torch")
        import torch
        return {k: _to_torch(torch, m, k, m[k]) for k in m}


def version():
    """libtensorfs's version"""
    return _library().tfs_version().decode()
