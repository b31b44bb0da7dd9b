#!/usr/bin/env bash
# Tensors whose bytes live in files beside the container (companion files,
# issue 22): a zTensor 2 root with parts in a shard file mounts with every
# part readable and byte-exact; a missing shard leaves its parts listed but
# unreadable (EIO, verify "skipped"), a shard of the wrong size fails them
# (verify exits 2), and a shard that is a symlink out of the directory is
# never opened.
. "$(dirname "$0")/lib.sh"
need_fuse

gen() {
	rm -rf "$WORK/m" && mkdir -p "$WORK/m" &&
		python3 "$(dirname "$0")/companions.py" "$WORK/m" >"$WORK/want"
}
gen || { fail "generate"; finish; }
M=$(mount_container "$WORK/m/model.zt") || { fail "mount"; finish; }
while read -r name sum; do
	eq "$name: its bytes, wherever they lie" \
		"$(sha256sum <"$M/$name" | cut -d' ' -f1)" "$sum"
done <"$WORK/want"
eq "a shard part's offset is in its shard" \
	"$(getfattr --only-values -n user.tensorfs.offset "$M/big")" 8192
unmount "$M"
"$TENSORFS" verify "$WORK/m/model.zt" >"$WORK/out" 2>&1
eq "verify: every part checked" "$?" 0
check "verify: the shard part's digest matched" \
	grep -q "^ok *big (sha256 matches)" "$WORK/out"

# the shard gone: listed, unreadable, skipped by verify
rm "$WORK/m/model-00001-of-00002.zt"
M=$(mount_container "$WORK/m/model.zt") || { fail "mount without shard"; finish; }
check "without its shard, a part is still listed" test -f "$M/far"
if cat "$M/far" >/dev/null 2>&1; then
	fail "without its shard, a part's read fails"
else
	ok "without its shard, a part's read fails"
fi
check "the local part is still read" cmp -s <(printf '\005\006') "$M/here"
unmount "$M"
"$TENSORFS" verify "$WORK/m/model.zt" >"$WORK/out" 2>&1
eq "verify without the shard: nothing failed" "$?" 0
check "verify says why it skipped" grep -q "^skipped *far: .*shard" "$WORK/out"

# a shard of another size: its parts fail
gen
truncate -s -1 "$WORK/m/model-00001-of-00002.zt"
"$TENSORFS" verify "$WORK/m/model.zt" >"$WORK/out" 2>&1
eq "verify with a wrong-size shard exits 2" "$?" 2
check "verify names the shard's size" grep -q "^FAILED *far: ShardIdentity" "$WORK/out"

# a shard that is a symlink out of the directory is refused, not followed
gen
mkdir -p "$WORK/elsewhere"
mv "$WORK/m/model-00001-of-00002.zt" "$WORK/elsewhere/"
ln -s "$WORK/elsewhere/model-00001-of-00002.zt" "$WORK/m/model-00001-of-00002.zt"
"$TENSORFS" verify "$WORK/m/model.zt" >"$WORK/out" 2>&1
check "a symlink out of the directory is not followed" \
	grep -q "^skipped *far: .*outside the model's directory" "$WORK/out"
finish
