# SPDX-License-Identifier: MIT
"""safetensors' API over every container tensorfs reads: safe_open (keys,
get_tensor, get_slice, metadata), load_file, and lazy Tensor objects
whose [...] reads only the bytes of the slice (docs/python.md)."""
import itertools
import json

import numpy as np

from . import Model, _numpy_dtype
from ._frameworks import framework_of, to_torch

# safetensors' dtype codes (get_slice(...).get_dtype())
_SAFETENSORS = {
    "float64": "F64", "float32": "F32", "float16": "F16", "bfloat16": "BF16",
    "int64": "I64", "int32": "I32", "int16": "I16", "int8": "I8",
    "uint64": "U64", "uint32": "U32", "uint16": "U16", "uint8": "U8",
    "bool": "BOOL", "float8_e4m3": "F8_E4M3", "float8_e5m2": "F8_E5M2",
    "float8_e8m0": "F8_E8M0", "complex64": "C64",
}
# above this many pieces a slice reads its bounding range once instead
_MAX_PIECES = 4096


def _selection(idx, shape):
    """basic indexing @idx over @shape: per axis (range, is an integer)"""
    if not isinstance(idx, tuple):
        idx = (idx,)
    if sum(x is Ellipsis for x in idx) > 1:
        raise IndexError("tensorfs: an index can only have one ellipsis")
    given = [x for x in idx if x is not Ellipsis]
    if len(given) > len(shape):
        raise IndexError("tensorfs: too many indices: %d for %d dimensions"
                         % (len(given), len(shape)))
    full = []
    for x in idx:
        if x is Ellipsis:
            full += [slice(None)] * (len(shape) - len(given))
        else:
            full.append(x)
    full += [slice(None)] * (len(shape) - len(full))
    sel = []
    for x, n in zip(full, shape):
        if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
            k = int(x) + (n if x < 0 else 0)
            if not 0 <= k < n:
                raise IndexError("tensorfs: index %d out of range for "
                                 "size %d" % (int(x), n))
            sel.append((range(k, k + 1), True))
        elif isinstance(x, slice):
            sel.append((range(*x.indices(n)), False))
        else:
            raise TypeError("tensorfs: a tensor is indexed by integers, "
                            "slices and ..., not %r" % (x,))
    return sel


def _pieces(sel, shape):
    """the C-order element runs (first, count) a selection covers, in
    order: one per index of the axes before the last axis not taken whole
    (with it when its step is not 1)"""
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    j = len(shape)  # axes j.. are taken whole
    while j > 0 and sel[j - 1][0] == range(shape[j - 1]):
        j -= 1
    if j == 0:
        return [(0, int(np.prod(shape, dtype=np.int64)))]
    run = sel[j - 1][0]
    if run.step == 1:  # axis j-1: one contiguous run per outer index
        outer, inner_first = sel[:j - 1], run.start * strides[j - 1]
        count = len(run) * strides[j - 1]
    else:
        outer, inner_first, count = sel[:j], 0, strides[j - 1]
    runs = []
    for ks in itertools.product(*(r for r, _ in outer)):
        first = sum(k * strides[d] for d, k in enumerate(ks))
        runs.append((first + inner_first, count))
    return runs


