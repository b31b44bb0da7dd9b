/* SPDX-License-Identifier: MIT */
/*
 * The front-end seam of the FUSE layer: mount an opened image and serve it
 * until unmounted.  The CLI (src/cli) parses the command line, opens and
 * validates the image, and calls tfs_fuse_run(); nothing here knows argv
 * or exit statuses.
 */
#ifndef TFS_FUSE_RUN_H
#define TFS_FUSE_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "core/image.h"

struct tfs_fuse_args {
	const char *mountpoint;
	const char *fsname;	  /* shown by mount(8): the container(s) */
	const char *fuse_options; /* "opt,opt" for libfuse, or NULL */
	bool foreground;	  /* else detach once the mount is ready */
	bool debug; /* libfuse's debug output (implies foreground) */
	bool single_thread;
	/* the mount's readahead in bytes (0: the kernel's default, 128K) */
	uint64_t readahead;
	/* keep the container's pages cached after serving them */
	bool keep_source_cache;
	/* fusermount3 unmounts once the daemon is gone, killed too */
	bool auto_unmount;
	/* the read options (cache, verify); the log goes where we log */
	struct tfs_image_options read;
	/* -o logfile=: the log appended there instead (opened before the
	 * mount, so a relative path is the caller's), or NULL */
	const char *logfile;
	/* -o idle_timeout=: unmount after this many seconds without a
	 * request (0: never) */
	unsigned idle_timeout;
};

/*
 * libfuse 3.14 and the kernel accept 1 MiB read requests, but a FUSE mount
 * starts with the kernel's 128 KiB readahead, so a sequential reader asks
 * in 128 KiB steps; a larger readahead means fewer round trips.
 */
#define TFS_DEFAULT_READAHEAD (1ull << 20)
#define TFS_MAX_READAHEAD (1ull << 30)

/* what tfs_fuse_run() failed at: the CLI's exit status follows from it */
enum tfs_fuse_result {
	TFS_FUSE_OK = 0,	   /* mounted, served, unmounted */
	TFS_FUSE_BAD_OPTION = 1,   /* libfuse refused an option (it said why) */
	TFS_FUSE_MOUNT_FAILED = 2, /* the mount itself failed */
	TFS_FUSE_LOOP_FAILED = 3,  /* serving failed */
};

/*
 * Mount @img at args->mountpoint, detach (unless foreground) once the mount
 * exists, serve until unmounted or SIGINT/SIGTERM/SIGHUP.  The image stays
 * the caller's.  Logs go to stderr in the foreground, syslog once detached.
 */
enum tfs_fuse_result tfs_fuse_run(struct tfs_image *img,
				  const struct tfs_fuse_args *args);

/* libfuse's own option help, and its version */
void tfs_fuse_help(void);
const char *tfs_fuse_version(void);

#endif
