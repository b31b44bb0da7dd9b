#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Benchmark (not a test): the FUSE ceiling.  The first read (dd bs=1M) of
# MIB MiB through
#   direct       the same bytes from a file in the page cache
#   ceiling ...  bench/ceiling.c, a minimal libfuse low-level server
#                serving a memfd with tensorfs's options, in each loop kind
#                (multi-threaded as tensorfs, -s) and reply path (buf as
#                tensorfs: fuse_reply_buf from a mapping; data:
#                fuse_reply_data without splice; splice, splice-move:
#                FUSE_CAP_SPLICE_WRITE [| _MOVE]), clone_fd, and "file":
#                fuse_reply_buf from a mapping of the safetensors file
#                below, not prefaulted, as tensorfs replies
#   tensorfs     a raw safetensors tensor of the same size, the container
#                in the page cache (tensorfs and tensorfs -s)
#   squashfuse_ll  an uncompressed squashfs image of the same bytes
# each on a fresh mount, then the re-read of the same file on the same
# mount (the mount's page cache: keep_cache).  Median of RUNS runs.  Also
# the serving daemon's CPU time (utime + stime) over the first read, and,
# where `perf stat -e instructions` works, the instructions of the reader
# (dd, kernel included) and of the daemon.  Every mount gets
# read_ahead_kb 1024, what tensorfs sets on its own mounts.
#
#   bench/ceiling.sh [MIB] [RUNS]   (default 512 3)
#
# Prints bench/run's rows (tab-separated: row, measurement, now, ratio,
# target) and, before them, one "mode" line per path with every figure.
# Root; installs squashfuse and squashfs-tools when missing.  TENSORFS
# selects the binary (default build/tensorfs; the ceiling is built in its
# build directory); BENCH_DIR a work directory (default a new one under
# /tmp, removed at the end); PERF_EVENT the counted event (instructions).
set -euo pipefail

MIB=${1:-512}
RUNS=${2:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TENSORFS=${TENSORFS:-$ROOT/build/tensorfs}
BUILD=$(dirname "$TENSORFS")
CEILING=$BUILD/bench/ceiling
EVENT=${PERF_EVENT:-instructions}
OWN_DIR=0
if [ -z "${BENCH_DIR:-}" ]; then
	BENCH_DIR=$(mktemp -d /tmp/tfs-ceiling.XXXXXX)
	OWN_DIR=1
fi
W=$BENCH_DIR
M=$W/mnt
mkdir -p "$M"
cleanup() {
	mountpoint -q "$M" 2>/dev/null && fusermount3 -u "$M"
	[ "$OWN_DIR" = 1 ] && rm -rf "$W"
	return 0
}
trap cleanup EXIT

[ -x "$TENSORFS" ] || { echo "no $TENSORFS: run scripts/build" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "bench/ceiling.sh: run as root" >&2; exit 1; }
meson compile -C "$BUILD" ceiling >/dev/null
if ! command -v squashfuse_ll >/dev/null || ! command -v mksquashfs >/dev/null; then
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq squashfuse \
		squashfs-tools >/dev/null
fi
PERF=0
if perf stat -x, -e "$EVENT" -o "$W/perf.probe" true 2>/dev/null &&
	grep -q "^[0-9]" "$W/perf.probe"; then
	PERF=1
fi

bytes=$((MIB << 20))
python3 - "$W/big.safetensors" "$bytes" <<'PY'
import json, os, struct, sys
path, n = sys.argv[1], int(sys.argv[2])
h = json.dumps({"big": {"dtype": "U8", "shape": [n],
                        "data_offsets": [0, n]}}).encode()
h += b" " * (-len(h) % 8)
with open(path, "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h)
    f.write(os.urandom(n))
PY
hdr=$(($(stat -c %s "$W/big.safetensors") - bytes))
mkdir -p "$W/tree"
tail -c "$bytes" "$W/big.safetensors" >"$W/tree/big"
mksquashfs "$W/tree" "$W/big.sqfs" -noI -noD -noF -noX -no-progress \
	-quiet >/dev/null
rm -rf "$W/tree"
cache() { cat "$W/big.safetensors" "$W/big.sqfs" >/dev/null; }

now() { date +%s%N; }
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b ? a / b : 0) }'; }
secs() { awk -v n="$1" 'BEGIN { printf "%.3f", n / 1e9 }'; }
# utime + stime of PID in milliseconds
cpu_ms() {
	awk -v hz="$(getconf CLK_TCK)" '{ sub(/^.*\) /, ""); print ($12 + $13) * 1000 / hz }' \
		"/proc/$1/stat"
}
# the event count of perf's -o file (0 when not counted)
counted() { awk -F, '/^[0-9]/ { print $1; exit } END { if (!NR) print 0 }' "$1"; }
# dd of FILE [dd args], counted by perf when it works
rd() {
	if [ "$PERF" = 1 ]; then
		perf stat -x, -e "$EVENT" -o "$W/perf.rd" \
			dd if="$1" bs=1M status=none of=/dev/null "${@:2}"
	else
		dd if="$1" bs=1M status=none of=/dev/null "${@:2}"
	fi
}

