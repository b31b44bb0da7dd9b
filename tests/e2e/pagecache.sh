#!/usr/bin/env bash
# A tensor read through the mount is cached once: the mount's pages stay,
# the container's pages of it are dropped (unless -o keep_source_cache);
# the bytes are right either way.  The mount's readahead is -o readahead=
# (default 1M) when we are root.
. "$(dirname "$0")/lib.sh"
need_fuse
command -v fincore >/dev/null || { echo "SKIP: fincore missing"; exit 77; }

mib=32
python3 "$TFS_SOURCE_ROOT/tools/make_sample.py" --big $((mib << 20)) "$WORK/big.zt"
# written back first: dirty pages, or pages under writeback on a busy
# disk, are not dropped by POSIX_FADV_DONTNEED
sync "$WORK/big.zt"
# the tensor's bytes, independently: the file less its 64-byte header and
# the manifest behind the tensor
tail -c +65 "$WORK/big.zt" | head -c $((mib << 20)) >"$WORK/want"
resident() { fincore -b -n -o RES "$@" | awk '{ s += $1 } END { print s + 0 }'; }

cat "$WORK/big.zt" >/dev/null
check "the container is cached before" test "$(resident "$WORK/big.zt")" -gt $(((mib << 20) * 9 / 10))
M=$(mount_container "$WORK/big.zt") || fail "mount"
check "bytes through the mount" cmp -s "$M/big" "$WORK/want"
# cmp above read the container again; cache it, read the tensor afresh
unmount "$M"
cat "$WORK/big.zt" >/dev/null
M=$(mount_container "$WORK/big.zt") || fail "mount again"
cat "$M/big" >/dev/null
# the daemon drops them right after its last reply, which may be after cat
# returned: give a busy machine up to 5 s
for _ in $(seq 50); do
	left=$(resident "$WORK/big.zt")
	[ "$left" -lt $(((mib << 20) / 10)) ] && break
	sleep 0.1
done
check "container pages dropped after a full read ($left bytes left)" \
	test "$left" -lt $(((mib << 20) / 10))
check "the mount's pages hold the tensor" test "$(resident "$M/big")" -gt $(((mib << 20) * 9 / 10))
check "a re-read gives the same bytes" cmp -s "$M/big" <(cat "$M/big")
if [ "$(id -u)" = 0 ]; then
	eq "readahead 1M by default" \
		"$(cat "/sys/class/bdi/$(mountpoint -d "$M")/read_ahead_kb")" 1024
fi
unmount "$M"

cat "$WORK/big.zt" >/dev/null
M=$(mount_container "$WORK/big.zt" -o keep_source_cache,readahead=512K) ||
	fail "mount keep_source_cache"
cat "$M/big" >/dev/null
check "-o keep_source_cache: the container stays cached" \
	test "$(resident "$WORK/big.zt")" -gt $(((mib << 20) * 9 / 10))
if [ "$(id -u)" = 0 ]; then
	eq "-o readahead=512K" \
		"$(cat "/sys/class/bdi/$(mountpoint -d "$M")/read_ahead_kb")" 512
fi
unmount "$M"

# A whole model, every tensor read once, in the layouts users hold
# (tools/make_model.py --medium: GPT-2 shaped, 21M parameters, 40-100 MiB):
# what stays cached, the container's pages plus the mount's, is one copy
# of the bytes served (<= 1.05x; it was 1.17x for a bf16 safetensors file
# and 1.92x for zTensor zstd before the daemon's readahead stopped at
# each tensor's end and the zstd input was dropped).  The container starts
# out of the page cache (posix_fadvise DONTNEED), as after a reboot.
models=$WORK/models
layouts=(st-sharded st-bf16 gguf-f16 npz zt-zstd)
/usr/bin/python3 -c 'import torch' 2>/dev/null && layouts+=(pt) ||
	echo "SKIP-CASE: pt: python3-torch is not installed"
/usr/bin/python3 "$TFS_SOURCE_ROOT/tools/make_model.py" --medium "$models" \
	"${layouts[@]}" >/dev/null || fail "tools/make_model.py"
