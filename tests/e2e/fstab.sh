#!/usr/bin/env bash
# /etc/fstab and mount(8) through mount.fuse3: the helper runs
# "tensorfs CONTAINER MOUNTPOINT -o OPTIONS" (options last, some of them
# mount(8)'s own, such as ro, dev, suid, which go on to libfuse).  Needs
# root for mount(8); a fstab of our own (mount -T) so the system's is left
# alone.
. "$(dirname "$0")/lib.sh"
need_fuse
if [ "$(id -u)" -ne 0 ] || ! command -v mount.fuse3 >/dev/null; then
	echo "SKIP: needs root and mount.fuse3"
	exit 77
fi
C=$TFS_SOURCE_ROOT/data/sample.zt
M=$(mktemp -d "$WORK/mnt.XXXXXX")
MOUNTS+=("$M")

# "mount -t fuse.tensorfs": mount.fuse3 finds "tensorfs" in its PATH
mkdir -p "$WORK/bin"
ln -s "$TENSORFS" "$WORK/bin/tensorfs"
PATH="$WORK/bin:$PATH" mount.fuse3 "$C" "$M" -t fuse.tensorfs \
	-o ro,npy,nofail,dev,suid
eq "mount.fuse3 -t fuse.tensorfs -o ro,npy,... exits 0" "$?" 0
check "the mount is fuse.tensorfs, ro" \
	grep -qE " $M fuse\.tensorfs ro[, ]" /proc/self/mounts
check "npy took effect" test -f "$M/embed/weight.npy"
unmount "$M"

# an fstab line: "tensorfs#CONTAINER" names the helper by absolute path
printf '%s#%s %s fuse ro,npy,noauto,nofail 0 0\n' "$TENSORFS" "$C" "$M" \
	>"$WORK/fstab"
mount -T "$WORK/fstab" "$M"
eq "mount -T FSTAB MOUNTPOINT exits 0" "$?" 0
check "fstab: mounted read-only" \
	grep -qE " $M fuse\.tensorfs ro[, ]" /proc/self/mounts
check "fstab: the tensors are there" test -f "$M/encoder/layers/0/weight.npy"
umount "$M"
eq "umount(8) unmounts it" "$?" 0

# with tensorfs installed where mount(8) looks, the plain form works too
if command -v tensorfs >/dev/null && [ "$(command -v tensorfs)" != "$TENSORFS" ] &&
	cmp -s "$(command -v tensorfs)" "$TENSORFS"; then
	mount -t fuse.tensorfs "$C" "$M" -o ro,npy
	eq "mount -t fuse.tensorfs CONTAINER MNT -o ro,npy" "$?" 0
	umount "$M"
else
	echo "note: this build's tensorfs is not installed; 'mount -t fuse.tensorfs' itself not run"
fi
finish
