// SPDX-License-Identifier: MIT
/*
 * zTensor 1.x (.zt), every generation: v0.1, v1.0, v1.1, v1.2.
 * Spec: shared/specs/ztensor.md (+ cbor.md); docs/formats/ztensor.md.
 *
 * Layout: magic at 0, 64-aligned component blobs, a CBOR manifest, then a
 * little-endian u64 manifest size and, from v1.1 on, the magic again as a
 * footer.  Detection follows spec section 2 exactly: the magic and the
 * footer select the form (v0.1 / v1.0 / footer), and the manifest schema
 * must agree with it (array; map with "tensors"; map with "objects").  The
 * version string decides nothing.  v1.1 and v1.2 share one parser: v1.2
 * only adds optional keys.
 *
 * Every generation is parsed into the same description (struct zt_obj: a
 * logical tensor with its components), which one function validates and
 * hands to the builder:
 *   - a "dense" tensor whose only component is "data" becomes a file;
 *   - any other (sparse_csr, sparse_coo, quantized_group, unknown formats,
 *     dense with extra roles) becomes a directory (a builder group) with
 *     one file per component role.
 * Component rules, all checked here before any byte is touched: offset a
 * multiple of 64 (a hard error, as in the reference reader), inside
 * [64, manifest start), no two components overlapping, dense raw length
 * == product(shape) x element size, sparse lengths multiples of the element
 * size.  zstd components get their decoded size from uncompressed_length
 * (v1.2), from the shape (dense), or else from a counting decode at load
 * time (v1.0/v1.1 sparse): frames carry no content size.  The decoding
 * itself, the cache and the digest checks are the image's read path
 * (src/core/image.c); digests are parsed here so a malformed one is
 * refused at mount.
 *
 * CBOR goes through tfs_cbor_decode (structural pre-check, depth cap 128).
 * Field errors point at the manifest start: libcbor keeps no positions.
 * zTensor 2.x (magic \x89ZT2...) is another container, read by
 * src/formats/ztensor2.c.
 *
 * Why one file of this size: four generations of one container, each
 * with its own manifest schema and detection rule (spec section 2), share
 * the component and encoding rules that make most of this file; the CBOR
 * walking is shared (parse/cbor.c).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/builder.h"
#include "parse/cbor.h"
#include "formats/common/cbor_xattrs.h"
#include "core/checked.h"
#include "core/cursor.h"
#include "core/diag.h"
#include "core/digest.h"
#include "core/dtype.h"
#include "core/format.h"
#include "core/names.h"
#include "core/source.h"
#include "codec/codec.h"

#define ZT_MAGIC_V01 "ZTEN0001"
#define ZT_MAGIC_V1 "ZTEN1000"
#define ZT_ALIGN 64
#define ZT_MANIFEST_MAX (1ull << 30)
#define ZT_DECODED_MAX (32ull << 30) /* reference 1.2's limit */
#define ZT_ATTR_XATTR_MAX 1024	     /* longest attribute value as xattr */
#define ZT_ATTR_KEY_MAX 200

enum zt_form { ZT_FORM_V01, ZT_FORM_V10, ZT_FORM_FOOTER };

struct zt_ctx {
	const struct tfs_source *src;
	struct tfs_builder *b;
	struct tfs_diag *d;
	uint64_t man_off; /* manifest start: where field errors point */
	uint64_t man_len;
	enum zt_form form;
	json_t *obj_attrs; /* metadata "object_attributes" */
	json_t *layout;	   /* {"layout": F} shared by the plain tensors */
	/*
	 * The name map ("tensors", "objects") left out of the root's DOM:
	 * its empty stand-in there, and where its pairs start (from the
	 * manifest's start), or stand_in NULL.
	 */
	cbor_item_t *stand_in;
	uint64_t pairs_at, npairs;
};

struct zt_comp {
	char *role;
	enum tfs_dtype dtype;
	char *type; /* v1.2 logical type, or NULL */
	uint64_t offset, length;
	bool has_ulen;
	uint64_t ulen; /* v1.2 uncompressed_length */
	bool zstd;
	char *digest;
	uint64_t size; /* decoded size, once known */
};

/* a logical tensor of any generation */
struct zt_obj {
	char *name;
	size_t name_len;
	uint64_t *shape;
	size_t ndim;
	char *format;		 /* "dense", "sparse_csr", ... */
	enum tfs_dtype dtype;	 /* v0.1/v1.0 tensor dtype, else INVALID */
	json_t *attrs;		 /* object attributes (owned), or NULL */
	cbor_item_t *attrs_cbor; /* the same, for xattrs (borrowed) */
	bool big_endian;	 /* v0.1 data_endianness "big" */
	struct zt_comp *comps;
	size_t ncomps;
};

static int zt_probe(const struct tfs_source *src)
{
	if (src->size < 8)
		return 0;
	if (memcmp(src->data, ZT_MAGIC_V01, 8) == 0 ||
	    memcmp(src->data, ZT_MAGIC_V1, 8) == 0)
		return 100;
	return 0;
}

/* ---- dtypes (spec section 5) --------------------------------------------- */

static const struct {
	const char *lng, *shrt;
	enum tfs_dtype t;
} zt_dtypes[] = {
	{"float64", "f64", TFS_DTYPE_FLOAT64},
	{"float32", "f32", TFS_DTYPE_FLOAT32},
	{"float16", "f16", TFS_DTYPE_FLOAT16},
	{"bfloat16", "bf16", TFS_DTYPE_BFLOAT16},
	{"int64", "i64", TFS_DTYPE_INT64},
	{"int32", "i32", TFS_DTYPE_INT32},
	{"int16", "i16", TFS_DTYPE_INT16},
	{"int8", "i8", TFS_DTYPE_INT8},
	{"uint64", "u64", TFS_DTYPE_UINT64},
	{"uint32", "u32", TFS_DTYPE_UINT32},
	{"uint16", "u16", TFS_DTYPE_UINT16},
	{"uint8", "u8", TFS_DTYPE_UINT8},
	{"bool", "bool", TFS_DTYPE_BOOL},
};

/* long names in v0.1/v1.0, short ones from v1.1 on; case-sensitive */
static enum tfs_dtype zt_dtype(const char *s, bool short_names)
{
	size_t i;

	for (i = 0; i < sizeof(zt_dtypes) / sizeof(zt_dtypes[0]); i++)
		if (strcmp(short_names ? zt_dtypes[i].shrt : zt_dtypes[i].lng,
			   s) == 0)
			return zt_dtypes[i].t;
	return TFS_DTYPE_INVALID;
}

/* ---- small helpers ----------------------------------------------------- */

static void zt_obj_free(struct zt_obj *o)
{
	size_t i;

	free(o->name);
	free(o->shape);
	free(o->format);
	json_decref(o->attrs);
	for (i = 0; i < o->ncomps; i++) {
		free(o->comps[i].role);
		free(o->comps[i].type);
		free(o->comps[i].digest);
	}
	free(o->comps);
	memset(o, 0, sizeof(*o));
}

static int zt_oom(struct zt_ctx *z)
{
	return tfs_diag_oom(z->d);
}

