// SPDX-License-Identifier: MIT
/* zTensor reader: the fixtures and hand-broken v1.0 files. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tensorfs/tree.h"
#include "testutil.h"

#define WEIGHT_SHA "24ae2dfe8df57c1b80e54cef3d90ac3b417fd98973345a5f616bbc9a75dcc202"

START_TEST(v10_raw)
{
	struct tfs_image *img;
	struct tfs_diag d;
	char hex[65];
	uint8_t *data;
	size_t len;

	ck_assert_int_eq(
		tu_load_file(tu_fixture("ztensor/v10_f32_2x3_raw.zt"), &img, &d),
		0);
	ck_assert_str_eq(img->tree->format, "ztensor");
	ck_assert_str_eq(tu_xattr(img, "weight", "dtype"), "float32");
	ck_assert_str_eq(tu_xattr(img, "weight", "shape"), "[2,3]");
	ck_assert_str_eq(tu_xattr(img, "weight", "offset"), "64");
	data = tu_read_node(img, tfs_tree_resolve(img->tree, "weight"), &len);
	tu_sha256_hex(data, len, hex);
	ck_assert_str_eq(hex, WEIGHT_SHA);
	free(data);
	tfs_image_close(img);
}
END_TEST

static void expect_reject_buf(const uint8_t *b, size_t len, int err,
			      const char *word)
{
	struct tfs_image *img = NULL;
	struct tfs_diag d;

	ck_assert_int_eq(tu_load_mem(b, len, &img, &d), err);
	ck_assert_ptr_nonnull(strstr(d.msg, word));
	ck_assert(d.has_offset);
}

/* v10_f32_2x3_raw.zt: manifest at 88, M = 144 at 232 (spec section 11) */
START_TEST(v10_rejects)
{
	size_t len;
	uint8_t *b = tu_read_file(tu_fixture("ztensor/v10_f32_2x3_raw.zt"),
				  &len);
	uint8_t *c = malloc(len);

	/* manifest size past the start of the file */
	memcpy(c, b, len);
	c[len - 8] = 0xff;
	expect_reject_buf(c, len, -EBADMSG, "manifest_size");
	/* truncated: the trailer now points into the data */
	expect_reject_buf(b, len - 1, -EBADMSG, "");
	/* offset 64 -> 65: misaligned */
	memcpy(c, b, len);
	{
		uint8_t *p = memmem(c + 88, len - 88, "\x66offset\x18\x40", 9);

		ck_assert_ptr_nonnull(p);
		p[8] = 0x41;
		expect_reject_buf(c, len, -EBADMSG, "multiple of 64");
		/* offset 128: the data would overlap the manifest */
		p[8] = 0x80;
		expect_reject_buf(c, len, -EBADMSG, "outside");
	}
	/* length 24 -> 28: does not match shape x 4 */
	memcpy(c, b, len);
	{
		uint8_t *p = memmem(c + 88, len - 88, "\x66length\x18\x18", 9);

		p[8] = 28;
		expect_reject_buf(c, len, -EBADMSG, "");
	}
	/* an unknown dtype: "float32" -> "floa732" */
	memcpy(c, b, len);
	memcpy(memmem(c + 88, len - 88, "float32", 7), "floa732", 7);
	expect_reject_buf(c, len, -EBADMSG, "unknown dtype");
	/* CBOR garbage in the manifest */
	memcpy(c, b, len);
	memset(c + 88, 0xff, 8);
	expect_reject_buf(c, len, -EBADMSG, "CBOR");
	/* bad magic */
	memcpy(c, b, len);
	c[7] = '1';
	{
		struct tfs_image *img = NULL;
		struct tfs_diag d;

		ck_assert_int_eq(tu_load_mem(c, len, &img, &d), -ENOEXEC);
	}
	free(c);
	free(b);
}
END_TEST

START_TEST(unsupported_are_refused)
{
	static const char *const files[] = {
		"ztensor/v10_f32_2x3_zstd_crc.zt",
		"ztensor/v01_f32_2x3_raw.zt",
		"ztensor/v12_multi.zt",
	};
	struct tfs_image *img = NULL;
	struct tfs_diag d;
	size_t i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		ck_assert_int_eq(tu_load_file(tu_fixture(files[i]), &img, &d),
				 -ENOTSUP);
		ck_assert_ptr_nonnull(strstr(d.msg, "not supported"));
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ztensor");
	TCase *tc = tcase_create("ztensor");

	tcase_add_test(tc, v10_raw);
	tcase_add_test(tc, v10_rejects);
	tcase_add_test(tc, unsupported_are_refused);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
