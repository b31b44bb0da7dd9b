// SPDX-License-Identifier: MIT
/*
 * The tree from the builder's entries at finish: the directories and
 * tensor nodes, the tensor records, xattrs onto nodes (shared blocks), the
 * layout flags the views read, and .tensorfs/'s JSON
 * files (metadata.json and manifest.json made when first read).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "core/builder.h"
#include "core/dtype.h"
#include "core/names.h"
#include "core/text.h"
#include "npy_view.h"
#include "manifest.h"
#include "strmap.h"
#include "builder_i.h"
#include "nodes.h"

/* the directory at path @p (created with its parents), in *out */
static int get_dir(struct tfs_node_list *nl, struct tfs_strmap *dirs,
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
	ret = tfs_nodes_add(nl, slash ? slash + 1 : p,
			    strlen(slash ? slash + 1 : p), parent, TFS_NODE_DIR,
			    out);
	if (ret)
		return ret;
	ret = tfs_path_own(ps, strdup(p));
	if (ret)
		return ret;
	return tfs_strmap_put(dirs, ps->kept.v[ps->kept.n - 1], *out);
}

static int cmp_xattrs(const void *a, const void *b)
{
	return strcmp(((const struct tfs_xattr *)a)->name,
		      ((const struct tfs_xattr *)b)->name);
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
		return tfs_build_entry_set_xattr(e, "format", format,
						 strlen(format), false);
	if (e->kind == ENTRY_DIR)
		return tfs_build_entry_set_xattr(e, "container", e->name,
						 e->name_len, false);
	if (shard)
		ret = tfs_build_entry_set_xattr(e, "shard", shard,
						strlen(shard), false);
	if (e->kind != ENTRY_GROUP)
		return ret;
	if (!ret)
		ret = tfs_build_entry_set_xattr(e, "name", e->name, e->name_len,
						false);
	if (!ret && e->dtype)
		ret = tfs_build_entry_set_xattr(e, "dtype", e->dtype,
						strlen(e->dtype), false);
	if (ret || (!e->ndim && !e->dtype))
		return ret;
	slen = (size_t)e->ndim * 21 + 3;
	shape = malloc(slen);
	if (!shape)
		return -ENOMEM;
	tfs_shape_text(shape, slen, e->shape, e->ndim);
	ret = tfs_build_entry_set_xattr(e, "shape", shape, strlen(shape),
					false);
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
 * The entry's xattrs into the node (tfs_nodes_pack_xattrs), or the block of
 * a node with the same ones: most tensors of a model have equal xattrs.
 */
static int move_xattrs(struct tfs_tree *t, struct tfs_node *nodes,
		       struct tfs_node *nd, struct entry *e,
		       struct block_map *shared)
{
	uint32_t i, n = e->nxattrs;
	size_t slot;
	uint64_t h;
	int ret = 0;

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
	ret = tfs_nodes_pack_xattrs(t, nd, e->xattrs, n);
	if (ret)
		return ret;
	shared->hash[slot] = h;
	shared->node[slot] = (uint32_t)(nd - nodes);
	shared->len++;
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
	f->shape = e->shape;
	f->ndim = e->ndim;
	f->group = e->kind == ENTRY_GROUP;
	f->size = e->size;
	f->offset = e->offset;
	f->stored_length = e->length;
	f->encoding = e->encoding;
	f->digest = e->digest;
	f->unreadable = e->unreadable;
	f->extra = e->extra;
	f->container = label;
}

/*
 * A group's manifest entry: its own members now, its components from their
 * records when the text is made (manifest.h); @rec: each entry's record
 */
static int add_group(struct tfs_builder *b, struct tfs_mf *m,
		     const struct entry *e, const uint32_t *rec)
{
	const json_t **extras = calloc(e->nmembers + 1, sizeof(*extras));
	uint32_t *records = calloc(e->nmembers + 1, sizeof(*records));
	struct tfs_mf_fields f;
	uint32_t k;
	int ret = -ENOMEM;

	if (!extras || !records)
		goto out;
	for (k = 0; k < e->nmembers; k++) {
		records[k] = rec[e->members[k]];
		extras[k] = b->e[e->members[k]].extra;
	}
	entry_fields(e, b->sources[e->source].label, &f);
	ret = tfs_mf_add_group(m, tfs_mf_entry(&f), records, extras,
			       e->nmembers);
out:
	free(extras);
	free(records);
	return ret;
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

static int add_memfile(struct tfs_node_list *nl, uint32_t dir, const char *name,
		       char *data, size_t len)
{
	uint32_t idx;
	int ret = tfs_nodes_add(nl, name, strlen(name), dir, TFS_NODE_MEMFILE,
				&idx);

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
	tfs_build_deferred_free(lm->v, lm->n);
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
	tfs_build_deferred_free(lm->v, lm->n);
	lm->v = NULL;
	lm->n = 0;
	return 0;
}

static int add_lazy_metadata(struct tfs_builder *b, struct tfs_node_list *nl,
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
	ret = tfs_nodes_add(nl, "metadata.json", strlen("metadata.json"),
			    meta_dir, TFS_NODE_MEMFILE, &idx);
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
static int add_lazy_manifest(struct tfs_builder *b, struct tfs_node_list *nl,
			     const char *format, uint32_t meta_dir)
{
	struct tfs_mf *m = tfs_mf_new(format);
	uint32_t *rec = malloc(b->n * sizeof(*rec));
	uint32_t i, idx, ti = 0;
	int ret = m && rec ? 0 : -ENOMEM;

	/* the records are made in entry order: their index */
	for (i = 1; !ret && i < b->n; i++) {
		rec[i] = ti;
		if (b->e[i].kind == ENTRY_TENSOR ||
		    b->e[i].kind == ENTRY_COMPONENT)
			ti++;
	}
	for (i = 0; !ret && i < b->nsources; i++)
		if (b->sources[i].label)
			ret = tfs_mf_set_label(m, i, b->sources[i].label);
	for (i = 1; !ret && i < b->n; i++) {
		struct entry *e = &b->e[i];

		if (e->kind == ENTRY_TENSOR)
			ret = tfs_mf_add_tensor(m, rec[i], e->extra);
		else if (e->kind == ENTRY_GROUP)
			ret = add_group(b, m, e, rec);
	}
	free(rec);
	if (!ret)
		ret = tfs_nodes_add(nl, "manifest.json",
				    strlen("manifest.json"), meta_dir,
				    TFS_NODE_MEMFILE, &idx);
	if (ret) {
		tfs_mf_free(m);
		return ret;
	}
	nl->v[idx].lazy = tfs_mf_lazy_file(m, nl->tree);
	b->manifest = m;
	return 0;
}

static int build_json_files(struct tfs_builder *b, struct tfs_node_list *nl,
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
 * The layout flags, before the xattrs move onto the nodes: the npy and as
 * views (src/views/) read them from the records
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
	}
}

static int fill_tensor(struct tfs_builder *b, struct tfs_tree *tree,
		       struct tfs_tensor *t, struct entry *e,
		       const struct entry *group)
{
	/* copies in the tree's arena; the entry's own go with the builder */
	t->name = tfs_tree_dup(tree, e->name, e->name_len);
	t->name_len = e->name_len;
	t->path = tfs_tree_dup(tree, e->path, strlen(e->path));
	/* a known dtype's name is static; only "void12" and the like are
	 * copied */
	t->dtype =
		e->dtype && tfs_dtype_name(e->dtype_id) &&
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
	t->big_endian = e->big;
	t->fortran = e->fortran;
	if (e->npy_descr &&
	    !(t->npy_descr =
		      tfs_tree_dup(tree, e->npy_descr, strlen(e->npy_descr))))
		return -ENOMEM;
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

int tfs_build_nodes(struct tfs_builder *b, struct tfs_node_list *nl,
		    struct tfs_tree *t, const char *format)
{
	struct path_state ps = {0};
	struct block_map shared = {0};
	struct tfs_strmap dirs;
	uint32_t i, k, dir, idx, meta_dir, ti = 0;
	char *slash;
	int ret;

	tfs_strmap_init(&dirs);
	ret = tfs_nodes_add(nl, "", 0, TFS_ROOT_NODE, TFS_NODE_DIR, &idx);
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
		ret = tfs_nodes_add(nl, slash, strlen(slash), dir,
				    e->kind == ENTRY_GROUP ? TFS_NODE_DIR
							   : TFS_NODE_TENSOR,
				    &e->node);
		if (ret)
			goto out;
		for (k = 0; e->kind == ENTRY_GROUP && k < e->nmembers; k++) {
			struct entry *c = &b->e[e->members[k]];

			const char *sfx =
				b->opts.npy ? TFS_NPY_VIEW_SUFFIX : "";
			char *fname = NULL;

			if (asprintf(&fname, "%s%s", c->comps[0], sfx) < 0)
				fname = NULL;
			ret = fname ? tfs_nodes_add(nl, fname, strlen(fname),
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
	ret = tfs_nodes_add(nl, META_DIR, strlen(META_DIR), TFS_ROOT_NODE,
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
	t->ntensors = t->nrecords = ti;
out:
	block_map_free(&shared);
	tfs_strmap_free(&dirs);
	tfs_path_state_free(&ps);
	return ret;
}

/* byte_order=big (or stored_byte_order=big: -o as) on a finished node */