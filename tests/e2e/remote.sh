#!/usr/bin/env bash
# Remote containers over HTTP (docs/remote.md), on loopback only: a
# standard-library server (tests/remote/server.py) logs every range it
# serves, so the checks say exactly which bytes a mount and a read fetched.
#  - every shared fixture (without ../shared: every valid fixture of the
#    project's tests/fixtures) mounted from http://127.0.0.1 equals its
#    local mount file for file, byte for byte (and the bytes each mount
#    fetched are printed);
#  - a mount fetches the header's chunks only; a read the tensor's chunks;
#  - retries (500, cut bodies), 429 as EIO, a timeout as ETIMEDOUT, a
#    refused connection on read as EIO, a
#    changed object as an error with one log line, 404 and an unreachable
#    host exit 4 with one line;
#  - the disk cache: a second mount reads from it, a corrupted chunk is
#    fetched again, cache_max evicts;
#  - s3:// signed by curl's SigV4 and checked by the server (whose check
#    agrees with AWS's published example), hf:// pinned to a commit.
. "$(dirname "$0")/lib.sh"
need_fuse
if ! "$TENSORFS" --help | grep -q remote_timeout; then
	echo "SKIP: built without remote support (libcurl)"
	exit 77
fi
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }

CHUNK=262144
BLOCK=$((16 * CHUNK)) # a cache file
SERVED=$WORK/served
mkdir -p "$SERVED"
export TENSORFS_REMOTE_OPTIONS="cache_dir=$WORK/cache"

start_server() { # ROOT: sets PORT, LOG, FAULTS
	LOG=$WORK/log.$RANDOM
	FAULTS=$WORK/faults.json
	echo '{}' >"$FAULTS"
	rm -f "$WORK/port"
	python3 "$TFS_SOURCE_ROOT/tests/remote/server.py" "$1" "$WORK/port" \
		"$LOG" "$FAULTS" &
	SERVER=$!
	for _ in $(seq 100); do
		[ -s "$WORK/port" ] && break
		sleep 0.05
	done
	PORT=$(cat "$WORK/port")
	: >"$LOG"
}
stop_server() { kill "$SERVER"; wait "$SERVER" 2>/dev/null; }
# unmount and wait for the daemon to end: its cache writer finishes first
unmount_wait() {
	local pid
	pid=$(daemon_pid "$1")
	unmount "$1"
	while [ -n "$pid" ] && running "$pid"; do sleep 0.05; done
}
trap 'stop_server; cleanup' EXIT

# ranges of 206 answers in the log, as "first-last" lines
ranges() { awk '$3 == 206 { print $4 }' "$LOG"; }
fetched() { ranges | awk -F- '{ s += $2 - $1 + 1 } END { print s + 0 }'; }

# same_tree A B: the same files with the same bytes; a file whose reads fail
# on A (a part the container itself makes unreadable: EIO by design) must
# fail on B too
same_tree() {
	local f
	diff <(cd "$1" && find . | LC_ALL=C sort) \
		<(cd "$2" && find . | LC_ALL=C sort) || return 1
	while IFS= read -r f; do
		if cat "$1/$f" >/dev/null 2>&1; then
			cmp "$1/$f" "$2/$f" || return 1
		elif cat "$2/$f" >/dev/null 2>&1; then
			echo "$f: unreadable locally, readable remotely"
			return 1
		fi
	done < <(cd "$1" && find . -type f)
}

