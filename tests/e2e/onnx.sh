#!/usr/bin/env bash
# ONNX, really mounted: every valid file of ours (tests/fixtures/onnx/
# generate.py, written by python3-onnx) and, when ../shared is there, of
# the shared fixtures (onnx 1.12's models, onnx's backend test data, bare
# TensorProto .pb files),
# each tensor file (raw_data, converted typed values, external data)
# compared with expected.json's sha256 and, where the onnx package is
# installed, with onnx.numpy_helper's conversion (onnx_check.py); a model's directory; a model whose data file is missing
# (mounts, that tensor EIO, verify exits 2); every reject refused with one
# line naming the file, the field and the byte offset.
. "$(dirname "$0")/lib.sh"
need_fuse
CHECK="$(dirname "$0")/onnx_check.py"
# Debian's python3-onnx is for /usr/bin/python3 (python3 may be another)
PY=python3
for p in python3 /usr/bin/python3; do
	if "$p" -c 'import onnx' 2>/dev/null; then PY=$p; break; fi
done
"$PY" -c 'import onnx' 2>/dev/null && echo "onnx.numpy_helper: used ($PY)" ||
	echo "onnx.numpy_helper: not installed, expected.json only"

# valid DIR: every valid file of DIR/expected.json, every tensor
valid() {
	F=$1
	while read -r key; do
		M=$(mount_container "$F/$key") || { fail "mount $key"; continue; }
		out=$("$PY" "$CHECK" "$F/expected.json" "$key" "$F/$key" "$M")
		check "$key: $out" test $? -eq 0
		unmount "$M"
	done < <(python3 -c 'import json,sys; print("\n".join(json.load(open(sys.argv[1]))["valid"]))' "$F/expected.json")

}

# rejects DIR: every reject of DIR/reject refused in one line
rejects() {
	F=$1
	for f in "$F"/reject/*.onnx "$F"/reject/*/model.onnx; do
		if [ "$f" = "$F/reject/not_onnx.onnx" ]; then # a GGUF header
			check "not_onnx.onnx: not taken for ONNX" \
				sh -c "! '$TENSORFS' info '$f' 2>&1 | grep -q '^format: *onnx'"
			continue
		fi
		name=${f#"$F/"}
		mnt=$(mktemp -d "$WORK/mnt.XXXXXX")
		if "$TENSORFS" "$f" "$mnt" >"$WORK/rej.out" 2>&1; then
			MOUNTS+=("$mnt")
			fail "$name: mounted"
			continue
		fi
		lines=$(wc -l <"$WORK/rej.out")
		check "$name: one line naming file, field and offset" \
			sh -c "[ $lines -eq 1 ] && grep -q -- '$f: onnx: .*(at byte offset [0-9]*)' '$WORK/rej.out'"
	done

}

# ours: models/external (4 initializers in model.onnx_data, by onnx)
F="$TFS_TESTDATA/onnx"
valid "$F"
rejects "$F"
# metadata.json: the graph's operators by type, as onnx counts them
if "$PY" -c 'import onnx' 2>/dev/null; then
	for m in mlp sparse; do
		eq "$m: graph.op_types" \
			"$("$TENSORFS" cat "$F/models/$m.onnx" .tensorfs/metadata.json |
				python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["graph"]["op_types"], sort_keys=True))')" \
			"$("$PY" -c 'import collections, json, onnx, sys
g = onnx.load(sys.argv[1]).graph
print(json.dumps(collections.Counter(n.op_type if n.domain in ("", "ai.onnx") else n.domain + ":" + n.op_type for n in g.node), sort_keys=True))' "$F/models/$m.onnx")"
	done
