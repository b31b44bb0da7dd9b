// SPDX-License-Identifier: MIT
/* The one escaper of printed text: see src/core/text.h. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/names.h"
#include "core/text.h"

size_t tfs_text_safe_len(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t k;

	if (u[0] < 0x20 || u[0] == 0x7f)
		return 0;
	k = tfs_utf8_seq(u, n);
	/* U+0080..U+009F: C1 controls (0x9b is a CSI on some terminals) */
	if (k == 2 && u[0] == 0xc2 && u[1] < 0xa0)
		return 0;
	return k;
}

char *tfs_text_safe(char *buf, size_t len, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, o = 0, k;

	if (!len)
		return buf;
	while (i < n) {
		k = tfs_text_safe_len(s + i, n - i);
		if (k == 0) {
			if (o + 3 >= len)
				break;
			snprintf(buf + o, 4, "%%%02X", u[i]);
			o += 3;
			i++;
			continue;
		}
		if (o + k >= len)
			break;
		memcpy(buf + o, u + i, k);
		o += k;
		i += k;
	}
	buf[o] = '\0';
	return buf;
}

bool tfs_text_is_safe(const char *s, size_t n)
{
	size_t i = 0, k;

	while (i < n) {
		k = tfs_text_safe_len(s + i, n - i);
		if (!k)
			return false;
		i += k;
	}
	return true;
}

size_t tfs_text_whole(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t lead = n, want;

	/* the last lead byte among the final three bytes */
	while (lead > 0 && n - lead < 3 && (u[lead - 1] & 0xc0) == 0x80)
		lead--;
	if (lead == 0 || u[lead - 1] < 0xc2 || u[lead - 1] > 0xf4)
		return n;
	lead--;
	want = u[lead] >= 0xf0 ? 4 : u[lead] >= 0xe0 ? 3 : 2;
	return n - lead < want ? lead : n;
}

char *tfs_text_safe_dup(const char *s, size_t n)
{
	char *out;

	if (n > (SIZE_MAX - 1) / 3)
		return NULL;
	out = malloc(n * 3 + 1);
	return out ? tfs_text_safe(out, n * 3 + 1, s, n) : NULL;
}

char *tfs_text_location(char *buf, size_t len, const char *path)
{
	const char *sep = strstr(path, "://"), *host, *at;
	size_t end, scheme;
	char *tmp;

	if (!sep || sep == path ||
	    strspn(path, "abcdefghijklmnopqrstuvwxyz0123456789+-.") !=
		    (size_t)(sep - path))
		return tfs_text_safe(buf, len, path, strlen(path));
	scheme = (size_t)(sep - path);
	host = sep + 3;
	end = strcspn(host, "?#");
	/* "user:password@" before the first '/' */
	at = memchr(host, '@', end);
	if (at && (size_t)(at - host) < strcspn(host, "/")) {
		end -= (size_t)(at + 1 - host);
		host = at + 1;
	}
	if (asprintf(&tmp, "%.*s://%.*s", (int)scheme, path, (int)end, host) <
	    0)
		return tfs_text_safe(buf, len, "?", 1);
	tfs_text_safe(buf, len, tmp, strlen(tmp));
	free(tmp);
	return buf;
}