# ---- every fixture, remote vs local ---------------------------------------
# remote_vs_local ROOT FILE...: each FILE (under ROOT) mounted from the
# server equals its local mount; COMPARED says how many were compared
remote_vs_local() {
	local root=$1 f rel lm rm_ got size n=0
	shift
	start_server "$root"
	for f in "$@"; do
		rel=${f#"$root"/}
		"$TENSORFS" ls "$f" >/dev/null 2>&1 || continue
		: >"$LOG"
		lm=$(mount_container "$f") || {
			fail "$rel: local mount"
			continue
		}
		rm_=$(mount_container "http://127.0.0.1:$PORT/$rel" -o no_cache) || {
			fail "$rel: remote mount"
			continue
		}
		got=$(fetched)
		size=$(stat -c %s "$f")
		if same_tree "$lm" "$rm_" >"$WORK/diff" 2>&1; then
			echo "fetched at mount: $rel: $got of $size bytes"
			n=$((n + 1))
		else
			fail "$rel: remote tree differs: $(head -3 "$WORK/diff")"
		fi
		unmount "$lm"
		unmount "$rm_"
	done
	stop_server
	COMPARED=$n
}
if shared_case "every shared fixture mounted remotely" safetensors; then
	mapfile -t files < <(find "$TFS_FIXTURES" -type f ! -name '*.md' \
		! -name '*.json' | sort)
	remote_vs_local "$TFS_FIXTURES" "${files[@]}"
	[ "$COMPARED" -gt 20 ] &&
		ok "$COMPARED shared fixtures mount remotely, byte-identical" ||
		fail "only $COMPARED fixtures compared"
else
	# the project's own: every valid fixture (a folder of a model with
	# its companions is served whole, its entry files mounted)
	mapfile -t files < <(find "$TFS_SOURCE_ROOT/tests/fixtures" -type f \
		-path '*/valid/*' ! -name '*.md' ! -name '*.json' | sort)
	remote_vs_local "$TFS_SOURCE_ROOT/tests/fixtures" "${files[@]}"
	[ "$COMPARED" -gt 20 ] &&
		ok "$COMPARED project fixtures mount remotely, byte-identical" ||
		fail "only $COMPARED fixtures compared"
fi

# ---- a model whose header spans two chunks -------------------------------
python3 - "$SERVED/m.safetensors" <<'PY'
import json, os, struct, sys
hdr, off, blobs = {}, 0, []
for i in range(6):
    n = (3 << 20) + i * 4096
    blobs.append(bytes((i * 7 + j) % 251 for j in range(256)) * (n // 256))
    hdr["t%d" % i] = {"dtype": "U8", "shape": [n],
                      "data_offsets": [off, off + n]}
    off += n
hdr["__metadata__"] = {"pad": "x" * 400000}
h = json.dumps(hdr).encode()
h += b" " * (-len(h) % 8)
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
PY
M=$SERVED/m.safetensors
hdr_end=$((8 + $(python3 -c "import struct,sys;print(struct.unpack('<Q',open(sys.argv[1],'rb').read(8))[0])" "$M")))
# tensor t's extent in the file: "first last"
extent() {
	python3 - "$M" "$1" <<'PY'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
a, z = json.loads(b[8:8 + n])[sys.argv[2]]["data_offsets"]
print(8 + n + a, 8 + n + z - 1)
PY
}
start_server "$SERVED"
URL=http://127.0.0.1:$PORT/m.safetensors
mnt=$(mount_container "$URL" -o remote_prefetch=0,cache_dir="$WORK/c1") ||
	fail "mount $URL"
want=$(for ((o = 0; o < hdr_end; o += CHUNK)); do
	echo "$o-$((o + CHUNK - 1))"
done)
eq "a mount fetches the header's chunks only" "$(ranges)" "$want"
: >"$LOG"
read -r a z < <(extent t2)
cmp "$mnt/t2" <("$TENSORFS" cat "$M" t2) && ok "t2 read remotely" ||
	fail "t2 differs"
lo=$((a / CHUNK * CHUNK)) hi=$(((z / CHUNK + 1) * CHUNK - 1))
bad=$(ranges | awk -F- -v lo=$lo -v hi=$hi '$1 < lo || $2 > hi')
eq "reading t2 fetched only t2's chunks" "$bad" ""
# (a chunk may come twice: once served, the mount's copy of it is dropped
# from memory, and a concurrent readahead may ask for it again)
covered=$(ranges | awk -F- -v c=$CHUNK '{
	for (o = $1; o <= $2; o += c) seen[o] = 1 } END { print length(seen) }')
eq "and all of them" "$covered" "$(((hi - lo + 1) / CHUNK))"

# faults: 500 twice, then a cut body: retried, same bytes
echo '{"status": [500, 2]}' >"$FAULTS"
cmp "$mnt/t0" <("$TENSORFS" cat "$M" t0) && ok "read through two 500s" ||
	fail "t0 after 500s"
eq "the 500s were answered" "$(awk '$3 == 500' "$LOG" | wc -l)" 2
echo '{"truncate": [1000, 1]}' >"$FAULTS"
cmp "$mnt/t1" <("$TENSORFS" cat "$M" t1) && ok "read through a cut body" ||
	fail "t1 after a cut body"
grep -q ' cut ' "$LOG" && ok "a body was cut" || fail "no body was cut"
# 429 all along: EIO, never EAGAIN (a reader would take it for "no data
# yet": Python's read() gives None, np.fromfile zeros); then it recovers
echo '{"status": [429, 1000]}' >"$FAULTS"
err=$(cat "$mnt/t3" 2>&1 >/dev/null)
case $err in
*"Input/output error"*) ok "429 is EIO" ;;
*) fail "429: $err" ;;
esac
python3 -c 'import sys; open(sys.argv[1], "rb").read()' "$mnt/t3" \
	2>/dev/null && fail "python read() of a failing file succeeded" ||
	ok "python read() of a failing file raises"
echo '{}' >"$FAULTS"
cmp "$mnt/t3" <("$TENSORFS" cat "$M" t3) && ok "t3 after the 429s" ||
	fail "t3 after 429s"
unmount "$mnt"

# a stalled server: remote_timeout=2 gives ETIMEDOUT after one timeout,
# not two (with prefetch on, the kernel's retry of the failed readahead
# met the same chunk still on its way and waited again), and not a hang
mnt=$(mount_container "$URL" -o remote_timeout=2,no_cache)
echo '{"delay": 6}' >"$FAULTS"
t0=$(date +%s%N)
err=$(cat "$mnt/t4" 2>&1 >/dev/null)
t1=$(date +%s%N)
case $err in
*"Connection timed out"*) ok "a stalled read is ETIMEDOUT" ;;
*) fail "stall: $err" ;;
esac
ms=$(((t1 - t0) / 1000000))
[ "$ms" -lt 3500 ] && ok "within one remote_timeout ($ms ms)" ||
	fail "a stalled read took $ms ms (remote_timeout=2)"
