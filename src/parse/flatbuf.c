// SPDX-License-Identifier: MIT
/* The bounded FlatBuffers reader: see src/parse/flatbuf.h. */
#include <errno.h>
#include <string.h>

#include "parse/flatbuf.h"
#include "core/checked.h"
#include "core/cursor.h"
#include "core/diag.h"

void tfs_fb_init(struct tfs_fb *fb, const void *p, uint64_t n)
{
	memset(fb, 0, sizeof(*fb));
	fb->p = p;
	fb->n = n;
	fb->max_tables = TFS_FB_MAX_TABLES;
	fb->max_depth = TFS_FB_MAX_DEPTH;
}

static void reach(struct tfs_fb *fb, uint64_t end)
{
	if (end > fb->high)
		fb->high = end;
}

int tfs_fb_deref(struct tfs_fb *fb, uint64_t at, const char *what,
		 uint64_t *target, struct tfs_diag *d)
{
	uint64_t v, t;

	if (!tfs_range_ok(at, 4, fb->n))
		return tfs_diag_at(d, -EBADMSG, at,
				   "%s: uoffset at byte %llu is past the end "
				   "of the %llu-byte buffer",
				   what, (unsigned long long)at,
				   (unsigned long long)fb->n);
	v = tfs_load_le(fb->p + at, 4);
	if (v == 0)
		return tfs_diag_at(d, -EBADMSG, at,
				   "%s: zero uoffset (points at itself)", what);
	t = at + v; /* at < 2^64 - 4, v < 2^32: no overflow in practice */
	if (t < at || t >= fb->n)
		return tfs_diag_at(d, -EBADMSG, at,
				   "%s: uoffset %llu points to byte %llu, past "
				   "the end of the %llu-byte buffer",
				   what, (unsigned long long)v,
				   (unsigned long long)t,
				   (unsigned long long)fb->n);
	reach(fb, at + 4);
	*target = t;
	return 0;
}

/* the u32 at @pos that begins a table (@table) or a vector: aligned, inside */
static int head_at(const struct tfs_fb *fb, uint64_t pos, bool table,
		   const char *what, struct tfs_diag *d)
{
	if (pos % 4)
		return tfs_diag_at(d, -EBADMSG, pos,
				   "%s: %s at byte %llu is not 4-aligned", what,
				   table ? "table" : "vector",
				   (unsigned long long)pos);
	if (tfs_range_ok(pos, 4, fb->n))
		return 0;
	if (table)
		return tfs_diag_at(d, -EBADMSG, pos,
				   "%s: table at byte %llu is past the end of "
				   "the %llu-byte buffer",
				   what, (unsigned long long)pos,
				   (unsigned long long)fb->n);
	return tfs_diag_at(d, -EBADMSG, pos,
			   "%s: vector length at byte %llu is past the end "
			   "of the buffer",
			   what, (unsigned long long)pos);
}

int tfs_fb_table_at(struct tfs_fb *fb, uint64_t pos, unsigned depth,
		    const char *what, struct tfs_fb_table *t,
		    struct tfs_diag *d)
{
	int64_t so;
	uint64_t vt;

