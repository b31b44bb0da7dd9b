// SPDX-License-Identifier: MIT
/*
 * ExecuTorch programs, `.pte` (docs/formats/executorch.md): a FlatBuffer
 * `Program` (schema/program.fbs) with identifier ET12, an optional
 * extended header at byte 8 (eh00: the program's size, where its segments
 * start), and the constant tensors' bytes either inline
 * (Program.constant_buffer[i].storage) or in a segment after the
 * flatbuffer (Program.constant_segment: a segment and the offset of every
 * buffer in it).  Every constant Tensor EValue of every execution plan
 * (data_buffer_idx > 0, no allocation_info, not EXTERNAL) is a file,
 * zero-copy: named by its fully qualified name when the program records
 * one, else <plan>/values/<index>.  Walked with parse/flatbuf.h.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "parse/flatbuf.h"
#include "core/builder.h"
#include "core/checked.h"
#include "core/cursor.h"
#include "core/diag.h"
#include "core/dtype.h"
#include "core/format.h"
#include "core/source.h"

#define ET_MAX_DIMS 64u
#define ET_MAX_COUNT (1u << 24)
#define ET_TENSOR 5 /* EValue's KernelTypes tag of a Tensor */
#define ET_EXTERNAL 1

static int et_probe(const struct tfs_source *src)
{
	return src->size >= 16 && !memcmp(src->data + 4, "ET12", 4) ? 100 : 0;
}

/* schema/scalar_type.fbs: 0 when tensorfs serves it as opaque bytes */
static enum tfs_dtype scalar(int64_t t)
{
	switch (t) {
	case 0:
		return TFS_DTYPE_UINT8;
	case 1:
	case 12:
		return TFS_DTYPE_INT8;
	case 2:
		return TFS_DTYPE_INT16;
	case 3:
	case 14:
		return TFS_DTYPE_INT32;
	case 4:
		return TFS_DTYPE_INT64;
	case 5:
		return TFS_DTYPE_FLOAT16;
	case 6:
		return TFS_DTYPE_FLOAT32;
	case 7:
		return TFS_DTYPE_FLOAT64;
	case 11:
		return TFS_DTYPE_BOOL;
	case 13:
		return TFS_DTYPE_UINT8;
	case 15:
		return TFS_DTYPE_BFLOAT16;
	default:
		return TFS_DTYPE_INVALID;
	}
}

struct et_ctx {
	const struct tfs_source *src;
	struct tfs_builder *b;
	struct tfs_diag *d;
	struct tfs_fb fb;
	struct tfs_fb_table prog;
	uint64_t seg_base;	    /* the extended header's, else 0 */
	struct tfs_fb_vec cbuf;	    /* constant_buffer */
	struct tfs_fb_vec segs;	    /* segments */
	struct tfs_fb_vec offsets;  /* constant_segment.offsets */
	uint64_t cseg_at, cseg_len; /* the constant segment's bytes */
	bool have_cseg;
	unsigned constants;
};

static int header(struct et_ctx *c)
{
	const uint8_t *p = c->src->data;
	uint64_t len, psize;

	if (c->src->size < 16 || memcmp(p + 8, "eh00", 4))
		return 0;
	len = tfs_load_le(p + 12, 4);
	if (len < 24 || len > c->src->size - 8)
		return tfs_diag_at(c->d, -EBADMSG, 12,
				   "extended header: length %llu",
				   (unsigned long long)len);
	psize = tfs_load_le(p + 16, 8);
	c->seg_base = tfs_load_le(p + 24, 8);
	if (psize > c->src->size || c->seg_base > c->src->size)
		return tfs_diag_at(c->d, -EBADMSG, 16,
				   "extended header: program %llu bytes, "
				   "segments at %llu, in a file of %llu",
				   (unsigned long long)psize,
				   (unsigned long long)c->seg_base,
				   (unsigned long long)c->src->size);
	return 0;
}

