// SPDX-License-Identifier: MIT
/*
 * GGUF: the spec's fixtures (written by ggml itself in ../shared; the same
 * bytes from generate.py in tests/fixtures/gguf/spec), checked against the
 * tensors, offsets, sha256s and key/values of specs/gguf.md section 8; the
 * files of tests/fixtures/gguf/generate.py (every value type incl. nested
 * arrays, every ggml type, alignments from 1 to 4096), checked against the
 * tables the generator wrote from its own layout (valid.tsv, split.tsv),
 * one reject per validation rule with the error, a word of the message and
 * the byte offset the generator computed (reject.tsv), and split sets
 * (gguf-split), whole and broken (split_reject.tsv).
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/image.h"
#include "testutil.h"

/* ---- helpers ------------------------------------------------------------ */

static void expect_tensor(struct tfs_image *img, const char *name,
			  const char *dtype, const char *shape, const char *ne,
			  uint64_t offset, uint64_t size, const char *sha256)
{
	const struct tfs_tensor *x = tu_tensor(img, name);
	uint8_t *b;
	size_t len;
	char hex[65];

	ck_assert_msg(x != NULL, "no tensor '%s'", name);
	ck_assert_str_eq(x->dtype, dtype);
	tu_expect_xattr(img, x->path, "shape", shape);
	tu_expect_xattr(img, x->path, "dtype", dtype);
	if (ne)
		tu_expect_xattr(img, x->path, "gguf.ne", ne);
	ck_assert_msg(x->offset == offset, "'%s' at %llu, want %llu", name,
		      (unsigned long long)x->offset,
		      (unsigned long long)offset);
	ck_assert_uint_eq(x->size, size);
	b = tu_read_node(img, x->node, &len);
	ck_assert_uint_eq(len, size);
	tu_sha256_hex(b, len, hex);
	ck_assert_msg(strcmp(hex, sha256) == 0, "'%s': sha256 %s", name, hex);
	free(b);
}

/* the member @key of metadata.json's "metadata", compact JSON */
static void expect_kv(json_t *meta, const char *key, const char *want)
{
	json_t *v = json_object_get(json_object_get(meta, "metadata"), key);
	char *s;

	ck_assert_msg(v != NULL, "no kv '%s'", key);
	s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
	ck_assert_msg(strcmp(s, want) == 0, "kv '%s' = %s, want %s", key, s,
		      want);
	free(s);
}

/*
 * ---- the spec's files: tests/fixtures/gguf/spec ----------------------------
 * The spec's fixtures were written by ggml's own gguf_* API (not packaged
 * in Debian); generate.py writes them with the same bytes, from the values
 * the spec lists (and checks so against ../shared when it is there).
 */

static const struct {
	const char *name, *dtype, *shape, *ne;
	uint64_t offset, size;
	const char *sha;
} basic[] = {
	{"token_embd.weight", "float32", "[2,3]", "[3,2]", 896, 24,
	 "24ae2dfe8df57c1b80e54cef3d90ac3b417fd98973345a5f616bbc9a75dcc202"},
	{"blk.0.attn_norm.weight", "float16", "[5]", "[5]", 928, 10,
	 "9657c6db4cd664c22ca1bb26a49fe4a8e559e2f25244a3f4f4aa216858f1dc6d"},
	{"ids", "int32", "[4]", "[4]", 960, 16,
	 "8f73991afda74eb97260d750fce756681add9a74b595553516f40a6453250ece"},
	{"blk.0.ffn_up.weight", "q8_0", "[2,32]", "[32,2]", 992, 68,
	 "79dbed1271495e6063c46085b480e5289cd17155dc6a7428b897dd409f906fbe"},
	{"q4.weight", "q4_0", "[64]", "[64]", 1088, 36,
	 "888bbb204384dc3171c0683bcb5ea5f29e8a3ce4b05701050696c4b795553c1e"},
	{"scale.bf16", "bfloat16", "[2]", "[2]", 1152, 4,
	 "7b429b1e3fd37fd03505ae4982471ea2c830392213b48a4e69976b5ebebce8e4"},
	{"tiny.i8", "int8", "[3]", "[3]", 1184, 3,
	 "5e1a380160b10e6ef4c9f650f57b6dae9ce4d70c8407f902551943fee37969c6"},
	{"cube", "float32", "[2,1,2]", "[2,1,2]", 1216, 16,
	 "09d9aab42396c2df9877e2aeaf7ca781e78eb50a51acac03cb150cf9974d61ba"},
};

