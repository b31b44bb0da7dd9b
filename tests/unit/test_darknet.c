// SPDX-License-Identifier: MIT
/*
 * Darknet reader: the files tests/fixtures/darknet/generate.py wrote from
 * the spec (every array against the writer's own sha256), mounted from the
 * .weights and from the .cfg; a cfg read from memory; the rejects; the
 * real Yolo-Fastest pair of ../shared/real (skipped when absent) against
 * tests/fixtures/darknet/reference_reader.py, an independent reader.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/format.h"
#include "core/source.h"
#include "core/tree.h"
#include "testutil.h"

/* @path loads as darknet with exactly the tensors of @want, in order */
static void expect_tensors(const char *path, const json_t *want)
{
	struct tfs_image *img;
	struct tfs_diag d;
	json_t *meta;

	ck_assert_msg(tu_load_file(path, &img, &d) == 0, "%s: %s", path, d.msg);
	ck_assert_str_eq(img->tree->format, "darknet");
	tu_expect_tensor_list(img, json_object_get(want, "tensors"));
	meta = tu_meta_json(img, "metadata.json");
	ck_assert_int_eq(
		json_integer_value(json_object_get(
			json_object_get(meta, "weights"), "header_bytes")),
		json_integer_value(json_object_get(want, "header_bytes")));
	ck_assert_int_eq(json_integer_value(json_object_get(
				 json_object_get(meta, "weights"), "seen")),
			 json_integer_value(json_object_get(want, "seen")));
	json_decref(meta);
	tfs_image_close(img);
}

START_TEST(generated)
{
	json_t *exp = tu_load_json(tu_testdata("darknet/expected.json"));
	const json_t *valid = json_object_get(exp, "valid"), *want;
	const char *file;
	char rel[128];
	size_t n = 0;

	json_object_foreach((json_t *)valid, file, want)
	{
		snprintf(rel, sizeof(rel), "darknet/valid/%s", file);
		expect_tensors(tu_testdata(rel), want);
		/* the same tensors mounted from the .cfg beside it */
		strcpy(rel + strlen(rel) - strlen("weights"), "cfg");
		expect_tensors(tu_testdata(rel), want);
		n++;
	}
	ck_assert_uint_eq(n, 2);
	json_decref(exp);
}
END_TEST

/* a cfg from memory: every layer walked, the weights not found */
START_TEST(cfg_in_memory)
{
	struct tfs_image *img;
	struct tfs_diag d;
	uint8_t *b;
	size_t len;

	b = tu_read_file(tu_testdata("darknet/valid/tiny.cfg"), &len);
	ck_assert_int_eq(tu_load_mem(b, len, &img, &d), 0);
	ck_assert_str_eq(img->tree->format, "darknet");
	ck_assert_uint_eq(img->tree->ntensors, 15);
	ck_assert_str_eq(tu_xattr(img, "6_connected/weights", "shape"),
			 "[5,128]");
	ck_assert_ptr_nonnull(
		tu_xattr(img, "6_connected/weights", "unreadable"));
	tfs_image_close(img);
	free(b);
}
END_TEST

START_TEST(probe)
{
	static const char cfg[] = "# c\n\n ; x\n [ net ]\nwidth=1\n";
	static const char not_cfg[] = "[convolutional]\n";
	const struct tfs_format *f = tfs_format_by_name("darknet");
	struct tfs_source s;

	tfs_source_init_memory(&s, cfg, sizeof(cfg) - 1);
	ck_assert_int_eq(f->probe(&s), 60);
	tfs_source_init_memory(&s, not_cfg, sizeof(not_cfg) - 1);
	ck_assert_int_eq(f->probe(&s), 0);
	/* a .weights is known by its name only: not from memory */
	tfs_source_init_memory(&s, "\0\0\0\0\2\0\0\0\5\0\0\0\0\0\0\0", 16);
	ck_assert_int_eq(f->probe(&s), 0);
}
END_TEST

START_TEST(rejects)
{
	json_t *exp = tu_load_json(tu_testdata("darknet/expected.json"));

	ck_assert_uint_eq(tu_expect_rejects_json("darknet/reject",
						 json_object_get(exp, "reject"),
						 "darknet"),
			  11);
	json_decref(exp);
}
END_TEST

/* Yolo-Fastest 1.1 (dog-qiuqiu/Yolo-Fastest): 414 arrays, 84 conv layers */
START_TEST(real_yolo_fastest)
{
	json_t *exp;

	TU_NEED_SHARED("../real/darknet/yolo-fastest-1.1.weights");
	exp = tu_load_json(
		tu_testdata("darknet/real-yolo-fastest-1.1.expected.json"));
	expect_tensors(tu_fixture("../real/darknet/yolo-fastest-1.1.weights"),
		       exp);
	expect_tensors(tu_fixture("../real/darknet/yolo-fastest-1.1.cfg"), exp);
	json_decref(exp);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("darknet");
	TCase *tc = tcase_create("darknet");

	tcase_add_test(tc, generated);
	tcase_add_test(tc, cfg_in_memory);
	tcase_add_test(tc, probe);
	tcase_add_test(tc, rejects);
	tcase_add_test(tc, real_yolo_fastest);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
