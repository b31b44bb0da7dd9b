// SPDX-License-Identifier: MIT
/*
 * What a tensor's stored bytes may be besides one extent of its container
 * (src/core/builder.h): an extent of a companion file (a file
 * beside the container: a model's external data, a bundle's shards), bytes in
 * memory, several pieces, or the tensors of a container inside the
 * container (a slice).  Readers name these through handles: 0 is the
 * container being described (or the slice being loaded), k + 1 is
 * companion k.  At finish a handle becomes an image source index: the
 * containers come first (builder source i is image source i), then the
 * companions in the order they were opened (tfs_builder_take_companions).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "core/diag.h"
#include "core/format.h"
#include "core/names.h"
#include "builder_i.h"
#include "builder_sources.h"

const struct tfs_source *tfs_builder_handle_src(const struct tfs_builder *b,
						uint32_t h)
{
	if (h == 0)
		return b->src;
	return h <= b->ncompanions ? &b->companions[h - 1]->src : NULL;
}

const struct tfs_source *tfs_builder_source(struct tfs_builder *b,
					    uint32_t source)
{
	return tfs_builder_handle_src(b, tfs_builder_handle(b, source));
}

/* companions opened for the current container so far */
static uint32_t companions_of_current(const struct tfs_builder *b)
{
	uint32_t i, n = 0;

	for (i = 0; i < b->ncompanions; i++)
		n += b->companions[i]->owner == b->cur;
	return n;
}

/* a new companion slot, its handle in *@h; the source still closed */
static int push_companion(struct tfs_builder *b, const char *name, uint32_t *h,
			  struct tfs_diag *d)
{
	struct companion **nv, *c;

	if (companions_of_current(b) >= TFS_MAX_COMPANIONS)
		return tfs_diag_set(d, -E2BIG,
				    "more than %u companion files or slices",
				    TFS_MAX_COMPANIONS);
	nv = reallocarray(b->companions, b->ncompanions + 1, sizeof(*nv));
	if (!nv)
		return tfs_diag_oom(d);
	b->companions = nv;
	c = calloc(1, sizeof(*c));
	if (!c || (name && !(c->name = strdup(name)))) {
		free(c);
		return tfs_diag_oom(d);
	}
	c->src.fd = -1;
	c->owner = b->cur;
	nv[b->ncompanions++] = c;
	*h = b->ncompanions;
	return 0;
}

static void pop_companion(struct tfs_builder *b)
{
	struct companion *c = b->companions[--b->ncompanions];

	tfs_source_close(&c->src);
	free(c->name);
	free(c);
}

int tfs_builder_open_companion(struct tfs_builder *b, const char *name,
			       uint32_t *source, struct tfs_diag *d)
{
	const struct tfs_source *of = tfs_builder_handle_src(b, b->self);
	uint32_t i, h;
	int ret;

	for (i = 0; i < b->ncompanions; i++)
		if (b->companions[i]->owner == b->cur &&
		    b->companions[i]->name &&
		    strcmp(b->companions[i]->name, name) == 0) {
			*source = i + 1;
			return 0;
		}
	ret = push_companion(b, name, &h, d);
	if (ret)
		return ret;
	ret = tfs_source_open_companion(&b->companions[h - 1]->src, of, name,
					d);
	if (ret) {
		pop_companion(b);
		return ret;
	}
	*source = h;
	return 0;
}

unsigned tfs_builder_slice_depth(const struct tfs_builder *b)
{
	return b->slice_depth;
}

/*
 * The entries and warnings from @e0 and @w0 on, made by a slice (handle
 * @h) loaded at the root: their bytes and offsets said in those of the
 * container the slice is a window of (handle @outer, at @at in it).
 */