static void check_basic(const char *file, const char *version)
{
	struct tfs_image *img;
	struct tfs_diag d;
	json_t *meta;
	size_t i;

	ck_assert_int_eq(tu_load_file(tu_testdata(file), &img, &d), 0);
	ck_assert_str_eq(img->tree->format, "gguf");
	ck_assert_uint_eq(img->tree->ntensors, 8);
	for (i = 0; i < sizeof(basic) / sizeof(basic[0]); i++)
		expect_tensor(img, basic[i].name, basic[i].dtype,
			      basic[i].shape, basic[i].ne, basic[i].offset,
			      basic[i].size, basic[i].sha);
	tu_expect_xattr(img, "ids", "gguf.type", "I32");
	tu_expect_xattr(img, "q4/weight", "gguf.type", "Q4_0");
	/* the 15 key/values of spec section 8 */
	tu_expect_xattr(img, "", "format", "gguf");
	tu_expect_xattr(img, "", "gguf.version", version);
	tu_expect_xattr(img, "", "architecture", "tensorfs-test");
	tu_expect_xattr(img, "", "gguf.general.architecture", "tensorfs-test");
	tu_expect_xattr(img, "", "gguf.general.name", "tensorfs fixture");
	tu_expect_xattr(img, "", "gguf.test.u8", "200");
	tu_expect_xattr(img, "", "gguf.test.i8", "-5");
	tu_expect_xattr(img, "", "gguf.test.u16", "60000");
	tu_expect_xattr(img, "", "gguf.test.i16", "-300");
	tu_expect_xattr(img, "", "gguf.test.u32", "4000000000");
	tu_expect_xattr(img, "", "gguf.test.i32", "-7");
	tu_expect_xattr(img, "", "gguf.test.f32", "0.5");
	tu_expect_xattr(img, "", "gguf.test.bool", "true");
	tu_expect_xattr(img, "", "gguf.test.u64", "1099511627776");
	tu_expect_xattr(img, "", "gguf.test.i64", "-1099511627776");
	tu_expect_xattr(img, "", "gguf.test.f64", "3.25");
	/* arrays are in metadata.json only */
	ck_assert_ptr_null(tu_xattr(img, "", "gguf.test.arr_i32"));
	meta = tu_meta_json(img, "metadata.json");
	ck_assert_uint_eq(json_object_size(json_object_get(meta, "metadata")),
			  15);
	expect_kv(meta, "test.arr_i32", "[1,-2,3]");
	expect_kv(meta, "test.arr_str", "[\"a\",\"bc\"]");
	expect_kv(meta, "test.i64", "-1099511627776");
	expect_kv(meta, "test.bool", "true");
	expect_kv(meta, "test.f64", "3.25");
	ck_assert_int_eq(
		json_integer_value(json_object_get(meta, "data_start")), 896);
	ck_assert_int_eq(json_integer_value(json_object_get(meta, "alignment")),
			 32);
	/* packed by the reference writer: no warning */
	ck_assert_ptr_null(json_object_get(meta, "warnings"));
	ck_assert_uint_eq(img->tree->nwarnings, 0);
	json_decref(meta);
	tfs_image_close(img);
}

START_TEST(spec_basic_v3)
{
	check_basic("gguf/spec/gguf_v3_basic.gguf", "3");
}
END_TEST

START_TEST(spec_basic_v2)
{
	check_basic("gguf/spec/gguf_v2_basic_patched.gguf", "2");
}
END_TEST

