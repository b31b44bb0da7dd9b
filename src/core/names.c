// SPDX-License-Identifier: MIT
/* Name mapping: see src/core/names.h and docs/tree.md. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorfs/names.h"

size_t tfs_utf8_seq(const unsigned char *s, size_t len)
{
	unsigned char c = s[0];
	size_t n, i;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (len < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

int tfs_utf8_valid(const unsigned char *s, size_t len)
{
	size_t i = 0, n;

	while (i < len) {
		/* ASCII, the usual case, a byte at a time without decoding */
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		n = tfs_utf8_seq(s + i, len - i);
		if (!n)
			return 0;
		i += n;
	}
	return 1;
}

static int needs_escape(unsigned char c)
{
	return c == '%' || c == '/' || c < 0x20 || c == 0x7f;
}

void tfs_name_cut(char *comp, size_t max)
{
	size_t len = strlen(comp);
	size_t i = 0, n, keep = 0;
	const unsigned char *u = (const unsigned char *)comp;

	if (len <= max)
		return;
	/* escaped output is valid UTF-8 with atomic "%XX" triples */
	while (i < len) {
		n = u[i] == '%' ? 3 : tfs_utf8_seq(u + i, len - i);
		if (!n)
			n = 1;
		if (i + n > max)
			break;
		i += n;
		keep = i;
	}
	comp[keep] = '\0';
}

char *tfs_name_escape(const char *s, size_t len, size_t max)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, o = 0, n, k;
	uint64_t h = 0xcbf29ce484222325ull;
	char *out;

	if (len > (SIZE_MAX - 32) / 3)
		return NULL;
	out = malloc(len * 3 + 32);
	if (!out)
		return NULL;
	if (len == 0 || (len == 1 && s[0] == '.') ||
	    (len == 2 && s[0] == '.' && s[1] == '.')) {
		strcpy(out, len == 0 ? "%" : len == 1 ? "%2E" : "%2E%2E");
		return out;
	}
	while (i < len) {
		n = needs_escape(u[i]) ? 0 : tfs_utf8_seq(u + i, len - i);
		/* C1 controls (U+0080..U+009F): control characters too */
		if (n == 2 && u[i] == 0xc2 && u[i + 1] < 0xa0)
			n = 0;
		if (n == 0) {
			o += (size_t)sprintf(out + o, "%%%02X", u[i]);
			i++;
			continue;
		}
		for (k = 0; k < n; k++)
			out[o++] = (char)u[i++];
	}
	out[o] = '\0';
	if (o <= max)
		return out;
	for (i = 0; i < o; i++) {
		h ^= (unsigned char)out[i];
		h *= 0x100000001b3ull;
	}
	tfs_name_cut(out, max - 17);
	sprintf(out + strlen(out), "~%016llx", (unsigned long long)h);
	return out;
}

char *tfs_name_printable(char *buf, size_t len, const char *name,
			 size_t name_len)
{
	char *esc;

	if (!len)
		return buf;
	esc = tfs_name_escape(name, name_len, SIZE_MAX);
	if (!esc) {
		snprintf(buf, len, "?");
		return buf;
	}
	if (strlen(esc) < len) {
		memcpy(buf, esc, strlen(esc) + 1);
	} else {
		size_t cut = len > 4 ? len - 4 : 0;

		/* never in the middle of a UTF-8 sequence */
		while (cut && ((unsigned char)esc[cut] & 0xc0) == 0x80)
			cut--;
		snprintf(buf, len, "%.*s...", (int)cut, esc);
	}
	free(esc);
	return buf;
}

int tfs_name_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	if (c || alen == blen)
		return c;
	return alen < blen ? -1 : 1;
}