static void slice_to_parent(struct tfs_builder *b, uint32_t e0, uint32_t w0,
			    uint32_t h, uint32_t outer, uint64_t at)
{
	struct entry *e;
	uint32_t i, k;

	for (i = e0; i < b->n; i++) {
		e = &b->e[i];
		if (e->desc_offset != TFS_NO_OFFSET)
			e->desc_offset += at;
		for (k = 0; k < e->nsegs; k++)
			if (!e->segs[k].mem && e->segs[k].source == h) {
				e->segs[k].source = outer;
				e->segs[k].offset += at;
			}
		if (e->sib != h)
			continue;
		e->sib = outer;
		if (!e->nsegs)
			e->offset += at;
		if (e->has_digest_extent)
			e->digest_offset += at;
	}
	for (i = w0; i < b->nwarnings; i++)
		if (b->warnings[i].offset != TFS_NO_OFFSET)
			b->warnings[i].offset += at;
}

/* its tree under @dir: one more escaped prefix component, and metadata */
static int slice_dir(struct tfs_builder *b, struct bsource *bs, const char *dir,
		     json_t **meta, struct tfs_diag *d)
{
	char **outer_prefix = bs->prefix, *c;
	size_t outer_n = bs->nprefix;

	bs->prefix = reallocarray(NULL, outer_n + 1, sizeof(char *));
	c = tfs_name_escape(dir, strlen(dir), TFS_NAME_MAX);
	if (!bs->prefix || !c) {
		free(c);
		free(bs->prefix);
		bs->prefix = outer_prefix;
		return tfs_diag_oom(d);
	}
	if (outer_n)
		memcpy(bs->prefix, outer_prefix, outer_n * sizeof(char *));
	bs->prefix[outer_n] = c;
	bs->nprefix = outer_n + 1;
	*meta = json_object();
	if (!*meta || json_object_set_new(tfs_builder_metadata(b), dir,
					  json_incref(*meta)))
		return tfs_diag_oom(d);
	b->slice_meta = *meta;
	return 0;
}

int tfs_builder_load_slice(struct tfs_builder *b, uint64_t offset,
			   uint64_t length, const char *name, const char *dir,
			   const struct tfs_format *fmt, struct tfs_diag *d)
{
	struct bsource *bs = &b->sources[b->cur];
	const struct tfs_source *outer_src = b->src;
	uint32_t outer_self = b->self, h, e0 = b->n, w0 = b->nwarnings;
	json_t *outer_meta = b->slice_meta, *meta = NULL;
	char **outer_prefix = bs->prefix;
	size_t outer_n = bs->nprefix;
	bool at_root = !dir || !*dir;
	struct companion *sl;
	int ret;

	if (b->slice_depth >= TFS_MAX_SLICE_DEPTH)
		return tfs_diag_set(d, -E2BIG,
				    "%s: containers nested deeper than %u",
				    name, TFS_MAX_SLICE_DEPTH);
	ret = push_companion(b, NULL, &h, d);
	if (ret)
		return ret;
	sl = b->companions[h - 1];
	ret = tfs_source_slice(&sl->src, tfs_builder_handle_src(b, b->self),
			       offset, length, name, d);
	if (ret)
		goto fail;
	if (!fmt)
		fmt = tfs_format_detect(&sl->src);
	if (!fmt) {
		ret = tfs_diag_set(d, -ENOEXEC,
				   "%s: not a container format tensorfs "
				   "recognises",
				   name);
		goto fail;
	}
	if (!at_root) {
		ret = slice_dir(b, bs, dir, &meta, d);
		if (ret)
			goto restore;
	}
	b->src = &sl->src;
	b->self = h;
	b->slice_depth++;
	ret = fmt->load(&sl->src, b, d);
	b->slice_depth--;
	if (ret && d && !d->format && !at_root)
		d->format = tfs_format_shown(fmt);
	if (at_root) {
		/* the container's own content: said in its bytes */
		if (ret && d && d->has_offset)
			d->offset += offset;
		slice_to_parent(b, e0, w0, h, outer_self, offset);
	}
restore:
	b->src = outer_src;
	b->self = outer_self;
	b->slice_meta = outer_meta;
	json_decref(meta);
	if (bs->prefix != outer_prefix) {
		free(bs->prefix[outer_n]);
		free(bs->prefix);
		bs->prefix = outer_prefix;
		bs->nprefix = outer_n;
	}
	/*
	 * the entries the reader added keep the handle: the slice stays;
	 * one at the root that is the last companion is no longer used
	 */
	if (ret || !at_root || h != b->ncompanions)
		return ret;
fail:
	pop_companion(b);
	return ret;
}

