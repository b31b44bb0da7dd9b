#!/usr/bin/env bash
# The FUSE-free subcommands: ls, cat, info, xattr, help, version, exit codes.
. "$(dirname "$0")/lib.sh"

out=$("$TENSORFS" ls "$SAMPLE")
eq "ls lists the sample's 9 tensors" "$(echo "$out" | wc -l)" 9
eq "ls shows stored name, dtype, shape, bytes" \
	"$(echo "$out" | grep '^encoder.layers.0.weight ' | tr -s ' ')" \
	"encoder.layers.0.weight float32 [4,4] 64"
eq "ls --paths adds the path in the mount" \
	"$("$TENSORFS" ls --paths "$SAMPLE" | grep '^encoder.layers.0.weight ' | tr -s ' ')" \
	"encoder.layers.0.weight float32 [4,4] 64 encoder/layers/0/weight"
eq "ls shows a scalar" "$(echo "$out" | grep '^step ' | tr -s ' ')" \
	"step int64 [] 8"

# cat by stored name and by mount path equals the generator's bytes
python3 "$TFS_SOURCE_ROOT/tools/make_sample.py" --dump embed.weight >"$WORK/embed.want"
"$TENSORFS" cat "$SAMPLE" embed.weight >"$WORK/embed.byname"
"$TENSORFS" cat "$SAMPLE" embed/weight >"$WORK/embed.bypath"
check "cat by stored name" cmp -s "$WORK/embed.byname" "$WORK/embed.want"
check "cat by path" cmp -s "$WORK/embed.bypath" "$WORK/embed.want"
"$TENSORFS" cat "$SAMPLE" .tensorfs/manifest.json >"$WORK/manifest.json"
check "cat .tensorfs/manifest.json is JSON naming every tensor" \
	python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); assert len(m["tensors"]) == 9; assert {t["name"] for t in m["tensors"]} >= {"step","vocab.mask"}' "$WORK/manifest.json"

"$TENSORFS" cat "$SAMPLE" no.such.tensor >/dev/null 2>"$WORK/err"
eq "cat of an unknown tensor exits 6" "$?" 6
"$TENSORFS" cat "$SAMPLE" encoder >/dev/null 2>&1
eq "cat of a directory exits 6" "$?" 6

out=$("$TENSORFS" info "$SAMPLE")
check "info names the format" grep -q '^format: *ztensor' <<<"$out"
check "info counts tensors" grep -q '^tensors: *9 tensors, 328 bytes' <<<"$out"
check "info: one tensor is \"1 tensor\"" grep -q '^tensors: *1 tensor, 32 bytes' \
	<<<"$("$TENSORFS" info "$TFS_TESTDATA/tsr/valid/fp32_3d_2x2x2.tsr")"
# a directory: the containers that mount, not their companion files (a
# bundle's .data shard) nor files that are no container
mkdir -p "$WORK/counted"
cp "$TFS_TESTDATA"/tf_checkpoint/valid/tiny/* "$TFS_TESTDATA/tflite/valid/types.tflite" "$WORK/counted/"
echo "a readme" >"$WORK/counted/README.md"
check "info DIR: 2 containers (tiny.index, types.tflite)" \
	grep -q '^format: *directory (2 containers)$' <<<"$("$TENSORFS" info "$WORK/counted" 2>/dev/null)"
# verify DIR: a container left out as malformed fails it (exit 2, counted
# in the summary); a file that is no container (README.md) does not
"$TENSORFS" verify "$WORK/counted" >"$WORK/v.out" 2>/dev/null
eq "verify DIR of good containers: exit 0" "$?" 0
cp "$TFS_TESTDATA/tflite/reject/string_offsets.tflite" "$WORK/counted/bad.tflite"
"$TENSORFS" verify "$WORK/counted" >"$WORK/v.out" 2>/dev/null
eq "verify DIR with a corrupt container: exit 2" "$?" 2
check "verify DIR: the corrupt one is a FAILED line" \
	grep -q '^FAILED   bad.tflite: left out: tflite: .*string offset' "$WORK/v.out"
check "verify DIR: counted in the summary" \
	grep -q '; 1 container left out as malformed or unreadable$' "$WORK/v.out"
rm "$WORK/counted/bad.tflite"
# ls --json and info --json: the same facts as the text forms, and the
# tensors' bytes as cat gives them
F="$TFS_TESTDATA/tflite/valid/types.tflite"
"$TENSORFS" ls --json "$F" >"$WORK/ls.json"
eq "ls --json: the rows of ls" \
	"$(python3 -c 'import json, sys
for t in json.load(open(sys.argv[1])):
    print(t["name"], t["dtype"], "[" + ",".join(map(str, t["shape"])) + "]", t["bytes"])' "$WORK/ls.json")" \
	"$("$TENSORFS" ls "$F" | tr -s ' ')"
eq "ls --json: bytes are what cat serves" \
	"$(python3 -c 'import json, sys; t = json.load(open(sys.argv[1]))[3]; print(t["path"], t["bytes"])' "$WORK/ls.json")" \
	"$(python3 -c 'import json, sys; t = json.load(open(sys.argv[1]))[3]; print(t["path"])' "$WORK/ls.json") $("$TENSORFS" cat "$F" "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[3]["path"])' "$WORK/ls.json")" | wc -c)"
"$TENSORFS" info --json "$F" >"$WORK/info.json"
eq "info --json: format, tensors, parameters, version" \
	"$(python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(d["format"], d["tensors"], d["parameters"], d["metadata"]["version"], d["dtypes"][0]["dtype"])' "$WORK/info.json")" \
	"tflite 15 36 3 $("$TENSORFS" info "$F" | sed -n 's/^dtypes: *\([a-z0-9]*\) .*/\1/p')"
