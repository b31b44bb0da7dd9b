// SPDX-License-Identifier: MIT
/*
 * primitiv File Format v0.1: Parameter, Model and Optimizer files (and the
 * single-Tensor data type).  Spec: shared/specs/primitiv.md.
 *
 * A file is a flat sequence of MessagePack objects: three uint32 header
 * words (ver_major 0, ver_minor 1, data_type), then the body the data type
 * names.  Nothing wraps the body; only a Shape's dims is itself an array:
 *
 *   Shape     = array<uint32> dims, uint32 batch
 *   Tensor    = Shape, bin data        (float32 LE, column-major)
 *   Parameter = Tensor value, uint32 N, N x (str key, Tensor stat)
 *   Model     = uint32 N, N x (array<str> key, Parameter)
 *   Optimizer = map<str,uint32> uint_configs, map<str,float> float_configs
 *
 * This is a strict pull reader over the bounds-checked cursor, not
 * msgpack-c: the grammar is fixed and the reference reader checks type
 * bytes exactly (uint32 only as 0xce, float only as 0xca), which a generic
 * unpacker normalises away; we need the absolute offset of every object
 * for diagnostics, which msgpack-c's object tree does not keep; and that
 * tree is allocated from the declared counts as they arrive, while here
 * nothing is allocated per item and a bin payload is only an offset and a
 * length into the mapping.
 *
 * Every length and count is checked against the bytes that remain before
 * anything is allocated for it; a count must leave room for its items at
 * their smallest encoding, so the work is bounded by the file size.
 *
 * Tree: a Parameter file's root is the parameter's directory (files
 * "value" and one per stat key, used verbatim as one path component).  In
 * a Model every parameter is a group at its key path, one component per key
 * element, holding the same files.  A Tensor file shows "tensor".  An
 * Optimizer file has no tensors; its configs go to metadata.json and to
 * "config.<key>" xattrs on the root.  Every tensor file is float32 with
 * order "F" and the shape as stored (trailing 1s already dropped by the
 * writer), with the batch appended when it is above 1.
 */
#include <errno.h>
#include <math.h>
#include <search.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse/msgpack.h"
#include "core/builder.h"
#include "core/checked.h"
#include "core/cursor.h"
#include "core/diag.h"
#include "core/dtype.h"
#include "core/format.h"
#include "core/names.h"
#include "core/source.h"

#define PV_HEADER_SIZE 15
#define PV_MAX_DIMS 8	    /* primitiv's Shape::MAX_DEPTH */
#define PV_MAX_KEY_DEPTH 64 /* our limit on a Model key's elements */
#define PV_ELEM_SIZE 4	    /* float32, the only element type */
#define PV_FIELD_MAX 96
#define PV_XATTR_NAME_MAX 255 /* XATTR_NAME_MAX */

#define PV_UINT32 0xce
#define PV_FLOAT32 0xca
#define PV_FLOAT64 0xcb

/* data_type values (spec section 2) */
#define PV_SHAPE 0x000
#define PV_TENSOR 0x100
#define PV_PARAMETER 0x200
#define PV_MODEL 0x300
#define PV_OPTIMIZER 0x400

/*
 * The smallest encoding of each grammar item, to refuse a count whose items
 * cannot fit in the bytes that remain: a Tensor is at least "90" (no dims),
 * a uint32 batch and "c4 00"; a str at least one fixstr byte.
 */
#define PV_MIN_U32 5
#define PV_MIN_TENSOR (1 + PV_MIN_U32 + 2)
#define PV_MIN_STAT (1 + PV_MIN_TENSOR)
#define PV_MIN_MODEL_ENTRY (2 + PV_MIN_TENSOR + PV_MIN_U32)
#define PV_MIN_CONFIG (1 + PV_MIN_U32)

/* The 15 bytes every real file starts with; byte 13 is the data type. */
static const uint8_t pv_prefix[PV_HEADER_SIZE] = {
	0xce, 0, 0, 0, 0, 0xce, 0, 0, 0, 1, 0xce, 0, 0, 0, 0,
};
#define PV_PREFIX_TYPE_BYTE 13

struct pv {
	struct tfs_mp m; /* the cursor and the diagnostic */
	struct tfs_builder *b;
	struct tfs_diag *d;
};

