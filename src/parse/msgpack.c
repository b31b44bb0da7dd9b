// SPDX-License-Identifier: MIT
/* The MessagePack pull reader: see msgpack.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "msgpack.h"
#include "core/checked.h"
#include "core/diag.h"

/* the accepted type bytes of each length-prefixed kind (spec.md) */
static const struct mp_form {
	const char *expect;   /* for messages */
	uint8_t fix_base;     /* fixstr/fixarray/fixmap: base | n */
	uint8_t fix_count;    /* 0: no fix form */
	uint8_t b8, b16, b32; /* 8/16/32-bit length forms (0: none) */
} mp_forms[] = {
	[TFS_MP_KSTR] = {"str (0xa0-0xbf, 0xd9-0xdb)", 0xa0, 32, 0xd9, 0xda,
			 0xdb},
	[TFS_MP_KBIN] = {"bin (0xc4-0xc6)", 0, 0, 0xc4, 0xc5, 0xc6},
	[TFS_MP_KARRAY] = {"array (0x90-0x9f, 0xdc, 0xdd)", 0x90, 16, 0, 0xdc,
			   0xdd},
	[TFS_MP_KMAP] = {"map (0x80-0x8f, 0xde, 0xdf)", 0x80, 16, 0, 0xde,
			 0xdf},
};

void tfs_mp_init(struct tfs_mp *m, const void *p, uint64_t len, uint64_t base,
		 struct tfs_diag *d)
{
	tfs_cursor_init(&m->c, p, len, base);
	m->d = d;
}

static unsigned long long left(const struct tfs_mp *m)
{
	return (unsigned long long)tfs_cursor_remaining(&m->c);
}

