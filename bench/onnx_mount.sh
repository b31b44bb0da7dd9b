#!/usr/bin/env bash
# ONNX: mount time and daemon memory of a model of TENSORS float32
# initializers of MIB MiB each (bench/mkonnx.py, sparse files), in raw_data
# and with all of them in one external data file; then the read of every
# tensor file through the mount against `cat` of the same bytes from the
# model itself, as a ratio.  Targets (issue 23): mount < 50 ms, daemon RSS
# < 16 MiB for 1 GiB and 1,000 initializers, either layout.  Not a test.
#   bench/onnx_mount.sh [TENSORS] [MIB] [RUNS]   (default 1000 1 5)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000}
MIB=${2:-1}
RUNS=${3:-5}
TFS=${TENSORFS:-build/tensorfs}
W=$(mktemp -d /tmp/tfs-bench-onnx.XXXXXX)
trap 'fusermount3 -u "$W/mnt" 2>/dev/null || true; rm -rf "$W"' EXIT
mkdir -p "$W/mnt" "$W/ext"
python3 bench/mkonnx.py "$W/model.onnx" "$N" "$MIB"
python3 bench/mkonnx.py "$W/ext/model.onnx" "$N" "$MIB" external

ms() { echo $(($(date +%s%N) / 1000000)); }
for m in "$W/model.onnx" "$W/ext/model.onnx"; do
	best=999999
	rss=0
	for _ in $(seq "$RUNS"); do
		t0=$(ms)
		"$TFS" "$m" "$W/mnt"
		t1=$(ms)
		pid=$(pgrep -f -- "^([^ ]*/)?tensorfs .* $W/mnt\$" | head -n 1)
		r=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")
		((r > rss)) && rss=$r
		fusermount3 -u "$W/mnt"
		((t1 - t0 < best)) && best=$((t1 - t0))
	done
	"$TFS" "$m" "$W/mnt"
	t0=$(ms)
	find "$W/mnt/layers" -type f -exec cat {} + >/dev/null
	t1=$(ms)
	fusermount3 -u "$W/mnt"
	t2=$(ms)
	cat "$m"* >/dev/null
	t3=$(ms)
	printf '%s: %d x %d MiB (best of %d)\n' "${m#"$W/"}" "$N" "$MIB" "$RUNS"
	printf '  mount (command returns, mount ready): %6d ms\n' "$best"
	printf '  daemon RSS after mount (max):         %6d KiB\n' "$rss"
	printf '  read every tensor through the mount:  %6d ms (cat of the files: %d ms)\n' \
		$((t1 - t0)) $((t3 - t2))
done
