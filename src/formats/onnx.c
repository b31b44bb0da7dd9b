// SPDX-License-Identifier: MIT
/*
 * ONNX models (specs/onnx.md): one protobuf ModelProto, read with the
 * bounded wire reader of parse/protobuf.h, in file order, recursing into
 * the graphs where they appear.  Every tensor of the model becomes a file
 * (section 6): main-graph initializers at the root under their stored
 * names, sparse initializers as a directory (values, indices), Constant
 * nodes under @constants, other nodes' tensor attributes under
 * @attributes, subgraphs under @subgraphs, training graphs under
 * @training, functions under @functions (section 8).
 *
 * Element bytes: raw_data is served zero-copy from the mapping, and so is
 * a packed float_data / double_data of a float32 / float64 / complex
 * tensor (those bytes are the tensor's bytes).  Values that must be
 * converted (varint fields, unpacked fields, Constant value_float(s) /
 * value_int(s)) are converted into a buffer sized from the checked element
 * count and given to the builder as bytes in memory (spec.mem); external
 * data is served from the data file beside the model, opened by the core
 * (tfs_builder_open_companion: never outside the model's directory), its
 * range checked against that file; a missing data file leaves its tensors
 * unreadable instead of refusing the model.
 *
 * A bare TensorProto (.pb, onnx's test data) is one tensor.  STRING
 * tensors are not files: their values are in metadata.json.
 *
 * Why one file of this size (src/ keeps files under 1,500 lines but for
 * readers whose format demands it): ONNX describes its tensors in eleven
 * places of one protobuf schema (initializers, sparse initializers,
 * Constant nodes, tensor attributes, subgraphs, training and function
 * graphs, external data in companions), each with its own naming rule, and
 * the walk that names them must see the whole schema at once; the wire
 * reader and the field checks are shared (parse/protobuf.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/common/info_xattr.h"
#include "core/kept_strings.h"
#include "core/strmap.h"
#include "parse/protobuf.h"
#include "core/builder.h"
#include "core/checked.h"
#include "core/cursor.h"
#include "core/diag.h"
#include "core/dtype.h"
#include "core/format.h"
#include "core/names.h"
#include "core/source.h"

#define OX_FILE_MAX 0x7fffffffull /* protobuf's 2 GiB - 1 */
#define OX_MAX_DIMS 64
#define OX_MAX_GRAPH_DEPTH 32
#define OX_MAX_MESSAGES (1ull << 24)
#define OX_MAX_TENSORS (1u << 20)
#define OX_NAME_MAX (64u << 10)
/* scope segments: 4 per graph level, and the tensor's own */
#define OX_MAX_SEGS (4 * OX_MAX_GRAPH_DEPTH + 8)
/* typed values converted at load, all tensors together */
#define OX_CONVERT_MAX (1ull << 30)

/* TensorProto field numbers */
enum {
	TP_DIMS = 1,
	TP_DATA_TYPE = 2,
	TP_SEGMENT = 3,
	TP_FLOAT = 4,
	TP_INT32 = 5,
	TP_STRING = 6,
	TP_INT64 = 7,
	TP_NAME = 8,
	TP_RAW = 9,
	TP_DOUBLE = 10,
	TP_UINT64 = 11,
	TP_EXTERNAL = 13,
	TP_LOCATION = 14,
	TP_NFIELDS = 12,
};

static const char *const tp_field_names[TP_NFIELDS] = {
	[TP_FLOAT] = "float_data",   [TP_INT32] = "int32_data",
	[TP_STRING] = "string_data", [TP_INT64] = "int64_data",
	[TP_DOUBLE] = "double_data", [TP_UINT64] = "uint64_data",
};

#define ONNX_STRING 8
#define ONNX_MAX_TYPE 26

/* TensorProto.DataType: tensorfs dtype, typed field, its name */
static const struct {
	const char *name;
	enum tfs_dtype dtype;
	uint8_t field;
} ox_types[ONNX_MAX_TYPE + 1] = {
	[1] = {"FLOAT", TFS_DTYPE_FLOAT32, TP_FLOAT},
	[2] = {"UINT8", TFS_DTYPE_UINT8, TP_INT32},
	[3] = {"INT8", TFS_DTYPE_INT8, TP_INT32},
	[4] = {"UINT16", TFS_DTYPE_UINT16, TP_INT32},
	[5] = {"INT16", TFS_DTYPE_INT16, TP_INT32},
	[6] = {"INT32", TFS_DTYPE_INT32, TP_INT32},
	[7] = {"INT64", TFS_DTYPE_INT64, TP_INT64},
	[8] = {"STRING", TFS_DTYPE_INVALID, TP_STRING},
	[9] = {"BOOL", TFS_DTYPE_BOOL, TP_INT32},
	[10] = {"FLOAT16", TFS_DTYPE_FLOAT16, TP_INT32},
	[11] = {"DOUBLE", TFS_DTYPE_FLOAT64, TP_DOUBLE},
	[12] = {"UINT32", TFS_DTYPE_UINT32, TP_UINT64},
	[13] = {"UINT64", TFS_DTYPE_UINT64, TP_UINT64},
	[14] = {"COMPLEX64", TFS_DTYPE_COMPLEX64, TP_FLOAT},
	[15] = {"COMPLEX128", TFS_DTYPE_COMPLEX128, TP_DOUBLE},
	[16] = {"BFLOAT16", TFS_DTYPE_BFLOAT16, TP_INT32},
	[17] = {"FLOAT8E4M3FN", TFS_DTYPE_FLOAT8_E4M3, TP_INT32},
	[18] = {"FLOAT8E4M3FNUZ", TFS_DTYPE_FLOAT8_E4M3FNUZ, TP_INT32},
	[19] = {"FLOAT8E5M2", TFS_DTYPE_FLOAT8_E5M2, TP_INT32},
	[20] = {"FLOAT8E5M2FNUZ", TFS_DTYPE_FLOAT8_E5M2FNUZ, TP_INT32},
	[21] = {"UINT4", TFS_DTYPE_UINT4, TP_INT32},
	[22] = {"INT4", TFS_DTYPE_INT4, TP_INT32},
	[23] = {"FLOAT4E2M1", TFS_DTYPE_FLOAT4, TP_INT32},
	[24] = {"FLOAT8E8M0", TFS_DTYPE_FLOAT8_E8M0, TP_INT32},
	[25] = {"UINT2", TFS_DTYPE_UINT2, TP_INT32},
	[26] = {"INT2", TFS_DTYPE_INT2, TP_INT32},
};

struct ox_str {
	const char *p;
	size_t len;
	uint64_t at; /* where it is stated */
	bool set;
};

/* one TensorProto as read */
struct ox_tensor {
	uint64_t at; /* the message's first byte */
	struct tfs_cursor msg;
	struct ox_str name;
	uint64_t dims[OX_MAX_DIMS];
	uint32_t ndim;
	uint64_t dims_at;
	int64_t data_type;
	uint64_t type_at;
	bool has_type;
	bool has_raw;
	const uint8_t *raw;
	uint64_t raw_at, raw_len;
	/* typed fields, by field number: values, fields, the first field */
	uint64_t typed_count[TP_NFIELDS];
	uint32_t typed_fields[TP_NFIELDS];
	struct tfs_pb_field typed_first[TP_NFIELDS];
	int64_t data_location;
	uint64_t location_at;
	bool has_external;
	uint64_t external_at;
	struct ox_str ext_location, ext_offset, ext_length;
	/* checked */
	enum tfs_dtype dtype;
	uint64_t count, nbytes;
};

/* a Constant value_* attribute: one or more scalars */
struct ox_attr_values {
	struct tfs_cursor msg; /* the AttributeProto */
	uint32_t field;	       /* 2 f, 3 i, 7 floats, 8 ints */
	uint64_t count;
	uint64_t at;
};

struct ox {
	const struct tfs_source *src;
	struct tfs_builder *b;
	struct tfs_diag *d;
	struct tfs_pb_limits lim;
	uint32_t graph_depth;
	/* the scope: segments of the qualified name */
	const char *seg[OX_MAX_SEGS];
	size_t seglen[OX_MAX_SEGS];
	uint32_t nseg;
	/* qualified names given so far (owned), for the ~N rule */
	struct tfs_strmap names;
	struct tfs_kept_strings owned;
	uint64_t ntensors;
	uint64_t converted; /* bytes of converted values */
	uint64_t external;  /* tensors in external data */
	json_t *meta;	    /* borrowed: the builder's */
	json_t *strings;    /* string_tensors */
	json_t *ext_files;  /* external_files */
	struct tfs_strmap files; /* its names (owned by ext_files) */
	json_t *functions;
	uint64_t training;
	bool have_graph;
};

/* ---- small helpers ------------------------------------------------------ */

/* a JSON string of @len bytes: valid UTF-8 as is, other bytes as \xNN */
static json_t *ox_json_bytes(const char *p, size_t len)
{
	const unsigned char *s = (const unsigned char *)p;
	json_t *j;
	char *buf;
	size_t i, n = 0, k;

	if (tfs_utf8_valid(s, len))
		return json_stringn(p, len);
	buf = malloc(len * 4 + 1);
	if (!buf)
		return NULL;
	for (i = 0; i < len;) {
		k = tfs_utf8_seq(s + i, len - i);
		if (k) {
			memcpy(buf + n, s + i, k);
			n += k;
			i += k;
		} else {
			n += (size_t)sprintf(buf + n, "\\x%02x", s[i++]);
		}
	}
	j = json_stringn(buf, n);
	free(buf);
	return j;
}

static int ox_set(struct ox *z, json_t *obj, const char *key, json_t *v)
{
	if (!v || json_object_set_new(obj, key, v))
		return tfs_diag_oom(z->d);
	return 0;
}

static int ox_append(struct ox *z, json_t *arr, json_t *v)
{
	if (!v || json_array_append_new(arr, v))
		return tfs_diag_oom(z->d);
	return 0;
}

static bool ox_eq(const struct ox_str *s, const char *lit)
{
	return s->set && s->len == strlen(lit) && memcmp(s->p, lit, s->len) == 0;
}

static void ox_take(struct ox_str *s, const struct tfs_pb_field *f)
{
	s->p = (const char *)f->data;
	s->len = (size_t)f->len;
	s->at = f->at;
	s->set = true;
}

static int ox_enter(struct ox *z, const struct tfs_pb_field *f,
		    const char *what)
{
	return tfs_pb_enter(&z->lim, f->value_at, what, z->d);
}

/* the printable qualified name of the scope + @last, for messages */
static const char *ox_printable(struct ox *z, char *buf, size_t len,
				const struct ox_str *last)
{
	char tmp[TFS_PRINTABLE_MAX * 2];
	size_t n = 0, i, k;

	for (i = 0; i < z->nseg && n < sizeof(tmp) - 1; i++) {
		if (n)
			tmp[n++] = '/';
		k = z->seglen[i];
		if (k > sizeof(tmp) - 1 - n)
			k = sizeof(tmp) - 1 - n;
		memcpy(tmp + n, z->seg[i], k);
		n += k;
	}
	if (last && n < sizeof(tmp) - 1) {
		if (n)
			tmp[n++] = '/';
		k = last->len;
		if (k > sizeof(tmp) - 1 - n)
			k = sizeof(tmp) - 1 - n;
		memcpy(tmp + n, last->p, k);
		n += k;
	}
	return tfs_name_printable(buf, len, tmp, n);
}

static int ox_push(struct ox *z, const char *p, size_t len, uint64_t at)
{
	if (z->nseg == OX_MAX_SEGS)
		return tfs_diag_at(z->d, -E2BIG, at,
				   "scope: more than %u name segments",
				   OX_MAX_SEGS);
	z->seg[z->nseg] = p;
	z->seglen[z->nseg++] = len;
	return 0;
}