int tfs_mp_fail(struct tfs_mp *m, int err, uint64_t off, const char *field,
		const char *fmt, ...)
{
	char msg[TFS_DIAG_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return tfs_diag_at(m->d, err, off, "%s: %s", field, msg);
}

int tfs_mp_type(struct tfs_mp *m, const char *field, const char *expect,
		uint8_t *type, uint64_t *start)
{
	*start = tfs_cursor_offset(&m->c);
	if (tfs_cursor_u8(&m->c, type))
		return tfs_mp_fail(m, -EBADMSG, *start, field,
				   "expected %s, found the end of the file",
				   expect);
	return 0;
}

int tfs_mp_wrong_type(struct tfs_mp *m, uint64_t start, const char *field,
		      const char *expect, uint8_t type, const char *hint)
{
	return tfs_mp_fail(m, -EBADMSG, start, field,
			   "expected %s, found type byte 0x%02x%s", expect,
			   type, hint);
}

int tfs_mp_payload(struct tfs_mp *m, uint64_t start, const char *field,
		   const char *what, unsigned width, uint64_t *v)
{
	if (tfs_cursor_be(&m->c, width, v))
		return tfs_mp_fail(m, -EBADMSG, start, field,
				   "%s runs past the end of the file (needs "
				   "%u bytes after the type byte, %llu left)",
				   what, width, left(m));
	return 0;
}

int tfs_mp_len(struct tfs_mp *m, const char *field, enum tfs_mp_kind kind,
	       uint64_t *n, uint64_t *start)
{
	const struct mp_form *f = &mp_forms[kind];
	unsigned width;
	uint8_t t;
	int ret;

	ret = tfs_mp_type(m, field, f->expect, &t, start);
	if (ret)
		return ret;
	if (f->fix_count && t >= f->fix_base &&
	    t - f->fix_base < f->fix_count) {
		*n = (uint64_t)(t - f->fix_base);
		return 0;
	}
	if (f->b8 && t == f->b8)
		width = 1;
	else if (t == f->b16)
		width = 2;
	else if (t == f->b32)
		width = 4;
	else
		return tfs_mp_wrong_type(m, *start, field, f->expect, t, "");
	return tfs_mp_payload(m, *start, field,
			      kind == TFS_MP_KSTR || kind == TFS_MP_KBIN
				      ? "its length"
				      : "its count",
			      width, n);
}

int tfs_mp_bytes(struct tfs_mp *m, const char *field, enum tfs_mp_kind kind,
		 const uint8_t **bytes, uint64_t *len, uint64_t *start,
		 uint64_t *at)
{
	int ret = tfs_mp_len(m, field, kind, len, start);

	if (ret)
		return ret;
	*at = tfs_cursor_offset(&m->c);
	if (tfs_cursor_bytes(&m->c, *len, bytes))
		return tfs_mp_fail(m, -EBADMSG, *start, field,
				   "%s of %llu bytes runs past the end of the "
				   "file (%llu bytes left)",
				   kind == TFS_MP_KSTR ? "str" : "bin",
				   (unsigned long long)*len, left(m));
	return 0;
}

int tfs_mp_count_fits(struct tfs_mp *m, const char *field, uint64_t start,
		      uint64_t n, uint64_t min_each, const char *what)
{
	uint64_t need;

	if (tfs_mul_u64(n, min_each, &need) &&
	    need <= tfs_cursor_remaining(&m->c))
		return 0;
	return tfs_mp_fail(m, -EBADMSG, start, field,
			   "%llu %s need at least %llu bytes each, only %llu "
			   "remain before the end of the file",
			   (unsigned long long)n, what,
			   (unsigned long long)min_each, left(m));
}

/* a str/bin/ext payload of @o->n bytes at the cursor */
static int payload(struct tfs_mp *m, const char *field, struct tfs_mp_obj *o,
		   const char *what)
{
	o->at = tfs_cursor_offset(&m->c);
	if (tfs_cursor_bytes(&m->c, o->n, &o->p))
		return tfs_mp_fail(m, -EBADMSG, o->start, field,
				   "%s of %llu bytes runs past the end of the "
				   "file (%llu bytes left)",
				   what, (unsigned long long)o->n, left(m));
	return 0;
}

/* the length (or count) of @width bytes after the type byte, into @o->n */
static int length(struct tfs_mp *m, const char *field, struct tfs_mp_obj *o,
		  unsigned width)
{
	return tfs_mp_payload(m, o->start, field,
			      o->type == TFS_MP_ARRAY || o->type == TFS_MP_MAP
				      ? "its count"
				      : "its length",
			      width, &o->n);
}

static int ext_type(struct tfs_mp *m, const char *field, struct tfs_mp_obj *o)
{
	uint8_t t;

	if (tfs_cursor_u8(&m->c, &t))
		return tfs_mp_fail(m, -EBADMSG, o->start, field,
				   "the ext's type byte is past the end of "
				   "the file");
	o->ext = (int8_t)t;
	return payload(m, field, o, "ext");
}

static int items_fit(struct tfs_mp *m, const char *field,
		     const struct tfs_mp_obj *o)
{
	return o->type == TFS_MP_MAP
		       ? tfs_mp_count_fits(m, field, o->start, o->n, 2,
					   "map entries")
		       : tfs_mp_count_fits(m, field, o->start, o->n, 1,
					   "array items");
}

/* a bin, str, ext, array or map whose length takes @width bytes */
static int sized(struct tfs_mp *m, const char *field, struct tfs_mp_obj *o,
		 enum tfs_mp_type type, unsigned width)
{
	int ret;

	o->type = type;
	ret = length(m, field, o, width);
	if (ret)
		return ret;
	switch (type) {
	case TFS_MP_EXT:
		return ext_type(m, field, o);
	case TFS_MP_ARRAY:
	case TFS_MP_MAP:
		return items_fit(m, field, o);
	default:
		return payload(m, field, o, type == TFS_MP_BIN ? "bin" : "str");
	}
}

int tfs_mp_next(struct tfs_mp *m, const char *field, struct tfs_mp_obj *o)
{
	static const uint8_t fixext[5] = {1, 2, 4, 8, 16};
	uint64_t v;
	uint32_t f32;
	float x;
	uint8_t t;
	int ret;

	memset(o, 0, sizeof(*o));
	ret = tfs_mp_type(m, field, "a msgpack object", &t, &o->start);
	if (ret)
		return ret;
	o->byte = t;
	if (t <= 0x7f || t >= 0xe0) {
		o->type = t <= 0x7f ? TFS_MP_UINT : TFS_MP_INT;
		o->u = t;
		o->i = (int8_t)t;
		return 0;
	}
	if (t <= 0x8f || (t >= 0x90 && t <= 0x9f)) {
		o->type = t <= 0x8f ? TFS_MP_MAP : TFS_MP_ARRAY;
		o->n = t & 0x0f;
		return items_fit(m, field, o);
	}
	if (t <= 0xbf) {
		o->type = TFS_MP_STR;
		o->n = t & 0x1f;
		return payload(m, field, o, "str");
	}
	switch (t) {
	case 0xc0:
		o->type = TFS_MP_NIL;
		return 0;
	case 0xc2:
	case 0xc3:
		o->type = TFS_MP_BOOL;
		o->b = t == 0xc3;
		return 0;
	case 0xc4:
	case 0xc5:
	case 0xc6:
		return sized(m, field, o, TFS_MP_BIN, 1u << (t - 0xc4));
	case 0xc7:
	case 0xc8:
	case 0xc9:
		return sized(m, field, o, TFS_MP_EXT, 1u << (t - 0xc7));
	case 0xca:
	case 0xcb:
		o->type = TFS_MP_FLOAT;
		ret = tfs_mp_payload(m, o->start, field, "float",
				     t == 0xca ? 4 : 8, &v);
		if (ret)
			return ret;
		if (t == 0xca) {
			f32 = (uint32_t)v;
			memcpy(&x, &f32, 4);
			o->f = x;
		} else {
			memcpy(&o->f, &v, 8);
		}
		return 0;
	case 0xcc:
	case 0xcd:
	case 0xce:
	case 0xcf:
		o->type = TFS_MP_UINT;
		ret = tfs_mp_payload(m, o->start, field, "uint",
				     1u << (t - 0xcc), &o->u);
		return ret;
	case 0xd0:
	case 0xd1:
	case 0xd2:
	case 0xd3:
		ret = tfs_mp_payload(m, o->start, field, "int",
				     1u << (t - 0xd0), &v);
		if (ret)
			return ret;
		/* sign-extend from the width */
		switch (t) {
		case 0xd0:
			o->i = (int8_t)v;
			break;
		case 0xd1:
			o->i = (int16_t)v;
			break;
		case 0xd2:
			o->i = (int32_t)v;
			break;
		default:
			o->i = (int64_t)v;
		}
		o->type = o->i < 0 ? TFS_MP_INT : TFS_MP_UINT;
		o->u = (uint64_t)o->i;
		return 0;
	case 0xd4:
	case 0xd5:
	case 0xd6:
	case 0xd7:
	case 0xd8:
		o->type = TFS_MP_EXT;
		o->n = fixext[t - 0xd4];
		return ext_type(m, field, o);
	case 0xd9:
	case 0xda:
	case 0xdb:
		return sized(m, field, o, TFS_MP_STR, 1u << (t - 0xd9));
	case 0xdc:
	case 0xdd:
	case 0xde:
	case 0xdf:
		return sized(m, field, o, t <= 0xdd ? TFS_MP_ARRAY : TFS_MP_MAP,
			     t == 0xdc || t == 0xde ? 2 : 4);
	default: /* 0xc1 */
		return tfs_mp_fail(m, -EBADMSG, o->start, field,
				   "type byte 0xc1 is never used");
	}
}

static int skip(struct tfs_mp *m, const char *field, unsigned depth,
		unsigned max_depth,
		void (*each)(void *arg, const struct tfs_mp_obj *o), void *arg)
{
	struct tfs_mp_obj o;
	uint64_t i, n;
	int ret;

	ret = tfs_mp_next(m, field, &o);
	if (ret)
		return ret;
	if (each)
		each(arg, &o);
	if (o.type != TFS_MP_ARRAY && o.type != TFS_MP_MAP)
		return 0;
	if (depth > max_depth)
		return tfs_mp_fail(m, -EBADMSG, o.start, field,
				   "nested deeper than %u levels", max_depth);
	n = o.type == TFS_MP_MAP ? 2 * o.n : o.n;
	for (i = 0; i < n; i++) {
		ret = skip(m, field, depth + 1, max_depth, each, arg);
		if (ret)
			return ret;
	}
	return 0;
}

int tfs_mp_skip(struct tfs_mp *m, const char *field, unsigned max_depth,
		void (*each)(void *arg, const struct tfs_mp_obj *o), void *arg)
{
	return skip(m, field, 1, max_depth, each, arg);
}
