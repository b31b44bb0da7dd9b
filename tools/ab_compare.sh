#!/usr/bin/env bash
# A/B comparison of two tensorfs binaries, for a change that must alter
# nothing a user sees: both run over every input and what they show is
# diffed.
#
#   tools/ab_compare.sh OLD_BIN NEW_BIN [OUTDIR]
#
# What runs, with each binary (inputs named relative to the repository):
#   tree/  every fixture as a directory input, mounted (FUSE): the whole
#          of tests/fixtures, then of ../shared/fixtures, each plain (the
#          default options, .tensorfs/export/ included) and with each view:
#          -o npy, -o as=float32, -o previews, -o export_shard=4K (an
#          export in shards with its index), the views with verify=off;
#          and each fuzz/corpus/<target>/ folder, plain.  Of each mount:
#          its messages (a warning per container left out) and status,
#          every node's path, type, size, mode, links and link target, the
#          sha256 of every file read through the mount, getfattr -d of
#          every node, the entries of .tensorfs/errors.json
#   dir/   every directory holding a fixture (a sharded model, a GGUF set,
#          several containers): info, ls --paths, verify
#   file/  every file of tests/fixtures and ../shared/fixtures, valid or
#          not: info (its message, its exit status); refused: a mount
#          attempt too (the mount command's message and status)
#   lib/   every fixture file and directory, every fuzz/corpus/*/* file
#          (the hidden corpus) and corpus folder, through the binary's own
#          libtensorfs.so.0 (tools/ab_lib_dump.py, one process for
#          hundreds of inputs): the open's status and message, each
#          tensor's info, bytes (sha256), float32 values, verify and
#          xattrs, the root's xattrs, metadata.json
# No output names a binary or a mount point: the binary runs as "tensorfs"
# from OUTDIR/bin/SIDE, mount points read MNT, errors.json's times TIME.
# Of a plain mount's errors.json only the failed tensors' paths are kept:
# which of a tensor's two faults (a bad digest, a bad zstd frame) its
# reads meet first is a race of the daemon's threads; the views (no
# digests) keep the messages.
#
# Outputs: OUTDIR/old and OUTDIR/new (default OUTDIR: a new
# /tmp/tensorfs-ab.XXXXXX), `diff -r` of them in OUTDIR/diff.txt.  Ends
# with "ab_compare: N outputs compared, D differ, S not compared, C
# crashed"; exits 0 when none differ, 1 when some do, 2 when some were not
# compared.  Two jobs at a time (xargs -P, TFS_AB_JOBS); a command is
# stopped after TFS_AB_TIMEOUT seconds (60; a whole-tree mount's listing
# after five times that), and no input is started after TFS_AB_BUDGET
# seconds (780), the rest counted as not compared.  A run took 4 minutes
# on 2 cores, 8 with 17 processes waiting for them.  Without FUSE (no
# /dev/fuse, fusermount3 or getfattr) the mounts are left out, and said so.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)

