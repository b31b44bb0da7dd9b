// SPDX-License-Identifier: MIT
/*
 * NumPy .npz (src/formats/npz.c): the shared fixtures against the members,
 * offsets, CRCs and sha256s documented in shared/specs/npy.md section 7,
 * numpy's own archives (the .npz files of tests/fixtures/npy/valid) against
 * numpy's reading of them (tests/fixtures/npy/expected.json) and against
 * their zip headers read here (offsets, CRCs, sizes), stored and
 * deflated members whose CRC-32 is wrong (EIO on read, a log line, `verify`
 * says why), and a refusal for every rule (the .npz files of
 * tests/fixtures/npy/reject).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/format.h"
#include "core/source.h"
#include "testutil.h"

static char logged[4][600];
static int nlogged;

static void capture(void *arg, const char *line)
{
	(void)arg;
	if (nlogged < 4)
		snprintf(logged[nlogged], sizeof(logged[0]), "%s", line);
	nlogged++;
}

static void configure(struct tfs_image *img, uint64_t cache)
{
	struct tfs_image_options o = {.cache_size = cache,
				      .verify = TFS_VERIFY_FIRST,
				      .log = capture};

	nlogged = 0;
	ck_assert_int_eq(tfs_image_configure(img, &o), 0);
}

static const char W_SHA[] =
	"baed642339816affb3fe8719792d0e4ce82f12db72b7373d244eaa65445800fe";
static const char F4_SHA[] =
	"8e628779e6a74ee0b36991c10158f63cafec7d340ad4e075592502c8708524dd";

static void expect_sha(struct tfs_image *img, const char *name, const char *sha)
{
	const struct tfs_tensor *t = tu_tensor(img, name);
	uint8_t *bytes;
	size_t len;
	char hex[65];

	ck_assert_msg(t != NULL, "no tensor %s", name);
	bytes = tu_read_node(img, t->node, &len);
	tu_sha256_hex(bytes, len, hex);
	ck_assert_msg(strcmp(hex, sha) == 0, "%s: %s", name, hex);
	free(bytes);
}

START_TEST(shared_stored)
{
	TU_NEED_SHARED("npy/stored.npz");
	struct tfs_image *img;
	struct tfs_diag d;
	const struct tfs_tensor *w, *a;
	uint8_t *file;
	size_t flen;

	file = tu_read_file(tu_fixture("npy/stored.npz"), &flen);
	ck_assert_uint_eq(flen, 526);
	ck_assert_msg(tu_load_mem(file, flen, &img, &d) == 0, "%s", d.msg);
	ck_assert_str_eq(img->tree->format, "npz");
	tu_expect_xattr(img, "", "format", "npz");
	ck_assert_uint_eq(img->tree->ntensors, 2);
	w = tu_tensor(img, "w");
	a = tu_tensor(img, "arr_0");
	ck_assert_ptr_nonnull(w);
	ck_assert_ptr_nonnull(a);
	/* member data at 55 and 258, each a .npy with its array at 128 */
	ck_assert_uint_eq(w->offset, 55 + 128);
	ck_assert_uint_eq(a->offset, 258 + 128);
	ck_assert_int_eq(w->encoding, TFS_ENCODING_RAW);
	ck_assert_str_eq(w->dtype, "int32");
	ck_assert_uint_eq(w->ndim, 2);
	ck_assert_uint_eq(w->shape[0], 2);
	ck_assert_uint_eq(w->shape[1], 2);
	ck_assert_str_eq(a->dtype, "float32");
	ck_assert_uint_eq(a->shape[0], 3);
	tu_expect_xattr(img, "w", "digest", "crc32:0xF4EAB33D");
	tu_expect_xattr(img, "arr_0", "digest", "crc32:0xD140A677");
	tu_expect_xattr(img, "w", "npz.member", "w.npy");
	tu_expect_xattr(img, "arr_0", "npy.descr", "<f4");
	configure(img, 0);
	expect_sha(img, "w", W_SHA);
	expect_sha(img, "arr_0", F4_SHA);
	ck_assert_int_eq(nlogged, 0);
	tfs_image_close(img);
	free(file);
}
END_TEST

