#!/usr/bin/env bash
# Mount time and daemon memory of a TensorFlow V2 bundle of TENSORS float32
# [64] tensors over SHARDS shards (tests/fixtures/tf_checkpoint/generate.py
# --big).  The time is from starting `tensorfs FILE MNT` until it returns
# with the mount ready, best of RUNS; the daemon's RSS (VmRSS, and its peak
# VmHWM) is read after `ls -lR` of the mount and after reading every xattr
# of every file.  Target (issue 25): 2,000 tensors over 4 shards, mount
# < 50 ms, RSS < 16 MiB.  Not a test.
#   bench/tf_checkpoint_mount.sh [TENSORS] [SHARDS] [RUNS]   (default 2000 4 7)
set -euo pipefail
cd "$(dirname "$0")/.."
TENSORS=${1:-2000}
SHARDS=${2:-4}
RUNS=${3:-7}
TFS=${TENSORFS:-build/tensorfs}
W=$(mktemp -d /tmp/tfs-bench-tfckpt.XXXXXX)
trap 'fusermount3 -u "$W/mnt" 2>/dev/null || true; rm -rf "$W"' EXIT
mkdir -p "$W/mnt"
python3 tests/fixtures/tf_checkpoint/generate.py --big "$W/ckpt" "$TENSORS" "$SHARDS"
cat "$W"/ckpt.* >/dev/null # page cache warm, as after the first mount

ms() { echo $(($(date +%s%N) / 1000000)); }
best=999999
for _ in $(seq "$RUNS"); do
	t0=$(ms)
	"$TFS" "$W/ckpt.index" "$W/mnt"
	t1=$(ms)
	fusermount3 -u "$W/mnt"
	((t1 - t0 < best)) && best=$((t1 - t0))
done
"$TFS" "$W/ckpt.index" "$W/mnt"
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
	"$TFS" ls "$W/ckpt.index" >/dev/null
	t1=$(ms)
	((t1 - t0 < best_ls)) && best_ls=$((t1 - t0))
done
printf 'TF bundle: %s tensors over %s shards, index %s bytes (best of %s)\n' \
	"$TENSORS" "$SHARDS" "$(stat -c %s "$W/ckpt.index")" "$RUNS"
printf '  mount (command returns, mount ready): %6d ms\n' "$best"
printf '  tensorfs ls (whole process):          %6d ms\n' "$best_ls"
printf '  daemon RSS after ls -lR:              %6d KiB\n' "$rss_ls"
printf '  daemon RSS after every xattr:         %6d KiB (peak %d KiB)\n' "$rss_x" "$hwm"
