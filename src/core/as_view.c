// SPDX-License-Identifier: MIT
/* The converting view (-o as=float32): see src/core/as_view.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "as_view.h"
#include "image_i.h"
#include "tensorfs/builder.h"
#include "tensorfs/values.h"

int tfs_parse_as(const char *s, enum tfs_dtype *out)
{
	if (strcmp(s, "float32") != 0)
		return -EINVAL;
	*out = TFS_DTYPE_FLOAT32;
	return 0;
}

bool tfs_as_view_applies(enum tfs_dtype as, enum tfs_dtype dtype, bool big)
{
	if (as != TFS_DTYPE_FLOAT32 ||
	    tfs_dtype_info(dtype)->kind == TFS_KIND_COMPLEX)
		return false;
	if (dtype == TFS_DTYPE_FLOAT32 && !big)
		return false;
	return tfs_values_supported(dtype, big ? TFS_VALUES_BIG_ENDIAN : 0) ==
	       0;
}

int tfs_as_view_read(struct tfs_image *img, uint32_t tensor, uint64_t off,
		     size_t len, struct tfs_view *v)
{
	uint64_t first = off / 4, end = (off + len + 3) / 4;
	size_t n = (size_t)(end - first), i;
	uint8_t *out = NULL, *tmp;
	double *d = NULL;
	float f;
	int ret = -ENOMEM;

	memset(v, 0, sizeof(*v));
	if (!len)
		return 0;
	d = malloc(n * sizeof(*d));
	tmp = malloc(n * 4);
	out = malloc(len);
	if (!d || !tmp || !out)
		goto out;
	ret = tfs_values_read(img, tensor, 0, first, n, d);
	if (ret) {
		if (ret == -ERANGE || ret == -ENOTSUP)
			ret = -EIO;
		goto out;
	}
	for (i = 0; i < n; i++) {
		f = (float)d[i];
		memcpy(tmp + 4 * i, &f, 4); /* the host's order: little */
	}
	memcpy(out, tmp + (off - first * 4), len);
	v->data = out;
	v->len = len;
	v->pin = out;
	v->pin_kind = PIN_BOUNCE;
	out = NULL;
out:
	free(out);
	free(tmp);
	free(d);
	return ret;
}
