#!/usr/bin/env bash
# The public C API over a server that drops the connection: half-way
# through the first answer (the probe), half-way through a header page
# the parser needs (mid-open) and half-way through a tensor (mid-read).
# Each call returns -EIO (never EAGAIN) with tfs_errmsg naming the URL and
# the bytes; the process is never killed (SIGBUS).  In the suite
# 'sanitized': .ci/run runs it under ASan + UBSan too.
# TFS_REMOTE_FAULTS: the client (tests/lib/remote_faults.c).
. "$(dirname "$0")/../e2e/lib.sh"
: "${TFS_REMOTE_FAULTS:?}"
export TENSORFS_REMOTE_OPTIONS=no_cache,remote_timeout=5

# a safetensors file whose JSON header spans several chunks (256 KiB each) and
# one 2 MiB tensor; its bytes are i % 251 (checked below)
SERVED=$WORK/served
mkdir -p "$SERVED"
python3 - "$SERVED/m.safetensors" <<'PY'
import json, struct, sys
h, off = {}, 0
for i in range(9000):
    h["layer.%05d.%s" % (i, "x" * 60)] = {"dtype": "U8", "shape": [1],
                                          "data_offsets": [off, off + 1]}
    off += 1
h["big"] = {"dtype": "U8", "shape": [2 << 20],
            "data_offsets": [off, off + (2 << 20)]}
blob = json.dumps(h).encode()
data = bytes(i % 251 for i in range(off + (2 << 20)))
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(blob)) + blob + data)
PY
hdr=$(python3 -c 'import struct, sys; print(struct.unpack("<Q", open(sys.argv[1], "rb").read(8))[0])' "$SERVED/m.safetensors")
check "the header spans more than two chunks" test "$hdr" -gt 524288

FAULTS=$WORK/faults.json
LOG=$WORK/log
echo '{}' >"$FAULTS"
python3 "$TFS_SOURCE_ROOT/tests/remote/server.py" "$SERVED" "$WORK/port" \
	"$LOG" "$FAULTS" &
SERVER=$!
trap 'kill "$SERVER"; wait "$SERVER" 2>/dev/null; cleanup' EXIT
for _ in $(seq 100); do
	[ -s "$WORK/port" ] && break
	sleep 0.05
done
URL=http://127.0.0.1:$(cat "$WORK/port")/m.safetensors

run() { # ARGS...: the client's output; its status in $rc (>128: a signal)
	out=$("$TFS_REMOTE_FAULTS" "$@" 2>"$WORK/stderr")
	rc=$?
	[ -s "$WORK/stderr" ] && cat "$WORK/stderr" >&2
	return 0
}

# whole: the open and the read work, the bytes are right
run "$URL" big
eq "no fault: open and read" "$out" "$(printf 'open 0\nread %d' $((2 << 20)))"

# every answer cut after 1000 bytes: the probe fails, EIO not EAGAIN
echo '{"truncate": [1000, 1000]}' >"$FAULTS"
run "$URL"
eq "probe cut: exit status 1 (no signal)" "$rc" 1
case $out in
"open -5 $URL"*) ok "probe cut: -EIO naming the URL: $out" ;;
*) fail "probe cut: $out" ;;
esac

# the probe whole, every later answer cut: the parser's page faults on
# the header's second chunk cannot be fetched
echo '{"truncate": [1000, 1000], "after": 1}' >"$FAULTS"
run "$URL"
eq "header cut mid-open: exit status 1 (no signal, no crash)" "$rc" 1
case $out in
"open -5 $URL: bytes "*": transfer closed "*) ok "mid-open: -EIO with why: $out" ;;
*) fail "mid-open: $out" ;;
esac

# open whole (the answers an open takes, counted), then the tensor's cut
echo '{}' >"$FAULTS"
: >"$LOG"
run "$URL"
opening=$(wc -l <"$LOG")
check "an open takes several answers" test "$opening" -gt 1
echo "{\"truncate\": [1000, 1000], \"after\": $opening}" >"$FAULTS"
run "$URL" big
eq "tensor cut mid-read: exit status 1 (no signal)" "$rc" 1
first=$(echo "$out" | head -n 1)
eq "mid-read: the open worked" "$first" "open 0"
last=$(echo "$out" | tail -n 1)
case $last in
"read -5 $URL: bytes "*"(reading tensor 'big')") ok "mid-read: -EIO with why: $last" ;;
*) fail "mid-read: $out" ;;
esac
grep -q ' cut ' "$LOG" && ok "the server cut answers" || fail "nothing was cut"

# and again whole
echo '{}' >"$FAULTS"
run "$URL" big
eq "after the faults: open and read" "$out" "$(printf 'open 0\nread %d' $((2 << 20)))"
exit $((FAILS > 0))
