// SPDX-License-Identifier: MIT
/*
 * The tree builder (include/tensorfs/builder.h).
 *
 * Readers add entries: tensors, groups and group components.  Each tensor or
 * group is a "leaf" that claims one path; components live inside their
 * group's directory.  Nothing is placed until tfs_builder_finish(), because
 * the name rules (docs/tree.md) need every leaf's wanted path at once:
 *
 *   1. each leaf's wanted path is its escaped components joined by '/';
 *   2. every proper prefix of a wanted path is a directory; ".tensorfs" at the
 *      root is reserved;
 *   3. a leaf keeps its wanted path when no directory or reserved name is
 *      there and no earlier leaf (in container order) took it;
 *   4. otherwise it gets the first free "<last>~N" (N = 1, 2, ...) in the
 *      same directory.
 *
 * The result is deterministic for a given container, every leaf distinct and
 * reachable, and no component is "", "." or ".." or contains '/'.
 */

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "tensorfs/builder.h"
#include "builder_sources.h"
#include "tensorfs/checked.h"
#include "tensorfs/codec.h"
#include "tensorfs/diag.h"
#include "tensorfs/export.h"
#include "tensorfs/source.h"
#include "tensorfs/names.h"
#include "tensorfs/text.h"
#include "as_view.h"
#include "preview.h"
#include "npy_view.h"
#include "manifest.h"
#include "strmap.h"
#include "builder_i.h"

#define META_DIR ".tensorfs"
#define TFS_PATH_MAX_DEPTH 64

int tfs_builder_new(struct tfs_builder **out, const struct tfs_source *src,
		    const struct tfs_build_options *opts)
{
	struct tfs_builder *b = calloc(1, sizeof(*b));

	if (!b)
		return -ENOMEM;
	b->src = src;
	if (opts)
		b->opts = *opts;
	b->metadata = json_object();
	b->cap = 16;
	b->e = calloc(b->cap, sizeof(*b->e));
	if (!b->metadata || !b->e) {
		tfs_builder_free(b);
		return -ENOMEM;
	}
	b->e[0].kind = ENTRY_ROOT;
	b->e[0].group = TFS_NO_NODE;
	b->n = 1;
	b->sources = calloc(1, sizeof(*b->sources));
	if (!b->sources) {
		tfs_builder_free(b);
		return -ENOMEM;
	}
	b->sources[0].src = src;
	b->nsources = 1;
	*out = b;
	return 0;
}

static void bsource_free(struct bsource *s)
{
	size_t i;

	free(s->label);
	free(s->shard);
	for (i = 0; i < s->nprefix; i++)
		free(s->prefix[i]);
	free(s->prefix);
	json_decref(s->metadata);
}

static void entry_free(struct entry *e)
{
	size_t i;

	free(e->name);
	free(e->comps); /* the texts are the builder's */
	free(e->dtype);
	free(e->shape);
	free(e->digest);
	free(e->npy_descr);
	free(e->codec.gather);
	tfs_chunk_params_free(e->codec.chunks);
	free(e->unreadable);
	for (i = 0; i < e->nsegs; i++)
		free((void *)e->segs[i].mem);
	free(e->segs);
	free(e->members);
	for (i = 0; i < e->nxattrs; i++) {
		free(e->xattrs[i].name);
		free(e->xattrs[i].value);
	}
	free(e->xattrs);
	json_decref(e->extra);
	free(e->path);
}

static void deferred_free(struct deferred *v, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		json_decref(v[i].parent);
		free(v[i].key);
		if (v[i].free_arg)
			v[i].free_arg(v[i].arg);
	}
	free(v);
}

void tfs_builder_free(struct tfs_builder *b)
{
	uint32_t i;

	if (!b)
		return;
	deferred_free(b->deferred, b->ndeferred);
	for (i = 0; i < b->n; i++)
		entry_free(&b->e[i]);
	free(b->e);
	for (i = 0; i < b->nfiles; i++) {
		free(b->files[i].name);
		free(b->files[i].data);
	}
	free(b->files);
	for (i = 0; i < b->nwarnings; i++)
		free(b->warnings[i].msg);
	free(b->warnings);
	for (i = 0; i < b->nsources; i++)
		bsource_free(&b->sources[i]);
	free(b->sources);
	tfs_builder_free_companions(b);
	json_decref(b->containers);
	json_decref(b->metadata);
	tfs_strmap_free(&b->comp_ids);
	for (i = 0; i < b->ncomp_texts; i++)
		free(b->comp_texts[i]);
	free(b->comp_texts);
	free(b);
}

int tfs_builder_each_tensor(struct tfs_builder *b,
			    int (*fn)(void *arg, const char *name, size_t len,
				      uint32_t source),
			    void *arg)
{
	uint32_t i;
	int ret;

	for (i = 1; i < b->n; i++) {
		const struct entry *e = &b->e[i];

		if (e->kind != ENTRY_TENSOR && e->kind != ENTRY_GROUP)
			continue;
		ret = fn(arg, e->name, e->name_len, e->source);
		if (ret)
			return ret;
	}
	return 0;
}

uint64_t tfs_builder_total_bytes(const struct tfs_builder *b)
{
	uint64_t total = 0;
	uint32_t i;

	for (i = 1; i < b->n; i++)
		if (b->e[i].kind == ENTRY_TENSOR ||
		    b->e[i].kind == ENTRY_COMPONENT)
			total += b->e[i].size;
	return total;
}

uint32_t tfs_builder_count(const struct tfs_builder *b)
{
	return b->n - 1;
}

json_t *tfs_builder_metadata(struct tfs_builder *b)
{
	if (b->slice_meta)
		return b->slice_meta;
	return b->in_source ? b->sources[b->cur].metadata : b->metadata;
}

int tfs_builder_defer_metadata(struct tfs_builder *b, const char *key,
			       json_t *(*make)(void *arg), void *arg,
			       void (*free_arg)(void *arg))
{
	struct deferred *nv, *df;

	nv = reallocarray(b->deferred, b->ndeferred + 1, sizeof(*nv));
	if (!nv)
		goto fail;
	b->deferred = nv;
	df = &nv[b->ndeferred];
	df->key = strdup(key);
	/* a null placeholder keeps the member's place in the object */
	if (!df->key ||
	    json_object_set_new(tfs_builder_metadata(b), key, json_null())) {
		free(df->key);
		goto fail;
	}
	df->parent =
		b->in_source ? json_incref(b->sources[b->cur].metadata) : NULL;
	df->make = make;
	df->arg = arg;
	df->free_arg = free_arg;
	df->source = b->cur;
	b->ndeferred++;
	return 0;
fail:
	if (free_arg)
		free_arg(arg);
	return -ENOMEM;
}

void tfs_builder_set_overlap_rule(struct tfs_builder *b,
				  enum tfs_overlap_rule rule)
{
	b->sources[b->cur].overlap = rule;
}

static int push_entry(struct tfs_builder *b, uint32_t *idx);
static void pop_entry(struct tfs_builder *b);
static int add_comp(struct tfs_builder *b, struct entry *e, const char *s,
		    size_t len);

/* split "a/b/c" into escaped components */
static int split_dir(const char *dir, char ***out, size_t *n)
{
	const char *p = dir, *slash;
	char **v = NULL, **nv, *c;

	*n = 0;
	while (*p) {
		slash = strchr(p, '/');
		c = tfs_name_escape(p, slash ? (size_t)(slash - p) : strlen(p),
				    TFS_NAME_MAX);
		nv = c ? reallocarray(v, *n + 1, sizeof(*nv)) : NULL;
		if (!nv) {
			free(c);
			goto fail;
		}
		v = nv;
		v[(*n)++] = c;
		if (!slash)
			break;
		p = slash + 1;
	}
	*out = v;
	return 0;
fail:
	while (*n)
		free(v[--*n]);
	free(v);
	return -ENOMEM;
}

