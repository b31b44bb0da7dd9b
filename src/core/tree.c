// SPDX-License-Identifier: MIT
/* Tree queries: see include/tensorfs/tree.h.  Lock-free: the tree is
 * immutable once built. */
#include <stddef.h>
#include <stdint.h>
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

/* make a lazy memory file's contents once; on failure it stays empty */
static void lazy_make(struct tfs_node *n)
{
	struct tfs_lazy_file *lf = n->lazy;
	char *data;
	size_t len;

	if (atomic_load_explicit(&lf->done, memory_order_acquire))
		return;
	pthread_mutex_lock(&lf->lock);
	if (!atomic_load_explicit(&lf->done, memory_order_relaxed) &&
	    lf->make(lf, &data, &len) == 0) {
		n->mem = data;
		n->mem_len = len;
		atomic_store_explicit(&lf->done, true, memory_order_release);
	}
	pthread_mutex_unlock(&lf->lock);
}

uint64_t tfs_node_size(const struct tfs_tree *t, uint32_t node)
{
	const struct tfs_node *n = &t->nodes[node];

	/* the tree is immutable but for this one-time fill */
	if (n->kind == TFS_NODE_MEMFILE && n->lazy)
		lazy_make((struct tfs_node *)n);

	if (n->kind == TFS_NODE_TENSOR)
		return t->tensors[n->tensor].prefix_len +
		       (t->tensors[n->tensor].view
				? t->tensors[n->tensor].view_size
				: t->tensors[n->tensor].size);
	if (n->kind == TFS_NODE_MEMFILE || n->kind == TFS_NODE_PREVIEW)
		return n->mem_len;
	return 0;
}

#define ARENA_CHUNK (1u << 20)

struct tfs_arena_chunk {
	struct tfs_arena_chunk *next;
	size_t used, cap;
	max_align_t data[];
};

void *tfs_tree_alloc(struct tfs_tree *t, size_t n)
{
	struct tfs_arena_chunk *c = t->arena;
	size_t cap;
	void *p;

	n = (n + 7) & ~(size_t)7;
	if (n == 0)
		n = 8;
	if (!c || c->cap - c->used < n) {
		cap = n > ARENA_CHUNK / 4 ? n : ARENA_CHUNK;
		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->cap = cap;
		c->used = 0;
		if (cap == n && t->arena) {
			/* a big piece: behind the current chunk, which stays */
			c->next = t->arena->next;
			t->arena->next = c;
		} else {
			c->next = t->arena;
			t->arena = c;
		}
	}
	p = (char *)c->data + c->used;
	c->used += n;
	return p;
}

char *tfs_tree_dup(struct tfs_tree *t, const void *p, size_t n)
{
	char *d;

	if (n == SIZE_MAX)
		return NULL;
	d = tfs_tree_alloc(t, n + 1);
	if (!d)
		return NULL;
	if (n)
		memcpy(d, p, n);
	d[n] = '\0';
	return d;
}

void tfs_tree_free(struct tfs_tree *t)
{
	uint32_t i;

	if (!t)
		return;
	/* names, xattrs and the tensors' strings live in the arena */
	for (i = 0; i < t->nnodes; i++) {
		struct tfs_node *n = &t->nodes[i];

		if (n->kind == TFS_NODE_MEMFILE)
			free((char *)n->mem);
		if (n->lazy)
			n->lazy->destroy(n->lazy);
	}
	for (i = 0; t->tensors && i < t->ntensors; i++) {
		free(t->tensors[i].codec.gather);
		free(t->tensors[i].prefix);
	}
	free(t->tensors);
	for (i = 0; i < t->nwarnings; i++)
		free(t->warnings[i].msg);
	free(t->warnings);
	free(t->nodes);
	free(t->children);
	while (t->arena) {
		struct tfs_arena_chunk *next = t->arena->next;

		free(t->arena);
		t->arena = next;
	}
	free(t);
}
