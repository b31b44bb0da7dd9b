// SPDX-License-Identifier: MIT
/* Images: open, detect, load, read.  See include/tensorfs/image.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tensorfs/diag.h"
#include "tensorfs/format.h"
#include "tensorfs/image.h"

int tfs_image_load(struct tfs_image **out, struct tfs_source *src,
		   const struct tfs_build_options *opts, struct tfs_diag *d)
{
	struct tfs_builder *b = NULL;
	struct tfs_image *img;
	const char *guess;
	int ret;

	img = calloc(1, sizeof(*img));
	if (!img) {
		tfs_source_close(src);
		return tfs_diag_set(d, -ENOMEM, "out of memory");
	}
	img->src = *src;
	memset(src, 0, sizeof(*src));
	src->fd = -1;
	img->format = tfs_format_detect(&img->src);
	if (!img->format) {
		guess = tfs_format_guess_unsupported(&img->src);
		ret = guess ? tfs_diag_set(d, -ENOTSUP, "%s", guess)
			    : tfs_diag_set(d, -ENOEXEC,
					   "not a container format tensorfs "
					   "recognises");
		goto out;
	}
	ret = tfs_builder_new(&b, &img->src, opts);
	if (ret) {
		tfs_diag_set(d, ret, "out of memory");
		goto out;
	}
	ret = img->format->load(&img->src, b, d);
	if (!ret)
		ret = tfs_builder_finish(b, img->format->name, &img->tree, d);
	if (ret && d && !d->format)
		d->format = img->format->name;
out:
	tfs_builder_free(b);
	if (ret) {
		tfs_image_close(img);
		return ret;
	}
	*out = img;
	return 0;
}

int tfs_image_open(struct tfs_image **out, const char *path,
		   const struct tfs_build_options *opts, struct tfs_diag *d)
{
	struct tfs_source src;
	int ret = tfs_source_open(&src, path, d);

	if (ret)
		return ret;
	return tfs_image_load(out, &src, opts, d);
}

void tfs_image_close(struct tfs_image *img)
{
	if (!img)
		return;
	tfs_tree_free(img->tree);
	tfs_source_close(&img->src);
	free(img);
}

int tfs_image_read(struct tfs_image *img, uint32_t node, uint64_t off,
		   size_t len, struct tfs_view *v)
{
	const struct tfs_tree *t = img->tree;
	const struct tfs_node *n;
	const struct tfs_tensor *x;
	uint64_t size;

	memset(v, 0, sizeof(*v));
	if (node >= t->nnodes)
		return -ENOENT;
	n = &t->nodes[node];
	if (n->kind == TFS_NODE_DIR)
		return -EISDIR;
	size = tfs_node_size(t, node);
	if (off >= size)
		return 0;
	if (len > size - off)
		len = (size_t)(size - off);
	if (n->kind == TFS_NODE_MEMFILE) {
		v->data = n->mem + off;
		v->len = len;
		return 0;
	}
	x = &t->tensors[n->tensor];
	if (x->encoding != TFS_ENCODING_RAW)
		return -ENOTSUP;
	if (!tfs_source_live_range_ok(&img->src, x->offset + off, len))
		return -EIO;
	v->data = img->src.data + x->offset + off;
	v->len = len;
	return 0;
}

void tfs_view_release(struct tfs_image *img, struct tfs_view *v)
{
	(void)img;
	memset(v, 0, sizeof(*v));
}
