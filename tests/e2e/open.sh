#!/usr/bin/env bash
# -o idle_timeout= and tensorfs open (issue 41, docs/desktop.md): a mount
# with idle_timeout=2 unmounts itself and its daemon ends when no request
# came for 2 s, but not while a file is open; tensorfs open mounts under
# $XDG_RUNTIME_DIR/tensorfs/NAME with previews, prints the mount point and
# runs xdg-open on it (a stub on PATH records it), reuses a live mount of
# the same file, mounts a shard's directory; --list shows them, --close
# NAME and --close (all) unmount them and remove their directories.
. "$(dirname "$0")/lib.sh"
need_fuse

# gone_by_itself MOUNTPOINT: yes when it is unmounted within 8 s
gone_by_itself() {
	local _
	for _ in 1 2 3 4 5 6 7 8; do
		sleep 1
		mountpoint -q "$1" || { echo yes; return; }
	done
	echo no
}

# idle_timeout on a plain mount
M=$(mount_container "$SAMPLE" -o idle_timeout=2) || exit 1
pid=$(daemon_pid "$M")
exec 3<"$M/embed/weight"
sleep 4
check "an open file keeps an idle mount" mountpoint -q "$M"
exec 3<&-
eq "idle for 2 s: unmounted by itself" "$(gone_by_itself "$M")" yes
for _ in 1 2 3 4 5; do running "$pid" || break; sleep 1; done
check "its daemon was found" test -n "$pid"
if running "$pid"; then fail "its daemon ended"; else ok "its daemon ended"; fi
out=$("$TENSORFS" -o idle_timeout=soon "$SAMPLE" "$WORK" 2>&1)
eq "idle_timeout=soon refused" "$?:$out" \
	"1:tensorfs: idle_timeout=soon: expected seconds, 0 to 31536000 (0: never)"

# tensorfs open, xdg-open a stub
export XDG_RUNTIME_DIR=$WORK/run
mkdir -m 700 "$XDG_RUNTIME_DIR" "$WORK/bin"
printf '#!/bin/sh\nprintf "%%s\\n" "$*" >>"%s/opened"\n' "$WORK" \
	>"$WORK/bin/xdg-open"
chmod +x "$WORK/bin/xdg-open"
export PATH="$WORK/bin:$PATH"
BASE=$XDG_RUNTIME_DIR/tensorfs
cp "$SAMPLE" "$WORK/model.zt"
got=$("$TENSORFS" open "$WORK/model.zt")
eq "open prints the mount point" "$?:$got" "0:$BASE/model.zt"
MOUNTS+=("$BASE/model.zt")
eq "xdg-open ran on it" "$(cat "$WORK/opened")" "$BASE/model.zt"
check "mounted with previews" test -f "$BASE/model.zt/embed/weight.png"
eq "the tensor's bytes" "$(sha "$BASE/model.zt/embed/weight")" \
	"$("$TENSORFS" cat "$SAMPLE" embed.weight | sha256sum | cut -d' ' -f1)"
got=$(cd "$WORK" && "$TENSORFS" open model.zt)
eq "a second open reuses the live mount" "$got" "$BASE/model.zt"
eq "one mount of it" "$(grep -c " $BASE/model.zt " /proc/self/mountinfo)" 1
# a shard: its directory, the whole model
mkdir "$WORK/sharded"
cp "$SAMPLE" "$WORK/sharded/model-00001-of-00002.zt"
got=$("$TENSORFS" open "$WORK/sharded/model-00001-of-00002.zt")
eq "a shard opens its directory" "$got" "$BASE/sharded"
MOUNTS+=("$BASE/sharded")
eq "--list" "$("$TENSORFS" open --list | sort)" \
	"$(printf '%s\t%s\n%s\t%s' "$BASE/model.zt" "$WORK/model.zt" \
		"$BASE/sharded" "$WORK/sharded")"
check "--close NAME" "$TENSORFS" open --close sharded
check "it is unmounted and its directory gone" test ! -e "$BASE/sharded"
out=$("$TENSORFS" open --close sharded 2>&1)
eq "--close of what is not open: exit 6" "$?:$out" \
	"6:tensorfs open: sharded: not open"
check "--close" "$TENSORFS" open --close
eq "nothing left" "$(ls "$BASE")" ""
eq "--list: nothing" "$("$TENSORFS" open --list)" ""
# the mount's own idle_timeout, and the default
"$TENSORFS" open -o idle_timeout=1 "$WORK/model.zt" >/dev/null
eq "open -o idle_timeout=1: gone by itself" \
	"$(gone_by_itself "$BASE/model.zt")" yes
rmdir "$BASE/model.zt" 2>/dev/null
out=$(env -u XDG_RUNTIME_DIR "$TENSORFS" open "$WORK/model.zt" 2>&1)
eq "no XDG_RUNTIME_DIR: refused" "$?:$out" \
	"1:tensorfs open: XDG_RUNTIME_DIR is not set (a login session sets it)"
finish
