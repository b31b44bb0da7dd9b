// SPDX-License-Identifier: MIT
/*
 * The tree builder (src/core/builder.h): the builder and its
 * sources, warnings and metadata, and finishing.  Its other jobs have a
 * file each: adding entries and xattrs (build_entries.c), placing paths
 * (build_paths.c), the tensor records, nodes and JSON files
 * (build_tree.c), the rules that need every entry (build_rules.c).
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

#include "core/builder.h"
#include "builder_sources.h"
#include "core/diag.h"
#include "core/source.h"
#include "core/names.h"
#include "core/text.h"
#include "strmap.h"
#include "builder_i.h"
#include "nodes.h"
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

void tfs_build_entry_free(struct entry *e)
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

void tfs_build_deferred_free(struct deferred *v, uint32_t n)
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
	tfs_build_deferred_free(b->deferred, b->ndeferred);
	json_decref(b->model_config);
	for (i = 0; i < b->n; i++)
		tfs_build_entry_free(&b->e[i]);
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
		ret = tfs_build_push_entry(b, &idx);
		if (ret)
			goto fail_pushed;
		b->e[idx].kind = ENTRY_DIR;
		b->e[idx].name = strdup(s->label);
		b->e[idx].name_len = strlen(s->label);
		ret = -ENOMEM;
		if (!b->e[idx].name)
			goto fail_pushed;
		for (size_t i = 0; i < bs->nprefix; i++) {
			ret = tfs_build_add_comp(b, &b->e[idx], bs->prefix[i],
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
		tfs_build_pop_entry(b);
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

int tfs_builder_end_source(struct tfs_builder *b, struct tfs_diag *d)
{
	struct bsource *bs = &b->sources[b->cur];
	int ret;

	if (!b->multi)
		return 0;
	/* a container with a directory of its own is whole by itself (with
	 * the parts it joins) */
	ret = tfs_build_check_names(b, b->sources[bs->space].first_entry, d);
	if (!ret)
		ret = tfs_build_check_overlaps(b, bs->first_entry, d);
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

void tfs_builder_set_model_config(struct tfs_builder *b, json_t *config)
{
	json_decref(b->model_config);
	b->model_config = json_incref(config);
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

/* warnings into metadata.json ("warnings") and the tree */ static int
publish_warnings(struct tfs_builder *b, struct tfs_tree *t)
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
		const char *path =
			b->sources[i].src ? b->sources[i].src->path : NULL;

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

int tfs_builder_draft(struct tfs_builder *b, const char *format,
		      struct tfs_draft *dr, struct tfs_diag *d)
{
	json_t *sm = b->nsources == 1
			     ? json_object_get(b->metadata, "__metadata__")
			     : NULL;
	struct tfs_tree *t;
	uint32_t i, nfiles = 0;
	int ret;

	memset(dr, 0, sizeof(*dr));
	ret = tfs_build_check_names(b, 1, d);
	if (!ret)
		ret = tfs_build_check_overlaps(b, 1, d);
	if (ret)
		return ret;
	dr->opts = b->opts;
	dr->model_config = json_incref(b->model_config);
	dr->nodes = calloc(1, sizeof(*dr->nodes));
	t = dr->tree = calloc(1, sizeof(*t));
	if (!t || !dr->nodes) {
		tfs_draft_free(dr);
		return tfs_diag_oom(d);
	}
	dr->nodes->tree = t;
	t->format = format;
	if (publish_warnings(b, t)) {
		tfs_draft_free(dr);
		return tfs_diag_oom(d);
	}
	for (i = 1; i < b->n; i++)
		if (b->e[i].kind == ENTRY_TENSOR ||
		    b->e[i].kind == ENTRY_COMPONENT)
			nfiles++;
	t->tensors = calloc(nfiles ? nfiles : 1, sizeof(*t->tensors));
	/* zeroed records are safe to free */
	t->ntensors = t->nrecords = nfiles;
	ret = t->tensors ? tfs_build_place_leaves(b) : -ENOMEM;
	if (!ret)
		ret = tfs_build_nodes(b, dr->nodes, t, format);
	dr->manifest = b->manifest; /* the tree owns it */
	/* what the export's metadata names (views.c) */
	if (!ret && !b->opts.no_export && !(dr->sources = source_names(b)))
		ret = -ENOMEM;
	if (!ret && json_is_object(sm) &&
	    !(dr->source_meta = json_dumps(sm, JSON_COMPACT)))
		ret = -ENOMEM;
	if (ret) {
		tfs_draft_free(dr);
		return tfs_diag_set(d, ret, "cannot build the tree: %s",
				    strerror(-ret));
	}
	for (i = 0; i < t->ntensors; i++)
		t->total_bytes += t->tensors[i].size;
	return 0;
}

int tfs_draft_seal(struct tfs_draft *dr, struct tfs_tree **out,
		   struct tfs_diag *d)
{
	int ret = tfs_nodes_seal(dr->nodes);

	if (!ret) {
		*out = dr->tree;
		dr->tree = NULL;
	}
	tfs_draft_free(dr);
	if (ret)
		return tfs_diag_set(d, ret, "cannot build the tree: %s",
				    strerror(-ret));
	return 0;
}

void tfs_draft_free(struct tfs_draft *dr)
{
	if (dr->tree && dr->nodes && dr->nodes->v) {
		/* the nodes own their xattr blocks and memory files */
		dr->tree->nodes = dr->nodes->v;
		dr->tree->nnodes = dr->nodes->n;
		dr->nodes->v = NULL;
	}
	tfs_tree_free(dr->tree);
	if (dr->nodes)
		tfs_nodes_free(dr->nodes);
	free(dr->nodes);
	free(dr->sources);
	free(dr->source_meta);
	json_decref(dr->model_config);
	free(dr->hidden);
	memset(dr, 0, sizeof(*dr));
}

int tfs_builder_finish(struct tfs_builder *b, const char *format,
		       struct tfs_tree **out, struct tfs_diag *d)
{
	struct tfs_draft dr;
	int ret = tfs_builder_draft(b, format, &dr, d);

	return ret ? ret : tfs_draft_seal(&dr, out, d);
}
