#!/usr/bin/env bash
# scripts/test ends with one line saying how many tests were skipped and
# why: scripts/skipped reads meson's testlog.json (here a synthetic one, in
# meson's format: one JSON object per line) and scripts/test prints it last.
. "$(dirname "$0")/lib.sh"
S=$TFS_SOURCE_ROOT/scripts/skipped

cat >"$WORK/log.json" <<'JSON'
{"name": "tensorfs:unit / cursor", "result": "OK", "stdout": "", "stderr": ""}
{"name": "tensorfs:e2e / e2e-remote", "result": "SKIP", "stdout": "SKIP: built without remote support (libcurl)\n", "stderr": ""}
{"name": "tensorfs:e2e / e2e-npy", "result": "SKIP", "stdout": "ok: x\n", "stderr": "SKIP: Debian's python3-numpy is not installed\n"}
{"name": "tensorfs:unit / gguf", "result": "SKIP", "stdout": "", "stderr": ""}
{"name": "tensorfs:e2e / e2e-cli", "result": "FAIL", "stdout": "SKIP: not this one\n", "stderr": ""}
JSON
eq "three skipped, each with its reason, in one line" "$("$S" "$WORK/log.json")" \
	"3 skipped: e2e-remote (built without remote support (libcurl)); e2e-npy (Debian's python3-numpy is not installed); gguf (no reason given)"
grep -v SKIP "$WORK/log.json" >"$WORK/none.json"
eq "none skipped" "$("$S" "$WORK/none.json")" "0 skipped"
"$S" "$WORK/missing.json" >/dev/null 2>&1
eq "an unreadable log: exit 1" "$?" 1
check "scripts/test prints it last" \
	grep -q 'scripts/skipped "$BUILD/meson-logs/testlog.json"' \
	"$TFS_SOURCE_ROOT/scripts/test"
finish
