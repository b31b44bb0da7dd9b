// SPDX-License-Identifier: MIT
/*
 * HDF5 (specs/hdf5.md): Keras / tf.keras weights, Hugging Face
 * tf_model.h5, scientific data.  Our own bounded reader (src/parse/hdf5)
 * walks the group graph from the root through hard links; every dataset
 * is a tensor at its HDF5 path (explicit path components: '.' in a name
 * never splits it), groups are directories.
 *
 *   - contiguous datasets are served zero-copy from the file, compact ones
 *     from the bytes inside their object header, and so is a chunked
 *     dataset stored as one unfiltered chunk covering it exactly;
 *   - other chunked datasets: their chunk index (any of the six) and
 *     filter pipeline are read and checked in full and become the grid of
 *     the chunked codec (codec.h: deflate, shuffle, fletcher32, LZF, edge
 *     chunks cropped, unwritten chunks as the fill value); unallocated
 *     contiguous data is a grid of unwritten chunks;
 *   - datatypes as the spec's table 7.1: integers and IEEE floats of every
 *     width and byte order (byte_order=big as stored), bool enums, complex
 *     compounds, bfloat16 (a custom float or Keras 3's opaque + dtype
 *     attribute), other compounds / fixed strings / opaque as void<N>
 *     records, arrays as their base type with the array dims appended;
 *     variable-length data into metadata.json;
 *   - attributes: all in metadata.json ("attributes", by path), as
 *     user.tensorfs.hdf5.attr.NAME where name and value are short and
 *     printable; Keras' model_config / training_config parsed as JSON;
 *   - a dataset name "w:0" (TensorFlow's variable suffix) is shown as "w"
 *     when no other link of its group is called "w"; the stored name
 *     keeps ":0"; Keras 2's load order is manifest.json "keras_order";
 *   - soft and external links are never followed (listed in metadata); a
 *     hard link back to a group already visited is not descended.
 *
 * A malformed structure (-EBADMSG) fails the mount, naming the structure
 * and its byte offset; a dataset that uses something not supported
 * (-ENOTSUP: an unknown filter, a virtual layout...) is listed unreadable
 * with the reason and the rest mounts.
 *
 * Why one file of this size: the HDF5 object model (groups, datasets,
 * datatypes, dataspaces, layouts, filters, attributes) has to be mapped to
 * tensors in one place; the file format itself (superblocks, object
 * headers, B-trees, heaps, chunk indexes) is parse/hdf5/.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strbuf.h"
#include "parse/hdf5/h5.h"
#include "core/builder.h"
#include "core/checked.h"
#include "codec/codec.h"
#include "core/cursor.h"
#include "core/diag.h"
#include "core/dtype.h"
#include "core/format.h"
#include "core/names.h"
#include "core/source.h"
#include "core/values.h"

#define HX_MAX_DEPTH 256
#define HX_MAX_OBJECTS 1000000u
#define HX_XATTR_MAX 256
#define HX_ATTR_ELEMS (1u << 20) /* values per attribute into JSON */
#define HX_META_MAX (64ull << 20)
#define HX_MAX_GRID (16u << 20)	 /* chunks in one dataset's grid */
#define HX_FILL_SLAB (64u << 20) /* unallocated data: bytes per chunk */

struct hx_link {
	char *name; /* NUL-terminated copy */
	size_t len;
	unsigned type;
	uint64_t addr;
	char *target, *obj;
	uint64_t at;
};

struct hx_ctx {
	const struct tfs_source *src;
	struct tfs_builder *b;
	struct tfs_diag *d;
	struct h5_file f;
	struct h5_set groups; /* object headers of groups visited */
	const char *comp[HX_MAX_DEPTH + 1];
	unsigned depth;
	struct tfs_strbuf path; /* "a/b/c" of the current object */
	uint64_t objects;
	uint64_t meta_bytes;
	json_t *attrs, *links, *not_exposed, *vlen, *summary_filters;
	json_t *group_paths; /* "<object header address>": "/path" */
	uint64_t datasets, params;
	uint64_t unreadable;
	int verr;		   /* a failure inside hx_value */
	bool top_vars, top_layers; /* Keras 3: top-level vars/, layers/ */
};

/*
 * The signature at 0, 512, 1024...: in a local file up to 2^30; in a
 * remote one only inside its first 64 KiB, so that detection fetches
 * nothing beyond the first chunk (a user block past that is not found).
 */
static int hx_probe(const struct tfs_source *src)
{
	int64_t at = h5_find_signature(src->data, src->size,
				       src->ops ? 64u << 10 : UINT64_MAX);

	if (at < 0)
		return 0;
	return at == 0 ? 100 : 60;
}

/* ---- paths -------------------------------------------------------------- */

static int hx_path_push(struct hx_ctx *z, const char *name, size_t *saved)
{
	*saved = z->path.len;
	tfs_strbuf_sep(&z->path, '/');
	tfs_strbuf_puts(&z->path, name);
	return z->path.failed ? tfs_diag_oom(z->d) : 0;
}

static const char *hx_path(const struct hx_ctx *z)
{
	return z->path.len ? z->path.p : "/";
}

/* ---- attribute values to JSON -------------------------------------------- */

static bool hx_ieee(const struct h5_type *t, unsigned size, unsigned e,
		    unsigned m, uint32_t bias)
{
	return t->cls == H5T_FLOAT && t->size == size && t->bit_off == 0 &&
	       t->prec == 8 * size && ((t->bits >> 8) & 0xff) == 8 * size - 1 &&
	       t->eloc == m && t->esize == e && t->mloc == 0 && t->msize == m &&
	       t->bias == bias && ((t->bits >> 4) & 3) == 2;
}

static enum tfs_dtype hx_float(const struct h5_type *t)
{
	if (hx_ieee(t, 2, 5, 10, 15))
		return TFS_DTYPE_FLOAT16;
	if (hx_ieee(t, 2, 8, 7, 127))
		return TFS_DTYPE_BFLOAT16;
	if (hx_ieee(t, 4, 8, 23, 127))
		return TFS_DTYPE_FLOAT32;
	if (hx_ieee(t, 8, 11, 52, 1023))
		return TFS_DTYPE_FLOAT64;
	return TFS_DTYPE_INVALID;
}

static json_t *hx_real(double v)
{
	if (isnan(v))
		return json_string("NaN");
	if (isinf(v))
		return json_string(v > 0 ? "Infinity" : "-Infinity");
	return json_real(v);
}

static uint64_t hx_ld(const uint8_t *p, unsigned n, bool be)
{
	return be ? tfs_load_be(p, n) : tfs_load_le(p, n);
}