# every path: NAME|FILE IN THE MOUNT|PGREP PATTERN OF ITS DAEMON|COMMAND
cl="^$CEILING .*$M\$"
tl="^$TENSORFS $W/big.safetensors $M"
paths=("ceiling|data|$cl|$CEILING -rbuf $MIB $M"
	"ceiling -s|data|$cl|$CEILING -s -rbuf $MIB $M"
	"ceiling clone_fd|data|$cl|$CEILING -c -rbuf $MIB $M"
	"ceiling file|data|$cl|$CEILING -rbuf -f $W/big.safetensors $MIB $M"
	"ceiling data|data|$cl|$CEILING -rdata $MIB $M"
	"ceiling splice|data|$cl|$CEILING -rsplice $MIB $M"
	"ceiling -s splice|data|$cl|$CEILING -s -rsplice $MIB $M"
	"ceiling splice-move|data|$cl|$CEILING -rsplice-move $MIB $M"
	"ceiling -s splice-move|data|$cl|$CEILING -s -rsplice-move $MIB $M"
	"tensorfs|big|$tl|$TENSORFS $W/big.safetensors $M"
	"tensorfs -s|big|$tl|$TENSORFS $W/big.safetensors $M -s"
	"squashfuse_ll|big|^squashfuse_ll $W/big.sqfs $M\$|squashfuse_ll $W/big.sqfs $M")
# per path, the runs' figures, space-separated: first read and re-read (ns),
# daemon CPU (ms), reader's and daemon's event counts
declare -A FT AT CT RI DI

# one run of one path: a fresh mount, first read, re-read, unmount
once() {
	local name file pat cmd pid t0 t1 c0 pp
	IFS='|' read -r name file pat cmd <<<"$1"
	cache
	# shellcheck disable=SC2086 # the command's words
	$cmd
	pid=$(pgrep -n -f "$pat")
	echo 1024 >"/sys/class/bdi/$(mountpoint -d "$M")/read_ahead_kb"
	c0=$(cpu_ms "$pid")
	if [ "$PERF" = 1 ]; then
		perf stat -x, -e "$EVENT" -o "$W/perf.d" -p "$pid" &
		pp=$!
		sleep 0.2
	fi
	t0=$(now)
	rd "$M/$file"
	t1=$(now)
	FT[$name]+=" $((t1 - t0))"
	CT[$name]+=" $(awk -v a="$(cpu_ms "$pid")" -v b="$c0" 'BEGIN { print a - b }')"
	if [ "$PERF" = 1 ]; then
		kill -INT "$pp"
		wait "$pp" || true
		RI[$name]+=" $(counted "$W/perf.rd")"
		DI[$name]+=" $(counted "$W/perf.d")"
	fi
	t0=$(now)
	dd if="$M/$file" bs=1M status=none of=/dev/null
	t1=$(now)
	AT[$name]+=" $((t1 - t0))"
	fusermount3 -u "$M"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
}

# the runs interleave the paths: a machine whose load changes during the
# benchmark slows every path alike
direct_t=()
direct_i=()
for _ in $(seq "$RUNS"); do
	cache
	t0=$(now)
	rd "$W/big.safetensors" iflag=skip_bytes,count_bytes skip="$hdr" \
		count="$bytes"
	t1=$(now)
	direct_t+=($((t1 - t0)))
	[ "$PERF" = 1 ] && direct_i+=("$(counted "$W/perf.rd")")
	for p in "${paths[@]}"; do
		once "$p"
	done
