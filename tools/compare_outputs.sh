#!/usr/bin/env bash
# What a tensorfs binary says of every fixture, one file per fixture, so
# that two binaries (before and after a change) can be compared with
# `diff -r`: info (less its file line), manifest.json, metadata.json, the
# root's xattrs, every tensor's bytes (sha256) and xattrs, and verify.
#
#   tools/compare_outputs.sh BIN OUTDIR [DIR...]
#
# DIR defaults to ../shared/fixtures and tests/fixtures.  Used for the
# round-3 core change: 920 files, the 8c31f30 binary against the new one.
# tools/ab_compare.sh compares two binaries over more (mounts and their
# views, directories, the fuzz corpus) in less time.
set -uo pipefail
BIN=$1 OUT=$2
shift 2
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -gt 0 ] || set -- "$root/../shared/fixtures" "$root/tests/fixtures"
mkdir -p "$OUT"
find "$@" -type f ! -name '*.py' ! -name '*.json' ! -name '*.md' \
	! -name LICENSE | sort | while read -r f; do
	key=$(echo "$f" | sed 's|/|_|g')
	{
		echo "== info"
		"$BIN" info "$f" 2>&1 | grep -v '^file:'
		"$BIN" ls --paths "$f" >/dev/null 2>&1 || {
			echo "refused rc=$?"
			continue
		}
		echo "== manifest"
		"$BIN" cat "$f" .tensorfs/manifest.json 2>&1
		echo "== metadata"
		"$BIN" cat "$f" .tensorfs/metadata.json 2>&1
		echo "== root xattrs"
		"$BIN" xattr "$f" 2>&1
		python3 - "$BIN" "$f" <<'PY'
import hashlib, json, subprocess, sys
b, f = sys.argv[1], sys.argv[2]
m = json.loads(subprocess.run([b, "cat", f, ".tensorfs/manifest.json"],
                              capture_output=True).stdout)
for t in m["tensors"]:
    r = subprocess.run([b, "cat", f, t["path"]], capture_output=True)
    x = subprocess.run([b, "xattr", f, t["path"]], capture_output=True)
    print(t["path"], r.returncode, hashlib.sha256(r.stdout).hexdigest())
    sys.stdout.write(x.stdout.decode("utf-8", "replace"))
PY
		echo "== verify"
		"$BIN" verify "$f" 2>&1 | tail -n 3
		echo "rc=$?"
	} >"$OUT/$key" 2>&1
done
