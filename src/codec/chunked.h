/* SPDX-License-Identifier: MIT */
/*
 * The chunked codec (TFS_ENCODING_CHUNKED, src/codec/codec.h): an
 * N-dimensional grid of chunks, each stored by itself through a filter
 * pipeline (HDF5 chunked datasets), served as the row-major array.  The
 * functions follow the stream contract of src/codec/zstd.h.  The output is
 * made one slab at a time: every chunk of one row of the grid (the same
 * index along the first dimension) is decoded and scattered, edge chunks
 * cropped, unwritten chunks as the fill value, into a buffer that is a
 * contiguous run of the output.
 */
#ifndef TFS_CODEC_CHUNKED_H
#define TFS_CODEC_CHUNKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tfs_codec_params;

int tfs_chunked_new(void **st, const void *src, size_t len, bool stable,
		    const struct tfs_codec_params *p);
void tfs_chunked_free(void *st);
void tfs_chunked_reset(void *st);
int tfs_chunked_decode(void *st, void *dst, size_t cap, size_t *pos,
		       size_t want);
int tfs_chunked_expect_end(void *st, void *dst, size_t cap);
bool tfs_chunked_finished(const void *st);
size_t tfs_chunked_consumed(const void *st);
const char *tfs_chunked_message(const void *st);

/*
 * The filters, pure functions over buffers (each bounded by @cap).
 * Unshuffle @len bytes of @in (elements of @size bytes stored byte-plane
 * by byte-plane) into @out.
 */
void tfs_unshuffle(const uint8_t *in, uint8_t *out, size_t len, size_t size);
/* HDF5's Fletcher-32 of @len bytes (16-bit big-endian words) */
uint32_t tfs_fletcher32(const uint8_t *p, size_t len);
/* LZF without a header: the decoded length, or -EBADMSG (bad or > @cap) */
long tfs_lzf_decode(const uint8_t *in, size_t len, uint8_t *out, size_t cap);
/* a zlib stream (RFC 1950) into at most @cap bytes: its length, -EBADMSG */
long tfs_zlib_decode(const uint8_t *in, size_t len, uint8_t *out, size_t cap);

#endif
