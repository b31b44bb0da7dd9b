#!/usr/bin/env bash
# The desktop's files in real file managers (issue 41, docs/desktop.md),
# under Xvfb with a session bus of our own: the build installed into a
# temporary root (XDG_DATA_DIRS), a folder of checkpoints of several
# formats shown by Thunar (thumbnails by tumbler, which runs our
# .thumbnailer) and by pcmanfm (libfm runs it itself): each file's
# thumbnail appears in $HOME/.cache/thumbnails/normal (MD5 of its URI) and
# is the thumbnailer's (a 128 x 128 PNG; no other thumbnailer knows these
# types); then `tensorfs open` of one, with pcmanfm as the default for
# directories, opens a window on its mount.  A screenshot of each is kept
# in $TFS_BUILD_ROOT/meson-logs/desktop/ (not compared).  A missing piece
# of the display stack skips its case with the reason; none at all skips
# the test.  TFS_BUILD_ROOT: the build dir.
. "$(dirname "$0")/../e2e/lib.sh"
: "${TFS_BUILD_ROOT:?}"
for tool in Xvfb dbus-daemon xwd xwininfo xprop update-mime-database; do
	if ! command -v $tool >/dev/null; then
		echo "SKIP: $tool missing (xvfb, dbus, x11-apps, x11-utils," \
			"shared-mime-info)"
		exit 77
	fi
done
ROOT=$WORK/root
install_root "$ROOT"
SHARE=$(find "$ROOT" -path '*/mime/packages/tensorfs.xml' | head -n 1)
SHARE=${SHARE%/mime/packages/tensorfs.xml}
BIN=$(find "$ROOT" -path '*/bin/tensorfs' | head -n 1)
LIB=$(find "$ROOT" -name libtensorfs.so.0 | head -n 1)
SHOTS=$TFS_BUILD_ROOT/meson-logs/desktop
mkdir -p "$SHOTS" "$WORK/home" "$WORK/models" "$WORK/run"
chmod 700 "$WORK/run"
# the session: everything the bus starts (tumblerd) inherits this
PATH="$(dirname "$BIN"):$PATH"
LD_LIBRARY_PATH="$(dirname "$LIB")"
export HOME=$WORK/home XDG_CACHE_HOME=$WORK/home/.cache \
	XDG_CONFIG_HOME=$WORK/home/.config XDG_DATA_HOME=$WORK/home/.local/share \
	XDG_DATA_DIRS="$SHARE:/usr/share" XDG_RUNTIME_DIR=$WORK/run \
	PATH LD_LIBRARY_PATH NO_AT_BRIDGE=1
update-mime-database "$SHARE/mime" 2>/dev/null
command -v update-desktop-database >/dev/null &&
	update-desktop-database "$SHARE/applications"
F=$TFS_SOURCE_ROOT/tests/fixtures
cp "$F/safetensors/valid/every_dtype.safetensors" "$F/gguf/valid/align1.gguf" \
	"$F/npy/valid/le_f2.npy" "$F/pytorch/valid/nested_zip.pt" \
	"$F/tflite/valid/types.tflite" "$F/ztensor2/valid/every-dtype.zt" \
	"$WORK/models/"

PIDS=()
stop_all() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	PIDS=()
}
trap 'stop_all; "$BIN" open --close >/dev/null 2>&1; cleanup' EXIT

Xvfb :$((90 + RANDOM % 400)) -screen 0 1024x768x24 -nolisten tcp \
	-displayfd 3 3>"$WORK/display" >"$WORK/xvfb.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 50); do [ -s "$WORK/display" ] && break; sleep 0.1; done
if [ ! -s "$WORK/display" ]; then
	echo "SKIP: Xvfb did not start: $(head -n 3 "$WORK/xvfb.log")"
	exit 77
fi
DISPLAY=:$(cat "$WORK/display")
export DISPLAY
dbus-daemon --session --nofork --nopidfile --address="unix:path=$WORK/bus" \
	>"$WORK/dbus.log" 2>&1 &
