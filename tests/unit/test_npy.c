// SPDX-License-Identifier: MIT
/*
 * NumPy .npy (src/formats/npy.c): the shared fixtures against the contents
 * and sha256s documented in shared/specs/npy.md section 7, every file numpy
 * wrote for tests/fixtures/npy/valid against numpy's own reading of it
 * (tests/fixtures/npy/expected.json), and a refusal for every rule of the spec
 * (the .npy files of tests/fixtures/npy/reject, each breaking one).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* ---- shared fixtures: shared/specs/npy.md section 7 ---- */

static const struct {
	const char *file;
	size_t size;
	const char *dtype;
	unsigned ndim;
	uint64_t shape[2];
	bool fortran, big;
	const char *sha256;
} shared[] = {
	{"f4_1d.npy",
	 140,
	 "float32",
	 1,
	 {3},
	 false,
	 false,
	 "8e628779e6a74ee0b36991c10158f63cafec7d340ad4e075592502c8708524dd"},
	{"f4_1d_v2.npy",
	 140,
	 "float32",
	 1,
	 {3},
	 false,
	 false,
	 "8e628779e6a74ee0b36991c10158f63cafec7d340ad4e075592502c8708524dd"},
	{"f4_1d_v3.npy",
	 140,
	 "float32",
	 1,
	 {3},
	 false,
	 false,
	 "8e628779e6a74ee0b36991c10158f63cafec7d340ad4e075592502c8708524dd"},
	{"i4_2x3.npy",
	 152,
	 "int32",
	 2,
	 {2, 3},
	 false,
	 false,
	 "cd9a54ed1f18bf97db08914e280ea7349e11ca2c4885a4d8052552ceba84208d"},
	{"f4_2x3_fortran.npy",
	 152,
	 "float32",
	 2,
	 {2, 3},
	 true,
	 false,
	 "0c9d0bb54e4f5a0121543129f106617549c7ff2b34c6842c5a2e19186c5a7914"},
	{"f4be_1d.npy",
	 136,
	 "float32",
	 1,
	 {2},
	 false,
	 true,
	 "c5576db40f111dd49db210a362bd99630d1872d61dfd1997c42238c0b2e0aff2"},
	{"f8_scalar.npy",
	 136,
	 "float64",
	 0,
	 {0},
	 false,
	 false,
	 "e163f8cb0f7067a7fc78ca859a77f849aea3214f38fb75b884e4a16be725c905"},
	{"f2_1d.npy",
	 132,
	 "float16",
	 1,
	 {2},
	 false,
	 false,
	 "0c82e2008d4b1c37a2604f1dee0db584daf39b6ab140aaa834d3eac1df0b9458"},
	{"b1_1d.npy",
	 130,
	 "bool",
	 1,
	 {2},
	 false,
	 false,
	 "47dc540c94ceb704a23875c11273e16bb0b8a87aed84de911f2133568115f254"},
	{"u1_empty.npy",
	 128,
	 "uint8",
	 2,
	 {0, 3},
	 false,
	 false,
	 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
};

START_TEST(shared_fixtures)
{
	TU_NEED_SHARED("npy/f4_1d.npy");
	struct tfs_image *img;
	struct tfs_diag d;
	const struct tfs_tensor *t;
	char rel[64], hex[65];
	uint8_t *file, *bytes;
	size_t len, flen;
	unsigned i;

	for (i = 0; i < sizeof(shared) / sizeof(shared[0]); i++) {
		snprintf(rel, sizeof(rel), "npy/%s", shared[i].file);
		file = tu_read_file(tu_fixture(rel), &flen);
		ck_assert_uint_eq(flen, shared[i].size);
		ck_assert_msg(tu_load_mem(file, flen, &img, &d) == 0, "%s: %s",
			      rel, d.msg);
		ck_assert_str_eq(img->tree->format, "npy");
		tu_expect_xattr(img, "", "format", "npy");
		ck_assert_uint_eq(img->tree->ntensors, 1);
		t = tu_tensor(img, "tensor");
		ck_assert_ptr_nonnull(t);
		ck_assert_str_eq(t->path, "tensor");
		ck_assert_str_eq(t->dtype, shared[i].dtype);
		ck_assert_uint_eq(t->ndim, shared[i].ndim);
		ck_assert_mem_eq(t->shape, shared[i].shape,
				 shared[i].ndim * sizeof(uint64_t));
		/* "Every .npy has its data at offset 128" */
		ck_assert_uint_eq(t->offset, 128);
		ck_assert_uint_eq(t->size, flen - 128);
		bytes = tu_read_node(img, t->node, &len);
		ck_assert_uint_eq(len, flen - 128);
		tu_sha256_hex(bytes, len, hex);
		ck_assert_msg(strcmp(hex, shared[i].sha256) == 0, "%s: %s", rel,
			      hex);
		free(bytes);
		if (shared[i].big)
			tu_expect_xattr(img, "tensor", "byte_order", "big");
		else
			ck_assert_ptr_null(
				tu_xattr(img, "tensor", "byte_order"));
		if (shared[i].fortran)
			tu_expect_xattr(img, "tensor", "order", "F");
		else
			ck_assert_ptr_null(tu_xattr(img, "tensor", "order"));
		ck_assert_uint_eq(img->tree->nwarnings, 0);
		tfs_image_close(img);
		free(file);
	}
}
END_TEST

START_TEST(descr_xattr_and_metadata)
{
	TU_NEED_SHARED("npy/f4be_1d.npy");
	struct tfs_image *img;
	struct tfs_diag d;
	uint8_t *file, *meta;
	size_t flen, mlen;

	file = tu_read_file(tu_fixture("npy/f4be_1d.npy"), &flen);
	ck_assert_int_eq(tu_load_mem(file, flen, &img, &d), 0);
	tu_expect_xattr(img, "tensor", "npy.descr", ">f4");
	meta = tu_read_node(
		img, tfs_tree_resolve(img->tree, ".tensorfs/metadata.json"),
		&mlen);
	ck_assert_ptr_nonnull(memmem(meta, mlen, "\"version\": \"1.0\"", 16));
	ck_assert_ptr_nonnull(memmem(meta, mlen, "\"descr\": \">f4\"", 14));
	free(meta);
	tfs_image_close(img);
	free(file);
	file = tu_read_file(tu_fixture("npy/f4_1d_v3.npy"), &flen);
	ck_assert_int_eq(tu_load_mem(file, flen, &img, &d), 0);
	meta = tu_read_node(
		img, tfs_tree_resolve(img->tree, ".tensorfs/metadata.json"),
		&mlen);
	/* v3.0: a u32 HEADER_LEN of 116 (spec section 6) */
	ck_assert_ptr_nonnull(memmem(meta, mlen, "\"version\": \"3.0\"", 16));
	ck_assert_ptr_nonnull(memmem(meta, mlen, "\"header_len\": 116", 17));
	free(meta);
	tfs_image_close(img);
	free(file);
}
END_TEST

/* ---- numpy-written samples against numpy's reading of them ---- */

static void check_valid(const char *path, const char *name, void *arg)
{
	json_t *expected = arg, *want;
	struct tfs_image *img;
	struct tfs_diag d;
	size_t n = strlen(name);

	if (n < 4 || strcmp(name + n - 4, ".npy") != 0)
		return;
	want = json_object_get(json_object_get(expected, name), "tensor");
	ck_assert_msg(want != NULL, "%s: not in expected.json", name);
	ck_assert_msg(tu_load_file(path, &img, &d) == 0, "%s: %s", name, d.msg);
	ck_assert_str_eq(img->tree->format, "npy");
	tu_expect_tensor_json(img, "tensor", want);
	/* a simple descr is shown as numpy wrote it */
	if (json_is_string(json_object_get(want, "descr")))
		tu_expect_xattr(
			img, "tensor", "npy.descr",
			json_string_value(json_object_get(want, "descr")));
	ck_assert_uint_eq(img->tree->nwarnings, 0);
	tfs_image_close(img);
}

START_TEST(numpy_written)
{
	json_error_t err;
	json_t *expected =
		json_load_file(tu_testdata("npy/expected.json"), 0, &err);
	size_t n;

	ck_assert_msg(expected != NULL, "expected.json: %s", err.text);
	n = tu_each_fixture(tu_testdata("npy/valid"), check_valid, expected);
	ck_assert_uint_ge(n, 40);
	json_decref(expected);
}
END_TEST

START_TEST(structured_and_strings)
{
	struct tfs_image *img;
	struct tfs_diag d;

	ck_assert_int_eq(
		tu_load_file(tu_testdata("npy/valid/str_U5.npy"), &img, &d), 0);
	/* UCS-4: 5 characters of 4 bytes */
	ck_assert_str_eq(tu_tensor(img, "tensor")->dtype, "void20");
	tu_expect_xattr(img, "tensor", "npy.descr", "<U5");
	tfs_image_close(img);
	ck_assert_int_eq(
		tu_load_file(tu_testdata("npy/valid/struct_packed.npy"), &img,
			     &d),
		0);
	ck_assert_str_eq(tu_tensor(img, "tensor")->dtype, "void7");
	tu_expect_xattr(img, "tensor", "npy.descr",
			"[('x', '<f4'), ('n', '<i2'), ('tag', '|S1')]");
	tfs_image_close(img);
}
END_TEST

/* -o npy: records keep numpy's own descr, so np.load gets them back */
START_TEST(view_keeps_record_descr)
{
	static const struct {
		const char *file, *descr;
	} v[] = {
		{"str_U5.npy", "{'descr': '<U5', "},
		{"struct_packed.npy",
		 "{'descr': [('x', '<f4'), ('n', '<i2'), ('tag', '|S1')], "},
		/* a non-ASCII field name: a 1.0 header cannot say it */
		{"struct_unicode_v3.npy", "{'descr': '|V4', "},
		{"le_f4.npy", "{'descr': '<f4', "},
	};
	struct tfs_build_options o = {.npy = true};
	const struct tfs_tensor *t;
	struct tfs_image *img;
	struct tfs_diag d;
	char rel[64];
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		snprintf(rel, sizeof(rel), "npy/valid/%s", v[i].file);
		ck_assert_int_eq(tfs_image_open(&img, tu_testdata(rel), &o, &d),
				 0);
		t = tu_tensor(img, "tensor");
		ck_assert_str_eq(t->path, "tensor.npy");
		ck_assert_uint_eq(t->prefix_len % 64, 0);
		ck_assert_msg(t->prefix_len > 10 + strlen(v[i].descr) &&
				      memcmp(t->prefix + 10, v[i].descr,
					     strlen(v[i].descr)) == 0,
			      "%s: %.60s", v[i].file, t->prefix + 10);
		tfs_image_close(img);
	}
}
END_TEST

