// SPDX-License-Identifier: MIT
/*
 * Object headers v1 (no signature) and v2 (OHDR, checksummed), with their
 * continuation blocks (specs/hdf5.md section 5).  Every block is read
 * once: a block that overlaps one already read (or the first) is refused,
 * so a continuation cannot loop; at most H5_MAX_MSGS messages.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "parse/hdf5/h5.h"
#include "core/checked.h"
#include "core/diag.h"

#define H5_MSG_CONT 0x10
#define H5_MSG_KNOWN_MAX 0x18

struct oh_block {
	uint64_t start, end; /* absolute in f->p: the messages */
	uint64_t sig;	     /* the block's first byte (OHDR / OCHK) */
};

struct oh_ctx {
	struct h5_file *f;
	struct h5_ohdr *oh;
	struct oh_block *blk;
	size_t nblk, cap;
	unsigned crt; /* creation order bytes per v2 message */
};

void h5_msg_cursor(const struct h5_msg *m, struct tfs_cursor *c)
{
	tfs_cursor_init(c, m->p, m->size, m->at);
}

const struct h5_msg *h5_ohdr_find(const struct h5_ohdr *oh, uint16_t type)
{
	size_t i;

	for (i = 0; i < oh->n; i++)
		if (oh->m[i].type == type)
			return &oh->m[i];
	return NULL;
}

void h5_ohdr_free(struct h5_ohdr *oh)
{
	free(oh->m);
	memset(oh, 0, sizeof(*oh));
}

/* add block [start, end) (offsets in f->p), refusing an overlap */
static int oh_add_block(struct oh_ctx *z, uint64_t sig, uint64_t start,
			uint64_t end, uint64_t at)
{
	struct h5_file *f = z->f;
	size_t i;

	for (i = 0; i < z->nblk; i++)
		if (sig < z->blk[i].end && z->blk[i].sig < end)
			return tfs_diag_at(f->d, -EBADMSG, at,
					   "object header %llu: continuation "
					   "block at %llu overlaps a block "
					   "already read (a loop)",
					   (unsigned long long)z->oh->addr,
					   (unsigned long long)(sig - f->base));
	if (z->nblk == H5_MAX_BLOCKS)
		return tfs_diag_at(f->d, -E2BIG, at,
				   "object header %llu: more than %u blocks",
				   (unsigned long long)z->oh->addr,
				   H5_MAX_BLOCKS);
	if (z->nblk == z->cap) {
		size_t cap = z->cap ? z->cap * 2 : 8;
		struct oh_block *nb = reallocarray(z->blk, cap, sizeof(*nb));

		if (!nb)
			return tfs_diag_oom(f->d);
		z->blk = nb;
		z->cap = cap;
	}
	z->blk[z->nblk].sig = sig;
	z->blk[z->nblk].start = start;
	z->blk[z->nblk].end = end;
	z->nblk++;
	return 0;
}

static int oh_push(struct oh_ctx *z, const struct h5_msg *m)
{
	struct h5_ohdr *oh = z->oh;

	if (oh->n == H5_MAX_MSGS)
		return tfs_diag_at(z->f->d, -E2BIG, m->at,
				   "object header %llu: more than %u messages",
				   (unsigned long long)oh->addr, H5_MAX_MSGS);
	if (oh->n == oh->cap) {
		size_t cap = oh->cap ? oh->cap * 2 : 16;
		struct h5_msg *nm = reallocarray(oh->m, cap, sizeof(*nm));

		if (!nm)
			return tfs_diag_oom(z->f->d);
		oh->m = nm;
		oh->cap = cap;
	}
	oh->m[oh->n++] = *m;
	return 0;
}

/* a continuation message: queue its block */
static int oh_cont(struct oh_ctx *z, const struct h5_msg *m)
{
	struct h5_file *f = z->f;
	struct tfs_cursor c, b;
	uint64_t addr, len, start;
	int ret;

	h5_msg_cursor(m, &c);
	if (h5_addr(f, &c, &addr) || h5_len(f, &c, &len))
		return h5_short(f, &c, "continuation message");
	ret = h5_span(f, addr, len, "continuation block", m->at, &b);
	if (ret)
		return ret;
	start = b.base;
	if (z->oh->version == 2) {
		if (len < 8 || !tfs_cursor_match(&b, "OCHK", 4))
			return tfs_diag_at(f->d, -EBADMSG, b.base,
					   "continuation block: no OCHK "
					   "signature");
		ret = h5_checksum(f, start, len - 4, "continuation block");
		if (ret)
			return ret;
		return oh_add_block(z, start, start + 4, start + len - 4,
				    m->at);
	}
	return oh_add_block(z, start, start, start + len, m->at);
}

