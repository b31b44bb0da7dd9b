/* SPDX-License-Identifier: MIT */
/*
 * Raw deflate (RFC 1951, no zlib or gzip wrapper: a zip member of method
 * 8) over Debian's zlib, with the zstd decoder's contract (src/codec/
 * zstd.h): the expected decoded size comes from the container and a decode
 * must produce exactly that many bytes, a piece at a time.
 *
 * Two things a zip member needs that a zstd frame does not:
 *   - @skip: the first decoded bytes are not the tensor's (an .npz member
 *     is a whole .npy file: its header comes first); they are decoded and
 *     dropped, so the output is the tensor's bytes only;
 *   - the CRC-32 of the whole decoded member (skipped bytes included),
 *     checked when the stream ends: a mismatch is a decode error, so the
 *     read path fails the tensor with EIO and a log line and `tensorfs
 *     verify` reports it, as for any corrupt stream.
 * Not thread-safe: one user at a time.
 */
#ifndef TENSORFS_DEFLATE_CODEC_H
#define TENSORFS_DEFLATE_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tfs_codec_params;
struct tfs_deflate;

#define TFS_DEFLATE_MSG_MAX 160

/* a decoder over @src_len bytes at @src (borrowed); @p may be NULL */
int tfs_deflate_new(struct tfs_deflate **out, const void *src, size_t src_len,
		    const struct tfs_codec_params *p);
void tfs_deflate_free(struct tfs_deflate *z);
void tfs_deflate_reset(struct tfs_deflate *z);
/* decode into dst[*pos, cap) until *pos >= @want or the stream ends */
int tfs_deflate_decode(struct tfs_deflate *z, void *dst, size_t cap,
		       size_t *pos, size_t want);
/* every expected byte is out: 0 when the stream ends here (CRC good) */
int tfs_deflate_expect_end(struct tfs_deflate *z, void *dst, size_t cap);
bool tfs_deflate_finished(const struct tfs_deflate *z);
size_t tfs_deflate_consumed(const struct tfs_deflate *z);
const char *tfs_deflate_message(const struct tfs_deflate *z);

/*
 * Inflate the first bytes of @src into @dst: up to @cap bytes, fewer when
 * the stream ends first (*got says how many).  For readers that must look
 * inside a compressed member (an .npy header) while loading.  0, -EBADMSG
 * (@msg, TFS_DEFLATE_MSG_MAX bytes, says why), -ENOMEM.
 */
int tfs_deflate_prefix(const void *src, size_t src_len, void *dst, size_t cap,
		       size_t *got, char *msg);

#endif
