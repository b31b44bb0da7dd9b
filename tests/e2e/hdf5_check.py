#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""HDF5 through a tensorfs mount, checked with h5py (Debian python3-h5py).

  hdf5_check.py gen OUT SEED     write a file with random groups, shapes,
                                 dtypes, layouts, chunking and filters
  hdf5_check.py paged OUT        70,000 chunks along an unlimited dim: an
                                 extensible array with paged data blocks
  hdf5_check.py records OUT      gzip-chunked compound datasets, unlimited
                                 (jhdf's isssue-523.hdf5), and one dataset
                                 tensorfs cannot serve
  hdf5_check.py compare FILE MNT every dataset of FILE (h5py's walk through
                                 hard links) against its file in MNT

compare: a readable file must hold exactly h5py's bytes (as stored: big-
endian stays big-endian), a file listed unreadable must fail with EIO;
variable-length datasets are not files.  A name "w:0" is looked up as "w"
unless a sibling is called "w" (tensorfs shows TensorFlow's suffix that
way).  Prints "N readable, M unreadable" and exits 1 on any mismatch.
"""
import errno
import os
import sys

import h5py
import numpy as np


def gen(out, seed):
    rng = np.random.default_rng(seed)
    libver = ['earliest', 'latest', 'v108'][seed % 3]
    dtypes = ['<i1', '<u1', '<i2', '>i2', '<u2', '<i4', '>u4', '<i8', '<u8',
              '<f2', '>f4', '<f4', '<f8', '>f8', '?', '<c8', '<c16', 'S5',
              [('a', '<i4'), ('b', '<f8')]]
    with h5py.File(out, 'w', libver=libver) as f:
        f.attrs['seed'] = seed
        f.attrs['note'] = 'random file'
        groups = [f]
        for i in range(int(rng.integers(10, 30))):
            if rng.random() < 0.25:
                g = groups[int(rng.integers(len(groups)))].create_group('g%d' % i)
                g.attrs['level'] = i
                groups.append(g)
                continue
            parent = groups[int(rng.integers(len(groups)))]
            dt = np.dtype(dtypes[int(rng.integers(len(dtypes)))])
            rank = int(rng.integers(0, 4))
            shape = tuple(int(x) for x in rng.integers(0 if rank else 1, 6, rank))
            n = int(np.prod(shape)) if rank else 1
            raw = rng.integers(0, 256, n * dt.itemsize, dtype=np.uint8).tobytes()
            data = np.frombuffer(raw, dtype=dt).copy()
            if dt.kind == 'b':
                data = rng.random(n) < 0.5
            elif dt.kind == 'f' or dt.kind == 'c':
                data = rng.standard_normal(n).astype(dt)
            data = data.reshape(shape)
            name = 'd%d' % i + (':0' if rng.random() < 0.3 else '')
            kind = rng.integers(4) if rank else 0
            kw = {}
            if kind == 1 and data.nbytes < 60000:
                kw['compact'] = True
            if kind >= 2 and n:
                kw['chunks'] = tuple(int(rng.integers(1, d + 1)) for d in shape)
                u = rng.random()
                if u < 0.3:      # one unlimited dim: extensible array
                    kw['maxshape'] = (None,) + shape[1:]
                elif u < 0.5:    # all unlimited: v2 B-tree
                    kw['maxshape'] = (None,) * rank
                elif u < 0.7:    # fixed larger max dims
                    kw['maxshape'] = tuple(d + 3 for d in shape)
                filt = int(rng.integers(5))
                if filt == 1:
                    kw['compression'] = 'gzip'
                elif filt == 2:
                    kw.update(compression='gzip', shuffle=True)
                elif filt == 3:
                    kw['compression'] = 'lzf'
                elif filt == 4:
                    kw['fletcher32'] = True
            if kw.pop('compact', False):
                sid = h5py.h5s.create_simple(shape) if rank else h5py.h5s.create(h5py.h5s.SCALAR)
                plist = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
                plist.set_layout(h5py.h5d.COMPACT)
                tid = h5py.h5t.py_create(dt)
                dsid = h5py.h5d.create(parent.id, name.encode(), tid, sid, dcpl=plist)
                ds = h5py.Dataset(dsid)
                ds[()] = data
            elif 'chunks' in kw and dt.kind in 'iuf' and rng.random() < 0.4:
                # only the first row written: the rest is the fill value
                ds = parent.create_dataset(name, shape=shape, dtype=dt,
                                           fillvalue=dt.type(7), **kw)
                ds[:1] = data[:1]
            elif rank and rng.random() < 0.1:
                # never written, contiguous: all fill value
                ds = parent.create_dataset(name, shape=shape, dtype=dt,
                                           fillvalue=dt.type(3) if dt.kind in 'iuf' else None)
            else:
                ds = parent.create_dataset(name, data=data, **kw)
            if rng.random() < 0.5:
                ds.attrs['scale'] = float(rng.random())


def paged(out):
    n = 70000
    with h5py.File(out, 'w', libver='latest') as f:
        f.create_dataset('e', data=(np.arange(n) % 251).astype('<u1'),
                         chunks=(1,), maxshape=(None,))
        d = f.create_dataset('s', shape=(n,), dtype='<u1', chunks=(1,),
                             maxshape=(None,), fillvalue=7)
        d[69000:69010] = 1


def records(out):
    """jhdf's isssue-523.hdf5 made again: compound datasets of shape
    (102400,) gzip-compressed in one chunk each, unlimited max shape (one
    with a chunk longer than the data); and one dataset tensorfs cannot
    serve (a row of chunks above 1 GiB decoded), which must leave only
    itself unreadable."""
    dt = np.dtype([('timestamp', '<u8'), ('value', '<f8'), ('flags', '<u4'),
                   ('name', 'S12')])
    rng = np.random.default_rng(523)
    with h5py.File(out, 'w') as f:
        g = f.create_group('42571/Protocols/ISO7816/Bits/0')
        for name, n, chunk in (('Frames', 102400, 102400),
                               ('Edges', 1000, 4096)):
            data = np.zeros(n, dtype=dt)
            data['timestamp'] = np.arange(n) * 7
            data['value'] = rng.random(n)
            data['flags'] = rng.integers(0, 1 << 32, n, dtype=np.uint32)
            data['name'] = [b'frame%d' % (i % 997) for i in range(n)]
            g.create_dataset(name, data=data, chunks=(chunk,),
                             maxshape=(None,), compression='gzip')
        big = f.create_dataset('too_wide', shape=(4, 1 << 29), dtype='u1',
                               chunks=(4, 1024))
        big[:, :1024] = 1
        f.create_dataset('plain', data=np.arange(10, dtype='<i4'))


def shown(name, siblings):
    if name.endswith(':0') and len(name) > 2 and name[:-2] not in siblings:
        return name[:-2]
    return name


def compare(path, mnt):
    bad = readable = unreadable = 0
    src = path
    if path.endswith('.keras'):  # the weights member of a Keras 3 zip
        import io
        import zipfile
        src = io.BytesIO(zipfile.ZipFile(path).read('model.weights.h5'))
    with h5py.File(src, 'r') as f:
        seen = []

        def visit(name, obj):
            seen.append((name, obj))
        f.visititems(visit)
        for name, obj in seen:
            if not isinstance(obj, h5py.Dataset):
                continue
            if obj.dtype.kind == 'O' or h5py.check_vlen_dtype(obj.dtype):
                continue
            parts = name.split('/')
            sibs = set(obj.parent.keys())
            p = os.path.join(mnt, *parts[:-1], shown(parts[-1], sibs))
            try:
                with open(p, 'rb') as fh:
                    got = fh.read()
            except OSError as e:
                if e.errno == errno.EIO:
                    unreadable += 1
                    if obj.size and obj.chunks is None and obj.id.get_offset() is not None:
                        print('%s: %s unreadable but contiguous' % (path, name))
                        bad += 1
                    continue
                print('%s: %s: %s' % (path, name, e))
                bad += 1
                continue
            want = b''
            if obj.shape is not None and obj.size:
                # the bytes as stored: read with the file's own type
                tid = obj.id.get_type()
                arr = np.empty(obj.shape, dtype='V%d' % tid.get_size())
                obj.id.read(h5py.h5s.ALL, h5py.h5s.ALL, arr, mtype=tid)
                want = arr.tobytes()
            if got != want:
                print('%s: %s: %d bytes differ from h5py\'s %d' % (path, name, len(got), len(want)))
                bad += 1
            else:
                readable += 1
    print('%d readable, %d unreadable' % (readable, unreadable))
    return 1 if bad else 0


if __name__ == '__main__':
    if sys.argv[1] == 'gen':
        gen(sys.argv[2], int(sys.argv[3]))
    elif sys.argv[1] == 'paged':
        paged(sys.argv[2])
    elif sys.argv[1] == 'records':
        records(sys.argv[2])
    else:
        sys.exit(compare(sys.argv[2], sys.argv[3]))
