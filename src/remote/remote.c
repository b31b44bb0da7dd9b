// SPDX-License-Identifier: MIT
/*
 * Remote sources: see remote.h and docs/remote.md.
 *
 * Threads of one remote object:
 *   - conns workers, each with its own curl handle (a kept-alive
 *     connection), take pieces (runs of chunks) from a queue: synchronous
 *     needs at its front, prefetch at its back, once they fit in
 *     remote_mem (mem_take: one budget for the whole process).  A piece is
 *     looked up in the disk cache block by block (a hit: the cache file
 *     mapped in place), the rest fetched by one range request (If-Match
 *     the pinned version) straight into the blocks' cache files (then
 *     mapped in place) or, without a cache, into the memfd; its chunks
 *     are then marked present;
 *   - one cache writer names each block made whole (checksum, header,
 *     rename) and maps it;
 *   - one fault thread reads the userfaultfd: an access to a chunk not yet
 *     present (a parser reading its header) waits there until the chunk is
 *     fetched, then is woken.
 * Chunk states live under one mutex; waiters sleep on one condition.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "remote/chunk_cache.h"
#include "remote/remote.h"
#include "remote/range_plan.h"
#include "remote/resolve.h"
#include "tensorfs/checked.h"
#include "tensorfs/diag.h"
#include "tensorfs/image.h"
#include "tensorfs/source.h"

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

#define CHUNK (256u << 10)
#define BLOCK_CHUNKS 16 /* a cache file: 4 MiB */
#define BLOCK_SIZE ((uint64_t)BLOCK_CHUNKS * CHUNK)
#define RETRIES 4

/* a cache block's state */
enum {
	BL_NONE,   /* not known to be in the disk cache */
	BL_QUEUED, /* complete in the memfd, queued for the cache writer */
	BL_CACHED, /* in the disk cache (or given up on) */
	BL_MAPPED, /* a disk cache file is mapped in its place */
};

enum {
	CH_MISSING = TFS_CHUNK_MISSING,
	CH_FETCHING = TFS_CHUNK_FETCHING,
	CH_PRESENT = TFS_CHUNK_PRESENT,
	CH_FAILED = TFS_CHUNK_FAILED,
};

struct piece {
	uint64_t first, count; /* chunks */
	struct piece *next;
};

struct remote {
	struct tfs_remote_config cfg;
	struct tfs_remote_target tgt; /* what is fetched: never shown */
	char *shown;		      /* redacted, for messages */
	char *etag;    /* the pinned version ("" when the server gave none) */
	bool if_match; /* send If-Match: a strong ETag was given */
	uint64_t size, nchunks, piece_chunks, page;
	int memfd, poison_fd;
	uint8_t *map;
	size_t maplen;
	int uffd;
	int stop_pipe[2];
	bool fault_running;
	pthread_t fault_thread;
	pthread_t *workers;
	unsigned nworkers, busy;
	/*
	 * Threads that have entered their function: past the sanitizers'
	 * thread start, which allocates (see before_fork)
	 */
	unsigned started;
	bool fault_ready, writer_started;
	pthread_mutex_t lock;
	pthread_cond_t done; /* chunks changed state */
	pthread_cond_t work; /* the queue grew, or stopping */
	uint8_t *state;
	int *err;
	struct piece *head, *tail;
	bool stopping, stale_logged;
	uint64_t timed_out_ms; /* when a chunk last failed by a timeout */
	/* the prefetch past a tensor (prefetch_last): where the last read
	 * ended, and the window reads in file order have opened, in chunks */
	uint64_t seq_next, seq_window;
	bool restart_uffd; /* forked: a new userfaultfd at the next fetch */
	struct tfs_chunk_cache *cache;
	/*
	 * The cache writer: complete blocks are stored off the fetch
	 * workers' path, from the memfd; a block queued keeps its chunks in
	 * the memfd (a drop of them waits in @dropreq) and counts in
	 * remote_mem (mem_take), so the workers wait for a writer behind.
	 */
	uint64_t nblocks;
	uint8_t *bstate, *dropreq;
	/*
	 * Reads between their fetch and the end of their reply, per chunk
	 * (remote_fetch_in to remote_unpin): a drop of a chunk a read is
	 * waiting for or copying waits in @dropreq too.  Unpinned, a reply
	 * of a user-mode-only userfaultfd (no root) would copy a punched
	 * page as zeros, and a read waiting for the rest of its range would
	 * fetch again what it had.
	 */
	uint16_t *pins;
	/*
	 * With a disk cache, fetched bytes go straight into the block's
	 * temporary cache file (@bfd, @btmp: -1 and NULL until a first
	 * piece of the block is fetched), whose pages are then mapped in
	 * place (@fmap, per chunk): no memfd page, no copy, no hole punch;
	 * the cache writer checksums, names and maps the block when whole.
	 */
	int *bfd;
	char **btmp;
	uint8_t *fmap;
	unsigned partial; /* blocks with a file (bfd >= 0) */
	struct piece *wq_head, *wq_tail;
	bool writer_running, writing;
	pthread_t writer;
	pthread_cond_t wwork;
	struct tfs_remote_stats stats;
	struct remote *next; /* every open remote (fork handling) */
};

/* ---- configuration -------------------------------------------------------*/

static struct tfs_remote_config config;
static bool configured;
static bool mounted; /* a failed fetch no longer ends the process */
static pthread_mutex_t all_lock = PTHREAD_MUTEX_INITIALIZER;
static struct remote *all;
static pthread_once_t once = PTHREAD_ONCE_INIT;

void tfs_remote_config_default(struct tfs_remote_config *c)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");

	memset(c, 0, sizeof(*c));
	c->mem = 64u << 20;
	c->timeout_ms = 30000;
	c->conns = 8;
	c->prefetch = 128u << 20;
	c->cache_max = 16ull << 30;
	if (xdg && *xdg) {
		if (asprintf(&c->cache_dir, "%s/tensorfs", xdg) < 0)
			c->cache_dir = NULL;
	} else if (home && *home) {
		if (asprintf(&c->cache_dir, "%s/.cache/tensorfs", home) < 0)
			c->cache_dir = NULL;
	}
}

void tfs_remote_config_free(struct tfs_remote_config *c)
{
	free(c->cache_dir);
	c->cache_dir = NULL;
}

static bool opt_is(const char *opt, size_t len, const char *name,
		   const char **val)
{
	size_t n = strlen(name);

	if (name[n - 1] == '=') {
		if (len < n || strncmp(opt, name, n))
			return false;
		*val = opt + n;
		return true;
	}
	return len == n && strncmp(opt, name, n) == 0;
}

