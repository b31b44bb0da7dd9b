#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Remote containers on loopback nginx (docs/remote.md "Performance"), one
# run, best of RUNS:
#   1. first read of one MIB-MiB tensor through a mount of its http:// URL
#      (empty cache) vs `curl` of the same byte range;
#   2. a second mount of the same URL reading it from the shared disk
#      cache vs the same container as a local file through tensorfs.
#
#   bench/remote.sh [MIB] [RUNS]     (default 1024 3)
# Root; needs nginx-light and curl.  TENSORFS selects the binary.
set -euo pipefail
MIB=${1:-1024}
RUNS=${2:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TENSORFS=${TENSORFS:-$ROOT/build/tensorfs}
W=$(mktemp -d /tmp/tfs-bench-remote.XXXXXX)
M=$W/mnt
mkdir -p "$M" "$W/root" "$W/tmp"
PORT=$((20000 + RANDOM % 40000))
cleanup() {
	mountpoint -q "$M" 2>/dev/null && fusermount3 -u "$M"
	[ -n "${NG:-}" ] && kill "$NG" 2>/dev/null && wait "$NG" 2>/dev/null
	rm -rf "$W"
}
trap cleanup EXIT

F=$W/root/model.safetensors
python3 - "$F" "$MIB" <<'PY'
import json, os, struct, sys
n = int(sys.argv[2]) << 20
h = json.dumps({"w": {"dtype": "U8", "shape": [n],
                      "data_offsets": [0, n]}}).encode()
h += b" " * (-len(h) % 8)
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h)
    block = os.urandom(1 << 20)
    for _ in range(n >> 20):
        f.write(block)
PY
HDR=$(($(stat -c %s "$F") - (MIB << 20)))
cat >"$W/nginx.conf" <<CONF
daemon off;
worker_processes 2;
user root;
pid $W/nginx.pid;
error_log $W/nginx.err;
events { worker_connections 256; }
http {
	access_log off;
	sendfile on;
	client_body_temp_path $W/tmp;
	proxy_temp_path $W/tmp;
	fastcgi_temp_path $W/tmp;
	uwsgi_temp_path $W/tmp;
	scgi_temp_path $W/tmp;
	server { listen 127.0.0.1:$PORT; root $W/root; }
}
CONF
nginx -p "$W" -c "$W/nginx.conf" &
NG=$!
sleep 0.5
URL=http://127.0.0.1:$PORT/model.safetensors

secs() { # COMMAND...: wall seconds
	local t0 t1
	t0=$(date +%s.%N)
	"$@" >/dev/null
	t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc -l
}
best() { sort -g | head -n 1; }
mibs() { echo "scale=0; $MIB / $1" | bc -l; }
readall() { dd if="$1" of=/dev/null bs=1M status=none; }

curl_t=$(for _ in $(seq "$RUNS"); do
	secs curl -s -o /dev/null -r "$HDR-$((HDR + (MIB << 20) - 1))" "$URL"
done | best)
first_t=$(for _ in $(seq "$RUNS"); do
	rm -rf "$W/cache"
	"$TENSORFS" -o cache_dir="$W/cache" "$URL" "$M"
	secs readall "$M/w"
	fusermount3 -u "$M"
done | best)
cached_t=$(for _ in $(seq "$RUNS"); do
	"$TENSORFS" -o cache_dir="$W/cache" "$URL" "$M"
	secs readall "$M/w"
	fusermount3 -u "$M"
done | best)
local_t=$(for _ in $(seq "$RUNS"); do
	"$TENSORFS" "$F" "$M"
	secs readall "$M/w"
	fusermount3 -u "$M"
done | best)
printf '%-46s %8s %10s\n' "row ($MIB MiB tensor, loopback nginx)" seconds MiB/s
printf '%-46s %8.3f %10s\n' "curl of the tensor's range" "$curl_t" "$(mibs "$curl_t")"
printf '%-46s %8.3f %10s  %.2fx curl\n' "first read through the mount (empty cache)" \
	"$first_t" "$(mibs "$first_t")" "$(echo "$curl_t / $first_t" | bc -l)"
printf '%-46s %8.3f %10s\n' "local file through tensorfs" "$local_t" "$(mibs "$local_t")"
printf '%-46s %8.3f %10s  %.2fx local\n' "second mount, from the disk cache" \
	"$cached_t" "$(mibs "$cached_t")" "$(echo "$local_t / $cached_t" | bc -l)"
