// SPDX-License-Identifier: MIT
/* The dataspace message 0x01, versions 1 and 2 (specs/hdf5.md section 6). */
#include <errno.h>
#include <string.h>

#include "parse/hdf5/h5.h"
#include "core/checked.h"
#include "core/diag.h"

int h5_space_parse(struct h5_file *f, struct tfs_cursor *c, struct h5_space *s)
{
	uint64_t at = tfs_cursor_offset(c);
	uint8_t ver, rank, flags, type = 1;
	unsigned i;

	memset(s, 0, sizeof(*s));
	if (tfs_cursor_u8(c, &ver) || tfs_cursor_u8(c, &rank) ||
	    tfs_cursor_u8(c, &flags))
		return h5_short(f, c, "dataspace");
	if (ver == 1) {
		if (tfs_cursor_skip(c, 5))
			return h5_short(f, c, "dataspace");
		type = rank ? H5_SPACE_SIMPLE : H5_SPACE_SCALAR;
	} else if (ver == 2) {
		if (tfs_cursor_u8(c, &type))
			return h5_short(f, c, "dataspace");
		if (type > 2)
			return tfs_diag_at(f->d, -EBADMSG, at + 3,
					   "dataspace: type %u (0 scalar, 1 "
					   "simple, 2 null)",
					   type);
	} else {
		return tfs_diag_at(f->d, -EBADMSG, at,
				   "dataspace: version %u (1 or 2)", ver);
	}
	if (rank > H5_MAX_RANK)
		return tfs_diag_at(f->d, -EBADMSG, at + 1,
				   "dataspace: rank %u above %u", rank,
				   H5_MAX_RANK);
	if (type != H5_SPACE_SIMPLE && rank)
		return tfs_diag_at(f->d, -EBADMSG, at + 1,
				   "dataspace: rank %u for a %s dataspace",
				   rank, type ? "null" : "scalar");
	s->kind = type;
	s->rank = rank;
	for (i = 0; i < rank; i++)
		if (h5_len(f, c, &s->dims[i]))
			return h5_short(f, c, "dataspace");
	if (flags & 1) {
		s->has_max = true;
		for (i = 0; i < rank; i++) {
			uint64_t m, mat = tfs_cursor_offset(c);

			if (tfs_cursor_le(c, f->sl, &m))
				return h5_short(f, c, "dataspace");
			if (f->sl < 8 && m == (1ull << (8 * f->sl)) - 1)
				m = H5_UNDEF;
			s->maxdims[i] = m;
			if (m != H5_UNDEF && m < s->dims[i])
				return tfs_diag_at(
					f->d, -EBADMSG, mat,
					"dataspace: dim %u is %llu, "
					"above its maximum %llu",
					i, (unsigned long long)s->dims[i],
					(unsigned long long)m);
		}
	} else {
		memcpy(s->maxdims, s->dims, sizeof(s->dims));
	}
	if (flags & 2 && tfs_cursor_skip(c, (uint64_t)rank * f->sl))
		return h5_short(f, c, "dataspace");
	if (type == H5_SPACE_NULL) {
		s->nelem = 0;
		return 0;
	}
	if (!tfs_shape_product(s->dims, rank, &s->nelem))
		return tfs_diag_at(f->d, -EBADMSG, at,
				   "dataspace: the element count of the %u "
				   "dims overflows 64 bits",
				   rank);
	return 0;
}