/* a UTF-8 JSON string of @n bytes, or the bytes as "\xNN" escapes */
static json_t *hx_str(const uint8_t *p, size_t n)
{
	json_t *s = json_stringn((const char *)p, n);
	char *e;
	size_t i, k = 0;

	if (s)
		return s;
	e = malloc(n * 4 + 1);
	if (!e)
		return NULL;
	for (i = 0; i < n; i++) {
		if (p[i] >= 0x20 && p[i] < 0x7f) {
			e[k++] = (char)p[i];
		} else {
			snprintf(e + k, 5, "\\x%02x", p[i]);
			k += 4;
		}
	}
	s = json_stringn(e, k);
	free(e);
	return s;
}

static json_t *hx_value(struct hx_ctx *z, const struct h5_type *t,
			const uint8_t *p, uint64_t at, unsigned depth);

static json_t *hx_fixed_string(const struct h5_type *t, const uint8_t *p)
{
	size_t n = t->size;
	unsigned pad = t->bits & 15;
	const uint8_t *nul;

	if (pad == 0 && (nul = memchr(p, 0, n)))
		n = (size_t)(nul - p);
	while (n && (p[n - 1] == 0 || (pad == 2 && p[n - 1] == ' ')))
		n--;
	return hx_str(p, n);
}

static json_t *hx_value(struct hx_ctx *z, const struct h5_type *t,
			const uint8_t *p, uint64_t at, unsigned depth)
{
	json_t *v;
	uint64_t u;
	uint32_t i;

	if (depth > H5_TYPE_DEPTH)
		return json_null();
	switch (t->cls) {
	case H5T_FIXED:
	case H5T_BITFIELD:
		if (t->size > 8)
			break;
		u = hx_ld(p, t->size, t->be);
		if (t->sign && t->size < 8 && (u >> (8 * t->size - 1)))
			u |= ~0ull << (8 * t->size);
		if (t->sign || u <= INT64_MAX)
			return json_integer((json_int_t)u);
		return json_real((double)u);
	case H5T_FLOAT: {
		enum tfs_dtype dt = hx_float(t);
		double fv;

		if (dt &&
		    !tfs_values_decode(dt, t->be ? TFS_VALUES_BIG_ENDIAN : 0, p,
				       1, &fv))
			return hx_real(fv);
		break;
	}
	case H5T_STRING:
		return hx_fixed_string(t, p);
	case H5T_ENUM:
		for (i = 0; i < t->nmemb; i++)
			if (!memcmp(t->enum_values + (uint64_t)i * t->size, p,
				    t->size))
				return json_string(t->memb[i].name);
		return hx_value(z, t->base, p, at, depth + 1);
	case H5T_COMPOUND:
		v = json_object();
		for (i = 0; v && i < t->nmemb; i++) {
			json_t *m =
				hx_value(z, t->memb[i].type,
					 p + t->memb[i].offset, at, depth + 1);

			if (!m || json_object_set_new(v, t->memb[i].name, m)) {
				json_decref(v);
				return NULL;
			}
		}
		return v;
	case H5T_ARRAY: {
		uint64_t n = t->size / (t->base->size ? t->base->size : 1);

		v = json_array();
		for (u = 0; v && u < n && u < HX_ATTR_ELEMS; u++)
			if (json_array_append_new(
				    v,
				    hx_value(z, t->base, p + u * t->base->size,
					     at, depth + 1))) {
				json_decref(v);
				return NULL;
			}
		return v;
	}
	case H5T_VLEN: {
		const uint8_t *q;
		uint64_t len;
		bool str = (t->bits & 15) == 1;
		uint32_t unit = str ? 1 : t->base->size;

		z->verr = h5_vlen_get(&z->f, p, at, unit, &q, &len);
		if (z->verr)
			return NULL;
		if (str)
			return hx_str(q, (size_t)len);
		v = json_array();
		for (u = 0; v && unit && u < len / unit && u < HX_ATTR_ELEMS;
		     u++)
			if (json_array_append_new(v, hx_value(z, t->base,
							      q + u * unit, at,
							      depth + 1))) {
				json_decref(v);
				return NULL;
			}
		return v;
	}
	default:
		break;
	}
	return json_string(h5_class_name(t->cls));
}

/* nested lists over @dims of @rank */
static json_t *hx_values(struct hx_ctx *z, const struct h5_type *t,
			 const struct h5_space *s, const uint8_t **p,
			 uint64_t at, unsigned dim, uint64_t *budget)
{
	json_t *v;
	uint64_t i;

	if (dim == s->rank) {
		json_t *e;

		if (!*budget)
			return json_null();
		(*budget)--;
		e = hx_value(z, t, *p, at, 0);
		*p += t->size;
		return e;
	}
	v = json_array();
	for (i = 0; v && i < s->dims[dim]; i++) {
		json_t *e = hx_values(z, t, s, p, at, dim + 1, budget);

		if (!e || json_array_append_new(v, e)) {
			json_decref(v);
			return NULL;
		}
	}
	return v;
}

/* a whole attribute or vlen dataset: NULL with *err set on failure */
static json_t *hx_space_values(struct hx_ctx *z, const struct h5_type *t,
			       const struct h5_space *s, const uint8_t *p,
			       uint64_t at)
{
	uint64_t budget = HX_ATTR_ELEMS;

	if (s->kind == H5_SPACE_NULL)
		return json_null();
	if (s->nelem > HX_ATTR_ELEMS)
		return json_pack("{s:b,s:I}", "truncated", 1, "elements",
				 (json_int_t)s->nelem);
	return hx_values(z, t, s, &p, at, 0, &budget);
}

/* ---- attributes ------------------------------------------------------------
 */

struct hx_attr_arg {
	struct hx_ctx *z;
	json_t *obj; /* name -> value */
};

static int hx_attr(void *arg, const struct h5_attr *a)
{
	struct hx_attr_arg *x = arg;
	struct hx_ctx *z = x->z;
	json_t *v;

	if (z->meta_bytes > HX_META_MAX) {
		v = json_pack("{s:b}", "truncated", 1);
	} else {
		z->verr = 0;
		v = hx_space_values(z, a->type, &a->space, a->data, a->at);
		if (!v && z->verr)
			return z->verr;
		z->meta_bytes += a->data_len + a->name_len + 16;
	}
	if (!v)
		return tfs_diag_oom(z->d);
	if (json_object_setn_new(x->obj, a->name, a->name_len, v))
		return tfs_diag_oom(z->d);
	return 0;
}

/* Keras splits long attributes: <name>0, <name>1... when <name> is absent */
static void hx_join_split(json_t *obj, const char *name)
{
	char key[64];
	json_t *all, *part;
	unsigned i;

	if (json_object_get(obj, name))
		return;
	all = json_array();
	for (i = 0; all; i++) {
		snprintf(key, sizeof(key), "%s%u", name, i);
		part = json_object_get(obj, key);
		if (!part)
			break;
		if (json_is_array(part))
			json_array_extend(all, part);
		else
			json_array_append(all, part);
	}
	if (all && i > 0)
		json_object_set(obj, name, all);
	json_decref(all);
}

