#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write DIR/saved_model.pb and DIR/fingerprint.pb as TensorFlow writes
them (tensorflow/core/protobuf/saved_model.proto, meta_graph.proto,
fingerprint.proto), protobuf by hand: one MetaGraphDef tagged "serve"
with signature "serving_default" (input "x", output "y", method
"tensorflow/serving/predict") and two functions.  What tensorfs must show
in metadata.json is printed as JSON on stdout."""
import json
import os
import sys


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def fld(n, payload):
    if isinstance(payload, int):
        return varint(n << 3) + varint(payload)
    if isinstance(payload, str):
        payload = payload.encode()
    return varint(n << 3 | 2) + varint(len(payload)) + payload


def tensor_info(name):
    return fld(1, name)  # TensorInfo.name


def signature():
    return (fld(1, fld(1, "x") + fld(2, tensor_info("serving_default_x:0")))
            + fld(2, fld(1, "y") + fld(2, tensor_info("StatefulCall:0")))
            + fld(3, "tensorflow/serving/predict"))


FUNCS = ["__inference_signature_wrapper_42", "__inference__wrapped_model_17"]
meta_info = fld(1, "") + fld(4, "serve") + fld(5, "2.15.0")
library = b"".join(fld(1, fld(1, fld(1, f))) for f in FUNCS)
graph = fld(1, fld(1, "x") + fld(2, "Placeholder")) + fld(2, library)
meta_graph = (fld(1, meta_info) + fld(2, graph)
              + fld(5, fld(1, "serving_default") + fld(2, signature())))
saved = fld(1, 1) + fld(2, meta_graph)
fingerprint = (fld(1, 1234567) + fld(2, 99) + fld(3, 7) + fld(4, 8)
               + fld(5, 9) + fld(6, fld(1, 1)))
with open(os.path.join(sys.argv[1], "saved_model.pb"), "wb") as f:
    f.write(saved)
with open(os.path.join(sys.argv[1], "fingerprint.pb"), "wb") as f:
    f.write(fingerprint)
json.dump({"schema_version": 1, "meta_graphs": [{
    "tags": ["serve"], "tensorflow_version": "2.15.0",
    "signatures": {"serving_default": {
        "inputs": ["x"], "outputs": ["y"],
        "method_name": "tensorflow/serving/predict"}},
    "functions": FUNCS}]}, sys.stdout, sort_keys=True)
