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

# a relative container and mount point: the daemon (detached, so in /) and
# a foreground one (-f) still unmount on a signal; /proc/mounts names the
# container by its absolute path
mkdir -p "$WORK/rel/ck" "$WORK/rel/m/sig" "$WORK/rel/m/fg"
cp "$SAMPLE" "$WORK/rel/ck/s.zt"
MOUNTS+=("$WORK/rel/m/sig" "$WORK/rel/m/fg")
(cd "$WORK/rel" && "$TENSORFS" ck/s.zt m/sig) || fail "relative mount"
check "relative: mounted" mountpoint -q "$WORK/rel/m/sig"
check "relative: /proc/mounts has the absolute container" \
	grep -q "^tensorfs:$WORK/rel/ck/s.zt $WORK/rel/m/sig " /proc/mounts
pid=$(pgrep -f -- " m/sig\$" | head -n 1)
kill -TERM "$pid"
for _ in $(seq 50); do running "$pid" || break; sleep 0.1; done
check "relative: SIGTERM unmounts" bash -c "! mountpoint -q '$WORK/rel/m/sig'"
ls "$WORK/rel/m/sig" >/dev/null 2>&1 || fail "relative: not a dead mount"
(cd "$WORK/rel" && exec "$TENSORFS" -f ck/s.zt m/fg 2>"$WORK/fg.err") &
pid=$!
for _ in $(seq 50); do mountpoint -q "$WORK/rel/m/fg" && break; sleep 0.1; done
kill -INT "$pid"
wait "$pid"
eq "relative -f: SIGINT exits 0" "$?" 0
check "relative -f: unmounted" bash -c "! mountpoint -q '$WORK/rel/m/fg'"
check "relative -f: no 'failed to unmount'" \
	bash -c "! grep -q 'failed to unmount' '$WORK/fg.err'"

# a dead mount point (daemon killed) is named as such, with the cure
mnt=$(mount_container "$SAMPLE") || fail "mount"
kill -9 "$(daemon_pid "$mnt")"
sleep 0.3
err=$("$TENSORFS" "$SAMPLE" "$mnt" 2>&1)
eq "dead mount point: exit 5" "$?" 5
check "dead mount point: says so and how to clear it" \
	grep -q "dead mount.*fusermount3 -u $mnt" <<<"$err"
fusermount3 -u "$mnt"
finish
