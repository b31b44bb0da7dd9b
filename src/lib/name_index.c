// SPDX-License-Identifier: MIT
/*
 * Stored names to tensor indexes (name_index.h): open addressing with
 * linear probing over FNV-1a, at most half full.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/name_index.h"

static uint64_t hash(const char *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t k;

	for (k = 0; k < len; k++) {
		h ^= (uint8_t)p[k];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* the slot of @name: its own, or the empty one where it would go */
static size_t slot_of(const struct tfs_name_index *x, const char *name,
		      size_t len, tfs_name_of name_of, const void *arg)
{
	size_t s = (size_t)hash(name, len) & (x->cap - 1), l;
	const char *p;

	while (x->slots[s] != TFS_NAME_NONE) {
		p = name_of(arg, x->slots[s], &l);
		if (l == len && !memcmp(p, name, len))
			break;
		s = (s + 1) & (x->cap - 1);
	}
	return s;
}

int tfs_name_index_build(struct tfs_name_index *x, uint32_t n,
			 tfs_name_of name_of, const void *arg)
{
	const char *p;
	size_t s, len;
	uint32_t i;

	memset(x, 0, sizeof(*x));
	for (x->cap = 16; x->cap < (size_t)n * 2; x->cap *= 2)
		;
	x->slots = malloc(x->cap * sizeof(*x->slots));
	x->next = malloc(((size_t)n + 1) * sizeof(*x->next));
	if (!x->slots || !x->next) {
		tfs_name_index_free(x);
		return -ENOMEM;
	}
	memset(x->slots, 0xff, x->cap * sizeof(*x->slots));
	/* backwards, each name's chain in ascending order */
	for (i = n; i-- > 0;) {
		p = name_of(arg, i, &len);
		s = slot_of(x, p, len, name_of, arg);
		x->next[i] = x->slots[s];
		x->slots[s] = i;
	}
	return 0;
}

void tfs_name_index_free(struct tfs_name_index *x)
{
	free(x->slots);
	free(x->next);
	memset(x, 0, sizeof(*x));
}

uint32_t tfs_name_index_first(const struct tfs_name_index *x, const char *name,
			      size_t len, tfs_name_of name_of, const void *arg)
{
	if (!x->cap)
		return TFS_NAME_NONE;
	return x->slots[slot_of(x, name, len, name_of, arg)];
}
