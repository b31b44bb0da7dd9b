// SPDX-License-Identifier: MIT
/*
 * The Keras 3 `.keras` archive: the shared fixture (a zip made by Python's
 * zipfile around an h5py-written weights file) against expected.json:
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

#include "tensorfs/image.h"
#include "tensorfs/tree.h"
#include "testutil.h"

static json_t *member_expected(void)
{
	json_error_t err;
	json_t *j = json_load_file(tu_fixture("hdf5/expected.json"), 0, &err);
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

START_TEST(keras3_archive)
{
	json_t *want = member_expected(), *meta, *ds;
	struct tfs_image *img;
	struct tfs_diag d;
	size_t i;

	ck_assert_int_eq(
		tu_load_file(tu_fixture("hdf5/keras3_model.keras"), &img, &d),
		0);
	ds = json_object_get(json_object_get(want, "member"), "datasets");
	ck_assert_uint_eq(img->tree->ntensors, json_array_size(ds));
	for (i = 0; i < json_array_size(ds); i++) {
		json_t *x = json_array_get(ds, i);
		const char *path =
			json_string_value(json_object_get(x, "path"));
		const struct tfs_tensor *t = tu_tensor(img, path);
		uint8_t *b;
		size_t len;
		char hex[65];

		ck_assert_msg(t != NULL, "no tensor %s", path);
		ck_assert_str_eq(t->dtype, json_string_value(json_object_get(
						   x, "dtype")));
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
	json_decref(want);
	tfs_image_close(img);
}
END_TEST

/* the method field of the weights member, local and central, set to 8 */
START_TEST(deflated_weights_refused)
{
	size_t len, i, patched = 0;
	uint8_t *b = tu_read_file(tu_fixture("hdf5/keras3_model.keras"), &len);
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
	tu_expect_reject(b, len, -ENOTSUP, "compression method 8", 267);
	free(b);
}
END_TEST

/* a zip without model.weights.h5 is not a .keras archive */
START_TEST(other_zip_not_claimed)
{
	size_t len, i;
	uint8_t *b = tu_read_file(tu_fixture("hdf5/keras3_model.keras"), &len);
	struct tfs_image *img = NULL;
	struct tfs_diag d;

	for (i = 0; i + 16 <= len; i++)
		if (!memcmp(b + i, "model.weights.h5", 16))
			b[i] = 'M';
	ck_assert_int_eq(tu_load_mem(b, len, &img, &d), -ENOEXEC);
	free(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("keras");
	TCase *tc = tcase_create("all");

	tcase_add_test(tc, keras3_archive);
	tcase_add_test(tc, deflated_weights_refused);
	tcase_add_test(tc, other_zip_not_claimed);
	suite_add_tcase(s, tc);
	return tu_run_with_fixtures(s);
}
