#!/usr/bin/env bash
# The container changes under a live mount: truncation must not crash the
# daemon (reads of vanished bytes give EIO, the rest keeps working, unmount
# works); deleting the file changes nothing for the mount.
. "$(dirname "$0")/lib.sh"
need_fuse

size=65536
python3 "$TFS_SOURCE_ROOT/tools/make_sample.py" --many 8 $size "$WORK/c.zt"
M=$(mount_container "$WORK/c.zt") || { fail "mount"; finish; }
pid=$(daemon_pid "$M")

# overwrite block 2 in place (as a careless writer would): no crash; the
# mount shows the bytes the file holds now (raw data is not cached by us)
head -c "$size" /dev/zero | tr '\0' '\252' |
	dd of="$WORK/c.zt" bs=1 seek=$((64 + 2 * size)) conv=notrunc status=none
echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
check "after an in-place overwrite the daemon lives and reads work" \
	cmp -s "$M/block/2/data" <(dd if="$WORK/c.zt" bs=1 skip=$((64 + 2 * size)) count=$size status=none)

# cut the file in the middle of block 4: blocks 0..3 stay whole
truncate -s $((64 + 4 * size + 100)) "$WORK/c.zt"
echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
err=$(cat "$M/block/6/data" 2>&1 >/dev/null)
check "a read of truncated bytes fails with EIO" grep -q "Input/output error" <<<"$err"
err=$(cat "$M/block/4/data" 2>&1 >/dev/null)
check "a read straddling the new end fails with EIO" grep -q "Input/output error" <<<"$err"
check "a read of bytes still there works" \
	cmp -s "$M/block/1/data" <(dd if="$WORK/c.zt" bs=1 skip=$((64 + size)) count=$size status=none)
check "the daemon survived" running "$pid"
check "listing still works" test "$(ls "$M/block" | wc -l)" -eq 8

# a zstd tensor whose stored bytes vanish while it is decoded: the decoder
# is cut short (SIGBUS caught), the read fails with EIO, the daemon lives
python3 - "$TFS_SOURCE_ROOT/tests/fixtures/ztensor" "$WORK/z.zt" <<'PY'
import os, sys
sys.path.insert(0, sys.argv[1])
from generate import Writer, comp, dense, v12
data = os.urandom(8 << 20)
w = Writer()
objects = {"big": dense([len(data)], comp(w, data, dtype="u8", zstd=True,
                                          ulen=True))}
open(sys.argv[2], "wb").write(w.finish(v12(objects), footer=True))
PY
Z=$(mount_container "$WORK/z.zt") || fail "mount the zstd container"
zpid=$(daemon_pid "$Z")
truncate -s $((1 << 20)) "$WORK/z.zt"
echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
err=$(cat "$Z/big" 2>&1 >/dev/null)
check "a zstd tensor whose bytes vanished reads as EIO" \
	grep -q "Input/output error" <<<"$err"
check "the daemon survived decoding vanished bytes" running "$zpid"
check "the zstd mount still lists" test -f "$Z/.tensorfs/manifest.json"
unmount "$Z"

rm -f "$WORK/c.zt"
check "after the file is deleted, reads of mapped bytes work" \
	test "$(head -c 100 "$M/block/0/data" | wc -c)" -eq 100
check "unmount works" unmount "$M"
for _ in $(seq 50); do running "$pid" || break; sleep 0.1; done
check "the daemon exited" eval "! running $pid"
finish
