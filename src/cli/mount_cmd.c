// SPDX-License-Identifier: MIT
/*
 * The mount command: "tensorfs [options] INPUT... MOUNTPOINT".
 *
 * The command line is ours: options may come before or after the
 * positional arguments (mount.fuse3 puts "-o ..." last).  Our own -o
 * options (flat, npy, as=, previews, cache_size=, verify=, readahead=,
 * keep_source_cache, [no_]auto_unmount, logfile=, idle_timeout=)
 * are taken out; the others go to libfuse.  The mountpoint is checked (a
 * directory, not already a mount point), every input is opened and validated,
 * and only then does the FUSE layer mount (tfs_fuse_run), so a refused
 * container or a bad mountpoint never leaves a mount behind.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "config.h"
#if TFS_HAVE_FUSE
#include "fuse/run.h"
#endif

struct mount_cmd {
	char **pos; /* positional arguments */
	int npos;
	bool foreground, debug, single_thread, help, version;
	struct tfs_build_options build;
	char *cache_size, *verify, *readahead, *as, *logfile, *idle_timeout;
	bool keep_source_cache, no_auto_unmount;
	char *fuse_options; /* comma-separated, for libfuse */
	char **abs;	    /* the inputs, absolute (absolute_inputs) */
};

static int add_fuse_option(struct mount_cmd *m, const char *o, size_t len)
{
	size_t old = m->fuse_options ? strlen(m->fuse_options) : 0;
	char *n = realloc(m->fuse_options, old + len + 2);

	if (!n)
		return -1;
	if (old)
		n[old++] = ',';
	memcpy(n + old, o, len);
	n[old + len] = '\0';
	m->fuse_options = n;
	return 0;
}

/* -o as=TYPE */
static int take_as(struct mount_cmd *m, const char *v, size_t len)
{
	free(m->as);
	m->as = strndup(v, len);
	if (!m->as)
		return -1;
	if (tfs_parse_as(m->as, &m->build.as, &m->build.as_all)) {
		fprintf(stderr,
			"%s: as=%s: the one converting view is float32 "
			"(as=float32,all: integers and bool too)\n",
			tfs_progname, m->as);
		return -1;
	}
	return 0;
}

/* -o export_shard=SIZE */
static int take_shard(struct mount_cmd *m, const char *v, size_t len)
{
	char *s = strndup(v, len);
	int ret = s ? tfs_parse_size(s, &m->build.export_shard) : -ENOMEM;

	if (ret || !m->build.export_shard) {
		tfs_cli_say(stderr,
			    "%s: export_shard=%s: not a size above 0 (512M, "
			    "5G, 1000000000)\n",
			    tfs_progname, s ? s : "");
		free(s);
		return -1;
	}
	free(s);
	return 0;
}

/* one "-o a,b=c" list: ours are kept, the rest go to libfuse */
static int take_options(struct mount_cmd *m, const char *list)
{
	const char *p = list, *end;
	size_t len;
	int r = 0;

	while (*p) {
		end = strchr(p, ',');
		len = end ? (size_t)(end - p) : strlen(p);
		if (len == 4 && strncmp(p, "flat", 4) == 0)
			m->build.flat = true;
		else if (len == 3 && strncmp(p, "npy", 3) == 0)
			m->build.npy = true;
		else if (len == 8 && strncmp(p, "previews", 8) == 0)
			m->build.previews = true;
		else if (len == 10 && strncmp(p, "export=off", 10) == 0)
			m->build.no_export = true;
		else if (len == 9 && strncmp(p, "export=on", 9) == 0)
			m->build.no_export = false;
		else if (len > 13 && strncmp(p, "export_shard=", 13) == 0) {
			if (take_shard(m, p + 13, len - 13))
				return -1;
		}
		else if (len > 11 && strncmp(p, "cache_size=", 11) == 0)
			m->cache_size = strndup(p + 11, len - 11);
		else if (len > 7 && strncmp(p, "verify=", 7) == 0)
			m->verify = strndup(p + 7, len - 7);
		else if (len > 3 && strncmp(p, "as=", 3) == 0) {
			if (take_as(m, p + 3, len - 3))
				return -1;
		} else if (len == 3 && strncmp(p, "all", 3) == 0 && m->as) {
			/* as=float32,all: the list's comma split it */
			m->build.as_all = true;
		} else if (len > 8 && strncmp(p, "logfile=", 8) == 0) {
			free(m->logfile);
			m->logfile = strndup(p + 8, len - 8);
		} else if (len > 13 && strncmp(p, "idle_timeout=", 13) == 0) {
			free(m->idle_timeout);
			m->idle_timeout = strndup(p + 13, len - 13);
		} else if (len > 10 && strncmp(p, "readahead=", 10) == 0)
			m->readahead = strndup(p + 10, len - 10);
		else if (len == 17 && strncmp(p, "keep_source_cache", 17) == 0)
			m->keep_source_cache = true;
		else if (len == 15 && strncmp(p, "no_auto_unmount", 15) == 0)
			m->no_auto_unmount = true;
		else if (len == 12 && strncmp(p, "auto_unmount", 12) == 0)
			m->no_auto_unmount = false;
		else if (len && (r = tfs_cli_remote_option(p, len)) < 0)
			return -1;
		else if (len && !r && add_fuse_option(m, p, len))
			return -1;
		p += len + (end ? 1 : 0);
	}
	return 0;
}

