#!/usr/bin/env bash
# Pre-GGUF ggml files, really mounted: every file of the shared fixtures
# (real whisper.cpp, silero VAD and llama.cpp files, synthesized ones);
# every tensor file is compared with the bytes at the offset expected.json
# gives, its dtype (named by generation) and shape xattrs with the
# expectation; hyper-parameters and the vocabulary in metadata.json; the
# real files of ../shared/real/ggml when present; the rejects refused with
# one line naming the field and the byte offset.
. "$(dirname "$0")/lib.sh"
need_fuse
need_fixtures
FIX="$TFS_FIXTURES/ggml-legacy"
REAL="$TFS_FIXTURES/../real/ggml"

# FILE: one line per tensor of expected.json: name, offset, nbytes, dtype
# (with the generation suffix tensorfs gives), shape
expect_tensors() {
	python3 - "$FIX/expected.json" "$(basename "$1")" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))['valid'][sys.argv[2]]
fam = e['family']
gen = (e['version'] - 1 if fam == 'llama-ggjt' else
       e['qnt_version'] if fam == 'whisper' else 2 if fam == 'whisper-vad' else 0)
for t in e['tensors']:
    d = t['dtype']
    if d not in ('float32', 'float16') and gen < 2:
        d += '_v%d' % (gen + 1)
    print('\t'.join([t['name'], str(t['offset']), str(t['nbytes']), d,
                     json.dumps(t['shape'], separators=(',', ':'))]))
if fam == 'whisper':
    m = e['mel_filters']
    print('\t'.join(['mel_filters', str(m['offset']), str(m['nbytes']), 'float32',
                     '[%d,%d]' % (m['n_mel'], m['n_fft'])]))
PY
}

# the path of tensor NAME in the mount MNT (its manifest)
path_of() {
	python3 -c 'import json,sys
for t in json.load(open(sys.argv[1]))["tensors"]:
    if t["name"] == sys.argv[2]: print(t["path"])' "$1/.tensorfs/manifest.json" "$2"
}

xa() { # PATH KEY
	getfattr --absolute-names --only-values -n "user.tensorfs.$2" "$1" 2>/dev/null
}

# every tensor of FILE under MNT; prints how many matched in every respect
check_tensors() { # FILE MNT
	local file=$1 m=$2 name off n dtype shape p count=0 bad
	while IFS=$'\t' read -r name off n dtype shape; do
		p="$m/$(path_of "$m" "$name")"
		bad=
		cmp -s "$p" <(tail -c +$((off + 1)) "$file" | head -c "$n") ||
			bad="bytes differ from offset $off"
		[ "$(stat -c %s "$p")" = "$n" ] || bad="$bad size"
		[ "$(xa "$p" dtype)" = "$dtype" ] || bad="$bad dtype, want $dtype"
		[ "$(xa "$p" shape)" = "$shape" ] || bad="$bad shape, want $shape"
		if [ -n "$bad" ]; then
			echo "$(basename "$file"): $name: $bad" >&2
		else
			count=$((count + 1))
		fi
	done < <(expect_tensors "$file")
	echo "$count"
}

