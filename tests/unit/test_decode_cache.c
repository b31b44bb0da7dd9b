// SPDX-License-Identifier: MIT
/*
 * The decode cache: budget, least-recently-used eviction, pins, entries
 * larger than the budget, forgetting, user state, and many threads.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/decode_cache.h"
#include "testutil.h"

static int dropped;

static void drop(void *state)
{
	free(state);
	__atomic_add_fetch(&dropped, 1, __ATOMIC_SEQ_CST);
}

static struct tfs_cache_entry *get(struct tfs_cache *c, uint64_t key,
				   size_t len, bool want_created)
{
	struct tfs_cache_entry *e;
	bool created;

	ck_assert_int_eq(tfs_cache_get(c, key, len, &e, &created), 0);
	ck_assert_int_eq(created, want_created);
	ck_assert_uint_eq(e->key, key);
	return e;
}

static bool cached(struct tfs_cache *c, uint64_t key)
{
	struct tfs_cache_entry *e = tfs_cache_find(c, key);

	tfs_cache_put(c, e);
	return e != NULL;
}

START_TEST(lru_within_budget)
{
	struct tfs_cache *c;
	struct tfs_cache_stats st;
	struct tfs_cache_entry *e;
	uint64_t k;

	ck_assert_int_eq(tfs_cache_new(&c, 4000, NULL), 0);
	for (k = 1; k <= 4; k++) {
		e = get(c, k, 1000, true);
		memset(e->data, (int)k, 1000);
		tfs_cache_set_valid(e, 1000);
		tfs_cache_put(c, e);
	}
	/* touch 1: 2 is now the least recently used */
	ck_assert(cached(c, 1));
	tfs_cache_put(c, get(c, 5, 1000, true));
	ck_assert(!cached(c, 2));
	ck_assert(cached(c, 1) && cached(c, 3) && cached(c, 4) && cached(c, 5));
	/* an existing entry comes back with its bytes */
	e = get(c, 3, 1000, false);
	ck_assert_uint_eq(tfs_cache_valid(e), 1000);
	ck_assert_uint_eq(e->data[999], 3);
	tfs_cache_put(c, e);
	tfs_cache_get_stats(c, &st);
	ck_assert_uint_le(st.bytes, 4000);
	ck_assert_uint_le(st.peak_bytes, 4000);
	ck_assert_uint_eq(st.evictions, 1);
	ck_assert_uint_eq(st.entries, 4);
	/* shrinking the budget evicts at once */
	tfs_cache_set_budget(c, 2000);
	tfs_cache_get_stats(c, &st);
	ck_assert_uint_eq(st.bytes, 2000);
	ck_assert(cached(c, 3)); /* the most recent two stay */
	tfs_cache_free(c);
}
END_TEST

START_TEST(pins_and_oversize)
{
	struct tfs_cache *c;
	struct tfs_cache_stats st;
	struct tfs_cache_entry *a, *b, *big;

	ck_assert_int_eq(tfs_cache_new(&c, 3000, NULL), 0);
	a = get(c, 1, 2000, true);
	/* a is pinned: b goes over the budget rather than evicting it */
	b = get(c, 2, 2000, true);
	tfs_cache_get_stats(c, &st);
	ck_assert_uint_eq(st.bytes, 4000);
	a->data[0] = 42; /* still ours */
	/* unpinning b brings the cache back under the budget */
	tfs_cache_put(c, b);
	tfs_cache_get_stats(c, &st);
	ck_assert_uint_le(st.bytes, 3000);
	ck_assert(cached(c, 1));
	tfs_cache_put(c, a);
	/* larger than the whole budget: usable, gone once unpinned */
	big = get(c, 9, 10000, true);
	memset(big->data, 1, 10000);
	tfs_cache_get_stats(c, &st);
	ck_assert_uint_eq(st.bytes, 10000);
	tfs_cache_put(c, big);
	tfs_cache_get_stats(c, &st);
	ck_assert_uint_eq(st.bytes, 0);
	ck_assert(!cached(c, 9));
	/* a large (mmap-backed) buffer works like any other */
	big = get(c, 10, 3u << 20, true);
	memset(big->data, 7, 3u << 20);
	tfs_cache_put(c, big);
	tfs_cache_free(c);
}
END_TEST

/*
 * get_within: a new entry only when it fits beside the pinned ones (16
 * readers each decoding a tensor whole passed a memory cgroup's limit);
 * an existing entry is shared whatever the budget; unpinned ones make room.
 */
