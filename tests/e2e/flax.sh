#!/usr/bin/env bash
# Flax msgpack checkpoints, really mounted: every tensor of the project's
# fixtures (tests/fixtures/flax) and of the shared ones when present
# compared with the bytes at the offset expected.json gives, its
# dtype and shape xattrs; the leaves in metadata.json; the chunked array
# served as one file, its chunks' bytes in order (whole and from the
# middle, across a chunk boundary); the rejects refused with one line
# naming the field and the byte offset.
. "$(dirname "$0")/lib.sh"
need_fuse

xa() { # PATH KEY
	getfattr --absolute-names --only-values -n "user.tensorfs.$2" "$1" 2>/dev/null
}

# FILE: name, offset (or "chunked"), nbytes, dtype, shape per tensor
expect_tensors() {
	python3 - "$FIX/expected.json" "$(basename "$1")" <<'PY'
import json, sys
for t in json.load(open(sys.argv[1]))['valid'][sys.argv[2]]['tensors']:
    off = 'chunked' if t['offset'] is None else str(t['offset'])
    print('\t'.join([t['name'], off, str(t['nbytes']), t['dtype'],
                     json.dumps(t['shape'], separators=(',', ':'))]))
PY
}

# FILE NAME: the bytes of a chunked array's chunks, in order, to stdout
chunk_bytes() {
	python3 - "$FIX/expected.json" "$(basename "$1")" "$1" "$2" <<'PY'
import json, sys
for t in json.load(open(sys.argv[1]))['valid'][sys.argv[2]]['tensors']:
    if t['name'] == sys.argv[4]:
        b = open(sys.argv[3], 'rb').read()
        sys.stdout.buffer.write(b''.join(b[c['offset']:c['offset'] + c['nbytes']]
                                         for c in t['chunks']))
PY
}

# valid_set DIR: every .msgpack of DIR against DIR/expected.json
valid_set() {
	FIX=$1
	for f in "$FIX"/*.msgpack; do
		b=$(basename "$f")
		M=$(mount_container "$f") || { fail "mount $b"; continue; }
		good=0
		want=$(expect_tensors "$f" | wc -l)
		while IFS=$'\t' read -r name off n dtype shape; do
			# a "%" of a key is %25 in the tree (docs/tree.md)
			p=${name//%/%25}
			p="$M/${p//.//}"
			bad=
			if [ "$off" = chunked ]; then
				cmp -s "$p" <(chunk_bytes "$f" "$name") || bad="chunks differ"
				# from byte 10 on: across the first chunk's end (16)
				cmp -s <(dd if="$p" bs=1 skip=10 count=20 2>/dev/null) \
					<(chunk_bytes "$f" "$name" | tail -c +11 | head -c 20) ||
					bad="$bad a read across chunks differs"
			else
				cmp -s "$p" <(tail -c +$((off + 1)) "$f" | head -c "$n") ||
					bad="bytes differ from offset $off"
			fi
			[ "$(stat -c %s "$p")" = "$n" ] || bad="$bad size"
			[ "$(xa "$p" dtype)" = "$dtype" ] || bad="$bad dtype"
			[ "$(xa "$p" shape)" = "$shape" ] || bad="$bad shape"
			if [ -n "$bad" ]; then echo "$b: $name: $bad" >&2; else good=$((good + 1)); fi
		done < <(expect_tensors "$f")
		eq "$b: $want tensors" "$good" "$want"
		check "$b: the leaves in metadata.json" python3 - "$FIX/expected.json" "$b" "$M/.tensorfs/metadata.json" <<'PY'
import json, sys
e = json.load(open(sys.argv[1]))['valid'][sys.argv[2]]
m = json.load(open(sys.argv[3]))
assert m['format'] == 'flax', m['format']
assert m['leaves'] == {l['name']: l['value'] for l in e['leaves']}, m['leaves']
PY
		unmount "$M"
	done
	check "info names the format" sh -c "'$TENSORFS' info '$FIX/flax_model.msgpack' | grep -q '^format:   flax'"
}

refused() { # PATH STATUS WORD OFFSET
	local rc
	"$TENSORFS" "$1" "$(mktemp -d "$WORK/mnt.XXXXXX")" 2>"$WORK/err"
	rc=$?
	eq "$(basename "$1"): refused with $2" "$rc" "$2"
	check "$(basename "$1"): one line naming $3 at byte $4" \
		test "$(wc -l <"$WORK/err")" -eq 1 -a -n "$(grep -F -- "$3" "$WORK/err" | grep -F "offset $4)")"
}

valid_set "$TFS_TESTDATA/flax/valid"
# the project's rejects as expected.json lists them
while IFS=$'\t' read -r file status word offset; do
	refused "$TFS_TESTDATA/flax/reject/$file" "$status" "$word" "$offset"
done < <(python3 -c '
import json, sys
for f, r in sorted(json.load(open(sys.argv[1]))["reject"].items()):
    print("\t".join([f, str(r["status"]), r["word"], str(r["offset"])]))' \
	"$TFS_TESTDATA/flax/valid/expected.json")

if shared_case "the shared flax files" flax-msgpack/expected.json; then
	valid_set "$TFS_FIXTURES/flax-msgpack"
	R="$TFS_FIXTURES/flax-msgpack/reject"
	refused "$R/ext_size_mismatch.msgpack" 2 "20 bytes" 18
	refused "$R/object_dtype.msgpack" 3 "'object'" 9
	refused "$R/unknown_ext.msgpack" 3 "ext type 9" 3
	refused "$R/chunk_sum_mismatch.msgpack" 2 "need 20" 5
	refused "$R/deep_nesting.msgpack" 2 "deeper than 64" 189
	refused "$R/truncated.msgpack" 2 "past the end" 720
fi
check "no mount left behind" sh -c "! grep -q ' $WORK/mnt' /proc/self/mountinfo"
finish
