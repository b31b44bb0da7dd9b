// SPDX-License-Identifier: MIT
/*
 * GGUF v2/v3, little-endian (specs/gguf.md; reference ggml's gguf.cpp).
 *
 *   "GGUF", u32 version, u64 tensor_count, u64 kv_count,
 *   kv_count x (string key, u32 type, value),
 *   tensor_count x (string name, u32 n_dims, u64 ne[n_dims], u32 type,
 *                   u64 offset),
 *   zero padding to ALIGNMENT (general.alignment, default 32), the data.
 *
 * Every count is checked against the bytes that remain before anything is
 * allocated for it (a KV takes at least 14 bytes, a tensor info 24), every
 * string and array length likewise, so a hostile header costs nothing.
 * Arrays of arrays are read up to GGUF_MAX_DEPTH levels (the spec allows
 * them; ggml's reader refuses them).  The shape shown is row-major,
 * reverse(ne); ggml's order stays in user.tensorfs.gguf.ne.  Quantized
 * tensors are served as their raw blocks with ggml's lowercase type name
 * as dtype (the dtype table knows every block size).
 *
 * The key/values are read twice: at mount, checked, with the scalars as
 * root xattrs; then into JSON for metadata.json, at once when they are
 * small, else when metadata.json is first read (a 150,000-token
 * vocabulary would cost a third of a second at every mount).  The
 * set_part hook reads the header alone, for split models (gguf-split).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ggml_types.h"
#include "common/spans.h"
#include "core/builder.h"
#include "core/checked.h"
#include "core/cursor.h"
#include "core/diag.h"
#include "core/dtype.h"
#include "core/format.h"
#include "core/names.h"
#include "core/source.h"

#define GGUF_MAGIC "GGUF"
#define GGUF_STRING_MAX (1ull << 30)
#define GGUF_ARRAY_MAX (1ull << 30)
#define GGUF_NAME_MAX 63
#define GGUF_MAX_DIMS 4
#define GGUF_KV_MIN 14	 /* u64 key length, 1 key byte, u32 type, 1 byte */
#define GGUF_INFO_MIN 24 /* u64 name length, u32 n_dims, u32 type, u64 */
#define GGUF_MAX_DEPTH 8 /* arrays of arrays: levels */
#define GGUF_XATTR_KEY_MAX 200	   /* user.tensorfs.gguf.<key> */
#define GGUF_XATTR_VALUE_MAX 65536 /* Linux's XATTR_SIZE_MAX */
/* key/values up to this size go into metadata.json at mount, larger ones
 * when it is first read */
#define GGUF_EAGER_KV_BYTES (64u << 10)

enum gguf_vtype {
	GV_UINT8,
	GV_INT8,
	GV_UINT16,
	GV_INT16,
	GV_UINT32,
	GV_INT32,
	GV_FLOAT32,
	GV_BOOL,
	GV_STRING,
	GV_ARRAY,
	GV_UINT64,
	GV_INT64,
	GV_FLOAT64,
	GV_COUNT
};

static const char *const vtype_names[GV_COUNT] = {
	"UINT8", "INT8",   "UINT16", "INT16",  "UINT32", "INT32",  "FLOAT32",
	"BOOL",	 "STRING", "ARRAY",  "UINT64", "INT64",	 "FLOAT64"};

/* payload bytes of a fixed-size value type, 0 for STRING and ARRAY */
static const uint8_t vtype_size[GV_COUNT] = {1, 1, 2, 2, 4, 4, 4,
					     1, 0, 0, 8, 8, 8};

struct gguf_info {
	const uint8_t *name;
	uint64_t name_len, at;
	uint32_t n_dims, type;
	const struct tfs_ggml_type *gt; /* of @type */
	uint64_t ne[GGUF_MAX_DIMS];
	uint64_t offset, nbytes;
};

/* what the key/values say that matters to the layout and the summary */
struct gguf_head {
	uint32_t version;
	uint64_t n_tensors, n_kv;
	uint64_t alignment;
	uint64_t kv_start, kv_end; /* the key/value region */
	char *arch;		   /* general.architecture, or NULL */
	/* gguf-split: -1 when absent */
	int64_t split_no, split_count, split_tensors;
	uint64_t split_no_at, split_count_at, split_tensors_at; /* values */
};

struct gguf_ctx {
	const struct tfs_source *src;
	struct tfs_builder *b; /* NULL: no xattrs (set_part, metadata) */
	struct tfs_diag *d;
	struct tfs_cursor c;
	struct gguf_head h;
	struct tfs_span *keys;
	struct gguf_info *infos;
};

