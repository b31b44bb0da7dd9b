/* SPDX-License-Identifier: MIT */
/* The FUSE adapter: the only place besides src/cli that includes FUSE. */
#ifndef TFS_FUSE_FS_H
#define TFS_FUSE_FS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct tfs_image;
struct tfs_errors;

struct tfs_fs {
	struct tfs_image *img;
	uid_t uid; /* owner of every node: the mounting user */
	gid_t gid;
	bool drop_source_cache; /* see tfs_image_drop_source_cache */
	bool no_opendir;	/* the kernel opens directories itself */
	bool auto_unmount;	/* fusermount3 watches us (tfs_init) */
	struct tfs_errors *errors; /* .tensorfs/errors.json, live */
	/*
	 * The readahead to set on the mount's backing device ("MAJ:MIN" in
	 * /sys/class/bdi), once the kernel has taken our INIT reply (which
	 * would cap it again): done by the first request after it.
	 */
	uint64_t readahead;
	char bdi[32];
	atomic_bool readahead_done;
	/*
	 * -o idle_timeout=: the CLOCK_MONOTONIC second of the last request
	 * and the files open now, kept only when @idle_watch (run.c's
	 * watcher reads them; an open file is use without requests)
	 */
	bool idle_watch;
	atomic_llong last_request;
	atomic_int open_files;
};

/* the CLOCK_MONOTONIC second now */
long long tfs_fs_now(void);

struct fuse_lowlevel_ops;
extern const struct fuse_lowlevel_ops tfs_fuse_ops;

#endif
