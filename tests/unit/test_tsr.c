// SPDX-License-Identifier: MIT
/*
 * TSR reader: the real fixtures (../shared, skipped case by case without
 * it), the project's generated ones, and hand-broken headers.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/tree.h"
#include "testutil.h"

/*
 * expected values from shared/specs/tsr.md section 8; @path is absolute
 * (tu_fixture() for ../shared, tu_testdata() for the project's files)
 */
static void check_fixture(const char *path, const char *dtype,
			  const char *shape, size_t bytes, const char *sha)
{
	struct tfs_image *img;
	struct tfs_diag d;
	char hex[65];
	uint8_t *data;
	size_t len;
	uint32_t n;

	ck_assert_int_eq(tu_load_file(path, &img, &d), 0);
	ck_assert_str_eq(img->tree->format, "tsr");
	n = tfs_tree_resolve(img->tree, "tensor");
	ck_assert_uint_ne(n, TFS_NO_NODE);
	ck_assert_str_eq(tu_xattr(img, "tensor", "dtype"), dtype);
	ck_assert_str_eq(tu_xattr(img, "tensor", "shape"), shape);
	ck_assert_str_eq(tu_xattr(img, "", "format"), "tsr");
	data = tu_read_node(img, n, &len);
	ck_assert_uint_eq(len, bytes);
	tu_sha256_hex(data, len, hex);
	ck_assert_str_eq(hex, sha);
	free(data);
	tfs_image_close(img);
}

START_TEST(real_test_labels)
{
	struct tfs_image *img;
	struct tfs_diag d;
	const int32_t first[] = {7, 2, 1, 0, 4, 1, 4, 9, 5, 9, 0, 6};
	int32_t v[12];
	struct tfs_view view;

	/* MNIST labels written by tech-renaissance: real, in ../shared */
	TU_NEED_SHARED("tsr/test_labels.tsr");
	check_fixture(
		tu_fixture("tsr/test_labels.tsr"), "int32", "[10000]", 40000,
		"52aa149c856ca033d02e1d2e5cc61033b4c56ed4a56f0edc328206a178c42126");
	ck_assert_int_eq(
		tu_load_file(tu_fixture("tsr/test_labels.tsr"), &img, &d), 0);
	ck_assert_int_eq(tfs_image_read(img,
					tfs_tree_resolve(img->tree, "tensor"),
					0, sizeof(v), &view),
			 0);
	memcpy(v, view.data, sizeof(v));
	ck_assert_mem_eq(v, first, sizeof(first));
	tfs_image_close(img);
}
END_TEST

START_TEST(real_train_labels)
{
	TU_NEED_SHARED("tsr/train_labels.tsr");
	check_fixture(
		tu_fixture("tsr/train_labels.tsr"), "int32", "[60000]", 240000,
		"ba2e26c82ab7a46fbcd5ec6de8eee4d541cf3829f5050669177da23b515defeb");
}
END_TEST

/* the spec's three synthesized files in tests/fixtures/@dir */
static void check_synthesized(const char *dir)
{
	char rel[128];

	snprintf(rel, sizeof(rel), "%s/fp32_2x3.tsr", dir);
	check_fixture(
		tu_testdata(rel), "float32", "[2,3]", 24,
		"e2c0a71510b5394df7773b63fb5f54372b84c3564e67811bde7d665be227976d");
	snprintf(rel, sizeof(rel), "%s/fp32_1x5.tsr", dir);
	check_fixture(
		tu_testdata(rel), "float32", "[1,5]", 20,
		"561101624175594d3810c811e621f9c9992a82b919a94b00e3ffdd1eaf93be94");
	snprintf(rel, sizeof(rel), "%s/int8_scalar.tsr", dir);
	check_fixture(
		tu_testdata(rel), "int8", "[]", 1,
		"d52022534fa2dba3bb8a45809c425f42a5dd8786ef8d206fcff19c1fd66725b4");
}

/*
 * written by tests/fixtures/tsr/generate.py: the same bytes as
 * shared/fixtures/tsr/synthesized (the generator checks that when
 * ../shared is there)
 */
START_TEST(generated)
{
	check_synthesized("tsr/valid");
}
END_TEST

/* tests/fixtures/tsr/valid: ndim 3 and 4, and a zero-length tensor */
START_TEST(repo_samples)
{
	static const int8_t i8[6] = {1, -1, 2, -2, 3, -3};
	struct tfs_image *img;
	struct tfs_diag d;
	float f[8];
	uint8_t *data;
	size_t len;
	int i;

	ck_assert_int_eq(
		tu_load_file(tu_testdata("tsr/valid/fp32_3d_2x2x2.tsr"), &img,
			     &d),
		0);
	tu_expect_xattr(img, "tensor", "shape", "[2,2,2]");
	data = tu_read_node(img, tfs_tree_resolve(img->tree, "tensor"), &len);
	for (i = 0; i < 8; i++)
		f[i] = (float)i;
	ck_assert_uint_eq(len, sizeof(f));
	ck_assert_mem_eq(data, f, sizeof(f));
	free(data);
	tfs_image_close(img);

	ck_assert_int_eq(
		tu_load_file(tu_testdata("tsr/valid/int8_4d.tsr"), &img, &d),
		0);
	tu_expect_xattr(img, "tensor", "shape", "[1,2,1,3]");
	tu_expect_xattr(img, "tensor", "dtype", "int8");
	data = tu_read_node(img, tfs_tree_resolve(img->tree, "tensor"), &len);
	ck_assert_uint_eq(len, 6);
	ck_assert_mem_eq(data, i8, 6);
	free(data);
	tfs_image_close(img);

	ck_assert_int_eq(
		tu_load_file(tu_testdata("tsr/valid/int32_zero_len.tsr"), &img,
			     &d),
		0);
	tu_expect_xattr(img, "tensor", "shape", "[0,5]");
	ck_assert_uint_eq(
		tfs_node_size(img->tree, tfs_tree_resolve(img->tree, "tensor")),
		0);
	tfs_image_close(img);
}
END_TEST

