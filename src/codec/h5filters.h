/* SPDX-License-Identifier: MIT */
/*
 * HDF5's own chunk filters as pure functions over memory (specs/hdf5.md
 * section 9): LZF (h5py's filter 32000: a headerless LZF stream), the
 * byte shuffle (filter 2) and fletcher32 (filter 3).  No core includes: the
 * chunk pipeline calls them, the unit suite test_h5filters checks them.
 */
#ifndef TENSORFS_H5FILTERS_H
#define TENSORFS_H5FILTERS_H

#include <stddef.h>
#include <stdint.h>

/*
 * Decode the LZF stream src[0, n) into dst[0, cap).  0 with *out_len the
 * bytes written, -EBADMSG for a broken stream (a literal or back reference
 * past the input, a reference before the output's start) and -E2BIG when
 * the output would exceed @cap.  *at: the input offset of the fault.
 */
int tfs_lzf_decode(const uint8_t *src, size_t n, uint8_t *dst, size_t cap,
		   size_t *out_len, size_t *at);

/*
 * Undo the shuffle of @n bytes of @elem_size-byte elements: the first
 * (n / elem_size) * elem_size bytes are byte planes (all byte 0s, then all
 * byte 1s...), the rest copied as is.  @dst and @src must not overlap.
 */
void tfs_unshuffle(const uint8_t *src, size_t n, uint32_t elem_size,
		   uint8_t *dst);

/* HDF5's fletcher32 of @n bytes (16-bit words big-endian, sums mod 65535):
 * the value stored little-endian after a chunk's data */
uint32_t tfs_h5_fletcher32(const uint8_t *p, size_t n);

/* one filter of a dataset's pipeline, in the order they were applied */
struct tfs_h5_filter {
	uint16_t id;	    /* 1 deflate, 2 shuffle, 3 fletcher32, 32000 lzf */
	uint32_t elem_size; /* shuffle: bytes per element */
};

/*
 * Undo @n filters (in reverse; bit i of @mask set: filter i was skipped)
 * on the stored chunk in[0, in_len): exactly @out_len bytes into @out.
 * 0, or -EBADMSG (a broken stream, a fletcher32 mismatch, a size other
 * than @out_len), -ENOTSUP (a filter not listed above), -ENOMEM; *why
 * (static text) says which.  Intermediate buffers are bounded by
 * max(in_len, out_len).
 */
int tfs_h5_unfilter(const struct tfs_h5_filter *f, unsigned n, uint32_t mask,
		    const uint8_t *in, size_t in_len, uint8_t *out,
		    size_t out_len, const char **why);

#endif
