#!/usr/bin/env bash
# .tensorfs/errors.json of a live mount: empty at first, then every
# integrity failure the daemon meets (tensor, what, when) after the files
# the loader found broken (tensor, why), its size always
# the bytes it reads as; a directory mount keeps the containers it left out
# first.
. "$(dirname "$0")/lib.sh"
need_fuse

jq_py() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); $1" "$2"; }

F="$TFS_TESTDATA/ztensor/read_eio/digest_mismatch.zt"
M=$(mount_container "$F") || fail "mount"
eq "errors.json is [] at first" "$(jq_py 'print(d)' "$M/.tensorfs/errors.json")" "[]"
check "the good tensor reads" sh -c "cat '$M/good' >/dev/null"
eq "a good read adds nothing" "$(jq_py 'print(len(d))' "$M/.tensorfs/errors.json")" 0
cat "$M/bad" >/dev/null 2>&1
eq "the bad tensor: EIO" "$?" 1
cat "$M/bad" >/dev/null 2>&1
eq "one entry, however often it fails" "$(jq_py 'print(len(d))' "$M/.tensorfs/errors.json")" 1
eq "naming the tensor" "$(jq_py 'print(d[0]["tensor"])' "$M/.tensorfs/errors.json")" bad
check "saying what failed" jq_py 'assert "digest mismatch" in d[0]["error"]' "$M/.tensorfs/errors.json"
check "and when (UTC, ISO 8601)" jq_py '
import datetime
t = datetime.datetime.strptime(d[0]["time"], "%Y-%m-%dT%H:%M:%SZ")
assert abs((datetime.datetime.utcnow() - t).total_seconds()) < 600' "$M/.tensorfs/errors.json"
eq "st_size is the bytes it reads as" "$(stat -c %s "$M/.tensorfs/errors.json")" \
	"$(cat "$M/.tensorfs/errors.json" | wc -c)"
unmount "$M"

# a directory with a corrupt container: the loader's entry, then the reads'
D="$WORK/dir"
mkdir -p "$D"
cp "$F" "$D/bad.zt"
printf 'ZTEN1000 but nothing else' >"$D/broken.zt"
M=$(mount_container "$D") || fail "mount the directory"
eq "the left-out container is listed" "$(jq_py 'print(d[0]["path"])' "$M/.tensorfs/errors.json")" broken.zt
cat "$M/bad/bad" >/dev/null 2>&1
eq "then the failure" "$(jq_py 'print(len(d), d[1]["tensor"])' "$M/.tensorfs/errors.json")" "2 bad/bad"
unmount "$M"

# a file the loader already found broken (its bytes break a rule of the
# format): listed from the start, with the loader's reason
F="$TFS_TESTDATA/ztensor2/read_eio/bool-byte-2.zt"
M=$(mount_container "$F") || fail "mount $F"
eq "a broken file is listed at once" \
	"$(jq_py 'print(len(d), d[0]["tensor"])' "$M/.tensorfs/errors.json")" "1 b"
check "with the loader's reason" \
	jq_py 'assert d[0]["error"] == "LayoutData: bool byte 2 is 0x02, not 0 or 1", d' \
	"$M/.tensorfs/errors.json"
eq "its size is still the bytes it reads as" \
	"$(stat -c %s "$M/.tensorfs/errors.json")" \
	"$(cat "$M/.tensorfs/errors.json" | wc -c)"
unmount "$M"
finish