START_TEST(spec_small)
{
	struct tfs_image *img;
	struct tfs_diag d;
	json_t *meta;

	/* alignment 64: data_start 192 */
	ck_assert_int_eq(tu_load_file(tu_testdata("gguf/spec/"
						  "gguf_v3_align64.gguf"),
				      &img, &d),
			 0);
	ck_assert_uint_eq(img->tree->ntensors, 2);
	expect_tensor(img, "tiny.i8", "int8", "[3]", "[3]", 192, 3,
		      basic[6].sha);
	expect_tensor(img, "token_embd.weight", "float32", "[2,3]", "[3,2]",
		      256, 24, basic[0].sha);
	meta = tu_meta_json(img, "metadata.json");
	ck_assert_int_eq(
		json_integer_value(json_object_get(meta, "data_start")), 192);
	expect_kv(meta, "general.alignment", "64");
	json_decref(meta);
	tfs_image_close(img);

	ck_assert_int_eq(tu_load_file(tu_testdata("gguf/spec/"
						  "gguf_v3_no_tensors.gguf"),
				      &img, &d),
			 0);
	ck_assert_uint_eq(img->tree->ntensors, 0);
	tu_expect_xattr(img, "", "gguf.general.architecture", "none");
	tfs_image_close(img);

	/* spec section 7: x = 1.0, 2.0 at 0x60 */
	ck_assert_int_eq(tu_load_file(tu_testdata("gguf/spec/"
						  "gguf_v3_tiny_example.gguf"),
				      &img, &d),
			 0);
	{
		static const uint8_t want[] = {0, 0, 0x80, 0x3f, 0, 0, 0, 0x40};
		const struct tfs_tensor *x = tu_tensor(img, "x");
		uint8_t *b;
		size_t len;

		ck_assert_ptr_nonnull(x);
		ck_assert_uint_eq(x->offset, 0x60);
		b = tu_read_node(img, x->node, &len);
		ck_assert_uint_eq(len, 8);
		ck_assert_mem_eq(b, want, 8);
		free(b);
	}
	tfs_image_close(img);
}
END_TEST

/* ---- generated valid files: checked against valid.tsv ------------------- */

struct row {
	char file[128], name[128], dtype[32], shape[64], ne[64], sha[65];
	unsigned long long offset, size;
};

static size_t read_rows(const char *tsv, struct row **out)
{
	FILE *f = fopen(tu_testdata(tsv), "r");
	struct row *v = NULL, r;
	size_t n = 0;

	ck_assert_msg(f != NULL, "cannot read %s", tsv);
	while (fscanf(f,
		      "%127[^\t]\t%127[^\t]\t%31[^\t]\t%63[^\t]\t%63[^\t]\t"
		      "%llu\t%llu\t%64s\n",
		      r.file, r.name, r.dtype, r.shape, r.ne, &r.offset,
		      &r.size, r.sha) == 8) {
		v = realloc(v, (n + 1) * sizeof(*v));
		ck_assert(v != NULL);
		v[n++] = r;
	}
	ck_assert_msg(feof(f), "%s: a line does not parse", tsv);
	fclose(f);
	*out = v;
	return n;
}

struct valid_walk {
	struct row *rows;
	size_t nrows, tensors;
};

static void check_valid(const char *path, const char *name, void *arg)
{
	struct valid_walk *w = arg;
	struct tfs_image *img;
	struct tfs_diag d;
	size_t i, n = 0;

	ck_assert_msg(tu_load_file(path, &img, &d) == 0, "%s: %s", name, d.msg);
	for (i = 0; i < w->nrows; i++) {
		struct row *r = &w->rows[i];

		if (strcmp(r->file, name) != 0)
			continue;
		expect_tensor(img, r->name, r->dtype, r->shape, r->ne,
			      r->offset, r->size, r->sha);
		n++;
	}
	ck_assert_msg(img->tree->ntensors == n, "%s: %u tensors, %zu listed",
		      name, img->tree->ntensors, n);
	w->tensors += n;
	tfs_image_close(img);
}