/* One tensor as read: the shape shown (dims, then batch if > 1), the bin. */
struct pv_tensor {
	uint64_t shape[PV_MAX_DIMS + 1];
	size_t ndim;
	uint64_t data_offset, data_length;
	uint64_t desc_offset; /* its Shape's first byte */
};

static int pv_probe(const struct tfs_source *src)
{
	const uint8_t *p = src->data;

	if (src->size < PV_HEADER_SIZE)
		return 0;
	if (memcmp(p, pv_prefix, PV_PREFIX_TYPE_BYTE) == 0 &&
	    p[PV_PREFIX_TYPE_BYTE] <= PV_OPTIMIZER >> 8 &&
	    p[PV_PREFIX_TYPE_BYTE + 1] == 0)
		return 100;
	/*
	 * Three uint32 objects but another version or data type: claim it
	 * weakly (any reader with a magic wins), so the user is told which
	 * header word is wrong instead of "not recognised".
	 */
	if (p[0] == PV_UINT32 && p[5] == PV_UINT32 && p[10] == PV_UINT32)
		return 10;
	return 0;
}

static int pv_nomem(struct pv *p)
{
	return tfs_diag_oom(p->d);
}

/*
 * Why a number the msgpack spec allows is still refused where @want (0xce
 * or 0xca; 0 for a str/bin/array/map) is required.
 */
static const char *pv_type_hint(uint8_t want, uint8_t type)
{
	if (want == PV_UINT32 &&
	    (type < 0x80 || (type >= 0xcc && type <= 0xcf)))
		return " (a shorter integer form; primitiv writes and reads "
		       "uint32 only as 0xce)";
	if (want == PV_FLOAT32 && type == PV_FLOAT64)
		return " (float64; primitiv reads only float32, 0xca)";
	return "";
}

static int pv_wrong_type(struct pv *p, uint64_t start, const char *field,
			 const char *expect, uint8_t want, uint8_t type)
{
	return tfs_mp_wrong_type(&p->m, start, field, expect, type,
				 pv_type_hint(want, type));
}

/* one object with a fixed type byte and a 4-byte payload */
static int pv_word(struct pv *p, const char *field, uint8_t want,
		   const char *expect, uint32_t *out, uint64_t *start)
{
	uint64_t v;
	uint8_t t;
	int ret;

	ret = tfs_mp_type(&p->m, field, expect, &t, start);
	if (ret)
		return ret;
	if (t != want)
		return pv_wrong_type(p, *start, field, expect, want, t);
	ret = tfs_mp_payload(&p->m, *start, field,
			     want == PV_UINT32 ? "uint32" : "float", 4, &v);
	if (!ret)
		*out = (uint32_t)v;
	return ret;
}

static int pv_u32(struct pv *p, const char *field, uint32_t *out,
		  uint64_t *start)
{
	return pv_word(p, field, PV_UINT32, "uint32 (0xce)", out, start);
}

static int pv_f32(struct pv *p, const char *field, float *out, uint64_t *start)
{
	uint32_t bits;
	int ret = pv_word(p, field, PV_FLOAT32, "float (0xca)", &bits, start);

	if (!ret)
		memcpy(out, &bits, sizeof(*out));
	return ret;
}

/*
 * A key string (stat key, Model key element, config key): it names a path
 * component, an xattr or a JSON member, so it must be UTF-8 (as msgpack
 * says a str is) and hold no NUL.  *s points into the mapping.
 */
static int pv_key(struct pv *p, const char *field, const uint8_t **s,
		  uint64_t *len, uint64_t *start)
{
	uint64_t at;
	int ret = tfs_mp_bytes(&p->m, field, TFS_MP_KSTR, s, len, start, &at);

	if (ret)
		return ret;
	if (!tfs_utf8_valid(*s, (size_t)*len))
		return tfs_mp_fail(&p->m, -EBADMSG, *start, field,
				   "the string is not valid UTF-8");
	if (memchr(*s, 0, *len))
		return tfs_mp_fail(&p->m, -ENOTSUP, *start, field,
				   "the string holds a NUL byte, which no file "
				   "name or xattr name can hold");
	return 0;
}

/* ---- duplicate detection: a balanced tree (glibc tsearch) of keys ---- */

struct pv_key {
	uint64_t offset; /* where the key is in the file */
	size_t len;
	uint8_t bytes[];
};

