#!/usr/bin/env bash
# NumPy .npy and .npz through real mounts: every numpy-written sample
# (tests/fixtures/npy/valid) and the shared npy fixtures when present
# mounted plain and
# with -o npy, compared with numpy's own np.load of the same file
# (tests/e2e/npy_compare.py); a wrong CRC-32 in a stored or a deflated
# member gives EIO and one log line naming the tensor, and `tensorfs verify`
# exits 2; other zips (a PyTorch-style checkpoint) are not taken for .npz.
. "$(dirname "$0")/lib.sh"
need_fuse
if ! /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
	echo "SKIP: Debian's python3-numpy is not installed"
	exit 77
fi

files=("$TFS_TESTDATA"/npy/valid/*.npy "$TFS_TESTDATA"/npy/valid/*.npz)
check "numpy-written samples" test "${#files[@]}" -gt 40
if shared_case "the shared .npy and .npz files" npy/stored.npz; then
	files+=("$TFS_FIXTURES"/npy/*.npy "$TFS_FIXTURES"/npy/*.npz)
fi
for f in "${files[@]}"; do
	A=$(mount_container "$f") || { fail "mount $f"; continue; }
	B=$(mount_container "$f" -o npy) || { fail "mount -o npy $f"; continue; }
	check "numpy agrees on ${f#"$TFS_FIXTURES"/}" \
		/usr/bin/python3 "$(dirname "$0")/npy_compare.py" "$f" "$A" "$B"
	unmount "$A"
	unmount "$B"
done

# the root says what it is; a stored member's digest is the CRC-32 the zip
# holds (as Python's zipfile reads it)
roots() { # NPZ (member w.npy stored) NPY (big-endian)
	local A crc
	crc=$(python3 -c 'import sys, zipfile; print("crc32:0x%08X" % zipfile.ZipFile(sys.argv[1]).getinfo("w.npy").CRC)' "$1")
	A=$(mount_container "$1")
	eq "root format of an .npz" "$(getfattr --only-values -n user.tensorfs.format "$A" 2>/dev/null)" npz
	eq "stored member's digest" "$(getfattr --only-values -n user.tensorfs.digest "$A/w" 2>/dev/null)" "$crc"
	unmount "$A"
	A=$(mount_container "$2")
	eq "root format of an .npy" "$(getfattr --only-values -n user.tensorfs.format "$A" 2>/dev/null)" npy
	eq "big-endian data" "$(getfattr --only-values -n user.tensorfs.byte_order "$A/tensor" 2>/dev/null)" big
	unmount "$A"
}
roots "$TFS_TESTDATA/npy/valid/savez_positional.npz" "$TFS_TESTDATA/npy/valid/be_f4.npy"
if shared_case "the shared stored.npz and f4be_1d.npy" npy/stored.npz; then
	check "the shared stored.npz's CRC is the one numpy wrote" \
		test "$(python3 -c 'import sys, zipfile; print("%08X" % zipfile.ZipFile(sys.argv[1]).getinfo("w.npy").CRC)' "$TFS_FIXTURES/npy/stored.npz")" = F4EAB33D
	roots "$TFS_FIXTURES/npy/stored.npz" "$TFS_FIXTURES/npy/f4be_1d.npy"
fi

# CRC-32 mismatches: the mount works, reads give EIO and one log line
for f in stored_crc_mismatch deflated_crc_mismatch; do
	mnt=$(mktemp -d "$WORK/mnt.XXXXXX")
	"$TENSORFS" -f "$TFS_TESTDATA/npy/corrupt/$f.npz" "$mnt" 2>"$WORK/$f.log" &
	pid=$!
	for _ in $(seq 100); do mountpoint -q "$mnt" && break; sleep 0.05; done
	MOUNTS+=("$mnt")
	err=$(cat "$mnt/w" 2>&1 >/dev/null)
	check "$f: reading 'w' fails with EIO" grep -q "Input/output error" <<<"$err"
	cat "$mnt/w" >/dev/null 2>&1
	unmount "$mnt"
	wait "$pid"
	check "$f: one log line names the tensor" \
		test "$(grep -c "tensor 'w'" "$WORK/$f.log")" -eq 1
	"$TENSORFS" verify "$TFS_TESTDATA/npy/corrupt/$f.npz" >"$WORK/verify.out" 2>&1
	eq "$f: tensorfs verify exits 2" "$?" 2
	check "$f: verify says CRC-32" grep -qi "crc" "$WORK/verify.out"
done

"$TENSORFS" verify "$TFS_TESTDATA/npy/valid/savez_compressed_many.npz" >"$WORK/verify.out"
eq "verify of a good deflated .npz exits 0" "$?" 0
if shared_case "verify of the shared deflated.npz" npy/deflated.npz; then
	"$TENSORFS" verify "$TFS_FIXTURES/npy/deflated.npz" >"$WORK/verify.out"
	eq "verify of the shared deflated .npz exits 0" "$?" 0
fi

# zips that are not .npz are not the npz reader's (a PyTorch checkpoint is
# that reader's), whatever else happens to them
for f in "$TFS_TESTDATA"/npy/not_npz/*.zip; do
	"$TENSORFS" info "$f" >/dev/null 2>"$WORK/err"
	check "${f##*/} is not taken for an .npz" bash -c "! grep -q ': npz:' '$WORK/err'"
done
finish
