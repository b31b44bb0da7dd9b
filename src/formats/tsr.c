// SPDX-License-Identifier: MIT
/*
 * TSR ("TSR!"), Technical Renaissance single-tensor format, version 1.
 * Spec: shared/specs/tsr.md.  A 64-byte little-endian header, then the
 * elements.  One unnamed tensor, shown as the file "tensor".
 *
 * "TSR4" (the successor's multi-tensor format) shares the extension but not
 * the layout; it is recognised here and refused with a clear message.
 */
#include <errno.h>
#include <string.h>

#include "core/builder.h"
#include "core/checked.h"
#include "core/cursor.h"
#include "core/diag.h"
#include "core/dtype.h"
#include "core/format.h"
#include "core/source.h"

#define TSR_HEADER_SIZE 64

static int tsr_probe(const struct tfs_source *src)
{
	if (src->size >= 4 && memcmp(src->data, "TSR!", 4) == 0)
		return 100;
	if (src->size >= 4 && memcmp(src->data, "TSR4", 4) == 0)
		return 100;
	return 0;
}

static enum tfs_dtype tsr_dtype(int32_t v)
{
	switch (v) {
	case 1:
		return TFS_DTYPE_FLOAT32;
	case 2:
		return TFS_DTYPE_INT8;
	case 3:
		return TFS_DTYPE_INT32;
	default:
		return TFS_DTYPE_INVALID;
	}
}

struct tsr_header {
	int32_t version, header_size, reserved1, dtype, ndim;
	int32_t dims[4];
	int64_t total, reserved2, reserved3;
};

static int read_header(struct tfs_cursor *c, struct tsr_header *h)
{
	int ret = tfs_cursor_skip(c, 4);
	int i;

	ret = ret ? ret : tfs_cursor_i32le(c, &h->version);
	ret = ret ? ret : tfs_cursor_i32le(c, &h->header_size);
	ret = ret ? ret : tfs_cursor_i32le(c, &h->reserved1);
	ret = ret ? ret : tfs_cursor_i32le(c, &h->dtype);
	ret = ret ? ret : tfs_cursor_i32le(c, &h->ndim);
	for (i = 0; i < 4; i++)
		ret = ret ? ret : tfs_cursor_i32le(c, &h->dims[i]);
	ret = ret ? ret : tfs_cursor_i64le(c, &h->total);
	ret = ret ? ret : tfs_cursor_i64le(c, &h->reserved2);
	ret = ret ? ret : tfs_cursor_i64le(c, &h->reserved3);
	return ret;
}

static int check_dims(const struct tsr_header *h, uint64_t *shape,
		      struct tfs_diag *d)
{
	uint64_t product = 1;
	int i;

	for (i = 0; i < 4; i++) {
		if (h->dims[i] < 0)
			return tfs_diag_at(d, -EBADMSG, 24 + 4 * (uint64_t)i,
					   "dims[%d]: negative (%d)", i,
					   h->dims[i]);
		if (i < 4 - h->ndim && h->dims[i] != 1)
			return tfs_diag_at(d, -EBADMSG, 24 + 4 * (uint64_t)i,
					   "dims[%d]: unused leading dim is %d,"
					   " must be 1 (ndim %d)",
					   i, h->dims[i], h->ndim);
		if (i >= 4 - h->ndim)
			shape[i - (4 - h->ndim)] = (uint64_t)h->dims[i];
		if (!tfs_mul_u64(product, (uint64_t)h->dims[i], &product))
			return tfs_diag_at(d, -EBADMSG, 24,
					   "dims: product overflows 64 bits");
	}
	if (h->total < 0 || (uint64_t)h->total != product)
		return tfs_diag_at(d, -EBADMSG, 40,
				   "total_elements: %lld does not match the "
				   "product of dims (%llu)",
				   (long long)h->total,
				   (unsigned long long)product);
	return 0;
}

static int tsr_load(const struct tfs_source *src, struct tfs_builder *b,
		    struct tfs_diag *d)
{
	struct tfs_tensor_spec spec;
	struct tsr_header h = {0};
	struct tfs_cursor c;
	uint64_t shape[4], bytes, want;
	enum tfs_dtype dt;
	json_t *meta;
	int ret;

	if (src->size >= 4 && memcmp(src->data, "TSR4", 4) == 0)
		return tfs_diag_at(d, -ENOTSUP, 0,
				   "magic: TSR4 (the multi-tensor TSR-V4.20 "
				   "format) is not supported");
	tfs_cursor_init(&c, src->data, src->size, 0);
	if (read_header(&c, &h))
		return tfs_diag_at(d, -EBADMSG, src->size,
				   "header: file is %llu bytes, the header "
				   "needs 64",
				   (unsigned long long)src->size);
	if (h.version != 1)
		return tfs_diag_at(d, -ENOTSUP, 4,
				   "version: %d is not supported (only 1)",
				   h.version);
	if (h.header_size != TSR_HEADER_SIZE)
		return tfs_diag_at(d, -EBADMSG, 8,
				   "header_size: %d, must be 64",
				   h.header_size);
	dt = tsr_dtype(h.dtype);
	if (dt == TFS_DTYPE_INVALID)
		return tfs_diag_at(d, -EBADMSG, 16,
				   "dtype: unknown value %d (1 FP32, 2 INT8, "
				   "3 INT32)",
				   h.dtype);
	if (h.ndim < 0 || h.ndim > 4)
		return tfs_diag_at(d, -EBADMSG, 20, "ndim: %d is outside 0..4",
				   h.ndim);
	ret = check_dims(&h, shape, d);
	if (ret)
		return ret;
	if (!tfs_mul_u64((uint64_t)h.total, tfs_dtype_size(dt), &bytes) ||
	    !tfs_add_u64(bytes, TSR_HEADER_SIZE, &want))
		return tfs_diag_at(d, -EBADMSG, 40,
				   "total_elements: %lld elements overflow "
				   "the byte count",
				   (long long)h.total);
	if (src->size != want)
		return tfs_diag_at(
			d, -EBADMSG, src->size < want ? src->size : want,
			"data: file is %llu bytes, header says "
			"64 + %llu = %llu",
			(unsigned long long)src->size,
			(unsigned long long)bytes, (unsigned long long)want);

	tfs_spec_tensor(&spec, "tensor", 6, dt, shape, (size_t)h.ndim, 0);
	tfs_spec_raw(&spec, TSR_HEADER_SIZE, bytes);
	ret = tfs_builder_add_tensor(b, &spec, NULL, d);
	if (ret)
		return ret;

	meta = tfs_builder_metadata(b);
	json_object_set_new(meta, "version", json_integer(h.version));
	json_object_set_new(meta, "header_size", json_integer(h.header_size));
	json_object_set_new(meta, "dtype_code", json_integer(h.dtype));
	json_object_set_new(meta, "ndim", json_integer(h.ndim));
	json_object_set_new(meta, "dims_nchw",
			    json_pack("[iiii]", h.dims[0], h.dims[1], h.dims[2],
				      h.dims[3]));
	json_object_set_new(meta, "total_elements", json_integer(h.total));
	json_object_set_new(meta, "reserved",
			    json_pack("[iII]", h.reserved1,
				      (json_int_t)h.reserved2,
				      (json_int_t)h.reserved3));
	return 0;
}

TFS_FORMAT(tsr, "TSR (Technical Renaissance), one tensor", .probe = tsr_probe,
	   .load = tsr_load);
