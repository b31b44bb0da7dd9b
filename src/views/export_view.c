// SPDX-License-Identifier: MIT
/*
 * .tensorfs/export/ as a view (src/core/view_ops.h): the safetensors export
 * of the whole tree (src/views/export.h, docs/export.md).  At the mount's
 * finish its directory and node slots are reserved (at most 2 x bytes /
 * shard size + 3 files: the files, the index and left_out.json); the plan
 * is made the first time the directory is looked in (a lazy directory,
 * tree.h), which also owns it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/nodes.h"
#include "core/view_ops.h"
#include "core/builder.h"
#include "core/checked.h"
#include "core/image.h"
#include "core/tree.h"
#include "views/export.h"

/* .tensorfs/export/'s children, made when first looked in (tree.h) */
struct lazy_export {
	struct tfs_lazy_dir ld; /* first: the tree knows only this */
	struct tfs_export_options eo;
	char *source, *source_meta;
	struct tfs_export *plan; /* made when first looked in (tree->export) */
	uint32_t id;		 /* the view's number (tfs_view_kinds) */
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
				    const struct lazy_export *le, uint32_t k,
				    const char *name, enum tfs_node_kind kind)
{
	struct tfs_node *n = &t->nodes[le->ld.first + k];

	n->name = (char *)name; /* the export's, or static: never written */
	n->kind = kind;
	if (kind == TFS_NODE_VIEW)
		n->view = le->id;
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
	/* the plan keeps within the bound plan_export reserved */
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
		n = export_slot(t, le, k++, e->files[i].name, TFS_NODE_VIEW);
		n->tensor = i;
		n->mem_len = e->files[i].size;
	}
	if (index) {
		n = export_slot(t, le, k++, "model.safetensors.index.json",
				TFS_NODE_MEMFILE);
		n->mem = index;
		n->mem_len = index_len;
	}
	if (left) {
		n = export_slot(t, le, k++, "left_out.json", TFS_NODE_MEMFILE);
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
static int plan_export(struct tfs_draft *dr, uint32_t id)
{
	struct tfs_node_list *nl = dr->nodes;
	struct tfs_tree *t = dr->tree;
	struct lazy_export *le;
	uint32_t i, meta = TFS_NO_NODE, dir, node;
	int ret = -ENOMEM;

	if (dr->opts.no_export)
		return 0;
	le = calloc(1, sizeof(*le));
	if (!le)
		return -ENOMEM;
	le->id = id;
	pthread_mutex_init(&le->ld.lock, NULL);
	atomic_init(&le->ld.done, false);
	le->ld.make = lazy_export_make;
	le->ld.destroy = lazy_export_destroy;
	le->eo.shard_size = dr->opts.export_shard ? dr->opts.export_shard
						  : TFS_EXPORT_SHARD_DEFAULT;
	for (i = 1; i < nl->n; i++)
		if (nl->v[i].parent == TFS_ROOT_NODE &&
		    nl->v[i].kind == TFS_NODE_DIR &&
		    !strcmp(nl->v[i].name, TFS_META_DIR))
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

static int read_export(struct tfs_image *img, uint32_t node, uint64_t off,
		       size_t len, struct tfs_view *v)
{
	const struct tfs_tree *t = img->tree;

	return tfs_export_read(img, t->export, t->nodes[node].tensor, off, len,
			       v);
}

static void drop_export_cache(struct tfs_image *img, uint32_t node,
			      uint64_t off, uint64_t len)
{
	const struct tfs_tree *t = img->tree;

	tfs_export_drop_cache(img, t->export, t->nodes[node].tensor, off, len);
}

const struct tfs_view_ops tfs_view_export = {
	.name = "export",
	.plan = plan_export,
	.read = read_export,
	.drop_cache = drop_export_cache,
};
