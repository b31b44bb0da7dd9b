// SPDX-License-Identifier: MIT
/*
 * flashpack: the packs of tests/fixtures/flashpack/generate.py (the
 * layout of flashpack's pack_to_file, written in plain Python) against its
 * table: every tensor's name, dtype, shape, absolute offset and sha256
 * (v3 aligned and unaligned, v4 with five dtypes); a tensor of an fpz
 * block listed but unreadable; one refusal per rule.
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
	ck_assert_uint_eq(tu_check_valid_tsv("flashpack", "flashpack"), 14);
}
END_TEST

/* the bf16 block is compressed: listed, its reads refused, the rest read */
START_TEST(fpz_block_unreadable)
{
	struct tfs_image *img;
	struct tfs_diag d;
	const struct tfs_tensor *t;
	json_t *meta;

	ck_assert_int_eq(tu_load_file(tu_testdata("flashpack/fpz/"
						  "v4_fpz_block.flashpack"),
				      &img, &d),
			 0);
	ck_assert_uint_eq(img->tree->ntensors, 6);
	t = tu_tensor(img, "emb.weight");
	ck_assert_ptr_nonnull(t);
	ck_assert_ptr_nonnull(tu_xattr(img, t->path, "unreadable"));
	ck_assert_ptr_null(tu_xattr(img, "ids", "unreadable"));
	meta = tu_meta_json(img, "metadata.json");
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(meta, "flashpack"), "format")),
			 "flashpack_v4");
	ck_assert_ptr_null(
		json_object_get(json_object_get(meta, "flashpack"), "index"));
	json_decref(meta);
	tfs_image_close(img);
}
END_TEST

START_TEST(generated_reject)
{
	ck_assert_uint_eq(tu_check_reject_tsv("flashpack", ".flashpack"), 6);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("flashpack");
	TCase *tc = tcase_create("all");

	tcase_add_test(tc, generated_valid);
	tcase_add_test(tc, fpz_block_unreadable);
	tcase_add_test(tc, generated_reject);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
