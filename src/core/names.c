// SPDX-License-Identifier: MIT
/* Name mapping: see src/core/names.h and docs/tree.md. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/names.h"
#include "core/text.h"

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

/*
 * The escaped form of the character at @u (@len > 0 bytes) into @piece
 * (up to 4 bytes, not terminated): its length; *@used: the bytes it took.
 * One rule with printed text (tfs_text_safe_len: C0 and C1 controls, DEL,
 * invalid UTF-8), plus '%' (so every "%XX" is an escape) and '/'.
 */
static size_t escape_char(const unsigned char *u, size_t len, char *piece,
			  size_t *used)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = u[0] == '%' || u[0] == '/'
			   ? 0
			   : tfs_text_safe_len((const char *)u, len);

	if (n == 0) {
		piece[0] = '%';
		piece[1] = hex[u[0] >> 4];
		piece[2] = hex[u[0] & 15];
		*used = 1;
		return 3;
	}
	memcpy(piece, u, n);
	*used = n;
	return n;
}

/* the whole escape of a name that is "", "." or "..", else NULL */
static const char *escape_dots(const char *s, size_t len)
{
	if (len == 0)
		return "%";
	if (len == 1 && s[0] == '.')
		return "%2E";
	if (len == 2 && s[0] == '.' && s[1] == '.')
		return "%2E%2E";
	return NULL;
}

char *tfs_name_escape(const char *s, size_t len, size_t max)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, o = 0, used;
	uint64_t h = 0xcbf29ce484222325ull;
	const char *dots = escape_dots(s, len);
	char *out;

	if (len > (SIZE_MAX - 32) / 3)
		return NULL;
	out = malloc(len * 3 + 32);
	if (!out)
		return NULL;
	if (dots) {
		strcpy(out, dots);
		return out;
	}
	while (i < len) {
		o += escape_char(u + i, len - i, out + o, &used);
		i += used;
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
	const unsigned char *u = (const unsigned char *)name;
	const char *dots = escape_dots(name, name_len);
	size_t i = 0, o = 0, cut = 0, k, used;
	char piece[4];

	if (!len)
		return buf;
	if (dots) {
		snprintf(buf, len, "%s", dots);
		return buf;
	}
	/* escaped in place: what fits of len - 1 bytes; @cut: the last end
	 * of a character (a UTF-8 sequence or a %XX) up to len - 4 */
	while (i < name_len) {
		k = escape_char(u + i, name_len - i, piece, &used);
		if (o + k > len - 1)
			break;
		memcpy(buf + o, piece, k);
		o += k;
		i += used;
		if (o + 3 < len)
			cut = o;
	}
	buf[o] = '\0';
	if (i == name_len)
		return buf;
	/* too long: cut at a character's end, then "..." */
	snprintf(buf + cut, len - cut, "...");
	return buf;
}

int tfs_name_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	if (c || alen == blen)
		return c;
	return alen < blen ? -1 : 1;
}