/* parse JSON text attributes (model_config...) in place */
static void hx_parse_json_attr(json_t *obj, const char *name)
{
	json_t *v = json_object_get(obj, name), *p;

	if (!json_is_string(v))
		return;
	p = json_loadb(json_string_value(v), json_string_length(v), 0, NULL);
	if (p)
		json_object_set_new(obj, name, p);
}

static bool hx_printable(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f)
			return false;
	return true;
}

/* short printable attributes as xattrs user.tensorfs.hdf5.attr.NAME */
static int hx_attr_xattrs(struct hx_ctx *z, uint32_t h, json_t *obj)
{
	const char *k;
	json_t *v;
	char key[HX_XATTR_MAX + 32];

	json_object_foreach(obj, k, v)
	{
		char *text = NULL;
		const char *s;
		size_t n;
		int ret;

		if (strlen(k) > HX_XATTR_MAX || !hx_printable(k, strlen(k)))
			continue;
		if (json_is_string(v)) {
			s = json_string_value(v);
			n = json_string_length(v);
		} else {
			text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
			if (!text)
				return tfs_diag_oom(z->d);
			s = text;
			n = strlen(text);
		}
		ret = 0;
		if (n <= HX_XATTR_MAX && hx_printable(s, n)) {
			snprintf(key, sizeof(key), "hdf5.attr.%s", k);
			ret = tfs_builder_set_xattr(z->b, h, key, s, n);
		}
		free(text);
		if (ret)
			return tfs_diag_oom(z->d);
	}
	return 0;
}

/* the attributes of @oh into metadata "attributes"/<path>; *out borrowed */
static int hx_attrs(struct hx_ctx *z, const struct h5_ohdr *oh, json_t **out)
{
	struct hx_attr_arg x = {.z = z};
	int ret;

	*out = NULL;
	x.obj = json_object();
	if (!x.obj)
		return tfs_diag_oom(z->d);
	ret = h5_attrs(&z->f, oh, hx_attr, &x);
	if (ret == -ENOTSUP) {
		/* shared attribute parts: keep the mount, say so */
		ret = tfs_builder_warn(
			      z->b, z->d ? z->d->offset : TFS_NO_OFFSET,
			      "%s: attributes not read: %s", hx_path(z),
			      z->d ? z->d->msg : "not supported")
			      ? tfs_diag_oom(z->d)
			      : 0;
		tfs_diag_clear(z->d);
	}
	if (ret) {
		json_decref(x.obj);
		return ret;
	}
	hx_join_split(x.obj, "layer_names");
	hx_join_split(x.obj, "weight_names");
	hx_parse_json_attr(x.obj, "model_config");
	hx_parse_json_attr(x.obj, "training_config");
	if (json_object_size(x.obj) == 0) {
		json_decref(x.obj);
		return 0;
	}
	if (json_object_set_new(z->attrs, hx_path(z), x.obj))
		return tfs_diag_oom(z->d);
	*out = x.obj;
	return 0;
}

/* ---- datasets ------------------------------------------------------------ */

struct hx_dtype {
	enum tfs_dtype dtype;
	uint32_t record; /* void: bytes */
	const char *cls; /* user.tensorfs.hdf5.class, or NULL */
	bool be;
	unsigned extra; /* array dims appended */
	uint64_t edims[H5_MAX_RANK];
	char desc[48];
};

static enum tfs_dtype hx_int(uint32_t size, bool sign)
{
	switch (size) {
	case 1:
		return sign ? TFS_DTYPE_INT8 : TFS_DTYPE_UINT8;
	case 2:
		return sign ? TFS_DTYPE_INT16 : TFS_DTYPE_UINT16;
	case 4:
		return sign ? TFS_DTYPE_INT32 : TFS_DTYPE_UINT32;
	case 8:
		return sign ? TFS_DTYPE_INT64 : TFS_DTYPE_UINT64;
	}
	return TFS_DTYPE_INVALID;
}

static bool hx_is_bool(const struct h5_type *t)
{
	return t->cls == H5T_ENUM && t->size == 1 && t->base->sign &&
	       t->nmemb == 2 && !strcmp(t->memb[0].name, "FALSE") &&
	       !strcmp(t->memb[1].name, "TRUE") && t->enum_values[0] == 0 &&
	       t->enum_values[1] == 1;
}

/* the tensorfs dtype of an element type (not vlen, time, reference) */
static void hx_map(const struct h5_type *t, bool keras_bf16, struct hx_dtype *o)
{
	memset(o, 0, sizeof(*o));
	o->record = t->size;
	switch (t->cls) {
	case H5T_FIXED:
		o->be = t->be && t->size > 1;
		if (t->bit_off == 0 && t->prec == 8 * t->size)
			o->dtype = hx_int(t->size, t->sign);
		break;
	case H5T_BITFIELD:
		o->be = t->be && t->size > 1;
		o->dtype = hx_int(t->size, false);
		o->cls = "bitfield";
		break;
	case H5T_FLOAT:
		o->be = t->be && t->size > 1;
		o->dtype = hx_float(t);
		if (!o->dtype) {
			o->cls = "floating-point";
			snprintf(o->desc, sizeof(o->desc), "float%u_e%um%u",
				 t->prec, t->esize, t->msize);
		}
		break;
	case H5T_ENUM:
		o->cls = "enumeration";
		if (hx_is_bool(t)) {
			o->dtype = TFS_DTYPE_BOOL;
			o->cls = NULL;
		} else {
			o->be = t->base->be && t->size > 1;
			o->dtype = hx_int(t->size, t->base->sign);
		}
		break;
	case H5T_COMPOUND:
		o->cls = "compound";
		if (t->nmemb == 2 && !strcmp(t->memb[0].name, "r") &&
		    !strcmp(t->memb[1].name, "i") && t->memb[0].offset == 0 &&
		    t->memb[1].offset == t->size / 2 &&
		    t->memb[0].type->size == t->size / 2) {
			enum tfs_dtype a = hx_float(t->memb[0].type);
			enum tfs_dtype b = hx_float(t->memb[1].type);

			if (a == b && a == TFS_DTYPE_FLOAT32)
				o->dtype = TFS_DTYPE_COMPLEX64;
			else if (a == b && a == TFS_DTYPE_FLOAT64)
				o->dtype = TFS_DTYPE_COMPLEX128;
			else if (a == b && a == TFS_DTYPE_FLOAT16)
				o->dtype = TFS_DTYPE_COMPLEX32;
			if (o->dtype) {
				o->cls = NULL;
				o->be = t->memb[0].type->be;
			}
		}
		break;
	case H5T_STRING:
		o->cls = "string";
		break;
	case H5T_OPAQUE:
		o->cls = "opaque";
		if (keras_bf16 && t->size == 2) {
			o->dtype = TFS_DTYPE_BFLOAT16;
			o->cls = NULL;
		}
		break;
	case H5T_ARRAY: {
		unsigned i;

		hx_map(t->base, false, o);
		o->record = t->base->size;
		if (!o->cls)
			o->cls = "array";
		o->extra = t->arank;
		for (i = 0; i < t->arank; i++)
			o->edims[i] = t->adims[i];
		return;
	}
	default:
		break;
	}
	if (!o->dtype)
		o->dtype = TFS_DTYPE_VOID;
}

