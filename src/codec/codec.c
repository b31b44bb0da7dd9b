// SPDX-License-Identifier: MIT
/*
 * The encodings table: src/codec/codec.h.  Each stream codec is a
 * set of functions with the zstd decoder's contract (src/codec/zstd.h).
 */
#include <errno.h>
#include <stdlib.h>

#include "codec/chunked.h"
#include "codec/deflate.h"
#include "codec/gather.h"
#include "codec/zstd.h"
#include "codec/codec.h"
#include "codec/guard.h"

tfs_codec_guard_fn tfs_codec_guard;

void tfs_codec_set_guard(tfs_codec_guard_fn guard)
{
	tfs_codec_guard = guard;
}

struct codec_ops {
	const char *name;
	int (*new)(void **st, const void *src, size_t len, bool stable,
		   const struct tfs_codec_params *p);
	void (*free)(void *st);
	void (*reset)(void *st);
	int (*decode)(void *st, void *dst, size_t cap, size_t *pos,
		      size_t want);
	int (*expect_end)(void *st, void *dst, size_t cap);
	bool (*finished)(const void *st);
	size_t (*consumed)(const void *st);
	const char *(*message)(const void *st);
	int (*decoded_size)(const void *src, size_t len, uint64_t limit,
			    uint64_t *size, char *msg);
};

struct tfs_stream {
	const struct codec_ops *ops;
	void *st;
};

/* zstd: adapters from the typed functions */
static int zstd_new(void **st, const void *src, size_t len, bool stable,
		    const struct tfs_codec_params *p)
{
	if (p && (p->skip || p->check_crc32 || p->gather || p->chunks))
		return -EINVAL;
	return tfs_zstd_new((struct tfs_zstd **)st, src, len, stable);
}
static void zstd_free(void *st)
{
	tfs_zstd_free(st);
}
static void zstd_reset(void *st)
{
	tfs_zstd_reset(st);
}
static int zstd_decode(void *st, void *dst, size_t cap, size_t *pos,
		       size_t want)
{
	return tfs_zstd_decode(st, dst, cap, pos, want);
}
static int zstd_expect_end(void *st, void *dst, size_t cap)
{
	return tfs_zstd_expect_end(st, dst, cap);
}
static bool zstd_finished(const void *st)
{
	return tfs_zstd_finished(st);
}
static size_t zstd_consumed(const void *st)
{
	return tfs_zstd_consumed(st);
}
static const char *zstd_message(const void *st)
{
	return tfs_zstd_message(st);
}

/* deflate: the same, with its parameters */
static int deflate_new(void **st, const void *src, size_t len, bool stable,
		       const struct tfs_codec_params *p)
{
	return tfs_deflate_new((struct tfs_deflate **)st, src, len, p);
}
static void deflate_free(void *st)
{
	tfs_deflate_free(st);
}
static void deflate_reset(void *st)
{
	tfs_deflate_reset(st);
}
static int deflate_decode(void *st, void *dst, size_t cap, size_t *pos,
			  size_t want)
{
	return tfs_deflate_decode(st, dst, cap, pos, want);
}
static int deflate_expect_end(void *st, void *dst, size_t cap)
{
	return tfs_deflate_expect_end(st, dst, cap);
}
static bool deflate_finished(const void *st)
{
	return tfs_deflate_finished(st);
}
static size_t deflate_consumed(const void *st)
{
	return tfs_deflate_consumed(st);
}
static const char *deflate_message(const void *st)
{
	return tfs_deflate_message(st);
}

static const struct codec_ops codecs[] = {
	[TFS_ENCODING_RAW] = {.name = "raw"},
	[TFS_ENCODING_ZSTD] = {.name = "zstd",
			       .new = zstd_new,
			       .free = zstd_free,
			       .reset = zstd_reset,
			       .decode = zstd_decode,
			       .expect_end = zstd_expect_end,
			       .finished = zstd_finished,
			       .consumed = zstd_consumed,
			       .message = zstd_message,
			       .decoded_size = tfs_zstd_decoded_size},
	[TFS_ENCODING_DEFLATE] = {.name = "deflate",
				  .new = deflate_new,
				  .free = deflate_free,
				  .reset = deflate_reset,
				  .decode = deflate_decode,
				  .expect_end = deflate_expect_end,
				  .finished = deflate_finished,
				  .consumed = deflate_consumed,
				  .message = deflate_message},
	[TFS_ENCODING_GATHER] = {.name = "gather",
				 .new = tfs_gather_new,
				 .free = tfs_gather_free,
				 .reset = tfs_gather_reset,
				 .decode = tfs_gather_decode,
				 .expect_end = tfs_gather_expect_end,
				 .finished = tfs_gather_finished,
				 .consumed = tfs_gather_consumed,
				 .message = tfs_gather_message},
	[TFS_ENCODING_CHUNKED] = {.name = "chunked",
				  .new = tfs_chunked_new,
				  .free = tfs_chunked_free,
				  .reset = tfs_chunked_reset,
				  .decode = tfs_chunked_decode,
				  .expect_end = tfs_chunked_expect_end,
				  .finished = tfs_chunked_finished,
				  .consumed = tfs_chunked_consumed,
				  .message = tfs_chunked_message},
};

static const struct codec_ops *ops_of(enum tfs_encoding e)
{
	if ((unsigned)e >= sizeof(codecs) / sizeof(codecs[0]))
		return NULL;
	return &codecs[e];
}

const char *tfs_encoding_name(enum tfs_encoding e)
{
	const struct codec_ops *o = ops_of(e);

	return o ? o->name : NULL;
}

int tfs_codec_decoded_size(enum tfs_encoding e, const void *src, size_t src_len,
			   uint64_t limit, uint64_t *size, char *msg)
{
	const struct codec_ops *o = ops_of(e);

	if (!o || !o->decoded_size)
		return -EINVAL;
	return o->decoded_size(src, src_len, limit, size, msg);
}

int tfs_stream_new(struct tfs_stream **out, enum tfs_encoding e,
		   const void *src, size_t src_len, bool stable,
		   const struct tfs_codec_params *params)
{
	const struct codec_ops *o = ops_of(e);
	struct tfs_stream *s;
	int ret;

	if (!o || !o->new)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->ops = o;
	ret = o->new (&s->st, src, src_len, stable, params);
	if (ret) {
		free(s);
		return ret;
	}
	*out = s;
	return 0;
}

void tfs_stream_free(struct tfs_stream *s)
{
	if (!s)
		return;
	s->ops->free(s->st);
	free(s);
}

void tfs_stream_reset(struct tfs_stream *s)
{
	s->ops->reset(s->st);
}

int tfs_stream_decode(struct tfs_stream *s, void *dst, size_t cap, size_t *pos,
		      size_t want)
{
	return s->ops->decode(s->st, dst, cap, pos, want);
}

int tfs_stream_expect_end(struct tfs_stream *s, void *dst, size_t cap)
{
	return s->ops->expect_end(s->st, dst, cap);
}

bool tfs_stream_finished(const struct tfs_stream *s)
{
	return s->ops->finished(s->st);
}

size_t tfs_stream_consumed(const struct tfs_stream *s)
{
	return s->ops->consumed(s->st);
}

const char *tfs_stream_message(const struct tfs_stream *s)
{
	return s->ops->message(s->st);
}
