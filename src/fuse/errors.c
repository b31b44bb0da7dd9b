// SPDX-License-Identifier: MIT
/* .tensorfs/errors.json of a live mount: see errors.h. */
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fuse/errors.h"
#include "core/image.h"
#include "core/tree.h"

struct failure {
	uint32_t tensor;
	char *what;
	time_t when;
};

struct tfs_errors {
	struct tfs_image *img;
	uint32_t node;
	pthread_mutex_t lock;
	struct failure *v;
	size_t n, cap;
};

struct tfs_errors *tfs_errors_new(struct tfs_image *img)
{
	struct tfs_errors *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	e->img = img;
	e->node = tfs_tree_resolve(img->tree, ".tensorfs/errors.json");
	pthread_mutex_init(&e->lock, NULL);
	return e;
}

void tfs_errors_free(struct tfs_errors *e)
{
	size_t i;

	if (!e)
		return;
	for (i = 0; i < e->n; i++)
		free(e->v[i].what);
	free(e->v);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

uint32_t tfs_errors_node(const struct tfs_errors *e)
{
	return e ? e->node : TFS_NO_NODE;
}

void tfs_errors_add(struct tfs_errors *e, uint32_t tensor, const char *what)
{
	struct failure *nv;
	char *w = strdup(what);

	if (!w)
		return; /* the log line still says it */
	pthread_mutex_lock(&e->lock);
	if (e->n == e->cap) {
		nv = realloc(e->v, (e->cap ? 2 * e->cap : 8) * sizeof(*nv));
		if (!nv) {
			pthread_mutex_unlock(&e->lock);
			free(w);
			return;
		}
		e->v = nv;
		e->cap = e->cap ? 2 * e->cap : 8;
	}
	e->v[e->n++] = (struct failure){tensor, w, time(NULL)};
	pthread_mutex_unlock(&e->lock);
}

/* the loader's list (a JSON array), then one object per failure */
char *tfs_errors_text(struct tfs_errors *e, size_t *len)
{
	const struct tfs_tree *t = e->img->tree;
	const struct tfs_node *nd;
	json_t *list = NULL, *o;
	char when[32], *s = NULL, *r;
	struct tm tm;
	size_t i;

	if (e->node != TFS_NO_NODE) {
		nd = &t->nodes[e->node];
		list = json_loadb(nd->mem, nd->mem_len, 0, NULL);
	}
	if (!json_is_array(list)) {
		json_decref(list);
		list = json_array();
	}
	if (!list)
		return NULL;
	/* files the loader found broken (a missing data file, a rule of the
	 * format broken by their bytes): listed but unreadable from the start */
	for (i = 0; i < t->ntensors; i++) {
		const struct tfs_tensor *x = &t->tensors[i];

		if (!x->unreadable || !x->unreadable_is_fault)
			continue;
		o = json_pack("{s:s,s:s}", "tensor", x->path, "error",
			      x->unreadable);
		if (!o || json_array_append_new(list, o)) {
			json_decref(list);
			return NULL;
		}
	}
	pthread_mutex_lock(&e->lock);
	for (i = 0; i < e->n; i++) {
		const struct tfs_tensor *x = &t->tensors[e->v[i].tensor];

		gmtime_r(&e->v[i].when, &tm);
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		o = json_pack("{s:s,s:s,s:s}", "tensor", x->path, "error",
			      e->v[i].what, "time", when);
		if (!o || json_array_append_new(list, o))
			break;
	}
	pthread_mutex_unlock(&e->lock);
	if (i == e->n)
		s = json_dumps(list, JSON_INDENT(2));
	json_decref(list);
	if (!s)
		return NULL;
	*len = strlen(s);
	r = realloc(s, *len + 2);
	if (!r) {
		free(s);
		return NULL;
	}
	r[(*len)++] = '\n';
	r[*len] = '\0';
	return r;
}
