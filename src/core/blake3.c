// SPDX-License-Identifier: MIT
/*
 * BLAKE3 hash mode, written from the BLAKE3 paper and specification
 * (BLAKE3-team/BLAKE3-specs).  Portable and one-shot: no SIMD, no threads,
 * no incremental interface; tensorfs hashes short tensor names with it.
 *
 * The input is cut into 1024-byte chunks; each chunk is compressed block by
 * block (64 bytes) into a chaining value, and the chaining values are merged
 * pairwise into a binary tree whose shape depends only on the chunk count.
 * Completed subtrees are kept on a stack: after chunk number n (1-based)
 * one merge happens per trailing zero bit of n.  The last chunk's final
 * block, and then every remaining parent, is held back as an "output" so
 * the very last compression can carry the ROOT flag.
 */
#include <string.h>

#include "core/blake3.h"

#define B3_BLOCK_LEN 64
#define B3_CHUNK_LEN 1024
/* 2^54 chunks of 2^10 bytes cover any size_t length */
#define B3_MAX_DEPTH 54

enum {
	B3_CHUNK_START = 1u << 0,
	B3_CHUNK_END = 1u << 1,
	B3_PARENT = 1u << 2,
	B3_ROOT = 1u << 3,
};

static const uint32_t b3_iv[8] = {
	0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A,
	0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19,
};

static const uint8_t b3_permutation[16] = {
	2, 6, 3, 10, 7, 0, 4, 13, 1, 11, 12, 5, 9, 14, 15, 8,
};

/* a compression held back until we know whether it is the root */
struct b3_output {
	uint32_t cv[8];
	uint8_t block[B3_BLOCK_LEN];
	uint64_t counter;
	uint32_t block_len;
	uint32_t flags;
};

static uint32_t rotr32(uint32_t w, unsigned c)
{
	return (w >> c) | (w << (32 - c));
}

static uint32_t load32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static void store32(uint8_t *p, uint32_t w)
{
	p[0] = (uint8_t)w;
	p[1] = (uint8_t)(w >> 8);
	p[2] = (uint8_t)(w >> 16);
	p[3] = (uint8_t)(w >> 24);
}

static void b3_g(uint32_t *s, int a, int b, int c, int d, uint32_t mx,
		 uint32_t my)
{
	s[a] = s[a] + s[b] + mx;
	s[d] = rotr32(s[d] ^ s[a], 16);
	s[c] = s[c] + s[d];
	s[b] = rotr32(s[b] ^ s[c], 12);
	s[a] = s[a] + s[b] + my;
	s[d] = rotr32(s[d] ^ s[a], 8);
	s[c] = s[c] + s[d];
	s[b] = rotr32(s[b] ^ s[c], 7);
}

static void b3_round(uint32_t *s, const uint32_t *m)
{
	/* columns */
	b3_g(s, 0, 4, 8, 12, m[0], m[1]);
	b3_g(s, 1, 5, 9, 13, m[2], m[3]);
	b3_g(s, 2, 6, 10, 14, m[4], m[5]);
	b3_g(s, 3, 7, 11, 15, m[6], m[7]);
	/* diagonals */
	b3_g(s, 0, 5, 10, 15, m[8], m[9]);
	b3_g(s, 1, 6, 11, 12, m[10], m[11]);
	b3_g(s, 2, 7, 8, 13, m[12], m[13]);
	b3_g(s, 3, 4, 9, 14, m[14], m[15]);
}

