// SPDX-License-Identifier: MIT
/*
 * ExecuTorch .pte: the programs of tests/fixtures/executorch/generate.py
 * (written from program.fbs with the TFLite generator's FlatBuffers
 * writer: constants inline and in a segment behind the extended header)
 * against its table: every constant by its fully qualified name or
 * <plan>/values/<i>, dtype, shape, offset, sha256; planned tensors and
 * other values not files; a dim_order that is not the identity in an
 * xattr; one refusal per rule; ExecuTorch's own add.pte (../shared/real),
 * which holds no constant, mounts empty.
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
	ck_assert_uint_eq(tu_check_valid_tsv("executorch", "executorch"), 6);
}
END_TEST

START_TEST(dim_order_xattr)
{
	struct tfs_image *img;
	struct tfs_diag d;

	ck_assert_int_eq(tu_load_file(tu_testdata("executorch/valid/"
						  "inline.pte"),
				      &img, &d),
			 0);
	tu_expect_xattr(img, "forward/values/4", "executorch.dim_order",
			"[1,0]");
	ck_assert_ptr_null(
		tu_xattr(img, "linear/weight", "executorch.dim_order"));
	tfs_image_close(img);
}
END_TEST

START_TEST(generated_reject)
{
	ck_assert_uint_eq(tu_check_reject_tsv("executorch", ".pte"), 6);
}
END_TEST

START_TEST(real_add)
{
	static const char rel[] = "../real/executorch/add.pte";
	struct tfs_image *img;
	struct tfs_diag d;
	json_t *meta;

	TU_NEED_SHARED(rel);
	ck_assert_int_eq(tu_load_file(tu_fixture(rel), &img, &d), 0);
	ck_assert_uint_eq(img->tree->ntensors, 0);
	meta = tu_meta_json(img, "metadata.json");
	ck_assert_int_eq(json_integer_value(json_object_get(
				 json_object_get(meta, "executorch"), "plans")),
			 1);
	json_decref(meta);
	tfs_image_close(img);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("executorch");
	TCase *tc = tcase_create("all");

	tcase_add_test(tc, generated_valid);
	tcase_add_test(tc, dim_order_xattr);
	tcase_add_test(tc, generated_reject);
	tcase_add_test(tc, real_add);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