static int gguf_probe(const struct tfs_source *src)
{
	return src->size >= 4 && memcmp(src->data, GGUF_MAGIC, 4) == 0 ? 100
								       : 0;
}

static int truncated(struct gguf_ctx *z, const char *what)
{
	return tfs_diag_at(z->d, -EBADMSG, tfs_cursor_offset(&z->c),
			   "%s: the file ends inside it", what);
}

static int u32_at(struct gguf_ctx *z, const char *what, uint32_t *v)
{
	return tfs_cursor_u32le(&z->c, v) ? truncated(z, what) : 0;
}

static int u64_at(struct gguf_ctx *z, const char *what, uint64_t *v)
{
	return tfs_cursor_u64le(&z->c, v) ? truncated(z, what) : 0;
}

/* a u64-length string: the bytes stay where they are */
static int read_string(struct gguf_ctx *z, const char *what, const uint8_t **p,
		       uint64_t *len)
{
	uint64_t at = tfs_cursor_offset(&z->c);

	if (u64_at(z, what, len))
		return -EBADMSG;
	if (*len > GGUF_STRING_MAX)
		return tfs_diag_at(z->d, -EBADMSG, at,
				   "%s: a string of %" PRIu64
				   " bytes, above the limit of 1 GiB",
				   what, *len);
	if (tfs_cursor_bytes(&z->c, *len, p))
		return tfs_diag_at(z->d, -EBADMSG, at,
				   "%s: a string of %" PRIu64
				   " bytes, but only %" PRIu64 " are left",
				   what, *len, tfs_cursor_remaining(&z->c));
	return 0;
}

/* the payload of a fixed-size value as JSON (@v: its little-endian bits) */
static json_t *number_json(enum gguf_vtype type, uint64_t v)
{
	char num[24];
	uint32_t u;
	float f;
	double g;

	switch (type) {
	case GV_UINT8:
	case GV_UINT16:
	case GV_UINT32:
		return json_integer((json_int_t)v);
	case GV_INT8:
		return json_integer((int8_t)v);
	case GV_INT16:
		return json_integer((int16_t)v);
	case GV_INT32:
		return json_integer((int32_t)v);
	case GV_INT64:
		return json_integer((json_int_t)(int64_t)v);
	case GV_UINT64:
		if (v <= INT64_MAX)
			return json_integer((json_int_t)v);
		/* beyond JSON integers: its decimal digits */
		snprintf(num, sizeof(num), "%" PRIu64, v);
		return json_string(num);
	case GV_FLOAT32:
		u = (uint32_t)v;
		memcpy(&f, &u, 4);
		/* NaN and infinities are not JSON: null */
		return isfinite(f) ? json_real(f) : json_null();
	case GV_FLOAT64:
		memcpy(&g, &v, 8);
		return isfinite(g) ? json_real(g) : json_null();
	case GV_BOOL:
		/* the reference takes any non-zero byte as true */
		return json_boolean(v != 0);
	default:
		return NULL;
	}
}

/*
 * Skip @count strings: the hot loop of a mount (a vocabulary and its
 * merges are hundreds of thousands of them).  The first string that is
 * too long is read again by read_string, for its diagnostic.
 */
static int skip_strings(struct gguf_ctx *z, const char *key, uint64_t count)
{
	const uint8_t *p = z->c.p, *s;
	uint64_t pos = z->c.pos, end = z->c.len, len, i;
	int ret;

	for (i = 0; i < count; i++) {
		if (end - pos < 8)
			break;
		len = tfs_load_le(p + pos, 8);
		if (len > GGUF_STRING_MAX || len > end - pos - 8)
			break;
		pos += 8 + len;
	}
	tfs_cursor_seek(&z->c, pos);
	if (i == count)
		return 0;
	/* it fails there, naming the field and the offset */
	ret = read_string(z, key, &s, &len);
	return ret ? ret
		   : tfs_diag_at(z->d, -EBADMSG, pos, "%s: a bad string", key);
}

/*
 * One value of @type at the cursor: checked, and as JSON in *@out when @out
 * is not NULL (NULL: only checked and skipped).  Arrays may nest, up to
 * GGUF_MAX_DEPTH levels.
 */
