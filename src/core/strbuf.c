// SPDX-License-Identifier: MIT
/* A growing text: see strbuf.h. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

void tfs_strbuf_put(struct tfs_strbuf *t, const char *s, size_t n)
{
	char *np;
	size_t cap;

	if (t->failed)
		return;
	if (n + 1 > t->cap - t->len) {
		cap = t->cap ? t->cap : 4096;
		while (n + 1 > cap - t->len) {
			if (cap > SIZE_MAX / 2) {
				t->failed = 1;
				return;
			}
			cap *= 2;
		}
		np = realloc(t->p, cap);
		if (!np) {
			t->failed = 1;
			return;
		}
		t->p = np;
		t->cap = cap;
	}
	memcpy(t->p + t->len, s, n);
	t->len += n;
	t->p[t->len] = '\0';
}

void tfs_strbuf_puts(struct tfs_strbuf *t, const char *s)
{
	tfs_strbuf_put(t, s, strlen(s));
}
