#!/usr/bin/env python3
"""Read a safetensors file (its own reader: the u64 header length, the JSON
header, the data offsets) and compare it with expectations: a JSON object
whose "tensors" list (or, with KEY, whose "valid"[KEY]["tensors"]; SET/KEY:
SET instead of "valid") gives
each tensor's name, dtype (tensorfs names), shape and sha256, in any order.
The file must hold those tensors and no other.
Usage: netron_check.py FILE.safetensors EXPECTED.json [KEY]"""
import hashlib
import json
import struct
import sys

ST = {"float32": "F32", "float16": "F16", "int8": "I8", "uint8": "U8",
      "int32": "I32", "int64": "I64", "float64": "F64", "int16": "I16",
      "bfloat16": "BF16", "bool": "BOOL", "uint16": "U16", "uint32": "U32",
      "uint64": "U64"}


def main():
    data = open(sys.argv[1], "rb").read()
    (n,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    base = 8 + n
    want = json.load(open(sys.argv[2]))
    if len(sys.argv) > 3:   # KEY, or SET/KEY (model/tiny.param)
        group, _, key = sys.argv[3].rpartition("/")
        want = want[group or "valid"][key]
    tensors = want["tensors"]
    assert len(header) == len(tensors), (len(header), len(tensors))
    for t in tensors:
        h = header[t["name"]]
        assert h["dtype"] == ST[t["dtype"]], (t["name"], h["dtype"])
        assert h["shape"] == t["shape"], (t["name"], h["shape"])
        a, b = h["data_offsets"]
        got = hashlib.sha256(data[base + a:base + b]).hexdigest()
        assert got == t["sha256"], (t["name"], got)
    print(len(tensors))


if __name__ == "__main__":
    main()
