// SPDX-License-Identifier: MIT
/*
 * A tensor's stored bytes, wherever they lie: one extent of an image
 * source (the zero-copy fast path), or several pieces (companion files,
 * bytes in memory: struct tfs_segment).  The read path, digests and verify
 * reach them only through here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "image_i.h"

/* the piece of @x holding stored byte @off: its index, its start in *@at */
static uint32_t piece_at(const struct tfs_tensor *x, uint64_t off, uint64_t *at)
{
	uint64_t start = 0;
	uint32_t i;

	for (i = 0; i + 1 < x->nsegs; i++) {
		if (off < start + x->segs[i].length)
			break;
		start += x->segs[i].length;
	}
	*at = start;
	return i;
}

/*
 * piece @g's bytes [@off, +@len), made present (remote: fetched and
 * pinned until piece_done(): a drop must not punch bytes being copied)
 */
static int piece_bytes(const struct tfs_image *img, const struct tfs_segment *g,
		       uint64_t off, uint64_t len, const uint8_t **p)
{
	const struct tfs_source *src;
	int ret;

	if (g->mem) {
		*p = g->mem + off;
		return 0;
	}
	src = &img->srcs[g->source];
	ret = tfs_source_fetch_in(src, g->offset + off, len, g->offset,
				  g->length);
	if (ret)
		return ret;
	*p = src->data + g->offset + off;
	return 0;
}

static void piece_done(const struct tfs_image *img, const struct tfs_segment *g,
		       uint64_t off, uint64_t len)
{
	if (!g->mem)
		tfs_source_unpin(&img->srcs[g->source], g->offset + off, len);
}

/* @v points into @src's bytes: a remote source's pin, let go on release */
static void pin_view(const struct tfs_source *src, struct tfs_view *v)
{
	if (!src->ops || !src->ops->fetch_in || !src->ops->unpin)
		return; /* nothing pinned: a plain zero-copy view */
	v->pin = (void *)(uintptr_t)src;
	v->pin_kind = PIN_SOURCE;
}

int tfs_stored_each(const struct tfs_image *img, const struct tfs_tensor *x,
		    uint64_t off, uint64_t len,
		    int (*fn)(void *arg, const uint8_t *p, size_t n), void *arg)
{
	struct tfs_segment whole;
	const struct tfs_segment *g;
	const uint8_t *p;
	uint64_t at, in, n;
	uint32_t i;
	int ret;

	if (!tfs_range_ok(off, len, x->stored_length))
		return -EIO;
	if (!x->nsegs) {
		whole = (struct tfs_segment){.offset = x->offset,
					     .length = x->stored_length,
					     .source = x->source};
		g = &whole;
		i = 0;
		at = 0;
	} else {
		i = piece_at(x, off, &at);
		g = &x->segs[i];
	}
	while (len) {
		in = off - at;
		n = g->length - in < len ? g->length - in : len;
		ret = piece_bytes(img, g, in, n, &p);
		if (ret)
			return ret;
		if (n)
			ret = fn(arg, p, (size_t)n);
		piece_done(img, g, in, n);
		if (ret)
			return ret;
		off += n;
		len -= n;
		at += g->length;
		g = ++i < x->nsegs ? &x->segs[i] : NULL;
		if (len && !g)
			return -EIO;
	}
	return 0;
}

struct gather_ctx {
	uint8_t *out;
	size_t done;
};

static int copy_piece(void *arg, const uint8_t *p, size_t n)
{
	struct gather_ctx *c = arg;

	memcpy(c->out + c->done, p, n);
	c->done += n;
	return 0;
}

int tfs_stored_view(const struct tfs_image *img, const struct tfs_tensor *x,
		    uint64_t off, size_t len, struct tfs_view *v)
{
	struct gather_ctx c = {0};
	const uint8_t *p;
	uint64_t at;
	uint32_t i;
	int ret;

	if (!tfs_range_ok(off, len, x->stored_length))
		return -EIO;
	if (!x->nsegs) {
		const struct tfs_source *src = &img->srcs[x->source];
		uint64_t end;

		/* a remote source fetches the range here, and aims its
		 * prefetch at the rest of this tensor */
		ret = tfs_source_fetch_in(src, x->offset + off, len, x->offset,
					  x->stored_length);
		if (ret)
			return ret;
		/*
		 * nothing ahead once the end was served: a read finishing
		 * after it (the kernel's readahead runs several) must not
		 * bring back pages the end's drop gave up
		 */
		end = x->offset + x->stored_length;
		i = (uint32_t)(x - img->tree->tensors);
		if (img->rs && i < img->tree->nrecords &&
		    (atomic_load(&img->rs->flags[i]) & TS_END_SERVED))
			end = x->offset + off + len;
		v->data = tfs_source_serve(src, x->offset + off, len, end);
		v->len = len;
		pin_view(src, v);
		return 0;
	}
	i = piece_at(x, off, &at);
	if (off - at + len <= x->segs[i].length) {
		/* inside one piece: no copy */
		ret = piece_bytes(img, &x->segs[i], off - at, len, &p);
		if (ret)
			return ret;
		v->data = p;
		v->len = len;
		if (!x->segs[i].mem)
			pin_view(&img->srcs[x->segs[i].source], v);
		return 0;
	}
	c.out = malloc(len ? len : 1);
	if (!c.out)
		return -ENOMEM;
	ret = tfs_stored_each(img, x, off, len, copy_piece, &c);
	if (ret) {
		free(c.out);
		return ret;
	}
	tfs_view_own(v, c.out, len);
	return 0;
}

static int live_piece(void *arg, const uint8_t *p, size_t n)
{
	(void)arg;
	(void)p;
	(void)n;
	return 0;
}

bool tfs_stored_live(const struct tfs_image *img, const struct tfs_tensor *x)
{
	return tfs_stored_each(img, x, 0, x->stored_length, live_piece, NULL) ==
	       0;
}
