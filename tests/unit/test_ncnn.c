// SPDX-License-Identifier: MIT
/*
 * ncnn reader: the files tests/fixtures/ncnn/generate.py wrote from the
 * spec and ncnn's sources (every Mat against the writer's own sha256), a
 * .param without its .bin, a .param from memory, the rejects, and the real
 * Ultra-Light-Fast-Generic-Face-Detector slim_320 pair of ../shared/real
 * (skipped when absent) against tests/fixtures/ncnn/reference_reader.py,
 * an independent reader.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/format.h"
#include "core/source.h"
#include "core/tree.h"
#include "testutil.h"

static void expect_model(const char *path, const json_t *want)
{
	struct tfs_image *img;
	struct tfs_diag d;

	ck_assert_msg(tu_load_file(path, &img, &d) == 0, "%s: %s", path, d.msg);
	ck_assert_str_eq(img->tree->format, "ncnn");
	tu_expect_tensor_list(img, json_object_get(want, "tensors"));
	tfs_image_close(img);
}

START_TEST(generated)
{
	json_t *exp = tu_load_json(tu_testdata("ncnn/expected.json"));

	expect_model(
		tu_testdata("ncnn/model/tiny.param"),
		json_object_get(json_object_get(exp, "model"), "tiny.param"));
	json_decref(exp);
}
END_TEST

/* without the .bin (beside it, or read from memory): listed, unreadable */
START_TEST(without_bin)
{
	struct tfs_image *img;
	struct tfs_diag d;
	uint8_t *b;
	size_t len;
	int pass;

	for (pass = 0; pass < 2; pass++) {
		if (pass) {
			b = tu_read_file(tu_testdata("ncnn/model/tiny.param"),
					 &len);
			ck_assert_int_eq(tu_load_mem(b, len, &img, &d), 0);
		} else {
			b = NULL;
			ck_assert_int_eq(
				tu_load_file(tu_testdata("ncnn/valid/"
							 "alone.param"),
					     &img, &d),
				0);
		}
		ck_assert_uint_eq(img->tree->ntensors, 13);
		ck_assert_str_eq(tu_xattr(img, "fc/weight_data", "shape"),
				 "[21]");
		ck_assert_ptr_nonnull(
			tu_xattr(img, "fc/weight_data", "unreadable"));
		tfs_image_close(img);
		free(b);
	}
}
END_TEST

START_TEST(probe)
{
	static const char param[] = "\n7767517\n0 0\n";
	static const char other[] = "77675170\n";
	const struct tfs_format *f = tfs_format_by_name("ncnn");
	struct tfs_source s;

	tfs_source_init_memory(&s, param, sizeof(param) - 1);
	ck_assert_int_eq(f->probe(&s), 90);
	tfs_source_init_memory(&s, other, sizeof(other) - 1);
	ck_assert_int_eq(f->probe(&s), 0);
}
END_TEST

START_TEST(rejects)
{
	json_t *exp = tu_load_json(tu_testdata("ncnn/expected.json"));

	ck_assert_uint_eq(tu_expect_rejects_json("ncnn/reject",
						 json_object_get(exp, "reject"),
						 "ncnn"),
			  10);
	json_decref(exp);
}
END_TEST

/* Ultra-Light-Fast-Generic-Face-Detector-1MB's slim_320: 84 Mats */
START_TEST(real_slim_320)
{
	json_t *exp;

	TU_NEED_SHARED("../real/ncnn/slim_320.param");
	exp = tu_load_json(tu_testdata("ncnn/real-slim_320.expected.json"));
	expect_model(tu_fixture("../real/ncnn/slim_320.param"), exp);
	json_decref(exp);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ncnn");
	TCase *tc = tcase_create("ncnn");

	tcase_add_test(tc, generated);
	tcase_add_test(tc, without_bin);
	tcase_add_test(tc, probe);
	tcase_add_test(tc, rejects);
	tcase_add_test(tc, real_slim_320);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
