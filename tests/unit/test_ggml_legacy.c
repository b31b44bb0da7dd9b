// SPDX-License-Identifier: MIT
/*
 * Pre-GGUF ggml files: every file of the shared fixtures
 * (../shared/fixtures/ggml-legacy: real whisper.cpp, silero VAD and
 * llama.cpp files, synthesized ones; skipped case by case without it) and
 * of tests/fixtures/ggml_legacy (generate.py's, written from the spec)
 * against its expected.json (names,
 * dtypes by generation, shapes, offsets, sha256 of the bytes served,
 * hyper-parameters, vocabulary), every reject with the field and the byte
 * offset worked out here from the fixture's own layout, the real files of
 * ../shared/real/ggml (each skipped when absent), and files written here
 * for the rules the fixtures do not reach (generations, refusals by name,
 * padding, duplicates, scalars).
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "formats/common/ggml_types.h"
#include "core/image.h"
#include "core/values.h"
#include "testutil.h"

#define FIX "ggml-legacy/"

/* ---- helpers ------------------------------------------------------------ */

/* .tensorfs/metadata.json, parsed (a deferred vocabulary is made) */
static json_t *metadata(struct tfs_image *img)
{
	return tu_meta_json(img, "metadata.json");
}

static json_int_t int_of(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	ck_assert_msg(json_is_integer(v), "no integer '%s'", key);
	return json_integer_value(v);
}

/* "[a,b]" of a JSON array of integers */
static void shape_text(const json_t *a, char *buf, size_t len)
{
	size_t i, o = (size_t)snprintf(buf, len, "[");

	for (i = 0; i < json_array_size(a); i++)
		o += (size_t)snprintf(
			buf + o, len - o, "%s%lld", i ? "," : "",
			(long long)json_integer_value(json_array_get(a, i)));
	snprintf(buf + o, len - o, "]");
}

/*
 * expected.json names quantized types by ggml's plain name; tensorfs adds
 * the generation (specs/ggml-legacy.md section 4)
 */
static void dtype_of(const char *plain, unsigned gen, char *buf, size_t len)
{
	if (!strcmp(plain, "float32") || !strcmp(plain, "float16") || gen == 2)
		snprintf(buf, len, "%s", plain);
	else
		snprintf(buf, len, "%s_v%u", plain, gen + 1);
}

static unsigned generation(const json_t *e)
{
	const char *fam = json_string_value(json_object_get(e, "family"));

	if (!strcmp(fam, "llama-ggjt"))
		return (unsigned)int_of(e, "version") - 1;
	if (!strcmp(fam, "whisper"))
		return (unsigned)int_of(e, "qnt_version");
	if (!strcmp(fam, "whisper-vad"))
		return 2;
	return 0; /* ggmf, unversioned */
}

static void expect_bytes(struct tfs_image *img, const struct tfs_tensor *x,
			 uint64_t offset, uint64_t nbytes, const char *sha)
{
	char hex[65];
	uint8_t *b;
	size_t len;

	ck_assert_msg(x->offset == offset, "'%s' at %llu, want %llu", x->name,
		      (unsigned long long)x->offset,
		      (unsigned long long)offset);
	ck_assert_uint_eq(x->size, nbytes);
	b = tu_read_node(img, x->node, &len);
	ck_assert_uint_eq(len, nbytes);
	tu_sha256_hex(b, len, hex);
	ck_assert_msg(!strcmp(hex, sha), "'%s': sha256 %s, want %s", x->name,
		      hex, sha);
	free(b);
}