static int hx_not_exposed(struct hx_ctx *z, const char *why)
{
	if (json_object_set_new(z->not_exposed, hx_path(z), json_string(why)))
		return tfs_diag_oom(z->d);
	return 0;
}

/* variable-length datasets: decoded values into metadata.json */
static int hx_vlen_dataset(struct hx_ctx *z, const struct h5_type *t,
			   const struct h5_space *s, const struct h5_layout *l)
{
	struct tfs_cursor c;
	const uint8_t *p;
	uint64_t bytes = s->nelem * 16ull, at;
	json_t *v;
	int ret;

	if (l->cls == H5_COMPACT) {
		p = l->compact;
		at = l->compact_at;
		if (l->compact_size < bytes)
			return tfs_diag_at(z->d, -EBADMSG, l->at,
					   "dataset %s: compact data of %u "
					   "bytes for %llu elements",
					   hx_path(z), l->compact_size,
					   (unsigned long long)s->nelem);
	} else if (l->cls == H5_CONTIGUOUS && l->addr != H5_UNDEF) {
		ret = h5_span(&z->f, l->addr, bytes, "variable-length data",
			      l->at, &c);
		if (ret)
			return ret;
		p = c.p;
		at = c.base;
	} else {
		return hx_not_exposed(z, "variable-length data not stored "
					 "contiguously");
	}
	if (t->size != 16 || z->f.so != 8)
		return hx_not_exposed(z, "variable-length elements of an "
					 "unexpected size");
	z->verr = 0;
	v = hx_space_values(z, t, s, p, at);
	if (!v)
		return z->verr ? z->verr : tfs_diag_oom(z->d);
	if (json_object_set_new(z->vlen, hx_path(z), v))
		return tfs_diag_oom(z->d);
	return 0;
}

static const char *hx_filters_text(const struct h5_pipeline *pl, char *buf,
				   size_t len)
{
	size_t k = 0;
	unsigned i;

	buf[0] = 0;
	for (i = 0; i < pl->n && k < len; i++) {
		const char *n = h5_filter_name(pl->f[i].id);
		int w;

		if (n)
			w = snprintf(buf + k, len - k, "%s%s", i ? "," : "", n);
		else
			w = snprintf(buf + k, len - k, "%s%u", i ? "," : "",
				     pl->f[i].id);
		if (w < 0)
			break;
		k += (size_t)w;
	}
	return buf;
}

/* a filter tensorfs cannot decode, or 0 */
static int hx_filters_ok(struct hx_ctx *z, const struct h5_pipeline *pl,
			 char *why, size_t len)
{
	unsigned i;

	for (i = 0; i < pl->n; i++) {
		uint16_t id = pl->f[i].id;
		const char *n = h5_filter_name(id);

		if (json_array_append_new(z->summary_filters,
					  json_string(n ? n : "unknown")))
			return tfs_diag_oom(z->d);
		if (id == 1 || id == 2 || id == 3 || id == 32000)
			continue;
		snprintf(why, len, "unsupported HDF5 filter %u (%s)", id,
			 n ? n : "not registered");
		return 1;
	}
	return 0;
}

struct hx_ds {
	struct h5_space s;
	struct h5_type *t;
	struct h5_layout l;
	struct h5_pipeline pl;
	struct h5_fill fill;
	json_t *attrs;
	struct tfs_chunk_params *grid; /* TFS_ENCODING_CHUNKED */
};

static void hx_grid_free(struct tfs_chunk_params *g)
{
	if (g) {
		free(g->chunks);
		free(g);
	}
}

/*
 * The chunk grid of @x for the chunked codec: the chunk dims @cd, the
 * chunks of @ch (NULL: none written, every chunk the fill value), the
 * pipeline, the fill value.  Something the codec cannot take (a grid too
 * large, a fill value wider than 16 bytes, too many filters) sets @why
 * instead.
 */
static int hx_grid(struct hx_ctx *z, struct hx_ds *x, const uint64_t *cd,
		   const struct h5_chunks *ch, uint64_t nbytes,
		   struct tfs_tensor_spec *s, char *why, size_t wlen)
{
	struct tfs_chunk_params *g;
	uint64_t n = 1, lo = UINT64_MAX, hi = 0, grid[H5_MAX_RANK];
	unsigned k, rank = x->s.rank ? x->s.rank : 1;
	size_t i;

	/* a fill value of zeros is the codec's own, for records of any width
	 * (HDF5 writes one for compound types) */
	for (i = 0; x->fill.has_value && i < x->fill.size; i++)
		if (x->fill.value[i])
			break;
	if (x->fill.has_value && i == x->fill.size &&
	    x->fill.size == x->t->size)
		x->fill.has_value = false;
	for (k = 0; k < rank; k++) {
		uint64_t d = x->s.rank ? x->s.dims[k] : 1;

		grid[k] = d / cd[k] + (d % cd[k] != 0);
		if (!tfs_mul_u64(n, grid[k], &n))
			n = UINT64_MAX;
	}
	if (n > HX_MAX_GRID || x->pl.n > TFS_CHUNK_MAX_FILTERS ||
	    (x->fill.has_value && x->t->size > sizeof(g->fill))) {
		snprintf(why, wlen, "%s",
			 n > HX_MAX_GRID ? "a grid of more than 16M chunks"
			 : x->pl.n > TFS_CHUNK_MAX_FILTERS
				 ? "more than 8 filters"
				 : "a fill value wider than 16 bytes");
		return 0;
	}
	if (x->fill.has_value && x->fill.size != x->t->size)
		return tfs_diag_at(z->d, -EBADMSG, x->l.at,
				   "dataset %s: a fill value of %u bytes for "
				   "%u-byte elements",
				   hx_path(z), x->fill.size, x->t->size);
	g = calloc(1, sizeof(*g));
	if (!g || !(g->chunks = calloc(n ? n : 1, sizeof(*g->chunks)))) {
		free(g);
		return tfs_diag_oom(z->d);
	}
	x->grid = g;
	g->itemsize = x->t->size;
	g->ndim = rank;
	g->nchunks = n;
	for (k = 0; k < rank; k++) {
		g->shape[k] = x->s.rank ? x->s.dims[k] : 1;
		g->chunk[k] = cd[k];
	}
	for (k = 0; k < x->pl.n; k++) {
		static const enum tfs_filter ids[] = {TFS_FILTER_DEFLATE,
						      TFS_FILTER_SHUFFLE,
						      TFS_FILTER_FLETCHER32};
		uint16_t id = x->pl.f[k].id;

		g->filters[k].id = id == 32000 ? TFS_FILTER_LZF : ids[id - 1];
		g->filters[k].arg = id == 2 ? x->t->size : 0;
	}
	g->nfilters = x->pl.n;
	if (x->fill.has_value) {
		memcpy(g->fill, x->fill.value, x->fill.size);
		g->has_fill = true;
	}
	for (i = 0; ch && i < ch->n; i++) {
		uint64_t a = h5_abs(&z->f, ch->c[i].addr);

		lo = a < lo ? a : lo;
		hi = a + ch->c[i].size > hi ? a + ch->c[i].size : hi;
	}
	for (i = 0; ch && i < ch->n; i++) {
		uint64_t idx = 0;

		for (k = 0; k < rank; k++)
			idx = idx * grid[k] + ch->coords[i * rank + k] / cd[k];
		g->chunks[idx].offset = h5_abs(&z->f, ch->c[i].addr) - lo;
		g->chunks[idx].length = ch->c[i].size;
		g->chunks[idx].mask = ch->c[i].mask;
		/* layout 4 flag bit 0: partial edge chunks are not filtered */
		if ((x->l.flags & 1) && x->l.version == 4)
			for (k = 0; k < rank; k++)
				if (ch->coords[i * rank + k] + cd[k] >
				    g->shape[k])
					g->chunks[idx].mask = UINT32_MAX;
	}
	/* a grid the chunked codec refuses (a slab of more than 1 GiB, a
	 * chunk of more than 4 GiB decoded) leaves this dataset unreadable,
	 * not the file refused */
	if (tfs_chunk_params_check(g, lo == UINT64_MAX ? 0 : hi - lo, &n) ||
	    n != nbytes) {
		snprintf(why, wlen,
			 "a chunk grid the chunked codec cannot serve "
			 "(a chunk above 4 GiB or a row of chunks above "
			 "1 GiB decoded)");
		hx_grid_free(g);
		x->grid = NULL;
		return 0;
	}
	tfs_spec_stored(s, lo == UINT64_MAX ? 0 : lo,
			lo == UINT64_MAX ? 0 : hi - lo);
	tfs_spec_size(s, nbytes);
	tfs_spec_encoded(s, TFS_ENCODING_CHUNKED,
			 &(struct tfs_codec_params){.chunks = g});
	return 0;
}

