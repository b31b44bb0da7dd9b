// SPDX-License-Identifier: MIT
/*
 * Zarr v2 arrays (docs/formats/zarr.md, ../shared/specs/zarr.md section 1):
 * the container is an array's ".zarray" (JSON), its chunks are the files
 * beside it, one per chunk, named by the chunk's grid indices joined by
 * "." or "/".  Uncompressed arrays are served zero-copy as pieces of the
 * chunk files (edge chunks cropped, missing chunks as the fill value);
 * a compressed array is served when it is one chunk file (the chunked
 * codec crops it); several compressed chunk files need a chunk grid over
 * several files, which the core does not have yet: listed unreadable.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/builder.h"
#include "core/checked.h"
#include "core/diag.h"
#include "core/format.h"
#include "core/names.h"
#include "core/source.h"
#include "parse/json.h"

#define ZARR_MAX_DIMS 32
#define ZARR_FILL_MAX (64ull << 20) /* fill bytes held in memory */
#define ZARR_KEY_MAX 512

enum zarr_comp { ZC_NONE, ZC_ZLIB, ZC_GZIP, ZC_ZSTD, ZC_OTHER };

struct zarr {
	const struct tfs_source *src;
	struct tfs_builder *b;
	struct tfs_diag *d;
	struct tfs_json j;
	uint32_t ndim;
	uint64_t shape[ZARR_MAX_DIMS], chunks[ZARR_MAX_DIMS];
	uint64_t grid[ZARR_MAX_DIMS];
	bool has_shape, has_chunks, has_dtype, has_format, has_order;
	enum tfs_dtype dtype;
	uint32_t itemsize;
	bool big, fortran, scalar;
	bool fault; /* not served: the array breaks the format */
	char sep;
	enum zarr_comp comp;
	char comp_id[32];
	uint8_t fill[16];
	bool has_fill;
	uint64_t at_shape, at_chunks, at_dtype, at_comp;
	uint64_t nbytes, chunk_bytes, nchunks;
	uint32_t *file; /* per chunk: companion handle, UINT32_MAX: missing */
	uint64_t *flen;
	uint8_t *fillbuf; /* an all-fill array's bytes */
};

static const struct {
	const char *str;
	enum tfs_dtype dtype;
} zarr_types[] = {
	{"b1", TFS_DTYPE_BOOL},	     {"i1", TFS_DTYPE_INT8},
	{"u1", TFS_DTYPE_UINT8},     {"i2", TFS_DTYPE_INT16},
	{"u2", TFS_DTYPE_UINT16},    {"i4", TFS_DTYPE_INT32},
	{"u4", TFS_DTYPE_UINT32},    {"i8", TFS_DTYPE_INT64},
	{"u8", TFS_DTYPE_UINT64},    {"f2", TFS_DTYPE_FLOAT16},
	{"f4", TFS_DTYPE_FLOAT32},   {"f8", TFS_DTYPE_FLOAT64},
	{"c8", TFS_DTYPE_COMPLEX64}, {"c16", TFS_DTYPE_COMPLEX128},
};

/* @n bytes at @p hold @s */
static bool zarr_has(const uint8_t *p, size_t n, const char *s)
{
	return memmem(p, n, s, strlen(s)) != NULL;
}

/*
 * A JSON object naming "zarr_format" and "chunks" (consolidated metadata,
 * which names both too, is not an array); its name ".zarray" adds to it.
 */
static int zarr_probe(const struct tfs_source *src)
{
	size_t n = src->size < 4096 ? (size_t)src->size : 4096, i;

	for (i = 0; i < n && src->data[i] && strchr(" \t\r\n", src->data[i]);
	     i++)
		;
	if (i == n || src->data[i] != '{' ||
	    !zarr_has(src->data, n, "\"zarr_format\"") ||
	    !zarr_has(src->data, n, "\"chunks\"") ||
	    zarr_has(src->data, n, "\"zarr_consolidated_format\""))
		return 0;
	return tfs_source_name_ends(src, ".zarray") ? 90 : 60;
}

