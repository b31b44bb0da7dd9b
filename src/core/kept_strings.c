// SPDX-License-Identifier: MIT
/* Strings kept until a load ends (kept_strings.h). */
#include <errno.h>
#include <stdlib.h>

#include "core/kept_strings.h"

int tfs_kept_add(struct tfs_kept_strings *k, char *s)
{
	if (k->n == k->cap) {
		size_t cap = k->cap ? k->cap * 2 : 64;
		char **v = reallocarray(k->v, cap, sizeof(*v));

		if (!v) {
			free(s);
			return -ENOMEM;
		}
		k->v = v;
		k->cap = cap;
	}
	k->v[k->n++] = s;
	return 0;
}

void tfs_kept_free(struct tfs_kept_strings *k)
{
	size_t i;

	for (i = 0; i < k->n; i++)
		free(k->v[i]);
	free(k->v);
	k->v = NULL;
	k->n = k->cap = 0;
}
