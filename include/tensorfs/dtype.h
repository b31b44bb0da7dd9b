/* SPDX-License-Identifier: MIT */
/*
 * The element types tensorfs knows, with their canonical lowercase names
 * (the value of user.tensorfs.dtype) and element sizes.
 */
#ifndef TENSORFS_DTYPE_H
#define TENSORFS_DTYPE_H

#include <stdint.h>

enum tfs_dtype {
	TFS_DTYPE_INVALID = 0,
	TFS_DTYPE_FLOAT64,
	TFS_DTYPE_FLOAT32,
	TFS_DTYPE_FLOAT16,
	TFS_DTYPE_BFLOAT16,
	TFS_DTYPE_INT64,
	TFS_DTYPE_INT32,
	TFS_DTYPE_INT16,
	TFS_DTYPE_INT8,
	TFS_DTYPE_UINT64,
	TFS_DTYPE_UINT32,
	TFS_DTYPE_UINT16,
	TFS_DTYPE_UINT8,
	TFS_DTYPE_BOOL,
	TFS_DTYPE_COMPLEX64,
	TFS_DTYPE_COMPLEX128,
	TFS_DTYPE_FLOAT8_E4M3,
	TFS_DTYPE_FLOAT8_E5M2,
	TFS_DTYPE_COUNT
};

/* canonical name ("float32"), or NULL for an invalid value */
const char *tfs_dtype_name(enum tfs_dtype t);

/* element size in bytes, 0 for an invalid value */
uint32_t tfs_dtype_size(enum tfs_dtype t);

/* the dtype with canonical name @name, or TFS_DTYPE_INVALID */
enum tfs_dtype tfs_dtype_from_name(const char *name);

#endif