/* the constant segment: Program.constant_segment (segment, offsets) */
static int constant_segment(struct et_ctx *c)
{
	struct tfs_fb_table cs, seg;
	uint64_t idx, off, size, at = 0;
	int ret;

	ret = tfs_fb_child(&c->fb, &c->prog, 5, "Program.constant_segment", &cs,
			   c->d);
	if (ret <= 0)
		return ret;
	ret = tfs_fb_vector(&c->fb, &cs, 1, 8, ET_MAX_COUNT,
			    "SubsegmentOffsets.offsets", &c->offsets, c->d);
	if (ret <= 0 || !c->offsets.count)
		return ret;
	ret = tfs_fb_scalar(&c->fb, &cs, 0, 4, 0,
			    "SubsegmentOffsets.segment_index", &idx, c->d);
	if (ret)
		return ret;
	if (idx >= c->segs.count)
		return tfs_diag_at(c->d, -EBADMSG, cs.pos,
				   "constant_segment: segment %llu of %u",
				   (unsigned long long)idx, c->segs.count);
	ret = tfs_fb_vec_table(&c->fb, &c->prog, &c->segs, (uint32_t)idx,
			       "Program.segments", &seg, c->d);
	if (!ret)
		ret = tfs_fb_scalar(&c->fb, &seg, 0, 8, 0, "DataSegment.offset",
				    &off, c->d);
	if (!ret)
		ret = tfs_fb_scalar(&c->fb, &seg, 1, 8, 0, "DataSegment.size",
				    &size, c->d);
	if (ret)
		return ret;
	if (!tfs_add_u64(c->seg_base, off, &at) ||
	    !tfs_add_u64(at, size, &off) || off > c->src->size)
		return tfs_diag_at(c->d, -EBADMSG, seg.pos,
				   "DataSegment: %llu bytes at %llu + %llu, "
				   "past the file's %llu",
				   (unsigned long long)size,
				   (unsigned long long)c->seg_base,
				   (unsigned long long)(at - c->seg_base),
				   (unsigned long long)c->src->size);
	c->cseg_at = at;
	c->cseg_len = size;
	c->have_cseg = true;
	return 0;
}

/* where buffer @idx's bytes are: *at, and how many there are: *have */
static int buffer_bytes(struct et_ctx *c, uint64_t idx, uint64_t tat,
			uint64_t *at, uint64_t *have)
{
	struct tfs_fb_table buf;
	struct tfs_fb_vec st;
	uint64_t off;
	int ret;

	if (c->have_cseg) {
		if (idx >= c->offsets.count)
			return tfs_diag_at(c->d, -EBADMSG, tat,
					   "Tensor.data_buffer_idx: %llu of %u "
					   "constant segment offsets",
					   (unsigned long long)idx,
					   c->offsets.count);
		off = tfs_fb_vec_le(&c->fb, &c->offsets, (uint32_t)idx);
		if (off > c->cseg_len)
			return tfs_diag_at(c->d, -EBADMSG,
					   c->offsets.pos + 8 * idx,
					   "constant offset %llu past the "
					   "segment's %llu bytes",
					   (unsigned long long)off,
					   (unsigned long long)c->cseg_len);
		*at = c->cseg_at + off;
		*have = c->cseg_len - off;
		return 0;
	}
	if (idx >= c->cbuf.count)
		return tfs_diag_at(c->d, -EBADMSG, tat,
				   "Tensor.data_buffer_idx: %llu of %u "
				   "constant buffers",
				   (unsigned long long)idx, c->cbuf.count);
	ret = tfs_fb_vec_table(&c->fb, &c->prog, &c->cbuf, (uint32_t)idx,
			       "Program.constant_buffer", &buf, c->d);
	if (!ret)
		ret = tfs_fb_vector(&c->fb, &buf, 0, 1, UINT32_MAX,
				    "Buffer.storage", &st, c->d);
	if (ret < 0)
		return ret;
	*at = st.pos;
	*have = st.count;
	return 0;
}

