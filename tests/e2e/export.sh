#!/usr/bin/env bash
# The safetensors export (docs/export.md): .tensorfs/export/ in real mounts,
# tensorfs convert and tensorfs pack.  Every valid fixture of every format,
# the project's (tests/fixtures/*/valid, */torch_written, the files beside
# them) and the shared ones when present (zip and legacy PyTorch, GGUF f16,
# .npz, zTensor zstd, primitiv, HDF5, big-endian and Fortran-order .npy
# among them) exports tensors equal value
# for value to what numpy reads from the tensor files themselves
# (tests/e2e/export.py, an independent reader: tests/export/st_read.py);
# convert writes the view's bytes; an export of an export is the same
# bytes; shards are what transformers writes; pack of a cp -a of a mount
# is its export (big-endian and Fortran-order tensors too).
. "$(dirname "$0")/lib.sh"
need_fuse
if ! /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
	echo "SKIP: Debian's python3-numpy is not installed"
	exit 77
fi
PY=/usr/bin/python3
HERE=$(dirname "$0")

files=("$SAMPLE")
candidates=("$TFS_TESTDATA"/*/valid/* "$TFS_TESTDATA"/*/torch_written/*
	"$TFS_TESTDATA"/*/*.*)
if shared_case "the shared fixtures' exports" tsr/test_labels.tsr; then
	candidates+=("$TFS_FIXTURES"/*/*.* "$TFS_FIXTURES"/*/synthesized/*
		"$TFS_FIXTURES"/*/reference/*)
fi
for f in "${candidates[@]}"; do
	[ -f "$f" ] || continue
	case "$f" in *.json | *.md | *.py | *.txt | *LICENSE) continue ;; esac
	"$TENSORFS" ls "$f" >/dev/null 2>&1 && files+=("$f")
done
check "some fixtures to export" test "${#files[@]}" -gt 20
total=0
for f in "${files[@]}"; do
	short=${f#"$TFS_FIXTURES"/}
	short=${short#"$TFS_TESTDATA"/}
	M=$(mount_container "$f") || { fail "mount $f"; continue; }
	X="$M/.tensorfs/export/model.safetensors"
	if n=$($PY "$HERE/export.py" "$M" "$X" 2>&1); then
		total=$((total + ${n##*$'\n'}))
	else
		fail "export of $short: $n"
	fi
	rm -f "$WORK/c.safetensors"
	if "$TENSORFS" convert "$f" "$WORK/c.safetensors" 2>/dev/null; then
		cmp -s "$X" "$WORK/c.safetensors" ||
			fail "convert of $short differs from the mounted view"
		# tensorfs's own reader, and an export of the export
		"$TENSORFS" convert "$WORK/c.safetensors" "$WORK/cc.safetensors" \
			2>/dev/null && cmp -s "$WORK/c.safetensors" \
			"$WORK/cc.safetensors" ||
			fail "an export of the export of $short differs"
		rm -f "$WORK/cc.safetensors"
	else
		fail "convert $short"
	fi
	unmount "$M"
done
check "tensors compared value for value ($total)" test "$total" -gt 300

# -o as=float32: GGUF quantized blocks exported as F32, values as the view
G="$TFS_TESTDATA/gguf/valid/v3_every_type.gguf"
M=$(mount_container "$G" -o as=float32) || fail "mount -o as=float32"
check "as=float32: values of the float32 view" \
	$PY "$HERE/export.py" "$M" "$M/.tensorfs/export/model.safetensors"
q=$(getfattr -n user.tensorfs.stored_dtype --only-values "$M/type/q4_0" \
	2>/dev/null)
eq "as=float32: q4_0 is a view" "$q" "q4_0"
$PY - "$M/.tensorfs/export/model.safetensors" <<'PY' ||
import json, struct, sys
d = open(sys.argv[1], "rb").read()
h = json.loads(d[8:8 + struct.unpack("<Q", d[:8])[0]])
assert h["type.q4_0"]["dtype"] == "F32", h["type.q4_0"]
assert h["__metadata__"]["tensorfs.as"] == "float32"
PY
	fail "as=float32: q4_0 exported as F32"
unmount "$M"
M=$(mount_container "$G") || fail "mount gguf"
$PY - "$M/.tensorfs/export/model.safetensors" <<'PY' ||
import json, struct, sys
d = open(sys.argv[1], "rb").read()
h = json.loads(d[8:8 + struct.unpack("<Q", d[:8])[0]])
left = json.loads(h["__metadata__"]["tensorfs.left_out"])
assert "type.q4_0" not in h and "type.q4_0" in left, left
assert h["type.f16"]["dtype"] == "F16", h["type.f16"]
PY
	fail "gguf: quantized blocks listed in tensorfs.left_out"
unmount "$M"

# shards: -o export_shard and --max-shard-size give the same files
Z="$TFS_TESTDATA/npy/valid/savez_many.npz"
M=$(mount_container "$Z" -o export_shard=20) || fail "mount export_shard"
ls "$M/.tensorfs/export" >"$WORK/shards"
check "shards: model-00001-of-0000N and the index" \
	grep -qx 'model-00001-of-0000[2-9].safetensors' "$WORK/shards"
check "shards: no model.safetensors" \
	bash -c "! grep -qx model.safetensors '$WORK/shards'"
check "shards: values" $PY "$HERE/export.py" "$M" "$M/.tensorfs/export"
"$TENSORFS" convert --max-shard-size=20 "$Z" "$WORK/sh" 2>/dev/null ||
	fail "convert --max-shard-size"
check "shards: convert gives the view's files" \
	diff -r -x left_out.json "$M/.tensorfs/export" "$WORK/sh"
check "left_out.json lists the records left out, with why" \
	$PY -c "import json, sys
v = json.load(open('$M/.tensorfs/export/left_out.json'))
assert v == [{'name': 'names', 'path': 'names',
              'why': 'no safetensors dtype'}], v"
$PY - "$WORK/sh/model.safetensors.index.json" <<'PY' ||
import json, sys
text = open(sys.argv[1]).read()
idx = json.loads(text)
# what transformers writes: json.dumps(index, indent=2, sort_keys=True) + "\n"
assert text == json.dumps(idx, indent=2, sort_keys=True) + "\n"
assert list(idx) == ["metadata", "weight_map"]
PY
	fail "shards: the index is transformers' text"
unmount "$M"
# a sharded safetensors directory mounts as one tree and exports again
M=$(mount_container "$WORK/sh") || fail "mount the shards"
check "a sharded directory exports value for value" \
	$PY "$HERE/export.py" "$M" "$M/.tensorfs/export/model.safetensors"
unmount "$M"

out=$("$TENSORFS" convert --max-shard-size=banana "$Z" "$WORK/b" 2>&1)
eq "--max-shard-size=banana: exit 1" "$?" "1"
check "naming it" grep -q "max-shard-size=banana" <<<"$out"
check "nothing written" test ! -e "$WORK/b"

# -o export=off hides it
M=$(mount_container "$Z" -o export=off) || fail "mount export=off"
check "export=off: no .tensorfs/export" test ! -e "$M/.tensorfs/export"
unmount "$M"

# convert: never over a file without --force; the refusal names it
echo keep >"$WORK/exists.safetensors"
out=$("$TENSORFS" convert "$Z" "$WORK/exists.safetensors" 2>&1)
eq "convert refuses an existing file" "$?" "1"
check "the refusal names it" grep -q "exists.safetensors: File exists" \
	<<<"$out"
eq "the file is untouched" "$(cat "$WORK/exists.safetensors")" "keep"
check "convert --force replaces it" "$TENSORFS" convert --force "$Z" \
	"$WORK/exists.safetensors"
check "no temporary file left" \
	bash -c "! ls -a '$WORK' | grep -q '\.tmp-'"

# pack: a cp -a of a mount is its export, byte for byte
P="$TFS_TESTDATA/pytorch/valid/nested_zip.pt"
M=$(mount_container "$P") || fail "mount pytorch"
cp -a "$M" "$WORK/tree"
check "pack of a cp -a of a mount is its export" bash -c \
	"'$TENSORFS' pack '$WORK/tree' '$WORK/p.safetensors' 2>/dev/null &&
	cmp '$WORK/p.safetensors' '$M/.tensorfs/export/model.safetensors'"
unmount "$M"
# a tensor replaced by the user (numpy writes it, the xattrs stay)
victim=$(cd "$WORK/tree" && find . -path ./.tensorfs -prune -o -type f \
	-print | sort | head -n 1)
victim=${victim#./}
name=$(getfattr -n user.tensorfs.name --only-values "$WORK/tree/$victim")
dtype=$(getfattr -n user.tensorfs.dtype --only-values "$WORK/tree/$victim")
size=$(stat -c %s "$WORK/tree/$victim")
head -c "$size" /dev/urandom >"$WORK/new"
cat "$WORK/new" >"$WORK/tree/$victim"
"$TENSORFS" pack --force "$WORK/tree" "$WORK/p.safetensors" 2>/dev/null ||
	fail "pack of an edited tree"
$PY -c "
import sys; sys.path.insert(0, '$HERE/../export')
import st_read
meta, ts = st_read.load('$WORK/p.safetensors')
assert ts['''$name'''].tobytes() == open('$WORK/new', 'rb').read()
" || fail "pack: the replaced tensor ($dtype) has the new bytes"
# .npy files are tensors, named by their path
mkdir -p "$WORK/np/sub"
$PY -c "
import numpy as np
np.save('$WORK/np/sub/w.npy', np.arange(6, dtype='<f4').reshape(2, 3))
np.save('$WORK/np/b.npy', np.array([1, 2], dtype='<i8'))
"
check "pack of .npy files" "$TENSORFS" pack "$WORK/np" "$WORK/np.safetensors"
got=$($PY "$HERE/../export/st_read.py" "$WORK/np.safetensors" | cut -d' ' -f1-3)
eq "pack: .npy names and shapes" "$got" "b <i8 [2]
sub.w <f4 [2,3]"
# refusals name the file
printf 'abc' >"$WORK/np/sub/w.npy"
cp "$WORK/new" "$WORK/tree/$victim.extra"
setfattr -n user.tensorfs.dtype -v float32 "$WORK/tree/$victim.extra"
out=$("$TENSORFS" pack "$WORK/tree" "$WORK/q.safetensors" 2>&1)
check "pack refuses a file without a shape, naming it" \
	grep -q "$victim.extra: no user.tensorfs.shape" <<<"$out"
setfattr -n user.tensorfs.shape -v "[$((size + 1))]" \
	"$WORK/tree/$victim.extra"
out=$("$TENSORFS" pack "$WORK/tree" "$WORK/q.safetensors" 2>&1)
check "pack refuses a size that is not dtype x shape, naming it" \
	grep -q "$victim.extra: its size does not match" <<<"$out"
check "nothing written on a refusal" test ! -e "$WORK/q.safetensors"

# pack swaps and transposes as the export does: big-endian and Fortran-
# order arrays (numpy writes them), mounted, copied with cp -a, packed: the
# export byte for byte, with and without -o npy; the .npy files packed:
# numpy's values
mkdir -p "$WORK/order"
$PY -c "
import numpy as np
d = '$WORK/order/'
np.save(d + 'be.npy', np.arange(6, dtype='>f4').reshape(2, 3) / 7)
np.save(d + 'f.npy', np.asfortranarray(np.arange(24, dtype='<i2').reshape(3, 4, 2)))
np.save(d + 'bef.npy', np.asfortranarray((np.arange(6) + 1j * np.arange(6)).astype('>c8').reshape(2, 3)))
np.save(d + 'be1.npy', np.arange(5, dtype='>u8'))
"
for opts in export=on npy; do
	M=$(mount_container "$WORK/order" -o "$opts") || { fail "mount order $opts"; continue; }
	rm -rf "$WORK/order-tree"
	cp -a "$M" "$WORK/order-tree"
	check "pack of a cp -a of a mount of big-endian and Fortran arrays (-o $opts) is its export" \
		bash -c "'$TENSORFS' pack --force '$WORK/order-tree' \
		'$WORK/order.safetensors' && cmp '$WORK/order.safetensors' \
		'$M/.tensorfs/export/model.safetensors'"
	unmount "$M"
done
"$TENSORFS" pack "$WORK/order" "$WORK/order-npy.safetensors" 2>/dev/null ||
	fail "pack of big-endian and Fortran .npy files"
$PY -c "
import sys; sys.path.insert(0, '$HERE/../export')
import numpy as np, st_read
meta, ts = st_read.load('$WORK/order-npy.safetensors')
for n in ('be', 'f', 'bef', 'be1'):
    want = np.load('$WORK/order/' + n + '.npy')
    got = ts[n]
    assert got.dtype.byteorder in '<|=' and got.shape == want.shape, n
    assert np.array_equal(got, want), n
" || fail "pack: big-endian and Fortran arrays have numpy's values"

# torch.save files (zip and legacy) against torch.load
if $PY -c 'import torch' 2>/dev/null; then
	$PY - "$WORK" <<'PY'
import sys, torch
torch.manual_seed(0)
sd = {"w": torch.randn(3, 4), "b": torch.arange(5, dtype=torch.int64),
      "h": torch.randn(2, 2).half(), "bf": torch.randn(4).bfloat16(),
      "t": torch.randn(4, 3).t()}
torch.save(sd, sys.argv[1] + "/zip.pt")
torch.save(sd, sys.argv[1] + "/legacy.pt",
           _use_new_zipfile_serialization=False)
PY
	for k in zip legacy; do
		"$TENSORFS" convert "$WORK/$k.pt" "$WORK/$k.safetensors" \
			2>/dev/null || fail "convert $k.pt"
		what="convert of a torch.save ($k) equals torch.load"
		$PY - "$WORK/$k.pt" "$WORK/$k.safetensors" "$HERE/../export" \
			<<'PY' && ok "$what" || fail "$what"
import sys, torch
sys.path.insert(0, sys.argv[3])
import st_read
sd = torch.load(sys.argv[1], weights_only=True)
meta, ts = st_read.load(sys.argv[2])
assert sorted(ts) == sorted(sd), (sorted(ts), sorted(sd))
for k, v in sd.items():
    v = v.contiguous()
    if v.dtype == torch.bfloat16:
        want = v.view(torch.int16).numpy().tobytes()
    else:
        want = v.numpy().tobytes()
    assert list(ts[k].shape) == list(v.shape), k
    assert ts[k].tobytes() == want, k
PY
	done
else
	echo "skip: torch is not installed"
fi
finish
