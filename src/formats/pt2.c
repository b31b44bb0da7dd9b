// SPDX-License-Identifier: MIT
/*
 * PT2 archives (docs/formats/pt2.md): what torch.export.save and
 * AOTInductor's package write, a zip made by PyTorchFileWriter (stored
 * records, data 64-byte aligned) under one root folder: archive_format
 * ("pt2"), archive_version, models/<model>.json (the ExportedProgram
 * serde JSON), data/weights/<model>_weights_config.json and
 * data/constants/<model>_constants_config.json (each a PayloadConfig:
 * FQN -> payload record, is_param, use_pickle, tensor_meta), the payloads
 * data/weights/weight_<i> and data/constants/tensor_<i> (the raw bytes of
 * an untyped storage, shared by the views that alias it).  Every raw
 * payload tensor is a file named by its FQN, a view of its record through
 * common/torch.h: zero-copy when contiguous, gathered when strided, the
 * record's CRC-32 checked like a digest.  A legacy weights record
 * (data/weights/<model>.pt, a torch.save zip) is read by its reader under
 * a directory named after the model.  Pickled payloads (tensor
 * subclasses, script objects) and AOTInductor's compiled files are listed
 * in metadata.json, with each model's op counts and signature.
 *
 * Detection: a zip with a stored record <root>/archive_format holding
 * "pt2".
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "formats/common/torch.h"
#include "formats/common/zip_members.h"
#include "parse/zip.h"
#include "core/builder.h"
#include "core/checked.h"
#include "core/diag.h"
#include "core/format.h"
#include "core/names.h"
#include "core/source.h"

#define PT2_JSON_MAX (256u << 20) /* bytes of one JSON record parsed */
#define PT2_FORMAT "archive_format"
#define PT2_WEIGHTS "data/weights/"
#define PT2_CONSTANTS "data/constants/"
#define PT2_WCONF "_weights_config.json"
#define PT2_CCONF "_constants_config.json"

/* where the root folder's name ends: the archive_format record holds pt2 */
static bool format_record(const struct tfs_source *src,
			  const struct tfs_zip_entry *e, size_t *root)
{
	size_t n = sizeof(PT2_FORMAT) - 1;

	if (!tfs_zip_name_ends(e, PT2_FORMAT) ||
	    (e->name_len > n && e->name[e->name_len - n - 1] != '/') ||
	    e->method != TFS_ZIP_STORED || e->comp_size != 3 ||
	    memcmp(src->data + e->data_offset, "pt2", 3))
		return false;
	*root = e->name_len - n;
	return !memchr(e->name, '/', *root ? *root - 1 : 0);
}

static bool is_format(const struct tfs_zip_entry *e, const void *src)
{
	size_t root;

	return format_record(src, e, &root);
}

static int pt2_probe(const struct tfs_source *src)
{
	return tfs_zip_source_count(src, is_format, src) == 1 ? 100 : 0;
}

/* torch/_export/serde/schema.py ScalarType */
static enum tfs_dtype scalar_type(json_int_t v)
{
	switch (v) {
	case 1:
		return TFS_DTYPE_UINT8;
	case 2:
		return TFS_DTYPE_INT8;
	case 3:
		return TFS_DTYPE_INT16;
	case 4:
		return TFS_DTYPE_INT32;
	case 5:
		return TFS_DTYPE_INT64;
	case 6:
		return TFS_DTYPE_FLOAT16;
	case 7:
		return TFS_DTYPE_FLOAT32;
	case 8:
		return TFS_DTYPE_FLOAT64;
	case 9:
		return TFS_DTYPE_COMPLEX32;
	case 10:
		return TFS_DTYPE_COMPLEX64;
	case 11:
		return TFS_DTYPE_COMPLEX128;
	case 12:
		return TFS_DTYPE_BOOL;
	case 13:
		return TFS_DTYPE_BFLOAT16;
	case 28:
		return TFS_DTYPE_UINT16;
	case 29:
		return TFS_DTYPE_FLOAT8_E4M3;
	case 30:
		return TFS_DTYPE_FLOAT8_E5M2;
	case 31:
		return TFS_DTYPE_FLOAT8_E4M3FNUZ;
	case 32:
		return TFS_DTYPE_FLOAT8_E5M2FNUZ;
	default:
		return TFS_DTYPE_INVALID;
	}
}

struct pt2_ctx {
	const struct tfs_source *src;
	struct tfs_builder *b;
	struct tfs_diag *d;
	struct tfs_zip_entry *v; /* every record, in directory order */
	size_t n, root;		 /* records; the root folder's length */
	const char *root_name;	 /* the root folder ("model/") */
	struct tfs_torch t;
	json_t *models, *skipped, *members;
	unsigned nmodels;
};

