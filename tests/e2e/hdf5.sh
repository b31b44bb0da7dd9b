#!/usr/bin/env bash
# HDF5 through real mounts: every file of the project's set
# (tests/fixtures/hdf5/valid) and of the shared fixtures when present (both
# written by libhdf5 through h5py; the Keras 3 .keras zip too) and files
# h5py writes here with random groups, shapes, dtypes, layouts, chunking
# and filters, each dataset compared byte for byte with
# h5py's read of it (tests/e2e/hdf5_check.py), chunked and filtered ones
# included; a dataset tensorfs cannot serve (a refused filter) must fail
# with EIO, never give other bytes.  Then xattrs (dtype, byte order, layout, Keras attributes),
# metadata.json, the ":0" suffix, the rejects refused with one line naming
# the structure and the byte offset.  Random files: seeds 1-12, libver
# earliest / latest / v108 by seed.  Compound records in gzip chunks
# longer than the data, and a dataset the reader cannot serve.
. "$(dirname "$0")/lib.sh"
need_fuse
CHECK="$(dirname "$0")/hdf5_check.py"
if ! /usr/bin/python3 -c 'import h5py' 2>/dev/null; then
	echo "SKIP: Debian's python3-h5py is not installed"
	exit 77
fi

files=("$TFS_TESTDATA"/hdf5/valid/*.h5 "$TFS_TESTDATA"/hdf5/valid/*.keras)
if shared_case "the shared HDF5 and .keras files" hdf5/expected.json; then
	files+=("$TFS_FIXTURES"/hdf5/*.h5 "$TFS_FIXTURES"/hdf5/*.keras)
fi
for seed in $(seq 1 12); do
	/usr/bin/python3 "$CHECK" gen "$WORK/random$seed.h5" "$seed" ||
		fail "h5py writes random$seed.h5"
	files+=("$WORK/random$seed.h5")
done
/usr/bin/python3 "$CHECK" paged "$WORK/paged.h5" || fail "h5py writes paged.h5"
files+=("$WORK/paged.h5")
for f in "${files[@]}"; do
	M=$(mount_container "$f") || { fail "mount $(basename "$f")"; continue; }
	out=$(/usr/bin/python3 "$CHECK" compare "$f" "$M")
	case $out in
	*" 0 unreadable") ok "h5py agrees on $(basename "$f"): $out" ;;
	*) fail "h5py disagrees on $(basename "$f"): $out" ;;
	esac
	unmount "$M"
done

# jhdf's isssue-523.hdf5 made again (gzip-chunked compound records, one
# chunk each, unlimited; it was refused whole), and a dataset tensorfs
# cannot serve: that one fails with EIO and says why, the others are read
/usr/bin/python3 "$CHECK" records "$WORK/records.h5" || fail "h5py writes records.h5"
if M=$(mount_container "$WORK/records.h5"); then
	eq "records.h5: h5py agrees, too_wide alone unreadable" \
		"$(/usr/bin/python3 "$CHECK" compare "$WORK/records.h5" "$M")" \
		"3 readable, 1 unreadable"
	check "records.h5: too_wide says why" sh -c "getfattr --absolute-names \
		--only-values -n user.tensorfs.unreadable '$M/too_wide' |
		grep -q 'chunk grid'"
	eq "records.h5: a record's dtype" "$(getfattr --only-values -n \
		user.tensorfs.dtype "$M/42571/Protocols/ISO7816/Bits/0/Frames" \
		2>/dev/null)" void32
	unmount "$M"
else
	fail "mount records.h5"
fi

# named_checks VALID_DIR REJECT_DIR: the shared set and the project's
# (tests/fixtures/hdf5/sets.py) hold files of the same names and layouts
named_checks() {
	M=$(mount_container "$1/keras2_save_weights.h5")
	eq "root format" "$(getfattr --only-values -n user.tensorfs.format "$M" 2>/dev/null)" hdf5
	eq "kernel:0 shown as kernel" "$(getfattr --only-values -n user.tensorfs.shape "$M/dense/dense/kernel" 2>/dev/null)" "[4,8]"
	eq "layout xattr" "$(getfattr --only-values -n user.tensorfs.hdf5.layout "$M/dense/dense/kernel" 2>/dev/null)" contiguous
	eq "root attribute as xattr" "$(getfattr --only-values -n user.tensorfs.hdf5.attr.backend "$M" 2>/dev/null)" tensorflow
	eq "Keras layout in metadata.json" \
		"$(/usr/bin/python3 -c 'import json,sys; k=json.load(open(sys.argv[1]))["keras"]; print(k["layout"], k["layer_names"])' "$M/.tensorfs/metadata.json")" \
		"keras2-weights ['dense', 'batch_normalization', 'dropout', 'dense_1']"
	unmount "$M"

	M=$(mount_container "$1/dtypes_earliest.h5")
	eq "big-endian as stored" "$(getfattr --only-values -n user.tensorfs.byte_order "$M/be/be_f4" 2>/dev/null)" big
	eq "bfloat16 custom float" "$(getfattr --only-values -n user.tensorfs.dtype "$M/bfloat16_custom" 2>/dev/null)" bfloat16
	eq "complex compound" "$(getfattr --only-values -n user.tensorfs.dtype "$M/complex64" 2>/dev/null)" complex64
	unmount "$M"

	M=$(mount_container "$1/keras3_model.keras")
	eq ".keras root format" "$(getfattr --only-values -n user.tensorfs.format "$M" 2>/dev/null)" keras
	eq ".keras config in metadata.json" \
		"$(/usr/bin/python3 -c 'import json,sys; print(sorted(json.load(open(sys.argv[1]))["keras_archive"]))' "$M/.tensorfs/metadata.json")" \
		"['config', 'members', 'metadata', 'weights_offset']"
	unmount "$M"

	M=$(mount_container "$1/layouts_latest.h5")
	eq "a deflated dataset is decoded" "$(getfattr --only-values -n user.tensorfs.encoding "$M/gzip" 2>/dev/null)" chunked
	eq "its filters" "$(getfattr --only-values -n user.tensorfs.hdf5.filters "$M/shuffle_gzip" 2>/dev/null)" shuffle,deflate
	unmount "$M"

	for f in "$2"/*.h5; do
		case $(basename "$f") in unknown_filter.h5) continue ;; esac
		out=$("$TENSORFS" ls "$f" 2>&1) && fail "$(basename "$f") accepted"
		n=$(printf '%s\n' "$out" | wc -l)
		if [ "$n" -eq 1 ] && printf '%s' "$out" | grep -q 'at byte offset [0-9]'; then
			ok "$(basename "$f"): $out"
		else
			fail "$(basename "$f"): $out"
		fi
	done
}
named_checks "$TFS_TESTDATA/hdf5/valid" "$TFS_TESTDATA/hdf5/reject"
if shared_case "shared Keras, dtypes, layouts and reject files" hdf5/keras2_save_weights.h5; then
	named_checks "$TFS_FIXTURES/hdf5" "$TFS_FIXTURES/hdf5/reject"
fi
finish
