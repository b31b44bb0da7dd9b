#!/usr/bin/env bash
# Container bytes in messages (issue 22): names and strings holding a
# newline, ESC, BEL, DEL or a C1 control never reach the terminal raw.
# A refused container is one printable line; ls, info, verify and stats of
# a valid one print no control byte but the layout's newlines, and ls still
# lists every tensor on a line of its own.
. "$(dirname "$0")/lib.sh"

python3 "$(dirname "$0")/escaper.py" "$WORK" || { fail "generate"; finish; }

# no byte below 0x20 but '\n', no DEL, no C1 control (UTF-8 C2 80..9F)
printable() {
	python3 -c '
import re, sys
b = sys.stdin.buffer.read()
sys.exit(1 if re.search(rb"[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]", b) else 0)'
}

for f in "$WORK"/reject/*; do
	n=${f##*/}
	"$TENSORFS" info "$f" >"$WORK/out" 2>"$WORK/err"
	eq "$n: refused as malformed" "$?" 2
	eq "$n: one line on stderr" "$(wc -l <"$WORK/err")" 1
	check "$n: the line is printable" printable <"$WORK/err"
	check "$n: the line names the byte offset" \
		grep -q "at byte offset [0-9]" "$WORK/err"
done

for f in "$WORK"/valid/*; do
	n=${f##*/}
	tensors=$("$TENSORFS" ls --paths "$f" | wc -l)
	want=$(python3 -c '
import json, subprocess, sys
m = subprocess.run([sys.argv[1], "cat", sys.argv[2],
                    ".tensorfs/manifest.json"], capture_output=True).stdout
print(len(json.loads(m)["tensors"]))' "$TENSORFS" "$f")
	eq "$n: ls prints one line per tensor" "$tensors" "$want"
	for cmd in "ls" "ls --paths" "info" "verify" "stats" "xattr"; do
		# shellcheck disable=SC2086 # cmd is a subcommand and its option
		"$TENSORFS" $cmd "$f" >"$WORK/out" 2>&1
		check "$n: $cmd prints no control byte" printable <"$WORK/out"
	done
done
finish
