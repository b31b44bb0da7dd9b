// SPDX-License-Identifier: MIT
/* Tree queries: see src/core/tree.h.  Lock-free: the tree is
 * immutable once built. */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "core/tree.h"
#include "core/view_ops.h"

static int cmp_name(const char *a, const char *b, size_t blen)
{
	size_t alen = strlen(a);
	int c = memcmp(a, b, alen < blen ? alen : blen);

	if (c)
		return c;
	return alen < blen ? -1 : alen > blen;
}

void tfs_tree_dir_ready(const struct tfs_tree *t, uint32_t dir)
{
	struct tfs_lazy_dir *ld = t->lazy_dir;

	if (!ld || ld->dir != dir ||
	    atomic_load_explicit(&ld->done, memory_order_acquire))
		return;
	pthread_mutex_lock(&ld->lock);
	/* the tree is immutable but for this one-time fill */
	if (!atomic_load_explicit(&ld->done, memory_order_relaxed)) {
		ld->err = ld->make((struct tfs_tree *)t, ld);
		atomic_store_explicit(&ld->done, true, memory_order_release);
	}
	pthread_mutex_unlock(&ld->lock);
}

const struct tfs_export *tfs_tree_export(const struct tfs_tree *t)
{
	if (t->lazy_dir)
		tfs_tree_dir_ready(t, t->lazy_dir->dir);
	return t->export;
}

