#!/usr/bin/env bash
# zTensor 2.x through real mounts: every file of the conformance corpus that
# opens (../shared/fixtures/ztensor-v2) and every valid file of
# tests/fixtures/ztensor2 is mounted and each part compared with the bytes
# expected.json lists (ztensor2_check.py); rejects are refused before
# mounting with the rule's name; `tensorfs verify` exits 2 exactly for the
# files whose content breaks a rule.  The corpus is real (upstream's): its
# cases skip one by one without ../shared; tests/fixtures/ztensor2 runs
# either way.
. "$(dirname "$0")/lib.sh"
need_fuse

CHECK="$(dirname "$0")/ztensor2_check.py"
# DIR: each file of DIR/{valid,reject,read_eio} with its case in
# DIR/expected.json
walk() {
	local dir=$1 f rel opens expect op rule mnt want
	for f in "$dir"/valid/*.zt "$dir"/reject/*.zt "$dir"/read_eio/*.zt; do
		[ -f "$f" ] || continue
		rel=${f#"$dir"/}
		read -r opens expect op rule < <(python3 -c '
import json, sys
c = [c for c in json.load(open(sys.argv[1]))["cases"] if c["file"] == sys.argv[2]][0]
print(int(c["opens"]), c["expect"], c["operation"], c.get("rule"))' "$dir/expected.json" "$rel")
		if [ "$opens" = 0 ]; then
			mnt=$(mktemp -d "$WORK/mnt.XXXXXX")
			if "$TENSORFS" "$f" "$mnt" >"$WORK/out" 2>&1; then
				MOUNTS+=("$mnt")
				fail "$rel: mounted, expected a refusal"
			else
				ok "$rel: refused ($(head -c 120 "$WORK/out"))"
			fi
			# too short or another magic: no reader claims it,
			# so no zTensor rule is named
			case "$rule" in None | FileTooSmall | HeaderMagic) continue ;; esac
			check "$rel: the refusal names $rule" \
					grep -q -- "$rule" "$WORK/out"
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
shared_case "the conformance corpus" ztensor-v2/expected.json &&
	walk "$TFS_FIXTURES/ztensor-v2"
walk "$TFS_TESTDATA/ztensor2"

# the rule named by a refusal: one line, exit 2
# FILE RULE
refusal() {
	"$TENSORFS" info "$1" >"$WORK/info.out" 2>&1
	eq "a reject exits 2" "$?" 2
	eq "on one line" "$(wc -l <"$WORK/info.out")" 1
	check "the refusal names the rule $2" grep -q "$2" "$WORK/info.out"
}
shared_case "corpus refusal" ztensor-v2/reject/blob-partial-overlap.zt &&
	refusal "$TFS_FIXTURES/ztensor-v2/reject/blob-partial-overlap.zt" BlobOverlap
refusal "$TFS_TESTDATA/ztensor2/reject/blob-end-wraps.zt" BlobBounds

# root xattrs and the metadata of a 2.x mount
# FILE NEG ATTRIBUTES_JSON
attributes() {
	M=$(mount_container "$1") || { fail "mount $1"; return; }
	eq "format xattr" "$(getfattr --only-values -n user.tensorfs.format "$M")" ztensor
	eq "version xattr" \
		"$(getfattr --only-values -n user.tensorfs.ztensor.version "$M")" 2
	eq "a small attribute as xattr" \
		"$(getfattr --only-values -n user.tensorfs.attr.neg "$M")" "$2"
	check "attributes in metadata.json" python3 -c '
import json, sys
a = json.load(open(sys.argv[1]))["attributes"]
sys.exit(a != json.loads(sys.argv[2]))' "$M/.tensorfs/metadata.json" "$3"
	unmount "$M"
}
shared_case "corpus attributes" ztensor-v2/valid/attributes-kitchen-sink.zt &&
	attributes "$TFS_FIXTURES/ztensor-v2/valid/attributes-kitchen-sink.zt" -42 \
		'{"neg": -42, "raw": "000102", "float": 1.25, "nested": [null, true]}'
# generate.py's attributes.zt: what its expected.json says it wrote (byte
# strings there are {"bytes": hex}, in metadata.json the hex text)
attributes "$TFS_TESTDATA/ztensor2/valid/attributes.zt" -7 "$(python3 -c '
import json, sys
def text(v):
    if isinstance(v, dict):
        return v["bytes"] if list(v) == ["bytes"] else {
            k: text(x) for k, x in v.items()}
    return [text(x) for x in v] if isinstance(v, list) else v
c = [c for c in json.load(open(sys.argv[1]))["cases"]
     if c["file"] == "valid/attributes.zt"][0]
print(json.dumps(text(c["attributes"])))' "$TFS_TESTDATA/ztensor2/expected.json")"
finish