static int read_value(struct gguf_ctx *z, uint32_t type, uint64_t type_at,
		      const char *key, unsigned depth, json_t **out)
{
	uint64_t count, at, min, i, v, len;
	const uint8_t *s;
	json_t *arr = NULL, *e;
	uint32_t et;
	int ret;

	if (type >= GV_COUNT)
		return tfs_diag_at(z->d, -EBADMSG, type_at,
				   "%s: value type %u is unknown", key, type);
	if (type == GV_STRING) {
		ret = read_string(z, key, &s, &len);
		if (!ret && out && !(*out = tfs_ggml_string_json(s, len)))
			ret = tfs_diag_oom(z->d);
		return ret;
	}
	if (type != GV_ARRAY) {
		if (tfs_cursor_le(&z->c, vtype_size[type], &v))
			return truncated(z, key);
		if (out && !(*out = number_json((enum gguf_vtype)type, v)))
			return tfs_diag_oom(z->d);
		return 0;
	}
	at = tfs_cursor_offset(&z->c);
	if (depth >= GGUF_MAX_DEPTH)
		return tfs_diag_at(z->d, -EBADMSG, type_at,
				   "%s: arrays nested deeper than %d "
				   "levels",
				   key, GGUF_MAX_DEPTH);
	if (u32_at(z, key, &et) || u64_at(z, key, &count))
		return -EBADMSG;
	if (et >= GV_COUNT)
		return tfs_diag_at(z->d, -EBADMSG, at,
				   "%s: array element type %u is unknown", key,
				   et);
	if (count > GGUF_ARRAY_MAX)
		return tfs_diag_at(z->d, -EBADMSG, at + 4,
				   "%s: an array of %" PRIu64
				   " elements, above the limit of 2^30",
				   key, count);
	/* the least each element takes, against the bytes left */
	min = et == GV_STRING ? 8 : et == GV_ARRAY ? 12 : vtype_size[et];
	if (count * min > tfs_cursor_remaining(&z->c))
		return tfs_diag_at(z->d, -EBADMSG, at + 4,
				   "%s: an array of %" PRIu64
				   " elements needs at least %" PRIu64
				   " bytes, only %" PRIu64 " are left",
				   key, count, count * min,
				   tfs_cursor_remaining(&z->c));
	if (!out && et != GV_STRING && et != GV_ARRAY) {
		/* fixed-size elements: skipped in one step */
		tfs_cursor_skip(&z->c, count * min);
		return 0;
	}
	if (!out && et == GV_STRING)
		return skip_strings(z, key, count);
	if (out && !(arr = json_array()))
		return tfs_diag_oom(z->d);
	for (i = 0; i < count; i++) {
		e = NULL;
		ret = read_value(z, et, at, key, depth + 1, out ? &e : NULL);
		if (!ret && out && json_array_append_new(arr, e))
			ret = tfs_diag_oom(z->d);
		if (ret) {
			json_decref(arr);
			return ret;
		}
	}
	if (out)
		*out = arr;
	return 0;
}

/* the shortest decimal that reads back as the same float / double */
static void real_text(char *buf, size_t len, double v, bool single)
{
	int prec;

	for (prec = single ? 6 : 15; prec < (single ? 9 : 17); prec++) {
		snprintf(buf, len, "%.*g", prec, v);
		if (single ? strtof(buf, NULL) == (float)v
			   : strtod(buf, NULL) == v)
			return;
	}
	snprintf(buf, len, "%.*g", prec, v);
}

/*
 * A scalar or string value also as the root xattr user.tensorfs.gguf.<key>
 * (keys that cannot be xattr names and strings above the xattr size limit
 * are only in metadata.json).
 */
static int kv_xattr(struct gguf_ctx *z, const struct tfs_span *k, uint32_t type,
		    const json_t *v)
{
	char xname[GGUF_XATTR_KEY_MAX + 8], num[40];
	const char *s = num;
	size_t len;

	/* split.*: gguf_load, for the set's first part only */
	if (!z->b || k->len > GGUF_XATTR_KEY_MAX ||
	    (k->len > 6 && memcmp(k->p, "split.", 6) == 0) ||
	    memchr(k->p, '\0', (size_t)k->len) ||
	    !tfs_utf8_valid(k->p, (size_t)k->len))
		return 0;
	snprintf(xname, sizeof(xname), "gguf.%.*s", (int)k->len,
		 (const char *)k->p);
	if (json_is_string(v)) {
		s = json_string_value(v);
		len = json_string_length(v);
		if (len > GGUF_XATTR_VALUE_MAX)
			return 0;
	} else if (json_is_integer(v)) {
		len = (size_t)snprintf(num, sizeof(num),
				       "%" JSON_INTEGER_FORMAT,
				       json_integer_value(v));
	} else if (json_is_real(v)) {
		real_text(num, sizeof(num), json_real_value(v),
			  type == GV_FLOAT32);
		len = strlen(num);
	} else if (json_is_boolean(v)) {
		s = json_is_true(v) ? "true" : "false";
		len = strlen(s);
	} else if (json_is_null(v)) {
		s = "nan"; /* a non-finite float */
		len = 3;
	} else {
		return 0; /* a string that is not UTF-8 */
	}
	return tfs_builder_set_xattr(z->b, TFS_BUILDER_ROOT, xname, s, len)
		       ? tfs_diag_oom(z->d)
		       : 0;
}

