/* SPDX-License-Identifier: MIT */
/*
 * The library's lookup of tensors by stored name (any bytes, a length): a
 * hash of the distinct names, each with the chain of the public indexes
 * that carry it, in ascending order (a directory of several containers can
 * hold one name more than once).
 */
#ifndef TFS_LIB_NAME_INDEX_H
#define TFS_LIB_NAME_INDEX_H

#include <stddef.h>
#include <stdint.h>

#define TFS_NAME_NONE UINT32_MAX

struct tfs_name_index {
	uint32_t *slots; /* the first index of a name, or TFS_NAME_NONE */
	uint32_t *next;	 /* per index: the next with its name, or NONE */
	size_t cap;	 /* a power of two */
};

/* the name of public index @i, for the index to hash and compare */
typedef const char *(*tfs_name_of)(const void *arg, uint32_t i, size_t *len);

/* index @n names (public order): 0 or -ENOMEM */
int tfs_name_index_build(struct tfs_name_index *x, uint32_t n,
			 tfs_name_of name_of, const void *arg);
void tfs_name_index_free(struct tfs_name_index *x);

/* the first index named @name (@len bytes), or TFS_NAME_NONE */
uint32_t tfs_name_index_first(const struct tfs_name_index *x, const char *name,
			      size_t len, tfs_name_of name_of, const void *arg);

/* the next index after @i with @i's name, or TFS_NAME_NONE */
static inline uint32_t tfs_name_index_next(const struct tfs_name_index *x,
					   uint32_t i)
{
	return x->next[i];
}

#endif
