#!/usr/bin/env bash
# TFLite, really mounted: every model of our generator
# (tests/fixtures/tflite/valid.tsv) and, when ../shared is there, of the
# shared fixtures (real converter output and synthesized edge cases);
# every constant tensor's file is compared with the bytes at the offset
# valid.tsv or expected.json states (written by our generator, or the
# fixtures' independent verify.py), and with its sha256; dtype, shape and
# quantization xattrs; as many files as constants; metadata.json.  Then
# our generator's clash model (paths with @<index>, a %-escaped empty
# component), info, and the refusals (one line, the field, the offset).
. "$(dirname "$0")/lib.sh"
need_fuse
FIX="$TFS_FIXTURES/tflite"
GEN="$TFS_TESTDATA/tflite"

xattr() { # NAME PATH
	getfattr --absolute-names --only-values -n "user.tensorfs.$1" "$2" 2>/dev/null
}

# one line per constant of MODEL: path, offset, nbytes, sha256, dtype,
# shape, scale (or -)
constants() {
	python3 - "$FIX/expected.json" "$1" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))["valid"][sys.argv[2]]
for t in m["tensors"]:
    if t.get("constant"):
        q = t.get("quantization", {}).get("scale")
        print("\t".join([t["path"], str(t["offset"]), str(t["nbytes"]),
                         t["sha256"], t["dtype"],
                         "[" + ",".join(map(str, t["shape"])) + "]",
                         ",".join("%.9g" % s for s in q) if q else "-"]))
EOF
}

