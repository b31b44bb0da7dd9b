/* SPDX-License-Identifier: MIT */
/*
 * Overflow-checked 64-bit arithmetic.  Every size, offset and product that
 * comes from a container goes through these before it is used.
 */
#ifndef TENSORFS_CHECKED_H
#define TENSORFS_CHECKED_H

#include <stdbool.h>
#include <stdint.h>

/* true on success; false (and *out untouched) on overflow */
static inline bool tfs_add_u64(uint64_t a, uint64_t b, uint64_t *out)
{
	uint64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return false;
	*out = r;
	return true;
}

static inline bool tfs_mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
	uint64_t r;

	if (__builtin_mul_overflow(a, b, &r))
		return false;
	*out = r;
	return true;
}

/* true when [off, off + len) lies inside [0, size) without overflow */
static inline bool tfs_range_ok(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

/*
 * Product of @n dims into *out; false on overflow.  An empty shape (a
 * scalar) has one element.
 */
static inline bool tfs_shape_product(const uint64_t *dims, uint64_t n,
				     uint64_t *out)
{
	uint64_t p = 1;
	uint64_t i;

	for (i = 0; i < n; i++)
		if (!tfs_mul_u64(p, dims[i], &p))
			return false;
	*out = p;
	return true;
}

#endif
