// SPDX-License-Identifier: MIT
/*
 * The data layout message 0x08 (versions 1-4), the fill value messages
 * 0x05 / 0x04 and the filter pipeline 0x0B (specs/hdf5.md sections 8, 9).
 */
#include <errno.h>
#include <string.h>

#include "parse/hdf5/h5.h"
#include "core/checked.h"
#include "core/diag.h"

static int lay_v12(struct h5_file *f, struct tfs_cursor *c, struct h5_layout *l)
{
	uint8_t nd, cls;
	unsigned i;

	if (tfs_cursor_u8(c, &nd) || tfs_cursor_u8(c, &cls) ||
	    tfs_cursor_skip(c, 5))
		return h5_short(f, c, "data layout");
	l->cls = cls;
	if (cls > 2)
		return tfs_diag_at(f->d, -EBADMSG, l->at + 2,
				   "data layout: class %u", cls);
	if (nd == 0 || nd > H5_MAX_RANK + 1)
		return tfs_diag_at(f->d, -EBADMSG, l->at + 1,
				   "data layout: %u dims", nd);
	l->addr = H5_UNDEF;
	if (cls != H5_COMPACT && h5_addr(f, c, &l->addr))
		return h5_short(f, c, "data layout");
	l->ndims = nd;
	for (i = 0; i < nd; i++) {
		uint32_t v;

		if (tfs_cursor_u32le(c, &v))
			return h5_short(f, c, "data layout");
		l->cdims[i] = v;
	}
	if (cls == H5_CHUNKED) {
		l->index = H5_IDX_BTREE1;
		l->idx_addr = l->addr;
		return 0;
	}
	if (cls == H5_COMPACT) {
		uint32_t n;

		if (tfs_cursor_u32le(c, &n))
			return h5_short(f, c, "data layout");
		l->compact = c->p + c->pos;
		l->compact_at = tfs_cursor_offset(c);
		l->compact_size = n;
		if (tfs_cursor_skip(c, n))
			return h5_short(f, c, "compact data");
	}
	l->size = H5_UNDEF; /* from the dataspace */
	return 0;
}

static int lay_chunked(struct h5_file *f, struct tfs_cursor *c,
		       struct h5_layout *l)
{
	uint8_t nd, enc = 4, it;
	unsigned i;

	if (l->version == 4 && tfs_cursor_u8(c, &l->idx_params[5]))
		return h5_short(f, c, "data layout");
	if (l->version == 4)
		l->flags = l->idx_params[5];
	if (tfs_cursor_u8(c, &nd))
		return h5_short(f, c, "data layout");
	if (nd < 1 || nd > H5_MAX_RANK + 1)
		return tfs_diag_at(f->d, -EBADMSG, tfs_cursor_offset(c) - 1,
				   "data layout: %u chunk dims (1 to %u)", nd,
				   H5_MAX_RANK + 1);
	l->ndims = nd;
	if (l->version == 3) {
		if (h5_addr(f, c, &l->idx_addr))
			return h5_short(f, c, "data layout");
		l->index = H5_IDX_BTREE1;
	} else if (tfs_cursor_u8(c, &enc)) {
		return h5_short(f, c, "data layout");
	}
	if (enc < 1 || enc > 8)
		return tfs_diag_at(f->d, -EBADMSG, tfs_cursor_offset(c) - 1,
				   "data layout: chunk dim width %u (1 to 8)",
				   enc);
	for (i = 0; i < nd; i++) {
		uint64_t at = tfs_cursor_offset(c);

		if (tfs_cursor_le(c, enc, &l->cdims[i]))
			return h5_short(f, c, "data layout");
		if (l->cdims[i] == 0)
			return tfs_diag_at(f->d, -EBADMSG, at,
					   "data layout: chunk dim %u is 0", i);
	}
	if (l->version == 3)
		return 0;
	if (tfs_cursor_u8(c, &it))
		return h5_short(f, c, "data layout");
	l->index = it;
	switch (it) {
	case H5_IDX_SINGLE:
		if (l->flags & 2) {
			if (h5_len(f, c, &l->single_size) ||
			    tfs_cursor_u32le(c, &l->single_mask))
				return h5_short(f, c, "data layout");
		}
		break;
	case H5_IDX_IMPLICIT:
		break;
	case H5_IDX_FARRAY:
		if (tfs_cursor_u8(c, &l->idx_params[0]))
			return h5_short(f, c, "data layout");
		break;
	case H5_IDX_EARRAY:
		for (i = 0; i < 5; i++)
			if (tfs_cursor_u8(c, &l->idx_params[i]))
				return h5_short(f, c, "data layout");
		break;
	case H5_IDX_BTREE2:
		if (tfs_cursor_skip(c, 6))
			return h5_short(f, c, "data layout");
		break;
	default:
		return tfs_diag_at(f->d, -EBADMSG, tfs_cursor_offset(c) - 1,
				   "data layout: chunk index type %u (1 to 5)",
				   it);
	}
	if (h5_addr(f, c, &l->idx_addr))
		return h5_short(f, c, "data layout");
	return 0;
}

