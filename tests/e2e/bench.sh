#!/usr/bin/env bash
# bench/run --smoke: the performance harness runs at a tiny size and prints
# every row (its figures are not judged here: timings are not tests).
. "$(dirname "$0")/lib.sh"
need_fuse
[ "$(id -u)" = 0 ] || { echo "SKIP: bench/run needs root"; exit 77; }
TENSORFS="$TENSORFS" BENCH_DIR="$WORK/bench" "$TFS_SOURCE_ROOT/bench/run" --smoke >"$WORK/out" 2>&1
eq "bench/run --smoke: exit 0" "$?" 0
cat "$WORK/out"
eq "twenty rows (fourteen, and the page cache of six layouts)" "$(grep -c '^| [^m-]' "$WORK/out")" 20
finish