/* the record named <root>@a@b, or NULL */
static const struct tfs_zip_entry *
record(const struct pt2_ctx *c, const char *a, const char *b, size_t blen)
{
	size_t al = strlen(a), i;

	for (i = 0; i < c->n; i++) {
		const struct tfs_zip_entry *e = &c->v[i];

		if (e->name_len == c->root + al + blen &&
		    !memcmp(e->name + c->root, a, al) &&
		    !memcmp(e->name + c->root + al, b, blen))
			return e;
	}
	return NULL;
}

static int json_record(struct pt2_ctx *c, const struct tfs_zip_entry *e,
		       json_t **out)
{
	json_error_t err;

	if (e->method != TFS_ZIP_STORED)
		return tfs_diag_at(c->d, -ENOTSUP, e->local_offset,
				   "zip: record '%s' is compressed (method "
				   "%u)",
				   TFS_SHOWN(e->name, e->name_len), e->method);
	if (e->comp_size > PT2_JSON_MAX)
		return tfs_diag_at(c->d, -E2BIG, e->data_offset,
				   "'%s': %llu bytes of JSON (at most 256 MiB "
				   "are read)",
				   TFS_SHOWN(e->name, e->name_len),
				   (unsigned long long)e->comp_size);
	*out = json_loadb((const char *)c->src->data + e->data_offset,
			  (size_t)e->comp_size, 0, &err);
	if (!*out)
		return tfs_diag_at(
			c->d, -EBADMSG, e->data_offset + (uint64_t)err.position,
			"'%s': %s", TFS_SHOWN(e->name, e->name_len), err.text);
	return 0;
}

