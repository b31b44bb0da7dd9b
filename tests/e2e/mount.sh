#!/usr/bin/env bash
# Real mounts: tree, bytes, xattrs, EROFS, odd-offset reads, unmount.
. "$(dirname "$0")/lib.sh"
need_fuse

sum_before=$(sha "$SAMPLE")
M=$(mount_container "$SAMPLE") || { fail "mount the sample"; finish; }
check "the mount is there when tensorfs returns" mountpoint -q "$M"

# the tree: dotted names become directories (docs/tree.md)
want="$(printf '%s\n' .tensorfs .tensorfs/errors.json .tensorfs/export .tensorfs/export/model.safetensors .tensorfs/manifest.json .tensorfs/metadata.json \
	embed embed/weight encoder encoder/layers encoder/layers/0 \
	encoder/layers/0/bias encoder/layers/0/weight encoder/layers/1 \
	encoder/layers/1/bias encoder/layers/1/weight head head/scale \
	head/weight step vocab vocab/mask)"
eq "the tree" "$(cd "$M" && find . -mindepth 1 | sed 's|^\./||' | LC_ALL=C sort)" "$want"
eq "ls of a directory" "$(ls "$M/encoder/layers/0" | tr '\n' ' ')" "bias weight "

# every tensor's bytes equal the generator's (an independent writer)
for name in embed.weight encoder.layers.0.weight encoder.layers.0.bias \
	encoder.layers.1.weight encoder.layers.1.bias head.weight head.scale \
	step vocab.mask; do
	python3 "$TFS_SOURCE_ROOT/tools/make_sample.py" --dump "$name" >"$WORK/want"
	check "bytes of $name" cmp -s "$M/${name//.//}" "$WORK/want"
done

# modes, owner, times
eq "file mode" "$(stat -c %a "$M/step")" 444
eq "dir mode" "$(stat -c %a "$M/encoder")" 555
eq "owner is the mounting user" "$(stat -c %u "$M/step")" "$(id -u)"
eq "size is the byte length" "$(stat -c %s "$M/embed/weight")" 128
eq "mtime is the container's" "$(stat -c %Y "$M/step")" "$(stat -c %Y "$SAMPLE")"
eq "a directory's link count counts subdirectories" "$(stat -c %h "$M/encoder/layers")" 4

# xattrs, through getfattr and through the exact size protocol
eq "dtype xattr" "$(getfattr --only-values -n user.tensorfs.dtype "$M/head/weight")" float16
eq "shape xattr" "$(getfattr --only-values -n user.tensorfs.shape "$M/encoder/layers/0/weight")" "[4,4]"
eq "scalar shape" "$(getfattr --only-values -n user.tensorfs.shape "$M/step")" "[]"
eq "name xattr" "$(getfattr --only-values -n user.tensorfs.name "$M/vocab/mask")" vocab.mask
eq "root format xattr" "$(getfattr --only-values -n user.tensorfs.format "$M")" ztensor
check "getfattr -d lists dtype and shape" \
	bash -c "getfattr -d '$M/step' 2>/dev/null | grep -q 'user.tensorfs.dtype=\"int64\"'"
eq "xattr size protocol, ERANGE, ENODATA, EROFS" \
	"$("$TFS_XATTR_PROBE" "$M/embed/weight" user.tensorfs.dtype)" float32
eq "xattr protocol on the root" "$("$TFS_XATTR_PROBE" "$M" user.tensorfs.format)" ztensor

# writes are refused with EROFS
for what in "touch $M/new" "mkdir $M/d" "rm -f $M/step" "mv $M/step $M/s2" \
	"truncate -s 0 $M/step" "chmod 600 $M/step" "ln $M/step $M/l" \
	"ln -s x $M/l"; do
	err=$($what 2>&1)
	check "EROFS: $what" grep -q "Read-only file system" <<<"$err"
done
err=$(bash -c "echo x >> '$M/step'" 2>&1)
check "EROFS: append" grep -q "Read-only file system" <<<"$err"

# reads at odd offsets and across the end of file
python3 "$TFS_SOURCE_ROOT/tools/make_sample.py" --dump embed.weight >"$WORK/embed"
eq "a 5-byte read at offset 3" "$(dd if="$M/embed/weight" bs=1 skip=3 count=5 status=none | od -An -tx1)" \
	"$(dd if="$WORK/embed" bs=1 skip=3 count=5 status=none | od -An -tx1)"
eq "a read across EOF is short" "$(dd if="$M/embed/weight" bs=100 skip=1 status=none | wc -c)" 28
eq "a read past EOF is empty" "$(dd if="$M/embed/weight" bs=1 skip=500 count=4 status=none | wc -c)" 0
eq "README example: dd of one float" \
	"$(dd if="$M/embed/weight" bs=4 skip=10 count=1 status=none | od -An -f | tr -d ' ')" \
	"$(dd if="$WORK/embed" bs=4 skip=10 count=1 status=none | od -An -f | tr -d ' ')"

