#!/usr/bin/env bash
# Remote containers over HTTPS from Debian's nginx on loopback (a
# self-signed certificate made here): TLS is verified (an unknown
# certificate exits 4 with one line; -o insecure is the tests' way in),
# every safetensors/zTensor fixture (the shared ones, else the project's
# tests/fixtures/*/valid and data/sample.zt) equals its local mount over
# HTTP/2, a .keras and two .nemo (containers inside the container: slices of
# the remote object) give every tensor's bytes as their local mount and
# expected.json, and nginx's own ETag/If-Match turns a changed file into
# ESTALE.
. "$(dirname "$0")/lib.sh"
need_fuse
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
if [ ! -x "$NGINX" ] || ! command -v openssl >/dev/null; then
	echo "SKIP: nginx-light or openssl missing"
	exit 77
fi
if ! "$TENSORFS" --help | grep -q remote_timeout; then
	echo "SKIP: built without remote support (libcurl)"
	exit 77
fi
export TENSORFS_REMOTE_OPTIONS=no_cache

openssl req -x509 -newkey rsa:2048 -nodes -keyout "$WORK/key.pem" \
	-out "$WORK/cert.pem" -subj /CN=127.0.0.1 -days 1 \
	-addext subjectAltName=IP:127.0.0.1 2>/dev/null ||
	{ fail "openssl req"; finish; }
ROOT=$WORK/root
mkdir -p "$ROOT" "$WORK/tmp"
if shared_case "the shared safetensors and zTensor fixtures over https" \
	safetensors ztensor; then
	cp -r "$TFS_FIXTURES/safetensors" "$TFS_FIXTURES/ztensor" "$ROOT/"