static int tensor(struct et_ctx *c, const struct tfs_fb_table *t,
		  const char *plan, uint32_t vi)
{
	uint64_t dims[ET_MAX_DIMS], st, idx, at = 0, have = 0, numel = 1;
	uint64_t nbytes;
	struct tfs_fb_table alloc, extra;
	struct tfs_fb_str fqn = {0};
	struct tfs_fb_vec sizes, order;
	struct tfs_tensor_spec sp;
	enum tfs_dtype dt;
	char name[160];
	uint64_t loc = 0;
	uint32_t i, h;
	int ret;

	ret = tfs_fb_scalar(&c->fb, t, 5, 4, 0, "Tensor.data_buffer_idx", &idx,
			    c->d);
	if (ret || !idx)
		return ret;
	ret = tfs_fb_child(&c->fb, t, 6, "Tensor.allocation_info", &alloc,
			   c->d);
	if (ret)
		return ret < 0 ? ret : 0; /* planned: not a constant */
	ret = tfs_fb_child(&c->fb, t, 9, "Tensor.extra_tensor_info", &extra,
			   c->d);
	if (ret > 0) {
		ret = tfs_fb_scalar(&c->fb, &extra, 2, 1, 0,
				    "ExtraTensorInfo.location", &loc, c->d);
		if (!ret)
			ret = tfs_fb_string(
				&c->fb, &extra, 1,
				"ExtraTensorInfo.fully_qualified_name", &fqn,
				c->d);
	}
	if (ret < 0)
		return ret;
	if (loc == ET_EXTERNAL)
		return 0; /* in a .ptd file */
	ret = tfs_fb_scalar(&c->fb, t, 0, 1, 0, "Tensor.scalar_type", &st,
			    c->d);
	if (!ret)
		ret = tfs_fb_vector(&c->fb, t, 2, 4, ET_MAX_DIMS,
				    "Tensor.sizes", &sizes, c->d);
	if (ret < 0)
		return ret;
	for (i = 0; i < sizes.count; i++) {
		int32_t v = (int32_t)tfs_fb_vec_le(&c->fb, &sizes, i);

		if (v < 0 || !tfs_mul_u64(numel, (uint64_t)v, &numel))
			return tfs_diag_at(c->d, -EBADMSG, sizes.pos + 4 * i,
					   "Tensor.sizes: %d", v);
		dims[i] = (uint64_t)v;
	}
	dt = scalar((int8_t)st);
	if (dt == TFS_DTYPE_INVALID)
		return tfs_diag_at(c->d, -ENOTSUP, t->pos,
				   "Tensor.scalar_type: %d is not read",
				   (int8_t)st);
	ret = buffer_bytes(c, idx, t->pos, &at, &have);
	if (ret)
		return ret;
	if (!tfs_mul_u64(numel, tfs_dtype_size(dt), &nbytes) || nbytes > have)
		return tfs_diag_at(c->d, -EBADMSG, t->pos,
				   "Tensor: %llu elements of %s, %llu bytes "
				   "in its buffer",
				   (unsigned long long)numel,
				   tfs_dtype_name(dt),
				   (unsigned long long)have);
	if (fqn.len)
		snprintf(name, sizeof(name), "%.*s", (int)fqn.len, fqn.p);
	else
		snprintf(name, sizeof(name), "%s/values/%u", plan, vi);
	tfs_spec_tensor(&sp, name, strlen(name), dt, dims, sizes.count, t->pos);
	tfs_spec_raw(&sp, at, nbytes);
	ret = tfs_builder_add_tensor(c->b, &sp, &h, c->d);
	if (ret)
		return ret;
	c->constants++;
	/* dim_order, when not 0..n-1: the bytes are in that memory order */
	ret = tfs_fb_vector(&c->fb, t, 3, 1, ET_MAX_DIMS, "Tensor.dim_order",
			    &order, c->d);
	if (ret < 0)
		return ret;
	for (i = 0; i < order.count; i++)
		if (tfs_fb_vec_le(&c->fb, &order, i) != i) {
			char s[ET_MAX_DIMS * 4 + 2] = "[";

			for (i = 0; i < order.count; i++)
				snprintf(s + strlen(s), sizeof(s) - strlen(s),
					 "%s%u", i ? "," : "",
					 (unsigned)tfs_fb_vec_le(&c->fb, &order,
								 i));
			strcat(s, "]");
			return tfs_builder_set_xattr_str(
				       c->b, h, "executorch.dim_order", s)
				       ? tfs_diag_oom(c->d)
				       : 0;
		}
	return 0;
}

