// SPDX-License-Identifier: MIT
/*
 * DDUF: the archives of tests/fixtures/dduf/generate.py (written the way
 * huggingface_hub's export_entries_as_dduf writes them: zipfile, stored,
 * force_zip64) against its table: every tensor of every component at its
 * directory (shards of one component together), dtype, shape, offset in
 * its entry, sha256 of the bytes the generator wrote; model_index.json and
 * the configs in metadata.json; one refusal per rule of read_dduf_file,
 * at its offset.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/image.h"
#include "core/tree.h"
#include "testutil.h"

START_TEST(generated_valid)
{
	ck_assert_uint_eq(tu_check_valid_tsv("dduf", "dduf"), 6);
}
END_TEST

START_TEST(metadata)
{
	struct tfs_image *img;
	struct tfs_diag d;
	json_t *meta, *dd;

	ck_assert_int_eq(tu_load_file(tu_testdata("dduf/valid/"
						  "tiny_pipeline.dduf"),
				      &img, &d),
			 0);
	meta = tu_meta_json(img, "metadata.json");
	dd = json_object_get(meta, "dduf");
	ck_assert_str_eq(
		json_string_value(json_object_get(
			json_object_get(dd, "model_index"), "_class_name")),
		"TinyPipeline");
	ck_assert_int_eq(
		json_integer_value(json_object_get(
			json_object_get(json_object_get(dd, "json"),
					"scheduler/scheduler_config.json"),
			"num_train_timesteps")),
		10);
	ck_assert_uint_eq(json_array_size(json_object_get(dd, "members")), 10);
	json_decref(meta);
	tfs_image_close(img);
}
END_TEST

START_TEST(generated_reject)
{
	ck_assert_uint_eq(tu_check_reject_tsv("dduf", ".dduf"), 7);
}
END_TEST

/* without model_index.json, a zip of safetensors is not a DDUF */
START_TEST(no_index_not_claimed)
{
	size_t len, i;
	uint8_t *b =
		tu_read_file(tu_testdata("dduf/valid/top_level.dduf"), &len);
	struct tfs_image *img = NULL;
	struct tfs_diag d;

	for (i = 0; i + 16 <= len; i++)
		if (!memcmp(b + i, "model_index.json", 16))
			b[i] = 'M';
	ck_assert_int_eq(tu_load_mem(b, len, &img, &d), -ENOEXEC);
	free(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dduf");
	TCase *tc = tcase_create("all");

	tcase_add_test(tc, generated_valid);
	tcase_add_test(tc, metadata);
	tcase_add_test(tc, generated_reject);
	tcase_add_test(tc, no_index_not_claimed);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
