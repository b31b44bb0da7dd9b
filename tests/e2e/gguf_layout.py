#!/usr/bin/env python3
"""An independent reading of a GGUF file's tensor table (specs/gguf.md),
for the e2e test: one line per tensor,
    NAME<TAB>ABSOLUTE_OFFSET<TAB>NBYTES<TAB>DTYPE<TAB>SHAPE<TAB>NE
with the row-major SHAPE = reverse(ne) and tensorfs's dtype name.
    gguf_layout.py FILE
"""
import struct
import sys

# ggml type id -> (dtype name, block elements, block bytes), spec section 5
TYPES = {0: ("float32", 1, 4), 1: ("float16", 1, 2), 2: ("q4_0", 32, 18),
         3: ("q4_1", 32, 20), 6: ("q5_0", 32, 22), 7: ("q5_1", 32, 24),
         8: ("q8_0", 32, 34), 9: ("q8_1", 32, 36), 10: ("q2_k", 256, 84),
         11: ("q3_k", 256, 110), 12: ("q4_k", 256, 144),
         13: ("q5_k", 256, 176), 14: ("q6_k", 256, 210),
         15: ("q8_k", 256, 292), 16: ("iq2_xxs", 256, 66),
         17: ("iq2_xs", 256, 74), 18: ("iq3_xxs", 256, 98),
         19: ("iq1_s", 256, 50), 20: ("iq4_nl", 32, 18),
         21: ("iq3_s", 256, 110), 22: ("iq2_s", 256, 82),
         23: ("iq4_xs", 256, 136), 24: ("int8", 1, 1), 25: ("int16", 1, 2),
         26: ("int32", 1, 4), 27: ("int64", 1, 8), 28: ("float64", 1, 8),
         29: ("iq1_m", 256, 56), 30: ("bfloat16", 1, 2),
         34: ("tq1_0", 256, 54), 35: ("tq2_0", 256, 66),
         39: ("mxfp4", 32, 17), 40: ("nvfp4", 64, 36),
         41: ("q1_0", 128, 18), 42: ("q2_0", 64, 18)}
SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

data = open(sys.argv[1], "rb").read()
pos = 0


def take(fmt):
    global pos
    v = struct.unpack_from("<" + fmt, data, pos)
    pos += struct.calcsize("<" + fmt)
    return v[0] if len(v) == 1 else v


def skip_value(t):
    global pos
    if t == 8:
        n = take("Q")
        pos += n
    elif t == 9:
        et, n = take("I"), take("Q")
        for _ in range(n):
            skip_value(et)
    else:
        pos += SIZES[t]


assert data[:4] == b"GGUF"
pos = 4
version, n_tensors, n_kv = take("I"), take("Q"), take("Q")
alignment = 32
for _ in range(n_kv):
    n = take("Q")
    key = data[pos:pos + n]
    pos += n
    t = take("I")
    if key == b"general.alignment":
        alignment = struct.unpack_from("<I", data, pos)[0]
    skip_value(t)
infos = []
for _ in range(n_tensors):
    n = take("Q")
    name = data[pos:pos + n].decode()
    pos += n
    ne = [take("Q") for _ in range(take("I"))]
    t, off = take("I"), take("Q")
    infos.append((name, ne, t, off))
start = -(-pos // alignment) * alignment
for name, ne, t, off in infos:
    dtype, be, bb = TYPES[t]
    count = 1
    for d in ne:
        count *= d
    print("\t".join([name, str(start + off), str(count // be * bb), dtype,
                     "[" + ",".join(map(str, reversed(ne))) + "]",
                     "[" + ",".join(map(str, ne)) + "]"]))