static int pv_key_cmp(const void *a, const void *b)
{
	const struct pv_key *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = n ? memcmp(x->bytes, y->bytes, n) : 0;

	if (c)
		return c;
	return x->len < y->len ? -1 : x->len > y->len;
}

/*
 * Add a key to @set.  Returns 0 when it is new, 1 when an equal key is
 * already there (*first gets that one's offset), -ENOMEM.
 */
static int pv_keyset_add(void **set, const void *bytes, size_t len,
			 uint64_t offset, uint64_t *first)
{
	struct pv_key *k = malloc(sizeof(*k) + len), **found;

	if (!k)
		return -ENOMEM;
	k->offset = offset;
	k->len = len;
	if (len)
		memcpy(k->bytes, bytes, len);
	found = tsearch(k, set, pv_key_cmp);
	if (!found) {
		free(k);
		return -ENOMEM;
	}
	if (*found != k) {
		*first = (*found)->offset;
		free(k);
		return 1;
	}
	return 0;
}

static void pv_keyset_free(void **set)
{
	if (*set)
		tdestroy(*set, free);
	*set = NULL;
}

/* ---- grammar ---------------------------------------------------------- */

/* Tensor = array<uint32> dims, uint32 batch, bin data */
static int pv_read_tensor(struct pv *p, const char *name, struct pv_tensor *t)
{
	char field[PV_FIELD_MAX];
	uint64_t n, start, count, bytes, len, i;
	const uint8_t *data;
	uint32_t v;
	int ret;

	t->desc_offset = tfs_cursor_offset(&p->m.c);
	snprintf(field, sizeof(field), "%s.shape.dims", name);
	ret = tfs_mp_len(&p->m, field, TFS_MP_KARRAY, &n, &start);
	if (ret)
		return ret;
	if (n > PV_MAX_DIMS)
		return tfs_mp_fail(&p->m, -EBADMSG, start, field,
				   "%llu dims, a primitiv Shape has at most %d",
				   (unsigned long long)n, PV_MAX_DIMS);
	for (i = 0; i < n; i++) {
		snprintf(field, sizeof(field), "%s.shape.dims[%llu]", name,
			 (unsigned long long)i);
		ret = pv_u32(p, field, &v, &start);
		if (ret)
			return ret;
		if (v == 0)
			return tfs_mp_fail(
				&p->m, -EBADMSG, start, field,
				"dim is 0, every dim must be at least 1");
		t->shape[i] = v;
	}
	t->ndim = (size_t)n;
	snprintf(field, sizeof(field), "%s.shape.batch", name);
	ret = pv_u32(p, field, &v, &start);
	if (ret)
		return ret;
	if (v == 0)
		return tfs_mp_fail(&p->m, -EBADMSG, start, field,
				   "batch is 0, it must be at least 1");
	if (v > 1)
		t->shape[t->ndim++] = v;
	snprintf(field, sizeof(field), "%s.data", name);
	ret = tfs_mp_bytes(&p->m, field, TFS_MP_KBIN, &data, &len, &start,
			   &t->data_offset);
	if (ret)
		return ret;
	t->data_length = len;
	if (!tfs_shape_product(t->shape, t->ndim, &count) ||
	    !tfs_mul_u64(count, PV_ELEM_SIZE, &bytes))
		return tfs_mp_fail(
			&p->m, -EBADMSG, start, field,
			"the shape's element count overflows 64 bits");
	if (bytes != len)
		return tfs_mp_fail(
			&p->m, -EBADMSG, start, field,
			"bin length %llu does not match the shape: "
			"%llu elements (dims x batch) x 4 bytes = %llu",
			(unsigned long long)len, (unsigned long long)count,
			(unsigned long long)bytes);
	return 0;
}

/*
 * Add tensor file @role: to group @group, or (TFS_BUILDER_ROOT) at the root
 * with @role as its one, unsplit path component.
 */
static int pv_add_file(struct pv *p, uint32_t group, const char *role,
		       const struct pv_tensor *t)
{
	const char *path[1] = {role};
	struct tfs_tensor_spec spec;
	uint32_t h;
	int ret;

	tfs_spec_tensor(&spec, role, strlen(role), TFS_DTYPE_FLOAT32, t->shape,
			t->ndim, t->desc_offset);
	tfs_spec_raw(&spec, t->data_offset, t->data_length);
	if (group == TFS_BUILDER_ROOT) {
		tfs_spec_path(&spec, path, 1);
		ret = tfs_builder_add_tensor(p->b, &spec, &h, p->d);
	} else {
		ret = tfs_builder_add_component(p->b, group, role, &spec, &h,
						p->d);
	}
	if (ret)
		return ret;
	if (tfs_builder_set_xattr_str(p->b, h, "order", "F"))
		return pv_nomem(p);
	return 0;
}

