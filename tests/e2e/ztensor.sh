#!/usr/bin/env bash
# zTensor through a real mount: zstd decoded transparently (bytes and sizes
# as documented), integrity failures as EIO with one log line while other
# tensors keep working, and `tensorfs verify` exit statuses, on the files
# of tests/fixtures/ztensor (generate.py, which writes the spec's files of
# ../shared/fixtures/ztensor byte for byte).
. "$(dirname "$0")/lib.sh"
need_fuse

GEN="$TFS_TESTDATA/ztensor/valid"
WEIGHT=24ae2dfe8df57c1b80e54cef3d90ac3b417fd98973345a5f616bbc9a75dcc202
# sha256 of little-endian values packed by Python: FORMAT VALUES...
packed_sha() {
	/usr/bin/python3 -c 'import hashlib, struct, sys
print(hashlib.sha256(struct.pack("<" + sys.argv[1],
      *map(int, sys.argv[2:]))).hexdigest())' "$@"
}

# FILE: its tensor 'weight' is float32 [2,3] = 1..6, decoded
check_weight() {
	local f=$1 name=${1##*/} M
	M=$(mount_container "$f") || { fail "mount $name"; return; }
	eq "$name: st_size is the decoded size" "$(stat -c %s "$M/weight")" 24
	eq "$name: decoded bytes as documented" "$(sha "$M/weight")" "$WEIGHT"
	eq "$name: a 4-byte read at offset 8 (the third float)" \
		"$(dd if="$M/weight" bs=4 skip=2 count=1 status=none | od -An -f | tr -d ' ')" 3
	unmount "$M"
}
# the spec's files (generate.py writes them with the bytes of
# ../shared/fixtures/ztensor), then generate.py's own, raw (v0.1) and zstd
# (v1.0 with crc32c, v1.1)
for f in v10_f32_2x3_zstd_crc v12_f32_2x3_zstd_crc v01_f32_2x3_raw v11_f32_2x3_raw \
	v01_dense_raw_zstd v10_sparse_zstd_crc32c v11_sparse_coo; do
	check_weight "$GEN/$f.zt"
done

# check_csr MOUNT DIR INDPTR_SHA: the sparse CSR tensor DIR is a directory
# of component files, its indptr of sha256 INDPTR_SHA
check_csr() {
	local M=$1 s=$2
	eq "CSR: one file per role" "$(ls "$M/$s" | tr '\n' ' ')" "indices indptr values "
	eq "CSR: the directory's layout xattr" \
		"$(getfattr --only-values -n user.tensorfs.ztensor.layout "$M/$s")" sparse_csr
	eq "CSR: indptr is uint64 [4]" \
		"$(getfattr --only-values -n user.tensorfs.shape "$M/$s/indptr")" "[4]"
	eq "CSR: indptr bytes as written" "$(sha "$M/$s/indptr")" "$3"
}
# v12_multi.zt (the spec's: s is a 3x3 identity in CSR, b int64 7, -1)
multi() { # FILE
	M=$(mount_container "$1") || { fail "mount $1"; return; }
	check_csr "$M" s \
		a1e03200f1f82ad2c1cec8795c271aaecf98f5aa2d151d2229ec5fa0c177cf77
	eq "CSR: indptr is 0..3" "$(sha "$M/s/indptr")" "$(packed_sha 4Q 0 1 2 3)"
	eq "b: sha256-checked tensor reads" "$(sha "$M/b")" \
		57e4397ccfb34c2040f50ff90f7850667aac626e0959bd3a4c92ec8ed62dc888
	unmount "$M"
}
multi "$GEN/v12_multi.zt"
# generate.py: m.sparse's indptr is 0, 1, 3, 4 (u64); b is int64 7, -1,
# zstd with a sha256 digest
M=$(mount_container "$GEN/v10_sparse_zstd_crc32c.zt") || fail "mount v10_sparse"
check_csr "$M" m/sparse "$(packed_sha 4Q 0 1 3 4)"
unmount "$M"
M=$(mount_container "$GEN/v12_attributes_sha256.zt") || fail "mount v12_attributes"
eq "b: sha256-checked tensor reads" "$(sha "$M/b")" "$(packed_sha 2q 7 -1)"
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
"$TENSORFS" verify "$GEN/v12_multi.zt" >"$WORK/verify.out"
eq "verify of a good file exits 0" "$?" 0
check "verify reports the digests it checked" \
	grep -q "2 digests checked" "$WORK/verify.out"
# generate.py gave indices, indptr and weight a crc32c digest
"$TENSORFS" verify "$GEN/v10_sparse_zstd_crc32c.zt" >"$WORK/verify.out"
eq "verify of a generated file exits 0" "$?" 0
check "verify reports its 3 digests" \
	grep -q "3 digests checked" "$WORK/verify.out"
finish