static void expect_tensor(struct tfs_image *img, const json_t *t, unsigned gen)
{
	const char *name = json_string_value(json_object_get(t, "name"));
	const char *plain = json_string_value(json_object_get(t, "dtype"));
	const struct tfs_tensor *x = tu_tensor(img, name);
	char dtype[32], shape[96], ne[96], type[16];
	size_t i;

	ck_assert_msg(x != NULL, "no tensor '%s'", name);
	dtype_of(plain, gen, dtype, sizeof(dtype));
	ck_assert_str_eq(x->dtype, dtype);
	shape_text(json_object_get(t, "shape"), shape, sizeof(shape));
	tu_expect_xattr(img, x->path, "shape", shape);
	shape_text(json_object_get(t, "ne"), ne, sizeof(ne));
	tu_expect_xattr(img, x->path, "ggml.ne", ne);
	snprintf(type, sizeof(type), "%s",
		 json_string_value(json_object_get(t, "type_name")));
	for (i = 0; type[i]; i++)
		type[i] = (char)(type[i] >= 'a' && type[i] <= 'z'
					 ? type[i] - 'a' + 'A'
					 : type[i]);
	tu_expect_xattr(img, x->path, "ggml.type", type);
	expect_bytes(img, x, (uint64_t)int_of(t, "offset"),
		     (uint64_t)int_of(t, "nbytes"),
		     json_string_value(json_object_get(t, "sha256")));
}

/* every member of @want is in @got, equal */
static void expect_members(const json_t *got, const json_t *want)
{
	const char *key;
	json_t *v;

	ck_assert_ptr_nonnull(got);
	json_object_foreach((json_t *)want, key, v) ck_assert_msg(
		json_equal(json_object_get(got, key), v), "'%s' differs", key);
}

/* @dir/expected.json; @dir absolute */
static json_t *expected(const char *dir)
{
	char path[4096];
	json_error_t err;
	json_t *j;

	snprintf(path, sizeof(path), "%s/expected.json", dir);
	j = json_load_file(path, 0, &err);
	ck_assert_msg(j != NULL, "%s: %s", path, err.text);
	return j;
}
/* the whisper header and VAD fields of @e against metadata.json */
static void expect_header(const json_t *m, const json_t *e)
{
	const char *fam = json_string_value(json_object_get(e, "family"));
	const json_t *hp = json_object_get(m, "hparams");
	json_t *v;
	int a, b, c;

	if (!strcmp(fam, "whisper-vad")) {
		ck_assert(
			sscanf(json_string_value(json_object_get(e, "version")),
			       "%d.%d.%d", &a, &b, &c) == 3);
		v = json_pack("[iii]", a, b, c);
		ck_assert(json_equal(json_object_get(hp, "version"), v));
		json_decref(v);
		ck_assert(json_equal(json_object_get(hp, "model_type"),
				     json_object_get(e, "model_type")));
		ck_assert(json_equal(json_object_get(hp, "encoder_layers"),
				     json_object_get(e, "encoder_layers")));
		ck_assert_int_eq(int_of(hp, "n_window"), int_of(e, "n_window"));
		ck_assert_int_eq(int_of(hp, "final_conv_out"),
				 int_of(e, "final_conv_out"));
		ck_assert_int_eq(int_of(hp, "lstm_hidden_size"),
				 int_of(e, "lstm_hidden_size"));
		ck_assert(json_is_null(json_object_get(m, "version")));
		ck_assert_ptr_null(json_object_get(m, "vocab"));
		return;
	}
	expect_members(hp, json_object_get(e, "hparams"));
	ck_assert_int_eq(int_of(json_object_get(m, "vocab"), "count"),
			 int_of(e, "vocab_count"));
	if (!strcmp(fam, "whisper")) {
		ck_assert_int_eq(int_of(m, "qnt_version"),
				 int_of(e, "qnt_version"));
		return;
	}
	ck_assert(json_equal(json_object_get(m, "version"),
			     json_object_get(e, "version")));
	ck_assert(json_equal(
		json_object_get(json_object_get(m, "vocab"), "has_scores"),
		json_object_get(e, "vocab_has_scores")));
}

/* ---- the shared fixtures ----------------------------------------------- */

