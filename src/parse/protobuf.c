// SPDX-License-Identifier: MIT
/* The protobuf wire reader: see protobuf.h and specs/onnx.md section 1. */
#include <errno.h>

#include "parse/protobuf.h"
#include "core/diag.h"

const char *tfs_pb_wire_name(unsigned wire)
{
	static const char *const names[8] = {
		"VARINT", "I64",    "LEN",	"SGROUP",
		"EGROUP", "I32",    "type 6", "type 7",
	};

	return names[wire & 7];
}

int tfs_pb_want(const struct tfs_pb_field *f, enum tfs_pb_wire wire,
		const char *what, struct tfs_diag *d)
{
	if (f->wire == wire)
		return 0;
	return tfs_diag_at(d, -EBADMSG, f->at, "%s: wire type %s, not %s", what,
			   tfs_pb_wire_name(f->wire), tfs_pb_wire_name(wire));
}

int tfs_pb_want_in(const struct tfs_pb_field *f,
		   const struct tfs_pb_wanted *rows, size_t n,
		   struct tfs_diag *d)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (rows[i].number == f->number)
			return tfs_pb_want(f, rows[i].wire, rows[i].what, d);
	return 0;
}

int tfs_pb_next_in(struct tfs_cursor *c, const char *what,
		   const struct tfs_pb_wanted *rows, size_t n,
		   struct tfs_pb_field *f, struct tfs_diag *d)
{
	int ret = tfs_pb_next(c, what, f, d);

	if (ret == 1 && tfs_pb_want_in(f, rows, n, d))
		return -EBADMSG;
	return ret;
}

static int pb_varint(struct tfs_cursor *c, uint64_t *v, const char *what,
		     const char *part, uint32_t number, struct tfs_diag *d)
{
	int ret = tfs_cursor_varint(c, v);

	if (ret == -EOVERFLOW)
		return tfs_diag_at(d, -EBADMSG, tfs_cursor_offset(c),
				   "%s: field %u: %s: a varint longer than 10 "
				   "bytes or above 2^64-1",
				   what, number, part);
	if (ret)
		return tfs_diag_at(d, -EBADMSG, tfs_cursor_offset(c),
				   "%s: field %u: %s: the message ends inside "
				   "a varint",
				   what, number, part);
	return 0;
}

int tfs_pb_next(struct tfs_cursor *c, const char *what,
		struct tfs_pb_field *f, struct tfs_diag *d)
{
	uint64_t key, at = tfs_cursor_offset(c), start = c->pos;
	int ret;

	if (!tfs_cursor_remaining(c))
		return 0;
	ret = pb_varint(c, &key, what, "key", 0, d);
	if (ret)
		return ret;
	f->at = at;
	f->wire = (enum tfs_pb_wire)(key & 7);
	if (key >> 3 == 0 || key >> 3 > TFS_PB_MAX_FIELD) {
		c->pos = start;
		return tfs_diag_at(d, -EBADMSG, at,
				   "%s: field number %llu (key 0x%llx): not "
				   "between 1 and 2^29-1",
				   what, (unsigned long long)(key >> 3),
				   (unsigned long long)key);
	}
	f->number = (uint32_t)(key >> 3);
	f->value_at = tfs_cursor_offset(c);
	f->data = NULL;
	f->len = 0;
	f->v = 0;
	switch (key & 7) {
	case TFS_PB_VARINT:
		ret = pb_varint(c, &f->v, what, "value", f->number, d);
		break;
	case TFS_PB_I64:
	case TFS_PB_I32:
		ret = tfs_cursor_le(c, (key & 7) == TFS_PB_I64 ? 8 : 4, &f->v);
		if (ret)
			ret = tfs_diag_at(d, -EBADMSG, f->value_at,
					  "%s: field %u: %s value: the message "
					  "ends %llu bytes after it starts",
					  what, f->number,
					  tfs_pb_wire_name(f->wire),
					  (unsigned long long)
						  tfs_cursor_remaining(c));
		break;
	case TFS_PB_LEN:
		ret = pb_varint(c, &f->len, what, "length", f->number, d);
		if (ret)
			break;
		/* refused at the length, checked before anything is read */
		at = f->value_at;
		f->value_at = tfs_cursor_offset(c);
		if (tfs_cursor_bytes(c, f->len, &f->data))
			ret = tfs_diag_at(d, -EBADMSG, at,
					  "%s: field %u: length %llu, but only "
					  "%llu bytes are left in the message",
					  what, f->number,
					  (unsigned long long)f->len,
					  (unsigned long long)
						  tfs_cursor_remaining(c));
		break;
	default:
		ret = tfs_diag_at(d, -EBADMSG, at,
				  "%s: field %u: wire type %u (%s) is not "
				  "allowed",
				  what, f->number, (unsigned)(key & 7),
				  tfs_pb_wire_name((unsigned)(key & 7)));
		break;
	}
	if (ret) {
		c->pos = start;
		return ret;
	}
	return 1;
}