# ours: valid.tsv's rows (file, path, dtype, shape, offset, nbytes, sha256)
for f in "$GEN"/valid/*.tflite; do
	rel=$(basename "$f")
	M=$(mount_container "$f") || { fail "mount $rel"; continue; }
	want=0 good=0
	while IFS=$'\t' read -r file path dtype shape off n sha _; do
		[ "$file" = "$rel" ] || continue
		want=$((want + 1))
		p="$M/${path/#\//%/}" bad=
		cmp -s "$p" <(tail -c +$((off + 1)) "$f" | head -c "$n") ||
			bad="bytes differ from offset $off"
		[ "$(sha "$p")" = "$sha" ] || bad="$bad sha256"
		[ "$(xattr dtype "$p")" = "$dtype" ] || bad="$bad dtype"
		[ "$(xattr shape "$p")" = "$shape" ] || bad="$bad shape"
		if [ -n "$bad" ]; then fail "$rel: $path: $bad"; else good=$((good + 1)); fi
	done <"$GEN/valid.tsv"
	check "$rel: rows in valid.tsv" test "$want" -gt 0
	eq "$rel: $want constants, every byte" "$good" "$want"
	eq "$rel: as many files" \
		"$(find "$M" -path "$M/.tensorfs" -prune -o -type f -print | wc -l)" "$want"
	eq "$rel: format" "$(xattr format "$M")" tflite
	unmount "$M"
done

shared_case "the shared models (real and synthesized)" tflite/expected.json &&
for rel in real/hello_world_float.tflite real/hello_world_int8.tflite \
	real/simple_add_model.tflite real/parse_example_tflite.tflite \
	real/saved_model_half_plus_two_tflite.tflite \
	real/saved_model_half_plus_two_tflite_with_sigdef.tflite \
	synthesized/all_types.tflite synthesized/offset_buffers.tflite \
	synthesized/sparse.tflite synthesized/minimal.tflite; do
	f="$FIX/$rel"
	M=$(mount_container "$f") || { fail "mount $rel"; continue; }
	want=0 good=0
	while IFS=$'\t' read -r path off n sha dtype shape scale; do
		want=$((want + 1))
		p="$M/$path" bad=
		cmp -s "$p" <(tail -c +$((off + 1)) "$f" | head -c "$n") ||
			bad="bytes differ from offset $off"
		[ "$(sha "$p")" = "$sha" ] || bad="$bad sha256"
		[ "$(xattr dtype "$p")" = "$dtype" ] || bad="$bad dtype"
		[ "$(xattr shape "$p")" = "$shape" ] || bad="$bad shape"
		[ "$scale" = - ] || [ "$(xattr tflite.scale "$p")" = "$scale" ] ||
			bad="$bad scale $(xattr tflite.scale "$p"), want $scale"
		if [ -n "$bad" ]; then
			fail "$rel: $path: $bad"
		else
			good=$((good + 1))
		fi
	done < <(constants "$rel")
	eq "$rel: $want constants, every byte" "$good" "$want"
	eq "$rel: as many files" \
		"$(find "$M" -path "$M/.tensorfs" -prune -o -type f -print | wc -l)" "$want"
	eq "$rel: format" "$(xattr format "$M")" tflite
	eq "$rel: metadata.json version" \
		"$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' "$M/.tensorfs/metadata.json")" 3
	unmount "$M"
done

# no constants at all: an empty tree, the activations in metadata.json
if shared_case "simple_add (no constants)" tflite/real/simple_add_model.tflite; then
	M=$(mount_container "$FIX/real/simple_add_model.tflite")
	eq "simple_add: empty root" "$(ls "$M")" ""
	eq "simple_add: three tensors listed" \
		"$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["tensors_without_data"]))' "$M/.tensorfs/metadata.json")" 3
	unmount "$M"
fi

# paths of the generator's clash model; values through numpy-free struct
M=$(mount_container "$GEN/valid/clash.tflite")
for p in a@0 a/b w w@3 w@3@6 tensor_4 x.y %/lead subgraph_1/w subgraph_2/tensor_0; do
	check "clash: $p is a file" test -f "$M/$p"
done
eq "clash: the TFLite name of w@3" "$(xattr tflite.name "$M/w@3")" w
eq "clash: the TFLite name of %/lead" "$(xattr tflite.name "$M/%/lead")" /lead
eq "clash: per-axis scales" "$(xattr tflite.scale "$M/per_axis1")" 0.5,0.25,2
eq "clash: axis" "$(xattr tflite.quantized_dimension "$M/per_axis1")" 1
check "clash: a@0 holds 1, 2" python3 -c '
import struct, sys
assert struct.unpack("<2f", open(sys.argv[1], "rb").read()) == (1, 2)' "$M/a@0"
check "clash: sparse/ext/res are not files" \
	test ! -e "$M/sparse" -a ! -e "$M/ext" -a ! -e "$M/res" -a ! -e "$M/act"
unmount "$M"

# info: format, version (in the metadata) and parameters
out=$("$TENSORFS" info "$GEN/valid/types.tflite")
check "info: format" grep -q '^format: *tflite ' <<<"$out"
check "info: parameters (3+2+4+2+3+3+2+2+1+2+2+3+2+4+1)" grep -q '^parameters: 36$' <<<"$out"
check "info: version" grep -q "^  version: 3$" <<<"$out"
if shared_case "info of hello_world_int8" tflite/real/hello_world_int8.tflite; then
	out=$("$TENSORFS" info "$FIX/real/hello_world_int8.tflite")
	check "info: format" grep -q '^format: *tflite ' <<<"$out"
	check "info: parameters (1+16+16+256+16+16)" grep -q '^parameters: 321$' <<<"$out"
	check "info: version" grep -q "^  version: 3$" <<<"$out"
fi

refused() { # PATH STATUS WORD
	local rc
	"$TENSORFS" "$1" "$(mktemp -d "$WORK/mnt.XXXXXX")" 2>"$WORK/err"
	rc=$?
	eq "$(basename "$1"): refused with $2" "$rc" "$2"
	check "$(basename "$1"): one line naming $3 and an offset" \
		test "$(wc -l <"$WORK/err")" -eq 1 -a -n "$(grep -F -- "$3" "$WORK/err" | grep 'byte offset [0-9]')"
}
for set in GEN FIX; do
	[ $set = GEN ] || shared_case "the shared rejects" tflite/reject || continue
	dir=${!set}
	refused "$dir/reject/zero_uoffset_cycle.tflite" 2 "Model.subgraphs"
	refused "$dir/reject/offset_buffer_past_eof.tflite" 2 "Buffer.offset"
	refused "$dir/reject/bad_identifier.tflite" 2 "file identifier"
done
refused "$GEN/reject/version_2.tflite" 3 "Model.version"
check "no mount left behind" sh -c "! grep -q ' $WORK/mnt' /proc/self/mountinfo"
finish
