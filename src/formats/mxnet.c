// SPDX-License-Identifier: MIT
/*
 * MXNet `.params` (specs/mxnet.md, docs/formats/mxnet.md): an NDArray list
 * as mxnet's NDArray::Save(fo, data, names) writes it: u64 magic 0x112,
 * u64 reserved, u64 n, n NDArrays, u64 k, k names (u64 length + bytes),
 * k = n or 0.  Each NDArray as NDArray::Load / LegacyLoad read it: a V2
 * (0xF993FAC9) or V3 (0xF993FACA, numpy shape semantics) record with its
 * storage type, a V1 record (0xF993FAC8), or a legacy one whose first u32
 * is its ndim and whose dims are u32; then the context, the type flag and
 * the dense row-major elements, served zero-copy.  Tensors are named as
 * stored (`arg:conv1_weight`, `aux:bn_moving_mean`, Gluon's bare names),
 * or by their index when the file stores no names.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/builder.h"
#include "core/checked.h"
#include "core/cursor.h"
#include "core/diag.h"
#include "core/dtype.h"
#include "core/format.h"
#include "core/names.h"
#include "core/source.h"

#define MX_LIST_MAGIC 0x112
#define MX_V1 0xF993FAC8u
#define MX_V2 0xF993FAC9u
#define MX_V3 0xF993FACAu
#define MX_MAX_DIMS 32
#define MX_MAX_ARRAYS (1u << 24)

/* mshadow's type flags */
static const enum tfs_dtype mx_types[] = {
	[0] = TFS_DTYPE_FLOAT32,   [1] = TFS_DTYPE_FLOAT64,
	[2] = TFS_DTYPE_FLOAT16,   [3] = TFS_DTYPE_UINT8,
	[4] = TFS_DTYPE_INT32,	   [5] = TFS_DTYPE_INT8,
	[6] = TFS_DTYPE_INT64,	   [7] = TFS_DTYPE_BOOL,
	[8] = TFS_DTYPE_INT16,	   [9] = TFS_DTYPE_UINT16,
	[10] = TFS_DTYPE_UINT32,   [11] = TFS_DTYPE_UINT64,
	[12] = TFS_DTYPE_BFLOAT16,
};

/* one NDArray as read */
struct mx_array {
	uint64_t at;	  /* its first byte */
	uint32_t version; /* 1, 2, 3; 0: legacy */
	bool empty;	  /* ndim 0 before V3: no data */
	uint64_t shape[MX_MAX_DIMS];
	size_t ndim;
	enum tfs_dtype dtype;
	uint64_t data_at, bytes;
};

static int mx_short(struct tfs_diag *d, const struct tfs_cursor *c, uint64_t i,
		    const char *what)
{
	return tfs_diag_at(d, -EBADMSG, tfs_cursor_offset(c),
			   "NDArray %" PRIu64 ": the file ends in its %s", i,
			   what);
}

/* TShape::Load: i32 ndim (u32 in V1/V2 files, the same bytes), then i64
 * dims; the legacy shape: @ndim given, u32 dims */
static int mx_shape(struct tfs_cursor *c, struct mx_array *a, uint64_t i,
		    int64_t ndim, bool legacy, struct tfs_diag *d)
{
	uint64_t v;
	int32_t n32;
	size_t k;

	if (ndim < 0) {
		if (tfs_cursor_i32le(c, &n32))
			return mx_short(d, c, i, "shape");
		ndim = n32;
	}
	if (ndim < 0 || ndim > MX_MAX_DIMS)
		return tfs_diag_at(
			d, a->version == 3 && ndim == -1 ? -ENOTSUP : -EBADMSG,
			tfs_cursor_offset(c) - 4,
			"NDArray %" PRIu64 ": ndim %" PRId64 " %s", i, ndim,
			ndim == -1 ? "(a shape not known)"
				   : "is outside 0..32");
	a->ndim = (size_t)ndim;
	for (k = 0; k < a->ndim; k++) {
		if (tfs_cursor_le(c, legacy ? 4 : 8, &v))
			return mx_short(d, c, i, "shape");
		if ((int64_t)v < 0)
			return tfs_diag_at(d, -EBADMSG,
					   tfs_cursor_offset(c) - 8,
					   "NDArray %" PRIu64 ": dim %zu is "
					   "negative (%" PRId64 ")",
					   i, k, (int64_t)v);
		a->shape[k] = v;
	}
	return 0;
}

