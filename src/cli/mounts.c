// SPDX-License-Identifier: MIT
/*
 * The mounts of this process's namespace (/proc/self/mountinfo), for the
 * mount command (is its mount point one already?) and tensorfs open (which
 * of ours are live), and the seconds of -o idle_timeout=.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* one mountinfo field from @p into @out (its \ooo escapes undone); the
 * byte after it */
static const char *field(const char *p, char *out, size_t n)
{
	char *o = out;

	while (*p == ' ')
		p++;
	for (; *p && *p != ' ' && *p != '\n' && o < out + n - 1; o++) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] &&
		    p[3]) {
			*o = (char)((p[1] - '0') << 6 | (p[2] - '0') << 3 |
				    (p[3] - '0'));
			p += 4;
		} else {
			*o = *p++;
		}
	}
	*o = '\0';
	return p;
}

int tfs_cli_each_mount(int (*fn)(void *ctx, const char *mnt, const char *type,
				 const char *source),
		       void *ctx)
{
	char line[8192], mnt[PATH_MAX], type[256], source[PATH_MAX + 16];
	const char *p, *dash;
	int ret = 0, k;
	FILE *f;

	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	while (!ret && fgets(line, sizeof(line), f)) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [TAGS] - TYPE SRC
		 */
		p = line;
		for (k = 0; k < 4 && p; k++) {
			p = strchr(p, ' ');
			if (p)
				p++;
		}
		dash = strstr(line, " - ");
		if (!p || !dash)
			continue;
		field(p, mnt, sizeof(mnt));
		p = field(dash + 3, type, sizeof(type));
		field(p, source, sizeof(source));
		ret = fn(ctx, mnt, type, source);
	}
	fclose(f);
	return ret;
}

static int same_mount_point(void *ctx, const char *mnt, const char *type,
			    const char *source)
{
	(void)type;
	(void)source;
	return strcmp(mnt, ctx) == 0;
}

bool tfs_cli_is_mount_point(const char *path)
{
	char real[PATH_MAX];

	return realpath(path, real) &&
	       tfs_cli_each_mount(same_mount_point, real) > 0;
}

int tfs_cli_parse_seconds(const char *s, unsigned *out)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v > TFS_CLI_SECONDS_MAX)
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}
