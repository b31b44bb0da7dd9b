/* SPDX-License-Identifier: MIT */
/*
 * A bounded cache of decoded bytes (zstd components), shared by every
 * reader thread of an image.
 *
 * An entry is a buffer of a fixed length under a 64-bit key chosen by the
 * user (image.c: tensor index and window number).  It is filled by its
 * user, possibly in several steps: `valid` says how many leading bytes are
 * ready, and may only grow.  The cache neither decodes nor waits: callers
 * serialise the filling of one component with their own lock, which is how
 * concurrent readers of one tensor decode it once (single flight).
 *
 * Entries are pinned while a reader uses them (tfs_cache_get/find pin,
 * tfs_cache_put unpins); a pinned entry is never freed, so a view into it
 * stays valid.  Memory is bounded by the budget, least recently used
 * unpinned entries being evicted first.  When everything is pinned a new
 * entry is still created (readers must make progress) and the cache shrinks
 * back under the budget as entries are unpinned: the overshoot is bounded
 * by what concurrent readers hold at one moment.
 *
 * An entry can carry a user state (the partly run decoder of a buffer that
 * is filled in steps); it is dropped with @drop_state when the entry is
 * freed.  All functions are thread-safe.
 */
#ifndef TENSORFS_DECODE_CACHE_H
#define TENSORFS_DECODE_CACHE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/image.h" /* struct tfs_cache_stats */

struct tfs_cache;

struct tfs_cache_entry {
	uint64_t key;
	uint8_t *data; /* len bytes; [0, valid) are filled */
	size_t len;
	atomic_size_t valid;
	void *state; /* user state, owned by whoever fills */
	/* private to decode_cache.c */
	struct tfs_cache_entry *hnext;	     /* hash chain */
	struct tfs_cache_entry *prev, *next; /* LRU list, most recent first */
	uint32_t pins;
	bool indexed; /* reachable by key (not forgotten) */
	bool mapped;  /* data came from mmap, not malloc */
};

int tfs_cache_new(struct tfs_cache **out, uint64_t budget,
		  void (*drop_state)(void *state));
/* every entry must be unpinned */
void tfs_cache_free(struct tfs_cache *c);

/* change the budget; evicts down to it at once where it can */
void tfs_cache_set_budget(struct tfs_cache *c, uint64_t budget);

/*
 * The entry for @key, pinned: the existing one, or a new one of @len
 * bytes with nothing valid (*created, may be NULL, tells which).  An
 * existing entry keeps its own length.  -ENOMEM when the buffer cannot be
 * allocated.
 */
int tfs_cache_get(struct tfs_cache *c, uint64_t key, size_t len,
		  struct tfs_cache_entry **out, bool *created);

/*
 * The same, but a new entry only when it fits the budget beside every
 * entry pinned now (unpinned ones are evicted for it): -ENOSPC otherwise.
 * Many readers each filling a large entry at once would pass any budget
 * (and the memory cgroup the daemon runs in).
 */
int tfs_cache_get_within(struct tfs_cache *c, uint64_t key, size_t len,
			 struct tfs_cache_entry **out);

/* the entry for @key pinned, or NULL (never creates) */
struct tfs_cache_entry *tfs_cache_find(struct tfs_cache *c, uint64_t key);

/*
 * Map the pages of [off, off + len) of a pinned entry now (contents are
 * kept), so whoever fills them does not fault page by page.  -ENOTSUP for
 * small (malloc'd) buffers or old kernels.
 */
int tfs_cache_prefault(struct tfs_cache_entry *e, size_t off, size_t len);

/* one more pin on an entry the caller already holds pinned */
void tfs_cache_pin(struct tfs_cache *c, struct tfs_cache_entry *e);

/* unpin; the entry may be freed from now on */
void tfs_cache_put(struct tfs_cache *c, struct tfs_cache_entry *e);

/*
 * Make @e unreachable by key (its contents are wrong or incomplete for
 * good); it is freed when its last pin goes.  The next get creates a
 * fresh entry.
 */
void tfs_cache_forget(struct tfs_cache *c, struct tfs_cache_entry *e);

static inline size_t tfs_cache_valid(const struct tfs_cache_entry *e)
{
	return atomic_load_explicit(&e->valid, memory_order_acquire);
}

/* publish that [0, valid) are filled (call after writing the bytes) */
static inline void tfs_cache_set_valid(struct tfs_cache_entry *e, size_t valid)
{
	atomic_store_explicit(&e->valid, valid, memory_order_release);
}

void tfs_cache_get_stats(struct tfs_cache *c, struct tfs_cache_stats *st);

#endif