fi
M=$(mount_container "$F/models/external") || fail "mount a model's directory"
if [ -n "${M:-}" ]; then
	eq "directory: the model's tensors" \
		"$(getfattr --absolute-names --only-values -n user.tensorfs.onnx.location "$M/model/head/weight")" \
		model.onnx_data
	read -r off len < <(python3 -c '
import json, sys
for t in json.load(open(sys.argv[1]))["valid"]["models/external/model.onnx"]["tensors"]:
    if t["name"] == "head.weight":
        print(t["storage"]["offset"], t["storage"]["length"])' "$F/expected.json")
	check "directory: external bytes served" cmp -s "$M/model/head/weight" \
		<(tail -c +$((off + 1)) "$F/models/external/model.onnx_data" | head -c "$len")
	unmount "$M"
fi
mkdir -p "$WORK/alone"
cat "$F/models/external/model.onnx" >"$WORK/alone/model.onnx"
M=$(mount_container "$WORK/alone/model.onnx") || fail "mount without data"
if [ -n "${M:-}" ]; then
	check "missing data file: EIO" sh -c "! cat '$M/head/weight' >/dev/null 2>&1"
	check "missing data file: the reason names it" \
		sh -c "getfattr --absolute-names --only-values -n user.tensorfs.unreadable '$M/head/weight' | grep -q 'model.onnx_data'"
	unmount "$M"
fi
"$TENSORFS" verify "$WORK/alone/model.onnx" >"$WORK/verify.out" 2>&1
eq "verify without the data file exits 2" "$?" 2
"$TENSORFS" info "$F/models/external/model.onnx" >"$WORK/info.out"
check "info: opset" grep -q '^opset: *ai.onnx 17' "$WORK/info.out"
check "info: producer" grep -q '^producer: *tensorfs-fixtures 1' "$WORK/info.out"
check "info: external tensors" grep -q '^external: *4 tensors in 1 file' "$WORK/info.out"

if shared_case "onnx 1.12's models and onnx's backend test data" onnx/expected.json; then
	F="$TFS_FIXTURES/onnx"
	valid "$F"
	rejects "$F"
	# a model's directory: the model is one directory, its data file no container
	M=$(mount_container "$F/external_one_file") || fail "mount a model's directory"
	if [ -n "${M:-}" ]; then
		eq "directory: the model's tensors" \
			"$(getfattr --absolute-names --only-values -n user.tensorfs.onnx.location "$M/model/pooler/dense/weight")" \
			model.onnx_data
		check "directory: external bytes served" cmp -s "$M/model/pooler/dense/weight" \
			<(tail -c +1473 "$F/external_one_file/model.onnx_data" | head -c 128)
		unmount "$M"
	fi

	# the data file missing: the model mounts, that tensor fails with EIO
	mkdir -p "$WORK/lonely"
	cat "$F/external_one_file/model.onnx" >"$WORK/lonely/model.onnx"
	M=$(mount_container "$WORK/lonely/model.onnx") || fail "mount without data"
	if [ -n "${M:-}" ]; then
		check "missing data file: EIO" sh -c "! cat '$M/pooler/dense/weight' >/dev/null 2>&1"
		check "missing data file: inline Constant still read" \
			test "$(stat -c %s "$M/@constants/encoder/layer/0/attention/Constant_output_0")" = 24
		check "missing data file: the reason names it" \
			sh -c "getfattr --absolute-names --only-values -n user.tensorfs.unreadable '$M/pooler/dense/weight' | grep -q 'model.onnx_data'"
		unmount "$M"
	fi
	"$TENSORFS" verify "$WORK/lonely/model.onnx" >"$WORK/verify.out" 2>&1
	eq "verify without the data file exits 2" "$?" 2

	# tensorfs info: opset, producer, parameters, external tensors
	"$TENSORFS" info "$F/external_one_file/model.onnx" >"$WORK/info.out"
	check "info: opset" grep -q '^opset: *ai.onnx 17' "$WORK/info.out"
	check "info: producer" grep -q '^producer: *tensorfs-fixtures 1' "$WORK/info.out"
	check "info: external tensors" grep -q '^external: *9 tensors in 1 file' "$WORK/info.out"
fi
finish