/* a SymInt that must be a plain int ({"as_int": n}, n >= 0) */
static int as_int(struct pt2_ctx *c, const struct tfs_zip_entry *cf,
		  const char *fqn, const char *what, json_t *j, uint64_t *out)
{
	json_t *v = json_object_get(j, "as_int");

	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return tfs_diag_at(
			c->d,
			json_object_get(j, "as_expr") ? -ENOTSUP : -EBADMSG,
			cf->data_offset,
			"'%s': '%s': %s is not a non-negative "
			"int",
			TFS_SHOWN(cf->name, cf->name_len), fqn, what);
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

/* one PayloadMeta of config record @cf: a view of its payload record */
static int payload(struct pt2_ctx *c, const struct tfs_zip_entry *cf,
		   const char *dir, const char *model, const char *fqn,
		   json_t *meta)
{
	uint64_t dims[2 * TFS_TORCH_MAX_DIMS], off = 0;
	json_t *tm = json_object_get(meta, "tensor_meta"), *sz, *st;
	const char *path =
		json_string_value(json_object_get(meta, "path_name"));
	const struct tfs_zip_entry *pe;
	enum tfs_dtype dt;
	char *name = NULL;
	size_t i, nd;
	uint32_t si;
	int ret;

	if (!path)
		return tfs_diag_at(c->d, -EBADMSG, cf->data_offset,
				   "'%s': '%s': no path_name",
				   TFS_SHOWN(cf->name, cf->name_len), fqn);
	if (json_is_true(json_object_get(meta, "use_pickle")) ||
	    !json_is_object(tm))
		return json_object_set_new(c->skipped, fqn,
					   json_pack("{s:s,s:s}", "record",
						     path, "why",
						     "pickled payload"))
			       ? tfs_diag_oom(c->d)
			       : 0;
	pe = record(c, dir, path, strlen(path));
	if (!pe)
		return tfs_diag_at(c->d, -EBADMSG, cf->data_offset,
				   "'%s': '%s': no record %s%s",
				   TFS_SHOWN(cf->name, cf->name_len), fqn, dir,
				   path);
	dt = scalar_type(json_integer_value(json_object_get(tm, "dtype")));
	sz = json_object_get(tm, "sizes");
	st = json_object_get(tm, "strides");
	nd = json_array_size(sz);
	if (dt == TFS_DTYPE_INVALID || !json_is_array(sz) ||
	    json_array_size(st) != nd || nd > TFS_TORCH_MAX_DIMS)
		return tfs_diag_at(c->d, -EBADMSG, cf->data_offset,
				   "'%s': '%s': tensor_meta: dtype %lld, %zu "
				   "sizes and %zu strides (at most %u)",
				   TFS_SHOWN(cf->name, cf->name_len), fqn,
				   (long long)json_integer_value(
					   json_object_get(tm, "dtype")),
				   nd, json_array_size(st), TFS_TORCH_MAX_DIMS);
	ret = 0;
	for (i = 0; !ret && i < nd; i++) {
		ret = as_int(c, cf, fqn, "a size", json_array_get(sz, i),
			     &dims[i]);
		if (!ret)
			ret = as_int(c, cf, fqn, "a stride",
				     json_array_get(st, i), &dims[nd + i]);
	}
	if (!ret && json_object_get(tm, "storage_offset"))
		ret = as_int(c, cf, fqn, "storage_offset",
			     json_object_get(tm, "storage_offset"), &off);
	if (!ret)
		ret = tfs_torch_zip_storage(&c->t, pe->name + c->root,
					    pe->name_len - c->root, dt, pe,
					    &si);
	if (ret)
		return ret;
	if (c->nmodels > 1) {
		name = malloc(strlen(model) + strlen(fqn) + 2);
		if (!name)
			return tfs_diag_oom(c->d);
		sprintf(name, "%s/%s", model, fqn);
	}
	ret = tfs_torch_view(&c->t, name ? name : fqn,
			     strlen(name ? name : fqn), si, off, (uint32_t)nd,
			     dims,
			     json_is_true(json_object_get(meta, "is_param")),
			     cf->data_offset);
	free(name);
	return ret;
}

/* a PayloadConfig record: every payload of model @model */
static int payload_config(struct pt2_ctx *c, const struct tfs_zip_entry *cf,
			  const char *dir, const char *model)
{
	json_t *j = NULL, *cfg, *meta;
	const char *fqn;
	int ret = json_record(c, cf, &j);

	if (ret)
		return ret;
	cfg = json_object_get(j, "config");
	if (!json_is_object(cfg))
		ret = tfs_diag_at(c->d, -EBADMSG, cf->data_offset,
				  "'%s': no object 'config'",
				  TFS_SHOWN(cf->name, cf->name_len));
	json_object_foreach(cfg, fqn, meta)
	{
		if (ret)
			break;
		ret = payload(c, cf, dir, model, fqn, meta);
	}
	json_decref(j);
	return ret;
}

/* one more of @k in @counts; 0, or -1 as jansson fails */
static int count_key(json_t *counts, const char *k)
{
	json_int_t n = json_integer_value(json_object_get(counts, k));

	return json_object_set_new(counts, k, json_integer(n + 1));
}

/* op counts by target, the signature's kinds: models/<model>.json */
static int model_facts(struct pt2_ctx *c, const char *model, json_t *out)
{
	const struct tfs_zip_entry *e;
	json_t *j = NULL, *gm, *nodes, *specs, *ops, *kinds, *x;
	char file[512];
	const char *k;
	size_t i;
	int n, ret;

	n = snprintf(file, sizeof(file), "%s.json", model);
	e = record(c, "models/", file, (size_t)n);
	if (!e || n >= (int)sizeof(file))
		return 0;
	ret = json_record(c, e, &j);
	if (ret)
		return ret;
	gm = json_object_get(j, "graph_module");
	nodes = json_object_get(json_object_get(gm, "graph"), "nodes");
	specs = json_object_get(json_object_get(gm, "signature"),
				"input_specs");
	ops = json_object();
	kinds = json_object();
	ret = !ops || !kinds;
	json_array_foreach(nodes, i, x)
	{
		k = json_string_value(json_object_get(x, "target"));
		if (!ret && k)
			ret = count_key(ops, k);
	}
	/* each input spec is a union: its one key says its kind */
	json_array_foreach(specs, i, x)
	{
		void *it = json_object_iter(x);

		k = it ? json_object_iter_key(it) : NULL;
		if (!ret && k)
			ret = count_key(kinds, k);
	}
	if (!ret)
		ret = json_object_set_new(out, "ops", ops) ||
		      json_object_set_new(out, "inputs", kinds) ||
		      json_object_set_new(
			      out, "outputs",
			      json_integer((json_int_t)json_array_size(
				      json_object_get(
					      json_object_get(gm, "signature"),
					      "output_specs")))) ||
		      json_object_set_new(out, "schema_version",
					  json_incref(json_object_get(
						  j, "schema_version")));
	else {
		json_decref(ops);
		json_decref(kinds);
	}
	json_decref(j);
	return ret ? tfs_diag_oom(c->d) : 0;
}

/* the models: each with a weights config (or a legacy weights record) */
static int models(struct pt2_ctx *c)
{
	size_t wl = sizeof(PT2_WEIGHTS) - 1, cl = sizeof(PT2_WCONF) - 1, i;
	char model[256];
	int pass, ret = 0;

	/* count first: names get the model's name when there are several */
	for (pass = 0; pass < 2 && !ret; pass++) {
		for (i = 0; !ret && i < c->n; i++) {
			const struct tfs_zip_entry *e = &c->v[i], *cc;
			const char *p = e->name + c->root;
			size_t n = e->name_len - c->root, ml;
			bool legacy;
			json_t *m;

			if (n <= wl || memcmp(p, PT2_WEIGHTS, wl) ||
			    memchr(p + wl, '/', n - wl))
				continue;
			legacy = n > wl + 3 && !memcmp(p + n - 3, ".pt", 3);
			if (!legacy &&
			    (n <= wl + cl || memcmp(p + n - cl, PT2_WCONF, cl)))
				continue;
			ml = n - wl - (legacy ? 3 : cl);
			if (ml >= sizeof(model) || memchr(p + wl, 0, ml))
				continue;
			memcpy(model, p + wl, ml);
			model[ml] = 0;
			if (!pass) {
				c->nmodels++;
				continue;
			}
			m = json_object();
			if (!m || json_object_set_new(c->models, model, m))
				return tfs_diag_oom(c->d);
			if (legacy) {
				ret = tfs_zip_member_load(c->b, e, model, model,
							  NULL, c->d);
				json_object_set_new(m, "weights",
						    json_string("legacy .pt"));
				continue;
			}
			ret = payload_config(c, e, PT2_WEIGHTS, model);
			snprintf(model + ml, sizeof(model) - ml, "%s",
				 PT2_CCONF);
			cc = record(c, PT2_CONSTANTS, model, strlen(model));
			model[ml] = 0;
			if (!ret && cc)
				ret = payload_config(c, cc, PT2_CONSTANTS,
						     model);
			if (!ret)
				ret = model_facts(c, model, m);
		}
	}
	return ret;
}

static int pt2_load(const struct tfs_source *src, struct tfs_builder *b,
		    struct tfs_diag *d)
{
	struct pt2_ctx c = {.src = src, .b = b, .d = d};
	const struct tfs_zip_entry *ver;
	struct tfs_zip z;
	struct tfs_zip_iter it;
	struct tfs_zip_entry e;
	json_t *pt2 = NULL;
	bool found = false;
	int ret;

	ret = tfs_torch_init(&c.t, src, b, d);
	c.models = json_object();
	c.skipped = json_object();
	c.members = json_array();
	if (!ret && (!c.models || !c.skipped || !c.members))
		ret = tfs_diag_oom(d);
	if (!ret)
		ret = tfs_zip_open(&z, src->data, src->size, d);
	if (ret)
		goto out;
	/* at most one record per 46 bytes of directory: bounded */
	c.v = calloc((size_t)z.count ? (size_t)z.count : 1, sizeof(*c.v));
	if (!c.v) {
		ret = tfs_diag_oom(d);
		goto out;
	}
	tfs_zip_iter_init(&it);
	while ((ret = tfs_zip_next(&z, &it, &e, d)) == 1) {
		if (c.n == z.count)
			break;
		if (!found && format_record(src, &e, &c.root)) {
			found = true;
			c.root_name = e.name;
		}
		c.v[c.n++] = e;
	}
	if (ret < 0)
		goto out;
	if (!found) {
		ret = tfs_diag_at(d, -EBADMSG, z.cd_offset,
				  "zip: no record archive_format holding "
				  "'pt2'");
		goto out;
	}
	ret = models(&c);
	if (!ret)
		ret = tfs_torch_finish(&c.t, NULL);
	if (ret)
		goto out;
	ver = record(&c, "archive_version", "", 0);
	pt2 = json_pack("{s:s#,s:O,s:O}", "root", c.root_name, (int)c.root,
			"models", c.models, "not_read", c.skipped);
	if (!pt2 ||
	    (ver && ver->method == TFS_ZIP_STORED && ver->comp_size < 32 &&
	     json_object_set_new(
		     pt2, "archive_version",
		     json_stringn_nocheck((const char *)src->data +
						  ver->data_offset,
					  (size_t)ver->comp_size))) ||
	    json_object_set(tfs_builder_metadata(b), "pt2", pt2))
		ret = tfs_diag_oom(d);
out:
	json_decref(pt2);
	json_decref(c.models);
	json_decref(c.skipped);
	json_decref(c.members);
	tfs_torch_free(&c.t);
	free(c.v);
	return ret;
}

TFS_FORMAT(pt2, "PT2 archive (torch.export.save, AOTInductor package)",
	   .probe = pt2_probe, .load = pt2_load);
