#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Benchmark (not a test): reading a zstd-compressed tensor through the mount
# against `zstd -d` of the same frame, and against a raw tensor of the same
# size.  docs/performance.md records the figures and how to read them.
#
#   bench/zstd_read.sh [MIB] [RUNS]      (default 256 MiB, best of 5 runs)
#
# Environment: TENSORFS (default build/tensorfs), BENCH_DIR (default a new
# directory under /tmp, removed at the end).  Run as root: cold runs drop
# the page cache (echo 3 > /proc/sys/vm/drop_caches).  Run it on an
# otherwise idle machine; every figure is the best of RUNS.
#
# What is measured (wall time of the whole read, `cat FILE > /dev/null`):
#   zstd -d        zstd -d -c frame.zst > /dev/null  (frame file in page cache)
#   first read     a fresh mount (empty decode cache), container in page
#                  cache: decode + transfer through FUSE
#   first, cold    the same after drop_caches (container read from disk);
#                  zstd -d cold is measured the same way
#   re-read, page  the same file again: the kernel's page cache of the
#                  mount answers (keep_cache), tensorfs is not asked
#   re-read, decode cache
#                  drop_caches, then read again: tensorfs serves every read
#                  from its decoded buffer
#   raw            raw.zt on a fresh mount, container in page cache (the same
#                  path as a decode-cache re-read, but from the mapping)
set -euo pipefail

MIB=${1:-256}
RUNS=${2:-5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TENSORFS=${TENSORFS:-$ROOT/build/tensorfs}
OWN_DIR=0
if [ -z "${BENCH_DIR:-}" ]; then
	BENCH_DIR=$(mktemp -d /tmp/tfs-bench.XXXXXX)
	OWN_DIR=1
fi
MNT=$BENCH_DIR/mnt
mkdir -p "$MNT"

cleanup() {
	mountpoint -q "$MNT" && fusermount3 -u "$MNT"
	[ "$OWN_DIR" = 1 ] && rm -rf "$BENCH_DIR"
	return 0
}
trap cleanup EXIT

[ -x "$TENSORFS" ] || { echo "no $TENSORFS: run ninja -C build" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "run as root (drop_caches)" >&2; exit 1; }

cc -O2 -o "$BENCH_DIR/mkzt" "$ROOT/bench/mkzt.c" -lzstd -lm
"$BENCH_DIR/mkzt" "$BENCH_DIR" "$MIB"

drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
warm() { cat "$@" >/dev/null; }
now() { date +%s%N; }
# seconds taken by "$@", output discarded
timeit() {
	local t0 t1
	t0=$(now)
	"$@" >/dev/null
	t1=$(now)
	echo "scale=4; ($t1 - $t0) / 1000000000" | bc
}
best() { sort -g | head -n 1; }
mnt() { "$TENSORFS" "$1" "$MNT" "${@:2}"; }
umnt() { fusermount3 -u "$MNT"; }

declare -A T
run() { # name, then a function to time RUNS times
	local name=$1 i
	shift
	for i in $(seq "$RUNS"); do "$@"; done | best >"$BENCH_DIR/t"
	T[$name]=$(cat "$BENCH_DIR/t")
}

zstd_warm() { warm "$BENCH_DIR/frame.zst"; timeit zstd -q -d -c "$BENCH_DIR/frame.zst"; }
zstd_cold() { drop; timeit zstd -q -d -c "$BENCH_DIR/frame.zst"; }
first_warm() {
	warm "$BENCH_DIR/zstd.zt"
	mnt "$BENCH_DIR/zstd.zt"
	timeit cat "$MNT/weight"
	umnt
}
first_cold() {
	drop
	mnt "$BENCH_DIR/zstd.zt"
	timeit cat "$MNT/weight"
	umnt
}
reread_page() { timeit cat "$MNT/weight"; }
reread_dcache() { drop; timeit cat "$MNT/weight"; }
raw_warm() {
	warm "$BENCH_DIR/raw.zt"
	mnt "$BENCH_DIR/raw.zt"
	timeit cat "$MNT/weight"
	umnt
}
raw_cold() {
	drop
	mnt "$BENCH_DIR/raw.zt"
	timeit cat "$MNT/weight"
	umnt
}

run zstd_d zstd_warm
run zstd_d_cold zstd_cold
run first first_warm
run first_cold first_cold
mnt "$BENCH_DIR/zstd.zt"
warm "$MNT/weight"
run reread_page reread_page
run reread_dcache reread_dcache
umnt
run raw raw_warm
run raw_cold raw_cold

# the bytes are right
mnt "$BENCH_DIR/zstd.zt"
a=$(sha256sum <"$MNT/weight" | cut -d' ' -f1)
umnt
b=$(zstd -q -d -c "$BENCH_DIR/frame.zst" | sha256sum | cut -d' ' -f1)
[ "$a" = "$b" ] || { echo "MISMATCH: mount $a, zstd -d $b" >&2; exit 1; }

ratio() { echo "scale=2; $1 / $2" | bc; }
mbs() { echo "scale=0; $MIB / $1" | bc; }
printf '%s MiB float32 tensor, frame %s bytes; best of %s runs; %s CPUs\n' \
	"$MIB" "$(stat -c %s "$BENCH_DIR/frame.zst")" "$RUNS" "$(nproc)"
printf '%-34s %8s %9s\n' "" "seconds" "MiB/s"
for k in zstd_d first zstd_d_cold first_cold reread_page reread_dcache raw raw_cold; do
	printf '%-34s %8s %9s\n' "$k" "${T[$k]}" "$(mbs "${T[$k]}")"
done
echo
echo "first read vs zstd -d (throughput ratio, target >= 0.8): $(ratio "${T[zstd_d]}" "${T[first]}")"
echo "first read, cold, vs zstd -d, cold:                      $(ratio "${T[zstd_d_cold]}" "${T[first_cold]}")"
echo "decode-cache re-read vs raw tensor (target >= 1.0):      $(ratio "${T[raw]}" "${T[reread_dcache]}")"
echo "page-cache re-read vs raw tensor:                        $(ratio "${T[raw]}" "${T[reread_page]}")"
