// SPDX-License-Identifier: MIT
/*
 * Images: open, detect, load, and the read dispatch: raw tensors straight
 * from the mapping, encoded ones through the decode engine
 * (src/core/decode.c), in-memory files from the tree.  See
 * src/core/image.h.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "codec/codec.h"
#include "core/diag.h"
#include "core/format.h"
#include "core/image.h"
#include "builder_sources.h"
#include "view_ops.h"
#include "image_i.h"

/* ---- open / close -------------------------------------------------------- */

int tfs_image_load(struct tfs_image **out, struct tfs_source *src,
		   const struct tfs_build_options *opts, struct tfs_diag *d)
{
	return tfs_image_load_format(out, src, NULL, opts, d);
}

int tfs_image_load_format(struct tfs_image **out, struct tfs_source *src,
			  const struct tfs_format *format,
			  const struct tfs_build_options *opts,
			  struct tfs_diag *d)
{
	struct tfs_builder *b = NULL;
	struct tfs_image *img;
	int ret;

	tfs_diag_clear(d);
	img = calloc(1, sizeof(*img));
	if (img)
		img->srcs = calloc(1, sizeof(*img->srcs));
	if (!img || !img->srcs) {
		free(img);
		tfs_source_close(src);
		return tfs_diag_oom(d);
	}
	img->srcs[0] = *src;
	img->nsrcs = 1;
	memset(src, 0, sizeof(*src));
	src->fd = -1;
	if (img->srcs[0].path && !(img->path = strdup(img->srcs[0].path))) {
		ret = tfs_diag_oom(d);
		goto out;
	}
	img->format = format ? format : tfs_format_detect(&img->srcs[0]);
	if (!img->format) {
		ret = tfs_diag_at(d, -ENOEXEC, 0,
				  "magic: not a container format tensorfs "
				  "recognises");
		goto out;
	}
	ret = tfs_builder_new(&b, &img->srcs[0], opts);
	if (ret) {
		tfs_diag_oom(d);
		goto out;
	}
	ret = img->format->load(&img->srcs[0], b, d);
	if (ret && d && !d->format)
		d->format = tfs_format_shown(img->format);
	if (!ret)
		ret = tfs_image_finish_load(img, b,
					    tfs_format_shown(img->format), d);
out:
	return tfs_image_load_end(img, b, ret, out);
}

int tfs_image_load_end(struct tfs_image *img, struct tfs_builder *b, int ret,
		       struct tfs_image **out)
{
	tfs_builder_free(b);
	if (ret) {
		tfs_image_close(img);
		return ret;
	}
	*out = img;
	return 0;
}

int tfs_image_finish_load(struct tfs_image *img, struct tfs_builder *b,
			  const char *format, struct tfs_diag *d)
{
	struct tfs_source *more, *all;
	struct tfs_draft dr;
	uint32_t n, i;
	int ret = tfs_builder_draft(b, format, &dr, d);

	if (ret)
		return ret;
	/* the views over the finished records, then the tree is sealed */
	ret = tfs_views_plan(&dr);
	if (ret) {
		tfs_draft_free(&dr);
		return tfs_diag_set(d, ret, "cannot build the tree: %s",
				    strerror(-ret));
	}
	ret = tfs_draft_seal(&dr, &img->tree, d);
	if (ret)
		return ret;
	/* the companions' sources follow the containers' (companions.c) */
	img->ncontainers = img->nsrcs;
	if (tfs_builder_take_companions(b, &more, &n))
		return tfs_diag_oom(d);
	if (n) {
		all = reallocarray(img->srcs, img->nsrcs + n, sizeof(*all));
		if (!all) {
			for (i = 0; i < n; i++)
				tfs_source_close(&more[i]);
			free(more);
			return tfs_diag_oom(d);
		}
		memcpy(all + img->nsrcs, more, n * sizeof(*all));
		img->srcs = all;
		img->nsrcs += n;
		free(more);
	}
	return tfs_read_state_new(img, d);
}