int tfs_builder_begin_source(struct tfs_builder *b,
			     const struct tfs_builder_source *s)
{
	struct bsource *ns, *bs;
	uint32_t idx;
	int ret = -ENOMEM;

	if (!b->multi) {
		/* the first call replaces the implicit single source */
		if (b->n != 1 || b->nwarnings || b->nfiles)
			return -EINVAL;
		b->containers = json_object();
		if (!b->containers)
			return -ENOMEM;
		b->multi = true;
		b->nsources = 0;
	}
	ns = reallocarray(b->sources, b->nsources + 1, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	b->sources = ns;
	bs = &b->sources[b->nsources];
	memset(bs, 0, sizeof(*bs));
	bs->src = s->src;
	bs->first_entry = b->n;
	bs->first_warning = b->nwarnings;
	bs->first_file = b->nfiles;
	bs->metadata = json_object();
	if (!bs->metadata || !s->label || !(bs->label = strdup(s->label)) ||
	    (s->shard && !(bs->shard = strdup(s->shard))))
		goto fail;
	if (s->dir) {
		ret = split_dir(s->dir, &bs->prefix, &bs->nprefix);
		if (ret)
			goto fail;
		bs->own_dir = true;
	}
	b->cur = b->nsources++;
	b->src = s->src;
	b->in_source = true;
	bs->root = TFS_BUILDER_ROOT;
	bs->space = b->cur;
	if (s->dir && s->join) {
		/* the directory, and the namespace, of the part before */
		ret = -EINVAL;
		if (b->cur == 0 || !b->sources[b->cur - 1].own_dir)
			goto fail_pushed;
		bs->space = b->sources[b->cur - 1].space;
		bs->root = b->sources[b->cur - 1].root;
	} else if (s->dir) {
		/* the container's directory, for its root xattrs */
		ret = push_entry(b, &idx);
		if (ret)
			goto fail_pushed;
		b->e[idx].kind = ENTRY_DIR;
		b->e[idx].name = strdup(s->label);
		b->e[idx].name_len = strlen(s->label);
		ret = -ENOMEM;
		if (!b->e[idx].name)
			goto fail_pushed;
		for (size_t i = 0; i < bs->nprefix; i++) {
			ret = add_comp(b, &b->e[idx], bs->prefix[i],
				       strlen(bs->prefix[i]));
			if (ret)
				goto fail_pushed;
		}
		bs->root = idx;
	}
	return 0;
fail_pushed:
	tfs_builder_abort_source(b);
	return ret;
fail:
	bsource_free(bs);
	return ret;
}

void tfs_builder_abort_source(struct tfs_builder *b)
{
	struct bsource *bs;

	if (!b->multi || !b->nsources)
		return;
	bs = &b->sources[b->nsources - 1];
	/* an ended source's metadata was published: take it back */
	if (b->containers &&
	    json_object_get(b->containers, bs->label) == bs->metadata)
		json_object_del(b->containers, bs->label);
	while (b->n > bs->first_entry)
		pop_entry(b);
	while (b->nwarnings > bs->first_warning)
		free(b->warnings[--b->nwarnings].msg);
	while (b->ndeferred &&
	       b->deferred[b->ndeferred - 1].source == b->nsources - 1) {
		struct deferred *df = &b->deferred[--b->ndeferred];

		json_decref(df->parent);
		free(df->key);
		if (df->free_arg)
			df->free_arg(df->arg);
	}
	while (b->nfiles > bs->first_file) {
		b->nfiles--;
		free(b->files[b->nfiles].name);
		free(b->files[b->nfiles].data);
	}
	tfs_builder_drop_companions(b, b->nsources - 1);
	bsource_free(bs);
	b->in_source = false;
	b->nsources--;
	b->cur = b->nsources ? b->nsources - 1 : 0;
	b->src = b->nsources ? b->sources[b->cur].src : NULL;
}

static int check_unique_names(struct tfs_builder *b, uint32_t from,
			      struct tfs_diag *d);
static int check_overlaps(struct tfs_builder *b, uint32_t from,
			  struct tfs_diag *d);

int tfs_builder_end_source(struct tfs_builder *b, struct tfs_diag *d)
{
	struct bsource *bs = &b->sources[b->cur];
	int ret;

	if (!b->multi)
		return 0;
	/* a container with a directory of its own is whole by itself (with
	 * the parts it joins) */
	ret = check_unique_names(b, b->sources[bs->space].first_entry, d);
	if (!ret)
		ret = check_overlaps(b, bs->first_entry, d);
	if (ret)
		return ret;
	if (json_object_size(bs->metadata) &&
	    json_object_set(b->containers, bs->label, bs->metadata))
		return tfs_diag_oom(d);
	b->in_source = false;
	return 0;
}

static int vwarn(struct tfs_builder *b, uint64_t offset, const char *fmt,
		 va_list ap)
{
	struct tfs_warning *nw;
	char *msg, *full;

	if (b->nwarnings == b->warnings_cap) {
		uint32_t cap = b->warnings_cap ? b->warnings_cap * 2 : 8;

		nw = reallocarray(b->warnings, cap, sizeof(*nw));
		if (!nw)
			return -ENOMEM;
		b->warnings = nw;
		b->warnings_cap = cap;
	}
	if (vasprintf(&msg, fmt, ap) < 0)
		return -ENOMEM;
	if (b->in_source && b->sources[b->cur].label) {
		/* several containers: say which */
		if (asprintf(&full, "%s: %s", b->sources[b->cur].label, msg) <
		    0) {
			free(msg);
			return -ENOMEM;
		}
		free(msg);
		msg = full;
	}
	/* warnings are printed and logged: one printable line, made here */
	full = tfs_text_safe_dup(msg, strlen(msg));
	free(msg);
	if (!full)
		return -ENOMEM;
	msg = full;
	b->warnings[b->nwarnings].offset = offset;
	b->warnings[b->nwarnings++].msg = msg;
	return 0;
}

int tfs_builder_warn(struct tfs_builder *b, uint64_t offset, const char *fmt,
		     ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = vwarn(b, offset, fmt, ap);
	va_end(ap);
	return ret;
}

/* ---- adding entries ---------------------------------------------------- */

static int push_entry(struct tfs_builder *b, uint32_t *idx)
{
	struct entry *ne;

	if (b->n == UINT32_MAX - 1)
		return -E2BIG;
	if (b->n == b->cap) {
		ne = reallocarray(b->e, b->cap * 2, sizeof(*ne));
		if (!ne)
			return -ENOMEM;
		memset(ne + b->cap, 0, b->cap * sizeof(*ne));
		b->e = ne;
		b->cap *= 2;
	}
	*idx = b->n++;
	b->e[*idx].group = TFS_NO_NODE;
	b->e[*idx].source = b->cur;
	return 0;
}

static void pop_entry(struct tfs_builder *b)
{
	b->n--;
	entry_free(&b->e[b->n]);
	memset(&b->e[b->n], 0, sizeof(b->e[b->n]));
}

/* the text @c (malloc'd: taken), not interned yet, interned; or NULL */
static const char *intern_new(struct tfs_builder *b, char *c)
{
	char **nt;

	if (!c)
		return NULL;
	if (b->ncomp_texts == b->comp_texts_cap) {
		uint32_t cap = b->comp_texts_cap ? 2 * b->comp_texts_cap : 64;

		nt = cap > b->comp_texts_cap
			     ? reallocarray(b->comp_texts, cap, sizeof(*nt))
			     : NULL;
		if (!nt) {
			free(c);
			return NULL;
		}
		b->comp_texts = nt;
		b->comp_texts_cap = cap;
	}
	if (tfs_strmap_put(&b->comp_ids, c, b->ncomp_texts)) {
		free(c);
		return NULL;
	}
	b->comp_texts[b->ncomp_texts] = c;
	return b->comp_texts[b->ncomp_texts++];
}

/* the builder's copy of the text @c (malloc'd: taken), or NULL */
static const char *intern_comp(struct tfs_builder *b, char *c)
{
	uint32_t id;

	if (c && tfs_strmap_get(&b->comp_ids, c, &id)) {
		free(c);
		return b->comp_texts[id];
	}
	return intern_new(b, c);
}

/* append the interned text @c to @e's components */
static int push_comp(struct entry *e, const char *c)
{
	const char **nc;
	size_t cap;

	if (!c)
		return -ENOMEM;
	if (e->ncomps == e->comps_cap) {
		cap = e->comps_cap ? 2 * e->comps_cap : 8;
		nc = reallocarray(e->comps, cap, sizeof(*nc));
		if (!nc)
			return -ENOMEM;
		e->comps = nc;
		e->comps_cap = cap;
	}
	e->comps[e->ncomps++] = c;
	return 0;
}

/* printable ASCII but '%' and '/', not "." or "..": its own escape */
static bool plain_comp(const char *s, size_t len)
{
	size_t i;

	if (!len || len > TFS_NAME_MAX || (s[0] == '.' && len <= 2 &&
					  (len == 1 || s[1] == '.')))
		return false;
	for (i = 0; i < len; i++)
		if (s[i] < 0x20 || s[i] > 0x7e || s[i] == '%' || s[i] == '/')
			return false;
	return true;
}

static int add_comp(struct tfs_builder *b, struct entry *e, const char *s,
		    size_t len)
{
	char plain[TFS_NAME_MAX + 1];
	uint32_t id;

	/* most components were seen before: found without escaping; a new
	 * plain one is its own escape (a leaf's name, 100,000 of them) */
	if (plain_comp(s, len)) {
		memcpy(plain, s, len);
		plain[len] = '\0';
		if (tfs_strmap_get(&b->comp_ids, plain, &id))
			return push_comp(e, b->comp_texts[id]);
		return push_comp(e, intern_new(b, strndup(s, len)));
	}
	return push_comp(e, intern_comp(b, tfs_name_escape(s, len,
							    TFS_NAME_MAX)));
}

/*
 * The wanted path of a leaf: explicit, split at '.' and '/', or flat.
 * At most TFS_PATH_MAX_DEPTH components: what lies beyond the last allowed
 * separator stays whole in the last component (so hostile names with
 * thousands of dots cannot build thousands of directories).
 */
static int set_wanted_path(struct tfs_builder *b, struct entry *e,
			   const struct tfs_tensor_spec *s)
{
	const struct bsource *bs = &b->sources[b->cur];
	size_t i, start, len, base;
	char *rest;
	int ret;

	/* the container's directory (already escaped), then the name */
	for (i = 0; i < bs->nprefix; i++) {
		ret = push_comp(e, intern_comp(b, strdup(bs->prefix[i])));
		if (ret)
			return ret;
	}
	base = e->ncomps;
	/* -o flat: every tensor at the root under its whole stored name,
	 * also where the reader gave an explicit path */
	if (b->opts.flat)
		return add_comp(b, e, s->name, s->name_len);
	if (s->path) {
		if (s->path_len == 0)
			return add_comp(b, e, "", 0);
		for (i = 0;
		     i < s->path_len && base + i + 1 < TFS_PATH_MAX_DEPTH;
		     i++) {
			ret = add_comp(b, e, s->path[i], strlen(s->path[i]));
			if (ret)
				return ret;
		}
		if (i == s->path_len)
			return 0;
		/* the remaining key elements, joined by '/' (escaped) */
		for (len = 0, start = i; start < s->path_len; start++)
			len += strlen(s->path[start]) + 1;
		rest = malloc(len);
		if (!rest)
			return -ENOMEM;
		for (len = 0; i < s->path_len; i++) {
			if (len)
				rest[len++] = '/';
			memcpy(rest + len, s->path[i], strlen(s->path[i]));
			len += strlen(s->path[i]);
		}
		ret = add_comp(b, e, rest, len);
		free(rest);
		return ret;
	}
	start = 0;
	for (i = 0; i <= s->name_len; i++) {
		if (i < s->name_len &&
		    ((s->name[i] != '.' && s->name[i] != '/') ||
		     e->ncomps + 1 == TFS_PATH_MAX_DEPTH))
			continue;
		ret = add_comp(b, e, s->name + start, i - start);
		if (ret)
			return ret;
		start = i + 1;
	}
	return 0;
}

/*
 * "name" -> "name.npy", cut first so that the result fits a component
 * (the interned text is shared: a new one replaces it)
 */
static int add_suffix(struct tfs_builder *b, const char **comp,
		      const char *sfx)
{
	char *cut = strdup(*comp), *n;

	if (!cut)
		return -ENOMEM;
	tfs_name_cut(cut, TFS_NAME_MAX - strlen(sfx));
	if (asprintf(&n, "%s%s", cut, sfx) < 0)
		n = NULL;
	free(cut);
	*comp = n ? intern_comp(b, n) : NULL;
	return *comp ? 0 : -ENOMEM;
}

static int fill_common(struct entry *e, const struct tfs_tensor_spec *s)
{
	size_t i;

	e->name = malloc(s->name_len + 1);
	if (!e->name)
		return -ENOMEM;
	if (s->name_len)
		memcpy(e->name, s->name, s->name_len);
	e->name[s->name_len] = '\0';
	e->name_len = s->name_len;
	e->dtype_id = s->dtype;
	e->record_size = s->record_size;
	e->desc_offset = s->desc_offset;
	if (s->dtype == TFS_DTYPE_VOID) {
		if (asprintf(&e->dtype, "void%u", s->record_size) < 0)
			e->dtype = NULL;
	} else if (s->dtype != TFS_DTYPE_INVALID) {
		e->dtype = strdup(tfs_dtype_name(s->dtype));
	}
	if (s->dtype != TFS_DTYPE_INVALID && !e->dtype)
		return -ENOMEM;
	e->ndim = (uint32_t)s->ndim;
	if (s->ndim) {
		e->shape = calloc(s->ndim, sizeof(*e->shape));
		if (!e->shape)
			return -ENOMEM;
		for (i = 0; i < s->ndim; i++)
			e->shape[i] = s->shape[i];
	}
	return 0;
}

static int check_size(const struct tfs_tensor_spec *s, struct tfs_diag *d);

/* the checks every format shares (see the header comment) */
static int check_spec(struct tfs_builder *b, const struct tfs_tensor_spec *s,
		      bool is_file, struct tfs_diag *d)
{
	char nm[TFS_PRINTABLE_MAX];
	size_t i;

	if (s->ndim > UINT32_MAX || (s->ndim && !s->shape))
		return tfs_diag_at(d, -EBADMSG, s->desc_offset,
				   "tensor '%s': shape: too many dims",
				   TFS_SPEC_NAME(nm, s));
	for (i = 0; i < s->ndim; i++)
		if (s->shape[i] > (uint64_t)INT64_MAX)
			return tfs_diag_at(
				d, -EBADMSG, s->desc_offset,
				"tensor '%s': shape: dim %zu is %llu,"
				" above 2^63-1",
				TFS_SPEC_NAME(nm, s), i,
				(unsigned long long)s->shape[i]);
	if (!is_file)
		return 0;
	if (s->dtype == TFS_DTYPE_INVALID || !tfs_dtype_name(s->dtype) ||
	    (s->dtype == TFS_DTYPE_VOID && !s->record_size))
		return tfs_diag_at(d, -EINVAL, s->desc_offset,
				   "tensor '%s': no dtype",
				   TFS_SPEC_NAME(nm, s));
	if (s->unreadable) /* no bytes of this file are served */
		return check_size(s, d);
	if (!tfs_encoding_name(s->encoding))
		return tfs_diag_at(d, -EINVAL, s->desc_offset,
				   "tensor '%s': unknown encoding %d",
				   TFS_SPEC_NAME(nm, s), (int)s->encoding);
	if (s->encoding == TFS_ENCODING_RAW && !s->nsegs &&
	    s->size != s->length)
		return tfs_diag_at(d, -EBADMSG, s->desc_offset,
				   "tensor '%s': size %llu differs from the "
				   "stored length %llu",
				   TFS_SPEC_NAME(nm, s),
				   (unsigned long long)s->size,
				   (unsigned long long)s->length);
	if (s->encoding == TFS_ENCODING_CHUNKED) {
		uint64_t size;

		if (!s->codec.chunks ||
		    tfs_chunk_params_check(s->codec.chunks, s->length, &size))
			return tfs_diag_at(d, -EBADMSG, s->desc_offset,
					   "tensor '%s': its chunk grid does "
					   "not fit its shape or its stored "
					   "bytes",
					   TFS_SPEC_NAME(nm, s));
		if (size != s->size)
			return tfs_diag_at(d, -EBADMSG, s->desc_offset,
					   "tensor '%s': its chunks make %llu "
					   "bytes, not %llu",
					   TFS_SPEC_NAME(nm, s),
					   (unsigned long long)size,
					   (unsigned long long)s->size);
	} else if (s->codec.chunks) {
		return tfs_diag_at(d, -EINVAL, s->desc_offset,
				   "tensor '%s': a chunk grid without the "
				   "chunked encoding",
				   TFS_SPEC_NAME(nm, s));
	}
	if (s->encoding == TFS_ENCODING_RAW &&
	    (s->codec.skip || s->codec.check_crc32 || s->codec.gather))
		return tfs_diag_at(d, -EINVAL, s->desc_offset,
				   "tensor '%s': codec parameters on a raw "
				   "tensor",
				   TFS_SPEC_NAME(nm, s));
	/* a digest of stored bytes: raw, or a gather of them (PyTorch) */
	if (s->has_digest_extent &&
	    ((s->encoding != TFS_ENCODING_RAW &&
	      s->encoding != TFS_ENCODING_GATHER) ||
	     s->nsegs || s->mem ||
	     !tfs_source_range_ok(tfs_builder_handle_src(
					  b, tfs_builder_handle(b, s->source)),
				  s->digest_offset, s->digest_length)))
		return tfs_diag_at(d, -EBADMSG, s->desc_offset,
				   "tensor '%s': the digest's bytes [%llu, "
				   "+%llu) are not inside the file, or the "
				   "tensor is encoded",
				   TFS_SPEC_NAME(nm, s),
				   (unsigned long long)s->digest_offset,
				   (unsigned long long)s->digest_length);
	return check_size(s, d);
}

/* size == the bytes of product(shape) elements, for dtypes of fixed unit */
static int check_size(const struct tfs_tensor_spec *s, struct tfs_diag *d)
{
	char nm[TFS_PRINTABLE_MAX];
	const struct tfs_dtype_info *di = tfs_dtype_info(s->dtype);
	uint64_t count, bytes;
	int ret;

	if (!di->block_elems && s->dtype != TFS_DTYPE_VOID)
		return 0; /* opaque: no unit to check against */
	if (!tfs_shape_product(s->shape, s->ndim, &count))
		return tfs_diag_at(d, -EBADMSG, s->desc_offset,
				   "tensor '%s': shape: element count "
				   "overflows 64 bits",
				   TFS_SPEC_NAME(nm, s));
	if (s->dtype == TFS_DTYPE_VOID)
		ret = tfs_mul_u64(count, s->record_size, &bytes) ? 0
								 : -EOVERFLOW;
	else
		ret = tfs_dtype_bytes(s->dtype, count, &bytes);
	if (ret == -EINVAL)
		return tfs_diag_at(d, -EBADMSG, s->desc_offset,
				   "tensor '%s': shape: %llu elements are not "
				   "a whole number of %s blocks of %u",
				   TFS_SPEC_NAME(nm, s),
				   (unsigned long long)count, di->name,
				   di->block_elems);
	if (ret)
		return tfs_diag_at(d, -EBADMSG, s->desc_offset,
				   "tensor '%s': shape: element count times "
				   "element size overflows 64 bits",
				   TFS_SPEC_NAME(nm, s));
	if (bytes != s->size)
		return tfs_diag_at(
			d, -EBADMSG, s->desc_offset,
			"tensor '%s': byte length %llu does not "
			"match shape x %s = %llu",
			TFS_SPEC_NAME(nm, s), (unsigned long long)s->size,
			s->dtype == TFS_DTYPE_VOID ? "record" : di->name,
			(unsigned long long)bytes);
	return 0;
}

/* a copy of a reader's chunk grid (the tree owns it) */
static struct tfs_chunk_params *copy_chunks(const struct tfs_chunk_params *c)
{
	struct tfs_chunk_params *n = malloc(sizeof(*n));

	if (!n)
		return NULL;
	*n = *c;
	n->chunks = malloc(c->nchunks ? c->nchunks * sizeof(*n->chunks) : 1);
	if (!n->chunks) {
		free(n);
		return NULL;
	}
	if (c->nchunks)
		memcpy(n->chunks, c->chunks, c->nchunks * sizeof(*n->chunks));
	return n;
}

static int add_entry(struct tfs_builder *b, enum entry_kind kind,
		     const struct tfs_tensor_spec *s, uint32_t *handle,
		     struct tfs_diag *d)
{
	struct tfs_gather_params *gather = NULL;
	struct tfs_chunk_params *chunks = NULL;
	struct entry *e;
	uint32_t idx;
	int ret;

	ret = check_spec(b, s, kind != ENTRY_GROUP, d);
	if (ret)
		return ret;
	ret = push_entry(b, &idx);
	if (ret)
		return tfs_diag_set(d, ret, "too many tensors");
	e = &b->e[idx];
	e->kind = kind;
	ret = fill_common(e, s);
	if (!ret && kind != ENTRY_COMPONENT)
		ret = set_wanted_path(b, e, s);
	if (!ret && kind == ENTRY_TENSOR && b->opts.npy)
		ret = add_suffix(b, &e->comps[e->ncomps - 1], ".npy");
	if (!ret && s->digest && !(e->digest = strdup(s->digest)))
		ret = -ENOMEM;
	if (!ret && s->npy_descr && b->opts.npy &&
	    !(e->npy_descr = strdup(s->npy_descr)))
		ret = -ENOMEM;
	if (!ret && s->codec.gather) {
		/* the view's layout is the reader's: keep a copy */
		gather = malloc(sizeof(*gather));
		if (gather)
			memcpy(gather, s->codec.gather, sizeof(*gather));
		else
			ret = -ENOMEM;
	}
	if (!ret && s->codec.chunks && !s->unreadable &&
	    !(chunks = copy_chunks(s->codec.chunks)))
		ret = -ENOMEM;
	if (!ret && s->unreadable && !(e->unreadable = strdup(s->unreadable)))
		ret = -ENOMEM;
	if (!ret && kind != ENTRY_GROUP && !s->unreadable) {
		ret = tfs_builder_take_stored(b, e, s, d);
		if (ret) {
			free(gather);
			tfs_chunk_params_free(chunks);
			pop_entry(b);
			return ret;
		}
	}
	if (ret) {
		free(gather);
		tfs_chunk_params_free(chunks);
		pop_entry(b);
		return ret == -ENOMEM
			       ? tfs_diag_oom(d)
			       : tfs_diag_set(d, ret, "%s", strerror(-ret));
	}
	if (!e->nsegs) {
		e->offset = s->offset;
		e->length = s->length;
	}
	e->size = s->size;
	e->encoding = s->encoding;
	e->codec = s->codec;
	e->codec.gather = gather;
	e->codec.chunks = chunks;
	e->has_digest_extent = s->has_digest_extent;
	e->digest_offset = s->digest_offset;
	e->digest_length = s->digest_length;
	e->unreadable_is_fault = s->unreadable_is_fault;
	e->digest_decoded =
		s->digest_decoded && s->encoding != TFS_ENCODING_RAW;
	if (handle)
		*handle = idx;
	return 0;
}

int tfs_builder_add_tensor(struct tfs_builder *b,
			   const struct tfs_tensor_spec *spec, uint32_t *handle,
			   struct tfs_diag *d)
{
	return add_entry(b, ENTRY_TENSOR, spec, handle, d);
}

int tfs_builder_add_group(struct tfs_builder *b,
			  const struct tfs_tensor_spec *spec, uint32_t *handle,
			  struct tfs_diag *d)
{
	return add_entry(b, ENTRY_GROUP, spec, handle, d);
}

int tfs_builder_add_component(struct tfs_builder *b, uint32_t group,
			      const char *role,
			      const struct tfs_tensor_spec *spec,
			      uint32_t *handle, struct tfs_diag *d)
{
	struct entry *g, *c;
	uint32_t idx, i, *nm;
	char nmbuf[TFS_PRINTABLE_MAX];
	int ret;

	if (group >= b->n || b->e[group].kind != ENTRY_GROUP)
		return tfs_diag_set(d, -EINVAL, "component of a non-group");
	ret = add_entry(b, ENTRY_COMPONENT, spec, &idx, d);
	if (ret)
		return ret;
	c = &b->e[idx];
	g = &b->e[group];
	c->group = group;
	ret = add_comp(b, c, role, strlen(role));
	if (ret)
		goto fail;
	for (i = 0; i < g->nmembers; i++) {
		if (strcmp(b->e[g->members[i]].comps[0], c->comps[0]) == 0) {
			tfs_name_printable(nmbuf, sizeof(nmbuf), g->name,
					   g->name_len);
			ret = tfs_diag_at(d, -EBADMSG, spec->desc_offset,
					  "tensor '%s': component '%s' given "
					  "twice",
					  nmbuf, c->comps[0]);
			pop_entry(b);
			return ret;
		}
	}
	if (g->nmembers == g->members_cap) {
		g->members_cap = g->members_cap ? g->members_cap * 2 : 4;
		nm = reallocarray(g->members, g->members_cap, sizeof(*nm));
		if (!nm) {
			ret = -ENOMEM;
			goto fail;
		}
		g->members = nm;
	}
	g->members[g->nmembers++] = idx;
	if (handle)
		*handle = idx;
	return 0;
fail:
	pop_entry(b);
	return ret == -ENOMEM ? tfs_diag_oom(d)
			      : tfs_diag_set(d, ret, "%s", strerror(-ret));
}

/* ---- xattrs -------------------------------------------------------------- */

static int entry_set_xattr(struct entry *e, const char *key, const void *v,
			   size_t len, bool replace)
{
	size_t pl = sizeof(TFS_XATTR_PREFIX) - 1, kl = strlen(key);
	struct tfs_xattr *x = NULL, *nx;
	char *name, *val;
	uint32_t i;

	/* not asprintf: once per tensor of 100,000, its formatting showed */
	name = malloc(pl + kl + 1);
	if (!name)
		return -ENOMEM;
	memcpy(name, TFS_XATTR_PREFIX, pl);
	memcpy(name + pl, key, kl + 1);
	for (i = 0; i < e->nxattrs; i++)
		if (strcmp(e->xattrs[i].name, name) == 0)
			x = &e->xattrs[i];
	if (x && !replace) {
		free(name);
		return 0;
	}
	val = malloc(len ? len : 1);
	if (!val) {
		free(name);
		return -ENOMEM;
	}
	if (len)
		memcpy(val, v, len);
	if (!x) {
		if (e->nxattrs == e->xattrs_cap) {
			e->xattrs_cap = e->xattrs_cap ? e->xattrs_cap * 2 : 2;
			nx = reallocarray(e->xattrs, e->xattrs_cap,
					  sizeof(*nx));
			if (!nx) {
				free(name);
				free(val);
				return -ENOMEM;
			}
			e->xattrs = nx;
		}
		x = &e->xattrs[e->nxattrs++];
		x->name = name;
	} else {
		free(name);
		free(x->value);
	}
	x->value = val;
	x->len = len;
	return 0;
}

int tfs_builder_set_xattr(struct tfs_builder *b, uint32_t handle,
			  const char *key, const void *value, size_t len)
{
	if (handle == TFS_BUILDER_ROOT)
		handle = b->sources[b->cur].root;
	if (handle >= b->n || !key || !*key)
		return -EINVAL;
	return entry_set_xattr(&b->e[handle], key, value, len, true);
}

int tfs_builder_set_top_xattr(struct tfs_builder *b, const char *key,
			      const void *value, size_t len)
{
	if (!b->n || !key || !*key)
		return -EINVAL;
	return entry_set_xattr(&b->e[0], key, value, len, true);
}

int tfs_builder_set_xattr_str(struct tfs_builder *b, uint32_t handle,
			      const char *key, const char *value)
{
	return tfs_builder_set_xattr(b, handle, key, value, strlen(value));
}

int tfs_builder_set_xattr_json(struct tfs_builder *b, uint32_t handle,
			       const char *key, const json_t *value)
{
	char *s = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY);
	int ret;

	if (!s)
		return -ENOMEM;
	ret = tfs_builder_set_xattr_str(b, handle, key, s);
	free(s);
	return ret;
}

