// SPDX-License-Identifier: MIT
/* .tensorfs/manifest.json on first use: see manifest.h. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"
#include "core/names.h"
#include "manifest.h"
#include "strbuf.h"
#include "strmap.h"

/* the members of an entry, in the order manifest.json has them */
static void entry_name(json_t *o, const char *name, size_t len)
{
	json_t *s = json_stringn(name, len);
	char *hex;
	size_t i;

	if (s) {
		json_object_set_new(o, "name", s);
		return;
	}
	/* not UTF-8: a readable escaped form plus the exact bytes in hex */
	hex = tfs_name_escape(name, len, SIZE_MAX / 4);
	json_object_set_new(o, "name", json_string(hex ? hex : ""));
	free(hex);
	hex = malloc(len * 2 + 1);
	if (!hex)
		return;
	for (i = 0; i < len; i++)
		sprintf(hex + i * 2, "%02x", (unsigned char)name[i]);
	hex[len * 2] = '\0';
	json_object_set_new(o, "name_hex", json_string(hex));
	free(hex);
}

static json_t *json_shape(const uint64_t *shape, uint32_t ndim)
{
	json_t *a = json_array();
	uint32_t i;

	for (i = 0; a && i < ndim; i++)
		json_array_append_new(a, json_integer((json_int_t)shape[i]));
	return a;
}

json_t *tfs_mf_entry(const struct tfs_mf_fields *f)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	if (f->role)
		json_object_set_new(o, "role", json_string(f->role));
	else
		entry_name(o, f->name, f->name_len);
	json_object_set_new(o, "path", json_string(f->path));
	if (f->dtype)
		json_object_set_new(
			o, "dtype",
			json_string(f->view ? tfs_dtype_name(f->view)
					    : f->dtype));
	if (f->view)
		json_object_set_new(o, "stored_dtype", json_string(f->dtype));
	json_object_set_new(o, "shape", json_shape(f->shape, f->ndim));
	if (!f->group) {
		json_object_set_new(o, "size",
				    json_integer((json_int_t)f->size));
		json_object_set_new(o, "offset",
				    json_integer((json_int_t)f->offset));
		json_object_set_new(o, "stored_length",
				    json_integer((json_int_t)f->stored_length));
		json_object_set_new(
			o, "encoding",
			json_string(tfs_encoding_name(f->encoding)));
		if (f->digest)
			json_object_set_new(o, "digest",
					    json_string(f->digest));
		if (f->unreadable)
			json_object_set_new(o, "unreadable",
					    json_string(f->unreadable));
	}
	if (f->extra)
		json_object_update(o, (json_t *)f->extra);
	if (f->container)
		json_object_set_new(o, "container", json_string(f->container));
	return o;
}

/* @j as jansson's JSON_INDENT(2) prints it at nesting depth @depth */
static void text_put_json(struct tfs_strbuf *t, const json_t *j, unsigned depth)
{
	char *s = j ? json_dumps(j, JSON_INDENT(2) | JSON_ENCODE_ANY) : NULL;
	const char *line, *nl;

	if (!s) {
		t->failed = 1;
		return;
	}
	for (line = s; (nl = strchr(line, '\n')) != NULL; line = nl + 1) {
		tfs_strbuf_put(t, line, (size_t)(nl - line) + 1);
		tfs_strbuf_put(t, "        ", 2 * depth);
	}
	tfs_strbuf_puts(t, line);
	free(s);
}

char *tfs_mf_indent(const json_t *j, unsigned depth)
{
	struct tfs_strbuf t = {0};

	text_put_json(&t, j, depth);
	if (t.failed) {
		free(t.p);
		return NULL;
	}
	return t.p;
}

/*
 * One entry: a tensor record and its interned extras (an index into
 * extras[], or NO_EXTRA), or a group (tensor == NO_TENSOR, extra indexes
 * groups[]).
 */
struct mf_item {
	uint32_t tensor;
	uint32_t extra;
};

