// SPDX-License-Identifier: MIT
/*
 * TensorFlow.js models (docs/formats/tfjs.md, ../shared/specs/tfjs.md):
 * a `model.json` (or a bare `weights_manifest.json` array) whose
 * `weightsManifest` lists groups of weights, each group's weights back to
 * back, without padding, in the concatenation of the group's shard files
 * (`group1-shard1of2.bin`...).  No magic: the probe knows the file by its
 * name or by a `weightsManifest` key.  The JSON is read by the pull reader
 * (src/parse/json.c) so every refusal names its byte offset; everything
 * but the manifest goes into metadata.json as it is.
 *
 * The shard files are companion files (tfs_builder_open_companion: never
 * outside the model's folder, the manifest's paths are checked here too);
 * a weight inside one file is served zero-copy from it, a weight that
 * straddles two files is one tensor of several pieces.  Quantized weights
 * are served as stored (uint8, uint16, float16) with their scale and min
 * as xattrs; string weights as stored (u32 LE length + bytes each), their
 * decoded values in metadata.json.  Optimizer state (group "optimizer")
 * goes under optimizer/.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/common/dtype_labels.h"
#include "formats/common/info_xattr.h"
#include "core/strmap.h"
#include "parse/json.h"
#include "core/builder.h"
#include "core/checked.h"
#include "core/cursor.h"
#include "core/diag.h"
#include "core/format.h"
#include "core/names.h"
#include "core/source.h"

#define TJ_FILE_MAX (256ull << 20) /* model.json at most (spec §1) */
#define TJ_PROBE_SCAN_REMOTE (256u << 10)
#define TJ_PROBE_SCAN (16u << 20) /* the probe looks this far for the key */
#define TJ_MAX_WEIGHTS (1u << 20)
#define TJ_MAX_PATHS 4096
#define TJ_MAX_DIMS 32
#define TJ_META_NODES (4u << 20) /* JSON values of one metadata member */
#define TJ_MAX_STRINGS 4096	 /* decoded strings kept per weight */

enum tj_quant { TJ_Q_NONE = 0, TJ_Q_UINT8, TJ_Q_UINT16, TJ_Q_FLOAT16 };

struct tj_weight {
	char *name;
	size_t name_len;
	uint64_t at; /* the entry's '{' */
	uint64_t shape[TJ_MAX_DIMS];
	size_t ndim;
	bool have_shape;
	enum tfs_dtype logical; /* the manifest's dtype */
	uint64_t dtype_at;
	bool optimizer;
	enum tj_quant quant;
	uint64_t quant_at;
	bool have_scale, have_min;
	double scale, min;
	size_t group;
};

struct tj_file {
	char *path;  /* as written, "./" stripped */
	uint64_t at; /* the string's offset */
	uint32_t source;
	uint64_t size;
	uint64_t start; /* its first byte in the group's concatenation */
};

struct tj_group {
	uint64_t at;
	size_t first, count;  /* weights */
	size_t fpath, npaths; /* into z->files */
	uint64_t total;
	bool have_paths, have_weights;
};

struct tj {
	const struct tfs_source *src;
	struct tfs_builder *b;
	struct tfs_diag *d;
	struct tfs_json j;
	json_t *meta;
	json_t *strings; /* name: [decoded strings] */
	struct tj_weight *w;
	size_t nw, capw;
	struct tj_group *g;
	size_t ng, capg;
	struct tj_file *f;
	size_t nf, capf;
	struct tfs_strmap names;
	bool have_manifest, from_memory;
};

static int oom(struct tj *z)
{
	return tfs_diag_oom(z->d);
}

static int next(struct tj *z, struct tfs_json_token *t)
{
	return tfs_json_next(&z->j, t, z->d);
}

/* ---- probe -------------------------------------------------------------- */

