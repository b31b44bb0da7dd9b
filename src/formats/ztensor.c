// SPDX-License-Identifier: MIT
/*
 * zTensor 1.x (.zt).  Spec: shared/specs/ztensor.md.
 *
 * Layout: magic at 0, 64-aligned component blobs, a CBOR manifest, then a
 * little-endian u64 manifest size (and, from v1.1 on, the magic again as a
 * footer).  Detection follows spec section 2 exactly: the magic and the
 * footer select the generation, the manifest schema must agree with it.
 *
 * This reader handles v1.0 (map root with "tensors", long dtype names) with
 * dense raw tensors.  v0.1, the footer form (v1.1/v1.2), zstd, digests and
 * non-dense formats are refused as "not supported yet" so a user never gets
 * wrong bytes.  zTensor 2.x has another magic and is refused by name.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tensorfs/builder.h"
#include "tensorfs/cbor.h"
#include "tensorfs/checked.h"
#include "tensorfs/cursor.h"
#include "tensorfs/diag.h"
#include "tensorfs/dtype.h"
#include "tensorfs/format.h"
#include "tensorfs/source.h"

#define ZT_MAGIC_V01 "ZTEN0001"
#define ZT_MAGIC_V1 "ZTEN1000"
#define ZT_MAGIC_V2 "\x89ZT2\r\n\x1a\n"
#define ZT_ALIGN 64
#define ZT_MANIFEST_MAX (1ull << 30)

enum zt_form { ZT_FORM_V01, ZT_FORM_V10, ZT_FORM_FOOTER };

struct zt_ctx {
	const struct tfs_source *src;
	struct tfs_builder *b;
	struct tfs_diag *d;
	uint64_t man_off;	/* manifest start: where field errors point */
	uint64_t man_len;
	enum zt_form form;
};

static int zt_probe(const struct tfs_source *src)
{
	if (src->size < 8)
		return 0;
	if (memcmp(src->data, ZT_MAGIC_V01, 8) == 0 ||
	    memcmp(src->data, ZT_MAGIC_V1, 8) == 0 ||
	    memcmp(src->data, ZT_MAGIC_V2, 8) == 0)
		return 100;
	return 0;
}

/* v1.0 long dtype names (spec section 5) */
static enum tfs_dtype zt_long_dtype(const char *s)
{
	static const struct {
		const char *name;
		enum tfs_dtype t;
	} map[] = {
		{ "float64", TFS_DTYPE_FLOAT64 }, { "float32", TFS_DTYPE_FLOAT32 },
		{ "float16", TFS_DTYPE_FLOAT16 }, { "bfloat16", TFS_DTYPE_BFLOAT16 },
		{ "int64", TFS_DTYPE_INT64 },	  { "int32", TFS_DTYPE_INT32 },
		{ "int16", TFS_DTYPE_INT16 },	  { "int8", TFS_DTYPE_INT8 },
		{ "uint64", TFS_DTYPE_UINT64 },	  { "uint32", TFS_DTYPE_UINT32 },
		{ "uint16", TFS_DTYPE_UINT16 },	  { "uint8", TFS_DTYPE_UINT8 },
		{ "bool", TFS_DTYPE_BOOL },
	};
	size_t i;

	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(map[i].name, s) == 0)
			return map[i].t;
	return TFS_DTYPE_INVALID;
}

/* locate the manifest (spec section 2) */
static int zt_locate(struct zt_ctx *z)
{
	const struct tfs_source *src = z->src;
	uint64_t trailer, m, limit;

	if (memcmp(src->data, ZT_MAGIC_V2, 8) == 0)
		return tfs_diag_at(z->d, -ENOTSUP, 0,
				   "magic: zTensor 2.x (\\x89ZT2) is a "
				   "different format, not supported yet");
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
		return tfs_diag_at(z->d, -E2BIG, src->size - trailer,
				   "manifest_size: %llu exceeds the 1 GiB limit",
				   (unsigned long long)m);
	z->man_len = m;
	z->man_off = src->size - trailer - m;
	return 0;
}

static int zt_field_err(struct zt_ctx *z, const char *name, const char *what)
{
	return tfs_diag_at(z->d, -EBADMSG, z->man_off,
			   "manifest: tensor '%s': %s", name, what);
}

