#!/usr/bin/env bash
# The quant view (-o as=float32 over a quantized checkpoint, src/views/
# quant.c) through real mounts, over ../shared's quantized fixtures (each a
# model directory written by the fixture kit's own packers, with the
# sha256 of every logical tensor's float32 bytes in expected.json):
# tests/e2e/quantized.py.  A skipped case without ../shared.
. "$(dirname "$0")/lib.sh"
need_fuse
if ! /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
	echo "SKIP: Debian's python3-numpy is not installed"
	exit 77
fi
if shared_case "the quantized fixtures of ../shared" quantized/expected.json
then
	check "every family's logical tensors, hidden parts, rejects" \
		/usr/bin/python3 "$(dirname "$0")/quantized.py" "$TENSORFS" \
		"$TFS_FIXTURES/quantized" "$WORK"
fi
finish