static int ox_push_lit(struct ox *z, const char *lit, uint64_t at)
{
	return ox_push(z, lit, strlen(lit), at);
}

static void ox_pop(struct ox *z, uint32_t to)
{
	z->nseg = to;
}

/* ---- names and paths (section 8) ---------------------------------------- */

static int ox_count(struct ox *z, uint64_t at)
{
	if (++z->ntensors > OX_MAX_TENSORS)
		return tfs_diag_at(z->d, -E2BIG, at,
				   "more than %u tensors", OX_MAX_TENSORS);
	return 0;
}

struct ox_name {
	char *qname; /* the segments joined by '/', NUL-terminated */
	size_t qlen;
	char *buf;	    /* the path components, NUL-separated */
	const char **comp; /* into buf */
	size_t ncomp;
	bool explicit_path; /* else the builder splits qname itself */
};

/* @s named @n (through its own path if explicit), of @dtype and @shape */
static void ox_spec(struct tfs_tensor_spec *s, const struct ox_name *n,
		    enum tfs_dtype dtype, const uint64_t *shape, size_t ndim,
		    uint64_t at)
{
	tfs_spec_tensor(s, n->qname, n->qlen, dtype, shape, ndim, at);
	if (n->explicit_path)
		tfs_spec_path(s, n->comp, n->ncomp);
}

static void ox_name_free(struct ox_name *n)
{
	free(n->qname);
	free(n->buf);
	free(n->comp);
	memset(n, 0, sizeof(*n));
}

/*
 * A NUL-free form of @len bytes, one to one (0x00 -> 0x01 0x01, 0x01 ->
 * 0x01 0x02): the names map's keys are C strings, a name may hold NULs.
 */
static char *ox_key(const char *p, size_t len)
{
	char *k = malloc(2 * len + 1);
	size_t i, n = 0;

	if (!k)
		return NULL;
	for (i = 0; i < len; i++) {
		if (p[i] == 0 || p[i] == 1) {
			k[n++] = 1;
			k[n++] = (char)(p[i] + 1);
		} else {
			k[n++] = p[i];
		}
	}
	k[n] = 0;
	return k;
}

/* the scope's segments as a name and a path, unique among those given */
static int ox_make_name(struct ox *z, struct ox_name *n, uint64_t at)
{
	size_t i, j, len = 0, nc = 0, start, k, plen;
	char *q, *p, *key = NULL, *key2 = NULL;
	uint32_t tries, next;
	char sfx[16];
	int ret;

	memset(n, 0, sizeof(*n));
	ret = ox_count(z, at);
	if (ret)
		return ret;
	for (i = 0; i < z->nseg; i++)
		len += z->seglen[i] + 1;
	q = malloc(len + 16);
	n->buf = malloc(len + 16 + 1);
	if (!q || !n->buf) {
		free(q);
		ox_name_free(n);
		return tfs_diag_oom(z->d);
	}
	for (len = 0, i = 0; i < z->nseg; i++) {
		if (i)
			q[len++] = '/';
		memcpy(q + len, z->seg[i], z->seglen[i]);
		len += z->seglen[i];
	}
	q[len] = 0;
	n->qname = q;
	n->qlen = len;
	/* a name given before: "~N" (the first free N) on the last segment */
	sfx[0] = 0;
	key = ox_key(q, len);
	if (!key)
		goto oom;
	if (tfs_strmap_get(&z->names, key, &next)) {
		/* next: where the search for this name stopped last time; each
		 * step passes a name given before, so the search is bounded */
		for (tries = next ? next : 1;; tries++) {
			snprintf(sfx, sizeof(sfx), "~%u", tries);
			strcpy(q + len, sfx);
			free(key2);
			key2 = ox_key(q, len + strlen(sfx));
			if (!key2)
				goto oom;
			if (!tfs_strmap_get(&z->names, key2, NULL))
				break;
		}
		/* the map keeps its own copy of the base name's key */
		ret = tfs_strmap_put(&z->names, key, tries + 1);
		free(key);
		key = key2;
		key2 = NULL;
		n->qlen = len + strlen(sfx); /* a name may hold NUL bytes */
		if (ret || tfs_builder_warn(z->b, at,
					    "tensor '%s': the qualified name "
					    "is given twice; this one is "
					    "renamed",
					    TFS_SHOWN(q, n->qlen)))
			goto oom;
	}
	/* keep the name for the ~N rule */
	ret = tfs_kept_add(&z->owned, key);
	key = NULL; /* kept until the end (the map borrows it), or freed */
	if (ret || tfs_strmap_put(&z->names, z->owned.v[z->owned.n - 1], 1))
		goto oom;
	/* the path: each segment split at '.' and '/'; a leading '/' adds
	 * no empty first component */
	n->explicit_path =
		z->nseg != 1 || (z->seglen[0] && z->seg[0][0] == '/') || sfx[0];
	if (!n->explicit_path)
		return 0;
	p = n->buf;
	plen = 0;
	for (i = 0; i < z->nseg; i++) {
		const char *s = z->seg[i];
		size_t sl = z->seglen[i];

		if (sl && s[0] == '/') {
			s++;
			sl--;
		}
		for (start = 0, j = 0; j <= sl; j++) {
			if (j < sl && s[j] != '.' && s[j] != '/')
				continue;
			k = j - start;
			memcpy(p + plen, s + start, k);
			plen += k;
			p[plen++] = 0;
			nc++;
			start = j + 1;
		}
	}
	if (sfx[0]) { /* on the last component */
		plen--;
		memcpy(p + plen, sfx, strlen(sfx) + 1);
		plen += strlen(sfx) + 1;
	}
	n->comp = calloc(nc ? nc : 1, sizeof(*n->comp));
	if (!n->comp) {
		ox_name_free(n);
		return tfs_diag_oom(z->d);
	}
	for (i = 0, k = 0; i < nc; i++) {
		n->comp[i] = p + k;
		k += strlen(p + k) + 1;
	}
	n->ncomp = nc;
	return 0;
oom:
	free(key);
	free(key2);
	ox_name_free(n);
	return tfs_diag_oom(z->d);
}

/* ---- TensorProto -------------------------------------------------------- */

static int ox_ext_entry(struct ox *z, struct ox_tensor *t,
			const struct tfs_pb_field *f)
{
	struct tfs_cursor c;
	struct tfs_pb_field g;
	struct ox_str key = {0}, val = {0}, *dst = NULL;
	int ret;

	ret = ox_enter(z, f, "StringStringEntryProto");
	if (ret)
		return ret;
	tfs_pb_sub(f, &c);
	while ((ret = tfs_pb_next(&c, "external_data", &g, z->d)) == 1) {
		if (g.number != 1 && g.number != 2)
			continue;
		ret = tfs_pb_want(&g, TFS_PB_LEN,
				  g.number == 1 ? "external_data.key"
						: "external_data.value",
				  z->d);
		if (ret)
			break;
		ox_take(g.number == 1 ? &key : &val, &g);
	}
	tfs_pb_leave(&z->lim);
	if (ret < 0)
		return ret;
	if (ox_eq(&key, "location"))
		dst = &t->ext_location;
	else if (ox_eq(&key, "offset"))
		dst = &t->ext_offset;
	else if (ox_eq(&key, "length"))
		dst = &t->ext_length;
	else if (ox_eq(&key, "checksum") || ox_eq(&key, "basepath"))
		return 0;
	if (!dst)
		return tfs_builder_warn(z->b, f->at,
					"external_data: key '%s' ignored",
					TFS_SHOWN(key.p, key.set ? key.len : 0))
			       ? tfs_diag_oom(z->d)
			       : 0;
	if (dst->set)
		return tfs_diag_at(z->d, -EBADMSG, f->at,
				   "external_data: key '%.*s' given twice",
				   (int)key.len, key.p);
	*dst = val;
	dst->set = true;
	dst->at = f->at;
	if (!val.p)
		dst->p = "";
	return 0;
}

static int ox_tensor_field(struct ox *z, struct ox_tensor *t,
			   const struct tfs_pb_field *g)
{
	struct tfs_pb_values it;
	enum tfs_pb_scalar kind;
	uint64_t v;
	int ret;

	switch (g->number) {
	case TP_DIMS:
		ret = tfs_pb_values_init(&it, g, TFS_PB_SCALAR_VARINT,
					 "TensorProto", "dims", z->d);
		if (ret)
			return ret;
		if (!t->ndim)
			t->dims_at = g->at;
		while (tfs_pb_values_next(&it, &v) == 1) {
			if (t->ndim == OX_MAX_DIMS)
				return tfs_diag_at(z->d, -E2BIG, g->at,
						   "TensorProto.dims: more "
						   "than %u dims",
						   OX_MAX_DIMS);
			if ((int64_t)v < 0)
				return tfs_diag_at(z->d, -EBADMSG, g->at,
						   "TensorProto.dims[%u]: "
						   "%" PRId64 " is negative",
						   t->ndim, (int64_t)v);
			t->dims[t->ndim++] = v;
		}
		return 0;
	case TP_DATA_TYPE:
		ret = tfs_pb_want(g, TFS_PB_VARINT, "TensorProto.data_type",
				  z->d);
		t->data_type = (int64_t)(int32_t)(uint32_t)g->v;
		if ((int64_t)g->v != t->data_type)
			t->data_type = INT64_MAX; /* not an int32: unknown */
		t->type_at = g->at;
		t->has_type = true;
		return ret;
	case TP_SEGMENT:
		return tfs_diag_at(z->d, -ENOTSUP, g->at,
				   "TensorProto.segment: segmented tensors "
				   "are not supported");
	case TP_FLOAT:
	case TP_DOUBLE:
	case TP_INT32:
	case TP_INT64:
	case TP_UINT64:
		kind = g->number == TP_FLOAT	? TFS_PB_SCALAR_FIXED32
		       : g->number == TP_DOUBLE ? TFS_PB_SCALAR_FIXED64
						: TFS_PB_SCALAR_VARINT;
		ret = tfs_pb_values_init(&it, g, kind, "TensorProto",
					 tp_field_names[g->number], z->d);
		if (ret)
			return ret;
		if (!t->typed_fields[g->number]++)
			t->typed_first[g->number] = *g;
		t->typed_count[g->number] += it.count; /* < file size */
		return 0;
	case TP_STRING:
		ret = tfs_pb_want(g, TFS_PB_LEN, "TensorProto.string_data",
				  z->d);
		if (!ret && !t->typed_fields[TP_STRING]++)
			t->typed_first[TP_STRING] = *g;
		t->typed_count[TP_STRING]++;
		return ret;
	case TP_NAME:
		ret = tfs_pb_want(g, TFS_PB_LEN, "TensorProto.name", z->d);
		if (!ret && g->len > OX_NAME_MAX)
			ret = tfs_diag_at(z->d, -E2BIG, g->at,
					  "TensorProto.name: %llu bytes, "
					  "above the limit of %u",
					  (unsigned long long)g->len,
					  OX_NAME_MAX);
		if (!ret)
			ox_take(&t->name, g);
		return ret;
	case TP_RAW:
		ret = tfs_pb_want(g, TFS_PB_LEN, "TensorProto.raw_data", z->d);
		t->has_raw = true;
		t->raw = g->data;
		t->raw_at = g->value_at;
		t->raw_len = g->len;
		return ret;
	case TP_EXTERNAL:
		ret = tfs_pb_want(g, TFS_PB_LEN, "TensorProto.external_data",
				  z->d);
		if (!t->has_external)
			t->external_at = g->at;
		t->has_external = true;
		return ret ? ret : ox_ext_entry(z, t, g);
	case TP_LOCATION:
		ret = tfs_pb_want(g, TFS_PB_VARINT, "TensorProto.data_location",
				  z->d);
		t->data_location = (int64_t)g->v;
		t->location_at = g->at;
		return ret;
	default:
		return 0; /* unknown: skipped */
	}
}

