#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A loopback HTTP object server for the remote tests (standard library).

Serves the files under ROOT with Range (one range), ETag (size and mtime,
strong) and If-Match (412 on a mismatch), and logs every response to LOG
as one line: "METHOD PATH STATUS FIRST-LAST [cut] TIME" (bytes of the
body, "-" for none; "cut" when cut short; a monotonic time in seconds).  Faults come from the JSON file FAULTS, re-read on every request:
  {"delay": seconds, "status": [code, times], "truncate": [bytes, times]}
"status" answers `times` requests with `code`; "truncate" cuts `times`
bodies after `bytes` bytes (the connection is then closed).  The counts
start again whenever the file's text changes.
Usage: server.py ROOT PORTFILE LOG FAULTS   (binds 127.0.0.1, port 0)
"""
import http.server
import json
import os
import re
import sys
import threading
import time

ROOT, PORTFILE, LOG, FAULTS = sys.argv[1:5]
lock = threading.Lock()
used = {"status": 0, "truncate": 0, "text": ""}


def faults():
    """the faults in force; counts start again when the file changes"""
    try:
        with open(FAULTS) as f:
            text = f.read()
    except OSError:
        text = "{}"
    with lock:
        if text != used["text"]:
            used.update(status=0, truncate=0, text=text)
    try:
        return json.loads(text)
    except ValueError:
        return {}


def log(line):
    with lock:
        with open(LOG, "a") as f:
            f.write("%s %.3f\n" % (line, time.monotonic()))


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, code, first=None, last=None, body=b"", headers=()):
        self.send_response(code)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        rng = "-" if first is None else "%d-%d" % (first, last)
        log("%s %s %d %s" % (self.command, self.path, code, rng))
        return body

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        f = faults()
        if f.get("delay"):
            time.sleep(f["delay"])
        st = f.get("status")
        with lock:
            hit = st and used["status"] < st[1]
            if hit:
                used["status"] += 1
        if hit:
            self.wfile.write(self.answer(st[0]))
            return
        path = os.path.join(ROOT, self.path.split("?")[0].lstrip("/"))
        try:
            s = os.stat(path)
            with open(path, "rb") as fh:
                data = fh.read()
        except OSError:
            self.wfile.write(self.answer(404))
            return
        etag = '"%x-%x"' % (s.st_size, s.st_mtime_ns)
        im = self.headers.get("If-Match")
        if im is not None and im != etag and im != "*":
            self.wfile.write(self.answer(412))
            return
        rng = self.headers.get("Range")
        hdrs = [("ETag", etag), ("Accept-Ranges", "bytes")]
        if rng is None:
            body = data
            code, first, last = 200, 0, len(data) - 1
        else:
            m = re.fullmatch(r"bytes=(\d+)-(\d*)", rng)
            first = int(m.group(1))
            last = int(m.group(2)) if m.group(2) else len(data) - 1
            last = min(last, len(data) - 1)
            if first >= len(data):
                hdrs.append(("Content-Range", "bytes */%d" % len(data)))
                self.wfile.write(self.answer(416, headers=hdrs))
                return
            hdrs.append(("Content-Range",
                         "bytes %d-%d/%d" % (first, last, len(data))))
            body = data[first:last + 1]
            code = 206
        tr = f.get("truncate")
        with lock:
            cut = tr and used["truncate"] < tr[1]
            if cut:
                used["truncate"] += 1
        if self.command == "HEAD":
            self.answer(code, headers=hdrs + [])
            return
        self.send_response(code)
        for k, v in hdrs:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if cut:
            self.wfile.write(body[:tr[0]])
            log("%s %s %d %d-%d cut" % (self.command, self.path, code,
                                        first, first + tr[0] - 1))
            self.close_connection = True
            return
        self.wfile.write(body)
        log("%s %s %d %d-%d" % (self.command, self.path, code, first,
                                first + len(body) - 1))


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
srv.daemon_threads = True
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(PORTFILE + ".tmp", PORTFILE)
srv.serve_forever()