static void zarr_store_le(uint8_t *p, uint64_t v, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* IEEE half of @f, rounded to nearest even (fill values only) */
static uint16_t zarr_f16(float f)
{
	uint32_t u, m, e, sign;
	uint16_t h;

	memcpy(&u, &f, 4);
	sign = (u >> 16) & 0x8000;
	e = (u >> 23) & 0xff;
	m = u & 0x7fffff;
	if (e == 0xff)
		return (uint16_t)(sign | 0x7c00 | (m ? 0x200 : 0));
	if (e > 142) /* above 65504 after rounding: infinity */
		return (uint16_t)(sign | 0x7c00);
	if (e < 113) { /* a subnormal half, or zero */
		if (e < 102)
			return (uint16_t)sign;
		m |= 0x800000;
		h = (uint16_t)(m >> (126 - e));
		if ((m >> (125 - e)) & 1 &&
		    ((m & ((1u << (125 - e)) - 1)) || (h & 1)))
			h++;
		return (uint16_t)(sign | h);
	}
	h = (uint16_t)(sign | (e - 112) << 10 | m >> 13);
	if ((m & 0x1000) && ((m & 0xfff) || (h & 1)))
		h++; /* may carry into the exponent: still right */
	return h;
}

static int zarr_dtype(struct zarr *z, const struct tfs_json_token *v)
{
	char s[16];
	size_t i, n = tfs_json_decoded_len(v);

	z->at_dtype = v->offset;
	if (v->kind != TFS_JSON_STRING)
		return tfs_diag_at(z->d, -ENOTSUP, v->offset,
				   "dtype: structured dtypes are not "
				   "supported");
	if (n >= sizeof(s))
		goto bad;
	tfs_json_decode(v, s);
	if (strcmp(s, "bfloat16") == 0) { /* Megatron's, little-endian */
		z->dtype = TFS_DTYPE_BFLOAT16;
		z->itemsize = 2;
		return 0;
	}
	if (n < 3 || !strchr("<>|", s[0]))
		goto bad;
	for (i = 0; i < sizeof(zarr_types) / sizeof(zarr_types[0]); i++)
		if (strcmp(s + 1, zarr_types[i].str) == 0) {
			z->dtype = zarr_types[i].dtype;
			z->itemsize = tfs_dtype_size(z->dtype);
			z->big = s[0] == '>' && z->itemsize > 1;
			return 0;
		}
bad:
	return tfs_diag_at(z->d, -ENOTSUP, v->offset,
			   "dtype: '%s' is not a numeric dtype tensorfs "
			   "serves",
			   TFS_SHOWN(v->p, v->len));
}

static int zarr_compressor(struct zarr *z, const struct tfs_json_token *v)
{
	struct tfs_json_token k, w;
	int ret;

	z->at_comp = v->offset;
	if (v->kind == TFS_JSON_NULL) {
		z->comp = ZC_NONE;
		return 0;
	}
	ret = tfs_json_want(v, TFS_JSON_OBJECT, z->d, "compressor");
	if (ret)
		return ret;
	while ((ret = tfs_json_member(&z->j, v, &k, &w, z->d)) > 0) {
		if (!tfs_json_eq(&k, "id"))
			continue;
		ret = tfs_json_want(&w, TFS_JSON_STRING, z->d,
				    "compressor: id");
		if (ret)
			return ret;
		snprintf(z->comp_id, sizeof(z->comp_id), "%s",
			 TFS_SHOWN(w.p, w.len));
		z->comp = tfs_json_eq(&w, "zlib")   ? ZC_ZLIB
			  : tfs_json_eq(&w, "gzip") ? ZC_GZIP
			  : tfs_json_eq(&w, "zstd") ? ZC_ZSTD
						    : ZC_OTHER;
	}
	if (!ret && !z->comp_id[0])
		ret = tfs_diag_at(z->d, -EBADMSG, v->offset,
				  "compressor: no 'id'");
	return ret < 0 ? ret : 0;
}

/* one element of value @x (a JSON number or "NaN"/"Infinity") */
static int zarr_fill_float(struct zarr *z, double x)
{
	float f = (float)x;
	uint32_t u;
	uint16_t h;

	switch (z->dtype) {
	case TFS_DTYPE_FLOAT64:
		memcpy(z->fill, &x, 8);
		break;
	case TFS_DTYPE_FLOAT32:
		memcpy(z->fill, &f, 4);
		break;
	case TFS_DTYPE_BFLOAT16:
		memcpy(&u, &f, 4);
		h = (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
		if (isnan(f))
			h = 0x7fc0;
		memcpy(z->fill, &h, 2);
		break;
	case TFS_DTYPE_FLOAT16:
		zarr_store_le(z->fill, zarr_f16(f), 2);
		break;
	default:
		return -EINVAL;
	}
	return 0;
}

static int zarr_fill(struct zarr *z, const struct tfs_json_token *v)
{
	char s[64];
	double x;
	size_t n;
	uint8_t t;

	memset(z->fill, 0, sizeof(z->fill));
	if (v->kind == TFS_JSON_NULL)
		return 0;
	if (!z->has_dtype)
		return tfs_diag_at(z->d, -EBADMSG, v->offset,
				   "fill_value: before dtype");
	z->has_fill = true;
	n = v->len < sizeof(s) - 1 ? v->len : sizeof(s) - 1;
	memcpy(s, v->p ? v->p : "", n);
	s[n] = 0;
	if (v->kind == TFS_JSON_TRUE || v->kind == TFS_JSON_FALSE) {
		z->fill[0] = v->kind == TFS_JSON_TRUE;
		return 0;
	}
	if (v->kind == TFS_JSON_STRING) {
		x = strcmp(s, "NaN") == 0	  ? NAN
		    : strcmp(s, "Infinity") == 0  ? INFINITY
		    : strcmp(s, "-Infinity") == 0 ? -INFINITY
						  : 0;
		if ((x == 0 && strcmp(s, "0")) || zarr_fill_float(z, x))
			goto bad;
		goto order;
	}
	if (v->kind != TFS_JSON_NUMBER)
		goto bad;
	if (tfs_dtype_info(z->dtype)->kind == TFS_KIND_FLOAT) {
		if (zarr_fill_float(z, strtod(s, NULL)))
			goto bad;
		goto order;
	}
	if (z->dtype == TFS_DTYPE_COMPLEX64 || z->dtype == TFS_DTYPE_COMPLEX128)
		goto bad;
	if (z->dtype == TFS_DTYPE_UINT64)
		zarr_store_le(z->fill, strtoull(s, NULL, 10), 8);
	else
		zarr_store_le(z->fill, (uint64_t)strtoll(s, NULL, 10),
			      z->itemsize);
order:
	if (z->big)
		for (n = 0; n < z->itemsize / 2; n++) {
			t = z->fill[n];
			z->fill[n] = z->fill[z->itemsize - 1 - n];
			z->fill[z->itemsize - 1 - n] = t;
		}
	return 0;
bad:
	return tfs_diag_at(z->d, -EBADMSG, v->offset,
			   "fill_value: '%s' is not a %s value", s,
			   tfs_dtype_name(z->dtype));
}

static int zarr_member(struct zarr *z, const struct tfs_json_token *k,
		       const struct tfs_json_token *v)
{
	uint64_t f;
	uint32_t n;
	int ret;

	if (tfs_json_eq(k, "zarr_format")) {
		if (v->kind != TFS_JSON_NUMBER || tfs_json_u64(v, &f) || f != 2)
			return tfs_diag_at(z->d, -ENOTSUP, v->offset,
					   "zarr_format: not 2");
		z->has_format = true;
	} else if (tfs_json_eq(k, "shape") || tfs_json_eq(k, "chunks")) {
		bool shape = tfs_json_eq(k, "shape");

		ret = tfs_json_want(v, TFS_JSON_ARRAY, z->d,
				    shape ? "shape" : "chunks");
		ret = ret ? ret
			  : tfs_json_u64s(&z->j, v,
					  shape ? z->shape : z->chunks,
					  ZARR_MAX_DIMS, &n, z->d,
					  shape ? "shape" : "chunks");
		if (ret)
			return ret;
		if ((shape ? z->has_chunks : z->has_shape) && n != z->ndim)
			goto mismatch;
		z->ndim = n;
		*(shape ? &z->has_shape : &z->has_chunks) = true;
		*(shape ? &z->at_shape : &z->at_chunks) = v->offset;
	} else if (tfs_json_eq(k, "dtype")) {
		ret = zarr_dtype(z, v);
		if (ret)
			return ret;
		z->has_dtype = true;
	} else if (tfs_json_eq(k, "compressor")) {
		return zarr_compressor(z, v);
	} else if (tfs_json_eq(k, "fill_value")) {
		return zarr_fill(z, v);
	} else if (tfs_json_eq(k, "order")) {
		if (v->kind != TFS_JSON_STRING ||
		    !(tfs_json_eq(v, "C") || tfs_json_eq(v, "F")))
			return tfs_diag_at(z->d, -EBADMSG, v->offset,
					   "order: not \"C\" or \"F\"");
		z->fortran = tfs_json_eq(v, "F");
		z->has_order = true;
	} else if (tfs_json_eq(k, "filters")) {
		struct tfs_json_token e;

		/* null or [] */
		ret = v->kind == TFS_JSON_NULL ? 0
		      : v->kind == TFS_JSON_ARRAY
			      ? tfs_json_item(&z->j, v, &e, z->d)
			      : 1;
		if (ret < 0)
			return ret;
		if (ret)
			return tfs_diag_at(z->d, -ENOTSUP, v->offset,
					   "filters: not supported");
	} else if (tfs_json_eq(k, "dimension_separator")) {
		if (v->kind != TFS_JSON_STRING ||
		    !(tfs_json_eq(v, ".") || tfs_json_eq(v, "/")))
			return tfs_diag_at(z->d, -EBADMSG, v->offset,
					   "dimension_separator: not \".\" "
					   "or \"/\"");
		z->sep = tfs_json_eq(v, "/") ? '/' : '.';
	}
	return 0;
mismatch:
	return tfs_diag_at(z->d, -EBADMSG, v->offset,
			   "%.*s: %u dimensions, but shape and chunks must "
			   "have as many",
			   (int)k->len, k->p, n);
}

static int zarr_header(struct zarr *z)
{
	struct tfs_json_token root, k, v;
	uint64_t chunk = 1, i, g;
	int ret;

	z->sep = '.';
	tfs_json_init(&z->j, z->src->data, (size_t)z->src->size, 0, 16);
	ret = tfs_json_root(&z->j, &root, ".zarray", z->d);
	while (!ret && (ret = tfs_json_member(&z->j, &root, &k, &v, z->d)) > 0)
		ret = zarr_member(z, &k, &v);
	if (ret < 0)
		return ret;
	if (!z->has_format || !z->has_shape || !z->has_chunks || !z->has_dtype)
		return tfs_diag_at(z->d, -EBADMSG, 0, ".zarray: %s missing",
				   !z->has_format   ? "zarr_format"
				   : !z->has_shape  ? "shape"
				   : !z->has_chunks ? "chunks"
						    : "dtype");
	if (!z->ndim) { /* 0-d: one chunk of one element, key "0" */
		z->scalar = true;
		z->ndim = 1;
		z->shape[0] = z->chunks[0] = 1;
	}
	z->nbytes = z->itemsize;
	z->nchunks = 1;
	chunk = z->itemsize;
	for (i = 0; i < z->ndim; i++) {
		if (!z->chunks[i])
			return tfs_diag_at(z->d, -EBADMSG, z->at_chunks,
					   "chunks: dimension %llu is 0",
					   (unsigned long long)i);
		g = z->shape[i] / z->chunks[i] + !!(z->shape[i] % z->chunks[i]);
		z->grid[i] = g;
		if (!tfs_mul_u64(z->nbytes, z->shape[i], &z->nbytes) ||
		    !tfs_mul_u64(chunk, z->chunks[i], &chunk) ||
		    !tfs_mul_u64(z->nchunks, g, &z->nchunks))
			return tfs_diag_at(z->d, -EBADMSG, z->at_shape,
					   "shape: its byte count overflows");
	}
	z->chunk_bytes = chunk;
	return 0;
}

/* the file name of chunk @k (row-major grid index) */
static void zarr_key(const struct zarr *z, uint64_t k, char *out, size_t cap)
{
	uint64_t idx[ZARR_MAX_DIMS];
	size_t n = 0;
	uint32_t i;

	for (i = z->ndim; i-- > 0;) {
		idx[i] = k % z->grid[i];
		k /= z->grid[i];
	}
	for (i = 0; i < z->ndim && n < cap; i++)
		n += (size_t)snprintf(out + n, cap - n, "%s%llu",
				      i ? (z->sep == '/' ? "/" : ".") : "",
				      (unsigned long long)idx[i]);
}

/*
 * Open every chunk file: z->file[k] its handle or UINT32_MAX (missing).
 * 1 with *@why set when the array cannot be served (too many files).
 */
static int zarr_open_chunks(struct zarr *z, const char **why)
{
	char key[ZARR_KEY_MAX];
	uint64_t k;
	int ret;

	if (!z->src->path) {
		*why = "its chunk files are beside its .zarray, which was "
		       "read without a directory";
		return 1;
	}
	if (z->nchunks > TFS_MAX_COMPANIONS - 1) {
		*why = "more chunk files than tensorfs opens for one array "
		       "(1023)";
		return 1;
	}
	z->file = calloc(z->nchunks, sizeof(*z->file));
	z->flen = calloc(z->nchunks, sizeof(*z->flen));
	if (!z->file || !z->flen)
		return tfs_diag_oom(z->d);
	for (k = 0; k < z->nchunks; k++) {
		zarr_key(z, k, key, sizeof(key));
		ret = tfs_builder_open_companion_at(
			z->b, key, 0, TFS_MISSING_UNREADABLE, &z->file[k], z->d,
			"chunk '%s'", key);
		if (ret == -ENOENT) {
			tfs_diag_clear(z->d);
			z->file[k] = UINT32_MAX;
			continue;
		}
		if (ret)
			return ret;
		z->flen[k] = tfs_builder_source(z->b, z->file[k])->size;
	}
	return 0;
}

struct zarr_pieces {
	struct tfs_segment *v;
	size_t n, cap;
	uint64_t fill_bytes;
};

/* one more run of the output: @len bytes at @off of @file, or the fill */
static int zarr_piece(struct zarr *z, struct zarr_pieces *p, uint32_t file,
		      uint64_t off, uint64_t len)
{
	struct tfs_segment *s = p->n ? &p->v[p->n - 1] : NULL;
	uint8_t *m;
	uint64_t i;

	if (s && file != UINT32_MAX && !s->mem && s->source == file &&
	    s->offset + s->length == off) {
		s->length += len;
		return 0;
	}
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 64;

		if (p->n >= TFS_MAX_SEGMENTS)
			return 1;
		s = realloc(p->v, cap * sizeof(*s));
		if (!s)
			return tfs_diag_oom(z->d);
		p->v = s;
		p->cap = cap;
	}
	s = &p->v[p->n++];
	memset(s, 0, sizeof(*s));
	s->offset = off;
	s->length = len;
	s->source = file;
	if (file != UINT32_MAX)
		return 0;
	p->fill_bytes += len;
	if (p->fill_bytes > ZARR_FILL_MAX)
		return 1;
	m = malloc(len ? (size_t)len : 1);
	if (!m)
		return tfs_diag_oom(z->d);
	for (i = 0; i < len; i += z->itemsize)
		memcpy(m + i, z->fill, z->itemsize);
	s->mem = m;
	s->source = 0;
	return 0;
}

static void zarr_pieces_free(struct zarr_pieces *p)
{
	size_t i;

	for (i = 0; i < p->n; i++)
		free((void *)p->v[i].mem);
	free(p->v);
}

/*
 * An uncompressed array as pieces of its chunk files, in row-major order
 * of the array (Fortran order: in column-major order, the dimensions
 * reversed).  0, 1 with *@why (not served), or -errno.
 */
static int zarr_raw_pieces(struct zarr *z, struct zarr_pieces *p,
			   const char **why)
{
	uint64_t shape[ZARR_MAX_DIMS], chunk[ZARR_MAX_DIMS];
	uint64_t idx[ZARR_MAX_DIMS] = {0};
	uint64_t rows = 1, r, cg, k, off, run, stride, last;
	uint32_t nd = z->ndim, i, d;
	int ret;

	for (i = 0; i < nd; i++) {
		d = z->fortran ? nd - 1 - i : i;
		shape[i] = z->shape[d];
		chunk[i] = z->chunks[d];
	}
	for (i = 0; i + 1 < nd; i++)
		rows *= shape[i];
	for (k = 0; k < z->nchunks; k++)
		if (z->file[k] != UINT32_MAX && z->flen[k] != z->chunk_bytes) {
			*why = "a chunk file's size is not the chunk's "
			       "bytes";
			z->fault = true;
			return 1;
		} else if (z->file[k] == UINT32_MAX && !z->has_fill) {
			*why = "a chunk file is missing and fill_value is "
			       "null";
			z->fault = true;
			return 1;
		}
	last = nd - 1;
	for (r = 0; r < rows; r++) {
		/* idx: the row's indices along dims 0..nd-2 */
		for (cg = 0; cg < z->grid[z->fortran ? 0 : last]; cg++) {
			uint64_t g = 0, in = 0, cidx;

			stride = 1;
			/* the chunk's grid index, dimensions as stored */
			for (d = 0; d < nd; d++) {
				i = z->fortran ? nd - 1 - d : d;
				cidx = i == last ? cg : idx[i] / chunk[i];
				g = g * z->grid[d] + cidx;
			}
			/* the run's first element inside the chunk */
			for (i = nd; i-- > 0;) {
				uint64_t j = i == last ? 0 : idx[i] % chunk[i];

				in += j * stride;
				stride *= chunk[i];
			}
			run = shape[last] - cg * chunk[last];
			if (run > chunk[last])
				run = chunk[last];
			off = in * z->itemsize;
			ret = zarr_piece(z, p, z->file[g], off,
					 run * z->itemsize);
			if (ret) {
				if (ret == 1)
					*why = "too many pieces or too much "
					       "fill to hold";
				return ret;
			}
		}
		for (i = last; i-- > 0;) {
			if (++idx[i] < shape[i])
				break;
			idx[i] = 0;
		}
	}
	return 0;
}

static void zarr_free(struct zarr *z)
{
	free(z->file);
	free(z->flen);
	free(z->fillbuf);
}

/* the tensor's name: the array directory's name ("tensor" without one) */
static void zarr_name(const struct zarr *z, const char **name, size_t *len)
{
	const char *p = z->src->path, *end, *s;

	*name = "tensor";
	*len = 6;
	if (!p)
		return;
	end = strrchr(p, '/');
	if (!end || end == p)
		return;
	for (s = end; s > p && s[-1] != '/'; s--)
		;
	if (end - s == 1 && *s == '.')
		return;
	*name = s;
	*len = (size_t)(end - s);
}

static int zarr_describe(struct zarr *z, uint32_t h)
{
	int ret = 0;

	if (z->big)
		ret = tfs_builder_set_xattr_str(z->b, h, "byte_order", "big");
	if (!ret && z->fortran)
		ret = tfs_builder_set_xattr_str(z->b, h, "order", "F");
	if (!ret)
		ret = tfs_builder_set_xattr_str(
			z->b, h, "zarr.compressor",
			z->comp == ZC_NONE ? "none" : z->comp_id);
	return ret ? tfs_diag_oom(z->d) : 0;
}

/* .zattrs beside the array: to metadata.json as "attributes" */
static int zarr_attrs(struct zarr *z)
{
	struct tfs_json_token root;
	const struct tfs_source *s;
	struct tfs_json j;
	json_t *v = NULL;
	uint32_t h;
	int ret;

	ret = tfs_builder_open_companion_at(z->b, ".zattrs", 0,
					    TFS_MISSING_UNREADABLE, &h, z->d,
					    ".zattrs");
	if (ret == -ENOENT) {
		tfs_diag_clear(z->d);
		return 0;
	}
	if (ret)
		return ret;
	s = tfs_builder_source(z->b, h);
	tfs_json_init(&j, s->data, (size_t)s->size, 0, 64);
	ret = tfs_json_root(&j, &root, ".zattrs", z->d);
	ret = ret ? ret : tfs_json_to_jansson(&j, &root, 100000, &v, z->d);
	if (ret) {
		snprintf(z->d->file, sizeof(z->d->file), ".zattrs");
		return ret;
	}
	if (json_object_set_new(tfs_builder_metadata(z->b), "attributes", v))
		return tfs_diag_oom(z->d);
	return 0;
}

/* an array of one missing chunk: its fill value, held in memory */
static int zarr_all_fill(struct zarr *z, struct tfs_tensor_spec *s,
			 const char **why)
{
	uint8_t *m;
	uint64_t i;

	if (z->nbytes > ZARR_FILL_MAX) {
		*why = "too much fill to hold";
		return 1;
	}
	m = malloc(z->nbytes ? (size_t)z->nbytes : 1);
	if (!m)
		return tfs_diag_oom(z->d);
	for (i = 0; i < z->nbytes; i += z->itemsize)
		memcpy(m + i, z->fill, z->itemsize);
	z->fillbuf = m; /* until the spec is added */
	tfs_spec_mem(s, m, z->nbytes);
	return 0;
}

/* a compressed array of one chunk file: the chunked codec crops it */
static int zarr_one_chunk(struct zarr *z, struct tfs_tensor_spec *s,
			  struct tfs_chunk_params *c, struct tfs_chunk *ch,
			  const char **why)
{
	uint32_t i;

	if (z->nchunks != 1 || z->fortran) {
		*why = "compressed arrays of several chunk files (or in "
		       "Fortran order) are not served yet";
		return 1;
	}
	if (z->file[0] == UINT32_MAX && !z->has_fill) {
		*why = "its one chunk file is missing and fill_value is null";
		z->fault = true;
		return 1;
	}
	if (z->file[0] == UINT32_MAX) /* all fill */
		return zarr_all_fill(z, s, why);
	if (z->comp == ZC_ZSTD) {
		for (i = 0; i < z->ndim; i++)
			if (z->chunks[i] != z->shape[i]) {
				*why = "a zstd chunk larger than the array is "
				       "not served yet";
				return 1;
			}
		tfs_spec_in(s, z->file[0]);
		tfs_spec_stored(s, 0, z->flen[0]);
		tfs_spec_size(s, z->nbytes);
		tfs_spec_encoded(s, TFS_ENCODING_ZSTD, NULL);
		return 0;
	}
	if (z->comp != ZC_ZLIB) {
		*why = "its compressor is not served yet";
		return 1;
	}
	memset(c, 0, sizeof(*c));
	c->itemsize = z->itemsize;
	c->ndim = z->ndim;
	memcpy(c->shape, z->shape, z->ndim * sizeof(*z->shape));
	memcpy(c->chunk, z->chunks, z->ndim * sizeof(*z->chunks));
	c->nfilters = 1;
	c->filters[0].id = TFS_FILTER_DEFLATE;
	memcpy(c->fill, z->fill, sizeof(c->fill));
	c->has_fill = z->has_fill;
	c->nchunks = 1;
	ch->offset = 0;
	ch->length = z->flen[0];
	ch->mask = 0;
	c->chunks = ch;
	tfs_spec_in(s, z->file[0]);
	tfs_spec_stored(s, 0, z->flen[0]);
	tfs_spec_size(s, z->nbytes);
	tfs_spec_encoded(s, TFS_ENCODING_CHUNKED,
			 &(struct tfs_codec_params){.chunks = c});
	return 0;
}

static int zarr_load(const struct tfs_source *src, struct tfs_builder *b,
		     struct tfs_diag *d)
{
	struct zarr z = {.src = src, .b = b, .d = d};
	struct zarr_pieces p = {0};
	struct tfs_tensor_spec s;
	struct tfs_chunk_params c;
	struct tfs_chunk ch;
	uint64_t shape[ZARR_MAX_DIMS];
	const char *name, *why = NULL;
	size_t len, nd;
	uint32_t h;
	int ret;

	ret = zarr_header(&z);
	if (ret)
		goto out;
	nd = z.scalar ? 0 : z.ndim;
	memcpy(shape, z.shape, sizeof(shape));
	zarr_name(&z, &name, &len);
	tfs_spec_tensor(&s, name, len, z.dtype, shape, nd, z.at_dtype);
	ret = z.nbytes ? zarr_open_chunks(&z, &why) : 0;
	if (!ret && !z.nbytes) { /* no elements, no chunks */
		tfs_spec_mem(&s, "", 0);
	} else if (!ret && z.comp == ZC_NONE) {
		ret = zarr_raw_pieces(&z, &p, &why);
		if (!ret && p.n == 1 && !p.v[0].mem) { /* one file's extent */
			tfs_spec_in(&s, p.v[0].source);
			tfs_spec_raw(&s, p.v[0].offset, p.v[0].length);
		} else if (!ret) {
			tfs_spec_segments(&s, p.v, p.n);
			tfs_spec_size(&s, z.nbytes);
		}
	} else if (!ret) {
		ret = zarr_one_chunk(&z, &s, &c, &ch, &why);
	}
	if (ret < 0)
		goto out;
	if (ret == 1) {
		tfs_spec_size(&s, z.nbytes);
		tfs_spec_unreadable(&s, why, z.fault);
	}
	ret = tfs_builder_add_tensor(b, &s, &h, d);
	ret = ret ? ret : zarr_describe(&z, h);
	ret = ret ? ret : zarr_attrs(&z);
out:
	zarr_pieces_free(&p);
	zarr_free(&z);
	return ret;
}

/*
 * The array's own files: its chunks (grid indices joined by "." or "/")
 * and .zattrs; a gzip chunk is not a .nemo archive
 */
static bool zarr_covers(const struct tfs_source *src, const char *name)
{
	const char *p = name;

	(void)src;
	if (strcmp(name, ".zattrs") == 0)
		return true;
	for (; *p; p++)
		if (!(*p >= '0' && *p <= '9') &&
		    !((*p == '.' || *p == '/') && p > name && p[1] &&
		      p[-1] >= '0' && p[-1] <= '9'))
			return false;
	return p > name;
}

TFS_FORMAT(zarr, "Zarr v2 array (.zarray and its chunk files)",
	   .probe = zarr_probe, .load = zarr_load, .covers = zarr_covers);