/* @dir/@sub@file against its row @e of @dir/expected.json */
static void check_valid(const char *dir, const char *sub, const char *file,
			const json_t *e)
{
	const json_t *ts = json_object_get(e, "tensors"), *mel, *t;
	const char *fam = json_string_value(json_object_get(e, "family"));
	unsigned gen = generation(e);
	bool whisper = !strcmp(fam, "whisper");
	struct tfs_image *img;
	struct tfs_diag d;
	char path[4096];
	json_t *m;
	size_t i;

	snprintf(path, sizeof(path), "%s/%s%s", dir, sub, file);
	ck_assert_msg(tu_load_file(path, &img, &d) == 0,
		      "%s: %s (at %llu)", file, d.msg,
		      (unsigned long long)d.offset);
	ck_assert_str_eq(img->tree->format, "ggml-legacy");
	ck_assert_uint_eq(img->tree->ntensors,
			  json_array_size(ts) + (whisper ? 1 : 0));
	json_array_foreach(ts, i, t) expect_tensor(img, t, gen);
	if (whisper) {
		mel = json_object_get(e, "mel_filters");
		expect_bytes(img, tu_tensor(img, "mel_filters"),
			     (uint64_t)int_of(mel, "offset"),
			     (uint64_t)int_of(mel, "nbytes"),
			     json_string_value(json_object_get(mel, "sha256")));
		snprintf(path, sizeof(path), "[%lld,%lld]",
			 (long long)int_of(mel, "n_mel"),
			 (long long)int_of(mel, "n_fft"));
		tu_expect_xattr(img, "mel_filters", "shape", path);
		tu_expect_xattr(img, "mel_filters", "dtype", "float32");
	}
	m = metadata(img);
	ck_assert_str_eq(json_string_value(json_object_get(m, "format")),
			 "ggml-legacy");
	ck_assert_str_eq(json_string_value(json_object_get(m, "family")), fam);
	ck_assert_int_eq(int_of(m, "tensors_start"),
			 int_of(e, "tensors_start"));
	ck_assert_int_eq(int_of(m, "qnt_version"), gen);
	expect_header(m, e);
	tu_expect_xattr(img, "", "ggml.family", fam);
	ck_assert_ptr_nonnull(tu_xattr(img, "", "summary"));
	ck_assert_uint_eq(img->tree->nwarnings, 0);
	json_decref(m);
	tfs_image_close(img);
}

/* tu_each_fixture's counter alone */
static void count_only(const char *path, const char *name, void *arg)
{
	(void)path;
	(void)name;
	(void)arg;
}

/*
 * every valid file of @dir (absolute; copied) as its expected.json says;
 * they are in @dir/@sub ("" or "valid/")
 */
static size_t valid_files(const char *path, const char *sub)
{
	char dir[2048];
	json_t *exp, *e;
	const char *file;
	size_t n = 0;

	snprintf(dir, sizeof(dir), "%s", path);
	exp = expected(dir);
	json_object_foreach(json_object_get(exp, "valid"), file, e)
	{
		check_valid(dir, sub, file, e);
		n++;
	}
	json_decref(exp);
	return n;
}

/* ../shared's: real whisper.cpp and llama.cpp files and synthesized ones */
START_TEST(fixtures_valid)
{
	TU_NEED_SHARED(FIX "expected.json");
	ck_assert_uint_eq(valid_files(tu_fixture("ggml-legacy"), ""), 12);
}
END_TEST

/* tests/fixtures/ggml_legacy/generate.py's: every family and generation */
START_TEST(generated_valid)
{
	char dir[2048];

	snprintf(dir, sizeof(dir), "%s", tu_testdata("ggml_legacy"));
	ck_assert_uint_eq(valid_files(dir, "valid/"), 8);
	snprintf(dir, sizeof(dir), "%s", tu_testdata("ggml_legacy/valid"));
	/* and nothing in valid/ is left out of expected.json */
	ck_assert_uint_eq(tu_each_fixture(dir, count_only, NULL), 8);
}
END_TEST

/* the first byte of the record after tensor @i of @file in expected.json */
static uint64_t record_after(const json_t *exp, const char *file, size_t i)
{
	const json_t *t = json_array_get(
		json_object_get(
			json_object_get(json_object_get(exp, "valid"), file),
			"tensors"),
		i);

	return (uint64_t)(int_of(t, "offset") + int_of(t, "nbytes"));
}

struct reject_row {
	const char *file;
	int err;
	const char *word;
	uint64_t at;
};

static void reject_seen(const char *path, const char *name, void *arg)
{
	const struct reject_row *v = arg;
	size_t i;

	for (i = 0; v[i].file && strcmp(v[i].file, name); i++)
		;
	ck_assert_msg(v[i].file != NULL, "reject %s has no row", name);
}

