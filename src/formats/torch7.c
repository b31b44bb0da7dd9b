// SPDX-License-Identifier: MIT
/*
 * Torch7 `.t7` (specs/torch7.md, docs/formats/torch7.md): the binary
 * object graph torch7's File.lua writeObject writes, read as readObject
 * reads it but never executing anything: a function's bytecode is stepped
 * over, never loaded.  Every tensor and storage is a file named by the
 * path of table keys from the root object (`modules/1/weight`); a torch
 * object (`nn.SpatialConvolution`) adds no component, its table's keys do.
 * A tensor over a contiguous run of its storage is served zero-copy; a
 * strided one is gathered into memory at load.  Tables and torch objects
 * carry a reference index: one seen again is not read again (a tensor
 * shared by two paths is a file at the first).  Text-mode files are
 * refused.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/builder.h"
#include "core/checked.h"
#include "core/cursor.h"
#include "core/diag.h"
#include "core/dtype.h"
#include "core/format.h"
#include "core/names.h"
#include "core/source.h"

#define T7_MAX_DEPTH 64
#define T7_MAX_DIMS 32
#define T7_PATH_MAX 1024
#define T7_GATHER_MAX (1ull << 30)
#define T7_MAX_OBJECTS (1u << 22)

enum {
	T7_NIL = 0,
	T7_NUMBER = 1,
	T7_STRING = 2,
	T7_TABLE = 3,
	T7_TORCH = 4,
	T7_BOOLEAN = 5,
	T7_FUNCTION = 6,
	T7_RECUR_FUNCTION = 7,
	T7_LEGACY_RECUR_FUNCTION = 8,
};

/* the storage classes, their element type (Cuda ones stored alike) */
static const struct {
	const char *name;
	enum tfs_dtype dtype;
} t7_storages[] = {
	{"Float", TFS_DTYPE_FLOAT32},	 {"Double", TFS_DTYPE_FLOAT64},
	{"Half", TFS_DTYPE_FLOAT16},	 {"Long", TFS_DTYPE_INT64},
	{"Int", TFS_DTYPE_INT32},	 {"Short", TFS_DTYPE_INT16},
	{"Char", TFS_DTYPE_INT8},	 {"Byte", TFS_DTYPE_UINT8},
	{"Cuda", TFS_DTYPE_FLOAT32},	 {"CudaDouble", TFS_DTYPE_FLOAT64},
	{"CudaHalf", TFS_DTYPE_FLOAT16}, {"CudaLong", TFS_DTYPE_INT64},
	{"CudaInt", TFS_DTYPE_INT32},	 {"CudaShort", TFS_DTYPE_INT16},
	{"CudaChar", TFS_DTYPE_INT8},	 {"CudaByte", TFS_DTYPE_UINT8},
};

/* a storage already read, by its reference index */
struct t7_storage {
	enum tfs_dtype dtype;
	uint64_t data_at, size; /* elements */
};

struct t7 {
	const struct tfs_source *src;
	struct tfs_builder *b;
	struct tfs_diag *d;
	struct tfs_cursor c;
	/* by reference index: 0 not seen, 1 seen, 2 + k: storages[k] */
	uint32_t *seen;
	size_t nseen;
	struct t7_storage *storages;
	size_t nstorages, cap;
	uint64_t objects, tensors, shared;
	uint32_t last_storage; /* the storage the last torch object was */
	bool in_tensor;	       /* reading a tensor's storage */
	char path[T7_PATH_MAX];
	size_t plen;
	json_t *classes;
};

static int t7_short(struct t7 *z, const char *what)
{
	return tfs_diag_at(z->d, -EBADMSG, tfs_cursor_offset(&z->c),
			   "%s: the file ends in it", what);
}

static int t7_int(struct t7 *z, int32_t *v, const char *what)
{
	return tfs_cursor_i32le(&z->c, v) ? t7_short(z, what) : 0;
}

static int t7_long(struct t7 *z, int64_t *v, const char *what)
{
	return tfs_cursor_i64le(&z->c, v) ? t7_short(z, what) : 0;
}

