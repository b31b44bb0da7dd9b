#!/usr/bin/env bash
# The safetensors export (docs/export.md): `tensorfs convert` of a ~1 GiB
# raw checkpoint against `cp` of the same file, with the peak memory of
# convert; then, through a mount, `cat` of .tensorfs/export/model.safetensors
# against `cat` of every tensor file.  Warm page cache (each source read
# once first), best of RUNS.  Not a test.
#   bench/export.sh [MIB] [RUNS]   (default 1024 3)
set -euo pipefail
cd "$(dirname "$0")/.."
MIB=${1:-1024}
RUNS=${2:-3}
TFS=${TENSORFS:-$PWD/build/tensorfs}
PY=/usr/bin/python3
W=$(mktemp -d /tmp/tfs-bench-export.XXXXXX)
trap 'fusermount3 -u "$W/mnt" 2>/dev/null || true; rm -rf "$W"' EXIT
mkdir -p "$W/mnt"

# 64 float16/float32 tensors, MIB in all: a safetensors file, and the same
# state dict as a stored PyTorch zip when torch is installed
$PY - "$W" "$MIB" <<'PY'
import json, struct, sys
import numpy as np
w, mib = sys.argv[1], int(sys.argv[2])
n = 64
each = mib * 2**20 // n
header, off, arrays = {}, 0, []
rng = np.random.default_rng(0)
for i in range(n):
    dt, st = ("F16", np.float16) if i % 2 else ("F32", np.float32)
    count = each // np.dtype(st).itemsize
    header[f"model.layers.{i}.weight"] = {
        "dtype": dt, "shape": [count], "data_offsets": [off, off + each]}
    arrays.append((i, st, count))
    off += each
h = json.dumps(header, separators=(",", ":")).encode()
h += b" " * (-len(h) % 8)
with open(f"{w}/model.safetensors", "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h)
    block = rng.standard_normal(1 << 20).astype(np.float32).tobytes()
    for i, st, count in arrays:
        left = each
        while left:
            k = min(left, len(block))
            f.write(block[:k])
            left -= k
PY

best() { # best wall time in seconds of RUNS runs of "$@"
	local b="" t s e
	for _ in $(seq "$RUNS"); do
		rm -f "$W/out"
		sync
		s=$(date +%s.%N)
		"$@" >/dev/null
		e=$(date +%s.%N)
		t=$(echo "$e - $s" | bc)
		if [ -z "$b" ] || [ "$(echo "$t < $b" | bc)" = 1 ]; then b=$t; fi
	done
	echo "$b"
}
SRC="$W/model.safetensors"
SIZE=$(stat -c %s "$SRC")
cat "$SRC" >/dev/null
# both write a new file (no file replaced), after a sync
t_cp=$(best cp "$SRC" "$W/out")
t_cv=$(best "$TFS" convert "$SRC" "$W/out" 2>/dev/null)
rm -f "$W/out"
rss=$( { /usr/bin/time -f %M "$TFS" convert "$SRC" "$W/out" 2>&1 \
	>/dev/null; } | tail -n 1)
echo "source: $((SIZE >> 20)) MiB safetensors, 64 tensors"
printf 'cp                 %6.3f s\n' "$t_cp"
printf 'tensorfs convert   %6.3f s  (%.2fx the time of cp; peak RSS %s KiB)\n' \
	"$t_cv" "$(echo "$t_cv / $t_cp" | bc -l)" "$rss"

# each run on a fresh mount (the mount's page cache empty, the source's
# warm): the read path, not the page cache
X="$W/mnt/.tensorfs/export/model.safetensors"
fresh() { # best time of RUNS runs of "$@", each on a fresh mount
	local b="" t s e
	for _ in $(seq "$RUNS"); do
		cat "$SRC" >/dev/null
		"$TFS" -o keep_source_cache "$SRC" "$W/mnt"
		s=$(date +%s.%N)
		"$@" >/dev/null
		e=$(date +%s.%N)
		fusermount3 -u "$W/mnt"
		t=$(echo "$e - $s" | bc)
		if [ -z "$b" ] || [ "$(echo "$t < $b" | bc)" = 1 ]; then b=$t; fi
	done
	echo "$b"
}
t_x=$(fresh cat "$X")
t_f=$(fresh bash -c "find '$W/mnt' -path '$W/mnt/.tensorfs' -prune -o \
	-type f -print0 | xargs -0 cat")
printf 'cat export         %6.3f s\n' "$t_x"
printf 'cat every tensor   %6.3f s  (export: %.2fx the time)\n' "$t_f" \
	"$(echo "$t_x / $t_f" | bc -l)"

# page cache after one cat of the export (the source cached before)
res() { fincore -b -n -o RES "$1" | awk '{ s += $1 } END { print s + 0 }'; }
cat "$SRC" >/dev/null
"$TFS" "$SRC" "$W/mnt"
XS=$(stat -c %s "$X")
cat "$X" >/dev/null
sleep 1
r_src=$(res "$SRC")
r_x=$(res "$X")
printf 'page cache after cat export: %d MiB (source %d + export %d) for %d MiB read: %.2fx\n' \
	$(((r_src + r_x) >> 20)) $((r_src >> 20)) $((r_x >> 20)) $((XS >> 20)) \
	"$(echo "($r_src + $r_x) / $XS" | bc -l)"
fusermount3 -u "$W/mnt"
