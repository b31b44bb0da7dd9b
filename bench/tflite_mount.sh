#!/usr/bin/env bash
# Mount time and daemon memory of a ~MIB MiB TFLite model of TENSORS float32
# constants (tests/fixtures/tflite/generate.py --big).  The time is from
# starting `tensorfs FILE MNT` until it returns with the mount ready, best
# of RUNS; the daemon's RSS (VmRSS, and its peak VmHWM) is read after
# `ls -lR` of the mount and after reading every xattr of every file.
# Target (issue 25): mount < 20 ms, RSS < 16 MiB.  Not a test.
#   bench/tflite_mount.sh [MIB] [TENSORS] [RUNS]   (default 500 256 7)
set -euo pipefail
cd "$(dirname "$0")/.."
MIB=${1:-500}
TENSORS=${2:-256}
RUNS=${3:-7}
TFS=${TENSORFS:-build/tensorfs}
W=$(mktemp -d /tmp/tfs-bench-tflite.XXXXXX)
trap 'fusermount3 -u "$W/mnt" 2>/dev/null || true; rm -rf "$W"' EXIT
mkdir -p "$W/mnt"
python3 tests/fixtures/tflite/generate.py --big "$W/model.tflite" "$MIB" "$TENSORS"
cat "$W/model.tflite" >/dev/null # page cache warm, as after the first mount

ms() { echo $(($(date +%s%N) / 1000000)); }
best=999999
for _ in $(seq "$RUNS"); do
	t0=$(ms)
	"$TFS" "$W/model.tflite" "$W/mnt"
	t1=$(ms)
	fusermount3 -u "$W/mnt"
	((t1 - t0 < best)) && best=$((t1 - t0))
done
"$TFS" "$W/model.tflite" "$W/mnt"
pid=$(pgrep -f -- "^([^ ]*/)?tensorfs .* $W/mnt\$" | head -n 1)
ls -lR "$W/mnt" >/dev/null
rss_ls=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
getfattr -R -d "$W/mnt" >/dev/null 2>&1 || true
rss_x=$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status")
hwm=$(awk '/^VmHWM/ {print $2}' "/proc/$pid/status")
fusermount3 -u "$W/mnt"
best_ls=999999
for _ in $(seq "$RUNS"); do
	t0=$(ms)
	"$TFS" ls "$W/model.tflite" >/dev/null
	t1=$(ms)
	((t1 - t0 < best_ls)) && best_ls=$((t1 - t0))
done
printf 'TFLite %s bytes, %s constants (best of %s)\n' \
	"$(stat -c %s "$W/model.tflite")" "$TENSORS" "$RUNS"
printf '  mount (command returns, mount ready): %6d ms\n' "$best"
printf '  tensorfs ls (whole process):          %6d ms\n' "$best_ls"
printf '  daemon RSS after ls -lR:              %6d KiB\n' "$rss_ls"
printf '  daemon RSS after every xattr:         %6d KiB (peak %d KiB)\n' "$rss_x" "$hwm"