/* a copy of fp32_2x3.tsr with a little-endian field patched */
static uint8_t *patched(size_t *len, size_t off, unsigned width, uint64_t v)
{
	uint8_t *b = tu_read_file(tu_testdata("tsr/valid/fp32_2x3.tsr"), len);
	unsigned i;

	for (i = 0; i < width; i++)
		b[off + i] = (uint8_t)(v >> (8 * i));
	return b;
}

START_TEST(reject_fields)
{
	size_t len;
	uint8_t *b;

	b = patched(&len, 4, 4, 2);
	tu_expect_reject(b, len, -ENOTSUP, "version", 4);
	free(b);
	b = patched(&len, 8, 4, 128);
	tu_expect_reject(b, len, -EBADMSG, "header_size", 8);
	free(b);
	b = patched(&len, 16, 4, 0);
	tu_expect_reject(b, len, -EBADMSG, "dtype", 16);
	free(b);
	b = patched(&len, 16, 4, 4);
	tu_expect_reject(b, len, -EBADMSG, "dtype", 16);
	free(b);
	b = patched(&len, 20, 4, 5);
	tu_expect_reject(b, len, -EBADMSG, "ndim", 20);
	free(b);
	b = patched(&len, 20, 4, 0xffffffff);
	tu_expect_reject(b, len, -EBADMSG, "ndim", 20);
	free(b);
	/* dims 1,1,2,3 -> 1,1,2,-3 */
	b = patched(&len, 36, 4, (uint32_t)-3);
	tu_expect_reject(b, len, -EBADMSG, "negative", 36);
	free(b);
	/* unused leading dim must be 1 */
	b = patched(&len, 28, 4, 2);
	tu_expect_reject(b, len, -EBADMSG, "unused", 28);
	free(b);
	/* total_elements does not match the dims */
	b = patched(&len, 40, 8, 7);
	tu_expect_reject(b, len, -EBADMSG, "total_elements", 40);
	free(b);
}
END_TEST

START_TEST(reject_sizes)
{
	uint8_t *b, *big;
	size_t len;

	b = patched(&len, 0, 1, 'T');
	tu_expect_reject(b, 63, -EBADMSG, "header", 63);
	tu_expect_reject(b, len - 1, -EBADMSG, "data", len - 1);
	big = calloc(1, len + 1);
	memcpy(big, b, len);
	tu_expect_reject(big, len + 1, -EBADMSG, "data", len);
	free(big);
	free(b);
	/* 4 dims of 2^31-1: the product overflows 64 bits */
	b = patched(&len, 20, 4, 4);
	for (int i = 0; i < 4; i++)
		memcpy(b + 24 + 4 * i, "\xff\xff\xff\x7f", 4);
	tu_expect_reject(b, len, -EBADMSG, "overflow", 24);
	free(b);
	/* a huge total whose byte count overflows */
	b = patched(&len, 20, 4, 4);
	memcpy(b + 24,
	       "\xff\xff\xff\x7f\xff\xff\xff\x7f\x02\x00\x00\x00"
	       "\x01\x00\x00\x00",
	       16);
	memcpy(b + 40, "\x02\x00\x00\x00\xfe\xff\xff\x7f", 8);
	tu_expect_reject(b, len, -EBADMSG, "total_elements", 40);
	free(b);
}
END_TEST

/* a "TSR4" file (the successor's multi-tensor format) is refused */
static void expect_tsr4_refused(const char *path)
{
	struct tfs_image *img = NULL;
	struct tfs_diag d;
	size_t len;
	uint8_t *b = tu_read_file(path, &len);

	ck_assert_int_eq(tu_load_mem(b, len, &img, &d), -ENOTSUP);
	ck_assert_ptr_nonnull(strstr(d.msg, "TSR4"));
	ck_assert_ptr_null(img);
	free(b);
}

START_TEST(reject_magic)
{
	struct tfs_image *img = NULL;
	struct tfs_diag d;
	size_t len;
	uint8_t *b = patched(&len, 0, 4, 0x21525354 + 1);

	ck_assert_int_eq(tu_load_mem(b, len, &img, &d), -ENOEXEC);
	free(b);
	/* written by tests/fixtures/tsr/generate.py from the spec */
	expect_tsr4_refused(tu_testdata("tsr/reject/tsr4_fp16.tsr"));
}
END_TEST

/* one written by tech-renaissance/renaissance itself */
START_TEST(real_tsr4)
{
	TU_NEED_SHARED("tsr4/test_fp16.tsr");
	expect_tsr4_refused(tu_fixture("tsr4/test_fp16.tsr"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tsr");
	TCase *tc = tcase_create("tsr");

	tcase_add_test(tc, real_test_labels);
	tcase_add_test(tc, real_train_labels);
	tcase_add_test(tc, generated);
	tcase_add_test(tc, repo_samples);
	tcase_add_test(tc, reject_fields);
	tcase_add_test(tc, reject_sizes);
	tcase_add_test(tc, reject_magic);
	tcase_add_test(tc, real_tsr4);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
