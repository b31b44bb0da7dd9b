// SPDX-License-Identifier: MIT
/* The dtype table: see include/tensorfs/dtype.h. */
#include <string.h>

#include "tensorfs/dtype.h"

static const struct {
	const char *name;
	uint32_t size;
} dtypes[TFS_DTYPE_COUNT] = {
	[TFS_DTYPE_FLOAT64] = {"float64", 8},
	[TFS_DTYPE_FLOAT32] = {"float32", 4},
	[TFS_DTYPE_FLOAT16] = {"float16", 2},
	[TFS_DTYPE_BFLOAT16] = {"bfloat16", 2},
	[TFS_DTYPE_INT64] = {"int64", 8},
	[TFS_DTYPE_INT32] = {"int32", 4},
	[TFS_DTYPE_INT16] = {"int16", 2},
	[TFS_DTYPE_INT8] = {"int8", 1},
	[TFS_DTYPE_UINT64] = {"uint64", 8},
	[TFS_DTYPE_UINT32] = {"uint32", 4},
	[TFS_DTYPE_UINT16] = {"uint16", 2},
	[TFS_DTYPE_UINT8] = {"uint8", 1},
	[TFS_DTYPE_BOOL] = {"bool", 1},
	[TFS_DTYPE_COMPLEX64] = {"complex64", 8},
	[TFS_DTYPE_COMPLEX128] = {"complex128", 16},
	[TFS_DTYPE_FLOAT8_E4M3] = {"float8_e4m3", 1},
	[TFS_DTYPE_FLOAT8_E5M2] = {"float8_e5m2", 1},
};

const char *tfs_dtype_name(enum tfs_dtype t)
{
	return (unsigned)t < TFS_DTYPE_COUNT ? dtypes[t].name : NULL;
}

uint32_t tfs_dtype_size(enum tfs_dtype t)
{
	return (unsigned)t < TFS_DTYPE_COUNT ? dtypes[t].size : 0;
}

enum tfs_dtype tfs_dtype_from_name(const char *name)
{
	unsigned i;

	for (i = 1; i < TFS_DTYPE_COUNT; i++)
		if (strcmp(dtypes[i].name, name) == 0)
			return (enum tfs_dtype)i;
	return TFS_DTYPE_INVALID;
}
