# SPDX-License-Identifier: MIT
"""Read tensor containers (model checkpoints) with libtensorfs, without FUSE.

    import tensorfs
    with tensorfs.safe_open("model.gguf", framework="pt") as f:  # as in
        w = f.get_tensor("token_embd.weight")                  # safetensors
        row = f.get_slice("token_embd.weight")[7]              # its bytes only
    weights = tensorfs.load_file("pytorch_model.bin")  # no pickle is run
    with tensorfs.open("model.safetensors") as m:      # also .npz, a URL...
        w = m["embed.weight"]                          # a mapping

A model is a read-only mapping from stored name to numpy array.  A tensor
stored raw and little-endian in a local file is a zero-copy, read-only view
of the file's mapping (the model stays open while any such array lives);
any other is decoded into a new array: compressed tensors in their dtype,
big-endian ones converted to native order.  bfloat16 and float8 are
ml_dtypes' types when ml_dtypes is importable, else their exact bytes
(numpy's |V2, |V1), never converted; ggml's quantized blocks are float32
values (dequantized).  Every failure raises tensorfs.Error, whose text is
the line the tensorfs CLI prints.  docs/python.md says more.  ctypes over
libtensorfs.so.0 and numpy only.
"""
import ctypes
import errno as _errno
import json
import os
import threading
from collections.abc import Mapping

import numpy as np

__all__ = ["open", "load", "safe_open", "load_file", "Model", "Tensor",
           "Error", "init", "version"]


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
            "tfs_init": (ctypes.c_int, [ctypes.c_uint, ctypes.c_char_p,
                                        ctypes.c_char_p, Z]),
            "tfs_tensor_find": (S, [P, ctypes.c_char_p, Z]),
            "tfs_listxattr": (S, [P, ctypes.c_char_p, P, Z]),
            # API 1 (TENSORFS_0.2): absent from an older library
            "tfs_errmsg": (ctypes.c_char_p, [P]),
            "tfs_tensor_find_next": (S, [P, Z]),
        }
        for fn, (res, args) in sig.items():
            f = getattr(lib, fn, None)
            if f is None:
                continue
            f.restype = res
            f.argtypes = args
        _lib = lib
        return lib


class Error(OSError):
    """A failure of libtensorfs: .errno, and a text (str(e), .strerror)
    that is the line the tensorfs CLI prints for it, without "tensorfs: "
    ("model.gguf: tensor 'w': digest mismatch: ...").  Also
    FileNotFoundError, PermissionError... by errno (NotFoundError...)."""

    def __str__(self):
        return self.strerror or ""


class NotFoundError(Error, FileNotFoundError):
    pass


class AccessError(Error, PermissionError):
    pass


class NoTensorError(Error, KeyError):
    """A name that is not a tensor of the model: also a KeyError"""


class TimedOutError(Error, TimeoutError):
    pass


_BY_ERRNO = {_errno.ENOENT: NotFoundError, _errno.EACCES: AccessError,
             _errno.ETIMEDOUT: TimedOutError}


def _error(code, line, filename=None, cls=None):
    cls = cls or _BY_ERRNO.get(code, Error)
    e = cls(code, line or os.strerror(code))
    if filename is not None:
        e.filename = filename
    return e


def _errmsg(lib, ptr):
    f = getattr(lib, "tfs_errmsg", None)
    if f is None:
        return ""
    line = f(ptr)
    return line.decode("utf-8", "replace") if line else ""


def _fail(ret, what, msg="", ptr=None):
    """raise the Error of -errno @ret: @msg, else the library's line for
    this thread's last failure on @ptr, else "@what: strerror" """
    code = -ret
    if not msg and _lib is not None:
        msg = _errmsg(_lib, ptr)
    if not msg:
        msg = "%s: %s" % (what, os.strerror(code))
    raise _error(code, msg, what)


