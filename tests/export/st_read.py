#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""An independent safetensors reader (json + struct + numpy), for the tests.

st_read.py FILE: checks the layout rules of the format (the header length,
8-byte padding, contiguous data offsets in order, no trailing bytes) and
prints one line per tensor: name dtype shape sha256-of-its-C-order-bytes.
As a module: load(path) -> (metadata, {name: numpy array}).
"""
import hashlib
import json
import struct
import sys

import numpy as np

DTYPES = {
    "BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "I16": np.int16,
    "U16": np.uint16, "F16": np.float16, "I32": np.int32, "U32": np.uint32,
    "F32": np.float32, "I64": np.int64, "U64": np.uint64, "F64": np.float64,
    "C64": np.complex64,
    # no numpy type: the elements as bytes
    "BF16": "V2", "F8_E5M2": "V1", "F8_E4M3": "V1", "F8_E8M0": "V1",
    "F8_E4M3FNUZ": "V1", "F8_E5M2FNUZ": "V1",
}
# packed: bits per element; the bytes as stored
PACKED = {"F4": 4, "F6_E2M3": 6, "F6_E3M2": 6}


def load(path):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    assert 8 + n <= len(data), "header length"
    head = json.loads(data[8:8 + n].decode("utf-8"))
    meta = head.pop("__metadata__", None)
    assert meta is None or all(isinstance(v, str) for v in meta.values())
    buf = data[8 + n:]
    at = 0
    out = {}
    for name, t in sorted(head.items(), key=lambda kv: kv[1]["data_offsets"]):
        b, e = t["data_offsets"]
        assert b == at, "gap or overlap at %s" % name
        at = e
        count = int(np.prod(t["shape"], dtype=np.int64))
        if t["dtype"] in PACKED:
            bits = count * PACKED[t["dtype"]]
            assert bits % 8 == 0 and e - b == bits // 8, "size of " + name
            out[name] = np.frombuffer(buf[b:e], dtype=np.uint8)
            continue
        dt = np.dtype(DTYPES[t["dtype"]]).newbyteorder("<")
        assert e - b == count * dt.itemsize, "size of %s" % name
        out[name] = np.frombuffer(buf[b:e], dtype=dt).reshape(t["shape"])
    assert at == len(buf), "trailing bytes"
    return meta, out


def main():
    meta, ts = load(sys.argv[1])
    raw = open(sys.argv[1], "rb").read()
    (n,) = struct.unpack("<Q", raw[:8])
    assert n % 8 == 0, "header not padded to 8"
    for name in sorted(ts):
        a = ts[name]
        print(name, a.dtype.str,
              json.dumps(list(a.shape), separators=(",", ":")),
              hashlib.sha256(a.tobytes()).hexdigest())


if __name__ == "__main__":
    main()