/* unallocated contiguous data: a grid of unwritten chunks (the fill) */
static int hx_unallocated(struct hx_ctx *z, struct hx_ds *x, uint64_t nbytes,
			  struct tfs_tensor_spec *s, char *why, size_t wlen)
{
	uint64_t cd[H5_MAX_RANK], row = x->t->size;
	unsigned k;

	cd[0] = 1;
	for (k = 1; k < x->s.rank; k++) {
		cd[k] = x->s.dims[k];
		row *= cd[k]; /* <= nbytes: no overflow */
	}
	if (x->s.rank)
		cd[0] = x->s.dims[0] < HX_FILL_SLAB / row
				? x->s.dims[0]
				: (HX_FILL_SLAB / row ? HX_FILL_SLAB / row : 1);
	if (row > (1ull << 30)) {
		snprintf(why, wlen,
			 "not allocated, rows of more than 1 GiB "
			 "of the fill value");
		return 0;
	}
	return hx_grid(z, x, cd, NULL, nbytes, s, why, wlen);
}

/* decide how the dataset's bytes are served */
static int hx_storage(struct hx_ctx *z, struct hx_ds *x, uint64_t nbytes,
		      struct tfs_tensor_spec *s, char *why, size_t wlen,
		      const char **layout)
{
	struct h5_file *f = &z->f;
	struct tfs_cursor c;
	int ret;

	switch (x->l.cls) {
	case H5_CONTIGUOUS:
		*layout = "contiguous";
		if (x->l.version >= 3 && x->l.addr != H5_UNDEF &&
		    x->l.size != nbytes && x->s.kind != H5_SPACE_NULL)
			return tfs_diag_at(z->d, -EBADMSG, x->l.at,
					   "dataset %s: contiguous size %llu, "
					   "but its dataspace and datatype "
					   "give %llu bytes",
					   hx_path(z),
					   (unsigned long long)x->l.size,
					   (unsigned long long)nbytes);
		if (x->l.addr == H5_UNDEF)
			return nbytes ? hx_unallocated(z, x, nbytes, s, why,
						       wlen)
				      : 0;
		ret = h5_span(f, x->l.addr, nbytes, "contiguous data", x->l.at,
			      &c);
		if (ret)
			return ret;
		tfs_spec_stored(s, c.base, nbytes);
		return 0;
	case H5_COMPACT:
		*layout = "compact";
		if (x->l.compact_size != nbytes)
			return tfs_diag_at(z->d, -EBADMSG, x->l.at,
					   "dataset %s: compact size %u, but "
					   "its dataspace and datatype give "
					   "%llu bytes",
					   hx_path(z), x->l.compact_size,
					   (unsigned long long)nbytes);
		tfs_spec_stored(s, x->l.compact_at, nbytes);
		return 0;
	case H5_CHUNKED: {
		struct h5_chunks ch;
		unsigned i;
		bool whole = true;

		*layout = "chunked";
		if (x->s.kind != H5_SPACE_SIMPLE)
			return tfs_diag_at(z->d, -EBADMSG, x->l.at,
					   "dataset %s: chunked storage of a "
					   "scalar or null dataspace",
					   hx_path(z));
		ret = h5_chunks_collect(f, &x->s, &x->l, x->t->size,
					x->pl.n > 0, &ch);
		if (ret)
			return ret;
		for (i = 0; i < x->s.rank; i++)
			if (x->l.cdims[i] != x->s.dims[i])
				whole = false;
		if (ch.n == 1 && whole && x->pl.n == 0 && nbytes) {
			/* one unfiltered chunk that is the dataset */
			tfs_spec_stored(s, h5_abs(f, ch.c[0].addr), nbytes);
		} else if (nbytes && !why[0]) {
			ret = hx_grid(z, x, x->l.cdims, &ch, nbytes, s, why,
				      wlen);
		}
		h5_chunks_free(&ch);
		return ret;
	}
	default:
		*layout = "virtual";
		snprintf(why, wlen,
			 "virtual dataset (data in other "
			 "datasets) is not supported");
		return 0;
	}
}

/* the index of string @s in the JSON array @a, or -1 */
static int hx_index_of(const json_t *a, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < json_array_size(a); i++) {
		const json_t *v = json_array_get(a, i);

		if (json_is_string(v) && json_string_length(v) == n &&
		    !memcmp(json_string_value(v), s, n))
			return (int)i;
	}
	return -1;
}

/*
 * Keras 2: the dataset's place in layer_names and its layer's weight_names
 * (the order Keras loads them in) as manifest.json "keras_order": [layer,
 * weight].  Nothing for other files.
 */
