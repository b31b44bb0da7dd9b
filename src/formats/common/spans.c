// SPDX-License-Identifier: MIT
/* Byte strings found twice: see spans.h. */
#include <stdlib.h>
#include <string.h>

#include "spans.h"

static int cmp_spans(const void *pa, const void *pb)
{
	const struct tfs_span *a = pa, *b = pb;
	uint64_t n = a->len < b->len ? a->len : b->len;
	int c = n ? memcmp(a->p, b->p, (size_t)n) : 0;

	if (c)
		return c;
	if (a->len != b->len)
		return a->len < b->len ? -1 : 1;
	return a->at < b->at ? -1 : a->at > b->at;
}

const struct tfs_span *tfs_span_twice(struct tfs_span *v, size_t n,
				      const struct tfs_span **first)
{
	size_t i;

	if (n > 1)
		qsort(v, n, sizeof(*v), cmp_spans);
	for (i = 1; i < n; i++)
		if (v[i].len == v[i - 1].len &&
		    (!v[i].len ||
		     !memcmp(v[i].p, v[i - 1].p, (size_t)v[i].len))) {
			if (first)
				*first = &v[i - 1];
			return &v[i];
		}
	return NULL;
}
