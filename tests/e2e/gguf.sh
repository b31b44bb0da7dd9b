#!/usr/bin/env bash
# GGUF, really mounted: the shared fixtures (written by ggml) and the
# generator's files; every tensor file is compared with the bytes at the
# offset the file states, found by an independent reading of its tensor
# table (gguf_layout.py); xattrs, metadata.json with a 150,000-token
# vocabulary, a split set mounted from a part and from its directory, and
# the refusals (big-endian: 3; broken sets: naming the file).  The spec's
# files (written by ggml in ../shared) are generate.py's copies in spec/,
# the same bytes.
. "$(dirname "$0")/lib.sh"
need_fuse
LAYOUT="$(dirname "$0")/gguf_layout.py"
GEN="$TFS_TESTDATA/gguf"

# every tensor of FILE under mountpoint MNT: bytes, dtype, shape, gguf.ne;
# prints how many matched in every respect (a mismatch is printed to stderr)
check_tensors() { # FILE MNT
	local file=$1 m=$2 name off n dtype shape ne p count=0 bad
	while IFS=$'\t' read -r name off n dtype shape ne; do
		p="$m/${name//.//}"
		bad=
		cmp -s "$p" <(tail -c +$((off + 1)) "$file" | head -c "$n") ||
			bad="bytes differ from offset $off"
		[ "$(getfattr --absolute-names --only-values -n user.tensorfs.dtype "$p")" = "$dtype" ] ||
			bad="$bad dtype, want $dtype"
		[ "$(getfattr --absolute-names --only-values -n user.tensorfs.shape "$p")" = "$shape" ] ||
			bad="$bad shape, want $shape"
		[ "$(getfattr --absolute-names --only-values -n user.tensorfs.gguf.ne "$p")" = "$ne" ] ||
			bad="$bad gguf.ne, want $ne"
		if [ -n "$bad" ]; then
			echo "$(basename "$file"): $name: $bad" >&2
		else
			count=$((count + 1))
		fi
	done < <(python3 "$LAYOUT" "$file")
	echo "$count"
}

