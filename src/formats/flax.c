// SPDX-License-Identifier: MIT
/*
 * Flax / JAX msgpack checkpoints (flax.serialization.to_bytes, the Hub's
 * flax_model.msgpack).  Spec: shared/specs/flax-msgpack.md.
 *
 * The file is one MessagePack map, the state dict: nested maps with str
 * keys are the tree (lists were turned into maps keyed "0", "1", ...),
 * ndarrays are ext 1 (ext 3 for a numpy scalar) holding the msgpack array
 * [shape, dtype name, bin of the row-major little-endian bytes], served
 * zero-copy from the bin's payload.  Other leaves (ints, floats, bools,
 * None, str, bin, complex as ext 2) go into metadata.json under their
 * dotted names; an Orbax tuple (ext 4) and a msgpack array are read like a
 * map keyed by position.  Arrays above 1 GiB were written as a map
 * {"__msgpack_chunked_array__": true, "shape": {...}, "chunks": {...}} of
 * 1-D pieces: one tensor with its full shape whose bytes are the chunks'
 * payloads in order, served piece by piece (struct tfs_segment).
 *
 * The reader is the MessagePack pull reader (src/parse/msgpack.h): nothing
 * is allocated per object but a map's keys (sorted to refuse duplicates),
 * every count is checked against the bytes left, nesting is limited.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dtype_labels.h"
#include "common/spans.h"
#include "core/strbuf.h"
#include "parse/msgpack.h"
#include "core/builder.h"
#include "core/checked.h"
#include "core/diag.h"
#include "core/dtype.h"
#include "core/format.h"
#include "core/names.h"
#include "core/source.h"

#define FX_MAX_DEPTH 64
#define FX_MAX_DIMS 32
#define FX_CHUNKED "__msgpack_chunked_array__"
#define FX_EXT_NDARRAY 1
#define FX_EXT_COMPLEX 2
#define FX_EXT_NPSCALAR 3
#define FX_EXT_TUPLE 4 /* Orbax */

struct fx {
	const struct tfs_source *src;
	struct tfs_builder *b;
	struct tfs_diag *d;
	struct tfs_mp m;
	struct tfs_strbuf name; /* the dotted name of the value being read */
	json_t *leaves;
	uint64_t tensors, chunked;
};

/* one ndarray as read */
struct fx_array {
	enum tfs_dtype dtype;
	const char *dtype_name;
	uint64_t shape[FX_MAX_DIMS];
	size_t ndim;
	uint64_t data, nbytes; /* the bin payload */
	uint64_t at;	       /* the ext's type byte */
};

static bool map_head(uint8_t t)
{
	return (t >= 0x80 && t <= 0x8f) || t == 0xde || t == 0xdf;
}

static void count_arrays(void *arg, const struct tfs_mp_obj *o)
{
	uint64_t *n = arg;

	if (o->type == TFS_MP_EXT &&
	    (o->ext == FX_EXT_NDARRAY || o->ext == FX_EXT_NPSCALAR))
		(*n)++;
}

/*
 * No magic: a map whose first key is a str, and (for a confident answer)
 * one msgpack object that fills the file exactly, holding an ndarray.
 * Nothing is allocated; only object heads are read.
 */
static int fx_probe(const struct tfs_source *src)
{
	const uint8_t *p = src->data;
	uint64_t key, arrays = 0;
	struct tfs_mp m;

	if (src->size < 2 || !map_head(p[0]))
		return 0;
	key = p[0] == 0xde ? 3 : p[0] == 0xdf ? 5 : 1;
	if (p[0] == 0x80 || key >= src->size ||
	    !((p[key] >= 0xa0 && p[key] <= 0xbf) ||
	      (p[key] >= 0xd9 && p[key] <= 0xdb)))
		return 0;
	tfs_mp_init(&m, p, src->size, 0, NULL);
	if (tfs_mp_skip(&m, "root", FX_MAX_DEPTH, count_arrays, &arrays) ||
	    tfs_cursor_remaining(&m.c) || !arrays)
		return 15; /* ours, broken: load says why */
	return 60;
}