static int mx_array(struct tfs_cursor *c, struct mx_array *a, uint64_t i,
		    struct tfs_diag *d)
{
	uint32_t magic;
	int32_t stype, dev_type, dev_id, flag;
	uint64_t count;
	int ret;

	memset(a, 0, sizeof(*a));
	a->at = tfs_cursor_offset(c);
	if (tfs_cursor_u32le(c, &magic))
		return mx_short(d, c, i, "magic");
	if (magic == MX_V2 || magic == MX_V3) {
		a->version = magic == MX_V2 ? 2 : 3;
		if (tfs_cursor_i32le(c, &stype))
			return mx_short(d, c, i, "storage type");
		if (stype != 0)
			return tfs_diag_at(d, -ENOTSUP, a->at + 4,
					   "NDArray %" PRIu64 ": storage type "
					   "%d (row_sparse 1, csr 2) is not "
					   "supported, only dense (0)",
					   i, stype);
		ret = mx_shape(c, a, i, -1, false, d);
	} else if (magic == MX_V1) {
		a->version = 1;
		ret = mx_shape(c, a, i, -1, false, d);
	} else {
		ret = mx_shape(c, a, i, magic, true, d);
	}
	if (ret)
		return ret;
	if (!a->ndim && a->version != 3) {
		a->empty = true;
		return 0;
	}
	if (tfs_cursor_i32le(c, &dev_type) || tfs_cursor_i32le(c, &dev_id))
		return mx_short(d, c, i, "context");
	if (tfs_cursor_i32le(c, &flag))
		return mx_short(d, c, i, "type flag");
	if (flag < 0 ||
	    (size_t)flag >= sizeof(mx_types) / sizeof(mx_types[0]) ||
	    (flag && !mx_types[flag]))
		return tfs_diag_at(d, -EBADMSG, tfs_cursor_offset(c) - 4,
				   "NDArray %" PRIu64 ": type flag %d is not "
				   "one of mshadow's",
				   i, flag);
	a->dtype = mx_types[flag];
	if (!tfs_shape_product(a->shape, a->ndim, &count) ||
	    !tfs_mul_u64(count, tfs_dtype_size(a->dtype), &a->bytes))
		return tfs_diag_at(d, -EBADMSG, a->at,
				   "NDArray %" PRIu64 ": its byte count "
				   "overflows 64 bits",
				   i);
	a->data_at = tfs_cursor_offset(c);
	if (tfs_cursor_skip(c, a->bytes))
		return tfs_diag_at(d, -EBADMSG, a->data_at,
				   "NDArray %" PRIu64 ": %" PRIu64 " bytes "
				   "of data, %" PRIu64 " left in the file",
				   i, a->bytes, tfs_cursor_remaining(c));
	return 0;
}

static int mx_probe(const struct tfs_source *src)
{
	return src->size >= 24 && tfs_load_le(src->data, 8) == MX_LIST_MAGIC &&
			       tfs_load_le(src->data + 8, 8) == 0
		       ? 100
		       : 0;
}

/* the names after the arrays: their count *@k (n or 0), each checked,
 * and nothing after them */
static int mx_names(struct tfs_cursor *c, uint64_t n, uint64_t *k,
		    struct tfs_diag *d)
{
	uint64_t i, len, at = tfs_cursor_offset(c);

