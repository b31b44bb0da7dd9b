/* SPDX-License-Identifier: MIT */
/*
 * A reader's table of its format's dtype names ("F32", "float32") and the
 * lookup of a name read from a container in it: the exact bytes, so a
 * name with a NUL or a different case is no dtype.
 */
#ifndef TFS_FORMATS_DTYPE_LABELS_H
#define TFS_FORMATS_DTYPE_LABELS_H

#include <stddef.h>

#include "core/dtype.h"

struct tfs_dtype_label {
	const char *name;
	enum tfs_dtype dtype;
};

/* a whole table as the (table, count) arguments of the lookup */
#define TFS_DTYPE_LABELS(t) (t), sizeof(t) / sizeof((t)[0])

/* The entry of @table (@count of them) named @s (@n bytes), or NULL. */
const struct tfs_dtype_label *
tfs_dtype_label_find(const struct tfs_dtype_label *table, size_t count,
		     const void *s, size_t n);

/*
 * The entry named @s (@n bytes) among NumPy's and ml_dtypes' dtype.name
 * ("float32", "bfloat16", "float8_e4m3fn"), or NULL.
 */
const struct tfs_dtype_label *tfs_numpy_dtype_label(const void *s, size_t n);

#endif
