// SPDX-License-Identifier: MIT
/*
 * Remote options of the command line: -o remote_mem=, remote_timeout=,
 * remote_conns=, remote_prefetch=, cache_dir=, cache_max=, no_cache,
 * insecure (mount), and the same list in $TENSORFS_REMOTE_OPTIONS (every
 * command).  Failures of remote sources are logged through fuse_log in
 * the daemon, to stderr otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "core/text.h"
#include "config.h"
#include "core/image.h"
#include "core/source.h"
#if TFS_HAVE_FUSE
#include <fuse_log.h>
#endif
#if TFS_HAVE_REMOTE
#include "remote/remote.h"

static struct tfs_remote_config cfg;
static bool have_cfg;

static void log_line(const char *line)
{
#if TFS_HAVE_FUSE
	fuse_log(FUSE_LOG_ERR, "tensorfs: %s\n", line);
#else
	fprintf(stderr, "tensorfs: %s\n", line);
#endif
}

static int init_cfg(void)
{
	const char *env = getenv("TENSORFS_REMOTE_OPTIONS"), *p, *end;
	size_t len;

	if (have_cfg)
		return 0;
	tfs_remote_config_default(&cfg);
	cfg.log = log_line;
	have_cfg = true;
	/* the environment first: -o options given after it override it */
	for (p = env; p && *p; p += len + (end ? 1 : 0)) {
		end = strchr(p, ',');
		len = end ? (size_t)(end - p) : strlen(p);
		if (len && tfs_remote_option(&cfg, p, len) != 1) {
			fprintf(stderr,
				"%s: TENSORFS_REMOTE_OPTIONS: %.*s: not a "
				"remote option, or a bad value\n",
				tfs_progname, (int)len, p);
			return -1;
		}
	}
	return 0;
}
#endif

int tfs_cli_remote_option(const char *opt, size_t len)
{
#if TFS_HAVE_REMOTE
	int r;

	if (init_cfg())
		return -1;
	r = tfs_remote_option(&cfg, opt, len);
	if (r < 0) {
		fprintf(stderr, "%s: %.*s: bad value (see --help)\n",
			tfs_progname, (int)len, opt);
		return -1;
	}
	return r;
#else
	return 0;
#endif
}

int tfs_cli_remote_setup(void)
{
#if TFS_HAVE_REMOTE
	if (init_cfg() || tfs_remote_configure(&cfg))
		return -1;
	tfs_source_set_url_opener(tfs_remote_open);
	tfs_source_set_url_index_finder(tfs_remote_find_index);
	tfs_image_set_url_lister(tfs_remote_list);
#endif
	return 0;
}

void tfs_cli_remote_mounted(void)
{
#if TFS_HAVE_REMOTE
	tfs_remote_mounted();
#endif
}

const char *tfs_cli_shown(const char *path, char *buf, size_t n)
{
	return tfs_text_location(buf, n, path);
}
