// SPDX-License-Identifier: MIT
/*
 * A tensor's element values (src/core/values.h): its bytes read
 * through the image's read path a chunk of blocks at a time, decoded by
 * values.c.  What stats, diff, the float32 view and previews read.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/image.h"
#include "core/tree.h"
#include "core/values.h"

uint64_t tfs_values_count(const struct tfs_tree *tree, uint32_t tensor)
{
	const struct tfs_tensor *x = &tree->tensors[tensor];
	const struct tfs_dtype_info *di = tfs_dtype_info(x->dtype_id);

	if (x->computed)
		return x->view_size / tfs_dtype_size(x->view);
	if (!di->block_elems)
		return 0;
	return x->size / di->block_bytes * di->block_elems;
}

unsigned tfs_values_tensor_flags(const struct tfs_tree *tree, uint32_t tensor)
{
	const struct tfs_tensor *x = &tree->tensors[tensor];
	const char *bo = TFS_XATTR_PREFIX "byte_order";
	/* what -o as=float32 calls it on a converted tensor */
	const char *sbo = TFS_XATTR_PREFIX "stored_byte_order";

	return tfs_tree_xattr_is(tree, x->node, bo, "big") ||
			       tfs_tree_xattr_is(tree, x->group, bo, "big") ||
			       tfs_tree_xattr_is(tree, x->node, sbo, "big")
		       ? TFS_VALUES_BIG_ENDIAN
		       : 0;
}

/* blocks decoded per chunk: at most 64 Ki elements, at least one block */
#define CHUNK_ELEMS 65536u

/*
 * A computed tensor's values (tree.h): the float32 elements its view
 * shows, a chunk at a time
 */
static int read_computed(struct tfs_image *img, uint32_t tensor, uint64_t first,
			 size_t count, double *out)
{
	const struct tfs_tensor *x = &img->tree->tensors[tensor];
	uint64_t total = tfs_values_count(img->tree, tensor);
	size_t take, i;
	struct tfs_view v;
	float f;
	int ret = 0;

	if (x->view != TFS_DTYPE_FLOAT32)
		return -ENOTSUP;
	if (first > total || count > total - first)
		return -ERANGE;
	for (; !ret && count; count -= take, first += take) {
		take = count < CHUNK_ELEMS ? count : CHUNK_ELEMS;
		ret = tfs_image_read_shown(img, tensor, first * 4, take * 4,
					   &v);
		if (!ret && v.len != take * 4)
			ret = -EIO;
		for (i = 0; !ret && i < take; i++) {
			memcpy(&f, v.data + 4 * i, 4); /* little-endian */
			*out++ = f;
		}
		tfs_view_release(img, &v);
	}
	return ret;
}

int tfs_values_read(struct tfs_image *img, uint32_t tensor, unsigned flags,
		    uint64_t first, size_t count, double *out)
{
	const struct tfs_tensor *x = &img->tree->tensors[tensor];
	const struct tfs_dtype_info *di = tfs_dtype_info(x->dtype_id);
	uint64_t total = tfs_values_count(img->tree, tensor), blk, nblk;
	uint64_t off, skip;
	size_t chunk_blocks, take;
	struct tfs_view v;
	double small[256], *tmp = small;
	int ret;

	if (x->computed)
		return read_computed(img, tensor, first, count, out);
	flags = (flags & ~TFS_VALUES_BIG_ENDIAN) |
		tfs_values_tensor_flags(img->tree, tensor);
	ret = tfs_values_supported(x->dtype_id, flags);
	if (ret)
		return ret;
	if (first > total || count > total - first)
		return -ERANGE;
	blk = first / di->block_elems;
	skip = first % di->block_elems;
	chunk_blocks = CHUNK_ELEMS / di->block_elems;
	nblk = (skip + count + di->block_elems - 1) / di->block_elems;
	if (nblk < chunk_blocks)
		chunk_blocks = (size_t)nblk;
	if (!chunk_blocks)
		chunk_blocks = 1;
	/* a few elements (a preview's samples): no allocation */
	if (chunk_blocks * di->block_elems > sizeof(small) / sizeof(*small))
		tmp = malloc(chunk_blocks * di->block_elems * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	while (count) {
		nblk = (skip + count + di->block_elems - 1) / di->block_elems;
		if (nblk > chunk_blocks)
			nblk = chunk_blocks;
		off = blk * di->block_bytes;
		ret = tfs_image_read_tensor(img, tensor, off,
					    (size_t)nblk * di->block_bytes, &v);
		if (!ret && v.len != nblk * di->block_bytes)
			ret = -EIO;
		if (!ret)
			ret = tfs_values_decode(x->dtype_id, flags, v.data,
						(size_t)nblk, tmp);
		tfs_view_release(img, &v);
		if (ret)
			break;
		take = (size_t)(nblk * di->block_elems - skip);
		if (take > count)
			take = count;
		memcpy(out, tmp + skip, take * sizeof(*out));
		out += take;
		count -= take;
		blk += nblk;
		skip = 0;
	}
	if (tmp != small)
		free(tmp);
	return ret;
}