/*
 * A group: its own members (no size, extent or encoding: nothing a view
 * changes) and its components' records with their interned extras, made
 * into entries from the records when the text is made, so that what the
 * views planned after the builder (-o as) shows in them too.
 */
struct mf_group {
	json_t *obj;
	uint32_t *records, *extras;
	uint32_t n;
};

#define NO_TENSOR UINT32_MAX
#define NO_EXTRA UINT32_MAX

struct tfs_mf {
	struct tfs_lazy_file lf; /* first: the tree knows only this */
	const struct tfs_tree *tree;
	const char *format;
	struct mf_item *items;
	uint32_t n, cap;
	json_t **extras; /* distinct extras, by compact text in @interned */
	char **extra_keys;
	uint32_t nextras, last; /* last: the one used last */
	struct tfs_strmap interned;
	struct mf_group *groups;
	uint32_t ngroups;
	char **labels; /* by container index; NULL: none */
	uint32_t nlabels;
};

struct tfs_mf *tfs_mf_new(const char *format)
{
	struct tfs_mf *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->format = format;
	tfs_strmap_init(&m->interned);
	pthread_mutex_init(&m->lf.lock, NULL);
	atomic_init(&m->lf.done, false);
	return m;
}

static int grow(void **v, uint32_t n, uint32_t *cap, size_t size)
{
	void *nv;
	uint32_t c;

	if (n < *cap)
		return 0;
	if (*cap > UINT32_MAX / 2)
		return -ENOMEM;
	c = *cap ? *cap * 2 : 64;
	nv = reallocarray(*v, c, size);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = c;
	return 0;
}

static int push_item(struct tfs_mf *m, uint32_t tensor, uint32_t extra)
{
	if (grow((void **)&m->items, m->n, &m->cap, sizeof(*m->items)))
		return -ENOMEM;
	m->items[m->n].tensor = tensor;
	m->items[m->n++].extra = extra;
	return 0;
}

/* @a and @b print the same (json_equal ignores the members' order) */
static bool same_text(const json_t *a, const json_t *b)
{
	void *ia, *ib;
	size_t i;

	if (json_typeof(a) != json_typeof(b))
		return false;
	if (json_is_array(a)) {
		if (json_array_size(a) != json_array_size(b))
			return false;
		for (i = 0; i < json_array_size(a); i++)
			if (!same_text(json_array_get(a, i),
				       json_array_get(b, i)))
				return false;
		return true;
	}
	if (!json_is_object(a))
		return json_equal((json_t *)a, (json_t *)b);
	ia = json_object_iter((json_t *)a);
	ib = json_object_iter((json_t *)b);
	for (; ia && ib; ia = json_object_iter_next((json_t *)a, ia),
			 ib = json_object_iter_next((json_t *)b, ib))
		if (strcmp(json_object_iter_key(ia), json_object_iter_key(ib)) ||
		    !same_text(json_object_iter_value(ia),
			       json_object_iter_value(ib)))
			return false;
	return !ia && !ib;
}

/* @extra's index among the distinct extras, added if new */
static int intern(struct tfs_mf *m, const json_t *extra, uint32_t *idx)
{
	uint32_t cap = m->nextras;
	char *key;
	void *nv;

	/* neighbours mostly have the same: no text to make for them */
	if (cap && same_text(extra, m->extras[m->last])) {
		*idx = m->last;
		return 0;
	}
	key = json_dumps(extra, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!key)
		return -ENOMEM;
	if (tfs_strmap_get(&m->interned, key, idx)) {
		free(key);
		m->last = *idx;
		return 0;
	}
	nv = reallocarray(m->extras, cap + 1, sizeof(*m->extras));
	if (nv)
		m->extras = nv;
	nv = nv ? reallocarray(m->extra_keys, cap + 1, sizeof(char *)) : NULL;
	if (!nv || tfs_strmap_put(&m->interned, key, cap)) {
		free(key);
		return -ENOMEM;
	}
	m->extra_keys = nv;
	m->extra_keys[cap] = key;
	m->extras[cap] = json_incref((json_t *)extra);
	m->nextras = cap + 1;
	*idx = m->last = cap;
	return 0;
}

