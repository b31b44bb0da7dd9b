#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The Python module's rows of bench/run (issue 42), best of RUNS:

  * safe_open(...).get_tensor of every tensor of the GPT-2-shaped
    safetensors shards (tools/make_model.py st-sharded) vs the same tensors
    as numpy arrays of np.memmap of the files (the zero-copy bound), each
    array then summed (its pages read);
  * load_file(framework="pt") of pytorch_model.bin (layout pt) vs Debian's
    torch.load(weights_only=True) of the same file, every tensor then
    summed.

    bench/python_api.py MODELDIR [RUNS] [--small]

Prints "row<TAB>measurement<TAB>now<TAB>ratio<TAB>target" lines.  Needs
numpy and torch; PYTHONPATH and TENSORFS_LIBRARY select the module and the
library (bench/run: the build's).
"""
import glob
import json
import os
import struct
import subprocess
import sys
import time

import numpy as np

import tensorfs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def best(fn, runs):
    t = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return min(t)


def memmap_all(files):
    """every tensor by the safetensors spec, as numpy views of np.memmap"""
    codes = {"F32": "<f4", "F16": "<f2", "BF16": "<u2", "I64": "<i8"}
    total = 0.0
    for path in files:
        with open(path, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(n))
        mm = np.memmap(path, dtype=np.uint8, mode="r")
        for name, spec in header.items():
            if name == "__metadata__":
                continue
            a, b = spec["data_offsets"]
            arr = mm[8 + n + a:8 + n + b].view(codes[spec["dtype"]]).reshape(
                spec["shape"])
            total += float(arr.sum(dtype=np.float64))
    return total


def safe_open_all(files):
    total = 0.0
    for path in files:
        with tensorfs.safe_open(path) as f:
            for k in f.keys():
                total += float(f.get_tensor(k).sum(dtype=np.float64))
    return total


def main():
    models = sys.argv[1]
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    small = "--small" in sys.argv
    for layout in ("st-sharded", "pt"):
        if not os.path.exists(os.path.join(models, layout + ".bytes")):
            subprocess.run(["/usr/bin/python3",
                            os.path.join(ROOT, "tools", "make_model.py")] +
                           (["--small"] if small else []) + [models, layout],
                           check=True, stdout=subprocess.DEVNULL)
    files = sorted(glob.glob(os.path.join(models, "st-sharded",
                                          "*.safetensors")))
    assert safe_open_all(files) == memmap_all(files)
    t_tfs = best(lambda: safe_open_all(files), runs)
    t_mm = best(lambda: memmap_all(files), runs)
    print("row\tsafe_open().get_tensor + sum, every tensor of GPT-2 "
          "safetensors shards / np.memmap\t%.3f s vs %.3f s\t%.2fx\t"
          "<= 1.0x" % (t_tfs, t_mm, t_tfs / t_mm))
    import torch
    (pt,) = glob.glob(os.path.join(models, "pt", "*.bin"))

    def ours(verify=None):
        d = tensorfs.load_file(pt, framework="pt", verify=verify)
        return sum(float(t.sum()) for t in d.values())

    def theirs():
        d = torch.load(pt, weights_only=True)
        return sum(float(t.sum()) for t in d.values())

    t_torch = best(theirs, runs)
    for verify, what in ((None, "each zip member's CRC-32 checked"),
                         ("off", "verify=\"off\"")):
        t_tfs = best(lambda: ours(verify), runs)
        print("row\tload_file(framework=\"pt\") of pytorch_model.bin + "
              "sum / torch.load, %s\t%.3f s vs %.3f s\t%.2fx faster\t"
              ">= 2x" % (what, t_tfs, t_torch, t_torch / t_tfs))


if __name__ == "__main__":
    main()