static int zt_shape(struct zt_ctx *z, const char *name, cbor_item_t *item,
		    uint64_t **shape, size_t *ndim)
{
	size_t i, n;

	item = tfs_cbor_untag(item);
	if (!item || !cbor_isa_array(item))
		return zt_field_err(z, name, "shape: not an array");
	n = cbor_array_size(item);
	*shape = calloc(n ? n : 1, sizeof(**shape));
	if (!*shape)
		return tfs_diag_set(z->d, -ENOMEM, "out of memory");
	for (i = 0; i < n; i++)
		if (!tfs_cbor_uint(cbor_array_handle(item)[i], &(*shape)[i]))
			return zt_field_err(z, name,
					    "shape: a dim is not an unsigned "
					    "integer");
	*ndim = n;
	return 0;
}

/* one v1.0 component map: offset, length, encoding?, digest? */
static int zt_component_v10(struct zt_ctx *z, const char *name,
			    cbor_item_t *comp, struct tfs_tensor_spec *spec)
{
	cbor_item_t *off, *len, *enc, *dig;
	char *bad = NULL;
	int ret;

	ret = tfs_cbor_keys_check(comp, &bad);
	if (ret) {
		ret = tfs_diag_at(z->d, -EBADMSG, z->man_off,
				  "manifest: tensor '%s': component: %s%s",
				  name, bad ? "duplicate key " : "bad keys",
				  bad ? bad : "");
		free(bad);
		return ret;
	}
	off = tfs_cbor_get(comp, "offset");
	len = tfs_cbor_get(comp, "length");
	enc = tfs_cbor_get(comp, "encoding");
	dig = tfs_cbor_get(comp, "digest");
	if (!off || !tfs_cbor_uint(off, &spec->offset))
		return zt_field_err(z, name, "offset: missing or not an "
					     "unsigned integer");
	if (!len || !tfs_cbor_uint(len, &spec->length))
		return zt_field_err(z, name, "length: missing or not an "
					     "unsigned integer");
	if (enc && !tfs_cbor_text_eq(enc, "raw")) {
		if (tfs_cbor_text_eq(enc, "zstd"))
			return tfs_diag_at(z->d, -ENOTSUP, z->man_off,
					   "manifest: tensor '%s': encoding: "
					   "zstd is not supported yet",
					   name);
		return zt_field_err(z, name, "encoding: unknown value");
	}
	if (dig)
		return tfs_diag_at(z->d, -ENOTSUP, z->man_off,
				   "manifest: tensor '%s': digest: checking "
				   "digests is not supported yet",
				   name);
	if (spec->offset % ZT_ALIGN)
		return tfs_diag_at(z->d, -EBADMSG, spec->offset,
				   "manifest: tensor '%s': offset %llu is not "
				   "a multiple of 64",
				   name, (unsigned long long)spec->offset);
	if (spec->offset < ZT_ALIGN ||
	    !tfs_range_ok(spec->offset, spec->length, z->man_off))
		return tfs_diag_at(z->d, -EBADMSG, spec->offset,
				   "manifest: tensor '%s': data [%llu, +%llu) "
				   "is outside the data area [64, %llu)",
				   name, (unsigned long long)spec->offset,
				   (unsigned long long)spec->length,
				   (unsigned long long)z->man_off);
	spec->encoding = TFS_ENCODING_RAW;
	spec->size = spec->length;
	return 0;
}