static int tj_probe(const struct tfs_source *src)
{
	size_t i, scan;

	for (i = 0; i < src->size && i < 4096; i++) {
		uint8_t c = src->data[i];

		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
	}
	/* a remote container: within the first chunk the mount fetches */
	scan = src->path && tfs_source_is_url(src->path) ? TJ_PROBE_SCAN_REMOTE
							 : TJ_PROBE_SCAN;
	if (src->size < scan)
		scan = (size_t)src->size;
	if (i < src->size && (src->data[i] == '{' || src->data[i] == '[') &&
	    memmem(src->data, scan, "\"weightsManifest\"", 17))
		return 90;
	if (i < src->size && src->data[i] == '[' &&
	    memmem(src->data, scan, "\"paths\"", 7) &&
	    memmem(src->data, scan, "\"weights\"", 9))
		return 60;
	/* by name: a damaged model.json is still refused by this reader */
	if (tfs_source_name_ends(src, "model.json"))
		return 50;
	return 0;
}

/* ---- the manifest ------------------------------------------------------- */

static int grow(void **p, size_t *cap, size_t n, size_t size)
{
	size_t c = *cap ? *cap * 2 : 16;
	void *q;

	if (n < *cap)
		return 0;
	q = reallocarray(*p, c, size);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = c;
	return 0;
}

/* a JSON number as a double (scale, min) */
static int number(struct tj *z, const struct tfs_json_token *t,
		  const char *what, double *out)
{
	char buf[64], *end;

	if (tfs_json_want(t, TFS_JSON_NUMBER, z->d, "%s", what))
		return -EBADMSG;
	if (t->len >= sizeof(buf))
		return tfs_diag_at(z->d, -EBADMSG, t->offset,
				   "%s: not a number", what);
	memcpy(buf, t->p, t->len);
	buf[t->len] = 0;
	*out = strtod(buf, &end);
	return 0;
}

static int read_quant(struct tj *z, struct tj_weight *w,
		      const struct tfs_json_token *open)
{
	struct tfs_json_token t, v;
	bool have_dtype = false;
	int ret;

	if (tfs_json_want(open, TFS_JSON_OBJECT, z->d,
			  "weight '%s': quantization",
			  TFS_SHOWN(w->name, w->name_len)))
		return -EBADMSG;
	w->quant_at = open->offset;
	while ((ret = tfs_json_member(&z->j, open, &t, &v, z->d)) > 0) {
		if (tfs_json_eq(&t, "dtype")) {
			if (tfs_json_want(&v, TFS_JSON_STRING, z->d,
					  "weight '%s': quantization.dtype",
					  TFS_SHOWN(w->name, w->name_len)))
				return -EBADMSG;
			if (tfs_json_eq(&v, "uint8"))
				w->quant = TJ_Q_UINT8;
			else if (tfs_json_eq(&v, "uint16"))
				w->quant = TJ_Q_UINT16;
			else if (tfs_json_eq(&v, "float16"))
				w->quant = TJ_Q_FLOAT16;
			else
				return tfs_diag_at(
					z->d, -EBADMSG, v.offset,
					"weight '%s': quantization.dtype "
					"'%.*s': unknown quantization dtype "
					"(uint8, uint16 or float16)",
					TFS_SHOWN(w->name, w->name_len),
					(int)(v.len < 32 ? v.len : 32), v.p);
			have_dtype = true;
		} else if (tfs_json_eq(&t, "scale")) {
			ret = number(z, &v, "quantization.scale", &w->scale);
			w->have_scale = true;
		} else if (tfs_json_eq(&t, "min")) {
			ret = number(z, &v, "quantization.min", &w->min);
			w->have_min = true;
		}
		if (ret < 0)
			return ret;
	}
	if (ret)
		return ret;
	if (!have_dtype)
		return tfs_diag_at(z->d, -EBADMSG, open->offset,
				   "weight '%s': quantization: no dtype",
				   TFS_SHOWN(w->name, w->name_len));
	return 0;
}

static int read_shape(struct tj *z, struct tj_weight *w,
		      const struct tfs_json_token *open)
{
	struct tfs_json_token t;
	int ret;

	if (tfs_json_want(open, TFS_JSON_ARRAY, z->d, "weight '%s': shape",
			  TFS_SHOWN(w->name, w->name_len)))
		return -EBADMSG;
	while ((ret = tfs_json_item(&z->j, open, &t, z->d)) > 0) {
		if (w->ndim == TJ_MAX_DIMS)
			return tfs_diag_at(z->d, -EBADMSG, t.offset,
					   "weight '%s': shape: more than %d "
					   "dimensions",
					   TFS_SHOWN(w->name, w->name_len),
					   TJ_MAX_DIMS);
		if (t.kind != TFS_JSON_NUMBER ||
		    tfs_json_u64(&t, &w->shape[w->ndim]))
			return tfs_diag_at(
				z->d, -EBADMSG, t.offset,
				"weight '%s': shape[%zu] '%.*s': bad "
				"dimension (not an integer >= 0)",
				TFS_SHOWN(w->name, w->name_len), w->ndim,
				(int)(t.len < 24 ? t.len : 24), t.p ? t.p : "");
		w->ndim++;
	}
	w->have_shape = !ret;
	return ret;
}

