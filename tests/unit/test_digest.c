// SPDX-License-Identifier: MIT
/*
 * Digests: CRC-32C against its published check value and a bit-at-a-time
 * reference written here, SHA-256 against FIPS 180-2 vectors, and the text
 * forms containers use.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/digest.h"
#include "testutil.h"

START_TEST(crc32c_check_value)
{
	ck_assert_uint_eq(tfs_crc32c(0, "123456789", 9), 0xE3069283u);
	ck_assert_uint_eq(tfs_crc32c_sw(0, "123456789", 9), 0xE3069283u);
	ck_assert_uint_eq(tfs_crc32c(0, "", 0), 0);
	/* RFC 3720 B.4: 32 bytes of zeros, of 0xff */
	{
		uint8_t z[32];

		memset(z, 0, sizeof(z));
		ck_assert_uint_eq(tfs_crc32c(0, z, 32), 0x8A9136AAu);
		memset(z, 0xff, sizeof(z));
		ck_assert_uint_eq(tfs_crc32c(0, z, 32), 0x62A8AB43u);
	}
}
END_TEST

/* every length and misalignment up to a few words, and chaining */
START_TEST(crc32c_matches_reference)
{
	uint8_t buf[300];
	size_t start, len, cut;
	uint32_t want;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	for (start = 0; start < 9; start++) {
		for (len = 0; len + start <= sizeof(buf); len += 7) {
			want = tu_crc32c_bitwise(buf + start, len);
			ck_assert_uint_eq(tfs_crc32c(0, buf + start, len),
					  want);
			ck_assert_uint_eq(tfs_crc32c_sw(0, buf + start, len),
					  want);
			cut = len / 3;
			ck_assert_uint_eq(
				tfs_crc32c(tfs_crc32c(0, buf + start, cut),
					   buf + start + cut, len - cut),
				want);
		}
	}
}
END_TEST

START_TEST(sha256_vectors)
{
	struct tfs_digest want, got;

	ck_assert_int_eq(tfs_digest_parse("sha256:ba7816bf8f01cfea414140de5da"
					  "e2223b00361a396177a9cb410ff61f200"
					  "15ad",
					  &want),
			 0);
	ck_assert_int_eq(tfs_digest_check(&want, "abc", 3, &got), 0);
	ck_assert_int_eq(tfs_digest_check(&want, "abd", 3, &got), -EBADMSG);
	ck_assert_int_eq(tfs_digest_parse("sha256:E3B0C44298FC1C149AFBF4C8996"
					  "FB92427AE41E4649B934CA495991B7852"
					  "B855",
					  &want),
			 0);
	ck_assert_int_eq(tfs_digest_check(&want, "", 0, NULL), 0);
}
END_TEST

/* XXH3-64, seed 0: the vectors of shared/specs/ztensor-v2.md section 7 */
START_TEST(xxh3_vectors)
{
	static const struct {
		const char *text;
		const char *in;
		size_t len;
	} v[] = {
		{"xxh3:2d06800538d394c2", "", 0},
		{"xxh3:78af5f94892f3950", "abc", 3},
		{"xxh3:f88e5e79bd7c033d", "\xab\xab\xab\xab\xab\xab\xab\xab",
		 8},
		{"xxh3:a74131e62938d20e", "\1\1\1\1\1\1\1\1\1\1\1\1\1\1\1\1",
		 16},
	};
	struct tfs_digest want, got;
	char text[TFS_DIGEST_TEXT_MAX];
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		ck_assert_int_eq(tfs_digest_parse(v[i].text, &want), 0);
		ck_assert_int_eq(want.alg, TFS_DIGEST_XXH3);
		ck_assert_uint_eq(want.len, 8);
		ck_assert_int_eq(
			tfs_digest_check(&want, v[i].in, v[i].len, &got), 0);
		tfs_digest_format(&got, text, sizeof(text));
		ck_assert_str_eq(text, v[i].text);
	}
	ck_assert_int_eq(tfs_digest_check(&want, "x", 1, NULL), -EBADMSG);
	/* exactly 16 hex digits */
	ck_assert_int_eq(tfs_digest_parse("xxh3:2d06800538d394c", &want),
			 -EBADMSG);
	ck_assert_int_eq(tfs_digest_parse("xxh3:2d06800538d394c2f", &want),
			 -EBADMSG);
	ck_assert_int_eq(tfs_digest_parse("xxh3:2d06800538d394cg", &want),
			 -EBADMSG);
	ck_assert_str_eq(tfs_digest_alg_name(TFS_DIGEST_XXH3), "xxh3");
}
END_TEST

START_TEST(incremental_equals_oneshot)
{
	static const enum tfs_digest_alg algs[] = {
		TFS_DIGEST_CRC32C, TFS_DIGEST_SHA256, TFS_DIGEST_XXH3};
	struct tfs_digest_ctx *c;
	struct tfs_digest a, b;
	uint8_t buf[1000];
	size_t i;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i ^ (i >> 3));
	for (i = 0; i < sizeof(algs) / sizeof(algs[0]); i++) {
		ck_assert_int_eq(tfs_digest_begin(&c, algs[i]), 0);
		ck_assert_int_eq(tfs_digest_update(c, buf, 1), 0);
		ck_assert_int_eq(tfs_digest_update(c, buf + 1, 600), 0);
		ck_assert_int_eq(tfs_digest_update(c, buf + 601, 399), 0);
		ck_assert_int_eq(tfs_digest_final(c, &a), 0);
		b = a;
		ck_assert_int_eq(tfs_digest_check(&b, buf, sizeof(buf), &a), 0);
		ck_assert_mem_eq(a.value, b.value, a.len);
	}
	ck_assert_int_eq(tfs_digest_begin(&c, TFS_DIGEST_UNKNOWN), -EINVAL);
}
END_TEST

