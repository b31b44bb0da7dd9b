#!/usr/bin/env bash
# Signals unmount cleanly (also with readers active); kill -9 mid-read
# leaves an empty mount point (auto_unmount, as root and as a user); with
# -o no_auto_unmount the documented recovery (fusermount3 -u) works and a
# new mount succeeds.
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

# kill -9 in the middle of reads (what the OOM killer does): by default
# (auto_unmount) fusermount3 unmounts, the readers get an error and return,
# the mount point is an empty directory again, and a new mount works there
kill9_mid_read() { # WHO MOUNTPOINT PID [RUN-AS...]
	local who=$1 mnt=$2 pid=$3 i err readers=()
	shift 3
	for i in 1 2 3 4; do
		"$@" bash -c "for _ in \$(seq 200); do
			cat '$mnt'/block/*/data >/dev/null 2>&1 || exit 0; done" &
		readers+=($!)
	done
	sleep 0.3
	kill -9 "$pid"
	# /proc/mounts: root may not look into a user's FUSE mount
	for _ in $(seq 50); do
		grep -q " $mnt " /proc/mounts || break
		sleep 0.1
	done
	check "$who: kill -9 mid-read: the mount is gone" \
		bash -c "! grep -q ' $mnt ' /proc/mounts"
	err=$("$@" ls -A "$mnt" 2>&1)
	eq "$who: kill -9 mid-read: an empty, usable directory" "$err" ""
	for _ in $(seq 100); do
		kill -0 "${readers[@]}" 2>/dev/null || break
		sleep 0.1
	done
	check "$who: the readers returned" \
		bash -c "! kill -0 ${readers[*]} 2>/dev/null"
	wait "${readers[@]}"
}
mnt=$(mount_container "$WORK/many.zt") || fail "mount"
kill9_mid_read root "$mnt" "$(daemon_pid "$mnt")"
"$TENSORFS" "$WORK/many.zt" "$mnt" || fail "mount again"
eq "root: a new mount on it works" "$(ls "$mnt/block" | wc -l)" 8
unmount "$mnt"

# the same for a user's mount (fusermount3 before 3.15 leaves it, libfuse
# issue 586: the daemon's own watcher unmounts it)
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null &&
	setpriv --reuid=nobody true 2>/dev/null; then
	as_nobody() {
		setpriv --reuid=nobody --regid=nogroup --clear-groups \
			--inh-caps=-all --reset-env "$@"
	}
	chmod 755 "$WORK"
	chmod 644 "$WORK/many.zt"
	mnt=$WORK/nobody-mnt
	mkdir -p "$mnt"
	chown nobody:nogroup "$mnt"
	MOUNTS+=("$mnt")
	# /dev/fuse root-only on some machines (see remote_nonroot.sh)
	fuse_mode=$(stat -c %a /dev/fuse)
	as_nobody test -r /dev/fuse -a -w /dev/fuse || chmod 0666 /dev/fuse
	if as_nobody "$TENSORFS" "$WORK/many.zt" "$mnt" 2>"$WORK/nobody.err"
	then
		chmod "$fuse_mode" /dev/fuse
		kill9_mid_read nobody "$mnt" "$(daemon_pid "$mnt")" as_nobody
	else
		chmod "$fuse_mode" /dev/fuse
		if as_nobody test -x "$TENSORFS"; then
			fail "nobody's mount: $(head -c 300 "$WORK/nobody.err")"
		else
			echo "SKIP-CASE: nobody cannot run $TENSORFS"
		fi
	fi
fi

# -o no_auto_unmount keeps the old way: kill -9 leaves a dead mount;
# fusermount3 -u recovers; a new mount works
mnt=$(mount_container "$WORK/many.zt" -o no_auto_unmount) || fail "mount"
pid=$(daemon_pid "$mnt")
kill -9 "$pid"
sleep 0.3
err=$(ls "$mnt" 2>&1)
check "no_auto_unmount: after kill -9 'Transport endpoint is not connected'" \
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
mnt=$(mount_container "$SAMPLE" -o no_auto_unmount) || fail "mount"
kill -9 "$(daemon_pid "$mnt")"
sleep 0.3
err=$("$TENSORFS" "$SAMPLE" "$mnt" 2>&1)
eq "dead mount point: exit 5" "$?" 5
check "dead mount point: says so and how to clear it" \
	grep -q "dead mount.*fusermount3 -u $mnt" <<<"$err"
fusermount3 -u "$mnt"
finish
