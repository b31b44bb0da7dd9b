#!/usr/bin/env bash
# The Python module's tests (tests/python/test_*.py) with Debian's pytest,
# against the build's libtensorfs.so.0 (TENSORFS_LIBRARY) and the module in
# the source tree (PYTHONPATH).  Skips (77) without python3-pytest or
# python3-numpy.  TFS_BUILD_ROOT: the build dir.
set -u
: "${TFS_BUILD_ROOT:?}" "${TFS_SOURCE_ROOT:?}"
PY=/usr/bin/python3
if ! "$PY" -c 'import pytest, numpy' 2>/dev/null; then
	echo "SKIP: Debian's python3-pytest or python3-numpy is not installed"
	exit 77
fi
export TENSORFS_LIBRARY=$TFS_BUILD_ROOT/libtensorfs.so.0
export PYTHONPATH=$TFS_SOURCE_ROOT/python${PYTHONPATH:+:$PYTHONPATH}
export PYTHONDONTWRITEBYTECODE=1
exec "$PY" -m pytest -q -p no:cacheprovider -rs "$TFS_SOURCE_ROOT/tests/python"
