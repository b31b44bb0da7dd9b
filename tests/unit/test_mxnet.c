// SPDX-License-Identifier: MIT
/*
 * MXNet reader: the files tests/fixtures/mxnet/generate.py wrote from the
 * spec and mxnet's NDArray::Save/Load (V1, V2, V3 and legacy records,
 * eight dtypes, an unnamed list, an empty array), the rejects, and the
 * real RetinaFace .params of ../shared/real (skipped when absent) against
 * tests/fixtures/mxnet/reference_reader.py, an independent reader.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/format.h"
#include "core/source.h"
#include "core/tree.h"
#include "testutil.h"

static void expect_list(const char *path, const json_t *want)
{
	struct tfs_image *img;
	struct tfs_diag d;

	ck_assert_msg(tu_load_file(path, &img, &d) == 0, "%s: %s", path, d.msg);
	ck_assert_str_eq(img->tree->format, "mxnet");
	tu_expect_tensor_list(img, json_object_get(want, "tensors"));
	if (json_object_get(want, "empty"))
		ck_assert_uint_eq(
			img->tree->nwarnings,
			json_integer_value(json_object_get(want, "empty")));
	tfs_image_close(img);
}

START_TEST(generated)
{
	json_t *exp = tu_load_json(tu_testdata("mxnet/expected.json"));
	const json_t *valid = json_object_get(exp, "valid");

	expect_list(tu_testdata("mxnet/valid/model-0000.params"),
		    json_object_get(valid, "model-0000.params"));
	expect_list(tu_testdata("mxnet/valid/unnamed.params"),
		    json_object_get(valid, "unnamed.params"));
	json_decref(exp);
}
END_TEST

START_TEST(probe)
{
	static const uint8_t list[24] = {0x12, 0x01};
	static const uint8_t other[24] = {0x12, 0x01, 0, 0, 0, 0, 0, 0, 1};
	const struct tfs_format *f = tfs_format_by_name("mxnet");
	struct tfs_source s;

	tfs_source_init_memory(&s, list, sizeof(list));
	ck_assert_int_eq(f->probe(&s), 100);
	tfs_source_init_memory(&s, other, sizeof(other));
	ck_assert_int_eq(f->probe(&s), 0);
}
END_TEST

START_TEST(rejects)
{
	json_t *exp = tu_load_json(tu_testdata("mxnet/expected.json"));

	ck_assert_uint_eq(tu_expect_rejects_json("mxnet/reject",
						 json_object_get(exp, "reject"),
						 "mxnet"),
			  9);
	json_decref(exp);
}
END_TEST

/* RetinaFace (MXNet symbol + params): 267 arrays named arg:/aux: */
START_TEST(real_retinaface)
{
	json_t *exp;

	TU_NEED_SHARED("../real/mxnet/retinaface.params");
	exp = tu_load_json(tu_testdata("mxnet/real-retinaface.expected.json"));
	expect_list(tu_fixture("../real/mxnet/retinaface.params"), exp);
	json_decref(exp);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mxnet");
	TCase *tc = tcase_create("mxnet");

	tcase_add_test(tc, generated);
	tcase_add_test(tc, probe);
	tcase_add_test(tc, rejects);
	tcase_add_test(tc, real_retinaface);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
