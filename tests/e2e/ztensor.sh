#!/usr/bin/env bash
# zTensor through a real mount: zstd decoded transparently (bytes and sizes
# as documented), integrity failures as EIO with one log line while other
# tensors keep working, and `tensorfs verify` exit statuses.
. "$(dirname "$0")/lib.sh"
need_fixtures
need_fuse

FX="$TFS_FIXTURES/ztensor"
WEIGHT=24ae2dfe8df57c1b80e54cef3d90ac3b417fd98973345a5f616bbc9a75dcc202
for f in v10_f32_2x3_zstd_crc v12_f32_2x3_zstd_crc v01_f32_2x3_raw v11_f32_2x3_raw; do
	M=$(mount_container "$FX/$f.zt") || { fail "mount $f"; continue; }
	eq "$f: st_size is the decoded size" "$(stat -c %s "$M/weight")" 24
	eq "$f: decoded bytes as documented" "$(sha "$M/weight")" "$WEIGHT"
	eq "$f: a 4-byte read at offset 8 (the third float)" \
		"$(dd if="$M/weight" bs=4 skip=2 count=1 status=none | od -An -f | tr -d ' ')" 3
	unmount "$M"
done

# v12_multi: a sparse CSR tensor is a directory of component files
M=$(mount_container "$FX/v12_multi.zt") || fail "mount v12_multi"
eq "CSR: one file per role" "$(ls "$M/s" | tr '\n' ' ')" "indices indptr values "
eq "CSR: the directory's layout xattr" \
	"$(getfattr --only-values -n user.tensorfs.ztensor.layout "$M/s")" sparse_csr
eq "CSR: indptr is uint64 [4]" \
	"$(getfattr --only-values -n user.tensorfs.shape "$M/s/indptr")" "[4]"
eq "CSR: indptr bytes as documented" "$(sha "$M/s/indptr")" \
	a1e03200f1f82ad2c1cec8795c271aaecf98f5aa2d151d2229ec5fa0c177cf77
eq "b: sha256-checked tensor reads" "$(sha "$M/b")" \
	57e4397ccfb34c2040f50ff90f7850667aac626e0959bd3a4c92ec8ed62dc888
unmount "$M"

# integrity failures: the mount works, that tensor's reads give EIO and one
# log line naming it; the good tensor next to it reads fine
for f in digest_mismatch truncated_zstd_dense decoded_size_mismatch; do
	mnt=$(mktemp -d "$WORK/mnt.XXXXXX")
	MOUNTS+=("$mnt")
	"$TENSORFS" -f "$TFS_TESTDATA/ztensor/read_eio/$f.zt" "$mnt" 2>"$WORK/$f.log" &
	pid=$!
	for _ in $(seq 50); do mountpoint -q "$mnt" && break; sleep 0.1; done
	err=$(cat "$mnt/bad" 2>&1 >/dev/null)
	check "$f: reading 'bad' fails with EIO" grep -q "Input/output error" <<<"$err"
	err=$(cat "$mnt/bad" 2>&1 >/dev/null)
	check "$f: and again (sticky)" grep -q "Input/output error" <<<"$err"
	if [ -e "$mnt/good" ]; then
		check "$f: 'good' still reads" test "$(wc -c <"$mnt/good")" -eq 24
	fi
	kill -TERM "$pid"
	wait "$pid"
	check "$f: one log line names the tensor" \
		test "$(grep -c "tensor 'bad'" "$WORK/$f.log")" -eq 1
	"$TENSORFS" verify "$TFS_TESTDATA/ztensor/read_eio/$f.zt" >/dev/null 2>&1
	eq "$f: tensorfs verify exits 2" "$?" 2
done
"$TENSORFS" verify "$FX/v12_multi.zt" >"$WORK/verify.out"
eq "verify of a good file exits 0" "$?" 0
check "verify reports the digests it checked" \
	grep -q "2 digests checked" "$WORK/verify.out"
finish