def init(remote_options=None, sigbus=True):
    """Optional one-time setup (tfs_init): the remote sources' options as
    `-o` takes them ("remote_mem=64M,cache_dir=/tmp/c", docs/remote.md);
    sigbus=False leaves SIGBUS to the program.  Before the first open; a
    second call raises Error (EALREADY)."""
    lib = _library()
    err = ctypes.create_string_buffer(512)
    opts = remote_options.encode() if remote_options is not None else None
    ret = lib.tfs_init(0 if sigbus else 1, opts, err, len(err))
    if ret:
        _fail(ret, "tensorfs.init", err.value.decode("utf-8", "replace"))


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
# dtypes numpy lacks, one byte or two per element: ml_dtypes' name
_ML_DTYPES = {
    "bfloat16": "bfloat16", "float8_e4m3": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2", "float8_e4m3fnuz": "float8_e4m3fnuz",
    "float8_e5m2fnuz": "float8_e5m2fnuz", "float8_e8m0": "float8_e8m0fnu",
}
_ml_dtypes = False  # not yet looked for


def _ml_dtype(name):
    """ml_dtypes' type for @name, or None (no ml_dtypes, or too old)"""
    global _ml_dtypes
    if _ml_dtypes is False:
        try:
            import ml_dtypes
            _ml_dtypes = ml_dtypes
        except ImportError:
            _ml_dtypes = None
    t = getattr(_ml_dtypes, _ML_DTYPES[name], None) if _ml_dtypes else None
    return np.dtype(t) if t is not None else None


def _numpy_dtype(info):
    """numpy's type of a tensor's stored elements, or None (sub-byte and
    block dtypes: their bytes, or float32 values with as_="float32")"""
    dt = info["dtype"]
    if dt in _NUMPY:
        d = np.dtype(_NUMPY[dt])
        return d.newbyteorder(">") if info["byte_order"] == "big" else d
    if dt == "complex32":  # (real, imaginary) float16 pairs
        d = np.dtype("<f2")
        return d.newbyteorder(">") if info["byte_order"] == "big" else d
    if dt in _ML_DTYPES and info["byte_order"] == "little":
        # exact: ml_dtypes' type, else the bytes (|V2), never converted
        return _ml_dtype(dt) or np.dtype("V%d" % info["itemsize"])
    if dt.startswith("void") and info["itemsize"]:
        return np.dtype("V%d" % info["itemsize"])
    return None


def _info_of(c):
    """struct tfs_tensor_info as a dict"""
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
    return info


