// SPDX-License-Identifier: MIT
/*
 * tensorfs open: "Open with tensorfs" (data/desktop/tensorfs.desktop).
 *
 *   tensorfs open [-o OPTIONS] FILE   mount FILE (a shard or an index: its
 *                                     directory) under
 *                                     $XDG_RUNTIME_DIR/tensorfs/<name>,
 *                                     previews on, and xdg-open it
 *   tensorfs open --list              our mounts there: mount point, source
 *   tensorfs open --close [WHAT]      unmount them (all, or the one of
 *                                     WHAT: a file, a name, a mount point)
 *
 * A live mount of the same source there is reused.  The mount is the mount
 * command run as a child (/proc/self/exe), which returns once the daemon
 * serves; it unmounts itself when idle (-o idle_timeout=, default
 * OPEN_IDLE seconds).  No root: fusermount3 does the mounting.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli.h"

#define OPEN_IDLE "600"	   /* seconds: -o idle_timeout= of an opened mount */
#define FSNAME "tensorfs:" /* the mount's source: fsname=tensorfs:PATH */

extern char **environ;

/* $XDG_RUNTIME_DIR/tensorfs, made (0700); malloc'd, or NULL (printed) */
static char *runtime_base(void)
{
	const char *rt = getenv("XDG_RUNTIME_DIR");
	char *base;

	if (!rt || rt[0] != '/') {
		fprintf(stderr,
			"%s open: XDG_RUNTIME_DIR is not set (a login session "
			"sets it)\n",
			tfs_progname);
		return NULL;
	}
	if (asprintf(&base, "%s/tensorfs", rt) < 0)
		return NULL;
	if (mkdir(base, 0700) != 0 && errno != EEXIST) {
		tfs_cli_say(stderr, "%s open: %s: %s\n", tfs_progname, base,
			    strerror(errno));
		free(base);
		return NULL;
	}
	return base;
}

/* "NAME-00001-of-00003.EXT": a shard of a set */
static bool is_shard_name(const char *name)
{
	const char *p = strstr(name, "-of-");
	size_t a = 0, b = 0;

	while (p) {
		for (a = 0; p - a > name && p[-1 - (long)a] >= '0' &&
			    p[-1 - (long)a] <= '9';
		     a++)
			;
		for (b = 0; p[4 + b] >= '0' && p[4 + b] <= '9'; b++)
			;
		if (a && b && p - a > name && p[-1 - (long)a] == '-' &&
		    p[4 + b] == '.')
			return true;
		p = strstr(p + 1, "-of-");
	}
	return false;
}

/*
 * What to mount for @file: its real path, or its directory's for a shard
 * or a shard index (the whole model); malloc'd, or NULL (printed)
 */
static char *source_of(const char *file)
{
	char *real = realpath(file, NULL), *slash;
	const char *name;
	struct stat st;
	size_t len;

	if (!real || stat(real, &st) != 0) {
		tfs_cli_say(stderr, "%s: %s: %s\n", tfs_progname, file,
			    strerror(errno));
		free(real);
		return NULL;
	}
	if (S_ISDIR(st.st_mode))
		return real;
	slash = strrchr(real, '/');
	name = slash + 1;
	len = strlen(name);
	if ((is_shard_name(name) ||
	     (len > 11 && strcmp(name + len - 11, ".index.json") == 0)) &&
	    slash != real)
		*slash = '\0';
	return real;
}

/* a mount of ours: fuse.tensorfs, under @base */
static bool ours(const char *base, const char *mnt, const char *type)
{
	size_t n = strlen(base);

	return strcmp(type, "fuse.tensorfs") == 0 &&
	       strncmp(mnt, base, n) == 0 && mnt[n] == '/' &&
	       !strchr(mnt + n + 1, '/');
}

struct find {
	const char *base;
	/* NULL both: every one of ours; else those of this source (or this
	 * mount point), or of this name */
	const char *source;
	const char *what;
	char *found; /* the first match's mount point (malloc'd) */
	int count;
	bool list, close;
	int status;
};

static int run_wait(char *const argv[], bool search, bool no_stdout);

