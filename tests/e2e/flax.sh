#!/usr/bin/env bash
# Flax msgpack checkpoints, really mounted: every tensor of the shared
# fixtures compared with the bytes at the offset expected.json gives, its
# dtype and shape xattrs; the leaves in metadata.json; the chunked array
# served as one file, its chunks' bytes in order (whole and from the
# middle, across a chunk boundary); the rejects refused with one line
# naming the field and the byte offset.
. "$(dirname "$0")/lib.sh"
need_fuse
need_fixtures
FIX="$TFS_FIXTURES/flax-msgpack"

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

for f in "$FIX"/*.msgpack; do
	b=$(basename "$f")
	M=$(mount_container "$f") || { fail "mount $b"; continue; }
	good=0
	want=$(expect_tensors "$f" | wc -l)
	while IFS=$'\t' read -r name off n dtype shape; do
		p="$M/${name//.//}"
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

refused() { # PATH STATUS WORD OFFSET
	local rc
	"$TENSORFS" "$1" "$(mktemp -d "$WORK/mnt.XXXXXX")" 2>"$WORK/err"
	rc=$?
	eq "$(basename "$1"): refused with $2" "$rc" "$2"
	check "$(basename "$1"): one line naming $3 at byte $4" \
		test "$(wc -l <"$WORK/err")" -eq 1 -a -n "$(grep -F -- "$3" "$WORK/err" | grep -F "offset $4)")"
}
refused "$FIX/reject/ext_size_mismatch.msgpack" 2 "20 bytes" 18
refused "$FIX/reject/object_dtype.msgpack" 3 "'object'" 9
refused "$FIX/reject/unknown_ext.msgpack" 3 "ext type 9" 3
refused "$FIX/reject/chunk_sum_mismatch.msgpack" 2 "need 20" 5
refused "$FIX/reject/deep_nesting.msgpack" 2 "deeper than 64" 189
refused "$FIX/reject/truncated.msgpack" 2 "past the end" 720
check "no mount left behind" sh -c "! grep -q ' $WORK/mnt' /proc/self/mountinfo"
finish
