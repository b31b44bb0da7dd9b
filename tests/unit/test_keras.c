// SPDX-License-Identifier: MIT
/*
 * The Keras 3 `.keras` archive: the shared fixture and the project's own
 * (tests/fixtures/hdf5/sets.py; both a zip made by Python's zipfile around
 * an h5py-written weights file) against their expected.json:
 * every dataset of the member (dtype, shape, sha256 of the bytes served
 * from the slice), the archive's metadata.json and members, the Keras
 * layout; a deflated weights member refused by name; a zip without the
 * member not claimed.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/image.h"
#include "core/tree.h"
#include "testutil.h"

/* expected.json's entry of the archive; @json is the file's path */
static json_t *member_expected(const char *json)
{
	json_error_t err;
	json_t *j = json_load_file(json, 0, &err);
	json_t *k;

	ck_assert_msg(j != NULL, "expected.json: %s", err.text);
	k = json_incref(json_object_get(json_object_get(j, "valid"),
					"keras3_model.keras"));
	json_decref(j);
	return k;
}

static json_t *metadata(struct tfs_image *img)
{
	uint32_t n = tfs_tree_resolve(img->tree, ".tensorfs/metadata.json");
	size_t len;
	uint8_t *b = tu_read_node(img, n, &len);
	json_t *j = json_loadb((const char *)b, len, 0, NULL);

	free(b);
	ck_assert_ptr_nonnull(j);
	return j;
}

static void check_archive(const char *file, json_t *want)
{
	json_t *meta, *ds;
	struct tfs_image *img;
	struct tfs_diag d;
	size_t i;

	ck_assert_int_eq(tu_load_file(file, &img, &d), 0);
	ds = json_object_get(json_object_get(want, "member"), "datasets");
	ck_assert_uint_eq(img->tree->ntensors, json_array_size(ds));
	for (i = 0; i < json_array_size(ds); i++) {
		json_t *x = json_array_get(ds, i);
		const char *path =
			json_string_value(json_object_get(x, "path"));
		const struct tfs_tensor *t = tu_tensor(img, path);
		const char *dt = json_string_value(json_object_get(x, "dtype"));
		const char *kdt = json_string_value(json_object_get(
			json_object_get(json_object_get(x, "attributes"),
					"dtype"),
			"value"));
		uint8_t *b;
		size_t len;
		char hex[65];

		/* Keras 3 writes bfloat16 as 2-byte opaque + a dtype attr */
		if (kdt && !strcmp(kdt, "bfloat16"))
			dt = "bfloat16";
		ck_assert_msg(t != NULL, "no tensor %s", path);
		ck_assert_str_eq(t->dtype, dt);
		b = tu_read_node(img, t->node, &len);
		ck_assert_uint_eq(
			len, json_integer_value(json_object_get(x, "nbytes")));
		tu_sha256_hex(b, len, hex);
		ck_assert_str_eq(
			hex, json_string_value(json_object_get(x, "sha256")));
		free(b);
	}
	tu_expect_xattr(img, "", "format", "keras");
	meta = metadata(img);
	ck_assert(json_equal(
		json_object_get(json_object_get(meta, "keras_archive"),
				"metadata"),
		json_object_get(want, "metadata_json")));
	ck_assert_int_eq(json_integer_value(json_object_get(
				 json_object_get(meta, "keras_archive"),
				 "weights_offset")),
			 json_integer_value(
				 json_object_get(want, "member_data_offset")));
	ck_assert_uint_eq(
		json_array_size(json_object_get(
			json_object_get(meta, "keras_archive"), "members")),
		3);
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(meta, "keras"), "layout")),
			 "keras3-weights");
	json_decref(meta);
	tfs_image_close(img);
}

/*
 * the method field of the weights member, local and central, set to 8: the
 * refusal at the member's local header (expected.json's header_offset)
 */
static void check_deflated_refused(const char *file, json_t *want)
{
	size_t len, i, patched = 0;
	uint8_t *b = tu_read_file(file, &len);
	json_t *m = json_object_get(want, "members");
	static const char name[] = "model.weights.h5";

	for (i = 0; i + 46 + sizeof(name) - 1 <= len; i++) {
		if (!memcmp(b + i, "PK\3\4", 4) &&
		    !memcmp(b + i + 30, name, sizeof(name) - 1)) {
			b[i + 8] = 8;
			patched++;
		}
		if (!memcmp(b + i, "PK\1\2", 4) &&
		    !memcmp(b + i + 46, name, sizeof(name) - 1)) {
			b[i + 10] = 8;
			patched++;
		}
	}
	ck_assert_uint_eq(patched, 2);
	for (i = 0; i < json_array_size(m); i++)
		if (!strcmp(json_string_value(json_object_get(
				    json_array_get(m, i), "name")),
			    name))
			break;
	ck_assert_uint_lt(i, json_array_size(m));
	tu_expect_reject(b, len, -ENOTSUP, "compression method 8",
			 (uint64_t)json_integer_value(json_object_get(
				 json_array_get(m, i), "header_offset")));
	free(b);
}

/* a zip without model.weights.h5 is not a .keras archive */
static void check_other_zip(const char *file)
{
	size_t len, i;
	uint8_t *b = tu_read_file(file, &len);
	struct tfs_image *img = NULL;
	struct tfs_diag d;

	for (i = 0; i + 16 <= len; i++)
		if (!memcmp(b + i, "model.weights.h5", 16))
			b[i] = 'M';
	ck_assert_int_eq(tu_load_mem(b, len, &img, &d), -ENOEXEC);
	free(b);
}

/* all three checks of one set's archive */
static void check_set(const char *keras, const char *json)
{
	char file[4096];
	json_t *want;

	snprintf(file, sizeof(file), "%s", keras);
	want = member_expected(json);
	check_archive(file, want);
	check_deflated_refused(file, want);
	check_other_zip(file);
	json_decref(want);
}

START_TEST(shared_archive)
{
	char json[4096];

	TU_NEED_SHARED("hdf5/keras3_model.keras");
	snprintf(json, sizeof(json), "%s", tu_fixture("hdf5/expected.json"));
	check_set(tu_fixture("hdf5/keras3_model.keras"), json);
}
END_TEST

START_TEST(project_archive)
{
	char json[4096];

	snprintf(json, sizeof(json), "%s",
		 tu_testdata("hdf5/valid/expected.json"));
	check_set(tu_testdata("hdf5/valid/keras3_model.keras"), json);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("keras");
	TCase *tc = tcase_create("all");

	tcase_add_test(tc, shared_archive);
	tcase_add_test(tc, project_archive);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
