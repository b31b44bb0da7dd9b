// SPDX-License-Identifier: MIT
/*
 * The npy view (-o npy): every tensor file is a .npy file, the header
 * numpy's np.save would write before the bytes the file shows (its own,
 * or the as view's converted ones), so that np.load(path, mmap_mode='r')
 * gives the exact array.  Planned over the finished records after the as
 * view; the image serves the header (a record's prefix) and then the body.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/builder.h"
#include "core/dtype.h"
#include "core/tree.h"
#include "core/view_ops.h"

/* numpy's type character for a kind, or 0 when numpy has no such type */
static char kind_char(const struct tfs_dtype_info *di, enum tfs_dtype t)
{
	if (di->block_elems != 1)
		return 0;
	switch (di->kind) {
	case TFS_KIND_INT:
		return 'i';
	case TFS_KIND_UINT:
		return 'u';
	case TFS_KIND_BOOL:
		return 'b';
	case TFS_KIND_FLOAT:
		/* IEEE binary16/32/64 only; bfloat16 and float8 are not */
		return t == TFS_DTYPE_FLOAT16 || t == TFS_DTYPE_FLOAT32 ||
				       t == TFS_DTYPE_FLOAT64
			       ? 'f'
			       : 0;
	case TFS_KIND_COMPLEX:
		return t == TFS_DTYPE_COMPLEX32 ? 0 : 'c';
	default:
		return 0;
	}
}

