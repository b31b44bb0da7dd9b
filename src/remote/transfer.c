// SPDX-License-Identifier: MIT
/*
 * One range request of a remote source (libcurl): its headers (Range,
 * If-Match, the target's), the answer checked before a body byte lands,
 * the body into the memfd or the blocks' cache files, the retries; and
 * the probe that opens it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "remote/remote_i.h"
#include "core/diag.h"

/*
 * One transfer.  Its body goes to @buf (the probe) or straight into the
 * memfd @fd at @off: the answer's status, Content-Range and ETag are
 * checked when its first body byte comes, before any lands, and the memfd
 * is written whole pages at a time (@carry holds a page's start until it
 * is whole), so a page of the mapping is either absent -- its access
 * faults and waits -- or holds the pinned version's bytes.
 */
struct xfer {
	const struct remote *r;
	CURL *h;
	bool probe;
	uint8_t *buf;
	int fd;
	bool to_files; /* into the blocks' cache files (r->bfd) */
	uint64_t off, want, got;
	bool overflow, checked, discard;
	int reject;    /* the answer is not our range: -ESTALE, -EAGAIN, -EIO */
	int write_err; /* the memfd refused a write */
	uint8_t *carry; /* a page */
	size_t carry_len, page;
	char etag[256];
	bool have_range;
	uint64_t first, last, total; /* Content-Range (total also for 416) */
};

/* is the answer, as its headers say, the range we asked for? 0 or -errno */
static int check_answer(struct xfer *x, long status)
{
	const struct remote *r = x->r;

	if (status == 200) {
		/* the whole object, Range ignored: only good if that is all */
		if (x->off != 0 || (!x->probe && x->want != r->size))
			return -EIO;
	} else if (!x->have_range || x->first != x->off ||
		   (!x->probe && (x->last - x->first + 1 != x->want ||
				  x->total != r->size))) {
		return -EAGAIN;
	}
	if (!x->probe && strcmp(x->etag, r->etag) != 0)
		return -ESTALE;
	return 0;
}

static int sink(struct xfer *x, const uint8_t *p, size_t len)
{
	size_t n;
	int ret;

	if (x->fd < 0) {
		memcpy(x->buf + x->got, p, len);
		x->got += len;
		return 0;
	}
	while (x->to_files && len) {
		/* not mapped until the piece is whole: any order is fine */
		uint64_t pos = x->off + x->got, b = pos / BLOCK_SIZE;
		uint64_t end = (b + 1) * BLOCK_SIZE;

		n = end - pos < len ? (size_t)(end - pos) : len;
		ret = tfs_remote_pwrite_all(x->r->bfd[b], p, n,
					    TFS_CHUNK_HEADER + pos -
						    b * BLOCK_SIZE);
		if (ret)
			return ret;
		x->got += n;
		p += n;
		len -= n;
	}
	while (len) {
		if (x->carry_len || len < x->page) {
			n = x->page - x->carry_len < len
				    ? x->page - x->carry_len
				    : len;
			memcpy(x->carry + x->carry_len, p, n);
			x->carry_len += n;
			x->got += n;
			p += n;
			len -= n;
			if (x->carry_len < x->page)
				continue;
			ret = tfs_remote_put_pages(x->r, x->carry, x->page,
						   x->off + x->got - x->page);
			x->carry_len = 0;
		} else {
			n = len / x->page * x->page;
			ret = tfs_remote_put_pages(x->r, p, n, x->off + x->got);
			x->got += n;
			p += n;
			len -= n;
		}
		if (ret)
			return ret;
	}
	return 0;
}

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct xfer *x = arg;
	size_t len = size * n;
	long status = 0;

	if (!x->checked) {
		x->checked = true;
		curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &status);
		/* an error's body is not the object's: never stored */
		x->discard = status != 200 && status != 206;
		x->reject = x->discard ? 0 : check_answer(x, status);
	}
	if (x->discard)
		return len;
	if (x->reject)
		return 0; /* abort before a byte lands */
	if (len > x->want - x->got) {
		x->overflow = true;
		return 0; /* more than asked: abort, never mix */
	}
	x->write_err = sink(x, (const uint8_t *)p, len);
	return x->write_err ? 0 : len;
}

static void trim(char *s)
{
	size_t n = strlen(s);

	while (n && (s[n - 1] == '\r' || s[n - 1] == '\n' || s[n - 1] == ' '))
		s[--n] = '\0';
}