START_TEST(generated_valid)
{
	struct valid_walk w = {0};

	w.nrows = read_rows("gguf/valid.tsv", &w.rows);
	ck_assert_uint_eq(
		tu_each_fixture(tu_testdata("gguf/valid"), check_valid, &w),
		10);
	/* every listed tensor was in a file that was walked */
	ck_assert_uint_eq(w.tensors, w.nrows);
	free(w.rows);
}
END_TEST

/* every value type, nested arrays, the 35 ggml types */
START_TEST(every_type_and_value)
{
	struct tfs_image *img;
	struct tfs_diag d;
	json_t *meta;

	ck_assert_int_eq(tu_load_file(tu_testdata("gguf/valid/"
						  "v3_every_type.gguf"),
				      &img, &d),
			 0);
	ck_assert_uint_eq(img->tree->ntensors, 35);
	tu_expect_xattr(img, "type/q4_k", "dtype", "q4_k");
	tu_expect_xattr(img, "type/q4_k", "shape", "[3,512]");
	tu_expect_xattr(img, "type/q4_k", "gguf.type", "Q4_K");
	tu_expect_xattr(img, "type/iq2_xxs", "dtype", "iq2_xxs");
	tu_expect_xattr(img, "type/tq2_0", "dtype", "tq2_0");
	tu_expect_xattr(img, "type/bf16", "dtype", "bfloat16");
	tu_expect_xattr(img, "type/nvfp4", "dtype", "nvfp4");
	/* shortest text that reads back as the float32 0.1 */
	tu_expect_xattr(img, "", "gguf.t.f32", "0.1");
	tu_expect_xattr(img, "", "gguf.t.bool", "false");
	tu_expect_xattr(img, "", "gguf.t.u64", "18446744073709551615");
	tu_expect_xattr(img, "", "gguf.t.i64", "-9223372036854775808");
	tu_expect_xattr(img, "", "gguf.general.name", "caf\xc3\xa9");
	meta = tu_meta_json(img, "metadata.json");
	expect_kv(meta, "t.nested", "[[1,-2],[\"a\"],[[7]]]");
	expect_kv(meta, "t.arr_str", "[\"x\",\"\",\"\xe4\xb8\xad\"]");
	expect_kv(meta, "t.arr_empty", "[]");
	expect_kv(meta, "t.arr_bool", "[true,false]");
	/* beyond JSON integers: the decimal digits */
	expect_kv(meta, "t.u64", "\"18446744073709551615\"");
	expect_kv(meta, "t.u32", "4294967295");
	json_decref(meta);
	tfs_image_close(img);

	/* offsets aligned but not packed: a warning, not a refusal */
	ck_assert_int_eq(tu_load_file(tu_testdata("gguf/valid/"
						  "unpacked_offsets.gguf"),
				      &img, &d),
			 0);
	ck_assert_uint_ge(img->tree->nwarnings, 1);
	ck_assert_ptr_nonnull(strstr(img->tree->warnings[0].msg, "packed"));
	tfs_image_close(img);
}
END_TEST

/* ---- rejects: reject.tsv ------------------------------------------------ */

struct reject_row {
	char file[128], err[16], word[128];
	unsigned long long at;
	bool seen;
};

struct reject_walk {
	struct reject_row *v;
	size_t n;
};

static int errno_of(const char *name)
{
	static const struct {
		const char *name;
		int err;
	} map[] = {{"EBADMSG", -EBADMSG},
		   {"ENOTSUP", -ENOTSUP},
		   {"ENOENT", -ENOENT},
		   {"E2BIG", -E2BIG},
		   {"ENOEXEC", -ENOEXEC}};
	size_t i;

	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(map[i].name, name) == 0)
			return map[i].err;
	ck_abort_msg("unknown errno name %s", name);
	return 0;
}

static void check_reject(const char *path, const char *name, void *arg)
{
	struct reject_walk *w = arg;
	uint8_t *b;
	size_t len, i;

	for (i = 0; i < w->n && strcmp(w->v[i].file, name); i++)
		;
	ck_assert_msg(i < w->n, "reject/%s is not in reject.tsv", name);
	w->v[i].seen = true;
	b = tu_read_file(path, &len);
	tu_expect_reject(b, len, errno_of(w->v[i].err), w->v[i].word,
			 w->v[i].at);
	free(b);
}

