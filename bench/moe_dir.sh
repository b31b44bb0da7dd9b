#!/usr/bin/env bash
# A DeepSeek-V3-shaped sharded directory (tools/make_moe.py: 163 safetensors
# shards, 90,427 tensors, model.safetensors.index.json): mount time,
# `tensorfs ls` time, `ls -lR` of the mount (first, warm) against the same
# tree as plain files on the local disk (cached) and through squashfuse_ll,
# the daemon's RSS after `ls -lR`, and the FUSE requests a first `ls -lR`
# makes (counted from a second mount's debug log).  Not a test; root, idle
# machine.  The last lines, "row<TAB>measurement<TAB>now<TAB>ratio<TAB>
# target", are bench/run's rows.
#   bench/moe_dir.sh [WORKDIR]      (default a new directory under /tmp)
set -euo pipefail
cd "$(dirname "$0")/.."
TFS=${TENSORFS:-$PWD/build/tensorfs}
W=${1:-$(mktemp -d /tmp/tfs-moe.XXXXXX)}
M=$W/mnt
S=$W/mnt-sq
mkdir -p "$M" "$S"
cleanup() {
	mountpoint -q "$M" && fusermount3 -u "$M"
	mountpoint -q "$S" && fusermount3 -u "$S"
	return 0
}
trap cleanup EXIT
if [ ! -f "$W/moe/model.safetensors.index.json" ]; then
	/usr/bin/python3 tools/make_moe.py "$W/moe" --tree "$W/tree" >/dev/null
	mksquashfs "$W/tree" "$W/tree.sqfs" -noI -noD -noF -noX -no-progress \
		-quiet >/dev/null
fi
now() { date +%s%N; }
ms() { echo $((($2 - $1) / 1000000)); }

t0=$(now); "$TFS" "$W/moe" "$M"; t1=$(now)
mount_ms=$(ms "$t0" "$t1")
echo "mount: $mount_ms ms"
t0=$(now); ls -lR "$M" >/dev/null; t1=$(now)
first=$(ms "$t0" "$t1")
t0=$(now); ls -lR "$M" >/dev/null; t1=$(now)
warm=$(ms "$t0" "$t1")
pid=$(pgrep -n -f "^$TFS $W/moe $M\$")
rss=$(awk '/VmRSS/ { print int($2 / 1024) }' "/proc/$pid/status")
echo "daemon RSS after ls -lR: $rss MiB"
fusermount3 -u "$M"
t0=$(now); "$TFS" ls "$W/moe" >/dev/null; t1=$(now)
ls_ms=$(ms "$t0" "$t1")
echo "tensorfs ls: $ls_ms ms"
ls -lR "$W/tree" >/dev/null
t0=$(now); ls -lR "$W/tree" >/dev/null; t1=$(now)
plain=$(ms "$t0" "$t1")
squashfuse_ll "$W/tree.sqfs" "$S"
t0=$(now); ls -lR "$S" >/dev/null; t1=$(now)
sq=$(ms "$t0" "$t1")
fusermount3 -u "$S"
echo "ls -lR first / warm: $first / $warm ms; plain files (cached): $plain ms" \
	"($(awk -v a="$first" -v b="$plain" 'BEGIN { printf "%.2f", a / b }')x);" \
	"squashfuse_ll first: $sq ms"

# the requests of a first ls -lR, from the debug log of a foreground mount
"$TFS" -f -d "$W/moe" "$M" 2>"$W/debug.log" &
dpid=$!
for _ in $(seq 100); do mountpoint -q "$M" && break; sleep 0.1; done
ls -lR "$M" >/dev/null
fusermount3 -u "$M"
wait "$dpid" || true
entries=$(find "$W/tree" | wc -l)
echo "FUSE requests of a first ls -lR over $entries entries:"
grep -o 'opcode: [A-Z_]*' "$W/debug.log" | sort | uniq -c | sort -rn |
	awk -v e="$entries" '{ printf "  %-22s %8d  %.2f per entry\n", $3, $1, $1 / e }'
tab() { printf '%s\t' row "$@" | sed 's/\t$//'; echo; }
tab "MoE directory (163 shards, $(grep -c 'safetensors"' "$W/moe/model.safetensors.index.json") tensors): mount (command return)" \
	"$(awk -v m="$mount_ms" 'BEGIN { printf "%.3f s", m / 1000 }')" "" "<= 0.5 s"
tab "same: tensorfs ls" "$(awk -v m="$ls_ms" 'BEGIN { printf "%.3f s", m / 1000 }')" "" "<= 0.5 s"
tab "same: ls -lR of the mount (first) / of the tree as plain files (cached)" \
	"$first ms vs $plain ms (squashfuse_ll: $sq ms)" \
	"$(awk -v a="$first" -v b="$plain" 'BEGIN { printf "%.2fx", a / b }')" "<= 2.5x"
tab "same: daemon RSS after ls -lR" "$rss MiB" "" "<= 48 MiB"
