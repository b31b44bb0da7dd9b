// SPDX-License-Identifier: MIT
/*
 * The decoded-bytes cache: see src/core/decode_cache.h.
 *
 * One mutex guards the index (a chained hash table that doubles when it
 * fills), the LRU list and the accounting.  Buffers are allocated and
 * freed outside the lock.  Large buffers (>= 2 MiB) come straight from
 * mmap, so they go back to the system when freed, and can be prefaulted
 * (tfs_cache_prefault: MADV_POPULATE_WRITE, one call for many pages, about
 * 30% cheaper than a fault per page, and it can run on another thread than
 * the one filling the buffer).  MADV_HUGEPAGE is not used: 3x cheaper when
 * huge pages are free, but with the common defrag=madvise setting a
 * fragmented machine stalls in direct compaction (0.7 s for 256 MiB).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/decode_cache.h"

#define MAP_THRESHOLD (2u << 20)

struct tfs_cache {
	pthread_mutex_t lock;
	struct tfs_cache_entry **buckets;
	size_t nbuckets; /* a power of two */
	size_t nentries; /* indexed entries */
	struct tfs_cache_entry *mru, *lru;
	uint64_t budget, bytes, peak;
	uint64_t pinned; /* bytes of the entries pinned now */
	uint64_t hits, misses, evictions;
	void (*drop_state)(void *state);
};

static size_t bucket_of(const struct tfs_cache *c, uint64_t key)
{
	/* Fibonacci hashing: keys are (index << 32 | window), mix both */
	return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 17) &
	       (c->nbuckets - 1);
}

int tfs_cache_new(struct tfs_cache **out, uint64_t budget,
		  void (*drop_state)(void *state))
{
	struct tfs_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->nbuckets = 64;
	c->buckets = calloc(c->nbuckets, sizeof(*c->buckets));
	if (!c->buckets) {
		free(c);
		return -ENOMEM;
	}
	pthread_mutex_init(&c->lock, NULL);
	c->budget = budget;
	c->drop_state = drop_state;
	*out = c;
	return 0;
}

static void *buf_alloc(size_t len, bool *mapped)
{
	void *p;

	*mapped = false;
	if (len >= MAP_THRESHOLD) {
		p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p != MAP_FAILED) {
			*mapped = true;
			return p;
		}
	}
	return malloc(len ? len : 1);
}

static void entry_free(struct tfs_cache *c, struct tfs_cache_entry *e)
{
	if (e->state && c->drop_state)
		c->drop_state(e->state);
	if (e->mapped)
		munmap(e->data, e->len);
	else
		free(e->data);
	free(e);
}

