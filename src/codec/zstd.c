// SPDX-License-Identifier: MIT
/*
 * zstd decoding: see src/codec/zstd.h.
 *
 * Input is fed to ZSTD_decompressStream() in slices of IN_SLICE bytes so a
 * call that only needs the next few megabytes of output returns soon after
 * producing them, instead of decoding everything the input holds (in stable
 * mode the output buffer is large enough for all of it).
 *
 * "Stable" mode sets ZSTD_d_stableOutBuffer (an experimental parameter of
 * libzstd >= 1.4.8, reached through the public ZSTD_DCtx_setParameter):
 * zstd decodes straight into our buffer instead of its own window followed
 * by a copy.  When the library refuses it, decoding still works, with the
 * copy.
 */
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_d_stableOutBuffer: a parameter only   \
				  */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "codec/guard.h"
#include "codec/zstd.h"

#define IN_SLICE (256u << 10)
#define SCRATCH (128u << 10)

struct tfs_zstd {
	ZSTD_DCtx *dctx;
	const uint8_t *src;
	size_t src_len;
	size_t in_pos;
	bool in_frame; /* a frame was started and not yet finished */
	bool stable;
	bool vanished; /* a step was cut short by SIGBUS: unusable */
	char msg[TFS_ZSTD_MSG_MAX];
};

static int set_stable(ZSTD_DCtx *dctx)
{
#ifdef ZSTD_d_stableOutBuffer
	return ZSTD_isError(
		       ZSTD_DCtx_setParameter(dctx, ZSTD_d_stableOutBuffer, 1))
		       ? -ENOTSUP
		       : 0;
#else
	(void)dctx;
	return -ENOTSUP;
#endif
}

int tfs_zstd_new(struct tfs_zstd **out, const void *src, size_t src_len,
		 bool stable)
{
	struct tfs_zstd *z = calloc(1, sizeof(*z));

	if (!z)
		return -ENOMEM;
	z->dctx = ZSTD_createDCtx();
	if (!z->dctx) {
		free(z);
		return -ENOMEM;
	}
	z->src = src;
	z->src_len = src_len;
	z->stable = stable && set_stable(z->dctx) == 0;
	*out = z;
	return 0;
}

void tfs_zstd_free(struct tfs_zstd *z)
{
	if (!z)
		return;
	ZSTD_freeDCtx(z->dctx);
	free(z);
}

void tfs_zstd_reset(struct tfs_zstd *z)
{
	ZSTD_DCtx_reset(z->dctx, ZSTD_reset_session_only);
	z->in_pos = 0;
	z->in_frame = false;
	z->msg[0] = '\0';
}

bool tfs_zstd_finished(const struct tfs_zstd *z)
{
	return z->in_pos == z->src_len && !z->in_frame;
}

size_t tfs_zstd_consumed(const struct tfs_zstd *z)
{
	return z->in_pos;
}

const char *tfs_zstd_message(const struct tfs_zstd *z)
{
	return z->msg[0] ? z->msg : "zstd: no error";
}

static int fail(struct tfs_zstd *z, const char *fmt, unsigned long long a,
		const char *s)
{
	snprintf(z->msg, sizeof(z->msg), fmt, a, s);
	return -EBADMSG;
}

/* one ZSTD_decompressStream call on the next input slice */
static int unguarded_step(struct tfs_zstd *z, ZSTD_outBuffer *ob)
{
	ZSTD_inBuffer ib;
	size_t slice = z->src_len - z->in_pos, r;

	if (slice > IN_SLICE)
		slice = IN_SLICE;
	ib.src = z->src + z->in_pos;
	ib.size = slice;
	ib.pos = 0;
	r = ZSTD_decompressStream(z->dctx, ob, &ib);
	z->in_pos += ib.pos;
	if (ZSTD_isError(r)) {
		if (ZSTD_getErrorCode(r) == ZSTD_error_dstSize_tooSmall)
			return fail(z,
				    "zstd: the data decodes to more than the "
				    "expected %llu bytes%s",
				    (unsigned long long)ob->size, "");
		return fail(z, "zstd: corrupt data near stored byte %llu: %s",
			    (unsigned long long)z->in_pos,
			    ZSTD_getErrorName(r));
	}
	z->in_frame = r != 0;
	return 0;
}

struct step_args {
	struct tfs_zstd *z;
	ZSTD_outBuffer *ob;
};

static int step_fn(void *arg)
{
	struct step_args *a = arg;

	return unguarded_step(a->z, a->ob);
}

/*
 * One ZSTD_decompressStream() call over the stored bytes, which may be a
 * mapping of a file that shrinks under us: a SIGBUS abandons the call and
 * leaves the decoder unusable (-EIO from then on).
 */