static int ox_tensor_read(struct ox *z, const struct tfs_pb_field *f,
			  struct ox_tensor *t)
{
	struct tfs_pb_field g;
	struct tfs_cursor c;
	int ret;

	memset(t, 0, sizeof(*t));
	ret = ox_enter(z, f, "TensorProto");
	if (ret)
		return ret;
	t->at = f->value_at;
	tfs_pb_sub(f, &c);
	t->msg = c;
	while ((ret = tfs_pb_next(&c, "TensorProto", &g, z->d)) == 1) {
		ret = ox_tensor_field(z, t, &g);
		if (ret)
			break;
	}
	tfs_pb_leave(&z->lim);
	return ret;
}

/* the values a typed field must hold for @t */
static uint64_t ox_typed_want(const struct ox_tensor *t, unsigned field)
{
	if (field == TP_INT32 && tfs_dtype_info(t->dtype)->block_elems > 1)
		return t->nbytes; /* one packed byte per value */
	if (t->dtype == TFS_DTYPE_COMPLEX64 || t->dtype == TFS_DTYPE_COMPLEX128)
		return t->count * 2; /* nbytes fits: so does this */
	return t->count;
}

/* section 9: every rule of one TensorProto; @who names it in messages */
static int ox_tensor_check(struct ox *z, struct ox_tensor *t, const char *who)
{
	char dims[96];
	unsigned i, sources = 0, field = 0;
	uint64_t want;

	if (!t->has_type || t->data_type == 0)
		return tfs_diag_at(z->d, -EBADMSG,
				   t->has_type ? t->type_at : t->at,
				   "tensor '%s': data_type: %s", who,
				   t->has_type ? "0 (UNDEFINED)" : "missing");
	if (t->data_type < 0 || t->data_type > ONNX_MAX_TYPE)
		return tfs_diag_at(z->d, -EBADMSG, t->type_at,
				   "tensor '%s': data_type: unknown value "
				   "%" PRId64,
				   who, t->data_type);
	t->dtype = ox_types[t->data_type].dtype;
	tfs_shape_text(dims, sizeof(dims), t->dims, t->ndim);
	if (!tfs_shape_product(t->dims, t->ndim, &t->count) ||
	    t->count > INT64_MAX)
		return tfs_diag_at(z->d, -EBADMSG, t->dims_at,
				   "tensor '%s': dims %s: the element count "
				   "overflows 64 bits",
				   who, dims);
	if (t->data_type != ONNX_STRING) {
		int r = tfs_dtype_bytes(t->dtype, t->count, &t->nbytes);

		/* packed sub-byte types: ONNX pads the last byte, and the
		 * dtype table counts it (tfs_dtype_info.packed) */
		if (r || t->nbytes > INT64_MAX)
			return tfs_diag_at(z->d, -EBADMSG, t->dims_at,
					   "tensor '%s': dims %s: the byte "
					   "count overflows 64 bits",
					   who, dims);
	}
	for (i = 0; i < TP_NFIELDS; i++)
		if (t->typed_fields[i]) {
			sources++;
			field = i;
		}
	sources += t->has_raw + (t->data_location == 1);
	if (t->data_type == ONNX_STRING && (t->has_raw || t->data_location == 1))
		return tfs_diag_at(z->d, -EBADMSG,
				   t->has_raw ? t->raw_at : t->location_at,
				   "tensor '%s': %s: a STRING tensor keeps "
				   "its values in string_data only",
				   who, t->has_raw ? "raw_data" : "data_location");
	if (sources > 1)
		return tfs_diag_at(z->d, -EBADMSG,
				   t->has_raw ? t->raw_at : t->at,
				   "tensor '%s': more than one data source "
				   "(raw_data, typed fields, external data)",
				   who);
	if (t->data_location != 0 && t->data_location != 1)
		return tfs_diag_at(z->d, -EBADMSG, t->location_at,
				   "tensor '%s': data_location: unknown value "
				   "%" PRId64,
				   who, t->data_location);
	if (t->data_location == 1)
		return 0; /* checked against the data file: ox_external */
	if (t->has_raw) {
		if (t->raw_len != t->nbytes)
			return tfs_diag_at(z->d, -EBADMSG, t->raw_at,
					   "tensor '%s': raw_data: %llu "
					   "bytes, but dims %s of %s need %llu",
					   who,
					   (unsigned long long)t->raw_len,
					   dims, ox_types[t->data_type].name,
					   (unsigned long long)t->nbytes);
		return 0;
	}
	if (!sources) {
		if (t->count)
			return tfs_diag_at(z->d, -EBADMSG, t->at,
					   "tensor '%s': dims %s: %llu "
					   "elements, but no data",
					   who, dims,
					   (unsigned long long)t->count);
		return 0;
	}
	if (field != ox_types[t->data_type].field)
		return tfs_diag_at(z->d, -EBADMSG, t->typed_first[field].at,
				   "tensor '%s': %s: %s tensors keep typed "
				   "values in %s",
				   who, tp_field_names[field],
				   ox_types[t->data_type].name,
				   tp_field_names[ox_types[t->data_type].field]);
	want = field == TP_STRING ? t->count : ox_typed_want(t, field);
	if (t->typed_count[field] != want)
		return tfs_diag_at(z->d, -EBADMSG, t->typed_first[field].at,
				   "tensor '%s': %s: %llu values, but dims "
				   "%s of %s need %llu",
				   who, tp_field_names[field],
				   (unsigned long long)t->typed_count[field],
				   dims, ox_types[t->data_type].name,
				   (unsigned long long)want);
	return 0;
}

/*
 * The values of typed field @field of @t as element bytes into @out
 * (@t->nbytes bytes), or only checked when @out is NULL.  The count was
 * checked: the output is bounded by nbytes, never by the field's length.
 */
static int ox_convert(struct ox *z, const struct ox_tensor *t, unsigned field,
		      uint8_t *out, const char *who)
{
	uint32_t esz = tfs_dtype_size(t->dtype);
	bool sub = tfs_dtype_info(t->dtype)->block_elems > 1;
	bool is_signed = tfs_dtype_info(t->dtype)->kind == TFS_KIND_INT;
	unsigned width, bits;
	struct tfs_cursor c = t->msg;
	struct tfs_pb_field g;
	struct tfs_pb_values it;
	enum tfs_pb_scalar kind;
	uint64_t v, n = 0, wrapped = 0;
	int ret;

	kind = field == TP_FLOAT    ? TFS_PB_SCALAR_FIXED32
	       : field == TP_DOUBLE ? TFS_PB_SCALAR_FIXED64
				    : TFS_PB_SCALAR_VARINT;
	/* bytes written per value */
	width = field == TP_FLOAT ? 4
		: field == TP_DOUBLE || field == TP_INT64 ? 8
		: field == TP_UINT64			  ? esz
		: sub					  ? 1
							  : esz;
	bits = width * 8;
	while ((ret = tfs_pb_next(&c, "TensorProto", &g, z->d)) == 1) {
		if (g.number != field)
			continue;
		ret = tfs_pb_values_init(&it, &g, kind, "TensorProto",
					 tp_field_names[field], z->d);
		if (ret)
			return ret;
		while (tfs_pb_values_next(&it, &v) == 1) {
			if (n + width > t->nbytes) /* checked counts: never */
				return tfs_diag_at(z->d, -EBADMSG, g.at,
						   "tensor '%s': %s: more "
						   "values than the dims need",
						   who, tp_field_names[field]);
			if (field == TP_UINT64 && width == 4 && v >> 32)
				return tfs_diag_at(
					z->d, -EBADMSG, g.at,
					"tensor '%s': uint64_data: %llu does "
					"not fit uint32",
					who, (unsigned long long)v);
			if (field == TP_INT32 && bits < 32) {
				int64_t s = (int64_t)v;

				if (is_signed ? s < -(1ll << (bits - 1)) ||
							s >= (1ll << (bits - 1))
					      : v >> bits)
					wrapped++;
			} else if (field == TP_INT32 &&
				   (int64_t)v != (int32_t)(uint32_t)v) {
				wrapped++;
			}
			if (out) {
				unsigned k;

				for (k = 0; k < width; k++)
					out[n + k] = (uint8_t)(v >> (8 * k));
			}
			n += width;
		}
	}
	if (ret < 0)
		return ret;
	if (wrapped &&
	    tfs_builder_warn(z->b, t->typed_first[field].at,
			     "tensor '%s': %s: %llu values do not fit %s; "
			     "their low bits are kept",
			     who, tp_field_names[field],
			     (unsigned long long)wrapped,
			     tfs_dtype_name(t->dtype)))
		return tfs_diag_oom(z->d);
	return 0;
}

/* ---- external data (section 5) ------------------------------------------ */

/* decimal digits into u64, overflow-checked */
static int ox_decimal(const struct ox_str *s, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (!s->len)
		return -EINVAL;
	for (i = 0; i < s->len; i++) {
		if (s->p[i] < '0' || s->p[i] > '9' ||
		    !tfs_mul_u64(v, 10, &v) ||
		    !tfs_add_u64(v, (uint64_t)(s->p[i] - '0'), &v))
			return -EINVAL;
	}
	*out = v;
	return 0;
}

/*
 * @loc normalised into @out (empty and "." components dropped), or the
 * reason it is refused.
 */
static const char *ox_location_rule(const struct ox_str *loc, char *out)
{
	size_t i, start, k, n = 0;

	if (!loc->len)
		return "empty";
	if (memchr(loc->p, 0, loc->len))
		return "contains a NUL byte";
	if (memchr(loc->p, '\\', loc->len))
		return "contains a backslash";
	if (loc->p[0] == '/')
		return "an absolute path";
	if (loc->len >= 2 && loc->p[1] == ':' &&
	    ((loc->p[0] | 0x20) >= 'a' && (loc->p[0] | 0x20) <= 'z'))
		return "a drive letter";
	if (loc->p[0] == '#' || memmem(loc->p, loc->len, "_ORT_MEM_ADDR_", 14))
		return "in-memory data without a file";
	for (start = 0, i = 0; i <= loc->len; i++) {
		if (i < loc->len && loc->p[i] != '/')
			continue;
		k = i - start;
		if (k == 2 && loc->p[start] == '.' && loc->p[start + 1] == '.')
			return "a '..' component";
		if (k && !(k == 1 && loc->p[start] == '.')) {
			if (n)
				out[n++] = '/';
			memcpy(out + n, loc->p + start, k);
			n += k;
		}
		start = i + 1;
	}
	out[n] = 0;
	return n ? NULL : "names no file";
}

struct ox_ext {
	char *loc; /* normalised */
	uint32_t source; /* its companion handle */
	uint64_t offset, length;
	const char *unreadable; /* static text, or NULL */
	char why[160];
};

static int ox_external(struct ox *z, struct ox_tensor *t, const char *who,
		       struct ox_ext *e)
{
	const char *rule;
	uint64_t size = 0;
	bool have_length = t->ext_length.set;
	int ret;