	if (depth > fb->max_depth)
		return tfs_diag_at(d, -E2BIG, pos,
				   "%s: tables nested deeper than %u", what,
				   fb->max_depth);
	if (fb->tables >= fb->max_tables)
		return tfs_diag_at(d, -E2BIG, pos, "%s: more than %u tables",
				   what, fb->max_tables);
	fb->tables++;
	if (head_at(fb, pos, true, what, d))
		return -EBADMSG;
	so = (int32_t)(uint32_t)tfs_load_le(fb->p + pos, 4);
	/* vtable at pos - so, inside [0, n) with its two u16s */
	if ((so > 0 && (uint64_t)so > pos) ||
	    (so <= 0 && (uint64_t)(-so) > fb->n - pos))
		return tfs_diag_at(d, -EBADMSG, pos,
				   "%s: vtable soffset %lld puts the vtable "
				   "outside the %llu-byte buffer",
				   what, (long long)so,
				   (unsigned long long)fb->n);
	vt = so > 0 ? pos - (uint64_t)so : pos + (uint64_t)(-so);
	if (vt % 2 || !tfs_range_ok(vt, 4, fb->n))
		return tfs_diag_at(d, -EBADMSG, pos,
				   "%s: vtable at byte %llu is misaligned or "
				   "outside the %llu-byte buffer",
				   what, (unsigned long long)vt,
				   (unsigned long long)fb->n);
	t->vsize = (uint16_t)tfs_load_le(fb->p + vt, 2);
	t->tsize = (uint16_t)tfs_load_le(fb->p + vt + 2, 2);
	if (t->vsize < 4 || t->vsize % 2 || !tfs_range_ok(vt, t->vsize, fb->n))
		return tfs_diag_at(d, -EBADMSG, vt,
				   "%s: vtable size %u (at byte %llu) is odd, "
				   "under 4 or past the end of the buffer",
				   what, t->vsize, (unsigned long long)vt);
	if (t->tsize < 4 || !tfs_range_ok(pos, t->tsize, fb->n))
		return tfs_diag_at(d, -EBADMSG, vt + 2,
				   "%s: table size %u (table at byte %llu) is "
				   "under 4 or past the end of the buffer",
				   what, t->tsize, (unsigned long long)pos);
	t->pos = pos;
	t->vt = vt;
	t->depth = depth;
	reach(fb, vt + t->vsize);
	reach(fb, pos + t->tsize);
	return 0;
}

int tfs_fb_root(struct tfs_fb *fb, struct tfs_fb_table *t, struct tfs_diag *d)
{
	uint64_t pos;
	int ret = tfs_fb_deref(fb, 0, "root table", &pos, d);

	return ret ? ret : tfs_fb_table_at(fb, pos, 0, "root table", t, d);
}

int tfs_fb_field(struct tfs_fb *fb, const struct tfs_fb_table *t, unsigned id,
		 unsigned size, const char *what, uint64_t *pos,
		 struct tfs_diag *d)
{
	uint64_t slot = 4 + 2 * (uint64_t)id, entry;

	if (slot + 2 > t->vsize)
		return 0;
	entry = tfs_load_le(fb->p + t->vt + slot, 2);
	if (!entry)
		return 0;
	if (entry + size > t->tsize)
		return tfs_diag_at(d, -EBADMSG, t->vt + slot,
				   "%s: field at +%llu (%u bytes) is past the "
				   "end of its %u-byte table at byte %llu",
				   what, (unsigned long long)entry, size,
				   t->tsize, (unsigned long long)t->pos);
	*pos = t->pos + entry;
	if (*pos % size)
		return tfs_diag_at(d, -EBADMSG, *pos,
				   "%s: %u-byte field at byte %llu is not "
				   "%u-aligned",
				   what, size, (unsigned long long)*pos, size);
	return 1;
}

int tfs_fb_scalar(struct tfs_fb *fb, const struct tfs_fb_table *t, unsigned id,
		  unsigned size, uint64_t def, const char *what, uint64_t *out,
		  struct tfs_diag *d)
{
	uint64_t pos;
	int ret = tfs_fb_field(fb, t, id, size, what, &pos, d);

	if (ret < 0)
		return ret;
	*out = ret ? tfs_load_le(fb->p + pos, size) : def;
	return 0;
}

/* the uoffset field @id of @t: 1 and its target, 0 absent, -errno */
static int offset_field(struct tfs_fb *fb, const struct tfs_fb_table *t,
			unsigned id, const char *what, uint64_t *target,
			struct tfs_diag *d)
{
	uint64_t pos;
	int ret = tfs_fb_field(fb, t, id, 4, what, &pos, d);

	if (ret <= 0)
		return ret;
	ret = tfs_fb_deref(fb, pos, what, target, d);
	return ret ? ret : 1;
}

/* the vector at @at: count, alignment and bounds */
static int vector_at(struct tfs_fb *fb, uint64_t at, uint32_t elem,
		     uint32_t max_count, const char *what, struct tfs_fb_vec *v,
		     struct tfs_diag *d)
{
	uint64_t bytes, end;