/* ---- names ----------------------------------------------------------- */

/* append ".<key>" (the first key: "<key>"), '.', '/' and NUL escaped */
static int name_push(struct fx *x, const uint8_t *k, uint64_t n)
{
	uint64_t i, run = 0;
	char esc[4];

	tfs_strbuf_sep(&x->name, '.');
	for (i = 0; i < n; i++) {
		if (k[i] != '.' && k[i] != '/' && k[i] != 0)
			continue;
		tfs_strbuf_put(&x->name, (const char *)k + run, i - run);
		snprintf(esc, sizeof(esc), "%%%02X", k[i]);
		tfs_strbuf_put(&x->name, esc, 3);
		run = i + 1;
	}
	tfs_strbuf_put(&x->name, (const char *)k + run, n - run);
	return x->name.failed ? tfs_diag_oom(x->d) : 0;
}

static int name_index(struct fx *x, uint64_t i)
{
	char num[24];

	snprintf(num, sizeof(num), "%" PRIu64, i);
	return name_push(x, (const uint8_t *)num, strlen(num));
}

/* the name for messages: "root" at the top */
static const char *field(struct fx *x, char *buf, size_t len)
{
	if (!x->name.len)
		return "root";
	tfs_name_printable(buf, len, x->name.p, x->name.len);
	return buf;
}

/* ---- values ---------------------------------------------------------- */

static int leaf(struct fx *x, json_t *v)
{
	if (!v ||
	    json_object_set_new(x->leaves, x->name.len ? x->name.p : "", v))
		return tfs_diag_oom(x->d);
	return 0;
}

/* a number as JSON: integers as such, non-finite floats as null */
static json_t *number_json(const struct tfs_mp_obj *o)
{
	char num[24];

	if (o->type == TFS_MP_INT)
		return json_integer(o->i);
	if (o->type == TFS_MP_UINT) {
		if (o->u <= INT64_MAX)
			return json_integer((json_int_t)o->u);
		snprintf(num, sizeof(num), "%" PRIu64, o->u);
		return json_string(num);
	}
	return isfinite(o->f) ? json_real(o->f) : json_null();
}

/*
 * [shape, dtype name, bin] inside an ext at the cursor, which ends at
 * @end; *a gets it, checked.
 */
/* dimension @i of @what's shape ("ndarray"), read into @o: a uint */
static int shape_dim(struct fx *x, const char *f, const char *what, uint64_t i,
		     const struct tfs_mp_obj *o)
{
	if (o->type == TFS_MP_UINT)
		return 0;
	return tfs_mp_fail(&x->m, -EBADMSG, o->start, f,
			   "%s shape[%" PRIu64 "]: not a non-negative integer",
			   what, i);
}

/* an ndarray's next part @what, which must be of @type (@noun) */
static int ndarray_part(struct fx *x, const char *f, enum tfs_mp_type type,
			const char *what, const char *noun,
			struct tfs_mp_obj *o)
{
	int ret = tfs_mp_next(&x->m, f, o);

	if (ret || o->type == type)
		return ret;
	return tfs_mp_fail(&x->m, -EBADMSG, o->start, f,
			   "ndarray %s: not %s (type byte 0x%02x)", what, noun,
			   o->byte);
}

static int read_ndarray(struct fx *x, const struct tfs_mp_obj *ext,
			struct fx_array *a)
{
	char nb[TFS_PRINTABLE_MAX];
	const char *f = field(x, nb, sizeof(nb));
	struct tfs_mp_obj o;
	uint64_t count, bytes, i;
	const struct tfs_dtype_label *l;
	int ret;