START_TEST(shared_deflated)
{
	TU_NEED_SHARED("npy/deflated.npz");
	struct tfs_check_result r;
	struct tfs_image *img;
	struct tfs_diag d;
	const struct tfs_tensor *w;
	uint8_t *file;
	size_t flen;

	file = tu_read_file(tu_fixture("npy/deflated.npz"), &flen);
	ck_assert_uint_eq(flen, 208);
	ck_assert_msg(tu_load_mem(file, flen, &img, &d) == 0, "%s", d.msg);
	ck_assert_uint_eq(img->tree->ntensors, 1);
	w = tu_tensor(img, "w");
	ck_assert_int_eq(w->encoding, TFS_ENCODING_DEFLATE);
	ck_assert_uint_eq(w->offset, 55);
	ck_assert_uint_eq(w->stored_length, 80);
	ck_assert_uint_eq(w->size, 16);
	tu_expect_xattr(img, "w", "encoding", "deflate");
	tu_expect_xattr(img, "w", "npz.crc32", "0xF4EAB33D");
	configure(img, 0);
	expect_sha(img, "w", W_SHA);
	ck_assert_int_eq(tfs_image_check_tensor(img, 0, &r, NULL, NULL), 0);
	ck_assert_int_eq(nlogged, 0);
	tfs_image_close(img);
	free(file);
}
END_TEST

/*
 * numpy's own archives, read here from their bytes (APPNOTE 4.3.7): each
 * member's local header gives its data offset, CRC-32 and sizes; a stored
 * member's tensor sits after the .npy header whose HEADER_LEN the member
 * holds, zero-copy; a deflated one is served through the codec from the
 * data offset, its compressed size as stored_length
 */
static void check_members(const char *file, bool deflated)
{
	struct tfs_image *img;
	struct tfs_diag d;
	uint8_t *b;
	size_t len, i, seen = 0;

	b = tu_read_file(file, &len);
	ck_assert_msg(tu_load_mem(b, len, &img, &d) == 0, "%s", d.msg);
	for (i = 0; i + 30 <= len; i++) {
		uint32_t crc, csize;
		uint16_t method, n, m;
		const struct tfs_tensor *t;
		char name[256], want[32];
		uint64_t data;

		if (memcmp(b + i, "PK\3\4", 4))
			continue;
		method = (uint16_t)(b[i + 8] | b[i + 9] << 8);
		crc = b[i + 14] | b[i + 15] << 8 | b[i + 16] << 16 |
		      (uint32_t)b[i + 17] << 24;
		csize = b[i + 18] | b[i + 19] << 8 | b[i + 20] << 16 |
			(uint32_t)b[i + 21] << 24;
		n = (uint16_t)(b[i + 26] | b[i + 27] << 8);
		m = (uint16_t)(b[i + 28] | b[i + 29] << 8);
		ck_assert_uint_gt(n, 4);
		ck_assert_uint_lt(n, sizeof(name));
		memcpy(name, b + i + 30, n - 4); /* without ".npy" */
		name[n - 4] = '\0';
		data = i + 30 + n + m;
		t = tu_tensor(img, name);
		ck_assert_msg(t != NULL, "no tensor %s", name);
		snprintf(want, sizeof(want), "crc32:0x%08X", crc);
		if (deflated) {
			ck_assert_uint_eq(method, 8);
			ck_assert_int_eq(t->encoding, TFS_ENCODING_DEFLATE);
			ck_assert_uint_eq(t->offset, data);
			ck_assert_uint_eq(t->stored_length, csize);
			snprintf(want, sizeof(want), "0x%08X", crc);
			tu_expect_xattr(img, t->path, "npz.crc32", want);
		} else {
			/* version 1.0: magic, version, u16 HEADER_LEN */
			ck_assert_uint_eq(method, 0);
			ck_assert_uint_eq(b[data + 6], 1);
			ck_assert_int_eq(t->encoding, TFS_ENCODING_RAW);
			ck_assert_uint_eq(
				t->offset,
				data + 10 + (b[data + 8] | b[data + 9] << 8));
			tu_expect_xattr(img, t->path, "digest", want);
		}
		seen++;
	}
	ck_assert_uint_eq(seen, img->tree->ntensors);
	ck_assert_uint_ge(seen, 2);
	tfs_image_close(img);
	free(b);
}