int h5_layout_parse(struct h5_file *f, const struct h5_msg *m,
		    struct h5_layout *l)
{
	struct tfs_cursor c;
	uint8_t ver, cls;
	uint16_t n;

	memset(l, 0, sizeof(*l));
	h5_msg_cursor(m, &c);
	l->at = m->at;
	if (tfs_cursor_u8(&c, &ver))
		return h5_short(f, &c, "data layout");
	l->version = ver;
	if (ver == 1 || ver == 2)
		return lay_v12(f, &c, l);
	if (ver != 3 && ver != 4)
		return tfs_diag_at(f->d, -EBADMSG, m->at,
				   "data layout: version %u (1 to 4)", ver);
	if (tfs_cursor_u8(&c, &cls))
		return h5_short(f, &c, "data layout");
	l->cls = cls;
	switch (cls) {
	case H5_COMPACT:
		if (tfs_cursor_u16le(&c, &n))
			return h5_short(f, &c, "data layout");
		l->compact = c.p + c.pos;
		l->compact_at = tfs_cursor_offset(&c);
		l->compact_size = n;
		if (tfs_cursor_skip(&c, n))
			return tfs_diag_at(f->d, -EBADMSG, m->at + 2,
					   "data layout: %u bytes of compact "
					   "data run past the message",
					   n);
		return 0;
	case H5_CONTIGUOUS:
		if (h5_addr(f, &c, &l->addr) || h5_len(f, &c, &l->size))
			return h5_short(f, &c, "data layout");
		return 0;
	case H5_CHUNKED:
		return lay_chunked(f, &c, l);
	case H5_VIRTUAL:
		if (ver == 4)
			return 0; /* refused by the caller, by name */
				  /* fall through */
	default:
		return tfs_diag_at(f->d, -EBADMSG, m->at + 1,
				   "data layout: class %u", cls);
	}
}

/* the old fill value message 0x04: size, value */
static int fill_old(struct h5_file *f, const struct h5_msg *m,
		    struct h5_fill *fill)
{
	struct tfs_cursor c;
	uint32_t n;

	h5_msg_cursor(m, &c);
	if (tfs_cursor_u32le(&c, &n) || tfs_cursor_need(&c, n))
		return h5_short(f, &c, "fill value (old)");
	if (n) {
		fill->has_value = true;
		fill->size = n;
		fill->value = c.p + c.pos;
	}
	return 0;
}

int h5_fill_parse(struct h5_file *f, const struct h5_ohdr *oh,
		  struct h5_fill *fill)
{
	const struct h5_msg *m = h5_ohdr_find(oh, 0x05);
	const struct h5_msg *old = h5_ohdr_find(oh, 0x04);
	struct tfs_cursor c;
	uint8_t ver, a, b, defined = 0;
	uint32_t n = 0;

