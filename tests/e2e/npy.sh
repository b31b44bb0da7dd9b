#!/usr/bin/env bash
# NumPy .npy and .npz through real mounts: every shared npy fixture and
# every numpy-written sample (tests/fixtures/npy/valid) mounted plain and
# with -o npy, compared with numpy's own np.load of the same file
# (tests/e2e/npy_compare.py); a wrong CRC-32 in a stored or a deflated
# member gives EIO and one log line naming the tensor, and `tensorfs verify`
# exits 2; other zips (a PyTorch-style checkpoint) are not taken for .npz.
. "$(dirname "$0")/lib.sh"
need_fixtures
need_fuse
if ! /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
	echo "SKIP: Debian's python3-numpy is not installed"
	exit 77
fi

files=("$TFS_FIXTURES"/npy/*.npy "$TFS_FIXTURES"/npy/*.npz
	"$TFS_TESTDATA"/npy/valid/*.npy "$TFS_TESTDATA"/npy/valid/*.npz)
check "shared and numpy-written samples" test "${#files[@]}" -gt 50
for f in "${files[@]}"; do
	A=$(mount_container "$f") || { fail "mount $f"; continue; }
	B=$(mount_container "$f" -o npy) || { fail "mount -o npy $f"; continue; }
	check "numpy agrees on ${f#"$TFS_FIXTURES"/}" \
		/usr/bin/python3 "$(dirname "$0")/npy_compare.py" "$f" "$A" "$B"
	unmount "$A"
	unmount "$B"
done

# the root says what it is
A=$(mount_container "$TFS_FIXTURES/npy/stored.npz")
eq "root format of an .npz" "$(getfattr --only-values -n user.tensorfs.format "$A" 2>/dev/null)" npz
eq "stored member's digest" "$(getfattr --only-values -n user.tensorfs.digest "$A/w" 2>/dev/null)" crc32:0xF4EAB33D
unmount "$A"
A=$(mount_container "$TFS_FIXTURES/npy/f4be_1d.npy")
eq "root format of an .npy" "$(getfattr --only-values -n user.tensorfs.format "$A" 2>/dev/null)" npy
eq "big-endian data" "$(getfattr --only-values -n user.tensorfs.byte_order "$A/tensor" 2>/dev/null)" big
unmount "$A"

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

"$TENSORFS" verify "$TFS_FIXTURES/npy/deflated.npz" >"$WORK/verify.out"
eq "verify of a good deflated .npz exits 0" "$?" 0

# zips that are not .npz are not the npz reader's (a PyTorch checkpoint is
# that reader's), whatever else happens to them
for f in "$TFS_TESTDATA"/npy/not_npz/*.zip; do
	"$TENSORFS" info "$f" >/dev/null 2>"$WORK/err"
	check "${f##*/} is not taken for an .npz" bash -c "! grep -q ': npz:' '$WORK/err'"
done
finish
