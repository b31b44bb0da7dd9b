/* SPDX-License-Identifier: MIT */
/* The FUSE adapter: the only place besides src/cli that includes FUSE. */
#ifndef TFS_FUSE_FS_H
#define TFS_FUSE_FS_H

#include <sys/types.h>

struct tfs_image;

struct tfs_fs {
	struct tfs_image *img;
	uid_t uid; /* owner of every node: the mounting user */
	gid_t gid;
};

struct fuse_lowlevel_ops;
extern const struct fuse_lowlevel_ops tfs_fuse_ops;

#endif