START_TEST(project_stored_and_deflated)
{
	char file[4096];

	snprintf(file, sizeof(file), "%s",
		 tu_testdata("npy/valid/savez_positional.npz"));
	check_members(file, false);
	snprintf(file, sizeof(file), "%s",
		 tu_testdata("npy/valid/savez_many.npz"));
	check_members(file, false);
	snprintf(file, sizeof(file), "%s",
		 tu_testdata("npy/valid/savez_compressed_many.npz"));
	check_members(file, true);
}
END_TEST

/* ---- numpy's archives against numpy's reading of them ---- */

static void check_valid(const char *path, const char *name, void *arg)
{
	json_t *expected = arg, *want, *v;
	struct tfs_check_result r;
	struct tfs_image *img;
	struct tfs_diag d;
	const char *key;
	size_t n = strlen(name);
	uint32_t i;

	if (n < 4 || strcmp(name + n - 4, ".npz") != 0)
		return;
	want = json_object_get(expected, name);
	ck_assert_msg(want != NULL, "%s: not in expected.json", name);
	ck_assert_msg(tu_load_file(path, &img, &d) == 0, "%s: %s", name, d.msg);
	ck_assert_str_eq(img->tree->format, "npz");
	ck_assert_uint_eq(img->tree->ntensors, json_object_size(want));
	json_object_foreach(want, key, v) tu_expect_tensor_json(img, key, v);
	for (i = 0; i < img->tree->ntensors; i++) {
		ck_assert_int_eq(tfs_image_check_tensor(img, i, &r, NULL, NULL),
				 0);
		ck_assert(r.digest_checked || img->tree->tensors[i].encoding ==
						      TFS_ENCODING_DEFLATE);
	}
	tfs_image_close(img);
}

START_TEST(numpy_written)
{
	json_error_t err;
	json_t *expected =
		json_load_file(tu_testdata("npy/expected.json"), 0, &err);

	ck_assert_msg(expected != NULL, "expected.json: %s", err.text);
	tu_each_fixture(tu_testdata("npy/valid"), check_valid, expected);
	json_decref(expected);
}
END_TEST

START_TEST(paths_and_skipped_members)
{
	struct tfs_image *img;
	struct tfs_diag d;

	ck_assert_int_eq(
		tu_load_file(tu_testdata("npy/valid/savez_many.npz"), &img, &d),
		0);
	/* member NAME.npy is tensor NAME, split at '.' and '/' */
	ck_assert_str_eq(tu_tensor(img, "encoder.layers.0.weight")->path,
			 "encoder/layers/0/weight");
	ck_assert_str_eq(tu_tensor(img, "encoder/layers/1/bias")->path,
			 "encoder/layers/1/bias");
	tfs_image_close(img);
	ck_assert_int_eq(
		tu_load_file(tu_testdata("npy/valid/with_extra_member.npz"),
			     &img, &d),
		0);
	ck_assert_uint_eq(img->tree->ntensors, 1);
	ck_assert_uint_eq(img->tree->nwarnings, 1);
	ck_assert_ptr_nonnull(strstr(img->tree->warnings[0].msg,
				     "'README.txt' is not an .npy"));
	tfs_image_close(img);
	ck_assert_int_eq(tu_load_file(tu_testdata("npy/valid/savez_empty.npz"),
				      &img, &d),
			 0);
	ck_assert_uint_eq(img->tree->ntensors, 0);
	tfs_image_close(img);
}
END_TEST

/* a member name that is not UTF-8: a tensor, and still valid JSON */
/* @path: an .npz whose first member is w.npy */
static void check_name_not_utf8(const char *path)
{
	struct tfs_image *img;
	struct tfs_diag d;
	json_error_t err;
	json_t *meta;
	uint8_t *file, *text, *p;
	size_t flen, tlen;

	file = tu_read_file(path, &flen);
	/* "w.npy" in the local header and in the central entry */
	for (p = file; (p = memmem(p, flen - (size_t)(p - file), "w.npy", 5));)
		*p = 0xff;
	ck_assert_msg(tu_load_mem(file, flen, &img, &d) == 0, "%s", d.msg);
	ck_assert_ptr_nonnull(tu_tensor(img, "\xff"));
	text = tu_read_node(
		img, tfs_tree_resolve(img->tree, ".tensorfs/metadata.json"),
		&tlen);
	meta = json_loadb((const char *)text, tlen, 0, &err);
	ck_assert_msg(meta != NULL, "metadata.json: %s", err.text);
	ck_assert_str_eq(
		json_string_value(json_object_get(
			json_array_get(json_object_get(meta, "members"), 0),
			"name")),
		"%FF.npy");
	json_decref(meta);
	free(text);
	tfs_image_close(img);
	free(file);
}