void tfs_builder_drop_companions(struct tfs_builder *b, uint32_t src)
{
	while (b->ncompanions &&
	       b->companions[b->ncompanions - 1]->owner == src)
		pop_companion(b);
}

void tfs_builder_free_companions(struct tfs_builder *b)
{
	while (b->ncompanions)
		pop_companion(b);
	free(b->companions);
	b->companions = NULL;
}

int tfs_builder_take_companions(struct tfs_builder *b, struct tfs_source **out,
				uint32_t *n)
{
	struct tfs_source *v = NULL;
	uint32_t i;

	*out = NULL;
	*n = 0;
	if (!b->ncompanions)
		return 0;
	v = calloc(b->ncompanions, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < b->ncompanions; i++) {
		v[i] = b->companions[i]->src;
		memset(&b->companions[i]->src, 0, sizeof(v[i]));
		b->companions[i]->src.fd = -1;
	}
	*out = v;
	*n = b->ncompanions;
	return 0;
}

int tfs_builder_open_companion_at(struct tfs_builder *b, const char *name,
				  uint64_t at, unsigned flags, uint32_t *source,
				  struct tfs_diag *d, const char *fmt, ...)
{
	va_list ap;
	int ret = tfs_builder_open_companion(b, name, source, d);

	if (!ret || (ret == -ENOENT && (flags & TFS_MISSING_UNREADABLE)))
		return ret;
	va_start(ap, fmt);
	ret = tfs_diag_vrefer(d, ret == -ENOENT ? -EBADMSG : ret, at, fmt, ap);
	va_end(ap);
	return ret;
}

uint32_t tfs_builder_source_index(const struct tfs_builder *b,
				  const struct entry *e, uint32_t h)
{
	return h ? b->nsources + h - 1 : e->source;
}

/* [@off, +@len) inside handle @h's bytes, or a refusal naming @s */
static int extent_ok(const struct tfs_builder *b, uint32_t h, uint64_t off,
		     uint64_t len, const struct tfs_tensor_spec *s,
		     struct tfs_diag *d)
{
	char nm[TFS_PRINTABLE_MAX];
	const struct tfs_source *src = tfs_builder_handle_src(b, h);

	if (!src)
		return tfs_diag_at(d, -EINVAL, s->desc_offset,
				   "tensor '%s': no such source %u",
				   TFS_SPEC_NAME(nm, s), h);
	if (tfs_source_range_ok(src, off, len))
		return 0;
	/* the offsets a user can check against the file (issue 30 #14) */
	return tfs_diag_at(
		d, -EBADMSG, s->desc_offset,
		"tensor '%s': data past the end of %s: needs bytes "
		"%llu..%llu, %s ends at %llu",
		TFS_SPEC_NAME(nm, s), h ? src->path : "the file",
		(unsigned long long)off,
		(unsigned long long)(len > UINT64_MAX - off ? UINT64_MAX
							    : off + len),
		h ? "it" : "the file", (unsigned long long)src->size);
}

