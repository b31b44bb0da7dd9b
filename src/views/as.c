// SPDX-License-Identifier: MIT
/*
 * The as view (-o as=float32, --as float32): a numeric tensor of another
 * dtype is shown as float32 values computed on read (values.h).  Planned
 * over the finished records, it gives each tensor it converts its view
 * dtype and size (tree.h), names the stored byte order stored_byte_order
 * (the converted bytes are little-endian), and serves the bytes through
 * read_tensor: a read decodes only the stored blocks holding the elements
 * it touches.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/builder.h"
#include "core/image.h"
#include "core/image_i.h" /* tfs_view_own */
#include "core/nodes.h"
#include "core/tree.h"
#include "core/values.h"
#include "core/view_ops.h"

/*
 * Whether a tensor of @dtype, big-endian when @big, is shown converted:
 * @dtype is numeric, decodable (values.h), not complex, and not already
 * little-endian float32; integers and bool only with @all.
 */
static bool as_applies(bool all, enum tfs_dtype dtype, bool big)
{
	enum tfs_dtype_kind kind = tfs_dtype_info(dtype)->kind;

	if (kind == TFS_KIND_COMPLEX)
		return false;
	/* integers and bool only when asked: ids past 2^24 lose digits */
	if (!all && kind != TFS_KIND_FLOAT && kind != TFS_KIND_QUANT)
		return false;
	if (dtype == TFS_DTYPE_FLOAT32 && !big)
		return false;
	return tfs_values_supported(dtype, big ? TFS_VALUES_BIG_ENDIAN : 0) ==
	       0;
}

static int as_plan(struct tfs_draft *dr, uint32_t id)
{
	struct tfs_tree *t = dr->tree;
	const struct tfs_dtype_info *di;
	struct tfs_tensor *x;
	uint32_t i;
	int ret = 0;

	if (dr->opts.as != TFS_DTYPE_FLOAT32)
		return 0;
	for (i = 0; !ret && i < t->ntensors; i++) {
		x = &t->tensors[i];
		if (x->shown_by) /* another view shows it (quant) */
			continue;
		if (!as_applies(dr->opts.as_all, x->dtype_id, x->big_endian))
			continue;
		di = tfs_dtype_info(x->dtype_id);
		x->view = dr->opts.as;
		/* whole blocks (the builder checked the size) */
		x->view_size = x->size / di->block_bytes * di->block_elems *
			       tfs_dtype_size(x->view);
		x->shown_by = (uint8_t)(id + 1);
		if (x->big_endian)
			ret = tfs_nodes_rename_xattr(
				dr->nodes, x->node,
				TFS_XATTR_PREFIX "byte_order",
				TFS_XATTR_PREFIX "stored_byte_order");
	}
	return ret;
}

/* elements converted per step: bounded memory whatever the read's size */
#define STEP 65536u

static int as_read_tensor(struct tfs_image *img, uint32_t tensor, uint64_t off,
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

const struct tfs_view_ops tfs_view_as = {
	.name = "as",
	.plan = as_plan,
	.read_tensor = as_read_tensor,
};
