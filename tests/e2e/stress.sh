#!/usr/bin/env bash
# 16 concurrent readers doing random offsets and sizes across all tensors of a
# multi-tensor container, every byte compared with the source.  Bounded:
# 16 x 400 reads.  Offsets are the generator's layout (64 + i x size), not
# tensorfs's own metadata.
. "$(dirname "$0")/lib.sh"
need_fuse

n=24
size=262144
python3 "$TFS_SOURCE_ROOT/tools/make_sample.py" --many $n $size "$WORK/many.zt"
M=$(mount_container "$WORK/many.zt") || { fail "mount"; finish; }
args=()
for i in $(seq 0 $((n - 1))); do
	args+=("$M/block/$i/data:$((64 + i * size)):$size")
done
check "16 concurrent random readers see the source bytes" \
	"$TFS_STRESS_READER" 16 400 "$WORK/many.zt" "${args[@]}"
pid=$(daemon_pid "$M")
check "the daemon is still alive" running "$pid"
unmount "$M"
finish