echo '{}' >"$FAULTS"
sleep 7 # let the stalled answers drain
unmount "$mnt"

# changed on the server: an error and one log line, never mixed bytes
mnt=$WORK/fg
mkdir -p "$mnt"
"$TENSORFS" -f -o remote_prefetch=0,no_cache "$URL" "$mnt" 2>"$WORK/fg.err" &
fg=$!
for _ in $(seq 100); do
	mountpoint -q "$mnt" && break
	sleep 0.05
done
MOUNTS+=("$mnt")
touch -d '2001-01-01' "$M"
if cat "$mnt/t5" >/dev/null 2>"$WORK/cat.err"; then
	fail "a changed object was served"
else
	ok "a changed object fails the read: $(cat "$WORK/cat.err")"
fi
cat "$mnt/t5" >/dev/null 2>&1
eq "one log line" "$(grep -c 'changed on the server' "$WORK/fg.err")" 1
unmount "$mnt"
wait "$fg"

# mount-time failures: exit 4, one line
"$TENSORFS" ls "http://127.0.0.1:$PORT/nothing.safetensors" 2>"$WORK/e"
eq "404 exits 4" "$?" 4
eq "with one line" "$(wc -l <"$WORK/e")" 1
echo '{"status": [403, 100]}' >"$FAULTS"
"$TENSORFS" ls "$URL?X-Amz-Signature=SECRET" 2>"$WORK/e"
eq "403 exits 4" "$?" 4
grep -q SECRET "$WORK/e" && fail "a signature was printed" ||
	ok "the query string is not printed"
