#!/usr/bin/env bash
# scripts/run (the README's first command) mounts the sample and shows the
# tree and one tensor's xattrs; the mount it leaves is real.
. "$(dirname "$0")/lib.sh"
need_fuse

mnt="$WORK/run-mnt"
MOUNTS+=("$mnt")
out=$("$TFS_SOURCE_ROOT/scripts/run" "$SAMPLE" "$mnt" 2>&1)
check "scripts/run leaves the sample mounted" mountpoint -q "$mnt"
check "it lists the tree" grep -q "encoder/layers/0:" <<<"$out"
check "it shows one tensor's xattrs" \
	grep -q 'user.tensorfs.dtype="float32"' <<<"$out"
check "it shows the metadata" grep -q '"generator"' <<<"$out"
check "it says how to unmount" grep -q "fusermount3 -u $mnt" <<<"$out"
unmount "$mnt"
finish
