// SPDX-License-Identifier: MIT
/*
 * The datatype message 0x03, every class, nested types to depth
 * H5_TYPE_DEPTH with at most H5_TYPE_MEMBERS members in all (specs/hdf5.md
 * section 7).  Names stay in the file's bytes: each is NUL-terminated
 * inside the message.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "parse/hdf5/h5.h"
#include "core/checked.h"
#include "core/diag.h"

struct ty_ctx {
	struct h5_file *f;
	unsigned members;
};

static const char *const class_names[] = {
	"fixed-point", "floating-point",  "time",     "string",
	"bitfield",    "opaque",	  "compound", "reference",
	"enumeration", "variable-length", "array",
};

const char *h5_class_name(unsigned cls)
{
	return cls < 11 ? class_names[cls] : "unknown";
}

void h5_type_free(struct h5_type *t)
{
	uint32_t i;

	if (!t)
		return;
	if (t->memb && t->cls == H5T_COMPOUND)
		for (i = 0; i < t->nmemb; i++)
			h5_type_free(t->memb[i].type);
	free(t->memb);
	h5_type_free(t->base);
	free(t);
}

/* a NUL-terminated name; @pad8: padded to a multiple of 8 from its start */
static int ty_name(struct ty_ctx *z, struct tfs_cursor *c, bool pad8,
		   const char **out)
{
	const uint8_t *s = c->p + c->pos;
	const void *nul = memchr(s, 0, tfs_cursor_remaining(c));
	uint64_t n;

	if (!nul)
		return tfs_diag_at(z->f->d, -EBADMSG, tfs_cursor_offset(c),
				   "datatype: a member name without its NUL "
				   "inside the message");
	n = (uint64_t)((const uint8_t *)nul - s) + 1;
	if (pad8)
		n = (n + 7) & ~7ull;
	if (tfs_cursor_skip(c, n))
		return h5_short(z->f, c, "datatype member name");
	*out = (const char *)s;
	return 0;
}

static int ty_parse(struct ty_ctx *z, struct tfs_cursor *c, unsigned depth,
		    struct h5_type **out);

static int ty_members(struct ty_ctx *z, struct tfs_cursor *c, uint64_t at,
		      struct h5_type *t, uint32_t n)
{
	if (n > H5_TYPE_MEMBERS - z->members || n > tfs_cursor_remaining(c))
		return tfs_diag_at(z->f->d, -E2BIG, at,
				   "datatype: %u members (at most %u in all)",
				   n, H5_TYPE_MEMBERS);
	z->members += n;
	t->nmemb = n;
	t->memb = calloc(n ? n : 1, sizeof(*t->memb));
	return t->memb ? 0 : tfs_diag_oom(z->f->d);
}

static int ty_compound(struct ty_ctx *z, struct tfs_cursor *c, uint64_t at,
		       unsigned depth, struct h5_type *t)
{
	uint32_t i, n = t->bits & 0xffff;
	int ret = ty_members(z, c, at, t, n);

	for (i = 0; !ret && i < n; i++) {
		struct h5_member *m = &t->memb[i];
		uint64_t off, mat;

		ret = ty_name(z, c, t->version < 3, &m->name);
		if (ret)
			return ret;
		mat = tfs_cursor_offset(c);
		if (t->version >= 3) {
			unsigned w = h5_enc_size(t->size);

			if (tfs_cursor_le(c, w, &off))
				return h5_short(z->f, c, "compound member");
		} else {
			if (tfs_cursor_le(c, 4, &off))
				return h5_short(z->f, c, "compound member");
			/* v1: rank, reserved, permutation, reserved, dims */
			if (t->version == 1 && tfs_cursor_skip(c, 28))
				return h5_short(z->f, c, "compound member");
		}
		m->offset = (uint32_t)off;
		ret = ty_parse(z, c, depth + 1, &m->type);
		if (ret)
			return ret;
		if (off > t->size || m->type->size > t->size - off)
			return tfs_diag_at(
				z->f->d, -EBADMSG, mat,
				"compound member '%.40s': offset "
				"%llu + %u bytes outside the %u-byte "
				"type",
				m->name, (unsigned long long)off, m->type->size,
				t->size);
	}
	return ret;
}