	if (head_at(fb, at, false, what, d))
		return -EBADMSG;
	v->at = at;
	v->pos = at + 4;
	v->elem = elem;
	v->count = (uint32_t)tfs_load_le(fb->p + at, 4);
	if (elem >= 8 && elem % 8 == 0 && v->pos % 8)
		return tfs_diag_at(d, -EBADMSG, at,
				   "%s: elements of 8 bytes at byte %llu are "
				   "not 8-aligned",
				   what, (unsigned long long)v->pos);
	/* count <= 2^32, elem <= 2^32: the product fits 64 bits */
	bytes = (uint64_t)v->count * elem;
	if (!tfs_add_u64(v->pos, bytes, &end) || end > fb->n)
		return tfs_diag_at(d, -EBADMSG, at,
				   "%s: vector of %u elements of %u bytes at "
				   "byte %llu runs past the end of the "
				   "%llu-byte buffer",
				   what, v->count, elem, (unsigned long long)at,
				   (unsigned long long)fb->n);
	if (v->count > max_count)
		return tfs_diag_at(d, -E2BIG, at,
				   "%s: %u elements, more than the limit %u",
				   what, v->count, max_count);
	reach(fb, end);
	return 0;
}

int tfs_fb_vector(struct tfs_fb *fb, const struct tfs_fb_table *t, unsigned id,
		  uint32_t elem, uint32_t max_count, const char *what,
		  struct tfs_fb_vec *v, struct tfs_diag *d)
{
	uint64_t at;
	int ret;

	memset(v, 0, sizeof(*v));
	ret = offset_field(fb, t, id, what, &at, d);
	if (ret <= 0)
		return ret;
	ret = vector_at(fb, at, elem, max_count, what, v, d);
	return ret ? ret : 1;
}

int tfs_fb_string(struct tfs_fb *fb, const struct tfs_fb_table *t, unsigned id,
		  const char *what, struct tfs_fb_str *s, struct tfs_diag *d)
{
	struct tfs_fb_vec v;
	int ret;

	memset(s, 0, sizeof(*s));
	ret = tfs_fb_vector(fb, t, id, 1, UINT32_MAX, what, &v, d);
	if (ret <= 0)
		return ret;
	/* the vector fits, so pos + count < 2^64; its NUL must too */
	if (v.pos + v.count >= fb->n || fb->p[v.pos + v.count] != 0)
		return tfs_diag_at(d, -EBADMSG, v.at,
				   "%s: string of %u bytes at byte %llu has no "
				   "NUL terminator inside the buffer",
				   what, v.count, (unsigned long long)v.at);
	reach(fb, v.pos + v.count + 1);
	s->p = (const char *)fb->p + v.pos;
	s->len = v.count;
	s->at = v.at;
	return 1;
}

int tfs_fb_child(struct tfs_fb *fb, const struct tfs_fb_table *t, unsigned id,
		 const char *what, struct tfs_fb_table *child,
		 struct tfs_diag *d)
{
	uint64_t pos;
	int ret;

	memset(child, 0, sizeof(*child));
	ret = offset_field(fb, t, id, what, &pos, d);
	if (ret <= 0)
		return ret;
	ret = tfs_fb_table_at(fb, pos, t->depth + 1, what, child, d);
	return ret ? ret : 1;
}

int tfs_fb_vec_table(struct tfs_fb *fb, const struct tfs_fb_table *parent,
		     const struct tfs_fb_vec *v, uint32_t i, const char *what,
		     struct tfs_fb_table *t, struct tfs_diag *d)
{
	uint64_t pos;
	int ret;

	if (i >= v->count || v->elem != 4)
		return tfs_diag_at(d, -EINVAL, v->at,
				   "%s: element %u of a %u-element vector",
				   what, i, v->count);
	ret = tfs_fb_deref(fb, v->pos + 4 * (uint64_t)i, what, &pos, d);
	return ret ? ret
		   : tfs_fb_table_at(fb, pos, parent->depth + 1, what, t, d);
}