START_TEST(every_reject)
{
	struct reject_walk w = {0};
	struct reject_row r = {0};
	FILE *f = fopen(tu_testdata("gguf/reject.tsv"), "r");
	size_t i, files;

	ck_assert(f != NULL);
	while (fscanf(f, "%127[^\t]\t%15[^\t]\t%127[^\t]\t%llu\n", r.file,
		      r.err, r.word, &r.at) == 4) {
		w.v = realloc(w.v, (w.n + 1) * sizeof(*w.v));
		ck_assert(w.v != NULL);
		w.v[w.n++] = r;
	}
	ck_assert(feof(f));
	fclose(f);
	ck_assert_uint_ge(w.n, 39);
	files = tu_each_fixture(tu_testdata("gguf/reject"), check_reject, &w);
	ck_assert_uint_eq(files, w.n);
	for (i = 0; i < w.n; i++)
		ck_assert_msg(w.v[i].seen, "%s: listed, but not in reject/",
			      w.v[i].file);
	free(w.v);
}
END_TEST

/* ---- split sets ---------------------------------------------------------- */

static void check_split_image(struct tfs_image *img)
{
	struct row *rows;
	size_t n, i;

	n = read_rows("gguf/split.tsv", &rows);
	ck_assert_uint_eq(n, 6);
	ck_assert_str_eq(img->tree->format, "gguf");
	ck_assert_uint_eq(img->nsrcs, 3);
	ck_assert_uint_eq(img->tree->ntensors, 6);
	for (i = 0; i < n; i++) {
		const struct tfs_tensor *x = tu_tensor(img, rows[i].name);

		expect_tensor(img, rows[i].name, rows[i].dtype, rows[i].shape,
			      rows[i].ne, rows[i].offset, rows[i].size,
			      rows[i].sha);
		tu_expect_xattr(img, x->path, "shard", rows[i].file);
		ck_assert_str_eq(img->srcs[x->source].path +
					 strlen(img->srcs[x->source].path) -
					 strlen(rows[i].file),
				 rows[i].file);
	}
	/* the set's root: the first part's keys */
	tu_expect_xattr(img, "", "gguf.split.no", "0");
	tu_expect_xattr(img, "", "gguf.split.count", "3");
	tu_expect_xattr(img, "", "architecture", "llama");
	free(rows);
}

START_TEST(split_set)
{
	static const char *const inputs[] = {
		"gguf/split", "gguf/split/model-00001-of-00003.gguf",
		"gguf/split/model-00002-of-00003.gguf",
		"gguf/split/model-00003-of-00003.gguf"};
	struct tfs_image *img;
	struct tfs_diag d;
	size_t i;

	/* the directory, or any part: the whole set */
	for (i = 0; i < 4; i++) {
		ck_assert_msg(tu_load_file(tu_testdata(inputs[i]), &img, &d) ==
				      0,
			      "%s: %s", inputs[i], d.msg);
		check_split_image(img);
		tfs_image_close(img);
	}
}
END_TEST

static void check_split_reject(const char *path, const char *name, void *arg)
{
	const char *const *want = arg; /* errno name, file, word, offset */
	struct tfs_image *img = NULL;
	struct tfs_diag d;
	char line[TFS_DIAG_MSG_MAX + TFS_DIAG_FILE_MAX + 64];
	int ret = tu_load_file(path, &img, &d);

	ck_assert_msg(ret == errno_of(want[0]), "%s: %d (%s)", name, ret,
		      d.msg);
	ck_assert_ptr_null(img);
	tfs_diag_format(&d, line, sizeof(line));
	ck_assert_msg(strstr(line, want[1]) && strstr(line, want[2]),
		      "%s: '%s' lacks '%s' or '%s'", name, line, want[1],
		      want[2]);
	if (strcmp(want[3], "-") != 0)
		ck_assert_msg(
			d.has_offset && d.offset == strtoull(want[3], NULL, 10),
			"%s: '%s' not at byte offset %s", name, d.msg, want[3]);
}

