// SPDX-License-Identifier: MIT
/* A format's dtype names: see dtype_labels.h. */
#include <string.h>

#include "dtype_labels.h"

const struct tfs_dtype_label *
tfs_dtype_label_find(const struct tfs_dtype_label *table, size_t count,
		     const void *s, size_t n)
{
	size_t i;

	for (i = 0; i < count; i++)
		if (strlen(table[i].name) == n && !memcmp(table[i].name, s, n))
			return &table[i];
	return NULL;
}

static const struct tfs_dtype_label numpy_labels[] = {
	{"float32", TFS_DTYPE_FLOAT32},
	{"float16", TFS_DTYPE_FLOAT16},
	{"float64", TFS_DTYPE_FLOAT64},
	{"bfloat16", TFS_DTYPE_BFLOAT16},
	{"int8", TFS_DTYPE_INT8},
	{"int16", TFS_DTYPE_INT16},
	{"int32", TFS_DTYPE_INT32},
	{"int64", TFS_DTYPE_INT64},
	{"uint8", TFS_DTYPE_UINT8},
	{"uint16", TFS_DTYPE_UINT16},
	{"uint32", TFS_DTYPE_UINT32},
	{"uint64", TFS_DTYPE_UINT64},
	{"bool", TFS_DTYPE_BOOL},
	{"complex64", TFS_DTYPE_COMPLEX64},
	{"complex128", TFS_DTYPE_COMPLEX128},
	{"float8_e4m3fn", TFS_DTYPE_FLOAT8_E4M3},
	{"float8_e5m2", TFS_DTYPE_FLOAT8_E5M2},
	{"float8_e4m3fnuz", TFS_DTYPE_FLOAT8_E4M3FNUZ},
	{"float8_e5m2fnuz", TFS_DTYPE_FLOAT8_E5M2FNUZ},
};

const struct tfs_dtype_label *tfs_numpy_dtype_label(const void *s, size_t n)
{
	return tfs_dtype_label_find(TFS_DTYPE_LABELS(numpy_labels), s, n);
}