uint32_t tfs_tree_lookup(const struct tfs_tree *t, uint32_t dir,
			 const char *name, size_t len)
{
	const struct tfs_node *d;
	uint32_t lo, hi, mid, idx;
	int c;

	if (dir >= t->nnodes || t->nodes[dir].kind != TFS_NODE_DIR)
		return TFS_NO_NODE;
	tfs_tree_dir_ready(t, dir);
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

/* the stored xattr @name of @n (binary search), or NULL */
static const struct tfs_xattr *stored_xattr(const struct tfs_node *n,
					    const char *name)
{
	uint32_t lo = 0, hi = n->nxattrs, mid;
	int c;

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

const struct tfs_xattr *tfs_tree_xattr(const struct tfs_tree *t, uint32_t node,
				       const char *name)
{
	return node < t->nnodes ? stored_xattr(&t->nodes[node], name) : NULL;
}

/*
 * The xattrs a tensor file's record gives (builder.h lists them), sorted
 * by name.  The builder stores only the others; a stored one of the same
 * name (a reader's own) wins.
 */
enum derived {
	D_DIGEST,
	D_DTYPE,
	D_ENCODING,
	D_NAME,
	D_OFFSET,
	D_ROLE,
	D_SHAPE,
	D_STORED_DTYPE,
	D_STORED_LENGTH,
	D_UNREADABLE,
	D_COUNT
};

static const char *const derived_names[D_COUNT] = {
	TFS_XATTR_PREFIX "digest",	  TFS_XATTR_PREFIX "dtype",
	TFS_XATTR_PREFIX "encoding",	  TFS_XATTR_PREFIX "name",
	TFS_XATTR_PREFIX "offset",	  TFS_XATTR_PREFIX "role",
	TFS_XATTR_PREFIX "shape",	  TFS_XATTR_PREFIX "stored_dtype",
	TFS_XATTR_PREFIX "stored_length", TFS_XATTR_PREFIX "unreadable",
};

/* the record behind a tensor file node, or NULL */
static const struct tfs_tensor *record_of(const struct tfs_tree *t,
					  const struct tfs_node *n)
{
	if (n->kind != TFS_NODE_TENSOR || n->tensor >= t->nrecords)
		return NULL;
	return &t->tensors[n->tensor];
}

/* where a derived value is formatted: a number, or a shape */
struct scratch {
	char small[256];
	char *heap; /* a long shape's text, or NULL */
};

/* the text of @x's shape, "[2,3]", in @s */
static int shape_value(const struct tfs_tensor *x, struct scratch *s,
		       const char **v, size_t *len)
{
	size_t need = (size_t)x->ndim * 21 + 3, o = 0;
	char *p = s->small;
	uint32_t i;

	if (need > sizeof(s->small)) {
		p = s->heap = malloc(need);
		if (!p)
			return -ENOMEM;
	}
	p[o++] = '[';
	for (i = 0; i < x->ndim; i++)
		o += (size_t)snprintf(p + o, need - o, "%s%llu", i ? "," : "",
				      (unsigned long long)x->shape[i]);
	p[o++] = ']';
	*v = p;
	*len = o;
	return 1;
}

/*
 * Derived xattr @d of @x: its value (in @s, or pointing into the tree) and
 * length, and 1; 0 when @x has none; -ENOMEM.
 */
static int derived_value(const struct tfs_tensor *x, enum derived d,
			 struct scratch *s, const char **v, size_t *len)
{
	*v = s->small;
	switch (d) {
	case D_DIGEST:
		*v = x->digest;
		break;
	case D_DTYPE:
		*v = x->view ? tfs_dtype_name(x->view) : x->dtype;
		break;
	case D_ENCODING:
		*v = tfs_encoding_name(x->encoding);
		break;
	case D_NAME:
		if (x->group != TFS_NO_NODE)
			return false;
		*v = x->name;
		*len = x->name_len;
		return 1;
	case D_OFFSET:
		*len = (size_t)snprintf(s->small, 24, "%llu",
					(unsigned long long)x->offset);
		return 1;
	case D_ROLE:
		*v = x->group != TFS_NO_NODE ? x->role : NULL;
		break;
	case D_SHAPE:
		return shape_value(x, s, v, len);
	case D_STORED_DTYPE:
		*v = x->view ? x->dtype : NULL;
		break;
	case D_STORED_LENGTH:
		*len = (size_t)snprintf(s->small, 24, "%llu",
					(unsigned long long)x->stored_length);
		return 1;
	case D_UNREADABLE:
		*v = x->unreadable;
		break;
	default:
		return 0;
	}
	if (!*v)
		return 0;
	*len = strlen(*v);
	return 1;
}

/* copy @len bytes when they fit in @size (0: only the length) */
static ssize_t sized(const char *v, size_t len, char *buf, size_t size)
{
	if (len > SSIZE_MAX)
		return -E2BIG;
	if (size && size < len)
		return -ERANGE;
	if (size && len)
		memcpy(buf, v, len);
	return (ssize_t)len;
}

ssize_t tfs_tree_getxattr(const struct tfs_tree *t, uint32_t node,
			  const char *name, char *buf, size_t size)
{
	struct scratch s = {.heap = NULL};
	const struct tfs_tensor *x;
	const struct tfs_xattr *a;
	const char *v;
	ssize_t ret = -ENODATA;
	size_t len;
	int d, has;

	if (node >= t->nnodes)
		return -ENOENT;
	a = stored_xattr(&t->nodes[node], name);
	if (a)
		return sized(a->value, a->len, buf, size);
	x = record_of(t, &t->nodes[node]);
	for (d = 0; x && d < D_COUNT; d++) {
		if (strcmp(derived_names[d], name))
			continue;
		has = derived_value(x, d, &s, &v, &len);
		ret = has < 0 ? has : has ? sized(v, len, buf, size) : -ENODATA;
		break;
	}
	free(s.heap);
	return ret;
}

bool tfs_tree_xattr_is(const struct tfs_tree *t, uint32_t node,
		       const char *name, const char *want)
{
	char v[64];
	ssize_t n = tfs_tree_getxattr(t, node, name, v, sizeof(v));

	return n >= 0 && (size_t)n == strlen(want) && !memcmp(v, want, n);
}

ssize_t tfs_tree_listxattr(const struct tfs_tree *t, uint32_t node, char *buf,
			   size_t size)
{
	const char *names[D_COUNT], *v;
	const struct tfs_tensor *x;
	const struct tfs_node *n;
	size_t len, total, o, l;
	uint32_t nd = 0, i, k;
	int d;

	if (node >= t->nnodes)
		return -ENOENT;
	n = &t->nodes[node];
	x = record_of(t, n);
	total = n->xattr_names_len;
	for (d = 0; x && d < D_COUNT; d++) {
		struct scratch s = {.heap = NULL};
		int has = stored_xattr(n, derived_names[d])
				  ? 0
				  : derived_value(x, d, &s, &v, &len);

		free(s.heap);
		if (has < 0)
			return has;
		if (has) {
			names[nd++] = derived_names[d];
			total += strlen(derived_names[d]) + 1;
		}
	}
	if (!nd)
		return sized(tfs_node_xattr_names(n), n->xattr_names_len, buf,
			     size);
	if (size == 0)
		return (ssize_t)total;
	if (size < total)
		return -ERANGE;
	/* merge the stored names and the derived ones (both sorted) */
	for (o = 0, i = 0, k = 0; i < n->nxattrs || k < nd;) {
		const char *s;

		if (k == nd ||
		    (i < n->nxattrs && strcmp(n->xattrs[i].name, names[k]) < 0))
			s = n->xattrs[i++].name;
		else
			s = names[k++];
		l = strlen(s) + 1;
		memcpy(buf + o, s, l);
		o += l;
	}
	return (ssize_t)total;
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
	if (n->kind == TFS_NODE_MEMFILE || n->kind == TFS_NODE_VIEW)
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
	tfs_views_free_data(t);
	for (i = 0; t->tensors && i < t->nrecords; i++) {
		free(t->tensors[i].codec.gather);
		tfs_chunk_params_free(t->tensors[i].codec.chunks);
		free(t->tensors[i].prefix);
	}
	free(t->tensors);
	for (i = 0; i < t->nwarnings; i++)
		free(t->warnings[i].msg);
	free(t->warnings);
	if (t->lazy_dir)
		t->lazy_dir->destroy(t->lazy_dir);
	free(t->nodes);
	free(t->children);
	while (t->arena) {
		struct tfs_arena_chunk *next = t->arena->next;

		free(t->arena);
		t->arena = next;
	}
	free(t);
}