if [ "${1:-}" != --job ]; then
	if [ $# -lt 2 ] || [ $# -gt 3 ]; then
		echo "usage: $0 OLD_BIN NEW_BIN [OUTDIR]" >&2
		exit 2
	fi
	root=$(cd "$here/.." && pwd)
	OUT=${3:-$(mktemp -d /tmp/tensorfs-ab.XXXXXX)}
	OUT=$(mkdir -p "$OUT" && cd "$OUT" && pwd) || exit 2
	for m in "$OUT"/mnt/*; do # a stopped run's mounts
		mountpoint -q "$m" 2>/dev/null && fusermount3 -u -z "$m"
	done
	rm -rf "${OUT:?}/old" "${OUT:?}/new" "${OUT:?}/bin" "${OUT:?}/mnt" \
		"${OUT:?}/skipped" "${OUT:?}/diff.txt"
	mkdir -p "$OUT/old" "$OUT/new" "$OUT/mnt" "$OUT/skipped"
	for side in old new; do
		bin=$([ "$side" = old ] && echo "$1" || echo "$2")
		lib=$(ldd "$bin" 2>/dev/null | awk '/libtensorfs/ { print $3 }')
		if [ ! -x "$bin" ] || [ ! -f "$lib" ]; then
			echo "$0: $bin: not a tensorfs binary with its" \
				"libtensorfs.so.0" >&2
			exit 2
		fi
		mkdir -p "$OUT/bin/$side"
		ln -s "$(readlink -f "$bin")" "$OUT/bin/$side/tensorfs"
		ln -s "$(readlink -f "$lib")" "$OUT/bin/$side/libtensorfs.so.0"
	done
	export OUT TFS_AB_DEADLINE=$((EPOCHSECONDS + ${TFS_AB_BUDGET:-780}))
	export TFS_AB_MOUNTS=1
	if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null ||
		! command -v getfattr >/dev/null; then
		echo "$0: no /dev/fuse, fusermount3 or getfattr: no mounts" >&2
		TFS_AB_MOUNTS=0
	fi
	cd "$root" || exit 2
	start=$EPOCHSECONDS
	fixtures=(tests/fixtures)
	[ -d ../shared/fixtures ] && fixtures+=(../shared/fixtures)
	jobs=${TFS_AB_JOBS:-2}
	# the mounts and directories first, one or a few a job (the whole
	# trees take longest), then files a few hundred a job
	{
		if [ "$TFS_AB_MOUNTS" = 1 ]; then
			for f in "${fixtures[@]}"; do
				for view in plain npy as=float32 previews \
					export_shard=4K; do
					echo "tree:$view:$f"
				done
			done
			for d in fuzz/corpus/*/; do
				echo "tree:plain:${d%/}"
			done
		fi
		find "${fixtures[@]}" -mindepth 1 -type f \
			! -name '*.py' ! -name '*.md' ! -name '*.txt' \
			! -name LICENSE -printf 'dir:%h\n' | LC_ALL=C sort -u |
			grep -v -x -F -e dir:tests/fixtures \
				-e dir:../shared/fixtures
	} | tr '\n' '\0' | xargs -0 -P "$jobs" -n 2 "$0" --job
	{
		find "${fixtures[@]}" -type f -printf 'file:%p\n'
		find "${fixtures[@]}" -type f -printf 'lib:%p\n'
		find "${fixtures[@]}" -mindepth 1 -type d -printf 'lib:%p\n'
		find fuzz/corpus -mindepth 1 -printf 'lib:%p\n'
	} | LC_ALL=C sort | tr '\n' '\0' |
		xargs -0 -P "$jobs" -n 400 "$0" --job
	for m in "$OUT"/mnt/*; do # what a stopped job left mounted
		mountpoint -q "$m" 2>/dev/null && fusermount3 -u -z "$m"
	done
	diff -r "$OUT/old" "$OUT/new" >"$OUT/diff.txt"
	total=$(find "$OUT/old" -type f | wc -l)
	differ=$(diff -rq "$OUT/old" "$OUT/new" | wc -l)
	skipped=$(cat "$OUT"/skipped/* 2>/dev/null | wc -l)
	crashed=$(grep -rlx -e '== died: status [0-9]*' "$OUT/old" "$OUT/new" |
		wc -l)
	echo "ab_compare: $total outputs compared, $differ differ," \
		"$skipped not compared, $crashed crashed" \
		"($((EPOCHSECONDS - start)) s; $OUT)"
	[ "$TFS_AB_MOUNTS" = 1 ] || echo "ab_compare: no mounts (no FUSE)"
	[ "$differ" -eq 0 ] || {
		echo "ab_compare: diff -r in $OUT/diff.txt"
		exit 1
	}
	[ "$skipped" -eq 0 ] || {
		echo "ab_compare: out of time: not compared in $OUT/skipped/"
		exit 2
	}
	exit 0
fi

# --job ITEM...: each ITEM (KIND:PATH) with the old binary, then the new
shift
T=${TFS_AB_TIMEOUT:-60}
MNT=$OUT/mnt/job.$$
BIN=
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3 # the system's OpenSSL

tfs() { # tfs ARGS...: the side's binary, named tensorfs, time-bounded
	PATH=$BIN:$PATH timeout -k 5 "$T" tensorfs "$@"
}

run() { # run ARGS...: one section: the command, its output, its status
	echo "== $*"
	tfs "$@" 2>&1
	rc=$?
	echo "rc=$rc"
}

unmount() {
	fusermount3 -u "$MNT" 2>/dev/null || fusermount3 -u -z "$MNT"
}

# one mount of DIR with OPTS: its messages and status, then what it shows
mount_dump() { # mount_dump DIR OPT...
	local dir=$1 rc verify=first t=$((T * 5))
	shift
	case " $* " in *verify=off*) verify=off ;; esac
	mkdir -p "$MNT"
	echo "== mount $*"
	tfs "$@" "$dir" "$MNT" 2>&1
	rc=$?
	echo "rc=$rc"
	[ "$rc" -eq 0 ] || return 0
	(
		cd "$MNT" || exit
		echo "== nodes"
		find . -printf '%P %y %s %m %n %l\n' 2>&1 | LC_ALL=C sort
		echo "== sha256"
		find . -type f ! -path ./.tensorfs/errors.json -print0 |
			LC_ALL=C sort -z |
			timeout -k 5 "$t" xargs -0 -r sha256sum 2>&1
		echo "rc=$?"
		echo "== errors.json"
		if [ "$verify" = off ]; then
			sed -E 's/"time": "[^"]*"/"time": "TIME"/' \
				.tensorfs/errors.json
		else
			# which of a tensor's faults a read meets first is a
			# race (see the top): a failed tensor's path only
			awk '/^  [{]/ { e = ""; next }
				/^  [}]/ { print e; next }
				{ sub(/^ +/, ""); e = e $0 " " }' \
				.tensorfs/errors.json | LC_ALL=C sort |
				sed -E 's/^("tensor": .*), "error": .*/\1/'
		fi
		echo "== xattrs"
		find . -print0 | LC_ALL=C sort -z |
			timeout -k 5 "$t" xargs -0 getfattr -h -d -m - 2>&1
		echo "rc=$?"
	)
	unmount
}

