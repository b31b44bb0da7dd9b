// SPDX-License-Identifier: MIT
/*
 * `tensorfs info`'s metadata, as a summary that fits a screen: one line
 * per member of metadata.json, a long list cut to its largest items with
 * "N more: see metadata.json" (`info --full` prints the whole document).
 * An OpenVINO model's metadata is 7,000 lines of JSON, a TF.js model's
 * 5,000: what a user reads first is the model's kind and counts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli.h"

/* items of a list shown, lines of a list of long strings */
#define SUMMARY_ITEMS 8
#define SUMMARY_LINES 5
/* a compact JSON value up to this long is shown whole */
#define SUMMARY_WIDTH 100

struct counted {
	const char *key;
	json_int_t n;
};

static int cmp_counted(const void *pa, const void *pb)
{
	const struct counted *a = pa, *b = pb;

	if (a->n != b->n)
		return a->n < b->n ? 1 : -1;
	return strcmp(a->key, b->key);
}

static void more(FILE *f, size_t n)
{
	if (n)
		fprintf(f, " (%zu more: see metadata.json)", n);
}

/* @v's items (key, count) largest first, the first ones shown */
static void show_counted(FILE *f, struct counted *v, size_t n)
{
	size_t i;

	qsort(v, n, sizeof(*v), cmp_counted);
	for (i = 0; i < n && i < SUMMARY_ITEMS; i++)
		fprintf(f, "%s%s %lld", i ? ", " : "", v[i].key,
			(long long)v[i].n);
	more(f, n - i);
}

/* {"Const": 13, "MatMul": 3}: largest first */
static bool counts(FILE *f, const json_t *o)
{
	struct counted *v;
	const char *k;
	json_t *x;
	size_t n = 0;

	json_object_foreach((json_t *)o, k, x)
	{
		if (!json_is_integer(x))
			return false;
	}
	v = calloc(json_object_size(o) + 1, sizeof(*v));
	if (!v)
		return false;
	json_object_foreach((json_t *)o, k, x)
	{
		v[n++] = (struct counted){k, json_integer_value(x)};
	}
	show_counted(f, v, n);
	free(v);
	return true;
}

/* {"a": {...}, "b": [...]}: the keys, largest value first (its bytes) */
static bool keys(FILE *f, const json_t *o)
{
	struct counted *v = calloc(json_object_size(o) + 1, sizeof(*v));
	const char *k;
	json_t *x;
	size_t n = 0;
	char *s;

	if (!v)
		return false;
	json_object_foreach((json_t *)o, k, x)
	{
		s = json_dumps(x, JSON_ENCODE_ANY | JSON_COMPACT);
		v[n++] = (struct counted){k, s ? (json_int_t)strlen(s) : 0};
		free(s);
	}
	fprintf(f, "%zu entries, largest first: ", n);
	qsort(v, n, sizeof(*v), cmp_counted);
	for (size_t i = 0; i < n && i < SUMMARY_ITEMS; i++)
		fprintf(f, "%s%s", i ? ", " : "", v[i].key);
	more(f, n > SUMMARY_ITEMS ? n - SUMMARY_ITEMS : 0);
	free(v);
	return true;
}

/* a list of strings one of which is long: one a line */
static bool scalars_long(const json_t *a)
{
	size_t i;
	json_t *x;

	json_array_foreach((json_t *)a, i, x)
	{
		if (json_is_string(x) && json_string_length(x) > 40)
			return true;
	}
	return false;
}

/* a list of scalars: the first ones, on one line or (long) one a line */
static bool scalars(FILE *f, const json_t *a)
{
	size_t i, n = json_array_size(a), longest = 0;
	json_t *x;
	char *s;

	json_array_foreach((json_t *)a, i, x)
	{
		if (json_is_object(x) || json_is_array(x))
			return false;
		if (json_is_string(x) && json_string_length(x) > longest)
			longest = json_string_length(x);
	}
	if (longest > 40) {
		for (i = 0; i < n && i < SUMMARY_LINES; i++) {
			fputc('\n', f);
			fprintf(f, "    %s",
				json_string_value(json_array_get(a, i)) ?: "");
		}
		more(f, n - i);
		return true;
	}
	for (i = 0; i < n && i < SUMMARY_ITEMS; i++) {
		s = json_dumps(json_array_get(a, i), JSON_ENCODE_ANY);
		fprintf(f, "%s%s", i ? ", " : "", s ? s : "?");
		free(s);
	}
	more(f, n - i);
	return true;
}

static void member(FILE *f, const char *key, const json_t *v)
{
	char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	size_t n = json_is_array(v) ? json_array_size(v) : json_object_size(v);

	fprintf(f, "  %s:", key);
	if (!json_is_array(v) || !scalars_long(v))
		fputc(' ', f);
	if (s && strlen(s) <= SUMMARY_WIDTH)
		fprintf(f, "%s", s);
	else if (json_is_object(v) && (counts(f, v) || keys(f, v)))
		;
	else if (json_is_array(v) && scalars(f, v))
		;
	else if (json_is_string(v))
		fprintf(f, "%.*s... (%zu bytes)", SUMMARY_WIDTH,
			json_string_value(v), json_string_length(v));
	else
		fprintf(f, "%zu %s: see metadata.json", n,
			json_is_array(v) ? (n == 1 ? "item" : "items")
					 : (n == 1 ? "entry" : "entries"));
	fputc('\n', f);
	free(s);
}

char *tfs_cli_meta_summary(const char *text, size_t len)
{
	json_t *o = json_loadb(text, len, 0, NULL), *v;
	char *out = NULL;
	size_t n = 0;
	const char *k;
	FILE *f;

	if (!json_is_object(o)) {
		json_decref(o);
		return NULL;
	}
	f = open_memstream(&out, &n);
	if (f) {
		fprintf(f, "metadata: (the whole: info --full, or "
			   ".tensorfs/metadata.json)\n");
		json_object_foreach(o, k, v)
		{
			member(f, k, v);
		}
		if (fclose(f)) {
			free(out);
			out = NULL;
		}
	}
	json_decref(o);
	return out;
}