static const struct tfs_dtype_label tj_dtypes[] = {
	{"float32", TFS_DTYPE_FLOAT32},	    {"int32", TFS_DTYPE_INT32},
	{"bool", TFS_DTYPE_BOOL},	    {"string", TFS_DTYPE_STRING},
	{"complex64", TFS_DTYPE_COMPLEX64},
};

static int read_weight(struct tj *z, const struct tfs_json_token *open)
{
	struct tfs_json_token t, v;
	struct tj_weight *w;
	size_t i;
	int ret;

	if (tfs_json_want(open, TFS_JSON_OBJECT, z->d,
			  "weightsManifest: weights[%zu]",
			  z->g[z->ng - 1].count))
		return -EBADMSG;
	if (z->nw == TJ_MAX_WEIGHTS)
		return tfs_diag_at(z->d, -E2BIG, open->offset,
				   "weightsManifest: more than %u weights",
				   TJ_MAX_WEIGHTS);
	if (grow((void **)&z->w, &z->capw, z->nw, sizeof(*z->w)))
		return oom(z);
	w = &z->w[z->nw++];
	memset(w, 0, sizeof(*w));
	w->at = open->offset;
	w->group = z->ng - 1;
	z->g[z->ng - 1].count++;
	while ((ret = tfs_json_member(&z->j, open, &t, &v, z->d)) > 0) {
		if (tfs_json_eq(&t, "name")) {
			if (tfs_json_want(&v, TFS_JSON_STRING, z->d,
					  "weight: name"))
				return -EBADMSG;
			free(w->name);
			w->name = tfs_json_strdup(&v, &w->name_len);
			if (!w->name)
				return oom(z);
		} else if (tfs_json_eq(&t, "shape")) {
			ret = read_shape(z, w, &v);
		} else if (tfs_json_eq(&t, "dtype")) {
			if (tfs_json_want(&v, TFS_JSON_STRING, z->d,
					  "weight: dtype"))
				return -EBADMSG;
			w->dtype_at = v.offset;
			for (i = 0; i < sizeof(tj_dtypes) / sizeof(*tj_dtypes);
			     i++)
				if (tfs_json_eq(&v, tj_dtypes[i].name))
					w->logical = tj_dtypes[i].dtype;
			if (!w->logical)
				return tfs_diag_at(
					z->d, -EBADMSG, v.offset,
					"weight: dtype '%.*s': unknown dtype "
					"(float32, int32, bool, string, "
					"complex64)",
					(int)(v.len < 32 ? v.len : 32), v.p);
		} else if (tfs_json_eq(&t, "group")) {
			w->optimizer = v.kind == TFS_JSON_STRING &&
				       tfs_json_eq(&v, "optimizer");
		} else if (tfs_json_eq(&t, "quantization")) {
			ret = read_quant(z, w, &v);
		}
		if (ret < 0)
			return ret;
	}
	if (ret)
		return ret;
	if (!w->name)
		return tfs_diag_at(z->d, -EBADMSG, open->offset,
				   "weight: no name");
	if (!w->logical)
		return tfs_diag_at(z->d, -EBADMSG, open->offset,
				   "weight '%s': no dtype",
				   TFS_SHOWN(w->name, w->name_len));
	if (!w->have_shape)
		return tfs_diag_at(z->d, -EBADMSG, open->offset,
				   "weight '%s': no shape",
				   TFS_SHOWN(w->name, w->name_len));
	if (w->quant && w->logical != TFS_DTYPE_FLOAT32 &&
	    (w->quant == TJ_Q_FLOAT16 || w->logical != TFS_DTYPE_INT32))
		return tfs_diag_at(z->d, -EBADMSG, w->quant_at,
				   "weight '%s': quantization of a %s weight "
				   "(only float32, or int32 as uint8/uint16)",
				   TFS_SHOWN(w->name, w->name_len),
				   tfs_dtype_name(w->logical));
	if ((w->quant == TJ_Q_UINT8 || w->quant == TJ_Q_UINT16) &&
	    (!w->have_scale || !w->have_min))
		return tfs_diag_at(z->d, -EBADMSG, w->quant_at,
				   "weight '%s': quantization %s without "
				   "scale/min",
				   TFS_SHOWN(w->name, w->name_len),
				   w->quant == TJ_Q_UINT8 ? "uint8" : "uint16");
	if (tfs_strmap_get(&z->names, w->name, NULL) ||
	    strlen(w->name) != w->name_len)
		return tfs_diag_at(z->d, -EBADMSG, open->offset,
				   "weight '%s': duplicate weight name (or a "
				   "NUL in it)",
				   TFS_SHOWN(w->name, w->name_len));
	if (tfs_strmap_put(&z->names, w->name, (uint32_t)(z->nw - 1)))
		return oom(z);
	return 0;
}

