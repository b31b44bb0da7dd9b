// SPDX-License-Identifier: MIT
/*
 * What a view's plan may do to the finished records besides adding nodes
 * (src/core/view_ops.h): take records as inputs only it reads (a quantized
 * layer's scales behind its dequantized weight), and show a record under
 * another name.  Hidden records move past tree->ntensors once the plan
 * returns, so everything that lists tensors (the CLI, the library, the
 * later views, the manifest) sees only what the tree shows.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/builder.h"
#include "core/view_ops.h"
#include "manifest.h"
#include "nodes.h"

int tfs_draft_hide(struct tfs_draft *dr, uint32_t rec)
{
	struct tfs_tree *t = dr->tree;

	if (rec >= t->ntensors)
		return -EINVAL;
	if (!dr->hidden) {
		dr->hidden = calloc(t->nrecords ? t->nrecords : 1, 1);
		if (!dr->hidden)
			return -ENOMEM;
	}
	if (dr->hidden[rec])
		return 0;
	dr->hidden[rec] = 1;
	dr->nhidden++;
	dr->nodes->v[t->tensors[rec].node].parent = TFS_NO_NODE;
	return 0;
}

int tfs_draft_rename(struct tfs_draft *dr, uint32_t rec, const char *name,
		     const char *file)
{
	struct tfs_tree *t = dr->tree;
	struct tfs_tensor *x = &t->tensors[rec];
	const char *slash = strrchr(x->path, '/');
	size_t dir = slash ? (size_t)(slash - x->path) + 1 : 0;
	char *path = tfs_tree_alloc(t, dir + strlen(file) + 1);
	char *nname = tfs_tree_dup(t, name, strlen(name));
	char *nfile = tfs_tree_dup(t, file, strlen(file));

	if (!path || !nname || !nfile)
		return -ENOMEM;
	memcpy(path, x->path, dir);
	strcpy(path + dir, file);
	x->path = path;
	x->name = nname;
	x->name_len = strlen(name);
	dr->nodes->v[x->node].name = nfile;
	return 0;
}

int tfs_draft_compact(struct tfs_draft *dr)
{
	struct tfs_tree *t = dr->tree;
	struct tfs_node_list *nl = dr->nodes;
	struct tfs_tensor *moved = NULL;
	uint32_t *map = NULL, i, k, shown;
	int ret = -ENOMEM;

	if (!dr->nhidden)
		return 0;
	map = malloc(t->nrecords * sizeof(*map));
	moved = malloc(t->nrecords * sizeof(*moved));
	if (!map || !moved)
		goto out;
	/*
	 * the shown ones first, in their order; then the newly hidden; then
	 * the ones hidden before, where they are
	 */
	for (i = shown = 0; i < t->ntensors; i++)
		if (!dr->hidden[i])
			map[i] = shown++;
	for (i = 0, k = shown; i < t->ntensors; i++)
		if (dr->hidden[i])
			map[i] = k++;
	for (i = t->ntensors; i < t->nrecords; i++)
		map[i] = i;
	for (i = 0; i < t->nrecords; i++)
		moved[map[i]] = t->tensors[i];
	memcpy(t->tensors, moved, t->nrecords * sizeof(*moved));
	for (i = 0; i < nl->n; i++)
		if (nl->v[i].kind == TFS_NODE_TENSOR &&
		    nl->v[i].tensor < t->nrecords)
			nl->v[i].tensor = map[nl->v[i].tensor];
	if (dr->manifest)
		tfs_mf_renumber(dr->manifest, map, shown);
	t->ntensors = shown;
	memset(dr->hidden, 0, t->nrecords);
	dr->nhidden = 0;
	ret = 0;
out:
	free(map);
	free(moved);
	return ret;
}

int tfs_draft_warn(struct tfs_draft *dr, const char *fmt, ...)
{
	struct tfs_tree *t = dr->tree;
	struct tfs_warning *nw;
	va_list ap;
	char *msg;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	nw = reallocarray(t->warnings, t->nwarnings + 1, sizeof(*nw));
	if (!nw) {
		free(msg);
		return -ENOMEM;
	}
	t->warnings = nw;
	t->warnings[t->nwarnings].offset = UINT64_MAX;
	t->warnings[t->nwarnings++].msg = msg;
	return 0;
}