PIDS+=($!)
export DBUS_SESSION_BUS_ADDRESS=unix:path=$WORK/bus
for _ in $(seq 1 50); do [ -S "$WORK/bus" ] && break; sleep 0.1; done

# thumb FILE: the path of its normal-size thumbnail (freedesktop spec)
thumb() {
	echo "$HOME/.cache/thumbnails/normal/$(printf 'file://%s' "$1" |
		md5sum | cut -d' ' -f1).png"
}
png_size() {
	python3 -c 'import struct, sys
d = open(sys.argv[1], "rb").read(24)
print("%d %d" % struct.unpack(">II", d[16:24]) if d[12:16] == b"IHDR" else "")' "$1"
}
shot() { # NAME: a screenshot of the screen as NAME.png
	xwd -root -silent -out "$WORK/shot.xwd" &&
		python3 "$(dirname "$0")/xwd2png.py" "$WORK/shot.xwd" \
			"$SHOTS/$1.png" && echo "screenshot: $SHOTS/$1.png"
}
# file_manager NAME COMMAND...: it shows the folder; every thumbnail made
file_manager() {
	local name=$1 f t n=0 want
	shift
	rm -rf "$HOME/.cache/thumbnails"
	"$@" "$WORK/models" >"$WORK/$name.log" 2>&1 &
	PIDS+=($!)
	want=$(find "$WORK/models" -type f | wc -l)
	for _ in $(seq 1 60); do
		sleep 0.5
		n=0
		for f in "$WORK/models"/*; do [ -s "$(thumb "$f")" ] && n=$((n + 1)); done
		[ "$n" -eq "$want" ] && break
	done
	for f in "$WORK/models"/*; do
		t=$(thumb "$f")
		if [ -s "$t" ]; then
			eq "$name: thumbnail of $(basename "$f"): ours, 128 x 128" \
				"$(png_size "$t")" "128 128"
		else
			fail "$name: no thumbnail of $(basename "$f")"
		fi
	done
	sleep 2 # the view redrawn with them
	shot "$name"
	stop_all_but_session
}
# the file manager goes; Xvfb and the bus stay (the first two)
stop_all_but_session() {
	local p
	for p in "${PIDS[@]:2}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
	PIDS=("${PIDS[@]:0:2}")
}

if command -v thunar >/dev/null &&
	[ -n "$(find /usr/lib -name tumbler-desktop-thumbnailer.so 2>/dev/null)" ]; then
	file_manager thunar thunar
else
	echo "SKIP-CASE: Thunar: thunar or tumbler's desktop thumbnailer missing"
fi
if command -v pcmanfm >/dev/null; then
	file_manager pcmanfm pcmanfm --no-desktop
	# tensorfs open: xdg-open starts the default for directories
	mkdir -p "$XDG_CONFIG_HOME"
	printf '[Default Applications]\ninode/directory=pcmanfm.desktop\n' \
		>"$XDG_CONFIG_HOME/mimeapps.list"
	mnt=$("$BIN" open "$WORK/models/every_dtype.safetensors" 2>"$WORK/open.err")
	eq "tensorfs open: the mount point" "$mnt" "$WORK/run/tensorfs/every_dtype.safetensors"
	win=
	for _ in $(seq 1 40); do
		sleep 0.5
		win=$(xwininfo -root -tree |
			awk '/"every_dtype.safetensors/ { print $1; exit }')
		[ -n "$win" ] && break
	done
	check "tensorfs open: a window on the mount" test -n "$win"
	sleep 1
	shot open
	# the file manager xdg-open started: its pid from its window, so
	# that it lets the mount go
	pid=$(xprop -id "$win" _NET_WM_PID 2>/dev/null | awk '{ print $3 }')
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	sleep 0.5
	check "tensorfs open --close" "$BIN" open --close
else
	echo "SKIP-CASE: pcmanfm: not installed"
fi
finish