static int parse(struct mount_cmd *m, int argc, char **argv)
{
	int i;

	m->pos = calloc((size_t)argc, sizeof(*m->pos));
	if (!m->pos)
		return -1;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "-f") == 0) {
			m->foreground = true;
		} else if (strcmp(a, "-d") == 0 || strcmp(a, "--debug") == 0) {
			m->debug = m->foreground = true;
		} else if (strcmp(a, "-s") == 0) {
			m->single_thread = true;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			m->help = true;
		} else if (strcmp(a, "-V") == 0 ||
			   strcmp(a, "--version") == 0) {
			m->version = true;
		} else if (strcmp(a, "-o") == 0) {
			if (++i == argc) {
				tfs_cli_say(stderr, "%s: -o needs options\n",
					    tfs_progname);
				return -1;
			}
			if (take_options(m, argv[i]))
				return -1;
		} else if (strncmp(a, "-o", 2) == 0) {
			if (take_options(m, a + 2))
				return -1;
		} else if (strcmp(a, "--") == 0) {
			while (++i < argc)
				m->pos[m->npos++] = argv[i];
		} else if (a[0] == '-' && a[1]) {
			tfs_cli_say(stderr,
				    "%s: unknown option %s (see --help)\n",
				    tfs_progname, a);
			return -1;
		} else {
			m->pos[m->npos++] = argv[i];
		}
	}
	return 0;
}

#if TFS_HAVE_FUSE
/* a directory, not a mount point already: else exit 5 with one line */
static int check_mountpoint(const char *mnt)
{
	struct stat st;

	if (stat(mnt, &st) != 0) {
		if (errno == ENOTCONN)
			tfs_cli_say(
				stderr,
				"%s: %s: a dead mount (its daemon is gone); "
				"clear it with: fusermount3 -u %s\n",
				tfs_progname, mnt, mnt);
		else
			tfs_cli_say(stderr, "%s: %s: %s\n", tfs_progname, mnt,
				    strerror(errno));
		return TFS_EXIT_MOUNT;
	}
	if (!S_ISDIR(st.st_mode)) {
		tfs_cli_say(stderr, "%s: %s: not a directory\n", tfs_progname,
			    mnt);
		return TFS_EXIT_MOUNT;
	}
	if (tfs_cli_is_mount_point(mnt)) {
		tfs_cli_say(stderr,
			    "%s: %s: already a mount point; unmount it first\n",
			    tfs_progname, mnt);
		return TFS_EXIT_MOUNT;
	}
	return 0;
}
#endif

/* -o cache_size= and -o verify= into @io; an exit status */
static int read_options(const struct mount_cmd *m, struct tfs_image_options *io)
{
	memset(io, 0, sizeof(*io));
	if (m->cache_size && (tfs_parse_size(m->cache_size, &io->cache_size) ||
			      io->cache_size < TFS_CACHE_SIZE_MIN)) {
		tfs_cli_say(
			stderr,
			"%s: cache_size=%s: expected a size of at least 1M, "
			"such as 256M or 2G\n",
			tfs_progname, m->cache_size);
		return TFS_EXIT_USAGE;
	}
	if (m->verify && tfs_parse_verify_mode(m->verify, &io->verify)) {
		tfs_cli_say(stderr,
			    "%s: verify=%s: expected off, first or always\n",
			    tfs_progname, m->verify);
		return TFS_EXIT_USAGE;
	}
	return 0;
}

#if TFS_HAVE_FUSE
/*
 * The local inputs as absolute paths (symlinks kept): the detached daemon
 * runs in /, and mount(8) shows the first as the source.  URLs as given.
 */
