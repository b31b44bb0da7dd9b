// SPDX-License-Identifier: MIT
/*
 * The views planned over a finished tree (src/core/views.h): after the
 * builder made the tensor records and their nodes, before the nodes are
 * sealed.  -o previews: a "<file>.png" node beside each tensor with a
 * picture (preview.c reads it); .tensorfs/export/: the safetensors export's
 * directory, its node slots reserved here and its plan made when first
 * looked in (export.c).  Neither the builder nor a reader knows of them.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorfs/builder.h"
#include "tensorfs/checked.h"
#include "tensorfs/export.h"
#include "tensorfs/names.h"
#include "nodes.h"
#include "preview.h"
#include "strmap.h"
#include "views.h"

#define META_DIR ".tensorfs"

/*
 * -o previews: "<file>.png" beside each tensor file that gets a picture,
 * unless that name is taken (a preview never displaces a file or a
 * directory) or too long.  After the tensor records: the nodes so far are
 * every name there is.
 */
static int add_previews(struct tfs_node_list *nl, const struct tfs_tree *t)
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
		bool big = tfs_node_big(tn) || (x->group != TFS_NO_NODE &&
						tfs_node_big(&nl->v[x->group]));

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
			ret = tfs_nodes_add(nl, strchr(name, '/') + 1,
					    strlen(strchr(name, '/') + 1),
					    parent, TFS_NODE_PREVIEW, &node);
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
	struct tfs_export *plan; /* made when first looked in (tree->export) */
};

static void lazy_export_destroy(struct tfs_lazy_dir *ld)
{
	struct lazy_export *le = (struct lazy_export *)ld;

	pthread_mutex_destroy(&ld->lock);
	tfs_export_free(le->plan);
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
		n = export_slot(t, ld, k++, e->files[i].name, TFS_NODE_EXPORT);
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
	t->export = le->plan = e;
	dir->nchildren = k;
	return 0;
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
static int add_export(struct tfs_draft *dr, struct tfs_node_list *nl,
		      struct tfs_tree *t)
{
	struct lazy_export *le = calloc(1, sizeof(*le));
	uint32_t i, meta = TFS_NO_NODE, dir, node;
	int ret = -ENOMEM;

	if (!le)
		return -ENOMEM;
	pthread_mutex_init(&le->ld.lock, NULL);
	atomic_init(&le->ld.done, false);
	le->ld.make = lazy_export_make;
	le->ld.destroy = lazy_export_destroy;
	le->eo.shard_size = dr->opts.export_shard ? dr->opts.export_shard
						  : TFS_EXPORT_SHARD_DEFAULT;
	for (i = 1; i < nl->n; i++)
		if (nl->v[i].parent == TFS_ROOT_NODE &&
		    nl->v[i].kind == TFS_NODE_DIR &&
		    !strcmp(nl->v[i].name, META_DIR))
			meta = i;
	/* the draft's strings, now the export's */
	le->source = dr->sources;
	le->source_meta = dr->source_meta;
	dr->sources = dr->source_meta = NULL;
	if (!le->source || meta == TFS_NO_NODE)
		goto out;
	le->eo.source = *le->source ? le->source : NULL;
	le->eo.source_meta = le->source_meta;
	ret = tfs_nodes_add(nl, "export", 6, meta, TFS_NODE_DIR, &dir);
	if (ret)
		goto out;
	le->ld.dir = dir;
	le->ld.first = nl->n;
	/* the files, the index and left_out.json */
	le->ld.cap = export_files_bound(t, le->eo.shard_size) + 2;
	for (i = 0; !ret && i < le->ld.cap; i++)
		ret = tfs_nodes_add(nl, "", 0, dir, TFS_NODE_MEMFILE, &node);
	if (!ret) {
		t->lazy_dir = &le->ld;
		le = NULL;
	}
out:
	if (le)
		lazy_export_destroy(&le->ld);
	return ret;
}

int tfs_views_plan(struct tfs_draft *dr)
{
	int ret = 0;

	if (dr->opts.previews)
		ret = add_previews(dr->nodes, dr->tree);
	if (!ret && !dr->opts.no_export)
		ret = add_export(dr, dr->nodes, dr->tree);
	return ret;
}
