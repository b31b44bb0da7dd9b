// SPDX-License-Identifier: MIT
/*
 * The view registry: every view with nodes of its own (src/views/), in the
 * order of meson.build's view list (generated into views.h).  The core
 * knows them only through this table and the hooks of view_ops.h.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "views.h" /* TFS_VIEW_LIST, generated from meson.build */
#include "core/view_ops.h"
#include "core/builder.h"
#include "core/image.h"
#include "core/tree.h"

#define X(name) extern const struct tfs_view_ops tfs_view_##name;
TFS_VIEW_LIST
#undef X

#define X(name) &tfs_view_##name,
const struct tfs_view_ops *const tfs_view_kinds[] = {TFS_VIEW_LIST NULL};
#undef X

#define NVIEWS (sizeof(tfs_view_kinds) / sizeof(tfs_view_kinds[0]) - 1)

int tfs_views_plan(struct tfs_draft *dr)
{
	uint32_t i;
	int ret = 0;

	dr->tree->view_data = calloc(NVIEWS + 1, sizeof(void *));
	if (!dr->tree->view_data)
		return -ENOMEM;
	for (i = 0; !ret && tfs_view_kinds[i]; i++) {
		ret = tfs_view_kinds[i]->plan(dr, i);
		if (!ret)
			ret = tfs_draft_compact(dr);
	}
	return ret;
}

void tfs_views_free_data(struct tfs_tree *t)
{
	uint32_t i;

	for (i = 0; t->view_data && i < NVIEWS; i++)
		if (t->view_data[i] && tfs_view_kinds[i]->free_data)
			tfs_view_kinds[i]->free_data(t->view_data[i]);
	free(t->view_data);
	t->view_data = NULL;
}

const struct tfs_view_ops *tfs_view_of(const struct tfs_image *img,
				       uint32_t node)
{
	const struct tfs_tree *t = img->tree;
	const struct tfs_node *n;

	if (node >= t->nnodes)
		return NULL;
	n = &t->nodes[node];
	if (n->kind == TFS_NODE_VIEW)
		return tfs_view_kinds[n->view];
	/* a tensor file a view shows (its xattrs, its page-cache hint) */
	if (n->kind == TFS_NODE_TENSOR && n->tensor < t->nrecords &&
	    t->tensors[n->tensor].shown_by)
		return tfs_view_kinds[t->tensors[n->tensor].shown_by - 1];
	return NULL;
}