/* trailing bytes after the array: accepted, with a warning (spec 4) */
START_TEST(trailing_bytes_warn)
{
	TU_NEED_SHARED("npy/f4_1d.npy");
	struct tfs_image *img;
	struct tfs_diag d;
	uint8_t *file;
	size_t flen;

	file = tu_read_file(tu_fixture("npy/f4_1d.npy"), &flen);
	file = realloc(file, flen + 5);
	ck_assert_ptr_nonnull(file);
	memset(file + flen, 0xee, 5);
	ck_assert_int_eq(tu_load_mem(file, flen + 5, &img, &d), 0);
	ck_assert_uint_eq(img->tree->nwarnings, 1);
	ck_assert_uint_eq(img->tree->warnings[0].offset, flen);
	ck_assert_ptr_nonnull(strstr(img->tree->warnings[0].msg, "5 bytes"));
	ck_assert_uint_eq(tu_tensor(img, "tensor")->size, 12);
	tfs_image_close(img);
	free(file);
}
END_TEST

/*
 * The project's numpy-written files (tests/fixtures/npy/valid): the descr
 * and the header's version and HEADER_LEN in metadata.json, read from the
 * file's own bytes (npy.md: version at 6, HEADER_LEN at 8)
 */
START_TEST(project_descr_and_metadata)
{
	struct tfs_image *img;
	struct tfs_diag d;
	uint8_t *file, *meta;
	size_t flen, mlen;
	char want[64];

	file = tu_read_file(tu_testdata("npy/valid/be_f4.npy"), &flen);
	ck_assert_int_eq(tu_load_mem(file, flen, &img, &d), 0);
	tu_expect_xattr(img, "tensor", "npy.descr", ">f4");
	meta = tu_read_node(
		img, tfs_tree_resolve(img->tree, ".tensorfs/metadata.json"),
		&mlen);
	snprintf(want, sizeof(want), "\"version\": \"%u.%u\"", file[6],
		 file[7]);
	ck_assert_ptr_nonnull(memmem(meta, mlen, want, strlen(want)));
	ck_assert_ptr_nonnull(memmem(meta, mlen, "\"descr\": \">f4\"", 14));
	free(meta);
	tfs_image_close(img);
	free(file);
	file = tu_read_file(tu_testdata("npy/valid/version_3_0.npy"), &flen);
	ck_assert_uint_eq(file[6], 3);
	ck_assert_int_eq(tu_load_mem(file, flen, &img, &d), 0);
	meta = tu_read_node(
		img, tfs_tree_resolve(img->tree, ".tensorfs/metadata.json"),
		&mlen);
	ck_assert_ptr_nonnull(memmem(meta, mlen, "\"version\": \"3.0\"", 16));
	snprintf(want, sizeof(want), "\"header_len\": %u",
		 (unsigned)(file[8] | file[9] << 8 | file[10] << 16 |
			    (uint32_t)file[11] << 24));
	ck_assert_ptr_nonnull(memmem(meta, mlen, want, strlen(want)));
	free(meta);
	tfs_image_close(img);
	free(file);
}
END_TEST

