#!/usr/bin/env bash
# Hostile tensor names ('..', '/', '', control characters, 300-byte names,
# names that collide or shadow directories or .tensorfs): none escapes the
# mount, every tensor is reachable at the path the manifest gives, and each
# path holds that tensor's own bytes (tensor i stores the u32 i).
. "$(dirname "$0")/lib.sh"
need_fuse

python3 "$TFS_SOURCE_ROOT/tools/make_sample.py" --hostile "$WORK/h.zt"
M=$(mount_container "$WORK/h.zt") || { fail "mount"; finish; }
check "every hostile name maps to its own file inside the mount" \
	python3 - "$M" "$TFS_SOURCE_ROOT/tools" <<'PY'
import json, os, struct, sys
mnt, tools = sys.argv[1], sys.argv[2]
sys.path.insert(0, tools)
from make_sample import HOSTILE_NAMES
man = json.load(open(os.path.join(mnt, ".tensorfs/manifest.json")))
assert len(man["tensors"]) == len(HOSTILE_NAMES), len(man["tensors"])
seen = set()
for t in man["tensors"]:
    i = HOSTILE_NAMES.index(t["name"])
    p = os.path.join(mnt, t["path"])
    real = os.path.realpath(p)
    assert real.startswith(os.path.realpath(mnt) + "/"), p
    assert os.path.isfile(p) and not os.path.islink(p), p
    assert all(0 < len(c.encode()) <= 255 and c not in (".", "..")
               for c in t["path"].split("/")), t["path"]
    with open(p, "rb") as f:
        assert struct.unpack("<I", f.read()) == (i,), t["name"]
    assert os.getxattr(p, "user.tensorfs.name").decode() == t["name"]
    seen.add(real)
assert len(seen) == len(HOSTILE_NAMES)
files = [os.path.join(d, f) for d, _, fs in os.walk(mnt) for f in fs]
assert len([f for f in files if "/.tensorfs/" not in f]) == len(HOSTILE_NAMES)
PY
check "the reserved .tensorfs directory is still tensorfs's own" \
	test -f "$M/.tensorfs/manifest.json"
unmount "$M"
finish
