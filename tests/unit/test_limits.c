// SPDX-License-Identifier: MIT
/*
 * Resource limits across every reader: a container that announces absurd
 * counts or sizes (a billion tensors, a 2^63-byte tensor, a manifest larger
 * than the file) is refused by validation, before anything is allocated for
 * it.  The suite runs with its address space capped at 1 GiB (except under
 * AddressSanitizer, which reserves terabytes of shadow), so an attempt to
 * allocate for the announced size would fail with -ENOMEM instead of the
 * expected refusal and the test would fail.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "testutil.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

struct buf {
	uint8_t b[4096];
	size_t n;
};

static void put(struct buf *b, const void *p, size_t n)
{
	ck_assert_uint_le(b->n + n, sizeof(b->b));
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void le(struct buf *b, uint64_t v, unsigned n)
{
	while (n--) {
		b->b[b->n++] = (uint8_t)v;
		v >>= 8;
	}
}

static void be(struct buf *b, uint64_t v, unsigned n)
{
	while (n--)
		b->b[b->n++] = (uint8_t)(v >> (8 * n));
}

static void refused(struct buf *b, int err, const char *word)
{
	tu_expect_reject(b->b, b->n, err, word, TU_ANY_OFFSET);
}

static void cap_memory(void)
{
#ifndef UNDER_ASAN
	struct rlimit r = {1ull << 30, 1ull << 30};

	ck_assert_int_eq(setrlimit(RLIMIT_AS, &r), 0);
#endif
}

/* zTensor v1.2 with a manifest of @m (CBOR) and no data */
static void ztensor_v12(struct buf *b, const void *m, size_t mlen)
{
	b->n = 0;
	put(b, "ZTEN1000", 8);
	while (b->n < 64)
		b->b[b->n++] = 0;
	put(b, m, mlen);
	le(b, mlen, 8);
	put(b, "ZTEN1000", 8);
}

START_TEST(ztensor_limits)
{
	struct buf b;
	/* {"version": "1.2.0", "objects": map(10^9)} */
	static const uint8_t billion[] = "\xa2\x67version\x65"
					 "1.2.0"
					 "\x67objects\xba\x3b\x9a\xca\x00";
	/* {"version":"1.2.0","objects":{"w":{"shape":[2^62,4],"format":
	 * "dense","components":{"data":{"dtype":"f32","offset":64,
	 * "length":0}}}}}: 2^64 elements x 4 bytes */
	static const uint8_t huge[] =
		"\xa2\x67version\x65"
		"1.2.0\x67objects\xa1\x61w\xa3"
		"\x65shape\x82\x1b\x40\x00\x00\x00\x00\x00\x00\x00\x04"
		"\x66"
		"format\x65"
		"dense\x6a"
		"components\xa1\x64"
		"data\xa3"
		"\x65"
		"dtype\x63"
		"f32\x66offset\x18\x40\x66length\x00";

	cap_memory();
	ztensor_v12(&b, billion, sizeof(billion) - 1);
	refused(&b, -EBADMSG, "cannot fit");
	ztensor_v12(&b, huge, sizeof(huge) - 1);
	refused(&b, -EBADMSG, "overflows");
	/* a manifest size larger than the file */
	ztensor_v12(&b, billion, sizeof(billion) - 1);
	memcpy(b.b + b.n - 16, "\xff\xff\xff\xff\xff\xff\xff\x7f", 8);
	refused(&b, -EBADMSG, "manifest_size");
}
END_TEST

START_TEST(burnpack_limits)
{
	struct buf b = {.n = 0};
	/* {"tensors": map(10^9)} */
	static const uint8_t billion[] = "\xa1\x67tensors\xba\x3b\x9a\xca\x00";

	cap_memory();
	put(&b, "NRUB", 4);
	le(&b, 1, 2);
	le(&b, sizeof(billion) - 1, 4);
	put(&b, billion, sizeof(billion) - 1);
	refused(&b, -EBADMSG, "cannot fit");
	/* metadata larger than the reference's limit, and than the file */
	b.n = 0;
	put(&b, "NRUB", 4);
	le(&b, 1, 2);
	le(&b, 0xfffffff0u, 4);
	put(&b, billion, sizeof(billion) - 1);
	refused(&b, -E2BIG, "limit");
	/* metadata under the limit but larger than the file */
	b.n = 0;
	put(&b, "NRUB", 4);
	le(&b, 1, 2);
	le(&b, 50u << 20, 4);
	put(&b, billion, sizeof(billion) - 1);
	refused(&b, -EBADMSG, "past the end");
}
END_TEST

START_TEST(gptrs_limits)
{
	struct buf b = {.n = 0};

	cap_memory();
	/* an archive whose index claims a billion tensors */
	put(&b, "GPTRSTEN", 8);
	le(&b, 2, 4);
	le(&b, 8, 4);	       /* index_len */
	le(&b, 1000000000, 4); /* tensor_count */
	le(&b, 1, 4);	       /* the first name_len; then the index ends */
	refused(&b, -EBADMSG, "tensor_count");
	/* one tensor of 2^63 bytes: dims [2^61] f32 */
	b.n = 0;
	put(&b, "GPTRSTEN", 8);
	le(&b, 2, 4);
	le(&b, 4 + 4 + 1 + 4 + 8 + 4 + 1 + 8 + 8, 4);
	le(&b, 1, 4);
	le(&b, 1, 4);
	put(&b, "x", 1);
	le(&b, 1, 4);
	le(&b, 1ull << 61, 8);
	le(&b, 0, 4); /* f32 */
	b.b[b.n++] = 0;
	le(&b, 16 + 42, 8);
	le(&b, 1ull << 63, 8);
	refused(&b, -EBADMSG, "past the end");
	/* index_len past the end of the file */
	b.n = 0;
	put(&b, "GPTRSTEN", 8);
	le(&b, 2, 4);
	le(&b, 0xffffffffu, 4);
	le(&b, 0, 4);
	refused(&b, -EBADMSG, "index_len");
}
END_TEST

START_TEST(primitiv_limits)
{
	struct buf b = {.n = 0};

	cap_memory();
	/* a Model of a billion parameters, and nothing after */
	put(&b, "\xce\x00\x00\x00\x00\xce\x00\x00\x00\x01\xce\x00\x00\x03\x00",
	    15);
	b.b[b.n++] = 0xce;
	be(&b, 1000000000, 4);
	refused(&b, -EBADMSG, "parameter_count");
}
END_TEST

START_TEST(tsr_limits)
{
	struct buf b = {.n = 0};

	cap_memory();
	/* INT32 [2^31-1, 2^31-1, 2]: 2^63 - 2^33 + 2 elements x 4 bytes */
	put(&b, "TSR!", 4);
	le(&b, 1, 4);
	le(&b, 64, 4);
	le(&b, 0, 4);
	le(&b, 3, 4);
	le(&b, 3, 4);
	le(&b, 1, 4);
	le(&b, 0x7fffffff, 4);
	le(&b, 0x7fffffff, 4);
	le(&b, 2, 4);
	le(&b, 0x7ffffffe00000002ull, 8);
	le(&b, 0, 8);
	le(&b, 0, 8);
	refused(&b, -EBADMSG, "total_elements");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("limits");
	TCase *tc = tcase_create("limits");

	/* each test in its own process (Check's default): the cap stays there
	 */
	tcase_add_test(tc, ztensor_limits);
	tcase_add_test(tc, burnpack_limits);
	tcase_add_test(tc, gptrs_limits);
	tcase_add_test(tc, primitiv_limits);
	tcase_add_test(tc, tsr_limits);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