eq "info --json of a directory: its containers, what was left out" \
	"$(cp "$TFS_TESTDATA/tflite/reject/string_offsets.tflite" "$WORK/counted/bad.tflite"
	"$TENSORFS" info --json "$WORK/counted" 2>/dev/null | python3 -c 'import json, sys
d = json.load(sys.stdin)
print(d["format"], d["containers"], [e["path"] for e in d["left_out"]])'; rm "$WORK/counted/bad.tflite")" \
	"directory 2 ['bad.tflite']"
# bash completion (data/completion/tensorfs.bash): subcommands, options,
# -o mount options, the tensors of the given file
# complete WORD...: what completing the last word offers, one a line
complete_words() {
	bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _tensorfs
		printf "%s\n" "${COMPREPLY[@]}"' _ "$TFS_SOURCE_ROOT/data/completion/tensorfs.bash" "$@" 2>/dev/null
}
check "completion: subcommands" grep -qx stats <<<"$(complete_words "$TENSORFS" st)"
eq "completion: ls options" "$(complete_words "$TENSORFS" ls --j)" "--json"
eq "completion: -o mount options" "$(complete_words "$TENSORFS" -o cache_s)" "cache_size="
eq "completion: -o after a comma" "$(complete_words "$TENSORFS" -o npy,verif)" "npy,verify="
eq "completion: the tensors of the file for cat" \
	"$(complete_words "$TENSORFS" cat "$TFS_TESTDATA/tflite/valid/types.tflite" t/int | sort)" \
	"$(printf 't/int16\nt/int32\nt/int4_packed\nt/int64')"
eq "completion: xattr too" \
	"$(complete_words "$TENSORFS" xattr "$TFS_TESTDATA/tflite/valid/types.tflite" t/sc)" "t/scalar"
# tied weights (tests/fixtures/pytorch/generate.py: 'é' is 'a.0', 24
# float32 of one storage): their bytes and parameters counted once
# (all: 69 parameters, 277 bytes; without the copy: 45, 181)
out=$("$TENSORFS" info "$TFS_TESTDATA/pytorch/valid/nested_zip.pt")
check "info: shared bytes counted once" \
	grep -q '^tensors: *8 tensors, 181 bytes of tensor data' <<<"$out"
check "info: shared parameters counted once" \
	grep -q '^parameters: 45$' <<<"$out"
check "info: says how many tensors share" \
	grep -q '^shared: *2 tensors share 1 stored range' <<<"$out"
check "info: float32 bytes once, files all" \
	grep -q 'float32 *136 bytes in 4 files' <<<"$out"
check "info: nothing shared, no line" \
	bash -c '! "$TENSORFS" info "$1" | grep -q "^shared:"' _ "$SAMPLE"

out=$("$TENSORFS" xattr "$SAMPLE" head/weight)
check "xattr shows dtype" grep -qx 'user.tensorfs.dtype="float16"' <<<"$out"
check "xattr shows shape" grep -qx 'user.tensorfs.shape="\[2,4\]"' <<<"$out"
check "xattr of the root shows the format" \
	grep -qx 'user.tensorfs.format="ztensor"' <<<"$("$TENSORFS" xattr "$SAMPLE")"

eq "--flat keeps names whole" "$("$TENSORFS" ls --flat "$SAMPLE" | cut -d' ' -f1 | sort | head -n 1)" "embed.weight"

# options anywhere, the GNU way, in every subcommand; "--" ends them
eq "ls INPUT --flat" "$("$TENSORFS" ls "$SAMPLE" --flat | cut -d' ' -f1 | sort | head -n 1)" "embed.weight"
eq "ls INPUT --paths: a fifth column" \
	"$("$TENSORFS" ls "$SAMPLE" --paths | awk 'NR == 1 { print NF }')" 5
