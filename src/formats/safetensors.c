// SPDX-License-Identifier: MIT
/*
 * safetensors (specs/safetensors.md; reference huggingface/safetensors
 * tensor.rs): u64 LE header length N, N bytes of JSON, the byte buffer.
 *
 * The header (up to 100,000,000 bytes) is read by the pull reader
 * (parse/json.h) in one pass: memory is O(tensors), never O(a hostile
 * count), and every refusal names the JSON token at fault by its file
 * offset.  Rules checked here, all of the reference's and a few more:
 *   - every tensor's dtype known, shape non-negative integers,
 *     data_offsets exactly [begin, end], end >= begin;
 *   - sorted by (begin, end), the tensors tile the buffer from 0 with no
 *     gap and no overlap, and the buffer ends exactly at the file's end;
 *   - end - begin == the bytes of prod(shape) elements (the builder's
 *     tfs_dtype_bytes rule, so F4/F6 must fill whole bytes);
 *   - a name given twice is refused (the reference keeps the last), a
 *     tensor cannot be called __metadata__, whose values must be strings
 *     (__metadata__: null is no metadata, as the reference reader and
 *     MLX's writer take it).
 * The data may be misaligned for its type: bytes are only ever served,
 * never loaded as typed values.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "formats/common/dtype_labels.h"
#include "parse/json.h"
#include "core/builder.h"
#include "core/checked.h"
#include "core/cursor.h"
#include "core/diag.h"
#include "core/dtype.h"
#include "core/format.h"
#include "core/names.h"
#include "core/source.h"

#include "common/hf_index.h"

#define ST_HEADER_MAX 100000000ull
#define ST_MAX_DIMS 64
/* __metadata__: at most this many JSON values copied to metadata.json */
#define ST_META_NODES 1000000

static const struct tfs_dtype_label st_dtypes[] = {
	{"BOOL", TFS_DTYPE_BOOL},
	{"U8", TFS_DTYPE_UINT8},
	{"I8", TFS_DTYPE_INT8},
	{"I16", TFS_DTYPE_INT16},
	{"U16", TFS_DTYPE_UINT16},
	{"F16", TFS_DTYPE_FLOAT16},
	{"BF16", TFS_DTYPE_BFLOAT16},
	{"I32", TFS_DTYPE_INT32},
	{"U32", TFS_DTYPE_UINT32},
	{"F32", TFS_DTYPE_FLOAT32},
	{"I64", TFS_DTYPE_INT64},
	{"U64", TFS_DTYPE_UINT64},
	{"F64", TFS_DTYPE_FLOAT64},
	{"C64", TFS_DTYPE_COMPLEX64},
	{"F8_E5M2", TFS_DTYPE_FLOAT8_E5M2},
	{"F8_E4M3", TFS_DTYPE_FLOAT8_E4M3},
	{"F8_E8M0", TFS_DTYPE_FLOAT8_E8M0},
	{"F8_E4M3FNUZ", TFS_DTYPE_FLOAT8_E4M3FNUZ},
	{"F8_E5M2FNUZ", TFS_DTYPE_FLOAT8_E5M2FNUZ},
	{"F4", TFS_DTYPE_FLOAT4},
	{"F6_E2M3", TFS_DTYPE_FLOAT6_E2M3},
	{"F6_E3M2", TFS_DTYPE_FLOAT6_E3M2},
};

struct st_tensor {
	char *name;
	size_t name_len;
	uint64_t at; /* the key's offset: where it is described */
	enum tfs_dtype dtype;
	char native[16];
	uint64_t shape[ST_MAX_DIMS];
	uint32_t ndim;
	uint64_t begin, end;
	uint64_t offsets_at;
};

struct st_ctx {
	const struct tfs_source *src;
	struct tfs_builder *b;
	struct tfs_diag *d;
	struct tfs_json j;
	uint64_t n;	    /* header length */
	uint64_t buf_start; /* 8 + n */
	struct st_tensor *t;
	size_t nt, cap;
};

/*
 * The first non-whitespace byte after the length is '{'.  A length that is
 * too large or runs past the end still claims the file, weakly, so that
 * the user hears what is wrong with it rather than "not recognised".
 */