int tfs_remote_option(struct tfs_remote_config *c, const char *opt, size_t len)
{
	const char *v = NULL;
	char buf[256];
	uint64_t n;

	if (opt_is(opt, len, "insecure", &v)) {
		c->insecure = true;
		return 1;
	}
	if (opt_is(opt, len, "no_cache", &v)) {
		free(c->cache_dir);
		c->cache_dir = NULL;
		return 1;
	}
	if (!opt_is(opt, len, "remote_mem=", &v) &&
	    !opt_is(opt, len, "remote_timeout=", &v) &&
	    !opt_is(opt, len, "remote_conns=", &v) &&
	    !opt_is(opt, len, "remote_prefetch=", &v) &&
	    !opt_is(opt, len, "cache_dir=", &v) &&
	    !opt_is(opt, len, "cache_max=", &v))
		return 0;
	if ((size_t)(opt + len - v) >= sizeof(buf) || opt + len == v)
		return -EINVAL;
	memcpy(buf, v, (size_t)(opt + len - v));
	buf[opt + len - v] = '\0';
	if (opt[0] == 'c' && opt[6] == 'd') {
		free(c->cache_dir);
		c->cache_dir = strdup(buf);
		return c->cache_dir ? 1 : -ENOMEM;
	}
	if (opt_is(opt, len, "remote_timeout=", &v) ||
	    opt_is(opt, len, "remote_conns=", &v)) {
		char *end;

		errno = 0;
		n = strtoull(buf, &end, 10);
		if (errno || *end || n == 0 || n > 3600)
			return -EINVAL;
		if (opt[7] == 't')
			c->timeout_ms = (unsigned)n * 1000;
		else if (n <= 64)
			c->conns = (unsigned)n;
		else
			return -EINVAL;
		return 1;
	}
	if (tfs_parse_size(buf, &n))
		return -EINVAL;
	if (opt_is(opt, len, "remote_mem=", &v)) {
		if (n < CHUNK)
			return -EINVAL;
		c->mem = n;
	} else if (opt_is(opt, len, "remote_prefetch=", &v)) {
		c->prefetch = n;
	} else {
		c->cache_max = n;
	}
	return 1;
}

int tfs_remote_configure(const struct tfs_remote_config *c)
{
	tfs_remote_config_free(&config);
	config = *c;
	config.cache_dir = NULL;
	if (c->cache_dir) {
		config.cache_dir = strdup(c->cache_dir);
		if (!config.cache_dir)
			return -ENOMEM;
	}
	configured = true;
	return 0;
}

void tfs_remote_mounted(void)
{
	mounted = true;
}

static void logf_(const struct remote *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void logf_(const struct remote *r, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (r->cfg.log)
		r->cfg.log(line);
}

bool tfs_remote_is_url(const char *path)
{
	return strncmp(path, "http://", 7) == 0 ||
	       strncmp(path, "https://", 8) == 0 ||
	       strncmp(path, "s3://", 5) == 0 || strncmp(path, "hf://", 5) == 0;
}

char *tfs_remote_redact(const char *url)
{
	const char *scheme = strstr(url, "://"), *host, *at, *end;
	char *out;
	size_t n;

	if (!scheme)
		return strdup(url);
	host = scheme + 3;
	end = host + strcspn(host, "?#");
	at = memchr(host, '@', (size_t)(end - host));
	if (at && (size_t)(at - host) < strcspn(host, "/"))
		host = at + 1; /* user:password@ */
	n = (size_t)(scheme + 3 - url) + (size_t)(end - host);
	out = malloc(n + 1);
	if (!out)
		return NULL;
	memcpy(out, url, (size_t)(scheme + 3 - url));
	memcpy(out + (scheme + 3 - url), host, (size_t)(end - host));
	out[n] = '\0';
	return out;
}

/* ---- one range request ---------------------------------------------------*/

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

static int put_pages(const struct remote *r, const uint8_t *p, uint64_t len,
		     uint64_t off);
static int pwrite_all(int fd, const uint8_t *p, uint64_t len, uint64_t off);
static int map_file(struct remote *r, int fd, uint64_t b, uint64_t off,
		    uint64_t len);

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
		ret = pwrite_all(x->r->bfd[b], p, n,
				 TFS_CHUNK_HEADER + pos - b * BLOCK_SIZE);
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
			ret = put_pages(x->r, x->carry, x->page,
					x->off + x->got - x->page);
			x->carry_len = 0;
		} else {
			n = len / x->page * x->page;
			ret = put_pages(x->r, p, n, x->off + x->got);
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

static CURL *new_handle(const struct remote *r)
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
		ret = put_pages(r, x->carry, x->page,
				x->off + x->got - x->carry_len);
	}
	return ret;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* get_range with retries on EAGAIN/ETIMEDOUT, backing off, in the time */
