#!/usr/bin/env bash
# A tensor read through the mount is cached once: the mount's pages stay,
# the container's pages of it are dropped (unless -o keep_source_cache);
# the bytes are right either way.  The mount's readahead is -o readahead=
# (default 1M) when we are root.
. "$(dirname "$0")/lib.sh"
need_fuse
command -v fincore >/dev/null || { echo "SKIP: fincore missing"; exit 77; }

mib=32
python3 "$TFS_SOURCE_ROOT/tools/make_sample.py" --big $((mib << 20)) "$WORK/big.zt"
# the tensor's bytes, independently: the file less its 64-byte header and
# the manifest behind the tensor
tail -c +65 "$WORK/big.zt" | head -c $((mib << 20)) >"$WORK/want"
resident() { fincore -b -n -o RES "$1" | awk '{ s += $1 } END { print s + 0 }'; }

cat "$WORK/big.zt" >/dev/null
check "the container is cached before" test "$(resident "$WORK/big.zt")" -gt $(((mib << 20) * 9 / 10))
M=$(mount_container "$WORK/big.zt") || fail "mount"
check "bytes through the mount" cmp -s "$M/big" "$WORK/want"
# cmp above read the container again; cache it, read the tensor afresh
unmount "$M"
cat "$WORK/big.zt" >/dev/null
M=$(mount_container "$WORK/big.zt") || fail "mount again"
cat "$M/big" >/dev/null
# the daemon drops them right after its last reply, which may be after cat
# returned: give a busy machine up to 5 s
for _ in $(seq 50); do
	left=$(resident "$WORK/big.zt")
	[ "$left" -lt $(((mib << 20) / 10)) ] && break
	sleep 0.1
done
check "container pages dropped after a full read ($left bytes left)" \
	test "$left" -lt $(((mib << 20) / 10))
check "the mount's pages hold the tensor" test "$(resident "$M/big")" -gt $(((mib << 20) * 9 / 10))
check "a re-read gives the same bytes" cmp -s "$M/big" <(cat "$M/big")
if [ "$(id -u)" = 0 ]; then
	eq "readahead 1M by default" \
		"$(cat "/sys/class/bdi/$(mountpoint -d "$M")/read_ahead_kb")" 1024
fi
unmount "$M"

cat "$WORK/big.zt" >/dev/null
M=$(mount_container "$WORK/big.zt" -o keep_source_cache,readahead=512K) ||
	fail "mount keep_source_cache"
cat "$M/big" >/dev/null
check "-o keep_source_cache: the container stays cached" \
	test "$(resident "$WORK/big.zt")" -gt $(((mib << 20) * 9 / 10))
if [ "$(id -u)" = 0 ]; then
	eq "-o readahead=512K" \
		"$(cat "/sys/class/bdi/$(mountpoint -d "$M")/read_ahead_kb")" 512
fi
unmount "$M"

"$TENSORFS" -o readahead=banana "$WORK/big.zt" "$(mktemp -d "$WORK/mnt.XXXXXX")" 2>"$WORK/err"
eq "a bad readahead: exit 1" "$?" 1
check "naming it" grep -q "readahead=banana" "$WORK/err"
finish