/* a manifest path: stays in the model's folder; "./" stripped */
static int check_path(struct tj *z, const struct tfs_json_token *v, char **out)
{
	char *s = tfs_json_strdup(v, NULL), *p, *c;
	size_t n;

	if (!s)
		return oom(z);
	p = s;
	while (p[0] == '.' && p[1] == '/')
		p += 2;
	n = strlen(p);
	if (!n || p[0] == '/' || strchr(p, '\\') || strchr(p, ':') ||
	    n != tfs_json_decoded_len(v) - (size_t)(p - s))
		goto bad;
	for (c = p; c;) {
		char *e = strchr(c, '/');
		size_t k = e ? (size_t)(e - c) : strlen(c);

		if (!k || (k == 2 && c[0] == '.' && c[1] == '.'))
			goto bad;
		c = e ? e + 1 : NULL;
	}
	memmove(s, p, n + 1);
	*out = s;
	return 0;
bad:
	free(s);
	return tfs_diag_at(z->d, -EBADMSG, v->offset,
			   "weightsManifest: paths: '%.*s' escapes the model "
			   "folder (absolute, '..', empty component, "
			   "backslash or URL)",
			   (int)(v->len < 64 ? v->len : 64), v->p);
}

static int read_group(struct tj *z, const struct tfs_json_token *open)
{
	struct tfs_json_token t, v, e;
	struct tj_group *g;
	int ret;

	if (tfs_json_want(open, TFS_JSON_OBJECT, z->d, "weightsManifest[%zu]",
			  z->ng))
		return -EBADMSG;
	if (grow((void **)&z->g, &z->capg, z->ng, sizeof(*z->g)))
		return oom(z);
	g = &z->g[z->ng++];
	memset(g, 0, sizeof(*g));
	g->at = open->offset;
	g->first = z->nw;
	while ((ret = tfs_json_member(&z->j, open, &t, &v, z->d)) > 0) {
		g = &z->g[z->ng - 1];
		if (tfs_json_eq(&t, "paths") && !g->have_paths) {
			if (tfs_json_want(&v, TFS_JSON_ARRAY, z->d,
					  "weightsManifest[%zu]: paths",
					  z->ng - 1))
				return -EBADMSG;
			g->have_paths = true;
			g->fpath = z->nf;
			while ((ret = tfs_json_item(&z->j, &v, &e, z->d)) > 0) {
				char *p = NULL;

				if (tfs_json_want(&e, TFS_JSON_STRING, z->d,
						  "weightsManifest: paths"))
					return -EBADMSG;
				if (z->nf == TJ_MAX_PATHS)
					return tfs_diag_at(
						z->d, -E2BIG, e.offset,
						"weightsManifest: more than "
						"%u paths",
						TJ_MAX_PATHS);
				ret = check_path(z, &e, &p);
				if (ret)
					return ret;
				if (grow((void **)&z->f, &z->capf, z->nf,
					 sizeof(*z->f))) {
					free(p);
					return oom(z);
				}
				memset(&z->f[z->nf], 0, sizeof(*z->f));
				z->f[z->nf].path = p;
				z->f[z->nf++].at = e.offset;
				z->g[z->ng - 1].npaths++;
			}
			if (ret)
				return ret;
		} else if (tfs_json_eq(&t, "weights") && !g->have_weights) {
			if (tfs_json_want(&v, TFS_JSON_ARRAY, z->d,
					  "weightsManifest[%zu]: weights",
					  z->ng - 1))
				return -EBADMSG;
			g->have_weights = true;
			while ((ret = tfs_json_item(&z->j, &v, &e, z->d)) > 0) {
				ret = read_weight(z, &e);
				if (ret)
					return ret;
			}
		}
		if (ret < 0)
			return ret;
	}
	if (ret)
		return ret;
	g = &z->g[z->ng - 1];
	if (!g->have_paths || !g->have_weights)
		return tfs_diag_at(z->d, -EBADMSG, open->offset,
				   "weightsManifest[%zu]: no %s", z->ng - 1,
				   g->have_paths ? "weights" : "paths");
	return 0;
}

