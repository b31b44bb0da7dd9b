#!/usr/bin/env bash
# tensorfs stats and diff, -o as=float32 against numpy, ls, -o logfile=
# (tests/e2e/valuecheck.py computes the expectations from the safetensors
# bytes by the spec, independently).
. "$(dirname "$0")/lib.sh"
if ! /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
	echo "SKIP: Debian's python3-numpy is not installed"
	exit 77
fi
PY="/usr/bin/python3 $(dirname "$0")/valuecheck.py"

$PY make "$WORK" || fail "make the containers"
A=$WORK/a.safetensors
B=$WORK/b.safetensors

"$TENSORFS" stats --json "$A" >"$WORK/stats.json"
eq "stats --json exits 0" "$?" 0
check "stats match numpy" $PY stats "$A" "$WORK/stats.json"
out=$("$TENSORFS" stats "$A" layer.w ints half)
eq "stats NAME... gives those tensors" "$(grep -c -E "^(layer/w|ints|half) " <<<"$out")" 3
check "stats text shows the NaN count" grep -qE '^half +float16 +1000 .* 2 +0 +1 ' <<<"$out" ||
	echo "$out" >&2
"$TENSORFS" stats "$A" nosuch >/dev/null 2>&1
eq "stats of an unknown name exits 6" "$?" 6
# column-major does not change stats: primitiv params (order=F), the one
# primitiv wrote (../shared) and generate.py's
column_major_stats() { # FILE
	local P=$1
	"$TENSORFS" stats --json "$P" >"$WORK/p.json"
	check "column-major stats of ${P##*/}: the stored values' stats" /usr/bin/python3 -c '
import json, sys, numpy as np
doc = json.load(open(sys.argv[1]))
t = doc[0]
import subprocess
raw = subprocess.run([sys.argv[2], "cat", sys.argv[3], t["path"]],
                     capture_output=True, check=True).stdout
v = np.frombuffer(raw, "<f4").astype("f8")
assert t["count"] == v.size, t
assert abs(t["mean"] - v.mean()) < 1e-9 and abs(t["std"] - v.std()) < 1e-9
assert t["min"] == v.min() and t["max"] == v.max()
' "$WORK/p.json" "$TENSORFS" "$P"
}
shared_case "stats of primitiv's param_2x2.data" primitiv/param_2x2.data &&
	column_major_stats "$TFS_FIXTURES/primitiv/param_2x2.data"
column_major_stats "$TFS_TESTDATA/primitiv/valid/param_stats_any_order.param"

"$TENSORFS" diff --json "$A" "$B" >"$WORK/diff.json"
eq "diff of different files exits 1" "$?" 1
check "diff matches numpy" $PY diff "$A" "$B" "$WORK/diff.json"
"$TENSORFS" diff "$A" "$A" >"$WORK/same.txt"
eq "diff of a file with itself exits 0" "$?" 0
check "diff summary counts them all the same" \
	grep -q '^7 same, 0 differ' "$WORK/same.txt"
"$TENSORFS" diff "$A" "$WORK/missing.safetensors" >/dev/null 2>&1
eq "diff with a missing input exits 2" "$?" 2
# a directory against a file of another format: the paths differ
mkdir -p "$WORK/dir"
cp "$A" "$WORK/dir/"
"$TENSORFS" diff "$WORK/dir" "$WORK/dir" >/dev/null
eq "diff of a directory with itself exits 0" "$?" 0
out=$("$TENSORFS" diff "$A" "$B")
check "diff text line for the changed tensor" \
	grep -qE '^differ +layer/w: max abs ' <<<"$out"
check "diff text line for the other dtype" \
	grep -qE '^dtype +ints: int32 -> int64; max abs 0,' <<<"$out"
