#!/usr/bin/env bash
# Whole-model page cache: after drop_caches, mount a GPT-2-small-shaped
# checkpoint (tools/make_model.py) and cat every tensor file; then count what
# stays in the page cache with fincore: the container's pages plus the
# mount's pages, over the bytes the tensor files served.  1.00x is one copy.
#   bench/pagecache_model.sh [MODELDIR [LAYOUT...]]
# MODELDIR (default /tmp/tfs-models) is filled by tools/make_model.py when a
# layout is missing (MODEL_SIZE=small: its --small models, for bench/run
# --smoke).  Needs root (drop_caches) and /dev/fuse.  TENSORFS:
# the binary (default build/tensorfs).  Prints one row per layout:
#   layout  tensor_MiB  container_MiB  mount_MiB  ratio
set -euo pipefail
cd "$(dirname "$0")/.."
TENSORFS=${TENSORFS:-$PWD/build/tensorfs}
models=${1:-/tmp/tfs-models}
shift || true
layouts=("$@")
[ ${#layouts[@]} -gt 0 ] || layouts=(pt st-sharded st-bf16 gguf-f16 npz zt-zstd)
for l in "${layouts[@]}"; do
	[ -f "$models/$l.bytes" ] || /usr/bin/python3 tools/make_model.py \
		${MODEL_SIZE:+--$MODEL_SIZE} "$models" "$l" >/dev/null
done

resident() { # bytes of files $@ in the page cache
	fincore -b -n -o RES "$@" 2>/dev/null | awk '{ s += $1 } END { print s + 0 }'
}
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }

mnt=$(mktemp -d /tmp/tfs-pc.XXXXXX)
trap 'mountpoint -q "$mnt" && fusermount3 -u "$mnt"; rmdir "$mnt"' EXIT
printf '%-11s %10s %13s %9s %6s\n' layout tensor_MiB container_MiB mount_MiB ratio
for l in "${layouts[@]}"; do
	src=$models/$l
	# a directory of shards is mounted whole; a one-file layout as the file
	[ "$(find "$src" -type f | wc -l)" -eq 1 ] && src=$(find "$src" -type f)
	want=$(cat "$models/$l.bytes")
	sync
	echo 3 >/proc/sys/vm/drop_caches
	"$TENSORFS" "$src" "$mnt"
	mapfile -d '' files < <(find "$mnt" -path "$mnt/.tensorfs" -prune -o \
		-type f -print0)
	cat "${files[@]}" >/dev/null
	# the daemon drops the container's pages after its last reply
	sleep 1
	c=$(resident $(find "$models/$l" -type f))
	m=$(resident "${files[@]}")
	fusermount3 -u "$mnt"
	printf '%-11s %10s %13s %9s %6s\n' "$l" "$(mib "$want")" "$(mib "$c")" \
		"$(mib "$m")" "$(awk -v a="$c" -v b="$m" -v w="$want" \
		'BEGIN { printf "%.2fx", (a + b) / w }')"
done
