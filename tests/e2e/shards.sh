#!/usr/bin/env bash
# A sharded Hugging Face model (written by tests/e2e/make_sharded.py, an
# independent writer): one merged tree, user.tensorfs.shard, every tensor's
# bytes; each broken variant refused naming the file, or warned about.
. "$(dirname "$0")/lib.sh"
need_fuse
GEN="$(dirname "$0")/make_sharded.py"

D="$WORK/model"
python3 "$GEN" "$D" --shards 3 --tensors 12
# not a container; its model_type is the architecture
echo '{"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_layer": 12}' \
	>"$D/config.json"
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
eq "config.json: user.tensorfs.architecture" \
	"$(getfattr --only-values -n user.tensorfs.architecture "$M")" gpt2
eq "config.json in metadata.json" \
	"$(python3 -c 'import json,sys; c = json.load(open(sys.argv[1]))["config"]; print(c["file"], c["model_type"], c["architectures"])' "$M/.tensorfs/metadata.json")" \
	"config.json gpt2 ['GPT2LMHeadModel']"
unmount "$M"
check "info DIR says the architecture" grep -qx 'architecture: gpt2 (GPT2LMHeadModel)' \
	<<<"$("$TENSORFS" info "$D")"
# a model directory without an index: the same from its config.json; no
# model_type: the first of architectures
mkdir -p "$WORK/plain"
cp "$D/model-00001-of-00003.safetensors" "$WORK/plain/model.safetensors"
echo '{"architectures": ["BertModel"]}' >"$WORK/plain/config.json"
check "info DIR (no index): architectures[0]" grep -qx 'architecture: BertModel' \
	<<<"$("$TENSORFS" info "$WORK/plain")"
echo '{"model_type": 7' >"$WORK/plain/config.json"
"$TENSORFS" info "$WORK/plain" >"$WORK/info.out" 2>&1
eq "a malformed config.json: still mounts (info exits 0)" "$?" 0
check "and is a warning in metadata.json" grep -q 'config.json' \
	<<<"$("$TENSORFS" cat "$WORK/plain" .tensorfs/metadata.json)"
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
