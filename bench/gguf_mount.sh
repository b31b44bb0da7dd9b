#!/usr/bin/env bash
# Mount time of a llama-like GGUF: a VOCAB-token vocabulary (tokens, scores,
# token types, merges: bench/mkgguf.py) and TENSORS tensors.  The time is
# from starting `tensorfs FILE MNT` until it returns with the mount ready,
# best of RUNS; then the first read of .tensorfs/metadata.json (which puts
# the vocabulary into JSON then, not at mount).  Target: mount < 50 ms.
# Not a test.
#   bench/gguf_mount.sh [VOCAB] [TENSORS] [RUNS]   (default 150000 300 7)
set -euo pipefail
cd "$(dirname "$0")/.."
VOCAB=${1:-150000}
TENSORS=${2:-300}
RUNS=${3:-7}
TFS=${TENSORFS:-build/tensorfs}
W=$(mktemp -d /tmp/tfs-bench-gguf.XXXXXX)
trap 'fusermount3 -u "$W/mnt" 2>/dev/null || true; rm -rf "$W"' EXIT
mkdir -p "$W/mnt"
python3 bench/mkgguf.py "$W/model.gguf" "$VOCAB" "$TENSORS"

ms() { echo $(($(date +%s%N) / 1000000)); }
best=999999
best_meta=999999
for _ in $(seq "$RUNS"); do
	sync
	t0=$(ms)
	"$TFS" "$W/model.gguf" "$W/mnt"
	t1=$(ms)
	cat "$W/mnt/.tensorfs/metadata.json" >/dev/null
	t2=$(ms)
	fusermount3 -u "$W/mnt"
	((t1 - t0 < best)) && best=$((t1 - t0))
	((t2 - t1 < best_meta)) && best_meta=$((t2 - t1))
done
best_ls=999999
for _ in $(seq "$RUNS"); do
	t0=$(ms)
	"$TFS" ls "$W/model.gguf" >/dev/null
	t1=$(ms)
	((t1 - t0 < best_ls)) && best_ls=$((t1 - t0))
done
printf 'GGUF %s bytes, %s-token vocabulary, %s tensors (best of %s)\n' \
	"$(stat -c %s "$W/model.gguf")" "$VOCAB" "$TENSORS" "$RUNS"
printf '  mount (command returns, mount ready): %6d ms\n' "$best"
printf '  tensorfs ls (whole process):          %6d ms\n' "$best_ls"
printf '  first read of metadata.json:          %6d ms\n' "$best_meta"