static size_t on_header(char *p, size_t size, size_t n, void *arg)
{
	struct xfer *x = arg;
	size_t len = size * n;
	char line[512];
	unsigned long long a, b, t;

	if (len >= sizeof(line))
		return len;
	memcpy(line, p, len);
	line[len] = '\0';
	trim(line);
	if (strncmp(line, "HTTP/", 5) == 0) {
		/* a new response (after a redirect): forget the last one's */
		x->etag[0] = '\0';
		x->have_range = false;
	} else if (strncasecmp(line, "etag:", 5) == 0) {
		const char *v = line + 5;

		while (*v == ' ')
			v++;
		if (strlen(v) < sizeof(x->etag))
			memcpy(x->etag, v, strlen(v) + 1);
	} else if (strncasecmp(line, "content-range:", 14) == 0) {
		const char *v = line + 14;

		while (*v == ' ')
			v++;
		if (sscanf(v, "bytes %llu-%llu/%llu", &a, &b, &t) == 3) {
			x->first = a;
			x->last = b;
			x->total = t;
			x->have_range = true;
		} else if (sscanf(v, "bytes */%llu", &t) == 1) {
			x->total = t;
		}
	}
	return len;
}

CURL *tfs_remote_new_handle(const struct remote *r)
{
	CURL *h = curl_easy_init();

	if (!h)
		return NULL;
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)r->cfg.timeout_ms);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)r->cfg.timeout_ms);
	curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 512L << 10);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	if (r->cfg.insecure) {
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	if (r->tgt.userpwd) {
		curl_easy_setopt(h, CURLOPT_USERPWD, r->tgt.userpwd);
		curl_easy_setopt(h, CURLOPT_AWS_SIGV4, r->tgt.sigv4);
	}
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	return h;
}

/*
 * GET [off, off + len) into @buf, or (@buf NULL) into the memfd at @off;
 * @probe: no If-Match, any size.  0 or -errno; @why gets a message for
 * the caller's one log line.
 */