START_TEST(name_not_utf8)
{
	TU_NEED_SHARED("npy/stored.npz");
	check_name_not_utf8(tu_fixture("npy/stored.npz"));
}
END_TEST

/* numpy's np.savez(w=..., x) of tests/fixtures/npy/generate.py */
START_TEST(project_name_not_utf8)
{
	check_name_not_utf8(tu_testdata("npy/valid/savez_positional.npz"));
}
END_TEST

/* a deflated member bigger than the cache: decoded in windows */
START_TEST(deflated_windows)
{
	struct tfs_image *img;
	struct tfs_diag d;
	json_error_t err;
	json_t *expected =
		json_load_file(tu_testdata("npy/expected.json"), 0, &err);

	ck_assert_ptr_nonnull(expected);
	ck_assert_int_eq(
		tu_load_file(tu_testdata("npy/valid/compressed_big.npz"), &img,
			     &d),
		0);
	configure(img, 1u << 20);
	tu_expect_tensor_json(
		img, "zeros",
		json_object_get(json_object_get(expected, "compressed_big.npz"),
				"zeros"));
	tu_expect_tensor_json(
		img, "ramp",
		json_object_get(json_object_get(expected, "compressed_big.npz"),
				"ramp"));
	ck_assert_int_eq(nlogged, 0);
	tfs_image_close(img);
	json_decref(expected);
}
END_TEST

/* ---- CRC-32 mismatches: found on read and by verify ---- */

static void corrupt_case(const char *file, const char *word,
			 const char *verify_word)
{
	struct tfs_check_result r;
	struct tfs_image *img;
	struct tfs_view v;
	struct tfs_diag d;
	char rel[96];
	uint32_t node;

	snprintf(rel, sizeof(rel), "npy/corrupt/%s", file);
	ck_assert_msg(tu_load_file(tu_testdata(rel), &img, &d) == 0, "%s",
		      d.msg);
	configure(img, 0);
	node = tu_tensor(img, "w")->node;
	ck_assert_int_eq(tfs_image_read(img, node, 0, 16, &v), -EIO);
	ck_assert(tfs_image_node_failed(img, node));
	ck_assert_int_eq(nlogged, 1);
	ck_assert_msg(strstr(logged[0], word), "%s: %s", file, logged[0]);
	ck_assert_msg(strstr(logged[0], "'w'"), "%s", logged[0]);
	ck_assert_int_eq(tfs_image_check_tensor(img, 0, &r, NULL, NULL),
			 -EBADMSG);
	ck_assert_msg(strstr(r.msg, verify_word), "%s: verify: %s", file,
		      r.msg);
	tfs_image_close(img);
}

START_TEST(crc_mismatch)
{
	/* the digest of the whole stored member */
	corrupt_case("stored_crc_mismatch.npz", "digest mismatch",
		     "digest mismatch");
	/* checked by the deflate codec at the end of the stream */
	corrupt_case("deflated_crc_mismatch.npz", "CRC-32 mismatch",
		     "CRC-32 mismatch");
	/* the stream inflates to more / fewer bytes than the zip says */
	corrupt_case("deflated_stream_longer.npz", "inflates to more",
		     "CRC-32 mismatch");
	corrupt_case("deflated_stream_shorter.npz", "CRC-32 mismatch",
		     "CRC-32 mismatch");
	/*
	 * 70 MiB, more than the decoder runs ahead of a reader: still nothing
	 * is served before the end of the stream was reached and the CRC-32
	 * matched
	 */
	corrupt_case("deflated_big_crc_mismatch.npz", "CRC-32 mismatch",
		     "CRC-32 mismatch");
}
END_TEST

/* larger than the cache (windows): the read that reaches the end fails */
START_TEST(crc_mismatch_windows)
{
	struct tfs_image *img;
	struct tfs_view v;
	struct tfs_diag d;
	uint32_t node;
	uint64_t size;

	ck_assert_int_eq(tu_load_file(tu_testdata("npy/corrupt/"
						  "deflated_big_crc_mismatch."
						  "npz"),
				      &img, &d),
			 0);
	configure(img, 1u << 20);
	node = tu_tensor(img, "w")->node;
	size = tu_tensor(img, "w")->size;
	ck_assert_int_eq(tfs_image_read(img, node, size - 16, 16, &v), -EIO);
	ck_assert(tfs_image_node_failed(img, node));
	ck_assert_int_eq(nlogged, 1);
	ck_assert_ptr_nonnull(strstr(logged[0], "CRC-32 mismatch"));
	tfs_image_close(img);
}
END_TEST