"$TENSORFS" diff --help | grep -q 'Exit status as diff(1)'
eq "diff --help" "$?" 0
# --brief/-q: only what differs, then the summary
out=$("$TENSORFS" diff --brief "$A" "$B")
eq "diff --brief: 5 tensors that differ and the summary" "$(wc -l <<<"$out")" 6
check "diff --brief: no same line" bash -c '! grep -q "^same" <<<"$1"' _ "$out"
eq "diff -q: the same" "$("$TENSORFS" diff "$A" "$B" -q)" "$out"
# --atol/--rtol: within the tolerance is the same (exit 0); numpy.isclose
# says which
$PY make_tol "$WORK" || fail "make c.safetensors, z.safetensors"
C=$WORK/c.safetensors
"$TENSORFS" diff "$A" "$C" >/dev/null
eq "diff A C (layer.w changed): exit 1" "$?" 1
for tol in "0.6 0" "0.01 0" "0 0.5" "0 100" "0.001 0.01"; do
	set -- $tol
	want=$($PY isclose "$A" "$C" layer.w "$1" "$2")
	out=$("$TENSORFS" diff --atol "$1" --rtol="$2" "$A" "$C")
	rc=$?
	got=$(awk '$2 == "layer/w:" { print $1 }' <<<"$out")
	eq "diff --atol $1 --rtol $2: layer/w is $want (numpy.isclose)" \
		"$got" "$want"
	eq "diff --atol $1 --rtol $2: exit" "$rc" "$([ "$want" = close ] && echo 0 || echo 1)"
done
check "diff --atol: the summary counts them" \
	grep -q '^6 same, 1 within the tolerance, 0 differ' \
	<<<"$("$TENSORFS" diff --atol 0.6 "$A" "$C")"
"$TENSORFS" diff --atol -1 "$A" "$C" >/dev/null 2>&1
eq "diff --atol -1: refused, exit 2" "$?" 2
# A all zeros: said, not "rel L2 inf"
out=$("$TENSORFS" diff "$WORK/z.safetensors" "$A")
check "diff: 'A is all zeros'" grep -qE '^differ +shape: .*A is all zeros' <<<"$out"
check "diff: no 'inf'" bash -c '! grep -q "rel L2 inf" <<<"$1"' _ "$out"
# --as float32: refused (values are compared across dtypes already)
"$TENSORFS" diff --as float32 "$A" "$B" >/dev/null 2>"$WORK/e"
eq "diff --as float32: refused, exit 2" "$?" 2
check "diff --as: says why" grep -q 'across dtypes' "$WORK/e"
# diff --help names every option diff takes
for opt in --flat --npy --json --brief -q --atol --rtol --help; do
	check "diff --help lists $opt" grep -qF -- "$opt" \
		<<<"$("$TENSORFS" diff --help)"
done

# ls: stored names in columns aligned by display width
$PY make_utf8 "$WORK" || fail "make utf8.safetensors"
"$TENSORFS" ls "$WORK/utf8.safetensors" >"$WORK/ls.txt"
eq "ls lists the four tensors" "$(wc -l <"$WORK/ls.txt")" 4
check "ls aligns UTF-8 names by display width" $PY ls_aligned "$WORK/ls.txt"

# -o as=float32 through real mounts, and --as float32 in the CLI
need_fuse
M=$(mount_container "$A" -o as=float32) || fail "mount -o as=float32"
if [ -n "${M:-}" ]; then
	check "as=float32: sizes, values, xattrs, odd offsets" \
		$PY asf32 "$A" "$M"
	eq "as=float32: a float32 tensor is left alone" \
		"$(getfattr --only-values -n user.tensorfs.stored_dtype "$M/big" 2>/dev/null)" ""
	eq "as=float32: stored_dtype of the bfloat16 tensor" \
		"$(getfattr --only-values -n user.tensorfs.stored_dtype "$M/layer/w")" bfloat16
	check "as=float32: cat --as float32 gives the mount's bytes" \
		cmp <("$TENSORFS" cat --as float32 "$A" layer.w) "$M/layer/w"
	unmount "$M"
fi
M=$(mount_container "$A" -o as=float32,npy) || fail "mount -o as=float32,npy"
if [ -n "${M:-}" ]; then
	check "as=float32,npy: np.load gives float32 values" \
		$PY asf32npy "$A" "$M"
	unmount "$M"
fi
# integers and bool converted only with "all"
M=$(mount_container "$A" -o as=float32,all) || fail "mount -o as=float32,all"
if [ -n "${M:-}" ]; then
	check "as=float32,all: every numeric tensor as float32" \
		$PY asf32 "$A" "$M" all
	eq "as=float32,all: stored_dtype of the int32 tensor" \
		"$(getfattr --only-values -n user.tensorfs.stored_dtype "$M/ints")" int32
	check "as=float32,all: cat --as float32,all gives the mount's bytes" \
		cmp <("$TENSORFS" cat --as float32,all "$A" ints) "$M/ints"
	unmount "$M"
