#!/usr/bin/env bash
# TF.js, really mounted: every model of ours (tests/fixtures/tfjs/
# generate.py) and, when ../shared is there, of the shared fixtures (tfjs
# 4.22's own serializer; a synthesized quantized graph model with a weight
# that straddles two shard files), by model.json and by its folder; every
# weight's file compared with the bytes of its pieces in the shard files
# (expected.json, written by the fixtures' independent verify.py) and with
# its sha256; dtype, shape and quantization xattrs; optimizer state under
# optimizer/; info; and every reject refused in one line naming the field
# and the byte offset.
. "$(dirname "$0")/lib.sh"
need_fuse
OURS="$TFS_TESTDATA/tfjs"
SHARED="$TFS_FIXTURES/tfjs"

xattr() { # NAME PATH
	getfattr --absolute-names --only-values -n "user.tensorfs.$1" "$2" 2>/dev/null
}

# one line per weight of MODEL of $FIX: name, sha256, dtype, shape, scale (or -),
# then its pieces as file:offset:length
weights() {
	python3 - "$FIX/expected.json" "$1" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["valid"][sys.argv[2]]
for w in m["weights"]:
    q = w.get("quantization", {}).get("scale")
    print("\t".join([w["name"], w["sha256"], w["dtype"],
                     "[" + ",".join(map(str, w["shape"])) + "]",
                     "%.17g" % q if q is not None else "-"] +
                    ["%s:%d:%d" % (p["file"], p["offset"], p["length"])
                     for p in w["pieces"]]))
PY
}

# models FIX: every model of FIX/expected.json, every byte
models() {
	FIX=$1
	for rel in $(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["valid"]))' "$FIX/expected.json"); do
		for how in file dir; do
			# a folder mount: each container under its stem (model/)
			if [ $how = file ]; then arg="$FIX/$rel/model.json" sub=; else arg="$FIX/$rel" sub=/model; fi
			M=$(mount_container "$arg") || { fail "mount $rel ($how)"; continue; }
			want=0 good=0
			while IFS=$'\t' read -r name sha dtype shape scale pieces; do
				want=$((want + 1))
				p="$M$sub/$name" bad=
				[ -f "$p" ] || p="$M$sub/optimizer/$name"
				: >"$WORK/want.bin"
				for piece in $pieces; do
					IFS=: read -r file off n <<<"$piece"
					tail -c +$((off + 1)) "$FIX/$rel/$file" | head -c "$n" >>"$WORK/want.bin"
				done
				cmp -s "$p" "$WORK/want.bin" || bad="bytes differ from the pieces"
				[ "$(sha "$p")" = "$sha" ] || bad="$bad sha256"
				[ "$(xattr dtype "$p")" = "$dtype" ] || bad="$bad dtype"
				[ "$(xattr shape "$p")" = "$shape" ] || bad="$bad shape"
				[ "$scale" = - ] || [ "$(xattr quant.scale "$p")" = "$scale" ] ||
					bad="$bad scale $(xattr quant.scale "$p"), want $scale"
				if [ -n "$bad" ]; then fail "$rel: $name: $bad"; else good=$((good + 1)); fi
			done < <(weights "$rel")
			eq "$rel ($how): $want weights, every byte" "$good" "$want"
			eq "$rel ($how): as many files" \
				"$(find "$M" -path "$M/.tensorfs" -prune -o -type f -print | wc -l)" "$want"
			unmount "$M"
		done
	done
}

# optimizer LAYERS_MODEL_JSON: Adam's state under optimizer/
optimizer() {
	M=$(mount_container "$1")
	check "optimizer: iter under optimizer/" test -f "$M/optimizer/iter"
	check "optimizer: d/kernel/m under optimizer/" test -f "$M/optimizer/d/kernel/m"
	eq "optimizer: group xattr" "$(xattr tfjs.group "$M/optimizer/iter")" optimizer
	check "metadata: trainingConfig" python3 -c '
import json, sys
assert "trainingConfig" in json.load(open(sys.argv[1]))' "$M/.tensorfs/metadata.json"
	unmount "$M"
}

# info GRAPH_MODEL_JSON: 12+6+3+4+3+5+3+2+8+1 parameters (both sets)
info() {
	out=$("$TENSORFS" info "$1")
	check "info: format" grep -q '^format: *tfjs ' <<<"$out"
	check "info: generation" grep -q '^generation: graph-model$' <<<"$out"
	check "info: parameters (12+6+3+4+3+5+3+2+8+1)" grep -q '^parameters: 47$' <<<"$out"
}

# every reject of FIX/reject refused in one line
rejects() {
	for d in "$1"/reject/*/; do
		r=$(basename "$d")
		"$TENSORFS" "$d/model.json" "$(mktemp -d "$WORK/mnt.XXXXXX")" 2>"$WORK/err"
		rc=$?
		check "$r: refused ($rc)" test "$rc" -ne 0
		check "$r: one line naming tfjs and a byte offset" \
			test "$(wc -l <"$WORK/err")" -eq 1 -a -n "$(grep 'tfjs: .*byte offset [0-9]' "$WORK/err")"
	done
}

models "$OURS"
optimizer "$OURS/models/layers/model.json"
info "$OURS/models/quantized/model.json"
rejects "$OURS"
if shared_case "tfjs's own models and ../shared's synthesized one" tfjs/expected.json; then
	models "$SHARED"
	optimizer "$SHARED/reference-written/layers_with_optimizer/model.json"
	info "$SHARED/synthesized/graph_model_quantized/model.json"
	rejects "$SHARED"
fi
check "no mount left behind" sh -c "! grep -q ' $WORK/mnt' /proc/self/mountinfo"
finish