echo '{}' >"$FAULTS"
# a refused connection on a read: EIO (not EHOSTUNREACH, not EAGAIN)
mnt=$(mount_container "$URL" -o remote_prefetch=0,remote_timeout=2,no_cache)
stop_server
err=$(cat "$mnt/t5" 2>&1 >/dev/null)
case $err in
*"Input/output error"*) ok "a refused connection on read is EIO" ;;
*) fail "refused connection on read: $err" ;;
esac
unmount "$mnt"
"$TENSORFS" ls "http://127.0.0.1:$PORT/m.safetensors" 2>"$WORK/e"
eq "no server exits 4" "$?" 4
eq "with one line" "$(wc -l <"$WORK/e")" 1

# ---- the disk cache --------------------------------------------------------
start_server "$SERVED"
URL=http://127.0.0.1:$PORT/m.safetensors
mnt=$(mount_container "$URL" -o cache_dir="$WORK/c2")
cat "$mnt"/t* >/dev/null
unmount_wait "$mnt"
: >"$LOG"
mnt=$(mount_container "$URL" -o cache_dir="$WORK/c2")
cat "$mnt"/t* | cmp - <(tail -c +$((hdr_end + 1)) "$M") &&
	ok "second mount reads the whole model from the cache" ||
	fail "second mount's bytes"
eq "fetching only the probe" "$(ranges)" "0-$((CHUNK - 1))"
unmount_wait "$mnt"
size=$(stat -c %s "$M")
eq "one cache file per 4 MiB block" \
	"$(find "$WORK"/c2 -type f -name '0*' | wc -l)" \
	"$(((size + BLOCK - 1) / BLOCK))"