	if (tfs_cursor_u64le(c, k))
		return tfs_diag_at(d, -EBADMSG, at,
				   "names: the file ends before their count");
	if (*k != n && *k != 0)
		return tfs_diag_at(d, -EBADMSG, at,
				   "names: %" PRIu64 " names for %" PRIu64
				   " arrays (must be as many, or none)",
				   *k, n);
	for (i = 0; i < *k; i++) {
		at = tfs_cursor_offset(c);
		if (tfs_cursor_u64le(c, &len) || tfs_cursor_skip(c, len))
			return tfs_diag_at(d, -EBADMSG, at,
					   "names: name %" PRIu64 " runs past "
					   "the end of the file",
					   i);
	}
	if (tfs_cursor_remaining(c))
		return tfs_diag_at(d, -EBADMSG, tfs_cursor_offset(c),
				   "%" PRIu64 " bytes after the names",
				   tfs_cursor_remaining(c));
	return 0;
}

static int mx_load(const struct tfs_source *src, struct tfs_builder *b,
		   struct tfs_diag *d)
{
	struct tfs_cursor c, names;
	struct tfs_tensor_spec spec;
	struct mx_array a;
	uint64_t magic, reserved, n, k = 0, i, len = 0, empty = 0;
	const uint8_t *p;
	char idx[24];
	json_t *meta = tfs_builder_metadata(b);
	int ret;

	tfs_cursor_init(&c, src->data, src->size, 0);
	if (tfs_cursor_u64le(&c, &magic) || tfs_cursor_u64le(&c, &reserved) ||
	    tfs_cursor_u64le(&c, &n))
		return tfs_diag_at(d, -EBADMSG, src->size,
				   "header: %" PRIu64 " bytes, the header "
				   "needs 24",
				   src->size);
	if (magic != MX_LIST_MAGIC || reserved)
		return tfs_diag_at(d, -EBADMSG, magic != MX_LIST_MAGIC ? 0 : 8,
				   "header: not an NDArray list (magic "
				   "0x%" PRIx64 ", reserved %" PRIu64 ")",
				   magic, reserved);
	if (n > MX_MAX_ARRAYS || n > src->size / 4)
		return tfs_diag_at(d, -EBADMSG, 16,
				   "header: %" PRIu64 " arrays cannot fit in "
				   "the file",
				   n);
	/* the names follow the arrays: walk the arrays once to find them */
	for (i = 0; i < n; i++) {
		ret = mx_array(&c, &a, i, d);
		if (ret)
			return ret;
	}
	names = c;
	ret = mx_names(&c, n, &k, d);
	if (ret)
		return ret;
	tfs_cursor_skip(&names, 8); /* k, checked */
	tfs_cursor_init(&c, src->data, src->size, 0);
	tfs_cursor_skip(&c, 24);
	for (i = 0; i < n; i++) {
		mx_array(&c, &a, i, d);
		if (k) {
			tfs_cursor_u64le(&names, &len);
			p = names.p + names.pos;
			tfs_cursor_skip(&names, len);
		} else {
			len = (uint64_t)snprintf(idx, sizeof(idx), "%" PRIu64,
						 i);
			p = (const uint8_t *)idx;
		}
		if (a.empty) {
			empty++;
			ret = tfs_builder_warn(
				b, a.at,
				"NDArray %" PRIu64 " '%s': empty "
				"(ndim 0), no file",
				i, TFS_SHOWN((const char *)p, len));
			if (ret)
				return tfs_diag_oom(d);
			continue;
		}
		tfs_spec_tensor(&spec, (const char *)p, len, a.dtype, a.shape,
				a.ndim, a.at);
		tfs_spec_raw(&spec, a.data_at, a.bytes);
		ret = tfs_builder_add_tensor(b, &spec, NULL, d);
		if (ret)
			return ret;
	}
	if (json_object_set_new(meta, "arrays", json_integer((json_int_t)n)) ||
	    json_object_set_new(meta, "named", json_boolean(k != 0)) ||
	    json_object_set_new(meta, "empty_arrays",
				json_integer((json_int_t)empty)))
		return tfs_diag_oom(d);
	return 0;
}

TFS_FORMAT(mxnet, "MXNet .params (NDArray list)", .probe = mx_probe,
	   .load = mx_load);