void tfs_pb_sub(const struct tfs_pb_field *f, struct tfs_cursor *c)
{
	tfs_cursor_init(c, f->data, f->len, f->value_at);
}

int tfs_pb_enter(struct tfs_pb_limits *l, uint64_t at, const char *what,
		 struct tfs_diag *d)
{
	if (l->depth >= l->max_depth)
		return tfs_diag_at(d, -E2BIG, at,
				   "%s: nested more than %u messages deep",
				   what, l->max_depth);
	if (l->messages >= l->max_messages)
		return tfs_diag_at(d, -E2BIG, at,
				   "%s: more than %llu messages in the file",
				   what, (unsigned long long)l->max_messages);
	l->depth++;
	l->messages++;
	return 0;
}

void tfs_pb_leave(struct tfs_pb_limits *l)
{
	if (l->depth)
		l->depth--;
}

int tfs_pb_values_init(struct tfs_pb_values *it, const struct tfs_pb_field *f,
		       enum tfs_pb_scalar kind, const char *what,
		       const char *name, struct tfs_diag *d)
{
	static const enum tfs_pb_wire own[] = {
		[TFS_PB_SCALAR_VARINT] = TFS_PB_VARINT,
		[TFS_PB_SCALAR_FIXED32] = TFS_PB_I32,
		[TFS_PB_SCALAR_FIXED64] = TFS_PB_I64,
	};
	unsigned width = kind == TFS_PB_SCALAR_FIXED32 ? 4 : 8;
	uint64_t v;
	int ret;

	it->kind = kind;
	it->what = what;
	it->name = name;
	it->done = false;
	if (f->wire == own[kind]) {
		it->packed = false;
		it->single = f->v;
		it->count = 1;
		return 0;
	}
	if (f->wire != TFS_PB_LEN)
		return tfs_diag_at(d, -EBADMSG, f->at,
				   "%s.%s: wire type %s, not %s or LEN "
				   "(packed)",
				   what, name, tfs_pb_wire_name(f->wire),
				   tfs_pb_wire_name(own[kind]));
	it->packed = true;
	tfs_pb_sub(f, &it->c);
	if (kind != TFS_PB_SCALAR_VARINT) {
		if (f->len % width)
			return tfs_diag_at(d, -EBADMSG, f->value_at,
					   "%s.%s: packed length %llu is not "
					   "a multiple of %u",
					   what, name,
					   (unsigned long long)f->len, width);
		it->count = f->len / width;
		return 0;
	}
	for (it->count = 0; tfs_cursor_remaining(&it->c); it->count++) {
		ret = tfs_cursor_varint(&it->c, &v);
		if (ret)
			return tfs_diag_at(d, -EBADMSG,
					   tfs_cursor_offset(&it->c),
					   "%s.%s: packed value %llu: %s", what,
					   name, (unsigned long long)it->count,
					   ret == -EOVERFLOW
						   ? "a varint longer than 10 "
						     "bytes or above 2^64-1"
						   : "cut off by the end of "
						     "the field");
	}
	it->c.pos = 0;
	return 0;
}

int tfs_pb_values_next(struct tfs_pb_values *it, uint64_t *v)
{
	if (!it->packed) {
		if (it->done)
			return 0;
		it->done = true;
		*v = it->single;
		return 1;
	}
	if (!tfs_cursor_remaining(&it->c))
		return 0;
	if (it->kind == TFS_PB_SCALAR_VARINT)
		return tfs_cursor_varint(&it->c, v) ? 0 : 1;
	return tfs_cursor_le(&it->c, it->kind == TFS_PB_SCALAR_FIXED32 ? 4 : 8,
			     v)
		       ? 0
		       : 1;
}