# a corrupted block is never served: fetched again
block=$(ls "$WORK"/c2/*/0000000000000001)
printf 'X' | dd of="$block" bs=1 seek=5000 conv=notrunc status=none
: >"$LOG"
mnt=$(mount_container "$URL" -o cache_dir="$WORK/c2")
cat "$mnt"/t* | cmp - <(tail -c +$((hdr_end + 1)) "$M") &&
	ok "a corrupted block is not served" || fail "corrupt block served"
# the ranges fetched besides the probe: within block 1, and all of it
bad=$(ranges | sed 1d | awk -F- -v lo=$BLOCK -v hi=$((2 * BLOCK - 1)) \
	'$1 < lo || $2 > hi')
eq "and only it was fetched again" "$bad" ""
covered=$(ranges | sed 1d | awk -F- -v c=$CHUNK '{
	for (o = $1; o <= $2; o += c) seen[o] = 1 } END { print length(seen) }')
eq "all of it" "$covered" 16
unmount_wait "$mnt"
# tensor-aware prefetch (issue 29): one tensor read in the middle of the
# model fetches that tensor (its chunks), not remote_prefetch's 128 MiB
# behind it; reads moving on in file order still open a window
mnt=$(mount_container "$URL" -o no_cache)
: >"$LOG"
read -r a z < <(extent t3)
cmp "$mnt/t3" <("$TENSORFS" cat "$M" t3) && ok "t3 read alone" ||
	fail "t3 differs"
got=$(fetched)
want=$((z - a + 1))
[ "$got" -le $((want + want / 4 + CHUNK)) ] &&
	ok "reading t3 fetched $got bytes for its $want" ||
	fail "reading t3 fetched $got bytes for its $want"
unmount_wait "$mnt"
mnt=$(mount_container "$URL" -o no_cache)
: >"$LOG"
cat "$mnt"/t* | cmp - <(tail -c +$((hdr_end + 1)) "$M") &&
	ok "every tensor in file order" || fail "bytes in file order"
got=$(fetched)
size=$(stat -c %s "$M")
# (a chunk may come twice: served, dropped from memory, asked again by a
# late readahead; seen up to 1.1x)
[ "$got" -le $((size + size / 4)) ] &&
	ok "in file order: $got bytes of $size fetched" ||
	fail "in file order: $got bytes fetched for a $size-byte model"
unmount_wait "$mnt"
# cache_max: least recently used out
mnt=$(mount_container "$URL" -o cache_dir="$WORK/c3",cache_max=10M)
cat "$mnt"/t* >/dev/null
unmount_wait "$mnt"
used=$(du -sb "$WORK/c3" | cut -f1)
[ "$used" -le $((10 * 1048576 + BLOCK + 4096 + 8192)) ] &&
	[ "$used" -ge $((4 * 1048576)) ] &&
	ok "cache_max=10M holds $used bytes" || fail "cache holds $used bytes"
stop_server

# ---- s3:// (SigV4 checked by the server) and hf:// (revision -> commit) ----
check "the server's SigV4 check agrees with AWS's published example" \
	python3 "$TFS_SOURCE_ROOT/tests/remote/server.py" --selftest
mkdir -p "$WORK/obj/bkt/dir" "$WORK/obj/org/repo"
cp "$M" "$WORK/obj/bkt/dir/m.safetensors"
cp "$M" "$WORK/obj/org/repo/model.safetensors"
# a sharded model (index + 3 shards) as an S3 prefix and a Hub repository
SH=$WORK/obj/bkt/sharded
python3 "$TFS_SOURCE_ROOT/tests/e2e/make_sharded.py" "$SH" --shards 3 \
	>/dev/null
rm -rf "$SH/expected"
cp -r "$SH" "$WORK/obj/org/sharded"
# a directory without an index: containers at two levels, a GGUF split set
# (three parts), a file no reader claims
PL=$WORK/obj/bkt/plain
mkdir -p "$PL/sub" "$PL/gguf"
cp "$TFS_SOURCE_ROOT/tests/fixtures/safetensors/valid/every_dtype.safetensors" \
	"$PL/"
cp "$TFS_SOURCE_ROOT/tests/fixtures/safetensors/valid/whitespace_and_order.safetensors" \
	"$PL/sub/d.safetensors"
cp "$TFS_SOURCE_ROOT"/tests/fixtures/gguf/split/*.gguf "$PL/gguf/"
echo "not a container" >"$PL/README.md"
cp -r "$PL" "$WORK/obj/org/plain"
# the ranges a mount of it may fetch: each file's first chunk, once
plain_want() { # PATH-PREFIX
	(cd "$PL" && find . -type f | sed 's|^\./||' | LC_ALL=C sort) |
		while IFS= read -r f; do
			n=$(stat -c %s "$PL/$f")
			[ "$n" -gt "$CHUNK" ] && n=$CHUNK
			echo "$1/$f 0-$((n - 1))"
		done
}
plain_got() { awk '$3 == 206 { print $2, $4 }' "$LOG" | LC_ALL=C sort; }
# pages of 2 after the first, for N entries
pages_after_first() { echo $((($1 + 1) / 2 - 1)); }
# listings in pages of 2 (S3 continuation tokens, the Hub's Link headers)
export TFS_S3_ID=AKIDEXAMPLE TFS_S3_SECRET=test-secret TFS_HF_TOKEN=hf_test
export TFS_S3_PAGE=2 TFS_HUB_PAGE=2
start_server "$WORK/obj"
unset TFS_S3_ID TFS_S3_SECRET TFS_HF_TOKEN TFS_S3_PAGE TFS_HUB_PAGE
export AWS_ENDPOINT_URL=http://127.0.0.1:$PORT AWS_REGION=eu-west-1
export AWS_ACCESS_KEY_ID=AKIDEXAMPLE AWS_SECRET_ACCESS_KEY=test-secret
mnt=$(mount_container s3://bkt/dir/m.safetensors -o no_cache) ||
	fail "s3:// mount"
cat "$mnt"/t* | cmp - <(tail -c +$((hdr_end + 1)) "$M") &&
	ok "s3:// reads, signed (SigV4, UNSIGNED-PAYLOAD)" || fail "s3:// bytes"
unmount "$mnt"
# the log so far, kept for the signature check below; then a new one
keep_log() { cat "$LOG" >>"$WORK/s3log"; : >"$LOG"; }
# s3://BUCKET/PREFIX/ with an index: one tree, like the local directory
keep_log
lm=$(mount_container "$SH")
mnt=$(mount_container s3://bkt/sharded/ -o no_cache) &&
	diff -r "$lm" "$mnt" >/dev/null &&
	ok "an S3 prefix with an index mounts as the local directory does" ||
	fail "s3:// prefix tree"
grep -q "GET /bkt?delimiter=%2F&list-type=2&prefix=sharded%2F 200" "$LOG" &&
	ok "listed by ListObjectsV2, signed" || fail "no listing: $(head -2 "$LOG")"
unmount "$mnt"
# the URL of the index itself: the shards it names, beside it, no listing
keep_log
mnt=$(mount_container \
	"http://127.0.0.1:$PORT/cdn/bkt/sharded/model.safetensors.index.json" \
	-o no_cache) && diff -r "$lm" "$mnt" >/dev/null &&
	ok "an https://.../model.safetensors.index.json URL mounts the sharded model" ||
	fail "index URL tree"
grep -q "list-type" "$LOG" && fail "an index URL listed the prefix" ||
	ok "without a listing"
[ -n "${mnt:-}" ] && unmount "$mnt"
unmount "$lm"
# s3://BUCKET/PREFIX/ without an index: as the local directory mounts
keep_log
lm=$(mount_container "$PL")
mnt=$(mount_container s3://bkt/plain/ -o no_cache) || fail "s3:// plain mount"
diff -r "$lm" "$mnt" >"$WORK/diff" 2>&1 &&
	ok "an S3 prefix without an index mounts as the local directory does" ||
	fail "s3:// plain tree: $(head -3 "$WORK/diff")"
[ -d "$mnt/gguf/model" ] && [ -d "$mnt/sub/d" ] &&
	ok "its GGUF split set is one directory, sub/d.safetensors another" ||
	fail "plain tree: $(cd "$mnt" && find . -maxdepth 2 | head)"
grep -q "GET /bkt?list-type=2&prefix=plain%2F 200" "$LOG" &&
	ok "listed whole by ListObjectsV2, signed" ||
	fail "no deep listing: $(grep list-type "$LOG")"
eq "in pages of 2 keys, by continuation tokens" \
	"$(grep -c "GET /bkt?continuation-token=p%2F[0-9]*%3D&list-type=2&prefix=plain%2F 200" "$LOG")" \
	"$(pages_after_first "$(find "$PL" -type f | wc -l)")"
eq "the mount fetched each file's first chunk, nothing else" \
	"$(plain_got)" "$(plain_want /bkt/plain)"
unmount "$mnt"
unmount "$lm"
# a prefix holding a split set alone: the set's one tree, as locally
lm=$(mount_container "$PL/gguf")
mnt=$(mount_container s3://bkt/plain/gguf/ -o no_cache) &&
	diff -r "$lm" "$mnt" >/dev/null && [ -d "$mnt/blk" ] &&
	ok "an S3 prefix holding a GGUF split set alone mounts as its one tree" ||
	fail "s3:// split set prefix: $(ls "$mnt" 2>&1 | head -3)"
unmount "$mnt"
unmount "$lm"
# remote_mem is one bound for the whole mount: three 12 MiB objects under
# one prefix read at once, every answer delayed; the bytes of the ranges
# the server is answering at the same time (from its log's start and end
# times) stay within remote_mem=8M over all three objects together
BIG=$WORK/obj/bkt/big
mkdir -p "$BIG"
python3 - "$BIG" <<'PY'
import json, struct, sys
for k in range(3):
    hdr, blobs, off = {}, [], 0
    for i in range(3):
        n = 4 << 20
        pat = bytes((j + k * 3 + i) % 256 for j in range(256))
        blobs.append(pat * (n // 256))
        hdr["t%d" % i] = {"dtype": "U8", "shape": [n],
                          "data_offsets": [off, off + n]}
        off += n
    h = json.dumps(hdr).encode()
    h += b" " * (-len(h) % 8)
    with open("%s/s%d.safetensors" % (sys.argv[1], k), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
PY
# the most bytes of 206 answers in flight at once (an end before a start
# at the same instant; an end taken 100 ms early: the server logs it after
# the answer is sent, when the client may have started the next request,
# and every answer here takes 300 ms.  50 ms once counted one 512 KiB
# answer twice on a busy CI run, as pieces got smaller (1 MiB, shared
# over the connections); an answer really over the bound would overlap
# its neighbours by most of its 300 ms)
peak() {
	awk '$3 == 206 { split($4, r, "-"); n = r[2] - r[1] + 1
		print $(NF - 1), n; print $NF - 0.1, -n }' "$LOG" |
		sort -k1,1g -k2,2g |
		awk '{ c += $2; if (c > m) m = c } END { print m + 0 }'
}
read_big() { # MOUNTPOINT: all three at once, each compared with the file
	local k pids=()
	for k in 0 1 2; do
		(cat "$1/s$k"/t* | cmp -s - <(tail -c $((3 << 22)) \
			"$BIG/s$k.safetensors") && echo ok) >"$WORK/big$k" &
		pids+=($!)
	done
	wait "${pids[@]}" # not the server
	[ "$(cat "$WORK"/big[012])" = "$(printf 'ok\nok\nok')" ]
}
for mem in 8 64; do
	mnt=$(mount_container s3://bkt/big/ \
		-o no_cache,remote_conns=4,remote_mem=${mem}M) ||
		fail "s3:// big mount"
	keep_log
	echo '{"delay": 0.3}' >"$FAULTS"
	read_big "$mnt" && ok "remote_mem=${mem}M: three objects read at once" ||
		fail "remote_mem=${mem}M: bytes differ"
	echo '{}' >"$FAULTS"
	eval "peak_$mem=$(peak)"
	unmount "$mnt"
done
[ "$peak_8" -le $((8 << 20)) ] &&
	ok "remote_mem=8M: at most $peak_8 bytes in flight over the mount" ||
	fail "remote_mem=8M: $peak_8 bytes in flight"
[ "$peak_64" -gt $((8 << 20)) ] &&
	ok "remote_mem=64M: $peak_64 (the measure sees more when allowed)" ||
	fail "remote_mem=64M: only $peak_64 bytes in flight"
eq "every S3 request was signed right" \
	"$(cat "$WORK/s3log" "$LOG" | awk '$3 == 403' | wc -l)" 0
AWS_SECRET_ACCESS_KEY=wrong "$TENSORFS" ls s3://bkt/dir/m.safetensors \
	2>"$WORK/e" >/dev/null
eq "a wrong secret exits 4" "$?" 4
grep -q wrong "$WORK/e" && fail "the secret was printed" ||
	ok "the secret is not printed"
unset AWS_ENDPOINT_URL AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_REGION
export HF_ENDPOINT=http://127.0.0.1:$PORT HF_TOKEN=hf_test
: >"$LOG"
mnt=$(mount_container hf://org/repo@v1.0/model.safetensors -o no_cache) ||
	fail "hf:// mount"
sha=$(python3 -c 'import hashlib;print(hashlib.sha1(b"v1.0").hexdigest())')
grep -q "GET /api/models/org/repo/revision/v1.0 200" "$LOG" &&
	grep -q "/org/repo/resolve/$sha/model.safetensors 302" "$LOG" &&
	ok "hf:// pins the revision to its commit" || fail "hf:// requests"
cat "$mnt"/t* | cmp - <(tail -c +$((hdr_end + 1)) "$M") &&
	ok "hf:// reads through the redirect" || fail "hf:// bytes"
unmount "$mnt"
: >"$LOG"
lm=$(mount_container "$SH")
mnt=$(mount_container hf://org/sharded -o no_cache) &&
	diff -r "$lm" "$mnt" >/dev/null &&
	ok "a Hub repository with an index mounts as the local directory does" ||
	fail "hf:// repository tree"
sha=$(python3 -c 'import hashlib;print(hashlib.sha1(b"main").hexdigest())')
eq "one revision question, then the commit only" \
	"$(grep -c 'revision/main' "$LOG") $(grep -c "/api/models/org/sharded/tree/$sha 200" "$LOG") $(grep -c "resolve/$sha/" "$LOG")" \
	"1 1 4"
unmount "$mnt"
unmount "$lm"
# hf://ORG/REPO without an index: the same, from the tree API (recursive)
: >"$LOG"
lm=$(mount_container "$PL")
mnt=$(mount_container hf://org/plain -o no_cache) || fail "hf:// plain mount"
diff -r "$lm" "$mnt" >"$WORK/diff" 2>&1 &&
	ok "a Hub repository without an index mounts as the local directory does" ||
	fail "hf:// plain tree: $(head -3 "$WORK/diff")"
grep -q "GET /api/models/org/plain/tree/$sha?recursive=True 200" "$LOG" &&
	ok "listed by the recursive tree API at the commit" ||
	fail "no recursive tree: $(grep tree "$LOG")"
eq "in pages of 2 entries, following the Link headers" \
	"$(grep -c "GET /api/models/org/plain/tree/$sha?recursive=True&cursor=[0-9]* 200" "$LOG")" \
	"$(pages_after_first "$(find "$PL" -mindepth 1 | wc -l)")"
eq "the mount fetched each file's first chunk, nothing else" \
	"$(plain_got)" "$(plain_want /org/plain)"
: >"$LOG"
f=$(cd "$lm" && find gguf sub -type f ! -path '*/.tensorfs/*' | head -n 1)
[ -n "$f" ] && cmp "$mnt/$f" "$lm/$f" && [ "$(fetched)" -eq 0 ] &&
	ok "a tensor of it ($f) reads remotely (present since the probe)" ||
	fail "remote plain tensor $f: $(ranges)"
unmount "$mnt"
unmount "$lm"
# one part of a remote split set brings the whole set, as locally
lm=$(mount_container "$PL/gguf/model-00002-of-00003.gguf")
mnt=$(mount_container hf://org/plain/gguf/model-00002-of-00003.gguf \
	-o no_cache) && diff -r "$lm" "$mnt" >/dev/null &&
	ok "one part of a remote GGUF split set mounts the whole set" ||
	fail "remote split part"
unmount "$mnt"
unmount "$lm"
HF_TOKEN=bad "$TENSORFS" ls hf://org/repo/model.safetensors 2>"$WORK/e" \
	>/dev/null
eq "a refused token exits 4" "$?" 4
grep -q bad "$WORK/e" && fail "the token was printed" ||
	ok "the token is not printed"
unset HF_ENDPOINT HF_TOKEN

# a server that ignores Range (Python's http.server): said so, exit 4
python3 -c '
import functools, http.server, sys
h = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
h.log_message = lambda *a: None
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), h)
open(sys.argv[2] + ".tmp", "w").write(str(s.server_address[1]))
import os; os.rename(sys.argv[2] + ".tmp", sys.argv[2])
s.serve_forever()' "$SERVED" "$WORK/plainport" &
PLAIN=$!
for _ in $(seq 100); do [ -s "$WORK/plainport" ] && break; sleep 0.05; done
"$TENSORFS" ls "http://127.0.0.1:$(cat "$WORK/plainport")/m.safetensors" \
	>/dev/null 2>"$WORK/e"
eq "a server ignoring Range: exit 4" "$?" 4
check "says it does not support range requests" \
	grep -q "does not support range requests" "$WORK/e"
kill "$PLAIN"
wait "$PLAIN" 2>/dev/null
finish
