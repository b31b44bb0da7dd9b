// SPDX-License-Identifier: MIT
/* A tree's nodes while it is being made: see src/core/nodes.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "nodes.h"

int tfs_nodes_add(struct tfs_node_list *nl, const char *name, size_t len,
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

int tfs_nodes_add_view(struct tfs_node_list *nl, const char *name, size_t len,
		       uint32_t parent, uint32_t view, uint32_t item,
		       uint64_t size, uint32_t *out)
{
	int ret = tfs_nodes_add(nl, name, len, parent, TFS_NODE_VIEW, out);

	if (ret)
		return ret;
	nl->v[*out].view = view;
	nl->v[*out].tensor = item;
	nl->v[*out].mem_len = size;
	return 0;
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
		struct tfs_node *p;

		/* hidden (tfs_draft_hide): sorted last, in no directory */
		if (t->nodes[t->children[i]].parent == TFS_NO_NODE)
			break;
		p = &t->nodes[t->nodes[t->children[i]].parent];
		if (!p->nchildren)
			p->first_child = i;
		p->nchildren++;
		if (t->nodes[t->children[i]].kind == TFS_NODE_DIR)
			p->nsubdirs++;
	}
	return 0;
}

int tfs_nodes_seal(struct tfs_node_list *nl)
{
	struct tfs_tree *t = nl->tree;
	int ret;

	/* the list grew by doubling: give back the slack */
	if (nl->n && nl->n < nl->cap) {
		struct tfs_node *nv = reallocarray(nl->v, nl->n, sizeof(*nv));

		if (nv)
			nl->v = nv;
	}
	t->nodes = nl->v;
	t->nnodes = nl->n;
	memset(nl, 0, sizeof(*nl));
	nl->tree = t;
	ret = link_children(t);
	/* the export's reserved slots show when it is first looked in */
	if (!ret && t->lazy_dir)
		t->nodes[t->lazy_dir->dir].nchildren = 0;
	return ret;
}

void tfs_nodes_free(struct tfs_node_list *nl)
{
	free(nl->v);
	nl->v = NULL;
	nl->n = nl->cap = 0;
}

int tfs_nodes_pack_xattrs(struct tfs_tree *t, struct tfs_node *nd,
			  const struct tfs_xattr *src, uint32_t n)
{
	size_t names = 0, values = 0, l;
	struct tfs_xattr *x;
	char *np, *vp;
	uint32_t i;

	for (i = 0; i < n; i++) {
		names += strlen(src[i].name) + 1;
		values += src[i].len;
	}
	if (names >= UINT32_MAX)
		return -E2BIG;
	x = tfs_tree_alloc(t, n * sizeof(*x) + names + 1 + values);
	if (!x)
		return -ENOMEM;
	np = (char *)(x + n);
	vp = np + names + 1;
	for (i = 0; i < n; i++) {
		l = strlen(src[i].name) + 1;
		memcpy(np, src[i].name, l);
		x[i].name = np;
		np += l;
		if (src[i].len)
			memcpy(vp, src[i].value, src[i].len);
		x[i].value = vp;
		x[i].len = src[i].len;
		vp += src[i].len;
	}
	*np = '\0';
	nd->xattrs = x;
	nd->nxattrs = n;
	nd->xattr_names_len = (uint32_t)names;
	return 0;
}

static int cmp_xattr_names(const void *a, const void *b)
{
	return strcmp(((const struct tfs_xattr *)a)->name,
		      ((const struct tfs_xattr *)b)->name);
}

int tfs_nodes_rename_xattr(struct tfs_node_list *nl, uint32_t node,
			   const char *from, const char *to)
{
	struct tfs_node *nd = &nl->v[node];
	struct tfs_xattr *x;
	uint32_t i, n = nd->nxattrs;
	int ret;

	for (i = 0; i < n && strcmp(nd->xattrs[i].name, from); i++)
		;
	if (i == n)
		return 0;
	/* the old block stays in the arena: other nodes may hold it */
	x = malloc(n * sizeof(*x));
	if (!x)
		return -ENOMEM;
	memcpy(x, nd->xattrs, n * sizeof(*x));
	x[i].name = (char *)to;
	qsort(x, n, sizeof(*x), cmp_xattr_names);
	ret = tfs_nodes_pack_xattrs(nl->tree, nd, x, n);
	free(x);
	return ret;
}

bool tfs_node_big(const struct tfs_node *nd)
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