/* a string: i32 length, bytes */
static int t7_string(struct t7 *z, const uint8_t **p, uint64_t *len)
{
	uint64_t at = tfs_cursor_offset(&z->c);
	int32_t n;
	int ret = t7_int(z, &n, "string length");

	if (ret)
		return ret;
	if (n < 0 || (uint64_t)n > tfs_cursor_remaining(&z->c))
		return tfs_diag_at(z->d, -EBADMSG, at,
				   "string: length %d, %" PRIu64 " bytes left",
				   n, tfs_cursor_remaining(&z->c));
	*p = z->c.p + z->c.pos;
	*len = (uint64_t)n;
	return tfs_cursor_skip(&z->c, *len);
}

/* the path with one more component; *@old to put back */
static int t7_push(struct t7 *z, const char *comp, size_t n, size_t *old)
{
	*old = z->plen;
	if (z->plen + n + 2 > sizeof(z->path))
		return tfs_diag_at(z->d, -E2BIG, tfs_cursor_offset(&z->c),
				   "a path of table keys longer than %d bytes",
				   T7_PATH_MAX);
	if (z->plen)
		z->path[z->plen++] = '/';
	memcpy(z->path + z->plen, comp, n);
	z->plen += n;
	return 0;
}

/*
 * A reference index (File.lua counts them from 1): seen before (*@found,
 * *@had its storage slot: storages[had - 1], or 0), else noted with @slot
 */
static int t7_index(struct t7 *z, int32_t index, uint32_t slot, bool *found,
		    uint32_t *had)
{
	uint32_t *v;
	size_t cap;

	if (index < 1 || (uint32_t)index > T7_MAX_OBJECTS)
		return tfs_diag_at(z->d, -EBADMSG, tfs_cursor_offset(&z->c) - 4,
				   "reference index %d is outside 1..%u", index,
				   T7_MAX_OBJECTS);
	if ((size_t)index < z->nseen && z->seen[index]) {
		*found = true;
		*had = z->seen[index] - 1;
		return 0;
	}
	*found = false;
	if ((size_t)index >= z->nseen) {
		cap = z->nseen ? z->nseen : 64;
		while (cap <= (size_t)index)
			cap *= 2;
		v = realloc(z->seen, cap * sizeof(*v));
		if (!v)
			return tfs_diag_oom(z->d);
		memset(v + z->nseen, 0, (cap - z->nseen) * sizeof(*v));
		z->seen = v;
		z->nseen = cap;
	}
	z->seen[index] = slot + 1;
	return 0;
}

static int t7_object(struct t7 *z, unsigned depth);