START_TEST(split_rejects)
{
	FILE *f = fopen(tu_testdata("gguf/split_reject.tsv"), "r");
	char c[64], e[16], file[128], word[128], at[24], dir[256];
	const char *want[4] = {e, file, word, at};
	unsigned cases = 0;

	ck_assert(f != NULL);
	while (fscanf(f, "%63[^\t]\t%15[^\t]\t%127[^\t]\t%127[^\t]\t%23s\n", c,
		      e, file, word, at) == 5) {
		snprintf(dir, sizeof(dir), "gguf/split_reject/%s", c);
		/* the directory, then each of its files */
		check_split_reject(tu_testdata(dir), c, want);
		ck_assert_uint_ge(tu_each_fixture(tu_testdata(dir),
						  check_split_reject, want),
				  1);
		cases++;
	}
	ck_assert(feof(f));
	fclose(f);
	ck_assert_uint_eq(cases, 4);
}
END_TEST

/* ---- a large vocabulary: metadata.json is made on first read ------------ */

static void put_u32(struct tu_buf *b, uint32_t v)
{
	uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16),
			(uint8_t)(v >> 24)};

	tu_buf_put(b, x, 4);
}

static void put_u64(struct tu_buf *b, uint64_t v)
{
	put_u32(b, (uint32_t)v);
	put_u32(b, (uint32_t)(v >> 32));
}

static void put_str(struct tu_buf *b, const char *s)
{
	put_u64(b, strlen(s));
	tu_buf_put(b, s, strlen(s));
}

/* a GGUF with a @n-token vocabulary and @ntensors tensors all named "w" */
static void vocab_gguf(struct tu_buf *b, uint32_t n, uint32_t ntensors)
{
	static const uint8_t pad[32];
	char tok[32];
	uint32_t i;

	tu_buf_put(b, "GGUF", 4);
	put_u32(b, 3);
	put_u64(b, ntensors);
	put_u64(b, 2); /* kvs */
	put_str(b, "general.architecture");
	put_u32(b, 8);
	put_str(b, "llama");
	put_str(b, "tokenizer.ggml.tokens");
	put_u32(b, 9);
	put_u32(b, 8);
	put_u64(b, n);
	for (i = 0; i < n; i++) {
		snprintf(tok, sizeof(tok), "tok%u", i);
		put_str(b, tok);
	}
	for (i = 0; i < ntensors; i++) {
		put_str(b, "w");
		put_u32(b, 1);
		put_u64(b, 8);	    /* ne[0] */
		put_u32(b, 24);	    /* I8 */
		put_u64(b, 32 * i); /* offset */
	}
	if (ntensors)
		tu_buf_put(b, pad, (32 - b->len % 32) % 32);
	for (i = 0; i < ntensors; i++)
		tu_buf_put(b, pad, 32);
}

START_TEST(large_vocab_lazy)
{
	struct tu_buf b = {0};
	struct tfs_image *img;
	const struct tfs_node *n;
	uint32_t node;
	json_t *meta, *tokens;

	vocab_gguf(&b, 20000, 0);
	img = tu_load_ok(b.p, b.len);
	/* root xattrs at once; metadata.json not made yet */
	tu_expect_xattr(img, "", "gguf.general.architecture", "llama");
	node = tfs_tree_resolve(img->tree, ".tensorfs/metadata.json");
	ck_assert_uint_ne(node, TFS_NO_NODE);
	n = &img->tree->nodes[node];
	ck_assert_ptr_nonnull(n->lazy);
	ck_assert_ptr_null(n->mem);
	meta = tu_meta_json(img, "metadata.json");
	ck_assert_ptr_nonnull(n->mem);
	tokens = json_object_get(json_object_get(meta, "metadata"),
				 "tokenizer.ggml.tokens");
	ck_assert_uint_eq(json_array_size(tokens), 20000);
	ck_assert_str_eq(json_string_value(json_array_get(tokens, 19999)),
			 "tok19999");
	ck_assert_int_eq(json_integer_value(json_object_get(meta, "version")),
			 3);
	json_decref(meta);
	tfs_image_close(img);
	free(b.p);
}
END_TEST

