// SPDX-License-Identifier: MIT
/*
 * zstd decoding: frames without a content size (as zTensor writers make
 * them), exact-size decoding, resumable decoding in pieces and windows,
 * and every way a stream can be wrong.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "codec/zstd.h"
#include "testutil.h"

/* a frame with no Frame_Content_Size, like a streaming writer's */
static uint8_t *compress(const void *src, size_t len, int level,
			 size_t *out_len)
{
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	size_t cap = ZSTD_compressBound(len), r;
	uint8_t *dst = malloc(cap);

	ck_assert_ptr_nonnull(dst);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, level);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 0);
	r = ZSTD_compress2(cc, dst, cap, src, len);
	ck_assert(!ZSTD_isError(r));
	ZSTD_freeCCtx(cc);
	ck_assert_uint_eq(ZSTD_getFrameContentSize(dst, r),
			  ZSTD_CONTENTSIZE_UNKNOWN);
	*out_len = r;
	return dst;
}

/* compressible but not trivial: a slow ramp with noise */
static uint8_t *pattern(size_t len)
{
	uint8_t *p = malloc(len ? len : 1);
	uint32_t x = 12345;
	size_t i;

	ck_assert_ptr_nonnull(p);
	for (i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t)((i >> 10) + ((x >> 24) & 3));
	}
	return p;
}

START_TEST(exact_decode)
{
	size_t n = 3 << 20, clen;
	uint8_t *src = pattern(n), *c = compress(src, n, 3, &clen);
	uint8_t *out = malloc(n + 1);
	char msg[TFS_ZSTD_MSG_MAX];
	uint64_t size;

	ck_assert_int_eq(tfs_zstd_decode_exact(c, clen, out, n, msg), 0);
	ck_assert_mem_eq(out, src, n);
	ck_assert_int_eq(tfs_zstd_decoded_size(c, clen, n, &size, msg), 0);
	ck_assert_uint_eq(size, n);
	/* expected one byte more or less: refused */
	ck_assert_int_eq(tfs_zstd_decode_exact(c, clen, out, n + 1, msg),
			 -EBADMSG);
	ck_assert_ptr_nonnull(strstr(msg, "fewer than"));
	ck_assert_int_eq(tfs_zstd_decode_exact(c, clen, out, n - 1, msg),
			 -EBADMSG);
	ck_assert_ptr_nonnull(strstr(msg, "more than"));
	/* the counting pass honours its limit */
	ck_assert_int_eq(tfs_zstd_decoded_size(c, clen, n - 1, &size, msg),
			 -E2BIG);
	free(src);
	free(c);
	free(out);
}
END_TEST

START_TEST(corrupt_and_truncated)
{
	size_t n = 200000, clen;
	uint8_t *src = pattern(n), *c = compress(src, n, 3, &clen);
	uint8_t *out = malloc(n);
	char msg[TFS_ZSTD_MSG_MAX];
	uint64_t size;

	/* truncated: every cut point fails, none crashes */
	for (size_t cut = 0; cut < clen; cut += clen / 37 + 1) {
		if (cut == 0)
			continue; /* empty input is a valid empty stream */
		ck_assert_int_eq(tfs_zstd_decode_exact(c, cut, out, n, msg),
				 -EBADMSG);
		ck_assert_int_eq(tfs_zstd_decoded_size(c, cut, n, &size, msg),
				 -EBADMSG);
	}
	ck_assert_int_eq(tfs_zstd_decode_exact(c, clen - 1, out, n, msg),
			 -EBADMSG);
	ck_assert_ptr_nonnull(strstr(msg, "truncated"));
	/* not zstd at all */
	memset(c, 0xAB, 64);
	ck_assert_int_eq(tfs_zstd_decode_exact(c, 64, out, n, msg), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(msg, "zstd"));
	/* garbage after a good frame */
	free(c);
	c = compress(src, n, 3, &clen);
	c = realloc(c, clen + 4);
	memcpy(c + clen, "\x01\x02\x03\x04", 4);
	ck_assert_int_eq(tfs_zstd_decode_exact(c, clen + 4, out, n, msg),
			 -EBADMSG);
	free(src);
	free(c);
	free(out);
}
END_TEST