/* a tensor's payload: the view of its storage, served or gathered */
static int t7_tensor(struct t7 *z, unsigned depth, uint64_t at)
{
	int64_t ndim, size[T7_MAX_DIMS], stride[T7_MAX_DIMS], offset;
	uint64_t shape[T7_MAX_DIMS], count = 1, esize, last = 0, bytes, k;
	const struct t7_storage *st;
	struct tfs_tensor_spec spec;
	bool contiguous = true;
	size_t i;
	uint8_t *mem = NULL;
	int32_t n32;
	int ret;

	ret = t7_int(z, &n32, "tensor ndim");
	if (ret)
		return ret;
	ndim = n32;
	if (ndim < 0 || ndim > T7_MAX_DIMS)
		return tfs_diag_at(z->d, -EBADMSG, at,
				   "tensor '%s': ndim %" PRId64 " is outside "
				   "0..%d",
				   TFS_SHOWN(z->path, z->plen), ndim,
				   T7_MAX_DIMS);
	for (i = 0; !ret && i < (size_t)ndim; i++)
		ret = t7_long(z, &size[i], "tensor sizes");
	for (i = 0; !ret && i < (size_t)ndim; i++)
		ret = t7_long(z, &stride[i], "tensor strides");
	ret = ret ? ret : t7_long(z, &offset, "tensor storage offset");
	if (ret)
		return ret;
	/* the storage: a torch object (read now, or seen before) or nil */
	{
		uint64_t sat = tfs_cursor_offset(&z->c);
		int32_t tag;

		ret = t7_int(z, &tag, "tensor storage");
		if (ret)
			return ret;
		st = NULL;
		if (tag == T7_TORCH) {
			z->c.pos -= 4;
			z->last_storage = 0;
			z->in_tensor = true;
			ret = t7_object(z, depth + 1);
			z->in_tensor = false;
			if (ret)
				return ret;
			if (!z->last_storage)
				return tfs_diag_at(
					z->d, -EBADMSG, sat,
					"tensor '%s': its storage is "
					"not a storage",
					TFS_SHOWN(z->path, z->plen));
			st = &z->storages[z->last_storage - 1];
		} else if (tag != T7_NIL) {
			return tfs_diag_at(z->d, -EBADMSG, sat,
					   "tensor '%s': its storage is an "
					   "object of type %d",
					   TFS_SHOWN(z->path, z->plen), tag);
		}
	}
	if (!ndim) {
		if (tfs_builder_warn(z->b, at,
				     "tensor '%s': empty (ndim 0), no file",
				     TFS_SHOWN(z->path, z->plen)))
			return tfs_diag_oom(z->d);
		return 0;
	}
	for (i = 0; i < (size_t)ndim; i++) {
		if (size[i] < 0 || stride[i] < 0)
			return tfs_diag_at(z->d, -EBADMSG, at,
					   "tensor '%s': size %" PRId64
					   " or stride %" PRId64 " of dim %zu "
					   "is negative",
					   TFS_SHOWN(z->path, z->plen), size[i],
					   stride[i], i);
		shape[i] = (uint64_t)size[i];
		if (!tfs_mul_u64(count, shape[i], &count))
			return tfs_diag_at(z->d, -EBADMSG, at,
					   "tensor '%s': its element count "
					   "overflows",
					   TFS_SHOWN(z->path, z->plen));
	}
	if (!st && count)
		return tfs_diag_at(z->d, -EBADMSG, at,
				   "tensor '%s': %" PRIu64 " elements and no "
				   "storage",
				   TFS_SHOWN(z->path, z->plen), count);
	if (!st) /* empty, no storage */
		return 0;
	/* the last element's index, and whether the run is row-major */
	k = 1;
	for (i = (size_t)ndim; i-- > 0;) {
		if (shape[i] > 1 && (uint64_t)stride[i] != k)
			contiguous = false;
		if (shape[i] && !tfs_mul_u64(k, shape[i], &k))
			contiguous = false;
		if (shape[i] &&
		    (!tfs_mul_u64(shape[i] - 1, (uint64_t)stride[i], &bytes) ||
		     !tfs_add_u64(last, bytes, &last)))
			return tfs_diag_at(z->d, -EBADMSG, at,
					   "tensor '%s': its strides overflow",
					   TFS_SHOWN(z->path, z->plen));
	}
	if (offset < 1 ||
	    (count && ((uint64_t)offset - 1 >= st->size ||
		       last >= st->size - ((uint64_t)offset - 1))))
		return tfs_diag_at(z->d, -EBADMSG, at,
				   "tensor '%s': offset %" PRId64 ", sizes and "
				   "strides reach past its storage of %" PRIu64
				   " elements",
				   TFS_SHOWN(z->path, z->plen), offset,
				   st->size);
	esize = tfs_dtype_size(st->dtype);
	bytes = count * esize; /* inside the storage: no overflow */
	tfs_spec_tensor(&spec, z->path, z->plen, st->dtype, shape, (size_t)ndim,
			at);
	if (contiguous || !count) {
		tfs_spec_raw(&spec,
			     st->data_at + ((uint64_t)offset - 1) * esize,
			     bytes);
	} else {
		/* a strided view: its elements gathered in row-major order */
		uint64_t idx[T7_MAX_DIMS] = {0}, e, src;

		if (bytes > T7_GATHER_MAX)
			return tfs_diag_at(z->d, -E2BIG, at,
					   "tensor '%s': a strided view of "
					   "%" PRIu64 " bytes (at most %llu "
					   "are gathered)",
					   TFS_SHOWN(z->path, z->plen), bytes,
					   T7_GATHER_MAX);
		mem = malloc(bytes);
		if (!mem)
			return tfs_diag_oom(z->d);
		for (e = 0; e < count; e++) {
			src = (uint64_t)offset - 1;
			for (i = 0; i < (size_t)ndim; i++)
				src += idx[i] * (uint64_t)stride[i];
			memcpy(mem + e * esize,
			       z->src->data + st->data_at + src * esize, esize);
			for (i = (size_t)ndim; i-- > 0;) {
				if (++idx[i] < shape[i])
					break;
				idx[i] = 0;
			}
		}
		tfs_spec_mem(&spec, mem, bytes);
	}
	ret = tfs_builder_add_tensor(z->b, &spec, NULL, z->d);
	free(mem);
	z->tensors++;
	return ret;
}

