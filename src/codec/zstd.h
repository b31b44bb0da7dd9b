/* SPDX-License-Identifier: MIT */
/*
 * zstd decoding of stored components, over libzstd's streaming API.
 *
 * Writers of the formats we read (zTensor) use streaming compression with
 * no pledged size, so frames carry no content size: nothing here looks at
 * Frame_Content_Size.  The expected decoded size always comes from the
 * container (or from tfs_zstd_decoded_size(), a counting pass), and a
 * decode must produce exactly that many bytes: more or fewer is an error.
 * Several concatenated frames (and skippable frames) are one stream, as in
 * the reference decoder.  Empty input decodes to zero bytes.
 *
 * A struct tfs_zstd is a resumable decoder over one stored range: it can
 * produce its output a piece at a time (a reader waiting for the first
 * bytes of a large tensor need not wait for the whole), either into one
 * buffer that holds the whole output ("stable" mode: zstd then writes
 * straight into it, no internal window copy), or into successive windows.
 * Not thread-safe: one user at a time.
 */
#ifndef TENSORFS_ZSTD_CODEC_H
#define TENSORFS_ZSTD_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tfs_zstd;

#define TFS_ZSTD_MSG_MAX 160

/*
 * A decoder over @src_len bytes at @src (borrowed; must outlive it).
 * @stable: every tfs_zstd_decode() call will pass the same dst/cap, which
 * holds the whole output.
 */
int tfs_zstd_new(struct tfs_zstd **out, const void *src, size_t src_len,
		 bool stable);
void tfs_zstd_free(struct tfs_zstd *z);

/* back to the first byte of the stream */
void tfs_zstd_reset(struct tfs_zstd *z);

/*
 * Decode into dst[*pos, cap) until *pos >= @want (<= cap) or the stream
 * ends (then tfs_zstd_finished() is true).  Returns 0, or -EBADMSG with a
 * message (tfs_zstd_message()) when the stream is corrupt or truncated
 * inside a frame.  It may decode past @want, up to @cap.
 */
int tfs_zstd_decode(struct tfs_zstd *z, void *dst, size_t cap, size_t *pos,
		    size_t want);

/*
 * The caller has every byte it expects (the last buffer, @dst/@cap, is
 * full): 0 when the stream also ends here, -EBADMSG when it would decode
 * to more or ends inside a frame.  In stable mode pass the same dst/cap.
 */
int tfs_zstd_expect_end(struct tfs_zstd *z, void *dst, size_t cap);

/* the stream is fully decoded: all input consumed, no frame open */
bool tfs_zstd_finished(const struct tfs_zstd *z);

/* stored bytes consumed so far */
size_t tfs_zstd_consumed(const struct tfs_zstd *z);

/* what went wrong, after an error */
const char *tfs_zstd_message(const struct tfs_zstd *z);

/*
 * Decode @src completely into @dst, which must end up exactly @expected
 * bytes.  Returns 0, -EBADMSG (corrupt, truncated, longer or shorter than
 * expected; @msg gets why, TFS_ZSTD_MSG_MAX bytes), -ENOMEM.
 */
int tfs_zstd_decode_exact(const void *src, size_t src_len, void *dst,
			  size_t expected, char *msg);

/*
 * Count the decoded bytes of @src with a small scratch buffer (memory does
 * not grow with the output).  -E2BIG when the count passes @limit,
 * -EBADMSG when corrupt or truncated (@msg says why).
 */
int tfs_zstd_decoded_size(const void *src, size_t src_len, uint64_t limit,
			  uint64_t *size, char *msg);

#endif
