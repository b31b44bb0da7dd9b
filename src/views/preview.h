/* SPDX-License-Identifier: MIT */
/*
 * Pictures of tensors (-o previews): beside each numeric tensor of one or
 * more dimensions, "<file>.png", a heat map of its values (rows = the
 * product of all dimensions but the last, columns = the last; sampled down
 * to at most 512 x 512 pixels keeping the aspect ratio, small ones scaled
 * up to at least 64 x 16) over a histogram strip of the sampled values and
 * a value scale (a colour bar and the values its ends stand for: the 1st
 * and 99th percentiles of the samples; tEXt chunks give them and the
 * minimum and maximum).  8-bit indexed colour,
 * written by libpng uncompressed, so the file's size depends only on its
 * pixel size and is known when the tree is built; the picture itself is
 * made on its first read, by sampling the tensor through values.h, and kept
 * in the decode cache.  Private to the builder and the read path.
 */
#ifndef TFS_CORE_PREVIEW_H
#define TFS_CORE_PREVIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/abi.h"
#include "core/dtype.h"

struct tfs_image;
struct tfs_view;

#define TFS_PREVIEW_MAX 512    /* heat map: at most this wide and tall */
#define TFS_PREVIEW_MIN_W 64   /* ... and at least this wide */
#define TFS_PREVIEW_MIN_H 16   /* ... and tall */
#define TFS_PREVIEW_HIST_H 48  /* the histogram strip below it */
#define TFS_PREVIEW_SCALE_H 22 /* then the value scale: bar and values */

/* the picture's pixel size for a tensor; false: it gets none */
bool tfs_preview_geometry(enum tfs_dtype dtype, bool big, const uint64_t *shape,
			  uint32_t ndim, uint32_t *w, uint32_t *h);

/* the PNG's size in bytes for a heat map of @w x @h; 0 or -errno */
int tfs_preview_size(uint32_t w, uint32_t h, uint64_t *size);

/* the PNG of tensor record @tensor (@size bytes), whole, malloc'd */
int tfs_preview_make(struct tfs_image *img, uint32_t tensor, uint8_t **png,
		     size_t *len);

/*
 * Bytes [@off, @off + @len) of preview node @node (inside its size): the
 * picture is made on the first read and kept in the decode cache.
 */
int tfs_preview_read(struct tfs_image *img, uint32_t node, uint64_t off,
		     size_t len, struct tfs_view *v);

/*
 * A picture's value scale as xattrs (user.tensorfs.preview.min, .max,
 * .scale_low, .scale_high): the values of its tEXt chunks, so getting one
 * makes the picture (once; it stays in the decode cache).
 * tfs_preview_getxattr: its length (copied when @size is enough, -ERANGE
 * when not, 0 asks), -ENODATA for a name that is not one of them, or the
 * picture's -errno.  tfs_preview_listxattr: the names, NUL-terminated each,
 * appended to the @used bytes of @buf; the new length, or -ERANGE.
 */
ssize_t tfs_preview_getxattr(struct tfs_image *img, uint32_t node,
					 const char *name, char *buf,
					 size_t size);
ssize_t tfs_preview_listxattr(char *buf, size_t size, size_t used);

#endif