static int ty_enum(struct ty_ctx *z, struct tfs_cursor *c, uint64_t at,
		   unsigned depth, struct h5_type *t)
{
	uint32_t i, n = t->bits & 0xffff;
	uint64_t vb;
	int ret;

	ret = ty_parse(z, c, depth + 1, &t->base);
	if (ret)
		return ret;
	if (t->base->cls != H5T_FIXED || t->base->size != t->size)
		return tfs_diag_at(
			z->f->d, -EBADMSG, at,
			"enumeration: the base type is not a %u-byte "
			"integer",
			t->size);
	ret = ty_members(z, c, at, t, n);
	for (i = 0; !ret && i < n; i++)
		ret = ty_name(z, c, t->version < 3, &t->memb[i].name);
	if (ret)
		return ret;
	vb = (uint64_t)n * t->size;
	t->enum_values = c->p + c->pos;
	if (tfs_cursor_skip(c, vb))
		return h5_short(z->f, c, "enumeration values");
	return 0;
}

static int ty_array(struct ty_ctx *z, struct tfs_cursor *c, uint64_t at,
		    unsigned depth, struct h5_type *t)
{
	uint8_t rank;
	uint64_t n = 1, bytes;
	unsigned i;
	int ret;

	if (tfs_cursor_u8(c, &rank))
		return h5_short(z->f, c, "array type");
	if (rank == 0 || rank > H5_MAX_RANK)
		return tfs_diag_at(z->f->d, -EBADMSG, at + 8,
				   "array type: rank %u (1 to %u)", rank,
				   H5_MAX_RANK);
	if (t->version < 3 && tfs_cursor_skip(c, 3))
		return h5_short(z->f, c, "array type");
	t->arank = rank;
	for (i = 0; i < rank; i++) {
		uint32_t v;

		if (tfs_cursor_u32le(c, &v))
			return h5_short(z->f, c, "array type");
		t->adims[i] = v;
		if (!tfs_mul_u64(n, v, &n))
			n = UINT64_MAX;
	}
	if (t->version < 3 && tfs_cursor_skip(c, 4ull * rank))
		return h5_short(z->f, c, "array type");
	ret = ty_parse(z, c, depth + 1, &t->base);
	if (ret)
		return ret;
	if (!tfs_mul_u64(n, t->base->size, &bytes) || bytes != t->size)
		return tfs_diag_at(z->f->d, -EBADMSG, at,
				   "array type: %u bytes, but its dims hold "
				   "%llu elements of %u bytes",
				   t->size, (unsigned long long)n,
				   t->base->size);
	return 0;
}

/* a number's bit offset and precision (two u16): 0, or -1 past the end */
static int ty_bits(struct tfs_cursor *c, struct h5_type *t)
{
	uint64_t v;

	if (tfs_cursor_le(c, 2, &v))
		return -1;
	t->bit_off = (uint16_t)v;
	if (tfs_cursor_le(c, 2, &v))
		return -1;
	t->prec = (uint16_t)v;
	return 0;
}

static int ty_props(struct ty_ctx *z, struct tfs_cursor *c, uint64_t at,
		    unsigned depth, struct h5_type *t)
{

	switch (t->cls) {
	case H5T_FIXED:
	case H5T_BITFIELD:
		t->be = t->bits & 1;
		t->sign = t->cls == H5T_FIXED && (t->bits & 8);
		if (ty_bits(c, t))
			break;
		return 0;
	case H5T_FLOAT:
		if ((t->bits & 0x41) == 0x41 || (t->bits & 0x41) == 0x40)
			return tfs_diag_at(z->f->d, -ENOTSUP, at + 1,
					   "floating-point type: VAX byte "
					   "order is not supported");
		t->be = t->bits & 1;
		if (ty_bits(c, t))
			break;
		if (tfs_cursor_u8(c, &t->eloc) || tfs_cursor_u8(c, &t->esize) ||
		    tfs_cursor_u8(c, &t->mloc) || tfs_cursor_u8(c, &t->msize) ||
		    tfs_cursor_u32le(c, &t->bias))
			break;
		return 0;
	case H5T_TIME:
		if (tfs_cursor_skip(c, 2))
			break;
		return 0;
	case H5T_STRING:
	case H5T_REFERENCE:
		return 0;
	case H5T_OPAQUE: {
		uint64_t n = t->bits & 0xff;

		t->tag = (const char *)(c->p + c->pos);
		t->tag_len = (size_t)n;
		if (tfs_cursor_skip(c, (n + 7) & ~7ull))
			break;
		while (t->tag_len && t->tag[t->tag_len - 1] == 0)
			t->tag_len--;
		return 0;
	}
	case H5T_COMPOUND:
		return ty_compound(z, c, at, depth, t);
	case H5T_ENUM:
		return ty_enum(z, c, at, depth, t);
	case H5T_VLEN:
		return ty_parse(z, c, depth + 1, &t->base);
	case H5T_ARRAY:
		return ty_array(z, c, at, depth, t);
	default:
		return tfs_diag_at(z->f->d, -EBADMSG, at,
				   "datatype: class %u (0 to 10 are known)",
				   t->cls);
	}
	return h5_short(z->f, c, h5_class_name(t->cls));
}

