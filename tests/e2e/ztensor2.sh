#!/usr/bin/env bash
# zTensor 2.x through real mounts: every file of the conformance corpus that
# opens (../shared/fixtures/ztensor-v2) and every valid file of
# tests/fixtures/ztensor2 is mounted and each part compared with the bytes
# expected.json lists (ztensor2_check.py); rejects are refused before
# mounting with the rule's name; `tensorfs verify` exits 2 exactly for the
# files whose content breaks a rule.
. "$(dirname "$0")/lib.sh"
need_fixtures
need_fuse

CHECK="$(dirname "$0")/ztensor2_check.py"
# DIR: each file of DIR/{valid,reject,read_eio} with its case in
# DIR/expected.json
walk() {
	local dir=$1 f rel opens expect op mnt want
	for f in "$dir"/valid/*.zt "$dir"/reject/*.zt "$dir"/read_eio/*.zt; do
		[ -f "$f" ] || continue
		rel=${f#"$dir"/}
		read -r opens expect op < <(python3 -c '
import json, sys
c = [c for c in json.load(open(sys.argv[1]))["cases"] if c["file"] == sys.argv[2]][0]
print(int(c["opens"]), c["expect"], c["operation"])' "$dir/expected.json" "$rel")
		if [ "$opens" = 0 ]; then
			mnt=$(mktemp -d "$WORK/mnt.XXXXXX")
			if "$TENSORFS" "$f" "$mnt" >"$WORK/out" 2>&1; then
				MOUNTS+=("$mnt")
				fail "$rel: mounted, expected a refusal"
			else
				ok "$rel: refused ($(head -c 120 "$WORK/out"))"
			fi
			continue
		fi
		mnt=$(mount_container "$f") || { fail "$rel: mount"; continue; }
		check "$rel: every part as listed" \
			python3 "$CHECK" "$dir/expected.json" "$rel" "$f" "$mnt"
		unmount "$mnt"
		"$TENSORFS" verify "$f" >"$WORK/verify.out" 2>&1
		got=$?
		want=0
		if [ "$expect" = reject ] ||
			cmp -s "$f" "$dir/reject/f4-nonzero-odd-nibble.zt"; then
			want=2
		fi
		eq "$rel: tensorfs verify exits $want" "$got" "$want"
	done
}
walk "$TFS_FIXTURES/ztensor-v2"
walk "$TFS_TESTDATA/ztensor2"

# the rule named by a refusal: one line, exit 2
"$TENSORFS" info "$TFS_FIXTURES/ztensor-v2/reject/blob-partial-overlap.zt" \
	>"$WORK/info.out" 2>&1
eq "a reject exits 2" "$?" 2
check "the refusal names the rule" grep -q "BlobOverlap" "$WORK/info.out"

# root xattrs and the metadata of a 2.x mount
M=$(mount_container "$TFS_FIXTURES/ztensor-v2/valid/attributes-kitchen-sink.zt") ||
	fail "mount attributes-kitchen-sink"
eq "format xattr" "$(getfattr --only-values -n user.tensorfs.format "$M")" ztensor
eq "version xattr" \
	"$(getfattr --only-values -n user.tensorfs.ztensor.version "$M")" 2
eq "a small attribute as xattr" \
	"$(getfattr --only-values -n user.tensorfs.attr.neg "$M")" -42
check "attributes in metadata.json" python3 -c '
import json, sys
a = json.load(open(sys.argv[1]))["attributes"]
sys.exit(a != {"neg": -42, "raw": "000102", "float": 1.25, "nested": [None, True]})' \
	"$M/.tensorfs/metadata.json"
unmount "$M"
finish
