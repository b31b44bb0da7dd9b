/* SPDX-License-Identifier: MIT */
/*
 * Byte strings of a container (names, keys) found twice: the sort and
 * compare that readers of formats with raw-byte names share.
 */
#ifndef TFS_FORMATS_SPANS_H
#define TFS_FORMATS_SPANS_H

#include <stddef.h>
#include <stdint.h>

struct tfs_span {
	const uint8_t *p; /* the bytes (in the mapping) */
	uint64_t len;
	uint64_t at; /* where they are in the file (unique per span) */
};

/*
 * Sort @v by bytes, then by offset, and return the first span whose bytes
 * equal the one before it (the later of the two in the file), or NULL;
 * *@first (may be NULL) gets the earlier.
 */
const struct tfs_span *tfs_span_twice(struct tfs_span *v, size_t n,
				      const struct tfs_span **first);

#endif
