#!/usr/bin/env bash
# OpenVINO IR, really mounted: our tiny_mlp.xml (tests/fixtures/openvino/
# generate.py) and, when ../shared is there, the shared fixture's (each
# with its .bin beside it), every Const file compared byte for byte with
# its range of the .bin and with expected.json's sha256, dtype and shape;
# the directory holding the pair (the .bin is no container); the .xml
# without its .bin (mounts, those files EIO); every reject refused with
# one line naming the file, the field and the byte offset; tensorfs info.
. "$(dirname "$0")/lib.sh"
need_fuse

# every Const of expected.json: bytes (the .bin's range and sha256), dtype,
# shape and layer id, through the path manifest.json gives it
compare() { # MOUNT KEY [PREFIX]
	python3 - "$F/expected.json" "$2" "$F" "$1" "${3:-}" <<'PY'
import hashlib, json, os, sys
exp, key, fx, mnt, pre = sys.argv[1:6]
e = json.load(open(exp))
v = e['valid'][key]
dmap = e['conventions']['dtype_map']
man = json.load(open(os.path.join(mnt, pre, '.tensorfs/manifest.json')))
paths = {t['name']: t['path'] for t in man['tensors']}
blob = open(os.path.join(fx, v['bin']), 'rb').read()
bad = []
for c in v['consts']:
    p = os.path.join(mnt, pre, paths[c['name']])
    got = open(p, 'rb').read()
    want = blob[c['offset']:c['offset'] + c['size']]
    if got != want or hashlib.sha256(got).hexdigest() != c['sha256']:
        bad.append(c['name'] + ': bytes')
    x = lambda k: os.getxattr(p, 'user.tensorfs.' + k).decode()
    if x('dtype') != dmap[c['element_type']]:
        bad.append(c['name'] + ': dtype ' + x('dtype'))
    if json.loads(x('shape')) != c['shape']:
        bad.append(c['name'] + ': shape ' + x('shape'))
    if x('openvino.layer_id') != str(c['layer_id']):
        bad.append(c['name'] + ': layer id')
meta = json.load(open(os.path.join(mnt, pre, '.tensorfs/metadata.json')))
if meta['decompression'] != v['decompression']:
    bad.append('decompression chains')
print('%d consts' % len(v['consts']) if not bad else ', '.join(bad))
sys.exit(1 if bad else 0)
PY
}

