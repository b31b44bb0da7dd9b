#!/usr/bin/env bash
# What a first and a second `ls -lR` ask the daemon, counted in its debug
# log (-f -d): directories are never opened (FUSE_CAP_NO_OPENDIR_SUPPORT:
# at most the one OPENDIR that teaches the kernel so), READDIRPLUS answers
# the lookups (no LOOKUP), and `ls -l`'s security.selinux and POSIX ACL
# questions are answered "not supported" once per filesystem, not once per
# file.  Before: 3 GETXATTR and 2 open/release requests per entry.
# Measured with -o no_auto_unmount: by default (auto_unmount) directories
# are opened through the daemon again, so that fusermount3 can see a dead
# mount (an OPENDIR and a RELEASEDIR per directory open: checked below to
# pair up, the rest as here).
. "$(dirname "$0")/lib.sh"
need_fuse

python3 "$TFS_SOURCE_ROOT/tools/make_sample.py" --many 2000 16 "$WORK/many.zt" 50
M=$(mktemp -d "$WORK/mnt.XXXXXX")
"$TENSORFS" -f -d -o no_auto_unmount "$WORK/many.zt" "$M" \
	2>"$WORK/debug.log" &
pid=$!
for _ in $(seq 100); do mountpoint -q "$M" && break; sleep 0.1; done
MOUNTS+=("$M")
entries=$(ls -lR "$M" | grep -c '^[-d]')
ls -lR "$M" >/dev/null
getfattr -n security.selinux "$M/block/0/t0" >/dev/null 2>"$WORK/err"
check "security.selinux: not supported" grep -qi "not supported" "$WORK/err"
eq "user.tensorfs.dtype still there" \
	"$(getfattr --only-values -n user.tensorfs.dtype "$M/block/0/t0")" uint8
fusermount3 -u "$M"
wait "$pid"
count() { grep -c "opcode: $1 " "$WORK/debug.log"; }
echo "$entries entries; requests:"
grep -o 'opcode: [A-Z_]*' "$WORK/debug.log" | sort | uniq -c | sort -rn
check "at most one OPENDIR ($(count OPENDIR))" test "$(count OPENDIR)" -le 1
eq "no RELEASEDIR" "$(count RELEASEDIR)" 0
eq "no LOOKUP" "$(count LOOKUP)" 0
# two ls -lR over 2,000 files: a handful of getxattr in all (was 6,000+)
check "GETXATTR a few times, not per file ($(count GETXATTR))" \
	test "$(count GETXATTR)" -le 10
check "READDIRPLUS about twice per directory ($(count READDIRPLUS) for 52)" \
	test "$(count READDIRPLUS)" -le 110

# the default mount: every directory open is released, no LOOKUP either
"$TENSORFS" -f -d "$WORK/many.zt" "$M" 2>"$WORK/debug.log" &
pid=$!
for _ in $(seq 100); do mountpoint -q "$M" && break; sleep 0.1; done
ls -lR "$M" >/dev/null
ls -lR "$M" >/dev/null
fusermount3 -u "$M"
wait "$pid"
check "auto_unmount: one OPENDIR a directory open ($(count OPENDIR) for 2 x 52)" \
	test "$(count OPENDIR)" -le 106
eq "auto_unmount: every OPENDIR released" "$(count RELEASEDIR)" "$(count OPENDIR)"
eq "auto_unmount: no LOOKUP" "$(count LOOKUP)" 0
finish