	memset(e, 0, sizeof(*e));
	if (!t->ext_location.set)
		return tfs_diag_at(z->d, -EBADMSG,
				   t->has_external ? t->external_at
						   : t->location_at,
				   "tensor '%s': external_data: no 'location'",
				   who);
	e->loc = malloc(t->ext_location.len + 1);
	if (!e->loc)
		return tfs_diag_oom(z->d);
	rule = ox_location_rule(&t->ext_location, e->loc);
	if (rule) {

		return tfs_diag_at(
			z->d, -EBADMSG, t->ext_location.at,
			"tensor '%s': external_data location "
			"'%s': %s, refused",
			who, TFS_SHOWN(t->ext_location.p, t->ext_location.len),
			rule);
	}
	if (t->ext_offset.set && ox_decimal(&t->ext_offset, &e->offset))
		return tfs_diag_at(z->d, -EBADMSG, t->ext_offset.at,
				   "tensor '%s': external_data offset '%.*s': "
				   "not a decimal number below 2^64",
				   who, (int)(t->ext_offset.len < 32
						      ? t->ext_offset.len
						      : 32),
				   t->ext_offset.p);
	if (have_length && ox_decimal(&t->ext_length, &e->length))
		return tfs_diag_at(z->d, -EBADMSG, t->ext_length.at,
				   "tensor '%s': external_data length '%.*s': "
				   "not a decimal number below 2^64",
				   who, (int)(t->ext_length.len < 32
						      ? t->ext_length.len
						      : 32),
				   t->ext_length.p);
	if (have_length && e->length != t->nbytes)
		return tfs_diag_at(z->d, -EBADMSG, t->ext_length.at,
				   "tensor '%s': external_data length %llu, "
				   "but the tensor has %llu bytes",
				   who, (unsigned long long)e->length,
				   (unsigned long long)t->nbytes);
	if (!z->src->path) {
		e->unreadable = "external data: the model was read from "
				"memory, so its data file is not found";
		e->length = t->nbytes;
		return 0;
	}
	/* the core opens it beneath the model's directory, no way out */
	ret = tfs_builder_open_companion_at(
		z->b, e->loc, t->ext_location.at, TFS_MISSING_UNREADABLE,
		&e->source, z->d, "tensor '%s': external_data", who);
	if (ret == -ENOENT) {
		/* missing: that tensor unreadable; refused: said at the field */
		snprintf(e->why, sizeof(e->why), "external data: %.140s",
			 z->d->msg);
		tfs_diag_clear(z->d);
		e->unreadable = e->why;
		e->length = t->nbytes;
		return 0;
	}
	if (ret)
		return ret;
	size = tfs_builder_source(z->b, e->source)->size;
	if (!have_length)
		e->length = size >= e->offset ? size - e->offset : 0;
	if (!tfs_range_ok(e->offset, e->length, size))
		return tfs_diag_at(z->d, -EBADMSG,
				   t->ext_offset.set ? t->ext_offset.at
						     : t->ext_location.at,
				   "tensor '%s': external_data: offset %llu "
				   "+ length %llu is past the end of '%s' "
				   "(%llu bytes)",
				   who, (unsigned long long)e->offset,
				   (unsigned long long)e->length, e->loc,
				   (unsigned long long)size);
	if (e->length != t->nbytes)
		return tfs_diag_at(z->d, -EBADMSG, t->ext_location.at,
				   "tensor '%s': external_data: %llu bytes "
				   "to the end of '%s', but the tensor has "
				   "%llu",
				   who, (unsigned long long)e->length, e->loc,
				   (unsigned long long)t->nbytes);
	return 0;
}

/* ---- adding tensors ----------------------------------------------------- */

static json_t *ox_shape_json(const uint64_t *dims, uint32_t n)
{
	json_t *a = json_array();
	uint32_t i;

	for (i = 0; a && i < n; i++)
		if (json_array_append_new(a, json_integer((json_int_t)dims[i])))
			return json_decref(a), NULL;
	return a;
}

/* a STRING tensor: its values into metadata.json string_tensors */
static int ox_strings(struct ox *z, const struct ox_name *n,
		      const uint64_t *dims, uint32_t ndim,
		      const struct tfs_cursor *msg, uint32_t field)
{
	struct tfs_cursor c = *msg;
	struct tfs_pb_field g;
	json_t *o = json_object(), *vals = json_array(), *key;
	int ret;

	if (!o || !vals) {
		json_decref(o);
		json_decref(vals);
		return tfs_diag_oom(z->d);
	}
	ret = ox_set(z, o, "shape", ox_shape_json(dims, ndim));
	if (!ret)
		ret = ox_set(z, o, "values", json_incref(vals));
	while (!ret && (ret = tfs_pb_next(&c, "strings", &g, z->d)) == 1) {
		ret = 0;
		if (g.number != field || g.wire != TFS_PB_LEN)
			continue;
		if (field == 4) /* AttributeProto.s: the last one wins */
			json_array_clear(vals);
		ret = ox_append(z, vals,
				ox_json_bytes((const char *)g.data,
					      (size_t)g.len));
	}
	json_decref(vals);
	if (ret < 0) {
		json_decref(o);
		return ret;
	}
	/* the key as JSON can hold it (a name is any bytes) */
	key = ox_json_bytes(n->qname, n->qlen);
	/* set_new takes @o, also when it fails */
	ret = key && !json_object_set_new(z->strings, json_string_value(key),
					  o)
		      ? 0
		      : tfs_diag_oom(z->d);
	if (!key)
		json_decref(o);
	json_decref(key);
	return ret;
}

/* storage, external range, and the TensorProto's own name if another */
static int ox_xattrs(struct ox *z, uint32_t h, const char *storage,
		     const struct ox_ext *e, const struct ox_tensor *t,
		     const char *qname)
{
	char num[32];

	if (tfs_builder_set_xattr_str(z->b, h, "onnx.storage", storage))
		return tfs_diag_oom(z->d);
	if (t && t->name.set && t->name.len &&
	    (strlen(qname) != t->name.len ||
	     memcmp(qname, t->name.p, t->name.len)) &&
	    tfs_builder_set_xattr(z->b, h, "onnx.name", t->name.p,
				  t->name.len))
		return tfs_diag_oom(z->d);
	if (!e)
		return 0;
	if (tfs_builder_set_xattr_str(z->b, h, "onnx.location", e->loc))
		return tfs_diag_oom(z->d);
	snprintf(num, sizeof(num), "%llu", (unsigned long long)e->offset);
	if (tfs_builder_set_xattr_str(z->b, h, "onnx.offset", num))
		return tfs_diag_oom(z->d);
	snprintf(num, sizeof(num), "%llu", (unsigned long long)e->length);
	if (tfs_builder_set_xattr_str(z->b, h, "onnx.length", num))
		return tfs_diag_oom(z->d);
	return 0;
}

/* the file list of metadata.json: each data file once */
static int ox_note_file(struct ox *z, const char *loc)
{
	json_t *v;

	if (tfs_strmap_get(&z->files, loc, NULL))
		return 0;
	v = json_string(loc);
	if (!v || json_array_append_new(z->ext_files, v) ||
	    tfs_strmap_put(&z->files, json_string_value(v), 1))
		return tfs_diag_oom(z->d);
	return 0;
}

/*
 * Add tensor @t under the scope's name (a component @role of @group when
 * @role is set).
 */
static int ox_add(struct ox *z, struct ox_tensor *t, uint32_t group,
		  const char *role, const char *gname)
{
	struct tfs_tensor_spec s;
	struct ox_name n = {0};
	struct ox_ext e = {0};
	const char *storage = "raw_data";
	char who[TFS_PRINTABLE_MAX], *cname = NULL;
	uint8_t *buf = NULL;
	unsigned i, field = 0;
	uint32_t h;
	int ret;

	ox_printable(z, who, sizeof(who), NULL);
	ret = ox_tensor_check(z, t, who);
	if (!ret && !role)
		ret = ox_make_name(z, &n, t->at);
	if (ret)
		return ret;
	for (i = 0; i < TP_NFIELDS; i++)
		if (t->typed_fields[i])
			field = i;
	if (t->data_type == ONNX_STRING) {
		ret = ox_strings(z, &n, t->dims, t->ndim, &t->msg, TP_STRING);
		goto out;
	}
	if (role) {
		/* a component: the group's name + its role */
		if (asprintf(&cname, "%s/%s", gname, role) < 0) {
			ret = tfs_diag_oom(z->d);
			goto out;
		}
		tfs_spec_tensor(&s, cname, strlen(cname), t->dtype, t->dims,
				t->ndim, t->at);
	} else {
		ox_spec(&s, &n, t->dtype, t->dims, t->ndim, t->at);
	}
	tfs_spec_size(&s, t->nbytes);
	if (t->data_location == 1) {
		storage = "external";
		ret = ox_external(z, t, who, &e);
		if (ret)
			goto out;
		tfs_spec_unreadable(&s, e.unreadable, e.unreadable == e.why);
		if (!e.unreadable) {
			tfs_spec_in(&s, e.source);
			tfs_spec_stored(&s, e.offset, e.length);
		}
		z->external++;
		ret = ox_note_file(z, e.loc);
		if (ret)
			goto out;
	} else if (t->has_raw) {
		tfs_spec_stored(&s, t->raw_at, t->raw_len);
	} else if (!field) {
		storage = "empty";
		tfs_spec_stored(&s, t->at, 0);
	} else if (t->typed_fields[field] == 1 &&
		   t->typed_first[field].wire == TFS_PB_LEN &&
		   ((field == TP_FLOAT && (t->dtype == TFS_DTYPE_FLOAT32 ||
					   t->dtype == TFS_DTYPE_COMPLEX64)) ||
		    (field == TP_DOUBLE && (t->dtype == TFS_DTYPE_FLOAT64 ||
					    t->dtype == TFS_DTYPE_COMPLEX128)))) {
		/* packed little-endian values: the tensor's own bytes */
		storage = "typed";
		tfs_spec_stored(&s, t->typed_first[field].value_at,
				t->typed_first[field].len);
	} else {
		storage = "typed";
		if (!tfs_add_u64(z->converted, t->nbytes, &z->converted) ||
		    z->converted > OX_CONVERT_MAX) {
			ret = tfs_diag_at(z->d, -E2BIG, t->at,
					  "tensor '%s': typed values: more "
					  "than %llu bytes to convert",
					  who, OX_CONVERT_MAX);
			goto out;
		}
		if (t->nbytes) {
			buf = malloc(t->nbytes);
			if (!buf) {
				ret = tfs_diag_oom(z->d);
				goto out;
			}
		}
		ret = ox_convert(z, t, field, buf, who);
		if (ret)
			goto out;
		tfs_spec_mem(&s, buf, t->nbytes); /* copied by the builder */
	}
	if (role) {
		ret = tfs_builder_add_component(z->b, group, role, &s, &h,
						z->d);
	} else {
		ret = tfs_builder_add_tensor(z->b, &s, &h, z->d);
	}
	if (!ret)
		ret = ox_xattrs(z, h, storage, t->data_location == 1 ? &e : NULL,
				t, s.name);
out:
	free(cname);
	free(buf);
	free(e.loc);
	ox_name_free(&n);
	return ret;
}

/* ---- SparseTensorProto -------------------------------------------------- */

