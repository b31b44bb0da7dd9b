# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Loopback nginx for the remote benchmarks (bench/remote.sh,
# bench/remote_prefetch.sh), sourced.  The caller sets W (a work directory
# holding root/ and tmp/) and calls
#   nginx_start URL 'ACCESS_LOG_LINES' 'SERVER_BLOCKS'
# which writes $W/nginx.conf, starts nginx in the foreground as $NG (the
# caller's cleanup kills it) and waits until URL answers a range request,
# or exits 1.  Also: secs COMMAND... (wall seconds), best (the smallest of
# the numbers on stdin), unmount_wait MNT (unmount, then wait for the
# daemon to end: its cache writer finishes first).

nginx_start() {
	local url=$1
	cat >"$W/nginx.conf" <<CONF
daemon off;
worker_processes 2;
user root;
pid $W/nginx.pid;
error_log $W/nginx.err;
events { worker_connections 256; }
http {
	$2
	sendfile on;
	client_body_temp_path $W/tmp;
	proxy_temp_path $W/tmp;
	fastcgi_temp_path $W/tmp;
	uwsgi_temp_path $W/tmp;
	scgi_temp_path $W/tmp;
	$3
}
CONF
	nginx -p "$W" -c "$W/nginx.conf" &
	# shellcheck disable=SC2034 # the caller kills it
	NG=$!
	for _ in $(seq 50); do
		curl -sf -o /dev/null -r 0-0 "$url" && return 0
		sleep 0.1
	done
	# a port taken, nginx gone: no row would mean anything
	echo "$(basename "$0"): nginx does not answer on $url" >&2
	exit 1
}

secs() { # COMMAND...: wall seconds
	local t0 t1
	t0=$(date +%s.%N)
	"$@" >/dev/null
	t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc -l
}

best() { sort -g | head -n 1; }

# PID is running: it exists and has not exited.  A zombie has exited: an
# init may reap it a second later (this sandbox's does, which the
# whole-model rows once took as 1.1-1.7 s of their time).
running() {
	local st
	st=$(sed -n 's/^.*) \(.\).*/\1/p' "/proc/$1/stat" 2>/dev/null)
	[ -n "$st" ] && [ "$st" != Z ]
}

unmount_wait() { # MNT
	local pid
	pid=$(pgrep -f -- "^([^ ]*/)?tensorfs .* $1\$" | head -n 1)
	fusermount3 -u "$1"
	while [ -n "$pid" ] && running "$pid"; do sleep 0.02; done
}