void tfs_image_close(struct tfs_image *img)
{
	uint32_t i;

	if (!img)
		return;
	tfs_read_state_free(img->rs);
	tfs_tree_free(img->tree);
	/* last first: a slice borrows what it is a slice of (source.h) */
	for (i = img->nsrcs; i-- > 0;)
		tfs_source_close(&img->srcs[i]);
	free(img->srcs);
	for (i = 0; i < img->nskipped; i++) {
		free(img->skipped[i].path);
		free(img->skipped[i].why);
	}
	free(img->skipped);
	free(img->path);
	free(img);
}

/* ---- options and counters (the decode engine's, decode.c) ------------ */

int tfs_image_configure(struct tfs_image *img,
			const struct tfs_image_options *opts)
{
	struct tfs_read_state *rs = img->rs;
	uint64_t size =
		opts->cache_size ? opts->cache_size : tfs_default_cache_size();

	if (size < TFS_CACHE_SIZE_MIN || size > SIZE_MAX / 2)
		return -EINVAL;
	rs->opts = *opts;
	rs->opts.cache_size = size;
	rs->window = tfs_decode_window_for(size);
	tfs_cache_set_budget(rs->cache, size);
	return 0;
}

void tfs_image_get_stats(struct tfs_image *img, struct tfs_image_stats *st)
{
	struct tfs_read_state *rs = img->rs;

	memset(st, 0, sizeof(*st));
	tfs_cache_get_stats(rs->cache, &st->cache);
	st->decodes = atomic_load(&rs->decodes);
	st->decoded_bytes = atomic_load(&rs->decoded_bytes);
	st->digest_checks = atomic_load(&rs->digest_checks);
	st->digest_failures = atomic_load(&rs->digest_failures);
}

bool tfs_image_node_failed(const struct tfs_image *img, uint32_t node)
{
	const struct tfs_node *n;

	if (node >= img->tree->nnodes)
		return false;
	n = &img->tree->nodes[node];
	return n->kind == TFS_NODE_TENSOR && failed(img->rs, n->tensor);
}

/* ---- the read dispatch ----------------------------------------------------
 */

int tfs_image_read_shown(struct tfs_image *img, uint32_t idx, uint64_t off,
			 size_t len, struct tfs_view *v)
{
	const struct tfs_tensor *x = &img->tree->tensors[idx];

	if (x->shown_by)
		return tfs_view_kinds[x->shown_by - 1]->read_tensor(
			img, idx, off, len, v);
	return tfs_tensor_read(img, idx, off, len, v);
}

/*
 * A read that starts in a file's prefix (the -o npy header): the prefix's
 * bytes and the tensor's that follow, assembled in one buffer so that the
 * read is never short (a short read would be end of file to the kernel).
 */
static int read_prefixed(struct tfs_image *img, uint32_t idx, uint64_t off,
			 size_t len, struct tfs_view *v)
{
	const struct tfs_tensor *x = &img->tree->tensors[idx];
	size_t head = x->prefix_len - (size_t)off;
	struct tfs_view tv = {0};
	uint8_t *buf;
	int ret = 0;

	if (len <= head) {
		v->data = x->prefix + off;
		v->len = len;
		return 0;
	}
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, x->prefix + off, head);
	ret = tfs_image_read_shown(img, idx, 0, len - head, &tv);
	if (!ret && tv.len != len - head)
		ret = -EIO;
	if (!ret)
		memcpy(buf + head, tv.data, tv.len);
	tfs_view_release(img, &tv);
	if (ret) {
		free(buf);
		return ret;
	}
	tfs_view_own(v, buf, len);
	return 0;
}

/* the tied-weight groups, found at the first drop (NULL: none) */
static const uint32_t *twins(struct tfs_read_state *rs,
			     const struct tfs_tree *t)
{
	if (!atomic_load(&rs->twins_found)) {
		pthread_mutex_lock(&rs->twin_lock);
		if (!atomic_load(&rs->twins_found)) {
			/* no memory for it: every extent dropped on its own */
			if (tfs_twins_find(t, &rs->twin))
				rs->twin = NULL;
			atomic_store(&rs->twins_found, true);
		}
		pthread_mutex_unlock(&rs->twin_lock);
	}
	return rs->twin;
}

/*
 * Tensor @i shares its bytes: they go once every tensor of its group has
 * had its end served, all of them then.
 */
