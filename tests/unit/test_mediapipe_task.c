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

struct row {
	char dir[160], name[160], dtype[32], shape[64], sha[65];
	unsigned long long offset, size;
};

/* rows "DIR NAME DTYPE SHAPE OFFSET BYTES SHA256" of @f (after @skip) */
static size_t read_rows(FILE *f, const char *file, struct row **out)
{
	char first[160];
	struct row *v = NULL, r;
	size_t n = 0;

	while (file ? fscanf(f, "%159[^\t]\t", first) == 1 : true) {
		if (fscanf(f,
			   "%159[^\t]\t%159[^\t]\t%31[^\t]\t%63[^\t]\t%llu\t"
			   "%llu\t%64s\n",
			   r.dir, r.name, r.dtype, r.shape, &r.offset, &r.size,
			   r.sha) != 7)
			break;
		if (file && strcmp(first, file))
			continue;
		v = realloc(v, (n + 1) * sizeof(*v));
		ck_assert_ptr_nonnull(v);
		v[n++] = r;
	}
	ck_assert_msg(feof(f), "a line does not parse");
	*out = v;
	return n;
}

static const struct tfs_tensor *find(const struct tfs_image *img,
				     const struct row *r)
{
	size_t n = strlen(r->dir);
	uint32_t i;

	for (i = 0; i < img->tree->ntensors; i++) {
		const struct tfs_tensor *t = &img->tree->tensors[i];

		if (t->name_len == strlen(r->name) &&
		    !memcmp(t->name, r->name, t->name_len) &&
		    !strncmp(t->path, r->dir, n) && t->path[n] == '/')
			return t;
	}
	return NULL;
}

/* @img holds exactly the @n tensors of @v */
static void check_rows(struct tfs_image *img, const struct row *v, size_t n)
{
	size_t i;

	ck_assert_uint_gt(n, 0);
	ck_assert_uint_eq(img->tree->ntensors, n);
	for (i = 0; i < n; i++) {
		const struct tfs_tensor *t = find(img, &v[i]);
		uint8_t *b;
		size_t len;
		char hex[65];

		ck_assert_msg(t != NULL, "no tensor %s/%s", v[i].dir,
			      v[i].name);
		ck_assert_str_eq(t->dtype, v[i].dtype);
		tu_expect_xattr(img, t->path, "shape", v[i].shape);
		ck_assert_msg(t->offset == v[i].offset, "%s at %llu", t->path,
			      (unsigned long long)t->offset);
		b = tu_read_node(img, t->node, &len);
		ck_assert_uint_eq(len, v[i].size);
		tu_sha256_hex(b, len, hex);
		ck_assert_str_eq(hex, v[i].sha);
		free(b);
	}
}

static void check_valid(const char *path, const char *name, void *arg)
{
	FILE *f = fopen(tu_testdata("mediapipe_task/valid.tsv"), "r");
	struct tfs_image *img;
	struct tfs_diag d;
	struct row *v;
	size_t n;

	(void)arg;
	ck_assert_ptr_nonnull(f);
	n = read_rows(f, name, &v);
	fclose(f);
	ck_assert_msg(tu_load_file(path, &img, &d) == 0, "%s: %s", name, d.msg);
	tu_expect_xattr(img, "", "format", "mediapipe_task");
	check_rows(img, v, n);
	tfs_image_close(img);
	free(v);
}

START_TEST(generated_valid)
{
	ck_assert_uint_eq(tu_each_fixture(tu_testdata("mediapipe_task/valid"),
					  check_valid, NULL),
			  2);
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
	struct row *v;
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
	n = read_rows(f, NULL, &v);
	ck_assert_int_eq(pclose(f), 0);
	ck_assert_int_eq(tu_load_file(tu_fixture(rel), &img, &d), 0);
	check_rows(img, v, n);
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