int tfs_mf_add_tensor(struct tfs_mf *m, uint32_t tensor, const json_t *extra)
{
	uint32_t idx = NO_EXTRA;

	if (extra && json_object_size(extra) && intern(m, extra, &idx))
		return -ENOMEM;
	return push_item(m, tensor, idx);
}

int tfs_mf_add_group(struct tfs_mf *m, json_t *group, const uint32_t *records,
		     const json_t *const *extras, uint32_t n)
{
	struct mf_group *ng =
		reallocarray(m->groups, m->ngroups + 1, sizeof(*ng));
	struct mf_group g = {.obj = group, .n = n};
	uint32_t k;

	if (ng)
		m->groups = ng;
	g.records = malloc((n ? n : 1) * sizeof(*g.records));
	g.extras = malloc((n ? n : 1) * sizeof(*g.extras));
	if (!group || !ng || !g.records || !g.extras)
		goto fail;
	for (k = 0; k < n; k++) {
		g.records[k] = records[k];
		g.extras[k] = NO_EXTRA;
		if (extras[k] && json_object_size(extras[k]) &&
		    intern(m, extras[k], &g.extras[k]))
			goto fail;
	}
	if (push_item(m, NO_TENSOR, m->ngroups))
		goto fail;
	m->groups[m->ngroups++] = g;
	return 0;
fail:
	json_decref(group);
	free(g.records);
	free(g.extras);
	return -ENOMEM;
}

void tfs_mf_renumber(struct tfs_mf *m, const uint32_t *map, uint32_t shown)
{
	uint32_t i, k, n = 0;

	for (i = 0; i < m->n; i++) {
		struct mf_item it = m->items[i];

		if (it.tensor != NO_TENSOR) {
			it.tensor = map[it.tensor];
			if (it.tensor >= shown)
				continue;
		}
		m->items[n++] = it;
	}
	m->n = n;
	for (i = 0; i < m->ngroups; i++) {
		struct mf_group *g = &m->groups[i];

		for (k = n = 0; k < g->n; k++)
			if (map[g->records[k]] < shown) {
				g->extras[n] = g->extras[k];
				g->records[n++] = map[g->records[k]];
			}
		g->n = n;
	}
}

int tfs_mf_set_label(struct tfs_mf *m, uint32_t source, const char *label)
{
	char **nl;

	if (source >= m->nlabels) {
		nl = reallocarray(m->labels, (size_t)source + 1, sizeof(*nl));
		if (!nl)
			return -ENOMEM;
		memset(nl + m->nlabels, 0,
		       (source + 1 - m->nlabels) * sizeof(*nl));
		m->labels = nl;
		m->nlabels = source + 1;
	}
	free(m->labels[source]);
	m->labels[source] = label ? strdup(label) : NULL;
	return label && !m->labels[source] ? -ENOMEM : 0;
}

/* the inputs, once the text exists (or with the tree) */
static void drop_inputs(struct tfs_mf *m)
{
	uint32_t i;

	for (i = 0; i < m->nextras; i++) {
		json_decref(m->extras[i]);
		free(m->extra_keys[i]);
	}
	free(m->extras);
	free(m->extra_keys);
	m->extras = NULL;
	m->extra_keys = NULL;
	m->nextras = 0;
	tfs_strmap_free(&m->interned);
	tfs_strmap_init(&m->interned);
	for (i = 0; i < m->ngroups; i++) {
		json_decref(m->groups[i].obj);
		free(m->groups[i].records);
		free(m->groups[i].extras);
	}
	free(m->groups);
	m->groups = NULL;
	m->ngroups = 0;
	for (i = 0; i < m->nlabels; i++)
		free(m->labels[i]);
	free(m->labels);
	m->labels = NULL;
	m->nlabels = 0;
	free(m->items);
	m->items = NULL;
	m->n = m->cap = 0;
}