START_TEST(concatenated_frames_and_empty)
{
	size_t n = 70000, l1, l2, le;
	uint8_t *src = pattern(2 * n);
	uint8_t *c1 = compress(src, n, 1, &l1),
		*c2 = compress(src + n, n, 19, &l2);
	uint8_t *ce = compress("", 0, 3, &le);
	uint8_t *all = malloc(l1 + l2 + le), *out = malloc(2 * n);
	char msg[TFS_ZSTD_MSG_MAX];
	uint64_t size;

	memcpy(all, c1, l1);
	memcpy(all + l1, ce, le);
	memcpy(all + l1 + le, c2, l2);
	ck_assert_int_eq(
		tfs_zstd_decode_exact(all, l1 + l2 + le, out, 2 * n, msg), 0);
	ck_assert_mem_eq(out, src, 2 * n);
	ck_assert_int_eq(tfs_zstd_decoded_size(all, l1 + l2 + le, UINT64_MAX,
					       &size, msg),
			 0);
	ck_assert_uint_eq(size, 2 * n);
	/* an empty frame, and no input at all, are zero bytes */
	ck_assert_int_eq(tfs_zstd_decode_exact(ce, le, out, 0, msg), 0);
	ck_assert_int_eq(tfs_zstd_decode_exact(ce, 0, out, 0, msg), 0);
	ck_assert_int_eq(tfs_zstd_decode_exact(ce, le, out, 1, msg), -EBADMSG);
	free(src);
	free(c1);
	free(c2);
	free(ce);
	free(all);
	free(out);
}
END_TEST

/* stable mode: one buffer, filled in steps, the way the cache fills it */
START_TEST(progressive_stable)
{
	size_t n = 5 << 20, clen, pos = 0, want;
	uint8_t *src = pattern(n), *c = compress(src, n, 3, &clen);
	uint8_t *out = malloc(n);
	struct tfs_zstd *z;
	int steps = 0;

	ck_assert_int_eq(tfs_zstd_new(&z, c, clen, true), 0);
	while (pos < n) {
		want = pos + 300000 < n ? pos + 300000 : n;
		ck_assert_int_eq(tfs_zstd_decode(z, out, n, &pos, want), 0);
		ck_assert_uint_ge(pos, want);
		/* bytes so far are final */
		ck_assert_mem_eq(out, src, pos);
		steps++;
	}
	ck_assert_int_gt(steps, 1); /* it really stopped early */
	ck_assert_int_eq(tfs_zstd_expect_end(z, out, n), 0);
	ck_assert(tfs_zstd_finished(z));
	ck_assert_uint_eq(tfs_zstd_consumed(z), clen);
	/* again from the start */
	tfs_zstd_reset(z);
	memset(out, 0, n);
	pos = 0;
	ck_assert_int_eq(tfs_zstd_decode(z, out, n, &pos, n), 0);
	ck_assert_uint_eq(pos, n);
	ck_assert_mem_eq(out, src, n);
	tfs_zstd_free(z);
	free(src);
	free(c);
	free(out);
}
END_TEST

/* window mode: successive small buffers; the last one must end the stream */
START_TEST(windows)
{
	size_t n = 1000000, clen, w = 65536, k, pos, len;
	uint8_t *src = pattern(n), *c = compress(src, n, 3, &clen);
	uint8_t *win = malloc(w);
	struct tfs_zstd *z;

	ck_assert_int_eq(tfs_zstd_new(&z, c, clen, false), 0);
	for (k = 0; k * w < n; k++) {
		len = n - k * w < w ? n - k * w : w;
		pos = 0;
		ck_assert_int_eq(tfs_zstd_decode(z, win, len, &pos, len), 0);
		ck_assert_uint_eq(pos, len);
		ck_assert_mem_eq(win, src + k * w, len);
	}
	ck_assert_int_eq(tfs_zstd_expect_end(z, win, len), 0);
	/* a stream that holds more than the caller expects */
	tfs_zstd_reset(z);
	pos = 0;
	ck_assert_int_eq(tfs_zstd_decode(z, win, w, &pos, w), 0);
	ck_assert_int_eq(tfs_zstd_expect_end(z, win, w), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(tfs_zstd_message(z), "more than"));
	tfs_zstd_free(z);
	free(src);
	free(c);
	free(win);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("zstd_codec");
	TCase *tc = tcase_create("zstd_codec");

	tcase_add_test(tc, exact_decode);
	tcase_add_test(tc, corrupt_and_truncated);
	tcase_add_test(tc, concatenated_frames_and_empty);
	tcase_add_test(tc, progressive_stable);
	tcase_add_test(tc, windows);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