static int plan(struct et_ctx *c, const struct tfs_fb_table *ep)
{
	struct tfs_fb_str name;
	struct tfs_fb_vec vals;
	struct tfs_fb_table ev, val;
	char pn[64];
	uint64_t tag;
	uint32_t i;
	int ret;

	ret = tfs_fb_string(&c->fb, ep, 0, "ExecutionPlan.name", &name, c->d);
	if (ret < 0)
		return ret;
	snprintf(pn, sizeof(pn), "%.*s", (int)name.len,
		 name.len ? name.p : "plan");
	ret = tfs_fb_vector(&c->fb, ep, 2, 4, ET_MAX_COUNT,
			    "ExecutionPlan.values", &vals, c->d);
	for (i = 0; ret >= 0 && i < vals.count; i++) {
		ret = tfs_fb_vec_table(&c->fb, ep, &vals, i, "EValue", &ev,
				       c->d);
		if (!ret)
			ret = tfs_fb_scalar(&c->fb, &ev, 0, 1, 0,
					    "EValue.val_type", &tag, c->d);
		if (ret)
			break;
		if (tag > 11)
			return tfs_diag_at(c->d, -EBADMSG, ev.pos,
					   "EValue.val_type: %llu",
					   (unsigned long long)tag);
		if (tag != ET_TENSOR)
			continue;
		ret = tfs_fb_child(&c->fb, &ev, 1, "EValue.val", &val, c->d);
		if (ret > 0)
			ret = tensor(c, &val, pn, i);
	}
	return ret < 0 ? ret : 0;
}

static int et_load(const struct tfs_source *src, struct tfs_builder *b,
		   struct tfs_diag *d)
{
	struct et_ctx c = {.src = src, .b = b, .d = d};
	struct tfs_fb_vec plans;
	struct tfs_fb_table ep;
	uint64_t version;
	uint32_t i;
	char sum[96];
	int ret;

	if (src->size < 8 || memcmp(src->data + 4, "ET12", 4))
		return tfs_diag_at(d, -EBADMSG, 4,
				   "identifier: not ET12 (an older or "
				   "other FlatBuffer)");
	ret = header(&c);
	if (ret)
		return ret;
	tfs_fb_init(&c.fb, src->data, src->size);
	ret = tfs_fb_root(&c.fb, &c.prog, d);
	if (!ret)
		ret = tfs_fb_scalar(&c.fb, &c.prog, 0, 4, 0, "Program.version",
				    &version, d);
	if (ret >= 0)
		ret = tfs_fb_vector(&c.fb, &c.prog, 2, 4, ET_MAX_COUNT,
				    "Program.constant_buffer", &c.cbuf, d);
	if (ret >= 0)
		ret = tfs_fb_vector(&c.fb, &c.prog, 4, 4, ET_MAX_COUNT,
				    "Program.segments", &c.segs, d);
	if (ret >= 0)
		ret = constant_segment(&c);
	if (ret >= 0)
		ret = tfs_fb_vector(&c.fb, &c.prog, 1, 4, ET_MAX_COUNT,
				    "Program.execution_plan", &plans, d);
	for (i = 0; ret >= 0 && i < plans.count; i++) {
		ret = tfs_fb_vec_table(&c.fb, &c.prog, &plans, i,
				       "ExecutionPlan", &ep, d);
		if (!ret)
			ret = plan(&c, &ep);
	}
	if (ret < 0)
		return ret;
	snprintf(sum, sizeof(sum),
		 "ExecuTorch program v%llu: %u plans, %u constants",
		 (unsigned long long)version, plans.count, c.constants);
	if (json_object_set_new(tfs_builder_metadata(b), "executorch",
				json_pack("{s:I,s:i,s:b,s:I}", "version",
					  (json_int_t)version, "plans",
					  (int)plans.count, "constant_segment",
					  c.have_cseg, "segment_base_offset",
					  (json_int_t)c.seg_base)) ||
	    tfs_builder_set_xattr_str(b, TFS_BUILDER_ROOT, "summary", sum))
		return tfs_diag_oom(d);
	return 0;
}

TFS_FORMAT(executorch, "ExecuTorch program .pte (FlatBuffer, ET12)",
	   .probe = et_probe, .load = et_load);
