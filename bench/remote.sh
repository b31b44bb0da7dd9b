#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Remote containers on loopback nginx (docs/remote.md "Performance"), one
# run, best of RUNS:
#   1. first read of one MIB-MiB tensor through a mount of its http:// URL
#      (empty cache) vs `curl` of the same byte range;
#   2. a second mount of the same URL reading it from the shared disk
#      cache vs the same container as a local file through tensorfs;
#   3. the mount of a 100-shard model as hf://ORG/REPO from the test server
#      (tests/remote/server.py, standard-library Python: slower than a real
#      Hub), and the bytes it fetched.
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
	[ -n "${PY:-}" ] && kill "$PY" 2>/dev/null && wait "$PY" 2>/dev/null
	rm -rf "$W"
	return 0
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
URL=http://127.0.0.1:$PORT/model.safetensors
# shellcheck source=bench/nginx.sh
. "$ROOT/bench/nginx.sh"
nginx_start "$URL" "access_log off;" "server { listen 127.0.0.1:$PORT; root $W/root; }"
unmount() { unmount_wait "$M"; }
mibs() { echo "scale=0; $MIB / $1" | bc -l; }
readall() { dd if="$1" of=/dev/null bs=1M status=none; }

curl_t=$(for _ in $(seq "$RUNS"); do
	secs curl -s -o /dev/null -r "$HDR-$((HDR + (MIB << 20) - 1))" "$URL"
done | best)
first_t=$(for _ in $(seq "$RUNS"); do
	rm -rf "$W/cache"
	"$TENSORFS" -o cache_dir="$W/cache" "$URL" "$M"
	secs readall "$M/w"
	unmount
done | best)
nocache_t=$(for _ in $(seq "$RUNS"); do
	"$TENSORFS" -o no_cache "$URL" "$M"
	secs readall "$M/w"
	unmount
done | best)
cached_t=$(for _ in $(seq "$RUNS"); do
	"$TENSORFS" -o cache_dir="$W/cache" "$URL" "$M"
	secs readall "$M/w"
	unmount
done | best)
local_t=$(for _ in $(seq "$RUNS"); do
	"$TENSORFS" "$F" "$M"
	secs readall "$M/w"
	unmount
done | best)
printf '%-46s %8s %10s\n' "row ($MIB MiB tensor, loopback nginx)" seconds MiB/s
printf '%-46s %8.3f %10s\n' "curl of the tensor's range" "$curl_t" "$(mibs "$curl_t")"
printf '%-46s %8.3f %10s  %.2fx curl\n' "first read through the mount (empty cache)" \
	"$first_t" "$(mibs "$first_t")" "$(echo "$curl_t / $first_t" | bc -l)"
printf '%-46s %8.3f %10s  %.2fx curl\n' "first read through the mount, no_cache" \
	"$nocache_t" "$(mibs "$nocache_t")" "$(echo "$curl_t / $nocache_t" | bc -l)"
printf '%-46s %8.3f %10s\n' "local file through tensorfs" "$local_t" "$(mibs "$local_t")"
printf '%-46s %8.3f %10s  %.2fx local\n' "second mount, from the disk cache" \
	"$cached_t" "$(mibs "$cached_t")" "$(echo "$local_t / $cached_t" | bc -l)"

# 3. a 100-shard repository
mkdir -p "$W/hub/org"
python3 "$ROOT/tests/e2e/make_sharded.py" "$W/hub/org/repo" --shards 100 \
	--tensors 300 >/dev/null
rm -rf "$W/hub/org/repo/expected"
echo '{}' >"$W/faults.json"
python3 "$ROOT/tests/remote/server.py" "$W/hub" "$W/port" "$W/hub.log" \
	"$W/faults.json" &
PY=$!
for _ in $(seq 100); do
	[ -s "$W/port" ] && break
	sleep 0.05
done
export HF_ENDPOINT=http://127.0.0.1:$(cat "$W/port")
shard_t=$(for _ in $(seq "$RUNS"); do
	: >"$W/hub.log"
	secs "$TENSORFS" -o no_cache hf://org/repo "$M"
	fusermount3 -u "$M"
done | best)
bytes=$(awk '$3 == 206 { split($4, r, "-"); s += r[2] - r[1] + 1 }
	END { print s + 0 }' "$W/hub.log")
total=$(cat "$W"/hub/org/repo/* | wc -c)
printf '%-46s %8.3f  %s of %s bytes fetched, %s requests\n' \
	"mount of a 100-shard hf:// repository" "$shard_t" "$bytes" "$total" \
	"$(wc -l <"$W/hub.log")"
trap - EXIT
cleanup
