#!/usr/bin/env bash
# The public C API as a user gets it: `meson install --destdir` into a
# temporary root, then examples/list_tensors.c and docs/library.md's
# example compiled with `pkg-config --cflags --libs tensorfs` against the
# installed header, pkg-config file and libtensorfs.so.0 only, run on
# fixtures and compared with `tensorfs ls`.  TFS_BUILD_ROOT: the build dir.
. "$(dirname "$0")/../e2e/lib.sh"
: "${TFS_BUILD_ROOT:?}"

ROOT=$WORK/root
if ! meson install -C "$TFS_BUILD_ROOT" --no-rebuild --destdir "$ROOT" \
	>"$WORK/install.log" 2>&1; then
	cat "$WORK/install.log" >&2
	fail "meson install --destdir"
	exit 1
fi
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
# only the public API is exported
exported=$(nm -D --defined-only "$lib" | awk '{ print $3 }' | sort)
eq "exported symbols are the tfs_ API of tensorfs.h" \
	"$(echo "$exported" | grep -vc '^tfs_')" 0
want=$(grep -v '^#' "$hdr" | grep -o 'TFS_API [^(]*(' | sed 's/.*[ *]\(tfs_[a-z0-9_]*\)(/\1/' |
	sort)
eq "every TFS_API function exported" "$exported" "$want"

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
print(m.format, len(m), m['embed.weight'].shape, tensorfs.version())")
	eq "the installed module reads the sample" "$out" "ztensor 9 (8, 4) 0.1.0"
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