/* uint32 N, N x (str key, Tensor stat): the stats of one parameter */
static int pv_read_stats(struct pv *p, const char *prefix, uint32_t group,
			 uint32_t *count)
{
	char field[PV_FIELD_MAX], *role = NULL;
	uint64_t start, len, first;
	struct pv_tensor t;
	void *keys = NULL;
	const uint8_t *s;
	uint32_t n, i;
	int ret;

	snprintf(field, sizeof(field), "%sstat_count", prefix);
	ret = pv_u32(p, field, &n, &start);
	if (!ret)
		ret = tfs_mp_count_fits(&p->m, field, start, n, PV_MIN_STAT,
					"stats");
	if (!ret)
		*count = n;
	for (i = 0; !ret && i < n; i++) {
		snprintf(field, sizeof(field), "%sstats[%u].key", prefix, i);
		ret = pv_key(p, field, &s, &len, &start);
		if (ret)
			break;
		ret = pv_keyset_add(&keys, s, len, start, &first);
		if (ret < 0) {
			ret = pv_nomem(p);
			break;
		}
		if (ret) {
			ret = tfs_mp_fail(&p->m, -EBADMSG, start, field,
					  "duplicate stat key '%.*s' (first at "
					  "offset %llu)",
					  (int)(len < 64 ? len : 64), s,
					  (unsigned long long)first);
			break;
		}
		if (len == 5 && memcmp(s, "value", 5) == 0) {
			ret = tfs_mp_fail(
				&p->m, -ENOTSUP, start, field,
				"a stat named 'value' would take the "
				"place of the parameter's value file");
			break;
		}
		role = strndup((const char *)s, (size_t)len);
		if (!role) {
			ret = pv_nomem(p);
			break;
		}
		snprintf(field, sizeof(field), "%sstats[%u].value", prefix, i);
		ret = pv_read_tensor(p, field, &t);
		if (!ret)
			ret = pv_add_file(p, group, role, &t);
		free(role);
		role = NULL;
	}
	pv_keyset_free(&keys);
	return ret;
}

/* Parameter file: the root is the parameter's directory */
static int pv_read_parameter(struct pv *p, json_t *meta)
{
	struct pv_tensor t;
	uint32_t n = 0;
	int ret;

	ret = pv_read_tensor(p, "value", &t);
	if (!ret)
		ret = pv_add_file(p, TFS_BUILDER_ROOT, "value", &t);
	if (!ret)
		ret = pv_read_stats(p, "", TFS_BUILDER_ROOT, &n);
	if (!ret)
		json_object_set_new(meta, "stat_count", json_integer(n));
	return ret;
}

/* One Model key, read: its elements (NUL-terminated copies) and forms. */
struct pv_model_key {
	char **elems;
	uint64_t n;
	uint8_t *canon; /* each element as u32 BE length + bytes */
	size_t canon_len;
	char *name;   /* the elements joined by '.', for display */
	json_t *json; /* the elements as a JSON array */
};

static void pv_model_key_free(struct pv_model_key *k)
{
	uint64_t i;

	for (i = 0; k->elems && i < k->n; i++)
		free(k->elems[i]);
	free(k->elems);
	free(k->canon);
	free(k->name);
	json_decref(k->json);
	memset(k, 0, sizeof(*k));
}

/* append one element to every form of @k */
static int pv_model_key_push(struct pv_model_key *k, const uint8_t *s,
			     size_t len)
{
	size_t name_len = k->name ? strlen(k->name) : 0;
	uint8_t *canon;
	char *name;
	unsigned i;

	k->elems[k->n] = strndup((const char *)s, len);
	if (!k->elems[k->n])
		return -ENOMEM;
	k->n++;
	canon = realloc(k->canon, k->canon_len + 4 + len);
	if (!canon)
		return -ENOMEM;
	k->canon = canon;
	for (i = 0; i < 4; i++)
		canon[k->canon_len++] = (uint8_t)(len >> (24 - 8 * i));
	memcpy(canon + k->canon_len, s, len);
	k->canon_len += len;
	name = realloc(k->name, name_len + len + 2);
	if (!name)
		return -ENOMEM;
	k->name = name;
	if (k->n > 1)
		name[name_len++] = '.';
	memcpy(name + name_len, s, len);
	name[name_len + len] = '\0';
	if (json_array_append_new(k->json, json_stringn((const char *)s, len)))
		return -ENOMEM;
	return 0;
}