/*
 * the refusals of @dir/reject (absolute; copied), broken copies of
 * llama-ggjt-v3-synth.bin whose offsets @dir/expected.json gives; with
 * @real, also whisper.cpp's own bad n_dims model
 */
static void reject_files(const char *path, bool real)
{
	json_t *exp;
	const char *v3 = "llama-ggjt-v3-synth.bin";
	uint64_t out, out_data, end;
	char dir[2048];

	snprintf(dir, sizeof(dir), "%s", path);
	exp = expected(dir);
	/* output.weight, the 4th record of the ggjt v3 file */
	out = record_after(exp, v3, 2);
	out_data = (uint64_t)int_of(
		json_array_get(
			json_object_get(
				json_object_get(json_object_get(exp, "valid"),
						v3),
				"tensors"),
			3),
		"offset");
	end = record_after(exp, v3, 3);
	/*
	 * the whisper file: magic, 11 hparams, n_mel = n_fft = 1, one filter
	 * float, 1 token of 1 byte; its first record follows
	 */
	const uint64_t whisper_rec = 4 + 44 + 8 + 4 + 4 + 4 + 1;
	const struct reject_row rows[] = {
		{"ndims_5.bin", -EBADMSG, "n_dims: 5", out},
		{"name_length_past_eof.bin", -EBADMSG, "name length", out + 4},
		{"removed_type_q4_2_in_v3.bin", -EBADMSG, "type: 4", out + 8},
		{"truncated_tensor_data.bin", -EBADMSG, "data", out_data},
		{"trailing_garbage.bin", -EBADMSG, "ends inside", end},
		{"ggjt_version_4.bin", -ENOTSUP, "version 4", 4},
		{"for-tests-ggml-whisper-bad-ndims.bin", -EBADMSG, "n_dims: 64",
		 whisper_rec},
		{NULL, 0, NULL, 0},
	};
	struct tfs_image *img;
	struct tfs_diag d;
	char file[4096], line[512];
	size_t i, n = 0;

	for (i = 0; rows[i].file; i++) {
		if (!real && strstr(rows[i].file, "for-tests"))
			continue;
		snprintf(file, sizeof(file), "%s/reject/%s", dir, rows[i].file);
		n++;
		img = NULL;
		ck_assert_int_eq(tu_load_file(file, &img, &d), rows[i].err);
		ck_assert_ptr_null(img);
		tfs_diag_format(&d, line, sizeof(line));
		ck_assert_msg(strstr(d.msg, rows[i].word),
			      "%s: '%s' lacks '%s'", rows[i].file, line,
			      rows[i].word);
		ck_assert_msg(d.has_offset && d.offset == rows[i].at,
			      "%s: '%s', want offset %llu", rows[i].file, line,
			      (unsigned long long)rows[i].at);
		ck_assert_ptr_null(strchr(line, '\n'));
	}
	if (real) {
		/* the whisper layout is named: its header fits */
		img = NULL;
		snprintf(file, sizeof(file),
			 "%s/reject/for-tests-ggml-whisper-bad-ndims.bin", dir);
		tu_load_file(file, &img, &d);
		ck_assert_ptr_nonnull(
			strstr(d.msg, "read as a whisper.cpp model"));
	}
	snprintf(file, sizeof(file), "%s/reject", dir);
	ck_assert_uint_eq(tu_each_fixture(file, reject_seen, (void *)rows), n);
	json_decref(exp);
}

START_TEST(fixtures_reject)
{
	TU_NEED_SHARED(FIX "expected.json");
	reject_files(tu_fixture("ggml-legacy"), true);
}
END_TEST

START_TEST(generated_reject)
{
	reject_files(tu_testdata("ggml_legacy"), false);
}
END_TEST
/* ---- the real files of ../shared/real/ggml ------------------------------ */

/* real whisper.cpp test models: each one missing is a skipped case */
static bool real_file(const char *case_name, const char *name, char *path,
		      size_t len)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "../real/ggml/%s", name);
	if (!tu_shared(case_name, rel))
		return false;
	snprintf(path, len, "%s", tu_fixture(rel));
	return true;
}

