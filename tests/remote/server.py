#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A loopback HTTP object server for the remote tests (standard library).

Serves the files under ROOT with Range (one range), ETag (size and mtime,
strong) and If-Match (412 on a mismatch), and logs every response to LOG
as one line: "METHOD PATH STATUS FIRST-LAST [cut] START END" (bytes of
the body, "-" for none; "cut" when cut short; when the request came and
when its answer was sent, monotonic seconds).  Faults come from the JSON
file FAULTS, re-read on every request:
  {"delay": seconds, "status": [code, times], "truncate": [bytes, times],
   "after": requests}
"status" answers `times` requests with `code`; "truncate" cuts `times`
bodies after `bytes` bytes (the connection is then closed); "after": both
only once that many requests were answered whole.  The counts start again
whenever the file's text changes.
S3: with TFS_S3_ID and TFS_S3_SECRET in the environment, every request
must carry a valid AWS Signature Version 4 (Authorization header, checked
by sigv4_signature below, itself checked against AWS's published example
by `server.py --selftest`), else 403; paths are /BUCKET/KEY (path style).
S3 listings: ListObjectsV2 (list-type=2), one level with delimiter=/, else
every key under the prefix, in pages of $TFS_S3_PAGE keys (continuation
tokens).
The Hub: GET /api/models/ORG/REPO/revision/REV answers {"sha": sha1(REV)};
/api/models/ORG/REPO/tree/SHA lists the top level (?recursive=True: all),
in pages of $TFS_HUB_PAGE entries (a Link header to the next, &cursor=N);
/ORG/REPO/resolve/SHA/PATH redirects (302) to /cdn/ORG/REPO/PATH, which
serves ROOT/ORG/REPO/PATH; with TFS_HF_TOKEN set both need
"Authorization: Bearer <it>" (401 otherwise), the CDN does not.
Usage: server.py ROOT PORTFILE LOG FAULTS   (binds 127.0.0.1, port 0)
"""
import hashlib
import hmac
import http.server
import json
import os
import re
import sys
import threading
import time



def sigv4_signature(secret, method, path, query, headers, signed, amzdate,
                    scope):
    """AWS SigV4 (S3 flavour: the path is not encoded again)"""
    canon_headers = "".join("%s:%s\n" % (h, " ".join(headers[h].split()))
                            for h in signed)
    creq = "\n".join([method, path, query, canon_headers, ";".join(signed),
                      headers["x-amz-content-sha256"]])
    sts = "\n".join(["AWS4-HMAC-SHA256", amzdate, scope,
                     hashlib.sha256(creq.encode()).hexdigest()])
    date, region, service, _ = scope.split("/")
    k = ("AWS4" + secret).encode()
    for part in (date, region, service, "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    return hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()


if sys.argv[1:] == ["--selftest"]:
    # "GET Object" of AWS's "Signature Calculations ... Examples"
    sig = sigv4_signature(
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "GET", "/test.txt", "",
        {"host": "examplebucket.s3.amazonaws.com", "range": "bytes=0-9",
         "x-amz-content-sha256": hashlib.sha256(b"").hexdigest(),
         "x-amz-date": "20130524T000000Z"},
        ["host", "range", "x-amz-content-sha256", "x-amz-date"],
        "20130524T000000Z", "20130524/us-east-1/s3/aws4_request")
    want = "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
    print("sigv4 selftest", "ok" if sig == want else "FAILED " + sig)
    sys.exit(0 if sig == want else 1)

ROOT, PORTFILE, LOG, FAULTS = sys.argv[1:5]
S3_ID, S3_SECRET = os.environ.get("TFS_S3_ID"), os.environ.get("TFS_S3_SECRET")
HF_TOKEN = os.environ.get("TFS_HF_TOKEN")
PAGE_S3 = int(os.environ.get("TFS_S3_PAGE", "1000"))
PAGE_HUB = int(os.environ.get("TFS_HUB_PAGE", "1000"))
lock = threading.Lock()
used = {"status": 0, "truncate": 0, "seen": 0, "text": ""}


def faults():
    """the faults in force; counts start again when the file changes"""
    try:
        with open(FAULTS) as f:
            text = f.read()
    except OSError:
        text = "{}"
    with lock:
        if text != used["text"]:
            used.update(status=0, truncate=0, seen=0, text=text)
    try:
        return json.loads(text)
    except ValueError:
        return {}


started = threading.local()  # when this thread's request came


def log(line):
    now = time.monotonic()
    with lock:
        with open(LOG, "a") as f:
            f.write("%s %.3f %.3f\n" % (line, getattr(started, "t", now),
                                        now))


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else 40 ms per answer (delayed ACK)

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

    def s3_ok(self):
        auth = self.headers.get("Authorization", "")
        m = re.fullmatch(r"AWS4-HMAC-SHA256 Credential=([^/]+)/([^,]+), *"
                         r"SignedHeaders=([^,]+), *Signature=([0-9a-f]{64})",
                         auth)
        if not m or m.group(1) != S3_ID:
            return False
        signed = m.group(3).split(";")
        hdrs = {k.lower(): v for k, v in self.headers.items()}
        if any(h not in hdrs for h in signed) or "host" not in signed or \
                hdrs.get("x-amz-content-sha256") != "UNSIGNED-PAYLOAD":
            return False
        path, _, query = self.path.partition("?")
        want = sigv4_signature(S3_SECRET, self.command, path, query, hdrs,
                               signed, hdrs.get("x-amz-date", ""),
                               m.group(2))
        return hmac.compare_digest(want, m.group(4))

    def s3_list(self):
        """ListObjectsV2, path style: one level with delimiter=/, else
        every key under the prefix"""
        import urllib.parse
        path, _, query = self.path.partition("?")
        q = urllib.parse.parse_qs(query)
        prefix = q.get("prefix", [""])[0]
        top = os.path.join(ROOT, path.strip("/"))
        keys = []
        base = os.path.join(top, prefix)
        d = base if prefix.endswith("/") or not prefix else \
            os.path.dirname(base)
        if q.get("delimiter") == ["/"]:
            for n in sorted(os.listdir(d)) if os.path.isdir(d) else []:
                if os.path.isfile(os.path.join(d, n)):
                    keys.append(prefix + n)
        else:
            for dp, _, fs in os.walk(top):
                for n in fs:
                    k = os.path.relpath(os.path.join(dp, n), top)
                    if k.startswith(prefix):
                        keys.append(k)
            keys.sort()
        # pages of $TFS_S3_PAGE keys (S3: 1,000), a token that needs
        # escaping in a query
        start = int(q.get("continuation-token", ["p/0="])[0][2:-1])
        more = ""
        if start + PAGE_S3 < len(keys):
            more = ("<IsTruncated>true</IsTruncated><NextContinuationToken>"
                    "p/%d=</NextContinuationToken>" % (start + PAGE_S3))
        keys = keys[start:start + PAGE_S3]
        body = ("<?xml version=\"1.0\"?><ListBucketResult>" + more +
                "".join("<Contents><Key>%s</Key></Contents>" % k
                        for k in keys) + "</ListBucketResult>").encode()
        self.wfile.write(self.answer(200, body=body))

    def hub(self):
        """the Hub's API and redirects; True if answered"""
        path = self.path.split("?")[0]
        m = re.fullmatch(r"/api/models/([^/]+/[^/]+)/revision/(.+)", path)
        r = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([0-9a-f]{40})/(.+)", path)
        t = re.fullmatch(r"/api/models/([^/]+/[^/]+)/tree/([0-9a-f]{40})",
                         path)
        if not m and not r and not t:
            return False
        if HF_TOKEN and self.headers.get("Authorization") != \
                "Bearer " + HF_TOKEN:
            self.wfile.write(self.answer(401))
            return True
        if t:
            # ?recursive=True: every file and directory below, as the Hub
            top = os.path.join(ROOT, t.group(1))
            deep = "recursive=True" in self.path
            names = sorted(os.path.relpath(os.path.join(dp, n), top)
                           for dp, ds, fs in os.walk(top)
                           for n in ds + fs) if deep else \
                sorted(os.listdir(top))
            # pages of $TFS_HUB_PAGE entries, the next one in a Link
            m2 = re.search(r"[?&]cursor=(\d+)", self.path)
            start = int(m2.group(1)) if m2 else 0
            link = []
            if start + PAGE_HUB < len(names):
                link = [("Link", '<http://%s%s%scursor=%d>; rel="next"' % (
                    self.headers["Host"], re.sub(r"[?&]cursor=\d+", "",
                                                 self.path),
                    "&" if deep else "?", start + PAGE_HUB))]
            names = names[start:start + PAGE_HUB]
            body = json.dumps([{"type": "directory" if os.path.isdir(
                os.path.join(top, n)) else "file", "path": n}
                for n in names]).encode()
            self.wfile.write(self.answer(200, body=body, headers=link))
        elif m:
            body = json.dumps({"id": m.group(1), "sha": hashlib.sha1(
                m.group(2).encode()).hexdigest()}).encode()
            self.wfile.write(self.answer(200, body=body, headers=[
                ("Content-Type", "application/json")]))
        else:
            self.wfile.write(self.answer(302, headers=[
                ("Location", "/cdn/%s/%s" % (r.group(1), r.group(3)))]))
        return True

    def do_GET(self):
        started.t = time.monotonic()
        if self.hub():
            return
        if S3_ID and not self.path.startswith("/cdn/") and not self.s3_ok():
            self.wfile.write(self.answer(403))
            return
        if self.path.startswith("/cdn/"):
            self.path = self.path[4:]
        if "list-type=2" in self.path:
            self.s3_list()
            return
        f = faults()
        if f.get("delay"):
            time.sleep(f["delay"])
        st = f.get("status")
        with lock:
            used["seen"] += 1
            early = used["seen"] <= f.get("after", 0)
            hit = st and not early and used["status"] < st[1]
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
            cut = tr and not early and used["truncate"] < tr[1]
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