/* the same warning on the project's le_f4.npy (nbytes from expected.json) */
START_TEST(project_trailing_bytes_warn)
{
	json_error_t err;
	json_t *exp = json_load_file(tu_testdata("npy/expected.json"), 0, &err);
	struct tfs_image *img;
	struct tfs_diag d;
	uint8_t *file;
	size_t flen;

	ck_assert_msg(exp != NULL, "expected.json: %s", err.text);
	file = tu_read_file(tu_testdata("npy/valid/le_f4.npy"), &flen);
	file = realloc(file, flen + 5);
	ck_assert_ptr_nonnull(file);
	memset(file + flen, 0xee, 5);
	ck_assert_int_eq(tu_load_mem(file, flen + 5, &img, &d), 0);
	ck_assert_uint_eq(img->tree->nwarnings, 1);
	ck_assert_uint_eq(img->tree->warnings[0].offset, flen);
	ck_assert_ptr_nonnull(strstr(img->tree->warnings[0].msg, "5 bytes"));
	ck_assert_uint_eq(
		tu_tensor(img, "tensor")->size,
		(uint64_t)json_integer_value(json_object_get(
			json_object_get(json_object_get(exp, "le_f4.npy"),
					"tensor"),
			"nbytes")));
	tfs_image_close(img);
	free(file);
	json_decref(exp);
}
END_TEST

