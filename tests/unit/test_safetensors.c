// SPDX-License-Identifier: MIT
/*
 * safetensors: the real fixtures (written by the safetensors package) with
 * the values and sha256s of specs/safetensors.md section 6, the files of
 * tests/fixtures/safetensors/generate.py (every dtype, old and new header
 * forms, odd whitespace and key order), and one reject per validation rule,
 * each refused at the byte offset of the JSON token at fault (found here in
 * the file's bytes, not taken from tensorfs).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/image.h"
#include "testutil.h"

static void expect_tensor(struct tfs_image *img, const char *name,
			  const char *dtype, const char *shape,
			  const char *sha256)
{
	const struct tfs_tensor *x = tu_tensor(img, name);
	uint8_t *b;
	size_t len;
	char hex[65];

	ck_assert_msg(x != NULL, "no tensor '%s'", name);
	ck_assert_str_eq(x->dtype, dtype);
	tu_expect_xattr(img, x->path, "shape", shape);
	b = tu_read_node(img, x->node, &len);
	tu_sha256_hex(b, len, hex);
	ck_assert_msg(strcmp(hex, sha256) == 0, "'%s': sha256 %s", name, hex);
	free(b);
}

#define SHA_8 "ff1d2f9e2e7074e2b6fe29326f444a1ea100acbbc6fa5f3aefdd94a5a7b3cbda"
#define SHA_16                                                                 \
	"075333d8dac8f0d1651c87d837361dab2772ebff470cb41bfaaaf4c839525ccb"
#define SHA_32                                                                 \
	"931a4e7067641a24231aff939171488ad1cc50e17c0b6e019cb4c8a63982a11d"
#define SHA_F16                                                                \
	"dfa8498e97fbf766e559fa9e183dfb851d4c5212b5f9a1add2e09b8483338164"
#define SHA_F32                                                                \
	"88d66898e826a718e128a8b719866f1636671491928c94f82d4a9d837d239a58"
#define SHA_F64                                                                \
	"adf4c78265719fe3567a1eb930060fd887dbadea5bcc46a9beee031ad337eee5"

static const struct {
	const char *name, *dtype, *sha;
} samples[] = {
	{"B", "uint8", SHA_8},	   {"b", "int8", SHA_8},
	{"H", "uint16", SHA_16},   {"h", "int16", SHA_16},
	{"I", "uint32", SHA_32},   {"i", "int32", SHA_32},
	{"e", "float16", SHA_F16}, {"f", "float32", SHA_F32},
	{"d", "float64", SHA_F64},
};

START_TEST(real_samples)
{
	TU_NEED_SHARED("safetensors/overall.safetensors");
	struct tfs_image *img;
	struct tfs_diag d;
	char path[64];
	size_t i;

	for (i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
		snprintf(path, sizeof(path), "safetensors/%s.safetensors",
			 samples[i].name);
		ck_assert_int_eq(tu_load_file(tu_fixture(path), &img, &d), 0);
		ck_assert_str_eq(img->tree->format, "safetensors");
		ck_assert_uint_eq(img->tree->ntensors, 1);
		expect_tensor(img, samples[i].name, samples[i].dtype, "[6]",
			      samples[i].sha);
		tu_expect_xattr(img, "", "format", "safetensors");
		tfs_image_close(img);
	}
}
END_TEST

/* all nine in one file; d, f and i are not naturally aligned */
START_TEST(real_overall)
{
	TU_NEED_SHARED("safetensors/overall.safetensors");
	static const struct {
		const char *name;
		uint64_t offset;
	} at[] = {{"B", 534}, {"H", 540}, {"I", 552}, {"b", 576}, {"d", 582},
		  {"e", 630}, {"f", 642}, {"h", 666}, {"i", 678}};
	const struct tfs_node *meta;
	struct tfs_image *img;
	struct tfs_diag d;
	size_t i;

	ck_assert_int_eq(
		tu_load_file(tu_fixture("safetensors/overall.safetensors"),
			     &img, &d),
		0);
	ck_assert_uint_eq(img->tree->ntensors, 9);
	for (i = 0; i < 9; i++) {
		expect_tensor(img, samples[i].name, samples[i].dtype, "[6]",
			      samples[i].sha);
		ck_assert_uint_eq(tu_tensor(img, at[i].name)->offset,
				  at[i].offset);
	}
	/* __metadata__ {"test": "a"} */
	meta = &img->tree->nodes[tfs_tree_resolve(img->tree,
						  ".tensorfs/metadata.json")];
	ck_assert_ptr_nonnull(memmem(meta->mem, meta->mem_len,
				     "\"__metadata__\": {\n    \"test\": \"a\"",
				     strlen("\"__metadata__\": {\n    "
					    "\"test\": \"a\"")));
	tfs_image_close(img);
}
END_TEST