/* array<str> key: non-empty, at most PV_MAX_KEY_DEPTH elements */
static int pv_read_model_key(struct pv *p, const char *prefix,
			     struct pv_model_key *k, uint64_t *key_start)
{
	char field[PV_FIELD_MAX];
	uint64_t n, len, start, i;
	const uint8_t *s;
	int ret;

	snprintf(field, sizeof(field), "%skey", prefix);
	ret = tfs_mp_len(&p->m, field, TFS_MP_KARRAY, &n, key_start);
	if (ret)
		return ret;
	if (n == 0)
		return tfs_mp_fail(
			&p->m, -EBADMSG, *key_start, field,
			"empty key: a parameter needs at least a name");
	ret = tfs_mp_count_fits(&p->m, field, *key_start, n, 1, "key elements");
	if (ret)
		return ret;
	if (n > PV_MAX_KEY_DEPTH)
		return tfs_mp_fail(
			&p->m, -E2BIG, *key_start, field,
			"%llu key elements, tensorfs allows at most %d",
			(unsigned long long)n, PV_MAX_KEY_DEPTH);
	k->elems = calloc((size_t)n, sizeof(*k->elems));
	k->json = json_array();
	if (!k->elems || !k->json)
		return pv_nomem(p);
	for (i = 0; i < n; i++) {
		snprintf(field, sizeof(field), "%skey[%llu]", prefix,
			 (unsigned long long)i);
		ret = pv_key(p, field, &s, &len, &start);
		if (ret)
			return ret;
		if (pv_model_key_push(k, s, (size_t)len))
			return pv_nomem(p);
	}
	return 0;
}

/* one Model entry: array<str> key, Parameter (no file header) */
static int pv_read_model_entry(struct pv *p, uint32_t idx, void **keys)
{
	struct pv_model_key k = {0};
	char prefix[32], field[PV_FIELD_MAX];
	struct tfs_tensor_spec spec;
	uint64_t key_start, first;
	struct pv_tensor t;
	uint32_t group, nstats;
	int ret;

	snprintf(prefix, sizeof(prefix), "parameters[%u].", idx);
	ret = pv_read_model_key(p, prefix, &k, &key_start);
	if (ret)
		goto out;
	ret = pv_keyset_add(keys, k.canon, k.canon_len, key_start, &first);
	if (ret < 0) {
		ret = pv_nomem(p);
		goto out;
	}
	if (ret) {
		snprintf(field, sizeof(field), "%skey", prefix);
		ret = tfs_mp_fail(
			&p->m, -EBADMSG, key_start, field,
			"duplicate key '%.64s' (first at offset %llu)", k.name,
			(unsigned long long)first);
		goto out;
	}
	snprintf(field, sizeof(field), "%svalue", prefix);
	ret = pv_read_tensor(p, field, &t);
	if (ret)
		goto out;
	/* the group is the parameter: its value's dtype, shape and order */
	tfs_spec_tensor(&spec, k.name, strlen(k.name), TFS_DTYPE_FLOAT32,
			t.shape, t.ndim, key_start);
	tfs_spec_path(&spec, (const char *const *)k.elems, (size_t)k.n);
	ret = tfs_builder_add_group(p->b, &spec, &group, p->d);
	if (ret)
		goto out;
	if (json_object_set(tfs_builder_manifest_extra(p->b, group), "key",
			    k.json) ||
	    tfs_builder_set_xattr_str(p->b, group, "order", "F")) {
		ret = pv_nomem(p);
		goto out;
	}
	ret = pv_add_file(p, group, "value", &t);
	if (!ret)
		ret = pv_read_stats(p, prefix, group, &nstats);
out:
	pv_model_key_free(&k);
	return ret;
}

