#!/usr/bin/env bash
# The Debian packages as a user gets them (.ci/run's last stage): build them
# (scripts/package), install the four with apt-get, use the installed files
# only (a clean environment: no build tree on PATH, PYTHONPATH or
# LD_LIBRARY_PATH), then purge them and check that nothing of them remains.
# Each check is one pass or fail; ends with "N passed, N failed, N skipped"
# and exits non-zero on any failure.  Needs root, /dev/fuse and Debian 12.
# A machine where a tensorfs package is already installed (a developer's) is
# left as found: the stage says so and skips.
# Usage: tests/packages/run.sh   (OUT: where the .debs go, default build-deb)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
SRC=$PWD
OUT=${OUT:-build-deb}
PKGS=(tensorfs libtensorfs0 libtensorfs-dev python3-tensorfs)
PASS=0
FAILS=0
SKIPS=0
INSTALLED=0
start=$(date +%s)

ok() {
	echo "ok: $*"
	PASS=$((PASS + 1))
}
fail() {
	echo "FAIL: $*" >&2
	FAILS=$((FAILS + 1))
}
# check DESCRIPTION COMMAND...: the command must succeed
check() {
	local what=$1
	shift
	if "$@"; then ok "$what"; else fail "$what"; fi
}
# eq DESCRIPTION GOT WANT
eq() {
	if [ "$2" = "$3" ]; then ok "$1"; else fail "$1: got '$2', want '$3'"; fi
}
summary() {
	echo "packages: $(($(date +%s) - start)) s"
	echo "$PASS passed, $FAILS failed, $SKIPS skipped"
	[ "$FAILS" -eq 0 ]
	exit
}
# the state of a package as dpkg knows it ("ii", "rc"...), empty when it
# is not there at all (unknown, or known and not installed: "un", "pn")
state() {
	dpkg-query -W -f='${db:Status-Abbrev}' "$1" 2>/dev/null | tr -d ' ' |
		grep -Ev '^(un|pn)$'
}
# run the installed files with nothing of a build tree around them
clean() {
	env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
		TMPDIR="$WORK" "$@"
}

if [ "$(id -u)" -ne 0 ] || [ ! -e /dev/fuse ] ||
	! command -v apt-get >/dev/null; then
	echo "SKIP: the package stage needs root, /dev/fuse and apt-get"
	SKIPS=1
	summary
fi
found=()
for p in "${PKGS[@]}"; do
	s=$(state "$p")
	[ -n "$s" ] && found+=("$p ($s)")
