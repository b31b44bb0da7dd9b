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

#include "core/abi.h"

#define TFS_CODEC_MSG_MAX 160

enum tfs_encoding {
	TFS_ENCODING_RAW,     /* the stored bytes are the file's bytes */
	TFS_ENCODING_ZSTD,    /* the stored bytes are zstd frame(s) */
	TFS_ENCODING_DEFLATE, /* a raw deflate stream (a zip member) */
	/*
	 * the file is the row-major gather of a strided view of the stored
	 * bytes (its layout: tfs_codec_params.gather)
	 */
	TFS_ENCODING_GATHER,
	/*
	 * a grid of separately stored, filtered chunks (its layout:
	 * tfs_codec_params.chunks)
	 */
	TFS_ENCODING_CHUNKED,
};

/*
 * What a codec needs besides the stored bytes, from the tensor record
 * (struct tfs_tensor.codec, tree.h).  Deflate (src/codec/deflate.h): zip
 * members carry their CRC-32, and an .npz member's first bytes are its .npy
 * header, not the tensor's.  Gather (src/codec/gather.h): the view's layout.
 * All zero: none.
 */
struct tfs_codec_params {
	uint64_t skip;	  /* decoded bytes before the output: dropped */
	bool check_crc32; /* check the CRC-32 of all decoded bytes at the end */
	uint32_t crc32;
	/* TFS_ENCODING_GATHER: the view's layout (codec.h), else NULL */
	struct tfs_gather_params *gather;
	/* TFS_ENCODING_CHUNKED: the chunk grid (codec.h), else NULL */
	struct tfs_chunk_params *chunks;
};

/*
 * The fault guard every decoding step of a stream codec runs under: the
 * core's SIGBUS guard (tfs_source_guard, set by tfs_source_catch_sigbus),
 * so bytes of the container that vanish mid-step end that decoder with
 * -EIO instead of the process.  It returns -EFAULT when @fn faulted, else
 * what @fn returned.  Set once, before threads; unset: a step is called
 * directly.  The codecs include nothing of the core: this is their one
 * seam to it.
 */
typedef int (*tfs_codec_guard_fn)(int (*fn)(void *arg), void *arg);
void tfs_codec_set_guard(tfs_codec_guard_fn guard);

/* "raw", "zstd", ...; NULL for an unknown value */
TFS_PRIVATE const char *tfs_encoding_name(enum tfs_encoding e);

/*
 * Count the decoded bytes of @src (a pass with a small scratch buffer).
 * -E2BIG past @limit, -EBADMSG when corrupt (@msg, TFS_CODEC_MSG_MAX bytes,
 * says why), -EINVAL for RAW.
 */
int tfs_codec_decoded_size(enum tfs_encoding e, const void *src, size_t src_len,
			   uint64_t limit, uint64_t *size, char *msg);

/* A resumable decoder over @src_len bytes at @src (borrowed). */
struct tfs_stream;

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
 * TFS_ENCODING_CHUNKED: an N-dimensional grid of chunks (HDF5 chunked
 * datasets), each stored by itself through a filter pipeline, served as
 * the row-major array of @shape.  Chunks are listed in row-major order of
 * the grid (ceil(shape[k] / chunk[k]) along dimension k); each is
 * Π chunk × @itemsize bytes once decoded (edge chunks are full-size,
 * their outside part dropped).  A chunk's @offset is relative to the
 * tensor's stored extent; @length 0: never written, read as @fill.
 * @filters are listed in the order they were applied when writing (they
 * are undone in reverse); bit k of a chunk's @mask: filter k was skipped.
 */
enum tfs_filter {
	TFS_FILTER_DEFLATE,    /* a zlib stream (RFC 1950) */
	TFS_FILTER_SHUFFLE,    /* byte planes of @arg-byte elements */
	TFS_FILTER_FLETCHER32, /* HDF5's checksum, 4 bytes at the end */
	TFS_FILTER_LZF,	       /* LZF without a header (h5py's) */
};
#define TFS_CHUNK_MAX_FILTERS 8
struct tfs_chunk {
	uint64_t offset;
	uint64_t length;
	uint32_t mask;
};
struct tfs_chunk_params {
	uint32_t itemsize;
	uint32_t ndim; /* 1..TFS_GATHER_MAX_DIMS */
	uint64_t shape[TFS_GATHER_MAX_DIMS];
	uint64_t chunk[TFS_GATHER_MAX_DIMS];
	uint32_t nfilters;
	struct {
		enum tfs_filter id;
		uint32_t arg;
	} filters[TFS_CHUNK_MAX_FILTERS];
	uint8_t fill[16]; /* one element (@itemsize bytes), or zeros */
	bool has_fill;
	uint64_t nchunks; /* Π ceil(shape / chunk) */
	struct tfs_chunk *chunks;
};

/* free a chunk grid the builder copied (NULL: nothing) */
void tfs_chunk_params_free(struct tfs_chunk_params *c);

/*
 * Check @c against @stored stored bytes: dims, chunk sizes (one decoded
 * chunk at most 4 GiB, one slab of the grid at most 1 GiB), chunk count,
 * every written chunk inside the stored bytes; the decoded size into
 * *@size.  0, -EINVAL (naming nothing: the reader names the tensor).
 */
int tfs_chunk_params_check(const struct tfs_chunk_params *c, uint64_t stored,
			   uint64_t *size);

/*
 * The stored bytes a gather needs: (the furthest element's index + 1) x
 * itemsize into *span (0 for an empty view), and the output bytes into
 * *size.  -EINVAL for a bad itemsize or ndim, -EOVERFLOW.
 */
int tfs_gather_extent(const struct tfs_gather_params *g, uint64_t *span,
		      uint64_t *size);

#endif