static int zt_err(struct zt_ctx *z, int err, uint64_t off,
		  const struct zt_obj *o, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* "manifest: tensor 'NAME': <what>" at @off */
static int zt_err(struct zt_ctx *z, int err, uint64_t off,
		  const struct zt_obj *o, const char *fmt, ...)
{
	char what[240];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (o && o->name)
		return tfs_diag_at(z->d, err, off, "manifest: tensor '%s': %s",
				   TFS_SHOWN(o->name, o->name_len), what);
	return tfs_diag_at(z->d, err, off, "manifest: %s", what);
}

static void zt_warn(struct zt_ctx *z, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* a warning about the manifest (lost only when memory runs out) */
static void zt_warn(struct zt_ctx *z, const char *fmt, ...)
{
	char what[300];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	(void)tfs_builder_warn(z->b, z->man_off, "%s", what);
}

/* a struct-like map: text keys, none twice */
static int zt_struct_map(struct zt_ctx *z, cbor_item_t *m,
			 const struct zt_obj *o, const char *what)
{
	char *bad = NULL;
	int ret;

	m = tfs_cbor_untag(m);
	if (!m || !cbor_isa_map(m))
		return zt_err(z, -EBADMSG, z->man_off, o, "%s: not a map",
			      what);
	ret = tfs_cbor_keys_check(m, &bad);
	if (ret == -ENOMEM)
		return zt_oom(z);
	if (ret) {
		ret = zt_err(z, -EBADMSG, z->man_off, o, "%s: %s%s", what,
			     bad ? "key given twice: " : "a key is not text",
			     bad ? bad : "");
		free(bad);
	}
	return ret;
}

/* required (or optional, *out = NULL) text field */
static int zt_text(struct zt_ctx *z, cbor_item_t *m, const char *key,
		   bool required, const struct zt_obj *o, char **out)
{
	cbor_item_t *v = tfs_cbor_get(m, key);
	int ret;

	*out = NULL;
	if (!v)
		return required ? zt_err(z, -EBADMSG, z->man_off, o,
					 "%s: missing", key)
				: 0;
	ret = tfs_cbor_text(v, out, NULL);
	if (ret == -ENOMEM)
		return zt_oom(z);
	if (ret)
		return zt_err(z, -EBADMSG, z->man_off, o, "%s: not UTF-8 text",
			      key);
	return 0;
}

static int zt_uint(struct zt_ctx *z, cbor_item_t *m, const char *key,
		   const struct zt_obj *o, uint64_t *out, bool *present)
{
	cbor_item_t *v = tfs_cbor_get(m, key);

	if (present)
		*present = v != NULL;
	if (!v && present)
		return 0;
	if (!v || !tfs_cbor_uint(v, out))
		return zt_err(z, -EBADMSG, z->man_off, o,
			      "%s: missing or not an unsigned integer", key);
	return 0;
}

static int zt_shape(struct zt_ctx *z, cbor_item_t *m, struct zt_obj *o)
{
	cbor_item_t *item = tfs_cbor_untag(tfs_cbor_get(m, "shape"));
	size_t i, n;

	if (!item)
		return zt_err(z, -EBADMSG, z->man_off, o, "shape: missing");
	if (!cbor_isa_array(item))
		return zt_err(z, -EBADMSG, z->man_off, o,
			      "shape: not an array");
	n = cbor_array_size(item);
	o->shape = calloc(n ? n : 1, sizeof(*o->shape));
	if (!o->shape)
		return zt_oom(z);
	for (i = 0; i < n; i++)
		if (!tfs_cbor_uint(cbor_array_handle(item)[i], &o->shape[i]))
			return zt_err(z, -EBADMSG, z->man_off, o,
				      "shape: dim %zu is not an unsigned "
				      "integer",
				      i);
	o->ndim = n;
	return 0;
}

static int zt_name(struct zt_ctx *z, cbor_item_t *key, struct zt_obj *o)
{
	int ret = tfs_cbor_text(key, &o->name, &o->name_len);

	if (ret == -ENOMEM)
		return zt_oom(z);
	if (ret)
		return zt_err(z, -EBADMSG, z->man_off, NULL,
			      "a tensor name is not UTF-8 text");
	return 0;
}

static struct zt_comp *zt_add_comp(struct zt_ctx *z, struct zt_obj *o,
				   const char *role)
{
	struct zt_comp *nc;

	nc = reallocarray(o->comps, o->ncomps + 1, sizeof(*nc));
	if (!nc)
		return NULL;
	o->comps = nc;
	nc = &o->comps[o->ncomps];
	memset(nc, 0, sizeof(*nc));
	nc->role = strdup(role);
	if (!nc->role)
		return NULL;
	o->ncomps++;
	return nc;
}

/*
 * "encoding": absent/"raw" or "zstd"; anything else is refused, as by the
 * reference from v1.0 on.
 */
static int zt_encoding(struct zt_ctx *z, cbor_item_t *m, struct zt_obj *o,
		       struct zt_comp *c)
{
	char *enc;
	int ret = zt_text(z, m, "encoding", false, o, &enc);

	if (ret || !enc)
		return ret;
	if (strcmp(enc, "zstd") == 0)
		c->zstd = true;
	else if (strcmp(enc, "raw") != 0)
		ret = zt_err(z, -EBADMSG, z->man_off, o,
			     "component '%s': encoding: unknown value '%.40s'",
			     c->role, enc);
	free(enc);
	return ret;
}

/* ---- v1.0 and v1.1/v1.2 -------------------------------------------------- */

/* one component map of v1.0 (@short_names false) or v1.1+ */
static int zt_component(struct zt_ctx *z, struct zt_obj *o, cbor_item_t *key,
			cbor_item_t *val, bool short_names)
{
	struct zt_comp *c;
	char *role = NULL, *dt = NULL;
	int ret;

	ret = tfs_cbor_text(key, &role, NULL);
	if (ret == -ENOMEM)
		return zt_oom(z);
	if (ret)
		return zt_err(z, -EBADMSG, z->man_off, o,
			      "components: a role is not text");
	c = zt_add_comp(z, o, role);
	free(role);
	if (!c)
		return zt_oom(z);
	ret = zt_struct_map(z, val, o, "component");
	if (!ret)
		ret = zt_uint(z, val, "offset", o, &c->offset, NULL);
	if (!ret)
		ret = zt_uint(z, val, "length", o, &c->length, NULL);
	if (!ret)
		ret = zt_encoding(z, val, o, c);
	if (!ret)
		ret = zt_text(z, val, "digest", false, o, &c->digest);
	if (ret || !short_names)
		return ret;
	/* v1.1+: the component carries its dtype; v1.2 adds two keys */
	ret = zt_text(z, val, "dtype", true, o, &dt);
	if (ret)
		return ret;
	c->dtype = zt_dtype(dt, true);
	if (c->dtype == TFS_DTYPE_INVALID)
		ret = zt_err(z, -EBADMSG, z->man_off, o,
			     "component '%s': dtype: unknown dtype '%.40s'",
			     c->role, dt);
	free(dt);
	if (!ret)
		ret = zt_text(z, val, "type", false, o, &c->type);
	if (!ret)
		ret = zt_uint(z, val, "uncompressed_length", o, &c->ulen,
			      &c->has_ulen);
	return ret;
}

static int zt_components(struct zt_ctx *z, cbor_item_t *m, struct zt_obj *o,
			 bool short_names)
{
	cbor_item_t *comps = tfs_cbor_untag(tfs_cbor_get(m, "components"));
	struct cbor_pair *pairs;
	size_t i, n;
	int ret;

	if (!comps)
		return zt_err(z, -EBADMSG, z->man_off, o,
			      "components: missing");
	ret = zt_struct_map(z, comps, o, "components");
	if (ret)
		return ret;
	pairs = cbor_map_handle(comps);
	n = cbor_map_size(comps);
	for (i = 0; i < n && !ret; i++)
		ret = zt_component(z, o, pairs[i].key,
				   tfs_cbor_untag(pairs[i].value), short_names);
	return ret;
}

/* attributes: a map with text keys; @text_only for v1.0's text -> text */
static int zt_attributes(struct zt_ctx *z, cbor_item_t *attrs,
			 const struct zt_obj *o, bool text_only, json_t **out)
{
	struct cbor_pair *pairs;
	size_t i, n;
	int ret;

	*out = NULL;
	attrs = tfs_cbor_untag(attrs);
	ret = zt_struct_map(z, attrs, o, "attributes");
	if (ret)
		return ret;
	pairs = cbor_map_handle(attrs);
	n = cbor_map_size(attrs);
	for (i = 0; text_only && i < n; i++)
		if (!cbor_isa_string(tfs_cbor_untag(pairs[i].value)))
			return zt_err(z, -EBADMSG, z->man_off, o,
				      "attributes: a value is not text "
				      "(v1.0 allows text only)");
	*out = tfs_cbor_to_json(attrs);
	if (!*out)
		return zt_err(z, -EBADMSG, z->man_off, o,
			      "attributes: a text value is not UTF-8");
	return 0;
}

static int zt_tensor_v10(struct zt_ctx *z, cbor_item_t *key, cbor_item_t *t,
			 struct zt_obj *o)
{
	char *dt = NULL;
	int ret;

	ret = zt_name(z, key, o);
	if (!ret)
		ret = zt_struct_map(z, t, o, "tensor");
	if (!ret)
		ret = zt_text(z, t, "dtype", true, o, &dt);
	if (ret)
		return ret;
	o->dtype = zt_dtype(dt, false);
	if (o->dtype == TFS_DTYPE_INVALID)
		ret = zt_err(z, -EBADMSG, z->man_off, o,
			     "dtype: unknown dtype '%.40s'", dt);
	free(dt);
	if (!ret)
		ret = zt_shape(z, t, o);
	if (!ret)
		ret = zt_text(z, t, "format", true, o, &o->format);
	if (!ret)
		ret = zt_components(z, t, o, false);
	return ret;
}

static int zt_object_v11(struct zt_ctx *z, cbor_item_t *key, cbor_item_t *t,
			 struct zt_obj *o)
{
	cbor_item_t *attrs;
	int ret;

	ret = zt_name(z, key, o);
	if (!ret)
		ret = zt_struct_map(z, t, o, "object");
	if (!ret)
		ret = zt_shape(z, t, o);
	if (!ret)
		ret = zt_text(z, t, "format", true, o, &o->format);
	if (ret)
		return ret;
	attrs = tfs_cbor_get(t, "attributes");
	if (attrs) {
		ret = zt_attributes(z, attrs, o, false, &o->attrs);
		o->attrs_cbor = tfs_cbor_untag(attrs);
	}
	if (!ret)
		ret = zt_components(z, t, o, true);
	return ret;
}

/* ---- v0.1 ---------------------------------------------------------------- */

static const char *const zt_v01_keys[] = {
	"name",	    "offset",	       "size",	   "dtype", "layout", "shape",
	"encoding", "data_endianness", "checksum",
};

/* v0.1 custom fields (keys the format does not define) as attributes */
static int zt_v01_custom(struct zt_ctx *z, cbor_item_t *m, struct zt_obj *o)
{
	struct cbor_pair *pairs = cbor_map_handle(m);
	size_t i, k, n = cbor_map_size(m);
	json_t *v;
	char *key;
	bool known;

	for (i = 0; i < n; i++) {
		if (tfs_cbor_text(pairs[i].key, &key, NULL))
			return zt_oom(z); /* keys were checked: text */
		known = false;
		for (k = 0; k < sizeof(zt_v01_keys) / sizeof(*zt_v01_keys); k++)
			if (strcmp(key, zt_v01_keys[k]) == 0)
				known = true;
		if (!known) {
			v = tfs_cbor_to_json(pairs[i].value);
			if (!o->attrs)
				o->attrs = json_object();
			if (!v || !o->attrs) {
				json_decref(v);
				free(key);
				return zt_err(z, -EBADMSG, z->man_off, o,
					      "field '%.40s': not UTF-8", key);
			}
			json_object_set_new(o->attrs, key, v);
		}
		free(key);
	}
	return 0;
}

/* one v0.1 entry; *skip when its layout is not dense (reference: skipped) */
static int zt_entry_v01(struct zt_ctx *z, cbor_item_t *m, struct zt_obj *o,
			char **layout)
{
	struct zt_comp *c;
	char *dt = NULL, *enc = NULL, *endian = NULL;
	int ret;

	*layout = NULL;
	ret = zt_struct_map(z, m, NULL, "tensor entry");
	if (ret)
		return ret;
	m = tfs_cbor_untag(m);
	ret = zt_text(z, m, "name", true, NULL, &o->name);
	if (!ret) {
		o->name_len = strlen(o->name); /* messages name it from here */
		ret = zt_text(z, m, "layout", false, o, layout);
	}
	if (ret || (*layout && **layout && strcmp(*layout, "dense") != 0))
		return ret; /* not dense: the caller skips it */
	c = zt_add_comp(z, o, "data");
	if (!c)
		return zt_oom(z);
	ret = zt_uint(z, m, "offset", o, &c->offset, NULL);
	if (!ret)
		ret = zt_uint(z, m, "size", o, &c->length, NULL);
	if (!ret)
		ret = zt_text(z, m, "dtype", true, o, &dt);
	if (!ret) {
		o->dtype = c->dtype = zt_dtype(dt, false);
		if (o->dtype == TFS_DTYPE_INVALID)
			ret = zt_err(z, -EBADMSG, z->man_off, o,
				     "dtype: unknown dtype '%.40s'", dt);
	}
	if (!ret)
		ret = zt_shape(z, m, o);
	if (!ret)
		ret = zt_text(z, m, "encoding", true, o, &enc);
	/* the reference reads anything but "zstd" as raw */
	if (!ret && strcmp(enc, "zstd") == 0)
		c->zstd = true;
	else if (!ret && strcmp(enc, "raw") != 0)
		zt_warn(z,
			"tensor '%s': encoding '%.40s' read as raw, as the "
			"reference does",
			TFS_SHOWN(o->name, o->name_len), enc);
	if (!ret)
		ret = zt_text(z, m, "data_endianness", false, o, &endian);
	if (!ret && endian && strcmp(endian, "big") == 0)
		o->big_endian = true;
	if (!ret)
		ret = zt_text(z, m, "checksum", false, o, &c->digest);
	if (!ret)
		ret = zt_v01_custom(z, m, o);
	if (!ret) {
		o->format = strdup("dense");
		if (!o->format)
			ret = zt_oom(z);
	}
	free(dt);
	free(enc);
	free(endian);
	return ret;
}

/* ---- validation and the builder ------------------------------------------ */

/* the implied dtype of a v1.0 (and v0.1) component (spec section 6) */
static enum tfs_dtype zt_role_dtype(const struct zt_obj *o,
				    const struct zt_comp *c)
{
	if (strcmp(c->role, "data") == 0 || strcmp(c->role, "values") == 0)
		return o->dtype;
	if ((strcmp(o->format, "sparse_csr") == 0 &&
	     (strcmp(c->role, "indices") == 0 ||
	      strcmp(c->role, "indptr") == 0)) ||
	    (strcmp(o->format, "sparse_coo") == 0 &&
	     strcmp(c->role, "coords") == 0))
		return TFS_DTYPE_UINT64;
	return TFS_DTYPE_UINT8;
}

static const struct zt_comp *zt_find(const struct zt_obj *o, const char *role)
{
	size_t i;

	for (i = 0; i < o->ncomps; i++)
		if (strcmp(o->comps[i].role, role) == 0)
			return &o->comps[i];
	return NULL;
}

/* where the stored bytes are; the decoded size of a zstd component */
static int zt_check_comp(struct zt_ctx *z, const struct zt_obj *o,
			 struct zt_comp *c, bool dense_data,
			 uint64_t dense_bytes)
{
	char msg[TFS_CODEC_MSG_MAX];
	struct tfs_digest dg;
	int ret;

	if (c->offset % ZT_ALIGN)
		return zt_err(z, -EBADMSG, c->offset, o,
			      "component '%s': offset %llu is not a multiple "
			      "of 64",
			      c->role, (unsigned long long)c->offset);
	if (c->offset < ZT_ALIGN ||
	    !tfs_range_ok(c->offset, c->length, z->man_off))
		return zt_err(z, -EBADMSG, c->offset, o,
			      "component '%s': data [%llu, +%llu) is outside "
			      "the data area [64, %llu)",
			      c->role, (unsigned long long)c->offset,
			      (unsigned long long)c->length,
			      (unsigned long long)z->man_off);
	if (tfs_digest_parse(c->digest, &dg))
		return zt_err(z, -EBADMSG, z->man_off, o,
			      "component '%s': digest: malformed value "
			      "'%.80s'",
			      c->role, c->digest);
	if (!c->zstd) {
		if (dense_data && c->length != dense_bytes)
			return zt_err(z, -EBADMSG, z->man_off, o,
				      "data: length %llu does not match shape "
				      "x %u-byte %s = %llu",
				      (unsigned long long)c->length,
				      tfs_dtype_size(c->dtype),
				      tfs_dtype_name(c->dtype),
				      (unsigned long long)dense_bytes);
		if (c->has_ulen && c->ulen != c->length)
			return zt_err(z, -EBADMSG, z->man_off, o,
				      "component '%s': uncompressed_length "
				      "%llu differs from the raw length %llu",
				      c->role, (unsigned long long)c->ulen,
				      (unsigned long long)c->length);
		c->size = c->length;
		return 0;
	}
	if (c->has_ulen) {
		if (c->ulen > ZT_DECODED_MAX)
			return zt_err(z, -E2BIG, z->man_off, o,
				      "component '%s': uncompressed_length "
				      "%llu exceeds the 32 GiB limit",
				      c->role, (unsigned long long)c->ulen);
		if (dense_data && c->ulen != dense_bytes)
			return zt_err(z, -EBADMSG, z->man_off, o,
				      "component 'data': uncompressed_length "
				      "%llu differs from shape x element size "
				      "= %llu",
				      (unsigned long long)c->ulen,
				      (unsigned long long)dense_bytes);
		c->size = c->ulen;
		return 0;
	}
	if (dense_data) {
		if (dense_bytes > ZT_DECODED_MAX)
			return zt_err(z, -E2BIG, z->man_off, o,
				      "decoded size %llu exceeds the 32 GiB "
				      "limit",
				      (unsigned long long)dense_bytes);
		c->size = dense_bytes;
		return 0;
	}
	/* nothing says how large it is: count it now (frames have no FCS) */
	ret = tfs_codec_decoded_size(
		TFS_ENCODING_ZSTD, z->src->data + c->offset, (size_t)c->length,
		ZT_DECODED_MAX, &c->size, msg);
	if (ret == -ENOMEM)
		return zt_oom(z);
	if (ret)
		return zt_err(z, ret, c->offset, o, "component '%s': %s",
			      c->role, msg);
	return 0;
}

/* the file of component @c of @o, shown with @shape */
static void zt_comp_spec(const struct zt_ctx *z, const struct zt_obj *o,
			 const struct zt_comp *c, const uint64_t *shape,
			 size_t ndim, struct tfs_tensor_spec *s)
{
	tfs_spec_tensor(s, o->name, o->name_len, c->dtype, shape, ndim,
			z->man_off);
	tfs_spec_stored(s, c->offset, c->length);
	tfs_spec_size(s, c->size);
	tfs_spec_encoded(s, c->zstd ? TFS_ENCODING_ZSTD : TFS_ENCODING_RAW,
			 NULL);
	tfs_spec_digest(s, c->digest, false);
}

/* small scalar attributes as user.tensorfs.attr.<key> on @handle */
static int zt_attr_xattrs(struct zt_ctx *z, uint32_t handle, cbor_item_t *m)
{
	return tfs_cbor_attr_xattrs(z->b, handle, m) ? zt_oom(z) : 0;
}

/*
 * manifest.json's {"layout": F} of a tensor with nothing else there: one
 * object for all of them with the same F (a jansson object per tensor was
 * a tenth of a 100,000-tensor mount)
 */
static int zt_share_layout(struct zt_ctx *z, const struct zt_obj *o,
			   uint32_t handle)
{
	const char *f = json_string_value(json_object_get(z->layout, "layout"));

	if (!f || strcmp(f, o->format) != 0) {
		json_decref(z->layout);
		z->layout = json_pack("{s:s}", "layout", o->format);
	}
	return z->layout && !tfs_builder_share_manifest_extra(z->b, handle,
							      z->layout)
		       ? 0
		       : zt_oom(z);
}

/* xattrs and manifest members every tensor file or group gets */
static int zt_decorate(struct zt_ctx *z, const struct zt_obj *o,
		       uint32_t handle)
{
	json_t *extra;
	int ret;

	ret = tfs_builder_set_xattr_str(z->b, handle, "ztensor.layout",
					o->format);
	if (!ret && o->big_endian)
		ret = tfs_builder_set_xattr_str(z->b, handle, "byte_order",
						"big");
	if (ret)
		return zt_oom(z);
	if (!o->big_endian && !o->attrs)
		return zt_share_layout(z, o, handle);
	extra = tfs_builder_manifest_extra(z->b, handle);
	if (!extra)
		return zt_oom(z);
	json_object_set_new(extra, "layout", json_string(o->format));
	if (o->big_endian) {
		json_t *meta = tfs_builder_metadata(z->b), *be;

		json_object_set_new(extra, "byte_order", json_string("big"));
		be = json_object_get(meta, "big_endian_tensors");
		if (!be) {
			be = json_array();
			json_object_set_new(meta, "big_endian_tensors", be);
		}
		json_array_append_new(be, json_stringn(o->name, o->name_len));
	}
	if (o->attrs) {
		json_object_set(extra, "attributes", o->attrs);
		if (!z->obj_attrs)
			z->obj_attrs = json_object();
		json_object_setn(z->obj_attrs, o->name, o->name_len, o->attrs);
	}
	if (o->attrs_cbor)
		return zt_attr_xattrs(z, handle, o->attrs_cbor);
	/* v0.1 custom fields: JSON only; scalars as xattrs too */
	if (o->attrs) {
		const char *k;
		json_t *v;
		char *s;

		json_object_foreach(o->attrs, k, v)
		{
			if (json_is_object(v) || json_is_array(v) ||
			    strlen(k) > ZT_ATTR_KEY_MAX)
				continue;
			s = json_is_string(v) ? strdup(json_string_value(v))
					      : json_dumps(v, JSON_ENCODE_ANY);
			if (!s)
				return zt_oom(z);
			if (strlen(s) <= ZT_ATTR_XATTR_MAX) {
				char key[ZT_ATTR_KEY_MAX + 8];

				snprintf(key, sizeof(key), "attr.%s", k);
				ret = tfs_builder_set_xattr_str(z->b, handle,
								key, s);
			}
			free(s);
			if (ret)
				return zt_oom(z);
		}
	}
	return 0;
}

/* per-file xattrs of one component (or of a dense tensor file) */
static int zt_decorate_comp(struct zt_ctx *z, const struct zt_comp *c,
			    uint32_t handle)
{
	struct tfs_digest dg;
	json_t *extra;
	int ret = 0;

	tfs_digest_parse(c->digest, &dg); /* checked: cannot fail */
	if (dg.alg == TFS_DIGEST_UNKNOWN)
		ret = tfs_builder_set_xattr_str(
			z->b, handle, "digest_unverified", "unknown algorithm");
	if (!ret && c->type) {
		ret = tfs_builder_set_xattr_str(
			z->b, handle, "ztensor.logical_type", c->type);
		extra = tfs_builder_manifest_extra(z->b, handle);
		if (extra)
			json_object_set_new(extra, "logical_type",
					    json_string(c->type));
	}
	return ret ? zt_oom(z) : 0;
}

/* the natural shape of a component file (spec section 6) */
static void zt_comp_shape(const struct zt_obj *o, const struct zt_comp *c,
			  uint64_t nnz, bool have_nnz, uint64_t dims[2],
			  size_t *ndim)
{
	uint64_t count = c->size / tfs_dtype_size(c->dtype), want;

	*ndim = 1;
	dims[0] = count;
	if (strcmp(o->format, "sparse_coo") == 0 &&
	    strcmp(c->role, "coords") == 0 && have_nnz &&
	    tfs_mul_u64(nnz, o->ndim, &want) && want == count && o->ndim) {
		*ndim = 2;
		dims[0] = o->ndim;
		dims[1] = nnz;
	}
}

/* CSR count rules: warnings only, as the reference never checks them */
static void zt_csr_warnings(struct zt_ctx *z, const struct zt_obj *o,
			    uint64_t nnz)
{
	const struct zt_comp *ind = zt_find(o, "indices");
	const struct zt_comp *ptr = zt_find(o, "indptr");
	uint64_t n;

	if (o->ndim != 2) {
		zt_warn(z, "tensor '%s': sparse_csr with %zu dims, not 2",
			TFS_SHOWN(o->name, o->name_len), o->ndim);
		return;
	}
	if (ind && (n = ind->size / tfs_dtype_size(ind->dtype)) != nnz)
		zt_warn(z,
			"tensor '%s': sparse_csr: indices has %llu "
			"entries, values %llu",
			TFS_SHOWN(o->name, o->name_len), (unsigned long long)n,
			(unsigned long long)nnz);
	if (ptr &&
	    (n = ptr->size / tfs_dtype_size(ptr->dtype)) != o->shape[0] + 1)
		zt_warn(z,
			"tensor '%s': sparse_csr: indptr has %llu "
			"entries, rows + 1 = %llu",
			TFS_SHOWN(o->name, o->name_len), (unsigned long long)n,
			(unsigned long long)o->shape[0] + 1);
}

static int zt_emit_group(struct zt_ctx *z, struct zt_obj *o)
{
	struct tfs_tensor_spec s;
	const struct zt_comp *v = zt_find(o, "values");
	enum tfs_dtype dtype;
	uint64_t nnz = 0, dims[2], want;
	uint32_t group, h;
	size_t i, ndim;
	bool have_nnz = false;
	int ret;

	if (!v)
		v = zt_find(o, "data");
	dtype = o->dtype;
	if (dtype == TFS_DTYPE_INVALID && v)
		dtype = v->dtype;
	tfs_spec_tensor(&s, o->name, o->name_len, dtype, o->shape, o->ndim,
			z->man_off);
	v = zt_find(o, "values");
	for (i = 0; i < o->ncomps; i++) {
		/* dense with extra roles: 'data' still has the tensor's size */
		bool dd = strcmp(o->format, "dense") == 0 &&
			  strcmp(o->comps[i].role, "data") == 0 &&
			  tfs_shape_product(o->shape, o->ndim, &want) &&
			  tfs_mul_u64(want, tfs_dtype_size(o->comps[i].dtype),
				      &want);

		ret = zt_check_comp(z, o, &o->comps[i], dd, dd ? want : 0);
		if (ret)
			return ret;
		if (o->comps[i].size % tfs_dtype_size(o->comps[i].dtype))
			return zt_err(z, -EBADMSG, z->man_off, o,
				      "component '%s': %llu bytes is not a "
				      "multiple of the %u-byte %s",
				      o->comps[i].role,
				      (unsigned long long)o->comps[i].size,
				      tfs_dtype_size(o->comps[i].dtype),
				      tfs_dtype_name(o->comps[i].dtype));
	}
	if (v) {
		nnz = v->size / tfs_dtype_size(v->dtype);
		have_nnz = true;
	}
	if (strcmp(o->format, "sparse_coo") == 0 && have_nnz) {
		const struct zt_comp *co = zt_find(o, "coords");

		if (co && (!tfs_mul_u64(nnz, o->ndim, &want) ||
			   co->size / tfs_dtype_size(co->dtype) != want))
			return zt_err(
				z, -EBADMSG, z->man_off, o,
				"sparse_coo: coords holds %llu indices, "
				"not ndim x nnz = %zu x %llu",
				(unsigned long long)(co->size /
						     tfs_dtype_size(co->dtype)),
				o->ndim, (unsigned long long)nnz);
	}
	if (strcmp(o->format, "sparse_csr") == 0 && have_nnz)
		zt_csr_warnings(z, o, nnz);
	ret = tfs_builder_add_group(z->b, &s, &group, z->d);
	if (!ret)
		ret = zt_decorate(z, o, group);
	for (i = 0; i < o->ncomps && !ret; i++) {
		struct zt_comp *c = &o->comps[i];

		zt_comp_shape(o, c, nnz, have_nnz, dims, &ndim);
		zt_comp_spec(z, o, c, dims, ndim, &s);
		ret = tfs_builder_add_component(z->b, group, c->role, &s, &h,
						z->d);
		if (!ret)
			ret = zt_decorate_comp(z, c, h);
	}
	return ret;
}

static int zt_emit(struct zt_ctx *z, struct zt_obj *o)
{
	struct tfs_tensor_spec s;
	struct zt_comp *c;
	uint64_t count, bytes;
	uint32_t h;
	size_t i;
	int ret;

	/* v0.1 / v1.0: dtypes follow from the roles */
	for (i = 0; i < o->ncomps; i++)
		if (o->dtype != TFS_DTYPE_INVALID)
			o->comps[i].dtype = zt_role_dtype(o, &o->comps[i]);
	if (strcmp(o->format, "dense") != 0 || o->ncomps != 1 ||
	    strcmp(o->comps[0].role, "data") != 0) {
		if (strcmp(o->format, "dense") == 0 && !zt_find(o, "data"))
			return zt_err(z, -EBADMSG, z->man_off, o,
				      "components: a dense tensor has no "
				      "'data'");
		return zt_emit_group(z, o);
	}
	c = &o->comps[0];
	if (!tfs_shape_product(o->shape, o->ndim, &count) ||
	    !tfs_mul_u64(count, tfs_dtype_size(c->dtype), &bytes))
		return zt_err(z, -EBADMSG, z->man_off, o,
			      "shape: element count x element size "
			      "overflows 64 bits");
	ret = zt_check_comp(z, o, c, true, bytes);
	if (ret)
		return ret;
	zt_comp_spec(z, o, c, o->shape, o->ndim, &s);
	ret = tfs_builder_add_tensor(z->b, &s, &h, z->d);
	if (!ret)
		ret = zt_decorate(z, o, h);
	if (!ret)
		ret = zt_decorate_comp(z, c, h);
	return ret;
}

/* ---- the plain form, read in place ----------------------------------------*/

/*
 * The name map's pairs are read in place when they have the plain form the
 * reference writers produce: definite lengths, no tags, text keys without
 * NUL once each, known dtypes, no object attributes.  libcbor's DOM of each
 * pair was most of a 100,000-tensor mount.  Any other pair, and any the
 * rules would refuse, is read the other way (zt_next_pair and the checks
 * above), which says what is wrong: -EAGAIN from here means just that.
 */
#define ZT_FAST_KEYS 16

struct zt_keyset {
	const char *s[ZT_FAST_KEYS];
	size_t n[ZT_FAST_KEYS];
	unsigned count;
};

/* a struct-like map's next key: text without NUL, not seen before */
static int fast_key(struct tfs_cbor_pull *c, struct zt_keyset *ks,
		    const char **k, size_t *n)
{
	unsigned i;

	if (tfs_cbor_pull_text(c, k, n) || memchr(*k, 0, *n) ||
	    ks->count == ZT_FAST_KEYS)
		return -EAGAIN;
	for (i = 0; i < ks->count; i++)
		if (ks->n[i] == *n && memcmp(ks->s[i], *k, *n) == 0)
			return -EAGAIN;
	ks->s[ks->count] = *k;
	ks->n[ks->count++] = *n;
	return 0;
}

static bool key_is(const char *k, size_t n, const char *want)
{
	return strlen(want) == n && memcmp(k, want, n) == 0;
}

/* text without NUL as a new string */
static int fast_strdup(struct tfs_cbor_pull *c, char **out)
{
	const char *s;
	size_t n;

	if (tfs_cbor_pull_text(c, &s, &n) || memchr(s, 0, n))
		return -EAGAIN;
	*out = strndup(s, n);
	return *out ? 0 : -ENOMEM;
}

static int fast_dtype(struct tfs_cbor_pull *c, bool short_names,
		      enum tfs_dtype *out)
{
	char buf[16];
	const char *s;
	size_t n;

	if (tfs_cbor_pull_text(c, &s, &n) || n >= sizeof(buf) ||
	    memchr(s, 0, n))
		return -EAGAIN;
	memcpy(buf, s, n);
	buf[n] = '\0';
	*out = zt_dtype(buf, short_names);
	return *out == TFS_DTYPE_INVALID ? -EAGAIN : 0;
}

static int fast_shape(struct tfs_cbor_pull *c, struct zt_obj *o)
{
	uint64_t n, i;

	if (tfs_cbor_pull_array(c, &n) || n > c->len - c->pos || o->shape)
		return -EAGAIN;
	o->shape = calloc(n ? n : 1, sizeof(*o->shape));
	if (!o->shape)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		if (tfs_cbor_pull_uint(c, &o->shape[i]))
			return -EAGAIN;
	o->ndim = n;
	return 0;
}

/* one component's map, as zt_component() reads it */
static int fast_component(struct zt_ctx *z, struct tfs_cbor_pull *c,
			  struct zt_obj *o, char *role, bool short_names)
{
	struct zt_keyset ks = {0};
	struct zt_comp *cp = zt_add_comp(z, o, role);
	bool off = false, len = false, dt = false;
	const char *k, *s;
	uint64_t n, i;
	size_t kn, sn;
	int ret = 0;

	if (!cp)
		return -ENOMEM;
	if (tfs_cbor_pull_map(c, &n))
		return -EAGAIN;
	for (i = 0; !ret && i < n; i++) {
		ret = fast_key(c, &ks, &k, &kn);
		if (ret)
			break;
		if (key_is(k, kn, "offset")) {
			off = true;
			ret = tfs_cbor_pull_uint(c, &cp->offset);
		} else if (key_is(k, kn, "length")) {
			len = true;
			ret = tfs_cbor_pull_uint(c, &cp->length);
		} else if (key_is(k, kn, "encoding")) {
			ret = tfs_cbor_pull_text(c, &s, &sn);
			if (!ret && key_is(s, sn, "zstd"))
				cp->zstd = true;
			else if (!ret && !key_is(s, sn, "raw"))
				ret = -EAGAIN;
		} else if (key_is(k, kn, "digest")) {
			ret = fast_strdup(c, &cp->digest);
		} else if (short_names && key_is(k, kn, "dtype")) {
			dt = true;
			ret = fast_dtype(c, true, &cp->dtype);
		} else if (short_names && key_is(k, kn, "type")) {
			ret = fast_strdup(c, &cp->type);
		} else if (short_names &&
			   key_is(k, kn, "uncompressed_length")) {
			cp->has_ulen = true;
			ret = tfs_cbor_pull_uint(c, &cp->ulen);
		} else {
			ret = tfs_cbor_pull_skip(c);
		}
	}
	if (!ret && (!off || !len || (short_names && !dt)))
		ret = -EAGAIN;
	return ret;
}

static int fast_components(struct zt_ctx *z, struct tfs_cbor_pull *c,
			   struct zt_obj *o, bool short_names)
{
	struct zt_keyset ks = {0};
	const char *k;
	char *role;
	uint64_t n, i;
	size_t kn;
	int ret = 0;

	if (o->comps || tfs_cbor_pull_map(c, &n))
		return -EAGAIN;
	for (i = 0; !ret && i < n; i++) {
		ret = fast_key(c, &ks, &k, &kn);
		if (ret)
			break;
		role = strndup(k, kn);
		ret = role ? fast_component(z, c, o, role, short_names)
			   : -ENOMEM;
		free(role);
	}
	return ret;
}

/* a v1.0 tensor (zt_tensor_v10) or a v1.1+ object (zt_object_v11) */
static int fast_value(struct zt_ctx *z, struct tfs_cbor_pull *c,
		      struct zt_obj *o, bool v11)
{
	struct zt_keyset ks = {0};
	bool dt = false, comps = false;
	const char *k;
	uint64_t n, i;
	size_t kn;
	int ret = 0;

	if (tfs_cbor_pull_map(c, &n))
		return -EAGAIN;
	for (i = 0; !ret && i < n; i++) {
		ret = fast_key(c, &ks, &k, &kn);
		if (ret)
			break;
		if (!v11 && key_is(k, kn, "dtype")) {
			dt = true;
			ret = fast_dtype(c, false, &o->dtype);
		} else if (key_is(k, kn, "shape")) {
			ret = fast_shape(c, o);
		} else if (key_is(k, kn, "format")) {
			ret = o->format ? -EAGAIN : fast_strdup(c, &o->format);
		} else if (key_is(k, kn, "components")) {
			comps = true;
			ret = fast_components(z, c, o, v11);
		} else if (v11 && key_is(k, kn, "attributes")) {
			ret = -EAGAIN; /* JSON and xattrs: the DOM's work */
		} else {
			ret = tfs_cbor_pull_skip(c);
		}
	}
	if (!ret && ((!v11 && !dt) || !o->shape || !o->format || !comps))
		ret = -EAGAIN;
	return ret;
}

/*
 * The pair at *@at read in place into @o: 0 (*@at moved past it), -EAGAIN
 * (@o left empty: read it the other way) or -ENOMEM (reported)
 */
static int zt_fast_pair(struct zt_ctx *z, uint64_t *at, bool v11,
			struct zt_obj *o)
{
	struct tfs_cbor_pull c = {z->src->data + z->man_off, z->man_len, *at};
	const char *k;
	size_t kn;
	int ret;

	ret = tfs_cbor_pull_text(&c, &k, &kn);
	if (!ret && (memchr(k, 0, kn) || !(o->name = strndup(k, kn))))
		ret = o->name ? -EAGAIN : -ENOMEM;
	o->name_len = kn;
	if (!ret)
		ret = fast_value(z, &c, o, v11);
	if (ret) {
		zt_obj_free(o);
		return ret == -ENOMEM ? zt_oom(z) : -EAGAIN;
	}
	*at = c.pos;
	return 0;
}

/* ---- manifests ----------------------------------------------------------- */

typedef int (*zt_parse_fn)(struct zt_ctx *, cbor_item_t *, cbor_item_t *,
			   struct zt_obj *);

/* one pair of the streamed name map at *at: its key and value, decoded */
static int zt_next_pair(struct zt_ctx *z, uint64_t *at, cbor_item_t **key,
			cbor_item_t **value)
{
	const uint8_t *p = z->src->data + z->man_off;
	uint64_t used;
	int ret;

	*value = NULL;
	ret = tfs_cbor_load_walked(p + *at, z->man_len - *at, z->man_off + *at,
				   key, &used, z->d);
	if (ret)
		return ret;
	*at += used;
	ret = tfs_cbor_load_walked(p + *at, z->man_len - *at, z->man_off + *at,
				   value, &used, z->d);
	if (ret) {
		cbor_decref(key);
		return ret;
	}
	*at += used;
	return 0;
}

/*
 * zt_struct_map()'s rules for the streamed map: text keys without NUL,
 * none twice (only the keys are decoded)
 */
static int zt_stream_keys(struct zt_ctx *z, const char *what)
{
	const uint8_t *p = z->src->data + z->man_off;
	cbor_item_t *k;
	const char *dup;
	char **keys = calloc(z->npairs ? z->npairs : 1, sizeof(*keys));
	uint64_t at = z->pairs_at, used, i, n = 0;
	size_t len;
	int ret = keys ? 0 : -ENOMEM;

	for (i = 0; !ret && i < z->npairs; i++) {
		struct tfs_cbor_pull c = {p, z->man_len, at};
		const char *s;

		/* a plain text key is read in place; any other by libcbor */
		if (!tfs_cbor_pull_text(&c, &s, &len)) {
			at = c.pos;
			keys[n] = strndup(s, len);
			ret = keys[n] ? 0 : -ENOMEM;
		} else {
			ret = tfs_cbor_load_walked(p + at, z->man_len - at,
						   z->man_off + at, &k, &used,
						   z->d);
			if (ret)
				break;
			at += used;
			ret = tfs_cbor_text(k, &keys[n], &len);
			cbor_decref(&k);
		}
		if (ret == -ENOMEM)
			break;
		if (ret || strlen(keys[n]) != len) {
			ret = zt_err(z, -EBADMSG, z->man_off, NULL,
				     "%s: a key is not text", what);
			break;
		}
		n++;
		ret = tfs_cbor_walk(p + at, z->man_len - at, z->man_off + at,
				    TFS_CBOR_MAX_DEPTH, &used, z->d);
		at += used;
	}
	/* as tfs_cbor_keys_check() does: the same key reported */
	dup = ret ? NULL : tfs_cbor_key_twice(keys, n);
	if (dup)
		ret = zt_err(z, -EBADMSG, z->man_off, NULL,
			     "%s: key given twice: %s", what, dup);
	for (i = 0; keys && i <= n && i < z->npairs; i++)
		free(keys[i]);
	free(keys);
	return ret == -ENOMEM ? zt_oom(z) : ret;
}

/*
 * The name map, a pair at a time: a DOM of 100,000 tensors costs ~20
 * times the manifest and most of the load's time
 */
static int zt_name_map_stream(struct zt_ctx *z, const char *what,
			      zt_parse_fn parse)
{
	struct zt_obj o = {0};
	cbor_item_t *k, *v;
	uint64_t at = z->pairs_at, i;
	bool v11 = parse == zt_object_v11;
	int ret;

	ret = zt_stream_keys(z, what);
	for (i = 0; !ret && i < z->npairs; i++) {
		k = v = NULL;
		ret = zt_fast_pair(z, &at, v11, &o);
		if (ret == -EAGAIN) {
			ret = zt_next_pair(z, &at, &k, &v);
			if (!ret)
				ret = parse(z, k, tfs_cbor_untag(v), &o);
		}
		/* o.attrs_cbor points into v: emitted before v goes */
		if (!ret)
			ret = zt_emit(z, &o);
		zt_obj_free(&o);
		if (k)
			cbor_decref(&k);
		if (v)
			cbor_decref(&v);
	}
	return ret;
}

/* a map of name -> tensor/object; @parse fills a zt_obj from one pair */
static int zt_name_map(struct zt_ctx *z, cbor_item_t *root, const char *key,
		       zt_parse_fn parse)
{
	cbor_item_t *m = tfs_cbor_untag(tfs_cbor_get(root, key));
	struct cbor_pair *pairs;
	struct zt_obj o = {0};
	size_t i, n;
	int ret;

	if (!m)
		return zt_err(z, -EBADMSG, z->man_off, NULL, "%s: missing",
			      key);
	if (m == z->stand_in)
		return zt_name_map_stream(z, key, parse);
	ret = zt_struct_map(z, m, NULL, key);
	if (ret)
		return ret;
	pairs = cbor_map_handle(m);
	n = cbor_map_size(m);
	for (i = 0; i < n && !ret; i++) {
		ret = parse(z, pairs[i].key, tfs_cbor_untag(pairs[i].value),
			    &o);
		if (!ret)
			ret = zt_emit(z, &o);
		zt_obj_free(&o);
	}
	return ret;
}

static int zt_meta_text(struct zt_ctx *z, cbor_item_t *root, const char *key,
			bool required)
{
	char *s;
	int ret = zt_text(z, root, key, required, NULL, &s);

	if (ret || !s)
		return ret;
	json_object_set_new(tfs_builder_metadata(z->b), key, json_string(s));
	if (strcmp(key, "version") == 0 &&
	    tfs_builder_set_xattr_str(z->b, TFS_BUILDER_ROOT, "ztensor.version",
				      s))
		ret = zt_oom(z);
	free(s);
	return ret;
}

/* root attributes: metadata.json, and small scalars as root xattrs */
static int zt_root_attributes(struct zt_ctx *z, cbor_item_t *root,
			      bool required, bool text_only)
{
	cbor_item_t *attrs = tfs_cbor_get(root, "attributes");
	json_t *ja;
	int ret;

	if (!attrs)
		return required ? zt_err(z, -EBADMSG, z->man_off, NULL,
					 "attributes: missing")
				: 0;
	ret = zt_attributes(z, attrs, NULL, text_only, &ja);
	if (ret)
		return ret;
	json_object_set_new(tfs_builder_metadata(z->b), "attributes", ja);
	return zt_attr_xattrs(z, TFS_BUILDER_ROOT, attrs);
}

static int zt_load_v10(struct zt_ctx *z, cbor_item_t *root)
{
	int ret;

	ret = zt_meta_text(z, root, "version", true);
	if (!ret)
		ret = zt_meta_text(z, root, "generator", true);
	if (!ret)
		ret = zt_root_attributes(z, root, true, true);
	if (!ret)
		ret = zt_name_map(z, root, "tensors", zt_tensor_v10);
	return ret;
}

static int zt_load_v11(struct zt_ctx *z, cbor_item_t *root)
{
	int ret;

	ret = zt_meta_text(z, root, "version", true);
	if (!ret)
		ret = zt_root_attributes(z, root, false, false);
	if (!ret)
		ret = zt_name_map(z, root, "objects", zt_object_v11);
	return ret;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* v0.1 names live in an array: refuse one given twice (the builder would
 * keep both under different paths, hiding the clash) */
static int zt_v01_unique(struct zt_ctx *z, cbor_item_t *root)
{
	size_t i, k = 0, n = cbor_array_size(root);
	char **names = calloc(n ? n : 1, sizeof(*names));
	int ret = 0;

	if (!names)
		return zt_oom(z);
	for (i = 0; i < n; i++)
		if (tfs_cbor_text(
			    tfs_cbor_get(cbor_array_handle(root)[i], "name"),
			    &names[k], NULL) == 0)
			k++;
	qsort(names, k, sizeof(*names), cmp_str);
	for (i = 1; i < k && !ret; i++)
		if (strcmp(names[i - 1], names[i]) == 0)
			ret = zt_err(z, -EBADMSG, z->man_off, NULL,
				     "tensor '%s' given twice",
				     TFS_SHOWN(names[i], strlen(names[i])));
	for (i = 0; i < k; i++)
		free(names[i]);
	free(names);
	return ret;
}

static int zt_load_v01(struct zt_ctx *z, cbor_item_t *root)
{
	json_t *skipped = NULL;
	struct zt_obj o = {0};
	char *layout = NULL;
	size_t i, n = cbor_array_size(root);
	int ret = zt_v01_unique(z, root);

	for (i = 0; i < n && !ret; i++) {
		ret = zt_entry_v01(z, cbor_array_handle(root)[i], &o, &layout);
		if (!ret && layout && *layout && strcmp(layout, "dense") != 0) {
			/* the reference skips these silently; we say so */
			zt_warn(z,
				"tensor '%s': v0.1 layout '%.40s' skipped, "
				"as by the reference reader",
				TFS_SHOWN(o.name, strlen(o.name)), layout);
			if (!skipped)
				skipped = json_array();
			json_array_append_new(
				skipped, json_pack("{s:s,s:s}", "name", o.name,
						   "layout", layout));
		} else if (!ret) {
			ret = zt_emit(z, &o);
		}
		zt_obj_free(&o);
		free(layout);
		layout = NULL;
	}
	if (skipped)
		json_object_set_new(tfs_builder_metadata(z->b),
				    "skipped_tensors", skipped);
	return ret;
}

/* locate the manifest (spec section 2) */
static int zt_locate(struct zt_ctx *z)
{
	const struct tfs_source *src = z->src;
	uint64_t trailer, m, limit;

	if (memcmp(src->data, ZT_MAGIC_V01, 8) == 0) {
		z->form = ZT_FORM_V01;
		trailer = 8;
	} else if (src->size >= 24 &&
		   memcmp(src->data + src->size - 8, ZT_MAGIC_V1, 8) == 0) {
		z->form = ZT_FORM_FOOTER;
		trailer = 16;
	} else {
		z->form = ZT_FORM_V10;
		trailer = 8;
	}
	if (src->size < 8 + trailer)
		return tfs_diag_at(z->d, -EBADMSG, src->size,
				   "trailer: file of %llu bytes is too short "
				   "for a manifest size",
				   (unsigned long long)src->size);
	m = tfs_load_le(src->data + src->size - trailer, 8);
	limit = src->size - 8 - trailer;
	if (m > limit)
		return tfs_diag_at(z->d, -EBADMSG, src->size - trailer,
				   "manifest_size: %llu does not fit in the "
				   "file (at most %llu)",
				   (unsigned long long)m,
				   (unsigned long long)limit);
	if (m > ZT_MANIFEST_MAX)
		return tfs_diag_at(
			z->d, -E2BIG, src->size - trailer,
			"manifest_size: %llu exceeds the 1 GiB limit",
			(unsigned long long)m);
	z->man_len = m;
	z->man_off = src->size - trailer - m;
	return 0;
}

static const char *const zt_generation[] = {
	[ZT_FORM_V01] = "v0.1",
	[ZT_FORM_V10] = "v1.0",
	[ZT_FORM_FOOTER] = "v1.1/v1.2",
};

/* the manifest's root must match the form (spec section 2, step 4) */
static int zt_check_schema(struct zt_ctx *z, cbor_item_t *root)
{
	if (z->form == ZT_FORM_V01)
		return cbor_isa_array(root)
			       ? 0
			       : tfs_diag_at(z->d, -EBADMSG, z->man_off,
					     "manifest: a v0.1 (ZTEN0001) "
					     "manifest must be an array");
	if (!cbor_isa_map(root))
		return tfs_diag_at(z->d, -EBADMSG, z->man_off,
				   "manifest: root is not a map");
	if (z->form == ZT_FORM_FOOTER && !tfs_cbor_get(root, "objects"))
		return tfs_diag_at(z->d, -EBADMSG, z->man_off,
				   "manifest: no 'objects' key (a footer-form "
				   "v1.1/v1.2 file needs one%s)",
				   tfs_cbor_get(root, "tensors")
					   ? "; 'tensors' is the v1.0 schema"
					   : "");
	if (z->form == ZT_FORM_V10 && !tfs_cbor_get(root, "tensors"))
		return tfs_diag_at(
			z->d, -EBADMSG, z->man_off,
			"manifest: no 'tensors' key (a v1.1+ "
			"'objects' manifest needs the footer magic)");
	return 0;
}

/*
 * The manifest's root, whose name map ("tensors" in v1.0, "objects" after)
 * is left out when it is a definite map: an empty stand-in takes its
 * place, and zt_name_map() decodes it a pair at a time.  Every byte is
 * walked first, so a malformed manifest fails as the whole decode would.
 */
static int zt_decode_root(struct zt_ctx *z, cbor_item_t **root)
{
	const uint8_t *p = z->src->data + z->man_off;
	const char *big = z->form == ZT_FORM_V10      ? "tensors"
			  : z->form == ZT_FORM_FOOTER ? "objects"
						      : NULL;
	cbor_item_t *r = NULL, *k = NULL, *v = NULL;
	uint64_t used, n, head, at, i, vlen, pairs, phead;
	int ret;

	ret = tfs_cbor_walk(p, z->man_len, z->man_off, TFS_CBOR_MAX_DEPTH,
			    &used, z->d);
	if (ret)
		return ret;
	if (!big || tfs_cbor_map_head(p, used, &n, &head))
		return tfs_cbor_decode(p, z->man_len, z->man_off,
				       TFS_CBOR_MAX_DEPTH, root, &used, z->d);
	r = cbor_new_definite_map(n);
	if (!r)
		return zt_oom(z);
	for (at = head, i = 0; i < n; i++) {
		/*
		 * the last pair's, if still set, are the map's now: a
		 * failure below must not give back what it holds
		 */
		k = v = NULL;
		ret = tfs_cbor_load_walked(p + at, used - at, z->man_off + at,
					   &k, &vlen, z->d);
		if (ret)
			goto out;
		at += vlen;
		ret = tfs_cbor_walk(p + at, used - at, z->man_off + at,
				    TFS_CBOR_MAX_DEPTH, &vlen, z->d);
		if (ret)
			goto out;
		if (!z->stand_in && tfs_cbor_text_eq(k, big) &&
		    !tfs_cbor_map_head(p + at, vlen, &pairs, &phead)) {
			v = z->stand_in = cbor_new_definite_map(0);
			z->pairs_at = at + phead;
			z->npairs = pairs;
		} else {
			ret = tfs_cbor_load_walked(
				p + at, vlen, z->man_off + at, &v, &vlen, z->d);
			if (ret)
				goto out;
		}
		at += vlen;
		if (!v || !cbor_map_add(r, (struct cbor_pair){k, v})) {
			ret = zt_oom(z);
			goto out;
		}
		cbor_decref(&k);
		cbor_decref(&v);
	}
	*root = r;
	return 0;
out:
	if (k)
		cbor_decref(&k);
	if (v)
		cbor_decref(&v);
	cbor_decref(&r);
	return ret;
}

static int zt_load(const struct tfs_source *src, struct tfs_builder *b,
		   struct tfs_diag *d)
{
	struct zt_ctx z = {.src = src, .b = b, .d = d};
	json_t *meta = tfs_builder_metadata(b);
	cbor_item_t *root = NULL, *r;
	int ret;

	if (src->size < 8)
		return tfs_diag_at(d, -EBADMSG, 0, "magic: file too short");
	/* no two stored extents may share a byte (the reference does not
	 * check) */
	tfs_builder_set_overlap_rule(b, TFS_OVERLAP_FORBID);
	ret = zt_locate(&z);
	if (ret)
		return ret;
	ret = zt_decode_root(&z, &root);
	if (ret)
		return ret;
	r = tfs_cbor_untag(root);
	ret = zt_check_schema(&z, r);
	if (ret)
		goto out;
	json_object_set_new(meta, "generation",
			    json_string(zt_generation[z.form]));
	if (tfs_builder_set_xattr_str(b, TFS_BUILDER_ROOT, "ztensor.generation",
				      zt_generation[z.form])) {
		ret = zt_oom(&z);
		goto out;
	}
	if (z.form == ZT_FORM_V01)
		ret = zt_load_v01(&z, r);
	else if (z.form == ZT_FORM_V10)
		ret = zt_load_v10(&z, r);
	else
		ret = zt_load_v11(&z, r);
	if (!ret && z.obj_attrs)
		json_object_set(meta, "object_attributes", z.obj_attrs);
out:
	json_decref(z.obj_attrs);
	json_decref(z.layout);
	cbor_decref(&root);
	return ret;
}

TFS_FORMAT(ztensor, "zTensor 1.x (.zt): v0.1, v1.0, v1.1, v1.2",
	   .family = "ztensor", .probe = zt_probe, .load = zt_load);
