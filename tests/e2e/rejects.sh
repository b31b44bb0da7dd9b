#!/usr/bin/env bash
# Every reject fixture is refused with exit 2 or 3 and ONE line on stderr that
# names the file and a byte offset; every valid fixture loads.  Also that a
# refused container never leaves a mount behind.
. "$(dirname "$0")/lib.sh"

shopt -s nullglob
# tests/fixtures/<name>/ of a generic parser (src/parse/<name>.c: zip,
# pickle) holds inputs of that parser, not containers
parser_input() {
	local dir=${1%/*/*}
	[ -f "$TFS_SOURCE_ROOT/src/parse/${dir##*/}.c" ]
}
n=0
for f in "${TFS_TESTDATA:?}"/*/reject/*; do
	# expected.json describes its folder, as in ../shared/fixtures
	case "$f" in *.py | *.md | */expected.json) continue ;; esac
	parser_input "$f" && continue
	n=$((n + 1))
	"$TENSORFS" info "$f" >/dev/null 2>"$WORK/err"
	rc=$?
	lines=$(wc -l <"$WORK/err")
	if [ "$rc" -ne 2 ] && [ "$rc" -ne 3 ]; then
		fail "$f: exit $rc, want 2 or 3"
	elif [ "$lines" -ne 1 ]; then
		fail "$f: $lines lines on stderr, want 1"
	elif ! grep -qF -- "$f" "$WORK/err" || ! grep -q 'byte offset [0-9]' "$WORK/err"; then
		fail "$f: message lacks the file or the offset: $(cat "$WORK/err")"
	fi
done
ok "$n reject fixtures refused with one line naming file and offset"

n=0
for f in "$TFS_TESTDATA"/*/valid/*; do
	# expected.json describes its folder, as in ../shared/fixtures
	case "$f" in *.py | *.md | */expected.json) continue ;; esac
	parser_input "$f" && continue
	n=$((n + 1))
	"$TENSORFS" info "$f" >/dev/null 2>"$WORK/err" || fail "$f: $(cat "$WORK/err")"
done
ok "$n valid fixtures load"

# a refused container fails the mount itself and leaves nothing mounted
if [ -e /dev/fuse ] && command -v fusermount3 >/dev/null; then
	mnt=$(mktemp -d "$WORK/mnt.XXXXXX")
	head -c 240 "$SAMPLE" >"$WORK/truncated.zt"
	"$TENSORFS" "$WORK/truncated.zt" "$mnt" 2>"$WORK/err"
	eq "mount of a bad container exits 2" "$?" 2
	check "its message is one line naming the file" \
		test "$(wc -l <"$WORK/err")" -eq 1 -a -n "$(grep -F "$WORK/truncated.zt" "$WORK/err")"
	check "no mount is left behind" bash -c "! mountpoint -q '$mnt'"
	check "no daemon is left behind" bash -c "! pgrep -f -- ' $mnt\$' >/dev/null"
fi
finish