START_TEST(real_files)
{
	struct tfs_image *img;
	struct tfs_diag d;
	char path[4096];
	json_t *m, *vocab, *toks;

	if (real_file(__func__, "for-tests-ggml-tiny.bin", path,
		      sizeof(path))) {
		ck_assert_int_eq(tu_load_file(path, &img, &d), 0);
		ck_assert_uint_eq(img->tree->ntensors, 1); /* mel_filters */
		tu_expect_xattr(img, "", "architecture", "whisper");
		m = metadata(img);
		ck_assert_int_eq(
			int_of(json_object_get(m, "hparams"), "n_vocab"),
			51865);
		vocab = json_object_get(m, "vocab");
		toks = json_object_get(vocab, "tokens");
		/* GPT-2's byte-level vocabulary: "!" first, 50257 tokens,
		 * the last empty (as in the file) */
		ck_assert_uint_eq(json_array_size(toks), 50257);
		ck_assert_str_eq(json_string_value(json_array_get(toks, 0)),
				 "!");
		ck_assert_str_eq(json_string_value(json_array_get(toks, 50253)),
				 " Pakistani");
		ck_assert_str_eq(json_string_value(json_array_get(toks, 50256)),
				 "");
		ck_assert_int_eq(int_of(vocab, "offset"), 56 + 80 * 201 * 4);
		json_decref(m);
		tfs_image_close(img);
	}
	if (real_file(__func__, "for-tests-silero-v5.1.2-ggml.bin", path,
		      sizeof(path))) {
		ck_assert_int_eq(tu_load_file(path, &img, &d), 0);
		ck_assert_uint_eq(img->tree->ntensors, 15);
		tu_expect_xattr(img, "_model/decoder/decoder/2/bias", "shape",
				"[]");
		tu_expect_xattr(img, "", "architecture", "silero-vad");
		tfs_image_close(img);
	}
	/* whisper.cpp's parakeet test model: a ggml header of another kind */
	if (real_file(__func__, "for-tests-ggml-parakeet-tdt.bin", path,
		      sizeof(path))) {
		img = NULL;
		ck_assert_int_eq(tu_load_file(path, &img, &d), -EBADMSG);
		ck_assert_ptr_nonnull(
			strstr(d.msg, "unknown ggml-family header"));
		ck_assert(d.has_offset);
	}
}
END_TEST

/* ---- files written here ------------------------------------------------- */

static void put32(struct tu_buf *b, uint32_t v)
{
	uint8_t x[4] = {v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, v >> 24};

	tu_buf_put(b, x, 4);
}

/* a llama header: 2 one-byte tokens ("a", "b"), with scores but for ggml */
static void llama_head(struct tu_buf *b, uint32_t magic, uint32_t version)
{
	static const uint32_t hp[7] = {2, 32, 1, 1, 1, 32, 0};
	int i;

	put32(b, magic);
	if (version)
		put32(b, version);
	for (i = 0; i < 7; i++)
		put32(b, hp[i]);
	for (i = 0; i < 2; i++) {
		put32(b, 1);
		tu_buf_put(b, i ? "b" : "a", 1);
		if (magic != 0x67676d6c)
			put32(b, 0x3f800000); /* 1.0f */
	}
}

/* a record; @align 32 pads (with @padbyte) before @nbytes of data */
static uint64_t record(struct tu_buf *b, const char *name, int32_t type, int nd,
		       const int32_t *ne, uint32_t align, uint8_t padbyte,
		       size_t nbytes)
{
	uint64_t data;
	int i;

	put32(b, (uint32_t)nd);
	put32(b, (uint32_t)strlen(name));
	put32(b, (uint32_t)type);
	for (i = 0; i < nd; i++)
		put32(b, (uint32_t)ne[i]);
	tu_buf_put(b, name, strlen(name));
	while (align > 1 && b->len % align)
		tu_buf_put(b, &padbyte, 1);
	data = b->len;
	for (; nbytes; nbytes--)
		tu_buf_put(b, "\x11", 1);
	return data;
}

