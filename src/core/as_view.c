// SPDX-License-Identifier: MIT
/* The converting view (-o as=float32): see src/core/as_view.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "as_view.h"
#include "image_i.h"
#include "core/builder.h"
#include "core/values.h"

int tfs_parse_as(const char *s, enum tfs_dtype *out, bool *all)
{
	if (strcmp(s, "float32") == 0)
		*all = false;
	else if (strcmp(s, "float32,all") == 0)
		*all = true;
	else
		return -EINVAL;
	*out = TFS_DTYPE_FLOAT32;
	return 0;
}

bool tfs_as_view_applies(enum tfs_dtype as, bool all, enum tfs_dtype dtype,
			 bool big)
{
	enum tfs_dtype_kind kind = tfs_dtype_info(dtype)->kind;

	if (as != TFS_DTYPE_FLOAT32 || kind == TFS_KIND_COMPLEX)
		return false;
	/* integers and bool only when asked: ids past 2^24 lose digits */
	if (!all && kind != TFS_KIND_FLOAT && kind != TFS_KIND_QUANT)
		return false;
	if (dtype == TFS_DTYPE_FLOAT32 && !big)
		return false;
	return tfs_values_supported(dtype, big ? TFS_VALUES_BIG_ENDIAN : 0) ==
	       0;
}

/* elements converted per step: bounded memory whatever the read's size */
#define STEP 65536u

int tfs_as_view_read(struct tfs_image *img, uint32_t tensor, uint64_t off,
		     size_t len, struct tfs_view *v)
{
	uint64_t first = off / 4, end = (off + len + 3) / 4, at;
	size_t head = (size_t)(off - first * 4), k, i, o;
	uint8_t *out = NULL, bytes[4];
	double *d = NULL;
	float f;
	int ret = -ENOMEM;

	memset(v, 0, sizeof(*v));
	if (!len)
		return 0;
	d = malloc((end - first < STEP ? end - first : STEP) * sizeof(*d));
	out = malloc(len);
	if (!d || !out)
		goto out;
	/* element first + e is out[4e - head .. 4e - head + 4), clipped */
	for (at = 0; at < end - first; at += k) {
		k = end - first - at < STEP ? (size_t)(end - first - at) : STEP;
		ret = tfs_values_read(img, tensor, 0, first + at, k, d);
		if (ret) {
			if (ret == -ERANGE || ret == -ENOTSUP)
				ret = -EIO;
			goto out;
		}
		for (i = 0; i < k; i++) {
			f = (float)d[i]; /* the host's order: little */
			o = (size_t)(at + i) * 4;
			if (o >= head && o - head + 4 <= len) {
				memcpy(out + o - head, &f, 4);
				continue;
			}
			memcpy(bytes, &f, 4); /* the first or last, cut */
			for (size_t b = 0; b < 4; b++)
				if (o + b >= head && o + b - head < len)
					out[o + b - head] = bytes[b];
		}
	}
	tfs_view_own(v, out, len);
	out = NULL;
	ret = 0;
out:
	free(out);
	free(d);
	return ret;
}