void tfs_cache_free(struct tfs_cache *c)
{
	struct tfs_cache_entry *e, *n;

	if (!c)
		return;
	for (e = c->mru; e; e = n) {
		n = e->next;
		entry_free(c, e);
	}
	free(c->buckets);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* ---- index and LRU (under the lock) -------------------------------------- */

static void lru_unlink(struct tfs_cache *c, struct tfs_cache_entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		c->mru = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		c->lru = e->prev;
	e->prev = e->next = NULL;
}

static void lru_push(struct tfs_cache *c, struct tfs_cache_entry *e)
{
	e->prev = NULL;
	e->next = c->mru;
	if (c->mru)
		c->mru->prev = e;
	c->mru = e;
	if (!c->lru)
		c->lru = e;
}

static struct tfs_cache_entry *index_find(struct tfs_cache *c, uint64_t key)
{
	struct tfs_cache_entry *e = c->buckets[bucket_of(c, key)];

	while (e && e->key != key)
		e = e->hnext;
	return e;
}

static void index_remove(struct tfs_cache *c, struct tfs_cache_entry *e)
{
	struct tfs_cache_entry **pp = &c->buckets[bucket_of(c, e->key)];

	while (*pp && *pp != e)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = e->hnext;
	e->hnext = NULL;
	e->indexed = false;
	c->nentries--;
}

static void index_grow(struct tfs_cache *c)
{
	struct tfs_cache_entry **nb, **old = c->buckets, *e, *n;
	size_t i, oldn = c->nbuckets;

	nb = calloc(oldn * 2, sizeof(*nb));
	if (!nb)
		return; /* longer chains, still correct */
	c->buckets = nb;
	c->nbuckets = oldn * 2;
	for (i = 0; i < oldn; i++) {
		for (e = old[i]; e; e = n) {
			n = e->hnext;
			e->hnext = c->buckets[bucket_of(c, e->key)];
			c->buckets[bucket_of(c, e->key)] = e;
		}
	}
	free(old);
}

static void index_add(struct tfs_cache *c, struct tfs_cache_entry *e)
{
	size_t b;

	if (c->nentries >= c->nbuckets)
		index_grow(c);
	b = bucket_of(c, e->key);
	e->hnext = c->buckets[b];
	c->buckets[b] = e;
	e->indexed = true;
	c->nentries++;
}

/*
 * Unlink unpinned entries, least recent first, until @want more bytes fit
 * in the budget; they are chained on *victims for freeing after unlock.
 */
static void evict(struct tfs_cache *c, uint64_t want,
		  struct tfs_cache_entry **victims)
{
	struct tfs_cache_entry *e = c->lru, *p;

	while (e && c->bytes + want > c->budget) {
		p = e->prev;
		if (!e->pins) {
			lru_unlink(c, e);
			if (e->indexed)
				index_remove(c, e);
			c->bytes -= e->len;
			c->evictions++;
			e->next = *victims;
			*victims = e;
		}
		e = p;
	}
}

static void free_victims(struct tfs_cache *c, struct tfs_cache_entry *v)
{
	struct tfs_cache_entry *n;

	for (; v; v = n) {
		n = v->next;
		entry_free(c, v);
	}
}

/* ---- the interface ------------------------------------------------------- */

void tfs_cache_set_budget(struct tfs_cache *c, uint64_t budget)
{
	struct tfs_cache_entry *victims = NULL;

	pthread_mutex_lock(&c->lock);
	c->budget = budget;
	evict(c, 0, &victims);
	pthread_mutex_unlock(&c->lock);
	free_victims(c, victims);
}

/* the indexed entry for @key pinned and made most recent, or NULL */
static struct tfs_cache_entry *hit(struct tfs_cache *c, uint64_t key)
{
	struct tfs_cache_entry *e = index_find(c, key);

	if (e) {
		if (!e->pins++)
			c->pinned += e->len;
		c->hits++;
		lru_unlink(c, e);
		lru_push(c, e);
	}
	return e;
}

struct tfs_cache_entry *tfs_cache_find(struct tfs_cache *c, uint64_t key)
{
	struct tfs_cache_entry *e;

	pthread_mutex_lock(&c->lock);
	e = hit(c, key);
	pthread_mutex_unlock(&c->lock);
	return e;
}

/* as tfs_cache_get(); @within: -ENOSPC rather than pass the budget */
static int get(struct tfs_cache *c, uint64_t key, size_t len, bool within,
	       struct tfs_cache_entry **out, bool *created)
{
	struct tfs_cache_entry *e, *n, *victims = NULL;
	bool full = false;

	pthread_mutex_lock(&c->lock);
	e = hit(c, key);
	full = !e && within && c->pinned + len > c->budget;
	pthread_mutex_unlock(&c->lock);
	if (e || full) {
		if (created)
			*created = false;
		*out = e;
		return e ? 0 : -ENOSPC;
	}
	/* allocate unlocked, then re-check: another thread may have won */
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->data = buf_alloc(len, &n->mapped);
	if (!n->data) {
		free(n);
		return -ENOMEM;
	}
	n->key = key;
	n->len = len;
	atomic_init(&n->valid, 0);
	pthread_mutex_lock(&c->lock);
	e = hit(c, key);
	if (!e) {
		evict(c, len, &victims);
		n->pins = 1;
		c->pinned += len;
		index_add(c, n);
		lru_push(c, n);
		c->bytes += len;
		if (c->bytes > c->peak)
			c->peak = c->bytes;
		c->misses++;
	}
	pthread_mutex_unlock(&c->lock);
	free_victims(c, victims);
	if (e) {
		entry_free(c, n);
		if (created)
			*created = false;
		*out = e;
		return 0;
	}
	if (created)
		*created = true;
	*out = n;
	return 0;
}

int tfs_cache_get(struct tfs_cache *c, uint64_t key, size_t len,
		  struct tfs_cache_entry **out, bool *created)
{
	return get(c, key, len, false, out, created);
}

int tfs_cache_get_within(struct tfs_cache *c, uint64_t key, size_t len,
			 struct tfs_cache_entry **out)
{
	return get(c, key, len, true, out, NULL);
}

int tfs_cache_prefault(struct tfs_cache_entry *e, size_t off, size_t len)
{
#ifdef MADV_POPULATE_WRITE
	long page = sysconf(_SC_PAGESIZE);
	size_t start, end;

	if (!e->mapped || off >= e->len || page <= 0)
		return -ENOTSUP;
	if (len > e->len - off)
		len = e->len - off;
	start = off - off % (size_t)page;
	end = off + len;
	/* contents are kept: safe while someone writes the same pages */
	return madvise(e->data + start, end - start, MADV_POPULATE_WRITE)
		       ? -errno
		       : 0;
#else
	(void)e;
	(void)off;
	(void)len;
	return -ENOTSUP;
#endif
}

void tfs_cache_pin(struct tfs_cache *c, struct tfs_cache_entry *e)
{
	pthread_mutex_lock(&c->lock);
	if (!e->pins++)
		c->pinned += e->len;
	pthread_mutex_unlock(&c->lock);
}

void tfs_cache_put(struct tfs_cache *c, struct tfs_cache_entry *e)
{
	struct tfs_cache_entry *victims = NULL;

	if (!e)
		return;
	pthread_mutex_lock(&c->lock);
	if (--e->pins == 0) {
		c->pinned -= e->len;
		if (!e->indexed) {
			/* forgotten: nobody can reach it any more */
			lru_unlink(c, e);
			c->bytes -= e->len;
			e->next = victims;
			victims = e;
		} else if (c->bytes > c->budget) {
			evict(c, 0, &victims);
		}
	}
	pthread_mutex_unlock(&c->lock);
	free_victims(c, victims);
}

void tfs_cache_forget(struct tfs_cache *c, struct tfs_cache_entry *e)
{
	pthread_mutex_lock(&c->lock);
	if (e->indexed)
		index_remove(c, e);
	pthread_mutex_unlock(&c->lock);
}

void tfs_cache_get_stats(struct tfs_cache *c, struct tfs_cache_stats *st)
{
	pthread_mutex_lock(&c->lock);
	st->budget = c->budget;
	st->bytes = c->bytes;
	st->peak_bytes = c->peak;
	st->entries = c->nentries;
	st->hits = c->hits;
	st->misses = c->misses;
	st->evictions = c->evictions;
	pthread_mutex_unlock(&c->lock);
}