#define GGML 0x67676d6cu
#define GGMF 0x67676d66u
#define GGJT 0x67676a74u

/*
 * one tensor of @type and ne [@ne0, 2] in a ggjt file of @version, in @b
 * (the caller frees it after the image)
 */
static struct tfs_image *ggjt_one(struct tu_buf *b, uint32_t version,
				  int32_t type, int32_t ne0, size_t nbytes,
				  int err, const char *word)
{
	struct tfs_image *img = NULL;
	int32_t ne[2] = {ne0, 2};

	memset(b, 0, sizeof(*b));
	llama_head(b, GGJT, version);
	record(b, "w", type, 2, ne, 32, 0, nbytes);
	if (err)
		tu_expect_reject(b->p, b->len, err, word, TU_ANY_OFFSET);
	else
		img = tu_load_ok(b->p, b->len);
	return img;
}

START_TEST(generations)
{
	static const struct {
		uint32_t version;
		int32_t type, ne0;
		size_t nbytes;
		const char *dtype, *ggml_type;
	} ok[] = {
		{1, 2, 32, 2 * 20, "q4_0_v1", "Q4_0"},
		{1, 3, 32, 2 * 24, "q4_1_v1", "Q4_1"},
		{1, 4, 16, 2 * 10, "q4_2_v1", "Q4_2"},
		{1, 5, 16, 2 * 12, "q4_3_v1", "Q4_3"},
		{1, 6, 32, 2 * 22, "q5_0_v1", "Q5_0"},
		{1, 7, 32, 2 * 24, "q5_1_v1", "Q5_1"},
		{1, 8, 32, 2 * 36, "q8_0_v1", "Q8_0"},
		{2, 2, 32, 2 * 20, "q4_0_v2", "Q4_0"},
		{2, 3, 32, 2 * 24, "q4_1_v2", "Q4_1"},
		{2, 6, 32, 2 * 22, "q5_0_v2", "Q5_0"},
		{2, 7, 32, 2 * 24, "q5_1_v2", "Q5_1"},
		{2, 8, 32, 2 * 36, "q8_0_v2", "Q8_0"},
		{3, 2, 32, 2 * 18, "q4_0", "Q4_0"},
		{3, 3, 32, 2 * 20, "q4_1", "Q4_1"},
		{3, 8, 32, 2 * 34, "q8_0", "Q8_0"},
		{3, 10, 256, 2 * 84, "q2_k", "Q2_K"},
		{3, 14, 256, 2 * 210, "q6_k", "Q6_K"},
		{3, 1, 3, 2 * 3 * 2, "float16", "F16"},
	};
	static const struct {
		uint32_t version;
		int32_t type;
	} no[] = {{2, 4}, {2, 5},  {3, 4},  {3, 5},  {1, 10}, {2, 14},
		  {3, 9}, {3, 15}, {3, 16}, {1, 24}, {3, -1}};
	struct tfs_image *img;
	struct tu_buf b;
	enum tfs_dtype dt;
	uint64_t n;
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		img = ggjt_one(&b, ok[i].version, ok[i].type, ok[i].ne0,
			       ok[i].nbytes, 0, NULL);
		ck_assert_str_eq(tu_tensor(img, "w")->dtype, ok[i].dtype);
		ck_assert_uint_eq(tu_tensor(img, "w")->size, ok[i].nbytes);
		tu_expect_xattr(img, "w", "ggml.type", ok[i].ggml_type);
		/* only today's layouts are decoded (stats, as=float32) */
		dt = tfs_dtype_from_name(ok[i].dtype);
		ck_assert_int_eq(tfs_values_supported(dt, 0) == 0,
				 ok[i].version == 3);
		tfs_image_close(img);
		free(b.p);
	}
	/* the size rule of the dtype table: 2 blocks of each */
	ck_assert_int_eq(tfs_dtype_bytes(TFS_DTYPE_Q4_0_V1, 64, &n), 0);
	ck_assert_uint_eq(n, 40);
	ck_assert_int_eq(tfs_dtype_bytes(TFS_DTYPE_Q4_2_V1, 24, &n), -EINVAL);
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		ggjt_one(&b, no[i].version, no[i].type, 256, 2 * 256, -EBADMSG,
			 "is not a ggml type");
		free(b.p);
	}
	/* a quantized scalar: not a whole block */
	memset(&b, 0, sizeof(b));
	llama_head(&b, GGJT, 3);
	n = b.len;
	record(&b, "s", 8, 0, NULL, 32, 0, 34);
	tu_expect_reject(b.p, b.len, -EBADMSG, "a scalar cannot be a Q8_0", n);
	free(b.p);
	/* ne[0] not a whole number of blocks */
	ggjt_one(&b, 3, 8, 16, 2 * 17, -EBADMSG, "multiple of Q8_0's block");
	free(b.p);
	/* the shared table: GGUF's ids unchanged */
	ck_assert_uint_eq(tfs_ggml_type(9)->dtype, TFS_DTYPE_Q8_1);
	ck_assert_uint_eq(tfs_ggml_type(30)->dtype, TFS_DTYPE_BFLOAT16);
	ck_assert_ptr_null(tfs_ggml_type(4));
	ck_assert_ptr_null(tfs_ggml_legacy_type(2, 9));
	ck_assert_ptr_null(tfs_ggml_legacy_type(3, 0));
}
END_TEST