/* a sparse tensor; @by_values: named by values.name in the scope */
static int ox_sparse(struct ox *z, const struct tfs_pb_field *f,
		     bool by_values)
{
	struct ox_tensor *v = NULL, *ix = NULL;
	struct tfs_tensor_spec s;
	struct tfs_pb_field g;
	struct tfs_pb_values it;
	struct tfs_cursor c;
	struct ox_name n = {0};
	uint64_t dims[OX_MAX_DIMS], val;
	uint32_t ndim = 0, h, base = z->nseg;
	char who[TFS_PRINTABLE_MAX];
	bool have_v = false, have_i = false;
	int ret;

	v = calloc(1, sizeof(*v));
	ix = calloc(1, sizeof(*ix));
	if (!v || !ix) {
		ret = tfs_diag_oom(z->d);
		goto out;
	}
	ret = ox_enter(z, f, "SparseTensorProto");
	if (ret)
		goto out;
	tfs_pb_sub(f, &c);
	while ((ret = tfs_pb_next(&c, "SparseTensorProto", &g, z->d)) == 1) {
		ret = 0;
		if (g.number == 1 || g.number == 2) {
			if ((g.number == 1 ? have_v : have_i))
				ret = tfs_diag_at(z->d, -EBADMSG, g.at,
						  "SparseTensorProto.%s: "
						  "given twice",
						  g.number == 1 ? "values"
								: "indices");
			else
				ret = tfs_pb_want(&g, TFS_PB_LEN,
						  "SparseTensorProto", z->d);
			if (!ret)
				ret = ox_tensor_read(z, &g,
						     g.number == 1 ? v : ix);
			*(g.number == 1 ? &have_v : &have_i) = true;
		} else if (g.number == 3) {
			ret = tfs_pb_values_init(&it, &g, TFS_PB_SCALAR_VARINT,
						 "SparseTensorProto", "dims",
						 z->d);
			while (!ret && tfs_pb_values_next(&it, &val) == 1) {
				if (ndim == OX_MAX_DIMS || (int64_t)val < 0)
					ret = tfs_diag_at(
						z->d, -EBADMSG, g.at,
						"SparseTensorProto.dims: "
						"more than %u or negative",
						OX_MAX_DIMS);
				else
					dims[ndim++] = val;
			}
		}
		if (ret)
			break;
	}
	tfs_pb_leave(&z->lim);
	if (ret < 0)
		goto out;
	if (!have_v || !have_i) {
		ret = tfs_diag_at(z->d, -EBADMSG, f->value_at,
				  "SparseTensorProto: no %s",
				  have_v ? "indices" : "values");
		goto out;
	}
	/* its name is values.name, in the current scope */
	if (by_values) {
		if (!v->name.set || !v->name.len) {
			ret = tfs_diag_at(z->d, -EBADMSG, v->at,
					  "sparse initializer: values.name "
					  "is empty");
			goto out;
		}
		ret = ox_push(z, v->name.p, v->name.len, v->at);
		if (ret)
			goto out;
	}
	ox_printable(z, who, sizeof(who), NULL);
	ret = ox_tensor_check(z, v, who);
	if (!ret)
		ret = ox_tensor_check(z, ix, who);
	if (ret)
		goto out;
	if (v->ndim != 1 || ix->dtype != TFS_DTYPE_INT64 ||
	    !(ix->ndim == 1 || (ix->ndim == 2 && ix->dims[1] == ndim)) ||
	    ix->dims[0] != v->dims[0]) {
		ret = tfs_diag_at(z->d, -EBADMSG, f->value_at,
				  "sparse tensor '%s': values must be [NNZ], "
				  "indices int64 [NNZ] or [NNZ,%u]",
				  who, ndim);
		goto out;
	}
	if (v->data_type == ONNX_STRING) {
		ret = tfs_diag_at(z->d, -ENOTSUP, v->type_at,
				  "sparse tensor '%s': STRING values are not "
				  "supported",
				  who);
		goto out;
	}
	ret = ox_make_name(z, &n, f->value_at);
	if (ret)
		goto out;
	ox_spec(&s, &n, v->dtype, dims, ndim, f->value_at);
	ret = tfs_builder_add_group(z->b, &s, &h, z->d);
	if (!ret && tfs_builder_set_xattr_str(z->b, h, "format", "sparse_coo"))
		ret = tfs_diag_oom(z->d);
	if (ret)
		goto out;
	/* the components: the group's name + their role */
	ret = ox_add(z, v, h, "values", n.qname);
	if (!ret)
		ret = ox_add(z, ix, h, "indices", n.qname);
out:
	ox_pop(z, base);
	ox_name_free(&n);
	free(v);
	free(ix);
	return ret;
}

/* ---- graphs, nodes, attributes ------------------------------------------ */

static int ox_graph(struct ox *z, const struct tfs_pb_field *f, json_t *gmeta);

/* an attribute's scalars as a Constant value_float(s) / value_int(s) */
static int ox_attr_scalars(struct ox *z, const struct ox_attr_values *a)
{
	struct tfs_tensor_spec s;
	struct ox_name n = {0};
	struct tfs_cursor c = a->msg;
	struct tfs_pb_field g;
	struct tfs_pb_values it;
	bool is_float = a->field == 2 || a->field == 7;
	bool list = a->field == 7 || a->field == 8;
	uint64_t dims[1] = {a->count}, v, k = 0, size;
	uint8_t *buf = NULL;
	uint32_t h;
	int ret;

	ret = ox_make_name(z, &n, a->at);
	if (ret)
		return ret;
	ox_spec(&s, &n, is_float ? TFS_DTYPE_FLOAT32 : TFS_DTYPE_INT64, dims,
		list ? 1 : 0, a->at);
	size = a->count * (is_float ? 4 : 8); /* count < file size */
	if (!tfs_add_u64(z->converted, size, &z->converted) ||
	    z->converted > OX_CONVERT_MAX) {
		ret = tfs_diag_at(z->d, -E2BIG, a->at,
				  "attribute values: more than %llu bytes to "
				  "convert",
				  OX_CONVERT_MAX);
		goto out;
	}
	if (size) {
		buf = malloc(size);
		if (!buf) {
			ret = tfs_diag_oom(z->d);
			goto out;
		}
	}
	while (buf && (ret = tfs_pb_next(&c, "AttributeProto", &g, z->d)) == 1) {
		if (g.number != a->field)
			continue;
		ret = tfs_pb_values_init(&it, &g,
					 is_float ? TFS_PB_SCALAR_FIXED32
						  : TFS_PB_SCALAR_VARINT,
					 "AttributeProto", "value", z->d);
		while (!ret && tfs_pb_values_next(&it, &v) == 1) {
			unsigned w = is_float ? 4 : 8, i;

			if (!list)
				k = 0; /* a scalar: the last one wins */
			if (k + w > size)
				break;
			for (i = 0; i < w; i++)
				buf[k + i] = (uint8_t)(v >> (8 * i));
			k += w;
		}
		if (ret)
			goto out;
	}
	if (ret < 0)
		goto out;
	tfs_spec_mem(&s, buf, size); /* copied by the builder */
	ret = tfs_builder_add_tensor(z->b, &s, &h, z->d);
	if (!ret)
		ret = ox_xattrs(z, h, "attribute", NULL, NULL, NULL);
out:
	free(buf);
	ox_name_free(&n);
	return ret;
}

struct ox_node {
	struct ox_str name, op_type, domain, output0;
	uint64_t at;
	const char *id; /* node_id */
	size_t id_len;
	char idbuf[48];
	bool constant;
};

struct ox_attr {
	struct ox_str name;
	int64_t type; /* -1: absent */
	bool ref;     /* ref_attr_name: a reference, no value */
	uint64_t nfloats, nints;
	bool has_f, has_i;
	uint32_t nstrings;
	struct tfs_cursor msg;
	uint64_t at;
};

/* which value field the attribute's type names, or 0 */
static uint32_t ox_attr_type_field(int64_t type)
{
	static const uint8_t fields[] = {
		[1] = 2,  [2] = 3,  [3] = 4,  [4] = 5,	[5] = 6,
		[6] = 7,  [7] = 8,  [8] = 9,  [9] = 10, [10] = 11,
		[11] = 22, [12] = 23,
	};

	return type >= 1 && type <= 12 ? fields[type] : 0;
}

static bool ox_attr_uses(const struct ox_attr *a, uint32_t field)
{
	return !a->ref && (a->type < 0 || ox_attr_type_field(a->type) == field);
}

/* first pass over an AttributeProto: name, type, counts */
static int ox_attr_scan(struct ox *z, const struct tfs_pb_field *f,
			struct ox_attr *a)
{
	struct tfs_pb_field g;
	struct tfs_pb_values it;
	struct tfs_cursor c;
	int ret;

	memset(a, 0, sizeof(*a));
	a->type = -1;
	a->at = f->at;
	tfs_pb_sub(f, &c);
	a->msg = c;
	while ((ret = tfs_pb_next(&c, "AttributeProto", &g, z->d)) == 1) {
		ret = 0;
		switch (g.number) {
		case 1:
			ret = tfs_pb_want(&g, TFS_PB_LEN, "AttributeProto.name",
					  z->d);
			ox_take(&a->name, &g);
			break;
		case 20:
			if (g.wire == TFS_PB_VARINT)
				a->type = (int64_t)g.v;
			break;
		case 21:
			a->ref = true;
			break;
		case 2:
			a->has_f = g.wire == TFS_PB_I32;
			break;
		case 3:
			a->has_i = g.wire == TFS_PB_VARINT;
			break;
		case 7:
		case 8:
			ret = tfs_pb_values_init(
				&it, &g,
				g.number == 7 ? TFS_PB_SCALAR_FIXED32
					      : TFS_PB_SCALAR_VARINT,
				"AttributeProto",
				g.number == 7 ? "floats" : "ints", z->d);
			*(g.number == 7 ? &a->nfloats : &a->nints) += it.count;
			break;
		case 9:
			a->nstrings++;
			break;
		default:
			break;
		}
		if (ret)
			return ret;
	}
	return ret;
}

/* a Constant's value_* / value / sparse_value attribute */
static int ox_constant_attr(struct ox *z, const struct ox_node *nd,
			    const struct ox_attr *a, bool *done)
{
	struct ox_attr_values av = {.msg = a->msg, .at = a->at};
	uint64_t cnt = 0;
	int ret;

	*done = true;
	if (ox_eq(&a->name, "value_float") && ox_attr_uses(a, 2) && a->has_f)
		av.field = 2, av.count = 1;
	else if (ox_eq(&a->name, "value_int") && ox_attr_uses(a, 3) &&
		 a->has_i)
		av.field = 3, av.count = 1;
	else if (ox_eq(&a->name, "value_floats") && ox_attr_uses(a, 7))
		av.field = 7, av.count = a->nfloats;
	else if (ox_eq(&a->name, "value_ints") && ox_attr_uses(a, 8))
		av.field = 8, av.count = a->nints;
	else if (ox_eq(&a->name, "value_string") && ox_attr_uses(a, 4))
		av.field = 4, cnt = 1;
	else if (ox_eq(&a->name, "value_strings") && ox_attr_uses(a, 9))
		av.field = 9, cnt = a->nstrings;
	else if (ox_eq(&a->name, "value") || ox_eq(&a->name, "sparse_value"))
		return *done = false, 0; /* the tensor fields: the caller */
	else
		return *done = false, 0;
	if (!nd->output0.set || !nd->output0.len) {
		return tfs_builder_warn(z->b, nd->at,
					"Constant node: no output name, its "
					"value is skipped")
			       ? tfs_diag_oom(z->d)
			       : 0;
	}
	ret = ox_push_lit(z, "@constants", a->at);
	if (!ret)
		ret = ox_push(z, nd->output0.p, nd->output0.len, a->at);
	if (ret)
		return ret;
	if (av.field == 4 || av.field == 9) {
		struct ox_name n;

		ret = ox_make_name(z, &n, a->at);
		if (!ret) {
			ret = ox_strings(z, &n, &cnt, av.field == 9 ? 1 : 0,
					 &a->msg, av.field);
			ox_name_free(&n);
		}
	} else {
		ret = ox_attr_scalars(z, &av);
	}
	return ret;
}