out=$("$TENSORFS" stats "$SAMPLE" --json 2>&1)
eq "stats INPUT --json: exit 0" "$?" 0
check "stats INPUT --json: JSON" python3 -c 'import json,sys; json.loads(sys.argv[1])' "$out"
out=$("$TENSORFS" stats "$SAMPLE" head/weight --json 2>&1)
check "stats INPUT NAME --json: one tensor" \
	python3 -c 'import json,sys; assert len(json.loads(sys.argv[1])) == 1' "$out"
cmp <("$TENSORFS" cat "$SAMPLE" head/weight --npy) \
	<("$TENSORFS" cat --npy "$SAMPLE" head/weight) &&
	ok "cat INPUT NAME --npy" || fail "cat INPUT NAME --npy"
check "xattr INPUT PATH --flat" grep -q 'user.tensorfs.dtype' \
	<<<"$("$TENSORFS" xattr "$SAMPLE" head.weight --flat)"
check "info INPUT --help: the help" grep -q '^usage: ' \
	<<<"$("$TENSORFS" info "$SAMPLE" --help)"
"$TENSORFS" verify "$SAMPLE" --flat >/dev/null
eq "verify INPUT --flat: exit 0" "$?" 0
"$TENSORFS" diff "$SAMPLE" "$SAMPLE" --json >"$WORK/d.json"
eq "diff A B --json: exit 0" "$?" 0
check "diff A B --json: JSON" python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$WORK/d.json"
"$TENSORFS" stats "$SAMPLE" -- --json >/dev/null 2>"$WORK/e"
eq "stats INPUT -- --json: a NAME, exit 6" "$?" 6
check "-- ends the options" grep -q -- '--json: no such tensor or path' "$WORK/e"
"$TENSORFS" ls "$SAMPLE" --bogus >/dev/null 2>"$WORK/e"
eq "an unknown option after the input: exit 1" "$?" 1
check "named" grep -q 'unknown option --bogus' "$WORK/e"

"$TENSORFS" >/dev/null 2>&1
eq "no arguments: usage, exit 1" "$?" 1
"$TENSORFS" --help >"$WORK/help" 2>&1
eq "--help exits 0" "$?" 0
check "--help documents the subcommands" grep -q 'tensorfs ls' "$WORK/help"
check "--version prints tensorfs and libfuse versions" \
	grep -q 'libfuse' <<<"$("$TENSORFS" --version 2>&1)"
# the manual names every option and subcommand the help texts name
MAN=$TFS_SOURCE_ROOT/docs/tensorfs.1
man_txt=$(MANWIDTH=1000 LC_ALL=C man -l "$MAN" 2>/dev/null)
check "man -l docs/tensorfs.1 renders" grep -q '^SYNOPSIS' <<<"$man_txt"
tokens=$(sed '/^FUSE options:/,$d' "$WORK/help" |
	grep -oE -- '(--[a-z]+|-o [a-z_]+=?)' | sed 's/^-o //' | sort -u)
for c in ls cat info xattr verify stats diff; do
	check "man: subcommand $c" grep -qE "^ +tensorfs $c " <<<"$man_txt"
	"$TENSORFS" "$c" --help >"$WORK/help.$c"
	eq "$c --help exits 0" "$?" 0
	tokens+=$'\n'$(grep -oE -- '--[a-z]+' "$WORK/help.$c" | sort -u)
done
missing=
for t in $(sort -u <<<"$tokens"); do
	grep -qF -- "$t" <<<"$man_txt" || missing+=" $t"
done
eq "the manual names every option of the help texts" "$missing" ""
check "the help texts' options were found" test "$(wc -w <<<"$tokens")" -gt 20

"$TENSORFS" ls /nonexistent/x.zt 2>"$WORK/err"
eq "a missing file exits 4" "$?" 4
check "a missing file is named in one line" \
	test "$(wc -l <"$WORK/err")" -eq 1 -a -n "$(grep /nonexistent/x.zt "$WORK/err")"
if shared_case "TSR4 written by renaissance" tsr4/test_fp16.tsr; then
	"$TENSORFS" ls "$TFS_FIXTURES/tsr4/test_fp16.tsr" 2>/dev/null
	eq "TSR4 is refused as unsupported (3)" "$?" 3
fi
# a TSR4 file as tests/fixtures/tsr/generate.py writes it from the spec
"$TENSORFS" ls "$TFS_TESTDATA/tsr/reject/tsr4_fp16.tsr" 2>/dev/null
eq "TSR4 (generated) is refused as unsupported (3)" "$?" 3
head -c 100 /dev/zero >"$WORK/zeros"
"$TENSORFS" ls "$WORK/zeros" 2>/dev/null
eq "an unknown format exits 3" "$?" 3
finish