static int visit(void *ctx, const char *mnt, const char *type,
		 const char *source)
{
	struct find *f = ctx;
	const char *src = strncmp(source, FSNAME, strlen(FSNAME)) == 0
				  ? source + strlen(FSNAME)
				  : source;
	char *argv[] = {"fusermount3", "-u", (char *)mnt, NULL};

	if (!ours(f->base, mnt, type) ||
	    ((f->source || f->what) &&
	     !(f->source &&
	       (strcmp(src, f->source) == 0 || strcmp(mnt, f->source) == 0)) &&
	     !(f->what && strcmp(strrchr(mnt, '/') + 1, f->what) == 0)))
		return 0;
	f->count++;
	if (f->list) { /* the tab between: not escaped */
		tfs_cli_say(stdout, "%s", mnt);
		putchar('\t');
		tfs_cli_say(stdout, "%s\n", src);
	}
	if (f->close) {
		if (run_wait(argv, true, false) != 0) {
			f->status = TFS_EXIT_MOUNT;
		} else if (rmdir(mnt) != 0) {
			tfs_cli_say(stderr, "%s: %s: %s\n", tfs_progname, mnt,
				    strerror(errno));
		}
	}
	if (!f->list && !f->close) {
		f->found = strdup(mnt);
		return f->found ? 1 : -ENOMEM;
	}
	return 0;
}

/*
 * run @argv (from PATH when @search; its stdout /dev/null when @no_stdout)
 * and wait: its exit status, or -1.  With @no_stdout, only OPEN_WAIT_MS:
 * still running then is success (xdg-open without a desktop runs the file
 * manager in the foreground until its window is closed).
 */
