// SPDX-License-Identifier: MIT
/*
 * TensorFlow Lite / LiteRT models (.tflite): a FlatBuffers Model with the
 * file identifier "TFL3" at byte 4.  Spec: shared/specs/tflite.md.
 *
 * The schema is walked with the bounded reader of src/parse/flatbuf.h:
 * Model -> buffers, metadata, subgraphs -> tensors -> quantization.  Every
 * constant tensor (buffer != 0 with data) of every subgraph is a file
 * whose bytes are its buffer as stored, zero-copy: inline (Buffer.data, the
 * vector's elements) or by offset (Buffer.offset > 1 and Buffer.size, the
 * layout of models over 2 GB, data after the flatbuffer).  Subgraph 0's
 * tensors are at the root, subgraph i's under "subgraph_<i>/"; names are
 * split at '/' only; an empty name is "tensor_<index>"; a path already
 * taken, or needed as a directory by another tensor, gets "@<index>" (the
 * tensor's index in its subgraph).  That path is also the stored name
 * (TFLite names need not be unique); the TFLite name, subgraph, index and
 * buffer are xattrs.  Tensors without data (activations, inputs, outputs),
 * sparse tensors, tensors in external buffers and resource/variant tensors
 * are listed in metadata.json, not served.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/strmap.h"
#include "parse/flatbuf.h"
#include "core/builder.h"
#include "core/checked.h"
#include "core/cursor.h"
#include "core/diag.h"
#include "core/dtype.h"
#include "core/format.h"
#include "core/names.h"
#include "core/source.h"

#define TFL_MAX_COUNT (1u << 24) /* tensors, buffers, subgraphs, ... */
#define TFL_MAX_RANK 16
#define TFL_MAX_QUANT (1u << 24)      /* scale/zero_point entries */
#define TFL_FB_MAX ((1ull << 31) - 1) /* FlatBuffers' own size limit */
#define TFL_XATTR_MAX 65536	      /* the kernel's xattr value limit */

/* TensorType: tensorfs dtype, bits per element (0: no fixed size) */
struct tfl_type {
	const char *name;
	enum tfs_dtype dtype;
	unsigned bits;
	enum tfs_dtype unpacked; /* one value per byte (old packed files) */
};

static const struct tfl_type tfl_types[] = {
	{"FLOAT32", TFS_DTYPE_FLOAT32, 32, 0},
	{"FLOAT16", TFS_DTYPE_FLOAT16, 16, 0},
	{"INT32", TFS_DTYPE_INT32, 32, 0},
	{"UINT8", TFS_DTYPE_UINT8, 8, 0},
	{"INT64", TFS_DTYPE_INT64, 64, 0},
	{"STRING", TFS_DTYPE_STRING, 0, 0},
	{"BOOL", TFS_DTYPE_BOOL, 8, 0},
	{"INT16", TFS_DTYPE_INT16, 16, 0},
	{"COMPLEX64", TFS_DTYPE_COMPLEX64, 64, 0},
	{"INT8", TFS_DTYPE_INT8, 8, 0},
	{"FLOAT64", TFS_DTYPE_FLOAT64, 64, 0},
	{"COMPLEX128", TFS_DTYPE_COMPLEX128, 128, 0},
	{"UINT64", TFS_DTYPE_UINT64, 64, 0},
	{"RESOURCE", TFS_DTYPE_INVALID, 0, 0},
	{"VARIANT", TFS_DTYPE_INVALID, 0, 0},
	{"UINT32", TFS_DTYPE_UINT32, 32, 0},
	{"UINT16", TFS_DTYPE_UINT16, 16, 0},
	{"INT4", TFS_DTYPE_INT4, 4, TFS_DTYPE_INT8},
	{"BFLOAT16", TFS_DTYPE_BFLOAT16, 16, 0},
	{"INT2", TFS_DTYPE_INT2, 2, TFS_DTYPE_INT8},
	{"UINT4", TFS_DTYPE_UINT4, 4, TFS_DTYPE_UINT8},
	/* OCP e4m3fn: tensorfs's float8_e4m3 (dtype.h) */
	{"FLOAT8_E4M3FN", TFS_DTYPE_FLOAT8_E4M3, 8, 0},
	{"FLOAT8_E5M2", TFS_DTYPE_FLOAT8_E5M2, 8, 0},
};

#define TFL_NTYPES (sizeof(tfl_types) / sizeof(tfl_types[0]))

enum tfl_where { TFL_EMPTY = 0, TFL_INLINE, TFL_OFFSET };

struct tfl_buffer {
	uint64_t off, size;
	uint64_t at; /* its length: Buffer.data's, or Buffer.offset's field */
	enum tfl_where where;
};

/* a constant tensor, kept until every path is known */
struct tfl_const {
	uint32_t sg, index, buffer;
	const char *name; /* into the mapping */
	uint32_t name_len;
	uint8_t type;
	enum tfs_dtype dtype;
	bool packed_bytes; /* INT4/UINT4/INT2 stored one value per byte */
	bool is_variable;
	uint32_t ndim;
	uint64_t shape[TFL_MAX_RANK];
	uint64_t desc; /* the Tensor table */
	struct tfs_fb_table quant;
	bool has_quant;
	char *path; /* the stored name: path in the mount */
};

struct tfl {
	const struct tfs_source *src;
	struct tfs_builder *b;
	struct tfs_diag *d;
	struct tfs_fb fb;
	struct tfs_fb_table model;
	struct tfl_buffer *bufs;
	uint32_t nbufs;
	struct tfl_const *consts;
	size_t nconsts, cap;
	json_t *meta;	   /* borrowed: the builder's */
	json_t *listed;	   /* tensors without a file */
	json_t *subgraphs; /* name, counts, inputs, outputs */
};

static int tfl_probe(const struct tfs_source *src)
{
	const uint8_t *p = src->data;

	if (src->size < 8 || memcmp(p + 4, "TFL", 3) != 0)
		return 0;
	/* "TFL3"; other digits are claimed to be refused by name */
	if (p[7] == '3')
		return 100;
	return p[7] >= '0' && p[7] <= '9' ? 60 : 0;
}