static int hx_keras_order(struct hx_ctx *z, uint32_t h)
{
	static const char *const bases[] = {"", "model_weights"};
	const char *path = z->path.p;
	unsigned k;

	for (k = 0; k < 2; k++) {
		const char *base = bases[k], *layer, *slash;
		size_t bl = strlen(base);
		json_t *names, *ga;
		int li, wi;

		names = json_object_get(
			json_object_get(z->attrs, bl ? base : "/"),
			"layer_names");
		if (!names || strncmp(path, base, bl) ||
		    (bl && path[bl] != '/'))
			continue;
		layer = path + bl + (bl ? 1 : 0);
		slash = strchr(layer, '/');
		if (!slash)
			continue;
		li = hx_index_of(names, layer, (size_t)(slash - layer));
		if (li < 0)
			continue;
		{
			char *gp = strndup(path, (size_t)(slash - path));

			if (!gp)
				return tfs_diag_oom(z->d);
			ga = json_object_get(z->attrs, gp);
			free(gp);
		}
		wi = hx_index_of(json_object_get(ga, "weight_names"), slash + 1,
				 strlen(slash + 1));
		if (wi < 0)
			continue;
		if (json_object_set_new(tfs_builder_manifest_extra(z->b, h),
					"keras_order",
					json_pack("[i,i]", li, wi)))
			return tfs_diag_oom(z->d);
		return 0;
	}
	return 0;
}

static int hx_dataset(struct hx_ctx *z, const struct h5_ohdr *oh)
{
	struct hx_ds x = {0};
	struct hx_dtype m;
	struct tfs_tensor_spec s;
	struct tfs_cursor c;
	const struct h5_msg *msg;
	uint64_t shape[2 * H5_MAX_RANK], nbytes, nelem;
	const char *layout = "?";
	char why[TFS_DIAG_MSG_MAX + 8] = "", filt[128];
	uint32_t h;
	unsigned i, nd = 0;
	bool keras_bf16;
	json_t *dt;
	int ret;

	ret = hx_attrs(z, oh, &x.attrs);
	if (ret)
		return ret;
	msg = h5_ohdr_find(oh, 0x01);
	if (!msg)
		return tfs_diag_at(z->d, -EBADMSG, h5_abs(&z->f, oh->addr),
				   "dataset %s: no dataspace message",
				   hx_path(z));
	h5_msg_cursor(msg, &c);
	ret = h5_space_parse(&z->f, &c, &x.s);
	if (ret)
		return ret;
	msg = h5_ohdr_find(oh, 0x03);
	if (!msg)
		return tfs_diag_at(z->d, -EBADMSG, h5_abs(&z->f, oh->addr),
				   "dataset %s: no datatype message",
				   hx_path(z));
	ret = h5_type_msg(&z->f, msg, &x.t);
	if (ret == -ENOTSUP) {
		tfs_diag_clear(z->d);
		return hx_not_exposed(z, "datatype not supported");
	}
	if (ret)
		return ret;
	ret = h5_layout_parse(&z->f, h5_ohdr_find(oh, 0x08), &x.l);
	if (!ret)
		ret = h5_fill_parse(&z->f, oh, &x.fill);
	if (!ret && (msg = h5_ohdr_find(oh, 0x0b)))
		ret = h5_pipeline_parse(&z->f, msg, &x.pl);
	if (ret)
		goto out;
	if (h5_ohdr_find(oh, 0x07)) {
		ret = hx_not_exposed(z, "external data files are not "
					"supported");
		goto out;
	}
	if (x.t->cls == H5T_VLEN) {
		ret = hx_vlen_dataset(z, x.t, &x.s, &x.l);
		goto out;
	}
	if (x.t->cls == H5T_TIME || x.t->cls == H5T_REFERENCE) {
		ret = hx_not_exposed(z, x.t->cls == H5T_TIME ? "time datatype"
							     : "references");
		goto out;
	}
	dt = json_object_get(x.attrs, "dtype");
	keras_bf16 = json_is_string(dt) &&
		     !strcmp(json_string_value(dt), "bfloat16");
	hx_map(x.t, keras_bf16, &m);
	nelem = x.s.nelem;
	if (!tfs_mul_u64(nelem, x.t->size, &nbytes)) {
		ret = tfs_diag_at(z->d, -EBADMSG, x.l.at,
				  "dataset %s: %llu elements of %u bytes "
				  "overflow 64 bits",
				  hx_path(z), (unsigned long long)nelem,
				  x.t->size);
		goto out;
	}
	if (x.s.kind == H5_SPACE_NULL)
		shape[nd++] = 0;
	for (i = 0; i < x.s.rank; i++)
		shape[nd++] = x.s.dims[i];
	for (i = 0; i < m.extra; i++)
		shape[nd++] = m.edims[i];
	if (x.pl.n && hx_filters_ok(z, &x.pl, why, sizeof(why)) < 0) {
		ret = -ENOMEM;
		goto out;
	}
	tfs_spec_tensor(&s, z->path.p, z->path.len, m.dtype, shape, nd,
			h5_abs(&z->f, oh->addr));
	tfs_spec_path(&s, z->comp, z->depth);
	tfs_spec_records(&s, m.record);
	tfs_spec_size(&s, nbytes);
	ret = hx_storage(z, &x, nbytes, &s, why, sizeof(why), &layout);
	if (ret == -ENOTSUP) {
		snprintf(why, sizeof(why), "%s",
			 z->d ? z->d->msg : "not supported");
		tfs_diag_clear(z->d);
		ret = 0;
	}
	if (ret)
		goto out;
	if (why[0]) {
		/* nothing stored is served: no extent, no grid */
		tfs_spec_unreadable(&s, why, false);
		tfs_spec_stored(&s, 0, 0);
		tfs_spec_encoded(&s, TFS_ENCODING_RAW, NULL);
		z->unreadable++;
	}
	ret = tfs_builder_add_tensor(z->b, &s, &h, z->d);
	if (ret)
		goto out;
	z->datasets++;
	z->params += nelem;
	ret = (m.be &&
	       tfs_builder_set_xattr_str(z->b, h, "byte_order", "big")) ||
	      tfs_builder_set_xattr_str(z->b, h, "hdf5.layout", layout) ||
	      (m.cls &&
	       tfs_builder_set_xattr_str(z->b, h, "hdf5.class", m.cls)) ||
	      (m.desc[0] &&
	       tfs_builder_set_xattr_str(z->b, h, "hdf5.float", m.desc)) ||
	      (x.s.kind == H5_SPACE_NULL &&
	       tfs_builder_set_xattr_str(z->b, h, "hdf5.dataspace", "null")) ||
	      (x.s.kind == H5_SPACE_SCALAR &&
	       tfs_builder_set_xattr_str(z->b, h, "hdf5.dataspace",
					 "scalar")) ||
	      (x.pl.n && tfs_builder_set_xattr_str(
				 z->b, h, "hdf5.filters",
				 hx_filters_text(&x.pl, filt, sizeof(filt))));
	if (!ret && x.attrs) {
		char *j = json_dumps(x.attrs, JSON_COMPACT);

		ret = hx_attr_xattrs(z, h, x.attrs);
		/* all of them as JSON, bounded */
		if (!ret && j && strlen(j) <= 4096)
			ret = tfs_builder_set_xattr_str(z->b, h, "hdf5.attrs",
							j);
		free(j);
	}
	if (!ret)
		ret = hx_keras_order(z, h);
	if (ret)
		ret = ret < 0 ? ret : tfs_diag_oom(z->d);
out:
	hx_grid_free(x.grid);
	h5_type_free(x.t);
	return ret;
}