static int st_probe(const struct tfs_source *src)
{
	uint64_t n, i;

	if (src->size < 9)
		return 0;
	n = tfs_load_le(src->data, 8);
	for (i = 8; i < src->size && i < 8 + 4096; i++) {
		char c = (char)src->data[i];

		if (c == '{')
			return n <= ST_HEADER_MAX && n <= src->size - 8 ? 50
									: 10;
		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			return 0;
	}
	return 0;
}

/* a printable tensor name for messages */

static int st_dtype(struct st_ctx *z, struct st_tensor *x,
		    const struct tfs_json_token *v)
{
	size_t i;

	if (tfs_json_want(v, TFS_JSON_STRING, z->d, "tensor '%s': dtype",
			  TFS_SHOWN(x->name, x->name_len)))
		return -EBADMSG;
	for (i = 0; i < sizeof(st_dtypes) / sizeof(st_dtypes[0]); i++)
		if (tfs_json_eq(v, st_dtypes[i].name)) {
			x->dtype = st_dtypes[i].dtype;
			strcpy(x->native, st_dtypes[i].name);
			return 0;
		}
	return tfs_diag_at(z->d, -EBADMSG, v->offset,
			   "tensor '%s': dtype: unknown dtype '%.*s'",
			   TFS_SHOWN(x->name, x->name_len),
			   (int)(v->len < 24 ? v->len : 24), v->p);
}

/* an array of non-negative integers; exactly @want of them unless 0 */
static int st_uints(struct st_ctx *z, struct st_tensor *x,
		    const struct tfs_json_token *open, const char *field,
		    uint64_t *out, uint32_t max, uint32_t want, uint32_t *count)
{
	int ret;

	ret = tfs_json_u64s(&z->j, open, out, max, count, z->d,
			    "tensor '%s': %s", TFS_SHOWN(x->name, x->name_len),
			    field);
	if (!ret && want && *count != want)
		return tfs_diag_at(z->d, -EBADMSG, open->offset,
				   "tensor '%s': %s: %u entries, not %u",
				   TFS_SHOWN(x->name, x->name_len), field,
				   *count, want);
	return ret;
}

/* one tensor's object: {"dtype", "shape", "data_offsets", others ignored} */
static int st_tensor(struct st_ctx *z, struct st_tensor *x,
		     const struct tfs_json_token *open)
{
	struct tfs_json_token k, v;
	bool have_dtype = false, have_shape = false, have_offsets = false;
	uint64_t offs[2];
	uint32_t n;
	int ret;

	if (tfs_json_want(open, TFS_JSON_OBJECT, z->d, "tensor '%s'",
			  TFS_SHOWN(x->name, x->name_len)))
		return -EBADMSG;
	while ((ret = tfs_json_member(&z->j, open, &k, &v, z->d)) > 0) {
		if (tfs_json_eq(&k, "dtype")) {
			if (have_dtype)
				goto twice;
			have_dtype = true;
			ret = st_dtype(z, x, &v);
		} else if (tfs_json_eq(&k, "shape")) {
			if (have_shape)
				goto twice;
			have_shape = true;
			ret = st_uints(z, x, &v, "shape", x->shape, ST_MAX_DIMS,
				       0, &x->ndim);
		} else if (tfs_json_eq(&k, "data_offsets")) {
			if (have_offsets)
				goto twice;
			have_offsets = true;
			x->offsets_at = v.offset;
			ret = st_uints(z, x, &v, "data_offsets", offs, 2, 2,
				       &n);
			x->begin = offs[0];
			x->end = offs[1];
		}
		if (ret < 0)
			return ret;
	}
	if (ret)
		return ret;
	if (!have_dtype || !have_shape || !have_offsets)
		return tfs_diag_at(z->d, -EBADMSG, open->offset,
				   "tensor '%s': %s: missing",
				   TFS_SHOWN(x->name, x->name_len),
				   !have_dtype	 ? "dtype"
				   : !have_shape ? "shape"
						 : "data_offsets");
	if (x->end < x->begin)
		return tfs_diag_at(z->d, -EBADMSG, x->offsets_at,
				   "tensor '%s': data_offsets: end %llu is "
				   "before begin %llu",
				   TFS_SHOWN(x->name, x->name_len),
				   (unsigned long long)x->end,
				   (unsigned long long)x->begin);
	return 0;
twice:
	return tfs_diag_at(z->d, -EBADMSG, k.offset,
			   "tensor '%s': the key '%.*s' is given twice",
			   TFS_SHOWN(x->name, x->name_len), (int)k.len, k.p);
}