/* Model = uint32 N, N x (array<str> key, Parameter) */
static int pv_read_model(struct pv *p, json_t *meta)
{
	void *keys = NULL;
	uint64_t start;
	uint32_t n, i;
	int ret;

	ret = pv_u32(p, "parameter_count", &n, &start);
	if (!ret)
		ret = tfs_mp_count_fits(&p->m, "parameter_count", start, n,
					PV_MIN_MODEL_ENTRY, "parameters");
	if (!ret)
		json_object_set_new(meta, "parameter_count", json_integer(n));
	for (i = 0; !ret && i < n; i++)
		ret = pv_read_model_entry(p, i, &keys);
	pv_keyset_free(&keys);
	return ret;
}

/* the shortest decimal that reads back as the same float32 */
static void pv_float_text(char *buf, size_t len, float v)
{
	int prec;

	for (prec = 1; prec < 9; prec++) {
		snprintf(buf, len, "%.*g", prec, (double)v);
		if (strtof(buf, NULL) == v)
			return;
	}
	snprintf(buf, len, "%.9g", (double)v);
}

/* one config: JSON member and, when the name fits, a "config.<key>" xattr */
static int pv_add_config(struct pv *p, json_t *obj, const char *key,
			 json_t *value, const char *text)
{
	char *xname;
	int ret = 0;

	if (!value || json_object_set_new(obj, key, value))
		return pv_nomem(p);
	if (strlen(TFS_XATTR_PREFIX "config.") + strlen(key) >
	    PV_XATTR_NAME_MAX)
		return 0;
	if (asprintf(&xname, "config.%s", key) < 0)
		return pv_nomem(p);
	if (tfs_builder_set_xattr_str(p->b, TFS_BUILDER_ROOT, xname, text))
		ret = pv_nomem(p);
	free(xname);
	return ret;
}

/*
 * map<str,uint32> or map<str,float>.  @keys holds the keys of both maps,
 * since both become "config.<key>" xattrs; @float_start is where the float
 * map starts (0 while reading the uint map).
 */
static int pv_read_config_map(struct pv *p, const char *name, bool is_float,
			      json_t *meta, void **keys, uint64_t float_start)
{
	char field[PV_FIELD_MAX], text[32], *key = NULL;
	uint64_t n, i, start, len, first;
	json_t *obj = json_object(), *jv;
	const uint8_t *s;
	uint32_t u;
	float f;
	int ret;

	if (!obj)
		return pv_nomem(p);
	ret = tfs_mp_len(&p->m, name, TFS_MP_KMAP, &n, &start);
	if (!ret)
		ret = tfs_mp_count_fits(&p->m, name, start, n, PV_MIN_CONFIG,
					"entries");
	for (i = 0; !ret && i < n; i++) {
		snprintf(field, sizeof(field), "%s[%llu].key", name,
			 (unsigned long long)i);
		ret = pv_key(p, field, &s, &len, &start);
		if (ret)
			break;
		ret = pv_keyset_add(keys, s, len, start, &first);
		if (ret < 0) {
			ret = pv_nomem(p);
			break;
		}
		if (ret) {
			bool other = float_start && first < float_start;

			ret = tfs_mp_fail(
				&p->m, other ? -ENOTSUP : -EBADMSG, start,
				field, "%s '%.*s' (first at offset %llu)",
				other ? "the uint_configs already have "
					"a key"
				      : "duplicate key",
				(int)(len < 64 ? len : 64), s,
				(unsigned long long)first);
			break;
		}
		key = strndup((const char *)s, (size_t)len);
		if (!key) {
			ret = pv_nomem(p);
			break;
		}
		snprintf(field, sizeof(field), "%s[%llu].value", name,
			 (unsigned long long)i);
		if (is_float) {
			ret = pv_f32(p, field, &f, &start);
			if (ret)
				break;
			pv_float_text(text, sizeof(text), f);
			jv = isfinite(f) ? json_real((double)f) : json_null();
		} else {
			ret = pv_u32(p, field, &u, &start);
			if (ret)
				break;
			snprintf(text, sizeof(text), "%u", u);
			jv = json_integer(u);
		}
		ret = pv_add_config(p, obj, key, jv, text);
		free(key);
		key = NULL;
	}
	if (!ret && json_object_set(meta, name, obj))
		ret = pv_nomem(p);
	free(key);
	json_decref(obj);
	return ret;
}

