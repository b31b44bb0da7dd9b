#!/usr/bin/env bash
# A sharded Hugging Face model (written by tests/e2e/make_sharded.py, an
# independent writer): one merged tree, user.tensorfs.shard, every tensor's
# bytes; each broken variant refused naming the file, or warned about.
. "$(dirname "$0")/lib.sh"
need_fuse
GEN="$(dirname "$0")/make_sharded.py"

D="$WORK/model"
python3 "$GEN" "$D" --shards 3 --tensors 12
echo '{"architectures": ["X"]}' >"$D/config.json" # not a container
M=$(mount_container "$D") || { fail "mount the sharded model"; finish; }
eq "one merged tree" "$(ls "$M")" "model"
eq "root format" "$(getfattr --only-values -n user.tensorfs.format "$M")" safetensors
n=0
for want in "$D"/expected/*; do
	name=$(basename "$want")
	path="$M/${name//.//}"
	check "bytes of $name" cmp -s "$path" "$want"
	n=$((n + 1))
done
eq "every tensor" "$n" 12
eq "the shard of model.layers.1.w1" \
	"$(getfattr --only-values -n user.tensorfs.shard "$M/model/layers/1/w1")" \
	"model-00002-of-00003.safetensors"
eq "index metadata" \
	"$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["index"]["metadata"]["total_size"])' "$M/.tensorfs/metadata.json")" \
	420
eq "manifest names the shard" \
	"$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tensors"][0]["container"])' "$M/.tensorfs/manifest.json")" \
	"model-00001-of-00003.safetensors"
unmount "$M"
check "the CLI reads it too" \
	sh -c "'$TENSORFS' cat '$D' model.layers.3.w2 | cmp -s - '$D/expected/model.layers.3.w2'"

refused() { # KIND STATUS WORD
	local dir="$WORK/bad-$1"
	python3 "$GEN" "$dir" --break "$1"
	"$TENSORFS" "$dir" "$(mktemp -d "$WORK/mnt.XXXXXX")" 2>"$WORK/err"
	eq "$1: refused with $2" "$?" "$2"
	check "$1: one line naming $3" \
		test "$(wc -l <"$WORK/err")" -eq 1 -a -n "$(grep -F "$3" "$WORK/err")"
}
refused missing-shard 4 "model-00002-of-00003.safetensors"
refused corrupt-shard 3 "model-00002-of-00003.safetensors"
refused missing-tensor 2 "tensor 'model.ghost' is not in model-00001-of-00003.safetensors"
refused wrong-shard 2 "said to be in model-00002-of-00003.safetensors"

warned() { # KIND WORD
	local dir="$WORK/warn-$1" m
	python3 "$GEN" "$dir" --break "$1"
	m=$(mount_container "$dir") || { fail "$1: mounts"; return; }
	check "$1: warned in metadata.json" grep -qF "$2" "$m/.tensorfs/metadata.json"
	unmount "$m"
}
warned unlisted "tensor 'extra.bias' is in a shard but not in model.safetensors.index.json"
warned total "metadata.total_size is 421, but the tensors hold 420 bytes"
finish