# the .tensorfs files
check "manifest.json maps every name to its path, offset and size" python3 - "$M" <<'PY'
import json, os, sys
m = json.load(open(os.path.join(sys.argv[1], ".tensorfs/manifest.json")))
by = {t["name"]: t for t in m["tensors"]}
assert m["format"] == "ztensor" and len(by) == 9
t = by["encoder.layers.1.bias"]
assert t["path"] == "encoder/layers/1/bias" and t["dtype"] == "float32"
assert t["shape"] == [4] and t["size"] == 16 and t["offset"] % 64 == 0
assert os.path.getsize(os.path.join(sys.argv[1], t["path"])) == t["size"]
meta = json.load(open(os.path.join(sys.argv[1], ".tensorfs/metadata.json")))
assert meta["version"] == "1.0" and meta["generator"] == "zTensor-Rust v0.1.0"
PY

# unmount: the daemon exits and the mount disappears
pid=$(daemon_pid "$M")
check "a daemon serves the mount" test -n "$pid"
check "fusermount3 -u works" unmount "$M"
for _ in $(seq 50); do running "$pid" || break; sleep 0.1; done
check "the daemon exits after unmount" eval "! running $pid"
check "the mount is gone" bash -c "! mountpoint -q '$M'"
eq "the container was not modified" "$(sha "$SAMPLE")" "$sum_before"

# TSR: one unnamed tensor shown as 'tensor', bytes as documented
if shared_case "TSR: the real MNIST labels" tsr/test_labels.tsr; then
	M=$(mount_container "$TFS_FIXTURES/tsr/test_labels.tsr") || fail "mount TSR"
	eq "TSR: the root holds 'tensor'" "$(ls "$M")" tensor
	eq "TSR: data sha256 as documented" "$(sha "$M/tensor")" \
		52aa149c856ca033d02e1d2e5cc61033b4c56ed4a56f0edc328206a178c42126
	eq "TSR: first labels" "$(od -An -td4 -N16 "$M/tensor" | tr -s ' ')" " 7 2 1 0"
	unmount "$M"
fi
# tests/fixtures/tsr/generate.py's fp32_2x3.tsr: float32 0..5
M=$(mount_container "$TFS_TESTDATA/tsr/valid/fp32_2x3.tsr") || fail "mount TSR"
eq "TSR: the root holds 'tensor'" "$(ls "$M")" tensor
eq "TSR: data sha256 of float32 0..5" "$(sha "$M/tensor")" \
	"$(/usr/bin/python3 -c 'import hashlib, struct
print(hashlib.sha256(struct.pack("<6f", *range(6))).hexdigest())')"
eq "TSR: its values" "$(od -An -tf4 "$M/tensor" | tr -s ' \n' ' ')" " 0 1 2 3 4 5 "
unmount "$M"

# mount failures: a missing mountpoint (5), a directory without any
# container (3)
"$TENSORFS" "$SAMPLE" "$WORK/no/such/dir" 2>"$WORK/err"
eq "a missing mountpoint fails the mount with 5" "$?" 5
mkdir -p "$WORK/empty" && echo "not a container" >"$WORK/empty/notes.txt"
"$TENSORFS" "$WORK/empty" "$(mktemp -d "$WORK/mnt.XXXXXX")" 2>"$WORK/err"
eq "a directory holding no container exits 3" "$?" 3
check "and says so in one line" \
	test "$(wc -l <"$WORK/err")" -eq 1 -a -n "$(grep 'no container' "$WORK/err")"

# -o flat: full stored names at the root
M=$(mount_container "$SAMPLE" -o flat) || fail "mount -o flat"
check "-o flat: dotted names kept whole" test -f "$M/encoder.layers.0.weight"
eq "-o flat: 9 tensors + .tensorfs" "$(ls -A "$M" | wc -l)" 10
unmount "$M"

# du counts the model once: a tensor file its tensor's bytes (not a .npy
# header), every other file (metadata, the export, previews) one block,
# not its size (0 would make tar --sparse store it as holes)
python3 "$TFS_SOURCE_ROOT/tools/make_sample.py" --many 8 1048576 "$WORK/du.zt"
for opts in export=on npy,previews; do
	M=$(mount_container "$WORK/du.zt" -o "$opts") || { fail "mount $opts"; continue; }
	others=$(find "$M" -type f ! -empty ! -path '*/block/*/data*' | wc -l)
	others=$((others + $(find "$M" -type f -name '*.png' | wc -l)))
	eq "-o $opts: du counts 8 MiB of tensors + a block per other file" \
		"$(du -s -B1 "$M" | cut -f1)" $((8 * 1048576 + 512 * others))
	check "-o $opts: the export is there, $(stat -c %s \
		"$M/.tensorfs/export/model.safetensors") bytes" \
		test "$(stat -c %s "$M/.tensorfs/export/model.safetensors")" \
		-gt $((8 * 1048576))
	unmount "$M"
done
finish