START_TEST(get_within_counts_pinned_bytes)
{
	struct tfs_cache *c;
	struct tfs_cache_entry *a, *b, *again, *none = (void *)1;

	ck_assert_int_eq(tfs_cache_new(&c, 3000, NULL), 0);
	ck_assert_int_eq(tfs_cache_get_within(c, 1, 2000, &a), 0);
	ck_assert_int_eq(tfs_cache_get_within(c, 2, 2000, &none), -ENOSPC);
	ck_assert_ptr_null(none);
	ck_assert(!cached(c, 2));
	/* the pinned entry itself: shared, no new bytes */
	ck_assert_int_eq(tfs_cache_get_within(c, 1, 2000, &again), 0);
	ck_assert_ptr_eq(again, a);
	tfs_cache_put(c, again);
	ck_assert_int_eq(tfs_cache_get_within(c, 2, 2000, &none), -ENOSPC);
	/* unpinned, it is evicted for the new one */
	tfs_cache_put(c, a);
	ck_assert_int_eq(tfs_cache_get_within(c, 2, 2000, &b), 0);
	ck_assert(!cached(c, 1));
	/* pins by tfs_cache_pin count too */
	tfs_cache_pin(c, b);
	tfs_cache_put(c, b);
	ck_assert_int_eq(tfs_cache_get_within(c, 3, 1001, &none), -ENOSPC);
	ck_assert_int_eq(tfs_cache_get_within(c, 3, 1000, &a), 0);
	tfs_cache_put(c, a);
	tfs_cache_put(c, b);
	tfs_cache_free(c);
}
END_TEST

START_TEST(forget_and_state)
{
	struct tfs_cache *c;
	struct tfs_cache_entry *e, *f;

	dropped = 0;
	ck_assert_int_eq(tfs_cache_new(&c, 1u << 20, drop), 0);
	e = get(c, 7, 100, true);
	e->state = malloc(16);
	/* a second holder of the same entry */
	f = get(c, 7, 100, false);
	ck_assert_ptr_eq(e, f);
	tfs_cache_forget(c, e);
	/* unreachable, but alive while pinned */
	ck_assert(!cached(c, 7));
	tfs_cache_put(c, e);
	ck_assert_int_eq(dropped, 0);
	tfs_cache_put(c, f);
	ck_assert_int_eq(dropped, 1);
	/* a fresh entry under the same key */
	e = get(c, 7, 100, true);
	ck_assert_uint_eq(tfs_cache_valid(e), 0);
	e->state = malloc(16);
	tfs_cache_put(c, e);
	/* freeing the cache drops remaining states */
	tfs_cache_free(c);
	ck_assert_int_eq(dropped, 2);
}
END_TEST

/* many keys: the index grows; every entry found again */
START_TEST(many_entries)
{
	struct tfs_cache *c;
	struct tfs_cache_entry *e;
	uint64_t k;

	ck_assert_int_eq(tfs_cache_new(&c, 1u << 30, NULL), 0);
	for (k = 0; k < 5000; k++) {
		e = get(c, k << 32 | (k & 7), 8, true);
		memcpy(e->data, &k, 8);
		tfs_cache_put(c, e);
	}
	for (k = 0; k < 5000; k++) {
		e = tfs_cache_find(c, k << 32 | (k & 7));
		ck_assert_ptr_nonnull(e);
		ck_assert_mem_eq(e->data, &k, 8);
		tfs_cache_put(c, e);
	}
	tfs_cache_free(c);
}
END_TEST

/* threads hammering a small cache: pinned bytes never change under us */
struct worker {
	struct tfs_cache *c;
	unsigned seed;
	int failures;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	struct tfs_cache_entry *e;
	uint64_t key;
	size_t i, len;
	int round;

	for (round = 0; round < 20000; round++) {
		w->seed = w->seed * 1103515245u + 12345u;
		key = (w->seed >> 16) % 64;
		len = 100 + key * 10;
		if (tfs_cache_get(w->c, key, len, &e, NULL)) {
			w->failures++;
			continue;
		}
		/* fill under the cache's contract: first user wins */
		if (__atomic_exchange_n(&e->state, (void *)1,
					__ATOMIC_ACQ_REL) == NULL) {
			memset(e->data, (int)key, e->len);
			tfs_cache_set_valid(e, e->len);
		}
		if (tfs_cache_valid(e) == e->len)
			for (i = 0; i < e->len; i++)
				if (e->data[i] != (uint8_t)key)
					w->failures++;
		tfs_cache_put(w->c, e);
	}
	return NULL;
}

START_TEST(threads)
{
	struct tfs_cache *c;
	struct tfs_cache_stats st;
	struct worker w[8];
	pthread_t th[8];
	int i;

	ck_assert_int_eq(tfs_cache_new(&c, 8000, NULL), 0);
	for (i = 0; i < 8; i++) {
		w[i].c = c;
		w[i].seed = (unsigned)i * 7919u + 1;
		w[i].failures = 0;
		ck_assert_int_eq(pthread_create(&th[i], NULL, work, &w[i]), 0);
	}
	for (i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(w[i].failures, 0);
	}
	tfs_cache_get_stats(c, &st);
	ck_assert_uint_le(st.bytes, 8000);
	/* at most one pinned entry per thread beyond the budget */
	ck_assert_uint_le(st.peak_bytes, 8000 + 8 * 730);
	ck_assert_uint_gt(st.evictions, 0);
	tfs_cache_free(c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("decode_cache");
	TCase *tc = tcase_create("decode_cache");

	tcase_add_test(tc, lru_within_budget);
	tcase_add_test(tc, pins_and_oversize);
	tcase_add_test(tc, forget_and_state);
	tcase_add_test(tc, get_within_counts_pinned_bytes);
	tcase_add_test(tc, many_entries);
	tcase_add_test(tc, threads);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
