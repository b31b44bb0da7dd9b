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
	if (t->count) {
		if (n > SIZE_MAX - 1 - t->len)
			t->failed = 1;
		else
			t->len += n;
		return;
	}
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

void tfs_strbuf_sep(struct tfs_strbuf *t, char sep)
{
	if (t->len)
		tfs_strbuf_put(t, &sep, 1);
}

void tfs_strbuf_cut(struct tfs_strbuf *t, size_t len)
{
	if (len >= t->len)
		return;
	t->len = len;
	if (t->p)
		t->p[len] = '\0';
}

void tfs_strbuf_put_json_str(struct tfs_strbuf *t, const char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t i, run = 0;
	char esc[6] = {'\\', 'u', '0', '0'};

	tfs_strbuf_put(t, "\"", 1);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		const char *e = NULL;

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		/* the plain run before it, then its escape */
		tfs_strbuf_put(t, s + run, i - run);
		run = i + 1;
		switch (c) {
		case '"':
			e = "\\\"";
			break;
		case '\\':
			e = "\\\\";
			break;
		case '\b':
			e = "\\b";
			break;
		case '\f':
			e = "\\f";
			break;
		case '\n':
			e = "\\n";
			break;
		case '\r':
			e = "\\r";
			break;
		case '\t':
			e = "\\t";
			break;
		}
		if (e) {
			tfs_strbuf_put(t, e, 2);
			continue;
		}
		esc[4] = hex[c >> 4];
		esc[5] = hex[c & 15];
		tfs_strbuf_put(t, esc, 6);
	}
	tfs_strbuf_put(t, s + run, n - run);
	tfs_strbuf_put(t, "\"", 1);
}