# PATH... through the side's libtensorfs, each to OUTDIR/SIDE/lib/KEY (a
# directory's to KEY/@dir); an input that kills the process (or takes
# longer than T) gets "== died: status N", and the rest go on
lib_dump() { # lib_dump SIDE PATH...
	local side=$1 rc i k
	shift
	local todo=("$@")
	while [ ${#todo[@]} -gt 0 ]; do
		TFS_AB_TIMEOUT=$T "$PY" "$here/ab_lib_dump.py" \
			"$OUT/bin/$side/libtensorfs.so.0" "$OUT/$side/lib" \
			"${todo[@]}"
		rc=$?
		[ "$rc" -eq 0 ] && return
		for i in "${!todo[@]}"; do
			k=$OUT/$side/lib/${todo[i]#../}
			[ -d "${todo[i]}" ] && k=$k/@dir
			[ -e "$k" ] && continue
			mkdir -p "${k%/*}"
			echo "== died: status $rc" >"$k"
			todo=("${todo[@]:i+1}")
			continue 2
		done
		return # it died after the last
	done
}

declare -A real=([old]=$(readlink -f "$OUT/bin/old/tensorfs")
	[new]=$(readlink -f "$OUT/bin/new/tensorfs"))
scrub() { # scrub SIDE FILE...: nothing of where the mount or binary lie
	sed -i -e "s|$MNT|MNT|g" -e "s|${real[$1]}|BIN|g" "${@:2}"
}

libs=()
for item in "$@"; do
	kind=${item%%:*} p=${item#*:}
	if [ "$EPOCHSECONDS" -ge "$TFS_AB_DEADLINE" ]; then
		echo "$item" >>"$OUT/skipped/$$"
		continue
	fi
	if [ "$kind" = lib ]; then
		libs+=("$p")
		continue
	fi
	for side in old new; do
		BIN=$OUT/bin/$side
		case $kind in
		tree) # tree:VIEW:DIR
			view=${p%%:*} dir=${p#*:}
			out=$OUT/$side/tree/${dir#../}/@$view
			mkdir -p "${out%/*}"
			if [ "$view" = plain ]; then
				mount_dump "$dir" >"$out" 2>&1
			else
				mount_dump "$dir" -o "$view,verify=off" \
					>"$out" 2>&1
			fi
			scrub "$side" "$out"
			;;
		dir)
			out=$OUT/$side/dir/${p#../}/@cli
			mkdir -p "${out%/*}"
			{
				run info "$p"
				run ls --paths "$p"
				run verify "$p"
			} >"$out" 2>&1
			;;
		file)
			out=$OUT/$side/file/${p#../}
			[ -d "${out%/*}" ] || mkdir -p "${out%/*}"
			run info "$p" >"$out" 2>&1
			[ "$rc" -eq 0 ] && continue
			{
				mkdir -p "$MNT"
				echo "== mount"
				tfs "$p" "$MNT" 2>&1
				rc=$?
				echo "rc=$rc"
				[ "$rc" -ne 0 ] || unmount
			} >>"$out" 2>&1
			scrub "$side" "$out"
			;;
		esac
	done
done
if [ ${#libs[@]} -gt 0 ]; then
	lib_dump old "${libs[@]}"
	lib_dump new "${libs[@]}"
fi
