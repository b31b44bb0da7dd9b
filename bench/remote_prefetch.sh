#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The remote prefetch (docs/remote.md "Prefetch that follows the reader",
# issue 29) on loopback nginx, a 256 MiB safetensors model of 32 tensors of
# 8 MiB, every mount with no_cache:
#   1. bytes the server sent to `cat` one tensor in the middle (t16) / its
#      size (from nginx's access log; target <= 1.25x + one chunk);
#      and the time of that `cat` where each connection is limited;
#   2. mount + `cat` of every tensor in file order vs one `curl` of the
#      whole file, full speed;
#   3. the same with nginx's limit_rate of 40 MiB/s per connection (the way
#      object stores serve one stream), also vs `aria2c -x 8` when aria2c
#      is installed (Debian's aria2).  The limit holds from a request's
#      first byte only with a small send buffer and send size (sndbuf,
#      sendfile_max_chunk 64k): without them nginx answered every new 1 MiB
#      request on a kept-alive connection at once (its socket buffer
#      filled before the limit's first delay), so small requests were not
#      limited at all.  Measured so, a connection gets 40-55 MiB/s.
# Best of RUNS for each time.  The last lines, "row<TAB>measurement<TAB>
# now<TAB>ratio<TAB>target", are bench/run's rows.
#
#   bench/remote_prefetch.sh [RUNS]     (default 3)
# Root; needs nginx-light and curl.  TENSORFS selects the binary.
set -euo pipefail
RUNS=${1:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TENSORFS=${TENSORFS:-$ROOT/build/tensorfs}
W=$(mktemp -d /tmp/tfs-bench-prefetch.XXXXXX)
M=$W/mnt
mkdir -p "$M" "$W/root" "$W/tmp"
PORT=$((20000 + RANDOM % 40000))
SLOW=$((PORT + 1))
CHUNK=262144
cleanup() {
	mountpoint -q "$M" 2>/dev/null && fusermount3 -u "$M"
	[ -n "${NG:-}" ] && kill "$NG" 2>/dev/null && wait "$NG" 2>/dev/null
	rm -rf "$W"
	return 0
}
trap cleanup EXIT

F=$W/root/model.safetensors
python3 - "$F" <<'PY'
import json, os, struct, sys
n, k = 8 << 20, 32
hdr = {"t%02d" % i: {"dtype": "U8", "shape": [n],
                     "data_offsets": [i * n, (i + 1) * n]} for i in range(k)}
h = json.dumps(hdr).encode()
h += b" " * (-len(h) % 8)
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h)
    block = os.urandom(1 << 20)
    for _ in range(n * k >> 20):
        f.write(block)
PY
SIZE=$(stat -c %s "$F")
URL=http://127.0.0.1:$PORT/model.safetensors
SURL=http://127.0.0.1:$SLOW/model.safetensors
# shellcheck source=bench/nginx.sh
. "$ROOT/bench/nginx.sh"
nginx_start "$URL" "log_format ranges '\$status \$body_bytes_sent';
	access_log $W/access.log ranges;" "server { listen 127.0.0.1:$PORT; root $W/root; }
	server { listen 127.0.0.1:$SLOW sndbuf=64k; root $W/root;
		limit_rate 40m; sendfile_max_chunk 64k; }"
unmount() { unmount_wait "$M"; }
# bytes of the 206 answers nginx logged since the log was emptied
sent() { awk '$1 == 206 { s += $2 } END { print s + 0 }' "$W/access.log"; }
reopen_log() { : >"$W/access.log"; }
mount_cat() { # URL: mount, cat every tensor, unmount
	"$TENSORFS" -o no_cache "$1" "$M"
	cat "$M"/t* >/dev/null
	unmount
}

# 1. one tensor in the middle
worst=0
for _ in $(seq "$RUNS"); do
	"$TENSORFS" -o no_cache "$URL" "$M"
	reopen_log
	cat "$M/t16" >/dev/null
	unmount
	n=$(sent)
	[ "$n" -gt "$worst" ] && worst=$n
done
T=$((8 << 20))
printf 'one 8 MiB tensor in the middle of %d MiB: %d bytes fetched (worst of %d) = %.3fx its size (target <= %.3fx: 1.25x + one chunk)\n' \
	$((SIZE >> 20)) "$worst" "$RUNS" "$(echo "$worst / $T" | bc -l)" \
	"$(echo "1.25 + $CHUNK / $T" | bc -l)"

# 1b. the time of that read where each connection is limited: one
# connection would take the tensor's size / 40 MiB/s
one_at() { # URL
	"$TENSORFS" -o no_cache "$1" "$M"
	secs cat "$M/t16"
	unmount
}
t1=$(for _ in $(seq "$RUNS"); do one_at "$SURL"; done | best)
printf 'the same tensor, 40 MiB/s a connection: cat %.3f s (one connection: %.3f s)\n' \
	"$t1" "$(echo "8 / 40" | bc -l)"

# 2. and 3. the whole model
row() { # LABEL URL
	local c t a=""
	c=$(for _ in $(seq "$RUNS"); do
		secs curl -s -o /dev/null "$2"
	done | best)
	t=$(for _ in $(seq "$RUNS"); do secs mount_cat "$2"; done | best)
	if command -v aria2c >/dev/null; then
		a=$(for _ in $(seq "$RUNS"); do
			rm -f "$W/dl"
			secs aria2c -q -x 8 -s 8 -k 1M --allow-overwrite=true \
				--file-allocation=none -d "$W" -o dl "$2"
		done | best)
		rm -f "$W/dl"
	fi
	printf '%-34s curl %6.3f s   mount+cat %6.3f s = %5.2fx faster than curl' \
		"$1" "$c" "$t" "$(echo "$c / $t" | bc -l)"
	[ -n "$a" ] && printf '   aria2c -x 8 %6.3f s (mount+cat %.2fx aria2c)' \
		"$a" "$(echo "$a / $t" | bc -l)"
	echo
	rows+=("$(printf 'row\tremote, %s: mount + cat of every tensor / one curl\t%.3f s vs %.3f s\t%.2fx\t%s' \
		"$1" "$t" "$c" "$(echo "$c / $t" | bc -l)" "$3")")
	[ -z "$a" ] || rows+=("$(printf 'row\tsame / aria2c -x 8\t%.3f s vs %.3f s\t%.2fx\t%s' \
		"$t" "$a" "$(echo "$a / $t" | bc -l)" "$4")")
}
rows=("$(printf 'row\tremote: bytes fetched to cat one 8 MiB tensor in the middle / its size\t%d bytes\t%.3fx\t<= %.3fx' \
	"$worst" "$(echo "$worst / $T" | bc -l)" "$(echo "1.25 + $CHUNK / $T" | bc -l)")")
rows+=("$(printf 'row\tremote: cat of that tensor, 40 MiB/s a connection, against one connection alone\t%.3f s vs %.3f s\t%.2fx\t' \
	"$t1" "$(echo "8 / 40" | bc -l)" "$(echo "8 / 40 / $t1" | bc -l)")")
row "whole model, loopback" "$URL" "" ""
row "whole model, 40 MiB/s a connection" "$SURL" ">= 6x" ">= 1.2x"
printf '%s\n' "${rows[@]}"