for f in "$FIX"/*.bin; do
	b=$(basename "$f")
	M=$(mount_container "$f") || { fail "mount $b"; continue; }
	want=$(expect_tensors "$f" | wc -l)
	eq "$b: $want tensors, every byte" "$(check_tensors "$f" "$M" | tail -n 1)" "$want"
	eq "$b: as many files" \
		"$(find "$M" -path "$M/.tensorfs" -prune -o -type f -print | wc -l)" "$want"
	check "$b: family and hparams in metadata.json" python3 - "$FIX/expected.json" "$b" "$M/.tensorfs/metadata.json" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))['valid'][sys.argv[2]]
m = json.load(open(sys.argv[3]))
assert m['format'] == 'ggml-legacy' and m['family'] == e['family'], m.get('family')
assert m['tensors_start'] == e['tensors_start']
if e['family'] == 'whisper-vad':
    hp = m['hparams']
    assert hp['model_type'] == e['model_type']
    assert '.'.join(map(str, hp['version'])) == e['version']
    assert hp['encoder_layers'] == e['encoder_layers']
else:
    assert m['hparams'] == e['hparams'], m['hparams']
    assert m['vocab']['count'] == e['vocab_count'] == len(m['vocab']['tokens'])
PY
	unmount "$M"
done

# the real files, when present
if [ -f "$REAL/for-tests-ggml-tiny.bin" ]; then
	M=$(mount_container "$REAL/for-tests-ggml-tiny.bin") || fail "mount tiny"
	eq "tiny: architecture" "$(xa "$M" architecture)" whisper
	eq "tiny: mel filters" "$(xa "$M/mel_filters" shape)" "[80,201]"
	eq "tiny: vocabulary" "$(python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))["vocab"]; print(v["count"], v["tokens"][0], repr(v["tokens"][50253]))' "$M/.tensorfs/metadata.json")" "50257 ! ' Pakistani'"
	unmount "$M"
else
	echo "SKIP: $REAL/for-tests-ggml-tiny.bin is missing"
fi
if [ -f "$REAL/for-tests-silero-v5.1.2-ggml.bin" ]; then
	M=$(mount_container "$REAL/for-tests-silero-v5.1.2-ggml.bin") || fail "mount silero"
	eq "silero: 15 tensors" "$(find "$M" -path "$M/.tensorfs" -prune -o -type f -print | wc -l)" 15
	check "silero: the scalar bias is 4 bytes" test "$(stat -c %s "$M/_model/decoder/decoder/2/bias")" -eq 4
	unmount "$M"
else
	echo "SKIP: $REAL/for-tests-silero-v5.1.2-ggml.bin is missing"
fi

# -o npy,as=float32: F16 converted, an old Q4_0 block left as its records
M=$(mount_container "$FIX/llama-ggjt-v1-q4_0-synth.bin" -o npy,as=float32) || fail "mount -o npy,as=float32"
check "as=float32: float16 shown as <f4" sh -c "head -c 128 '$M/layers/0/attention_norm/weight.npy' | grep -aqF \"'descr': '<f4'\""
check "as=float32: q4_0_v1 kept as 20-byte records" sh -c "head -c 128 '$M/output/weight.npy' | grep -aqF \"'descr': '|V20', 'fortran_order': False, 'shape': (4, 1)\""
eq "q4_0_v1 dtype" "$(xa "$M/output/weight.npy" dtype)" q4_0_v1
unmount "$M"

# tensorfs info: the generation and the hparams
check "info: summary of a ggjt v1 file" sh -c \
	"'$TENSORFS' info '$FIX/llama-ggjt-v1-q4_0-synth.bin' | grep -q '^summary: llama.cpp ggjt v1, quantization generation 0, 32-byte aligned: n_vocab=4 '"

refused() { # PATH STATUS WORD OFFSET (empty: any)
	local rc
	"$TENSORFS" "$1" "$(mktemp -d "$WORK/mnt.XXXXXX")" 2>"$WORK/err"
	rc=$?
	eq "$(basename "$1"): refused with $2" "$rc" "$2"
	check "$(basename "$1"): one line naming $3 at byte $4" \
		test "$(wc -l <"$WORK/err")" -eq 1 -a -n "$(grep -F -- "$3" "$WORK/err" | grep -F "offset $4")"
}
# output.weight of the ggjt v3 file is its 4th record, at 928
refused "$FIX/reject/ndims_5.bin" 2 "n_dims: 5" "928)"
refused "$FIX/reject/name_length_past_eof.bin" 2 "name length" "932)"
refused "$FIX/reject/removed_type_q4_2_in_v3.bin" 2 "type: 4" "936)"
refused "$FIX/reject/truncated_tensor_data.bin" 2 "output.weight" "992)"
refused "$FIX/reject/trailing_garbage.bin" 2 "ends inside" "1064)"
refused "$FIX/reject/ggjt_version_4.bin" 3 "version 4" "4)"
# magic, 11 hparams, n_mel and n_fft (1, 1), a float, 1 token of 1 byte
refused "$FIX/reject/for-tests-ggml-whisper-bad-ndims.bin" 2 "n_dims: 64" "69)"
if [ -f "$REAL/for-tests-ggml-parakeet-tdt.bin" ]; then
	refused "$REAL/for-tests-ggml-parakeet-tdt.bin" 2 "unknown ggml-family header" ""
fi
check "no mount left behind" sh -c "! grep -q ' $WORK/mnt' /proc/self/mountinfo"
finish