/* ---- groups ----------------------------------------------------------------
 */

struct hx_links {
	struct hx_ctx *z;
	struct hx_link *v;
	size_t n, cap;
};

static char *hx_dup(const char *s, size_t n)
{
	char *p = malloc(n + 1);

	if (p) {
		memcpy(p, s, n);
		p[n] = 0;
	}
	return p;
}

static int hx_collect(void *arg, const struct h5_link *l)
{
	struct hx_links *x = arg;
	struct hx_link *k;

	if (x->n == x->cap) {
		size_t cap = x->cap ? x->cap * 2 : 16;
		struct hx_link *nv = reallocarray(x->v, cap, sizeof(*nv));

		if (!nv)
			return tfs_diag_oom(x->z->d);
		x->v = nv;
		x->cap = cap;
	}
	k = &x->v[x->n];
	memset(k, 0, sizeof(*k));
	k->name = hx_dup(l->name, l->name_len);
	k->len = l->name_len;
	k->type = l->type;
	k->addr = l->addr;
	k->at = l->at;
	if (l->target)
		k->target = hx_dup(l->target, l->target_len);
	if (l->obj)
		k->obj = hx_dup(l->obj, l->obj_len);
	if (!k->name || (l->target && !k->target) || (l->obj && !k->obj)) {
		free(k->name);
		free(k->target);
		return tfs_diag_oom(x->z->d);
	}
	x->n++;
	return 0;
}

static int hx_link_cmp(const void *a, const void *b)
{
	const struct hx_link *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->name, y->name, n);

	return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* "w:0" shown as "w" unless a sibling is called "w" */
static bool hx_strip_ok(const struct hx_links *x, size_t i)
{
	const struct hx_link *k = &x->v[i];
	struct hx_link key;

	if (k->len < 3 || strcmp(k->name + k->len - 2, ":0"))
		return false;
	/* the links are sorted by name: look the base name up */
	key.name = k->name;
	key.len = k->len - 2;
	return !bsearch(&key, x->v, x->n, sizeof(*x->v), hx_link_cmp);
}

static int hx_object(struct hx_ctx *z, uint64_t addr, const char *shown);

static int hx_other_link(struct hx_ctx *z, const struct hx_link *k)
{
	json_t *v;

	if (k->type == H5_LINK_SOFT)
		v = json_pack("{s:s,s:s?}", "type", "soft", "target",
			      k->target);
	else if (k->type == H5_LINK_EXTERNAL)
		v = json_pack("{s:s,s:s?,s:s?}", "type", "external", "file",
			      k->target, "target", k->obj);
	else
		v = json_pack("{s:s,s:i}", "type", "user-defined", "link_type",
			      (int)k->type);
	if (!v || json_object_set_new(z->links, hx_path(z), v))
		return tfs_diag_oom(z->d);
	return 0;
}

static bool hx_name_ok(const struct hx_link *k)
{
	return k->len && !memchr(k->name, 0, k->len) && strcmp(k->name, ".") &&
	       strcmp(k->name, "..") && !memchr(k->name, '/', k->len);
}

static int hx_group(struct hx_ctx *z, const struct h5_ohdr *oh)
{
	struct hx_links x = {.z = z};
	json_t *attrs;
	bool dense;
	size_t i, saved;
	int ret;

	ret = hx_attrs(z, oh, &attrs);
	if (!ret && attrs && z->depth == 0)
		ret = hx_attr_xattrs(z, TFS_BUILDER_ROOT, attrs);
	if (!ret)
		ret = h5_group_links(&z->f, oh, hx_collect, &x, &dense);
	if (ret)
		goto out;
	if (x.n) /* qsort's base must not be NULL */
		qsort(x.v, x.n, sizeof(*x.v), hx_link_cmp);
	for (i = 0; !ret && i < x.n; i++) {
		struct hx_link *k = &x.v[i];
		char shown[TFS_PRINTABLE_MAX + 8];

		if (i && !hx_link_cmp(k, &x.v[i - 1])) {
			ret = tfs_diag_at(z->d, -EBADMSG, k->at,
					  "group %s: the link '%s' is given "
					  "twice",
					  hx_path(z),
					  TFS_SHOWN(k->name, k->len));
			break;
		}
		if (!hx_name_ok(k)) {
			ret = tfs_builder_warn(z->b, k->at,
					       "group %s: link name '%s' is "
					       "not a path component: skipped",
					       hx_path(z),
					       TFS_SHOWN(k->name, k->len))
				      ? tfs_diag_oom(z->d)
				      : 0;
			continue;
		}
		if (z->depth == 0 && !strcmp(k->name, "vars"))
			z->top_vars = true;
		if (z->depth == 0 && !strcmp(k->name, "layers"))
			z->top_layers = true;
		ret = hx_path_push(z, k->name, &saved);
		if (ret)
			break;
		if (k->type != H5_LINK_HARD) {
			ret = hx_other_link(z, k);
		} else {
			const char *name = k->name;

			if (hx_strip_ok(&x, i)) {
				k->name[k->len - 2] = 0;
				snprintf(shown, sizeof(shown), "%s", k->name);
				k->name[k->len - 2] = ':';
				if (strlen(shown) == k->len - 2)
					name = shown;
			}
			ret = hx_object(z, k->addr, name);
		}
		tfs_strbuf_cut(&z->path, saved);
	}
out:
	for (i = 0; i < x.n; i++) {
		free(x.v[i].name);
		free(x.v[i].target);
		free(x.v[i].obj);
	}
	free(x.v);
	return ret;
}

/* remember group @addr at the current path; 0 or -ENOMEM */
static int hx_group_visit(struct hx_ctx *z, uint64_t addr)
{
	char key[24], *p;
	int ret;

	snprintf(key, sizeof(key), "%" PRIu64, addr);
	if (h5_set_add(&z->groups, addr) < 0)
		return -ENOMEM;
	if (asprintf(&p, "/%s", z->path.len ? z->path.p : "") < 0)
		return -ENOMEM;
	ret = json_object_set_new(z->group_paths, key, json_string(p));
	free(p);
	return ret ? -ENOMEM : 0;
}