static bool key_is(const struct tfs_span *k, const char *name)
{
	return k->len == strlen(name) && memcmp(k->p, name, k->len) == 0;
}

/* the keys general.alignment, general.architecture and split.* */
static int kv_special(struct gguf_ctx *z, const struct tfs_span *k,
		      uint32_t type, uint64_t type_at, const json_t *v)
{
	json_int_t n = json_is_integer(v) ? json_integer_value(v) : -1;

	if (key_is(k, "general.alignment")) {
		if (type != GV_UINT32)
			return tfs_diag_at(z->d, -EBADMSG, type_at,
					   "kv 'general.alignment': type %s, "
					   "not UINT32",
					   vtype_names[type]);
		if (n == 0 || (n & (n - 1)))
			return tfs_diag_at(z->d, -EBADMSG, type_at + 4,
					   "kv 'general.alignment': %" PRId64
					   " is not a power of two",
					   (int64_t)n);
		z->h.alignment = (uint64_t)n;
	} else if (key_is(k, "general.architecture") && json_is_string(v)) {
		free(z->h.arch);
		z->h.arch = strdup(json_string_value(v));
		if (!z->h.arch)
			return tfs_diag_oom(z->d);
	} else if (key_is(k, "split.no") || key_is(k, "split.count") ||
		   key_is(k, "split.tensors.count")) {
		if (n < 0 || n > UINT32_MAX)
			return tfs_diag_at(z->d, -EBADMSG, type_at + 4,
					   "kv '%.*s': not a count (an "
					   "integer from 0 to 2^32-1)",
					   (int)k->len, (const char *)k->p);
		if (key_is(k, "split.no")) {
			z->h.split_no = n;
			z->h.split_no_at = type_at + 4;
		} else if (key_is(k, "split.count")) {
			z->h.split_count = n;
			z->h.split_count_at = type_at + 4;
		} else {
			z->h.split_tensors = n;
			z->h.split_tensors_at = type_at + 4;
		}
	}
	return 0;
}

/*
 * Check every key/value; scalars and strings become root xattrs, arrays
 * are only walked (metadata.json gets them later, kvs_json).
 */
static int read_kvs(struct gguf_ctx *z)
{
	char kb[TFS_PRINTABLE_MAX], label[TFS_PRINTABLE_MAX + 8];
	uint64_t i, type_at;
	uint32_t type;
	struct tfs_span *k;
	const struct tfs_span *dup;
	json_t *v;
	int ret;

	z->keys = calloc(z->h.n_kv ? z->h.n_kv : 1, sizeof(*z->keys));
	if (!z->keys)
		return tfs_diag_oom(z->d);
	z->h.kv_start = tfs_cursor_offset(&z->c);
	for (i = 0; i < z->h.n_kv; i++) {
		k = &z->keys[i];
		k->at = tfs_cursor_offset(&z->c);
		ret = read_string(z, "kv key", &k->p, &k->len);
		if (ret)
			return ret;
		if (!k->len)
			return tfs_diag_at(z->d, -EBADMSG, k->at,
					   "kv %" PRIu64 ": an empty key", i);
		type_at = tfs_cursor_offset(&z->c);
		if (u32_at(z, "kv value type", &type))
			return -EBADMSG;
		tfs_name_printable(kb, sizeof(kb), (const char *)k->p,
				   (size_t)k->len);
		snprintf(label, sizeof(label), "kv '%s'", kb);
		if (type == GV_ARRAY || type >= GV_COUNT) {
			ret = read_value(z, type, type_at, label, 0, NULL);
			if (!ret && key_is(k, "general.alignment"))
				ret = kv_special(z, k, type, type_at, NULL);
			if (ret)
				return ret;
			continue;
		}
		v = NULL;
		ret = read_value(z, type, type_at, label, 0, &v);
		if (!ret)
			ret = kv_special(z, k, type, type_at, v);
		if (!ret)
			ret = kv_xattr(z, k, type, v);
		json_decref(v);
		if (ret)
			return ret;
	}
	z->h.kv_end = tfs_cursor_offset(&z->c);
	/* keys are unique */
	dup = tfs_span_twice(z->keys, (size_t)z->h.n_kv, NULL);
	if (dup) {
		tfs_name_printable(kb, sizeof(kb), (const char *)dup->p,
				   (size_t)dup->len);
		return tfs_diag_at(z->d, -EBADMSG, dup->at,
				   "kv '%s': the key is given twice", kb);
	}
	return 0;
}