	memset(a, 0, sizeof(*a));
	a->at = ext->start;
	ret = tfs_mp_next(&x->m, f, &o);
	if (ret)
		return ret;
	if (o.type != TFS_MP_ARRAY || o.n != 3)
		return tfs_mp_fail(&x->m, -EBADMSG, o.start, f,
				   "an ndarray ext holds [shape, dtype, "
				   "data], not type byte 0x%02x",
				   o.byte);
	ret = ndarray_part(x, f, TFS_MP_ARRAY, "shape", "an array", &o);
	if (ret)
		return ret;
	if (o.n > FX_MAX_DIMS)
		return tfs_mp_fail(&x->m, -EBADMSG, o.start, f,
				   "ndarray shape: %" PRIu64
				   " dimensions, above the limit of %d",
				   o.n, FX_MAX_DIMS);
	a->ndim = (size_t)o.n;
	for (i = 0; i < a->ndim; i++) {
		ret = tfs_mp_next(&x->m, f, &o);
		if (!ret)
			ret = shape_dim(x, f, "ndarray", i, &o);
		if (ret)
			return ret;
		a->shape[i] = o.u;
	}
	ret = ndarray_part(x, f, TFS_MP_STR, "dtype", "a str", &o);
	if (ret)
		return ret;
	l = tfs_numpy_dtype_label(o.p, o.n); /* numpy / ml_dtypes dtype.name */
	if (!l)
		return tfs_mp_fail(&x->m, -ENOTSUP, o.start, f,
				   "ndarray dtype '%.*s' is not supported",
				   (int)(o.n < 32 ? o.n : 32),
				   tfs_utf8_valid(o.p, (size_t)o.n) &&
						   !memchr(o.p, 0, o.n)
					   ? (const char *)o.p
					   : "?");
	a->dtype = l->dtype;
	a->dtype_name = l->name;
	ret = ndarray_part(x, f, TFS_MP_BIN, "data", "a bin", &o);
	if (ret)
		return ret;
	a->data = o.at;
	a->nbytes = o.n;
	if (!tfs_shape_product(a->shape, a->ndim, &count) ||
	    tfs_dtype_bytes(a->dtype, count, &bytes))
		return tfs_mp_fail(&x->m, -EBADMSG, o.start, f,
				   "ndarray: the byte size of the shape "
				   "overflows");
	if (bytes != a->nbytes)
		return tfs_mp_fail(&x->m, -EBADMSG, o.start, f,
				   "ndarray data: %" PRIu64
				   " bytes, the shape and %s need %" PRIu64,
				   a->nbytes, a->dtype_name, bytes);
	if (tfs_cursor_offset(&x->m.c) != ext->at + ext->n)
		return tfs_mp_fail(&x->m, -EBADMSG, ext->start, f,
				   "the ext holds %" PRIu64 " bytes, its "
				   "ndarray ends at %" PRIu64,
				   ext->n, tfs_cursor_offset(&x->m.c));
	return 0;
}

/* the cursor back to an ext's payload (read again as msgpack) */
static void enter_ext(struct fx *x, const struct tfs_mp_obj *ext)
{
	tfs_cursor_seek(&x->m.c, ext->at - x->m.c.base);
}

static int add_array(struct fx *x, const struct fx_array *a, uint32_t *h)
{
	struct tfs_tensor_spec s;

	tfs_spec_tensor(&s, x->name.p, x->name.len, a->dtype, a->shape, a->ndim,
			a->at);
	tfs_spec_raw(&s, a->data, a->nbytes);
	x->tensors++;
	return tfs_builder_add_tensor(x->b, &s, h, x->d);
}

static int read_value(struct fx *x, unsigned depth);

/* an array's (or tuple's) @n items, named by position */
static int read_items(struct fx *x, uint64_t n, unsigned depth)
{
	size_t len = x->name.len;
	uint64_t i;
	int ret = 0;

	for (i = 0; !ret && i < n; i++) {
		ret = name_index(x, i);
		if (!ret)
			ret = read_value(x, depth);
		tfs_strbuf_cut(&x->name, len);
	}
	return ret;
}

