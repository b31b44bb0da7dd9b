// SPDX-License-Identifier: MIT
/*
 * The mount path: parse options, open and fully validate the container,
 * and only then mount; daemonize after the mount exists, so the parent
 * returns when the mount is ready.  A refused container never leaves a mount
 * behind.  SIGINT/SIGTERM/SIGHUP end the loop and unmount (libfuse's
 * handlers).  Logs go to stderr in the foreground, to syslog once detached.
 * Our own options: flat, cache_size=SIZE (decoded zstd data kept in
 * memory), verify=off|first|always (digest checks); the read path reports
 * integrity failures through fuse_log.
 */
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <stdbool.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "config.h"
#include "cli/cli.h"
#include "fuse/fs.h"

struct mount_opts {
	char *container;
	const char *mountpoint; /* as given (argv), for error reporting */
	int flat;
	int npy;
	char *cache_size;
	char *verify;
};

static const struct fuse_opt opt_spec[] = {
	{"flat", offsetof(struct mount_opts, flat), 1},
	{"npy", offsetof(struct mount_opts, npy), 1},
	{"cache_size=%s", offsetof(struct mount_opts, cache_size), 0},
	{"verify=%s", offsetof(struct mount_opts, verify), 0},
	FUSE_OPT_END,
};

static int opt_proc(void *data, const char *arg, int key,
		    struct fuse_args *outargs)
{
	struct mount_opts *o = data;

	(void)outargs;
	if (key == FUSE_OPT_KEY_NONOPT && !o->container) {
		o->container = strdup(arg);
		return 0; /* consumed: the rest is the mountpoint */
	}
	if (key == FUSE_OPT_KEY_NONOPT && !o->mountpoint)
		o->mountpoint = arg;
	return 1;
}

static void log_to_syslog(enum fuse_log_level level, const char *fmt,
			  va_list ap)
{
	vsyslog((int)level, fmt, ap);
}

/* integrity failures seen by the read path (core/image.c) */
static void log_integrity(void *arg, const char *line)
{
	(void)arg;
	fuse_log(FUSE_LOG_ERR, "tensorfs: %s\n", line);
}

/* -o cache_size= and -o verify= into @io; false (and a message) if bad */
static bool read_options(const struct mount_opts *mo,
			 struct tfs_image_options *io)
{
	memset(io, 0, sizeof(*io));
	io->log = log_integrity;
	if (mo->cache_size &&
	    (tfs_parse_size(mo->cache_size, &io->cache_size) ||
	     io->cache_size < TFS_CACHE_SIZE_MIN)) {
		fprintf(stderr,
			"%s: cache_size=%s: expected a size of at least 1M, "
			"such as 256M or 2G\n",
			tfs_progname, mo->cache_size);
		return false;
	}
	if (mo->verify && tfs_parse_verify_mode(mo->verify, &io->verify)) {
		fprintf(stderr,
			"%s: verify=%s: expected off, first or always\n",
			tfs_progname, mo->verify);
		return false;
	}
	return true;
}

static void mount_help(void)
{
	printf("\nFUSE options:\n");
	fuse_cmdline_help();
	fuse_lowlevel_help();
}

int tfs_mount_main(int argc, char **argv)
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts co;
	struct fuse_loop_config *lc = NULL;
	struct fuse_session *se = NULL;
	struct mount_opts mo = {0};
	struct tfs_build_options bo = {0};
	struct tfs_image_options io;
	struct tfs_fs fs = {0};
	char *mopts = NULL, *fsname = NULL;
	int ret = TFS_EXIT_USAGE;

	memset(&co, 0, sizeof(co));
	if (fuse_opt_parse(&args, &mo, opt_spec, opt_proc) == -1)
		goto out;
	if (fuse_parse_cmdline(&args, &co) != 0) {
		/* libfuse refuses a mountpoint it cannot resolve: a mount
		 * failure (it printed why), not a usage error */
		if (mo.mountpoint && access(mo.mountpoint, F_OK) != 0)
			ret = TFS_EXIT_MOUNT;
		goto out;
	}
	if (co.show_help) {
		mount_help();
		ret = TFS_EXIT_OK;
		goto out;
	}
	if (co.show_version) {
		printf("libfuse %s\n", fuse_pkgversion());
		fuse_lowlevel_version();
		ret = TFS_EXIT_OK;
		goto out;
	}
	if (!mo.container || !co.mountpoint) {
		fprintf(stderr,
			"usage: %s [options] CONTAINER MOUNTPOINT (see "
			"--help)\n",
			tfs_progname);
		goto out;
	}

	if (!read_options(&mo, &io))
		goto out;
	bo.flat = mo.flat;
	bo.npy = mo.npy;
	ret = tfs_cli_open(mo.container, &bo, &fs.img);
	if (ret)
		goto out;
	if (tfs_image_configure(fs.img, &io)) {
		ret = TFS_EXIT_USAGE;
		goto out;
	}
	fs.uid = getuid();
	fs.gid = getgid();

	/* read-only at the VFS too; fsname shows the container in mount(8) */
	if (asprintf(&fsname, "fsname=tensorfs:%s", mo.container) < 0 ||
	    fuse_opt_add_opt(&mopts,
			     "ro,default_permissions,subtype=tensorfs") ||
	    fuse_opt_add_opt_escaped(&mopts, fsname) ||
	    fuse_opt_add_arg(&args, "-o") || fuse_opt_add_arg(&args, mopts)) {
		ret = TFS_EXIT_USAGE;
		goto out;
	}
	ret = TFS_EXIT_MOUNT;
	se = fuse_session_new(&args, &tfs_fuse_ops, sizeof(tfs_fuse_ops), &fs);
	if (!se)
		goto out;
	/*
	 * A shell starts background jobs with SIGINT ignored, and libfuse
	 * leaves ignored signals alone; "kill -INT" must still unmount.
	 */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	if (fuse_set_signal_handlers(se) != 0)
		goto out_session;
	if (fuse_session_mount(se, co.mountpoint) != 0)
		goto out_signals;
	if (!co.foreground) {
		openlog("tensorfs", LOG_PID, LOG_DAEMON);
		fuse_set_log_func(log_to_syslog);
	}
	if (fuse_daemonize(co.foreground) != 0) {
		ret = TFS_EXIT_MOUNT;
		goto out_unmount;
	}
	if (co.singlethread) {
		ret = fuse_session_loop(se);
	} else {
		lc = fuse_loop_cfg_create();
		if (!lc) {
			ret = -1;
			goto out_unmount;
		}
		fuse_loop_cfg_set_clone_fd(lc, (unsigned)co.clone_fd);
		fuse_loop_cfg_set_max_threads(lc, co.max_threads);
		fuse_loop_cfg_set_idle_threads(lc, co.max_idle_threads);
		ret = fuse_session_loop_mt(se, lc);
	}
	/* a loop ended by SIGINT/SIGTERM/SIGHUP reports the signal: clean */
	ret = ret == 0 || ret == SIGINT || ret == SIGTERM || ret == SIGHUP
		      ? TFS_EXIT_OK
		      : TFS_EXIT_IO;
out_unmount:
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
out:
	if (lc)
		fuse_loop_cfg_destroy(lc);
	tfs_image_close(fs.img);
	free(co.mountpoint);
	free(mo.container);
	free(mo.cache_size);
	free(mo.verify);
	free(mopts);
	free(fsname);
	fuse_opt_free_args(&args);
	return ret;
}
