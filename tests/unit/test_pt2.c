// SPDX-License-Identifier: MIT
/*
 * PT2 archives: the archives of tests/fixtures/pt2/generate.py (laid out
 * as PyTorchFileWriter and torch.export.save lay them out) against its
 * table: every raw payload tensor by its FQN, dtype, shape, first stored
 * byte and the sha256 of its elements in C order as the generator
 * gathered them (aliasing views of one record, a transposed one, a
 * storage offset, a scalar, bfloat16 constants); the model's op counts
 * and signature, the pickled payload listed; one refusal per rule.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "core/image.h"
#include "core/tree.h"
#include "testutil.h"

START_TEST(generated_valid)
{
	ck_assert_uint_eq(tu_check_valid_tsv("pt2", "pt2"), 6);
}
END_TEST

START_TEST(metadata)
{
	struct tfs_image *img;
	struct tfs_diag d;
	json_t *meta, *pt2, *m;

	ck_assert_int_eq(
		tu_load_file(tu_testdata("pt2/valid/export.pt2"), &img, &d), 0);
	tu_expect_xattr(img, "linear/weight", "pytorch.parameter", "true");
	ck_assert_ptr_null(
		tu_xattr(img, "bn/running_mean", "pytorch.parameter"));
	tu_expect_xattr(img, "bn/running_mean", "pytorch.storage_offset", "2");
	meta = tu_meta_json(img, "metadata.json");
	pt2 = json_object_get(meta, "pt2");
	ck_assert_str_eq(
		json_string_value(json_object_get(pt2, "archive_version")),
		"0");
	ck_assert_str_eq(json_string_value(json_object_get(pt2, "root")),
			 "model/");
	m = json_object_get(json_object_get(pt2, "models"), "model");
	ck_assert_int_eq(json_integer_value(json_object_get(
				 json_object_get(m, "ops"),
				 "torch.ops.aten.linear.default")),
			 2);
	ck_assert_int_eq(json_integer_value(json_object_get(
				 json_object_get(m, "inputs"), "parameter")),
			 3);
	ck_assert_int_eq(json_integer_value(json_object_get(
				 json_object_get(m, "inputs"), "buffer")),
			 2);
	ck_assert_ptr_nonnull(json_object_get(json_object_get(pt2, "not_read"),
					      "script_obj"));
	json_decref(meta);
	tfs_image_close(img);
}
END_TEST

START_TEST(generated_reject)
{
	ck_assert_uint_eq(tu_check_reject_tsv("pt2", ".pt2"), 5);
}
END_TEST

/* archive_format not "pt2": not a PT2 archive (nor another zip format) */
START_TEST(other_format_not_claimed)
{
	size_t len, i;
	uint8_t *b = tu_read_file(tu_testdata("pt2/valid/export.pt2"), &len);
	struct tfs_image *img = NULL;
	struct tfs_diag d;

	for (i = 0; i + 3 <= len; i++)
		if (!memcmp(b + i, "archive_format", 14) &&
		    i + 14 + 64 + 3 < len)
			break;
	/* the record's data: after its name and 'FB' padding */
	for (i += 14; i + 3 <= len && memcmp(b + i, "pt2", 3); i++)
		;
	ck_assert_uint_lt(i + 3, len);
	b[i + 2] = '3';
	ck_assert_int_eq(tu_load_mem(b, len, &img, &d), -ENOEXEC);
	free(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pt2");
	TCase *tc = tcase_create("all");

	tcase_add_test(tc, generated_valid);
	tcase_add_test(tc, metadata);
	tcase_add_test(tc, generated_reject);
	tcase_add_test(tc, other_format_not_claimed);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
