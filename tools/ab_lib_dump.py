#!/usr/bin/env python3
"""What libtensorfs shows of each input, for tools/ab_compare.sh.

  ab_lib_dump.py LIBTENSORFS OUTDIR PATH...

For each PATH (a container file, or a directory) writes OUTDIR/KEY (KEY:
PATH without a leading ../; a directory's: KEY/@dir): tfs_open's status
and message, the format, and per tensor its tfs_tensor_info, the sha256
of its bytes (tfs_read, the first 64 MiB), of its float32 values
(tfs_read_float32, the first 1 Mi), tfs_verify's status and message, and
its xattrs; the root's xattrs and metadata.json (length and sha256).
One process reads a thousand inputs in the time a hundred tensorfs
commands take.  A file is written once complete, so after a crash the
caller knows which input caused it; one taking longer than
$TFS_AB_TIMEOUT seconds (60) ends the process.
"""
import ctypes
import errno
import hashlib
import os
import signal
import sys

READ_MAX = 64 << 20
FLOAT_MAX = 1 << 20
CHUNK = 1 << 20


class Info(ctypes.Structure):
    _fields_ = [("name", ctypes.c_void_p), ("name_len", ctypes.c_size_t),
                ("path", ctypes.c_char_p), ("dtype", ctypes.c_char_p),
                ("shape", ctypes.POINTER(ctypes.c_uint64)),
                ("ndim", ctypes.c_uint32), ("itemsize", ctypes.c_uint32),
                ("nbytes", ctypes.c_uint64), ("count", ctypes.c_uint64),
                ("byte_order", ctypes.c_char_p), ("order", ctypes.c_char_p),
                ("role", ctypes.c_char_p), ("group", ctypes.c_void_p),
                ("group_len", ctypes.c_size_t), ("raw", ctypes.c_int),
                ("numeric", ctypes.c_int)]


def status(ret):
    if ret >= 0:
        return str(ret)
    return "-%s" % errno.errorcode.get(-ret, str(-ret))


def text(b):
    return b.decode("utf-8", "backslashreplace") if b is not None else "-"


def load(path):
    lib = ctypes.CDLL(path)
    lib.tfs_open.argtypes = [ctypes.c_char_p, ctypes.c_void_p,
                             ctypes.POINTER(ctypes.c_void_p),
                             ctypes.c_char_p, ctypes.c_size_t]
    lib.tfs_close.argtypes = [ctypes.c_void_p]
    lib.tfs_format.argtypes = [ctypes.c_void_p]
    lib.tfs_format.restype = ctypes.c_char_p
    lib.tfs_tensor_count.argtypes = [ctypes.c_void_p]
    lib.tfs_tensor_count.restype = ctypes.c_size_t
    lib.tfs_tensor_info.argtypes = [ctypes.c_void_p, ctypes.c_size_t,
                                    ctypes.POINTER(Info), ctypes.c_size_t]
    lib.tfs_read.argtypes = [ctypes.c_void_p, ctypes.c_size_t,
                             ctypes.c_uint64, ctypes.c_void_p,
                             ctypes.c_size_t]
    lib.tfs_read.restype = ctypes.c_ssize_t
    lib.tfs_read_float32.argtypes = [ctypes.c_void_p, ctypes.c_size_t,
                                     ctypes.c_uint64, ctypes.c_size_t,
                                     ctypes.c_void_p]
    lib.tfs_verify.argtypes = [ctypes.c_void_p, ctypes.c_size_t,
                               ctypes.c_char_p, ctypes.c_size_t]
    lib.tfs_getxattr.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                 ctypes.c_char_p, ctypes.c_void_p,
                                 ctypes.c_size_t]
    lib.tfs_getxattr.restype = ctypes.c_ssize_t
    lib.tfs_listxattr.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                  ctypes.c_char_p, ctypes.c_size_t]
    lib.tfs_listxattr.restype = ctypes.c_ssize_t
    lib.tfs_metadata_json.argtypes = [ctypes.c_void_p,
                                      ctypes.POINTER(ctypes.c_size_t)]
    lib.tfs_metadata_json.restype = ctypes.c_void_p
    return lib