/* a string as JSON: UTF-8 as is, anything else escaped like a name */
static json_t *str_json(const char *s, size_t len)
{
	char buf[TFS_PRINTABLE_MAX];

	if (tfs_utf8_valid((const unsigned char *)s, len))
		return json_stringn_nocheck(s, len);
	return json_string(tfs_name_printable(buf, sizeof(buf), s, len));
}

/* a float as JSON (jansson refuses NaN and infinities: their names) */
static json_t *float_json(float f)
{
	if (isnan(f))
		return json_string("nan");
	if (isinf(f))
		return json_string(f > 0 ? "inf" : "-inf");
	return json_real((double)f);
}

static float f32_at(const uint8_t *p)
{
	uint32_t u = (uint32_t)tfs_load_le(p, 4);
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

static int oom(struct tfl *z)
{
	return tfs_diag_oom(z->d);
}

static int set_new(struct tfl *z, json_t *obj, const char *key, json_t *v)
{
	return json_object_set_new(obj, key, v) ? oom(z) : 0;
}

/* ---- buffers ------------------------------------------------------------ */

/* Buffer @i of the vector @v: where its bytes are */
static int read_buffer(struct tfl *z, const struct tfs_fb_vec *v, uint32_t i,
		       struct tfl_buffer *out)
{
	struct tfs_fb_table t;
	struct tfs_fb_vec data;
	uint64_t off, size, pos = 0, end;
	int has_data, has_off, ret;

	ret = tfs_fb_vec_table(&z->fb, &z->model, v, i, "Model.buffers", &t,
			       z->d);
	if (ret)
		return ret;
	out->at = t.pos;
	has_data = tfs_fb_vector(&z->fb, &t, 0, 1, UINT32_MAX, "Buffer.data",
				 &data, z->d);
	if (has_data < 0)
		return has_data;
	has_off = tfs_fb_field(&z->fb, &t, 1, 8, "Buffer.offset", &pos, z->d);
	if (has_off < 0)
		return has_off;
	ret = tfs_fb_scalar(&z->fb, &t, 1, 8, 0, "Buffer.offset", &off, z->d);
	ret = ret ? ret
		  : tfs_fb_scalar(&z->fb, &t, 2, 8, 0, "Buffer.size", &size,
				  z->d);
	if (ret)
		return ret;
	/* offset <= 1: unset (the exporter writes 1 as a placeholder) */
	if (off > 1) {
		if (!tfs_add_u64(off, size, &end) || end > z->src->size)
			return tfs_diag_at(z->d, -EBADMSG, pos,
					   "Buffer.offset: buffer %" PRIu32
					   " [%" PRIu64 ", +%" PRIu64
					   ") is past the end of the "
					   "%" PRIu64 "-byte file",
					   i, off, size, z->src->size);
		if (has_data && data.count &&
		    tfs_builder_warn(z->b, pos,
				     "buffer %" PRIu32 " has both data and an "
				     "offset: the offset is used",
				     i))
			return oom(z);
		out->at = pos;
		out->off = off;
		out->size = size;
		out->where = size ? TFL_OFFSET : TFL_EMPTY;
	} else if (has_data && data.count) {
		out->at = data.at;
		out->off = data.pos;
		out->size = data.count;
		out->where = TFL_INLINE;
	}
	return 0;
}

static int read_buffers(struct tfl *z)
{
	struct tfs_fb_vec v;
	uint32_t i;
	int ret;

	ret = tfs_fb_vector(&z->fb, &z->model, 4, 4, TFL_MAX_COUNT,
			    "Model.buffers", &v, z->d);
	if (ret < 0)
		return ret;
	z->nbufs = v.count;
	z->bufs = calloc(v.count ? v.count : 1, sizeof(*z->bufs));
	if (!z->bufs)
		return oom(z);
	for (i = 0; i < v.count; i++) {
		ret = read_buffer(z, &v, i, &z->bufs[i]);
		if (ret)
			return ret;
	}
	return 0;
}

/* offset-mode data must lie after every flatbuffer object read */
static int check_offsets_past_flatbuffer(struct tfl *z)
{
	uint32_t i;

	for (i = 0; i < z->nbufs; i++)
		if (z->bufs[i].where == TFL_OFFSET &&
		    z->bufs[i].off < z->fb.high)
			return tfs_diag_at(z->d, -EBADMSG, z->bufs[i].at,
					   "Buffer.offset: buffer %" PRIu32
					   " at byte %" PRIu64 " lies inside "
					   "the flatbuffer (which reaches byte "
					   "%" PRIu64 ")",
					   i, z->bufs[i].off, z->fb.high);
	return 0;
}

/* ---- Model.metadata -------------------------------------------------------
 */

static int read_metadata(struct tfl *z)
{
	struct tfs_fb_table t;
	struct tfs_fb_vec v;
	struct tfs_fb_str name;
	json_t *list, *e;
	uint64_t bi, pos = 0;
	uint32_t i;
	int ret;

	ret = tfs_fb_vector(&z->fb, &z->model, 6, 4, TFL_MAX_COUNT,
			    "Model.metadata", &v, z->d);
	if (ret < 0)
		return ret;
	list = json_array();
	if (!list || json_object_set_new(z->meta, "metadata", list))
		return oom(z);
	for (i = 0; i < v.count; i++) {
		const struct tfl_buffer *buf;

		ret = tfs_fb_vec_table(&z->fb, &z->model, &v, i,
				       "Model.metadata", &t, z->d);
		if (!ret)
			ret = tfs_fb_string(&z->fb, &t, 0, "Metadata.name",
					    &name, z->d);
		if (ret < 0)
			return ret;
		ret = tfs_fb_field(&z->fb, &t, 1, 4, "Metadata.buffer", &pos,
				   z->d);
		if (ret < 0)
			return ret;
		bi = ret ? tfs_load_le(z->fb.p + pos, 4) : 0;
		if (bi >= z->nbufs) {
			/* names a buffer no tensor is served from */
			e = json_pack("{s:o,s:I}", "name",
				      str_json(name.p ? name.p : "", name.len),
				      "buffer", (json_int_t)bi);
			if (!e || json_array_append_new(list, e) ||
			    tfs_builder_warn(z->b, ret ? pos : t.pos,
					     "Metadata.buffer: buffer index "
					     "%" PRIu64
					     " out of range (%" PRIu32
					     " buffers): ignored (it changes "
					     "no byte served)",
					     bi, z->nbufs))
				return oom(z);
			continue;
		}
		buf = &z->bufs[bi];
		e = json_pack("{s:o,s:I,s:I}", "name",
			      str_json(name.p ? name.p : "", name.len),
			      "buffer", (json_int_t)bi, "size",
			      (json_int_t)buf->size);
		if (!e || json_array_append_new(list, e))
			return oom(z);
		if (name.len == 19 &&
		    memcmp(name.p, "min_runtime_version", 19) == 0) {
			const char *s = (const char *)z->src->data + buf->off;
			size_t n = buf->size ? strnlen(s, buf->size) : 0;

			if (set_new(z, e, "value", str_json(s, n)) ||
			    set_new(z, z->meta, "min_runtime_version",
				    str_json(s, n)))
				return oom(z);
			if (n && tfs_utf8_valid((const unsigned char *)s, n)) {
				char *c = strndup(s, n);

				ret = c ? tfs_builder_set_xattr_str(
						  z->b, TFS_BUILDER_ROOT,
						  "tflite.min_runtime_version",
						  c)
					: -ENOMEM;
				free(c);
				if (ret)
					return oom(z);
			}
		}
	}
	return 0;
}

/* ---- quantization ---------------------------------------------------------
 */

struct tfl_quant {
	struct tfs_fb_vec min, max, scale, zp;
	uint64_t details_type;
	int64_t axis;
	bool details;
};

/*
 * A quantization field that does not fit the tensor: a warning naming the
 * tensor @nm (NULL: the tensor was read before, say nothing), never a
 * refusal. The served bytes are the stored integers whatever the scales
 * say (TFLite Micro ships models whose rank-1 biases declare axis 3);
 * metadata.json and the xattrs keep the fields as stored.
 */
static int quant_warn(struct tfl *z, const char *nm, uint64_t at,
		      const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int quant_warn(struct tfl *z, const char *nm, uint64_t at,
		      const char *fmt, ...)
{
	char what[160];
	va_list ap;

	if (!nm)
		return 0;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return tfs_builder_warn(z->b, at,
				"tensor '%s': QuantizationParameters.%s: "
				"ignored (it changes no byte served)",
				nm, what)
		       ? oom(z)
		       : 0;
}

/*
 * Read QuantizationParameters @q of a tensor of @ndim dims (@shape: NULL
 * when unknown); fields that do not fit the tensor are warnings (see
 * quant_warn) when @nm names it.
 */
static int read_quant(struct tfl *z, const struct tfs_fb_table *q,
		      uint32_t ndim, const uint64_t *shape, const char *nm,
		      struct tfl_quant *o)
{
	struct tfs_fb_table det;
	uint64_t v, pos = 0;
	int ret;

	memset(o, 0, sizeof(*o));
	ret = tfs_fb_vector(&z->fb, q, 0, 4, TFL_MAX_QUANT,
			    "QuantizationParameters.min", &o->min, z->d);
	if (ret >= 0)
		ret = tfs_fb_vector(&z->fb, q, 1, 4, TFL_MAX_QUANT,
				    "QuantizationParameters.max", &o->max,
				    z->d);
	if (ret >= 0)
		ret = tfs_fb_vector(&z->fb, q, 2, 4, TFL_MAX_QUANT,
				    "QuantizationParameters.scale", &o->scale,
				    z->d);
	if (ret >= 0)
		ret = tfs_fb_vector(&z->fb, q, 3, 8, TFL_MAX_QUANT,
				    "QuantizationParameters.zero_point", &o->zp,
				    z->d);
	if (ret >= 0)
		ret = tfs_fb_scalar(&z->fb, q, 4, 1, 0,
				    "QuantizationParameters.details_type",
				    &o->details_type, z->d);
	if (ret >= 0)
		ret = tfs_fb_child(&z->fb, q, 5,
				   "QuantizationParameters.details", &det,
				   z->d);
	if (ret < 0)
		return ret;
	o->details = ret == 1;
	ret = tfs_fb_field(&z->fb, q, 6, 4,
			   "QuantizationParameters.quantized_dimension", &pos,
			   z->d);
	if (ret < 0)
		return ret;
	v = ret ? tfs_load_le(z->fb.p + pos, 4) : 0;
	o->axis = (int32_t)(uint32_t)v;
	if (o->zp.count && o->zp.count != o->scale.count)
		return quant_warn(z, nm, o->zp.at,
				  "zero_point: %" PRIu32 " entries, but "
				  "%" PRIu32 " scales",
				  o->zp.count, o->scale.count);
	if (o->scale.count > 1) {
		if (o->axis < 0 || (uint64_t)o->axis >= ndim)
			return quant_warn(z, nm, ret ? pos : q->pos,
					  "quantized_dimension: %" PRId64
					  " is not a dimension of a rank-"
					  "%" PRIu32 " tensor",
					  o->axis, ndim);
		if (shape && shape[o->axis] != o->scale.count)
			return quant_warn(z, nm, o->scale.at,
					  "scale: %" PRIu32 " entries for "
					  "dimension %" PRId64 " of size "
					  "%" PRIu64,
					  o->scale.count, o->axis,
					  shape[o->axis]);
	}
	return 0;
}

/* the quantization as JSON (metadata.json); NULL: out of memory */
static json_t *quant_json(struct tfl *z, const struct tfl_quant *q)
{
	json_t *o = json_object(), *a;
	const struct tfs_fb_vec *vs[] = {&q->min, &q->max, &q->scale, &q->zp};
	static const char *const keys[] = {"min", "max", "scale", "zero_point"};
	uint32_t i, k;

	for (k = 0; o && k < 4; k++) {
		if (!vs[k]->count)
			continue;
		a = json_array();
		for (i = 0; a && i < vs[k]->count; i++) {
			uint64_t x = tfs_fb_vec_le(&z->fb, vs[k], i);
			json_t *e = k == 3 ? json_integer((json_int_t)x)
					   : float_json(f32_at(
						     z->fb.p + vs[k]->pos +
						     4 * (uint64_t)i));

			if (!e || json_array_append_new(a, e))
				a = NULL;
		}
		if (!a || json_object_set_new(o, keys[k], a)) {
			json_decref(o);
			return NULL;
		}
	}
	if (o && q->details &&
	    json_object_set_new(o, "details_type",
				json_integer((json_int_t)q->details_type)))
		o = NULL;
	if (o && json_object_set_new(o, "quantized_dimension",
				     json_integer(q->axis)))
		o = NULL;
	return o;
}

/* "a,b,c" of a float or int64 vector; NULL when too long or no memory */
static char *quant_list(struct tfl *z, const struct tfs_fb_vec *v,
			bool is_float)
{
	size_t cap = (size_t)v->count * 18 + 1, len = 0;
	char *s;
	uint32_t i;

	if (cap > TFL_XATTR_MAX)
		return NULL;
	s = malloc(cap);
	if (!s)
		return NULL;
	s[0] = '\0';
	for (i = 0; i < v->count; i++) {
		uint64_t x = tfs_fb_vec_le(&z->fb, v, i);
		int n;

		if (is_float)
			n = snprintf(s + len, cap - len, "%s%.9g", i ? "," : "",
				     (double)f32_at(z->fb.p + v->pos +
						    4 * (uint64_t)i));
		else
			n = snprintf(s + len, cap - len, "%s%" PRId64,
				     i ? "," : "", (int64_t)x);
		if (n < 0 || (size_t)n >= cap - len) {
			free(s);
			return NULL;
		}
		len += (size_t)n;
	}
	return s;
}

/* user.tensorfs.tflite.{scale,zero_point,...} on @h */
static int quant_xattrs(struct tfl *z, uint32_t h, const struct tfl_quant *q,
			uint64_t at)
{
	const struct tfs_fb_vec *vs[] = {&q->scale, &q->zp, &q->min, &q->max};
	static const char *const keys[] = {"tflite.scale", "tflite.zero_point",
					   "tflite.min", "tflite.max"};
	char num[24];
	unsigned k;
	int ret = 0;

	for (k = 0; !ret && k < 4; k++) {
		char *s;

		if (!vs[k]->count)
			continue;
		s = quant_list(z, vs[k], k != 1);
		if (s)
			ret = tfs_builder_set_xattr_str(z->b, h, keys[k], s);
		else
			ret = tfs_builder_warn(z->b, at,
					       "%s: %" PRIu32 " entries, too "
					       "many for an xattr (see "
					       "metadata.json)",
					       keys[k], vs[k]->count);
		free(s);
	}
	if (!ret && (q->scale.count || q->min.count)) {
		snprintf(num, sizeof(num), "%" PRId64, q->axis);
		ret = tfs_builder_set_xattr_str(
			z->b, h, "tflite.quantized_dimension", num);
	}
	if (!ret && q->details) {
		snprintf(num, sizeof(num), "%" PRIu64, q->details_type);
		ret = tfs_builder_set_xattr_str(z->b, h, "tflite.details_type",
						num);
	}
	return ret ? oom(z) : 0;
}

/* ---- tensors --------------------------------------------------------------
 */

/* a TFLite STRING buffer: i32 count, i32 offsets[count + 1], bytes */
static int check_strings(struct tfl *z, const struct tfl_buffer *buf,
			 uint64_t numel, const char *nm)
{
	const uint8_t *p = z->src->data + buf->off;
	uint64_t n, i, prev, o;

	if (buf->size < 4)
		return tfs_diag_at(z->d, -EBADMSG, buf->off,
				   "tensor '%s': string buffer of %" PRIu64
				   " bytes has no count",
				   nm, buf->size);
	n = (uint32_t)tfs_load_le(p, 4);
	if (n > INT32_MAX || 4 * (n + 2) > buf->size)
		return tfs_diag_at(z->d, -EBADMSG, buf->off,
				   "tensor '%s': string count %" PRIu64
				   " does not fit its %" PRIu64 "-byte buffer",
				   nm, n, buf->size);
	if (n != numel)
		return tfs_diag_at(z->d, -EBADMSG, buf->off,
				   "tensor '%s': %" PRIu64 " strings, but the "
				   "shape has %" PRIu64 " elements",
				   nm, n, numel);
	prev = 4 * (n + 2);
	for (i = 0; i <= n; i++) {
		o = (uint32_t)tfs_load_le(p + 4 + 4 * i, 4);
		if ((i == 0 && o != prev) || o < prev || o > buf->size ||
		    (i == n && o != buf->size))
			return tfs_diag_at(z->d, -EBADMSG, buf->off + 4 + 4 * i,
					   "tensor '%s': string offset %" PRIu64
					   " is %" PRIu64 ": not monotonic, or "
					   "not ending at the buffer's %" PRIu64
					   " bytes",
					   nm, i, o, buf->size);
		prev = o;
	}
	return 0;
}

/* the bytes of a fixed-size constant: size must be numel x bits / 8 */
static int check_size(struct tfl *z, struct tfl_const *c,
		      const struct tfl_buffer *buf, uint64_t numel,
		      const char *nm)
{
	const struct tfl_type *ty = &tfl_types[c->type];
	uint64_t bits, want;

	if (!tfs_mul_u64(numel, ty->bits, &bits))
		return tfs_diag_at(z->d, -EBADMSG, c->desc,
				   "tensor '%s': shape: element count "
				   "overflows",
				   nm);
	want = bits / 8 + (bits % 8 != 0);
	if (buf->size == want)
		return 0;
	if (ty->unpacked && buf->size == numel) {
		c->packed_bytes = true; /* one value per byte */
		c->dtype = ty->unpacked;
		return 0;
	}
	return tfs_diag_at(z->d, -EBADMSG, buf->at,
			   "tensor '%s': buffer %" PRIu32 " of %" PRIu64
			   " bytes does not match %s x %" PRIu64
			   " elements = %" PRIu64 " bytes",
			   nm, c->buffer, buf->size, ty->name, numel, want);
}

static int push_const(struct tfl *z, const struct tfl_const *c)
{
	if (z->nconsts == z->cap) {
		size_t cap = z->cap ? 2 * z->cap : 64;
		struct tfl_const *n = realloc(z->consts, cap * sizeof(*n));

		if (!n)
			return oom(z);
		z->consts = n;
		z->cap = cap;
	}
	z->consts[z->nconsts++] = *c;
	return 0;
}

static json_t *ints_json(struct tfl *z, const struct tfs_fb_vec *v)
{
	json_t *a = json_array();
	uint32_t i;

	for (i = 0; a && i < v->count; i++)
		if (json_array_append_new(
			    a, json_integer((int32_t)(uint32_t)tfs_fb_vec_le(
				       &z->fb, v, i)))) {
			json_decref(a);
			a = NULL;
		}
	return a;
}

/* list a tensor that has no file in metadata.json's "tensors_without_data" */
static int list_tensor(struct tfl *z, const struct tfl_const *c,
		       const struct tfs_fb_vec *shape,
		       const struct tfs_fb_vec *sig, const struct tfl_quant *q,
		       const char *why)
{
	json_t *e;

	e = json_pack("{s:I,s:I,s:o,s:s,s:o,s:I}", "subgraph",
		      (json_int_t)c->sg, "index", (json_int_t)c->index, "name",
		      str_json(c->name, c->name_len), "type",
		      tfl_types[c->type].name, "shape", ints_json(z, shape),
		      "buffer", (json_int_t)c->buffer);
	if (!e || json_array_append_new(z->listed, e))
		return oom(z);
	if ((sig->at && set_new(z, e, "shape_signature", ints_json(z, sig))) ||
	    (q && set_new(z, e, "quantization", quant_json(z, q))) ||
	    (c->is_variable && set_new(z, e, "is_variable", json_true())) ||
	    (why && set_new(z, e, "not_served", json_string(why))))
		return oom(z);
	return 0;
}

static int read_tensor(struct tfl *z, const struct tfs_fb_table *sg,
		       const struct tfs_fb_vec *tv, uint32_t si, uint32_t ti)
{
	struct tfl_const c = {.sg = si, .index = ti};
	struct tfs_fb_table t, sparse;
	struct tfs_fb_vec shape, sig;
	struct tfs_fb_str name;
	struct tfl_quant q;
	const struct tfl_buffer *buf;
	uint64_t v, pos = 0, numel = 1, ext;
	char nm[TFS_PRINTABLE_MAX];
	const char *why = NULL;
	uint64_t negative = 0; /* where the first negative dim is */
	uint32_t i;
	int ret;

	ret = tfs_fb_vec_table(&z->fb, sg, tv, ti, "SubGraph.tensors", &t,
			       z->d);
	if (ret)
		return ret;
	c.desc = t.pos;
	ret = tfs_fb_string(&z->fb, &t, 3, "Tensor.name", &name, z->d);
	if (ret < 0)
		return ret;
	c.name = name.p ? name.p : "";
	c.name_len = name.len;
	tfs_name_printable(nm, sizeof(nm), c.name, c.name_len);
	ret = tfs_fb_vector(&z->fb, &t, 0, 4, TFL_MAX_RANK, "Tensor.shape",
			    &shape, z->d);
	if (ret >= 0)
		ret = tfs_fb_vector(&z->fb, &t, 7, 4, TFL_MAX_RANK,
				    "Tensor.shape_signature", &sig, z->d);
	if (ret < 0)
		return ret;
	c.ndim = shape.count;
	for (i = 0; i < shape.count; i++) {
		int32_t dim =
			(int32_t)(uint32_t)tfs_fb_vec_le(&z->fb, &shape, i);

		if (dim < 0 && !negative)
			negative = shape.pos + 4 * (uint64_t)i;
		c.shape[i] = dim < 0 ? 0 : (uint64_t)dim;
		if (!tfs_mul_u64(numel, c.shape[i], &numel))
			numel = UINT64_MAX; /* only 16 dims of < 2^31 */
	}
	ret = tfs_fb_field(&z->fb, &t, 1, 1, "Tensor.type", &pos, z->d);
	if (ret < 0)
		return ret;
	v = ret ? z->fb.p[pos] : 0;
	if (v >= TFL_NTYPES)
		return tfs_diag_at(z->d, -EBADMSG, ret ? pos : t.pos,
				   "Tensor.type: unknown tensor type %d "
				   "(tensor '%s')",
				   (int8_t)v, nm);
	c.type = (uint8_t)v;
	c.dtype = tfl_types[v].dtype;
	ret = tfs_fb_field(&z->fb, &t, 2, 4, "Tensor.buffer", &pos, z->d);
	if (ret < 0)
		return ret;
	c.buffer = ret ? (uint32_t)tfs_load_le(z->fb.p + pos, 4) : 0;
	if (c.buffer >= z->nbufs)
		return tfs_diag_at(z->d, -EBADMSG, ret ? pos : t.pos,
				   "Tensor.buffer: buffer index %" PRIu32
				   " out of range (%" PRIu32
				   " buffers; tensor '%s')",
				   c.buffer, z->nbufs, nm);
	buf = &z->bufs[c.buffer];
	ret = tfs_fb_scalar(&z->fb, &t, 5, 1, 0, "Tensor.is_variable", &v,
			    z->d);
	if (ret)
		return ret;
	c.is_variable = v != 0;
	ret = tfs_fb_child(&z->fb, &t, 4, "Tensor.quantization", &c.quant,
			   z->d);
	if (ret < 0)
		return ret;
	c.has_quant = ret == 1;
	ret = tfs_fb_child(&z->fb, &t, 6, "Tensor.sparsity", &sparse, z->d);
	if (ret < 0)
		return ret;
	if (ret == 1)
		why = "sparse: not supported";
	ret = tfs_fb_scalar(&z->fb, &t, 10, 4, 0, "Tensor.external_buffer",
			    &ext, z->d);
	if (ret)
		return ret;
	if (ext)
		why = "external buffer: not supported";
	if (c.has_quant) {
		ret = read_quant(z, &c.quant, c.ndim,
				 c.buffer && buf->size && !negative ? c.shape
								    : NULL,
				 nm, &q);
		if (ret)
			return ret;
	}
	if (!why && (c.buffer == 0 || !buf->size))
		why = "no data";
	if (!why && !tfl_types[c.type].dtype)
		why = "resource/variant: not a file";
	if (why)
		return list_tensor(z, &c, &shape, &sig, c.has_quant ? &q : NULL,
				   why);
	if (negative)
		return tfs_diag_at(z->d, -EBADMSG, negative,
				   "Tensor.shape: negative dimension in "
				   "constant tensor '%s'",
				   nm);
	ret = c.dtype == TFS_DTYPE_STRING ? check_strings(z, buf, numel, nm)
					  : check_size(z, &c, buf, numel, nm);
	return ret ? ret : push_const(z, &c);
}

static int read_subgraph(struct tfl *z, const struct tfs_fb_vec *sv,
			 uint32_t si)
{
	struct tfs_fb_table sg;
	struct tfs_fb_vec tv, in, out;
	struct tfs_fb_str name;
	json_t *e;
	uint32_t ti;
	int ret;

	ret = tfs_fb_vec_table(&z->fb, &z->model, sv, si, "Model.subgraphs",
			       &sg, z->d);
	if (!ret)
		ret = tfs_fb_string(&z->fb, &sg, 4, "SubGraph.name", &name,
				    z->d);
	if (ret >= 0)
		ret = tfs_fb_vector(&z->fb, &sg, 0, 4, TFL_MAX_COUNT,
				    "SubGraph.tensors", &tv, z->d);
	if (ret >= 0)
		ret = tfs_fb_vector(&z->fb, &sg, 1, 4, TFL_MAX_COUNT,
				    "SubGraph.inputs", &in, z->d);
	if (ret >= 0)
		ret = tfs_fb_vector(&z->fb, &sg, 2, 4, TFL_MAX_COUNT,
				    "SubGraph.outputs", &out, z->d);
	if (ret < 0)
		return ret;
	e = json_pack("{s:o,s:I,s:o,s:o}", "name",
		      name.p ? str_json(name.p, name.len) : json_null(),
		      "tensors", (json_int_t)tv.count, "inputs",
		      ints_json(z, &in), "outputs", ints_json(z, &out));
	if (!e || json_array_append_new(z->subgraphs, e))
		return oom(z);
	for (ti = 0; ti < tv.count; ti++) {
		ret = read_tensor(z, &sg, &tv, si, ti);
		if (ret)
			return ret;
	}
	return 0;
}

/* ---- custom operators -----------------------------------------------------
 */

#define TFL_BUILTIN_CUSTOM 32

/* operator @oi of subgraph @sg: a custom op into @ops (name: count, bytes) */
static int custom_op(struct tfl *z, const struct tfs_fb_table *sg,
		     const struct tfs_fb_vec *ov, uint32_t oi,
		     const struct tfs_fb_vec *codes, json_t *ops,
		     struct tfs_diag *d)
{
	struct tfs_fb_table op, oc;
	struct tfs_fb_vec opts;
	struct tfs_fb_str name;
	uint64_t idx, dep, code, large;
	json_t *e, *n, *b;
	char key[TFS_PRINTABLE_MAX];
	int ret;

	ret = tfs_fb_vec_table(&z->fb, sg, ov, oi, "SubGraph.operators", &op,
			       d);
	ret = ret ? ret
		  : tfs_fb_scalar(&z->fb, &op, 0, 4, 0, "Operator.opcode_index",
				  &idx, d);
	if (ret)
		return ret;
	if (idx >= codes->count)
		return tfs_diag_at(d, -EBADMSG, op.pos,
				   "Operator.opcode_index: %" PRIu64
				   " out of range (%" PRIu32 " codes)",
				   idx, codes->count);
	ret = tfs_fb_vec_table(&z->fb, &z->model, codes, (uint32_t)idx,
			       "Model.operator_codes", &oc, d);
	ret = ret ? ret
		  : tfs_fb_scalar(&z->fb, &oc, 0, 1, 0,
				  "OperatorCode.deprecated_builtin_code", &dep,
				  d);
	ret = ret ? ret
		  : tfs_fb_scalar(&z->fb, &oc, 3, 4, 0,
				  "OperatorCode.builtin_code", &code, d);
	if (ret)
		return ret;
	/* the larger of the two (schema v3a: 127 is "look at builtin_code") */
	code = (int32_t)code > (int8_t)dep ? (int32_t)code : (int8_t)dep;
	if (code != TFL_BUILTIN_CUSTOM)
		return 0;
	ret = tfs_fb_string(&z->fb, &oc, 1, "OperatorCode.custom_code", &name,
			    d);
	if (ret >= 0)
		ret = tfs_fb_vector(&z->fb, &op, 5, 1, UINT32_MAX,
				    "Operator.custom_options", &opts, d);
	if (ret >= 0)
		ret = tfs_fb_scalar(&z->fb, &op, 10, 8, 0,
				    "Operator.large_custom_options_size",
				    &large, d);
	if (ret < 0)
		return ret;
	tfs_name_printable(key, sizeof(key), name.p ? name.p : "", name.len);
	e = json_object_get(ops, key);
	if (!e && (!(e = json_pack("{s:i,s:i}", "operators", 0, "options_bytes",
				   0)) ||
		   json_object_set_new(ops, key, e)))
		return oom(z);
	n = json_object_get(e, "operators");
	b = json_object_get(e, "options_bytes");
	/* large options lie past the flatbuffer: below 2^62 each, counted */
	large = large < (1ull << 62) ? large : 1ull << 62;
	if (json_integer_set(n, json_integer_value(n) + 1) ||
	    json_integer_set(b, json_integer_value(b) + (json_int_t)opts.count +
					(json_int_t)large))
		return oom(z);
	return 0;
}

/* info's line: "NAME: N operators, B bytes of options; ..." (at most 20) */
static int custom_ops_line(struct tfl *z, const json_t *ops)
{
	char *p = NULL;
	size_t len = 0, k = 0;
	FILE *f = open_memstream(&p, &len);
	const char *name;
	json_t *e;
	int ret;

	if (!f)
		return -ENOMEM;
	json_object_foreach((json_t *)ops, name, e)
	{
		if (k++ == 20) {
			fprintf(f, "; %zu more (metadata.json)",
				json_object_size(ops) - 20);
			break;
		}
		fprintf(f, "%s%s: %lld operator%s, %lld bytes of options",
			k > 1 ? "; " : "", name,
			(long long)json_integer_value(
				json_object_get(e, "operators")),
			json_integer_value(json_object_get(e, "operators")) == 1
				? ""
				: "s",
			(long long)json_integer_value(
				json_object_get(e, "options_bytes")));
	}
	if (fclose(f))
		return -ENOMEM;
	ret = tfs_builder_set_xattr_str(z->b, TFS_BUILDER_ROOT,
					"info.custom_ops", p);
	free(p);
	return ret;
}

/*
 * The custom operators (EdgeTPU's, TFLite_Detection_PostProcess...):
 * their payloads are options, not tensors, so a model may have none of
 * its bytes in files; metadata.json "custom_ops" says what it holds (name:
 * operators, options bytes).  They change no byte served: a field that
 * cannot be read is a warning, never a refusal.
 */
static int read_custom_ops(struct tfl *z, const struct tfs_fb_vec *sv)
{
	struct tfs_fb_vec codes, ov;
	struct tfs_fb_table sg;
	struct tfs_diag d;
	json_t *ops = json_object();
	uint32_t si, oi;
	int ret;

	tfs_diag_clear(&d);
	if (!ops)
		return oom(z);
	ret = tfs_fb_vector(&z->fb, &z->model, 1, 4, TFL_MAX_COUNT,
			    "Model.operator_codes", &codes, &d);
	for (si = 0; ret >= 0 && si < sv->count; si++) {
		ret = tfs_fb_vec_table(&z->fb, &z->model, sv, si,
				       "Model.subgraphs", &sg, &d);
		if (!ret)
			ret = tfs_fb_vector(&z->fb, &sg, 3, 4, TFL_MAX_COUNT,
					    "SubGraph.operators", &ov, &d);
		for (oi = 0; ret >= 0 && oi < ov.count; oi++)
			ret = custom_op(z, &sg, &ov, oi, &codes, ops, &d);
	}
	if (ret == -ENOMEM) {
		json_decref(ops);
		return oom(z);
	}
	if (ret < 0 && tfs_builder_warn(z->b, d.has_offset ? d.offset : 0,
					"custom operators not listed: %s: "
					"ignored (it changes no byte served)",
					d.msg)) {
		json_decref(ops);
		return oom(z);
	}
	if (!json_object_size(ops)) {
		json_decref(ops);
		return 0;
	}
	return custom_ops_line(z, ops) ? oom(z)
				       : set_new(z, z->meta, "custom_ops", ops);
}

/* ---- paths ----------------------------------------------------------------
 */

/*
 * The stored name (= path) of every constant: "[subgraph_<i>/]NAME", an
 * empty NAME "tensor_<index>"; "@<index>" appended while the path is taken
 * or is a directory of another.  Map keys are C strings (a NUL inside a
 * name ends its key early: such names only get more '@' suffixes).
 */
static int make_paths(struct tfl *z)
{
	struct tfs_strmap files, dirs;
	char **prefixes = NULL;
	size_t np = 0, capp = 0, i;
	int ret = 0;

	tfs_strmap_init(&files);
	tfs_strmap_init(&dirs);
	for (i = 0; !ret && i < z->nconsts; i++) {
		struct tfl_const *c = &z->consts[i];
		char pre[24] = "";
		int n;

		if (c->sg)
			snprintf(pre, sizeof(pre), "subgraph_%" PRIu32 "/",
				 c->sg);
		if (c->name_len)
			n = asprintf(&c->path, "%s%.*s", pre, (int)c->name_len,
				     c->name);
		else
			n = asprintf(&c->path, "%stensor_%" PRIu32, pre,
				     c->index);
		if (n < 0) {
			c->path = NULL;
			ret = -ENOMEM;
		}
	}
	/* every proper prefix of every path is a directory */
	for (i = 0; !ret && i < z->nconsts; i++) {
		const char *p = z->consts[i].path, *s;

		for (s = strchr(p, '/'); !ret && s; s = strchr(s + 1, '/')) {
			char *d;

			if (np == capp) {
				size_t cap = capp ? 2 * capp : 64;
				char **n = realloc(prefixes, cap * sizeof(*n));

				if (!n) {
					ret = -ENOMEM;
					break;
				}
				prefixes = n;
				capp = cap;
			}
			d = strndup(p, (size_t)(s - p));
			if (!d) {
				ret = -ENOMEM;
				break;
			}
			prefixes[np++] = d;
			ret = tfs_strmap_put(&dirs, d, 1);
		}
	}
	for (i = 0; !ret && i < z->nconsts; i++) {
		struct tfl_const *c = &z->consts[i];

		while (!ret && (tfs_strmap_get(&files, c->path, NULL) ||
				tfs_strmap_get(&dirs, c->path, NULL))) {
			char *n;

			if (asprintf(&n, "%s@%" PRIu32, c->path, c->index) <
			    0) {
				ret = -ENOMEM;
				break;
			}
			free(c->path);
			c->path = n;
		}
		if (!ret)
			ret = tfs_strmap_put(&files, c->path, 1);
	}
	tfs_strmap_free(&files);
	tfs_strmap_free(&dirs);
	for (i = 0; i < np; i++)
		free(prefixes[i]);
	free(prefixes);
	return ret ? oom(z) : 0;
}

/* ---- the files ------------------------------------------------------------
 */

static int add_const(struct tfl *z, const struct tfl_const *c,
		     const char **comps, size_t ncomps)
{
	const struct tfl_buffer *buf = &z->bufs[c->buffer];
	struct tfs_tensor_spec spec;
	struct tfl_quant q;
	char num[24];
	uint32_t h;
	int ret;

	tfs_spec_tensor(&spec, c->path, strlen(c->path), c->dtype, c->shape,
			c->ndim, c->desc);
	tfs_spec_path(&spec, comps, ncomps);
	tfs_spec_raw(&spec, buf->off, buf->size);
	ret = tfs_builder_add_tensor(z->b, &spec, &h, z->d);
	if (ret)
		return ret;
	ret = tfs_builder_set_xattr(z->b, h, "tflite.name", c->name,
				    c->name_len);
	snprintf(num, sizeof(num), "%" PRIu32, c->sg);
	ret = ret ? ret
		  : tfs_builder_set_xattr_str(z->b, h, "tflite.subgraph", num);
	snprintf(num, sizeof(num), "%" PRIu32, c->index);
	ret = ret ? ret
		  : tfs_builder_set_xattr_str(z->b, h, "tflite.tensor_index",
					      num);
	snprintf(num, sizeof(num), "%" PRIu32, c->buffer);
	ret = ret ? ret
		  : tfs_builder_set_xattr_str(z->b, h, "tflite.buffer", num);
	ret = ret ? ret
		  : tfs_builder_set_xattr_str(z->b, h, "tflite.type",
					      tfl_types[c->type].name);
	ret = ret ? ret
		  : tfs_builder_set_xattr_str(
			    z->b, h, "tflite.buffer_location",
			    buf->where == TFL_OFFSET ? "offset" : "inline");
	if (!ret && tfl_types[c->type].unpacked)
		ret = tfs_builder_set_xattr_str(z->b, h, "packing",
						c->packed_bytes ? "byte"
								: "nibble");
	if (!ret && c->dtype == TFS_DTYPE_STRING)
		ret = tfs_builder_set_xattr_str(z->b, h, "string_encoding",
						"tflite");
	if (!ret && c->is_variable)
		ret = tfs_builder_set_xattr_str(z->b, h, "tflite.is_variable",
						"1");
	if (ret)
		return oom(z);
	if (c->has_quant) {
		/* read and warned about when the tensor was read */
		ret = read_quant(z, &c->quant, c->ndim, c->shape, NULL, &q);
		ret = ret ? ret : quant_xattrs(z, h, &q, c->desc);
	}
	return ret;
}

/* split @path at '/' in place into @comps (at most TFL_MAX_COMPS) */
#define TFL_MAX_COMPS 256
static size_t split_path(char *path, const char **comps)
{
	size_t n = 0;
	char *s = path;

	for (;;) {
		char *slash = strchr(s, '/');

		if (!slash || n == TFL_MAX_COMPS - 1) {
			comps[n++] = s;
			return n;
		}
		*slash = '\0';
		comps[n++] = s;
		s = slash + 1;
	}
}

static int add_consts(struct tfl *z)
{
	const char *comps[TFL_MAX_COMPS];
	char *copy;
	size_t i, n;
	int ret = 0;

	for (i = 0; !ret && i < z->nconsts; i++) {
		copy = strdup(z->consts[i].path);
		if (!copy)
			return oom(z);
		n = split_path(copy, comps);
		ret = add_const(z, &z->consts[i], comps, n);
		free(copy);
	}
	return ret;
}

static int tfl_load(const struct tfs_source *src, struct tfs_builder *b,
		    struct tfs_diag *d)
{
	struct tfl z = {.src = src, .b = b, .d = d};
	struct tfs_fb_vec sv, ext;
	struct tfs_fb_str desc;
	uint64_t version, pos = 0;
	uint32_t si;
	size_t i;
	int ret;

	if (src->size < 8)
		return tfs_diag_at(d, -EBADMSG, src->size,
				   "file: %" PRIu64 " bytes, a TFLite model "
				   "needs at least 8",
				   src->size);
	if (memcmp(src->data + 4, "TFL3", 4) != 0)
		return tfs_diag_at(d, -EBADMSG, 4,
				   "file identifier: \"%s\" at byte 4, not "
				   "\"TFL3\"",
				   TFS_SHOWN((const char *)src->data + 4, 4));
	tfs_fb_init(&z.fb, src->data,
		    src->size < TFL_FB_MAX ? src->size : TFL_FB_MAX);
	z.meta = tfs_builder_metadata(b);
	z.listed = json_array();
	z.subgraphs = json_array();
	if (!z.listed || !z.subgraphs) {
		ret = oom(&z);
		goto out;
	}
	ret = tfs_fb_root(&z.fb, &z.model, d);
	if (!ret)
		ret = tfs_fb_field(&z.fb, &z.model, 0, 4, "Model.version", &pos,
				   d);
	if (ret < 0)
		goto out;
	version = ret ? tfs_load_le(z.fb.p + pos, 4) : 0;
	if (version != 3) {
		ret = tfs_diag_at(d, -ENOTSUP, ret ? pos : z.model.pos,
				  "Model.version: %" PRIu64 ", only schema "
				  "version 3 is supported",
				  version);
		goto out;
	}
	ret = tfs_fb_string(&z.fb, &z.model, 3, "Model.description", &desc, d);
	if (ret < 0)
		goto out;
	ret = set_new(&z, z.meta, "version", json_integer(3));
	ret = ret ? ret
		  : set_new(&z, z.meta, "description",
			    desc.p ? str_json(desc.p, desc.len) : json_null());
	ret = ret ? ret : read_buffers(&z);
	ret = ret ? ret : read_metadata(&z);
	if (ret)
		goto out;
	ret = tfs_fb_vector(&z.fb, &z.model, 2, 4, TFL_MAX_COUNT,
			    "Model.subgraphs", &sv, d);
	if (ret < 0)
		goto out;
	for (si = 0; si < sv.count; si++) {
		ret = read_subgraph(&z, &sv, si);
		if (ret)
			goto out;
	}
	ret = read_custom_ops(&z, &sv);
	if (ret)
		goto out;
	ret = tfs_fb_vector(&z.fb, &z.model, 9, 4, TFL_MAX_COUNT,
			    "Model.external_buffers", &ext, d);
	if (ret < 0)
		goto out;
	ret = check_offsets_past_flatbuffer(&z);
	ret = ret ? ret : make_paths(&z);
	ret = ret ? ret : add_consts(&z);
	if (ret)
		goto out;
	ret = set_new(&z, z.meta, "subgraphs", z.subgraphs);
	z.subgraphs = NULL;
	ret = ret ? ret : set_new(&z, z.meta, "tensors_without_data", z.listed);
	z.listed = NULL;
	ret = ret ? ret
		  : set_new(&z, z.meta, "external_buffers",
			    json_integer(ext.count));
	if (!ret && tfs_builder_set_xattr_str(b, TFS_BUILDER_ROOT,
					      "tflite.version", "3"))
		ret = oom(&z);
out:
	json_decref(z.listed);
	json_decref(z.subgraphs);
	for (i = 0; i < z.nconsts; i++)
		free(z.consts[i].path);
	free(z.consts);
	free(z.bufs);
	return ret;
}

TFS_FORMAT(tflite, "TensorFlow Lite / LiteRT model (FlatBuffers)",
	   .probe = tfl_probe, .load = tfl_load);