static int absolute_inputs(struct mount_cmd *m)
{
	char cwd[PATH_MAX] = "";
	int i;

	m->abs = calloc((size_t)m->npos, sizeof(*m->abs));
	if (!m->abs)
		return -1;
	for (i = 0; i < m->npos - 1; i++) {
		const char *p = m->pos[i];

		if (p[0] == '/' || strstr(p, "://")) {
			m->abs[i] = strdup(p);
		} else {
			if (!cwd[0] && !getcwd(cwd, sizeof(cwd))) {
				tfs_cli_say(stderr, "%s: %s: %s\n",
					    tfs_progname, p, strerror(errno));
				return -1;
			}
			if (asprintf(&m->abs[i], "%s/%s", cwd, p) < 0)
				m->abs[i] = NULL;
		}
		if (!m->abs[i])
			return -1;
	}
	return 0;
}

static int run(struct mount_cmd *m, const struct tfs_image_options *io)
{
	const char *mnt = m->pos[m->npos - 1];
	struct tfs_fuse_args fa = {
		.mountpoint = mnt,
		.fsname = NULL,
		.fuse_options = m->fuse_options,
		.foreground = m->foreground,
		.debug = m->debug,
		.single_thread = m->single_thread,
		.readahead = TFS_DEFAULT_READAHEAD,
		.keep_source_cache = m->keep_source_cache,
		.auto_unmount = !m->no_auto_unmount,
		.logfile = m->logfile,
		.read = *io,
	};
	struct tfs_image *img = NULL;
	int ret;

	if (m->readahead && (tfs_parse_size(m->readahead, &fa.readahead) ||
			     fa.readahead > TFS_MAX_READAHEAD)) {
		fprintf(stderr,
			"%s: readahead=%s: expected a size up to 1G, such as "
			"128K or 4M (0 leaves the kernel's)\n",
			tfs_progname, m->readahead);
		return TFS_EXIT_USAGE;
	}
	if (m->idle_timeout &&
	    tfs_cli_parse_seconds(m->idle_timeout, &fa.idle_timeout)) {
		tfs_cli_say(stderr,
			    "%s: idle_timeout=%s: expected seconds, 0 to "
			    "%u (0: never)\n",
			    tfs_progname, m->idle_timeout, TFS_CLI_SECONDS_MAX);
		return TFS_EXIT_USAGE;
	}
	if (absolute_inputs(m))
		return TFS_EXIT_USAGE;
	fa.fsname = m->abs[0];
	ret = tfs_cli_open_inputs(m->abs, m->npos - 1, &m->build, &img);
	if (ret)
		return ret;
	tfs_cli_remote_mounted();
	switch (tfs_fuse_run(img, &fa)) {
	case TFS_FUSE_OK:
		ret = TFS_EXIT_OK;
		break;
	case TFS_FUSE_BAD_OPTION:
		ret = TFS_EXIT_USAGE;
		break;
	case TFS_FUSE_MOUNT_FAILED:
		ret = TFS_EXIT_MOUNT;
		break;
	default:
		ret = TFS_EXIT_IO;
	}
	tfs_image_close(img);
	return ret;
}
#endif

int tfs_cmd_mount(int argc, char **argv)
{
	struct mount_cmd m = {0};
	struct tfs_image_options io;
	int ret = TFS_EXIT_USAGE;

	if (parse(&m, argc, argv))
		goto out;
	if (m.help) {
		tfs_usage(stdout);
#if TFS_HAVE_FUSE
		tfs_fuse_help();
#endif
		ret = TFS_EXIT_OK;
		goto out;
	}
	if (m.version) {
		printf("tensorfs %s\n", TFS_VERSION);
#if TFS_HAVE_FUSE
		printf("libfuse %s\n", tfs_fuse_version());
#endif
		ret = TFS_EXIT_OK;
		goto out;
	}
	if (m.npos < 2) {
		fprintf(stderr,
			"usage: %s [options] CONTAINER|DIRECTORY... MOUNTPOINT "
			"(see --help)\n",
			tfs_progname);
		goto out;
	}
	ret = read_options(&m, &io);
	if (ret)
		goto out;
#if TFS_HAVE_FUSE
	ret = check_mountpoint(m.pos[m.npos - 1]);
	if (!ret)
		ret = run(&m, &io);
#else
	fprintf(stderr,
		"%s: built without FUSE: use ls, cat, info, xattr or verify\n",
		tfs_progname);
	ret = TFS_EXIT_USAGE;
#endif
out:
	for (int i = 0; m.abs && i < m.npos; i++)
		free(m.abs[i]);
	free(m.abs);
	free(m.pos);
	free(m.cache_size);
	free(m.readahead);
	free(m.as);
	free(m.logfile);
	free(m.idle_timeout);
	free(m.verify);
	free(m.fuse_options);
	return ret;
}