/* ---- one refusal per rule ---- */

static const struct tu_reject rejects[] = {
	{"magic_only", -EBADMSG, "shorter than magic and version", NULL, 0},
	{"version_4_0", -ENOTSUP, "version: 4.0", NULL, 6},
	{"version_1_1", -ENOTSUP, "version: 1.1", NULL, 6},
	{"version_0_0", -ENOTSUP, "version: 0.0", NULL, 6},
	{"header_len_cut", -EBADMSG, "HEADER_LEN: cut short", NULL, 8},
	{"header_past_eof", -EBADMSG, "only 90 follow", NULL, 8},
	{"header_too_long", -E2BIG, "max_header_size", NULL, 8},
	{"not_a_dict", -EBADMSG, "not a dict (found list)", "['descr'", 0},
	{"missing_shape", -EBADMSG, "no 'shape' key", "{'descr'", 0},
	{"extra_key", -EBADMSG, "unexpected key", "'extra'", 0},
	{"duplicate_key", -EBADMSG, "duplicate key", "'descr': '<f4', 'f", 0},
	{"fortran_not_bool", -EBADMSG,
	 "fortran_order: not True or False (found int)", "1, 'shape'", 0},
	{"shape_list", -EBADMSG, "shape: not a tuple (found list)", "[3]", 0},
	{"shape_int_in_parens", -EBADMSG, "shape: not a tuple (found int)",
	 "3)", 0},
	{"shape_negative", -EBADMSG, "not a non-negative int", "-3", 0},
	{"shape_float", -EBADMSG, "not a plain decimal", ".0,)", 0},
	{"shape_overflow", -EBADMSG, "overflows 64 bits", "4294967296)", 0},
	{"bytes_overflow", -EBADMSG, "overflow 64 bits", "(46", 0},
	{"descr_object", -ENOTSUP, "object array", "'|O'", 0},
	{"descr_datetime", -ENOTSUP, "datetime", "'<M8", 0},
	{"descr_long_double", -ENOTSUP, "long double", "'<f16'", 0},
	{"descr_unknown", -EBADMSG, "not a numpy type string", "'<x4'", 0},
	{"descr_no_byte_order", -EBADMSG, "needs a byte order", "'|i4'", 0},
	{"descr_int", -EBADMSG, "(found int)", "4, 'f", 0},
	{"descr_object_field", -ENOTSUP, "never unpickled", "'|O'", 0},
	{"descr_bad_field", -EBADMSG, "(name, format[, shape])", "('a',)", 0},
	{"data_cut_short", -EBADMSG, "11 bytes after the header", NULL, 139},
	{"unterminated_string", -EBADMSG, "line break in a string", "\n", 0},
	{"python_expression", -EBADMSG, "not a literal", "__import__", 0},
	{"text_after_dict", -EBADMSG, "text after the value", "x ", 0},
	{"v3_invalid_utf8", -EBADMSG, "invalid UTF-8", "\xe9'", 0},
	{"v3_long_suffix", -EBADMSG, "not a plain decimal", "L,)", 0},
};

