#!/usr/bin/env bash
# Zarr v2 groups written at run time by Debian's python3-zarr (zarr-python
# 2, the independent reader), really mounted: every uncompressed array
# (edge chunks, missing chunks as fill_value, "/" keys, big-endian, 0-d,
# Fortran order) read through the mount equals zarr-python's array
# (Fortran order: its column-major bytes, order=F in the xattr); a
# compressed array of several chunks is listed with its shape and refused
# on read with EIO, verify naming why; a chunk linked out of the array's
# directory refused.
# Skipped without python3-zarr.
. "$(dirname "$0")/lib.sh"
need_fuse
if ! /usr/bin/python3 -c 'import zarr, numcodecs' 2>/dev/null; then
	echo "SKIP: python3-zarr is not installed"
	exit 77
fi

G="$WORK/group"
/usr/bin/python3 - "$G" <<'PY' || { fail "python3-zarr writes the group"; finish; }
import sys, numpy as np, zarr
from numcodecs import Zlib
g = zarr.open_group(sys.argv[1], mode="w")
a = g.create("edges_i4", shape=(5, 3), chunks=(2, 2), dtype="<i4",
             compressor=None, fill_value=-7)
a[:] = np.arange(15, dtype="<i4").reshape(5, 3) * 3
a[2:4, 2] = -7                      # chunk (1,1) all fill: not written
g.create("nested_f8", shape=(3, 2, 4), chunks=(2, 2, 3), dtype="<f8",
         compressor=None, dimension_separator="/")[:] = \
    np.linspace(-1, 1, 24).reshape(3, 2, 4)
g.create("big_u2", shape=(7,), chunks=(3,), dtype=">u2",
         compressor=None)[:] = np.arange(7) * 300
g.create("fortran_f4", shape=(3, 4), chunks=(2, 3), dtype="<f4",
         compressor=None, order="F")[:] = \
    np.arange(12, dtype="<f4").reshape(3, 4) / 4
g.create("scalar_f2", shape=(), chunks=(), dtype="<f2", compressor=None,
         fill_value=0)[...] = 1.5
sub = g.create_group("layers")
sub.create("empty_f4", shape=(4, 4), chunks=(2, 2), dtype="<f4",
           compressor=None, fill_value=2.5)
sub.create("zlib_one_i2", shape=(3, 3), chunks=(4, 4), dtype="<i2",
           compressor=Zlib(1))[:] = np.arange(9).reshape(3, 3) - 4
g.create("unwritten_zlib_f4", shape=(3,), chunks=(4,), dtype="<f4",
         compressor=Zlib(1), fill_value=-0.5)
g.create("zlib_many_f4", shape=(6, 2), chunks=(2, 2), dtype="<f4",
         compressor=Zlib(1))[:] = 1
g.attrs["note"] = "written by zarr-python"
PY
# the expected bytes, by zarr-python
/usr/bin/python3 - "$G" "$WORK/want" <<'PY'
import os, sys, numpy as np, zarr
g = zarr.open_group(sys.argv[1], mode="r")
os.makedirs(sys.argv[2])
def walk(grp, pre):
    for name, a in grp.arrays():
        v = a[...]
        b = v.tobytes(order="F" if a.order == "F" else "C")
        open(os.path.join(sys.argv[2], (pre + name).replace("/", "_")),
             "wb").write(b)
    for name, s in grp.groups():
        walk(s, pre + name + "/")
walk(g, "")
PY
M=$(mount_container "$G") || { fail "mount the group"; finish; }
for rel in edges_i4 nested_f8 big_u2 fortran_f4 scalar_f2 layers/empty_f4 \
	layers/zlib_one_i2 unwritten_zlib_f4; do
	base=${rel##*/}
	got="$M/$rel/$base"
	if cmp -s "$got" "$WORK/want/${rel//\//_}"; then
		ok "$rel equals zarr-python's array"
	else
		fail "$rel differs from zarr-python's array"
	fi
done
xa() {
	getfattr --absolute-names --only-values -n "user.tensorfs.$2" "$1" 2>/dev/null
}
eq "fortran_f4 order" "$(xa "$M/fortran_f4/fortran_f4" order)" F
eq "big_u2 byte_order" "$(xa "$M/big_u2/big_u2" byte_order)" big
eq "zlib_many_f4 size" "$(stat -c %s "$M/zlib_many_f4/zlib_many_f4")" 48
if cat "$M/zlib_many_f4/zlib_many_f4" >/dev/null 2>&1; then
	fail "a compressed array of several chunks read"
else
	ok "a compressed array of several chunks: EIO"
fi
"$TENSORFS" verify "$G" >"$WORK/verify.out" 2>&1
check "verify says why" grep -q "zlib_many_f4.*not served yet" "$WORK/verify.out"
unmount "$M"
# one array mounted by its directory: its file at the root
M=$(mount_container "$G/edges_i4") || fail "mount one array"
check "one array: the file at the root" cmp -s "$M/edges_i4" "$WORK/want/edges_i4"
unmount "$M"
# a chunk file that is a symlink out of the array's directory: refused
cp -r "$G/big_u2" "$WORK/evil"
ln -sf /etc/hostname "$WORK/evil/0"
if "$TENSORFS" ls "$WORK/evil/.zarray" >"$WORK/evil.out" 2>&1; then
	fail "a chunk linked out of the directory was followed"
else
	check "a chunk linked out: refused naming it" \
		grep -q "chunk '0'.*outside" "$WORK/evil.out"
fi
finish