/* "__metadata__": an object of strings (or null), into metadata.json */
static int st_metadata(struct st_ctx *z, const struct tfs_json_token *open)
{
	struct tfs_json_token k, v;
	json_t *meta = NULL, *s;
	char *key, *val;
	size_t klen, vlen;
	int ret;

	/* null is no metadata, as the reference reader takes it (MLX) */
	if (open->kind == TFS_JSON_NULL)
		return 0;
	if (tfs_json_want(open, TFS_JSON_OBJECT, z->d, "__metadata__"))
		return -EBADMSG;
	meta = json_object();
	if (!meta)
		return tfs_diag_oom(z->d);
	while ((ret = tfs_json_member(&z->j, open, &k, &v, z->d)) > 0) {
		ret = tfs_json_want(&v, TFS_JSON_STRING, z->d,
				    "__metadata__: '%.*s'",
				    (int)(k.len < 60 ? k.len : 60), k.p);
		if (ret)
			goto out;
		key = tfs_json_strdup(&k, &klen);
		val = tfs_json_strdup(&v, &vlen);
		s = val ? json_stringn(val, vlen) : NULL;
		ret = key && s ? json_object_setn_new(meta, key, klen, s) : -1;
		if (ret && s && key)
			ret = 0; /* a key jansson refuses: kept out */
		free(key);
		free(val);
		if (ret) {
			ret = tfs_diag_oom(z->d);
			goto out;
		}
	}
	if (ret)
		goto out;
	ret = json_object_set(tfs_builder_metadata(z->b), "__metadata__", meta)
		      ? tfs_diag_oom(z->d)
		      : 0;
out:
	json_decref(meta);
	return ret;
}

static int st_push(struct st_ctx *z, struct st_tensor **x)
{
	struct st_tensor *nt;

	if (z->nt == z->cap) {
		size_t cap = z->cap ? z->cap * 2 : 64;

		nt = reallocarray(z->t, cap, sizeof(*nt));
		if (!nt)
			return tfs_diag_oom(z->d);
		z->t = nt;
		z->cap = cap;
	}
	*x = &z->t[z->nt++];
	memset(*x, 0, sizeof(**x));
	return 0;
}

static int st_header(struct st_ctx *z)
{
	struct tfs_json_token root, t, v;
	struct st_tensor *x = NULL;
	bool have_meta = false;
	int ret;

	ret = tfs_json_root(&z->j, &root, "header", z->d);
	while (!ret &&
	       (ret = tfs_json_member(&z->j, &root, &t, &v, z->d)) > 0) {
		if (tfs_json_eq(&t, "__metadata__")) {
			if (have_meta)
				return tfs_diag_at(z->d, -EBADMSG, t.offset,
						   "__metadata__: given twice");
			have_meta = true;
			ret = st_metadata(z, &v);
			if (ret)
				return ret;
			continue;
		}
		ret = st_push(z, &x);
		if (ret)
			return ret;
		x->at = t.offset;
		x->name = tfs_json_strdup(&t, &x->name_len);
		if (!x->name)
			return tfs_diag_oom(z->d);
		ret = st_tensor(z, x, &v);
		if (ret)
			return ret;
	}
	if (ret)
		return ret;
	return tfs_json_next(&z->j, &t, z->d); /* only whitespace may follow */
}

static int cmp_extent(const void *pa, const void *pb)
{
	const struct st_tensor *a = *(struct st_tensor *const *)pa,
			       *b = *(struct st_tensor *const *)pb;

	if (a->begin != b->begin)
		return a->begin < b->begin ? -1 : 1;
	if (a->end != b->end)
		return a->end < b->end ? -1 : 1;
	return a->at < b->at ? -1 : a->at > b->at;
}