START_TEST(every_reject)
{
	tu_check_rejects("npy/reject", ".npy", rejects,
			 sizeof(rejects) / sizeof(rejects[0]));
}
END_TEST

/* every truncation of a valid file is refused, never read past its end */
START_TEST(every_truncation)
{
	struct tfs_image *img;
	struct tfs_diag d;
	uint8_t *file, *copy;
	size_t flen, n;

	file = tu_read_file(tu_testdata("npy/valid/struct_nested.npy"), &flen);
	for (n = 0; n < flen; n++) {
		copy = malloc(n ? n : 1);
		ck_assert_ptr_nonnull(copy);
		memcpy(copy, file, n);
		ck_assert_int_lt(tu_load_mem(copy, n, &img, &d), 0);
		free(copy);
	}
	free(file);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("npy");
	TCase *tc = tcase_create("npy");

	tcase_add_test(tc, shared_fixtures);
	tcase_add_test(tc, descr_xattr_and_metadata);
	tcase_add_test(tc, numpy_written);
	tcase_add_test(tc, structured_and_strings);
	tcase_add_test(tc, view_keeps_record_descr);
	tcase_add_test(tc, trailing_bytes_warn);
	tcase_add_test(tc, project_descr_and_metadata);
	tcase_add_test(tc, project_trailing_bytes_warn);
	tcase_add_test(tc, every_reject);
	tcase_add_test(tc, every_truncation);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
