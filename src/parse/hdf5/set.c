// SPDX-License-Identifier: MIT
/* Visited sets of addresses: open addressing, grown at half load. */
#include <errno.h>
#include <stdlib.h>

#include "parse/hdf5/h5.h"
#include "core/diag.h"

static size_t set_slot(uint64_t x, size_t cap)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (size_t)x & (cap - 1);
}

bool h5_set_has(const struct h5_set *s, uint64_t x)
{
	size_t i;

	if (!s->cap)
		return false;
	for (i = set_slot(x, s->cap); s->v[i] != H5_UNDEF;
	     i = (i + 1) & (s->cap - 1))
		if (s->v[i] == x)
			return true;
	return false;
}

static int set_grow(struct h5_set *s)
{
	size_t cap = s->cap ? s->cap * 2 : 64, i, j;
	uint64_t *v = malloc(cap * sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (i = 0; i < cap; i++)
		v[i] = H5_UNDEF;
	for (i = 0; i < s->cap; i++) {
		if (s->v[i] == H5_UNDEF)
			continue;
		for (j = set_slot(s->v[i], cap); v[j] != H5_UNDEF;
		     j = (j + 1) & (cap - 1))
			;
		v[j] = s->v[i];
	}
	free(s->v);
	s->v = v;
	s->cap = cap;
	return 0;
}

int h5_set_add(struct h5_set *s, uint64_t x)
{
	size_t i;

	if (x == H5_UNDEF || h5_set_has(s, x))
		return 0;
	if ((s->n + 1) * 2 > s->cap && set_grow(s))
		return -ENOMEM;
	for (i = set_slot(x, s->cap); s->v[i] != H5_UNDEF;
	     i = (i + 1) & (s->cap - 1))
		;
	s->v[i] = x;
	s->n++;
	return 1;
}

int h5_visit(struct h5_file *f, struct h5_set *s, uint64_t addr, uint64_t at,
	     const char *what)
{
	int ret = h5_set_add(s, addr);

	if (ret < 0)
		return tfs_diag_oom(f->d);
	if (ret == 0)
		return tfs_diag_at(f->d, -EBADMSG, at,
				   "%s: node %llu is reached twice (a cycle)",
				   what, (unsigned long long)addr);
	if (s->n > H5_MAX_NODES)
		return tfs_diag_at(f->d, -E2BIG, at, "%s: more than %u nodes",
				   what, H5_MAX_NODES);
	return 0;
}

void h5_set_free(struct h5_set *s)
{
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}
