#!/usr/bin/python3
"""Write the expected bytes of every tensor of one shared PyTorch fixture,
computed from the file with numpy alone: each storage at the data offset
expected.json gives, the tensor as numpy's as_strided view of it (offset,
shape, stride in elements), its row-major bytes.  Independent of tensorfs.

    pytorch_expect.py EXPECTED_JSON FIXTURE_DIR FILE OUTDIR
writes OUTDIR/<dotted name> and OUTDIR/<dotted name>.sha256 (expected.json's)
"""
import json
import os
import sys

import numpy as np
from numpy.lib.stride_tricks import as_strided

exp_path, fixdir, name, out = sys.argv[1:5]
v = json.load(open(exp_path))['valid'][name]
raw = open(os.path.join(fixdir, name), 'rb').read()
os.makedirs(out, exist_ok=True)
for t in v['tensors']:
    st = v['storages'][t['storage']]
    item = t['itemsize']
    storage = np.frombuffer(raw, dtype=np.uint8, count=st['nbytes'],
                            offset=st['data_offset']).view('V%d' % item)
    view = as_strided(storage[t['storage_offset']:], shape=t['shape'],
                      strides=[s * item for s in t['stride']])
    with open(os.path.join(out, t['name']), 'wb') as f:
        f.write(np.ascontiguousarray(view).tobytes())
    with open(os.path.join(out, t['name'] + '.sha256'), 'w') as f:
        f.write(t['sha256'] + '\n')