/* the tensors and graphs of one attribute of node @nd */
static int ox_attribute(struct ox *z, const struct ox_node *nd,
			const struct tfs_pb_field *f)
{
	struct ox_attr a;
	struct tfs_pb_field g;
	struct tfs_cursor c;
	struct ox_tensor *t = NULL;
	uint32_t base = z->nseg, k[24] = {0};
	char kbuf[24];
	bool done = false, seen_t = false, seen_g = false, constant_value;
	int ret;

	ret = ox_enter(z, f, "AttributeProto");
	if (ret)
		return ret;
	ret = ox_attr_scan(z, f, &a);
	if (ret || a.ref)
		goto out;
	if (nd->constant) {
		ret = ox_constant_attr(z, nd, &a, &done);
		ox_pop(z, base);
		if (ret || done)
			goto out;
	}
	constant_value = nd->constant && (ox_eq(&a.name, "value") ||
					  ox_eq(&a.name, "sparse_value"));
	if (constant_value && (!nd->output0.set || !nd->output0.len)) {
		ret = tfs_builder_warn(z->b, nd->at,
				       "Constant node: no output name, its "
				       "value is skipped")
			      ? tfs_diag_oom(z->d)
			      : 0;
		goto out;
	}
	t = malloc(sizeof(*t));
	if (!t) {
		ret = tfs_diag_oom(z->d);
		goto out;
	}
	c = a.msg;
	while ((ret = tfs_pb_next(&c, "AttributeProto", &g, z->d)) == 1) {
		bool is_tensor = g.number == 5 || g.number == 10 ||
				 g.number == 22 || g.number == 23;
		bool is_graph = g.number == 6 || g.number == 11;
		bool repeated = g.number == 10 || g.number == 11 ||
				g.number == 23;

		if ((!is_tensor && !is_graph) || g.wire != TFS_PB_LEN ||
		    !ox_attr_uses(&a, g.number))
			continue;
		if (g.number == 5 || g.number == 6) {
			bool *seen = g.number == 5 ? &seen_t : &seen_g;

			if (*seen) {
				ret = tfs_diag_at(z->d, -EBADMSG, g.at,
						  "AttributeProto.%s: given "
						  "twice",
						  g.number == 5 ? "t" : "g");
				break;
			}
			*seen = true;
		}
		ox_pop(z, base);
		if (constant_value) {
			ret = ox_push_lit(z, "@constants", g.at);
			if (!ret)
				ret = ox_push(z, nd->output0.p,
					      nd->output0.len, g.at);
		} else {
			ret = ox_push_lit(z, is_graph ? "@subgraphs"
						      : "@attributes",
					  g.at);
			if (!ret)
				ret = ox_push(z, nd->id, nd->id_len, g.at);
			if (!ret)
				ret = ox_push(z, a.name.set ? a.name.p : "",
					      a.name.len, g.at);
			if (!ret && repeated) {
				snprintf(kbuf, sizeof(kbuf), "%u",
					 k[g.number]++);
				ret = ox_push_lit(z, kbuf, g.at);
			}
		}
		if (ret)
			break;
		if (is_graph)
			ret = ox_graph(z, &g, NULL);
		else if (g.number == 22 || g.number == 23)
			ret = ox_sparse(z, &g, false);
		else
			ret = ox_tensor_read(z, &g, t);
		if (!ret && (g.number == 5 || g.number == 10))
			ret = ox_add(z, t, 0, NULL, NULL);
		if (ret)
			break;
	}
out:
	ox_pop(z, base);
	free(t);
	tfs_pb_leave(&z->lim);
	return ret < 0 ? ret : 0;
}

/* first pass over a NodeProto: its name, op_type, domain, output[0] */
static int ox_node_scan(struct ox *z, const struct tfs_pb_field *f,
			struct ox_node *nd)
{
	struct tfs_pb_field g;
	struct tfs_cursor c;
	int ret;

	memset(nd, 0, sizeof(*nd));
	nd->at = f->at;
	tfs_pb_sub(f, &c);
	while ((ret = tfs_pb_next(&c, "NodeProto", &g, z->d)) == 1) {
		if (g.wire != TFS_PB_LEN)
			continue;
		if (g.number == 3)
			ox_take(&nd->name, &g);
		else if (g.number == 4)
			ox_take(&nd->op_type, &g);
		else if (g.number == 7)
			ox_take(&nd->domain, &g);
		else if (g.number == 2 && !nd->output0.set)
			ox_take(&nd->output0, &g);
	}
	nd->constant = ox_eq(&nd->op_type, "Constant") &&
		       (!nd->domain.set || !nd->domain.len ||
			ox_eq(&nd->domain, "ai.onnx"));
	return ret;
}

/*
 * The graph's operators by type, as OpenVINO's layer_types: {"Conv": 10,
 * "com.microsoft:Attention": 2} (a domain other than the default one
 * before a ':'); NULL when out of memory.
 */
static json_t *ox_op_types(const struct ox_node *nodes, uint32_t n)
{
	json_t *o = json_object(), *c;
	char key[TFS_PRINTABLE_MAX * 2 + 2], dom[TFS_PRINTABLE_MAX],
		op[TFS_PRINTABLE_MAX];
	uint32_t i;

	for (i = 0; o && i < n; i++) {
		const struct ox_node *nd = &nodes[i];
		bool other = nd->domain.len && !ox_eq(&nd->domain, "ai.onnx");

		tfs_name_printable(op, sizeof(op), nd->op_type.p ?: "",
				   nd->op_type.len);
		dom[0] = '\0';
		if (other)
			tfs_name_printable(dom, sizeof(dom), nd->domain.p,
					   nd->domain.len);
		snprintf(key, sizeof(key), "%s%s%s", dom, other ? ":" : "", op);
		c = json_object_get(o, key);
		if (c ? json_integer_set(c, json_integer_value(c) + 1)
		      : json_object_set_new(o, key, json_integer(1))) {
			json_decref(o);
			o = NULL;
		}
	}
	return o;
}

static int ox_node(struct ox *z, const struct tfs_pb_field *f,
		   struct ox_node *nd)
{
	struct tfs_pb_field g;
	struct tfs_cursor c;
	int ret;

	ret = ox_enter(z, f, "NodeProto");
	if (ret)
		return ret;
	tfs_pb_sub(f, &c);
	while ((ret = tfs_pb_next(&c, "NodeProto", &g, z->d)) == 1) {
		if (g.number != 5 || g.wire != TFS_PB_LEN)
			continue;
		ret = ox_attribute(z, nd, &g);
		if (ret)
			break;
	}
	tfs_pb_leave(&z->lim);
	return ret;
}

struct ox_named {
	const char *p;
	size_t len;
	uint64_t at;
	uint32_t index;
};

static int cmp_named(const void *pa, const void *pb)
{
	const struct ox_named *a = pa, *b = pb;
	size_t n = a->len < b->len ? a->len : b->len;
	int r = n ? memcmp(a->p, b->p, n) : 0;

	if (r)
		return r;
	if (a->len != b->len)
		return a->len < b->len ? -1 : 1;
	return a->index < b->index ? -1 : a->index > b->index;
}

static bool ox_same(const struct ox_named *a, const struct ox_named *b)
{
	return a->len == b->len && (!a->len || memcmp(a->p, b->p, a->len) == 0);
}

/*
 * The node ids of the @n nodes of a graph (node field @field of message
 * @msg): the name when non-empty and unique, else "<op_type>#<index>".
 */
static int ox_node_ids(struct ox *z, const struct tfs_cursor *msg,
		       uint32_t field, struct ox_node **out, uint32_t *count)
{
	struct tfs_cursor c = *msg;
	struct tfs_pb_field g;
	struct ox_node *v = NULL, *nv;
	struct ox_named *sorted = NULL;
	uint32_t n = 0, cap = 0, i;
	int ret;

	while ((ret = tfs_pb_next(&c, "GraphProto", &g, z->d)) == 1) {
		if (g.number != field || g.wire != TFS_PB_LEN)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			nv = reallocarray(v, cap, sizeof(*v));
			if (!nv) {
				ret = tfs_diag_oom(z->d);
				goto fail;
			}
			v = nv;
		}
		ret = ox_node_scan(z, &g, &v[n]);
		if (ret)
			goto fail;
		n++;
	}
	if (ret < 0)
		goto fail;
	sorted = calloc(n ? n : 1, sizeof(*sorted));
	if (!sorted) {
		ret = tfs_diag_oom(z->d);
		goto fail;
	}
	for (i = 0; i < n; i++) {
		sorted[i].p = v[i].name.p;
		sorted[i].len = v[i].name.len;
		sorted[i].index = i;
	}
	qsort(sorted, n, sizeof(*sorted), cmp_named);
	for (i = 0; i < n; i++) {
		struct ox_node *nd = &v[sorted[i].index];
		bool dup = (i && ox_same(&sorted[i], &sorted[i - 1])) ||
			   (i + 1 < n && ox_same(&sorted[i], &sorted[i + 1]));

		if (nd->name.len && !dup) {
			nd->id = nd->name.p;
			nd->id_len = nd->name.len;
		} else {
			int k = snprintf(nd->idbuf, sizeof(nd->idbuf),
					 "%.*s#%u",
					 (int)(nd->op_type.len < 32
						       ? nd->op_type.len
						       : 32),
					 nd->op_type.set ? nd->op_type.p : "",
					 sorted[i].index);

			nd->id = nd->idbuf;
			nd->id_len = (size_t)k;
		}
	}
	free(sorted);
	*out = v;
	*count = n;
	return 0;
fail:
	free(v);
	return ret;
}

/* ValueInfoProto / TypeProto for metadata.json */
static const char *ox_elem_name(int64_t t)
{
	if (t == ONNX_STRING)
		return "string";
	if (t > 0 && t <= ONNX_MAX_TYPE && ox_types[t].dtype)
		return tfs_dtype_name(ox_types[t].dtype);
	if (t > 0 && t <= ONNX_MAX_TYPE)
		return ox_types[t].name;
	return "undefined";
}

static int ox_shape_meta(struct ox *z, const struct tfs_pb_field *f,
			 json_t *shape)
{
	struct tfs_cursor c, dc;
	struct tfs_pb_field g, h;
	int ret;

	tfs_pb_sub(f, &c);
	while ((ret = tfs_pb_next(&c, "TensorShapeProto", &g, z->d)) == 1) {
		json_t *dim = NULL;

		if (g.number != 1 || g.wire != TFS_PB_LEN)
			continue;
		tfs_pb_sub(&g, &dc);
		while ((ret = tfs_pb_next(&dc, "Dimension", &h, z->d)) == 1) {
			json_t *nv = NULL;

			if (h.number == 1 && h.wire == TFS_PB_VARINT)
				nv = json_integer((json_int_t)h.v);
			else if (h.number == 2 && h.wire == TFS_PB_LEN)
				nv = ox_json_bytes((const char *)h.data,
						   (size_t)h.len);
			else
				continue;
			json_decref(dim);
			dim = nv;
			if (!dim)
				return tfs_diag_oom(z->d);
		}
		if (ret < 0) {
			json_decref(dim);
			return ret;
		}
		ret = ox_append(z, shape, dim ? dim : json_null());
		if (ret)
			return ret;
	}
	return ret;
}