static int read_ext(struct fx *x, const struct tfs_mp_obj *o, unsigned depth)
{
	char nb[TFS_PRINTABLE_MAX];
	const char *f = field(x, nb, sizeof(nb));
	struct tfs_mp_obj v, re, im;
	struct fx_array a;
	int ret;

	switch (o->ext) {
	case FX_EXT_NDARRAY:
	case FX_EXT_NPSCALAR:
		enter_ext(x, o);
		ret = read_ndarray(x, o, &a);
		return ret ? ret : add_array(x, &a, NULL);
	case FX_EXT_COMPLEX:
		enter_ext(x, o);
		ret = tfs_mp_next(&x->m, f, &v);
		if (!ret && (v.type != TFS_MP_ARRAY || v.n != 2))
			ret = tfs_mp_fail(&x->m, -EBADMSG, v.start, f,
					  "a complex ext holds [real, imag]");
		if (!ret)
			ret = tfs_mp_next(&x->m, f, &re);
		if (!ret)
			ret = tfs_mp_next(&x->m, f, &im);
		if (ret)
			return ret;
		if (re.type != TFS_MP_FLOAT || im.type != TFS_MP_FLOAT ||
		    tfs_cursor_offset(&x->m.c) != o->at + o->n)
			return tfs_mp_fail(&x->m, -EBADMSG, o->start, f,
					   "a complex ext holds exactly two "
					   "floats");
		return leaf(x, json_pack("[oo]", number_json(&re),
					 number_json(&im)));
	case FX_EXT_TUPLE:
		enter_ext(x, o);
		ret = tfs_mp_next(&x->m, f, &v);
		if (!ret && v.type != TFS_MP_ARRAY)
			ret = tfs_mp_fail(&x->m, -EBADMSG, v.start, f,
					  "a tuple ext holds an array");
		if (!ret)
			ret = read_items(x, v.n, depth + 1);
		if (!ret && tfs_cursor_offset(&x->m.c) != o->at + o->n)
			ret = tfs_mp_fail(&x->m, -EBADMSG, o->start, f,
					  "a tuple ext holds one array");
		return ret;
	default:
		return tfs_mp_fail(&x->m, -ENOTSUP, o->start, f,
				   "ext type %d is not a Flax value (1 "
				   "ndarray, 2 complex, 3 numpy scalar, 4 "
				   "tuple)",
				   o->ext);
	}
}

/* a map key: a UTF-8 str */
static int read_key(struct fx *x, struct tfs_span *k)
{
	char nb[TFS_PRINTABLE_MAX];
	const char *f = field(x, nb, sizeof(nb));
	struct tfs_mp_obj o;
	int ret = tfs_mp_next(&x->m, f, &o);

	if (ret)
		return ret;
	if (o.type != TFS_MP_STR)
		return tfs_mp_fail(&x->m, -EBADMSG, o.start, f,
				   "a map key is not a str (type byte 0x%02x)",
				   o.byte);
	if (!tfs_utf8_valid(o.p, (size_t)o.n))
		return tfs_mp_fail(&x->m, -EBADMSG, o.start, f,
				   "a map key is not UTF-8");
	k->p = o.p;
	k->len = o.n;
	k->at = o.start;
	return 0;
}

static bool key_is(const struct tfs_span *k, const char *s)
{
	return k->len == strlen(s) && !memcmp(k->p, s, k->len);
}

/* a map of @n entries keyed "0".."n-1" in order; @what for messages */
/* a chunked array's entry @i of @what: the key "<i>", its value into @o */
static int index_item(struct fx *x, const char *f, uint64_t i, const char *what,
		      struct tfs_mp_obj *o)
{
	char num[24];
	struct tfs_span k;
	int ret = read_key(x, &k);

	if (ret)
		return ret;
	snprintf(num, sizeof(num), "%" PRIu64, i);
	if (!key_is(&k, num))
		return tfs_mp_fail(&x->m, -EBADMSG, k.at, f,
				   "chunked array %s: key %" PRIu64
				   " is not \"%s\"",
				   what, i, num);
	return tfs_mp_next(&x->m, f, o);
}