static void write_file(const char *path, const void *p, size_t len)
{
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(p, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

/*
 * A directory: a large-vocabulary file whose deferred metadata is given
 * back when the container is left out (duplicate tensor names are found
 * after it was read: nothing may leak), next to a good one, also lazy.
 */
START_TEST(lazy_metadata_in_directory)
{
	char dir[] = "/tmp/tfs-gguf-test.XXXXXX", path[64];
	struct tu_buf bad = {0}, good = {0};
	struct tfs_image *img;
	struct tfs_diag d;
	json_t *meta, *c;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	vocab_gguf(&bad, 20000, 2);
	vocab_gguf(&good, 20000, 1);
	snprintf(path, sizeof(path), "%s/bad.gguf", dir);
	write_file(path, bad.p, bad.len);
	snprintf(path, sizeof(path), "%s/good.gguf", dir);
	write_file(path, good.p, good.len);
	ck_assert_int_eq(tfs_image_open_dir(&img, dir, NULL, &d), 0);
	ck_assert_uint_eq(img->nskipped, 1);
	ck_assert_str_eq(img->skipped[0].path, "bad.gguf");
	ck_assert_ptr_nonnull(strstr(img->skipped[0].why, "duplicate"));
	ck_assert_uint_eq(img->tree->ntensors, 1);
	meta = tu_meta_json(img, "metadata.json");
	c = json_object_get(json_object_get(meta, "containers"), "good.gguf");
	ck_assert_uint_eq(
		json_array_size(json_object_get(json_object_get(c, "metadata"),
						"tokenizer.ggml.tokens")),
		20000);
	ck_assert_ptr_null(json_object_get(json_object_get(meta, "containers"),
					   "bad.gguf"));
	json_decref(meta);
	tfs_image_close(img);
	unlink(path);
	snprintf(path, sizeof(path), "%s/bad.gguf", dir);
	unlink(path);
	rmdir(dir);
	free(bad.p);
	free(good.p);
}
END_TEST

/* copy tests/fixtures/gguf/@from/@name into @dir */
static void copy_in(const char *dir, const char *from, const char *name)
{
	char rel[256], path[256];
	uint8_t *b;
	size_t len;

	snprintf(rel, sizeof(rel), "gguf/%s/%s", from, name);
	b = tu_read_file(tu_testdata(rel), &len);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	write_file(path, b, len);
	free(b);
}

static void remove_in(const char *dir, const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
}

static const char *const parts[] = {"model-00001-of-00003.gguf",
				    "model-00002-of-00003.gguf",
				    "model-00003-of-00003.gguf"};

/*
 * A split set next to another container: the set is the directory
 * "model"; a set whose parts hold another tensor count than it says is
 * left out whole (its loaded parts rolled back), the rest mounts.
 */
START_TEST(split_set_among_others)
{
	char dir[] = "/tmp/tfs-gguf-test.XXXXXX";
	struct tfs_image *img;
	struct tfs_diag d;
	json_t *meta;
	size_t i;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	copy_in(dir, "valid", "align64.gguf");
	for (i = 0; i < 3; i++)
		copy_in(dir, "split", parts[i]);
	ck_assert_int_eq(tfs_image_open_dir(&img, dir, NULL, &d), 0);
	ck_assert_uint_eq(img->nskipped, 0);
	ck_assert_uint_eq(img->tree->ntensors, 8);
	ck_assert_str_eq(tu_tensor(img, "blk.1.ffn.weight")->path,
			 "model/blk/1/ffn/weight");
	tu_expect_xattr(img, "model/blk/1/ffn/weight", "shard", parts[1]);
	tu_expect_xattr(img, "model", "gguf.split.count", "3");
	tfs_image_close(img);

	for (i = 0; i < 3; i++)
		copy_in(dir, "split_reject/tensor_total", parts[i]);
	ck_assert_int_eq(tfs_image_open_dir(&img, dir, NULL, &d), 0);
	ck_assert_uint_eq(img->nskipped, 1);
	ck_assert_str_eq(img->skipped[0].path, parts[0]);
	ck_assert_ptr_nonnull(strstr(img->skipped[0].why, "says 7"));
	ck_assert_uint_eq(img->tree->ntensors, 2);
	ck_assert_uint_eq(img->nsrcs, 1);
	/* nothing of the set is left in metadata.json */
	meta = tu_meta_json(img, "metadata.json");
	ck_assert_uint_eq(json_object_size(json_object_get(meta, "containers")),
			  1);
	json_decref(meta);
	tfs_image_close(img);

	remove_in(dir, parts[1]);
	ck_assert_int_eq(tfs_image_open_dir(&img, dir, NULL, &d), 0);
	ck_assert_uint_eq(img->nskipped, 2);
	ck_assert_ptr_nonnull(strstr(img->skipped[0].why,
				     "model-00002-of-00003.gguf is "
				     "missing"));
	tfs_image_close(img);
	for (i = 0; i < 3; i++)
		remove_in(dir, parts[i]);
	remove_in(dir, "align64.gguf");
	rmdir(dir);
}
END_TEST

/* several files: a part given brings its set, which must be whole */
START_TEST(split_part_among_files)
{
	char a[256], b[256];
	const char *files[2] = {a, b};
	struct tfs_image *img;
	struct tfs_diag d;

	snprintf(a, sizeof(a), "%s",
		 tu_testdata("gguf/split/model-00002-of-00003.gguf"));
	snprintf(b, sizeof(b), "%s", tu_testdata("gguf/valid/align64.gguf"));
	ck_assert_int_eq(tfs_image_open_files(&img, files, 2, NULL, &d), 0);
	ck_assert_uint_eq(img->nsrcs, 4);
	ck_assert_uint_eq(img->tree->ntensors, 8);
	ck_assert_str_eq(tu_tensor(img, "blk.2.attn.weight")->path,
			 "model/blk/2/attn/weight");
	tu_expect_xattr(img, "model/blk/0/attn/weight", "shard",
			"model-00001-of-00003.gguf");
	tfs_image_close(img);

	snprintf(a, sizeof(a), "%s",
		 tu_testdata("gguf/split_reject/missing_part/"
			     "model-00003-of-00003.gguf"));
	ck_assert_int_eq(tfs_image_open_files(&img, files, 2, NULL, &d),
			 -ENOENT);
	/* the file that failed is named once, in its own field */
	ck_assert_str_eq(d.file, "model-00002-of-00003.gguf");
	ck_assert_ptr_null(strstr(d.msg, "model-00002-of-00003.gguf"));

	snprintf(a, sizeof(a), "%s",
		 tu_testdata("gguf/split_reject/tensor_total/"
			     "model-00001-of-00003.gguf"));
	ck_assert_int_eq(tfs_image_open_files(&img, files, 2, NULL, &d),
			 -EBADMSG);
	ck_assert_ptr_nonnull(strstr(d.msg, "says 7"));
	ck_assert_uint_eq(d.offset, 184);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gguf");
	TCase *tc = tcase_create("gguf");

	tcase_add_test(tc, spec_basic_v3);
	tcase_add_test(tc, spec_basic_v2);
	tcase_add_test(tc, spec_small);
	tcase_add_test(tc, generated_valid);
	tcase_add_test(tc, every_type_and_value);
	tcase_add_test(tc, every_reject);
	tcase_add_test(tc, split_set);
	tcase_add_test(tc, split_rejects);
	tcase_add_test(tc, large_vocab_lazy);
	tcase_add_test(tc, lazy_metadata_in_directory);
	tcase_add_test(tc, split_set_among_others);
	tcase_add_test(tc, split_part_among_files);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
