// SPDX-License-Identifier: MIT
/*
 * The view registry: every view with nodes of its own (src/views/), in the
 * order of meson.build's view list (generated into views.h).  The core
 * knows them only through this table and the hooks of view_ops.h.
 */
#include <stddef.h>

#include "views.h" /* TFS_VIEW_LIST, generated from meson.build */
#include "core/view_ops.h"
#include "core/image.h"
#include "core/tree.h"

#define X(name) extern const struct tfs_view_ops tfs_view_##name;
TFS_VIEW_LIST
#undef X

#define X(name) &tfs_view_##name,
const struct tfs_view_ops *const tfs_view_kinds[] = {TFS_VIEW_LIST NULL};
#undef X

int tfs_views_plan(struct tfs_draft *dr)
{
	uint32_t i;
	int ret = 0;

	for (i = 0; !ret && tfs_view_kinds[i]; i++)
		ret = tfs_view_kinds[i]->plan(dr, i);
	return ret;
}

const struct tfs_view_ops *tfs_view_of(const struct tfs_image *img,
				       uint32_t node)
{
	const struct tfs_tree *t = img->tree;

	if (node >= t->nnodes || t->nodes[node].kind != TFS_NODE_VIEW)
		return NULL;
	return tfs_view_kinds[t->nodes[node].view];
}
