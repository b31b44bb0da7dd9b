#!/usr/bin/env bash
# Mount time and daemon memory of a sharded model: SHARDS safetensors files
# of TENSORS tensors each (with their model.safetensors.index.json), against
# the same tensors in one file.  Only headers are read at mount, so the
# cost is the tree.  Not a test.
#   bench/dir_mount.sh [SHARDS] [TENSORS] [RUNS]   (default 100 1000 3)
set -euo pipefail
cd "$(dirname "$0")/.."
SHARDS=${1:-100}
TENSORS=${2:-1000}
RUNS=${3:-3}
TFS=${TENSORFS:-build/tensorfs}
W=$(mktemp -d /tmp/tfs-bench-dir.XXXXXX)
trap 'fusermount3 -u "$W/mnt" 2>/dev/null || true; rm -rf "$W"' EXIT
mkdir -p "$W/model" "$W/one" "$W/mnt"

python3 - "$W" "$SHARDS" "$TENSORS" <<'PY'
import json, struct, sys
w, shards, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def shard(path, names):
    header, off = {}, 0
    for n in names:
        header[n] = {"dtype": "F32", "shape": [4], "data_offsets": [off, off + 16]}
        off += 16
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + bytes(off))
wm, alln = {}, []
for s in range(shards):
    names = [f"model.layers.{s}.t{i}.weight" for i in range(per)]
    fn = f"model-{s + 1:05d}-of-{shards:05d}.safetensors"
    shard(f"{w}/model/{fn}", names)
    wm.update({n: fn for n in names})
    alln += names
json.dump({"metadata": {"total_size": 16 * len(alln)}, "weight_map": wm},
          open(f"{w}/model/model.safetensors.index.json", "w"))
shard(f"{w}/one/model.safetensors", alln)
PY

# best-of-RUNS seconds for the mount command to return, and the daemon's RSS
measure() {
	local what=$1 best=999 t rss pid
	for _ in $(seq "$RUNS"); do
		sync
		t=$( { /usr/bin/time -f %e "$TFS" "$what" "$W/mnt"; } 2>&1 | tail -n 1)
		pid=$(pgrep -f -- "^([^ ]*/)?tensorfs .* $W/mnt\$" | head -n 1)
		rss=$(awk '/VmRSS/ { print $2 }' "/proc/$pid/status")
		fusermount3 -u "$W/mnt"
		best=$(echo "$t $best" | awk '{ print ($1 < $2) ? $1 : $2 }')
	done
	echo "$best $rss"
}
read -r ts rs < <(measure "$W/model")
read -r to ro < <(measure "$W/one/model.safetensors")
n=$((SHARDS * TENSORS))
printf '%-34s %8s %10s\n' "" "mount s" "RSS MiB"
printf '%-34s %8s %10.1f\n' "$SHARDS shards x $TENSORS tensors" "$ts" "$(echo "$rs / 1024" | bc -l)"
printf '%-34s %8s %10.1f\n' "one file, $n tensors" "$to" "$(echo "$ro / 1024" | bc -l)"
printf 'sharded / one file: time %.2fx, RSS %.2fx\n' \
	"$(echo "$ts / $to" | bc -l)" "$(echo "$rs / $ro" | bc -l)"
