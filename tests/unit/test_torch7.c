// SPDX-License-Identifier: MIT
/*
 * Torch7 reader: the file tests/fixtures/torch7/generate.py wrote from
 * torch7's File.lua (a module tree with float and double tensors, a
 * transposed view gathered by its strides, a shared tensor, a bare
 * storage, a function never run, an empty tensor), each file against the
 * writer's own sha256 of the elements in row-major order, and the rejects.
 * No real .t7 file is in ../shared (the spec found only LFS pointers).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/format.h"
#include "core/source.h"
#include "core/tree.h"
#include "testutil.h"

START_TEST(generated)
{
	json_t *exp = tu_load_json(tu_testdata("torch7/expected.json"));
	struct tfs_image *img;
	struct tfs_diag d;
	json_t *meta;

	ck_assert_int_eq(
		tu_load_file(tu_testdata("torch7/valid/model.t7"), &img, &d),
		0);
	ck_assert_str_eq(img->tree->format, "torch7");
	/* the builder's order is the file's: counts came after modules */
	ck_assert_uint_eq(img->tree->ntensors, 6);
	{
		const json_t *t;
		size_t i;

		json_array_foreach(
			json_object_get(
				json_object_get(json_object_get(exp, "valid"),
						"model.t7"),
				"tensors"),
			i, t)
			tu_expect_tensor_json(
				img,
				json_string_value(json_object_get(t, "name")),
				t);
	}
	meta = tu_meta_json(img, "metadata.json");
	ck_assert_int_eq(json_integer_value(json_object_get(
				 json_object_get(meta, "classes"),
				 "nn.SpatialConvolution")),
			 1);
	ck_assert_uint_eq(img->tree->nwarnings, 1); /* the empty tensor */
	json_decref(meta);
	tfs_image_close(img);
	json_decref(exp);
}
END_TEST

START_TEST(probe)
{
	/* a torch object, index 1, "V 1" */
	static const uint8_t obj[] = {4, 0, 0,	 0,   1,   0, 0, 0, 3, 0,
				      0, 0, 'V', ' ', '1', 0, 0, 0, 0, 0};
	static const uint8_t other[] = {4, 0, 0,   0,	1,   0, 0, 0, 3, 0,
					0, 0, 'X', ' ', '1', 0, 0, 0, 0, 0};
	const struct tfs_format *f = tfs_format_by_name("torch7");
	struct tfs_source s;

	tfs_source_init_memory(&s, obj, sizeof(obj));
	ck_assert_int_eq(f->probe(&s), 80);
	tfs_source_init_memory(&s, other, sizeof(other));
	ck_assert_int_eq(f->probe(&s), 0);
}
END_TEST

START_TEST(rejects)
{
	json_t *exp = tu_load_json(tu_testdata("torch7/expected.json"));

	ck_assert_uint_eq(tu_expect_rejects_json("torch7/reject",
						 json_object_get(exp, "reject"),
						 "torch7"),
			  9);
	json_decref(exp);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("torch7");
	TCase *tc = tcase_create("torch7");

	tcase_add_test(tc, generated);
	tcase_add_test(tc, probe);
	tcase_add_test(tc, rejects);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
