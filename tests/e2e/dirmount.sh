#!/usr/bin/env bash
# Directory and several-file mounts: every container as a directory, symlinks
# followed (cycles once), corrupt containers left out with a warning and
# .tensorfs/errors.json, bytes equal to the single-file mounts'.
. "$(dirname "$0")/lib.sh"
need_fuse

D="$WORK/models"
mkdir -p "$D/sub/deeper" "$D/blobs" "$D/loop"
cp "$SAMPLE" "$D/sample.zt"
cp "$TFS_TESTDATA/tsr/valid/int8_4d.tsr" "$D/sub/deeper/t.tsr"
# the Hugging Face cache: a name that links to a blob without extension
cp "$TFS_TESTDATA/tsr/valid/fp32_3d_2x2x2.tsr" "$D/blobs/0123abcd"
ln -s ../blobs/0123abcd "$D/sub/linked.tsr"
ln -s .. "$D/loop/up" # a cycle: entered once
# two containers wanting the same directory keep their full names
cp "$TFS_TESTDATA/tsr/valid/int8_4d.tsr" "$D/twin.tsr"
cp "$SAMPLE" "$D/twin.zt"
echo '{"not": "a container"}' >"$D/config.json"
head -c 100 "$SAMPLE" >"$D/broken.zt"
sum_before=$(sha "$D/sample.zt")

M=$(mktemp -d "$WORK/mnt.XXXXXX")
"$TENSORFS" "$D" "$M" 2>"$WORK/err"
eq "a directory mounts" "$?" 0
MOUNTS+=("$M")
check "the corrupt container is named on stderr" grep -q "broken.zt: left out: ztensor: " "$WORK/err"
eq "one warning line" "$(wc -l <"$WORK/err")" 1
eq "the top level" "$(ls "$M" | tr '\n' ' ')" "blobs sample sub twin.tsr twin.zt "
check "the blob (no extension) keeps its name" test -f "$M/blobs/0123abcd/tensor"
check "a symlinked file is followed" test -f "$M/sub/linked/tensor"
check "a deeper container" test -f "$M/sub/deeper/t/tensor"
check "the cycle is not walked twice" test ! -e "$M/loop"
check "a non-container file is not shown" test ! -e "$M/config"
eq "errors.json names the left-out file" \
	"$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[0]["path"])' "$M/.tensorfs/errors.json")" \
	broken.zt
eq "root format" "$(getfattr --only-values -n user.tensorfs.format "$M" 2>/dev/null)" directory
eq "container xattr on its directory" \
	"$(getfattr --only-values -n user.tensorfs.container "$M/sub/deeper/t" 2>/dev/null)" sub/deeper/t.tsr
eq "manifest names each tensor's container" \
	"$(python3 -c 'import json,sys; m=json.load(open(sys.argv[1])); print(sorted({t["container"] for t in m["tensors"]}))' "$M/.tensorfs/manifest.json")" \
	"['blobs/0123abcd', 'sample.zt', 'sub/deeper/t.tsr', 'sub/linked.tsr', 'twin.tsr', 'twin.zt']"
eq "metadata by container" \
	"$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["containers"]["sample.zt"]["generation"])' "$M/.tensorfs/metadata.json")" \
	v1.0

# every tensor's bytes equal those of the container mounted alone
S=$(mount_container "$SAMPLE") || { fail "mount the sample alone"; finish; }
for f in $(cd "$S" && find . -path ./.tensorfs -prune -o -type f -print); do
	check "bytes of sample/$f" cmp -s "$S/$f" "$M/sample/$f"
	check "bytes of twin.zt/$f" cmp -s "$S/$f" "$M/twin.zt/$f"
done
unmount "$S"
check "the tsr bytes" cmp -s "$M/sub/deeper/t/tensor" <("$TENSORFS" cat "$D/sub/deeper/t.tsr" tensor)
unmount "$M"
eq "the containers are untouched" "$(sha "$D/sample.zt")" "$sum_before"

# the CLI reads directories the same way
check "ls of a directory" "$TENSORFS" ls "$D"
eq "cat by path through a directory" "$("$TENSORFS" cat "$D" sub/deeper/t/tensor 2>/dev/null | sha256sum | cut -d' ' -f1)" \
	"$("$TENSORFS" cat "$D/sub/deeper/t.tsr" tensor | sha256sum | cut -d' ' -f1)"

# a directory whose only container is corrupt is refused (exit 3)
mkdir -p "$WORK/bad" && cp "$D/broken.zt" "$WORK/bad/"
"$TENSORFS" "$WORK/bad" "$(mktemp -d "$WORK/mnt.XXXXXX")" 2>"$WORK/err"
eq "only corrupt containers: exit 3" "$?" 3
check "naming the file" grep -q "broken.zt" "$WORK/err"
finish