void tfs_mf_free(struct tfs_mf *m)
{
	if (!m)
		return;
	drop_inputs(m);
	pthread_mutex_destroy(&m->lf.lock);
	free(m);
}

static void mf_destroy(struct tfs_lazy_file *lf)
{
	tfs_mf_free((struct tfs_mf *)lf);
}

static void tensor_fields(const struct tfs_mf *m, const struct tfs_tensor *t,
			  uint32_t extra, struct tfs_mf_fields *f)
{
	memset(f, 0, sizeof(*f));
	f->name = t->name;
	f->name_len = t->name_len;
	f->path = t->path;
	f->dtype = t->dtype;
	f->view = t->view;
	f->shape = t->shape;
	f->ndim = t->ndim;
	f->size = t->view ? t->view_size : t->size;
	f->offset = t->offset;
	f->stored_length = t->stored_length;
	f->encoding = t->encoding;
	f->digest = t->digest;
	f->unreadable = t->unreadable;
	f->extra = extra == NO_EXTRA ? NULL : m->extras[extra];
	f->container = t->source < m->nlabels ? m->labels[t->source] : NULL;
}

/* group @g's entry with its components, as a JSON object (NULL: no memory) */
static json_t *group_entry(const struct tfs_mf *m, const struct mf_group *g)
{
	struct tfs_mf_fields f;
	json_t *comps = json_array();
	const struct tfs_tensor *t;
	uint32_t k;

	for (k = 0; comps && k < g->n; k++) {
		t = &m->tree->tensors[g->records[k]];
		tensor_fields(m, t, g->extras[k], &f);
		f.role = t->role;
		f.container = NULL; /* the group names it */
		if (json_array_append_new(comps, tfs_mf_entry(&f))) {
			json_decref(comps);
			return NULL;
		}
	}
	if (!comps || json_object_set_new(g->obj, "components", comps))
		return NULL;
	return json_incref(g->obj);
}

/*
 * The text: jansson's JSON_INDENT(2) dump of {"format", "tensors": [...]}
 * written entry by entry, so only one entry's objects exist at a time (a
 * DOM of 100,000 entries costs ~15 times the text).
 */
static int mf_make(struct tfs_lazy_file *lf, char **data, size_t *len)
{
	struct tfs_mf *m = (struct tfs_mf *)lf;
	struct tfs_strbuf t = {0};
	struct tfs_mf_fields f;
	json_t *o, *fmt = json_string(m->format);
	char *np;
	uint32_t i;

	tfs_strbuf_puts(&t, "{\n  \"format\": ");
	text_put_json(&t, fmt, 1);
	json_decref(fmt);
	tfs_strbuf_puts(&t, ",\n  \"tensors\": [");
	for (i = 0; i < m->n && !t.failed; i++) {
		const struct mf_item *it = &m->items[i];

		tfs_strbuf_puts(&t, i ? ",\n    " : "\n    ");
		if (it->tensor == NO_TENSOR) {
			o = group_entry(m, &m->groups[it->extra]);
		} else {
			tensor_fields(m, &m->tree->tensors[it->tensor],
				      it->extra, &f);
			o = tfs_mf_entry(&f);
		}
		if (!o) {
			t.failed = true;
			break;
		}
		text_put_json(&t, o, 2);
		json_decref(o);
	}
	tfs_strbuf_puts(&t, m->n ? "\n  ]\n}\n" : "]\n}\n");
	if (t.failed) {
		free(t.p);
		return -ENOMEM;
	}
	*len = t.len;
	/* it lives as long as the mount: give back the doubling's slack */
	np = realloc(t.p, t.len + 1);
	*data = np ? np : t.p;
	drop_inputs(m);
	return 0;
}

struct tfs_lazy_file *tfs_mf_lazy_file(struct tfs_mf *m,
				       const struct tfs_tree *tree)
{
	m->tree = tree;
	m->lf.make = mf_make;
	m->lf.destroy = mf_destroy;
	return &m->lf;
}
