#!/usr/bin/env bash
# The desktop's files as a user gets them (issue 41, docs/desktop.md):
# `meson install --destdir` into a temporary root, update-mime-database over
# its share/mime, then the real tools with XDG_DATA_DIRS pointing there:
# `gio info` (and `xdg-mime query filetype` where xdg-utils is installed)
# name our type for a file of every format, and for a copy without
# extension of every format with magic; the thumbnailer, run as its Exec=
# line says, makes a PNG of the asked size (its IHDR) for every one of its
# types' files and nothing else, and refuses every reject of
# tests/fixtures in one line with exit status 1; desktop-file-validate
# accepts the .desktop file, gio names it an application for every type,
# and every type but HDF5's has its icon.  TFS_BUILD_ROOT: the build dir.
. "$(dirname "$0")/../e2e/lib.sh"
: "${TFS_BUILD_ROOT:?}"
for tool in update-mime-database gio; do
	if ! command -v $tool >/dev/null; then
		echo "SKIP: $tool missing (shared-mime-info, libglib2.0-bin)"
		exit 77
	fi
done

ROOT=$WORK/root
install_root "$ROOT"
SHARE=$(dirname "$(find "$ROOT" -path '*/mime/packages/tensorfs.xml' |
	head -n 1)")
SHARE=${SHARE%/mime/packages}
check "tensorfs.xml installed under share/mime/packages" test -d "$SHARE"
export XDG_DATA_DIRS="$SHARE:/usr/share"
check "update-mime-database accepts it" \
	update-mime-database "$SHARE/mime"
export XDG_DATA_HOME="$WORK/home-data"

type_of() {
	gio info -a standard::content-type "$1" 2>/dev/null |
		sed -n 's/^ *standard::content-type: //p'
}

F=$TFS_SOURCE_ROOT/tests/fixtures
S=${TFS_FIXTURES:-/nonexistent}
mkdir -p "$WORK/named"
cp "$F/tfjs/valid/graph/model.manifest" "$WORK/named/model.json"
printf '{"weight_map": {}}' >"$WORK/named/model.safetensors.index.json"
printf '{"weight_map": {}}' >"$WORK/named/pytorch_model.bin.index.json"
# a name ending .xml is application/xml's before any magic: OpenVINO IR by
# Optimum's name (openvino_*.xml), or by its root <net> without a name
[ -e "$S/openvino-ir/tiny_mlp.xml" ] &&
	cp "$S/openvino-ir/tiny_mlp.xml" "$WORK/named/openvino_model.xml"