/* a storage's payload: i64 size, the elements */
static int t7_storage(struct t7 *z, enum tfs_dtype dt, uint64_t at,
		      uint32_t *slot)
{
	struct t7_storage *v;
	int64_t size;
	uint64_t bytes;
	int ret = t7_long(z, &size, "storage size");

	if (ret)
		return ret;
	if (size < 0 ||
	    !tfs_mul_u64((uint64_t)size, tfs_dtype_size(dt), &bytes) ||
	    bytes > tfs_cursor_remaining(&z->c))
		return tfs_diag_at(z->d, -EBADMSG, at,
				   "storage '%s': %" PRId64
				   " elements, %" PRIu64
				   " bytes left in the file",
				   TFS_SHOWN(z->path, z->plen), size,
				   tfs_cursor_remaining(&z->c));
	if (z->nstorages == z->cap) {
		size_t cap = z->cap ? z->cap * 2 : 16;

		v = realloc(z->storages, cap * sizeof(*v));
		if (!v)
			return tfs_diag_oom(z->d);
		z->storages = v;
		z->cap = cap;
	}
	z->storages[z->nstorages++] = (struct t7_storage){
		.dtype = dt,
		.data_at = tfs_cursor_offset(&z->c),
		.size = (uint64_t)size,
	};
	*slot = (uint32_t)z->nstorages;
	return tfs_cursor_skip(&z->c, bytes);
}

/* a storage at a path of its own: a 1-D file */
static int t7_storage_file(struct t7 *z, uint32_t slot, uint64_t at)
{
	const struct t7_storage *st = &z->storages[slot - 1];
	struct tfs_tensor_spec spec;

	tfs_spec_tensor(&spec, z->path, z->plen, st->dtype, &st->size, 1, at);
	tfs_spec_raw(&spec, st->data_at, st->size * tfs_dtype_size(st->dtype));
	z->tensors++;
	return tfs_builder_add_tensor(z->b, &spec, NULL, z->d);
}

/* a torch object: index, version and class, then its payload */
static int t7_torch(struct t7 *z, unsigned depth, uint64_t at)
{
	const uint8_t *cls, *ver;
	uint64_t clen, vlen;
	char name[64];
	int32_t index;
	uint32_t had, slot = 0;
	bool found;
	size_t i, n;
	int ret = t7_int(z, &index, "object index");

	if (ret)
		return ret;
	if (index < 1 || (uint32_t)index > T7_MAX_OBJECTS)
		return t7_index(z, index, 0, &found, &had);
	found = (size_t)index < z->nseen && z->seen[index];
	if (found) {
		had = z->seen[index] - 1;
		z->shared++;
		z->last_storage = had;
		return 0;
	}
	ret = t7_string(z, &ver, &vlen);
	if (ret)
		return ret;
	if (vlen >= 2 && !memcmp(ver, "V ", 2)) {
		ret = t7_string(z, &cls, &clen);
		if (ret)
			return ret;
	} else { /* version 0: the string was the class */
		cls = ver;
		clen = vlen;
	}
	n = clen < sizeof(name) - 1 ? (size_t)clen : sizeof(name) - 1;
	memcpy(name, cls, n);
	name[n] = '\0';
	for (i = 0; clen > 6 && !memcmp(cls, "torch.", 6) &&
		    i < sizeof(t7_storages) / sizeof(t7_storages[0]);
	     i++) {
		size_t len = (size_t)clen - 6, sl = strlen(t7_storages[i].name);

		if (len == sl + 7 &&
		    !memcmp(cls + 6, t7_storages[i].name, sl) &&
		    !memcmp(cls + 6 + sl, "Storage", 7)) {
			ret = t7_storage(z, t7_storages[i].dtype, at, &slot);
			ret = ret ? ret
				  : t7_index(z, index, slot, &found, &had);
			z->last_storage = slot;
			if (!ret && !z->in_tensor) /* a storage of its own */
				ret = t7_storage_file(z, slot, at);
			return ret;
		}
		if (len == sl + 6 &&
		    !memcmp(cls + 6, t7_storages[i].name, sl) &&
		    !memcmp(cls + 6 + sl, "Tensor", 6)) {
			ret = t7_index(z, index, 0, &found, &had);
			return ret ? ret : t7_tensor(z, depth, at);
		}
	}
	ret = t7_index(z, index, 0, &found, &had);
	if (ret)
		return ret;
	{
		json_t *c = json_object_get(z->classes, name);

		if (json_object_set_new(
			    z->classes, name,
			    json_integer(c ? json_integer_value(c) + 1 : 1)))
			return tfs_diag_oom(z->d);
	}
	/* any other class (nn.*): its payload is one object, a table */
	return t7_object(z, depth + 1);
}