/*
 * The key/values as one JSON object, from a copy of their bytes that were
 * checked at mount (@base: their offset in the file).  Keys that are not
 * UTF-8 text are left out.  NULL when out of memory.
 */
static json_t *kvs_json(const uint8_t *p, uint64_t len, uint64_t base,
			uint64_t n_kv)
{
	struct gguf_ctx z = {0};
	struct tfs_diag d;
	json_t *obj = json_object(), *v;
	const uint8_t *key;
	uint64_t i, klen;
	uint32_t type;
	char *ks;

	tfs_diag_clear(&d);
	z.d = &d;
	tfs_cursor_init(&z.c, p, len, base);
	for (i = 0; obj && i < n_kv; i++) {
		v = NULL;
		if (read_string(&z, "kv key", &key, &klen) ||
		    u32_at(&z, "kv value type", &type) ||
		    read_value(&z, type, 0, "kv", 0, &v))
			goto fail;
		if (memchr(key, '\0', (size_t)klen) ||
		    !tfs_utf8_valid(key, (size_t)klen)) {
			json_decref(v);
			continue;
		}
		ks = strndup((const char *)key, (size_t)klen);
		if (!ks || json_object_set_new_nocheck(obj, ks, v)) {
			free(ks);
			goto fail;
		}
		free(ks);
	}
	return obj;
fail:
	json_decref(obj);
	return NULL;
}

struct kv_copy {
	uint8_t *p;
	uint64_t len, base, n_kv;
};

static json_t *kv_copy_json(void *arg)
{
	struct kv_copy *k = arg;

	return kvs_json(k->p, k->len, k->base, k->n_kv);
}

static void kv_copy_free(void *arg)
{
	struct kv_copy *k = arg;

	free(k->p);
	free(k);
}

/*
 * "metadata": every key/value.  A large region (a tokenizer's vocabulary)
 * is put into JSON only when metadata.json is first read, from a copy of
 * its bytes (the file may change under the mapping).
 */
static int metadata_kvs(struct gguf_ctx *z)
{
	uint64_t len = z->h.kv_end - z->h.kv_start;
	const uint8_t *p = z->src->data + z->h.kv_start;
	struct kv_copy *k;
	json_t *obj;

	if (len <= GGUF_EAGER_KV_BYTES) {
		obj = kvs_json(p, len, z->h.kv_start, z->h.n_kv);
		if (!obj || json_object_set_new(tfs_builder_metadata(z->b),
						"metadata", obj))
			return tfs_diag_oom(z->d);
		return 0;
	}
	k = calloc(1, sizeof(*k));
	if (!k || !(k->p = malloc((size_t)len))) {
		free(k);
		return tfs_diag_oom(z->d);
	}
	memcpy(k->p, p, (size_t)len);
	k->len = len;
	k->base = z->h.kv_start;
	k->n_kv = z->h.n_kv;
	return tfs_builder_defer_metadata(z->b, "metadata", kv_copy_json, k,
					  kv_copy_free)
		       ? tfs_diag_oom(z->d)
		       : 0;
}