else
	mkdir -p "$ROOT/safetensors" "$ROOT/ztensor"
	cp "$TFS_SOURCE_ROOT"/tests/fixtures/safetensors/valid/*.safetensors \
		"$ROOT/safetensors/"
	cp "$TFS_SOURCE_ROOT"/tests/fixtures/ztensor/valid/*.zt "$SAMPLE" \
		"$ROOT/ztensor/"
fi
start_nginx() {
	cat >"$WORK/nginx.conf" <<CONF
daemon off;
worker_processes 1;
user root;
pid $WORK/nginx.pid;
error_log $WORK/nginx.err;
events { worker_connections 64; }
http {
	log_format ranges '\$request_method \$uri \$status \$http_range '
		'\$server_protocol';
	access_log $WORK/access.log ranges;
	client_body_temp_path $WORK/tmp;
	proxy_temp_path $WORK/tmp;
	fastcgi_temp_path $WORK/tmp;
	uwsgi_temp_path $WORK/tmp;
	scgi_temp_path $WORK/tmp;
	server {
		listen 127.0.0.1:$PORT ssl http2;
		ssl_certificate $WORK/cert.pem;
		ssl_certificate_key $WORK/key.pem;
		root $ROOT;
	}
}
CONF
	"$NGINX" -p "$WORK" -c "$WORK/nginx.conf" 2>>"$WORK/nginx.err" &
	NGINX_PID=$!
	for _ in $(seq 50); do
		curl -sk -o /dev/null "https://127.0.0.1:$PORT/" && return 0
		kill -0 "$NGINX_PID" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}
started=
for _ in 1 2 3 4 5; do
	PORT=$((20000 + RANDOM % 40000))
	if start_nginx; then
		started=1
		break
	fi
done
[ -n "$started" ] || { echo "SKIP: nginx did not start"; cat "$WORK/nginx.err"; exit 77; }
trap 'kill "$NGINX_PID"; wait "$NGINX_PID" 2>/dev/null; cleanup' EXIT
BASE=https://127.0.0.1:$PORT

first=$(cd "$ROOT" && find safetensors -name '*.safetensors' | sort | head -n 1)
"$TENSORFS" ls "$BASE/$first" 2>"$WORK/e"
eq "an unverified certificate exits 4" "$?" 4
eq "with one line" "$(wc -l <"$WORK/e")" 1
grep -qi certificate "$WORK/e" && ok "naming the certificate" ||
	fail "message: $(cat "$WORK/e")"

export TENSORFS_REMOTE_OPTIONS=no_cache,insecure
n=0
for f in "$ROOT"/safetensors/*.safetensors "$ROOT"/ztensor/*.zt; do
	rel=${f#"$ROOT"/}
	"$TENSORFS" ls "$f" >/dev/null 2>&1 || continue
	lm=$(mount_container "$f") || { fail "$rel: local mount"; continue; }
	rm_=$(mount_container "$BASE/$rel") || {
		fail "$rel: remote mount"
		continue
	}
	diff -r "$lm" "$rm_" >/dev/null 2>&1 || fail "$rel differs over https"
	unmount "$lm"
	unmount "$rm_"
	n=$((n + 1))
done
[ "$n" -ge 10 ] && ok "$n fixtures equal over https" || fail "only $n"
grep -q 'HTTP/2.0' "$WORK/access.log" && ok "over HTTP/2" ||
	fail "not HTTP/2: $(tail -1 "$WORK/access.log")"
grep -q ' 206 bytes=' "$WORK/access.log" && ok "by range" || fail "no range"

# containers inside containers: the HDF5 weights of a .keras zip and the
# members of a .nemo tar (one nested in another) are slices of the remote
# object; every tensor's sha256 equals the local mount's and expected.json's
mkdir -p "$ROOT/nested"
FX=$TFS_SOURCE_ROOT/tests/fixtures
cp "$FX/hdf5/valid/keras3_model.keras" "$FX/nemo/torch_written/mlp.nemo" \
	"$FX/nemo/valid/nested.nemo" "$ROOT/nested/"
nested_same() { # FILE EXPECTED.JSON KEY: local vs https, and vs expected
	local lm rm_
	lm=$(mount_container "$ROOT/nested/$1") || { fail "$1: local"; return; }
	rm_=$(mount_container "$BASE/nested/$1") || {
		fail "$1: remote mount"
		unmount "$lm"
		return
	}
	if diff -r "$lm" "$rm_" >"$WORK/diff" 2>&1 &&
		python3 - "$lm" "$rm_" "$2" "$3" >"$WORK/sums" 2>&1 <<'PY'; then
import hashlib, json, os, sys
lm, rm, exp, key = sys.argv[1:]
man = json.load(open(os.path.join(rm, ".tensorfs/manifest.json")))
sums = {}
for t in man["tensors"]:
    a, b = (hashlib.sha256(open(os.path.join(m, t["path"]), "rb").read())
            .hexdigest() for m in (lm, rm))
    assert a == b, t["path"]
    sums[t["name"]] = sums[t["path"]] = b
want = json.load(open(exp)) if exp != "-" else {}
want = want.get("valid", want).get(key, {})
rows = (want.get("member", {}).get("datasets", [])
        + want.get("model_weights_tensors", []))
for w in rows:
    name = w.get("path", w.get("name"))
    assert sums.get(name) == w["sha256"], name
assert len(sums) and (exp == "-" or rows), "nothing compared"
print(len(man["tensors"]), "tensors,", len(rows), "in expected.json")
PY
		ok "$1 over https: $(cat "$WORK/sums")"
	else
		fail "$1 over https: $(head -3 "$WORK/diff" "$WORK/sums")"
	fi
	unmount "$lm"
	unmount "$rm_"
}
nested_same keras3_model.keras "$FX/hdf5/valid/expected.json" \
	keras3_model.keras
nested_same mlp.nemo "$FX/nemo/torch_written/expected.json" mlp.nemo
nested_same nested.nemo - -

# nginx's ETag changes with the file's mtime: If-Match fails the read
f=$ROOT/big.safetensors
python3 - "$f" <<'PY'
import json, struct, sys
n = 1 << 20
h = json.dumps({"w": {"dtype": "U8", "shape": [n],
                      "data_offsets": [0, n]}}).encode()
h += b" " * (-len(h) % 8)
with open(sys.argv[1], "wb") as out:
    out.write(struct.pack("<Q", len(h)) + h + bytes(range(256)) * (n // 256))
PY
mnt=$(mount_container "$BASE/big.safetensors" -o remote_prefetch=0)
touch -d '2001-01-01' "$f"
: >"$WORK/access.log"
if cat "$mnt/w" >/dev/null 2>"$WORK/e"; then
	fail "a changed file was served"
else
	grep -q "Stale file handle" "$WORK/e" && ok "a changed file is ESTALE" ||
		fail "changed: $(cat "$WORK/e")"
fi
grep -q ' 412 bytes=' "$WORK/access.log" && ok "nginx answered 412" ||
	fail "no 412: $(cat "$WORK/access.log")"
unmount "$mnt"
finish