static int read_manifest(struct tj *z, const struct tfs_json_token *open)
{
	struct tfs_json_token t;
	int ret;

	if (tfs_json_want(open, TFS_JSON_ARRAY, z->d, "weightsManifest"))
		return -EBADMSG;
	if (z->have_manifest)
		return tfs_diag_at(z->d, -EBADMSG, open->offset,
				   "weightsManifest: given twice");
	z->have_manifest = true;
	while ((ret = tfs_json_item(&z->j, open, &t, z->d)) > 0) {
		ret = read_group(z, &t);
		if (ret)
			return ret;
	}
	return ret;
}

/* a member other than the manifest: into metadata.json as it is */
static int read_member(struct tj *z, const struct tfs_json_token *key)
{
	struct tfs_json_token v;
	struct tfs_json saved;
	char *k = tfs_json_strdup(key, NULL);
	json_t *val = NULL;
	int ret;

	if (!k)
		return oom(z);
	ret = next(z, &v);
	if (ret)
		goto out;
	saved = z->j;
	ret = tfs_json_to_jansson(&z->j, &v, TJ_META_NODES, &val, z->d);
	if (ret == -E2BIG) {
		/* too large to keep: said so, and skipped */
		tfs_diag_clear(z->d);
		z->j = saved;
		ret = tfs_json_skip(&z->j, &v, z->d);
		if (!ret)
			val = json_string("(omitted: too large)");
	}
	if (ret)
		goto out;
	if (!val || json_object_set_new(z->meta, k, val))
		ret = oom(z);
	val = NULL;
out:
	json_decref(val);
	free(k);
	return ret;
}

/* ---- the shard files ---------------------------------------------------- */

/* @n bytes at @pos of group @g's concatenation (inside it) into @out */
static void group_bytes(struct tj *z, const struct tj_group *g, uint64_t pos,
			uint8_t *out, size_t n)
{
	size_t i;

	for (i = 0; i < g->npaths && n; i++) {
		const struct tj_file *f = &z->f[g->fpath + i];
		const struct tfs_source *s;
		uint64_t k;

		if (pos >= f->start + f->size)
			continue;
		s = tfs_builder_source(z->b, f->source);
		k = f->start + f->size - pos;
		if (k > n)
			k = n;
		memcpy(out, s->data + (pos - f->start), (size_t)k);
		out += k;
		pos += k;
		n -= (size_t)k;
	}
}

static int open_files(struct tj *z)
{
	size_t gi, i;
	int ret;

	for (gi = 0; gi < z->ng; gi++) {
		struct tj_group *g = &z->g[gi];

		for (i = 0; i < g->npaths; i++) {
			struct tj_file *f = &z->f[g->fpath + i];

			ret = tfs_builder_open_companion(z->b, f->path,
							 &f->source, z->d);
			if (ret)
				return tfs_diag_refer(
					z->d, ret == -ENOENT ? -EBADMSG : ret,
					f->at,
					"weightsManifest[%zu]: paths[%zu]: "
					"%s shard file",
					gi, i,
					ret == -ENOENT ? "missing" : "bad");
			f->size = tfs_builder_source(z->b, f->source)->size;
			f->start = g->total;
			if (!tfs_add_u64(g->total, f->size, &g->total))
				return tfs_diag_at(z->d, -EOVERFLOW, f->at,
						   "shard sizes overflow");
		}
	}
	return 0;
}

