/* SPDX-License-Identifier: MIT */
/*
 * The converting view (-o as=float32): a numeric tensor of another dtype
 * is shown as float32 values computed on read (values.h).  Private to the
 * builder (which decides, sizes and labels the file) and the read path
 * (image.c).
 */
#ifndef TFS_CORE_AS_VIEW_H
#define TFS_CORE_AS_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"

struct tfs_image;
struct tfs_view;

/*
 * Whether a tensor of @dtype, big-endian when @big, is shown converted
 * with as=@as: @as is float32 and @dtype is numeric, decodable (values.h),
 * not complex, and not already little-endian float32.
 */
bool tfs_as_view_applies(enum tfs_dtype as, bool all, enum tfs_dtype dtype,
			 bool big);

/*
 * Bytes [@off, @off + @len) of tensor record @tensor's converted bytes
 * (inside its view size), in a bounce buffer: only the stored blocks that
 * hold the elements touched are read and decoded.
 */
int tfs_as_view_read(struct tfs_image *img, uint32_t tensor, uint64_t off,
		     size_t len, struct tfs_view *v);

#endif