	memset(fill, 0, sizeof(*fill));
	if (!m)
		return old ? fill_old(f, old, fill) : 0;
	h5_msg_cursor(m, &c);
	if (tfs_cursor_u8(&c, &ver))
		return h5_short(f, &c, "fill value");
	if (ver == 1 || ver == 2) {
		if (tfs_cursor_u8(&c, &a) || tfs_cursor_u8(&c, &b) ||
		    tfs_cursor_u8(&c, &defined))
			return h5_short(f, &c, "fill value");
		if ((ver == 1 || defined) && tfs_cursor_u32le(&c, &n))
			return h5_short(f, &c, "fill value");
	} else if (ver == 3) {
		if (tfs_cursor_u8(&c, &a))
			return h5_short(f, &c, "fill value");
		if ((a & 0x20) && tfs_cursor_u32le(&c, &n))
			return h5_short(f, &c, "fill value");
	} else {
		return tfs_diag_at(f->d, -EBADMSG, m->at,
				   "fill value: version %u (1 to 3)", ver);
	}
	if (tfs_cursor_need(&c, n))
		return tfs_diag_at(f->d, -EBADMSG, tfs_cursor_offset(&c) - 4,
				   "fill value: %u bytes run past the message",
				   n);
	if (n) {
		fill->has_value = true;
		fill->size = n;
		fill->value = c.p + c.pos;
		return 0;
	}
	return old ? fill_old(f, old, fill) : 0;
}

static const struct {
	uint16_t id;
	const char *name;
} filter_names[] = {
	{1, "deflate"}, {2, "shuffle"},	       {3, "fletcher32"},
	{4, "szip"},	{5, "nbit"},	       {6, "scaleoffset"},
	{307, "bzip2"}, {32000, "lzf"},	       {32001, "blosc"},
	{32004, "lz4"}, {32008, "bitshuffle"}, {32015, "zstd"},
};

const char *h5_filter_name(uint16_t id)
{
	size_t i;

	for (i = 0; i < sizeof(filter_names) / sizeof(filter_names[0]); i++)
		if (filter_names[i].id == id)
			return filter_names[i].name;
	return NULL;
}

uint32_t h5_filter_val(const struct h5_filter *fl, unsigned i)
{
	return i < fl->nvals ? (uint32_t)tfs_load_le(fl->vals + 4 * i, 4) : 0;
}

int h5_pipeline_parse(struct h5_file *f, const struct h5_msg *m,
		      struct h5_pipeline *pl)
{
	struct tfs_cursor c;
	uint8_t ver, n;
	unsigned i;

	memset(pl, 0, sizeof(*pl));
	pl->at = m->at;
	h5_msg_cursor(m, &c);
	if (tfs_cursor_u8(&c, &ver) || tfs_cursor_u8(&c, &n))
		return h5_short(f, &c, "filter pipeline");
	if (ver != 1 && ver != 2)
		return tfs_diag_at(f->d, -EBADMSG, m->at,
				   "filter pipeline: version %u (1 or 2)", ver);
	if (n > H5_MAX_FILTERS)
		return tfs_diag_at(f->d, -EBADMSG, m->at + 1,
				   "filter pipeline: %u filters (at most %u)",
				   n, H5_MAX_FILTERS);
	if (ver == 1 && tfs_cursor_skip(&c, 6))
		return h5_short(f, &c, "filter pipeline");
	pl->n = n;
	for (i = 0; i < n; i++) {
		struct h5_filter *fl = &pl->f[i];
		uint16_t id, nlen = 0, nv;
		uint64_t nb;

		if (tfs_cursor_u16le(&c, &id))
			return h5_short(f, &c, "filter pipeline");
		if ((ver == 1 || id >= 256) && tfs_cursor_u16le(&c, &nlen))
			return h5_short(f, &c, "filter pipeline");
		if (tfs_cursor_u16le(&c, &fl->flags) ||
		    tfs_cursor_u16le(&c, &nv))
			return h5_short(f, &c, "filter pipeline");
		fl->id = id;
		fl->nvals = nv;
		if (nlen) {
			uint64_t at = tfs_cursor_offset(&c);

			nb = ver == 1 ? ((uint64_t)nlen + 7) & ~7ull : nlen;
			if (tfs_cursor_need(&c, nb) ||
			    !memchr(c.p + c.pos, 0, nlen))
				return tfs_diag_at(f->d, -EBADMSG, at,
						   "filter pipeline: filter "
						   "%u's name is not "
						   "NUL-terminated inside the "
						   "message",
						   id);
			fl->name = (const char *)(c.p + c.pos);
			tfs_cursor_skip(&c, nb);
		}
		fl->vals = c.p + c.pos;
		nb = 4ull * nv + (ver == 1 && (nv & 1) ? 4 : 0);
		if (tfs_cursor_skip(&c, nb))
			return h5_short(f, &c, "filter pipeline");
	}
	return 0;
}