json_t *tfs_builder_manifest_extra(struct tfs_builder *b, uint32_t handle)
{
	struct entry *e;
	json_t *own;

	if (handle >= b->n)
		return NULL;
	e = &b->e[handle];
	if (e->extra_shared) {
		own = json_deep_copy(e->extra);
		if (!own)
			return NULL;
		json_decref(e->extra);
		e->extra = own;
		e->extra_shared = false;
	}
	if (!e->extra)
		e->extra = json_object();
	return e->extra;
}

int tfs_builder_share_manifest_extra(struct tfs_builder *b, uint32_t handle,
				     json_t *shared)
{
	if (handle >= b->n || b->e[handle].extra || !json_is_object(shared))
		return -EINVAL;
	b->e[handle].extra = json_incref(shared);
	b->e[handle].extra_shared = true;
	return 0;
}

int tfs_builder_add_meta_file(struct tfs_builder *b, const char *name,
			      const void *data, size_t len)
{
	const struct bsource *bs = &b->sources[b->cur];
	struct meta_file *nf;
	char *full = NULL;
	uint32_t i;

	if (!name || !*name || strchr(name, '/') || name[0] == '.')
		return -EINVAL;
	/* a container's file among several: "<label, escaped>:<name>" */
	if (b->in_source && bs->label) {
		char *esc =
			tfs_name_escape(bs->label, strlen(bs->label), SIZE_MAX);

		if (!esc || asprintf(&full, "%s:%s", esc, name) < 0)
			full = NULL;
		free(esc);
		if (!full)
			return -ENOMEM;
		tfs_name_cut(full, TFS_NAME_MAX);
	}
	for (i = 0; i < b->nfiles; i++)
		if (strcmp(b->files[i].name, full ? full : name) == 0) {
			free(full);
			return -EEXIST;
		}
	nf = reallocarray(b->files, b->nfiles + 1, sizeof(*nf));
	if (!nf) {
		free(full);
		return -ENOMEM;
	}
	b->files = nf;
	nf = &b->files[b->nfiles];
	nf->name = full ? full : strdup(name);
	nf->data = malloc(len ? len : 1);
	if (!nf->name || !nf->data) {
		free(nf->name);
		free(nf->data);
		return -ENOMEM;
	}
	if (len)
		memcpy(nf->data, data, len);
	nf->len = len;
	b->nfiles++;
	return 0;
}