START_TEST(padded_header)
{
	TU_NEED_SHARED(
		"safetensors/synthesized/x_f32_padded_header.safetensors");
	struct tfs_image *img;
	struct tfs_diag d;

	ck_assert_int_eq(
		tu_load_file(tu_fixture("safetensors/synthesized/"
					"x_f32_padded_header.safetensors"),
			     &img, &d),
		0);
	expect_tensor(img, "x", "float32", "[2]",
		      "b9c80b5adeca450753a16950c3cc655d271f7bef7a485bc83f112b72"
		      "fef21d37");
	ck_assert_uint_eq(tu_tensor(img, "x")->offset, 64);
	tfs_image_close(img);
}
END_TEST

/* the generator's valid files: every dtype of the spec, sizes by bits */
/*
 * A header padded with spaces to a multiple of 8 (generate.py pads as
 * modern writers do): each tensor's offset is 8 + the header length + its
 * data_offsets begin, as the header (parsed here by jansson) says
 */
START_TEST(project_padded_header)
{
	static const float f32[6] = {-3, -2, -1, 0, 1, 2};
	uint8_t *b, *bytes;
	size_t len, blen, i;
	uint64_t hlen = 0;
	json_t *h, *x;
	struct tfs_image *img;
	struct tfs_diag d;
	const char *key;

	b = tu_read_file(tu_testdata("safetensors/valid/"
				     "every_dtype.safetensors"),
			 &len);
	for (i = 0; i < 8; i++)
		hlen |= (uint64_t)b[i] << (8 * i);
	ck_assert_uint_eq(hlen % 8, 0);
	ck_assert_uint_eq(b[8 + hlen - 1], ' ');
	h = json_loadb((const char *)b + 8, hlen, 0, NULL);
	ck_assert_ptr_nonnull(h);
	ck_assert_int_eq(tu_load_mem(b, len, &img, &d), 0);
	json_object_foreach(h, key, x)
	{
		const struct tfs_tensor *t;

		if (!strcmp(key, "__metadata__"))
			continue;
		t = tu_tensor(img, key);
		ck_assert_ptr_nonnull(t);
		ck_assert_uint_eq(
			t->offset,
			8 + hlen +
				(uint64_t)json_integer_value(json_array_get(
					json_object_get(x, "data_offsets"),
					0)));
	}
	bytes = tu_read_node(img, tu_tensor(img, "f32")->node, &blen);
	ck_assert_uint_eq(blen, sizeof(f32));
	ck_assert_mem_eq(bytes, f32, sizeof(f32));
	free(bytes);
	tfs_image_close(img);
	json_decref(h);
	free(b);
}
END_TEST

