#!/usr/bin/env bash
# TensorFlow V2 checkpoints, really mounted: every bundle of ours
# (tests/fixtures/tf_checkpoint/generate.py: all dtypes, 3 shards, snappy
# blocks) and of the shared fixtures when they are there (TF Serving's
# real bundles, two with snappy blocks; synthesized all-dtype and 3-shard
# ones) by its .index and by its folder; every
# tensor's file compared with the bytes at its shard offset
# (expected.json, written by the fixtures' independent verify.py) and with
# its sha256; dtype, shape and key xattrs; a SavedModel folder; the tensor
# CRC (EIO on read, verify exits 2); info; every reject refused in one
# line naming the field and the byte offset.
. "$(dirname "$0")/lib.sh"
need_fuse
OURS="$TFS_TESTDATA/tf_checkpoint"
SHARED="$TFS_FIXTURES/tf-checkpoint"

xattr() { # NAME PATH
	getfattr --absolute-names --only-values -n "user.tensorfs.$1" "$2" 2>/dev/null
}

# one line per tensor of BUNDLE of $FIX: display name, shard file, offset,
# nbytes, sha256, dtype (tensorfs's), shape
tensors() {
	python3 - "$FIX/expected.json" "$1" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["valid"][sys.argv[2]]
plain = {"qint8": "int8", "quint8": "uint8", "qint16": "int16",
         "quint16": "uint16", "qint32": "int32", "float8_e4m3fn": "float8_e4m3"}
for t in m["tensors"]:
    print("\t".join([t["name"], t["file"], str(t["offset"]), str(t["nbytes"]),
                     t["sha256"], plain.get(t["dtype"], t["dtype"]),
                     "[" + ",".join(map(str, t["shape"])) + "]"]))
PY
}

# bundles FIX: every bundle of FIX/expected.json, every byte
bundles() {
	FIX=$1
	for b in $(python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))["valid"]))' "$FIX/expected.json"); do
		dir=$(dirname "$FIX/$b")
		for how in file dir; do
			# a folder mount: the bundle under its stem (variables/)
			if [ $how = file ]; then arg="$FIX/$b.index" sub=; else arg=$dir sub=/$(basename "$b"); fi
			M=$(mount_container "$arg") || { fail "mount $b ($how)"; continue; }
			want=0 good=0
			while IFS=$'\t' read -r name file off n sha dtype shape; do
				want=$((want + 1))
				p="$M$sub/$name" bad=
				cmp -s "$p" <(tail -c +$((off + 1)) "$dir/$file" | head -c "$n") ||
					bad="bytes differ from $file at $off"
				[ "$(sha "$p")" = "$sha" ] || bad="$bad sha256"
				[ "$(xattr dtype "$p")" = "$dtype" ] || bad="$bad dtype"
				[ "$(xattr shape "$p")" = "$shape" ] || bad="$bad shape"
				if [ -n "$bad" ]; then fail "$b: $name: $bad"; else good=$((good + 1)); fi
			done < <(tensors "$b")
			eq "$b ($how): $want tensors, every byte" "$good" "$want"
			unmount "$M"
		done
	done
}

# savedmodel PREFIX (of a bundle) NAME KEY: the bundle as a SavedModel's
# variables/, with a saved_model.pb and a fingerprint.pb as TensorFlow
# writes them (saved_model.py): one model, its variables at the root, the
# graph's signatures and functions in metadata.json, nothing said about
# its own files
savedmodel() {
	local S want
	S=$(mktemp -d "$WORK/saved.XXXXXX")
	mkdir -p "$S/variables"
	for f in "$1".*; do
		cp "$f" "$S/variables/variables${f#"$1"}"
	done
	want=$(python3 "$TFS_SOURCE_ROOT/tests/e2e/saved_model.py" "$S")
	M=$(mount_container "$S") || { fail "mount a SavedModel folder"; return; }
	eq "SavedModel: nothing said at mount" "$(cat "$WORK/mount.out")" ""
	check "SavedModel: $2 at the root" test -f "$M/$2"
	check "SavedModel: no variables/ tree" test ! -e "$M/variables"
	eq "SavedModel: key xattr" "$(xattr key "$M/$2")" "$3"
	eq "SavedModel: signatures and functions in metadata.json" \
		"$(python3 -c 'import json, sys
m = json.load(open(sys.argv[1]))
print(json.dumps(m["containers"]["saved_model.pb"]["saved_model"], sort_keys=True))' \
			"$M/.tensorfs/metadata.json")" "$want"
	unmount "$M"
	eq "SavedModel: info says one container" \
		"$("$TENSORFS" info "$S" 2>&1 | sed -n 2p)" \
		"format:   directory (1 container)"
	check "SavedModel: saved_model.pb alone mounts the same" \
		sh -c "'$TENSORFS' ls '$S/saved_model.pb' | grep -q '^$3 '"
}

# crc DIR: the tensor CRC of DIR/ckpt.index: mounted, the bad tensor
# fails with EIO, verify exits 2
crc() {
	M=$(mount_container "$1/ckpt.index")
	check "crc: w fails with EIO" sh -c "! cat '$M/w' >/dev/null 2>&1"
	unmount "$M"
	"$TENSORFS" verify "$1/ckpt.index" >"$WORK/v.out" 2>&1
	eq "crc: verify exits 2" "$?" 2
}

# info BUNDLE.index PARAMETERS
info() {
	out=$("$TENSORFS" info "$1")
	check "info: format" grep -q '^format: *tf-checkpoint ' <<<"$out"
	check "info: generation" grep -q '^generation: V2 tensor bundle, 3 shards$' <<<"$out"
	check "info: parameters" grep -q "^parameters: $2\$" <<<"$out"
}

# every reject of FIX/reject refused in one line
rejects() {
	for d in "$1"/reject/*/; do
		r=$(basename "$d")
		[ "$r" = tensor_crc_mismatch ] && continue
		f=$(ls "$d"*.index "$d"model.ckpt-0 2>/dev/null | head -n 1)
		"$TENSORFS" "$f" "$(mktemp -d "$WORK/mnt.XXXXXX")" 2>"$WORK/err"
		rc=$?
		check "$r: refused ($rc)" test "$rc" -ne 0
		check "$r: one line naming tf-checkpoint and a byte offset" \
			test "$(wc -l <"$WORK/err")" -eq 1 -a -n "$(grep 'tf-checkpoint: .*byte offset [0-9]' "$WORK/err")"
	done
}

bundles "$OURS"
savedmodel "$OURS/bundles/multi_shard/model.ckpt-7" optimizer/iter \
	optimizer/iter/.ATTRIBUTES/VARIABLE_VALUE
crc "$OURS/read_eio/tensor_crc_mismatch"
# 6 layers of 6 + 3 + 6 + 6, iter, learning_rate, save_counter, the graph
info "$OURS/bundles/multi_shard/model.ckpt-7.index" 130
rejects "$OURS"
if shared_case "TF Serving's bundles and ../shared's synthesized ones" \
	tf-checkpoint/expected.json; then
	bundles "$SHARED"
	savedmodel "$SHARED/real/half_plus_two_tf2_cpu/variables" a \
		a/.ATTRIBUTES/VARIABLE_VALUE
	crc "$SHARED/reject/tensor_crc_mismatch"
	info "$SHARED/synthesized/multi_shard/model.ckpt-7.index" 256
	rejects "$SHARED"
fi
check "no mount left behind" sh -c "! grep -q ' $WORK/mnt' /proc/self/mountinfo"
finish
