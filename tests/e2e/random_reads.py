#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Random concurrent preads of a mount's tensor files (tests/e2e/pagecache.sh,
docs/performance.md):

  random_reads.py MNT THREADS SECONDS [REFDIR]

THREADS threads each read 1 B .. a whole file (log-uniform) at a random
offset for SECONDS, while the mount's page cache is dropped
(POSIX_FADV_DONTNEED) every 2 s.  With REFDIR every read is compared with
the file of the same path under REFDIR.  Prints "N reads, M mismatches, E
errors"; exits 1 on a mismatch or an error."""
import os
import random
import sys
import threading
import time


mnt, threads, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
ref = sys.argv[4] if len(sys.argv) > 4 else None
files = []
for root, dirs, names in os.walk(mnt):
    if '.tensorfs' in root.split(os.sep):
        continue
    for n in names:
        p = os.path.join(root, n)
        files.append((p, os.path.getsize(p)))
end = time.time() + seconds
stats = {'reads': 0, 'bad': 0, 'errors': 0}
lock = threading.Lock()

def work(seed):
    rng = random.Random(seed)
    fds = {}
    n = bad = err = 0
    while time.time() < end:
        p, size = rng.choice(files)
        if size == 0:
            continue
        ln = min(size, int(2 ** rng.uniform(0, size.bit_length())))
        ln = max(1, ln)
        off = rng.randrange(0, size - ln + 1)
        fd = fds.get(p)
        if fd is None:
            fd = fds[p] = os.open(p, os.O_RDONLY)
        try:
            got = os.pread(fd, ln, off)
        except OSError:
            err += 1
            continue
        n += 1
        if ref:
            with open(os.path.join(ref, os.path.relpath(p, mnt)), 'rb') as f:
                f.seek(off)
                if f.read(ln) != got:
                    bad += 1
    for fd in fds.values():
        os.close(fd)
    with lock:
        stats['reads'] += n
        stats['bad'] += bad
        stats['errors'] += err

def dropper():
    while time.time() < end:
        for p, _ in files:
            fd = os.open(p, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
        time.sleep(2)

ts = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
ts.append(threading.Thread(target=dropper))
for t in ts:
    t.start()
for t in ts:
    t.join()
print('%d reads, %d mismatches, %d errors' % (stats['reads'], stats['bad'], stats['errors']))
sys.exit(1 if stats['bad'] or stats['errors'] else 0)