/* a table: index, size, key/value pairs; each value under its key */
static int t7_table(struct t7 *z, unsigned depth)
{
	int32_t index, size, i, tag;
	uint32_t had;
	bool found;
	int ret = t7_int(z, &index, "table index");

	ret = ret ? ret : t7_index(z, index, 0, &found, &had);
	if (ret || found) {
		z->shared += !ret && found;
		return ret;
	}
	ret = t7_int(z, &size, "table size");
	if (ret)
		return ret;
	if (size < 0 || (uint64_t)size > tfs_cursor_remaining(&z->c) / 8)
		return tfs_diag_at(z->d, -EBADMSG, tfs_cursor_offset(&z->c) - 4,
				   "table: %d entries cannot fit in the file",
				   size);
	for (i = 0; i < size; i++) {
		char comp[64];
		const uint8_t *p;
		uint64_t len, at = tfs_cursor_offset(&z->c);
		size_t old = z->plen, n;
		double v;

		/* the key: a string, a number or a boolean names a component */
		ret = t7_int(z, &tag, "table key");
		if (ret)
			return ret;
		if (tag == T7_STRING) {
			ret = t7_string(z, &p, &len);
			n = (size_t)len;
		} else if (tag == T7_NUMBER) {
			uint64_t bits = 0;

			ret = tfs_cursor_u64le(&z->c, &bits)
				      ? t7_short(z, "number")
				      : 0;
			memcpy(&v, &bits, sizeof(v));
			n = (size_t)snprintf(comp, sizeof(comp),
					     v == floor(v) && fabs(v) < 1e15
						     ? "%.0f"
						     : "%.17g",
					     v);
			p = (const uint8_t *)comp;
		} else if (tag == T7_BOOLEAN) {
			int32_t bv;

			ret = t7_int(z, &bv, "boolean");
			n = (size_t)snprintf(comp, sizeof(comp), "%s",
					     bv ? "true" : "false");
			p = (const uint8_t *)comp;
		} else {
			return tfs_diag_at(z->d, -ENOTSUP, at,
					   "table '%s': a key of type %d (only "
					   "strings, numbers and booleans name "
					   "files)",
					   z->plen ? TFS_SHOWN(z->path, z->plen)
						   : "(root)",
					   tag);
		}
		ret = ret ? ret : t7_push(z, (const char *)p, n, &old);
		ret = ret ? ret : t7_object(z, depth + 1);
		z->plen = old;
		if (ret)
			return ret;
	}
	return 0;
}

/* a function: index, its bytecode stepped over (never loaded), upvalues */
static int t7_function(struct t7 *z, unsigned depth)
{
	const uint8_t *p;
	uint64_t len;
	int32_t index;
	uint32_t had;
	bool found;
	int ret = t7_int(z, &index, "function index");

	ret = ret ? ret : t7_index(z, index, 0, &found, &had);
	if (ret || found)
		return ret;
	ret = t7_string(z, &p, &len);
	return ret ? ret : t7_object(z, depth + 1);
}