static int ty_parse(struct ty_ctx *z, struct tfs_cursor *c, unsigned depth,
		    struct h5_type **out)
{
	uint64_t at = tfs_cursor_offset(c), bits;
	struct h5_type *t;
	uint8_t cv;
	uint32_t size;
	int ret;

	*out = NULL;
	if (depth > H5_TYPE_DEPTH)
		return tfs_diag_at(z->f->d, -E2BIG, at,
				   "datatype: nested deeper than %u levels",
				   H5_TYPE_DEPTH);
	if (tfs_cursor_u8(c, &cv) || tfs_cursor_le(c, 3, &bits) ||
	    tfs_cursor_u32le(c, &size))
		return h5_short(z->f, c, "datatype");
	if ((cv >> 4) < 1 || (cv >> 4) > 4)
		return tfs_diag_at(z->f->d, -EBADMSG, at,
				   "datatype: version %u (1 to 4)", cv >> 4);
	t = calloc(1, sizeof(*t));
	if (!t)
		return tfs_diag_oom(z->f->d);
	*out = t;
	t->cls = cv & 15;
	t->version = cv >> 4;
	t->bits = (uint32_t)bits;
	t->size = size;
	if (size == 0 && t->cls != H5T_VLEN)
		return tfs_diag_at(z->f->d, -EBADMSG, at + 4,
				   "datatype: element size 0");
	ret = ty_props(z, c, at, depth, t);
	return ret;
}

int h5_type_parse(struct h5_file *f, struct tfs_cursor *c, struct h5_type **out)
{
	struct ty_ctx z = {.f = f};
	int ret = ty_parse(&z, c, 0, out);

	if (ret) {
		h5_type_free(*out);
		*out = NULL;
	}
	return ret;
}

int h5_type_shared(struct h5_file *f, struct tfs_cursor *c,
		   struct h5_type **out)
{
	uint64_t at = tfs_cursor_offset(c), addr;
	const struct h5_msg *m;
	struct tfs_cursor tc;
	struct h5_ohdr oh;
	uint8_t ver, type = 2;
	int ret;

	*out = NULL;
	if (tfs_cursor_u8(c, &ver) || tfs_cursor_u8(c, &type) ||
	    (ver == 1 && tfs_cursor_skip(c, 6)))
		return h5_short(f, c, "shared datatype");
	if (ver < 1 || ver > 3)
		return tfs_diag_at(f->d, -EBADMSG, at,
				   "shared datatype: version %u (1 to 3)", ver);
	if (ver == 3 && type != 2)
		return tfs_diag_at(f->d, -ENOTSUP, at + 1,
				   "shared datatype: shared message storage "
				   "(type %u) is not supported",
				   type);
	if (h5_addr(f, c, &addr))
		return h5_short(f, c, "shared datatype");
	ret = h5_ohdr_read(f, addr, &oh);
	if (ret)
		return ret;
	m = h5_ohdr_find(&oh, 0x03);
	if (!m || (m->flags & 2))
		ret = tfs_diag_at(f->d, -EBADMSG, h5_abs(f, addr),
				  "committed datatype %llu: %s",
				  (unsigned long long)addr,
				  m ? "shared again" : "no datatype message");
	if (!ret) {
		h5_msg_cursor(m, &tc);
		ret = h5_type_parse(f, &tc, out);
	}
	h5_ohdr_free(&oh);
	return ret;
}

int h5_type_msg(struct h5_file *f, const struct h5_msg *m, struct h5_type **out)
{
	struct tfs_cursor c;

	h5_msg_cursor(m, &c);
	if (m->flags & 2)
		return h5_type_shared(f, &c, out);
	return h5_type_parse(f, &c, out);
}