/* the stored bytes of a string weight, each u32 length inside the group */
static int string_size(struct tj *z, struct tj_weight *w, uint64_t pos,
		       uint64_t count, uint64_t *size, json_t **strings)
{
	const struct tj_group *g = &z->g[w->group];
	uint64_t i, p = pos;
	json_t *arr = json_array();

	if (!arr)
		return oom(z);
	for (i = 0; i < count; i++) {
		uint8_t lb[4];
		uint64_t len;

		if (!tfs_range_ok(p, 4, g->total)) {
			json_decref(arr);
			return tfs_diag_at(
				z->d, -EBADMSG, w->at,
				"weight '%s': string %" PRIu64
				": its length runs past the end of "
				"the group's files (%" PRIu64 " bytes)",
				TFS_SHOWN(w->name, w->name_len), i, g->total);
		}
		group_bytes(z, g, p, lb, 4);
		len = tfs_load_le(lb, 4);
		if (!tfs_range_ok(p + 4, len, g->total)) {
			json_decref(arr);
			return tfs_diag_at(z->d, -EBADMSG, w->at,
					   "weight '%s': string %" PRIu64
					   ": length %" PRIu64
					   " at group byte %" PRIu64
					   ": string bytes past end of the "
					   "group's files (%" PRIu64 " bytes)",
					   TFS_SHOWN(w->name, w->name_len), i,
					   len, p, g->total);
		}
		if (i < TJ_MAX_STRINGS && len <= (1u << 20)) {
			char *s = malloc(len ? (size_t)len : 1);
			json_t *js;

			if (!s) {
				json_decref(arr);
				return oom(z);
			}
			group_bytes(z, g, p + 4, (uint8_t *)s, (size_t)len);
			js = json_stringn(s, (size_t)len);
			free(s);
			if (json_array_append_new(arr, js ? js : json_null())) {
				json_decref(arr);
				return oom(z);
			}
		}
		p += 4 + len;
	}
	*size = p - pos;
	*strings = arr;
	return 0;
}

/* ---- the tensors -------------------------------------------------------- */

static enum tfs_dtype stored_dtype(const struct tj_weight *w)
{
	switch (w->quant) {
	case TJ_Q_UINT8:
		return TFS_DTYPE_UINT8;
	case TJ_Q_UINT16:
		return TFS_DTYPE_UINT16;
	case TJ_Q_FLOAT16:
		return TFS_DTYPE_FLOAT16;
	default:
		return w->logical;
	}
}

static int set_attrs(struct tj *z, const struct tj_weight *w, uint32_t h)
{
	char num[40];
	int ret = 0;

	if (w->logical == TFS_DTYPE_STRING)
		ret = tfs_builder_set_xattr_str(z->b, h, "string_encoding",
						"tfjs");
	if (!ret && w->quant) {
		ret = tfs_builder_set_xattr_str(z->b, h, "quant.scheme",
						w->quant == TJ_Q_FLOAT16
							? "tfjs-float16"
							: "tfjs-affine");
		ret = ret ? ret
			  : tfs_builder_set_xattr_str(
				    z->b, h, "logical_dtype",
				    tfs_dtype_name(w->logical));
		if (!ret && w->quant != TJ_Q_FLOAT16) {
			snprintf(num, sizeof(num), "%.17g", w->scale);
			ret = tfs_builder_set_xattr_str(z->b, h, "quant.scale",
							num);
			snprintf(num, sizeof(num), "%.17g", w->min);
			ret = ret ? ret
				  : tfs_builder_set_xattr_str(z->b, h,
							      "quant.min", num);
		}
	}
	if (!ret && w->optimizer)
		ret = tfs_builder_set_xattr_str(z->b, h, "tfjs.group",
						"optimizer");
	return ret ? oom(z) : 0;
}

