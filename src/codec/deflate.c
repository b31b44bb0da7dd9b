// SPDX-License-Identifier: MIT
/*
 * Raw deflate decoding over zlib: see src/codec/deflate.h.  Input is fed
 * in slices (like the zstd decoder) so a call that needs the next few
 * megabytes returns soon after producing them; every inflate() call runs
 * under the SIGBUS guard, since the input is a mapping of a file that may
 * shrink under us.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "codec/guard.h"
#include "codec/deflate.h"
#include "codec/codec.h"

#define IN_SLICE (256u << 10)
#define SKIP_SCRATCH 4096u
#define OUT_MIN (64u << 10)

struct tfs_deflate {
	z_stream zs;
	const uint8_t *src;
	size_t src_len;
	size_t in_pos;
	uint64_t skip, skipped; /* decoded bytes dropped before the output */
	bool check_crc;
	uint32_t want_crc, crc; /* expected; of the bytes decoded so far */
	bool ended;		/* inflate() said Z_STREAM_END */
	bool vanished;		/* a step was cut short by SIGBUS */
	bool broken;		/* an error: unusable until reset */
	char msg[TFS_DEFLATE_MSG_MAX];
};

static int fail(struct tfs_deflate *z, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int fail(struct tfs_deflate *z, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(z->msg, sizeof(z->msg), fmt, ap);
	va_end(ap);
	z->broken = true;
	return -EBADMSG;
}

int tfs_deflate_new(struct tfs_deflate **out, const void *src, size_t src_len,
		    const struct tfs_codec_params *p)
{
	struct tfs_deflate *z = calloc(1, sizeof(*z));

	if (!z)
		return -ENOMEM;
	if (inflateInit2(&z->zs, -15) != Z_OK) {
		free(z);
		return -ENOMEM;
	}
	z->src = src;
	z->src_len = src_len;
	if (p) {
		z->skip = p->skip;
		z->check_crc = p->check_crc32;
		z->want_crc = p->crc32;
	}
	*out = z;
	return 0;
}

void tfs_deflate_free(struct tfs_deflate *z)
{
	if (!z)
		return;
	inflateEnd(&z->zs);
	free(z);
}

void tfs_deflate_reset(struct tfs_deflate *z)
{
	inflateReset(&z->zs);
	z->in_pos = 0;
	z->skipped = 0;
	z->crc = 0;
	z->ended = false;
	z->broken = false;
	z->msg[0] = '\0';
}

bool tfs_deflate_finished(const struct tfs_deflate *z)
{
	return z->ended;
}

size_t tfs_deflate_consumed(const struct tfs_deflate *z)
{
	return z->in_pos;
}

const char *tfs_deflate_message(const struct tfs_deflate *z)
{
	return z->msg[0] ? z->msg : "deflate: no error";
}

/* the stream ended: nothing may follow it, and the CRC must match */
static int at_end(struct tfs_deflate *z)
{
	if (z->in_pos != z->src_len)
		return fail(z,
			    "deflate: the stream ends after %llu of its %llu "
			    "stored bytes",
			    (unsigned long long)z->in_pos,
			    (unsigned long long)z->src_len);
	if (z->check_crc && z->crc != z->want_crc)
		return fail(z,
			    "CRC-32 mismatch: the zip says 0x%08X, the "
			    "inflated member has 0x%08X",
			    (unsigned)z->want_crc, (unsigned)z->crc);
	return 0;
}

struct step_args {
	struct tfs_deflate *z;
	uint8_t *out;
	size_t out_len, produced;
};

/* one inflate() call on the next input slice into a->out */
static int step_fn(void *arg)
{
	struct step_args *a = arg;
	struct tfs_deflate *z = a->z;
	size_t slice = z->src_len - z->in_pos, before_in;
	int r;

	if (slice > IN_SLICE)
		slice = IN_SLICE;
	z->zs.next_in = (Bytef *)(uintptr_t)(z->src + z->in_pos);
	z->zs.avail_in = (uInt)slice;
	z->zs.next_out = a->out;
	z->zs.avail_out = (uInt)a->out_len;
	before_in = slice;
	r = inflate(&z->zs, Z_NO_FLUSH);
	z->in_pos += before_in - z->zs.avail_in;
	a->produced = a->out_len - z->zs.avail_out;
	z->crc = (uint32_t)crc32(z->crc, a->out, (uInt)a->produced);
	if (r == Z_STREAM_END) {
		z->ended = true;
		return 0;
	}
	if (r == Z_OK)
		return 0;
	if (r == Z_BUF_ERROR) /* no progress possible */
		return 1;
	if (r == Z_MEM_ERROR)
		return -ENOMEM;
	return fail(z, "deflate: corrupt data near stored byte %llu: %s",
		    (unsigned long long)z->in_pos,
		    z->zs.msg ? z->zs.msg : "invalid stream");
}

/*
 * One guarded inflate() into @out: 0 (progress or the end), 1 when no
 * progress was possible, -EBADMSG, -EIO when the bytes vanished.
 */
static int step(struct tfs_deflate *z, uint8_t *out, size_t out_len,
		size_t *produced)
{
	struct step_args a = {z, out,
			      out_len > UINT32_MAX ? UINT32_MAX : out_len, 0};
	int ret;

	if (z->broken && !z->vanished)
		return -EBADMSG;
	ret = tfs_codec_guarded_step(step_fn, &a, &z->vanished, z->msg,
				     sizeof(z->msg));
	*produced = a.produced;
	return ret;
}

static int truncated(struct tfs_deflate *z)
{
	return fail(z,
		    "deflate: truncated stream (the stored bytes end after "
		    "%llu bytes, inside the stream)",
		    (unsigned long long)z->src_len);
}

/* decode and drop the first @skip bytes */
static int do_skip(struct tfs_deflate *z)
{
	uint8_t scratch[SKIP_SCRATCH];
	size_t n, got;
	int ret;

	while (z->skipped < z->skip) {
		if (z->ended)
			return fail(z,
				    "deflate: the stream ends after %llu "
				    "bytes, before the %llu-byte header",
				    (unsigned long long)z->skipped,
				    (unsigned long long)z->skip);
		n = z->skip - z->skipped < SKIP_SCRATCH
			    ? (size_t)(z->skip - z->skipped)
			    : SKIP_SCRATCH;
		ret = step(z, scratch, n, &got);
		if (ret == 1)
			return truncated(z);
		if (ret < 0)
			return ret;
		z->skipped += got;
	}
	return 0;
}

int tfs_deflate_decode(struct tfs_deflate *z, void *dst, size_t cap,
		       size_t *pos, size_t want)
{
	size_t got, n;
	int ret;

	ret = do_skip(z);
	if (ret)
		return ret;
	if (want > cap)
		want = cap;
	while (*pos < want && !z->ended) {
		/*
		 * no further than asked (64 KiB at least): a slice of input
		 * can inflate to far more than wanted (zeros: ~1000x), and
		 * the caller is waiting for these bytes
		 */
		n = want - *pos < OUT_MIN ? OUT_MIN : want - *pos;
		if (n > cap - *pos)
			n = cap - *pos;
		ret = step(z, (uint8_t *)dst + *pos, n, &got);
		if (ret == 1)
			return truncated(z);
		if (ret < 0)
			return ret;
		*pos += got;
	}
	return z->ended ? at_end(z) : 0;
}

int tfs_deflate_expect_end(struct tfs_deflate *z, void *dst, size_t cap)
{
	uint8_t one;
	size_t got;
	int ret;

	(void)dst;
	ret = do_skip(z);
	if (ret)
		return ret;
	while (!z->ended) {
		ret = step(z, &one, 1, &got);
		if (ret == 1)
			return truncated(z);
		if (ret < 0)
			return ret;
		if (got)
			return fail(z,
				    "deflate: the data inflates to more than "
				    "the expected %llu bytes",
				    (unsigned long long)cap);
	}
	return at_end(z);
}

int tfs_deflate_prefix(const void *src, size_t src_len, void *dst, size_t cap,
		       size_t *got, char *msg)
{
	struct tfs_deflate *z;
	size_t pos = 0;
	int ret;

	ret = tfs_deflate_new(&z, src, src_len, NULL);
	if (ret)
		return ret;
	ret = tfs_deflate_decode(z, dst, cap, &pos, cap);
	if (ret == -EBADMSG && msg)
		snprintf(msg, TFS_DEFLATE_MSG_MAX, "%s", z->msg);
	*got = pos;
	tfs_deflate_free(z);
	return ret;
}