static void drop_group(struct tfs_image *img, const uint32_t *twin, uint32_t i)
{
	const struct tfs_tensor *x;
	uint32_t k = i;

	do {
		if (!(atomic_load(&img->rs->flags[k]) & TS_END_SERVED))
			return;
		k = twin[k];
	} while (k != i);
	do {
		x = &img->tree->tensors[k];
		tfs_source_drop_cache(tfs_image_source(img, x), x->offset,
				      x->stored_length);
		k = twin[k];
	} while (k != i);
}

void tfs_image_drop_source_cache(struct tfs_image *img, uint32_t node,
				 uint64_t off, uint64_t len)
{
	const struct tfs_view_ops *view = tfs_view_of(img, node);
	const uint32_t *twin;
	const struct tfs_tree *t = img->tree;
	const struct tfs_tensor *x;
	uint64_t end, from, to;

	if (view) {
		if (view->drop_cache)
			view->drop_cache(img, node, off, len);
		return;
	}
	if (node >= t->nnodes || t->nodes[node].kind != TFS_NODE_TENSOR)
		return;
	x = &t->tensors[t->nodes[node].tensor];
	/* pieces (companions, memory): left to the kernel for now */
	if (x->shown_by || x->nsegs || off + len < off ||
	    off + len <= x->prefix_len)
		return; /* a converted view, or only the header */
	if (x->encoding != TFS_ENCODING_RAW) {
		/*
		 * The compressed input, once the decoded end was served:
		 * decoding it again (the decode cache let it go) reads it
		 * from the disk, as the first time did
		 */
		if (off + len - x->prefix_len >= x->size)
			tfs_source_drop_cache(tfs_image_source(img, x),
					      x->offset, x->stored_length);
		return;
	}
	end = off + len - x->prefix_len; /* in the tensor's bytes */
	if (end > x->stored_length)
		return;
	twin = twins(img->rs, t);
	if (twin && twin[t->nodes[node].tensor] != TFS_NO_TWIN) {
		if (end == x->stored_length)
			atomic_fetch_or(&img->rs->flags[t->nodes[node].tensor],
					TS_END_SERVED);
		drop_group(img, twin, t->nodes[node].tensor);
		return;
	}
	if (end == x->stored_length) {
		from = 0; /* the whole tensor, once its end is served */
		to = end;
		atomic_fetch_or(&img->rs->flags[t->nodes[node].tensor],
				TS_END_SERVED);
	} else if (atomic_load(&img->rs->flags[t->nodes[node].tensor]) &
		   TS_END_SERVED) {
		/*
		 * a read that finished after the end's (the kernel's
		 * readahead runs several at once): its copy brought pages of
		 * its window back
		 */
		from = (off > x->prefix_len ? off - x->prefix_len : 0) /
		       TFS_DROP_WINDOW * TFS_DROP_WINDOW;
		to = end;
	} else {
		/* a window boundary crossed: the window behind it */
		to = end / TFS_DROP_WINDOW * TFS_DROP_WINDOW;
		if (to == 0 ||
		    (off > x->prefix_len && off - x->prefix_len >= to))
			return;
		from = to - TFS_DROP_WINDOW;
	}
	tfs_source_drop_cache(tfs_image_source(img, x), x->offset + from,
			      to - from);
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
	if (n->kind == TFS_NODE_VIEW)
		return tfs_view_kinds[n->view]->read(img, node, off, len, v);
	x = &t->tensors[n->tensor];
	if (off < x->prefix_len)
		return read_prefixed(img, n->tensor, off, len, v);
	return tfs_image_read_shown(img, n->tensor, off - x->prefix_len, len,
				    v);
}

ssize_t tfs_image_view_getxattr(struct tfs_image *img, uint32_t node,
				const char *name, char *buf, size_t size)
{
	const struct tfs_view_ops *view = tfs_view_of(img, node);

	if (!view || !view->getxattr)
		return -ENODATA;
	return view->getxattr(img, node, name, buf, size);
}

ssize_t tfs_image_view_listxattr(struct tfs_image *img, uint32_t node,
				 char *buf, size_t size, size_t used)
{
	const struct tfs_view_ops *view = tfs_view_of(img, node);

	if (!view || !view->listxattr)
		return (ssize_t)used;
	return view->listxattr(buf, size, used);
}