/* the path: the name split at '/', optimizer state under optimizer/ */
static int add_weight(struct tj *z, struct tj_weight *w, uint64_t pos,
		      uint64_t size)
{
	const struct tj_group *g = &z->g[w->group];
	struct tfs_tensor_spec s;
	struct tfs_segment segs[TJ_MAX_PATHS > 64 ? 64 : TJ_MAX_PATHS];
	struct tfs_segment *seg = segs;
	const char **comp = NULL;
	char *names = NULL, *c;
	size_t ncomp = 0, i, nseg = 0;
	uint64_t end = pos + size;
	uint32_t h;
	int ret;

	names = malloc(w->name_len + 1);
	comp = calloc(w->name_len + 2, sizeof(*comp));
	if (!names || !comp) {
		ret = oom(z);
		goto out;
	}
	memcpy(names, w->name, w->name_len + 1);
	if (w->optimizer)
		comp[ncomp++] = "optimizer";
	for (c = names;;) {
		char *e = strchr(c, '/');

		comp[ncomp++] = c;
		if (!e)
			break;
		*e = 0;
		c = e + 1;
	}
	tfs_spec_tensor(&s, w->name, w->name_len, stored_dtype(w), w->shape,
			w->ndim, w->at);
	tfs_spec_path(&s, comp, ncomp);
	tfs_spec_size(&s, size);
	if (z->from_memory) {
		tfs_spec_unreadable(&s,
				    "shard files: the model was read from "
				    "memory, so its weight files are not "
				    "found",
				    false);
	} else {
		/* the pieces of [pos, end) among the group's files */
		if (g->npaths > 64) {
			seg = calloc(g->npaths, sizeof(*seg));
			if (!seg) {
				ret = oom(z);
				goto out;
			}
		}
		for (i = 0; i < g->npaths && pos < end; i++) {
			const struct tj_file *f = &z->f[g->fpath + i];
			uint64_t k;

			if (pos >= f->start + f->size)
				continue;
			k = f->start + f->size - pos;
			if (k > end - pos)
				k = end - pos;
			seg[nseg].source = f->source;
			seg[nseg].offset = pos - f->start;
			seg[nseg].length = k;
			seg[nseg++].mem = NULL;
			pos += k;
		}
		if (nseg > 1) {
			tfs_spec_segments(&s, seg, nseg);
		} else if (nseg == 1) {
			tfs_spec_in(&s, seg[0].source);
			tfs_spec_stored(&s, seg[0].offset, seg[0].length);
		} else {
			/* an empty weight */
			tfs_spec_in(&s, g->npaths ? z->f[g->fpath].source : 0);
		}
	}
	ret = tfs_builder_add_tensor(z->b, &s, &h, z->d);
	if (!ret)
		ret = set_attrs(z, w, h);
out:
	if (seg != segs)
		free(seg);
	free(comp);
	free(names);
	return ret;
}

static int place_weights(struct tj *z)
{
	size_t gi, i;
	int ret;

	for (gi = 0; gi < z->ng; gi++) {
		struct tj_group *g = &z->g[gi];
		uint64_t pos = 0;

		for (i = g->first; i < g->first + g->count; i++) {
			struct tj_weight *w = &z->w[i];
			json_t *strs = NULL;
			uint64_t count, size;

			if (!tfs_shape_product(w->shape, w->ndim, &count))
				return tfs_diag_at(
					z->d, -EOVERFLOW, w->at,
					"weight '%s': shape: "
					"element count overflows",
					TFS_SHOWN(w->name, w->name_len));
			if (w->logical == TFS_DTYPE_STRING && !z->from_memory) {
				ret = string_size(z, w, pos, count, &size,
						  &strs);
				if (ret)
					return ret;
				if (json_object_set_new(z->strings, w->name,
							strs))
					return oom(z);
			} else if (w->logical == TFS_DTYPE_STRING) {
				size = 0;
			} else if (tfs_dtype_bytes(stored_dtype(w), count,
						   &size)) {
				return tfs_diag_at(
					z->d, -EOVERFLOW, w->at,
					"weight '%s': byte size "
					"overflows",
					TFS_SHOWN(w->name, w->name_len));
			}
			if (!z->from_memory &&
			    !tfs_range_ok(pos, size, g->total))
				return tfs_diag_at(
					z->d, -EBADMSG, w->at,
					"weight '%s': bytes %" PRIu64
					"..+%" PRIu64 " of group %zu run "
					"past the end of its files (%" PRIu64
					" bytes)",
					TFS_SHOWN(w->name, w->name_len), pos,
					size, gi, g->total);
			ret = add_weight(z, w, pos, size);
			if (ret)
				return ret;
			pos += size;
		}
		if (!z->from_memory && pos < g->total &&
		    tfs_builder_warn(z->b, g->at,
				     "weightsManifest[%zu]: %" PRIu64
				     " trailing bytes after the last weight",
				     gi, g->total - pos))
			return oom(z);
	}
	return 0;
}