START_TEST(refused_by_name)
{
	static const uint8_t ggla[8] = {'a', 'l', 'g', 'g', 1, 0, 0, 0};
	static const uint8_t rwkv[8] = {'f', 'm', 'g', 'g', 100, 0, 0, 0};
	static const uint8_t rwkv1[8] = {'f', 'm', 'g', 'g', 101, 0, 0, 0};
	static const uint8_t ggmf2[8] = {'f', 'm', 'g', 'g', 2, 0, 0, 0};
	static const uint8_t ggjt0[8] = {'t', 'j', 'g', 'g', 0, 0, 0, 0};
	static const uint8_t be[8] = {'g', 'g', 'm', 'l', 0, 0, 0, 1};
	static const uint8_t short_ggjt[6] = {'t', 'j', 'g', 'g', 3, 0};

	tu_expect_reject(ggla, 8, -ENOTSUP, "LoRA", 0);
	tu_expect_reject(rwkv, 8, -ENOTSUP, "rwkv.cpp", 4);
	tu_expect_reject(rwkv1, 8, -ENOTSUP, "rwkv.cpp", 4);
	tu_expect_reject(ggmf2, 8, -ENOTSUP, "ggmf version 2", 4);
	tu_expect_reject(ggjt0, 8, -ENOTSUP, "ggjt version 0", 4);
	tu_expect_reject(be, 8, -ENOTSUP, "big-endian", 0);
	tu_expect_reject(short_ggjt, 6, -EBADMSG, "version", 4);
}
END_TEST

