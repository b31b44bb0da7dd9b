#!/usr/bin/env bash
# scripts/check-layers against small trees made here: a clean one passes
# (with what the rules allow: BASE headers in codec and parse, a generic
# parser from core, formats/common/ from a reader, snprintf and fprintf to
# a FILE of one's own outside fuse/ and cli/, a one-way use between two
# cli files), and each rule, broken by one added file, fails with its line;
# the ratchet file accepts a listed violation and refuses a listed line
# that no longer occurs.
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
check=$here/scripts/check-layers
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0

fail() {
	echo "FAIL: $*"
	fails=$((fails + 1))
}

put() { # put FILE TEXT: a file of the tree under $tmp/t
	mkdir -p "$(dirname "$tmp/t/$1")"
	printf '%s\n' "$2" >"$tmp/t/$1"
}

clean_tree() {
	rm -rf "$tmp/t"
	put src/core/checked.h '/* inline arithmetic */'
	put src/core/diag.h '#include "core/abi.h"'
	put src/core/abi.h '#define TFS_PRIVATE'
	put src/core/tree.h '#include "core/abi.h"'
	put src/codec/codec.h '#include "core/abi.h"'
	put src/core/tree.c '#include "core/tree.h"
#include "parse/json.h"
#include <stdio.h>
int tfs_tree_x(char *b, FILE *f)
{
	snprintf(b, 8, "%s", "a.json"); /* "model.safetensors" */
	return fprintf(f, "config.json");
}'
	put src/core/diag.c '#include "core/diag.h"'
	put src/core/strmap.h '#include "core/checked.h"'
	put src/codec/zstd.c '#include "codec/codec.h"
#include "core/checked.h"
#include "core/diag.h"
#include "codec/gather.h"'
	put src/codec/gather.h '#include "core/checked.h"'
	put src/parse/json.h '#include "core/diag.h"'
	put src/parse/json.c '#include "parse/json.h"'
	put src/parse/hfindex.h '#include "parse/json.h"'
	put src/formats/common/spans.h '#include "core/checked.h"'
	put src/formats/hdf5.h '#include "common/spans.h"'
	put src/formats/hdf5.c '#include "formats/hdf5.h"
#include "formats/common/spans.h"
#include "core/tree.h"'
	put src/remote/resolve.c '#include "core/tree.h"
#include "parse/json.h"
static const char *x = "https://";'
	put src/cli/main.c '#include <stdio.h>
const char *tfs_progname = "tensorfs";
static void usage(void) { puts("usage"); }
int main(void) { usage(); return tfs_cmd_ls(); }'
	put src/cli/commands.c '#include <stdio.h>
static void usage(void) { fprintf(stderr, "usage"); }
int
tfs_cmd_ls(void)
{
	usage();
	return 0;
}'
	put src/fuse/fs.c 'void f(void) { fuse_log(0, "x"); printf("y"); }'
}

expect() { # expect RC WHAT [ARGS...]: run the checker, RC and output
	local rc=$1 what=$2
	shift 2
	"$check" --root "$tmp/t" "$@" >"$tmp/out" 2>&1
	local got=$?
	[ "$got" -eq "$rc" ] || fail "$what: exit $got, not $rc: $(cat "$tmp/out")"
}

clean_tree
expect 0 "the clean tree"
"$check" --root "$tmp/t" --list >"$tmp/list" 2>&1
[ ! -s "$tmp/list" ] || fail "the clean tree has violations: $(cat "$tmp/list")"

# one broken rule a case: the file to add or replace, its text, the line
while IFS='|' read -r file text line; do
	clean_tree
	put "$file" "$(printf '%b' "$text")"
	expect 1 "$line"
	grep -qxF "NEW $line" "$tmp/out" || fail "not found: NEW $line: $(cat "$tmp/out")"
done <<'CASES'
src/codec/deflate.c|#include "core/tree.h"|leaf: src/codec/deflate.c includes src/core/tree.h (core)
src/codec/codec.h|#include "core/tree.h"|leaf: src/codec/codec.h includes src/core/tree.h (core)
src/parse/zip.c|#include "core/strmap.h"\n#include "parse/json.h"|leaf: src/parse/zip.c includes src/core/strmap.h (core)
src/core/diag.c|#include "core/diag.h"\n#include "core/tree.h"|leaf: src/core/diag.c includes src/core/tree.h (core)
src/parse/zip.c|#include "codec/gather.h"|leaf: src/parse/zip.c includes src/codec/gather.h (codec)
src/core/collection.c|#include "parse/hfindex.h"|no-format: src/core/collection.c includes src/parse/hfindex.h (a format's parser)
src/remote/resolve.c|#include "formats/hdf5.h"|no-format: src/remote/resolve.c includes src/formats/hdf5.h (a reader)
src/remote/resolve.c|const char *s = ".safetensors.index.json";|no-format: src/remote/resolve.c names ".safetensors.index.json"
src/core/tree.h|#define X "%s.gguf"|no-format: src/core/tree.h names "%s.gguf"
src/formats/keras.c|#include "formats/hdf5.h"|formats: src/formats/keras.c includes src/formats/hdf5.h (another reader)
src/formats/common/spans.c|#include "formats/hdf5.h"|formats: src/formats/common/spans.c includes src/formats/hdf5.h (another reader)
src/core/tree.c|void f(void) { printf("x"); }|print: src/core/tree.c calls printf
src/parse/json.c|void f(void) { fprintf(stderr, "x"); }|print: src/parse/json.c calls fprintf(stderr)
src/formats/hdf5.c|void f(const char *s) { fputs(s, stdout); }|print: src/formats/hdf5.c calls fputs(stdout)
src/lib/api.c|void f(void) { dprintf(2, "x"); }|print: src/lib/api.c calls dprintf(2)
src/remote/remote.c|void f(void) { fuse_log(3, "x"); }|print: src/remote/remote.c calls fuse_log
include/tensorfs/builder.h|#define X 1|public: include/tensorfs/builder.h is not an installed header (internal headers live beside their code in src/)
src/cli/commands.c|int\ntfs_cmd_ls(void)\n{\n\treturn *tfs_progname;\n}|cycle: src/cli/commands.c <-> src/cli/main.c
CASES

# the ratchet: a listed violation passes, a listed line gone fails
clean_tree
put src/core/tree.c 'void f(void) { perror("x"); }'
echo "print: src/core/tree.c calls perror" >"$tmp/known"
expect 0 "a known violation" --known "$tmp/known"
echo "print: src/core/image.c calls perror" >>"$tmp/known"
expect 1 "a fixed violation still listed" --known "$tmp/known"
grep -qF "FIXED (delete this line from $tmp/known): print: src/core/image.c calls perror" \
	"$tmp/out" || fail "the line to delete is not named: $(cat "$tmp/out")"

[ "$fails" -eq 0 ] && echo "check-layers self test: ok"
exit $((fails > 0))
