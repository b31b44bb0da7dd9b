/* SPDX-License-Identifier: MIT */
/*
 * The gather codec (TFS_ENCODING_GATHER, src/codec/codec.h): the
 * row-major copy of a strided view, computed on read.  The functions follow
 * the stream contract of src/codec/zstd.h; "decoding" is copying elements,
 * so a stream never fails once made, and may be made and used in any
 * thread.
 */
#ifndef TFS_CODEC_GATHER_H
#define TFS_CODEC_GATHER_H

#include <stdbool.h>
#include <stddef.h>

struct tfs_codec_params;

/*
 * @p->gather: the view's layout (copied); the @len stored bytes must hold
 * its furthest element.  -EINVAL otherwise, -ENOMEM.
 */
int tfs_gather_new(void **st, const void *src, size_t len, bool stable,
		   const struct tfs_codec_params *p);
void tfs_gather_free(void *st);
void tfs_gather_reset(void *st);
int tfs_gather_decode(void *st, void *dst, size_t cap, size_t *pos,
		      size_t want);
int tfs_gather_expect_end(void *st, void *dst, size_t cap);
bool tfs_gather_finished(const void *st);
size_t tfs_gather_consumed(const void *st);
const char *tfs_gather_message(const void *st);

#endif
