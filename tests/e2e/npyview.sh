#!/usr/bin/env bash
# -o npy through real mounts: numpy (Debian's, /usr/bin/python3) loads every
# tensor file of every valid fixture of every format (NumPy's .npy and .npz
# included) with mmap_mode='r' and gets the tensor's bytes with the
# manifest's dtype and shape, row- or column-major as flagged
# (tests/e2e/npyview.py).  The project's fixtures always; ../shared's
# when it is there (a skipped case without it).
. "$(dirname "$0")/lib.sh"
need_fuse
if ! /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
	echo "SKIP: Debian's python3-numpy is not installed"
	exit 77
fi

shared=()
shared_case "the fixtures of ../shared" README.md &&
	shared=("$TFS_FIXTURES"/*/*.* "$TFS_FIXTURES"/*/synthesized/*
		"$TFS_FIXTURES"/*/reference/*)
files=("$SAMPLE")
for f in "$TFS_TESTDATA"/*/valid/* "${shared[@]}"; do
	[ -f "$f" ] || continue
	case "$f" in *.json | *.md | *.py | *LICENSE) continue ;; esac
	# only what tensorfs mounts today
	"$TENSORFS" ls "$f" >/dev/null 2>&1 && files+=("$f")
done
check "some fixtures to check" test "${#files[@]}" -gt 20
# numpy's own containers are among them: the view of an .npy/.npz member
# must load as the array numpy saved (npy_compare.py in e2e-npy checks the
# values; here the headers)
n=0
for f in "${files[@]}"; do case "$f" in *.npy | *.npz) n=$((n + 1)) ;; esac; done
check "the .npy and .npz samples are viewed too ($n)" test "$n" -ge 40
for f in "${files[@]}"; do
	A=$(mount_container "$f" -o npy) || { fail "mount -o npy $f"; continue; }
	B=$(mount_container "$f") || { fail "mount $f"; unmount "$A"; continue; }
	check "numpy loads every tensor of ${f#"$TFS_FIXTURES"/}" \
		/usr/bin/python3 "$(dirname "$0")/npyview.py" "$A" "$B"
	unmount "$A"
	unmount "$B"
done
finish