done
direct=$(median "${direct_t[@]}")
direct_ins=$([ "$PERF" = 1 ] && median "${direct_i[@]}" || echo 0)

declare -A F A C
for p in "${paths[@]}"; do
	name=${p%%|*}
	# shellcheck disable=SC2086 # the runs' figures
	F[$name]=$(median ${FT[$name]}) A[$name]=$(median ${AT[$name]})
	# shellcheck disable=SC2086
	C[$name]=$(median ${CT[$name]})
	rins=0 dins=0
	if [ "$PERF" = 1 ]; then
		# shellcheck disable=SC2086
		rins=$(median ${RI[$name]}) dins=$(median ${DI[$name]})
	fi
	[ "$name" = tensorfs ] && tins=$rins tdins=$dins
	printf 'mode\t%s\tfirst %s s (%s x direct)\tre-read %s s (%s x direct)\tdaemon cpu %s ms\t%s %s reader / %s daemon\n' \
		"$name" "$(secs "${F[$name]}")" "$(ratio "$direct" "${F[$name]}")" \
		"$(secs "${A[$name]}")" "$(ratio "$direct" "${A[$name]}")" \
		"${C[$name]}" "$EVENT" "$rins" "$dins"
done
F[sq]=${F[squashfuse_ll]}

# the best ceiling of the run, first read and re-read
best=
bestname=
for n in "${!F[@]}"; do
	case $n in ceiling*) ;; *) continue ;; esac
	if [ -z "$best" ] || [ "${F[$n]}" -lt "$best" ]; then
		best=${F[$n]} bestname=$n
	fi
done
besta=${A[ceiling]}
for n in "${!A[@]}"; do
	case $n in ceiling*) [ "${A[$n]}" -lt "$besta" ] && besta=${A[$n]} ;; esac
done

row() { printf 'row\t%s\t%s\t%s\t%s\n' "$@"; }
t=${F[tensorfs]}
row "ceiling ($MIB MiB, median of $RUNS): first read, tensorfs / its own settings' ceiling (multi-threaded, fuse_reply_buf)" \
	"$(secs "$t") s vs $(secs "${F[ceiling]}") s" "$(ratio "${F[ceiling]}" "$t")x" ">= 0.9x"
row "ceiling: first read, tensorfs / the best ceiling ($bestname)" \
	"$(secs "$t") s vs $(secs "$best") s" "$(ratio "$best" "$t")x" ">= 0.9x"
row "ceiling: first read, tensorfs / direct; the best ceiling / direct" \
	"$(secs "$t") s; $(secs "$best") s vs $(secs "$direct") s" \
	"$(ratio "$direct" "$t")x; $(ratio "$direct" "$best")x" ">= 0.9x of the ceiling's"
row "ceiling: first read, tensorfs -s / ceiling -s" \
	"$(secs "${F[tensorfs -s]}") s vs $(secs "${F[ceiling -s]}") s" \
	"$(ratio "${F[ceiling -s]}" "${F[tensorfs -s]}")x" ">= 0.9x"
row "ceiling: first read, tensorfs / squashfuse_ll" \
	"$(secs "$t") s vs $(secs "${F[sq]}") s" "$(ratio "${F[sq]}" "$t")x" ""
row "ceiling: re-read on the same mount, tensorfs / best ceiling; / direct" \
	"$(secs "${A[tensorfs]}") s vs $(secs "$besta") s" \
	"$(ratio "$besta" "${A[tensorfs]}")x; $(ratio "$direct" "${A[tensorfs]}")x" \
	">= 0.9x"
row "ceiling: daemon CPU over the first read, tensorfs / ceiling" \
	"${C[tensorfs]} ms vs ${C[ceiling]} ms" \
	"$(ratio "${C[tensorfs]}" "${C[ceiling]}")x" ""
if [ "$PERF" = 1 ]; then
	row "ceiling: $EVENT of the first read, reader + daemon: tensorfs / direct" \
		"$tins + $tdins vs $direct_ins" \
		"$(ratio "$(awk -v a="$tins" -v b="$tdins" 'BEGIN { print a + b }')" \
			"$direct_ins")x" ""
else
	row "ceiling: perf stat -e $EVENT" "not supported here" "" ""
fi
