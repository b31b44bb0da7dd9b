#!/usr/bin/env bash
# A remote mount by an unprivileged user (issue 30): the daemon then gets a
# user-mode-only userfaultfd (unprivileged userfaultfd is off on Debian), so
# every byte a FUSE reply copies must be fetched before the reply
# (docs/remote.md).  As `nobody`: mount a served container over HTTP on
# loopback, read every tensor, compare with the local file's bytes, and
# unmount with fusermount3; the daemon must not die of a fault.
. "$(dirname "$0")/lib.sh"
need_fuse
if ! "$TENSORFS" --help | grep -q remote_timeout; then
	echo "SKIP: built without remote support (libcurl)"
	exit 77
fi
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
	echo "SKIP: needs root (to become nobody) and setpriv"
	exit 77
fi
as_nobody() {
	setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=-all \
		--reset-env "$@"
}
if ! as_nobody test -x "$TENSORFS"; then
	echo "SKIP: nobody cannot run $TENSORFS (a directory on its path is private)"
	exit 77
fi

SERVED=$WORK/served
mkdir -p "$SERVED"
# 4 MiB of one tensor and the manifest at the end: a mount fetches a few
# 256 KiB chunks, not the object (which is what a daemon without any
# userfaultfd would have to do)
python3 "$TFS_SOURCE_ROOT/tools/make_sample.py" --big 4194304 "$SERVED/m.zt"
echo '{}' >"$WORK/faults.json"
python3 "$TFS_SOURCE_ROOT/tests/remote/server.py" "$SERVED" "$WORK/port" \
	"$WORK/log" "$WORK/faults.json" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null; cleanup' EXIT
for _ in $(seq 100); do
	[ -s "$WORK/port" ] && break
	sleep 0.05
done
URL=http://127.0.0.1:$(cat "$WORK/port")/m.zt

chmod 755 "$WORK"
mnt=$WORK/nobody-mnt
mkdir -p "$mnt"
chown nobody:nogroup "$mnt"
# Some machines keep /dev/fuse root-only (0600; distributions ship 0666):
# opened for the mount only, then the mode goes back at once (the daemon
# keeps its descriptor)
fuse_mode=$(stat -c %a /dev/fuse)
if ! as_nobody test -r /dev/fuse -a -w /dev/fuse; then
	trap 'chmod "$fuse_mode" /dev/fuse; kill $SERVER 2>/dev/null;
		wait $SERVER 2>/dev/null; cleanup' EXIT
	chmod 0666 /dev/fuse
fi
as_nobody "$TENSORFS" "$URL" "$mnt" -o no_cache,remote_prefetch=0 \
	>"$WORK/mount.out" 2>&1
st=$?
chmod "$fuse_mode" /dev/fuse
if [ "$st" -ne 0 ]; then
	fail "nobody's mount failed: $(head -c 300 "$WORK/mount.out")"
	finish
fi
ok "nobody mounted $URL"
fetched=$(awk '$3 == 206 { split($4, r, "-"); s += r[2] - r[1] + 1 }
	END { print s + 0 }' "$WORK/log")
check "the mount fetched a part of the object ($fetched bytes), not all" \
	test "$fetched" -lt $((4194304 / 2))
pid=$(pgrep -u nobody -f "tensorfs $URL" | head -n 1)
n=0
while read -r path; do
	if cmp -s <(as_nobody cat "$mnt/$path") <("$TENSORFS" cat \
		"$SERVED/m.zt" "$path"); then
		n=$((n + 1))
	else
		fail "$path: other bytes read by nobody"
	fi
done < <("$TENSORFS" ls --paths "$SERVED/m.zt" | awk '{ print $NF }')
check "nobody read every tensor ($n), byte for byte" test "$n" -gt 0
check "the daemon is still alive" running "$pid"
as_nobody fusermount3 -u "$mnt" && ok "nobody unmounted" ||
	fail "nobody's unmount"
for _ in $(seq 100); do
	running "$pid" || break
	sleep 0.05
done
check "the daemon ended" eval "! running $pid"
finish