/* the messages of one block */
static int oh_block(struct oh_ctx *z, const struct oh_block *bl)
{
	struct h5_file *f = z->f;
	struct tfs_cursor c;
	unsigned hdr = z->oh->version == 1 ? 8 : 4 + z->crt;
	int ret;

	tfs_cursor_init(&c, f->p + bl->start, bl->end - bl->start, bl->start);
	while (tfs_cursor_remaining(&c) >= hdr) {
		struct h5_msg m = {0};
		uint64_t t = 0, sz = 0, fl = 0;

		if (z->oh->version == 1) {
			tfs_cursor_le(&c, 2, &t);
			tfs_cursor_le(&c, 2, &sz);
			tfs_cursor_le(&c, 1, &fl);
			tfs_cursor_skip(&c, 3);
		} else {
			tfs_cursor_le(&c, 1, &t);
			tfs_cursor_le(&c, 2, &sz);
			tfs_cursor_le(&c, 1, &fl);
			tfs_cursor_skip(&c, z->crt);
		}
		m.type = (uint16_t)t;
		m.flags = (uint8_t)fl;
		m.size = (uint32_t)sz;
		m.at = tfs_cursor_offset(&c);
		if (tfs_cursor_need(&c, sz))
			return tfs_diag_at(
				f->d, -EBADMSG, m.at - hdr,
				"object header %llu: message type "
				"0x%02x of %llu bytes runs past its "
				"block (%llu bytes left)",
				(unsigned long long)z->oh->addr, m.type,
				(unsigned long long)sz,
				(unsigned long long)tfs_cursor_remaining(&c));
		m.p = c.p + c.pos;
		tfs_cursor_skip(&c, sz);
		if (m.type > H5_MSG_KNOWN_MAX && (m.flags & 0x80))
			return tfs_diag_at(f->d, -ENOTSUP, m.at - hdr,
					   "object header %llu: unknown "
					   "message type 0x%04x marked "
					   "\"fail if unknown\"",
					   (unsigned long long)z->oh->addr,
					   m.type);
		if (m.type == H5_MSG_CONT) {
			ret = oh_cont(z, &m);
			if (ret)
				return ret;
			continue;
		}
		ret = oh_push(z, &m);
		if (ret)
			return ret;
	}
	return 0;
}

static int oh_v1(struct oh_ctx *z, struct tfs_cursor *c, uint64_t start)
{
	struct h5_file *f = z->f;
	uint64_t size;
	int ret;

	if (tfs_cursor_skip(c, 8) || tfs_cursor_le(c, 4, &size) ||
	    tfs_cursor_skip(c, 4))
		return h5_short(f, c, "object header");
	if (!tfs_range_ok(start + 16, size, f->size))
		return tfs_diag_at(f->d, -EBADMSG, start + 8,
				   "object header %llu: %llu bytes of "
				   "messages run past the end of the file",
				   (unsigned long long)z->oh->addr,
				   (unsigned long long)size);
	ret = oh_add_block(z, start, start + 16, start + 16 + size, start);
	return ret;
}

static int oh_v2(struct oh_ctx *z, struct tfs_cursor *c, uint64_t start)
{
	struct h5_file *f = z->f;
	uint8_t ver, flags;
	uint64_t size, hdr;
	int ret;

	tfs_cursor_skip(c, 4);
	if (tfs_cursor_u8(c, &ver) || tfs_cursor_u8(c, &flags))
		return h5_short(f, c, "object header");
	if (ver != 2)
		return tfs_diag_at(f->d, -EBADMSG, tfs_cursor_offset(c) - 2,
				   "object header %llu: OHDR version %u "
				   "(2 is known)",
				   (unsigned long long)z->oh->addr, ver);
	if (flags & 0xc0)
		return tfs_diag_at(f->d, -EBADMSG, tfs_cursor_offset(c) - 1,
				   "object header %llu: reserved flag bits "
				   "set (0x%02x)",
				   (unsigned long long)z->oh->addr, flags);
	z->crt = flags & 4 ? 2 : 0;
	if (((flags & 0x20) && tfs_cursor_skip(c, 16)) ||
	    ((flags & 0x10) && tfs_cursor_skip(c, 4)) ||
	    tfs_cursor_le(c, 1u << (flags & 3), &size))
		return h5_short(f, c, "object header");
	hdr = c->pos;
	if (!tfs_range_ok(start + hdr, size, f->size) ||
	    f->size - start - hdr - size < 4)
		return tfs_diag_at(f->d, -EBADMSG,
				   tfs_cursor_offset(c) - (1u << (flags & 3)),
				   "object header %llu: chunk 0 of %llu bytes "
				   "runs past the end of the file",
				   (unsigned long long)z->oh->addr,
				   (unsigned long long)size);
	ret = h5_checksum(f, start, hdr + size, "object header");
	if (ret)
		return ret;
	return oh_add_block(z, start, start + hdr, start + hdr + size, start);
}

int h5_ohdr_read(struct h5_file *f, uint64_t addr, struct h5_ohdr *oh)
{
	struct oh_ctx z = {.f = f, .oh = oh};
	struct tfs_cursor c;
	uint64_t start;
	size_t i;
	int ret;

	memset(oh, 0, sizeof(*oh));
	oh->addr = addr;
	ret = h5_span(f, addr, 16, "object header", h5_abs(f, addr), &c);
	if (ret)
		return ret;
	/* h5_span checked base + addr + 16 <= size */
	start = f->base + addr;
	c.len = f->size - start;
	if (tfs_cursor_match(&c, "OHDR", 4)) {
		oh->version = 2;
		ret = oh_v2(&z, &c, start);
	} else if (c.p[0] == 1) {
		oh->version = 1;
		ret = oh_v1(&z, &c, start);
	} else {
		ret = tfs_diag_at(f->d, -EBADMSG, c.base,
				  "object header %llu: neither version 1 nor "
				  "an OHDR signature (first byte 0x%02x)",
				  (unsigned long long)addr, c.p[0]);
	}
	/* blocks are appended while they are read: FIFO */
	for (i = 0; !ret && i < z.nblk; i++) {
		struct oh_block bl = z.blk[i];

		ret = oh_block(&z, &bl);
	}
	free(z.blk);
	if (ret)
		h5_ohdr_free(oh);
	return ret;
}
