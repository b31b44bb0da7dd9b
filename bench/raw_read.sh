#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Benchmark (not a test): reading a raw tensor through tensorfs against the
# direct read of the same bytes from the container, and against a peer FUSE
# filesystem (squashfuse, serving the same bytes from an uncompressed
# squashfs image), in one run.  Prints MB/s and ratios to the direct read.
#
#   bench/raw_read.sh [MIB] [RUNS]     (default 1024 MiB, best of 5 runs)
#
# Environment: TENSORFS (default build/tensorfs), BENCH_DIR (default a new
# directory under /tmp, removed at the end).  Run as root on an idle
# machine; installs squashfuse and squashfs-tools when missing.  Every
# figure is the best of RUNS; every read is `dd bs=1M` of the whole tensor
# with the container (and image) already in the page cache, so what is
# measured is the path to the bytes, not the disk:
#   direct         dd of the tensor's byte range from the container file
#   tensorfs       a fresh mount each run: every read goes through FUSE to
#                  tensorfs, which replies from its mapping
#   tensorfs again the same file again on the same mount: the kernel's page
#                  cache of the mount answers (keep_cache)
#   squashfuse     a fresh squashfuse mount each run of an uncompressed image
#                  holding the same bytes as a file
# With COLD=1 every run starts after `sync; echo 3 > drop_caches` instead
# (the container not cached: what the disk gives through each path), and
# "tensorfs again" is left out.
set -euo pipefail

MIB=${1:-1024}
RUNS=${2:-5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TENSORFS=${TENSORFS:-$ROOT/build/tensorfs}
OWN_DIR=0
if [ -z "${BENCH_DIR:-}" ]; then
	BENCH_DIR=$(mktemp -d /tmp/tfs-bench.XXXXXX)
	OWN_DIR=1
fi
M1=$BENCH_DIR/tfs
M2=$BENCH_DIR/sqfs
mkdir -p "$M1" "$M2"
cleanup() {
	for m in "$M1" "$M2"; do mountpoint -q "$m" && fusermount3 -u "$m"; done
	[ "$OWN_DIR" = 1 ] && rm -rf "$BENCH_DIR"
	return 0
}
trap cleanup EXIT

[ -x "$TENSORFS" ] || { echo "no $TENSORFS: run scripts/build" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "run as root" >&2; exit 1; }
if ! command -v squashfuse >/dev/null || ! command -v mksquashfs >/dev/null; then
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq squashfuse \
		squashfs-tools >/dev/null
fi

bytes=$((MIB << 20))
python3 "$ROOT/tools/make_sample.py" --big "$bytes" "$BENCH_DIR/big.zt"
mkdir -p "$BENCH_DIR/tree"
"$TENSORFS" cat "$BENCH_DIR/big.zt" big >"$BENCH_DIR/tree/big"
mksquashfs "$BENCH_DIR/tree" "$BENCH_DIR/big.sqfs" -noI -noD -noF -noX \
	-no-progress -quiet >/dev/null
rm -f "$BENCH_DIR/tree/big"
cat "$BENCH_DIR/big.zt" "$BENCH_DIR/big.sqfs" >/dev/null # page cache
COLD=${COLD:-0}
drop() { [ "$COLD" = 1 ] || return 0; sync; echo 3 >/proc/sys/vm/drop_caches; }

now() { date +%s%N; }
# best wall time in seconds of RUNS runs of: setup; timed command; teardown
best() {
	local setup=$1 cmd=$2 teardown=$3 i t0 t1 b=
	for i in $(seq "$RUNS"); do
		eval "$setup"
		t0=$(now)
		eval "$cmd"
		t1=$(now)
		eval "$teardown"
		if [ -z "$b" ] || [ $((t1 - t0)) -lt "$b" ]; then b=$((t1 - t0)); fi
	done
	echo "$b"
}
rd() { dd if="$1" bs=1M status=none of=/dev/null "${@:2}"; }

direct=$(best drop "rd $BENCH_DIR/big.zt iflag=skip_bytes,count_bytes skip=64 count=$bytes" :)
tfs=$(best "drop; \"$TENSORFS\" $BENCH_DIR/big.zt $M1" "rd $M1/big" "fusermount3 -u $M1")
if [ "$COLD" != 1 ]; then
	"$TENSORFS" "$BENCH_DIR/big.zt" "$M1"
	rd "$M1/big"
	again=$(best : "rd $M1/big" :)
	fusermount3 -u "$M1"
fi
sq=$(best "drop; squashfuse $BENCH_DIR/big.sqfs $M2" "rd $M2/big" "fusermount3 -u $M2")

report() { # name nanoseconds
	awk -v n="$1" -v ns="$2" -v d="$direct" -v mib="$MIB" \
		'BEGIN { printf "%-16s %8.3f s %9.0f MB/s %7.2fx of direct\n",
			 n, ns / 1e9, mib * 1.048576 / (ns / 1e9), d / ns }'
}
echo "raw read of a $MIB MiB tensor, best of $RUNS$([ "$COLD" = 1 ] &&
	echo ", not cached") (higher x is better)"
report direct "$direct"
report tensorfs "$tfs"
[ "$COLD" = 1 ] || report "tensorfs again" "$again"
report squashfuse "$sq"
awk -v a="$tfs" -v b="$sq" 'BEGIN { printf "tensorfs / squashfuse: %.2fx\n", b / a }'