def xattrs(lib, m, path, out):
    n = lib.tfs_listxattr(m, path, None, 0)
    if n < 0:
        out.append("xattrs: %s" % status(n))
        return
    names = ctypes.create_string_buffer(n + 1)
    n = lib.tfs_listxattr(m, path, names, n)
    for name in names.raw[:max(n, 0)].split(b"\0")[:-1]:
        v = lib.tfs_getxattr(m, path, name, None, 0)
        buf = ctypes.create_string_buffer(max(v, 0) + 1)
        if v >= 0:
            v = lib.tfs_getxattr(m, path, name, buf, v)
        out.append("  %s=%s" % (text(name), text(buf.raw[:v]) if v >= 0
                                else status(v)))


def tensor(lib, m, i, out):
    info = Info()
    ret = lib.tfs_tensor_info(m, i, ctypes.byref(info), ctypes.sizeof(info))
    if ret:
        out.append("tensor %d: %s" % (i, status(ret)))
        return
    shape = [info.shape[k] for k in range(info.ndim)]
    out.append("tensor %d: %r path=%s dtype=%s shape=%s itemsize=%d "
               "nbytes=%d count=%d %s %s role=%s group=%r raw=%d numeric=%d"
               % (i, ctypes.string_at(info.name, info.name_len),
                  text(info.path), text(info.dtype), shape, info.itemsize,
                  info.nbytes, info.count, text(info.byte_order),
                  text(info.order), text(info.role),
                  ctypes.string_at(info.group, info.group_len)
                  if info.group else None, info.raw, info.numeric))
    h, off, buf = hashlib.sha256(), 0, ctypes.create_string_buffer(CHUNK)
    end = min(info.nbytes, READ_MAX)
    ret = 0
    while off < end:
        ret = lib.tfs_read(m, i, off, buf, min(CHUNK, end - off))
        if ret <= 0:
            break
        h.update(buf.raw[:ret])
        off += ret
    out.append("  read %d bytes: %s %s" % (off, h.hexdigest(), status(ret)))
    if info.numeric:
        n = min(info.count, FLOAT_MAX)
        vals = ctypes.create_string_buffer(4 * n + 4)
        ret = lib.tfs_read_float32(m, i, 0, n, vals)
        out.append("  float32 %d: %s %s" % (
            n, hashlib.sha256(vals.raw[:4 * n]).hexdigest() if ret == 0
            else "-", status(ret)))
    msg = ctypes.create_string_buffer(1024)
    ret = lib.tfs_verify(m, i, msg, len(msg))
    out.append("  verify: %s %s" % (status(ret), text(msg.value)))
    xattrs(lib, m, info.path, out)


def dump(lib, path):
    out = []
    m = ctypes.c_void_p()
    err = ctypes.create_string_buffer(4096)
    ret = lib.tfs_open(os.fsencode(path), None, ctypes.byref(m), err,
                       len(err))
    out.append("open: %s %s" % (status(ret), text(err.value)))
    if ret:
        return out
    out.append("format: %s" % text(lib.tfs_format(m)))
    n = lib.tfs_tensor_count(m)
    out.append("tensors: %d" % n)
    for i in range(n):
        tensor(lib, m, i, out)
    out.append("root:")
    xattrs(lib, m, b"", out)
    length = ctypes.c_size_t()
    p = lib.tfs_metadata_json(m, ctypes.byref(length))
    out.append("metadata.json: %d %s" % (
        length.value, hashlib.sha256(ctypes.string_at(p, length.value))
        .hexdigest() if p else "NULL"))
    lib.tfs_close(m)
    return out


def main():
    lib = load(sys.argv[1])
    root = sys.argv[2]
    # an input that takes longer ends the process (the caller goes on)
    limit = int(os.environ.get("TFS_AB_TIMEOUT", "60"))
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    for path in sys.argv[3:]:
        key = os.path.join(root, path[3:] if path.startswith("../")
                           else path)
        if os.path.isdir(path):
            key = os.path.join(key, "@dir")
        os.makedirs(os.path.dirname(key), exist_ok=True)
        signal.alarm(limit)
        out = dump(lib, path)
        signal.alarm(0)
        with open(key + ".tmp", "w", encoding="utf-8") as f:
            f.write("\n".join(out) + "\n")
        os.rename(key + ".tmp", key)


if __name__ == "__main__":
    main()
