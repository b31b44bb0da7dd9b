// SPDX-License-Identifier: MIT
/* Tree queries: see include/tensorfs/tree.h.  Lock-free: the tree is
 * immutable once built. */
#include <stdlib.h>
#include <string.h>

#include "tensorfs/tree.h"

static int cmp_name(const char *a, const char *b, size_t blen)
{
	size_t alen = strlen(a);
	int c = memcmp(a, b, alen < blen ? alen : blen);

	if (c)
		return c;
	return alen < blen ? -1 : alen > blen;
}

uint32_t tfs_tree_lookup(const struct tfs_tree *t, uint32_t dir,
			 const char *name, size_t len)
{
	const struct tfs_node *d;
	uint32_t lo, hi, mid, idx;
	int c;

	if (dir >= t->nnodes || t->nodes[dir].kind != TFS_NODE_DIR)
		return TFS_NO_NODE;
	d = &t->nodes[dir];
	lo = 0;
	hi = d->nchildren;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		idx = t->children[d->first_child + mid];
		c = cmp_name(t->nodes[idx].name, name, len);
		if (c == 0)
			return idx;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return TFS_NO_NODE;
}

uint32_t tfs_tree_resolve(const struct tfs_tree *t, const char *path)
{
	uint32_t n = TFS_ROOT_NODE;
	const char *end;

	while (*path) {
		while (*path == '/')
			path++;
		if (!*path)
			break;
		end = strchr(path, '/');
		if (!end)
			end = path + strlen(path);
		n = tfs_tree_lookup(t, n, path, (size_t)(end - path));
		if (n == TFS_NO_NODE)
			return n;
		path = end;
	}
	return n;
}

const struct tfs_xattr *tfs_tree_xattr(const struct tfs_tree *t, uint32_t node,
				       const char *name)
{
	const struct tfs_node *n;
	uint32_t lo, hi, mid;
	int c;

	if (node >= t->nnodes)
		return NULL;
	n = &t->nodes[node];
	lo = 0;
	hi = n->nxattrs;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = strcmp(n->xattrs[mid].name, name);
		if (c == 0)
			return &n->xattrs[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

uint64_t tfs_node_size(const struct tfs_tree *t, uint32_t node)
{
	const struct tfs_node *n = &t->nodes[node];

	if (n->kind == TFS_NODE_TENSOR)
		return t->tensors[n->tensor].prefix_len +
		       (t->tensors[n->tensor].view
				? t->tensors[n->tensor].view_size
				: t->tensors[n->tensor].size);
	if (n->kind == TFS_NODE_MEMFILE || n->kind == TFS_NODE_PREVIEW)
		return n->mem_len;
	return 0;
}

void tfs_tree_free(struct tfs_tree *t)
{
	uint32_t i, k;

	if (!t)
		return;
	for (i = 0; i < t->nnodes; i++) {
		struct tfs_node *n = &t->nodes[i];

		free(n->name);
		if (n->kind == TFS_NODE_MEMFILE)
			free((char *)n->mem);
		for (k = 0; k < n->nxattrs; k++) {
			free(n->xattrs[k].name);
			free(n->xattrs[k].value);
		}
		free(n->xattrs);
		free(n->xattr_names);
	}
	for (i = 0; t->tensors && i < t->ntensors; i++) {
		struct tfs_tensor *x = &t->tensors[i];

		free(x->name);
		free(x->path);
		free(x->dtype);
		free(x->shape);
		free(x->digest);
		free(x->role);
		free(x->prefix);
	}
	free(t->tensors);
	for (i = 0; i < t->nwarnings; i++)
		free(t->warnings[i].msg);
	free(t->warnings);
	free(t->nodes);
	free(t->children);
	free(t);
}