/* ---- finish: paths --------------------------------------------------------*/

static char *join_comps(const char *const *comps, size_t n)
{
	size_t i, len = 0, o = 0;
	char *p;

	for (i = 0; i < n; i++)
		len += strlen(comps[i]) + 1;
	p = malloc(len + 1);
	if (!p)
		return NULL;
	for (i = 0; i < n; i++) {
		if (i)
			p[o++] = '/';
		len = strlen(comps[i]);
		memcpy(p + o, comps[i], len);
		o += len;
	}
	p[o] = '\0';
	return p;
}

#define CLAIM_DIR 1u
#define CLAIM_LEAF 2u

struct path_state {
	struct tfs_strmap claims; /* path -> CLAIM_* */
	char **owned;		  /* strings the map borrows */
	size_t nowned, owned_cap;
};

static int own(struct path_state *ps, char *s)
{
	char **no;

	if (!s)
		return -ENOMEM;
	if (ps->nowned == ps->owned_cap) {
		ps->owned_cap = ps->owned_cap ? ps->owned_cap * 2 : 64;
		no = reallocarray(ps->owned, ps->owned_cap, sizeof(*no));
		if (!no) {
			free(s);
			return -ENOMEM;
		}
		ps->owned = no;
	}
	ps->owned[ps->nowned++] = s;
	return 0;
}

static void path_state_free(struct path_state *ps)
{
	size_t i;

	for (i = 0; i < ps->nowned; i++)
		free(ps->owned[i]);
	free(ps->owned);
	tfs_strmap_free(&ps->claims);
}

/* a free "<dir>/<last>~N" for leaf @e, claimed */
static int place_suffixed(struct path_state *ps, struct entry *e)
{
	const char *last = e->comps[e->ncomps - 1];
	char *dir = join_comps(e->comps, e->ncomps - 1);
	char suffix[24], *cut, *cand = NULL;
	unsigned long n;
	int ret = -ENOMEM;

	if (!dir)
		return -ENOMEM;
	for (n = 1;; n++) {
		snprintf(suffix, sizeof(suffix), "~%lu", n);
		cut = strdup(last);
		if (!cut)
			goto out;
		tfs_name_cut(cut, TFS_NAME_MAX - strlen(suffix));
		if (asprintf(&cand, "%s%s%s%s", dir, *dir ? "/" : "", cut,
			     suffix) < 0) {
			free(cut);
			cand = NULL;
			goto out;
		}
		free(cut);
		if (!tfs_strmap_get(&ps->claims, cand, NULL))
			break;
		free(cand);
		cand = NULL;
	}
	e->path = cand;
	ret = own(ps, strdup(cand));
	if (!ret)
		ret = tfs_strmap_put(&ps->claims, ps->owned[ps->nowned - 1],
				     CLAIM_LEAF);
out:
	free(dir);
	return ret;
}

static int place_leaves(struct tfs_builder *b)
{
	struct path_state ps = {0};
	struct tfs_strmap counts;
	uint32_t i, cnt, claim;
	size_t k, dlen, prev_dlen = 0;
	char *prefix, *slash;
	const char *prev = NULL;
	bool claimed;
	int ret = 0;

	tfs_strmap_init(&ps.claims);
	tfs_strmap_init(&counts);
	ret = own(&ps, strdup(META_DIR));
	if (!ret)
		ret = tfs_strmap_put(&ps.claims, ps.owned[0], CLAIM_DIR);
	/* containers' directories, with their prefixes */
	for (i = 1; !ret && i < b->n; i++) {
		struct entry *e = &b->e[i];

		if (e->kind != ENTRY_DIR)
			continue;
		e->path = join_comps(e->comps, e->ncomps);
		for (k = 1; e->path && !ret && k <= e->ncomps; k++) {
			prefix = join_comps(e->comps, k);
			ret = own(&ps, prefix);
			if (!ret)
				ret = tfs_strmap_put(&ps.claims, prefix,
						     CLAIM_DIR);
		}
		if (!e->path)
			ret = -ENOMEM;
	}
	/* wanted paths, and every proper prefix as a directory */
	for (i = 1; !ret && i < b->n; i++) {
		struct entry *e = &b->e[i];

		if (e->kind != ENTRY_TENSOR && e->kind != ENTRY_GROUP)
			continue;
		e->path = join_comps(e->comps, e->ncomps);
		if (!e->path) {
			ret = -ENOMEM;
			break;
		}
		cnt = 0;
		tfs_strmap_get(&counts, e->path, &cnt);
		ret = tfs_strmap_put(&counts, e->path, cnt + 1);
		/* the directory of the leaf before: its prefixes are claimed */
		slash = strrchr(e->path, '/');
		dlen = slash ? (size_t)(slash - e->path) : 0;
		if (prev && dlen == prev_dlen && !memcmp(prev, e->path, dlen))
			continue;
		prev = e->path;
		prev_dlen = dlen;
		/* most share their directories: copy only new ones */
		for (slash = e->path; !ret && (slash = strchr(slash, '/'));
		     slash++) {
			*slash = '\0';
			claimed = tfs_strmap_get(&ps.claims, e->path, &claim) &&
				  claim == CLAIM_DIR;
			prefix = claimed ? NULL : strdup(e->path);
			*slash = '/';
			if (claimed)
				continue;
			ret = own(&ps, prefix);
			if (!ret)
				ret = tfs_strmap_put(&ps.claims, prefix,
						     CLAIM_DIR);
		}
	}
	/* leaves alone on their path take it first */
	for (i = 1; !ret && i < b->n; i++) {
		struct entry *e = &b->e[i];

		if (e->kind != ENTRY_TENSOR && e->kind != ENTRY_GROUP)
			continue;
		tfs_strmap_get(&counts, e->path, &cnt);
		if (cnt == 1 && !tfs_strmap_get(&ps.claims, e->path, NULL))
			ret = tfs_strmap_put(&ps.claims, e->path, CLAIM_LEAF);
		else
			e->node = TFS_NO_NODE; /* marks: still to place */
	}
	/* then the rest, in container order */
	for (i = 1; !ret && i < b->n; i++) {
		struct entry *e = &b->e[i];

		if ((e->kind != ENTRY_TENSOR && e->kind != ENTRY_GROUP) ||
		    e->node != TFS_NO_NODE)
			continue;
		e->node = 0;
		if (!tfs_strmap_get(&ps.claims, e->path, &claim)) {
			ret = tfs_strmap_put(&ps.claims, e->path, CLAIM_LEAF);
			continue;
		}
		free(e->path);
		e->path = NULL;
		ret = place_suffixed(&ps, e);
	}
	tfs_strmap_free(&counts);
	path_state_free(&ps);
	return ret;
}

