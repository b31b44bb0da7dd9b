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

/*
 * Container @dir of ../shared/fixtures/zarr/valid: every array listed with
 * the expected dtype, shape and size; the ones served read to the expected
 * sha256 (Fortran order transposed back to row-major here); the others
 * unreadable, a capability missing.  Returns how many were served.
 */
static size_t shared_arrays(const char *dir, size_t count)
{
	json_t *exp, *t;
	const struct tfs_tensor *x;
	struct tfs_image *img;
	struct tfs_diag d;
	char path[512], hex[65];
	uint8_t *got, *c;
	size_t len, i, r, k, rows, cols, served = 0;

	exp = tu_expected_json("zarr");
	json_array_foreach(
		json_object_get(json_object_get(json_object_get(exp, "valid"),
						dir),
				"tensors"),
		i, t)
	{
		const char *name =
			json_string_value(json_object_get(t, "name"));
		const json_t *shape = json_object_get(t, "shape");

		snprintf(path, sizeof(path), "%s/%s/%s/.zarray",
			 tu_fixture("zarr/valid"), dir, name);
		ck_assert_msg(tu_load_file(path, &img, &d) == 0, "%s: %s", path,
			      d.msg);
		x = &img->tree->tensors[0];
		ck_assert_str_eq(x->dtype, json_string_value(json_object_get(
						   t, "dtype")));
		ck_assert_uint_eq(x->ndim, json_array_size(shape));
		ck_assert_uint_eq(x->size, json_integer_value(json_object_get(
						   t, "nbytes")));
		if (x->unreadable) {
			ck_assert(!x->unreadable_is_fault);
			tfs_image_close(img);
			continue;
		}
		got = tu_read_node(img, x->node, &len);
		if (tu_xattr(img, name, "order")) { /* 2-D, 4-byte items */
			rows = json_integer_value(json_array_get(shape, 0));
			cols = json_integer_value(json_array_get(shape, 1));
			c = malloc(len);
			for (r = 0; r < rows; r++)
				for (k = 0; k < cols; k++)
					memcpy(c + (r * cols + k) * 4,
					       got + (k * rows + r) * 4, 4);
			free(got);
			got = c;
		}
		tu_sha256_hex(got, len, hex);
		ck_assert_msg(strcmp(hex, json_string_value(json_object_get(
						  t, "sha256"))) == 0,
			      "%s: sha256 %s", name, hex);
		free(got);
		tfs_image_close(img);
		served++;
	}
	ck_assert_uint_eq(i, count);
	json_decref(exp);
	return served;
}

/* Megatron's uncompressed arrays, bfloat16 among them: all served */
START_TEST(shared_megatron)
{
	TU_NEED_SHARED("zarr/valid/megatron_zarr/metadata.json");
	ck_assert_uint_eq(shared_arrays("megatron_zarr", 2), 2);
}
END_TEST

/* zarr-python's group: the uncompressed Fortran array served */
START_TEST(shared_v2_group)
{
	TU_NEED_SHARED("zarr/valid/v2_arrays/zlib_f32/.zarray");
	ck_assert_uint_eq(shared_arrays("v2_arrays", 8), 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("zarr");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, generated);
	tcase_add_test(tc, rejects);
	tcase_add_test(tc, shared_megatron);
	tcase_add_test(tc, shared_v2_group);
	suite_add_tcase(s, tc);
	return tu_run_with_fixtures(s);
}