START_TEST(generated_valid)
{
	static const struct {
		const char *name, *dtype, *shape;
		uint64_t size;
	} every[] = {
		{"bool", "bool", "[3]", 3},
		{"f16", "float16", "[2]", 4},
		{"bf16", "bfloat16", "[2]", 4},
		{"c64", "complex64", "[1]", 8},
		{"f8a", "float8_e5m2", "[2]", 2},
		{"f8b", "float8_e4m3", "[2]", 2},
		{"f8c", "float8_e8m0", "[1]", 1},
		{"f8d", "float8_e4m3fnuz", "[1]", 1},
		{"f8e", "float8_e5m2fnuz", "[1]", 1},
		{"f4", "float4", "[2,3]", 3},
		{"f6a", "float6_e2m3", "[4]", 3},
		{"f6b", "float6_e3m2", "[2,4]", 6},
		{"scalar", "float32", "[]", 4},
		{"empty", "float32", "[0,5]", 0},
		{"u64", "uint64", "[1]", 8},
	};
	struct tfs_image *img;
	struct tfs_diag d;
	size_t i;

	ck_assert_int_eq(tu_load_file(tu_testdata("safetensors/valid/"
						  "every_dtype.safetensors"),
				      &img, &d),
			 0);
	ck_assert_uint_eq(img->tree->ntensors, 25);
	for (i = 0; i < sizeof(every) / sizeof(every[0]); i++) {
		const struct tfs_tensor *x = tu_tensor(img, every[i].name);

		ck_assert_msg(x != NULL, "no '%s'", every[i].name);
		ck_assert_str_eq(x->dtype, every[i].dtype);
		ck_assert_uint_eq(x->size, every[i].size);
		tu_expect_xattr(img, x->path, "shape", every[i].shape);
	}
	tu_expect_xattr(img, "f6b", "safetensors.dtype", "F6_E3M2");
	tfs_image_close(img);

	/* names keep their bytes; dots split, escapes decoded */
	ck_assert_int_eq(tu_load_file(tu_testdata("safetensors/valid/"
						  "unpadded_misaligned."
						  "safetensors"),
				      &img, &d),
			 0);
	ck_assert_ptr_nonnull(tu_tensor(img, "\xc3\xa9t\xc3\xa9.w"));
	ck_assert_str_eq(tu_tensor(img, "a.b.c")->path, "a/b/c");
	ck_assert_str_eq(tu_tensor(img, "x/y")->path, "x/y");
	tfs_image_close(img);
	ck_assert_int_eq(tu_load_file(tu_testdata("safetensors/valid/"
						  "whitespace_and_order."
						  "safetensors"),
				      &img, &d),
			 0);
	ck_assert_ptr_nonnull(tu_tensor(img, "qA\n"));
	ck_assert_uint_eq(tu_tensor(img, "z")->size, 8);
	tfs_image_close(img);
}
END_TEST

/*
 * Each reject: the error, a word of the message, and where: the first
 * occurrence of @needle in the file plus @delta (or @at when no needle).
 */
static const struct {
	const char *file;
	int err;
	const char *word;
	const char *needle;
	uint64_t at;
} rejects[] = {
	/* 3 bytes: nothing to recognise */
	{"too_small", -ENOEXEC, "not a container format", NULL, 0},
	{"header_too_large", -E2BIG, "above the limit", NULL, 0},
	{"header_past_eof", -EBADMSG, "header length", NULL, 0},
	{"not_utf8", -EBADMSG, "UTF-8", "\xff", 0},
	{"not_json", -EBADMSG, "member name", "}}", 0},
	/* '[' where '{' must be: not recognisable as safetensors */
	{"not_an_object", -ENOEXEC, "not a container format", NULL, 0},
	{"unknown_dtype", -EBADMSG, "unknown dtype 'F31'", "\"F31\"", 0},
	{"negative_dim", -EBADMSG, "shape: not a non-negative integer", "-2",
	 0},
	{"float_dim", -EBADMSG, "shape: not a non-negative integer", "2.0", 0},
	{"offsets_arity", -EBADMSG, "data_offsets: more than 2", "8]", 0},
	{"missing_shape", -EBADMSG, "shape: missing", "{\"dtype", 0},
	{"metadata_not_string", -EBADMSG, "__metadata__: 'n': not a string",
	 "1}", 0},
	{"gap", -EBADMSG, "a gap", "[3,5]", 0},
	{"overlap", -EBADMSG, "an overlap", "[1,3]", 0},
	{"end_before_begin", -EBADMSG, "before begin", "[8,0]", 0},
	{"size_mismatch", -EBADMSG, "does not match shape", "\"w\"", 0},
	{"f4_odd_count", -EBADMSG, "whole number of float4", "\"f4\"", 0},
	/* the end of the last tensor: 8 + N (56, padded) + 8 */
	{"trailing_bytes", -EBADMSG, "trailing bytes", NULL, 72},
	{"cut_short", -EBADMSG, "cut short", NULL, 72},
	{"duplicate_name", -EBADMSG, "duplicate",
	 "\"w\":{\"dtype\":\"U8\","
	 "\"shape\":[1],"
	 "\"data_offsets\":[1",
	 0},
	{"duplicate_field", -EBADMSG, "'dtype' is given twice",
	 "\"dtype\":\"U8\",\"shape", 0},
	{"huge_dim", -EBADMSG, "overflows", "\"w\"", 0},
};