/* ---- finish: nodes
 * ---------------------------------------------------------*/

struct node_list {
	struct tfs_node *v;
	uint32_t n, cap;
	struct tfs_tree *tree; /* whose arena holds the names */
};

static int new_node(struct node_list *nl, const char *name, size_t len,
		    uint32_t parent, enum tfs_node_kind kind, uint32_t *out)
{
	struct tfs_node *nv, *nd;

	if (nl->n == UINT32_MAX - 1)
		return -E2BIG;
	if (nl->n == nl->cap) {
		nl->cap = nl->cap ? nl->cap * 2 : 64;
		nv = reallocarray(nl->v, nl->cap, sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		nl->v = nv;
	}
	nd = &nl->v[nl->n];
	memset(nd, 0, sizeof(*nd));
	nd->name = tfs_tree_dup(nl->tree, name, len);
	if (!nd->name)
		return -ENOMEM;
	nd->parent = parent;
	nd->kind = kind;
	nd->tensor = UINT32_MAX;
	*out = nl->n++;
	return 0;
}

/* the directory at path @p (created with its parents), in *out */
static int get_dir(struct node_list *nl, struct tfs_strmap *dirs,
		   struct path_state *ps, const char *p, uint32_t *out)
{
	const char *slash;
	uint32_t parent = TFS_ROOT_NODE;
	char *sub;
	int ret;

	if (!*p) {
		*out = TFS_ROOT_NODE;
		return 0;
	}
	if (tfs_strmap_get(dirs, p, out))
		return 0;
	slash = strrchr(p, '/');
	if (slash) {
		sub = strndup(p, (size_t)(slash - p));
		if (!sub)
			return -ENOMEM;
		ret = get_dir(nl, dirs, ps, sub, &parent);
		free(sub);
		if (ret)
			return ret;
	}
	ret = new_node(nl, slash ? slash + 1 : p, strlen(slash ? slash + 1 : p),
		       parent, TFS_NODE_DIR, out);
	if (ret)
		return ret;
	ret = own(ps, strdup(p));
	if (ret)
		return ret;
	return tfs_strmap_put(dirs, ps->owned[ps->nowned - 1], *out);
}

static int cmp_nodes(const void *a, const void *b, void *arg)
{
	const struct tfs_node *nv = arg;
	const struct tfs_node *x = &nv[*(const uint32_t *)a];
	const struct tfs_node *y = &nv[*(const uint32_t *)b];

	if (x->parent != y->parent)
		return x->parent < y->parent ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int cmp_xattrs(const void *a, const void *b)
{
	return strcmp(((const struct tfs_xattr *)a)->name,
		      ((const struct tfs_xattr *)b)->name);
}

static int shape_text(char *buf, size_t len, const uint64_t *shape,
		      uint32_t ndim)
{
	size_t o = 0;
	uint32_t i;

	o += (size_t)snprintf(buf + o, len - o, "[");
	for (i = 0; i < ndim && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%llu", i ? "," : "",
				      (unsigned long long)shape[i]);
	if (o < len)
		o += (size_t)snprintf(buf + o, len - o, "]");
	return o < len ? 0 : -E2BIG;
}

/*
 * -o as: the converted bytes are little-endian, so a byte_order=big of the
 * stored bytes becomes stored_byte_order (dtype and stored_dtype come from
 * the record)
 */
static int view_xattrs(struct entry *e)
{
	char *name;
	uint32_t i;

	for (i = 0; i < e->nxattrs; i++) {
		if (strcmp(e->xattrs[i].name, TFS_XATTR_PREFIX "byte_order"))
			continue;
		name = strdup(TFS_XATTR_PREFIX "stored_byte_order");
		if (!name)
			return -ENOMEM;
		free(e->xattrs[i].name);
		e->xattrs[i].name = name;
	}
	return 0;
}

/*
 * The xattrs tensorfs itself stores: the root's format, a container
 * directory's name, a file's shard, a group's name, dtype and shape.  A
 * file's other standard xattrs are made from its record (tree.h).
 */
static int standard_xattrs(struct entry *e, const char *format,
			   const char *shard)
{
	char *shape;
	size_t slen;
	int ret = 0;

	if (e->kind == ENTRY_ROOT)
		return entry_set_xattr(e, "format", format, strlen(format),
				       false);
	if (e->kind == ENTRY_DIR)
		return entry_set_xattr(e, "container", e->name, e->name_len,
				       false);
	if (shard)
		ret = entry_set_xattr(e, "shard", shard, strlen(shard), false);
	if (e->kind != ENTRY_GROUP)
		return ret || !e->view ? ret : view_xattrs(e);
	if (!ret)
		ret = entry_set_xattr(e, "name", e->name, e->name_len, false);
	if (!ret && e->dtype)
		ret = entry_set_xattr(e, "dtype", e->dtype, strlen(e->dtype),
				      false);
	if (ret || (!e->ndim && !e->dtype))
		return ret;
	slen = (size_t)e->ndim * 21 + 3;
	shape = malloc(slen);
	if (!shape)
		return -ENOMEM;
	shape_text(shape, slen, e->shape, e->ndim);
	ret = entry_set_xattr(e, "shape", shape, strlen(shape), false);
	free(shape);
	return ret;
}

/*
 * Nodes' stored xattr blocks by content: most files of a container have
 * the same few (the reader's layout, their shard), so they share one.
 */
struct block_map {
	uint64_t *hash;
	uint32_t *node; /* UINT32_MAX: a free slot */
	size_t cap, len;
};

static void block_map_free(struct block_map *m)
{
	free(m->hash);
	free(m->node);
}

static uint64_t block_hash(const struct entry *e)
{
	uint64_t h = e->nxattrs, len;
	uint32_t i;

	for (i = 0; i < e->nxattrs; i++) {
		len = e->xattrs[i].len;
		h = XXH3_64bits_withSeed(e->xattrs[i].name,
					 strlen(e->xattrs[i].name), h);
		h = XXH3_64bits_withSeed(&len, sizeof(len), h);
		h = XXH3_64bits_withSeed(e->xattrs[i].value, len, h);
	}
	return h;
}

static bool block_same(const struct tfs_node *nd, const struct entry *e)
{
	uint32_t i;

	if (nd->nxattrs != e->nxattrs)
		return false;
	for (i = 0; i < e->nxattrs; i++)
		if (strcmp(nd->xattrs[i].name, e->xattrs[i].name) ||
		    nd->xattrs[i].len != e->xattrs[i].len ||
		    memcmp(nd->xattrs[i].value, e->xattrs[i].value,
			   e->xattrs[i].len))
			return false;
	return true;
}

static int block_map_grow(struct block_map *m)
{
	struct block_map n = {0};
	size_t i, j;

	n.cap = m->cap ? m->cap * 2 : 256;
	n.hash = calloc(n.cap, sizeof(*n.hash));
	n.node = malloc(n.cap * sizeof(*n.node));
	if (!n.hash || !n.node) {
		block_map_free(&n);
		return -ENOMEM;
	}
	memset(n.node, 0xff, n.cap * sizeof(*n.node));
	for (i = 0; i < m->cap; i++) {
		if (m->node[i] == UINT32_MAX)
			continue;
		for (j = m->hash[i] & (n.cap - 1); n.node[j] != UINT32_MAX;
		     j = (j + 1) & (n.cap - 1))
			;
		n.hash[j] = m->hash[i];
		n.node[j] = m->node[i];
	}
	n.len = m->len;
	block_map_free(m);
	*m = n;
	return 0;
}

/*
 * The entry's xattrs into the node, packed in one allocation: the sorted
 * array, then the listxattr buffer (which holds the names the array points
 * at), then the values.  A tree of 100,000 tensors holds 800,000 xattrs;
 * one block per node instead of two strings per xattr saves most of their
 * allocator overhead.  The block is in the tree's arena.
 */
static int move_xattrs(struct tfs_tree *t, struct tfs_node *nodes,
		       struct tfs_node *nd, struct entry *e,
		       struct block_map *shared)
{
	size_t names = 0, values = 0, size, l, slot;
	struct tfs_xattr *x;
	char *np, *vp;
	uint32_t i, n = e->nxattrs;
	uint64_t h;

	if (!n)
		return 0;
	qsort(e->xattrs, n, sizeof(*e->xattrs), cmp_xattrs);
	if (shared->len * 2 >= shared->cap && block_map_grow(shared))
		return -ENOMEM;
	h = block_hash(e);
	for (slot = h & (shared->cap - 1); shared->node[slot] != UINT32_MAX;
	     slot = (slot + 1) & (shared->cap - 1)) {
		const struct tfs_node *o = &nodes[shared->node[slot]];

		if (shared->hash[slot] == h && block_same(o, e)) {
			nd->xattrs = o->xattrs;
			nd->nxattrs = o->nxattrs;
			nd->xattr_names_len = o->xattr_names_len;
			goto out;
		}
	}
	shared->hash[slot] = h;
	shared->node[slot] = (uint32_t)(nd - nodes);
	shared->len++;
	for (i = 0; i < n; i++) {
		names += strlen(e->xattrs[i].name) + 1;
		values += e->xattrs[i].len;
	}
	if (names >= UINT32_MAX)
		return -E2BIG;
	size = n * sizeof(*x) + names + 1 + values;
	x = tfs_tree_alloc(t, size);
	if (!x)
		return -ENOMEM;
	np = (char *)(x + n);
	vp = np + names + 1;
	for (i = 0; i < n; i++) {
		l = strlen(e->xattrs[i].name) + 1;
		memcpy(np, e->xattrs[i].name, l);
		x[i].name = np;
		np += l;
		if (e->xattrs[i].len)
			memcpy(vp, e->xattrs[i].value, e->xattrs[i].len);
		x[i].value = vp;
		x[i].len = e->xattrs[i].len;
		vp += e->xattrs[i].len;
	}
	*np = '\0';
	nd->xattrs = x;
	nd->nxattrs = n;
	nd->xattr_names_len = names;
out:
	for (i = 0; i < n; i++) {
		free(e->xattrs[i].name);
		free(e->xattrs[i].value);
	}
	free(e->xattrs);
	e->xattrs = NULL;
	e->nxattrs = e->xattrs_cap = 0;
	return 0;
}

/* ---- finish: JSON ------------------------------------------------------- */

/* the manifest fields of entry @e (its container's label: @label) */
static void entry_fields(const struct entry *e, const char *label,
			 struct tfs_mf_fields *f)
{
	memset(f, 0, sizeof(*f));
	f->role = e->kind == ENTRY_COMPONENT ? e->comps[0] : NULL;
	f->name = e->name;
	f->name_len = e->name_len;
	f->path = e->path;
	f->dtype = e->dtype;
	f->view = e->view;
	f->shape = e->shape;
	f->ndim = e->ndim;
	f->group = e->kind == ENTRY_GROUP;
	f->size = e->view ? e->view_size : e->size;
	f->offset = e->offset;
	f->stored_length = e->length;
	f->encoding = e->encoding;
	f->digest = e->digest;
	f->unreadable = e->unreadable;
	f->extra = e->extra;
	f->container = label;
}

/* a group's manifest entry with its components, as manifest text */
static char *group_text(const struct tfs_builder *b, const struct entry *e)
{
	struct tfs_mf_fields f;
	json_t *o, *comps;
	char *text;
	uint32_t k;

	entry_fields(e, b->sources[e->source].label, &f);
	o = tfs_mf_entry(&f);
	comps = json_array();
	for (k = 0; o && comps && k < e->nmembers; k++) {
		entry_fields(&b->e[e->members[k]], NULL, &f);
		json_array_append_new(comps, tfs_mf_entry(&f));
	}
	if (o)
		json_object_set_new(o, "components", comps);
	else
		json_decref(comps);
	text = o ? tfs_mf_indent(o, 2) : NULL;
	json_decref(o);
	return text;
}

static char *dump_json(json_t *j, size_t *len)
{
	char *s = json_dumps(j, JSON_INDENT(2));
	char *t;

	if (!s)
		return NULL;
	*len = strlen(s);
	t = realloc(s, *len + 2);
	if (!t) {
		free(s);
		return NULL;
	}
	t[(*len)++] = '\n';
	t[*len] = '\0';
	return t;
}

static int add_memfile(struct node_list *nl, uint32_t dir, const char *name,
		       char *data, size_t len)
{
	uint32_t idx;
	int ret = new_node(nl, name, strlen(name), dir, TFS_NODE_MEMFILE, &idx);

	if (ret) {
		free(data);
		return ret;
	}
	nl->v[idx].mem = data;
	nl->v[idx].mem_len = len;
	return 0;
}

/* metadata.json with deferred members: made on first use */
struct lazy_meta {
	struct tfs_lazy_file lf; /* first: the tree knows only this */
	json_t *root;
	struct deferred *v;
	uint32_t n;
};

static void lazy_meta_destroy(struct tfs_lazy_file *lf)
{
	struct lazy_meta *lm = (struct lazy_meta *)lf;

	pthread_mutex_destroy(&lf->lock);
	json_decref(lm->root);
	deferred_free(lm->v, lm->n);
	free(lm);
}

static int lazy_meta_make(struct tfs_lazy_file *lf, char **data, size_t *len)
{
	struct lazy_meta *lm = (struct lazy_meta *)lf;
	uint32_t i;
	json_t *v;

	for (i = 0; i < lm->n; i++) {
		struct deferred *df = &lm->v[i];

		v = df->make(df->arg);
		if (!v ||
		    json_object_set_new(df->parent ? df->parent : lm->root,
					df->key, v))
			return -ENOMEM;
	}
	*data = dump_json(lm->root, len);
	if (!*data)
		return -ENOMEM;
	/* made once: the inputs can go */
	json_decref(lm->root);
	lm->root = NULL;
	deferred_free(lm->v, lm->n);
	lm->v = NULL;
	lm->n = 0;
	return 0;
}

static int add_lazy_metadata(struct tfs_builder *b, struct node_list *nl,
			     uint32_t meta_dir)
{
	struct lazy_meta *lm = calloc(1, sizeof(*lm));
	uint32_t idx;
	int ret;

	if (!lm)
		return -ENOMEM;
	pthread_mutex_init(&lm->lf.lock, NULL);
	atomic_init(&lm->lf.done, false);
	lm->lf.make = lazy_meta_make;
	lm->lf.destroy = lazy_meta_destroy;
	lm->root = json_incref(b->metadata);
	lm->v = b->deferred;
	lm->n = b->ndeferred;
	b->deferred = NULL;
	b->ndeferred = 0;
	ret = new_node(nl, "metadata.json", strlen("metadata.json"), meta_dir,
		       TFS_NODE_MEMFILE, &idx);
	if (ret) {
		lazy_meta_destroy(&lm->lf);
		return ret;
	}
	nl->v[idx].lazy = &lm->lf;
	return 0;
}

/*
 * manifest.json, made on first use from the tensor records (manifest.h):
 * what the records lack goes with it
 */
static int add_lazy_manifest(struct tfs_builder *b, struct node_list *nl,
			     const char *format, uint32_t meta_dir)
{
	struct tfs_mf *m = tfs_mf_new(format);
	uint32_t i, idx, ti = 0;
	int ret = m ? 0 : -ENOMEM;

	for (i = 0; !ret && i < b->nsources; i++)
		if (b->sources[i].label)
			ret = tfs_mf_set_label(m, i, b->sources[i].label);
	for (i = 1; !ret && i < b->n; i++) {
		struct entry *e = &b->e[i];

		if (e->kind == ENTRY_TENSOR)
			ret = tfs_mf_add_tensor(m, ti, e->extra);
		else if (e->kind == ENTRY_GROUP)
			ret = tfs_mf_add_text(m, group_text(b, e));
		/* the records are made in entry order: their index */
		if (e->kind == ENTRY_TENSOR || e->kind == ENTRY_COMPONENT)
			ti++;
	}
	if (!ret)
		ret = new_node(nl, "manifest.json", strlen("manifest.json"),
			       meta_dir, TFS_NODE_MEMFILE, &idx);
	if (ret) {
		tfs_mf_free(m);
		return ret;
	}
	nl->v[idx].lazy = tfs_mf_lazy_file(m, nl->tree);
	return 0;
}

static int build_json_files(struct tfs_builder *b, struct node_list *nl,
			    const char *format, uint32_t meta_dir)
{
	char *data;
	size_t len;
	uint32_t i;
	bool have_errors = false;
	int ret = -ENOMEM;

	ret = add_lazy_manifest(b, nl, format, meta_dir);
	if (ret)
		goto out;
	ret = -ENOMEM;
	if (b->multi && b->containers &&
	    json_object_set(b->metadata, "containers", b->containers))
		goto out;
	if (!json_object_get(b->metadata, "format")) {
		json_t *m = json_object();

		if (!m)
			goto out;
		/* "format" first, then the reader's members */
		json_object_set_new(m, "format", json_string(format));
		json_object_update(m, b->metadata);
		json_decref(b->metadata);
		b->metadata = m;
	}
	if (b->ndeferred) {
		ret = add_lazy_metadata(b, nl, meta_dir);
	} else {
		data = dump_json(b->metadata, &len);
		ret = data ? add_memfile(nl, meta_dir, "metadata.json", data,
					 len)
			   : -ENOMEM;
	}
	for (i = 0; !ret && i < b->nfiles; i++) {
		if (strcmp(b->files[i].name, "errors.json") == 0)
			have_errors = true;
		data = b->files[i].data;
		b->files[i].data = NULL;
		ret = add_memfile(nl, meta_dir, b->files[i].name, data,
				  b->files[i].len);
	}
	/* every mount has one: the daemon adds the failures it meets */
	if (!ret && !have_errors) {
		data = strdup("[]\n");
		ret = data ? add_memfile(nl, meta_dir, "errors.json", data, 3)
			   : -ENOMEM;
	}
out:
	return ret;
}

/* the value of xattr "user.tensorfs.<key>" on @e equals @want */
static bool entry_xattr_is(const struct entry *e, const char *key,
			   const char *want)
{
	uint32_t i;

	for (i = 0; e && i < e->nxattrs; i++)
		if (strcmp(e->xattrs[i].name + strlen(TFS_XATTR_PREFIX), key) ==
		    0)
			return e->xattrs[i].len == strlen(want) &&
			       memcmp(e->xattrs[i].value, want,
				      e->xattrs[i].len) == 0;
	return false;
}

/*
 * The layout flags (for -o npy's header and -o as), before xattrs move;
 * then which tensors -o as converts, and their size
 */
static void layout_flags(struct tfs_builder *b)
{
	uint32_t i;

	for (i = 1; i < b->n; i++) {
		struct entry *e = &b->e[i];
		const struct entry *g =
			e->kind == ENTRY_COMPONENT ? &b->e[e->group] : NULL;

		e->big = entry_xattr_is(e, "byte_order", "big") ||
			 entry_xattr_is(g, "byte_order", "big");
		e->fortran = entry_xattr_is(e, "order", "F") ||
			     entry_xattr_is(g, "order", "F");
		if ((e->kind == ENTRY_TENSOR || e->kind == ENTRY_COMPONENT) &&
		    tfs_as_view_applies(b->opts.as, b->opts.as_all, e->dtype_id,
					e->big)) {
			const struct tfs_dtype_info *di =
				tfs_dtype_info(e->dtype_id);

			e->view = b->opts.as;
			/* whole blocks (the builder checked the size) */
			e->view_size = e->size / di->block_bytes *
				       di->block_elems *
				       tfs_dtype_size(e->view);
		}
	}
}

static int fill_tensor(struct tfs_builder *b, struct tfs_tree *tree,
		       struct tfs_tensor *t, struct entry *e,
		       const struct entry *group)
{
	int ret = 0;

	if (b->opts.npy && e->view) /* converted: little-endian */
		ret = tfs_npy_header(e->view, 0, NULL, e->shape, e->ndim,
				     e->view_size, false, e->fortran,
				     &t->prefix, &t->prefix_len);
	else if (b->opts.npy)
		ret = tfs_npy_header(e->dtype_id, e->record_size, e->npy_descr,
				     e->shape, e->ndim, e->size, e->big,
				     e->fortran, &t->prefix, &t->prefix_len);

	if (ret)
		return ret;
	/* copies in the tree's arena; the entry's own go with the builder */
	t->name = tfs_tree_dup(tree, e->name, e->name_len);
	t->name_len = e->name_len;
	t->path = tfs_tree_dup(tree, e->path, strlen(e->path));
	/* a known dtype's name is static; only "void12" and the like are
	 * copied */
	t->dtype = e->dtype && tfs_dtype_name(e->dtype_id) &&
			   !strcmp(tfs_dtype_name(e->dtype_id), e->dtype)
			   ? tfs_dtype_name(e->dtype_id)
		   : e->dtype ? tfs_tree_dup(tree, e->dtype, strlen(e->dtype))
			      : NULL;
	t->dtype_id = e->dtype_id;
	t->record_size = e->record_size;
	t->source = tfs_builder_source_index(b, e, e->sib);
	t->ndim = e->ndim;
	t->shape = tfs_tree_alloc(tree, e->ndim * sizeof(*t->shape));
	if (!t->name || !t->path || (e->dtype && !t->dtype) || !t->shape)
		return -ENOMEM;
	if (e->ndim)
		memcpy(t->shape, e->shape, e->ndim * sizeof(*t->shape));
	t->offset = e->offset;
	t->stored_length = e->length;
	if (e->nsegs && tfs_builder_put_segments(b, e, tree, t))
		return -ENOMEM;
	t->size = e->size;
	t->view = e->view;
	t->view_size = e->view_size;
	t->encoding = e->encoding;
	t->codec = e->codec;
	e->codec.gather = NULL; /* the tree frees it */
	e->codec.chunks = NULL;
	t->has_digest_extent = e->has_digest_extent;
	t->digest_offset = e->digest_offset;
	t->digest_length = e->digest_length;
	t->digest = e->digest ? tfs_tree_dup(tree, e->digest, strlen(e->digest))
			      : NULL;
	t->unreadable = e->unreadable ? tfs_tree_dup(tree, e->unreadable,
						     strlen(e->unreadable))
				      : NULL;
	if (e->unreadable && !t->unreadable)
		return -ENOMEM;
	t->unreadable_is_fault = e->unreadable_is_fault;
	t->digest_decoded = e->digest_decoded;
	t->node = e->node;
	t->group = group ? group->node : TFS_NO_NODE;
	t->role = group ? tfs_tree_dup(tree, e->comps[0], strlen(e->comps[0]))
			: NULL;
	if ((e->digest && !t->digest) || (group && !t->role))
		return -ENOMEM;
	return 0;
}

static int build_nodes(struct tfs_builder *b, struct node_list *nl,
		       struct tfs_tree *t, const char *format)
{
	struct path_state ps = {0};
	struct block_map shared = {0};
	struct tfs_strmap dirs;
	uint32_t i, k, dir, idx, meta_dir, ti = 0;
	char *slash;
	int ret;

	tfs_strmap_init(&dirs);
	ret = new_node(nl, "", 0, TFS_ROOT_NODE, TFS_NODE_DIR, &idx);
	if (ret)
		goto out;
	b->e[0].node = TFS_ROOT_NODE;
	for (i = 1; i < b->n; i++) {
		struct entry *e = &b->e[i];

		if (e->kind == ENTRY_DIR) {
			ret = get_dir(nl, &dirs, &ps, e->path, &e->node);
			if (ret)
				goto out;
			continue;
		}
		if (e->kind != ENTRY_TENSOR && e->kind != ENTRY_GROUP)
			continue;
		/* its directory: the path cut at its last slash */
		slash = strrchr(e->path, '/');
		if (slash)
			*slash = '\0';
		ret = get_dir(nl, &dirs, &ps, slash ? e->path : "", &dir);
		if (slash)
			*slash = '/';
		if (ret)
			goto out;
		slash = slash ? slash + 1 : e->path;
		ret = new_node(nl, slash, strlen(slash), dir,
			       e->kind == ENTRY_GROUP ? TFS_NODE_DIR
						      : TFS_NODE_TENSOR,
			       &e->node);
		if (ret)
			goto out;
		for (k = 0; e->kind == ENTRY_GROUP && k < e->nmembers; k++) {
			struct entry *c = &b->e[e->members[k]];

			const char *sfx = b->opts.npy ? ".npy" : "";
			char *fname = NULL;

			if (asprintf(&fname, "%s%s", c->comps[0], sfx) < 0)
				fname = NULL;
			ret = fname ? new_node(nl, fname, strlen(fname),
					       e->node, TFS_NODE_TENSOR,
					       &c->node)
				    : -ENOMEM;
			if (!ret &&
			    asprintf(&c->path, "%s/%s", e->path, fname) < 0)
				ret = -ENOMEM;
			free(fname);
			if (ret)
				goto out;
		}
	}
	layout_flags(b);
	ret = new_node(nl, META_DIR, strlen(META_DIR), TFS_ROOT_NODE,
		       TFS_NODE_DIR, &meta_dir);
	if (!ret)
		ret = build_json_files(b, nl, format, meta_dir);
	if (ret)
		goto out;
	/* tensor records, in entry order; xattrs onto nodes */
	for (i = 0; i < b->n; i++) {
		struct entry *e = &b->e[i];

		ret = standard_xattrs(e, format, b->sources[e->source].shard);
		if (!ret)
			ret = move_xattrs(t, nl->v, &nl->v[e->node], e,
					  &shared);
		if (ret)
			goto out;
		if (e->kind == ENTRY_TENSOR || e->kind == ENTRY_COMPONENT) {
			nl->v[e->node].tensor = ti;
			ret = fill_tensor(b, t, &t->tensors[ti++], e,
					  e->kind == ENTRY_COMPONENT
						  ? &b->e[e->group]
						  : NULL);
			if (ret)
				goto out;
		}
	}
	t->ntensors = ti;
out:
	block_map_free(&shared);
	tfs_strmap_free(&dirs);
	path_state_free(&ps);
	return ret;
}

/* byte_order=big (or stored_byte_order=big: -o as) on a finished node */
static bool node_big(const struct tfs_node *nd)
{
	uint32_t i;

	for (i = 0; i < nd->nxattrs; i++)
		if ((!strcmp(nd->xattrs[i].name,
			     TFS_XATTR_PREFIX "byte_order") ||
		     !strcmp(nd->xattrs[i].name,
			     TFS_XATTR_PREFIX "stored_byte_order")) &&
		    nd->xattrs[i].len == 3 &&
		    !memcmp(nd->xattrs[i].value, "big", 3))
			return true;
	return false;
}

/*
 * -o previews: "<file>.png" beside each tensor file that gets a picture,
 * unless that name is taken (a preview never displaces a file or a
 * directory) or too long.  After the tensor records: the nodes so far are
 * every name there is.
 */
static int add_previews(struct node_list *nl, const struct tfs_tree *t)
{
	struct tfs_strmap taken;
	char **keys = NULL, *name = NULL;
	uint32_t i, n = nl->n, node, w, h;
	uint64_t size;
	int ret = -ENOMEM;

	tfs_strmap_init(&taken);
	keys = calloc(n ? n : 1, sizeof(*keys));
	if (!keys)
		goto out;
	for (i = 0; i < n; i++) {
		if (asprintf(&keys[i], "%u/%s", nl->v[i].parent,
			     nl->v[i].name) < 0) {
			keys[i] = NULL;
			goto out;
		}
		if (tfs_strmap_put(&taken, keys[i], i))
			goto out;
	}
	for (i = 0; i < t->ntensors; i++) {
		const struct tfs_tensor *x = &t->tensors[i];
		const struct tfs_node *tn = &nl->v[x->node];
		uint32_t parent = tn->parent;
		bool big = node_big(tn) || (x->group != TFS_NO_NODE &&
					    node_big(&nl->v[x->group]));

		if (!tfs_preview_geometry(x->dtype_id, big, x->shape, x->ndim,
					  &w, &h) ||
		    strlen(tn->name) + 4 > TFS_NAME_MAX)
			continue;
		free(name);
		if (asprintf(&name, "%u/%s.png", parent, tn->name) < 0) {
			name = NULL;
			goto out;
		}
		if (tfs_strmap_get(&taken, name, &node))
			continue;
		ret = tfs_preview_size(w, h, &size);
		if (!ret)
			ret = new_node(nl, strchr(name, '/') + 1,
				       strlen(strchr(name, '/') + 1), parent,
				       TFS_NODE_PREVIEW, &node);
		if (ret)
			goto out;
		nl->v[node].tensor = i;
		nl->v[node].mem_len = size;
		ret = -ENOMEM;
	}
	ret = 0;
out:
	free(name);
	for (i = 0; keys && i < n; i++)
		free(keys[i]);
	free(keys);
	tfs_strmap_free(&taken);
	return ret;
}

/* .tensorfs/export/'s children, made when first looked in (tree.h) */
struct lazy_export {
	struct tfs_lazy_dir ld; /* first: the tree knows only this */
	struct tfs_export_options eo;
	char *source, *source_meta;
};

static void lazy_export_destroy(struct tfs_lazy_dir *ld)
{
	struct lazy_export *le = (struct lazy_export *)ld;

	pthread_mutex_destroy(&ld->lock);
	free(le->source);
	free(le->source_meta);
	free(le);
}

static int cmp_node_names(const void *pa, const void *pb, void *arg)
{
	const struct tfs_node *v = arg;

	return strcmp(v[*(const uint32_t *)pa].name,
		      v[*(const uint32_t *)pb].name);
}

/* the slot @k of @ld's reserved nodes, as @kind named @name */
static struct tfs_node *export_slot(struct tfs_tree *t,
				    const struct tfs_lazy_dir *ld, uint32_t k,
				    const char *name, enum tfs_node_kind kind)
{
	struct tfs_node *n = &t->nodes[ld->first + k];

	n->name = (char *)name; /* the export's, or static: never written */
	n->kind = kind;
	return n;
}

static int lazy_export_make(struct tfs_tree *t, struct tfs_lazy_dir *ld)
{
	struct lazy_export *le = (struct lazy_export *)ld;
	struct tfs_node *dir = &t->nodes[ld->dir], *n;
	struct tfs_export *e = NULL;
	char *left = NULL, *index = NULL;
	size_t index_len = 0;
	uint32_t k = 0, i;
	int ret = tfs_export_plan(&e, t, &le->eo);

	if (ret)
		return ret;
	/* the plan keeps within the bound add_export reserved */
	if (e->nfiles + (e->nfiles > 1) + !!e->left > ld->cap)
		ret = -EIO;
	if (!ret && e->nfiles > 1)
		ret = tfs_export_index(e, &index, &index_len);
	if (!ret && e->left && !(left = strdup(e->left)))
		ret = -ENOMEM;
	if (ret) {
		free(index);
		tfs_export_free(e);
		return ret;
	}
	for (i = 0; i < e->nfiles; i++) {
		n = export_slot(t, ld, k++, e->files[i].name,
				TFS_NODE_EXPORT);
		n->tensor = i;
		n->mem_len = e->files[i].size;
	}
	if (index) {
		n = export_slot(t, ld, k++, "model.safetensors.index.json",
				TFS_NODE_MEMFILE);
		n->mem = index;
		n->mem_len = index_len;
	}
	if (left) {
		n = export_slot(t, ld, k++, "left_out.json", TFS_NODE_MEMFILE);
		n->mem = left;
		n->mem_len = e->left_len;
	}
	for (i = 0; i < k; i++)
		t->children[dir->first_child + i] = ld->first + i;
	qsort_r(t->children + dir->first_child, k, sizeof(*t->children),
		cmp_node_names, t->nodes);
	t->export = e;
	dir->nchildren = k;
	return 0;
}

/* the source files, comma-separated, for the export's metadata */
static char *source_names(const struct tfs_builder *b)
{
	char *p = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&p, &len);
	bool first = true;
	uint32_t i;

	if (!f)
		return NULL;
	for (i = 0; i < b->nsources; i++) {
		const char *s = b->sources[i].label;
		const char *path = b->sources[i].src ? b->sources[i].src->path
						     : NULL;

		if (!s && path)
			s = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
		if (s)
			fprintf(f, "%s%s", first ? "" : ",", s);
		first = first && !s;
	}
	if (fclose(f)) {
		free(p);
		return NULL;
	}
	return p;
}

/*
 * The most files the export of @t can have: a shard ends only when its
 * bytes and the next tensor's pass the limit, so two shards in a row hold
 * more than the limit (at most 2 * total / limit + 1 of them), and each
 * holds a tensor.
 */
static uint32_t export_files_bound(const struct tfs_tree *t, uint64_t shard)
{
	uint64_t total = 0, x;
	uint32_t i;

	for (i = 0; i < t->ntensors; i++) {
		x = t->tensors[i].view ? t->tensors[i].view_size
				       : t->tensors[i].size;
		if (!tfs_add_u64(total, x, &total))
			return t->ntensors + 1;
	}
	x = total / shard;
	return x >= t->ntensors / 2 ? t->ntensors + 1 : (uint32_t)(2 * x + 3);
}

/*
 * .tensorfs/export/: model.safetensors, or its shards and index
 * (export.h), planned when first looked in; here its node slots are
 * reserved.  After the tensor records and their nodes.
 */
static int add_export(struct tfs_builder *b, struct node_list *nl,
		      struct tfs_tree *t)
{
	json_t *sm = b->nsources == 1
			     ? json_object_get(b->metadata, "__metadata__")
			     : NULL;
	struct lazy_export *le = calloc(1, sizeof(*le));
	uint32_t i, meta = TFS_NO_NODE, dir, node;
	int ret = -ENOMEM;

	if (!le)
		return -ENOMEM;
	pthread_mutex_init(&le->ld.lock, NULL);
	atomic_init(&le->ld.done, false);
	le->ld.make = lazy_export_make;
	le->ld.destroy = lazy_export_destroy;
	le->eo.shard_size = b->opts.export_shard ? b->opts.export_shard
						 : TFS_EXPORT_SHARD_DEFAULT;
	for (i = 1; i < nl->n; i++)
		if (nl->v[i].parent == TFS_ROOT_NODE &&
		    nl->v[i].kind == TFS_NODE_DIR &&
		    !strcmp(nl->v[i].name, META_DIR))
			meta = i;
	le->source = source_names(b);
	if (!le->source || meta == TFS_NO_NODE)
		goto out;
	if (json_is_object(sm) &&
	    !(le->source_meta = json_dumps(sm, JSON_COMPACT)))
		goto out;
	le->eo.source = *le->source ? le->source : NULL;
	le->eo.source_meta = le->source_meta;
	ret = new_node(nl, "export", 6, meta, TFS_NODE_DIR, &dir);
	if (ret)
		goto out;
	le->ld.dir = dir;
	le->ld.first = nl->n;
	/* the files, the index and left_out.json */
	le->ld.cap = export_files_bound(t, le->eo.shard_size) + 2;
	for (i = 0; !ret && i < le->ld.cap; i++)
		ret = new_node(nl, "", 0, dir, TFS_NODE_MEMFILE, &node);
	if (!ret) {
		t->lazy_dir = &le->ld;
		le = NULL;
	}
out:
	if (le)
		lazy_export_destroy(&le->ld);
	return ret;
}

static int link_children(struct tfs_tree *t)
{
	uint32_t i, n = t->nnodes;

	t->children = calloc(n ? n : 1, sizeof(*t->children));
	if (!t->children)
		return -ENOMEM;
	for (i = 1; i < n; i++)
		t->children[i - 1] = i;
	qsort_r(t->children, n - 1, sizeof(*t->children), cmp_nodes, t->nodes);
	for (i = 0; i + 1 < n; i++) {
		struct tfs_node *p = &t->nodes[t->nodes[t->children[i]].parent];

		if (!p->nchildren)
			p->first_child = i;
		p->nchildren++;
		if (t->nodes[t->children[i]].kind == TFS_NODE_DIR)
			p->nsubdirs++;
	}
	return 0;
}

/* ---- finish: the rules that need every entry ------------------------- */

/*
 * Names are unique per mount, or per container where each container has a
 * directory of its own: the namespace of an entry.
 */
static uint32_t name_space(const struct tfs_builder *b, const struct entry *e)
{
	return b->sources[e->source].own_dir ? b->sources[e->source].space
					     : UINT32_MAX;
}

static bool same_name(const struct tfs_builder *b, const struct entry *x,
		      const struct entry *y)
{
	return name_space(b, x) == name_space(b, y) &&
	       x->name_len == y->name_len &&
	       memcmp(x->name, y->name, x->name_len) == 0;
}

/*
 * Stored names of tensors and groups are unique: a hash set of entries,
 * filled in container order, so the later of two is reported
 */
static int check_unique_names(struct tfs_builder *b, uint32_t from,
			      struct tfs_diag *d)
{
	char nm[TFS_PRINTABLE_MAX];
	uint32_t *set, i, space;
	size_t cap = 64, slot;
	int ret = 0;

	while (cap < (size_t)(b->n - from) * 2)
		cap *= 2;
	set = malloc(cap * sizeof(*set));
	if (!set)
		return tfs_diag_oom(d);
	memset(set, 0xff, cap * sizeof(*set));
	for (i = from; !ret && i < b->n; i++) {
		const struct entry *a = NULL, *c = &b->e[i];

		if (c->kind != ENTRY_TENSOR && c->kind != ENTRY_GROUP)
			continue;
		space = name_space(b, c);
		slot = XXH3_64bits_withSeed(c->name, c->name_len, space) &
		       (cap - 1);
		for (; set[slot] != UINT32_MAX; slot = (slot + 1) & (cap - 1))
			if (same_name(b, &b->e[set[slot]], c)) {
				a = &b->e[set[slot]];
				break;
			}
		if (!a) {
			set[slot] = i;
			continue;
		}
		tfs_name_printable(nm, sizeof(nm), c->name, c->name_len);
		if (a->source != c->source)
			ret = tfs_diag_set(d, -EBADMSG,
					   "%s: tensor '%s': name: also in %s",
					   b->sources[c->source].label, nm,
					   b->sources[a->source].label);
		else
			ret = tfs_diag_at(d, -EBADMSG, c->desc_offset,
					  "tensor '%s': name: duplicate of the "
					  "tensor described at byte offset "
					  "%llu",
					  nm,
					  (unsigned long long)a->desc_offset);
	}
	free(set);
	return ret;
}

static int cmp_extents(const void *pa, const void *pb, void *arg)
{
	const struct entry *e = arg, *a = &e[*(const uint32_t *)pa],
			   *b = &e[*(const uint32_t *)pb];

	if (a->source != b->source)
		return a->source < b->source ? -1 : 1;
	if (a->offset != b->offset)
		return a->offset < b->offset ? -1 : 1;
	return *(const uint32_t *)pa < *(const uint32_t *)pb ? -1 : 1;
}

/* the printable name of a file entry: "name" or "name/role" */
static void entry_label(const struct tfs_builder *b, const struct entry *e,
			char *buf, size_t len)
{
	const struct entry *g =
		e->kind == ENTRY_COMPONENT ? &b->e[e->group] : e;
	size_t n;

	tfs_name_printable(buf, len, g->name, g->name_len);
	n = strlen(buf);
	if (e != g && n + 1 < len)
		snprintf(buf + n, len - n, "/%s", e->comps[0]);
}

/* stored extents of files do not overlap (TFS_OVERLAP_FORBID / _WARN), or
 * only as exact copies (_IDENTICAL) */
static int check_overlaps(struct tfs_builder *b, uint32_t from,
			  struct tfs_diag *d)
{
	char na[TFS_PRINTABLE_MAX], nb[TFS_PRINTABLE_MAX + 64];
	uint32_t *v, i, n = 0, far = 0;
	int ret = 0;

	v = calloc(b->n, sizeof(*v));
	if (!v)
		return tfs_diag_oom(d);
	for (i = from; i < b->n; i++)
		if ((b->e[i].kind == ENTRY_TENSOR ||
		     b->e[i].kind == ENTRY_COMPONENT) &&
		    b->e[i].length && !b->e[i].unreadable && !b->e[i].sib &&
		    !b->e[i].nsegs &&
		    b->sources[b->e[i].source].overlap != TFS_OVERLAP_ALLOW)
			v[n++] = i;
	qsort_r(v, n, sizeof(*v), cmp_extents, b->e);
	/* @far: the extent reaching furthest so far (ends never overflow:
	 * every extent was checked to lie inside the file) */
	for (i = 1; !ret && i < n; i++) {
		const struct entry *a = &b->e[v[far]], *c = &b->e[v[i]];
		enum tfs_overlap_rule rule = b->sources[c->source].overlap;

		if (a->source != c->source ||
		    c->offset >= a->offset + a->length) {
			far = i;
			continue;
		}
		/* the same extent again: shared bytes (tied weights) */
		if (rule == TFS_OVERLAP_IDENTICAL && c->offset == a->offset &&
		    c->length == a->length)
			continue;
		entry_label(b, c, nb, sizeof(nb));
		entry_label(b, a, na, sizeof(na));
		if (rule == TFS_OVERLAP_FORBID || rule == TFS_OVERLAP_IDENTICAL)
			ret = tfs_diag_at(
				d, -EBADMSG, c->desc_offset,
				"tensor '%s': data [%llu, %llu) overlaps "
				"tensor '%s' [%llu, %llu)",
				nb, (unsigned long long)c->offset,
				(unsigned long long)(c->offset + c->length), na,
				(unsigned long long)a->offset,
				(unsigned long long)(a->offset + a->length));
		else if (tfs_builder_warn(
				 b, c->desc_offset,
				 "tensor '%s': data [%llu, %llu) overlaps "
				 "tensor '%s' [%llu, %llu)",
				 nb, (unsigned long long)c->offset,
				 (unsigned long long)(c->offset + c->length),
				 na, (unsigned long long)a->offset,
				 (unsigned long long)(a->offset + a->length)))
			ret = tfs_diag_oom(d);
		if (c->offset + c->length > a->offset + a->length)
			far = i;
	}
	free(v);
	return ret;
}

/* warnings into metadata.json ("warnings") and the tree */
static int publish_warnings(struct tfs_builder *b, struct tfs_tree *t)
{
	json_t *list;
	uint32_t i;

	if (!b->nwarnings)
		return 0;
	list = json_object_get(b->metadata, "warnings");
	if (!list) {
		list = json_array();
		if (!list || json_object_set_new(b->metadata, "warnings", list))
			return -ENOMEM;
	}
	for (i = 0; i < b->nwarnings; i++)
		if (json_array_append_new(list,
					  json_string(b->warnings[i].msg)))
			return -ENOMEM;
	t->warnings = b->warnings;
	t->nwarnings = b->nwarnings;
	b->warnings = NULL;
	b->nwarnings = b->warnings_cap = 0;
	return 0;
}

int tfs_builder_finish(struct tfs_builder *b, const char *format,
		       struct tfs_tree **out, struct tfs_diag *d)
{
	struct node_list nl = {0};
	struct tfs_tree *t;
	uint32_t i, nfiles = 0;
	int ret;

	ret = check_unique_names(b, 1, d);
	if (!ret)
		ret = check_overlaps(b, 1, d);
	if (ret)
		return ret;
	t = calloc(1, sizeof(*t));
	if (!t)
		return tfs_diag_oom(d);
	nl.tree = t;
	t->format = format;
	if (publish_warnings(b, t)) {
		tfs_tree_free(t);
		return tfs_diag_oom(d);
	}
	for (i = 1; i < b->n; i++)
		if (b->e[i].kind == ENTRY_TENSOR ||
		    b->e[i].kind == ENTRY_COMPONENT)
			nfiles++;
	t->tensors = calloc(nfiles ? nfiles : 1, sizeof(*t->tensors));
	t->ntensors = nfiles; /* zeroed records are safe to free */
	ret = t->tensors ? place_leaves(b) : -ENOMEM;
	if (!ret)
		ret = build_nodes(b, &nl, t, format);
	if (!ret && b->opts.previews)
		ret = add_previews(&nl, t);
	if (!ret && !b->opts.no_export)
		ret = add_export(b, &nl, t);
	/* the list grew by doubling: give back the slack */
	if (nl.n && nl.n < nl.cap) {
		struct tfs_node *nv = reallocarray(nl.v, nl.n, sizeof(*nv));

		if (nv)
			nl.v = nv;
	}
	t->nodes = nl.v;
	t->nnodes = nl.n;
	if (!ret)
		ret = link_children(t);
	/* the export's reserved slots show when it is first looked in */
	if (!ret && t->lazy_dir)
		t->nodes[t->lazy_dir->dir].nchildren = 0;
	if (ret) {
		tfs_tree_free(t);
		return tfs_diag_set(d, ret, "cannot build the tree: %s",
				    strerror(-ret));
	}
	for (i = 0; i < t->ntensors; i++)
		t->total_bytes += t->tensors[i].size;
	*out = t;
	return 0;
}