# suite DIR XML: DIR/XML (+ .bin) as DIR/expected.json says, DIR/reject
suite() {
	F=$1 X=$1/$2 B=$1/${2%.xml}.bin
	M=$(mount_container "$X") || fail "mount $2"
	if [ -n "${M:-}" ]; then
		out=$(compare "$M" "$2")
		check "$2: $out" test $? -eq 0
		eq "packed u1: its bit order said" \
			"$(getfattr --absolute-names --only-values -n user.tensorfs.openvino.packing "$M/misc/u1")" \
			"element 0 in the most significant bit"
		eq "packed u4: packed_bits" \
			"$(getfattr --absolute-names --only-values -n user.tensorfs.packed_bits "$M/misc/u4")" 4
		unmount "$M"
	fi

	# the directory holding model.xml and model.bin: one directory, the .bin
	# no container of its own
	mkdir -p "$WORK/ir"
	cp "$X" "$WORK/ir/model.xml"
	cp "$B" "$WORK/ir/model.bin"
	M=$(mount_container "$WORK/ir") || fail "mount the model's directory"
	if [ -n "${M:-}" ]; then
		check "directory: model.xml is the directory 'model'" test -d "$M/model"
		eq "directory: nothing else" "$(ls "$M")" model
		check "directory: bytes served" cmp -s "$M/model/fc1/weight" \
			<(head -c 48 "$B")
		check "directory: fc3 zero point" cmp -s "$M/model/fc3/weight/zero_point" \
			<(tail -c +89 "$B" | head -c 1)
		unmount "$M"
	fi

	# the .bin missing: the model mounts, its Consts fail with EIO
	mkdir -p "$WORK/lonely"
	cp "$X" "$WORK/lonely/model.xml"
	M=$(mount_container "$WORK/lonely/model.xml") || fail "mount without the .bin"
	if [ -n "${M:-}" ]; then
		check "missing .bin: EIO" sh -c "! cat '$M/fc1/weight' >/dev/null 2>&1"
		check "missing .bin: listed with its size" test "$(stat -c %s "$M/fc1/weight")" = 48
		check "missing .bin: the reason names it" \
			sh -c "getfattr --absolute-names --only-values -n user.tensorfs.unreadable '$M/fc1/weight' | grep -q 'model.bin'"
		check "missing .bin: metadata still there" \
			grep -q '"ir_version": 11' "$M/.tensorfs/metadata.json"
		unmount "$M"
	fi
	"$TENSORFS" verify "$WORK/lonely/model.xml" >"$WORK/verify.out" 2>&1
	eq "verify without the .bin exits 2" "$?" 2

	# every reject: refused, one line with the file, the field and an offset
	declare -A FIELD=([const_past_bin]="data offset 156" [size_mismatch]="data size 44"
		[xxe]="DOCTYPE" [billion_laughs]="DOCTYPE"
		[bad_element_type]="element_type 'string'" [negative_dim]="shape '4,-3'")
	for f in "$F"/reject/*.xml; do
		name=$(basename "$f" .xml)
		mnt=$(mktemp -d "$WORK/mnt.XXXXXX")
		if "$TENSORFS" "$f" "$mnt" >"$WORK/rej.out" 2>&1; then
			MOUNTS+=("$mnt")
			fail "$name: mounted"
			continue
		fi
		lines=$(wc -l <"$WORK/rej.out")
		check "$name: one line naming file, field and offset" \
			sh -c "[ $lines -eq 1 ] && grep -q -- \"$f: openvino: .*${FIELD[$name]}.*(at byte offset [0-9]*)\" '$WORK/rej.out'"
	done

	# tensorfs info: format, IR version, parameters
	"$TENSORFS" info "$X" >"$WORK/info.out"
	check "info: format" grep -q '^format: *openvino' "$WORK/info.out"
	check "info: IR version" grep -q '^ir_version: *11' "$WORK/info.out"
	check "info: layers" grep -q '^layers: *26 (13 Const), 1 input, 1 output' "$WORK/info.out"
	# 12 + 4 + 8 + 4 + 1 + 2 + 2 + 3 + 6 + 3 + 10 + 3 + 1 elements
	check "info: parameters" grep -q '^parameters: 59$' "$WORK/info.out"
	# the metadata's summary: a line a member, counts largest first, long
	# lists cut; --full: the whole metadata.json
	check "info: layer_types largest first, cut" grep -q \
		'^  layer_types: Const 13, Convert [34], MatMul 3, .* (1 more: see metadata.json)$' "$WORK/info.out"
	check "info: 13 consts, cut" grep -q '^  consts: 13 entries, largest first: .* (5 more: see metadata.json)$' "$WORK/info.out"
	eq "info: the summary fits a screen" "$(($(wc -l <"$WORK/info.out") < 40))" 1
	"$TENSORFS" info --full "$X" >"$WORK/full.out"
	eq "info --full: the whole metadata.json" \
		"$(sed -n '/^metadata: /,$p' "$WORK/full.out" | sed '1s/^metadata: //' | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin), sort_keys=True))')" \
		"$("$TENSORFS" cat "$X" .tensorfs/metadata.json | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin), sort_keys=True))')"
	# two Consts of one range (the converter deduplicates constants):
	# "shared constants", not "tied weights"
	mkdir -p "$WORK/dedup"
	sed 's/shape="2,4" offset="64"/shape="2,4" offset="48"/' "$X" >"$WORK/dedup/m.xml"
	cp "${X%.xml}.bin" "$WORK/dedup/m.bin"
	check "info: shared constants" grep -q \
		'^shared: *2 tensors share 1 stored range (shared constants): counted once$' \
		<<<"$("$TENSORFS" info "$WORK/dedup/m.xml")"
}

suite "$TFS_TESTDATA/openvino" model/tiny_mlp.xml
if shared_case "../shared's tiny_mlp.xml" openvino-ir/expected.json; then
	suite "$TFS_FIXTURES/openvino-ir" tiny_mlp.xml
fi
finish