static int read_info(struct gguf_ctx *z, uint64_t idx, struct gguf_info *t)
{
	char nb[TFS_PRINTABLE_MAX];
	uint64_t at, count = 1, pos;
	const struct tfs_dtype_info *di;
	uint32_t k;
	int ret;

	t->at = tfs_cursor_offset(&z->c);
	ret = read_string(z, "tensor name", &t->name, &t->name_len);
	if (ret)
		return ret;
	tfs_name_printable(nb, sizeof(nb), (const char *)t->name,
			   (size_t)t->name_len);
	if (t->name_len > GGUF_NAME_MAX)
		return tfs_diag_at(z->d, -EBADMSG, t->at,
				   "tensor %" PRIu64 " '%s': a name of %" PRIu64
				   " bytes, above ggml's limit of 63",
				   idx, nb, t->name_len);
	at = tfs_cursor_offset(&z->c);
	if (u32_at(z, "n_dims", &t->n_dims))
		return -EBADMSG;
	if (t->n_dims > GGUF_MAX_DIMS)
		return tfs_diag_at(z->d, -EBADMSG, at,
				   "tensor '%s': n_dims: %u, above 4", nb,
				   t->n_dims);
	for (k = 0; k < GGUF_MAX_DIMS; k++)
		t->ne[k] = 1;
	for (k = 0; k < t->n_dims; k++) {
		at = tfs_cursor_offset(&z->c);
		if (u64_at(z, "ne", &t->ne[k]))
			return -EBADMSG;
		if (t->ne[k] > INT64_MAX)
			return tfs_diag_at(z->d, -EBADMSG, at,
					   "tensor '%s': ne[%u] is negative",
					   nb, k);
		if (!tfs_mul_u64(count, t->ne[k], &count) || count > INT64_MAX)
			return tfs_diag_at(z->d, -EBADMSG, at,
					   "tensor '%s': the element count "
					   "overflows",
					   nb);
	}
	at = tfs_cursor_offset(&z->c);
	if (u32_at(z, "type", &t->type))
		return -EBADMSG;
	t->gt = tfs_ggml_type(t->type);
	if (!t->gt)
		return tfs_diag_at(z->d, -EBADMSG, at,
				   "tensor '%s': type %u is not a ggml type "
				   "(unknown or removed)",
				   nb, t->type);
	di = tfs_dtype_info(t->gt->dtype);
	if (t->ne[0] % di->block_elems)
		return tfs_diag_at(z->d, -EBADMSG, at,
				   "tensor '%s': ne[0] = %" PRIu64
				   " is not a multiple of %s's block of %u",
				   nb, t->ne[0], t->gt->name, di->block_elems);
	if (tfs_dtype_bytes(t->gt->dtype, count, &t->nbytes))
		return tfs_diag_at(z->d, -EBADMSG, at,
				   "tensor '%s': the byte size overflows", nb);
	pos = tfs_cursor_offset(&z->c);
	if (u64_at(z, "offset", &t->offset))
		return -EBADMSG;
	if (t->offset % z->h.alignment)
		return tfs_diag_at(
			z->d, -EBADMSG, pos,
			"tensor '%s': offset %" PRIu64
			" is not a multiple of the alignment %" PRIu64,
			nb, t->offset, z->h.alignment);
	return 0;
}

static int add_tensor(struct gguf_ctx *z, const struct gguf_info *t,
		      uint64_t data_start)
{
	struct tfs_tensor_spec s;
	uint64_t shape[GGUF_MAX_DIMS], off;
	char ne[128];
	uint32_t k, h;
	int ret;

	for (k = 0; k < t->n_dims; k++)
		shape[k] = t->ne[t->n_dims - 1 - k]; /* row-major */
	tfs_spec_tensor(&s, (const char *)t->name, (size_t)t->name_len,
			t->gt->dtype, shape, t->n_dims, t->at);
	/* an offset that overflows is refused by the builder's range check */
	if (!tfs_add_u64(data_start, t->offset, &off))
		off = UINT64_MAX;
	tfs_spec_raw(&s, off, t->nbytes);
	ret = tfs_builder_add_tensor(z->b, &s, &h, z->d);
	if (ret)
		return ret;
	tfs_ggml_ne_text(ne, sizeof(ne), t->ne, t->n_dims);
	if (tfs_builder_set_xattr_str(z->b, h, "gguf.ne", ne) ||
	    tfs_builder_set_xattr_str(z->b, h, "gguf.type", t->gt->name))
		return tfs_diag_oom(z->d);
	return 0;
}