START_TEST(records)
{
	struct tu_buf b = {0}, dup = {0}, pad = {0}, zero = {0}, mel = {0};
	int32_t ne[2] = {32, 2}, bad[2] = {32, 0}, one = 1;
	uint64_t second, data;
	struct tfs_image *img;
	size_t i;

	/* unversioned llama: no version, no scores, no padding; a scalar */
	llama_head(&b, GGML, 0);
	data = record(&b, "s", 0, 0, NULL, 1, 0, 4);
	record(&b, "v", 1, 1, &one, 1, 0, 2);
	img = tu_load_ok(b.p, b.len);
	ck_assert_uint_eq(img->tree->ntensors, 2);
	tu_expect_xattr(img, "s", "shape", "[]");
	tu_expect_xattr(img, "s", "ggml.ne", "[]");
	ck_assert_uint_eq(tu_tensor(img, "s")->offset, data);
	tu_expect_xattr(img, "", "ggml.family", "llama-ggml");
	ck_assert_ptr_null(tu_xattr(img, "", "ggml.version"));
	tfs_image_close(img);

	/* the same name twice: the second record is named */
	llama_head(&dup, GGJT, 3);
	record(&dup, "x", 0, 2, ne, 32, 0, 256);
	second = dup.len;
	record(&dup, "x", 0, 2, ne, 32, 0, 256);
	tu_expect_reject(dup.p, dup.len, -EBADMSG, "given twice", second);

	/* ggjt padding that is not zero: mounted, with a warning */
	llama_head(&pad, GGJT, 3);
	record(&pad, "p", 0, 2, ne, 32, 0xee, 256);
	img = tu_load_ok(pad.p, pad.len);
	ck_assert_uint_eq(img->tree->nwarnings, 1);
	ck_assert_ptr_nonnull(strstr(img->tree->warnings[0].msg, "padding"));
	ck_assert_uint_eq(tu_tensor(img, "p")->offset % 32, 0);
	tfs_image_close(img);

	/* a zero dimension */
	llama_head(&zero, GGJT, 3);
	second = zero.len;
	record(&zero, "z", 0, 2, bad, 32, 0, 0);
	tu_expect_reject(zero.p, zero.len, -EBADMSG, "ne[1]: 0", second + 16);

	/* a whisper.cpp file: its record may not be called mel_filters */
	put32(&mel, GGML);
	for (i = 0; i < 11; i++)
		put32(&mel, i == 10 ? 0 : i == 9 ? 1 : 4);
	put32(&mel, 1); /* n_mel */
	put32(&mel, 2); /* n_fft */
	put32(&mel, 0);
	put32(&mel, 0);
	put32(&mel, 0); /* no tokens */
	data = mel.len;
	record(&mel, "a", 0, 1, &one, 1, 0, 4);
	img = tu_load_ok(mel.p, mel.len);
	ck_assert_uint_eq(tu_tensor(img, "a")->offset, data + 12 + 4 + 1);
	tu_expect_xattr(img, "mel_filters", "shape", "[1,2]");
	tfs_image_close(img);
	second = mel.len;
	record(&mel, "mel_filters", 0, 1, &one, 1, 0, 4);
	tu_expect_reject(mel.p, mel.len, -EBADMSG, "mel_filters",
			 second + 12 + 4);
	/* qntvr 3 is not known: no layout fits */
	mel.p[4 + 40] = 0xb8; /* ftype 3000 = 0xbb8 */
	mel.p[4 + 41] = 0x0b;
	tu_expect_reject(mel.p, mel.len, -EBADMSG, "quantization version 3",
			 TU_ANY_OFFSET);
	free(b.p);
	free(dup.p);
	free(pad.p);
	free(zero.p);
	free(mel.p);
}
END_TEST

/* the vocabulary of a small file (@path): every token and score */
static void check_vocabulary(const char *path)
{
	struct tfs_image *img;
	struct tfs_diag d;
	json_t *m, *v;
	char *s;

	ck_assert_int_eq(tu_load_file(path, &img, &d), 0);
	m = metadata(img);
	v = json_object_get(m, "vocab");
	/* the generator's tokens; U+2581 (e2 96 81) "a" */
	s = json_dumps(json_object_get(v, "tokens"),
		       JSON_COMPACT | JSON_ENSURE_ASCII);
	ck_assert_str_eq(s, "[\"<unk>\",\"<s>\",\"</s>\",\"\\u2581a\"]");
	free(s);
	ck_assert_uint_eq(json_array_size(json_object_get(v, "scores")), 4);
	ck_assert_int_eq(int_of(v, "offset"), 8 + 28);
	json_decref(m);
	tfs_image_close(img);
}

/*
 * tests/fixtures/ggml_legacy/generate.py's ggmf file, which holds the four
 * tokens of ../shared's synthesized one
 */
START_TEST(vocabulary)
{
	check_vocabulary(
		tu_testdata("ggml_legacy/valid/llama-ggmf-v1-synth.bin"));
}
END_TEST

static Suite *ggml_legacy_suite(void)
{
	Suite *s = suite_create("ggml_legacy");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, fixtures_valid);
	tcase_add_test(tc, fixtures_reject);
	tcase_add_test(tc, real_files);
	tcase_add_test(tc, generations);
	tcase_add_test(tc, refused_by_name);
	tcase_add_test(tc, records);
	tcase_add_test(tc, vocabulary);
	tcase_add_test(tc, generated_valid);
	tcase_add_test(tc, generated_reject);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run(ggml_legacy_suite());
}
