// SPDX-License-Identifier: MIT
/* Image options: sizes ("512M"), verify modes, the default cache budget. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tensorfs/image.h"

#define DEFAULT_CACHE (1ull << 30)

uint64_t tfs_default_cache_size(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	uint64_t quarter;

	if (pages <= 0 || psize <= 0)
		return DEFAULT_CACHE;
	quarter = (uint64_t)pages / 4 * (uint64_t)psize;
	if (quarter < (64ull << 20))
		quarter = 64ull << 20;
	return quarter < DEFAULT_CACHE ? quarter : DEFAULT_CACHE;
}

int tfs_parse_size(const char *s, uint64_t *out)
{
	static const char units[] = "KMGT";
	unsigned long long whole;
	const char *u = NULL;
	long double v;
	unsigned shift = 0;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	whole = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	v = (long double)whole;
	if (*end == '.') {
		v = strtold(s, &end);
		if (end[-1] == '.')
			return -EINVAL;
	}
	if (*end >= 'a' && *end <= 'z')
		u = strchr(units, *end - 'a' + 'A');
	else if (*end >= 'A' && *end <= 'Z')
		u = strchr(units, *end);
	if (u) {
		shift = 10u * (unsigned)(u - units + 1);
		end++;
		if (*end == 'i' && (end[1] == 'B' || end[1] == 'b'))
			end += 2;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end)
		return -EINVAL;
	v = ldexpl(v, (int)shift);
	if (v > 9223372036854775808.0L)
		return -ERANGE;
	if (v != floorl(v))
		return -EINVAL; /* a fraction of a byte */
	*out = (uint64_t)v;
	return 0;
}

int tfs_parse_verify_mode(const char *s, enum tfs_verify_mode *out)
{
	if (!s)
		return -EINVAL;
	if (strcmp(s, "off") == 0)
		*out = TFS_VERIFY_OFF;
	else if (strcmp(s, "first") == 0)
		*out = TFS_VERIFY_FIRST;
	else if (strcmp(s, "always") == 0)
		*out = TFS_VERIFY_ALWAYS;
	else
		return -EINVAL;
	return 0;
}

const char *tfs_verify_mode_name(enum tfs_verify_mode m)
{
	switch (m) {
	case TFS_VERIFY_OFF:
		return "off";
	case TFS_VERIFY_ALWAYS:
		return "always";
	default:
		return "first";
	}
}
