#!/usr/bin/env bash
# PyTorch checkpoints through real mounts: every tensor of every file torch
# 1.13 wrote, the project's (tests/fixtures/pytorch/torch_written, zip) and
# the shared fixtures' when present (zip and legacy), cmp'd against its bytes as
# numpy gathers them from the file at the offsets of expected.json
# (tests/e2e/pytorch_expect.py), and against expected.json's sha256; views
# flagged as gathered; the big-endian file flagged; leaves in metadata.json;
# a sharded pytorch_model.bin.index.json directory as one tree; the rejects
# refused with their exit status, naming why, with nothing mounted.
. "$(dirname "$0")/lib.sh"
need_fuse
if ! /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
	echo "SKIP: Debian's python3-numpy is not installed"
	exit 77
fi
GEN="$(dirname "$0")/pytorch_expect.py"
# first_tensor FILE: the first tensor's name in expected.json
first_tensor() {
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["valid"][sys.argv[2]]["tensors"][0]["name"])' "$EXP" "$1"
}

# valid_set DIR MIN: every .pt of DIR against DIR/expected.json (more than
# MIN tensors), then the views, leaves and a sharded directory of two
valid_set() {
	P=$1
	EXP="$P/expected.json"
	count=0
	for f in "$P"/*.pt; do
		name=$(basename "$f")
		rm -rf "$WORK/want-$name" # another set's file of that name
		/usr/bin/python3 "$GEN" "$EXP" "$P" "$name" "$WORK/want-$name" ||
			{ fail "expected bytes of $name"; continue; }
		M=$(mount_container "$f") || { fail "mount $name"; continue; }
		eq "$name: format" "$(getfattr --only-values -n user.tensorfs.format "$M")" pytorch
		n=0
		for want in "$WORK/want-$name"/*; do
			case "$want" in *.sha256) continue ;; esac
			t=$(basename "$want")
			path="$M/${t//.//}"
			if cmp -s "$path" "$want" && [ "$(sha "$path")" = "$(cat "$want.sha256")" ]; then
				n=$((n + 1))
			else
				fail "$name: bytes of $t"
			fi
		done
		eq "$name: every tensor" "$n" "$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["valid"][sys.argv[2]]["tensors"]))' "$EXP" "$name")"
		count=$((count + n))
		unmount "$M"
	done
	check "tensors compared" test "$count" -gt "$2"

	M=$(mount_container "$P/shared_and_views_zip.pt") || fail "mount views"
	eq "w_t is gathered" "$(getfattr --only-values -n user.tensorfs.encoding "$M/w_t")" gather
	eq "w_t stride" "$(getfattr --only-values -n user.tensorfs.pytorch.stride "$M/w_t")" "[1,5]"
	eq "w is zero-copy" "$(getfattr --only-values -n user.tensorfs.encoding "$M/w")" raw
	check "tied weights: same bytes" cmp -s "$M/embed/weight" "$M/lm_head/weight"
	eq "w_t size" "$(stat -c %s "$M/w_t")" 60
	unmount "$M"
	M=$(mount_container "$P/training_ckpt_zip.pt") || fail "mount training checkpoint"
	eq "leaf epoch" "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["leaves"]["epoch"])' "$M/.tensorfs/metadata.json")" 3
	eq "leaf betas" "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["leaves"]["optimizer.param_groups.0.betas"])' "$M/.tensorfs/metadata.json")" "[0.9, 0.999]"
	unmount "$M"

	# a sharded model: pytorch_model.bin.index.json and two zip shards
	D=$(mktemp -d "$WORK/sharded.XXXXXX")
	cp "$P/state_dict_zip.pt" "$D/pytorch_model-00001-of-00002.bin"
	cp "$P/parameters_proto4_zip.pt" "$D/pytorch_model-00002-of-00002.bin"
	python3 - "$EXP" "$D" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))['valid']
wm, total = {}, 0
for f, shard in (('state_dict_zip.pt', 'pytorch_model-00001-of-00002.bin'),
                 ('parameters_proto4_zip.pt', 'pytorch_model-00002-of-00002.bin')):
    for t in e[f]['tensors']:
        wm[t['name']] = shard
        total += t['nbytes']
json.dump({'metadata': {'total_size': total}, 'weight_map': wm},
          open(sys.argv[2] + '/pytorch_model.bin.index.json', 'w'))
PY
	M=$(mount_container "$D") || fail "mount the sharded directory"
	t1=$(first_tensor state_dict_zip.pt)
	check "shard 1 tensor" cmp -s "$M/${t1//.//}" "$WORK/want-state_dict_zip.pt/$t1"
	check "shard 2 tensor" cmp -s "$M/buffers/0" "$WORK/want-parameters_proto4_zip.pt/buffers.0"
	eq "its shard" "$(getfattr --only-values -n user.tensorfs.shard "$M/weight")" pytorch_model-00002-of-00002.bin
	check "no warning" sh -c "! grep -q warnings '$M/.tensorfs/metadata.json'"
	unmount "$M"
}

refused() { # FILE STATUS WORD (FILE under $P/reject)
	local mnt
	mnt=$(mktemp -d "$WORK/mnt.XXXXXX")
	"$TENSORFS" "$P/reject/$1" "$mnt" 2>"$WORK/err"
	eq "$1: refused with $2" "$?" "$2"
	check "$1: names $3" grep -qF "$3" "$WORK/err"
	check "$1: nothing mounted" sh -c "! mountpoint -q '$mnt'"
}

valid_set "$TFS_TESTDATA/pytorch/torch_written" 50
# its rejects as expected.json says (ENOTSUP exits 3, the others 2)
while IFS=$'\t' read -r file status word; do
	refused "$file" "$status" "$word"
done < <(python3 -c '
import json, sys
for f, r in sorted(json.load(open(sys.argv[1]))["reject"].items()):
    print("\t".join([f, "3" if r["err"] == "ENOTSUP" else "2", r["word"]]))' "$EXP")

if shared_case "the shared torch files (zip, legacy, big-endian)" pytorch/expected.json; then
	valid_set "$TFS_FIXTURES/pytorch" 100
	M=$(mount_container "$P/bigendian_zip.pt") || fail "mount big-endian"
	eq "byte_order=big" "$(getfattr --only-values -n user.tensorfs.byte_order "$M/float32")" big
	unmount "$M"
	refused evil_global_zip.pt 3 "global os.system: not loadable without executing code"
	refused evil_builtins_eval_legacy.pt 3 "builtins.eval"
	refused bad_pickle_zip.pt 2 "memo index 250"
	refused truncated_legacy.pt 2 "runs past the end of the file"
	refused truncated_storage_zip.pt 2 "holds 300 bytes"
fi

# a storage member's CRC-32 is checked like an npz member's: a flipped byte
# in data/0 fails verify (every tensor on it, the gathered view too) and
# the reads of those tensors (EIO); the others stay readable
cp "$TFS_TESTDATA/pytorch/valid/nested_zip.pt" "$WORK/crc.pt"
off=$(python3 -c '
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
i = z.getinfo("any_folder_name/data/0")
f = open(sys.argv[1], "rb"); f.seek(i.header_offset + 26)
n, m = int.from_bytes(f.read(2), "little"), int.from_bytes(f.read(2), "little")
print(i.header_offset + 30 + n + m + 5)' "$WORK/crc.pt")
printf '\x7f' | dd of="$WORK/crc.pt" bs=1 seek="$off" conv=notrunc status=none
"$TENSORFS" verify "$WORK/crc.pt" >"$WORK/verify.out"
eq "flipped storage byte: verify exits 2" "$?" 2
eq "FAILED: the 4 tensors on storage 0" \
	"$(grep '^FAILED' "$WORK/verify.out" | awk '{sub(/:$/, "", $2); print $2}' | sort | tr '\n' ' ')" \
	"a/0 a/1/0 one é "
check "naming the CRC-32" grep -q "^FAILED.*crc32" "$WORK/verify.out"
if M=$(mount_container "$WORK/crc.pt"); then
	err=$(cat "$M/a/0" 2>&1 >/dev/null)
	check "a/0 read: EIO" grep -q "Input/output error" <<<"$err"
	err=$(cat "$M/a/1/0" 2>&1 >/dev/null)
	check "a/1/0 (gathered) read: EIO" grep -q "Input/output error" <<<"$err"
	check "b/c (storage 1) reads" cat "$M/b/c" >/dev/null
	unmount "$M"
else
	fail "mount of the flipped file"
fi

# a persistent id that is not ('storage', ...): torch.load refuses it too
mnt=$(mktemp -d "$WORK/mnt.XXXXXX")
"$TENSORFS" "$TFS_TESTDATA/pytorch/reject/module_persid_zip.pt" "$mnt" \
	2>"$WORK/err"
eq "a ('module', ...) persistent id: exit 2" "$?" 2
eq "in one line" "$(wc -l <"$WORK/err")" 1
check "naming the type" grep -qF "'module', not 'storage'" "$WORK/err"
check "nothing mounted" sh -c "! mountpoint -q '$mnt'"
finish