static int get_range(struct remote *r, CURL *h, uint64_t off, uint64_t len,
		     uint8_t *buf, bool probe, bool files, struct xfer *x,
		     char *why, size_t whylen)
{
	struct curl_slist *hdrs = NULL, *nh;
	char range[64], ifm[300], errbuf[CURL_ERROR_SIZE] = "";
	uint8_t carry[64 << 10];
	long status = 0;
	CURLcode cc;
	int ret;

	memset(x, 0, sizeof(*x));
	x->r = r;
	x->h = h;
	x->probe = probe;
	x->buf = buf;
	x->fd = buf ? -1 : r->memfd;
	x->to_files = files;
	x->off = off;
	x->want = len;
	x->carry = carry;
	x->page = (size_t)sysconf(_SC_PAGESIZE);
	if (x->page > sizeof(carry))
		return -EINVAL;
	snprintf(range, sizeof(range), "Range: bytes=%llu-%llu",
		 (unsigned long long)off, (unsigned long long)(off + len - 1));
	hdrs = curl_slist_append(NULL, range);
	if (hdrs && !probe && r->if_match) {
		snprintf(ifm, sizeof(ifm), "If-Match: %s", r->etag);
		nh = curl_slist_append(hdrs, ifm);
		if (!nh) {
			curl_slist_free_all(hdrs);
			hdrs = NULL;
		} else {
			hdrs = nh;
		}
	}
	for (nh = r->tgt.headers; nh && hdrs; nh = nh->next) {
		struct curl_slist *more = curl_slist_append(hdrs, nh->data);

		if (!more) {
			curl_slist_free_all(hdrs);
			hdrs = NULL;
		}
		hdrs = more;
	}
	if (!hdrs)
		return -ENOMEM;
	curl_easy_setopt(h, CURLOPT_URL, r->tgt.url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	cc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
	curl_slist_free_all(hdrs);
	__atomic_fetch_add(&r->stats.requests, 1, __ATOMIC_RELAXED);
	if (x->overflow) {
		/* 200 and the whole object for a Range request */
		if (status == 200 && !x->have_range)
			snprintf(why, whylen,
				 "this server does not support range requests "
				 "(it answered a Range request with the whole "
				 "object, HTTP 200); tensorfs needs them");
		else
			snprintf(why, whylen,
				 "server sent more bytes than asked");
		return -EIO;
	}
	if (x->write_err) {
		snprintf(why, whylen, "memfd: %s", strerror(-x->write_err));
		return x->write_err;
	}
	if (cc == CURLE_OPERATION_TIMEDOUT) {
		snprintf(why, whylen, "timed out");
		return -ETIMEDOUT;
	}
	if (cc != CURLE_OK && status == 0) {
		snprintf(why, whylen, "%s",
			 *errbuf ? errbuf : curl_easy_strerror(cc));
		return cc == CURLE_COULDNT_CONNECT ||
				       cc == CURLE_COULDNT_RESOLVE_HOST
			       ? -EHOSTUNREACH
			       : -EIO;
	}
	switch (status) {
	case 200:
	case 206:
		break;
	case 401:
	case 403:
		snprintf(why, whylen, "HTTP %ld: access denied", status);
		return -EACCES;
	case 404:
	case 410:
		snprintf(why, whylen, "HTTP %ld: not found", status);
		return -ENOENT;
	case 412:
		snprintf(why, whylen, "changed on the server (HTTP 412)");
		return -ESTALE;
	case 416:
		if (probe && x->total == 0)
			return 0; /* an empty object */
		snprintf(why, whylen, "HTTP 416: range not satisfiable");
		return -EIO;
	case 429:
		snprintf(why, whylen, "HTTP 429: too many requests");
		return -EAGAIN;
	default:
		snprintf(why, whylen, "HTTP %ld", status);
		return status >= 500 ? -EAGAIN : -EIO;
	}
	if (cc != CURLE_OK && !x->reject) {
		snprintf(why, whylen, "%s (%llu of %llu bytes)",
			 *errbuf ? errbuf : curl_easy_strerror(cc),
			 (unsigned long long)x->got, (unsigned long long)len);
		return -EAGAIN; /* a cut transfer: worth another try */
	}
	/* an empty body never met on_body's check */
	ret = x->checked ? x->reject : check_answer(x, status);
	if (!ret && status == 200) {
		x->first = 0;
		x->total = x->got;
		x->last = x->got ? x->got - 1 : 0;
	} else if (!ret && (x->last - x->first + 1 != x->got ||
			    (!probe && x->got != len))) {
		ret = -EAGAIN;
	}
	if (ret == -EIO) {
		snprintf(why, whylen, "server ignored the Range header");
	} else if (ret == -ESTALE) {
		snprintf(why, whylen,
			 "changed on the server (ETag %s, pinned "
			 "%s)",
			 x->etag, r->etag);
	} else if (ret) {
		snprintf(why, whylen,
			 "short or mismatched range (%llu of %llu "
			 "bytes)",
			 (unsigned long long)x->got, (unsigned long long)len);
	}
	/* the last page of the object, whole now */
	if (!ret && x->carry_len) {
		memset(carry + x->carry_len, 0, x->page - x->carry_len);
		ret = tfs_remote_put_pages(r, x->carry, x->page,
					   x->off + x->got - x->carry_len);
	}
	return ret;
}

/* get_range with retries on EAGAIN/ETIMEDOUT, backing off, in the time */
int tfs_remote_fetch_range(struct remote *r, CURL *h, uint64_t off,
			   uint64_t len, bool files)
{
	uint64_t start = now_ms(), wait = 100;
	struct xfer x;
	char why[400] = "";
	int ret, i;

	for (i = 0;; i++) {
		ret = get_range(r, h, off, len, NULL, false, files, &x, why,
				sizeof(why));
		if (ret != -EAGAIN && ret != -ETIMEDOUT)
			break;
		if (i == RETRIES ||
		    now_ms() + wait - start >= r->cfg.timeout_ms)
			break;
		usleep((useconds_t)wait * 1000);
		wait *= 2;
	}
	if (ret == -ESTALE) {
		pthread_mutex_lock(&r->lock);
		if (!r->stale_logged)
			tfs_remote_log(r,
				       "%s: %s; remount to see the new version",
				       r->shown, why);
		r->stale_logged = true;
		pthread_mutex_unlock(&r->lock);
	} else if (ret) {
		tfs_remote_log(r, "%s: bytes %llu-%llu: %s", r->shown,
			       (unsigned long long)off,
			       (unsigned long long)(off + len - 1), why);
	}
	/*
	 * A read that cannot be served is never EAGAIN (a reader takes it
	 * for "no data yet": Python's read() returns None, np.fromfile
	 * zeros): a timeout is ETIMEDOUT, a refused connection or a server
	 * still failing after the retries EIO.
	 */
	if (ret == -EAGAIN || ret == -EHOSTUNREACH)
		ret = -EIO;
	return ret;
}

/* the first chunk, the size and the version, in one request */
int tfs_remote_probe(struct remote *r, struct tfs_diag *d, uint8_t **first,
		     uint64_t *got)
{
	uint8_t *buf = malloc(CHUNK);
	CURL *h = tfs_remote_new_handle(r);
	char why[400] = "";
	struct xfer x;
	int ret, i;
	uint64_t wait = 100;

	*first = NULL;
	if (!buf || !h) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0;; i++) {
		ret = get_range(r, h, 0, CHUNK, buf, true, false, &x, why,
				sizeof(why));
		if ((ret != -EAGAIN && ret != -ETIMEDOUT) || i == RETRIES)
			break;
		usleep((useconds_t)wait * 1000);
		wait *= 2;
	}
	/* a cut or failing transfer after the retries: EIO, as for a read */
	if (ret == -EAGAIN)
		ret = -EIO;
	if (ret) {
		tfs_diag_set(d, ret, "%s", why);
		goto out;
	}
	r->size = x.total;
	r->etag = strdup(x.etag);
	if (!r->etag) {
		ret = -ENOMEM;
		goto out;
	}
	/* a weak ETag cannot be matched byte for byte: compared only */
	r->if_match = x.etag[0] == '"';
	*first = buf;
	*got = x.got;
	buf = NULL;
out:
	if (h)
		curl_easy_cleanup(h);
	free(buf);
	return ret;
}
