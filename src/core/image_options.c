// SPDX-License-Identifier: MIT
/*
 * Image options: sizes ("512M"), verify modes, the default cache budget,
 * -o as's dtype.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/builder.h"
#include "core/image.h"

#define DEFAULT_CACHE (1ull << 30)

/* the number a cgroup file holds ("max": UINT64_MAX), or UINT64_MAX */
static uint64_t read_limit(const char *path, const char *key)
{
	char line[256];
	unsigned long long v;
	uint64_t got = UINT64_MAX;
	size_t klen = key ? strlen(key) : 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return UINT64_MAX;
	while (fgets(line, sizeof(line), f)) {
		if (key && (strncmp(line, key, klen) || line[klen] != ' '))
			continue;
		if (sscanf(line + (key ? klen + 1 : 0), "%llu", &v) == 1)
			got = v;
		break;
	}
	fclose(f);
	return got;
}

/* v2: memory.max from @dir up to @root, the smallest */
static uint64_t v2_limit(const char *root, const char *path)
{
	char dir[PATH_MAX], file[PATH_MAX + 16];
	uint64_t lim = UINT64_MAX, v;
	size_t rlen = strlen(root);
	char *slash;

	if (snprintf(dir, sizeof(dir), "%s%s", root, path) >= (int)sizeof(dir))
		return UINT64_MAX;
	while (strlen(dir) > rlen) {
		snprintf(file, sizeof(file), "%s/memory.max", dir);
		v = read_limit(file, NULL);
		if (v < lim)
			lim = v;
		slash = strrchr(dir, '/');
		if (!slash)
			break;
		*slash = '\0';
	}
	return lim;
}

uint64_t tfs_cgroup_memory_limit(const char *proc_cgroup, const char *root)
{
	char line[PATH_MAX + 64], file[2 * PATH_MAX];
	uint64_t lim = UINT64_MAX, v;
	FILE *f = fopen(proc_cgroup, "re");

	if (!f)
		return UINT64_MAX;
	/* "ID:CONTROLLERS:PATH": v2 is "0::PATH" */
	while (fgets(line, sizeof(line), f)) {
		char *ctl = strchr(line, ':'), *path, *nl;

		path = ctl ? strchr(ctl + 1, ':') : NULL;
		if (!path)
			continue;
		*path++ = '\0';
		ctl++;
		nl = strchr(path, '\n');
		if (nl)
			*nl = '\0';
		if (path[0] != '/' || strstr(path, "/.."))
			continue;
		if (!*ctl) {
			v = v2_limit(root, strcmp(path, "/") ? path : "");
		} else if (!strcmp(ctl, "memory") || strstr(ctl, "memory,") ||
			   strstr(ctl, ",memory")) {
			snprintf(file, sizeof(file), "%s/memory%s/memory.stat",
				 root, strcmp(path, "/") ? path : "");
			v = read_limit(file, "hierarchical_memory_limit");
		} else {
			continue;
		}
		if (v < lim)
			lim = v;
	}
	fclose(f);
	return lim;
}

uint64_t tfs_default_cache_size(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	uint64_t quarter, cg;

	if (pages <= 0 || psize <= 0)
		return DEFAULT_CACHE;
	quarter = (uint64_t)pages / 4 * (uint64_t)psize;
	if (quarter < (64ull << 20))
		quarter = 64ull << 20;
	/* under a cgroup limit: a quarter of it, never below the minimum */
	cg = tfs_cgroup_memory_limit("/proc/self/cgroup", "/sys/fs/cgroup");
	if (cg != UINT64_MAX && cg / 4 < quarter)
		quarter = cg / 4 > TFS_CACHE_SIZE_MIN ? cg / 4
						      : TFS_CACHE_SIZE_MIN;
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

int tfs_parse_as(const char *s, enum tfs_dtype *out, bool *all)
{
	if (strcmp(s, "float32") == 0)
		*all = false;
	else if (strcmp(s, "float32,all") == 0)
		*all = true;
	else
		return -EINVAL;
	*out = TFS_DTYPE_FLOAT32;
	return 0;
}
