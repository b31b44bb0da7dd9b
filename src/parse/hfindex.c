// SPDX-License-Identifier: MIT
/* Hugging Face shard indexes: see src/parse/hfindex.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "parse/hfindex.h"
#include "parse/json.h"
#include "core/diag.h"
#include "core/names.h"

#define HF_META_NODES 100000

void tfs_hf_index_free(struct tfs_hf_index *x)
{
	size_t i;

	for (i = 0; i < x->n; i++)
		free(x->v[i].name);
	free(x->v);
	for (i = 0; i < x->nshards; i++)
		free(x->shards[i]);
	free(x->shards);
	json_decref(x->metadata);
	memset(x, 0, sizeof(*x));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* the shard name @s, interned in x->shards (sorted as they come) */
static const char *intern(struct tfs_hf_index *x, char *s)
{
	char **found = x->nshards ? bsearch(&s, x->shards, x->nshards,
					    sizeof(*x->shards), cmp_str)
				  : NULL;
	char **nv;
	size_t i;

	if (found) {
		free(s);
		return *found;
	}
	nv = reallocarray(x->shards, x->nshards + 1, sizeof(*nv));
	if (!nv) {
		free(s);
		return NULL;
	}
	x->shards = nv;
	for (i = x->nshards; i > 0 && strcmp(nv[i - 1], s) > 0; i--)
		nv[i] = nv[i - 1];
	nv[i] = s;
	x->nshards++;
	return s;
}

static int weight_map(struct tfs_json *j, struct tfs_hf_index *x,
		      const struct tfs_json_token *open, struct tfs_diag *d)
{
	struct tfs_json_token k, v;
	struct tfs_hf_entry *e;
	size_t cap = 0, len;
	char *s;
	int ret;

	if (tfs_json_want(open, TFS_JSON_OBJECT, d, "weight_map"))
		return -EBADMSG;
	while ((ret = tfs_json_member(j, open, &k, &v, d)) > 0) {
		if (tfs_json_want(&v, TFS_JSON_STRING, d, "weight_map: '%.*s'",
				  (int)(k.len < 80 ? k.len : 80), k.p))
			return -EBADMSG;
		s = tfs_json_strdup(&v, &len);
		if (!s)
			return tfs_diag_oom(d);
		if (!len || strlen(s) != len || strchr(s, '/') ||
		    strcmp(s, ".") == 0 || strcmp(s, "..") == 0) {
			free(s);
			return tfs_diag_at(d, -EBADMSG, v.offset,
					   "weight_map: '%.*s' is not a file "
					   "name in this directory",
					   (int)(v.len < 80 ? v.len : 80), v.p);
		}
		if (x->n == cap) {
			cap = cap ? cap * 2 : 256;
			e = reallocarray(x->v, cap, sizeof(*e));
			if (!e) {
				free(s);
				return tfs_diag_oom(d);
			}
			x->v = e;
		}
		e = &x->v[x->n];
		memset(e, 0, sizeof(*e));
		e->at = k.offset;
		e->shard = intern(x, s);
		e->name = tfs_json_strdup(&k, &e->name_len);
		if (!e->shard || !e->name) {
			free(e->name);
			return tfs_diag_oom(d);
		}
		x->n++;
	}
	return ret;
}

static int metadata(struct tfs_json *j, struct tfs_hf_index *x,
		    const struct tfs_json_token *open, struct tfs_diag *d)
{
	json_t *t;
	int ret;

	if (tfs_json_want(open, TFS_JSON_OBJECT, d, "metadata"))
		return -EBADMSG;
	ret = tfs_json_to_jansson(j, open, HF_META_NODES, &x->metadata, d);
	if (ret)
		return ret;
	t = json_object_get(x->metadata, "total_size");
	if (json_is_integer(t) && json_integer_value(t) >= 0) {
		x->has_total = true;
		x->total_size = (uint64_t)json_integer_value(t);
	}
	return 0;
}

static int cmp_names(const void *pa, const void *pb)
{
	const struct tfs_hf_entry *a = *(struct tfs_hf_entry *const *)pa,
				  *b = *(struct tfs_hf_entry *const *)pb;
	size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
	int c = memcmp(a->name, b->name, n);

	if (c)
		return c;
	if (a->name_len != b->name_len)
		return a->name_len < b->name_len ? -1 : 1;
	return a->at < b->at ? -1 : 1;
}

/* a tensor may be listed once */
static int unique_names(struct tfs_hf_index *x, struct tfs_diag *d)
{
	struct tfs_hf_entry **v = calloc(x->n ? x->n : 1, sizeof(*v));
	size_t i;
	int ret = 0;

	if (!v)
		return tfs_diag_oom(d);
	for (i = 0; i < x->n; i++)
		v[i] = &x->v[i];
	qsort(v, x->n, sizeof(*v), cmp_names);
	for (i = 1; i < x->n && !ret; i++)
		if (v[i]->name_len == v[i - 1]->name_len &&
		    memcmp(v[i]->name, v[i - 1]->name, v[i]->name_len) == 0)
			ret = tfs_diag_at(
				d, -EBADMSG, v[i]->at,
				"weight_map: tensor '%s' is listed "
				"twice",
				TFS_SHOWN(v[i]->name, v[i]->name_len));
	free(v);
	return ret;
}

int tfs_hf_index_parse(const void *buf, size_t len, struct tfs_hf_index *x,
		       struct tfs_diag *d)
{
	struct tfs_json j;
	struct tfs_json_token root, t, v;
	bool have_map = false;
	int ret;

	memset(x, 0, sizeof(*x));
	tfs_json_init(&j, buf, len, 0, TFS_JSON_MAX_DEPTH);
	ret = tfs_json_root(&j, &root, "index", d);
	while (!ret && (ret = tfs_json_member(&j, &root, &t, &v, d)) > 0) {
		if (tfs_json_eq(&t, "weight_map") && !have_map) {
			have_map = true;
			ret = weight_map(&j, x, &v, d);
		} else if (tfs_json_eq(&t, "metadata") && !x->metadata) {
			ret = metadata(&j, x, &v, d);
		} else if (tfs_json_eq(&t, "weight_map") ||
			   tfs_json_eq(&t, "metadata")) {
			ret = tfs_diag_at(d, -EBADMSG, t.offset,
					  "index: '%.*s' is given twice",
					  (int)t.len, t.p);
		} else {
			ret = 0; /* skipped by the next tfs_json_member */
		}
	}
	if (!ret)
		ret = tfs_json_next(&j, &t, d); /* the end */
	if (!ret && !have_map)
		ret = tfs_diag_at(d, -EBADMSG, 0, "index: no weight_map");
	if (!ret)
		ret = unique_names(x, d);
	if (ret)
		tfs_hf_index_free(x);
	return ret;
}
