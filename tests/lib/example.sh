#!/usr/bin/env bash
# The public C API as a user gets it: `meson install --destdir` into a
# temporary root, then examples/list_tensors.c and docs/library.md's
# example compiled with `pkg-config --cflags --libs tensorfs` against the
# installed header, pkg-config file and libtensorfs.so.0 only, run on
# fixtures and compared with `tensorfs ls`; the library's exports (the
# public and the private version node).  TFS_BUILD_ROOT: the build dir.
. "$(dirname "$0")/../e2e/lib.sh"
: "${TFS_BUILD_ROOT:?}"

ROOT=$WORK/root
install_root "$ROOT"
pc=$(find "$ROOT" -name tensorfs.pc | head -n 1)
hdr=$(find "$ROOT" -path '*/include/tensorfs/tensorfs.h' | head -n 1)
check "tensorfs.pc installed" test -n "$pc"
check "tensorfs.h installed under include/tensorfs/" test -n "$hdr"
check "only the public header installed" \
	test "$(find "$ROOT" -name '*.h' | wc -l)" -eq 1
lib=$(find "$ROOT" -name 'libtensorfs.so.0' | head -n 1)
check "libtensorfs.so.0 installed" test -n "$lib"
[ -n "$pc" ] && [ -n "$lib" ] || exit 1
check "SONAME libtensorfs.so.0" \
	sh -c "objdump -p '$lib' | grep -q 'SONAME *libtensorfs.so.0\$'"
# The exports (src/lib/libtensorfs.map.in): the public API of tensorfs.h
# under the version node TENSORFS_0; the internal functions the tensorfs
# binaries call under TENSORFS_PRIVATE_<version>, each one imported by the
# binary; nothing else.  readelf names a versioned symbol NAME@@NODE
# (defined) or NAME@NODE (imported); a node itself is an ABS symbol NODE.
dynsyms() { # FILE DEF|UND: "NAME NODE" of every defined or imported symbol
	readelf --dyn-syms -W "$1" |
		awk -v want="$2" '$1 ~ /^[0-9]+:$/ && $5 != "LOCAL" &&
			!($7 == "ABS" && $8 ~ /^TENSORFS_[^@]*$/) &&
			(want == "UND") == ($7 == "UND") { print $8 }' |
		sed 's/@@*/ /' | awk '$1 != $2 { print $1, ($2 == "" ? "-" : $2) }' |
		sort
}
version=$("$TENSORFS" --version | awk 'NR == 1 { print $2 }')
private=TENSORFS_PRIVATE_$version
defined=$(dynsyms "$lib" DEF)
public=$(echo "$defined" | awk '$2 ~ /^TENSORFS_0(\.[0-9]+)?$/ { print $1 }' | sort)
want=$(grep -v '^#' "$hdr" | grep -o 'TFS_API [^(]*(' | sed 's/.*[ *]\(tfs_[a-z0-9_]*\)(/\1/' |
	sort)
check "tensorfs.h declares an API" test -n "$want"
eq "TENSORFS_0 and its later nodes (0.2) export exactly tensorfs.h's TFS_API" \
	"$public" "$want"
eq "nothing exported outside TENSORFS_0 and $private" \
	"$(echo "$defined" | awk -v p="$private" '$2 !~ /^TENSORFS_0(\.[0-9]+)?$/ && $2 != p')" ""
eq "tfs_errmsg came in TENSORFS_0.2 (TENSORFS_0 never grows)" \
	"$(echo "$defined" | awk '$1 == "tfs_errmsg" { print $2 }')" TENSORFS_0.2
exported_private=$(echo "$defined" | awk -v p="$private" '$2 == p { print $1 }')
check "tensorfs links libtensorfs.so.0" \
	sh -c "readelf -d '$TENSORFS' | grep -q 'NEEDED.*\[libtensorfs\.so\.0\]'"
imported_private=$(dynsyms "$TENSORFS" UND | awk -v p="$private" '$2 == p { print $1 }')
check "tensorfs imports internal functions from $private" \
	test -n "$imported_private"
# a build without FUSE needs fewer of them
if readelf -d "$TENSORFS" | grep -q 'NEEDED.*libfuse3'; then
	eq "$private exports exactly what tensorfs imports" \
		"$exported_private" "$imported_private"
else
	eq "$private exports what tensorfs imports (no FUSE: a part)" \
		"$(comm -13 <(echo "$exported_private") <(echo "$imported_private"))" ""