static int zt_tensor_v10(struct zt_ctx *z, cbor_item_t *key, cbor_item_t *t)
{
	struct tfs_tensor_spec spec = { 0 };
	cbor_item_t *dtype, *shape, *format, *comps, *data = NULL;
	char *name = NULL, *dt = NULL, *bad = NULL;
	struct cbor_pair *pairs;
	enum tfs_dtype dtv;
	size_t name_len, i, n;
	uint64_t *dims = NULL;
	int ret;

	ret = tfs_cbor_text(key, &name, &name_len);
	if (ret) {
		ret = tfs_diag_at(z->d, -EBADMSG, z->man_off,
				  "manifest: tensors: a name is not UTF-8 "
				  "text");
		goto out;
	}
	ret = tfs_cbor_keys_check(t, &bad);
	if (ret) {
		ret = zt_field_err(z, name, bad ? "duplicate key"
						: "not a map with text keys");
		goto out;
	}
	dtype = tfs_cbor_get(t, "dtype");
	shape = tfs_cbor_get(t, "shape");
	format = tfs_cbor_get(t, "format");
	comps = tfs_cbor_untag(tfs_cbor_get(t, "components"));
	if (!dtype || tfs_cbor_text(dtype, &dt, NULL)) {
		ret = zt_field_err(z, name, "dtype: missing or not text");
		goto out;
	}
	dtv = zt_long_dtype(dt);
	if (dtv == TFS_DTYPE_INVALID) {
		ret = tfs_diag_at(z->d, -EBADMSG, z->man_off,
				  "manifest: tensor '%s': dtype: unknown "
				  "dtype '%s'",
				  name, dt);
		goto out;
	}
	if (!shape) {
		ret = zt_field_err(z, name, "shape: missing");
		goto out;
	}
	ret = zt_shape(z, name, shape, &dims, &spec.ndim);
	if (ret)
		goto out;
	if (!format || !cbor_isa_string(tfs_cbor_untag(format))) {
		ret = zt_field_err(z, name, "format: missing or not text");
		goto out;
	}
	if (!tfs_cbor_text_eq(format, "dense")) {
		ret = tfs_diag_at(z->d, -ENOTSUP, z->man_off,
				  "manifest: tensor '%s': format: only dense "
				  "tensors are supported yet",
				  name);
		goto out;
	}
	if (!comps || !cbor_isa_map(comps)) {
		ret = zt_field_err(z, name, "components: missing or not a map");
		goto out;
	}
	ret = tfs_cbor_keys_check(comps, &bad);
	if (ret) {
		ret = zt_field_err(z, name, bad ? "components: duplicate role"
						: "components: bad role");
		goto out;
	}
	pairs = cbor_map_handle(comps);
	n = cbor_map_size(comps);
	for (i = 0; i < n; i++) {
		if (!tfs_cbor_text_eq(pairs[i].key, "data")) {
			ret = tfs_diag_at(z->d, -ENOTSUP, z->man_off,
					  "manifest: tensor '%s': components: "
					  "a dense tensor with roles other "
					  "than 'data' is not supported yet",
					  name);
			goto out;
		}
		data = tfs_cbor_untag(pairs[i].value);
	}
	if (!data || !cbor_isa_map(data)) {
		ret = zt_field_err(z, name, "components: no 'data' map");
		goto out;
	}
	ret = zt_component_v10(z, name, data, &spec);
	if (ret)
		goto out;
	spec.name = name;
	spec.name_len = name_len;
	spec.dtype = tfs_dtype_name(dtv);
	spec.elem_size = tfs_dtype_size(dtv);
	spec.shape = dims;
	spec.desc_offset = z->man_off;
	ret = tfs_builder_add_tensor(z->b, &spec, NULL, z->d);
out:
	free(name);
	free(dt);
	free(bad);
	free(dims);
	return ret;
}

static int zt_metadata_text(struct zt_ctx *z, cbor_item_t *root,
			    const char *key, bool required)
{
	cbor_item_t *v = tfs_cbor_get(root, key);
	char *s;

	if (!v)
		return required ? tfs_diag_at(z->d, -EBADMSG, z->man_off,
					      "manifest: %s: missing", key)
				: 0;
	if (tfs_cbor_text(v, &s, NULL))
		return tfs_diag_at(z->d, -EBADMSG, z->man_off,
				   "manifest: %s: not UTF-8 text", key);
	json_object_set_new(tfs_builder_metadata(z->b), key, json_string(s));
	if (strcmp(key, "version") == 0)
		tfs_builder_set_xattr_str(z->b, TFS_BUILDER_ROOT,
					  "ztensor.version", s);
	free(s);
	return 0;
}

