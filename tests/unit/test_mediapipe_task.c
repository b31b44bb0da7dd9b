// SPDX-License-Identifier: MIT
/*
 * MediaPipe .task bundles: the files of
 * tests/fixtures/mediapipe_task/generate.py (the TFLite generator's models
 * zipped by Python's zipfile, a bundle in a bundle) against its table, the
 * refusals with their offsets in the bundle, and the real bundle of
 * ../shared/real/mediapipe-task against expect.py (zipfile and the shared
 * fixtures' own TFLite reader): every constant tensor of every model, at
 * its directory, with its dtype, shape, offset in the member and sha256.
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
	ck_assert_uint_eq(
		tu_check_valid_tsv("mediapipe_task", "mediapipe_task"), 36);
}
END_TEST

/* every member listed, the nested bundle's own list under its name */
START_TEST(members_listed)
{
	struct tfs_image *img;
	struct tfs_diag d;
	json_t *meta, *m;

	ck_assert_int_eq(tu_load_file(tu_testdata("mediapipe_task/valid/"
						  "gesture.task"),
				      &img, &d),
			 0);
	meta = tu_meta_json(img, "metadata.json");
	m = json_object_get(meta, "mediapipe_task");
	ck_assert_int_eq(json_integer_value(json_object_get(m, "models")), 2);
	ck_assert_uint_eq(json_array_size(json_object_get(m, "members")), 3);
	ck_assert_str_eq(
		json_string_value(json_object_get(
			json_array_get(json_object_get(m, "members"), 2),
			"as")),
		"listed");
	m = json_object_get(json_object_get(meta, "hand_landmarker.task"),
			    "mediapipe_task");
	ck_assert_int_eq(json_integer_value(json_object_get(m, "models")), 1);
	json_decref(meta);
	tfs_image_close(img);
}
END_TEST

START_TEST(generated_reject)
{
	ck_assert_uint_eq(tu_check_reject_tsv("mediapipe_task", ".task"), 4);
}
END_TEST

/* a zip of labels alone is not a bundle (not claimed) */
START_TEST(no_model_not_claimed)
{
	size_t len, i;
	uint8_t *b = tu_read_file(tu_testdata("mediapipe_task/valid/"
					      "single.task"),
				  &len);
	struct tfs_image *img = NULL;
	struct tfs_diag d;

	for (i = 0; i + 7 <= len; i++)
		if (!memcmp(b + i, ".tflite", 7))
			b[i + 1] = 'x';
	for (i = 0; i + 8 <= len; i++)
		if (!memcmp(b + i, "TFL3", 4))
			b[i] = 'x';
	ck_assert_int_eq(tu_load_mem(b, len, &img, &d), -ENOEXEC);
	free(b);
}
END_TEST

START_TEST(real_bundle)
{
	static const char rel[] =
		"../real/mediapipe-task/dummy_gesture_recognizer.task";
	char cmd[8192], script[4096];
	struct tfs_image *img;
	struct tfs_diag d;
	struct tu_row *v;
	size_t n;
	FILE *f;

	TU_NEED_SHARED(rel);
	TU_NEED_SHARED("tflite/verify.py");
	/* one static buffer for both: copied first */
	snprintf(script, sizeof(script), "%s",
		 tu_testdata("mediapipe_task/expect.py"));
	snprintf(cmd, sizeof(cmd), "python3 '%s' '%s'", script,
		 tu_fixture(rel));
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	n = tu_read_rows(f, NULL, &v);
	ck_assert_int_eq(pclose(f), 0);
	ck_assert_int_eq(tu_load_file(tu_fixture(rel), &img, &d), 0);
	tu_check_rows(img, v, n);
	tfs_image_close(img);
	free(v);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mediapipe_task");
	TCase *tc = tcase_create("all");

	tcase_add_test(tc, generated_valid);
	tcase_add_test(tc, members_listed);
	tcase_add_test(tc, generated_reject);
	tcase_add_test(tc, no_model_not_claimed);
	tcase_add_test(tc, real_bundle);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