class Tensor:
    """One tensor, not read until asked: .name (stored), .key (its key in
    the model), .path (in the mount), .dtype (tensorfs's name: "bfloat16",
    "q4_0"...), .shape, .nbytes, .xattrs; numpy() / torch() / [...]: the
    values (a slice reads only its own bytes where it can)."""

    def __init__(self, model, index, framework="np", device="cpu"):
        info = model._infos[index]
        self._m, self._i = model, index
        self._fw, self._device = framework_of(framework), device
        self.name, self.key, self.path = info["name"], info["key"], \
            info["path"]
        self.dtype, self.shape = info["dtype"], tuple(info["shape"])
        self.nbytes, self.byte_order = info["nbytes"], info["byte_order"]
        self.order, self.role = info["order"], info["role"]

    def __repr__(self):
        return "<tensorfs.Tensor %r %s %s>" % (self.key, self.dtype,
                                               list(self.shape))

    @property
    def xattrs(self):
        """the xattrs of its file in the mount (docs/xattrs.md)"""
        return self._m.xattrs(self.key)

    # safetensors' slice object
    def get_shape(self):
        return list(self.shape)

    def get_dtype(self):
        return _SAFETENSORS.get(self.dtype, self.dtype)

    def __len__(self):
        if not self.shape:
            raise TypeError("tensorfs: len() of a 0-d tensor")
        return self.shape[0]

    def _out(self, arr):
        if self._fw == "pt":
            return to_torch(arr, self.dtype, "%s: tensor '%s'"
                            % (self._m.path, self.path), self._device)
        return arr

    def numpy(self):
        """the whole tensor as numpy (model.get_tensor without framework)"""
        return self._m._array(self._i)

    def torch(self, device="cpu"):
        return to_torch(self.numpy(), self.dtype, "%s: tensor '%s'"
                        % (self._m.path, self.path), device)

    def __array__(self, dtype=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def get(self):
        """the whole tensor in the framework asked for"""
        return self._out(self.numpy())

    def __getitem__(self, idx):
        return self._out(self._slice(idx))

    def _slice(self, idx):
        m, i, info = self._m, self._i, self._m._infos[self._i]
        sel = _selection(idx, self.shape)
        keep = tuple(len(r) for r, is_int in sel if not is_int)
        dt = _numpy_dtype(info)
        conv = m._to_float32(info)
        if conv == "values":  # the library's float32 values
            dt = np.dtype(np.float32)
        else:
            mapped = m._mapped(i, dt) if dt is not None else None
            if mapped is not None:  # a view: only its pages are touched
                out = m._shaped(mapped, self.shape, self.order)[idx]
                return out.astype(np.float32) if conv else out
        if (dt is None or info["order"] != "C" or dt.byteorder == ">" or
                info["dtype"] == "complex32" or not dt.itemsize):
            # no element addressing here: the whole tensor, then the slice
            return self.numpy()[idx]
        n = 1
        for r, _ in sel:
            n *= len(r)
        out = np.empty(n, dtype=dt)
        if n:
            self._read_runs(sel, dt, out)
        out = out.reshape([len(r) for r, _ in sel])
        out = out.reshape(keep)
        if conv == "astype":
            out = out.astype(np.float32)
        out.flags.writeable = False
        return out

    def _read_elems(self, dt, first, count, out):
        """elements [first, first + count) into @out (a flat array)"""
        if self._m._to_float32(self._m._infos[self._i]) == "values":
            self._m._read_float32(self._i, first, count, out.ctypes.data)
        else:
            self._m._read_into(self._i, first * dt.itemsize,
                               out.ctypes.data, count * dt.itemsize)

    def _read_runs(self, sel, dt, out):
        runs = _pieces(sel, self.shape)
        if len(runs) > _MAX_PIECES:
            # too many small pieces: their bounding range once
            lo = runs[0][0]
            hi = runs[-1][0] + runs[-1][1]
            span = np.empty(hi - lo, dtype=dt)
            self._read_elems(dt, lo, hi - lo, span)
            pos = 0
            for first, count in runs:
                out[pos:pos + count] = span[first - lo:first - lo + count]
                pos += count
            return
        pos = 0
        for first, count in runs:
            self._read_elems(dt, first, count, out[pos:pos + count])
            pos += count


class safe_open:
    """safetensors.safe_open over anything tensorfs reads: a file of any
    format, a directory (a sharded model), a URL.

        with tensorfs.safe_open("model.gguf", framework="pt") as f:
            for k in f.keys():
                t = f.get_tensor(k)
            rows = f.get_slice("embed.weight")[10:20]
            meta = f.metadata()

    framework: "np" (numpy) or "pt" (torch); device: where torch tensors
    go ("cpu": sharing the container's mapping where it can); as_="float32"
    gives every numeric dtype as float32 values (dequantized, converted);
    flat=True: the mount's --flat; verify: the container's digests (zip
    CRC-32s, zTensor's) checked on a tensor's "first" read (the default),
    "always" or "off"."""

    def __init__(self, filename, framework="np", device="cpu", as_=None,
                 flat=False, verify=None):
        self._fw = framework_of(framework)
        if self._fw == "np" and device not in (None, "cpu"):
            raise ValueError("tensorfs: numpy arrays are on the cpu, not %r"
                             % (device,))
        self._device = device
        self._m = Model(filename, flat=flat, as_=as_, verify=verify)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self._m.close()

    def keys(self):
        """the tensors' keys: stored names, or paths where names collide"""
        return list(self._m)

    def paths(self):
        """every tensor's path in the mount"""
        return self._m.paths()

    def __iter__(self):
        return iter(self._m)

    def __len__(self):
        return len(self._m)

    def __contains__(self, key):
        return key in self._m

    @property
    def format(self):
        return self._m.format

    def tensor(self, name):
        """the lazy Tensor of key or path @name"""
        return Tensor(self._m, self._m._find(name), self._fw, self._device)

    def get_slice(self, name):
        """the lazy Tensor of @name: [...] reads only the slice's bytes"""
        return self.tensor(name)

    def get_tensor(self, name):
        """the whole tensor @name, numpy array or torch tensor"""
        return self.tensor(name).get()

    def metadata(self):
        """safetensors' __metadata__ (str -> str) for a safetensors file;
        for another format its .tensorfs/metadata.json, values that are not
        strings as JSON; None when there is none"""
        meta = self._m.metadata
        if meta.get("format") == "safetensors":
            return meta.get("__metadata__")
        meta = {k: v if isinstance(v, str) else json.dumps(v)
                for k, v in meta.items()}
        return meta or None

    def model(self):
        """the tensorfs.Model under it"""
        return self._m


def load_file(filename, framework="np", device="cpu", as_=None, verify=None):
    """safetensors' load_file: every tensor of @filename in a dict, key ->
    numpy array or torch tensor (shared with the mapping where it can)"""
    with safe_open(filename, framework=framework, device=device,
                   as_=as_, verify=verify) as f:
        return {k: f.get_tensor(k) for k in f.keys()}