START_TEST(parse_text)
{
	struct tfs_digest d;
	char text[TFS_DIGEST_TEXT_MAX];

	/* the writer's form, round trip */
	ck_assert_int_eq(tfs_digest_parse("crc32c:0x3302B302", &d), 0);
	ck_assert_int_eq(d.alg, TFS_DIGEST_CRC32C);
	ck_assert_uint_eq(d.len, 4);
	ck_assert_uint_eq(d.value[0], 0x33);
	ck_assert_uint_eq(d.value[3], 0x02);
	tfs_digest_format(&d, text, sizeof(text));
	ck_assert_str_eq(text, "crc32c:0x3302B302");
	/* accepted variants */
	ck_assert_int_eq(tfs_digest_parse("crc32c:0X3302b302", &d), 0);
	ck_assert_int_eq(tfs_digest_parse("crc32c:0x1", &d), 0);
	ck_assert_uint_eq(d.value[3], 1);
	ck_assert_int_eq(tfs_digest_parse("crc32c:0x0000000001", &d), 0);
	/* malformed values of a known algorithm */
	ck_assert_int_eq(tfs_digest_parse("crc32c:0x", &d), -EBADMSG);
	ck_assert_int_eq(tfs_digest_parse("crc32c:0x123456789", &d), -EBADMSG);
	ck_assert_int_eq(tfs_digest_parse("crc32c:0x12G4", &d), -EBADMSG);
	ck_assert_int_eq(tfs_digest_parse("crc32c:3302B302", &d), -EBADMSG);
	ck_assert_int_eq(tfs_digest_parse("sha256:abc", &d), -EBADMSG);
	ck_assert_int_eq(tfs_digest_parse("sha256:0x57e4397ccfb34c2040f50ff90"
					  "f7850667aac626e0959bd3a4c92ec8ed6"
					  "2dc8",
					  &d),
			 -EBADMSG);
	/* unknown algorithms are not errors */
	ck_assert_int_eq(tfs_digest_parse("blake3:00ff", &d), 0);
	ck_assert_int_eq(d.alg, TFS_DIGEST_UNKNOWN);
	ck_assert_int_eq(tfs_digest_parse("CRC32C:0x1", &d), 0);
	ck_assert_int_eq(d.alg, TFS_DIGEST_UNKNOWN);
	ck_assert_int_eq(tfs_digest_parse(NULL, &d), 0);
	ck_assert_int_eq(d.alg, TFS_DIGEST_NONE);
	ck_assert_str_eq(tfs_digest_alg_name(TFS_DIGEST_SHA256), "sha256");
	/* sha256 text comes back lowercase */
	ck_assert_int_eq(tfs_digest_parse("sha256:57E4397CCFB34C2040F50FF90F7"
					  "850667AAC626E0959BD3A4C92EC8ED62D"
					  "C888",
					  &d),
			 0);
	tfs_digest_format(&d, text, sizeof(text));
	ck_assert_str_eq(text, "sha256:57e4397ccfb34c2040f50ff90f7850667aac6"
			       "26e0959bd3a4c92ec8ed62dc888");
}
END_TEST

/* the zTensor fixture digests, over their stored bytes (spec section 13) */
START_TEST(fixture_digests)
{
	static const uint8_t weight[24] = {
		0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0x40,
		0x00, 0x00, 0x40, 0x40, 0x00, 0x00, 0x80, 0x40,
		0x00, 0x00, 0xa0, 0x40, 0x00, 0x00, 0xc0, 0x40,
	};
	static const uint8_t frame_head[9] = {0x28, 0xb5, 0x2f, 0xfd, 0x00,
					      0x58, 0xc1, 0x00, 0x00};
	static const int64_t b[2] = {7, -1};
	uint8_t frame[33];
	struct tfs_digest d;

	/* the 33-byte raw-block frame the spec spells out */
	memcpy(frame, frame_head, 9);
	memcpy(frame + 9, weight, 24);
	ck_assert_int_eq(tfs_digest_parse("crc32c:0x3302B302", &d), 0);
	ck_assert_int_eq(tfs_digest_check(&d, frame, sizeof(frame), NULL), 0);
	/* v12_multi 'b': int64 7, -1 (little-endian host) */
	ck_assert_int_eq(tfs_digest_parse("sha256:57e4397ccfb34c2040f50ff90f7"
					  "850667aac626e0959bd3a4c92ec8ed62d"
					  "c888",
					  &d),
			 0);
	ck_assert_int_eq(tfs_digest_check(&d, b, sizeof(b), NULL), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("digest");
	TCase *tc = tcase_create("digest");

	tcase_add_test(tc, crc32c_check_value);
	tcase_add_test(tc, crc32c_matches_reference);
	tcase_add_test(tc, sha256_vectors);
	tcase_add_test(tc, xxh3_vectors);
	tcase_add_test(tc, incremental_equals_oneshot);
	tcase_add_test(tc, parse_text);
	tcase_add_test(tc, fixture_digests);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