static int fetch_range(struct remote *r, CURL *h, uint64_t off, uint64_t len,
		       bool files)
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
			logf_(r, "%s: %s; remount to see the new version",
			      r->shown, why);
		r->stale_logged = true;
		pthread_mutex_unlock(&r->lock);
	} else if (ret) {
		logf_(r, "%s: bytes %llu-%llu: %s", r->shown,
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

/* ---- chunks --------------------------------------------------------------*/

static uint64_t chunk_off(uint64_t i)
{
	return i * CHUNK;
}

static uint64_t chunk_len(const struct remote *r, uint64_t i)
{
	uint64_t end = chunk_off(i) + CHUNK;

	return (end > r->size ? r->size : end) - chunk_off(i);
}

static void wake_range(struct remote *r, uint64_t off, uint64_t len)
{
	struct uffdio_range rg;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t end = (off + len + page - 1) & ~(page - 1);

	if (r->uffd < 0 || !r->map)
		return;
	off &= ~(page - 1);
	rg.start = (uint64_t)(uintptr_t)(r->map + off);
	rg.len = end - off;
	ioctl(r->uffd, UFFDIO_WAKE, &rg);
}

static int pwrite_all(int fd, const uint8_t *p, uint64_t len, uint64_t off)
{
	ssize_t n;

	while (len) {
		n = pwrite(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		p += n;
		len -= (uint64_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/*
 * Whole pages [@off, @off + @len) of the object into the memfd (the last
 * page of the object may be short: @p then holds a whole page).  With a
 * userfaultfd, UFFDIO_COPY installs each page at once, taking no inode
 * lock (parallel pwrites into one memfd spin on it); a page there already
 * (a retried transfer) and the sources without one take pwrite.
 */
static int put_pages(const struct remote *r, const uint8_t *p, uint64_t len,
		     uint64_t off)
{
	struct uffdio_copy uc;
	int tries = 0;

	while (r->uffd >= 0 && len && tries++ < 100) {
		uc.dst = (uint64_t)(uintptr_t)(r->map + off);
		uc.src = (uint64_t)(uintptr_t)p;
		uc.len = (len + r->page - 1) / r->page * r->page;
		uc.mode = UFFDIO_COPY_MODE_DONTWAKE;
		uc.copy = 0;
		if (ioctl(r->uffd, UFFDIO_COPY, &uc) == 0)
			return 0;
		/* not registered: a cache file is mapped there, same bytes */
		if (uc.copy <= 0 && errno == ENOENT)
			return 0;
		if (uc.copy <= 0 && errno != EAGAIN)
			break;
		if (uc.copy > 0) {
			if ((uint64_t)uc.copy >= len)
				return 0;
			p += uc.copy;
			off += (uint64_t)uc.copy;
			len -= (uint64_t)uc.copy;
		}
	}
	if (off + len > r->size)
		len = r->size - off;
	return pwrite_all(r->memfd, p, len, off);
}

/*
 * remote_mem, one bound for the whole mount (every object of a sharded
 * model): the bytes of range requests being answered plus the blocks
 * waiting for a cache writer.  A request starts only once it fits (or
 * nothing else is in flight); blocks are added as their piece lands.
 */
static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t mem_free = PTHREAD_COND_INITIALIZER;
static uint64_t mem_used;

static void mem_take(const struct remote *r, uint64_t n)
{
	pthread_mutex_lock(&mem_lock);
	while (mem_used && mem_used + n > r->cfg.mem)
		pthread_cond_wait(&mem_free, &mem_lock);
	mem_used += n;
	pthread_mutex_unlock(&mem_lock);
}

static void mem_add(uint64_t n)
{
	pthread_mutex_lock(&mem_lock);
	mem_used += n;
	pthread_mutex_unlock(&mem_lock);
}

static void mem_give(uint64_t n)
{
	pthread_mutex_lock(&mem_lock);
	mem_used -= n;
	pthread_cond_broadcast(&mem_free);
	pthread_mutex_unlock(&mem_lock);
}

static uint64_t block_off(uint64_t b)
{
	return b * BLOCK_CHUNKS * (uint64_t)CHUNK;
}

static uint64_t block_len(const struct remote *r, uint64_t b)
{
	uint64_t end = block_off(b) + BLOCK_CHUNKS * (uint64_t)CHUNK;

	return (end > r->size ? r->size : end) - block_off(b);
}

/* its memory back; a later access faults and is fetched (disk cache) */
static void drop_chunk(struct remote *r, uint64_t c)
{
	r->state[c] = CH_MISSING;
	fallocate(r->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		  (off_t)chunk_off(c), (off_t)chunk_len(r, c));
}

/* chunk @c's bytes are a cache file's pages, not the memfd's */
static bool file_backed(const struct remote *r, uint64_t c)
{
	return r->bstate[c / BLOCK_CHUNKS] == BL_MAPPED ||
	       (r->fmap && r->fmap[c]);
}

/*
 * chunk @c served, its memory asked back: given now, or held in @dropreq
 * while a read pins it or the cache writer still needs it (a block half
 * dropped would never be whole, never cached).  Under lock.
 */
static void drop_when_free(struct remote *r, uint64_t c)
{
	if (r->state[c] != CH_PRESENT || file_backed(r, c))
		return; /* a cache file's pages: the kernel's to reclaim */
	if (r->pins[c] ||
	    (r->writer_running && r->bstate[c / BLOCK_CHUNKS] != BL_CACHED)) {
		r->dropreq[c] = 1;
		return;
	}
	drop_chunk(r, c);
}

/* queue the blocks of chunks [c0, c1] now whole in the memfd; under lock */
static void queue_blocks(struct remote *r, uint64_t c0, uint64_t c1)
{
	uint64_t b, c, last;
	struct piece *q;

	if (!r->writer_running)
		return;
	for (b = c0 / BLOCK_CHUNKS; b <= c1 / BLOCK_CHUNKS; b++) {
		if (r->bstate[b] != BL_NONE)
			continue;
		last = (b + 1) * BLOCK_CHUNKS;
		if (last > r->nchunks)
			last = r->nchunks;
		for (c = b * BLOCK_CHUNKS;
		     c < last && r->state[c] == CH_PRESENT; c++)
			;
		if (c < last)
			continue;
		q = malloc(sizeof(*q));
		if (!q)
			continue; /* best effort, as the cache is */
		q->first = b;
		q->count = 1;
		q->next = NULL;
		if (r->wq_tail)
			r->wq_tail->next = q;
		else
			r->wq_head = q;
		r->wq_tail = q;
		r->bstate[b] = BL_QUEUED;
		mem_add(block_len(r, b));
		pthread_cond_signal(&r->wwork);
	}
}

/*
 * The cache writer: stores each queued block from the memfd (its chunks
 * stay there until it is written), then lets the drops it held back go.
 * Stopping, it writes what is queued first: the next mount finds it.
 */
static void *cache_writer(void *arg)
{
	struct remote *r = arg;
	uint64_t b, c, last, off, len;
	uint8_t infile[BLOCK_CHUNKS];
	struct piece *q;
	bool mapped;
	char *tmp;
	int fd;

	pthread_mutex_lock(&r->lock);
	r->writer_started = true;
	pthread_cond_broadcast(&r->done);
	for (;;) {
		if (!r->wq_head) {
			if (r->stopping)
				break;
			pthread_cond_wait(&r->wwork, &r->lock);
			continue;
		}
		q = r->wq_head;
		r->wq_head = q->next;
		if (!r->wq_head)
			r->wq_tail = NULL;
		b = q->first;
		free(q);
		r->writing = true;
		off = block_off(b);
		len = block_len(r, b);
		last = (b + 1) * BLOCK_CHUNKS;
		if (last > r->nchunks)
			last = r->nchunks;
		/* bfd, btmp and fmap change under the lock (block_files) */
		fd = r->bfd ? r->bfd[b] : -1;
		tmp = r->btmp ? r->btmp[b] : NULL;
		for (c = b * BLOCK_CHUNKS; fd >= 0 && c < last; c++)
			infile[c - b * BLOCK_CHUNKS] = r->fmap[c];
		pthread_mutex_unlock(&r->lock);
		/* best effort: a failure (disk full) leaves it uncached */
		mapped = false;
		if (fd < 0) {
			tfs_chunk_cache_put(r->cache, b, off, r->map + off,
					    (size_t)len);
		} else {
			int ret = 0;

			/* what came into the memfd (the probe's chunk) */
			for (c = b * BLOCK_CHUNKS; !ret && c < last; c++)
				if (!infile[c - b * BLOCK_CHUNKS])
					ret = pwrite_all(
						fd, r->map + chunk_off(c),
						chunk_len(r, c),
						TFS_CHUNK_HEADER +
							chunk_off(c) - off);
			if (!ret)
				ret = tfs_chunk_cache_commit(
					r->cache, b, off, r->map + off,
					(size_t)len, fd, tmp);
			else
				unlink(tmp);
			/* all of it from the file now: no memfd page */
			mapped = !ret && !map_file(r, fd, b, off, len);
			if (mapped)
				fallocate(r->memfd,
					  FALLOC_FL_PUNCH_HOLE |
						  FALLOC_FL_KEEP_SIZE,
					  (off_t)off, (off_t)len);
			close(fd);
			free(tmp);
		}
		pthread_mutex_lock(&r->lock);
		if (fd >= 0) {
			r->bfd[b] = -1;
			r->btmp[b] = NULL;
			r->partial--;
		}
		r->writing = false;
		r->bstate[b] = mapped ? BL_MAPPED : BL_CACHED;
		mem_give(len);
		last = (b + 1) * BLOCK_CHUNKS;
		if (last > r->nchunks)
			last = r->nchunks;
		for (c = b * BLOCK_CHUNKS; c < last; c++)
			if (r->dropreq[c] && (mapped || !r->pins[c])) {
				r->dropreq[c] = 0;
				/* a mapped file's pages: the kernel's */
				if (r->state[c] == CH_PRESENT && !mapped)
					drop_chunk(r, c);
			}
		pthread_cond_broadcast(&r->work);
		pthread_cond_broadcast(&r->done);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

/*
 * Block @b from the disk cache, checked whole, then its file mapped in the
 * place of its range of the memfd mapping (mremap: at once), so a hit is
 * served from the cache file's page cache like a local file, no copy;
 * those pages are the kernel's to reclaim, and a drop leaves them.  The
 * memfd's pages under it are freed.  0, 1 when the bytes were copied into
 * the memfd instead (no mapping to be had: vm.max_map_count), or -ENOENT
 * (a miss).
 */
static int map_cached(struct remote *r, uint64_t b)
{
	uint64_t off = block_off(b), len = block_len(r, b);
	size_t span = (size_t)((len + r->page - 1) / r->page * r->page);
	struct tfs_chunk_map m = {0};
	const uint8_t *data;
	void *at;

	data = tfs_chunk_cache_map(r->cache, b, off, (size_t)len, &m);
	if (!data)
		return -ENOENT;
	at = mremap((void *)(uintptr_t)data, span, span,
		    MREMAP_MAYMOVE | MREMAP_FIXED, r->map + off);
	if (at == MAP_FAILED) {
		/* the mapping is whole pages: its tail past the data reads 0 */
		int ret = put_pages(r, data, len, off) ? -ENOENT : 1;

		tfs_chunk_cache_unmap(&m);
		return ret;
	}
	/* what is left of the file's mapping: its header page */
	munmap(m.map, TFS_CHUNK_HEADER);
	fallocate(r->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		  (off_t)off, (off_t)len);
	return 0;
}

/*
 * Block @b is not cached this mount (no file to be had): its chunks leave
 * memory as any others once served, the ones held back for it now.  Under
 * lock.
 */
static void give_up(struct remote *r, uint64_t b)
{
	uint64_t c, last = (b + 1) * BLOCK_CHUNKS;

	r->bstate[b] = BL_CACHED;
	for (c = b * BLOCK_CHUNKS; c < last && c < r->nchunks; c++)
		if (r->dropreq[c]) {
			r->dropreq[c] = 0;
			drop_when_free(r, c); /* a pinned one waits again */
		}
}

/*
 * Block @b's cache file, created if need be: true when it is there (its
 * chunks are then fetched into it), false to fetch into the memfd (no
 * cache, the block written already or given up).  A block that cannot
 * have one -- TFS_REMOTE_MAX_PARTIAL blocks partly fetched already (a
 * reader jumping about a large object), or an error (no space, no
 * descriptor) -- is given up: were its chunks in the memfd kept for a
 * block never whole, memory would grow until the mount ends.
 */
static bool block_file(struct remote *r, uint64_t b)
{
	bool ok = r->bfd && r->writer_running;
	int fd;

	pthread_mutex_lock(&r->lock);
	if (ok && r->bstate[b] != BL_NONE) {
		ok = false;
	} else if (ok && r->bfd[b] < 0) {
		fd = r->partial < TFS_REMOTE_MAX_PARTIAL
			     ? tfs_chunk_cache_create(r->cache, b,
						      block_len(r, b),
						      &r->btmp[b])
			     : -EMFILE;
		ok = fd >= 0;
		r->bfd[b] = fd;
		if (ok)
			r->partial++;
		else
			give_up(r, b);
	}
	pthread_mutex_unlock(&r->lock);
	return ok;
}

/* map @len bytes of block @b's cache file @fd from object offset @off */
static int map_file(struct remote *r, int fd, uint64_t b, uint64_t off,
		    uint64_t len)
{
	size_t span = (size_t)((len + r->page - 1) / r->page * r->page);

	if (mmap(r->map + off, span, PROT_READ, MAP_SHARED | MAP_FIXED, fd,
		 (off_t)(TFS_CHUNK_HEADER + off - block_off(b))) == MAP_FAILED)
		return -errno;
	return 0;
}

/*
 * [@off, @off + @len) of block @b's file @fd copied into the memfd: where
 * no mapping can be had (vm.max_map_count reached: a mapping per block).
 */
static int copy_file_in(struct remote *r, int fd, uint64_t b, uint64_t off,
			uint64_t len)
{
	size_t step = 1u << 20, n;
	uint8_t *buf = malloc(step);
	int ret = buf ? 0 : -ENOMEM;

	for (; !ret && len; off += n, len -= n) {
		n = len < step ? (size_t)len : step;
		if (pread(fd, buf, n,
			  (off_t)(TFS_CHUNK_HEADER + off - block_off(b))) !=
		    (ssize_t)n) {
			ret = -EIO;
			break;
		}
		/* the object's last page: put_pages takes it whole */
		memset(buf + n, 0, (step - n) % r->page);
		ret = put_pages(r, buf, n, off);
	}
	free(buf);
	return ret;
}

/* chunks [@c0, @c0 + @n) fetched into their blocks' files: mapped */
static int map_fetched(struct remote *r, uint64_t c0, uint64_t n)
{
	uint64_t c = c0, e, b, k, len;
	int ret;

	while (c < c0 + n) {
		b = c / BLOCK_CHUNKS;
		e = (b + 1) * BLOCK_CHUNKS < c0 + n ? (b + 1) * BLOCK_CHUNKS
						    : c0 + n;
		len = chunk_off(e - 1) + chunk_len(r, e - 1) - chunk_off(c);
		if (map_file(r, r->bfd[b], b, chunk_off(c), len)) {
			ret = copy_file_in(r, r->bfd[b], b, chunk_off(c), len);
			if (ret)
				return ret;
			c = e;
			continue;
		}
		pthread_mutex_lock(&r->lock);
		for (k = c; k < e; k++)
			r->fmap[k] = 1;
		pthread_mutex_unlock(&r->lock);
		c = e;
	}
	return 0;
}

/*
 * Fetch chunks [@c0, @c1) (none present): each block's into its cache file
 * where it has one, the rest into the memfd, in as few requests as that
 * allows.  A request is cut where neighbouring blocks differ, so a block
 * still filling always gets its bytes in its file, whatever its neighbour
 * (a block cached and dropped from memory, fetched again).
 */
static int fetch_run(struct remote *r, CURL *h, uint64_t c0, uint64_t c1)
{
	uint64_t c = c0, e, len;
	bool files;
	int ret = 0;

	while (!ret && c < c1) {
		files = block_file(r, c / BLOCK_CHUNKS);
		e = (c / BLOCK_CHUNKS + 1) * BLOCK_CHUNKS;
		while (e < c1 && block_file(r, e / BLOCK_CHUNKS) == files)
			e += BLOCK_CHUNKS;
		if (e > c1)
			e = c1;
		len = chunk_off(e - 1) + chunk_len(r, e - 1) - chunk_off(c);
		ret = fetch_range(r, h, chunk_off(c), len, files);
		if (!ret && files)
			ret = map_fetched(r, c, e - c);
		if (!ret) {
			pthread_mutex_lock(&r->lock);
			r->stats.bytes_fetched += len;
			pthread_mutex_unlock(&r->lock);
		}
		c = e;
	}
	return ret;
}

/*
 * One piece: the disk cache block by block (copied into the memfd), the
 * network for the rest (straight into the memfd); then its whole blocks
 * go to the cache writer.
 */
static int run_piece(struct remote *r, CURL *h, const struct piece *p)
{
	uint64_t i, j, k, end = p->first + p->count, hit = 0, hit_bytes = 0;
	bool have[TFS_PLAN_MAX_PIECE] = {false};
	int ret = 0, mapped;

	for (i = p->first; r->cache && i < end; i = j) {
		uint64_t b = i / BLOCK_CHUNKS, c0 = b * BLOCK_CHUNKS, c;

		j = (b + 1) * BLOCK_CHUNKS < end ? (b + 1) * BLOCK_CHUNKS : end;
		mapped = map_cached(r, b);
		if (mapped < 0)
			continue;
		for (k = i; k < j; k++)
			have[k - p->first] = true;
		hit += j - i;
		hit_bytes +=
			chunk_off(j - 1) + chunk_len(r, j - 1) - chunk_off(i);
		pthread_mutex_lock(&r->lock);
		r->bstate[b] = mapped ? BL_CACHED : BL_MAPPED;
		/* the block's other chunks are there too now */
		for (c = c0; c < c0 + BLOCK_CHUNKS && c < r->nchunks; c++)
			if ((c < i || c >= j) && (r->state[c] == CH_MISSING ||
						  r->state[c] == CH_FAILED))
				r->state[c] = CH_PRESENT;
		pthread_mutex_unlock(&r->lock);
	}
	for (i = 0; !ret && i < p->count; i = j) {
		for (j = i; j < p->count && !have[j]; j++)
			;
		if (j == i) {
			j++;
			continue;
		}
		ret = fetch_run(r, h, p->first + i, p->first + j);
	}
	pthread_mutex_lock(&r->lock);
	r->stats.cache_hits += hit;
	r->stats.cache_bytes += hit_bytes;
	for (i = 0; i < p->count; i++) {
		r->state[p->first + i] = ret ? CH_FAILED : CH_PRESENT;
		r->err[p->first + i] = ret;
	}
	if (ret == -ETIMEDOUT)
		r->timed_out_ms = now_ms();
	if (!ret)
		queue_blocks(r, p->first, end - 1);
	pthread_cond_broadcast(&r->done);
	pthread_mutex_unlock(&r->lock);
	wake_range(r, chunk_off(p->first), p->count * (uint64_t)CHUNK);
	return ret;
}

static void *worker(void *arg)
{
	struct remote *r = arg;
	CURL *h = new_handle(r);
	struct piece *p;

	pthread_mutex_lock(&r->lock);
	r->started++;
	pthread_cond_broadcast(&r->done);
	while (!r->stopping) {
		if (!r->head) {
			pthread_cond_wait(&r->work, &r->lock);
			continue;
		}
		p = r->head;
		r->head = p->next;
		if (!r->head)
			r->tail = NULL;
		r->busy++;
		pthread_mutex_unlock(&r->lock);
		if (h) {
			uint64_t n = chunk_off(p->first + p->count - 1) +
				     chunk_len(r, p->first + p->count - 1) -
				     chunk_off(p->first);

			mem_take(r, n);
			run_piece(r, h, p);
			mem_give(n);
		} else {
			uint64_t i;

			pthread_mutex_lock(&r->lock);
			for (i = 0; i < p->count; i++) {
				r->state[p->first + i] = CH_FAILED;
				r->err[p->first + i] = -ENOMEM;
			}
			pthread_cond_broadcast(&r->done);
			pthread_mutex_unlock(&r->lock);
		}
		free(p);
		pthread_mutex_lock(&r->lock);
		r->busy--;
		pthread_cond_broadcast(&r->done);
	}
	pthread_mutex_unlock(&r->lock);
	if (h)
		curl_easy_cleanup(h);
	return NULL;
}

static int start_workers(struct remote *r);
static int start_uffd(struct remote *r);

/* the smallest piece a range is split into to share it out: 1 MiB */
#define SHARE_MIN_CHUNKS 4

/*
 * queue the chunks of [c0, c1] not present or on their way; under lock.
 * The range is split over the connections (pieces of at least 1 MiB, at
 * most one request's worth): an 8 MiB tensor read alone arrives over eight
 * connections, not one, where a server limits each connection's rate.
 */
static int schedule(struct remote *r, uint64_t c0, uint64_t c1, bool front)
{
	struct tfs_plan_piece pieces[64];
	struct piece *head = NULL, *tail = NULL, *p;
	uint64_t from = c0, share = (c1 - c0) / r->cfg.conns + 1;
	size_t n, i;
	int ret;

	if (share < SHARE_MIN_CHUNKS)
		share = SHARE_MIN_CHUNKS;
	if (share > r->piece_chunks)
		share = r->piece_chunks;

	/* workers start with the first need: a mount of 100 shards reads
	 * most of them only at open */
	if (!r->nworkers) {
		ret = start_workers(r);
		if (ret)
			return ret;
	}

	while (from <= c1) {
		n = tfs_plan_pieces(r->state, from, c1, share, pieces, 64,
				    &from);
		for (i = 0; i < n; i++) {
			uint64_t k;

			p = malloc(sizeof(*p));
			if (!p)
				return -ENOMEM;
			p->first = pieces[i].first;
			p->count = pieces[i].count;
			p->next = NULL;
			for (k = 0; k < p->count; k++) {
				r->state[p->first + k] = CH_FETCHING;
				r->err[p->first + k] = 0;
			}
			if (tail)
				tail->next = p;
			else
				head = p;
			tail = p;
		}
		if (!n)
			break;
	}
	if (!head)
		return 0;
	if (front) {
		tail->next = r->head;
		r->head = head;
		if (!r->tail)
			r->tail = tail;
	} else {
		if (r->tail)
			r->tail->next = head;
		else
			r->head = head;
		r->tail = tail;
	}
	pthread_cond_broadcast(&r->work);
	return 0;
}

/*
 * -ETIMEDOUT when a chunk of [c0, c1] has just cost a reader a whole
 * remote_timeout: still on its way after a reader gave up on it, or failed
 * by a timeout less than a second ago.  The kernel retries a failed
 * readahead at once with a read of its first page: that retry must not
 * wait a second remote_timeout.  Under lock.
 */
static int timed_out(const struct remote *r, uint64_t c0, uint64_t c1)
{
	uint64_t c;

	for (c = c0; c <= c1; c++) {
		if (r->err[c] != -ETIMEDOUT)
			continue;
		if (r->state[c] == CH_FETCHING ||
		    (r->state[c] == CH_FAILED &&
		     now_ms() - r->timed_out_ms < 1000))
			return -ETIMEDOUT;
	}
	return 0;
}

/* how far a read may land from the last one's end and still follow it */
#define SEQ_SLACK (16 * CHUNK)

/*
 * How far to prefetch after chunk @c1 for a read of [@off, +@len) inside a
 * tensor whose stored bytes are [@ext_off, @ext_end) (@ext_end UINT64_MAX:
 * not known, the whole remote_prefetch window); under lock.  A read of one
 * tensor fetches that tensor; the window past it opens (and doubles, up to
 * remote_prefetch) only while reads move on in file order, and closes on a
 * jump, the way object-store file systems grow theirs.
 */
static uint64_t prefetch_last(struct remote *r, uint64_t off, uint64_t len,
			      uint64_t c1, uint64_t ext_off, uint64_t ext_end)
{
	uint64_t n = r->cfg.prefetch / CHUNK, last, ext_last;
	/*
	 * one reader's reads come out of order: the kernel's readahead
	 * requests (1 MiB each) are served by several threads at once
	 */
	bool sequential = off <= r->seq_next + SEQ_SLACK &&
			  off + SEQ_SLACK >= r->seq_next;

	if (!sequential || off + len > r->seq_next)
		r->seq_next = off + len;
	if (ext_end == UINT64_MAX)
		return c1 + n;
	if (!sequential)
		r->seq_window = 0;
	else if (off == ext_off && off) /* moved on to the next tensor */
		r->seq_window =
			r->seq_window ? r->seq_window * 2 : r->piece_chunks;
	if (r->seq_window > n)
		r->seq_window = n;
	ext_last = ext_end ? (ext_end - 1) / CHUNK : 0;
	last = ext_last > c1 + r->seq_window ? ext_last : c1 + r->seq_window;
	return last > c1 + n ? c1 + n : last;
}

/* a read's pins of chunks [c0, c1] let go, and the drops they held back */
static void unpin_locked(struct remote *r, uint64_t c0, uint64_t c1)
{
	uint64_t c;

	for (c = c0; c <= c1; c++)
		if (r->pins[c] && !--r->pins[c] && r->dropreq[c]) {
			r->dropreq[c] = 0;
			drop_when_free(r, c);
		}
}

/*
 * make [off, off + len) present; @ahead: then prefetch behind it, aiming
 * at a tensor [@ext_off, @ext_end) (@ext_end UINT64_MAX: none known);
 * @pin: its chunks stay until unpin_locked() (0 returned only)
 */
static int fetch(struct remote *r, uint64_t off, uint64_t len, bool ahead,
		 uint64_t ext_off, uint64_t ext_end, bool pin)
{
	uint64_t c0, c1, c, deadline;
	struct timespec ts;
	int ret = 0;

	if (!tfs_range_ok(off, len, r->size))
		return -EIO;
	if (!len)
		return 0;
	c0 = off / CHUNK;
	c1 = (off + len - 1) / CHUNK;
	clock_gettime(CLOCK_REALTIME, &ts);
	deadline = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000 +
		   r->cfg.timeout_ms;
	pthread_mutex_lock(&r->lock);
	if (r->restart_uffd) {
		r->restart_uffd = false;
		if (start_uffd(r)) {
			/* nothing would serve a fault: fetch it all */
			logf_(r,
			      "%s: userfaultfd unavailable: fetching it "
			      "whole",
			      r->shown);
			schedule(r, 0, r->nchunks - 1, false);
		}
	}
	/* from now: a drop of what it waits for would be fetched again */
	for (c = c0; pin && c <= c1; c++)
		if (r->pins[c] < UINT16_MAX)
			r->pins[c]++;
	for (c = c0; c <= c1 && r->state[c] == CH_PRESENT; c++)
		;
	if (c > c1)
		goto prefetch; /* the common case: all there */
	ret = timed_out(r, c, c1);
	if (!ret)
		ret = schedule(r, c0, c1, true);
	while (!ret) {
		for (c = c0; c <= c1 && r->state[c] == CH_PRESENT; c++)
			;
		if (c > c1)
			break;
		if (r->state[c] == CH_FAILED) {
			ret = r->err[c];
			break;
		}
		/*
		 * A reader already waited a whole remote_timeout for this
		 * chunk, still on its way: the kernel's retry of a failed
		 * readahead must not wait a second one.
		 */
		if (r->state[c] == CH_FETCHING && r->err[c] == -ETIMEDOUT) {
			ret = -ETIMEDOUT;
			break;
		}
		if (r->state[c] == CH_MISSING) {
			/* dropped (remote_drop) after it came: again */
			ret = schedule(r, c, c1, true);
			continue;
		}
		if (r->stopping) {
			ret = -EIO;
			break;
		}
		ts.tv_sec = (time_t)(deadline / 1000);
		ts.tv_nsec = (long)(deadline % 1000) * 1000000;
		if (pthread_cond_timedwait(&r->done, &r->lock, &ts) ==
		    ETIMEDOUT) {
			logf_(r, "%s: bytes %llu-%llu: no answer in %u ms",
			      r->shown, (unsigned long long)off,
			      (unsigned long long)(off + len - 1),
			      r->cfg.timeout_ms);
			for (; c <= c1; c++)
				if (r->state[c] == CH_FETCHING)
					r->err[c] = -ETIMEDOUT;
			ret = -ETIMEDOUT;
		}
	}
prefetch:
	if (!ret && ahead && r->cfg.prefetch && c1 + 1 < r->nchunks) {
		uint64_t last =
			prefetch_last(r, off, len, c1, ext_off, ext_end);

		/*
		 * The window's end moves by whole pieces: a reader going
		 * 1 MiB at a time then adds full-size requests, not 1 MiB
		 * ones at the window's tail.
		 */
		if (ext_end == UINT64_MAX &&
		    last / r->piece_chunks * r->piece_chunks > c1 + 1)
			last = last / r->piece_chunks * r->piece_chunks - 1;
		if (last >= r->nchunks)
			last = r->nchunks - 1;
		if (last > c1)
			schedule(r, c1 + 1, last, false);
	}
	if (ret && pin)
		unpin_locked(r, c0, c1);
	pthread_mutex_unlock(&r->lock);
	return ret;
}

/* ---- page faults ---------------------------------------------------------*/

static void poison(struct remote *r, uint64_t page_off)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);

	/* past the end of an empty file: the access gets SIGBUS */
	mmap(r->map + page_off, (size_t)page, PROT_READ, MAP_SHARED | MAP_FIXED,
	     r->poison_fd, 0);
}

static void *fault_loop(void *arg)
{
	struct remote *r = arg;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	struct pollfd pf[2] = {{.fd = r->uffd, .events = POLLIN},
			       {.fd = r->stop_pipe[0], .events = POLLIN}};
	struct uffd_msg msg;
	uint64_t off;
	ssize_t n;
	int ret;

	pthread_mutex_lock(&r->lock);
	r->fault_ready = true;
	pthread_cond_broadcast(&r->done);
	pthread_mutex_unlock(&r->lock);
	for (;;) {
		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			break;
		if (pf[1].revents)
			break;
		n = read(r->uffd, &msg, sizeof(msg));
		if (n != sizeof(msg) || msg.event != UFFD_EVENT_PAGEFAULT)
			continue;
		off = (msg.arg.pagefault.address -
		       (uint64_t)(uintptr_t)r->map) &
		      ~(page - 1);
		ret = off < r->size
			      ? fetch(r, off, 1, false, 0, UINT64_MAX, false)
			      : -EIO;
		if (ret && !mounted) {
			/* loading the container: the command cannot go on */
			fprintf(stderr, "tensorfs: %s: cannot fetch: %s\n",
				r->shown, strerror(-ret));
			_exit(4);
		}
		if (ret)
			poison(r, off);
		wake_range(r, off, page);
	}
	return NULL;
}

/*
 * Register the mapping with the userfaultfd, but for the blocks a cache
 * file is mapped on (a file mapping cannot be registered; its pages are
 * all there).  0 or -1 with errno.
 */
static int register_memfd(struct remote *r)
{
	struct uffdio_register reg;
	uint64_t c, e, end;

	for (c = 0; c < r->nchunks; c = e) {
		if (file_backed(r, c)) {
			e = c + 1;
			continue;
		}
		for (e = c; e < r->nchunks && !file_backed(r, e); e++)
			;
		end = e >= r->nchunks ? r->maplen : chunk_off(e);
		memset(&reg, 0, sizeof(reg));
		reg.range.start = (uint64_t)(uintptr_t)(r->map + chunk_off(c));
		reg.range.len = end - chunk_off(c);
		reg.mode = UFFDIO_REGISTER_MODE_MISSING;
		if (ioctl(r->uffd, UFFDIO_REGISTER, &reg))
			return -1;
	}
	return 0;
}

static int start_uffd(struct remote *r)
{
	struct uffdio_api api = {.api = UFFD_API};

	r->uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (r->uffd < 0 && errno == EPERM)
		/* unprivileged: our own faults only (docs/remote.md) */
		r->uffd = (int)syscall(SYS_userfaultfd,
				       O_CLOEXEC | O_NONBLOCK |
					       UFFD_USER_MODE_ONLY);
	if (r->uffd < 0)
		return -errno;
	if (ioctl(r->uffd, UFFDIO_API, &api) || register_memfd(r) ||
	    pipe2(r->stop_pipe, O_CLOEXEC)) {
		int e = -errno;

		close(r->uffd);
		r->uffd = -1;
		return e;
	}
	r->fault_ready = false;
	if (pthread_create(&r->fault_thread, NULL, fault_loop, r)) {
		close(r->stop_pipe[0]);
		close(r->stop_pipe[1]);
		close(r->uffd);
		r->uffd = -1;
		return -EAGAIN;
	}
	r->fault_running = true;
	return 0;
}

static int start_workers(struct remote *r)
{
	unsigned i;

	free(r->workers);
	r->workers = calloc(r->cfg.conns, sizeof(*r->workers));
	if (!r->workers)
		return -ENOMEM;
	for (i = 0; i < r->cfg.conns; i++) {
		if (pthread_create(&r->workers[i], NULL, worker, r))
			break;
		r->nworkers++;
	}
	if (r->cache && !r->writer_running &&
	    pthread_create(&r->writer, NULL, cache_writer, r) == 0)
		r->writer_running = true;
	return r->nworkers ? 0 : -EAGAIN;
}

static void stop_threads(struct remote *r)
{
	unsigned i;
	char c = 1;

	pthread_mutex_lock(&r->lock);
	r->stopping = true;
	pthread_cond_broadcast(&r->work);
	pthread_cond_broadcast(&r->done);
	pthread_cond_broadcast(&r->wwork);
	pthread_mutex_unlock(&r->lock);
	for (i = 0; i < r->nworkers; i++)
		pthread_join(r->workers[i], NULL);
	if (r->writer_running) {
		pthread_join(r->writer, NULL);
		r->writer_running = false;
	}
	r->writer_started = false;
	free(r->workers);
	r->workers = NULL;
	r->nworkers = 0;
	r->started = 0;
	if (r->fault_running) {
		if (write(r->stop_pipe[1], &c, 1) != 1)
			c = 0;
		pthread_join(r->fault_thread, NULL);
		close(r->stop_pipe[0]);
		close(r->stop_pipe[1]);
		r->fault_running = false;
	}
}

/* ---- fork (fuse_daemonize): threads and the userfaultfd do not follow ----*/

/*
 * Before a fork, every thread of ours is idle in a wait: no transfer (a
 * child cannot resume one), and no thread still starting.  A thread just
 * created runs the sanitizers' thread start, which allocates: forked then,
 * the child inherited ASan's allocator locked, and its first thread
 * (fuse_daemonize's FUSE worker) waited forever -- the fault thread,
 * created at open, was still starting when a small object's mount forked.
 */
static bool busy_at_fork(const struct remote *r)
{
	return r->head || r->busy || r->wq_head || r->writing ||
	       r->started < r->nworkers ||
	       (r->writer_running && !r->writer_started) ||
	       (r->fault_running && !r->fault_ready);
}

static void before_fork(void)
{
	struct remote *r;

	pthread_mutex_lock(&all_lock);
	for (r = all; r; r = r->next) {
		pthread_mutex_lock(&r->lock);
		while (busy_at_fork(r))
			pthread_cond_wait(&r->done, &r->lock);
	}
}

static void after_fork_parent(void)
{
	struct remote *r;

	for (r = all; r; r = r->next)
		pthread_mutex_unlock(&r->lock);
	pthread_mutex_unlock(&all_lock);
}

static void after_fork_child(void)
{
	struct remote *r;

	for (r = all; r; r = r->next) {
		/*
		 * Fresh: waiters that were in the parent's conditions are
		 * gone, and a condition would wait for them to leave.
		 */
		pthread_mutex_init(&r->lock, NULL);
		pthread_cond_init(&r->done, NULL);
		pthread_cond_init(&r->work, NULL);
		pthread_cond_init(&r->wwork, NULL);
		r->writer_running = false;
		r->writer_started = false;
		r->started = 0;
		r->fault_ready = false;
		/*
		 * The parent's threads are gone (their memory leaks, once),
		 * and so is the registration.  No thread is started here
		 * (a fork's child may only do async-signal-safe things;
		 * sanitizers' allocators deadlock otherwise): the next
		 * fetch(), which every read path calls before it touches
		 * the mapping, starts them again.
		 */
		r->workers = NULL;
		r->nworkers = 0;
		if (r->fault_running) {
			close(r->stop_pipe[0]);
			close(r->stop_pipe[1]);
			close(r->uffd);
			r->fault_running = false;
		}
		r->uffd = -1;
		r->restart_uffd = r->map != NULL;
	}
	mounted = true;
	pthread_mutex_init(&all_lock, NULL);
	/* every transfer and cache write had finished (before_fork) */
	pthread_mutex_init(&mem_lock, NULL);
	pthread_cond_init(&mem_free, NULL);
}

static void init_once(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
	if (!configured)
		tfs_remote_config_default(&config);
	configured = true;
}

/* ---- the source ----------------------------------------------------------*/

static int remote_fetch(void *impl, uint64_t off, uint64_t len)
{
	int ret = fetch(impl, off, len, true, 0, UINT64_MAX, false);

	/* never EAGAIN to a reader of a regular file (no worker started) */
	return ret == -EAGAIN ? -EIO : ret;
}

static int remote_fetch_in(void *impl, uint64_t off, uint64_t len,
			   uint64_t ext_off, uint64_t ext_len)
{
	uint64_t end;
	int ret;

	if (!tfs_add_u64(ext_off, ext_len, &end))
		end = UINT64_MAX;
	ret = fetch(impl, off, len, true, ext_off, end, true);
	return ret == -EAGAIN ? -EIO : ret;
}

/* the end of a read that remote_fetch_in() made present and pinned */
static void remote_unpin(void *impl, uint64_t off, uint64_t len)
{
	struct remote *r = impl;

	if (!len || !tfs_range_ok(off, len, r->size))
		return;
	pthread_mutex_lock(&r->lock);
	unpin_locked(r, off / CHUNK, (off + len - 1) / CHUNK);
	pthread_mutex_unlock(&r->lock);
}

static void remote_drop(void *impl, uint64_t off, uint64_t len)
{
	struct remote *r = impl;
	uint64_t c0, c1, c;

	if (!r->map || !tfs_range_ok(off, len, r->size) || !len)
		return;
	c0 = (off + CHUNK - 1) / CHUNK;
	c1 = (off + len) / CHUNK; /* exclusive, whole chunks only */
	if (off + len == r->size)
		c1 = r->nchunks;
	pthread_mutex_lock(&r->lock);
	for (c = c0; c < c1; c++)
		drop_when_free(r, c);
	pthread_mutex_unlock(&r->lock);
}

static void remote_free(struct remote *r)
{
	struct remote **pp;
	struct piece *p;
	uint64_t b;

	pthread_mutex_lock(&all_lock);
	for (pp = &all; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			break;
		}
	pthread_mutex_unlock(&all_lock);
	stop_threads(r);
	while ((p = r->head)) {
		r->head = p->next;
		free(p);
	}
	while ((p = r->wq_head)) {
		r->wq_head = p->next;
		free(p);
	}
	if (r->uffd >= 0)
		close(r->uffd);
	if (r->map)
		munmap(r->map, r->maplen);
	if (r->memfd >= 0)
		close(r->memfd);
	if (r->poison_fd >= 0)
		close(r->poison_fd);
	tfs_chunk_cache_close(r->cache);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->done);
	pthread_cond_destroy(&r->work);
	pthread_cond_destroy(&r->wwork);
	tfs_remote_config_free(&r->cfg);
	for (b = 0; r->bfd && r->btmp && b < r->nblocks; b++)
		if (r->bfd[b] >= 0)
			tfs_chunk_cache_discard(r->bfd[b], r->btmp[b]);
	free(r->bfd);
	free(r->btmp);
	free(r->fmap);
	free(r->bstate);
	free(r->dropreq);
	free(r->pins);
	free(r->state);
	free(r->err);
	tfs_remote_target_free(&r->tgt);
	free(r->shown);
	free(r->etag);
	free(r);
}

static void remote_close(void *impl)
{
	remote_free(impl);
}

static const struct tfs_source_ops remote_ops = {
	.fetch = remote_fetch,
	.drop = remote_drop,
	.fetch_in = remote_fetch_in,
	.unpin = remote_unpin,
	.close = remote_close,
};

int tfs_remote_find_index(const char *url, char **dir, char **index,
			  struct tfs_diag *d)
{
	pthread_once(&once, init_once);
	tfs_diag_clear(d);
	return tfs_remote_find_index_with(
		url, config.insecure, (long)config.timeout_ms, dir, index, d);
}

int tfs_remote_list(const char *dir, char ***names, size_t *n,
		    struct tfs_diag *d)
{
	pthread_once(&once, init_once);
	tfs_diag_clear(d);
	return tfs_remote_list_with(dir, config.insecure,
				    (long)config.timeout_ms, names, n, d);
}

int tfs_remote_stats(const struct tfs_source *s, struct tfs_remote_stats *st)
{
	struct remote *r = s->impl;
	uint64_t c;

	if (s->ops != &remote_ops)
		return -EINVAL;
	pthread_mutex_lock(&r->lock);
	*st = r->stats;
	st->partial = r->partial;
	st->held = 0;
	for (c = 0; c < r->nchunks; c++)
		st->held += r->dropreq[c];
	pthread_mutex_unlock(&r->lock);
	return 0;
}

/* the first chunk, the size and the version, in one request */
static int probe(struct remote *r, struct tfs_diag *d, uint8_t **first,
		 uint64_t *got)
{
	uint8_t *buf = malloc(CHUNK);
	CURL *h = new_handle(r);
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

int tfs_remote_open(struct tfs_source *s, const char *url, struct tfs_diag *d)
{
	struct remote *r;
	uint8_t *first = NULL;
	uint64_t got = 0, page = (uint64_t)sysconf(_SC_PAGESIZE);
	int ret;

	tfs_diag_clear(d);
	pthread_once(&once, init_once);
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->memfd = r->poison_fd = r->uffd = -1;
	r->page = (uint64_t)sysconf(_SC_PAGESIZE);
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->done, NULL);
	pthread_cond_init(&r->work, NULL);
	pthread_cond_init(&r->wwork, NULL);
	r->cfg = config;
	r->cfg.cache_dir = config.cache_dir ? strdup(config.cache_dir) : NULL;
	r->shown = tfs_remote_redact(url);
	if (!r->shown || (config.cache_dir && !r->cfg.cache_dir)) {
		ret = -ENOMEM;
		goto out;
	}
	ret = tfs_remote_resolve(url, &r->tgt, r->cfg.insecure,
				 (long)r->cfg.timeout_ms, d);
	if (ret)
		goto out;
	ret = probe(r, d, &first, &got);
	if (ret)
		goto out;
	r->piece_chunks = r->cfg.mem / r->cfg.conns / CHUNK;
	if (r->piece_chunks < 1)
		r->piece_chunks = 1;
	if (r->piece_chunks > TFS_PLAN_MAX_PIECE)
		r->piece_chunks = TFS_PLAN_MAX_PIECE;
	r->nchunks = (r->size + CHUNK - 1) / CHUNK;
	r->state = calloc(r->nchunks ? r->nchunks : 1, 1);
	r->err = calloc(r->nchunks ? r->nchunks : 1, sizeof(*r->err));
	r->dropreq = calloc(r->nchunks ? r->nchunks : 1, 1);
	r->pins = calloc(r->nchunks ? r->nchunks : 1, sizeof(*r->pins));
	r->nblocks = (r->nchunks + BLOCK_CHUNKS - 1) / BLOCK_CHUNKS;
	r->bstate = calloc(r->nblocks ? r->nblocks : 1, 1);
	r->memfd = memfd_create("tensorfs-remote", MFD_CLOEXEC);
	r->poison_fd = memfd_create("tensorfs-poison", MFD_CLOEXEC);
	if (!r->state || !r->err || !r->dropreq || !r->pins || !r->bstate) {
		ret = -ENOMEM;
		goto out;
	}
	if (r->memfd < 0 || r->poison_fd < 0 ||
	    ftruncate(r->memfd, (off_t)r->size)) {
		ret = tfs_diag_set(d, -errno, "memfd: %s", strerror(errno));
		goto out;
	}
	if (r->size) {
		r->maplen = (size_t)((r->size + page - 1) & ~(page - 1));
		r->map = mmap(NULL, r->maplen, PROT_READ, MAP_SHARED, r->memfd,
			      0);
		if (r->map == MAP_FAILED) {
			r->map = NULL;
			ret = tfs_diag_set(d, -errno, "cannot map: %s",
					   strerror(errno));
			goto out;
		}
	}
	if (r->cfg.cache_dir && r->cfg.cache_max) {
		/* keyed by what is fetched: an hf:// commit, an endpoint */
		char *key = tfs_remote_redact(r->tgt.url);

		if (key)
			tfs_chunk_cache_open(&r->cache, r->cfg.cache_dir,
					     r->cfg.cache_max, key, r->etag,
					     r->size);
		free(key);
	}
	if (r->cache) {
		size_t nb = r->nblocks ? r->nblocks : 1, k;

		r->bfd = malloc(nb * sizeof(*r->bfd));
		for (k = 0; r->bfd && k < nb; k++)
			r->bfd[k] = -1;
		r->btmp = calloc(nb, sizeof(*r->btmp));
		r->fmap = calloc(r->nchunks ? r->nchunks : 1, 1);
		if (!r->bfd || !r->btmp || !r->fmap) {
			ret = -ENOMEM;
			goto out;
		}
	}
	/* the probe's bytes: chunk 0, whole (or the whole object) */
	if (r->nchunks && got >= chunk_len(r, 0)) {
		ret = pwrite_all(r->memfd, first, chunk_len(r, 0), 0);
		if (ret)
			goto out;
		r->state[0] = CH_PRESENT;
		r->stats.bytes_fetched = chunk_len(r, 0);
		/* the whole object: no cache writer will ever see it */
		if (r->cache && r->nchunks == 1 &&
		    !tfs_chunk_cache_put(r->cache, 0, 0, first,
					 (size_t)chunk_len(r, 0)))
			r->bstate[0] = BL_CACHED;
	}
	if (r->map && start_uffd(r)) {
		logf_(r, "%s: userfaultfd unavailable: fetching it whole",
		      r->shown);
		ret = fetch(r, 0, r->size, false, 0, UINT64_MAX, false);
		if (ret) {
			tfs_diag_set(d, ret, "cannot fetch: %s",
				     strerror(-ret));
			goto out;
		}
	}
	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->data = r->map;
	s->size = r->size;
	s->ops = &remote_ops;
	s->impl = r;
	s->path = strdup(r->shown);
	if (!s->path) {
		ret = -ENOMEM;
		memset(s, 0, sizeof(*s));
		s->fd = -1;
		goto out;
	}
	pthread_mutex_lock(&all_lock);
	r->next = all;
	all = r;
	pthread_mutex_unlock(&all_lock);
	free(first);
	return 0;
out:
	free(first);
	remote_free(r);
	return ret;
}
