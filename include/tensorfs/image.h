/* SPDX-License-Identifier: MIT */
/*
 * An image: an opened container, its reader and its tree.  The daemon and
 * the CLI both work on one.
 *
 * tfs_image_read() returns a view of a file's bytes: for raw tensors a
 * pointer into the mapping (no copy), for in-memory files a pointer into
 * the tree.  Views are valid until tfs_view_release().  Reads are
 * thread-safe.
 */
#ifndef TENSORFS_IMAGE_H
#define TENSORFS_IMAGE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tensorfs/builder.h"
#include "tensorfs/source.h"
#include "tensorfs/tree.h"

struct tfs_diag;
struct tfs_format;

struct tfs_image {
	struct tfs_source src;
	struct tfs_tree *tree;
	const struct tfs_format *format;
};

struct tfs_view {
	const void *data;
	size_t len;
	void *pin;		/* private: what to release */
};

/* Open @path, detect its format, load and validate it. */
int tfs_image_open(struct tfs_image **out, const char *path,
		   const struct tfs_build_options *opts, struct tfs_diag *d);

/*
 * Load an already-initialised source (ownership of *src passes to the
 * image, also on failure).
 */
int tfs_image_load(struct tfs_image **out, struct tfs_source *src,
		   const struct tfs_build_options *opts, struct tfs_diag *d);

void tfs_image_close(struct tfs_image *img);

/*
 * View up to @len bytes of regular file @node from @off.  A read at or past
 * the end gives an empty view.  Returns 0, or -EISDIR, -EIO (the bytes are
 * no longer backed by the file), -ENOMEM.
 */
int tfs_image_read(struct tfs_image *img, uint32_t node, uint64_t off,
		   size_t len, struct tfs_view *v);
void tfs_view_release(struct tfs_image *img, struct tfs_view *v);

#endif
