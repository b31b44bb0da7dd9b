// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the restricted pickle reader (src/parse/pickle.h):
 * run the input with no allow list and with one that allows every global;
 * a refusal must carry a message and an offset inside the input; a tree
 * must hold only in-range indexes, offsets inside the input and containers
 * no deeper than the limit says, and must be walkable with a depth bound.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "parse/pickle.h"

#define BASE 16

static bool allow_all(void *arg, const char *m, size_t ml, const char *n,
		      size_t nl)
{
	(void)arg;
	(void)m;
	(void)n;
	/* refuse one name, so refusals of STACK_GLOBAL are reached too */
	return !(ml == 2 && nl == 6 && memcmp(n, "system", 6) == 0);
}

static void check_index(const struct tfs_pkl *p, uint32_t idx)
{
	if (idx >= p->n)
		tfs_fuzz_fail("pickle: value index %u of %u", idx, p->n);
}

/* visit everything reachable, at most @depth levels (graphs may cycle) */
static unsigned long walk(const struct tfs_pkl *p, uint32_t idx, int depth)
{
	const struct tfs_pkl_value *v;
	unsigned long n = 1;
	uint32_t i;

	check_index(p, idx);
	if (depth > TFS_PKL_MAX_DEPTH + 1)
		return n;
	v = tfs_pkl_at(p, idx);
	if (v->kind == TFS_PKL_REDUCE || v->kind == TFS_PKL_NEWOBJ) {
		n += walk(p, v->call.a, depth + 1);
		n += walk(p, v->call.b, depth + 1);
	}
	if (v->kind == TFS_PKL_PERSID)
		n += walk(p, v->call.a, depth + 1);
	if (v->state != TFS_PKL_NO_VALUE)
		n += walk(p, v->state, depth + 1);
	for (i = 0; i < v->nitems && n < 100000; i++)
		n += walk(p, v->items[i], depth + 1);
	return n;
}

static void run(const uint8_t *data, size_t size, const struct tfs_pkl_opts *o)
{
	struct tfs_pkl p;
	struct tfs_diag d;
	char num[TFS_PKL_MAX_LONG * 3 + 4];
	uint32_t i;
	int ret;

	tfs_diag_clear(&d);
	ret = tfs_pkl_parse(&p, data, size, BASE, o, &d);
	if (ret) {
		tfs_fuzz_check_refusal(ret, &d);
		if (!d.has_offset || d.offset < BASE || d.offset > BASE + size)
			tfs_fuzz_fail("pickle: refusal offset %llu outside "
				      "the input",
				      (unsigned long long)d.offset);
		return;
	}
	if (p.end <= BASE || p.end > BASE + size)
		tfs_fuzz_fail("pickle: end %llu outside the input",
			      (unsigned long long)p.end);
	for (i = 0; i < p.n; i++) {
		const struct tfs_pkl_value *v = tfs_pkl_at(&p, i);

		if (v->offset < BASE || v->offset >= p.end)
			tfs_fuzz_fail("pickle: value offset outside");
		if (v->depth > TFS_PKL_MAX_DEPTH)
			tfs_fuzz_fail("pickle: depth %u", v->depth);
		if ((v->kind == TFS_PKL_STR || v->kind == TFS_PKL_BYTES ||
		     v->kind == TFS_PKL_LONG) &&
		    (v->s.len > size || (const uint8_t *)v->s.p < data ||
		     (const uint8_t *)v->s.p + v->s.len > data + size))
			tfs_fuzz_fail("pickle: string outside the input");
		if (v->kind == TFS_PKL_LONG &&
		    tfs_pkl_long_decimal(v, num, sizeof(num)))
			tfs_fuzz_fail("pickle: long to decimal");
	}
	walk(&p, p.root, 0);
	tfs_pkl_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct tfs_pkl_opts all = {.allow = allow_all};

	run(data, size, NULL);
	run(data, size, &all);
	return 0;
}