fi
M=$(mount_container "$A" -o npy,as=float32,all) || fail "mount -o npy,as=float32,all"
if [ -n "${M:-}" ]; then
	check "npy,as=float32,all: np.load gives float32 values" \
		$PY asf32npy "$A" "$M" all
	unmount "$M"
fi
check "cat --as float32: an int32 tensor as stored" \
	cmp <("$TENSORFS" cat --as float32 "$A" ints) <("$TENSORFS" cat "$A" ints)
"$TENSORFS" -o all "$A" "$WORK" >/dev/null 2>&1
check "-o all without as=: refused" test $? -ne 0
"$TENSORFS" -o as=float16 "$A" "$WORK" >/dev/null 2>&1
eq "as=float16 is refused (usage)" "$?" 1
# -o previews: valid PNGs of the documented size and pixels
$PY make_pictures "$WORK" || fail "make pic.safetensors"
M=$(mount_container "$WORK/pic.safetensors" -o previews) || fail "mount -o previews"
if [ -n "${M:-}" ]; then
	check "previews: PNGs, sizes and pixels as documented" \
		$PY previews "$WORK/pic.safetensors" "$M"
	check "previews: cat --previews gives the same picture" \
		cmp <("$TENSORFS" cat --previews "$WORK/pic.safetensors" wave.png) "$M/wave.png"
	unmount "$M"
fi
# a column-major tensor: primitiv's model (../shared) and generate.py's
fortran_preview() { # FILE PATH
	M=$(mount_container "$1" -o previews) || { fail "mount ${1##*/} -o previews"; return; }
	check "previews: a column-major tensor of ${1##*/} is shown in logical order" \
		$PY preview_fortran "$M" "$2"
	unmount "$M"
}
shared_case "previews of primitiv's model.model" primitiv/model.model &&
	fortran_preview "$TFS_FIXTURES/primitiv/model.model" w/value
fortran_preview "$TFS_TESTDATA/primitiv/valid/model_nested_keys.model" enc/layer0/w/value
M=$(mount_container "$WORK/a.safetensors" -o previews,as=float32,npy) ||
	fail "mount -o previews,as=float32,npy"
if [ -n "${M:-}" ]; then
	check "previews with as=float32,npy: PATH.npy.png" \
		test -s "$M/layer/w.npy.png"
	check "previews: file(1) says PNG" \
		grep -q 'PNG image data, 64 x 101' <<<"$(file "$M/layer/w.npy.png")"
	unmount "$M"
fi
M=$(mount_container "$WORK/collide.safetensors" -o previews,flat) || fail "mount collide"
if [ -n "${M:-}" ]; then
	eq "previews: a tensor named x.png keeps its name" "$(stat -c %s "$M/x.png")" 8
	check "previews: and has its own picture" test -s "$M/x.png.png"
	unmount "$M"
fi

# -o logfile=: a detached daemon's integrity failures land there, timed
M=$(mount_container "$TFS_TESTDATA/ztensor/read_eio/digest_mismatch.zt" \
	-o "logfile=$WORK/daemon.log") || fail "mount -o logfile="
if [ -n "${M:-}" ]; then
	cat "$M/bad" >/dev/null 2>&1
	eq "logfile: the bad tensor's read fails" "$?" 1
	unmount "$M"
	check "logfile: one timed line names the tensor" grep -qE \
		"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z \[[0-9]+\] .*tensor 'bad'" \
		"$WORK/daemon.log"
fi
"$TENSORFS" -o logfile=/nonexistent/dir/log "$A" "$WORK" >/dev/null 2>&1
check "logfile: an unwritable path fails the mount" test $? -ne 0
check "logfile: and leaves no mount" sh -c "! mountpoint -q '$WORK'"
"$TENSORFS" stats --as float32 --json "$A" >"$WORK/stats32.json"
check "stats --as float32: the stored values' stats" \
	$PY stats "$A" "$WORK/stats32.json"

exit $((FAILS > 0))