done
if ((${#found[@]})); then
	echo "SKIP: already on this machine, left as found: ${found[*]}"
	SKIPS=1
	summary
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/tfs-packages.XXXXXX")
MNT=$WORK/mnt
mkdir -p "$MNT"
# shellcheck disable=SC2317 # run by the trap
cleanup() {
	mountpoint -q "$MNT" 2>/dev/null && fusermount3 -u "$MNT" 2>/dev/null
	# never leave our packages behind, whatever failed
	if [ "$INSTALLED" = 1 ]; then
		DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq "${PKGS[@]}" \
			>/dev/null 2>&1
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT

t0=$(date +%s)
if ! OUT=$OUT scripts/package >"$WORK/package.log" 2>&1; then
	cat "$WORK/package.log" >&2
	fail "scripts/package builds and smoke-tests the packages"
	summary
fi
ok "scripts/package builds the packages ($(($(date +%s) - t0)) s)"
debs=()
for p in "${PKGS[@]}"; do
	for f in "$OUT/${p}_"*.deb; do
		[ -e "$f" ] && debs+=("./$f")
	done
done
eq "four packages built" "${#debs[@]}" 4

# apt-get resolves their dependencies; its lists only when it needs them
install() {
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends "${debs[@]}" >"$WORK/apt.log" 2>&1
}
INSTALLED=1
if ! install && ! { apt-get update -qq >/dev/null 2>&1 && install; }; then
	cat "$WORK/apt.log" >&2
	fail "apt-get install ./build-deb/*.deb"
	summary
fi
ok "apt-get install ./$OUT/*.deb"
for p in "${PKGS[@]}"; do
	eq "$p installed" "$(state "$p")" ii
done

# the CLI and the daemon, from /usr/bin, with the installed library
installed_lib=$(readlink -f "$(dpkg -L libtensorfs0 | grep '/libtensorfs\.so\.0$')")
eq "/usr/bin/tensorfs uses the installed libtensorfs.so.0" \
	"$(readlink -f "$(clean ldd /usr/bin/tensorfs |
		awk '$1 == "libtensorfs.so.0" { print $3 }')")" "$installed_lib"
eq "/usr/bin/tensorfs --version" "$(clean tensorfs --version 2>&1 | head -n 1)" \
	"tensorfs $(dpkg-query -W -f='${Version}' tensorfs)"
# data/sample.zt's embed.weight as tools/make_sample.py writes it:
# round(sin(i) / 2, 6) as little-endian float32, 8 x 4
want=$(clean python3 -c '
import hashlib, math, struct
b = struct.pack("<32f", *(round(math.sin(i) / 2, 6) for i in range(32)))
print(hashlib.sha256(b).hexdigest())')
if clean tensorfs "$SRC/data/sample.zt" "$MNT" >"$WORK/mount.log" 2>&1; then
	ok "/usr/bin/tensorfs mounts data/sample.zt"
	eq "the mounted embed/weight is the sample's bytes" \
		"$(sha256sum <"$MNT/embed/weight" | cut -d' ' -f1)" "$want"
	eq "its dtype xattr" \
		"$(getfattr --absolute-names --only-values -n user.tensorfs.dtype \
		"$MNT/embed/weight" 2>&1)" \
		float32
	check "fusermount3 -u unmounts it" fusermount3 -u "$MNT"
else
	cat "$WORK/mount.log" >&2
	fail "/usr/bin/tensorfs mounts data/sample.zt"
fi
eq "tensorfs cat gives the same bytes" \
	"$(clean tensorfs cat "$SRC/data/sample.zt" embed.weight | sha256sum | cut -d' ' -f1)" \
	"$want"

# mount(8): util-linux runs /sbin/mount.fuse.TYPE when it exists (else
# mount.fuse); libmount's debug output names the helper it ran
check "/usr/sbin/mount.fuse.tensorfs leads to mount.fuse3" \
	test "$(readlink -f /usr/sbin/mount.fuse.tensorfs)" = \
	"$(readlink -f /usr/sbin/mount.fuse3)"
clean LIBMOUNT_DEBUG=cxt mount -t fuse.tensorfs "$SRC/data/sample.zt" "$MNT" \
	-o ro,npy >"$WORK/mount8.log" 2>&1
eq "mount -t fuse.tensorfs data/sample.zt MNT -o ro,npy" "$?" 0
check "mount(8) ran the installed mount.fuse.tensorfs" \
	grep -q 'executing helper /sbin/mount\.fuse\.tensorfs' "$WORK/mount8.log"
check "the mount is fuse.tensorfs, read-only" \
	grep -qE " $MNT fuse\.tensorfs ro[, ]" /proc/self/mounts
check "-o npy took effect" test -f "$MNT/embed/weight.npy"
check "umount(8) unmounts it" umount "$MNT"
printf '%s %s fuse.tensorfs ro,noauto 0 0\n' "$SRC/data/sample.zt" "$MNT" \
	>"$WORK/fstab"
clean mount -T "$WORK/fstab" "$MNT" >"$WORK/fstab.log" 2>&1
eq "an fstab line 'SRC MNT fuse.tensorfs ro,noauto 0 0' mounts" "$?" 0
eq "the fstab mount's embed/weight" \
	"$(sha256sum <"$MNT/embed/weight" 2>&1 | cut -d' ' -f1)" "$want"
check "umount(8) unmounts the fstab mount" umount "$MNT"

# the Python module as installed, with the installed library; then the
# Python tests against it (imported first, so the tests get this module)
out=$(cd "$WORK" && clean python3 -c '
import tensorfs
m = tensorfs.open("'"$SRC"'/data/sample.zt")
lib = [l.split()[-1] for l in open("/proc/self/maps") if "libtensorfs.so" in l]
print(tensorfs.__file__, lib[0] if lib else None, m["embed.weight"].shape)')
eq "/usr/bin/python3 imports the installed tensorfs" "$out" \
	"/usr/lib/python3/dist-packages/tensorfs/__init__.py $installed_lib (8, 4)"
if clean python3 -c 'import pytest' 2>/dev/null; then
	(cd "$WORK" && clean TFS_SOURCE_ROOT="$SRC" TENSORFS=/usr/bin/tensorfs \
		PYTHONDONTWRITEBYTECODE=1 python3 -c '
import sys
import tensorfs
import pytest
if not tensorfs.__file__.startswith("/usr/lib/python3/dist-packages/"):
    sys.exit("not the installed module: " + tensorfs.__file__)
sys.exit(pytest.main(["-q", "-p", "no:cacheprovider", "-rs",
                      sys.argv[1] + "/tests/python"]))' "$SRC") \
		>"$WORK/pytest.log" 2>&1
	status=$?
	tail -n 3 "$WORK/pytest.log"
	if [ "$status" -eq 0 ]; then
		ok "tests/python pass against the installed module and library"
	else
		cat "$WORK/pytest.log" >&2
		fail "tests/python against the installed module and library"
	fi
else
	echo "skip: python3-pytest is not installed: tests/python not run"
	SKIPS=$((SKIPS + 1))
fi

# C programs built with pkg-config against the installed files alone
cflags=$(clean pkg-config --cflags --libs tensorfs | sed 's/ *$//')
eq "pkg-config --cflags --libs tensorfs" "$cflags" "-ltensorfs"
compile() { # OUT SOURCE
	# shellcheck disable=SC2086 # cflags is a list
	clean cc -std=c11 -Wall -Wextra -Werror -o "$1" "$2" $cflags
}
norm() { tr -s ' \t' ' '; }
if compile "$WORK/list_tensors" examples/list_tensors.c; then
	ok "examples/list_tensors.c builds against the installed library"
	eq "list_tensors data/sample.zt = /usr/bin/tensorfs ls" \
		"$(clean "$WORK/list_tensors" "$SRC/data/sample.zt" | norm)" \
		"$(clean tensorfs ls "$SRC/data/sample.zt" | norm)"
else
	fail "examples/list_tensors.c builds against the installed library"
fi
awk '/^```c$/ { on = 1; next } /^```$/ { on = 0 } on' docs/library.md \
	>"$WORK/doc_example.c"
if compile "$WORK/doc_example" "$WORK/doc_example.c"; then
	ok "docs/library.md's example builds against the installed library"
	want_doc=$(clean python3 -c '
import math, struct
v = struct.unpack("<4f", struct.pack("<4f", *(round(math.sin(i) / 2, 6) for i in range(4))))
print("embed/weight float32 128 bytes:", " ".join("%.6g" % x for x in v))')
	eq "docs/library.md's example output" \
		"$(clean "$WORK/doc_example" "$SRC/data/sample.zt" embed.weight)" \
		"$want_doc"
else
	fail "docs/library.md's example builds against the installed library"
fi

# the desktop's files (docs/desktop.md): shared-mime-info's trigger ran
# update-mime-database on our types
check "the thumbnailer is installed" \
	test -f /usr/share/thumbnailers/tensorfs.thumbnailer
if [ -f /usr/share/mime/types ]; then
	check "the MIME database has application/x-gguf (the trigger ran)" \
		grep -qx application/x-gguf /usr/share/mime/types
else
	echo "SKIP-CASE: MIME database: shared-mime-info not installed"
fi

eq "man -w tensorfs finds the installed page" "$(clean man -w tensorfs 2>&1)" \
	/usr/share/man/man1/tensorfs.1.gz

# purge, and nothing of them may remain
if DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq "${PKGS[@]}" \
	>"$WORK/purge.log" 2>&1; then
	INSTALLED=0
	ok "apt-get purge the four packages"
else
	cat "$WORK/purge.log" >&2
	fail "apt-get purge the four packages"
fi
for p in "${PKGS[@]}"; do
	eq "$p: nothing left in dpkg's database" "$(state "$p")" ""
done
for f in /usr/bin/tensorfs /usr/sbin/mount.fuse.tensorfs \
	/usr/include/tensorfs /usr/lib/python3/dist-packages/tensorfs \
	/usr/share/man/man1/tensorfs.1.gz \
	/usr/share/mime/packages/tensorfs.xml; do
	check "$f is gone" test ! -e "$f" -a ! -L "$f"
done
[ ! -f /usr/share/mime/types ] ||
	check "the MIME database forgot application/x-gguf" \
		test -z "$(grep -x application/x-gguf /usr/share/mime/types)"
check "no libtensorfs.so left in /usr/lib" \
	test -z "$(find /usr/lib -name 'libtensorfs.so*' 2>/dev/null)"
summary