class Model(Mapping):
    """An open container: a read-only mapping from stored name to array.
    Names that several tensors share (a directory of several containers)
    are keyed by the tensors' paths in the mount instead; paths() lists
    every path, and any path is also a key to []."""

    _VERIFY = {None: 0, "first": 0, "off": 2, "always": 4}

    def __init__(self, path, flat=False, as_=None, verify=None):
        lib = _library()
        ptr = ctypes.c_void_p()
        err = ctypes.create_string_buffer(1024)

        class _Opts(ctypes.Structure):
            _fields_ = [("size", ctypes.c_uint32), ("flags", ctypes.c_uint32),
                        ("cache_size", ctypes.c_uint64)]

        if as_ not in (None, "float32"):
            raise ValueError("tensorfs: as_ is None or 'float32', not %r"
                             % (as_,))
        if verify not in self._VERIFY:
            raise ValueError("tensorfs: verify is 'first', 'off' or "
                             "'always', not %r" % (verify,))
        self._as = as_
        opts = _Opts(ctypes.sizeof(_Opts),
                     (1 if flat else 0) | self._VERIFY[verify], 0)
        self.path = path
        self._h = None
        ret = lib.tfs_open(os.fsencode(path), ctypes.byref(opts),
                           ctypes.byref(ptr), err, len(err))
        if ret:
            _fail(ret, path, err.value.decode("utf-8", "replace"))
        self._h = _Handle(ptr)
        self._infos = []
        self._index = {}
        self._by_path = {}
        names = {}
        for i in range(lib.tfs_tensor_count(ptr)):
            c = _Info()
            ret = lib.tfs_tensor_info(ptr, i, ctypes.byref(c),
                                      ctypes.sizeof(c))
            if ret:
                _fail(ret, path, ptr=ptr)
            info = _info_of(c)
            self._infos.append(info)
            self._by_path[info["path"]] = i
            names[info["name"]] = names.get(info["name"], 0) + 1
        for i, info in enumerate(self._infos):
            # a name several tensors share: each keyed by its path
            info["key"] = (info["name"] if names[info["name"]] == 1
                           else info["path"])
            self._index[info["key"]] = i

    # ---- the mapping ------------------------------------------------------
    def _ptr(self):
        if self._h is None:
            raise ValueError("tensorfs: the model is closed")
        return self._h.ptr

    def _find(self, name):
        """the index of key or path @name; NoTensorError (a KeyError)"""
        i = self._index.get(name)
        if i is None:
            i = self._by_path.get(name)
        if i is None:
            raise _error(_errno.ENOENT, "%s: %s: no such tensor or path"
                         % (self.path, name), cls=NoTensorError)
        return i

    def __getitem__(self, name):
        return self._array(self._find(name))

    def __iter__(self):
        return iter(self._index)

    def __len__(self):
        return len(self._index)

    def __contains__(self, name):
        return name in self._index

    def __repr__(self):
        return "<tensorfs.Model %r: %d tensors>" % (self.path, len(self))

    def paths(self):
        """every tensor's path in the mount, in order (`tensorfs ls`)"""
        return [x["path"] for x in self._infos]

    def close(self):
        """Let go of the container.  Arrays that are views of its mapping
        keep it open until they are gone."""
        self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- arrays -----------------------------------------------------------
    def _read_into(self, i, off, buf, nbytes):
        """@nbytes of tensor @i from byte @off into @buf (an address)"""
        ptr = self._ptr()
        n = self._h.lib.tfs_read(ptr, i, off, buf, nbytes)
        if n < 0:
            _fail(n, self._infos[i]["path"], ptr=ptr)
        if n != nbytes:
            _fail(-_errno.EIO, self._infos[i]["path"], "%s: tensor '%s': "
                  "%d of %d bytes read" % (self.path, self._infos[i]["path"],
                                           n, nbytes))

    def _read_float32(self, i, first, count, out):
        ptr = self._ptr()
        ret = self._h.lib.tfs_read_float32(ptr, i, first, count, out)
        if ret:
            _fail(ret, self._infos[i]["path"], ptr=ptr)

    def _mapped(self, i, dt):
        """tensor @i's bytes in the mapping as a flat array, or None"""
        info = self._infos[i]
        if dt.byteorder == ">" or not info["raw"] or not dt.itemsize:
            return None
        addr = self._h.lib.tfs_tensor_data(self._ptr(), i)
        if not addr:
            return None
        return np.asarray(_Mapped(self._h, addr, dt,
                                  (info["nbytes"] // dt.itemsize,)))

    def _to_float32(self, info):
        """how as_="float32" converts tensor @info: None (it does not:
        float32, complex, not numeric, or not asked), "values" (the
        library's float32 values of a dtype numpy lacks: dequantized
        blocks, bfloat16...) or "astype" (numpy's own conversion)"""
        if self._as != "float32" or not info["numeric"] or \
                info["dtype"] in ("float32", "complex32", "complex64",
                                  "complex128"):
            return None
        dt = _numpy_dtype(info)
        return "values" if dt is None or dt.kind == "V" else "astype"

    def _array(self, i):
        """tensor @i as numpy: its stored dtype, or as_'s"""
        info = self._infos[i]
        conv = self._to_float32(info)
        if conv == "values":
            return self._decoded(i, info)
        arr = self._stored(i)
        if conv == "astype":
            arr = arr.astype(np.float32)
            arr.flags.writeable = False
        return arr

    def _stored(self, i):
        """tensor @i in its stored dtype (a view of the mapping if it can)"""
        self._ptr()
        info = self._infos[i]
        shape, order = info["shape"], info["order"]
        dt = _numpy_dtype(info)
        if info["dtype"] == "complex32":
            shape = shape + (2,)
        if dt is None:
            return self._decoded(i, info)
        arr = self._mapped(i, dt)
        if arr is not None:
            return self._shaped(arr, shape, order)
        buf = np.empty(info["nbytes"] // dt.itemsize if dt.itemsize else 0,
                       dtype=dt)
        self._read_into(i, 0, buf.ctypes.data, info["nbytes"])
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
        """float32 values of a numeric dtype numpy lacks when as_ asks
        (dequantized); else the stored bytes (uint8)"""
        if self._to_float32(info) == "values":
            out = np.empty(info["count"], dtype=np.float32)
            self._read_float32(i, 0, info["count"], out.ctypes.data)
            out = self._shaped(out, info["shape"], info["order"])
        else:
            out = np.empty(info["nbytes"], dtype=np.uint8)
            self._read_into(i, 0, out.ctypes.data, info["nbytes"])
        out.flags.writeable = False
        return out

    def raw_bytes(self, name):
        """the tensor's own bytes, as stored (decoded when compressed)"""
        i = self._find(name)
        info = self._infos[i]
        buf = ctypes.create_string_buffer(info["nbytes"] or 1)
        self._read_into(i, 0, buf, info["nbytes"])
        return buf.raw[:info["nbytes"]]

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
            _fail(-_errno.ENOMEM, self.path, ptr=ptr)
        return json.loads(ctypes.string_at(p, n.value).decode("utf-8"))

    def info(self, name=None):
        """With @name: that tensor's description (path, dtype, shape, bytes,
        byte order, order...).  Without: the container's summary (format,
        tensors, parameters, bytes, bytes per dtype)."""
        if name is not None:
            return dict(self._infos[self._find(name)])
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

    def _node_path(self, name):
        return self._infos[self._find(name)]["path"] if name else ""

    def xattr(self, name, key):
        """xattr @key ("dtype" or "user.tensorfs.dtype") of tensor @name's
        file in the mount (name "" : the root), as bytes; None if absent"""
        path = os.fsencode(self._node_path(name))
        ptr = self._ptr()
        lib = self._h.lib
        n = lib.tfs_getxattr(ptr, path, key.encode(), None, 0)
        if n == -_errno.ENODATA:
            return None
        if n < 0:
            _fail(n, name, ptr=ptr)
        buf = ctypes.create_string_buffer(n or 1)
        n = lib.tfs_getxattr(ptr, path, key.encode(), buf, n)
        if n < 0:
            _fail(n, name, ptr=ptr)
        return buf.raw[:n]

    def xattrs(self, name=""):
        """every xattr of tensor @name's file ("" : the root): a dict from
        the name without "user.tensorfs." to its value (str, or bytes when
        not UTF-8)"""
        path = os.fsencode(self._node_path(name))
        ptr = self._ptr()
        lib = self._h.lib
        n = lib.tfs_listxattr(ptr, path, None, 0)
        if n < 0:
            _fail(n, name, ptr=ptr)
        buf = ctypes.create_string_buffer(n or 1)
        n = lib.tfs_listxattr(ptr, path, buf, n)
        if n < 0:
            _fail(n, name, ptr=ptr)
        out = {}
        for key in buf.raw[:n].split(b"\0"):
            if not key:
                continue
            v = self.xattr(name, key.decode())
            k = key.decode()
            k = k[len("user.tensorfs."):] if k.startswith(
                "user.tensorfs.") else k
            try:
                out[k] = v.decode("utf-8")
            except UnicodeDecodeError:
                out[k] = v
        return out

    def verify(self):
        """What `tensorfs verify` checks, every tensor: a dict of the
        tensors that fail, key -> why (empty: all good)."""
        ptr = self._ptr()
        lib = self._h.lib
        msg = ctypes.create_string_buffer(512)
        bad = {}
        for i, x in enumerate(self._infos):
            ret = lib.tfs_verify(ptr, i, msg, len(msg))
            if ret < 0:
                bad[x["key"]] = (msg.value.decode("utf-8", "replace") or
                                 os.strerror(-ret))
        return bad


def open(path_or_url, flat=False, as_=None, verify=None):
    """Open a container file, a directory or a URL (docs/remote.md).
    as_="float32": every numeric tensor as float32 values (dequantized).
    verify: the container's digests checked on a tensor's "first" read
    (the default, as the mount), "always" or "off"."""
    return Model(path_or_url, flat=flat, as_=as_, verify=verify)


def load(path, framework=None, as_=None):
    """Every tensor of @path in a dict, key -> numpy array (or torch tensor
    with framework="torch"/"pt", sharing the mapping where it can)."""
    fw = _frameworks.framework_of(framework)
    with open(path, as_=as_) as m:
        if fw == "np":
            return {k: m[k] for k in m}
        return {k: _frameworks.to_torch(m[k], m.info(k)["dtype"],
                                        "%s: tensor '%s'"
                                        % (path, m.info(k)["path"]))
                for k in m}


def version():
    """libtensorfs's version"""
    return _library().tfs_version().decode()


from . import _frameworks  # noqa: E402 (they use the names above)
from .safe import Tensor, load_file, safe_open  # noqa: E402