static int t7_object(struct t7 *z, unsigned depth)
{
	uint64_t at = tfs_cursor_offset(&z->c);
	int32_t tag, b;
	const uint8_t *p;
	uint64_t len;
	int ret;

	if (depth > T7_MAX_DEPTH)
		return tfs_diag_at(z->d, -E2BIG, at,
				   "objects nested more than %d deep",
				   T7_MAX_DEPTH);
	ret = t7_int(z, &tag, "object type");
	if (ret)
		return ret;
	switch (tag) {
	case T7_NIL:
		return 0;
	case T7_NUMBER:
		return tfs_cursor_skip(&z->c, 8) ? t7_short(z, "number") : 0;
	case T7_STRING:
		return t7_string(z, &p, &len);
	case T7_BOOLEAN:
		return t7_int(z, &b, "boolean");
	case T7_TABLE:
		return t7_table(z, depth);
	case T7_TORCH:
		return t7_torch(z, depth, at);
	case T7_FUNCTION:
	case T7_RECUR_FUNCTION:
		return t7_function(z, depth);
	case T7_LEGACY_RECUR_FUNCTION:
		return tfs_diag_at(z->d, -ENOTSUP, at,
				   "a legacy recursive function (type 8) is "
				   "not supported");
	default:
		return tfs_diag_at(z->d, -EBADMSG, at,
				   "object type %d is not one of torch7's "
				   "(0..8)",
				   tag);
	}
}

/* binary mode: the root's i32 type, 1..7 (3 and 4 for a model), then,
 * for a torch object, its index and a "V 1" version or a class name */
static int t7_probe(const struct tfs_source *src)
{
	const uint8_t *p = src->data;
	uint32_t tag, n;

	if (src->size < 20)
		return tfs_source_name_ends(src, ".t7") ? 20 : 0;
	tag = (uint32_t)tfs_load_le(p, 4);
	n = (uint32_t)tfs_load_le(p + 8, 4);
	if (tag == T7_TORCH && n >= 3 && n <= 256 &&
	    12 + (uint64_t)n <= src->size &&
	    (!memcmp(p + 12, "V ", 2) || !memcmp(p + 12, "torch.", 6) ||
	     !memcmp(p + 12, "nn.", 3)))
		return 80;
	if (tag == T7_TABLE && tfs_source_name_ends(src, ".t7"))
		return 40;
	/* a .t7 otherwise (text mode, broken): claimed weakly, to say why */
	return tfs_source_name_ends(src, ".t7") ? 20 : 0;
}

static int t7_load(const struct tfs_source *src, struct tfs_builder *b,
		   struct tfs_diag *d)
{
	struct t7 z = {.src = src, .b = b, .d = d};
	json_t *meta = tfs_builder_metadata(b);
	int ret;

	z.classes = json_object();
	tfs_cursor_init(&z.c, src->data, src->size, 0);
	if (src->size && (src->data[0] == ' ' ||
			  (src->data[0] >= '0' && src->data[0] <= '9'))) {
		ret = tfs_diag_at(d, -ENOTSUP, 0,
				  "a text-mode (ASCII) file: only binary "
				  "mode is supported");
		goto out;
	}
	ret = z.classes ? t7_object(&z, 0) : tfs_diag_oom(d);
	if (!ret && tfs_cursor_remaining(&z.c))
		ret = tfs_diag_at(d, -EBADMSG, tfs_cursor_offset(&z.c),
				  "%" PRIu64 " bytes after the root object",
				  tfs_cursor_remaining(&z.c));
	if (!ret && (json_object_set(meta, "classes", z.classes) ||
		     json_object_set_new(meta, "tensors",
					 json_integer((json_int_t)z.tensors)) ||
		     json_object_set_new(meta, "shared_references",
					 json_integer((json_int_t)z.shared))))
		ret = tfs_diag_oom(d);
out:
	json_decref(z.classes);
	free(z.storages);
	free(z.seen);
	return ret;
}

TFS_FORMAT(torch7, "Torch7 .t7 (binary serialized objects)", .probe = t7_probe,
	   .load = t7_load);