#define OPEN_WAIT_MS 1500
static int run_wait(char *const argv[], bool search, bool no_stdout)
{
	posix_spawn_file_actions_t fa;
	pid_t pid, got;
	int st, err, ms;

	if (posix_spawn_file_actions_init(&fa))
		return -1;
	if (no_stdout)
		posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO,
						 "/dev/null", O_WRONLY, 0);
	err = search ? posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ)
		     : posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (err) {
		tfs_cli_say(stderr, "%s: %s: %s\n", tfs_progname, argv[0],
			    strerror(err));
		return -1;
	}
	for (ms = 0; no_stdout && ms < OPEN_WAIT_MS; ms += 50) {
		got = waitpid(pid, &st, WNOHANG);
		if (got == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		if (got < 0 && errno != EINTR)
			return -1;
		usleep(50 * 1000);
	}
	if (no_stdout)
		return 0;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * A free mount point for @source under @base: BASE/NAME, else NAME-2 ...;
 * made, or an empty directory left by an earlier mount, or a dead mount
 * (its daemon gone) cleared.  Malloc'd, or NULL (printed).
 */
static char *new_mount_point(const char *base, const char *source)
{
	const char *name = strrchr(source, '/');
	char *mnt = NULL, *clear[] = {"fusermount3", "-u", "-z", NULL, NULL};
	struct stat st;
	int i;

	name = name && name[1] ? name + 1 : "root";
	for (i = 1; i <= 100; i++) {
		free(mnt);
		if ((i == 1 ? asprintf(&mnt, "%s/%s", base, name)
			    : asprintf(&mnt, "%s/%s-%d", base, name, i)) < 0)
			return NULL;
		if (mkdir(mnt, 0700) == 0)
			return mnt;
		if (stat(mnt, &st) != 0 && errno == ENOTCONN) {
			clear[3] = mnt;
			if (run_wait(clear, true, false) == 0)
				return mnt;
			continue;
		}
		/* an empty directory, not a mount: rmdir tells */
		if (S_ISDIR(st.st_mode) && !tfs_cli_is_mount_point(mnt) &&
		    rmdir(mnt) == 0 && mkdir(mnt, 0700) == 0)
			return mnt;
	}
	tfs_cli_say(stderr, "%s open: %s/%s: no free name\n", tfs_progname,
		    base, name);
	free(mnt);
	return NULL;
}

/* mount @source at @mnt: the mount command as a child; its exit status */
static int mount_it(const char *source, const char *mnt, const char *opts)
{
	char *o = NULL;
	int ret;

	if (asprintf(&o, "previews%s%s%s", opts ? "," : "", opts ? opts : "",
		     opts && strstr(opts, "idle_timeout=")
			     ? ""
			     : ",idle_timeout=" OPEN_IDLE) < 0)
		return TFS_EXIT_USAGE;
	{
		char *argv[] = {"/proc/self/exe", "-o",	       o,
				(char *)source,	  (char *)mnt, NULL};

		ret = run_wait(argv, false, false);
	}
	free(o);
	return ret < 0 ? TFS_EXIT_MOUNT : ret;
}

static int open_usage(FILE *f)
{
	fprintf(f,
		"usage: %s open [-o OPTIONS] FILE\n"
		"       %s open --list\n"
		"       %s open --close [FILE|NAME|MOUNTPOINT]\n",
		tfs_progname, tfs_progname, tfs_progname);
	if (f == stdout)
		fprintf(f,
			"Mount FILE (a shard or an index: its directory) "
			"under\n$XDG_RUNTIME_DIR/tensorfs/NAME with previews, "
			"reusing a live mount of it,\nprint the mount point "
			"and open it with xdg-open.  It unmounts itself\nafter "
			"%s s without use (-o idle_timeout=SECONDS; 0: "
			"never).\n  --list   the mounts there: mount point, "
			"source\n  --close  unmount them (all, or FILE's, "
			"NAME's, MOUNTPOINT's)\n",
			OPEN_IDLE);
	return f == stdout ? TFS_EXIT_OK : TFS_EXIT_USAGE;
}

int tfs_cmd_open(int argc, char **argv)
{
	struct find f = {0};
	const char *opts = NULL, *arg = NULL;
	char *base = NULL, *source = NULL, *mnt = NULL;
	char *xdg[] = {"xdg-open", NULL, NULL};
	bool list = false, close = false;
	int a, ret = TFS_EXIT_USAGE;

	for (a = 1; a < argc; a++) {
		if (strcmp(argv[a], "--help") == 0 ||
		    strcmp(argv[a], "-h") == 0)
			return open_usage(stdout);
		if (strcmp(argv[a], "--list") == 0)
			list = true;
		else if (strcmp(argv[a], "--close") == 0)
			close = true;
		else if (strcmp(argv[a], "-o") == 0 && a + 1 < argc)
			opts = argv[++a];
		else if (!arg && (argv[a][0] != '-' || !argv[a][1]))
			arg = argv[a];
		else
			return open_usage(stderr);
	}
	if ((list && (close || arg || opts)) || (close && opts) ||
	    (!list && !close && !arg))
		return open_usage(stderr);
	base = runtime_base();
	if (!base)
		goto out;
	f.base = base;
	if (list || close) {
		f.list = list;
		f.close = close;
		if (arg) {
			/* a file (its source), a mount point, or a name */
			f.what = arg;
			if (access(arg, F_OK) == 0)
				f.source = source = source_of(arg);
		}
		if (tfs_cli_each_mount(visit, &f) < 0)
			goto out;
		ret = f.status;
		if (!ret && arg && !f.count) {
			tfs_cli_say(stderr, "%s open: %s: not open\n",
				    tfs_progname, arg);
			ret = TFS_EXIT_NOTFOUND;
		}
		goto out;
	}
	source = source_of(arg);
	if (!source) {
		ret = TFS_EXIT_IO;
		goto out;
	}
	f.source = source;
	if (tfs_cli_each_mount(visit, &f) < 0)
		goto out;
	if (f.found) {
		mnt = f.found;
	} else {
		mnt = new_mount_point(base, source);
		if (!mnt)
			goto out;
		ret = mount_it(source, mnt, opts);
		if (ret) {
			rmdir(mnt);
			goto out;
		}
	}
	tfs_cli_say(stdout, "%s\n", mnt);
	fflush(stdout);
	xdg[1] = mnt;
	/*
	 * Its stdout is not ours: the file manager it starts may keep it
	 * open, and a caller reading ours would wait for that to end.  No
	 * file manager to show it: the mount stays, its path printed.
	 */
	ret = run_wait(xdg, true, true) == 0 ? TFS_EXIT_OK : TFS_EXIT_USAGE;
out:
	free(mnt);
	free(source);
	free(base);
	return ret;
}