for f in "$GEN"/spec/*.gguf "$GEN"/valid/{v3_every_type,v2_small,align1,align64,align4096,shapes_no_tail_pad,unpacked_offsets}.gguf; do
	M=$(mount_container "$f") || { fail "mount $(basename "$f")"; continue; }
	want=$(python3 "$LAYOUT" "$f" | wc -l)
	got=$(check_tensors "$f" "$M" | tail -n 1)
	eq "$(basename "$f"): $want tensors, every byte" "$got" "$want"
	eq "$(basename "$f"): as many files" \
		"$(find "$M" -path "$M/.tensorfs" -prune -o -type f -print | wc -l)" "$want"
	unmount "$M"
done

M=$(mount_container "$GEN/spec/gguf_v3_basic.gguf")
eq "architecture xattr" \
	"$(getfattr --absolute-names --only-values -n user.tensorfs.gguf.general.architecture "$M")" tensorfs-test
eq "u64 xattr" "$(getfattr --absolute-names --only-values -n user.tensorfs.gguf.test.u64 "$M")" 1099511627776
eq "cube shape" "$(getfattr --absolute-names --only-values -n user.tensorfs.shape "$M/cube")" "[2,1,2]"
eq "metadata.json arrays" \
	"$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1]))["metadata"]; print(m["test.arr_i32"], m["test.arr_str"])' "$M/.tensorfs/metadata.json")" \
	"[1, -2, 3] ['a', 'bc']"
check "the F32 tensor reads as 1..6" python3 -c '
import struct, sys
a = struct.unpack("<6f", open(sys.argv[1], "rb").read())
assert a == (1, 2, 3, 4, 5, 6), a' "$M/token_embd/weight"
unmount "$M"
# the generator's v3_every_type.gguf: its key/values as generate.py wrote
# them (EVERY_KV), the 64-bit one as an xattr, the arrays in metadata.json
M=$(mount_container "$GEN/valid/v3_every_type.gguf") || fail "mount v3_every_type"
eq "generated: architecture xattr" \
	"$(getfattr --absolute-names --only-values -n user.tensorfs.gguf.general.architecture "$M")" llama
eq "generated: u64 xattr" \
	"$(getfattr --absolute-names --only-values -n user.tensorfs.gguf.t.u64 "$M")" 18446744073709551615
check "generated: metadata.json arrays as written" /usr/bin/python3 -c '
import json, sys
sys.path.insert(0, sys.argv[2])
import generate
m = json.load(open(sys.argv[1]))["metadata"]
for key, kind, value in generate.EVERY_KV:
    if key in ("t.arr_u8", "t.arr_str", "t.arr_bool", "t.arr_empty"):
        assert m[key] == value[1], (key, m[key], value[1])
' "$M/.tensorfs/metadata.json" "$GEN"
unmount "$M"

# a llama-like file: 150,000-token vocabulary, 300 tensors
python3 "$TFS_SOURCE_ROOT/bench/mkgguf.py" "$WORK/big.gguf" 150000 300
M=$(mount_container "$WORK/big.gguf") || fail "mount the big file"
eq "big: 300 tensors" "$(check_tensors "$WORK/big.gguf" "$M" | tail -n 1)" 300
eq "big: the vocabulary in metadata.json" \
	"$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1]))["metadata"]; print(len(m["tokenizer.ggml.tokens"]), len(m["tokenizer.ggml.scores"]), m["llama.context_length"])' "$M/.tensorfs/metadata.json")" \
	"150000 150000 8192"
eq "big: architecture" "$(getfattr --absolute-names --only-values -n user.tensorfs.architecture "$M")" llama
unmount "$M"

# a split set, from its directory and from any part
S="$GEN/split"
for what in "$S" "$S/model-00002-of-00003.gguf"; do
	M=$(mount_container "$what") || { fail "mount $what"; continue; }
	total=0
	for part in "$S"/*.gguf; do
		n=$(check_tensors "$part" "$M" | tail -n 1)
		total=$((total + n))
		while IFS=$'\t' read -r name _; do
			[ "$(getfattr --absolute-names --only-values -n user.tensorfs.shard "$M/${name//.//}")" = "$(basename "$part")" ] ||
				fail "split: $name: shard"
		done < <(python3 "$LAYOUT" "$part")
	done
	eq "split from $(basename "$what"): every tensor of the 3 parts" "$total" 6
	eq "split: one tree" "$(ls "$M")" blk
	unmount "$M"
done

# info: the architecture, the parameters and the bytes per dtype (spec
# section 8: 6+5+4+64+64+2+3+4 elements; q8_0 68 bytes, two float32 40)
out=$("$TENSORFS" info "$GEN/spec/gguf_v3_basic.gguf")
check "info: architecture" grep -q '^architecture: tensorfs-test$' <<<"$out"
check "info: parameters" grep -q '^parameters: 152$' <<<"$out"
check "info: q8_0 bytes first" grep -q '^dtypes: *q8_0 *68 bytes in 1 file' <<<"$out"
check "info: float32 bytes" grep -q '^ *float32 *40 bytes in 2 files' <<<"$out"
# the generator's file: parameters and the largest dtype from valid.tsv
out=$("$TENSORFS" info "$GEN/valid/v3_every_type.gguf")
read -r params top top_bytes < <(awk -F'\t' '$1 == "v3_every_type.gguf" {
	n = 1; k = split(substr($4, 2, length($4) - 2), d, ",")
	for (i = 1; i <= k; i++) n *= d[i]
	p += n; b[$3] += $7
} END {
	for (t in b) if (b[t] > best) { best = b[t]; name = t }
	print p, name, best
}' "$GEN/valid.tsv")
check "info: architecture (generated)" grep -q '^architecture: llama$' <<<"$out"
check "info: parameters (generated, $params)" grep -q "^parameters: $params\$" <<<"$out"
check "info: $top bytes first (generated)" \
	grep -q "^dtypes: *$top *$top_bytes bytes in 1 file" <<<"$out"
out=$("$TENSORFS" info "$WORK/big.gguf")
check "info: a large metadata.json is not printed" grep -q '^metadata: large' <<<"$out"
check "info: 300 tensors of five types" test "$(grep -cE '^ *(dtypes:)? *(float32|float16|q4_k|q6_k|q8_0) ' <<<"$out")" -eq 5

# a split set next to another container: the set is one directory (named
# without -0000i-of-0000N.gguf), the other container another
mkdir -p "$WORK/mixed"
cp "$S"/*.gguf "$GEN/valid/align64.gguf" "$WORK/mixed/"
M=$(mount_container "$WORK/mixed") || fail "mount a set next to a file"
eq "mixed: the set is one directory" "$(ls "$M" | tr '\n' ' ')" "align64 model "
total=0
for part in "$S"/*.gguf; do
	total=$((total + $(check_tensors "$part" "$M/model" | tail -n 1)))
done
eq "mixed: every tensor of the set" "$total" 6
eq "mixed: the shard of blk.2" \
	"$(getfattr --absolute-names --only-values -n user.tensorfs.shard "$M/model/blk/2/ffn/weight")" \
	model-00003-of-00003.gguf
eq "mixed: the set's directory has its first part's keys" \
	"$(getfattr --absolute-names --only-values -n user.tensorfs.gguf.split.count "$M/model")" 3
unmount "$M"
# a broken set next to another container: left out, listed, the rest mounts
for c in missing_part count_disagrees tensor_total; do
	rm -rf "$WORK/mixed"
	mkdir -p "$WORK/mixed"
	cp "$GEN/split_reject/$c"/*.gguf "$GEN/valid/align64.gguf" "$WORK/mixed/"
	M=$(mount_container "$WORK/mixed") || { fail "$c: mount"; continue; }
	eq "$c: only the other container" "$(ls "$M")" align64
	check "$c: errors.json names the set" \
		grep -q '"path": "model-00001-of-00003.gguf"' "$M/.tensorfs/errors.json"
	unmount "$M"
done

refused() { # PATH STATUS WORD
	local rc
	"$TENSORFS" "$1" "$(mktemp -d "$WORK/mnt.XXXXXX")" 2>"$WORK/err"
	rc=$?
	eq "$(basename "$1"): refused with $2" "$rc" "$2"
	check "$(basename "$1"): one line naming $3" \
		test "$(wc -l <"$WORK/err")" -eq 1 -a -n "$(grep -F -- "$3" "$WORK/err")"
}
refused "$GEN/split_reject/missing_part" 4 "model-00002-of-00003.gguf"
refused "$GEN/split_reject/missing_part/model-00003-of-00003.gguf" 4 "model-00002-of-00003.gguf"
refused "$GEN/split_reject/count_disagrees" 2 "model-00002-of-00003.gguf"
refused "$GEN/split_reject/tensor_total/model-00003-of-00003.gguf" 2 "model-00001-of-00003.gguf"
refused "$GEN/reject/version_0x3000000.gguf" 3 "big-endian GGUF"
refused "$GEN/reject/kv_count_huge.gguf" 2 "kv_count"
check "no mount left behind" sh -c "! grep -q ' $WORK/mnt' /proc/self/mountinfo"
finish