static int step(struct tfs_zstd *z, ZSTD_outBuffer *ob)
{
	struct step_args a = {z, ob};

	return tfs_codec_guarded_step(step_fn, &a, &z->vanished, z->msg,
				      sizeof(z->msg));
}

static int truncated(struct tfs_zstd *z)
{
	return fail(z,
		    "zstd: truncated frame (the stored bytes end inside a "
		    "frame, after %llu bytes)%s",
		    (unsigned long long)z->src_len, "");
}

/* is there more output than @cap?  (called with the output full) */
static int check_overflow(struct tfs_zstd *z, void *dst, size_t cap)
{
	uint8_t one;
	ZSTD_outBuffer ob;
	size_t before;
	int ret;

	while (!tfs_zstd_finished(z)) {
		if (z->stable) {
			/* the same buffer, full: zstd errors if it must write
			 */
			ob.dst = dst;
			ob.size = cap;
			ob.pos = cap;
		} else {
			ob.dst = &one;
			ob.size = 1;
			ob.pos = 0;
		}
		before = z->in_pos;
		ret = step(z, &ob);
		if (ret)
			return ret;
		if (ob.pos != (z->stable ? cap : 0))
			return fail(z,
				    "zstd: the data decodes to more than the "
				    "expected %llu bytes%s",
				    (unsigned long long)cap, "");
		if (z->in_pos == before)
			break; /* no progress: the input ends inside a frame */
	}
	return z->in_frame ? truncated(z) : 0;
}

int tfs_zstd_decode(struct tfs_zstd *z, void *dst, size_t cap, size_t *pos,
		    size_t want)
{
	ZSTD_outBuffer ob;
	size_t before_in, before_out;
	int ret = 0;

	if (want > cap)
		want = cap;
	ob.dst = dst;
	ob.size = cap;
	ob.pos = *pos;
	while (ob.pos < want && !tfs_zstd_finished(z)) {
		before_in = z->in_pos;
		before_out = ob.pos;
		ret = step(z, &ob);
		if (ret)
			break;
		/* no input taken, nothing more coming out */
		if (z->in_pos == before_in && ob.pos == before_out) {
			ret = truncated(z);
			break;
		}
	}
	*pos = ob.pos;
	return ret;
}

int tfs_zstd_expect_end(struct tfs_zstd *z, void *dst, size_t cap)
{
	return check_overflow(z, dst, cap);
}

int tfs_zstd_decode_exact(const void *src, size_t src_len, void *dst,
			  size_t expected, char *msg)
{
	struct tfs_zstd *z;
	size_t pos = 0;
	int ret;

	ret = tfs_zstd_new(&z, src, src_len, true);
	if (ret)
		return ret;
	ret = tfs_zstd_decode(z, dst, expected, &pos, expected);
	if (!ret && pos == expected)
		ret = check_overflow(z, dst, expected);
	if (!ret && pos != expected)
		ret = fail(z,
			   "zstd: the data decodes to %llu bytes, %s the "
			   "expected size",
			   (unsigned long long)pos, "fewer than");
	if (ret && msg)
		snprintf(msg, TFS_ZSTD_MSG_MAX, "%s", z->msg);
	tfs_zstd_free(z);
	return ret;
}

int tfs_zstd_decoded_size(const void *src, size_t src_len, uint64_t limit,
			  uint64_t *size, char *msg)
{
	struct tfs_zstd *z;
	ZSTD_outBuffer ob;
	uint8_t *scratch;
	uint64_t total = 0;
	size_t before;
	int ret;

	scratch = malloc(SCRATCH);
	if (!scratch)
		return -ENOMEM;
	ret = tfs_zstd_new(&z, src, src_len, false);
	if (ret) {
		free(scratch);
		return ret;
	}
	while (!ret && !tfs_zstd_finished(z)) {
		ob.dst = scratch;
		ob.size = SCRATCH;
		ob.pos = 0;
		before = z->in_pos;
		ret = step(z, &ob);
		if (ret)
			break;
		total += ob.pos;
		if (total > limit) {
			snprintf(z->msg, sizeof(z->msg),
				 "zstd: the data decodes to more than %llu "
				 "bytes",
				 (unsigned long long)limit);
			ret = -E2BIG;
		} else if (z->in_pos == before && ob.pos == 0) {
			ret = truncated(z);
		}
	}
	if (!ret)
		*size = total;
	else if (msg)
		snprintf(msg, TFS_ZSTD_MSG_MAX, "%s", z->msg);
	tfs_zstd_free(z);
	free(scratch);
	return ret;
}