START_TEST(every_reject)
{
	char rel[128];
	uint8_t *b, *p;
	size_t len, i;
	uint64_t at;

	for (i = 0; i < sizeof(rejects) / sizeof(rejects[0]); i++) {
		snprintf(rel, sizeof(rel), "safetensors/reject/%s.safetensors",
			 rejects[i].file);
		b = tu_read_file(tu_testdata(rel), &len);
		at = rejects[i].at;
		if (rejects[i].needle) {
			p = memmem(b, len, rejects[i].needle,
				   strlen(rejects[i].needle));
			ck_assert_msg(p != NULL, "%s: needle", rejects[i].file);
			at = (uint64_t)(p - b);
		}
		tu_expect_reject(b, len, rejects[i].err, rejects[i].word, at);
		free(b);
	}
}
END_TEST

/* every file under reject/ is in the table above, and only those */
static void reject_is_listed(const char *path, const char *name, void *arg)
{
	size_t i, *seen = arg;
	char want[128];

	for (i = 0; i < sizeof(rejects) / sizeof(rejects[0]); i++) {
		snprintf(want, sizeof(want), "%s.safetensors", rejects[i].file);
		if (strcmp(name, want) == 0) {
			(*seen)++;
			return;
		}
	}
	ck_abort_msg("reject/%s has no row in the rejects table", name);
}

START_TEST(every_reject_file_is_listed)
{
	size_t seen = 0, files;

	files = tu_each_fixture(tu_testdata("safetensors/reject"),
				reject_is_listed, &seen);
	ck_assert_uint_eq(seen, files);
	ck_assert_uint_eq(files, sizeof(rejects) / sizeof(rejects[0]));
}
END_TEST

/* a hostile header: a million tensors is refused or read in bounded
 * memory; here, many entries of one byte each load in one pass */
START_TEST(many_tensors)
{
	enum { N = 20000 };
	struct tu_buf h = {0}, f = {0};
	struct tfs_image *img;
	char ent[96];
	uint64_t n;
	int i;

	tu_buf_put(&h, "{", 1);
	for (i = 0; i < N; i++) {
		int k = snprintf(ent, sizeof(ent),
				 "%s\"t%d\":{\"dtype\":\"U8\",\"shape\":[1],"
				 "\"data_offsets\":[%d,%d]}",
				 i ? "," : "", i, i, i + 1);
		tu_buf_put(&h, ent, (size_t)k);
	}
	tu_buf_put(&h, "}", 1);
	n = h.len;
	tu_buf_put(&f, &n, 8); /* little-endian host */
	tu_buf_put(&f, h.p, h.len);
	for (i = 0; i < N; i++)
		tu_buf_put(&f, "x", 1);
	img = tu_load_ok(f.p, f.len);
	ck_assert_uint_eq(img->tree->ntensors, N);
	ck_assert_uint_eq(tu_tensor(img, "t19999")->offset, 8 + n + 19999);
	tfs_image_close(img);
	free(h.p);
	free(f.p);
}
END_TEST

/* a safetensors file of @header and 4 data bytes, into @f */
static void st_file(const char *header, struct tu_buf *f)
{
	uint64_t n = strlen(header);

	tu_buf_put(f, &n, 8); /* little-endian host */
	tu_buf_put(f, header, n);
	tu_buf_put(f, "abcd", 4);
}