/* decimal digits of @v */
static size_t digits(uint64_t v)
{
	size_t n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

/* "(2, 3)", "(5,)", "()" into @buf */
static int shape_tuple(char *buf, size_t cap, const uint64_t *shape,
		       uint32_t ndim)
{
	size_t o = 0;
	uint32_t i;
	int n;

	n = snprintf(buf, cap, "(");
	o = (size_t)n;
	for (i = 0; i < ndim && o < cap; i++) {
		n = snprintf(buf + o, cap - o, "%s%llu", i ? ", " : "",
			     (unsigned long long)shape[i]);
		o += (size_t)n;
	}
	if (o < cap) {
		n = snprintf(buf + o, cap - o, "%s)", ndim == 1 ? "," : "");
		o += (size_t)n;
	}
	return o < cap ? 0 : -E2BIG;
}

/*
 * The header for a tensor of @dtype (@record_size bytes per record for
 * TFS_DTYPE_VOID), @ndim dims @shape, @size bytes, stored big-endian or
 * column-major as said.  numpy's own rules: version 1.0 unless the header
 * needs more than 65535 bytes (then 2.0), padded with spaces and a final
 * '\n' so the data starts at a multiple of 64.  Dtypes numpy has no name
 * for (bfloat16, float8, sub-byte and block-quantized types, complex32)
 * are records '|V<n>' of the dtype's block size, the last dimension
 * divided by the elements per block (or, when it does not divide, one
 * dimension of blocks); opaque ones are bytes ('|u1', [size]).
 * @descr_literal (or NULL) is the descr to write instead, as a Python
 * literal: a numpy container's own ("'<U5'", a structured list).
 * *out is malloc'd; 0 or -ENOMEM / -E2BIG.
 */
static int npy_header(enum tfs_dtype dtype, uint32_t record_size,
		      const char *descr_literal, const uint64_t *shape,
		      uint32_t ndim, uint64_t size, bool big_endian,
		      bool fortran, uint8_t **out, uint32_t *len)
{
	const struct tfs_dtype_info *di = tfs_dtype_info(dtype);
	uint64_t *dims = NULL, one;
	char descr[32], *tuple = NULL, *dict = NULL, quoted[40];
	size_t cap, dlen, total, pre, spare;
	uint32_t nd = ndim, bytes = di->block_bytes;
	char kc = kind_char(di, dtype);
	uint8_t *h;
	int ret = -ENOMEM;

	dims = calloc(ndim ? ndim : 1, sizeof(*dims));
	if (!dims)
		return -ENOMEM;
	if (ndim)
		memcpy(dims, shape, ndim * sizeof(*dims));
	if (dtype == TFS_DTYPE_VOID) {
		snprintf(descr, sizeof(descr), "|V%u", record_size);
	} else if (!di->block_elems) {
		/* opaque: its bytes */
		snprintf(descr, sizeof(descr), "|u1");
		dims[0] = size;
		nd = 1;
	} else if (kc) {
		snprintf(descr, sizeof(descr), "%c%c%u",
			 bytes == 1   ? '|'
			 : big_endian ? '>'
				      : '<',
			 kc, bytes);
	} else {
		snprintf(descr, sizeof(descr), "|V%u", bytes);
		if (di->block_elems > 1) {
			if (ndim && dims[ndim - 1] % di->block_elems == 0) {
				dims[ndim - 1] /= di->block_elems;
			} else {
				/* whole blocks in one dimension */
				one = size / bytes;
				dims[0] = one;
				nd = 1;
			}
		}
	}
	cap = 24 * (size_t)(nd + 1) + 8;
	tuple = malloc(cap);
	if (!tuple || shape_tuple(tuple, cap, dims, nd))
		goto out;
	snprintf(quoted, sizeof(quoted), "'%s'", descr);
	if (asprintf(&dict, "{'descr': %s, 'fortran_order': %s, 'shape': %s, }",
		     descr_literal ? descr_literal : quoted,
		     fortran ? "True" : "False", tuple) < 0) {
		dict = NULL;
		goto out;
	}
	dlen = strlen(dict);
	/*
	 * numpy >= 1.24 (_write_array_header, _wrap_header): spare spaces so
	 * the growing axis (the first, the last in Fortran order) can take
	 * 21 digits in place, then 1..64 spaces and '\n' so that magic(6) +
	 * version(2) + length(2, or 4 from 2.0) + text ends at a multiple
	 * of 64: a full 64 when it already would.
	 */
	spare = nd ? 21 - digits(dims[fortran ? nd - 1 : 0]) : 0;
	pre = 10;
	total = pre + dlen + spare + 1;
	total += 64 - total % 64;
	if (total - pre > 65535) { /* version 2.0: a 4-byte length */
		pre = 12;
		total = pre + dlen + spare + 1;
		total += 64 - total % 64;
	}
	ret = -E2BIG;
	if (total > UINT32_MAX)
		goto out;
	ret = -ENOMEM;
	h = malloc(total);
	if (!h)
		goto out;
	memcpy(h, "\x93NUMPY", 6);
	h[6] = pre == 10 ? 1 : 2;
	h[7] = 0;
	if (pre == 10) {
		h[8] = (uint8_t)((total - pre) & 0xff);
		h[9] = (uint8_t)((total - pre) >> 8);
	} else {
		h[8] = (uint8_t)((total - pre) & 0xff);
		h[9] = (uint8_t)(((total - pre) >> 8) & 0xff);
		h[10] = (uint8_t)(((total - pre) >> 16) & 0xff);
		h[11] = (uint8_t)((total - pre) >> 24);
	}
	memcpy(h + pre, dict, dlen);
	memset(h + pre + dlen, ' ', total - pre - dlen - 1);
	h[total - 1] = '\n';
	*out = h;
	*len = (uint32_t)total;
	ret = 0;
out:
	free(dims);
	free(tuple);
	free(dict);
	return ret;
}

static int npy_plan(struct tfs_draft *dr, uint32_t id)
{
	struct tfs_tree *t = dr->tree;
	struct tfs_tensor *x;
	uint32_t i;
	int ret = 0;

	(void)id;
	if (!dr->opts.npy)
		return 0;
	for (i = 0; !ret && i < t->ntensors; i++) {
		x = &t->tensors[i];
		if (x->view) /* converted: little-endian, the view's dtype */
			ret = npy_header(x->view, 0, NULL, x->shape, x->ndim,
					 x->view_size, false, x->fortran,
					 &x->prefix, &x->prefix_len);
		else
			ret = npy_header(x->dtype_id, x->record_size,
					 x->npy_descr, x->shape, x->ndim,
					 x->size, x->big_endian, x->fortran,
					 &x->prefix, &x->prefix_len);
	}
	return ret;
}

const struct tfs_view_ops tfs_view_npy = {
	.name = "npy",
	.plan = npy_plan,
};