fi
eq "tensorfs imports nothing else unversioned from libtensorfs" \
	"$(comm -12 <(dynsyms "$TENSORFS" UND | awk '$2 == "-" { print $1 }') \
		<(echo "$defined" | awk '{ print $1 }'))" ""

export PKG_CONFIG_PATH=${pc%/*} PKG_CONFIG_SYSROOT_DIR=$ROOT
# meson test points LD_LIBRARY_PATH at the build dir: the programs below
# must find the installed library by their rpath alone
unset LD_LIBRARY_PATH
flags=$(pkg-config --cflags --libs tensorfs)
libdir=$(dirname "$lib")
compile() { # OUT SOURCE
	# shellcheck disable=SC2086 # flags is a list
	cc -std=c11 -Wall -Wextra -Werror -o "$1" "$2" $flags \
		-Wl,-rpath,"$libdir"
}
if ! compile "$WORK/list_tensors" "$TFS_SOURCE_ROOT/examples/list_tensors.c"; then
	fail "examples/list_tensors.c builds with pkg-config --cflags --libs"
	exit 1
fi
ok "examples/list_tensors.c builds against the installed library"
check "it uses the installed libtensorfs.so.0" \
	sh -c "ldd '$WORK/list_tensors' | grep -q '$libdir/libtensorfs.so.0'"

# the same columns as `tensorfs ls` (which aligns them with spaces)
norm() { tr -s ' \t' ' '; }
for f in "$SAMPLE" \
	"$TFS_TESTDATA/pytorch/valid/nested_zip.pt" \
	"$TFS_TESTDATA/safetensors/valid/every_dtype.safetensors" \
	"$TFS_TESTDATA/gguf/valid"; do
	[ -e "$f" ] || { fail "fixture $f missing"; continue; }
	got=$("$WORK/list_tensors" "$f" | norm)
	want=$("$TENSORFS" ls "$f" 2>/dev/null | norm)
	check "list_tensors ${f#"$TFS_SOURCE_ROOT"/} has tensors" test -n "$got"
	eq "list_tensors ${f#"$TFS_SOURCE_ROOT"/} = tensorfs ls" "$got" "$want"
done
"$WORK/list_tensors" "$WORK/nonexistent" 2>"$WORK/err"
eq "a missing file: exit 2" "$?" 2
check "a missing file: the error names it" grep -q 'No such file' "$WORK/err"

# the Python module as installed, with the installed library
init=$(find "$ROOT" -path '*-packages/tensorfs/__init__.py' | head -n 1)
check "the Python module installed" test -n "$init"
if [ -n "$init" ] && /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
	pydir=$(dirname "$(dirname "$init")")
	check "into a directory Debian's python3 searches" \
		/usr/bin/python3 -c "import sys; sys.exit('${pydir#"$ROOT"}' not in sys.path)"
	libdir_py=$(PYTHONPATH=$pydir /usr/bin/python3 -c \
		'import tensorfs._paths as p; print(p.LIBDIR)')
	check "its _paths.LIBDIR is where the library went" \
		test -e "$ROOT$libdir_py/libtensorfs.so.0"
	out=$(PYTHONPATH=$pydir TENSORFS_LIBRARY=$lib /usr/bin/python3 -c "
import tensorfs
m = tensorfs.open('$SAMPLE')
print(m.format, len(m), m['embed.weight'].shape, tensorfs.version())
with tensorfs.safe_open('$SAMPLE') as f:
    print(len(f.keys()), f.get_slice('embed.weight')[1:3].shape)")
	eq "the installed module reads the sample" "$out" \
		"$(printf 'ztensor 9 (8, 4) 0.1.0\n9 (2, 4)')"
fi

# docs/library.md's example, as written there
doc=$TFS_SOURCE_ROOT/docs/library.md
if [ -f "$doc" ]; then
	awk '/^```c$/ { on = 1; next } /^```$/ { on = 0 } on' "$doc" \
		>"$WORK/doc_example.c"
	if compile "$WORK/doc_example" "$WORK/doc_example.c"; then
		ok "docs/library.md's example builds"
		out=$("$WORK/doc_example" "$SAMPLE" embed.weight)
		# embed.weight of data/sample.zt: round(sin(i) / 2, 6) as float32
		# (tools/make_sample.py), its first four values
		want=$(/usr/bin/python3 -c "
import math, numpy as np
v = [float(np.float32(round(math.sin(i) / 2, 6))) for i in range(4)]
print('embed/weight float32 128 bytes:', ' '.join('%.6g' % x for x in v))")
		eq "docs/library.md's example output" "$out" "$want"
	else
		fail "docs/library.md's example builds"
	fi
fi
exit $((FAILS > 0))
