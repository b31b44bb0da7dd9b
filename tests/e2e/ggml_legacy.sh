#!/usr/bin/env bash
# Pre-GGUF ggml files, really mounted: every file of the shared fixtures
# (real whisper.cpp, silero VAD and llama.cpp files, synthesized ones) and
# of tests/fixtures/ggml_legacy (generate.py); every tensor file is
# compared with the bytes at the offset expected.json gives, its dtype
# (named by generation) and shape xattrs with the expectation;
# hyper-parameters and the vocabulary in metadata.json; the real files of
# ../shared/real/ggml when present; the rejects refused with one line
# naming the field and the byte offset.  Without ../shared its cases skip
# one by one and the project's files are checked alone.
. "$(dirname "$0")/lib.sh"
need_fuse
FIX="$TFS_FIXTURES/ggml-legacy"
GEN="$TFS_TESTDATA/ggml_legacy"
REAL="$TFS_FIXTURES/../real/ggml"
# the directories to check: DIR (with expected.json) and where in it the
# valid files are
dirs=("$GEN" valid)
shared_case "the shared ggml-legacy files" ggml-legacy/expected.json &&
	dirs+=("$FIX" .)

# FILE DIR: one line per tensor of DIR/expected.json: name, offset, nbytes,
# dtype (with the generation suffix tensorfs gives), shape
expect_tensors() {
	python3 - "$2/expected.json" "$(basename "$1")" <<'PY'
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
check_tensors() { # FILE MNT DIR
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
	done < <(expect_tensors "$file" "$3")
	echo "$count"
}

# FILE DIR: every tensor, the header fields, as DIR/expected.json lists
check_file() {
	local f=$1 dir=$2 b M want
	b=$(basename "$f")
	M=$(mount_container "$f") || { fail "mount $b"; return; }
	want=$(expect_tensors "$f" "$dir" | wc -l)
	eq "$b: $want tensors, every byte" "$(check_tensors "$f" "$M" "$dir" | tail -n 1)" "$want"
	eq "$b: as many files" \
		"$(find "$M" -path "$M/.tensorfs" -prune -o -type f -print | wc -l)" "$want"
	check "$b: family and hparams in metadata.json" python3 - "$dir/expected.json" "$b" "$M/.tensorfs/metadata.json" <<'PY'
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
}

for ((i = 0; i < ${#dirs[@]}; i += 2)); do
	dir=${dirs[i]}
	n=0
	for f in "$dir/${dirs[i + 1]}"/*.bin; do
		n=$((n + 1))
		check_file "$f" "$dir"
	done
	eq "$(basename "$dir"): every valid file listed in expected.json" "$n" \
		"$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["valid"]))' "$dir/expected.json")"
done

# the real files, when present
if shared_case "whisper tiny" ../real/ggml/for-tests-ggml-tiny.bin; then
	M=$(mount_container "$REAL/for-tests-ggml-tiny.bin") || fail "mount tiny"
	eq "tiny: architecture" "$(xa "$M" architecture)" whisper
	eq "tiny: mel filters" "$(xa "$M/mel_filters" shape)" "[80,201]"
	eq "tiny: vocabulary" "$(python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))["vocab"]; print(v["count"], v["tokens"][0], repr(v["tokens"][50253]))' "$M/.tensorfs/metadata.json")" "50257 ! ' Pakistani'"
	unmount "$M"
fi
if shared_case "silero VAD" ../real/ggml/for-tests-silero-v5.1.2-ggml.bin; then
	M=$(mount_container "$REAL/for-tests-silero-v5.1.2-ggml.bin") || fail "mount silero"
	eq "silero: 15 tensors" "$(find "$M" -path "$M/.tensorfs" -prune -o -type f -print | wc -l)" 15
	check "silero: the scalar bias is 4 bytes" test "$(stat -c %s "$M/_model/decoder/decoder/2/bias")" -eq 4
	unmount "$M"
fi
# generate.py's VAD: a scalar (n_dims 0) is a 4-byte file of shape []
M=$(mount_container "$GEN/valid/silero-vad-synth.bin") || fail "mount the VAD"
check "VAD: the scalar bias is 4 bytes" test "$(stat -c %s "$M/_model/decoder/decoder/2/bias")" -eq 4
eq "VAD: its shape" "$(xa "$M/_model/decoder/decoder/2/bias" shape)" "[]"
unmount "$M"

for ((i = 0; i < ${#dirs[@]}; i += 2)); do
	v1="${dirs[i]}/${dirs[i + 1]}/llama-ggjt-v1-q4_0-synth.bin"
	# -o npy,as=float32: F16 converted, an old Q4_0 block left as its records
	M=$(mount_container "$v1" -o npy,as=float32) || fail "mount -o npy,as=float32"
	check "as=float32: float16 shown as <f4" sh -c "head -c 128 '$M/layers/0/attention_norm/weight.npy' | grep -aqF \"'descr': '<f4'\""
	check "as=float32: q4_0_v1 kept as 20-byte records" sh -c "head -c 128 '$M/output/weight.npy' | grep -aqF \"'descr': '|V20', 'fortran_order': False, 'shape': (4, 1)\""
	eq "q4_0_v1 dtype" "$(xa "$M/output/weight.npy" dtype)" q4_0_v1
	unmount "$M"

	# tensorfs info: the generation and the hparams
	check "info: summary of a ggjt v1 file" sh -c \
		"'$TENSORFS' info '$v1' | grep -q '^summary: llama.cpp ggjt v1, quantization generation 0, 32-byte aligned: n_vocab=4 '"
done

refused() { # PATH STATUS WORD OFFSET (empty: any)
	local rc
	"$TENSORFS" "$1" "$(mktemp -d "$WORK/mnt.XXXXXX")" 2>"$WORK/err"
	rc=$?
	eq "$(basename "$1"): refused with $2" "$rc" "$2"
	check "$(basename "$1"): one line naming $3 at byte $4" \
		test "$(wc -l <"$WORK/err")" -eq 1 -a -n "$(grep -F -- "$3" "$WORK/err" | grep -F "offset $4")"
}
# output.weight of the ggjt v3 file is its 4th record, at 928 (both
# generators' files have one layout: 4 tokens, the same four records)
for ((i = 0; i < ${#dirs[@]}; i += 2)); do
	R=${dirs[i]}/reject
	refused "$R/ndims_5.bin" 2 "n_dims: 5" "928)"
	refused "$R/name_length_past_eof.bin" 2 "name length" "932)"
	refused "$R/removed_type_q4_2_in_v3.bin" 2 "type: 4" "936)"
	refused "$R/truncated_tensor_data.bin" 2 "output.weight" "992)"
	refused "$R/trailing_garbage.bin" 2 "ends inside" "1064)"
	refused "$R/ggjt_version_4.bin" 3 "version 4" "4)"
done
# magic, 11 hparams, n_mel and n_fft (1, 1), a float, 1 token of 1 byte
shared_case "whisper.cpp's bad n_dims model" ggml-legacy/reject/for-tests-ggml-whisper-bad-ndims.bin &&
	refused "$FIX/reject/for-tests-ggml-whisper-bad-ndims.bin" 2 "n_dims: 64" "69)"
shared_case "parakeet" ../real/ggml/for-tests-ggml-parakeet-tdt.bin &&
	refused "$REAL/for-tests-ggml-parakeet-tdt.bin" 2 "unknown ggml-family header" ""
check "no mount left behind" sh -c "! grep -q ' $WORK/mnt' /proc/self/mountinfo"
finish