static int ox_value_info(struct ox *z, const struct tfs_pb_field *f,
			 json_t *list)
{
	struct tfs_cursor c, tc, ttc;
	struct tfs_pb_field g, h, k;
	json_t *o = json_object(), *shape = NULL;
	const char *elem = NULL;
	int ret;

	if (!o || json_array_append_new(list, o))
		return tfs_diag_oom(z->d);
	tfs_pb_sub(f, &c);
	while ((ret = tfs_pb_next(&c, "ValueInfoProto", &g, z->d)) == 1) {
		if (g.wire != TFS_PB_LEN)
			continue;
		if (g.number == 1) {
			ret = ox_set(z, o, "name",
				     ox_json_bytes((const char *)g.data,
						   (size_t)g.len));
		} else if (g.number == 2) {
			tfs_pb_sub(&g, &tc);
			while ((ret = tfs_pb_next(&tc, "TypeProto", &h,
						  z->d)) == 1) {
				static const char *const kinds[] = {
					[4] = "sequence", [5] = "map",
					[7] = "opaque",	  [8] = "sparse_tensor",
					[9] = "optional",
				};

				if (h.wire != TFS_PB_LEN)
					continue;
				if (h.number >= 4 && h.number <= 9 &&
				    kinds[h.number]) {
					elem = kinds[h.number];
					continue;
				}
				if (h.number != 1)
					continue;
				tfs_pb_sub(&h, &ttc);
				while ((ret = tfs_pb_next(&ttc, "TypeProto",
							  &k, z->d)) == 1) {
					if (k.number == 1 &&
					    k.wire == TFS_PB_VARINT)
						elem = ox_elem_name(
							(int64_t)k.v);
					if (k.number == 2 &&
					    k.wire == TFS_PB_LEN) {
						json_decref(shape);
						shape = json_array();
						if (!shape)
							return tfs_diag_oom(
								z->d);
						ret = ox_shape_meta(z, &k,
								    shape);
						if (ret) {
							json_decref(shape);
							return ret;
						}
					}
				}
				if (ret < 0)
					break;
			}
		}
		if (ret < 0)
			break;
	}
	if (ret >= 0 && elem)
		ret = ox_set(z, o, "elem_type", json_string(elem));
	if (ret >= 0 && shape)
		ret = ox_set(z, o, "shape", json_incref(shape));
	json_decref(shape);
	return ret < 0 ? ret : 0;
}

/* StringStringEntryProto into @obj (last wins, warned) */
static int ox_prop(struct ox *z, const struct tfs_pb_field *f, json_t *obj)
{
	struct tfs_cursor c;
	struct tfs_pb_field g;
	struct ox_str key = {0}, val = {0};
	json_t *k;
	int ret;

	tfs_pb_sub(f, &c);
	while ((ret = tfs_pb_next(&c, "StringStringEntryProto", &g, z->d)) ==
	       1)
		if ((g.number == 1 || g.number == 2) && g.wire == TFS_PB_LEN)
			ox_take(g.number == 1 ? &key : &val, &g);
	if (ret < 0)
		return ret;
	k = ox_json_bytes(key.set ? key.p : "", key.len);
	if (!k)
		return tfs_diag_oom(z->d);
	if (json_object_get(obj, json_string_value(k)) &&
	    tfs_builder_warn(z->b, f->at,
			     "metadata_props: key '%s' given twice, the "
			     "last is kept",
			     json_string_value(k))) {
		json_decref(k);
		return tfs_diag_oom(z->d);
	}
	ret = ox_set(z, obj, json_string_value(k),
		     ox_json_bytes(val.set ? val.p : "", val.len));
	json_decref(k);
	return ret;
}

static int ox_named_dups(struct ox *z, struct ox_named *v, uint32_t n)
{
	uint32_t i;

	if (n < 2)
		return 0;
	qsort(v, n, sizeof(*v), cmp_named);
	for (i = 1; i < n; i++)
		if (ox_same(&v[i], &v[i - 1]))
			return tfs_diag_at(z->d, -EBADMSG,
					   v[i].at > v[i - 1].at ? v[i].at
								 : v[i - 1].at,
					   "initializer '%s': the name is "
					   "given twice in one graph",
					   TFS_SHOWN(v[i].p, v[i].len));
	return 0;
}

static int ox_graph(struct ox *z, const struct tfs_pb_field *f, json_t *gmeta)
{
	struct tfs_cursor c, msg;
	struct tfs_pb_field g;
	struct ox_node *nodes = NULL;
	struct ox_named *inits = NULL, *ni;
	struct ox_tensor *t = NULL;
	uint32_t nnodes = 0, node = 0, ninit = 0, icap = 0, base = z->nseg;
	json_t *inputs = NULL, *outputs = NULL, *props = NULL;
	int ret;

	if (z->graph_depth >= OX_MAX_GRAPH_DEPTH)
		return tfs_diag_at(z->d, -E2BIG, f->value_at,
				   "GraphProto: subgraphs nested more than %u "
				   "deep",
				   OX_MAX_GRAPH_DEPTH);
	ret = ox_enter(z, f, "GraphProto");
	if (ret)
		return ret;
	z->graph_depth++;
	tfs_pb_sub(f, &msg);
	t = malloc(sizeof(*t));
	if (!t) {
		ret = tfs_diag_oom(z->d);
		goto out;
	}
	ret = ox_node_ids(z, &msg, 1, &nodes, &nnodes);
	if (ret)
		goto out;
	if (gmeta) {
		inputs = json_array();
		outputs = json_array();
		props = json_object();
		if (!inputs || !outputs || !props) {
			ret = tfs_diag_oom(z->d);
			goto out;
		}
	}
	c = msg;
	while ((ret = tfs_pb_next(&c, "GraphProto", &g, z->d)) == 1) {
		ret = 0;
		if (g.wire != TFS_PB_LEN)
			continue;
		switch (g.number) {
		case 1:
			ret = ox_node(z, &g, &nodes[node++]);
			break;
		case 5:
			ret = ox_tensor_read(z, &g, t);
			if (ret)
				break;
			if (!t->name.set || !t->name.len) {
				ret = tfs_diag_at(z->d, -EBADMSG, g.value_at,
						  "GraphProto.initializer: "
						  "a tensor without a name");
				break;
			}
			if (ninit == icap) {
				icap = icap ? icap * 2 : 16;
				ni = reallocarray(inits, icap, sizeof(*ni));
				if (!ni) {
					ret = tfs_diag_oom(z->d);
					break;
				}
				inits = ni;
			}
			inits[ninit] = (struct ox_named){
				t->name.p, t->name.len, t->at, ninit};
			ninit++;
			ret = ox_push(z, t->name.p, t->name.len, t->at);
			if (!ret)
				ret = ox_add(z, t, 0, NULL, NULL);
			ox_pop(z, base);
			break;
		case 15:
			ret = ox_sparse(z, &g, true);
			break;
		case 2:
		case 10:
			if (gmeta)
				ret = ox_set(z, gmeta,
					     g.number == 2 ? "name"
							   : "doc_string",
					     ox_json_bytes((const char *)g.data,
							   (size_t)g.len));
			break;
		case 11:
		case 12:
			if (gmeta)
				ret = ox_value_info(z, &g,
						    g.number == 11 ? inputs
								   : outputs);
			break;
		case 16:
			if (gmeta)
				ret = ox_prop(z, &g, props);
			break;
		default:
			break;
		}
		if (ret)
			break;
	}
	if (ret < 0)
		goto out;
	ret = ox_named_dups(z, inits, ninit);
	if (!ret && gmeta) {
		ret = ox_set(z, gmeta, "inputs", json_incref(inputs));
		if (!ret)
			ret = ox_set(z, gmeta, "outputs", json_incref(outputs));
		if (!ret)
			ret = ox_set(z, gmeta, "metadata_props",
				     json_incref(props));
		if (!ret)
			ret = ox_set(z, gmeta, "nodes", json_integer(nnodes));
		if (!ret)
			ret = ox_set(z, gmeta, "op_types",
				     ox_op_types(nodes, node));
	}
out:
	json_decref(inputs);
	json_decref(outputs);
	json_decref(props);
	ox_pop(z, base);
	free(inits);
	free(nodes);
	free(t);
	z->graph_depth--;
	tfs_pb_leave(&z->lim);
	return ret;
}

/* ---- functions, training, the model ------------------------------------- */

static int ox_function(struct ox *z, const struct tfs_pb_field *f)
{
	struct tfs_cursor c, msg;
	struct tfs_pb_field g;
	struct ox_str name = {0}, domain = {0}, overload = {0};
	struct ox_node *nodes = NULL, defaults = {0};
	uint32_t nnodes = 0, node = 0, base = z->nseg;
	char *id = NULL;
	int ret;

	ret = ox_enter(z, f, "FunctionProto");
	if (ret)
		return ret;
	tfs_pb_sub(f, &msg);
	c = msg;
	while ((ret = tfs_pb_next(&c, "FunctionProto", &g, z->d)) == 1) {
		if (g.wire != TFS_PB_LEN)
			continue;
		if (g.number == 1)
			ox_take(&name, &g);
		else if (g.number == 10)
			ox_take(&domain, &g);
		else if (g.number == 13)
			ox_take(&overload, &g);
	}
	if (ret < 0)
		goto out;
	if (asprintf(&id, "%.*s:%.*s%s%.*s", (int)domain.len,
		     domain.set ? domain.p : "", (int)name.len,
		     name.set ? name.p : "", overload.len ? ":" : "",
		     (int)overload.len, overload.set ? overload.p : "") < 0) {
		id = NULL;
		ret = tfs_diag_oom(z->d);
		goto out;
	}
	ret = ox_append(z, z->functions, ox_json_bytes(id, strlen(id)));
	if (!ret)
		ret = ox_push_lit(z, "@functions", f->at);
	if (!ret)
		ret = ox_push(z, id, strlen(id), f->at);
	if (!ret)
		ret = ox_node_ids(z, &msg, 7, &nodes, &nnodes);
	if (ret)
		goto out;
	/* attribute_proto defaults: as attributes of a node "@defaults" */
	defaults.id = "@defaults";
	defaults.id_len = strlen(defaults.id);
	c = msg;
	while ((ret = tfs_pb_next(&c, "FunctionProto", &g, z->d)) == 1) {
		ret = 0;
		if (g.wire != TFS_PB_LEN)
			continue;
		if (g.number == 7)
			ret = ox_node(z, &g, &nodes[node++]);
		else if (g.number == 11)
			ret = ox_attribute(z, &defaults, &g);
		if (ret)
			break;
	}
out:
	ox_pop(z, base);
	free(nodes);
	free(id);
	tfs_pb_leave(&z->lim);
	return ret < 0 ? ret : 0;
}

static int ox_training(struct ox *z, const struct tfs_pb_field *f)
{
	struct tfs_cursor c;
	struct tfs_pb_field g;
	uint32_t base = z->nseg;
	char jbuf[24];
	int ret;

	ret = ox_enter(z, f, "TrainingInfoProto");
	if (ret)
		return ret;
	snprintf(jbuf, sizeof(jbuf), "%llu", (unsigned long long)z->training++);
	tfs_pb_sub(f, &c);
	while ((ret = tfs_pb_next(&c, "TrainingInfoProto", &g, z->d)) == 1) {
		if ((g.number != 1 && g.number != 2) || g.wire != TFS_PB_LEN)
			continue;
		ret = ox_push_lit(z, "@training", g.at);
		if (!ret)
			ret = ox_push_lit(z, jbuf, g.at);
		if (!ret)
			ret = ox_push_lit(z, g.number == 1 ? "initialization"
							   : "algorithm",
					  g.at);
		if (!ret)
			ret = ox_graph(z, &g, NULL);
		ox_pop(z, base);
		if (ret)
			break;
	}
	tfs_pb_leave(&z->lim);
	return ret < 0 ? ret : 0;
}

static int ox_opset(struct ox *z, const struct tfs_pb_field *f, json_t *list)
{
	struct tfs_cursor c;
	struct tfs_pb_field g;
	struct ox_str domain = {0};
	int64_t version = 0;
	json_t *o = json_object();
	int ret;

	if (!o || json_array_append_new(list, o))
		return tfs_diag_oom(z->d);
	tfs_pb_sub(f, &c);
	while ((ret = tfs_pb_next(&c, "OperatorSetIdProto", &g, z->d)) == 1) {
		if (g.number == 1 && g.wire == TFS_PB_LEN)
			ox_take(&domain, &g);
		else if (g.number == 2 && g.wire == TFS_PB_VARINT)
			version = (int64_t)g.v;
	}
	if (ret < 0)
		return ret;
	ret = ox_set(z, o, "domain",
		     ox_json_bytes(domain.set ? domain.p : "", domain.len));
	return ret ? ret : ox_set(z, o, "version", json_integer(version));
}

