// SPDX-License-Identifier: MIT
/*
 * Remote sources: see remote.h and docs/remote.md.
 *
 * Threads of one remote object:
 *   - conns workers, each with its own curl handle (a kept-alive
 *     connection), take pieces (runs of chunks) from a queue: synchronous
 *     needs at its front, prefetch at its back, once they fit in
 *     remote_mem (tfs_remote_mem_take: one budget for the whole
 *     process).  A piece is looked up in the disk cache block by block
 *     (a hit: the cache file mapped in place), the rest fetched by one
 *     range request (If-Match the pinned version) straight into the
 *     blocks' cache files (then mapped in place) or, without a cache,
 *     into the memfd; its chunks are then marked present;
 *   - one cache writer names each block made whole (checksum, header,
 *     rename) and maps it;
 *   - one fault thread reads the userfaultfd: an access to a chunk not yet
 *     present (a parser reading its header) waits there until the chunk is
 *     fetched, then is woken.
 * Chunk states live under one mutex; waiters sleep on one condition.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "remote/chunk_cache.h"
#include "remote/remote.h"
#include "remote/remote_i.h"
#include "remote/range_plan.h"
#include "remote/resolve.h"
#include "core/checked.h"
#include "core/diag.h"
#include "core/source.h"

static struct tfs_remote_config config;
static bool configured;
static bool mounted; /* a failed fetch no longer ends the process */
static bool zero_failed; /* ... but reads as zeros, remembered (library) */
static pthread_mutex_t all_lock = PTHREAD_MUTEX_INITIALIZER;
static struct remote *all;
static pthread_once_t once = PTHREAD_ONCE_INIT;

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

bool tfs_remote_is_mounted(void)
{
	return mounted;
}

void tfs_remote_fail_as_zeros(void)
{
	mounted = true;
	zero_failed = true;
}

bool tfs_remote_fails_as_zeros(void)
{
	return zero_failed;
}

void tfs_remote_log(const struct remote *r, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (r->cfg.log)
		r->cfg.log(line);
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
		 * tfs_remote_fetch(), which every read path calls before it
		 * touches the mapping, starts them again.
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
	tfs_remote_mem_reset();
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
	int ret = tfs_remote_fetch(impl, off, len, true, 0, UINT64_MAX, false);

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
	ret = tfs_remote_fetch(impl, off, len, true, ext_off, end, true);
	return ret == -EAGAIN ? -EIO : ret;
}

/* the end of a read that remote_fetch_in() made present and pinned */
static void remote_unpin(void *impl, uint64_t off, uint64_t len)
{
	struct remote *r = impl;

	if (!len || !tfs_range_ok(off, len, r->size))
		return;
	pthread_mutex_lock(&r->lock);
	tfs_remote_unpin_locked(r, off / CHUNK, (off + len - 1) / CHUNK);
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
		tfs_remote_drop_when_free(r, c);
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
	tfs_remote_stop_threads(r);
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

/* the library's failed page faults (tfs_remote_faults_failed) */
static pthread_mutex_t fault_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long faults_failed;
static char fault_line[512];

void tfs_remote_fault_failed(const struct remote *r, uint64_t off, int err)
{
	pthread_mutex_lock(&fault_lock);
	faults_failed++;
	snprintf(fault_line, sizeof(fault_line),
		 "%s: bytes %llu-%llu: cannot fetch: %s", r->shown,
		 (unsigned long long)off,
		 (unsigned long long)(off + r->page - 1),
		 strerror(err == -EAGAIN ? EIO : -err));
	pthread_mutex_unlock(&fault_lock);
}

unsigned long tfs_remote_faults_failed(char *msg, size_t len)
{
	unsigned long n;

	pthread_mutex_lock(&fault_lock);
	n = faults_failed;
	if (len)
		snprintf(msg, len, "%s", fault_line);
	pthread_mutex_unlock(&fault_lock);
	return n;
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
	ret = tfs_remote_probe(r, d, &first, &got);
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
		ret = tfs_remote_pwrite_all(r->memfd, first, chunk_len(r, 0),
					    0);
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
	if (r->map && tfs_remote_start_uffd(r)) {
		tfs_remote_log(r,
			       "%s: userfaultfd unavailable: fetching it whole",
			       r->shown);
		ret = tfs_remote_fetch(r, 0, r->size, false, 0, UINT64_MAX,
				       false);
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
