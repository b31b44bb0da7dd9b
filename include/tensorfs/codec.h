/* SPDX-License-Identifier: MIT */
/*
 * Encodings of stored bytes, behind one interface (src/codec/codec.c).
 *
 * A tensor's stored bytes are either its bytes (TFS_ENCODING_RAW, served
 * straight from the mapping) or a compressed stream that the read path,
 * `tensorfs verify` and the CLI decode through a struct tfs_stream, whatever
 * the codec.  Every codec follows the rules of the zstd one (src/codec/
 * zstd.h): the expected decoded size comes from the container, and a
 * decode must produce exactly that many bytes; a stream can be decoded a
 * piece at a time into one stable buffer or into successive windows.  Adding
 * an encoding is one entry in the table of codec.c.
 */
#ifndef TENSORFS_CODEC_H
#define TENSORFS_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tensorfs/tree.h" /* enum tfs_encoding */

#define TFS_CODEC_MSG_MAX 160

/* "raw", "zstd", ...; NULL for an unknown value */
const char *tfs_encoding_name(enum tfs_encoding e);

/*
 * Count the decoded bytes of @src (a pass with a small scratch buffer).
 * -E2BIG past @limit, -EBADMSG when corrupt (@msg, TFS_CODEC_MSG_MAX bytes,
 * says why), -EINVAL for RAW.
 */
int tfs_codec_decoded_size(enum tfs_encoding e, const void *src, size_t src_len,
			   uint64_t limit, uint64_t *size, char *msg);

/* A resumable decoder over @src_len bytes at @src (borrowed). */
struct tfs_stream;

/* struct tfs_codec_params (what a codec needs besides the bytes): tree.h */

/*
 * @stable: every decode call passes the same dst/cap, holding the whole
 * output.  @params may be NULL.  -EINVAL for RAW and for params the codec
 * does not take, -ENOMEM.
 */
int tfs_stream_new(struct tfs_stream **out, enum tfs_encoding e,
		   const void *src, size_t src_len, bool stable,
		   const struct tfs_codec_params *params);
void tfs_stream_free(struct tfs_stream *s);
/* back to the first byte */
void tfs_stream_reset(struct tfs_stream *s);
/*
 * Decode into dst[*pos, cap) until *pos >= @want or the stream ends.  0, or
 * -EBADMSG (tfs_stream_message() says why).
 */
int tfs_stream_decode(struct tfs_stream *s, void *dst, size_t cap, size_t *pos,
		      size_t want);
/* all expected bytes are out: 0 when the stream ends here, else -EBADMSG */
int tfs_stream_expect_end(struct tfs_stream *s, void *dst, size_t cap);
bool tfs_stream_finished(const struct tfs_stream *s);
/* stored bytes consumed so far */
size_t tfs_stream_consumed(const struct tfs_stream *s);
const char *tfs_stream_message(const struct tfs_stream *s);

/*
 * TFS_ENCODING_GATHER: a strided view of the stored bytes, served as its
 * row-major copy (a transposed or sliced PyTorch tensor).  Element
 * (i0, i1, ...) of the output is the @itemsize bytes at
 * sum(i_k x stride_k) x @itemsize from the start of the stored bytes;
 * strides count elements and may be 0 (a broadcast).  The stored bytes
 * must hold the furthest element (checked when the stream is made).
 */
#define TFS_GATHER_MAX_DIMS 64
struct tfs_gather_params {
	uint32_t itemsize;
	uint32_t ndim;
	uint64_t shape[TFS_GATHER_MAX_DIMS];
	uint64_t stride[TFS_GATHER_MAX_DIMS];
};

/*
 * The stored bytes a gather needs: (the furthest element's index + 1) x
 * itemsize into *span (0 for an empty view), and the output bytes into
 * *size.  -EINVAL for a bad itemsize or ndim, -EOVERFLOW.
 */
int tfs_gather_extent(const struct tfs_gather_params *g, uint64_t *span,
		      uint64_t *size);

#endif
