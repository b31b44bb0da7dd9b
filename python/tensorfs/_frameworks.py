# SPDX-License-Identifier: MIT
"""numpy arrays of a model as torch tensors, sharing their memory: the
stored dtype (bfloat16 and float8 as torch's own types where this torch
has them), never a silent conversion."""
import errno
import warnings

import numpy as np

# tensorfs's dtype -> torch's name, for those numpy holds as bytes or
# ml_dtypes' types
_TORCH_BITS = {
    "bfloat16": "bfloat16", "float8_e4m3": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2", "float8_e4m3fnuz": "float8_e4m3fnuz",
    "float8_e5m2fnuz": "float8_e5m2fnuz", "float8_e8m0": "float8_e8m0fnu",
}
# numpy's unsigned types older torch lacks: widened (a copy, exact)
_WIDEN = {np.dtype("uint16"): np.int32, np.dtype("uint32"): np.int64}


def framework_of(framework):
    """"np" or "pt" for the names safetensors and tensorfs.load take"""
    if framework in (None, "np", "numpy"):
        return "np"
    if framework in ("pt", "torch", "pytorch"):
        return "pt"
    raise ValueError("tensorfs: framework is \"np\" or \"pt\", not %r"
                     % (framework,))


def _from_numpy(torch, arr):
    # the mapping is read-only and torch has no read-only tensors: the
    # tensor shares it anyway (no copy); writing into it faults
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*not writable.*")
        return torch.from_numpy(arr)


def to_torch(arr, dtype, where, device="cpu"):
    """@arr (numpy, of tensorfs dtype @dtype) as a torch tensor on @device,
    sharing @arr's memory on the CPU; @where names the tensor in errors"""
    import torch
    from . import _error
    name = _TORCH_BITS.get(dtype)
    if name and arr.dtype.itemsize in (1, 2):
        tdt = getattr(torch, name, None)
        if tdt is None:
            raise _error(errno.ENOTSUP, "%s: %s: torch %s has no %s "
                         "(framework=\"np\" gives its bytes)"
                         % (where, dtype, torch.__version__, name))
        bits = arr.view(np.int16 if arr.dtype.itemsize == 2 else np.uint8)
        t = _from_numpy(torch, bits).view(tdt)
    elif arr.dtype in _WIDEN and not hasattr(torch, "uint16"):
        t = torch.from_numpy(arr.astype(_WIDEN[arr.dtype]))
    elif arr.dtype == np.dtype("uint64") and not hasattr(torch, "uint64"):
        raise _error(errno.ENOTSUP, "%s: uint64: torch %s has no uint64 "
                     "(framework=\"np\" gives it)"
                     % (where, torch.__version__))
    elif arr.dtype.kind == "V":
        raise _error(errno.ENOTSUP, "%s: %s: no torch dtype holds it "
                     "(framework=\"np\" gives its bytes)" % (where, dtype))
    else:
        if arr.dtype.byteorder == ">":
            arr = arr.astype(arr.dtype.newbyteorder("="))
        t = _from_numpy(torch, arr)
    return t if device in (None, "cpu") else t.to(device)
