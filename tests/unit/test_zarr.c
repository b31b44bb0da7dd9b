// SPDX-License-Identifier: MIT
/*
 * Zarr v2 reader: the arrays tests/fixtures/zarr/generate.py wrote from the
 * spec (edge chunks, a missing chunk read as the fill value, "/" keys,
 * Fortran order, big-endian, a zlib chunk, 0-d), each read whole against
 * the writer's sha256; its refusals; the Megatron arrays of
 * ../shared/fixtures/zarr against their expected.json (skipped when
 * ../shared is absent).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/tree.h"
#include "testutil.h"

/* the generator's arrays against its expected.json */
START_TEST(generated)
{
	json_t *exp = tu_load_json(tu_testdata("zarr/expected.json")), *want;
	struct tfs_image *img;
	struct tfs_diag d;
	const char *name, *x;
	char path[512], hex[65];
	uint8_t *got;
	size_t len, n = 0;

	json_object_foreach(json_object_get(exp, "valid"), name, want)
	{
		snprintf(path, sizeof(path), "zarr/valid/%s/.zarray", name);
		ck_assert_msg(tu_load_file(tu_testdata(path), &img, &d) == 0,
			      "%s: %s", name, d.msg);
		ck_assert_str_eq(
			img->tree->tensors[0].dtype,
			json_string_value(json_object_get(want, "dtype")));
		ck_assert_uint_eq(
			img->tree->tensors[0].ndim,
			json_array_size(json_object_get(want, "shape")));
		got = tu_read_node(img, img->tree->tensors[0].node, &len);
		ck_assert_ptr_nonnull(got);
		tu_sha256_hex(got, len, hex);
		ck_assert_msg(strcmp(hex, json_string_value(json_object_get(
						  want, "sha256"))) == 0,
			      "%s: sha256 %s", name, hex);
		x = json_string_value(json_object_get(want, "order"));
		if (x)
			tu_expect_xattr(img, name, "order", x);
		x = json_string_value(json_object_get(want, "byte_order"));
		if (x)
			tu_expect_xattr(img, name, "byte_order", x);
		free(got);
		tfs_image_close(img);
		n++;
	}
	ck_assert_uint_eq(n, 6);
	json_decref(exp);
}
END_TEST

START_TEST(rejects)
{
	ck_assert_uint_eq(tu_check_reject_tsv("zarr", ".zarray"), 8);
}
END_TEST

/* the Megatron arrays of the shared fixtures, against expected.json */
START_TEST(shared_megatron)
{
	json_t *exp, *t;
	struct tfs_image *img;
	struct tfs_diag d;
	char path[512], hex[65];
	uint8_t *got;
	size_t len, i;

	TU_NEED_SHARED("zarr/expected.json");
	exp = tu_expected_json("zarr");
	json_array_foreach(
		json_object_get(json_object_get(json_object_get(exp, "valid"),
						"megatron_zarr"),
				"tensors"),
		i, t)
	{
		snprintf(path, sizeof(path), "%s/%s/.zarray",
			 tu_fixture("zarr/valid/megatron_zarr"),
			 json_string_value(json_object_get(t, "name")));
		ck_assert_msg(tu_load_file(path, &img, &d) == 0, "%s: %s", path,
			      d.msg);
		ck_assert_str_eq(
			img->tree->tensors[0].dtype,
			json_string_value(json_object_get(t, "dtype")));
		got = tu_read_node(img, img->tree->tensors[0].node, &len);
		tu_sha256_hex(got, len, hex);
		ck_assert_str_eq(
			hex, json_string_value(json_object_get(t, "sha256")));
		free(got);
		tfs_image_close(img);
	}
	ck_assert_uint_eq(i, 2);
	json_decref(exp);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("zarr");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, generated);
	tcase_add_test(tc, rejects);
	tcase_add_test(tc, shared_megatron);
	suite_add_tcase(s, tc);
	return tu_run_with_fixtures(s);
}