# TYPE MAGIC(yes/no) FILE: one file of every format
LIST=$(cat <<'END'
application/x-safetensors yes safetensors/valid/every_dtype.safetensors
application/x-safetensors-index no work:named/model.safetensors.index.json
application/x-gguf yes gguf/valid/align1.gguf
application/x-ggml yes ggml_legacy/valid/whisper-q8_0-synth.bin
application/x-onnx no shared:onnx/tiny.onnx
application/x-tflite yes tflite/valid/types.tflite
application/x-tensorflow-checkpoint no tf_checkpoint/valid/tiny/tiny.index
application/x-tfjs-model no work:named/model.json
application/x-npy yes npy/valid/le_f2.npy
application/x-npz yes npy/valid/compressed_big.npz
application/x-pytorch yes pytorch/valid/nested_zip.pt
application/x-pytorch yes pytorch/valid/nested_legacy.pt
application/x-pytorch yes torchscript/valid/lightning_attrdict.ckpt
application/x-pytorch-index no work:named/pytorch_model.bin.index.json
application/x-keras yes hdf5/valid/keras3_model.keras
application/x-keras-weights no hdf5/valid/keras3_model.weights.h5
application/x-hdf yes hdf5/valid/groups_latest.h5
application/x-nemo no nemo/valid/nested.nemo
application/x-openvino-ir yes work:named/openvino_model.xml
application/x-flax-msgpack no flax/valid/flax_model.msgpack
application/x-ztensor yes ztensor/valid/v10_f32_2x3_raw.zt
application/x-ztensor yes ztensor2/valid/every-dtype.zt
application/x-burnpack yes burnpack/valid/f32_2x3.bpk
application/x-gptrs yes gptrs/valid/archive_v1_inline.bin
application/x-tsr yes tsr/valid/fp32_2x3.tsr
application/x-primitiv yes primitiv/valid/param_long_forms.param
application/x-caffe-model no caffe/valid/v2.caffemodel
application/x-darknet-weights no darknet/valid/tiny.weights
application/x-ncnn-param yes ncnn/valid/alone.param
application/x-mxnet-params yes mxnet/valid/model-0000.params
application/x-torch7 no torch7/valid/model.t7
application/x-coreml-model no coreml/valid/net.mlmodel
application/x-llamafile no llamafile/valid/ape_one.llamafile
application/x-mediapipe-task no mediapipe_task/valid/single.task
application/x-dduf no dduf/valid/top_level.dduf
application/x-pt2 no pt2/valid/export.pt2
application/x-flashpack no flashpack/valid/v4.flashpack
application/x-executorch yes executorch/valid/inline.pte
application/x-zarr-metadata no zarr/valid/scalar_f4/.zarray
END
)
# FILE: the file of a LIST line; false for a shared fixture that is missing
where() {
	case $1 in
	shared:*)
		shared_case "$2" "${1#shared:}" || return 1
		FILE=$S/${1#shared:}
		;;
	work:*)
		FILE=$WORK/${1#work:}
		[ -e "$FILE" ] || shared_case "$2" openvino-ir/tiny_mlp.xml
		;;
	*) FILE=$F/$1 ;;
	esac
}
while read -r type magic file; do
	where "$file" "$type" || continue
	file=$FILE
	eq "$type: $(basename "$file")" "$(type_of "$file")" "$type"
	[ "$magic" = yes ] || continue
	cp "$file" "$WORK/noext"
	eq "$type: $(basename "$file") without its name" \
		"$(type_of "$WORK/noext")" "$type"
done <<<"$LIST"
# a safetensors file is known by its header's shape, not only its name
printf '\x10\0\0\0\0\0\0\0{"a":1}         ' >"$WORK/made-up"
eq "safetensors by its header alone" "$(type_of "$WORK/made-up")" \
	application/x-safetensors
# xdg-mime asks gio on GNOME
if command -v xdg-mime >/dev/null; then
	cp "$F/gguf/valid/align1.gguf" "$WORK/noext"
	eq "xdg-mime query filetype" "$(XDG_CURRENT_DESKTOP=GNOME \
		xdg-mime query filetype "$WORK/noext")" application/x-gguf
else
	echo "SKIP-CASE: xdg-mime: xdg-utils not installed"
fi

# The thumbnailer as installed, run as its Exec= line says (%s %i %o) with
# the installed binary first on PATH
TH=$(find "$ROOT" -path '*/thumbnailers/tensorfs.thumbnailer' | head -n 1)
BIN=$(find "$ROOT" -path '*/bin/tensorfs' | head -n 1)
LIB=$(find "$ROOT" -name libtensorfs.so.0 | head -n 1)
check "tensorfs.thumbnailer installed" test -n "$TH"
if [ -z "$TH" ] || [ -z "$BIN" ] || [ -z "$LIB" ]; then finish; fi
EXEC=$(sed -n 's/^Exec=//p' "$TH")
TYPES=";$(sed -n 's/^MimeType=//p' "$TH")"
eq "TryExec names the binary" "$(sed -n 's/^TryExec=//p' "$TH")" tensorfs
# thumbnail SIZE IN OUT: the Exec= line's words, its codes replaced
thumbnail() {
	local w args=()
	for w in $EXEC; do
		case $w in
		%s) args+=("$1") ;;
		%i) args+=("$2") ;;
		%o) args+=("$3") ;;
		*) args+=("$w") ;;
		esac
	done
	PATH="$(dirname "$BIN"):$PATH" \
		LD_LIBRARY_PATH="$(dirname "$LIB")" "${args[@]}"
}
# png_size FILE: "W H" of a PNG's IHDR, or nothing when not a PNG
png_size() {
	python3 - "$1" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read(24)
if d[:8] == b"\x89PNG\r\n\x1a\n" and d[12:16] == b"IHDR":
    print("%d %d" % struct.unpack(">II", d[16:24]))
PY
}
mkdir -p "$WORK/thumbs"
size=128
while read -r type magic file; do
	case $TYPES in *";$type;"*) ;; *) continue ;; esac
	where "$file" "$type" || continue
	file=$FILE
	size=$((size == 128 ? 256 : 128))
	out=$WORK/thumbs/$(basename "$file").png
	(cd "$WORK/thumbs" && thumbnail "$size" "$file" "$out") \
		2>"$WORK/thumb.err" ||
		fail "thumbnail of $(basename "$file"): $(cat "$WORK/thumb.err")"
	eq "thumbnail of $(basename "$file"): a $size x $size PNG" \
		"$(png_size "$out")" "$size $size"
