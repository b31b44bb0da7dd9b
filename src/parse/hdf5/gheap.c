// SPDX-License-Identifier: MIT
/*
 * The global heap (GCOL; specs/hdf5.md section 12.1): the bytes of
 * variable-length strings and sequences.  A collection is searched for
 * the object index; every object stays inside its collection.
 */
#include <errno.h>

#include "parse/hdf5/h5.h"
#include "core/checked.h"
#include "core/diag.h"

int h5_gheap_get(struct h5_file *f, uint64_t coll, uint32_t index, uint64_t at,
		 const uint8_t **p, uint64_t *len)
{
	struct tfs_cursor c;
	uint64_t size;
	int ret;

	ret = h5_span(f, coll, 8 + f->sl, "global heap collection", at, &c);
	if (ret)
		return ret;
	if (!tfs_cursor_match(&c, "GCOL", 4) || c.p[4] != 1)
		return tfs_diag_at(f->d, -EBADMSG, c.base,
				   "global heap collection %llu: no GCOL "
				   "version 1 signature",
				   (unsigned long long)coll);
	tfs_cursor_skip(&c, 8);
	h5_len(f, &c, &size);
	ret = h5_span(f, coll, size, "global heap collection", at, &c);
	if (ret)
		return ret;
	tfs_cursor_skip(&c, 8 + f->sl);
	while (tfs_cursor_remaining(&c) >= 8 + f->sl) {
		uint64_t idx = 0, osize = 0, oat = tfs_cursor_offset(&c);

		tfs_cursor_le(&c, 2, &idx);
		tfs_cursor_skip(&c, 6);
		h5_len(f, &c, &osize);
		if (idx == 0)
			break;
		if (tfs_cursor_need(&c, osize))
			return tfs_diag_at(f->d, -EBADMSG, oat,
					   "global heap collection %llu: "
					   "object %llu of %llu bytes runs "
					   "past the collection",
					   (unsigned long long)coll,
					   (unsigned long long)idx,
					   (unsigned long long)osize);
		if (idx == index) {
			*p = c.p + c.pos;
			*len = osize;
			return 0;
		}
		if (tfs_cursor_skip(&c, (osize + 7) & ~7ull))
			break;
	}
	return tfs_diag_at(f->d, -EBADMSG, at,
			   "global heap collection %llu: no object %u",
			   (unsigned long long)coll, index);
}

int h5_vlen_get(struct h5_file *f, const uint8_t *e, uint64_t at, uint32_t unit,
		const uint8_t **p, uint64_t *len)
{
	uint64_t n = tfs_load_le(e, 4), coll, bytes, olen;
	uint32_t idx;
	int ret;

	coll = tfs_load_le(e + 4, f->so);
	if (f->so < 8 && coll == (1ull << (8 * f->so)) - 1)
		coll = H5_UNDEF;
	idx = (uint32_t)tfs_load_le(e + 4 + f->so, 4);
	*len = 0;
	*p = NULL;
	if (n == 0)
		return 0;
	bytes = n * (uint64_t)unit; /* n < 2^32, unit < 2^32 */
	ret = h5_gheap_get(f, coll, idx, at, p, &olen);
	if (ret)
		return ret;
	if (bytes > olen)
		return tfs_diag_at(f->d, -EBADMSG, at,
				   "variable-length element: %llu bytes, but "
				   "its global heap object holds %llu",
				   (unsigned long long)bytes,
				   (unsigned long long)olen);
	*len = bytes;
	return 0;
}
