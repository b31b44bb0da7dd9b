// SPDX-License-Identifier: MIT
/*
 * Attributes (specs/hdf5.md section 12): attribute messages 0x0C in the
 * object header, and dense storage (attribute info 0x15: a fractal heap
 * indexed by a type-8 v2 B-tree).
 */
#include <errno.h>
#include <string.h>

#include "parse/hdf5/h5.h"
#include "core/checked.h"
#include "core/diag.h"

struct at_ctx {
	struct h5_file *f;
	h5_attr_fn fn;
	void *arg;
};

static uint64_t pad8(uint64_t v, bool pad)
{
	return pad ? (v + 7) & ~7ull : v;
}

static int at_msg(struct at_ctx *z, const uint8_t *p, uint64_t len, uint64_t at)
{
	struct h5_file *f = z->f;
	struct tfs_cursor c, sub;
	struct h5_attr a = {0};
	uint8_t ver, flags;
	uint16_t nlen, tlen, slen;
	const uint8_t *b;
	bool pad;
	int ret;

	tfs_cursor_init(&c, p, len, at);
	a.at = at;
	if (tfs_cursor_u8(&c, &ver) || tfs_cursor_u8(&c, &flags) ||
	    tfs_cursor_u16le(&c, &nlen) || tfs_cursor_u16le(&c, &tlen) ||
	    tfs_cursor_u16le(&c, &slen))
		return h5_short(f, &c, "attribute message");
	if (ver < 1 || ver > 3)
		return tfs_diag_at(f->d, -EBADMSG, at,
				   "attribute message: version %u (1 to 3)",
				   ver);
	if (ver >= 2 && (flags & 2))
		return tfs_diag_at(f->d, -ENOTSUP, at + 1,
				   "attribute message: a shared dataspace is "
				   "not supported");
	if (ver == 3 && tfs_cursor_skip(&c, 1))
		return h5_short(f, &c, "attribute message");
	pad = ver == 1;
	if (nlen == 0 || tfs_cursor_need(&c, pad8(nlen, pad)) ||
	    c.p[c.pos + nlen - 1] != 0)
		return tfs_diag_at(f->d, -EBADMSG, tfs_cursor_offset(&c),
				   "attribute message: the %u-byte name is "
				   "not NUL-terminated inside the message",
				   nlen);
	a.name = (const char *)(c.p + c.pos);
	a.name_len = strlen(a.name);
	tfs_cursor_skip(&c, pad8(nlen, pad));
	if (tfs_cursor_bytes(&c, pad8(tlen, pad), &b))
		return h5_short(f, &c, "attribute datatype");
	tfs_cursor_init(&sub, b, tlen, tfs_cursor_offset(&c) - pad8(tlen, pad));
	/* flag bit 0: a shared (committed) datatype */
	ret = ver >= 2 && (flags & 1) ? h5_type_shared(f, &sub, &a.type)
				      : h5_type_parse(f, &sub, &a.type);
	if (ret)
		return ret;
	if (tfs_cursor_bytes(&c, pad8(slen, pad), &b)) {
		ret = h5_short(f, &c, "attribute dataspace");
		goto out;
	}
	tfs_cursor_init(&sub, b, slen, tfs_cursor_offset(&c) - pad8(slen, pad));
	ret = h5_space_parse(f, &sub, &a.space);
	if (ret)
		goto out;
	if (!tfs_mul_u64(a.space.nelem, a.type->size, &a.data_len) ||
	    tfs_cursor_need(&c, a.data_len)) {
		ret = tfs_diag_at(f->d, -EBADMSG, tfs_cursor_offset(&c),
				  "attribute '%.60s': %llu elements of %u "
				  "bytes run past the message",
				  a.name, (unsigned long long)a.space.nelem,
				  a.type->size);
		goto out;
	}
	a.data = c.p + c.pos;
	ret = z->fn(z->arg, &a);
out:
	h5_type_free(a.type);
	return ret;
}

static int at_obj(void *arg, const uint8_t *p, uint64_t len, uint64_t at)
{
	return at_msg(arg, p, len, at);
}

int h5_attrs(struct h5_file *f, const struct h5_ohdr *oh, h5_attr_fn fn,
	     void *arg)
{
	struct at_ctx z = {.f = f, .fn = fn, .arg = arg};
	bool dense = false;
	size_t i;
	int ret = 0;

	for (i = 0; !ret && i < oh->n; i++) {
		const struct h5_msg *m = &oh->m[i];

		if (m->type == 0x0c)
			ret = at_msg(&z, m->p, m->size, m->at);
		else if (m->type == 0x15)
			ret = h5_dense_walk(f, m, "attribute info message", 2,
					    8, 0, at_obj, &z, &dense);
	}
	return ret;
}
