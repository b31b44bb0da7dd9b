/* SPDX-License-Identifier: MIT */
/*
 * Private to the image modules (image.c: load and the read dispatch,
 * tensor_read.c, decode.c, stored.c, verify.c): the per-tensor read state.
 * Lock order: see decode.c.
 */
#ifndef TFS_CORE_IMAGE_I_H
#define TFS_CORE_IMAGE_I_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/decode_cache.h"
#include "core/digest.h"
#include "codec/codec.h"
#include "core/image.h"

enum { DG_UNCHECKED, DG_CHECKING, DG_OK, DG_FAILED };
/* what a view holds: nothing, a decode cache entry, a bounce buffer, or
 * a remote source's pin of its bytes (the view's data points into it) */
enum { PIN_NONE, PIN_ENTRY, PIN_BOUNCE, PIN_SOURCE };

/*
 * What reads of an encoded tensor, or of one with a digest, keep.  A raw
 * tensor without a digest has none: 100,000 of them would hold 15 MB.
 */
struct tensor_state {
	struct tfs_digest digest;
	atomic_int dg; /* DG_*; changed under rs->dlock */
	pthread_mutex_t fill;
	pthread_cond_t progress;   /* whole mode: more bytes are valid */
	struct tfs_stream *stream; /* window mode: the running decoder */
	uint32_t next_window;	   /* window mode: what the stream makes next */
	uint64_t input_dropped;	   /* window mode: its input dropped up to */
};

#define TFS_NO_STATE UINT32_MAX
#define TS_FAILED 1u
#define TS_LOGGED 2u
#define TS_END_SERVED 4u /* its last bytes were served (drop_source_cache) */
/* decoded window by window: its whole buffer did not fit beside the pinned
 * entries once (tfs_cache_get_within), so it no longer tries */
#define TS_WINDOWED 8u

#define TFS_MAX_LIVE_STREAMS 32

struct tfs_read_state {
	struct tfs_image_options opts;
	struct tfs_cache *cache;
	struct tensor_state *ts; /* the tensors that have one */
	uint32_t nstates;
	uint32_t *state; /* by tensor: its index in @ts, or TFS_NO_STATE */
	/* by tensor: TS_FAILED (for good: reads give -EIO), TS_LOGGED */
	atomic_uchar *flags;
	uint32_t ntensors;
	size_t window;
	pthread_mutex_t dlock;
	pthread_cond_t dcond;
	pthread_mutex_t bg_lock; /* background decoders still running */
	pthread_cond_t bg_done;
	unsigned bg_running;
	atomic_bool closing;
	atomic_uint_fast64_t decodes, decoded_bytes, digest_checks,
		digest_failures;
	/*
	 * window mode: the tensors whose decoder is alive, oldest first.
	 * Each holds a decoder window the cache's budget does not count, so
	 * past the limit (decode.c: stream_born) idle ones are freed.
	 */
	pthread_mutex_t stream_lock;
	uint32_t live[TFS_MAX_LIVE_STREAMS];
	uint32_t nlive;
	/* tfs_twins_find(), made at the first drop (image.c) */
	pthread_mutex_t twin_lock;
	atomic_bool twins_found;
	uint32_t *twin;
};

/*
 * Tensors sharing stored bytes (tied weights), src/core/twins.c: *out[i]
 * is the next tensor of i's group, a ring, or TFS_NO_TWIN; *out is NULL
 * when no two extents overlap.  0 or -ENOMEM.
 */
#define TFS_NO_TWIN UINT32_MAX
int tfs_twins_find(const struct tfs_tree *t, uint32_t **out);

/*
 * Finish a load: the builder's tree and the read state go to @img.  0 or
 * -errno with @d filled.  For the image modules (image.c, collection.c).
 */
int tfs_image_finish_load(struct tfs_image *img, struct tfs_builder *b,
			  const char *format, struct tfs_diag *d);

/*
 * The end of a load (image.c, collection.c): the builder goes; 0 with
 * *@out = @img, or @img closed and @ret (non-zero) returned
 */
int tfs_image_load_end(struct tfs_image *img, struct tfs_builder *b, int ret,
		       struct tfs_image **out);

/*
 * Bytes [@off, +@len) of tensor record @idx's own bytes (in range): the
 * tensor-read layer (src/core/tensor_read.c) that the views call
 */
int tfs_tensor_read(struct tfs_image *img, uint32_t idx, uint64_t off,
		    size_t len, struct tfs_view *v);

/* @v shows @buf[0, @len) (malloc'd) and owns it: tfs_view_release frees */
void tfs_view_own(struct tfs_view *v, void *buf, size_t len);

/* the decode engine (src/core/decode.c) */
int tfs_read_state_new(struct tfs_image *img, struct tfs_diag *d);
void tfs_read_state_free(struct tfs_read_state *rs);
/* the decode window for a cache of @budget bytes */
size_t tfs_decode_window_for(uint64_t budget);
/* a read of encoded tensor record @idx: decoded bytes, pinned in @v */
int tfs_decode_read(struct tfs_image *img, uint32_t idx, uint64_t off,
		    size_t len, struct tfs_view *v);
/* the digest rule for tensor @idx's stored bytes before they are served */
int tfs_digest_gate(struct tfs_image *img, uint32_t idx);

/*
 * The stored bytes of @x (src/core/stored.c), wherever they lie: @fn(@arg,
 * bytes, n) for each piece of [@off, +@len), each made present first (a
 * remote range is fetched, a local one checked against the file's live
 * size); 0, -EIO (gone, or outside), or what @fn returned.
 */
int tfs_stored_each(const struct tfs_image *img, const struct tfs_tensor *x,
		    uint64_t off, uint64_t len,
		    int (*fn)(void *arg, const uint8_t *p, size_t n),
		    void *arg);

/*
 * A view of @x's stored bytes [@off, +@len): a pointer into the mapping
 * or memory when they lie in one piece, else a bounce buffer (pinned).
 */
int tfs_stored_view(const struct tfs_image *img, const struct tfs_tensor *x,
		    uint64_t off, size_t len, struct tfs_view *v);

/* every stored byte of @x still there (its files not truncated) */
bool tfs_stored_live(const struct tfs_image *img, const struct tfs_tensor *x);

/* tensor @idx's state, or NULL: a raw tensor without a digest has none */
static inline struct tensor_state *state_of(const struct tfs_read_state *rs,
					    uint32_t idx)
{
	return rs->state[idx] == TFS_NO_STATE ? NULL : &rs->ts[rs->state[idx]];
}

/* tensor @idx failed for good */
static inline bool failed(const struct tfs_read_state *rs, uint32_t idx)
{
	return atomic_load(&rs->flags[idx]) & TS_FAILED;
}

static inline bool digest_known(const struct tensor_state *ts)
{
	return ts && (ts->digest.alg == TFS_DIGEST_CRC32C ||
		      ts->digest.alg == TFS_DIGEST_CRC32 ||
		      ts->digest.alg == TFS_DIGEST_SHA256 ||
		      ts->digest.alg == TFS_DIGEST_XXH3);
}

#endif