/* ---- one refusal per rule ---- */

static const struct tu_reject rejects[] = {
	{"encrypted", -ENOTSUP, "encrypted", NULL, TU_ANY_OFFSET},
	{"method_bzip2", -ENOTSUP, "compression method 12", NULL,
	 TU_ANY_OFFSET},
	{"local_name_differs", -EBADMSG, "name differs", NULL, 30},
	/* member data at 30 + 5 + 20 = 55 */
	{"member_trailing_bytes", -EBADMSG, "take 144", NULL, 55},
	{"member_cut_short", -EBADMSG,
	 "143 bytes, its header and array take 144", NULL, 55},
	{"member_bad_header", -ENOTSUP, "member 'w.npy': descr: '|O4'", "'|O4'",
	 0},
	{"deflated_bad_header", -EBADMSG, "of the inflated member", NULL, 55},
	{"deflated_corrupt", -EBADMSG, "deflate: corrupt data", NULL, 55},
	{"duplicate_member", -EBADMSG, "'w'", NULL, TU_ANY_OFFSET},
	{"truncated_zip", -EBADMSG, "end of central directory", NULL,
	 TU_ANY_OFFSET},
};

START_TEST(every_reject)
{
	tu_check_rejects("npy/reject", ".npz", rejects,
			 sizeof(rejects) / sizeof(rejects[0]));
}
END_TEST

/*
 * Zips that are not .npz are not claimed (a PyTorch checkpoint is that
 * reader's, a zip of text files nobody's); forced, the reader says why.
 */
START_TEST(detection)
{
	static const struct {
		const char *file, *word;
	} v[] = {
		{"torch_checkpoint.zip", "PyTorch checkpoint"},
		{"text_files.zip", "not an .npz"},
	};
	const struct tfs_format *npz = tfs_format_by_name("npz");
	struct tfs_source src;
	struct tfs_image *img;
	struct tfs_diag d;
	char rel[64];
	uint8_t *b;
	size_t len, i;

	ck_assert_ptr_nonnull(npz);
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		snprintf(rel, sizeof(rel), "npy/not_npz/%s", v[i].file);
		b = tu_read_file(tu_testdata(rel), &len);
		tfs_source_init_memory(&src, b, len);
		ck_assert_int_eq(npz->probe(&src), 0);
		tfs_diag_clear(&d);
		ck_assert_int_eq(
			tfs_image_load_format(&img, &src, npz, NULL, &d),
			-ENOTSUP);
		ck_assert_msg(strstr(d.msg, v[i].word), "%s: %s", rel, d.msg);
		free(b);
	}
	/* an .npz, an empty one, a damaged zip: claimed */
	b = tu_read_file(tu_testdata("npy/valid/savez_positional.npz"), &len);
	tfs_source_init_memory(&src, b, len);
	ck_assert_int_eq(npz->probe(&src), 100);
	tfs_source_init_memory(&src, b, len - 1);
	ck_assert_int_gt(npz->probe(&src), 0);
	ck_assert_int_lt(npz->probe(&src), 100);
	free(b);
	b = tu_read_file(tu_testdata("npy/valid/savez_empty.npz"), &len);
	tfs_source_init_memory(&src, b, len);
	ck_assert_int_eq(npz->probe(&src), 100);
	free(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("npz");
	TCase *tc = tcase_create("npz");

	tcase_add_test(tc, shared_stored);
	tcase_add_test(tc, shared_deflated);
	tcase_add_test(tc, project_stored_and_deflated);
	tcase_add_test(tc, numpy_written);
	tcase_add_test(tc, paths_and_skipped_members);
	tcase_add_test(tc, name_not_utf8);
	tcase_add_test(tc, project_name_not_utf8);
	tcase_add_test(tc, deflated_windows);
	tcase_add_test(tc, crc_mismatch);
	tcase_add_test(tc, crc_mismatch_windows);
	tcase_add_test(tc, every_reject);
	tcase_add_test(tc, detection);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