evict() {
	/usr/bin/python3 - "$@" <<'PY'
import os, sys
for p in sys.argv[1:]:
    fd = os.open(p, os.O_RDONLY)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
PY
}
for l in "${layouts[@]}"; do
	mapfile -t parts < <(find "$models/$l" -type f | sort)
	src=$models/$l
	[ ${#parts[@]} -eq 1 ] && src=${parts[0]}
	evict "${parts[@]}"
	M=$(mount_container "$src") || { fail "$l: mount"; continue; }
	mapfile -d '' files < <(find "$M" -path "$M/.tensorfs" -prune -o \
		-type f -print0)
	served=$(cat "${files[@]}" | wc -c)
	eq "$l: every tensor file read whole" "$served" "$(cat "$models/$l.bytes")"
	for _ in $(seq 50); do
		c=$(resident "${parts[@]}")
		[ "$c" -lt $((served / 50)) ] && break
		sleep 0.1
	done
	m=$(resident "${files[@]}")
	ratio=$(awk -v c="$c" -v m="$m" -v s="$served" \
		'BEGIN { printf "%.3f", (c + m) / s }')
	check "$l: one copy cached ($((c >> 10)) KiB of the container + $((m >> 10)) KiB of the mount = ${ratio}x of $((served >> 10)) KiB)" \
		awk -v r="$ratio" 'BEGIN { exit !(r <= 1.05) }'
	unmount "$M"
done

# Under a memory cgroup's limit (systemd's MemoryMax=, a container's) the
# decode cache's default follows the limit, not the machine's RAM: with a
# 1 GiB cache the kernel killed the daemon of this 81 MiB zstd model in a
# 64 MiB cgroup after ~50 MB, and the mount was dead.
cgroup_case() {
	local cg='' lim=$((64 << 20)) f=$models/zt-zstd/model.zt got
	if [ -f /sys/fs/cgroup/cgroup.controllers ] &&
		grep -qw memory /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
		cg=/sys/fs/cgroup/tfs-e2e.$$
		mkdir "$cg" && echo "$lim" >"$cg/memory.max" || cg=
	elif [ -d /sys/fs/cgroup/memory ]; then
		cg=/sys/fs/cgroup/memory/tfs-e2e.$$
		mkdir "$cg" && echo "$lim" >"$cg/memory.limit_in_bytes" || cg=
	fi
	if [ -z "$cg" ]; then
		echo "SKIP-CASE: memory cgroup: none we can make here"
		return 0
	fi
	M=$(mktemp -d "$WORK/mnt.XXXXXX")
	sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" \
		"$TENSORFS" "$f" "$M" || { fail "mount in a 64 MiB cgroup"; rmdir "$cg"; return; }
	mapfile -d '' files < <(find "$M" -path "$M/.tensorfs" -prune -o \
		-type f -print0)
	got=$(sh -c 'echo $$ >"$0/cgroup.procs" && exec cat "$@"' "$cg" \
		"${files[@]}" | wc -c)
	eq "zt-zstd read whole by a reader in a 64 MiB memory cgroup" "$got" \
		"$(cat "$models/zt-zstd.bytes")"
	check "the daemon lived through it" stat "$M/.tensorfs/manifest.json"
	# 16 readers at once, a decoder each.  This model is too small to pass
	# the limit even before the daemon's fixed mmap threshold (run.c): the
	# GPT-2-sized case is bench/pagecache_model.sh READERS=16 LIMIT_MIB=64
	got=$(for ((r = 0; r < 16; r++)); do
		part=()
		for ((i = r; i < ${#files[@]}; i += 16)); do
			part+=("${files[i]}")
		done
		sh -c 'echo $$ >"$0/cgroup.procs" && exec cat "$@"' "$cg" \
			"${part[@]}" | wc -c &
	done | awk '{ s += $1 } END { print s + 0 }')
	eq "zt-zstd read whole by 16 readers at once in the 64 MiB cgroup" \
		"$got" "$(cat "$models/zt-zstd.bytes")"
	check "the daemon lived through them" stat "$M/.tensorfs/manifest.json"
	fusermount3 -u "$M"
	# Random reads (8 threads, 1 B to a whole tensor, the mount's pages
	# dropped every 2 s) with -o cache_size=16M, compared with what
	# tensorfs cat decodes: in the cgroup, every byte right and the daemon
	# alive; outside it, the daemon's peak (VmHWM) under 96 MiB, 6x the
	# budget (measured 52-72 MB, the code and the mapped binary's pages
	# included; a bound that catches the old growth without failing on a
	# busy machine).  It was 119 MB: every compressed input read stayed resident
	# in its mapping, and an idle decoder (and its window) was kept for
	# every large tensor read at random.
	local ref=$WORK/ref pid hwm out
	while read -r path; do
		mkdir -p "$ref/$(dirname "$path")"
		"$TENSORFS" cat "$f" "$path" >"$ref/$path"
	done < <("$TENSORFS" ls --paths "$f" | awk '{ print $NF }')
	sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cg" \
		"$TENSORFS" -o cache_size=16M "$f" "$M" ||
		{ fail "mount in a 64 MiB cgroup"; rmdir "$cg"; return; }
	out=$(/usr/bin/python3 "$TFS_SOURCE_ROOT/tests/e2e/random_reads.py" \
		"$M" 8 10 "$ref")
	check "random reads in the 64 MiB cgroup: every byte right ($out)" \
		grep -q " 0 mismatches, 0 errors" <<<"$out"
	check "the daemon lived through them" stat "$M/.tensorfs/manifest.json"
	fusermount3 -u "$M"
	"$TENSORFS" -o cache_size=16M "$f" "$M" || fail "mount for random reads"
	pid=$(daemon_pid "$M")
	/usr/bin/python3 "$TFS_SOURCE_ROOT/tests/e2e/random_reads.py" "$M" 8 10 \
		>/dev/null || fail "random reads outside the cgroup"
	hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$pid/status" 2>/dev/null)
	check "random reads: the daemon's peak ${hwm:-?} KiB < 96 MiB" \
		test "${hwm:-999999}" -lt 98304
	fusermount3 -u "$M"
	# a killed daemon may take a moment to leave the cgroup
	for _ in $(seq 50); do rmdir "$cg" 2>/dev/null && break; sleep 0.1; done
}
if [ "$(id -u)" != 0 ]; then
	echo "SKIP-CASE: memory cgroup: not root"
elif ldd "$TENSORFS" | grep -q libasan; then
	# ASan's shadow memory and quarantine alone pass 64 MiB
	echo "SKIP-CASE: memory cgroup: an ASan build"
else
	cgroup_case
fi

"$TENSORFS" -o readahead=banana "$WORK/big.zt" "$(mktemp -d "$WORK/mnt.XXXXXX")" 2>"$WORK/err"
eq "a bad readahead: exit 1" "$?" 1
check "naming it" grep -q "readahead=banana" "$WORK/err"
finish
