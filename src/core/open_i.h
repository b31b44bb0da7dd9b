/* SPDX-License-Identifier: MIT */
/*
 * Between opening (open.c: what a path is, and which module mounts it) and
 * the mounts of several containers (collection.c).  image.c loads one
 * container and serves reads; it calls neither.
 */
#ifndef TFS_CORE_OPEN_I_H
#define TFS_CORE_OPEN_I_H

#include "core/format.h"
#include "core/image.h"

/*
 * @path's container (@src, of format @fmt) as a part of a set of files
 * (collection.c): 1 when it stands alone, else the whole set's mount (0)
 * or a refusal (-errno with @d naming the file).
 */
int tfs_image_open_set(struct tfs_image **out, const char *path,
		       const struct tfs_source *src,
		       const struct tfs_format *fmt,
		       const struct tfs_build_options *opts,
		       struct tfs_diag *d);

/*
 * A sharded model whose index @index_name sits in @dir (a directory, or a
 * remote one: names are joined with '/'), as tfs_image_open_dir() mounts it;
 * @index_name NULL: remote directory @dir holds no index, every container
 * under it is mounted as tfs_image_open_dir() mounts a local directory.
 */
int tfs_image_open_sharded(struct tfs_image **out, const char *dir,
			   const char *index_name,
			   const struct tfs_build_options *opts,
			   struct tfs_diag *d);

#endif