/* @e's own copy of @n segments, handles resolved, memory copied */
static int copy_segments(struct tfs_builder *b, struct entry *e,
			 const struct tfs_segment *v, size_t n,
			 const struct tfs_tensor_spec *s, struct tfs_diag *d)
{
	char nm[TFS_PRINTABLE_MAX];
	uint64_t total = 0;
	size_t i;
	int ret;

	if (n > TFS_MAX_SEGMENTS)
		return tfs_diag_at(d, -E2BIG, s->desc_offset,
				   "tensor '%s': more than %u pieces",
				   TFS_SPEC_NAME(nm, s), TFS_MAX_SEGMENTS);
	e->segs = calloc(n, sizeof(*e->segs));
	if (!e->segs)
		return tfs_diag_oom(d);
	for (i = 0; i < n; i++) {
		struct tfs_segment *g = &e->segs[i];

		*g = v[i];
		g->mem = NULL;
		e->nsegs = (uint32_t)i + 1;
		if (!tfs_add_u64(total, v[i].length, &total))
			return tfs_diag_at(d, -EBADMSG, s->desc_offset,
					   "tensor '%s': its pieces' lengths "
					   "overflow 64 bits",
					   TFS_SPEC_NAME(nm, s));
		if (v[i].mem) {
			uint8_t *m = malloc(v[i].length ? v[i].length : 1);

			if (!m)
				return tfs_diag_oom(d);
			memcpy(m, v[i].mem, v[i].length);
			g->mem = m;
			g->offset = 0;
			g->source = 0;
			continue;
		}
		g->source = tfs_builder_handle(b, v[i].source);
		ret = extent_ok(b, g->source, g->offset, g->length, s, d);
		if (ret)
			return ret;
	}
	e->length = total;
	e->offset = n && !e->segs[0].mem ? e->segs[0].offset : 0;
	return 0;
}

int tfs_builder_take_stored(struct tfs_builder *b, struct entry *e,
			    const struct tfs_tensor_spec *s, struct tfs_diag *d)
{
	char nm[TFS_PRINTABLE_MAX];
	struct tfs_segment one;
	int ret;

	if ((s->nsegs || s->mem) && s->encoding != TFS_ENCODING_RAW)
		return tfs_diag_at(d, -EINVAL, s->desc_offset,
				   "tensor '%s': pieces or memory bytes on "
				   "an encoded tensor",
				   TFS_SPEC_NAME(nm, s));
	if (s->nsegs) {
		ret = copy_segments(b, e, s->segs, s->nsegs, s, d);
	} else if (s->mem) {
		one = (struct tfs_segment){.length = s->length, .mem = s->mem};
		ret = copy_segments(b, e, &one, 1, s, d);
	} else {
		e->sib = tfs_builder_handle(b, s->source);
		return extent_ok(b, e->sib, s->offset, s->length, s, d);
	}
	if (!ret && s->encoding == TFS_ENCODING_RAW && e->length != s->size)
		ret = tfs_diag_at(d, -EBADMSG, s->desc_offset,
				  "tensor '%s': size %llu differs from the "
				  "stored length %llu",
				  TFS_SPEC_NAME(nm, s),
				  (unsigned long long)s->size,
				  (unsigned long long)e->length);
	/* one piece of a file: the plain extent, zero-copy as ever */
	if (!ret && e->nsegs == 1 && !e->segs[0].mem) {
		e->sib = e->segs[0].source;
		e->offset = e->segs[0].offset;
		free(e->segs);
		e->segs = NULL;
		e->nsegs = 0;
	}
	return ret;
}

int tfs_builder_put_segments(const struct tfs_builder *b, const struct entry *e,
			     struct tfs_tree *tree, struct tfs_tensor *t)
{
	uint32_t i;

	t->segs = tfs_tree_alloc(tree, e->nsegs * sizeof(*t->segs));
	if (!t->segs)
		return -ENOMEM;
	for (i = 0; i < e->nsegs; i++) {
		t->segs[i] = e->segs[i];
		if (e->segs[i].mem) {
			t->segs[i].mem = (const uint8_t *)tfs_tree_dup(
				tree, e->segs[i].mem, e->segs[i].length);
			if (!t->segs[i].mem)
				return -ENOMEM;
		} else {
			t->segs[i].source = tfs_builder_source_index(
				b, e, e->segs[i].source);
		}
	}
	t->nsegs = e->nsegs;
	if (!e->segs[0].mem)
		t->source = t->segs[0].source;
	return 0;
}