static const char *const model_strings[] = {
	[2] = "producer_name", [3] = "producer_version", [4] = "domain",
	[6] = "doc_string",
};

static int ox_model(struct ox *z)
{
	struct tfs_cursor c;
	struct tfs_pb_field g;
	json_t *opsets = json_array(), *props = json_object();
	json_t *graph = json_object();
	int ret;

	if (!opsets || !props || !graph) {
		ret = tfs_diag_oom(z->d);
		goto out;
	}
	ret = ox_set(z, z->meta, "ir_version", json_integer(0));
	if (!ret)
		ret = ox_set(z, z->meta, "producer_name", json_string(""));
	if (!ret)
		ret = ox_set(z, z->meta, "producer_version", json_string(""));
	if (!ret)
		ret = ox_set(z, z->meta, "domain", json_string(""));
	if (!ret)
		ret = ox_set(z, z->meta, "model_version", json_integer(0));
	if (!ret)
		ret = ox_set(z, z->meta, "doc_string", json_string(""));
	if (ret)
		goto out;
	tfs_cursor_init(&c, z->src->data, z->src->size, 0);
	while ((ret = tfs_pb_next(&c, "ModelProto", &g, z->d)) == 1) {
		switch (g.number) {
		case 1:
		case 5:
			if (g.wire == TFS_PB_VARINT)
				ret = ox_set(z, z->meta,
					     g.number == 1 ? "ir_version"
							   : "model_version",
					     json_integer((json_int_t)g.v));
			break;
		case 2:
		case 3:
		case 4:
		case 6:
			if (g.wire == TFS_PB_LEN)
				ret = ox_set(z, z->meta,
					     model_strings[g.number],
					     ox_json_bytes((const char *)g.data,
							   (size_t)g.len));
			break;
		case 7:
			if (g.wire != TFS_PB_LEN)
				break;
			if (z->have_graph) {
				ret = tfs_diag_at(z->d, -EBADMSG, g.at,
						  "ModelProto.graph: given "
						  "twice");
				break;
			}
			z->have_graph = true;
			ret = ox_graph(z, &g, graph);
			break;
		case 8:
			if (g.wire == TFS_PB_LEN)
				ret = ox_opset(z, &g, opsets);
			break;
		case 14:
			if (g.wire == TFS_PB_LEN)
				ret = ox_prop(z, &g, props);
			break;
		case 20:
			if (g.wire == TFS_PB_LEN)
				ret = ox_training(z, &g);
			break;
		case 25:
			if (g.wire == TFS_PB_LEN)
				ret = ox_function(z, &g);
			break;
		default:
			break;
		}
		if (ret < 0)
			break;
		ret = 0;
	}
	if (ret < 0)
		goto out;
	ret = ox_set(z, z->meta, "opset_import", json_incref(opsets));
	if (!ret)
		ret = ox_set(z, z->meta, "metadata_props", json_incref(props));
	if (!ret)
		ret = ox_set(z, z->meta, "graph", json_incref(graph));
	if (!ret)
		ret = ox_set(z, z->meta, "training_info",
			     json_integer((json_int_t)z->training));
out:
	json_decref(opsets);
	json_decref(props);
	json_decref(graph);
	return ret;
}

/* ---- recognition (section 10) ------------------------------------------- */

static bool ox_model_field(uint32_t number, unsigned wire)
{
	switch (number) {
	case 1:
	case 5:
		return wire == TFS_PB_VARINT;
	case 2:
	case 3:
	case 4:
	case 6:
	case 7:
	case 8:
	case 14:
	case 20:
	case 25:
		return wire == TFS_PB_LEN;
	default:
		return false;
	}
}

/* a bare TensorProto: only with the .pb extension */
static int ox_probe_tensor(const struct tfs_source *src)
{
	struct tfs_cursor c;
	struct tfs_pb_field f;
	bool data = false;
	unsigned n = 0;
	int r;

	if (!tfs_source_name_ends(src, ".pb"))
		return 0;
	tfs_cursor_init(&c, src->data, src->size, 0);
	while (n < 64 && (r = tfs_pb_next(&c, "TensorProto", &f, NULL)) == 1) {
		if (n == 0 && f.number != TP_DIMS && f.number != TP_DATA_TYPE)
			return 0;
		if (f.number > 16)
			return 0;
		if ((f.number >= TP_FLOAT && f.number <= TP_UINT64 &&
		     f.number != TP_NAME) ||
		    f.number == TP_EXTERNAL)
			data = true;
		n++;
	}
	return n && (data || r == 0) ? 60 : 0;
}

/*
 * Core ML's Model (specs/coreml.md) starts like a ModelProto (field 1
 * varint, field 2 LEN) but states its kind in one field numbered 200..699
 * (neuralNetwork 500, mlProgram 502, pipeline 202...), a number no
 * ModelProto uses: seen at the top level, the file is not ONNX.
 */
static bool ox_coreml_field(uint32_t number)
{
	return number >= 200 && number < 700;
}

/*
 * A ModelProto as writers make it: a graph (or, without one, functions) to
 * hold its tensors, and ir_version (90; 60 without it), every top-level key
 * checked, up to OX_PROBE_FIELDS of them.  A broken value is claimed (to
 * say why) when a graph came before it or the name ends in .onnx.
 */
#define OX_PROBE_FIELDS 4096

static int ox_probe_model(const struct tfs_source *src)
{
	bool onnx_name = tfs_source_name_ends(src, ".onnx");
	bool graph = false, functions = false, ir = false;
	struct tfs_cursor c;
	struct tfs_pb_field f;
	uint64_t key;
	unsigned n;
	int r;

	tfs_cursor_init(&c, src->data, src->size, 0);
	if (tfs_cursor_varint(&c, &key) || key >> 32 ||
	    !ox_model_field((uint32_t)(key >> 3), (unsigned)(key & 7)))
		return 0;
	c.pos = 0;
	for (n = 0; n < OX_PROBE_FIELDS; n++) {
		r = tfs_pb_next(&c, "ModelProto", &f, NULL);
		if (r == 0)
			break;
		if (r < 0)
			return graph ? (ir ? 90 : 60) : onnx_name ? 20 : 0;
		if (ox_coreml_field(f.number))
			return 0;
		if (f.number <= 26 && !ox_model_field(f.number, f.wire))
			return 0;
		if (f.number == 1 && (f.v < 1 || f.v > 100))
			return 0;
		ir |= f.number == 1;
		graph |= f.number == 7;
		functions |= f.number == 25;
	}
	return graph ? (ir ? 90 : 60) : functions ? 40 : 0;
}

static int ox_probe(const struct tfs_source *src)
{
	int t = ox_probe_tensor(src);

	return t ? t : ox_probe_model(src);
}

/* ---- tensorfs info -------------------------------------------------------- */

/* root xattr "info.<label>": @text with control bytes shown as '?' */
static int ox_info(struct ox *z, const char *label, char *text)
{
	return tfs_info_xattr_printable(z->b, label, text) ? tfs_diag_oom(z->d)
							   : 0;
}

/* opset, producer and external data, for `tensorfs info` */
static int ox_summary(struct ox *z)
{
	json_t *ops = json_object_get(z->meta, "opset_import"), *o;
	char buf[512];
	size_t i, n = 0;
	int ret = 0;

	buf[0] = 0;
	json_array_foreach(ops, i, o)
	{
		const char *dom =
			json_string_value(json_object_get(o, "domain"));

		if (n < sizeof(buf))
			n += (size_t)snprintf(
				buf + n, sizeof(buf) - n, "%s%s %lld",
				i ? ", " : "", dom && *dom ? dom : "ai.onnx",
				json_integer_value(json_object_get(o, "version")));
	}
	if (buf[0])
		ret = ox_info(z, "opset", buf);
	snprintf(buf, sizeof(buf), "%s %s",
		 json_string_value(json_object_get(z->meta, "producer_name")),
		 json_string_value(
			 json_object_get(z->meta, "producer_version")));
	if (!ret && buf[0] != ' ')
		ret = ox_info(z, "producer", buf);
	snprintf(buf, sizeof(buf), "%llu tensor%s in %zu file%s",
		 (unsigned long long)z->external, z->external == 1 ? "" : "s",
		 json_array_size(z->ext_files),
		 json_array_size(z->ext_files) == 1 ? "" : "s");
	if (!ret && z->external)
		ret = ox_info(z, "external", buf);
	return ret;
}

/* ---- load ---------------------------------------------------------------- */

static int ox_load(const struct tfs_source *src, struct tfs_builder *b,
		   struct tfs_diag *d)
{
	struct ox z = {.src = src, .b = b, .d = d};
	struct tfs_pb_field f = {0};
	struct ox_tensor *t = NULL;
	int ret;

	z.lim.max_depth = TFS_PB_MAX_DEPTH;
	z.lim.max_messages = OX_MAX_MESSAGES;
	tfs_strmap_init(&z.names);
	tfs_strmap_init(&z.files);
	z.meta = tfs_builder_metadata(b);
	z.strings = json_object();
	z.ext_files = json_array();
	z.functions = json_array();
	if (!z.strings || !z.ext_files || !z.functions) {
		ret = tfs_diag_oom(d);
		goto out;
	}
	if (src->size > OX_FILE_MAX) {
		ret = tfs_diag_at(d, -E2BIG, 0,
				  "file: %llu bytes, above protobuf's limit "
				  "of 2^31-1 (large weights belong in "
				  "external data)",
				  (unsigned long long)src->size);
		goto out;
	}
	if (ox_probe_tensor(src)) {
		/* a bare TensorProto: the whole file is the message */
		f.wire = TFS_PB_LEN;
		f.data = src->data;
		f.len = src->size;
		t = malloc(sizeof(*t));
		ret = t ? ox_tensor_read(&z, &f, t) : tfs_diag_oom(d);
		if (!ret) {
			if (t->name.set && t->name.len)
				ret = ox_push(&z, t->name.p, t->name.len, 0);
			else
				ret = ox_push_lit(&z, "tensor", 0);
		}
		if (!ret)
			ret = ox_add(&z, t, 0, NULL, NULL);
		if (!ret)
			ret = ox_set(&z, z.meta, "bare_tensor", json_true());
	} else {
		ret = ox_model(&z);
		if (!ret && !z.have_graph)
			ret = tfs_builder_warn(b, TFS_NO_OFFSET,
					       "ModelProto: no graph")
				      ? tfs_diag_oom(d)
				      : 0;
		if (!ret)
			ret = ox_set(&z, z.meta, "functions",
				     json_incref(z.functions));
		if (!ret)
			ret = ox_summary(&z);
	}
	if (!ret && json_object_size(z.strings))
		ret = ox_set(&z, z.meta, "string_tensors",
			     json_incref(z.strings));
	if (!ret && json_array_size(z.ext_files))
		ret = ox_set(&z, z.meta, "external_files",
			     json_incref(z.ext_files));
	if (!ret && z.external)
		ret = ox_set(&z, z.meta, "external_tensors",
			     json_integer((json_int_t)z.external));
out:
	free(t);
	json_decref(z.strings);
	json_decref(z.ext_files);
	json_decref(z.functions);
	tfs_strmap_free(&z.names);
	tfs_strmap_free(&z.files);
	tfs_kept_free(&z.owned);
	return ret;
}

TFS_FORMAT(onnx, "ONNX model (protobuf ModelProto; bare TensorProto .pb)",
	   .probe = ox_probe, .load = ox_load);