done <<<"$LIST"
eq "the thumbnailer wrote its outputs only" \
	"$(find "$WORK/thumbs" -type f ! -name '*.png' | wc -l)" 0
# every reject: one line on stderr, exit status 1, no output
n=0
bad=0
for file in "$F"/*/reject/*; do
	case $file in *.json | *.md | *.py | *.txt) continue ;; esac
	[ -f "$file" ] || continue
	n=$((n + 1))
	thumbnail 128 "$file" "$WORK/reject.png" 2>"$WORK/thumb.err"
	st=$?
	if [ $st -ne 1 ] || [ "$(wc -l <"$WORK/thumb.err")" -ne 1 ] ||
		[ -e "$WORK/reject.png" ]; then
		fail "reject $file: exit $st, $(wc -l <"$WORK/thumb.err") lines"
		bad=$((bad + 1))
		rm -f "$WORK/reject.png"
	fi
done
check "every reject ($n) refused in one line, exit 1" test "$bad" -eq 0 -a "$n" -gt 300

# "Open with tensorfs": the .desktop file, for every type of tensorfs.xml
DESK=$SHARE/applications/tensorfs.desktop
check "tensorfs.desktop installed" test -f "$DESK"
if command -v desktop-file-validate >/dev/null; then
	check "desktop-file-validate accepts it" desktop-file-validate "$DESK"
else
	echo "SKIP-CASE: desktop-file-validate: desktop-file-utils not installed"
fi
eq "its Exec= line" "$(sed -n 's/^Exec=//p' "$DESK")" "tensorfs open %f"
ALL=$(sed -n 's/.*<mime-type type="\([^"]*\)".*/\1/p' \
	"$SHARE/mime/packages/tensorfs.xml" | sort)
eq "its MimeType= is every type of tensorfs.xml and HDF5's" \
	"$(sed -n 's/^MimeType=//p' "$DESK" | tr ';' '\n' | sed '/^$/d' | sort)" \
	"$(printf '%s\napplication/x-hdf\n' "$ALL" | sort)"
if command -v update-desktop-database >/dev/null; then
	update-desktop-database "$SHARE/applications"
	# GLib lists an entry only when its TryExec= is on PATH
	eq "gio: tensorfs.desktop is application/x-gguf's default" \
		"$(PATH="$(dirname "$BIN"):$PATH" gio mime application/x-gguf \
			2>/dev/null | head -n 1 | sed 's/.*: //')" tensorfs.desktop
fi
# one icon per type (a family's drawing), SVG that parses
ICONS=$SHARE/icons/hicolor/scalable
missing=0
for type in $ALL; do
	[ -f "$ICONS/mimetypes/${type/\//-}.svg" ] || {
		fail "no icon for $type"
		missing=$((missing + 1))
	}
done
check "an icon for each type" test "$missing" -eq 0
check "the application's icon" test -f "$ICONS/apps/tensorfs.svg"
check "every icon is well-formed SVG" python3 -c '
import sys, xml.dom.minidom
for f in sys.argv[1:]:
    assert xml.dom.minidom.parse(f).documentElement.tagName == "svg", f
' "$ICONS"/*/*.svg
finish