/* a chunked array's @nth key, which must be @name: its value into @o */
static int named_item(struct fx *x, const char *f, const char *nth,
		      const char *name, struct tfs_mp_obj *o)
{
	struct tfs_span k;
	int ret = read_key(x, &k);

	if (!ret && !key_is(&k, name))
		ret = tfs_mp_fail(&x->m, -EBADMSG, k.at, f,
				  "chunked array: the %s key is not \"%s\"",
				  nth, name);
	return ret ? ret : tfs_mp_next(&x->m, f, o);
}

/*
 * chunk @i (the ndarray @a) as the next piece of the file, grown as the
 * chunks are read (their count is only bounded by the bytes left), and
 * as {"offset", "nbytes"} in @chunks (manifest.json)
 */
static int push_segment(struct fx *x, struct tfs_segment **segs, size_t *cap,
			uint64_t i, const struct fx_array *a, json_t *chunks)
{
	struct tfs_segment *p;
	size_t n;

	if (i >= TFS_MAX_SEGMENTS)
		return tfs_diag_at(x->d, -E2BIG, a->at,
				   "chunked array: more than %u chunks",
				   TFS_MAX_SEGMENTS);
	if (i == *cap) {
		n = *cap ? 2 * *cap : 8;
		p = reallocarray(*segs, n, sizeof(*p));
		if (!p)
			return tfs_diag_oom(x->d);
		*segs = p;
		*cap = n;
	}
	(*segs)[i] =
		(struct tfs_segment){.offset = a->data, .length = a->nbytes};
	if (json_array_append_new(chunks,
				  json_pack("{s:I,s:I}", "offset",
					    (json_int_t)a->data, "nbytes",
					    (json_int_t)a->nbytes)))
		return tfs_diag_oom(x->d);
	return 0;
}

/*
 * {"__msgpack_chunked_array__": true, "shape": {"0": d0, ...},
 *  "chunks": {"0": ndarray, ...}}, its first key read
 */
