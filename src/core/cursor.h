/* SPDX-License-Identifier: MIT */
/*
 * A bounds-checked little-endian reader over a byte range.
 *
 * A cursor never reads outside [p, p + len).  Every read either succeeds and
 * advances, or returns -EBADMSG and leaves the position where it was, so the
 * caller can report tfs_cursor_offset() as the place of the failure.  Values
 * are assembled byte by byte: no unaligned pointer casts, no host byte order.
 */
#ifndef TENSORFS_CURSOR_H
#define TENSORFS_CURSOR_H

#include <errno.h>
#include <stdint.h>
#include <string.h>

struct tfs_cursor {
	const uint8_t *p; /* first byte of the range */
	uint64_t len;	  /* bytes in the range */
	uint64_t pos;	  /* next byte to read, 0 <= pos <= len */
	uint64_t base;	  /* absolute offset of p[0] in the container */
};

static inline void tfs_cursor_init(struct tfs_cursor *c, const void *p,
				   uint64_t len, uint64_t base)
{
	c->p = p;
	c->len = len;
	c->pos = 0;
	c->base = base;
}

/* absolute container offset of the next byte */
static inline uint64_t tfs_cursor_offset(const struct tfs_cursor *c)
{
	return c->base + c->pos;
}

static inline uint64_t tfs_cursor_remaining(const struct tfs_cursor *c)
{
	return c->len - c->pos;
}

static inline int tfs_cursor_need(const struct tfs_cursor *c, uint64_t n)
{
	return n <= c->len - c->pos ? 0 : -EBADMSG;
}

static inline int tfs_cursor_skip(struct tfs_cursor *c, uint64_t n)
{
	if (tfs_cursor_need(c, n))
		return -EBADMSG;
	c->pos += n;
	return 0;
}

/* seek to a position relative to the start of the range */
static inline int tfs_cursor_seek(struct tfs_cursor *c, uint64_t pos)
{
	if (pos > c->len)
		return -EBADMSG;
	c->pos = pos;
	return 0;
}

/* borrow @n bytes: *out points into the range, valid as long as it is */
static inline int tfs_cursor_bytes(struct tfs_cursor *c, uint64_t n,
				   const uint8_t **out)
{
	if (tfs_cursor_need(c, n))
		return -EBADMSG;
	*out = c->p + c->pos;
	c->pos += n;
	return 0;
}

static inline uint64_t tfs_load_le(const uint8_t *b, unsigned n)
{
	uint64_t v = 0;

	while (n--)
		v = (v << 8) | b[n];
	return v;
}

static inline uint64_t tfs_load_be(const uint8_t *b, unsigned n)
{
	uint64_t v = 0;
	unsigned i;

	for (i = 0; i < n; i++)
		v = (v << 8) | b[i];
	return v;
}

static inline int tfs_cursor_le(struct tfs_cursor *c, unsigned n, uint64_t *out)
{
	if (tfs_cursor_need(c, n))
		return -EBADMSG;
	*out = tfs_load_le(c->p + c->pos, n);
	c->pos += n;
	return 0;
}

static inline int tfs_cursor_be(struct tfs_cursor *c, unsigned n, uint64_t *out)
{
	if (tfs_cursor_need(c, n))
		return -EBADMSG;
	*out = tfs_load_be(c->p + c->pos, n);
	c->pos += n;
	return 0;
}

static inline int tfs_cursor_u8(struct tfs_cursor *c, uint8_t *out)
{
	uint64_t v;
	int r = tfs_cursor_le(c, 1, &v);

	if (!r)
		*out = (uint8_t)v;
	return r;
}

static inline int tfs_cursor_u16le(struct tfs_cursor *c, uint16_t *out)
{
	uint64_t v;
	int r = tfs_cursor_le(c, 2, &v);

	if (!r)
		*out = (uint16_t)v;
	return r;
}

static inline int tfs_cursor_u32le(struct tfs_cursor *c, uint32_t *out)
{
	uint64_t v;
	int r = tfs_cursor_le(c, 4, &v);

	if (!r)
		*out = (uint32_t)v;
	return r;
}

static inline int tfs_cursor_u64le(struct tfs_cursor *c, uint64_t *out)
{
	return tfs_cursor_le(c, 8, out);
}

static inline int tfs_cursor_i32le(struct tfs_cursor *c, int32_t *out)
{
	uint32_t v;
	int r = tfs_cursor_u32le(c, &v);

	if (!r)
		*out = (int32_t)v;
	return r;
}

static inline int tfs_cursor_i64le(struct tfs_cursor *c, int64_t *out)
{
	uint64_t v;
	int r = tfs_cursor_u64le(c, &v);

	if (!r)
		*out = (int64_t)v;
	return r;
}

/* true when the next @n bytes equal @magic (does not advance) */
static inline int tfs_cursor_match(const struct tfs_cursor *c,
				   const void *magic, uint64_t n)
{
	return tfs_cursor_need(c, n) == 0 &&
	       memcmp(c->p + c->pos, magic, n) == 0;
}

/*
 * A base-128 varint (protobuf, LEB128): 7 bits a byte, low group first, bit
 * 7 set while more follow.  At most 10 bytes (64 bits), the 10th only 0 or
 * 1.  Returns 0, -EBADMSG when the range ends inside it, -EOVERFLOW when it
 * is longer than 10 bytes or above 2^64-1; the position is left where it
 * was on failure.
 */
static inline int tfs_cursor_varint(struct tfs_cursor *c, uint64_t *out)
{
	uint64_t v = 0, pos = c->pos;
	unsigned i;
	uint8_t b;

	for (i = 0; i < 10; i++) {
		if (pos >= c->len)
			return -EBADMSG;
		b = c->p[pos++];
		if (i == 9 && b > 1)
			return -EOVERFLOW;
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			c->pos = pos;
			*out = v;
			return 0;
		}
	}
	return -EOVERFLOW;
}

/* the bytes of @v as a varint (1 to 10) */
static inline unsigned tfs_varint_len(uint64_t v)
{
	unsigned n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

#endif