static int set_info(struct tj *z, const char *label, const char *key)
{
	const char *v = json_string_value(json_object_get(z->meta, key));
	char text[256];

	if (!v)
		return 0;
	snprintf(text, sizeof(text), "%s", v);
	return tfs_info_xattr_printable(z->b, label, text) ? oom(z) : 0;
}

static int tj_load(const struct tfs_source *src, struct tfs_builder *b,
		   struct tfs_diag *d)
{
	struct tj z = {.src = src, .b = b, .d = d};
	struct tfs_json_token t;
	json_t *groups = NULL;
	size_t i;
	int ret;

	tfs_strmap_init(&z.names);
	z.meta = tfs_builder_metadata(b);
	z.strings = json_object();
	if (!z.strings) {
		ret = oom(&z);
		goto out;
	}
	z.from_memory = !src->path;
	if (src->size > TJ_FILE_MAX) {
		ret = tfs_diag_at(d, -E2BIG, 0,
				  "model.json: %" PRIu64 " bytes, above the "
				  "limit of %llu",
				  src->size, TJ_FILE_MAX);
		goto out;
	}
	tfs_json_init(&z.j, src->data, (size_t)src->size, 0,
		      TFS_JSON_MAX_DEPTH);
	ret = next(&z, &t);
	if (ret)
		goto out;
	if (t.kind == TFS_JSON_ARRAY) {
		/* weights_manifest.json: the bare manifest */
		ret = read_manifest(&z, &t);
	} else if (t.kind == TFS_JSON_OBJECT) {
		for (;;) {
			ret = next(&z, &t);
			if (ret || t.kind == TFS_JSON_OBJECT_END)
				break;
			if (tfs_json_eq(&t, "weightsManifest")) {
				ret = next(&z, &t);
				ret = ret ? ret : read_manifest(&z, &t);
			} else {
				ret = read_member(&z, &t);
			}
			if (ret)
				break;
		}
	} else {
		ret = tfs_diag_at(d, -EBADMSG, t.offset,
				  "model.json: not a JSON object");
	}
	ret = ret ? ret : next(&z, &t); /* the end (checked by the reader) */
	if (ret)
		goto out;
	if (!z.have_manifest) {
		ret = tfs_diag_at(d, -EBADMSG, 0,
				  "model.json: no weightsManifest (a topology "
				  "without weights)");
		goto out;
	}
	if (!z.from_memory) {
		ret = open_files(&z);
		if (ret)
			goto out;
	}
	ret = place_weights(&z);
	if (ret)
		goto out;
	groups = json_array();
	for (i = 0; groups && i < z.ng; i++) {
		json_t *o = json_object(), *p = json_array();
		size_t k;

		for (k = 0; p && k < z.g[i].npaths; k++)
			json_array_append_new(
				p, json_string(z.f[z.g[i].fpath + k].path));
		if (!o || !p || json_object_set_new(o, "paths", p) ||
		    json_object_set_new(
			    o, "weights",
			    json_integer((json_int_t)z.g[i].count)) ||
		    json_array_append_new(groups, o)) {
			json_decref(o);
			json_decref(groups);
			groups = NULL;
		}
	}
	if (!groups || json_object_set_new(z.meta, "weight_groups", groups)) {
		ret = oom(&z);
		goto out;
	}
	if (json_object_size(z.strings) &&
	    json_object_set(z.meta, "string_weights", z.strings)) {
		ret = oom(&z);
		goto out;
	}
	ret = set_info(&z, "generation", "format");
	ret = ret ? ret : set_info(&z, "generator", "generatedBy");
	ret = ret ? ret : set_info(&z, "converter", "convertedBy");
out:
	json_decref(z.strings);
	for (i = 0; i < z.nw; i++)
		free(z.w[i].name);
	free(z.w);
	free(z.g);
	for (i = 0; i < z.nf; i++)
		free(z.f[i].path);
	free(z.f);
	tfs_strmap_free(&z.names);
	return ret;
}

TFS_FORMAT(tfjs, "TensorFlow.js model (model.json + weight shards)",
	   .probe = tj_probe, .load = tj_load);
