// SPDX-License-Identifier: MIT
/*
 * The builder's entries: what a reader adds (tensors, groups, components:
 * their checks against the shared rules, their wanted paths as interned
 * components) and their xattrs and metadata files.  See
 * src/core/builder.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/builder.h"
#include "core/checked.h"
#include "codec/codec.h"
#include "core/diag.h"
#include "core/names.h"
#include "core/text.h"
#include "npy_view.h"
#include "strmap.h"
#include "builder_i.h"

int tfs_build_push_entry(struct tfs_builder *b, uint32_t *idx)
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

void tfs_build_pop_entry(struct tfs_builder *b)
{
	b->n--;
	tfs_build_entry_free(&b->e[b->n]);
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

	if (!len || len > TFS_NAME_MAX ||
	    (s[0] == '.' && len <= 2 && (len == 1 || s[1] == '.')))
		return false;
	for (i = 0; i < len; i++)
		if (s[i] < 0x20 || s[i] > 0x7e || s[i] == '%' || s[i] == '/')
			return false;
	return true;
}

int tfs_build_add_comp(struct tfs_builder *b, struct entry *e, const char *s,
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
	return push_comp(e,
			 intern_comp(b, tfs_name_escape(s, len, TFS_NAME_MAX)));
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
		return tfs_build_add_comp(b, e, s->name, s->name_len);
	if (s->path) {
		if (s->path_len == 0)
			return tfs_build_add_comp(b, e, "", 0);
		for (i = 0;
		     i < s->path_len && base + i + 1 < TFS_PATH_MAX_DEPTH;
		     i++) {
			ret = tfs_build_add_comp(b, e, s->path[i],
						 strlen(s->path[i]));
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
		ret = tfs_build_add_comp(b, e, rest, len);
		free(rest);
		return ret;
	}
	start = 0;
	for (i = 0; i <= s->name_len; i++) {
		if (i < s->name_len &&
		    ((s->name[i] != '.' && s->name[i] != '/') ||
		     e->ncomps + 1 == TFS_PATH_MAX_DEPTH))
			continue;
		ret = tfs_build_add_comp(b, e, s->name + start, i - start);
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
static int add_suffix(struct tfs_builder *b, const char **comp, const char *sfx)
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
	ret = tfs_build_push_entry(b, &idx);
	if (ret)
		return tfs_diag_set(d, ret, "too many tensors");
	e = &b->e[idx];
	e->kind = kind;
	ret = fill_common(e, s);
	if (!ret && kind != ENTRY_COMPONENT)
		ret = set_wanted_path(b, e, s);
	if (!ret && kind == ENTRY_TENSOR && b->opts.npy)
		ret = add_suffix(b, &e->comps[e->ncomps - 1],
				 TFS_NPY_VIEW_SUFFIX);
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
			tfs_build_pop_entry(b);
			return ret;
		}
	}
	if (ret) {
		free(gather);
		tfs_chunk_params_free(chunks);
		tfs_build_pop_entry(b);
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
	ret = tfs_build_add_comp(b, c, role, strlen(role));
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
			tfs_build_pop_entry(b);
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
	tfs_build_pop_entry(b);
	return ret == -ENOMEM ? tfs_diag_oom(d)
			      : tfs_diag_set(d, ret, "%s", strerror(-ret));
}

/* ---- xattrs -------------------------------------------------------------- */

int tfs_build_entry_set_xattr(struct entry *e, const char *key, const void *v,
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
	return tfs_build_entry_set_xattr(&b->e[handle], key, value, len, true);
}

int tfs_builder_set_top_xattr(struct tfs_builder *b, const char *key,
			      const void *value, size_t len)
{
	if (!b->n || !key || !*key)
		return -EINVAL;
	return tfs_build_entry_set_xattr(&b->e[0], key, value, len, true);
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
