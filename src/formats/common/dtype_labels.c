// SPDX-License-Identifier: MIT
/* A format's dtype names: see dtype_labels.h. */
#include <string.h>

#include "dtype_labels.h"

const struct tfs_dtype_label *
tfs_dtype_label_find(const struct tfs_dtype_label *table, size_t count,
		     const void *s, size_t n)
{
	size_t i;

	for (i = 0; i < count; i++)
		if (strlen(table[i].name) == n && !memcmp(table[i].name, s, n))
			return &table[i];
	return NULL;
}