/* a name in a message: '%' as %25 and a control byte as %XX, as every
 * reader shows it (tfs_name_printable) */
START_TEST(name_in_message)
{
	struct tu_buf f = {0};

	st_file("{\"w%\\u001b\":{\"dtype\":\"F31\",\"shape\":[4],"
		"\"data_offsets\":[0,4]}}",
		&f);
	tu_expect_reject(f.p, f.len, -EBADMSG,
			 "tensor 'w%25%1B': dtype: unknown dtype 'F31'",
			 TU_ANY_OFFSET);
	free(f.p);
}
END_TEST

/* "__metadata__": null is no metadata, as the reference reader takes it */
static void load_meta_null(const char *header)
{
	struct tu_buf f = {0};
	struct tfs_image *img;
	const struct tfs_node *meta;
	const struct tfs_tensor *x;

	st_file(header, &f);
	img = tu_load_ok(f.p, f.len);
	ck_assert_uint_eq(img->tree->ntensors, 1);
	x = tu_tensor(img, "x");
	ck_assert_ptr_nonnull(x);
	ck_assert_uint_eq(x->offset, 8 + strlen(header));
	meta = &img->tree->nodes[tfs_tree_resolve(img->tree,
						  ".tensorfs/metadata.json")];
	ck_assert_ptr_null(
		memmem(meta->mem, meta->mem_len, "__metadata__", 12));
	tfs_image_close(img);
	free(f.p);
}

#define X_U8_4 "\"x\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]}"

START_TEST(metadata_null)
{
	struct tu_buf f = {0};

	load_meta_null("{\"__metadata__\":null," X_U8_4 "}");
	load_meta_null("{" X_U8_4 ", \"__metadata__\" : null }");
	/* other non-objects stay refused, at the value's offset */
	st_file("{\"__metadata__\":1," X_U8_4 "}", &f);
	tu_expect_reject(f.p, f.len, -EBADMSG, "not an object", 8 + 16);
	free(f.p);
	/* null once, then an object: still given twice */
	memset(&f, 0, sizeof(f));
	st_file("{\"__metadata__\":null,\"__metadata__\":{}," X_U8_4 "}", &f);
	tu_expect_reject(f.p, f.len, -EBADMSG, "given twice", 8 + 21);
	free(f.p);
}
END_TEST

/*
 * The real MLX-written LoRA adapter of ../shared/real (ollama's test data,
 * "__metadata__":null): 8 float32 tensors.  Skipped without it.
 */
START_TEST(real_mlx_adapter_metadata_null)
{
	static const char rel[] =
		"../real/safetensors/ollama-discollama-adapters.safetensors";
	const struct tfs_tensor *x;
	struct tfs_image *img;
	struct tfs_diag d;
	char path[4096];

	TU_NEED_SHARED(rel);
	snprintf(path, sizeof(path), "%s", tu_fixture(rel));
	ck_assert_int_eq(tu_load_file(path, &img, &d), 0);
	ck_assert_uint_eq(img->tree->ntensors, 8);
	x = tu_tensor(img, "model.layers.30.self_attn.q_proj.lora_a");
	ck_assert_ptr_nonnull(x);
	ck_assert_str_eq(x->dtype, "float32");
	tu_expect_xattr(img, x->path, "shape", "[4096,8]");
	tfs_image_close(img);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("safetensors");
	TCase *tc = tcase_create("safetensors");

	tcase_add_test(tc, real_samples);
	tcase_add_test(tc, real_overall);
	tcase_add_test(tc, padded_header);
	tcase_add_test(tc, project_padded_header);
	tcase_add_test(tc, generated_valid);
	tcase_add_test(tc, every_reject);
	tcase_add_test(tc, every_reject_file_is_listed);
	tcase_add_test(tc, many_tensors);
	tcase_add_test(tc, metadata_null);
	tcase_add_test(tc, name_in_message);
	tcase_add_test(tc, real_mlx_adapter_metadata_null);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
