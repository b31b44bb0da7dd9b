# Shared helpers of the end-to-end tests (sourced).  Each test script runs
# under `meson test` with TENSORFS, TFS_FIXTURES, TFS_TESTDATA and
# TFS_SOURCE_ROOT set, and exits 0 (pass), 1 (fail) or 77 (skip).
set -u

: "${TENSORFS:?}" "${TFS_FIXTURES:?}" "${TFS_SOURCE_ROOT:?}"
SAMPLE="$TFS_SOURCE_ROOT/data/sample.zt"
FAILS=0
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tfs-e2e.XXXXXX")
MOUNTS=()

cleanup() {
	local m
	for m in "${MOUNTS[@]}"; do
		mountpoint -q "$m" 2>/dev/null && fusermount3 -u "$m" 2>/dev/null
	done
	rm -rf "$WORK"
}
trap cleanup EXIT

# Tests that mount need /dev/fuse and fusermount3: skip (77) only without them.
need_fuse() {
	if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
		echo "SKIP: /dev/fuse or fusermount3 missing"
		exit 77
	fi
}

# shared_case WHAT REL...: true when every ../shared/fixtures/REL exists;
# else prints "SKIP-CASE: WHAT: needs ../shared/fixtures/REL" (counted by
# scripts/skipped) and returns 1, so a case that needs a real third-party
# file skips alone and the rest of the test runs:
#   if shared_case "whisper tiny" ggml-legacy/for-tests-ggml-tiny.bin; then
shared_case() {
	local what=$1 rel
	shift
	for rel in "$@"; do
		if [ ! -e "${TFS_FIXTURES:-/nonexistent}/$rel" ]; then
			echo "SKIP-CASE: $what: needs ../shared/fixtures/$rel"
			return 1
		fi
	done
	return 0
}

# a test reading ../shared/fixtures: skipped (77) with a line when missing
need_fixtures() {
	if [ ! -d "${TFS_FIXTURES:-}" ]; then
		echo "SKIP: the shared fixtures (${TFS_FIXTURES:-unset}) are missing"
		exit 77
	fi
}

fail() {
	echo "FAIL: $*" >&2
	FAILS=$((FAILS + 1))
}

ok() {
	echo "ok: $*"
}

# check DESCRIPTION COMMAND...: the command must succeed
check() {
	local what=$1
	shift
	if "$@"; then ok "$what"; else fail "$what"; fi
}

# eq DESCRIPTION GOT WANT
eq() {
	if [ "$2" = "$3" ]; then
		ok "$1"
	else
		fail "$1: got '$2', want '$3'"
	fi
}

# mount_container FILE [OPTIONS...]: mounts under $WORK, prints the mountpoint
mount_container() {
	local file=$1 mnt
	shift
	mnt=$(mktemp -d "$WORK/mnt.XXXXXX")
	if ! "$TENSORFS" "$@" "$file" "$mnt" >"$WORK/mount.out" 2>&1; then
		cat "$WORK/mount.out" >&2
		return 1
	fi
	MOUNTS+=("$mnt")
	echo "$mnt"
}

# pid of the daemon serving MOUNTPOINT (not of the fusermount3 that stays
# to unmount it: its command line ends with the mount point too)
daemon_pid() {
	# the newest: a daemon just unmounted from the same point with the same
	# command line may not have exited yet
	pgrep -n -f -- "^([^ ]*/)?tensorfs .* $1\$"
}

unmount() {
	fusermount3 -u "$1"
}

# PID is running: it exists and has not exited.  A zombie has exited (and a
# crashed daemon is one): an init may reap it a second later (this
# sandbox's does), and `kill -0` still finds it until then.
running() {
	local st
	st=$(sed -n 's/^.*) \(.\).*/\1/p' "/proc/$1/stat" 2>/dev/null)
	[ -n "$st" ] && [ "$st" != Z ]
}

# install_root ROOT: `meson install --destdir ROOT` of $TFS_BUILD_ROOT, or
# fail and exit
install_root() {
	if ! meson install -C "$TFS_BUILD_ROOT" --no-rebuild --destdir "$1" \
		>"$WORK/install.log" 2>&1; then
		cat "$WORK/install.log" >&2
		fail "meson install --destdir"
		exit 1
	fi
}

finish() {
	if [ "$FAILS" -ne 0 ]; then
		echo "$FAILS check(s) failed"
		exit 1
	fi
	echo "all checks passed"
	exit 0
}

sha() {
	sha256sum "$1" | cut -d' ' -f1
}
