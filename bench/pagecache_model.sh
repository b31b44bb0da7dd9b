#!/usr/bin/env bash
# Whole-model page cache: after drop_caches, mount a GPT-2-small-shaped
# checkpoint (tools/make_model.py) and cat every tensor file; then count what
# stays in the page cache with fincore: the container's pages plus the
# mount's pages, over the bytes the tensor files served.  1.00x is one copy.
#   bench/pagecache_model.sh [MODELDIR [LAYOUT...]]
# MODELDIR (default /tmp/tfs-models) is filled by tools/make_model.py when a
# layout is missing (MODEL_SIZE=small: its --small models, for bench/run
# --smoke).  Needs root (drop_caches) and /dev/fuse.  TENSORFS:
# the binary (default build/tensorfs).  READERS=N: the files read by N
# cats at once (each every Nth file).  LIMIT_MIB=M: the daemon and the
# readers run in a memory cgroup of M MiB (v2, or v1's memory controller),
# so the page cache is under pressure and cannot hold the model.  Prints one
# row per layout:
#   layout  tensor_MiB  container_MiB  mount_MiB  ratio  disk_MiB  read
# ratio: cached container + mount pages over the bytes served (1.00x is one
# copy; below 1 under a limit); read: what came from the disk (pgpgin,
# which also counts the ~25 MiB of programs and libraries read again after
# drop_caches) over the container's bytes (above 1.00x: pages dropped and
# read again).
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

readers=${READERS:-1}
cg=
if [ -n "${LIMIT_MIB:-}" ]; then
	if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
		cg=/sys/fs/cgroup/tfs-pc.$$
		mkdir "$cg"
		echo $((LIMIT_MIB << 20)) >"$cg/memory.max"
	else
		cg=/sys/fs/cgroup/memory/tfs-pc.$$
		mkdir "$cg"
		echo $((LIMIT_MIB << 20)) >"$cg/memory.limit_in_bytes"
	fi
fi
inside() { # run "$@" in the cgroup, when there is one
	if [ -n "$cg" ]; then
		sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" "$@"
	else
		"$@"
	fi
}
read_all() { # cat "$@" with $readers processes, each every Nth file
	local r i pids=()
	for ((r = 0; r < readers; r++)); do
		local part=()
		for ((i = r; i < $#; i += readers)); do
			part+=("${@:i+1:1}")
		done
		[ ${#part[@]} -eq 0 ] && continue
		inside cat "${part[@]}" >/dev/null &
		pids+=($!)
	done
	wait "${pids[@]}"
}
pgpgin() { awk '$1 == "pgpgin" { printf "%.0f\n", $2 * 1024 }' /proc/vmstat; }

mnt=$(mktemp -d /tmp/tfs-pc.XXXXXX)
trap 'mountpoint -q "$mnt" && fusermount3 -u "$mnt"; rmdir "$mnt"
	[ -z "$cg" ] || rmdir "$cg"' EXIT
printf '%-11s %10s %13s %9s %6s %8s %6s\n' layout tensor_MiB container_MiB \
	mount_MiB ratio disk_MiB read
for l in "${layouts[@]}"; do
	src=$models/$l
	# a directory of shards is mounted whole; a one-file layout as the file
	[ "$(find "$src" -type f | wc -l)" -eq 1 ] && src=$(find "$src" -type f)
	want=$(cat "$models/$l.bytes")
	sync
	echo 3 >/proc/sys/vm/drop_caches
	in0=$(pgpgin)
	inside "$TENSORFS" "$src" "$mnt"
	mapfile -d '' files < <(find "$mnt" -path "$mnt/.tensorfs" -prune -o \
		-type f -print0)
	read_all "${files[@]}"
	in1=$(pgpgin)
	# the daemon drops the container's pages after its last reply
	sleep 1
	c=$(resident $(find "$models/$l" -type f))
	m=$(resident "${files[@]}")
	fusermount3 -u "$mnt"
	printf '%-11s %10s %13s %9s %6s %8s %6s\n' "$l" "$(mib "$want")" \
		"$(mib "$c")" "$(mib "$m")" "$(awk -v a="$c" -v b="$m" -v w="$want" \
		'BEGIN { printf "%.2fx", (a + b) / w }')" "$(mib $((in1 - in0)))" \
		"$(awk -v r=$((in1 - in0)) -v w="$(du -bc "$models/$l" | tail -1 | cut -f1)" \
		'BEGIN { printf "%.2fx", r / w }')"
done