static int read_chunked(struct fx *x, const struct tfs_mp_obj *map)
{
	char nb[TFS_PRINTABLE_MAX];
	const char *f = field(x, nb, sizeof(nb));
	uint64_t shape[FX_MAX_DIMS], count, bytes, sum = 0, i;
	struct tfs_tensor_spec s;
	struct tfs_segment *segs = NULL;
	struct tfs_mp_obj o, sm, cm;
	struct fx_array a, first;
	json_t *chunks, *extra;
	size_t cap = 0;
	uint32_t h;
	int ret;

	memset(&first, 0, sizeof(first));
	ret = tfs_mp_next(&x->m, f, &o);
	if (ret)
		return ret;
	if (o.type != TFS_MP_BOOL || !o.b || map->n != 3)
		return tfs_mp_fail(&x->m, -EBADMSG, map->start, f,
				   "a chunked array is a map of 3: " FX_CHUNKED
				   " true, shape, chunks");
	ret = named_item(x, f, "second", "shape", &sm);
	if (ret)
		return ret;
	if (sm.type != TFS_MP_MAP || sm.n > FX_MAX_DIMS)
		return tfs_mp_fail(&x->m, -EBADMSG, sm.start, f,
				   "chunked array shape: not a map of at most "
				   "%d dimensions",
				   FX_MAX_DIMS);
	for (i = 0; i < sm.n; i++) {
		ret = index_item(x, f, i, "shape", &o);
		if (!ret)
			ret = shape_dim(x, f, "chunked array", i, &o);
		if (ret)
			return ret;
		shape[i] = o.u;
	}
	ret = named_item(x, f, "third", "chunks", &cm);
	if (ret)
		return ret;
	if (cm.type != TFS_MP_MAP || cm.n == 0)
		return tfs_mp_fail(&x->m, -EBADMSG, cm.start, f,
				   "chunked array chunks: not a map of "
				   "chunks");
	chunks = json_array();
	if (!chunks)
		return tfs_diag_oom(x->d);
	for (i = 0; !ret && i < cm.n; i++) {
		ret = index_item(x, f, i, "chunks", &o);
		if (!ret && (o.type != TFS_MP_EXT || o.ext != FX_EXT_NDARRAY))
			ret = tfs_mp_fail(&x->m, -EBADMSG, o.start, f,
					  "chunked array chunk %" PRIu64
					  ": not an ndarray ext",
					  i);
		if (ret)
			break;
		enter_ext(x, &o);
		ret = read_ndarray(x, &o, &a);
		if (ret)
			break;
		if (i == 0)
			first = a;
		if (a.ndim != 1 || a.dtype != first.dtype)
			ret = tfs_mp_fail(&x->m, -EBADMSG, o.start, f,
					  "chunked array chunk %" PRIu64
					  ": not 1-D %s",
					  i, first.dtype_name);
		else if (!tfs_add_u64(sum, a.nbytes, &sum))
			ret = tfs_mp_fail(&x->m, -EBADMSG, o.start, f,
					  "chunked array: the chunks' bytes "
					  "overflow");
		else
			ret = push_segment(x, &segs, &cap, i, &a, chunks);
	}
	if (!ret && (!tfs_shape_product(shape, sm.n, &count) ||
		     tfs_dtype_bytes(first.dtype, count, &bytes)))
		ret = tfs_mp_fail(&x->m, -EBADMSG, map->start, f,
				  "chunked array: the byte size of the shape "
				  "overflows");
	else if (!ret && bytes != sum)
		ret = tfs_mp_fail(&x->m, -EBADMSG, map->start, f,
				  "chunked array: the chunks hold %" PRIu64
				  " bytes, the shape and %s need %" PRIu64,
				  sum, first.dtype_name, bytes);
	if (ret)
		goto out;
	/* one file: the chunks' bytes in order, each a piece of the file */
	tfs_spec_tensor(&s, x->name.p, x->name.len, first.dtype, shape, sm.n,
			map->start);
	tfs_spec_segments(&s, segs, (size_t)cm.n);
	tfs_spec_size(&s, sum);
	x->tensors++;
	x->chunked++;
	ret = tfs_builder_add_tensor(x->b, &s, &h, x->d);
	if (ret)
		goto out;
	extra = tfs_builder_manifest_extra(x->b, h);
	if (!extra || json_object_set(extra, "chunks", chunks))
		ret = tfs_diag_oom(x->d);
out:
	json_decref(chunks);
	free(segs);
	return ret;
}

static int read_map(struct fx *x, const struct tfs_mp_obj *o, unsigned depth)
{
	const struct tfs_span *dup, *first;
	char nb[TFS_PRINTABLE_MAX];
	size_t len = x->name.len;
	struct tfs_span *keys;
	uint64_t i;
	int ret = 0;

	if (!o->n)
		return x->name.len ? leaf(x, json_object()) : 0;
	keys = calloc((size_t)o->n, sizeof(*keys));
	if (!keys)
		return tfs_diag_oom(x->d);
	for (i = 0; !ret && i < o->n; i++) {
		ret = read_key(x, &keys[i]);
		if (ret)
			break;
		if (key_is(&keys[i], FX_CHUNKED)) {
			if (i == 0) {
				ret = read_chunked(x, o);
				goto out;
			}
			ret = tfs_mp_fail(&x->m, -EBADMSG, keys[i].at,
					  field(x, nb, sizeof(nb)),
					  FX_CHUNKED " is not the first key");
			break;
		}
		ret = name_push(x, keys[i].p, keys[i].len);
		if (!ret)
			ret = read_value(x, depth + 1);
		tfs_strbuf_cut(&x->name, len);
	}
	if (ret)
		goto out;
	dup = tfs_span_twice(keys, (size_t)o->n, &first);
	if (dup) {
		tfs_name_printable(nb, sizeof(nb), (const char *)dup->p,
				   (size_t)dup->len);
		ret = tfs_mp_fail(&x->m, -EBADMSG, dup->at, nb,
				  "the key is given twice in its map (first "
				  "at %" PRIu64 ")",
				  first->at);
	}
out:
	free(keys);
	return ret;
}