static uint64_t pad_to(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

static void ctx_free(struct gguf_ctx *z)
{
	free(z->h.arch);
	free(z->keys);
	free(z->infos);
}

/*
 * @n entries of at least @min bytes each (the count @field, at @at) fit
 * in the bytes left (@after: what was read since the count)
 */
static int count_fits(struct gguf_ctx *z, uint64_t at, const char *field,
		      uint64_t n, uint64_t min, const char *what,
		      const char *after)
{
	if (n <= tfs_cursor_remaining(&z->c) / min)
		return 0;
	return tfs_diag_at(z->d, -EBADMSG, at,
			   "%s: %" PRIu64 " %s cannot fit in the %" PRIu64
			   " bytes left%s",
			   field, n, what, tfs_cursor_remaining(&z->c), after);
}

/* magic, version, counts and the key/values; the cursor ends after them */
static int read_head(struct gguf_ctx *z)
{
	struct gguf_head *h = &z->h;

	h->alignment = 32;
	h->split_no = h->split_count = h->split_tensors = -1;
	tfs_cursor_init(&z->c, z->src->data, z->src->size, 0);
	if (z->src->size < 4 || memcmp(z->src->data, GGUF_MAGIC, 4) != 0)
		return tfs_diag_at(z->d, -EBADMSG, 0, "magic: not GGUF");
	tfs_cursor_skip(&z->c, 4);
	if (u32_at(z, "version", &h->version))
		return -EBADMSG;
	/* what a little-endian reader sees of a big-endian file's 2 or 3 */
	if (h->version && (h->version & 0xffff) == 0)
		return tfs_diag_at(z->d, -ENOTSUP, 4,
				   "version: big-endian GGUF (0x%08x, as "
				   "written by gguf_convert_endian) is not "
				   "supported",
				   h->version);
	if (h->version == 0)
		return tfs_diag_at(z->d, -EBADMSG, 4, "version: 0 is invalid");
	if (h->version == 1)
		return tfs_diag_at(z->d, -ENOTSUP, 4,
				   "version: GGUF v1 (u32 counts) is not "
				   "supported (nor by ggml)");
	if (h->version > 3)
		return tfs_diag_at(z->d, -ENOTSUP, 4,
				   "version: %u is not supported (2 and 3 "
				   "are)",
				   h->version);
	if (u64_at(z, "tensor_count", &h->n_tensors) ||
	    u64_at(z, "kv_count", &h->n_kv))
		return -EBADMSG;
	/* counts against the bytes left, before anything is allocated */
	if (count_fits(z, 8, "tensor_count", h->n_tensors, GGUF_INFO_MIN,
		       "tensor infos", "") ||
	    count_fits(z, 16, "kv_count", h->n_kv, GGUF_KV_MIN, "key/values",
		       ""))
		return -EBADMSG;
	return read_kvs(z);
}

/* the tensor infos and the tensors, once the key/values are read */
static int add_tensors(struct gguf_ctx *z)
{
	uint64_t i, data_start = 0, next = 0, at;
	struct gguf_head *h = &z->h;
	int ret;

	if (count_fits(z, 8, "tensor_count", h->n_tensors, GGUF_INFO_MIN,
		       "tensor infos", " after the key/values"))
		return -EBADMSG;
	z->infos = calloc(h->n_tensors ? h->n_tensors : 1, sizeof(*z->infos));
	if (!z->infos)
		return tfs_diag_oom(z->d);
	for (i = 0; i < h->n_tensors; i++) {
		ret = read_info(z, i, &z->infos[i]);
		if (ret)
			return ret;
	}
	at = tfs_cursor_offset(&z->c);
	if (h->n_tensors) {
		data_start = pad_to(at, h->alignment);
		if (data_start > z->src->size)
			return tfs_diag_at(
				z->d, -EBADMSG, at,
				"data: the section would start at "
				"%" PRIu64 " (the infos end here, "
				"aligned to %" PRIu64 "), past the "
				"end of the file (%" PRIu64 " bytes)",
				data_start, h->alignment, z->src->size);
	}
	/* the reference requires the tensors packed in order: we warn */
	tfs_builder_set_overlap_rule(z->b, TFS_OVERLAP_WARN);
	for (i = 0; i < h->n_tensors; i++) {
		const struct gguf_info *t = &z->infos[i];

		if (t->offset != next &&
		    tfs_builder_warn(z->b, t->at,
				     "tensor %" PRIu64 ": offset %" PRIu64
				     " where a packed writer puts %" PRIu64,
				     i, t->offset, next))
			return tfs_diag_oom(z->d);
		/* only for the warning: a wrap is harmless */
		next = t->offset + pad_to(t->nbytes, h->alignment);
		ret = add_tensor(z, t, data_start);
		if (ret)
			return ret;
	}
	if (json_object_set_new(tfs_builder_metadata(z->b), "data_start",
				json_integer((json_int_t)data_start)))
		return tfs_diag_oom(z->d);
	return 0;
}

static int gguf_load(const struct tfs_source *src, struct tfs_builder *b,
		     struct tfs_diag *d)
{
	struct gguf_ctx z = {.src = src, .b = b, .d = d};
	json_t *meta = tfs_builder_metadata(b);
	char num[24];
	int ret;

	ret = read_head(&z);
	if (ret)
		goto out;
	snprintf(num, sizeof(num), "%u", z.h.version);
	if (json_object_set_new(meta, "version", json_integer(z.h.version)) ||
	    json_object_set_new(meta, "alignment",
				json_integer((json_int_t)z.h.alignment)) ||
	    tfs_builder_set_xattr_str(b, TFS_BUILDER_ROOT, "gguf.version",
				      num) ||
	    (z.h.arch && tfs_builder_set_xattr_str(b, TFS_BUILDER_ROOT,
						   "architecture", z.h.arch))) {
		ret = tfs_diag_oom(d);
		goto out;
	}
	/*
	 * a split set's root shows the first part's split keys (each part
	 * has its own in metadata.json)
	 */
	if (z.h.split_no <= 0) {
		static const char *const xn[] = {"gguf.split.no",
						 "gguf.split.count",
						 "gguf.split.tensors.count"};
		const int64_t xv[] = {z.h.split_no, z.h.split_count,
				      z.h.split_tensors};

		for (int k = 0; !ret && k < 3; k++) {
			if (xv[k] < 0)
				continue;
			snprintf(num, sizeof(num), "%" PRId64, xv[k]);
			if (tfs_builder_set_xattr_str(b, TFS_BUILDER_ROOT,
						      xn[k], num))
				ret = tfs_diag_oom(d);
		}
	}
	if (!ret)
		ret = add_tensors(&z);
	if (!ret)
		ret = metadata_kvs(&z);
out:
	ctx_free(&z);
	return ret;
}

/*
 * gguf-split names its parts NAME-00001-of-00003.gguf (llama.cpp's
 * llama_split_path, "%s-%05d-of-%05d.gguf"): the part number and count of
 * @name, or false when it is not named so.
 */
static bool split_name(const char *name, size_t *stem, uint32_t *no,
		       uint32_t *count)
{
	static const char tail[] = "-00000-of-00000.gguf";
	size_t n = strlen(name), t = sizeof(tail) - 1, k;
	const char *p;

	if (n <= t)
		return false;
	p = name + n - t;
	for (k = 0; k < t; k++)
		if (tail[k] == '0' ? !(p[k] >= '0' && p[k] <= '9')
				   : p[k] != tail[k])
			return false;
	*stem = n - t;
	*no = (uint32_t)strtoul(p + 1, NULL, 10);
	*count = (uint32_t)strtoul(p + 10, NULL, 10);
	return true;
}

static int gguf_set_part(const struct tfs_source *src, const char *name,
			 struct tfs_set_part *part, struct tfs_diag *d)
{
	struct gguf_ctx z = {.src = src, .d = d};
	uint32_t no, count, k;
	size_t stem;
	int ret;

	memset(part, 0, sizeof(*part));
	/* a header that cannot be read is the load's to report */
	if (read_head(&z) || z.h.split_count <= 1) {
		tfs_diag_clear(d);
		ret = 0;
		goto out;
	}
	if (z.h.split_no < 0) {
		ret = tfs_diag_at(d, -EBADMSG, z.h.split_count_at,
				  "split.count is %" PRId64 ", but split.no "
				  "is missing",
				  z.h.split_count);
		goto out;
	}
	if (z.h.split_no >= z.h.split_count) {
		ret = tfs_diag_at(d, -EBADMSG, z.h.split_no_at,
				  "split.no is %" PRId64 ", not a part of "
				  "split.count %" PRId64,
				  z.h.split_no, z.h.split_count);
		goto out;
	}
	if (!split_name(name, &stem, &no, &count)) {
		ret = tfs_diag_at(d, -EBADMSG, z.h.split_count_at,
				  "part %" PRId64 " of a split model of "
				  "%" PRId64 " (split.no, split.count), but "
				  "not named NAME-%05" PRId64 "-of-%05" PRId64
				  ".gguf: its other parts cannot be found",
				  z.h.split_no + 1, z.h.split_count,
				  z.h.split_no + 1, z.h.split_count);
		goto out;
	}
	if (count != z.h.split_count || no != z.h.split_no + 1) {
		ret = tfs_diag_at(d, -EBADMSG, z.h.split_count_at,
				  "the name says part %u of %u, but "
				  "split.no and split.count say %" PRId64
				  " of %" PRId64,
				  no, count, z.h.split_no + 1, z.h.split_count);
		goto out;
	}
	part->no = (uint32_t)z.h.split_no;
	part->count = (uint32_t)z.h.split_count;
	part->tensors_at = z.h.split_tensors_at;
	part->tensors = z.h.split_tensors >= 0 ? (uint64_t)z.h.split_tensors
					       : UINT64_MAX;
	part->names = calloc(count, sizeof(*part->names));
	ret = part->names ? 0 : -ENOMEM;
	for (k = 0; !ret && k < count; k++)
		if (asprintf(&part->names[k], "%.*s-%05u-of-%05u.gguf",
			     (int)stem, name, k + 1, count) < 0) {
			part->names[k] = NULL;
			ret = -ENOMEM;
		}
	if (ret) {
		tfs_set_part_free(part);
		ret = tfs_diag_oom(d);
	}
out:
	ctx_free(&z);
	return ret;
}

TFS_FORMAT(gguf, "GGUF v2/v3 (ggml, llama.cpp)", .probe = gguf_probe,
	   .load = gguf_load, .set_part = gguf_set_part);
