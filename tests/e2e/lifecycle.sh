#!/usr/bin/env bash
# Signals unmount cleanly (also with readers active); after kill -9 the
# documented recovery (fusermount3 -u) works and a new mount succeeds.
. "$(dirname "$0")/lib.sh"
need_fuse

python3 "$TFS_SOURCE_ROOT/tools/make_sample.py" --many 8 1048576 "$WORK/many.zt"

for sig in TERM INT; do
	mnt=$(mktemp -d "$WORK/mnt.XXXXXX")
	MOUNTS+=("$mnt")
	"$TENSORFS" -f "$WORK/many.zt" "$mnt" 2>"$WORK/daemon.err" &
	pid=$!
	for _ in $(seq 50); do mountpoint -q "$mnt" && break; sleep 0.1; done
	check "SIG$sig: foreground mount is up" mountpoint -q "$mnt"
	# readers busy while the signal arrives
	for i in 1 2 3 4; do
		(for _ in $(seq 20); do cat "$mnt"/block/*/data >/dev/null 2>&1; done) &
	done
	sleep 0.3
	kill -"$sig" "$pid"
	wait "$pid"
	rc=$?
	wait
	eq "SIG$sig: the daemon exits 0" "$rc" 0
	check "SIG$sig: the mount is gone" bash -c "! mountpoint -q '$mnt'"
done

# kill -9 leaves a dead mount; fusermount3 -u recovers; a new mount works
mnt=$(mount_container "$WORK/many.zt") || fail "mount"
pid=$(daemon_pid "$mnt")
kill -9 "$pid"
sleep 0.3
err=$(ls "$mnt" 2>&1)
check "after kill -9: 'Transport endpoint is not connected'" \
	grep -q "not connected" <<<"$err"
check "fusermount3 -u recovers" fusermount3 -u "$mnt"
mnt2=$(mount_container "$WORK/many.zt" 2>/dev/null)
[ "$mnt2" ] || fail "mount again"
eq "a new mount works" "$(ls "$mnt2/block" | wc -l)" 8
unmount "$mnt2"
finish