/* Optimizer = map<str,uint32> uint_configs, map<str,float> float_configs */
static int pv_read_optimizer(struct pv *p, json_t *meta)
{
	void *keys = NULL;
	int ret;

	ret = pv_read_config_map(p, "uint_configs", false, meta, &keys, 0);
	if (!ret)
		ret = pv_read_config_map(p, "float_configs", true, meta, &keys,
					 tfs_cursor_offset(&p->m.c));
	pv_keyset_free(&keys);
	return ret;
}

/* a Tensor file: one tensor, shown as "tensor" */
static int pv_read_single_tensor(struct pv *p, json_t *meta)
{
	struct pv_tensor t;
	int ret = pv_read_tensor(p, "tensor", &t);

	(void)meta;
	return ret ? ret : pv_add_file(p, TFS_BUILDER_ROOT, "tensor", &t);
}

static const struct {
	uint32_t code;
	const char *name;
	int (*read)(struct pv *p, json_t *meta);
} pv_types[] = {
	{PV_TENSOR, "Tensor", pv_read_single_tensor},
	{PV_PARAMETER, "Parameter", pv_read_parameter},
	{PV_MODEL, "Model", pv_read_model},
	{PV_OPTIMIZER, "Optimizer", pv_read_optimizer},
};

/* ver_major (@major) or ver_minor: the one version read, 0.1 */
static int pv_version(struct pv *p, const char *field, bool major)
{
	uint32_t v;
	uint64_t start;
	int ret = pv_u32(p, field, &v, &start);

	if (ret || v == (major ? 0 : 1))
		return ret;
	return tfs_mp_fail(&p->m, -ENOTSUP, start, field,
			   major ? "version %u.x is not supported (only 0.1)"
				 : "version 0.%u is not supported (only 0.1)",
			   v);
}

/* ver_major 0, ver_minor 1, data_type: returns the pv_types index */
static int pv_read_header(struct pv *p, size_t *type)
{
	uint32_t dt;
	uint64_t start;
	size_t i;
	int ret;

	ret = pv_version(p, "ver_major", true);
	if (!ret)
		ret = pv_version(p, "ver_minor", false);
	if (ret)
		return ret;
	ret = pv_u32(p, "data_type", &dt, &start);
	if (ret)
		return ret;
	if (dt == PV_SHAPE)
		return tfs_mp_fail(&p->m, -ENOTSUP, start, "data_type",
				   "0x000 (a Shape file) holds no tensor; "
				   "primitiv has no writer or loader for it");
	for (i = 0; i < sizeof(pv_types) / sizeof(pv_types[0]); i++) {
		if (pv_types[i].code == dt) {
			*type = i;
			return 0;
		}
	}
	return tfs_mp_fail(&p->m, -EBADMSG, start, "data_type",
			   "0x%x is not a primitiv data type (0x100 Tensor, "
			   "0x200 Parameter, 0x300 Model, 0x400 Optimizer)",
			   dt);
}

static int pv_load(const struct tfs_source *src, struct tfs_builder *b,
		   struct tfs_diag *d)
{
	struct pv p = {.b = b, .d = d};
	json_t *meta = tfs_builder_metadata(b);
	uint64_t trailing;
	size_t type = 0;
	int ret;

	tfs_mp_init(&p.m, src->data, src->size, 0, d);
	ret = pv_read_header(&p, &type);
	if (ret)
		return ret;
	json_object_set_new(meta, "version", json_string("0.1"));
	json_object_set_new(meta, "data_type",
			    json_string(pv_types[type].name));
	json_object_set_new(meta, "data_type_code",
			    json_integer(pv_types[type].code));
	if (tfs_builder_set_xattr_str(b, TFS_BUILDER_ROOT, "primitiv.data_type",
				      pv_types[type].name))
		return pv_nomem(&p);
	ret = pv_types[type].read(&p, meta);
	if (ret)
		return ret;
	/*
	 * The reference reader never looks past the body.  We accept what it
	 * accepts, but say so: metadata.json records the extra bytes.
	 */
	trailing = tfs_cursor_remaining(&p.m.c);
	if (trailing) {
		json_object_set_new(meta, "trailing_bytes",
				    json_integer((json_int_t)trailing));
		json_object_set_new(
			meta, "trailing_offset",
			json_integer((json_int_t)tfs_cursor_offset(&p.m.c)));
	}
	return 0;
}

TFS_FORMAT(primitiv,
	   "primitiv v0.1 Parameter, Model or Optimizer file "
	   "(MessagePack)",
	   .probe = pv_probe, .load = pv_load);