/* the object at @addr, reached at the current path; @shown: its name */
static int hx_object(struct hx_ctx *z, uint64_t addr, const char *shown)
{
	struct h5_ohdr oh;
	int ret;

	if (z->depth >= HX_MAX_DEPTH)
		return tfs_diag_at(z->d, -E2BIG, h5_abs(&z->f, addr),
				   "group %s: deeper than %u levels",
				   TFS_SHOWN(z->path.p, z->path.len),
				   HX_MAX_DEPTH);
	if (++z->objects > HX_MAX_OBJECTS)
		return tfs_diag_at(z->d, -E2BIG, h5_abs(&z->f, addr),
				   "more than %u objects", HX_MAX_OBJECTS);
	if (h5_set_has(&z->groups, addr)) {
		char key[24];
		json_t *v;

		snprintf(key, sizeof(key), "%" PRIu64, addr);
		v = json_pack("{s:s,s:O?}", "type",
			      "hard link to a group already visited (not "
			      "descended)",
			      "target", json_object_get(z->group_paths, key));

		if (!v || json_object_set_new(z->links, hx_path(z), v))
			return tfs_diag_oom(z->d);
		return 0;
	}
	ret = h5_ohdr_read(&z->f, addr, &oh);
	if (ret)
		return ret;
	z->comp[z->depth++] = shown;
	if (h5_ohdr_find(&oh, 0x08)) {
		ret = hx_dataset(z, &oh);
	} else if (h5_is_group(&oh)) {
		ret = hx_group_visit(z, addr) ? tfs_diag_oom(z->d)
					      : hx_group(z, &oh);
	} else {
		ret = hx_not_exposed(z, "neither a dataset nor a group (a "
					"committed datatype)");
	}
	z->depth--;
	h5_ohdr_free(&oh);
	return ret;
}

/* ---- metadata --------------------------------------------------------------
 */

static json_t *hx_keras(struct hx_ctx *z)
{
	json_t *root = json_object_get(z->attrs, "/");
	json_t *mw = json_object_get(z->attrs, "model_weights");
	json_t *k, *wn, *src = NULL, *names;
	const char *layout = NULL, *prefix = "";
	size_t i;

	if (json_object_get(root, "layer_names")) {
		layout = "keras2-weights";
		src = root;
	} else if (json_object_get(root, "model_config") &&
		   json_object_get(mw, "layer_names")) {
		layout = "keras2-model";
		src = mw;
		prefix = "model_weights/";
	} else if (!root && z->top_vars && z->top_layers) {
		layout = "keras3-weights";
	}
	k = json_object();
	if (!k)
		return NULL;
	json_object_set_new(k, "layout",
			    layout ? json_string(layout) : json_null());
	if (src) {
		names = json_object_get(src, "layer_names");
		json_object_set(k, "layer_names", names);
		wn = json_object();
		for (i = 0; wn && i < json_array_size(names); i++) {
			const char *ln =
				json_string_value(json_array_get(names, i));
			char key[512];
			json_t *ga, *w;

			if (!ln)
				continue;
			snprintf(key, sizeof(key), "%s%s", prefix, ln);
			ga = json_object_get(z->attrs, key);
			w = json_object_get(ga, "weight_names");
			json_object_set(wn, ln, w ? w : json_null());
		}
		json_object_set_new(k, "weight_names", wn);
	}
	if (root) {
		const char *keys[] = {"keras_version", "backend",
				      "model_config", "training_config"};

		for (i = 0; i < 4; i++) {
			json_t *v = json_object_get(root, keys[i]);

			if (v)
				json_object_set(k, keys[i], v);
		}
	}
	return k;
}

static int hx_metadata(struct hx_ctx *z)
{
	json_t *meta = tfs_builder_metadata(z->b), *k, *sum;

	k = hx_keras(z);
	sum = json_pack(
		"{s:i,s:I,s:I,s:I,s:O}", "superblock_version",
		(int)z->f.sb_version, "datasets", (json_int_t)z->datasets,
		"parameters", (json_int_t)z->params, "unreadable",
		(json_int_t)z->unreadable, "filters", z->summary_filters);
	if (!k || !sum ||
	    json_object_set_new(meta, "superblock_version",
				json_integer(z->f.sb_version)) ||
	    json_object_set_new(meta, "summary", sum) ||
	    json_object_set_new(meta, "keras", k) ||
	    json_object_set(meta, "attributes", z->attrs) ||
	    json_object_set(meta, "links", z->links) ||
	    json_object_set(meta, "not_exposed", z->not_exposed) ||
	    json_object_set(meta, "vlen_datasets", z->vlen))
		return tfs_diag_oom(z->d);
	return 0;
}

/* filters in use, each once */
static void hx_unique_filters(json_t *a)
{
	size_t i, j;

	for (i = 0; i < json_array_size(a); i++)
		for (j = json_array_size(a); j-- > i + 1;)
			if (json_equal(json_array_get(a, i),
				       json_array_get(a, j)))
				json_array_remove(a, j);
}

static int hx_load(const struct tfs_source *src, struct tfs_builder *b,
		   struct tfs_diag *d)
{
	struct hx_ctx z = {.src = src, .b = b, .d = d};
	struct h5_ohdr oh;
	int ret;

	z.f.p = src->data;
	z.f.size = src->size;
	z.f.d = d;
	z.attrs = json_object();
	z.links = json_object();
	z.not_exposed = json_object();
	z.vlen = json_object();
	z.summary_filters = json_array();
	z.group_paths = json_object();
	if (!z.group_paths || !z.attrs || !z.links || !z.not_exposed ||
	    !z.vlen || !z.summary_filters) {
		ret = tfs_diag_oom(d);
		goto out;
	}
	ret = h5_superblock(&z.f);
	if (ret)
		goto out;
	if (z.f.ext != H5_UNDEF) {
		ret = h5_ohdr_read(&z.f, z.f.ext, &oh);
		if (ret)
			goto out;
		if (h5_ohdr_find(&oh, 0x0f))
			ret = tfs_diag_at(d, -ENOTSUP, h5_abs(&z.f, z.f.ext),
					  "superblock extension: shared "
					  "message storage is not supported");
		h5_ohdr_free(&oh);
		if (ret)
			goto out;
	}
	ret = h5_ohdr_read(&z.f, z.f.root, &oh);
	if (ret)
		goto out;
	if (!h5_is_group(&oh)) {
		ret = tfs_diag_at(d, -EBADMSG, h5_abs(&z.f, z.f.root),
				  "root object header: not a group");
		h5_ohdr_free(&oh);
		goto out;
	}
	if (hx_group_visit(&z, z.f.root))
		ret = tfs_diag_oom(d);
	else
		ret = hx_group(&z, &oh);
	h5_ohdr_free(&oh);
	if (ret)
		goto out;
	hx_unique_filters(z.summary_filters);
	ret = hx_metadata(&z);
out:
	json_decref(z.attrs);
	json_decref(z.links);
	json_decref(z.not_exposed);
	json_decref(z.vlen);
	json_decref(z.summary_filters);
	json_decref(z.group_paths);
	h5_set_free(&z.groups);
	free(z.path.p);
	return ret;
}

TFS_FORMAT(hdf5, "HDF5 (Keras, tf_model.h5, h5py)", .probe = hx_probe,
	   .load = hx_load);
