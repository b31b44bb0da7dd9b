#!/usr/bin/env bash
# TensorFlow V2 checkpoints, really mounted: every bundle of the shared
# fixtures (TF Serving's real bundles, two with snappy blocks; synthesized
# all-dtype and 3-shard ones) by its .index and by its folder; every
# tensor's file compared with the bytes at its shard offset
# (expected.json, written by the fixtures' independent verify.py) and with
# its sha256; dtype, shape and key xattrs; a SavedModel folder; the tensor
# CRC (EIO on read, verify exits 2); info; every reject refused in one
# line naming the field and the byte offset.
. "$(dirname "$0")/lib.sh"
need_fuse
need_fixtures
FIX="$TFS_FIXTURES/tf-checkpoint"

xattr() { # NAME PATH
	getfattr --absolute-names --only-values -n "user.tensorfs.$1" "$2" 2>/dev/null
}

# one line per tensor of BUNDLE: display name, shard file, offset, nbytes,
# sha256, dtype (tensorfs's), shape
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

for b in real/counter/variables real/half_plus_two_cpu/variables \
	real/half_plus_two_mkl/variables real/half_plus_two_tf2_cpu/variables \
	real/tf_text_regression_01/variables synthesized/all_dtypes/ckpt \
	synthesized/multi_shard/model.ckpt-7 synthesized/snappy_multi_shard/model.ckpt-7; do
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

# a SavedModel folder: its graph left out by name, variables/ mounted
S="$WORK/saved"
mkdir -p "$S/variables"
cp "$FIX"/real/half_plus_two_tf2_cpu/variables.* "$S/variables/"
printf '\010\001' >"$S/saved_model.pb"
M=$(mount_container "$S") || fail "mount a SavedModel folder"
check "SavedModel: variables/a" test -f "$M/variables/variables/a"
eq "SavedModel: key xattr" "$(xattr key "$M/variables/variables/a")" a/.ATTRIBUTES/VARIABLE_VALUE
unmount "$M"

# the tensor CRC: mounted, the bad tensor fails with EIO, verify exits 2
M=$(mount_container "$FIX/reject/tensor_crc_mismatch/ckpt.index")
check "crc: w fails with EIO" sh -c "! cat '$M/w' >/dev/null 2>&1"
unmount "$M"
"$TENSORFS" verify "$FIX/reject/tensor_crc_mismatch/ckpt.index" >"$WORK/v.out" 2>&1
eq "crc: verify exits 2" "$?" 2

out=$("$TENSORFS" info "$FIX/synthesized/multi_shard/model.ckpt-7.index")
check "info: format" grep -q '^format: *tf-checkpoint ' <<<"$out"
check "info: generation" grep -q '^generation: V2 tensor bundle, 3 shards$' <<<"$out"
check "info: parameters" grep -q '^parameters: 256$' <<<"$out"

for d in "$FIX"/reject/*/; do
	r=$(basename "$d")
	[ "$r" = tensor_crc_mismatch ] && continue
	f=$(ls "$d"*.index "$d"model.ckpt-0 2>/dev/null | head -n 1)
	"$TENSORFS" "$f" "$(mktemp -d "$WORK/mnt.XXXXXX")" 2>"$WORK/err"
	rc=$?
	check "$r: refused ($rc)" test "$rc" -ne 0
	check "$r: one line naming tf-checkpoint and a byte offset" \
		test "$(wc -l <"$WORK/err")" -eq 1 -a -n "$(grep 'tf-checkpoint: .*byte offset [0-9]' "$WORK/err")"
done
check "no mount left behind" sh -c "! grep -q ' $WORK/mnt' /proc/self/mountinfo"
finish