/* the compression function; the first 8 words of @out are the new cv */
static void b3_compress(const uint32_t cv[8], const uint8_t block[64],
			uint64_t counter, uint32_t block_len, uint32_t flags,
			uint32_t out[16])
{
	uint32_t m[16], t[16];
	int i, r;

	for (i = 0; i < 16; i++)
		m[i] = load32(block + 4 * i);
	for (i = 0; i < 8; i++)
		out[i] = cv[i];
	for (i = 0; i < 4; i++)
		out[8 + i] = b3_iv[i];
	out[12] = (uint32_t)counter;
	out[13] = (uint32_t)(counter >> 32);
	out[14] = block_len;
	out[15] = flags;
	for (r = 0; r < 7; r++) {
		b3_round(out, m);
		if (r == 6)
			break;
		for (i = 0; i < 16; i++)
			t[i] = m[b3_permutation[i]];
		memcpy(m, t, sizeof(m));
	}
	for (i = 0; i < 8; i++) {
		out[i] ^= out[i + 8];
		out[i + 8] ^= cv[i];
	}
}

static void b3_output_cv(const struct b3_output *o, uint32_t cv[8])
{
	uint32_t w[16];

	b3_compress(o->cv, o->block, o->counter, o->block_len, o->flags, w);
	memcpy(cv, w, 8 * sizeof(uint32_t));
}

/*
 * Compress all blocks of chunk number @counter (@len bytes, 0..1024) but
 * the last, which is left in @o.
 */
static void b3_chunk(const uint8_t *p, size_t len, uint64_t counter,
		     struct b3_output *o)
{
	size_t nblocks = len ? (len + B3_BLOCK_LEN - 1) / B3_BLOCK_LEN : 1;
	uint32_t w[16], start = B3_CHUNK_START;
	size_t i;

	memcpy(o->cv, b3_iv, sizeof(o->cv));
	for (i = 0; i + 1 < nblocks; i++) {
		b3_compress(o->cv, p + i * B3_BLOCK_LEN, counter, B3_BLOCK_LEN,
			    start, w);
		memcpy(o->cv, w, sizeof(o->cv));
		start = 0;
	}
	memset(o->block, 0, sizeof(o->block));
	o->block_len = (uint32_t)(len - i * B3_BLOCK_LEN);
	if (o->block_len)
		memcpy(o->block, p + i * B3_BLOCK_LEN, o->block_len);
	o->counter = counter;
	o->flags = start | B3_CHUNK_END;
}

static void b3_parent(const uint32_t left[8], const uint32_t right[8],
		      struct b3_output *o)
{
	int i;

	memcpy(o->cv, b3_iv, sizeof(o->cv));
	for (i = 0; i < 8; i++) {
		store32(o->block + 4 * i, left[i]);
		store32(o->block + 32 + 4 * i, right[i]);
	}
	o->counter = 0;
	o->block_len = B3_BLOCK_LEN;
	o->flags = B3_PARENT;
}

void tfs_blake3(const void *data, size_t len, uint8_t out[TFS_BLAKE3_OUT_LEN])
{
	uint32_t stack[B3_MAX_DEPTH][8], cv[8], w[16];
	const uint8_t *p = data;
	struct b3_output o;
	uint64_t chunk = 0, done;
	size_t depth = 0;
	int i;

	/* every chunk but the last becomes a chaining value on the stack */
	while (len > B3_CHUNK_LEN) {
		b3_chunk(p, B3_CHUNK_LEN, chunk, &o);
		b3_output_cv(&o, cv);
		p += B3_CHUNK_LEN;
		len -= B3_CHUNK_LEN;
		chunk++;
		for (done = chunk; (done & 1) == 0; done >>= 1) {
			b3_parent(stack[--depth], cv, &o);
			b3_output_cv(&o, cv);
		}
		memcpy(stack[depth++], cv, sizeof(cv));
	}
	b3_chunk(p, len, chunk, &o);
	/* fold the remaining subtrees, right to left */
	while (depth > 0) {
		b3_output_cv(&o, cv);
		b3_parent(stack[--depth], cv, &o);
	}
	b3_compress(o.cv, o.block, o.counter, o.block_len, o.flags | B3_ROOT,
		    w);
	for (i = 0; i < 8; i++)
		store32(out + 4 * i, w[i]);
}
