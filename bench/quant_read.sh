#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Benchmark (not a test): the quant view's dequantizing read of a GPTQ
# 4-bit SIZE x SIZE layer (bench/mkgptq.py, random) against numpy's
# vectorized reference dequantization of the same bytes (the spec's
# formula, bench/mkgptq.py --ref), both giving the same float32 bytes
# (their sha256 is compared first).  docs/performance.md records the rows.
#
#   bench/quant_read.sh [SIZE] [RUNS]     (default 4096, best of 5)
#
# Rows: numpy (decode in memory, file in page cache), tensorfs cat --as
# float32 (the CLI: the decode without FUSE), and the mount's first read
# (cat of the weight file on a fresh mount: decode + FUSE transfer).
set -euo pipefail

SIZE=${1:-4096}
RUNS=${2:-5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TENSORFS=${TENSORFS:-$ROOT/build/tensorfs}
DIR=$(mktemp -d /tmp/tfs-quant.XXXXXX)
MNT=$DIR/mnt
mkdir -p "$MNT"
trap 'fusermount3 -u "$MNT" 2>/dev/null || true; rm -rf "$DIR"' EXIT

/usr/bin/python3 "$ROOT/bench/mkgptq.py" "$DIR" "$SIZE"
best() { sort -n | head -1; }
now() { date +%s.%N; }

ref=$(/usr/bin/python3 "$ROOT/bench/mkgptq.py" "$DIR" "$SIZE" --ref)
want=${ref##* }
got=$("$TENSORFS" cat --as float32 "$DIR" l.weight | sha256sum | cut -d' ' -f1)
[ "$got" = "$want" ] || { echo "quant_read: tensorfs and numpy differ" >&2; exit 1; }

np_t=$(for _ in $(seq "$RUNS"); do
	r=$(/usr/bin/python3 "$ROOT/bench/mkgptq.py" "$DIR" "$SIZE" --ref)
	echo "$r" | awk '{ print $2 }'
done | best)
cli_t=$(for _ in $(seq "$RUNS"); do
	t0=$(now); "$TENSORFS" cat --as float32 "$DIR" l.weight >/dev/null
	echo "$(now) - $t0" | bc -l
done | best)
mnt_t=$(for _ in $(seq "$RUNS"); do
	"$TENSORFS" -o as=float32 "$DIR" "$MNT"
	t0=$(now); cat "$MNT/model/l/weight" >/dev/null
	echo "$(now) - $t0" | bc -l
	fusermount3 -u "$MNT"
done | best)
bytes=$((SIZE * SIZE * 4))
row() { printf '%-34s %8.4f s %8.0f MB/s %6.2fx numpy\n' "$1" "$2" \
	"$(echo "$bytes / $2 / 1000000" | bc -l)" "$(echo "$np_t / $2" | bc -l)"; }
echo "GPTQ 4-bit ${SIZE}x${SIZE} layer, float32 out ($((bytes >> 20)) MiB), best of $RUNS"
row "numpy reference dequantization" "$np_t"
row "tensorfs cat --as float32 (no FUSE)" "$cli_t"
row "mount -o as=float32, first read" "$mnt_t"
