// SPDX-License-Identifier: MIT
/*
 * Bob Jenkins' lookup3 hashlittle (public domain), byte by byte: the
 * checksum of every HDF5 v2 structure (specs/hdf5.md section 4).
 */
#include <errno.h>

#include "parse/hdf5/h5.h"
#include "core/checked.h"
#include "core/diag.h"

#define ROT(x, k) (((x) << (k)) | ((x) >> (32 - (k))))

uint32_t h5_lookup3(const void *data, size_t n, uint32_t init)
{
	const uint8_t *k = data;
	uint32_t a, b, c;

	a = b = c = 0xdeadbeefu + (uint32_t)n + init;
	/* clang-format off */
	while (n > 12) {
		a += (uint32_t)tfs_load_le(k, 4);
		b += (uint32_t)tfs_load_le(k + 4, 4);
		c += (uint32_t)tfs_load_le(k + 8, 4);
		a -= c; a ^= ROT(c, 4); c += b;
		b -= a; b ^= ROT(a, 6); a += c;
		c -= b; c ^= ROT(b, 8); b += a;
		a -= c; a ^= ROT(c, 16); c += b;
		b -= a; b ^= ROT(a, 19); a += c;
		c -= b; c ^= ROT(b, 4); b += a;
		n -= 12;
		k += 12;
	}
	if (n == 0)
		return c;
	{
		uint8_t t[12] = {0};
		size_t i;

		for (i = 0; i < n; i++)
			t[i] = k[i];
		a += (uint32_t)tfs_load_le(t, 4);
		b += (uint32_t)tfs_load_le(t + 4, 4);
		c += (uint32_t)tfs_load_le(t + 8, 4);
	}
	c ^= b; c -= ROT(b, 14);
	a ^= c; a -= ROT(c, 11);
	b ^= a; b -= ROT(a, 25);
	c ^= b; c -= ROT(b, 16);
	a ^= c; a -= ROT(c, 4);
	b ^= a; b -= ROT(a, 14);
	c ^= b; c -= ROT(b, 24);
	/* clang-format on */
	return c;
}

int h5_checksum(struct h5_file *f, uint64_t at, uint64_t n, const char *what)
{
	uint32_t want, got;
	uint64_t end;

	if (!tfs_add_u64(at, n, &end) || !tfs_range_ok(at, n + 4, f->size) ||
	    n + 4 < n)
		return tfs_diag_at(f->d, -EBADMSG, at,
				   "%s: %llu bytes and the checksum run past "
				   "the end of the file",
				   what, (unsigned long long)n);
	want = (uint32_t)tfs_load_le(f->p + end, 4);
	got = h5_lookup3(f->p + at, (size_t)n, 0);
	if (want != got)
		return tfs_diag_at(f->d, -EBADMSG, end,
				   "%s: checksum 0x%08x, but the bytes give "
				   "0x%08x (lookup3)",
				   what, want, got);
	return 0;
}