/* sorted by (begin, end), the tensors tile the buffer exactly */
static int st_layout(struct st_ctx *z)
{
	struct st_tensor **v;
	uint64_t prev = 0, size = z->src->size - z->buf_start;
	size_t i;
	int ret = 0;

	v = calloc(z->nt ? z->nt : 1, sizeof(*v));
	if (!v)
		return tfs_diag_oom(z->d);
	for (i = 0; i < z->nt; i++)
		v[i] = &z->t[i];
	qsort(v, z->nt, sizeof(*v), cmp_extent);
	for (i = 0; i < z->nt && !ret; i++) {
		if (v[i]->begin != prev)
			ret = tfs_diag_at(
				z->d, -EBADMSG, v[i]->offsets_at,
				"tensor '%s': data_offsets: begins at %llu, "
				"but the previous tensor ends at %llu (%s)",
				TFS_SHOWN(v[i]->name, v[i]->name_len),
				(unsigned long long)v[i]->begin,
				(unsigned long long)prev,
				v[i]->begin > prev ? "a gap" : "an overlap");
		prev = v[i]->end;
	}
	if (!ret && prev != size)
		ret = tfs_diag_at(z->d, -EBADMSG, z->buf_start + prev,
				  "data: the tensors end at byte %llu of the "
				  "buffer, but the file holds %llu (%s)",
				  (unsigned long long)prev,
				  (unsigned long long)size,
				  prev < size ? "trailing bytes"
					      : "the file is cut short");
	free(v);
	return ret;
}

static int st_add(struct st_ctx *z, const struct st_tensor *x)
{
	struct tfs_tensor_spec s;
	uint32_t h;
	int ret;

	tfs_spec_tensor(&s, x->name, x->name_len, x->dtype, x->shape, x->ndim,
			x->at);
	tfs_spec_raw(&s, z->buf_start + x->begin, x->end - x->begin);
	ret = tfs_builder_add_tensor(z->b, &s, &h, z->d);
	if (!ret &&
	    tfs_builder_set_xattr_str(z->b, h, "safetensors.dtype", x->native))
		ret = tfs_diag_oom(z->d);
	return ret;
}

static int st_load(const struct tfs_source *src, struct tfs_builder *b,
		   struct tfs_diag *d)
{
	struct st_ctx z = {.src = src, .b = b, .d = d};
	size_t i;
	int ret;

	if (src->size < 8)
		return tfs_diag_at(d, -EBADMSG, 0,
				   "header length: the file is %llu bytes, "
				   "shorter than 8",
				   (unsigned long long)src->size);
	z.n = tfs_load_le(src->data, 8);
	if (z.n > ST_HEADER_MAX)
		return tfs_diag_at(d, -E2BIG, 0,
				   "header length: %llu bytes, above the "
				   "limit of 100000000",
				   (unsigned long long)z.n);
	if (z.n > src->size - 8)
		return tfs_diag_at(d, -EBADMSG, 0,
				   "header length: %llu bytes, but only %llu "
				   "follow",
				   (unsigned long long)z.n,
				   (unsigned long long)(src->size - 8));
	z.buf_start = 8 + z.n;
	tfs_json_init(&z.j, src->data + 8, (size_t)z.n, 8, TFS_JSON_MAX_DEPTH);
	ret = st_header(&z);
	if (!ret)
		ret = st_layout(&z);
	for (i = 0; !ret && i < z.nt; i++) {
		if (z.t[i].name_len == strlen("__metadata__") &&
		    memcmp(z.t[i].name, "__metadata__", 12) == 0)
			ret = tfs_diag_at(
				d, -EBADMSG, z.t[i].at,
				"tensor '%s': the name is reserved",
				TFS_SHOWN(z.t[i].name, z.t[i].name_len));
		else
			ret = st_add(&z, &z.t[i]);
	}
	/* a name given twice: the builder refuses it at finish */
	if (!ret &&
	    json_object_set_new(tfs_builder_metadata(b), "header_length",
				json_integer((json_int_t)z.n)))
		ret = tfs_diag_oom(d);
	for (i = 0; i < z.nt; i++)
		free(z.t[i].name);
	free(z.t);
	return ret;
}

/* model.safetensors.index.json: the shards mount as one tree */
TFS_FORMAT(safetensors, "safetensors (Hugging Face)", .probe = st_probe,
	   .load = st_load, .index_suffix = ".safetensors.index.json",
	   .index_rank = 0, .read_index = tfs_hf_read_index);
