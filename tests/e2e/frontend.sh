#!/usr/bin/env bash
# The command line a new user meets: short usage, versions, subcommand
# help, mountpoint checks (a file, an existing mount), quiet foreground
# runs, several files in one mount, scripts/run cleaning up after a refusal.
. "$(dirname "$0")/lib.sh"

"$TENSORFS" >"$WORK/out" 2>"$WORK/err"
eq "no argument: exit 1" "$?" 1
check "a short usage, not the whole help" test "$(wc -l <"$WORK/err")" -le 4
check "pointing to --help" grep -q -- "--help" "$WORK/err"

eq "-V: tensorfs first" "$("$TENSORFS" -V | head -n 1)" "tensorfs $("$TENSORFS" --version | awk 'NR == 1 { print $2 }')"
check "-V prints no fusermount line" sh -c "! '$TENSORFS' -V | grep -q fusermount"
for cmd in ls cat info xattr verify; do
	"$TENSORFS" "$cmd" --help >"$WORK/out" 2>&1
	eq "$cmd --help: exit 0" "$?" 0
	check "$cmd --help prints its usage" grep -q "^usage: tensorfs $cmd " "$WORK/out"
done
"$TENSORFS" ls --bogus "$SAMPLE" >/dev/null 2>&1
eq "an unknown option: exit 1" "$?" 1

need_fuse
# a regular file as the mountpoint: exit 5, nothing mounted
touch "$WORK/file.txt"
"$TENSORFS" "$SAMPLE" "$WORK/file.txt" 2>"$WORK/err"
eq "mount onto a file: exit 5" "$?" 5
check "says it is not a directory" grep -q "not a directory" "$WORK/err"
check "nothing mounted there" sh -c "! grep -q ' $WORK/file.txt ' /proc/self/mountinfo"

# mounting twice onto one mountpoint is refused
M=$(mount_container "$SAMPLE") || fail "mount"
"$TENSORFS" "$SAMPLE" "$M" 2>"$WORK/err"
eq "a second mount on a mount point: exit 5" "$?" 5
check "says unmount it first" grep -q "already a mount point; unmount it first" "$WORK/err"
eq "one mount only" "$(grep -c " $M " /proc/self/mountinfo)" 1
unmount "$M"

# -f in the foreground prints nothing of libfuse's (no max-threads noise)
F=$(mktemp -d "$WORK/mnt.XXXXXX")
"$TENSORFS" -f "$SAMPLE" "$F" 2>"$WORK/ferr" &
fpid=$!
for _ in $(seq 50); do mountpoint -q "$F" && break; sleep 0.1; done
check "-f mounts" mountpoint -q "$F"
unmount "$F"
wait "$fpid"
eq "-f exits 0 after unmount" "$?" 0
eq "-f printed nothing" "$(cat "$WORK/ferr")" ""

# several files in one mount: a directory each
cp "$SAMPLE" "$WORK/one.zt"
cp "$TFS_TESTDATA/tsr/valid/int8_4d.tsr" "$WORK/two.tsr"
M=$(mount_container "$WORK/one.zt" "$WORK/two.tsr") || fail "mount two files"
eq "two files, two directories" "$(ls "$M" | tr '\n' ' ')" "one two "
check "bytes of a tensor of each" cmp -s "$M/two/tensor" <("$TENSORFS" cat "$WORK/two.tsr" tensor)
unmount "$M"
"$TENSORFS" "$WORK/one.zt" "$WORK/no-such.zt" "$(mktemp -d "$WORK/mnt.XXXXXX")" 2>"$WORK/err"
eq "one missing file of several: exit 4" "$?" 4
check "naming it" grep -q "no-such.zt" "$WORK/err"
# a refused file of several: the message names it (not the first), once
cp "$TFS_TESTDATA/tflite/reject/version_2.tflite" "$WORK/bad.tflite"
"$TENSORFS" "$WORK/one.zt" "$WORK/bad.tflite" "$(mktemp -d "$WORK/mnt.XXXXXX")" 2>"$WORK/err"
eq "a refused file of several: exit 3" "$?" 3
eq "named first, once" "$(grep -o 'bad\.tflite' "$WORK/err" | wc -l) $(grep -c one.zt "$WORK/err")" "1 0"
check "as given, then the reader" grep -q "^tensorfs: $WORK/bad.tflite: tflite: Model.version" "$WORK/err"
(cd "$WORK" && "$TENSORFS" ls one.zt bad.tflite >/dev/null 2>"$WORK/err")
eq "ls of both: the message" "$(cat "$WORK/err")" \
	"tensorfs: bad.tflite: tflite: Model.version: 2, only schema version 3 is supported (at byte offset 28)"

# scripts/run on an unsupported file leaves no directory behind
printf 'not a container at all\n' >"$WORK/junk.bin"
mkdir -p "$WORK/runtmp"
TENSORFS="$TENSORFS" TMPDIR="$WORK/runtmp" "$TFS_SOURCE_ROOT/scripts/run" "$WORK/junk.bin" >/dev/null 2>&1
check "scripts/run fails on junk" test "$?" -ne 0
check "and leaves no directory" test ! -e "$WORK/runtmp/tensorfs-junk.bin"
finish