static int read_value(struct fx *x, unsigned depth)
{
	char nb[TFS_PRINTABLE_MAX];
	const char *f = field(x, nb, sizeof(nb));
	struct tfs_mp_obj o;
	int ret;

	ret = tfs_mp_next(&x->m, f, &o);
	if (ret)
		return ret;
	if ((o.type == TFS_MP_MAP || o.type == TFS_MP_ARRAY ||
	     (o.type == TFS_MP_EXT && o.ext == FX_EXT_TUPLE)) &&
	    depth >= FX_MAX_DEPTH)
		return tfs_mp_fail(&x->m, -EBADMSG, o.start, f,
				   "nested deeper than %d levels",
				   FX_MAX_DEPTH);
	switch (o.type) {
	case TFS_MP_MAP:
		return read_map(x, &o, depth);
	case TFS_MP_ARRAY:
		return read_items(x, o.n, depth + 1);
	case TFS_MP_EXT:
		return read_ext(x, &o, depth);
	case TFS_MP_NIL:
		return leaf(x, json_null());
	case TFS_MP_BOOL:
		return leaf(x, json_boolean(o.b));
	case TFS_MP_STR:
		if (!tfs_utf8_valid(o.p, (size_t)o.n))
			return tfs_mp_fail(&x->m, -EBADMSG, o.start, f,
					   "a str that is not UTF-8");
		return leaf(x, json_stringn_nocheck((const char *)o.p,
						    (size_t)o.n));
	case TFS_MP_BIN:
		return leaf(x,
			    json_pack("{s:I,s:I}", "bin_bytes", (json_int_t)o.n,
				      "offset", (json_int_t)o.at));
	default:
		return leaf(x, number_json(&o));
	}
}

static int fx_load(const struct tfs_source *src, struct tfs_builder *b,
		   struct tfs_diag *d)
{
	struct fx x = {.src = src, .b = b, .d = d};
	json_t *meta = tfs_builder_metadata(b);
	struct tfs_mp_obj o;
	int ret;

	tfs_mp_init(&x.m, src->data, src->size, 0, d);
	x.leaves = json_object();
	if (!x.leaves)
		return tfs_diag_oom(d);
	ret = tfs_mp_next(&x.m, "root", &o);
	if (!ret && o.type != TFS_MP_MAP)
		ret = tfs_diag_at(d, -EBADMSG, 0,
				  "root: not a map (type byte 0x%02x): a Flax "
				  "checkpoint is one map",
				  o.byte);
	if (!ret)
		ret = read_map(&x, &o, 1);
	if (!ret && tfs_cursor_remaining(&x.m.c))
		ret = tfs_diag_at(d, -EBADMSG, tfs_cursor_offset(&x.m.c),
				  "root: %" PRIu64 " bytes after the map",
				  tfs_cursor_remaining(&x.m.c));
	if (!ret && !x.tensors)
		ret = tfs_diag_at(d, -EBADMSG, 0,
				  "root: no ndarray anywhere in the map");
	if (!ret) {
		tfs_builder_set_overlap_rule(b, TFS_OVERLAP_FORBID);
		if (json_object_set_new(meta, "leaves", x.leaves) ||
		    json_object_set_new(meta, "chunked_arrays",
					json_integer((json_int_t)x.chunked)))
			ret = tfs_diag_oom(d);
		x.leaves = NULL;
	}
	json_decref(x.leaves);
	free(x.name.p);
	return ret;
}

TFS_FORMAT(flax, "Flax / JAX msgpack (flax.serialization.to_bytes)",
	   .probe = fx_probe, .load = fx_load);