static int zt_load_v10(struct zt_ctx *z, cbor_item_t *root)
{
	cbor_item_t *attrs, *tensors;
	struct cbor_pair *pairs;
	json_t *meta = tfs_builder_metadata(z->b), *ja;
	char *bad = NULL;
	size_t i, n;
	int ret;

	json_object_set_new(meta, "generation", json_string("v1.0"));
	ret = zt_metadata_text(z, root, "version", true);
	if (!ret)
		ret = zt_metadata_text(z, root, "generator", true);
	if (ret)
		return ret;
	/* attributes: required, text -> text */
	attrs = tfs_cbor_untag(tfs_cbor_get(root, "attributes"));
	if (!attrs || !cbor_isa_map(attrs))
		return tfs_diag_at(z->d, -EBADMSG, z->man_off,
				   "manifest: attributes: missing or not a "
				   "map");
	ret = tfs_cbor_keys_check(attrs, &bad);
	if (ret) {
		ret = tfs_diag_at(z->d, -EBADMSG, z->man_off,
				  "manifest: attributes: %s%s",
				  bad ? "duplicate key " : "a key is not text",
				  bad ? bad : "");
		free(bad);
		return ret;
	}
	pairs = cbor_map_handle(attrs);
	n = cbor_map_size(attrs);
	for (i = 0; i < n; i++)
		if (!cbor_isa_string(tfs_cbor_untag(pairs[i].value)))
			return tfs_diag_at(z->d, -EBADMSG, z->man_off,
					   "manifest: attributes: a value is "
					   "not text");
	ja = tfs_cbor_to_json(attrs);
	if (!ja)
		return tfs_diag_at(z->d, -EBADMSG, z->man_off,
				   "manifest: attributes: not UTF-8");
	json_object_set_new(meta, "attributes", ja);

	tensors = tfs_cbor_untag(tfs_cbor_get(root, "tensors"));
	if (!tensors || !cbor_isa_map(tensors))
		return tfs_diag_at(z->d, -EBADMSG, z->man_off,
				   "manifest: tensors: missing or not a map");
	ret = tfs_cbor_keys_check(tensors, &bad);
	if (ret) {
		ret = tfs_diag_at(z->d, -EBADMSG, z->man_off,
				  "manifest: tensors: %s%s",
				  bad ? "duplicate name " : "a name is not text",
				  bad ? bad : "");
		free(bad);
		return ret;
	}
	pairs = cbor_map_handle(tensors);
	n = cbor_map_size(tensors);
	for (i = 0; i < n && !ret; i++)
		ret = zt_tensor_v10(z, pairs[i].key, pairs[i].value);
	return ret;
}

static int zt_load(const struct tfs_source *src, struct tfs_builder *b,
		   struct tfs_diag *d)
{
	struct zt_ctx z = { .src = src, .b = b, .d = d };
	cbor_item_t *root = NULL;
	uint64_t used;
	int ret;

	if (src->size < 8)
		return tfs_diag_at(d, -EBADMSG, 0, "magic: file too short");
	ret = zt_locate(&z);
	if (ret)
		return ret;
	if (z.form == ZT_FORM_V01)
		return tfs_diag_at(d, -ENOTSUP, 0,
				   "magic: zTensor v0.1 (ZTEN0001) is not "
				   "supported yet");
	if (z.form == ZT_FORM_FOOTER)
		return tfs_diag_at(d, -ENOTSUP, src->size - 8,
				   "footer: zTensor v1.1/v1.2 (footer magic) "
				   "is not supported yet");
	ret = tfs_cbor_decode(src->data + z.man_off, z.man_len, z.man_off,
			      TFS_CBOR_MAX_DEPTH, &root, &used, d);
	if (ret)
		return ret;
	if (!cbor_isa_map(tfs_cbor_untag(root))) {
		ret = tfs_diag_at(d, -EBADMSG, z.man_off,
				  "manifest: root is not a map");
		goto out;
	}
	if (!tfs_cbor_get(root, "tensors")) {
		ret = tfs_diag_at(d, -EBADMSG, z.man_off,
				  "manifest: no 'tensors' key (a v1.1+ "
				  "'objects' manifest needs the footer magic)");
		goto out;
	}
	ret = zt_load_v10(&z, tfs_cbor_untag(root));
out:
	cbor_decref(&root);
	return ret;
}

const struct tfs_format tfs_format_ztensor = {
	.name = "ztensor",
	.description = "zTensor 1.x (.zt)",
	.probe = zt_probe,
	.load = zt_load,
};
