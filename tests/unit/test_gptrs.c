// SPDX-License-Identifier: MIT
/*
 * gpt-rs reader: the real fixtures (values from shared/specs/gptrs.md
 * section 10), files written here by a small writer that follows the spec
 * for every variant, hand-broken files for every refusal, and BLAKE3
 * against the official test vectors.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/blake3.h"
#include "core/cursor.h"
#include "core/tree.h"
#include "testutil.h"

/* ---- a small in-memory writer ------------------------------------------ */

static void put_le(struct tu_buf *b, uint64_t v, unsigned width)
{
	uint8_t x[8];
	unsigned i;

	for (i = 0; i < width; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	tu_buf_put(b, x, width);
}

/* overwrite @width bytes at @off with @v, little-endian */
static void patch(uint8_t *p, size_t off, unsigned width, uint64_t v)
{
	unsigned i;

	for (i = 0; i < width; i++)
		p[off + i] = (uint8_t)(v >> (8 * i));
}

struct gen_tensor {
	const char *name;
	size_t name_len; /* 0: strlen(name) */
	uint32_t rank;
	uint64_t dims[4];
	uint32_t tag; /* 0 f32, 1 f16, 2 bf16, 3 i32 */
	uint8_t reserved;
	const void *data;
	uint64_t len;
	const uint8_t *base_id; /* 16 bytes, NULL: zero */
};

enum gen_layout { GEN_V1, GEN_PACKED, GEN_ALIGNED };

static size_t gen_name_len(const struct gen_tensor *t)
{
	return t->name_len ? t->name_len : strlen(t->name);
}

static void gen_index(struct tu_buf *ix, bool ckpt, const struct gen_tensor *t,
		      size_t n, const uint64_t *offsets)
{
	static const uint8_t zero[16];
	size_t i, k;

	put_le(ix, n, 4);
	for (i = 0; i < n; i++) {
		put_le(ix, gen_name_len(&t[i]), 4);
		tu_buf_put(ix, t[i].name, gen_name_len(&t[i]));
		if (ckpt)
			tu_buf_put(ix, t[i].base_id ? t[i].base_id : zero, 16);
		put_le(ix, t[i].rank, 4);
		for (k = 0; k < t[i].rank; k++)
			put_le(ix, t[i].dims[k], 8);
		put_le(ix, t[i].tag, 4);
		put_le(ix, t[i].reserved, 1);
		put_le(ix, offsets ? offsets[i] : 0, 8);
		put_le(ix, t[i].len, 8);
	}
}

/*
 * A whole file as the spec describes it: checkpoint (with @config) or
 * archive, version 1 (inline) or 2 (packed or 64-aligned payloads).
 */
static uint8_t *gen_file(bool ckpt, enum gen_layout layout, const char *config,
			 const struct gen_tensor *t, size_t n, size_t *len)
{
	struct tu_buf f = {0}, ix = {0};
	uint64_t *offsets = calloc(n ? n : 1, sizeof(*offsets)), pos;
	static const uint8_t zeros[64];
	size_t i, k;

	tu_buf_put(&f, ckpt ? "GPTRSCHK" : "GPTRSTEN", 8);
	put_le(&f, layout == GEN_V1 ? 1 : 2, 4);
	if (ckpt) {
		put_le(&f, strlen(config), 4);
		tu_buf_put(&f, config, strlen(config));
	}
	if (layout == GEN_V1) {
		put_le(&f, n, 4);
		for (i = 0; i < n; i++) {
			put_le(&f, gen_name_len(&t[i]), 4);
			tu_buf_put(&f, t[i].name, gen_name_len(&t[i]));
			put_le(&f, t[i].rank, 4);
			for (k = 0; k < t[i].rank; k++)
				put_le(&f, t[i].dims[k], 8);
			put_le(&f, t[i].tag, 4);
			put_le(&f, t[i].reserved, 1);
			put_le(&f, t[i].len, 8);
			tu_buf_put(&f, t[i].data, t[i].len);
		}
		goto out;
	}
	/* offsets are fixed-width: the index length does not depend on them */
	gen_index(&ix, ckpt, t, n, NULL);
	pos = f.len + 4 + ix.len;
	for (i = 0; i < n; i++) {
		if (layout == GEN_ALIGNED)
			pos = (pos + 63) / 64 * 64;
		offsets[i] = pos;
		pos += t[i].len;
	}
	ix.len = 0;
	gen_index(&ix, ckpt, t, n, offsets);
	put_le(&f, ix.len, 4);
	tu_buf_put(&f, ix.p, ix.len);
	for (i = 0; i < n; i++) {
		tu_buf_put(&f, zeros, offsets[i] - f.len);
		tu_buf_put(&f, t[i].data, t[i].len);
	}
out:
	free(ix.p);
	free(offsets);
	*len = f.len;
	return f.p;
}

/* ---- helpers ------------------------------------------------------------ */

/* the node at @path reads back @len bytes equal to @want */
static void expect_bytes(struct tfs_image *img, const char *path,
			 const void *want, size_t len)
{
	uint32_t n = tfs_tree_resolve(img->tree, path);
	size_t got_len;
	uint8_t *got;

	ck_assert_msg(n != TFS_NO_NODE, "no %s", path);
	got = tu_read_node(img, n, &got_len);
	ck_assert_uint_eq(got_len, len);
	if (len)
		ck_assert_mem_eq(got, want, len);
	free(got);
}

static void expect_sha(struct tfs_image *img, const char *path, size_t len,
		       const char *sha)
{
	uint32_t n = tfs_tree_resolve(img->tree, path);
	char hex[65];
	size_t got_len;
	uint8_t *got;

	ck_assert_msg(n != TFS_NO_NODE, "no %s", path);
	got = tu_read_node(img, n, &got_len);
	ck_assert_uint_eq(got_len, len);
	tu_sha256_hex(got, got_len, hex);
	ck_assert_str_eq(hex, sha);
	free(got);
}

/* .tensorfs/metadata.json, parsed; caller decrefs */
static json_t *metadata(struct tfs_image *img)
{
	uint32_t n = tfs_tree_resolve(img->tree, ".tensorfs/metadata.json");
	json_error_t err;
	size_t len;
	uint8_t *p;
	json_t *j;

	ck_assert_uint_ne(n, TFS_NO_NODE);
	p = tu_read_node(img, n, &len);
	j = json_loadb((const char *)p, len, 0, &err);
	free(p);
	ck_assert_msg(j != NULL, "metadata.json: %s", err.text);
	return j;
}

static void expect_meta_str(struct tfs_image *img, const char *key,
			    const char *want)
{
	json_t *m = metadata(img);

	ck_assert_msg(json_is_string(json_object_get(m, key)), "no %s", key);
	ck_assert_str_eq(json_string_value(json_object_get(m, key)), want);
	json_decref(m);
}

static struct tfs_image *load_ok(const uint8_t *b, size_t len)
{
	struct tfs_image *img = NULL;
	struct tfs_diag d;
	int ret = tu_load_mem(b, len, &img, &d);

	ck_assert_msg(ret == 0, "load: %d %s", ret, d.msg);
	ck_assert_str_eq(img->tree->format, "gptrs");
	return img;
}

/* ---- the real fixtures --------------------------------------------------- */

#define SHA_A_WEIGHT                                                           \
	"03b8e98a10217e51d8ecef7919de69ba80c52b25ee49ce0886ecfe0ddeacd4ac"
#define SHA_B_IDS                                                              \
	"66d9f6ea4448712f79044d7fea826fbd59b1447689ef6ca1c7f71c785f0e25e0"
#define SHA_X "b9c80b5adeca450753a16950c3cc655d271f7bef7a485bc83f112b72fef21d37"
#define ZERO_ID "00000000000000000000000000000000"

/* a.weight f32 [2,3] = 0 .. 2.5 and b.ids i32 [3] = 1, -2, 3 */
static void check_ab(struct tfs_image *img, const char *a_off,
		     const char *b_off)
{
	const float a[] = {0, 0.5f, 1, 1.5f, 2, 2.5f};
	const int32_t ids[] = {1, -2, 3};

	expect_sha(img, "a/weight", 24, SHA_A_WEIGHT);
	expect_sha(img, "b/ids", 12, SHA_B_IDS);
	expect_bytes(img, "a/weight", a, sizeof(a));
	expect_bytes(img, "b/ids", ids, sizeof(ids));
	tu_expect_xattr(img, "a/weight", "dtype", "float32");
	tu_expect_xattr(img, "a/weight", "shape", "[2,3]");
	tu_expect_xattr(img, "a/weight", "name", "a.weight");
	tu_expect_xattr(img, "a/weight", "offset", a_off);
	tu_expect_xattr(img, "b/ids", "dtype", "int32");
	tu_expect_xattr(img, "b/ids", "shape", "[3]");
	tu_expect_xattr(img, "b/ids", "offset", b_off);
	tu_expect_xattr(img, "", "format", "gptrs");
	tu_expect_xattr(img, "", "gptrs.magic", "GPTRSCHK");
	tu_expect_xattr(img, "", "gptrs.version", "2");
	ck_assert_uint_eq(img->tree->ntensors, 2);
}

/* .tensorfs/config.json holds exactly @config; metadata has it parsed */
static void check_config(struct tfs_image *img, const char *config,
			 const char *kind)
{
	json_t *m = metadata(img), *c;

	expect_bytes(img, ".tensorfs/config.json", config, strlen(config));
	c = json_object_get(m, "config");
	ck_assert(json_is_object(c));
	ck_assert_str_eq(json_string_value(json_object_get(c, "kind")), kind);
	ck_assert_int_eq(json_integer_value(json_object_get(m, "config_len")),
			 (json_int_t)strlen(config));
	json_decref(m);
}

#define GEN_IDS "gptrs/valid/ckpt_v2_aligned64_spec_ids.bin"

START_TEST(real_feb2026_unaligned)
{
	struct tfs_image *img;
	struct tfs_diag d;
	json_t *m;

	TU_NEED_SHARED("gptrs/ckpt_v2_unaligned_py_feb2026.bin");
	ck_assert_int_eq(tu_load_file(tu_fixture("gptrs/ckpt_v2_unaligned_"
						 "py_feb2026.bin"),
				      &img, &d),
			 0);
	check_ab(img, "191", "215");
	check_config(img, "{\"kind\":\"gpt\",\"config\":{\"vocab_size\":4}}",
		     "gpt");
	/* Python stores requires_grad in the reserved byte, ids as zero */
	tu_expect_xattr(img, "a/weight", "gptrs.reserved", "1");
	tu_expect_xattr(img, "a/weight", "gptrs.base_id", ZERO_ID);
	tu_expect_xattr(img, "b/ids", "gptrs.base_id", ZERO_ID);
	m = metadata(img);
	ck_assert_int_eq(json_integer_value(json_object_get(m, "index_len")),
			 131);
	ck_assert_int_eq(json_integer_value(json_object_get(m, "data_start")),
			 191);
	ck_assert_str_eq(json_string_value(json_object_get(m, "container")),
			 "checkpoint");
	ck_assert_str_eq(
		json_string_value(json_object_get(m, "payload_layout")),
		"packed");
	ck_assert_ptr_null(json_object_get(m, "warnings"));
	json_decref(m);
	tfs_image_close(img);
}
END_TEST

START_TEST(real_latest_aligned)
{
	struct tfs_image *img;
	struct tfs_diag d;
	json_t *m, *eos;

	TU_NEED_SHARED("gptrs/ckpt_v2_aligned64_py_latest.bin");
	ck_assert_int_eq(tu_load_file(tu_fixture("gptrs/ckpt_v2_aligned64_"
						 "py_latest.bin"),
				      &img, &d),
			 0);
	check_ab(img, "256", "320");
	check_config(img,
		     "{\"kind\":\"gpt\",\"config\":{\"vocab_size\":4},"
		     "\"eos_token_ids\":[2]}",
		     "gpt");
	tu_expect_xattr(img, "a/weight", "gptrs.reserved", "1");
	tu_expect_xattr(img, "b/ids", "gptrs.reserved", "0");
	expect_meta_str(img, "payload_layout", "aligned64");
	m = metadata(img);
	ck_assert_int_eq(json_integer_value(json_object_get(m, "data_start")),
			 211);
	eos = json_object_get(json_object_get(m, "config"), "eos_token_ids");
	ck_assert_int_eq(json_integer_value(json_array_get(eos, 0)), 2);
	json_decref(m);
	tfs_image_close(img);
}
END_TEST

START_TEST(real_latest_f16_bf16_scalar)
{
	const uint8_t bf16[] = {0x80, 0x3f, 0x00, 0xc0, 0x00, 0x3f, 0x49, 0x40};
	const uint8_t f16[] = {0x00, 0x3c, 0x00, 0xc0, 0x00, 0x38};
	const float seven = 7.0f;
	struct tfs_image *img;
	struct tfs_diag d;

	TU_NEED_SHARED("gptrs/ckpt_v2_aligned64_py_latest_f16_bf16_scalar"
		       ".bin");
	ck_assert_int_eq(tu_load_file(tu_fixture("gptrs/ckpt_v2_aligned64_"
						 "py_latest_f16_bf16_scalar."
						 "bin"),
				      &img, &d),
			 0);
	ck_assert_uint_eq(img->tree->ntensors, 3);
	expect_sha(
		img, "g/bf16", 8,
		"c186c5a9c6f3846defd4251e69179cfd28cdf1fad76e6273e5c3e9ac3f53b287");
	expect_sha(
		img, "h/f16", 6,
		"a1c7ce56fa343577ce57bc7c7788748ef640ec15a87c1786b507a8f1b608085c");
	expect_sha(
		img, "s/scalar", 4,
		"ee0a6628f97214b7ef5d15c54388ea478862369e517aa4ef4593aea18c3ff618");
	expect_bytes(img, "g/bf16", bf16, sizeof(bf16));
	expect_bytes(img, "h/f16", f16, sizeof(f16));
	expect_bytes(img, "s/scalar", &seven, 4);
	tu_expect_xattr(img, "g/bf16", "dtype", "bfloat16");
	tu_expect_xattr(img, "g/bf16", "shape", "[2,2]");
	tu_expect_xattr(img, "g/bf16", "offset", "256");
	tu_expect_xattr(img, "h/f16", "dtype", "float16");
	tu_expect_xattr(img, "h/f16", "shape", "[3]");
	tu_expect_xattr(img, "h/f16", "offset", "320");
	tu_expect_xattr(img, "s/scalar", "dtype", "float32");
	tu_expect_xattr(img, "s/scalar", "shape", "[]");
	tu_expect_xattr(img, "s/scalar", "offset", "384");
	check_config(img, "{\"kind\":\"ministral\",\"config\":{}}",
		     "ministral");
	expect_meta_str(img, "payload_layout", "aligned64");
	tfs_image_close(img);
}
END_TEST

/* @aligned, @packed: absolute paths (copied: tu_* paths are static) */
static void check_x_archives(const char *aligned, const char *packed)
{
	const float x[] = {1, 2};
	struct tfs_image *img;
	struct tfs_diag d;
	char path[4096];

	snprintf(path, sizeof(path), "%s", packed);
	ck_assert_int_eq(tu_load_file(aligned, &img, &d), 0);
	expect_sha(img, "x", 8, SHA_X);
	expect_bytes(img, "x", x, sizeof(x));
	tu_expect_xattr(img, "x", "offset", "64");
	tu_expect_xattr(img, "", "gptrs.magic", "GPTRSTEN");
	ck_assert_ptr_null(tu_xattr(img, "x", "gptrs.base_id"));
	ck_assert_uint_eq(tfs_tree_resolve(img->tree, ".tensorfs/config.json"),
			  TFS_NO_NODE);
	expect_meta_str(img, "payload_layout", "aligned64");
	expect_meta_str(img, "container", "tensor archive");
	tfs_image_close(img);

	ck_assert_int_eq(tu_load_file(path, &img, &d), 0);
	expect_sha(img, "x", 8, SHA_X);
	tu_expect_xattr(img, "x", "offset", "58");
	expect_meta_str(img, "payload_layout", "packed");
	tfs_image_close(img);
}

/*
 * the spec's synthesized files, written by tests/fixtures/gptrs/generate.py
 * with the same bytes as shared/fixtures/gptrs/synthesized (the generator
 * checks that when ../shared is there)
 */
START_TEST(generated_x_archives)
{
	char aligned[4096];

	snprintf(aligned, sizeof(aligned), "%s",
		 tu_testdata("gptrs/valid/archive_v2_aligned64_x.bin"));
	check_x_archives(aligned,
			 tu_testdata("gptrs/valid/archive_v2_packed_x.bin"));
}
END_TEST

static void check_base_ids(const char *file)
{
	struct tfs_image *img;
	struct tfs_diag d;
	json_t *m, *ids;

	ck_assert_int_eq(tu_load_file(file, &img, &d), 0);
	check_ab(img, "192", "256");
	/* spec section 5 table */
	tu_expect_xattr(img, "a/weight", "gptrs.base_id",
			"5106e4ba4dded0784e105a7c05bf15e1");
	tu_expect_xattr(img, "b/ids", "gptrs.base_id",
			"64fec99b54e628b43b21b77f8d3f262a");
	tu_expect_xattr(img, "a/weight", "gptrs.reserved", "0");
	m = metadata(img);
	ids = json_object_get(m, "base_ids");
	ck_assert_int_eq(json_integer_value(json_object_get(ids, "verified")),
			 2);
	ck_assert_int_eq(json_integer_value(json_object_get(ids, "absent")), 0);
	json_decref(m);
	tfs_image_close(img);
}

START_TEST(generated_base_ids)
{
	check_base_ids(tu_testdata(GEN_IDS));
}
END_TEST

/*
 * the checkpoint with the spec's base ids (generate.py's copy of the
 * synthesized one, byte for byte) with one base id byte flipped is refused
 */
START_TEST(reject_base_id_mismatch)
{
	size_t len;
	uint8_t *b = tu_read_file(tu_testdata(GEN_IDS), &len);

	/* a.weight's name ends at 0x4c, its base id follows */
	b[0x4c + 15] ^= 1;
	tu_expect_reject(b, len, -EBADMSG, "base_id", 0x4c);
	free(b);
}
END_TEST

/* ---- generated files: every variant ------------------------------------- */

static const float f32_vals[] = {1.5f, -2, 0.25f, 1e10f, -0.0f, 3};
static const uint8_t f16_vals[] = {0x00, 0x3c, 0x00, 0xc0,
				   0x00, 0x38, 0xff, 0x7b};
static const uint8_t bf16_vals[] = {0x80, 0x3f, 0x00, 0xc0, 0x49, 0x40};
static const int32_t i32_vals[] = {7, -1, 2147483647, -2147483647 - 1};
static const float scalar_val = 42.0f;

static const struct gen_tensor every_dtype[] = {
	{.name = "emb.f16",
	 .rank = 2,
	 .dims = {2, 2},
	 .tag = 1,
	 .data = f16_vals,
	 .len = sizeof(f16_vals)},
	{.name = "emb.bf16",
	 .rank = 1,
	 .dims = {3},
	 .tag = 2,
	 .data = bf16_vals,
	 .len = sizeof(bf16_vals),
	 .reserved = 1},
	{.name = "ids",
	 .rank = 3,
	 .dims = {1, 2, 2},
	 .tag = 3,
	 .data = i32_vals,
	 .len = sizeof(i32_vals)},
	{.name = "w.f32",
	 .rank = 2,
	 .dims = {3, 2},
	 .tag = 0,
	 .data = f32_vals,
	 .len = sizeof(f32_vals)},
	{.name = "scalar", .rank = 0, .tag = 0, .data = &scalar_val, .len = 4},
	{.name = "empty.rows",
	 .rank = 2,
	 .dims = {0, 5},
	 .tag = 0,
	 .data = "",
	 .len = 0},
	{.name = "empty.vec",
	 .rank = 1,
	 .dims = {0},
	 .tag = 2,
	 .data = "",
	 .len = 0},
	{.name = "after.empty",
	 .rank = 1,
	 .dims = {1},
	 .tag = 3,
	 .data = i32_vals,
	 .len = 4},
};
#define N_EVERY (sizeof(every_dtype) / sizeof(every_dtype[0]))

static void check_every_dtype(struct tfs_image *img, bool aligned)
{
	const struct tfs_tensor *t;
	size_t i;

	ck_assert_uint_eq(img->tree->ntensors, N_EVERY);
	expect_bytes(img, "emb/f16", f16_vals, sizeof(f16_vals));
	expect_bytes(img, "emb/bf16", bf16_vals, sizeof(bf16_vals));
	expect_bytes(img, "ids", i32_vals, sizeof(i32_vals));
	expect_bytes(img, "w/f32", f32_vals, sizeof(f32_vals));
	expect_bytes(img, "scalar", &scalar_val, 4);
	expect_bytes(img, "empty/rows", "", 0);
	expect_bytes(img, "empty/vec", "", 0);
	expect_bytes(img, "after/empty", i32_vals, 4);
	tu_expect_xattr(img, "emb/f16", "dtype", "float16");
	tu_expect_xattr(img, "emb/f16", "shape", "[2,2]");
	tu_expect_xattr(img, "emb/bf16", "dtype", "bfloat16");
	tu_expect_xattr(img, "emb/bf16", "gptrs.reserved", "1");
	tu_expect_xattr(img, "ids", "dtype", "int32");
	tu_expect_xattr(img, "ids", "shape", "[1,2,2]");
	tu_expect_xattr(img, "w/f32", "dtype", "float32");
	tu_expect_xattr(img, "scalar", "shape", "[]");
	tu_expect_xattr(img, "empty/rows", "shape", "[0,5]");
	tu_expect_xattr(img, "empty/vec", "dtype", "bfloat16");
	for (i = 0; i < N_EVERY; i++) {
		t = tu_tensor(img, every_dtype[i].name);
		ck_assert_ptr_nonnull(t);
		if (aligned)
			ck_assert_uint_eq(t->offset % 64, 0);
	}
}

static void every_variant(bool ckpt)
{
	static const char *layouts[] = {"inline", "packed", "aligned64"};
	struct tfs_image *img;
	enum gen_layout l;
	uint8_t *b;
	size_t len;

	for (l = GEN_V1; l <= GEN_ALIGNED; l++) {
		b = gen_file(ckpt, l, "{\"kind\":\"gpt\",\"config\":{}}",
			     every_dtype, N_EVERY, &len);
		img = load_ok(b, len);
		check_every_dtype(img, l == GEN_ALIGNED);
		expect_meta_str(img, "payload_layout", layouts[l]);
		tu_expect_xattr(img, "", "gptrs.magic",
				ckpt ? "GPTRSCHK" : "GPTRSTEN");
		tu_expect_xattr(img, "", "gptrs.version",
				l == GEN_V1 ? "1" : "2");
		if (ckpt && l != GEN_V1)
			tu_expect_xattr(img, "ids", "gptrs.base_id", ZERO_ID);
		else
			ck_assert_ptr_null(
				tu_xattr(img, "ids", "gptrs.base_id"));
		if (ckpt)
			check_config(img, "{\"kind\":\"gpt\",\"config\":{}}",
				     "gpt");
		tfs_image_close(img);
		free(b);
	}
}

START_TEST(generated_checkpoints)
{
	every_variant(true);
}
END_TEST

START_TEST(generated_archives)
{
	every_variant(false);
}
END_TEST

/* the payloads at the file's end of a layout nobody writes still work */
START_TEST(generated_reordered_payloads)
{
	struct gen_tensor t[2] = {
		{.name = "a",
		 .rank = 1,
		 .dims = {2},
		 .tag = 0,
		 .data = f32_vals,
		 .len = 8},
		{.name = "b",
		 .rank = 1,
		 .dims = {1},
		 .tag = 3,
		 .data = i32_vals,
		 .len = 4},
	};
	struct tfs_image *img;
	size_t len;
	uint8_t *b = gen_file(false, GEN_PACKED, NULL, t, 2, &len);

	/* archive: index at 16; entry a at 20 (29 bytes + 8 dims) */
	/* swap the payloads: b first at 16+I, a after it */
	uint64_t ds = len - 12, a_off = 16 + 4 + 4 + 1 + 4 + 8 + 4 + 1;

	ck_assert_uint_eq(tfs_load_le(b + 12, 4), ds - 16);
	ck_assert_uint_eq(tfs_load_le(b + a_off, 8), ds);
	patch(b, a_off, 8, ds + 4);
	patch(b, a_off + 16 + 4 + 1 + 4 + 8 + 4 + 1, 8, ds);
	memcpy(b + ds, i32_vals, 4);
	memcpy(b + ds + 4, f32_vals, 8);
	img = load_ok(b, len);
	expect_bytes(img, "a", f32_vals, 8);
	expect_bytes(img, "b", i32_vals, 4);
	expect_meta_str(img, "payload_layout", "other");
	tfs_image_close(img);
	free(b);
}
END_TEST

#define MANY 3000

START_TEST(generated_thousands)
{
	struct gen_tensor *t = calloc(MANY, sizeof(*t));
	int32_t *vals = calloc(MANY, sizeof(*vals));
	char(*names)[32] = calloc(MANY, sizeof(*names));
	struct tfs_image *img;
	enum gen_layout l;
	char path[48];
	size_t len, i;
	uint8_t *b;
	int ck;

	for (i = 0; i < MANY; i++) {
		snprintf(names[i], sizeof(names[i]), "layers.%04zu.w", i);
		vals[i] = (int32_t)(i * 7 - 5000);
		t[i] = (struct gen_tensor){.name = names[i],
					   .rank = 1,
					   .dims = {1},
					   .tag = 3,
					   .data = &vals[i],
					   .len = 4};
	}
	for (ck = 0; ck < 2; ck++) {
		for (l = GEN_V1; l <= GEN_ALIGNED; l++) {
			b = gen_file(ck, l, "{}", t, MANY, &len);
			img = load_ok(b, len);
			ck_assert_uint_eq(img->tree->ntensors, MANY);
			for (i = 0; i < MANY; i += 997) {
				snprintf(path, sizeof(path), "layers/%04zu/w",
					 i);
				expect_bytes(img, path, &vals[i], 4);
			}
			expect_bytes(img, "layers/2999/w", &vals[2999], 4);
			tfs_image_close(img);
			free(b);
		}
	}
	free(t);
	free(vals);
	free(names);
}
END_TEST

START_TEST(generated_long_names)
{
	const size_t lens[] = {255, 256, 4096, 70000};
	struct gen_tensor t[4];
	struct tfs_image *img;
	char *names[4];
	size_t len, i;
	uint8_t *b;
	int ck;

	for (i = 0; i < 4; i++) {
		names[i] = malloc(lens[i] + 1);
		memset(names[i], 'a' + (int)i, lens[i]);
		/* a dotted long name: many path components */
		if (i == 2)
			for (size_t k = 10; k < lens[i]; k += 11)
				names[i][k] = '.';
		names[i][lens[i]] = '\0';
		t[i] = (struct gen_tensor){.name = names[i],
					   .rank = 1,
					   .dims = {2},
					   .tag = 0,
					   .data = f32_vals + i,
					   .len = 8};
	}
	for (ck = 0; ck < 2; ck++) {
		b = gen_file(ck, ck ? GEN_ALIGNED : GEN_V1, "{}", t, 4, &len);
		img = load_ok(b, len);
		ck_assert_uint_eq(img->tree->ntensors, 4);
		for (i = 0; i < 4; i++) {
			const struct tfs_tensor *tt = tu_tensor(img, names[i]);
			uint8_t *got;
			size_t got_len;

			ck_assert_ptr_nonnull(tt);
			ck_assert_uint_eq(tt->name_len, lens[i]);
			got = tu_read_node(img, tt->node, &got_len);
			ck_assert_uint_eq(got_len, 8);
			ck_assert_mem_eq(got, f32_vals + i, 8);
			free(got);
		}
		tfs_image_close(img);
		free(b);
	}
	for (i = 0; i < 4; i++)
		free(names[i]);
}
END_TEST

/* names: UTF-8 in archives, ASCII in v2 checkpoints, real ids verified */
START_TEST(generated_names_and_ids)
{
	/* spec section 5 table */
	static const uint8_t id_x[16] = {0x3a, 0xe7, 0xd8, 0x05, 0xf6, 0x78,
					 0x9a, 0x64, 0x02, 0xac, 0xb7, 0x0a,
					 0xd4, 0x09, 0x6a, 0x85};
	static const uint8_t id_tok[16] = {0x7e, 0x7f, 0xea, 0xcf, 0xe1, 0xdd,
					   0xb4, 0x9f, 0x69, 0xba, 0x6d, 0x05,
					   0xe7, 0xec, 0x9e, 0xe6};
	struct gen_tensor t[2] = {
		{.name = "tok_embeddings.weight",
		 .rank = 1,
		 .dims = {1},
		 .tag = 0,
		 .data = f32_vals,
		 .len = 4,
		 .base_id = id_tok},
		{.name = "x",
		 .rank = 0,
		 .tag = 3,
		 .data = i32_vals,
		 .len = 4,
		 .base_id = id_x},
	};
	struct gen_tensor u = {.name = "gr\xc3\xb6\xc3\x9f"
				       "e",
			       .rank = 0,
			       .tag = 0,
			       .data = f32_vals,
			       .len = 4};
	struct tfs_image *img;
	json_t *m;
	size_t len;
	uint8_t *b;

	b = gen_file(true, GEN_ALIGNED, "{\"config\":{}}", t, 2, &len);
	img = load_ok(b, len);
	tu_expect_xattr(img, "tok_embeddings/weight", "gptrs.base_id",
			"7e7feacfe1ddb49f69ba6d05e7ec9ee6");
	tu_expect_xattr(img, "x", "gptrs.base_id",
			"3ae7d805f6789a6402acb70ad4096a85");
	m = metadata(img);
	ck_assert_int_eq(json_integer_value(json_object_get(
				 json_object_get(m, "base_ids"), "verified")),
			 2);
	json_decref(m);
	tfs_image_close(img);
	free(b);
	/* x's id on the other name: config of 13 bytes, index_len at 29,
	 * count at 33, entry 0 at 37, its 21-byte name at 41, base_id at 62 */
	t[0].base_id = id_x;
	b = gen_file(true, GEN_ALIGNED, "{\"config\":{}}", t, 2, &len);
	tu_expect_reject(b, len, -EBADMSG, "base_id", 62);
	free(b);

	/* UTF-8 names: fine in archives and v1 checkpoints */
	b = gen_file(false, GEN_PACKED, NULL, &u, 1, &len);
	img = load_ok(b, len);
	expect_bytes(img,
		     "gr\xc3\xb6\xc3\x9f"
		     "e",
		     f32_vals, 4);
	tfs_image_close(img);
	free(b);
	b = gen_file(true, GEN_V1, "{}", &u, 1, &len);
	img = load_ok(b, len);
	tfs_image_close(img);
	free(b);
	/* not in v2 checkpoints: 8+4+4+2 +4 index_len +4 count +4 name_len */
	b = gen_file(true, GEN_PACKED, "{}", &u, 1, &len);
	tu_expect_reject(b, len, -EBADMSG, "ASCII", 30 + 2);
	free(b);
	/* invalid UTF-8 in an archive name: index at 16, name at 24 */
	u.name = "ab\xff";
	b = gen_file(false, GEN_PACKED, NULL, &u, 1, &len);
	tu_expect_reject(b, len, -EBADMSG, "UTF-8", 24 + 2);
	free(b);
}
END_TEST

START_TEST(generated_warnings)
{
	struct gen_tensor t = {.name = "x",
			       .rank = 1,
			       .dims = {2},
			       .tag = 0,
			       .data = f32_vals,
			       .len = 8};
	struct tfs_image *img;
	json_t *m, *w;
	size_t len;
	uint8_t *b = gen_file(false, GEN_PACKED, NULL, &t, 1, &len), *c;

	/* payload pointing into the index (offset_abs at 42): warn, load */
	patch(b, 42, 8, 16);
	img = load_ok(b, len);
	m = metadata(img);
	w = json_object_get(m, "warnings");
	ck_assert_uint_eq(json_array_size(w), 1);
	ck_assert_ptr_nonnull(strstr(json_string_value(json_array_get(w, 0)),
				     "before the data region"));
	json_decref(m);
	tfs_image_close(img);
	/* 3 bytes of slack after the last entry: index_len 42 -> 45 */
	patch(b, 42, 8, 58);
	c = calloc(1, len + 3);
	memcpy(c, b, 58);
	memcpy(c + 61, b + 58, 8);
	patch(c, 12, 4, 45);
	patch(c, 42, 8, 61);
	img = load_ok(c, len + 3);
	m = metadata(img);
	w = json_object_get(m, "warnings");
	ck_assert_uint_eq(json_array_size(w), 1);
	ck_assert_ptr_nonnull(
		strstr(json_string_value(json_array_get(w, 0)), "ignored"));
	json_decref(m);
	expect_bytes(img, "x", f32_vals, 8);
	tfs_image_close(img);
	free(c);
	free(b);
}
END_TEST

/* ---- refusals --------------------------------------------------------- */

/*
 * The base files the refusals patch.  Archive, "x" f32 [2] (spec section
 * 8): 12 index_len, 16 tensor_count, 20 name_len, 24 name, 25 rank, 29 dim,
 * 37 dtype_tag, 41 reserved, 42 offset_abs, 50 byte_len, 58 data.
 * Checkpoint with config "{}": 12 config_len, 16 config, 18 index_len,
 * 22 tensor_count, 26 name_len, 30 name, 31 base_id, 47 rank, 51 dim,
 * 59 dtype_tag, 63 reserved, 64 offset_abs, 72 byte_len, 80 data.
 */
static const struct gen_tensor base_x = {.name = "x",
					 .rank = 1,
					 .dims = {2},
					 .tag = 0,
					 .data = f32_vals,
					 .len = 8};

static uint8_t *base_archive(size_t *len)
{
	uint8_t *b = gen_file(false, GEN_PACKED, NULL, &base_x, 1, len);

	ck_assert_uint_eq(*len, 66);
	ck_assert_uint_eq(tfs_load_le(b + 42, 8), 58);
	return b;
}

static uint8_t *base_ckpt(size_t *len)
{
	uint8_t *b = gen_file(true, GEN_PACKED, "{}", &base_x, 1, len);

	ck_assert_uint_eq(*len, 88);
	ck_assert_uint_eq(tfs_load_le(b + 64, 8), 80);
	return b;
}

START_TEST(reject_header)
{
	struct tfs_image *img = NULL;
	struct tfs_diag d;
	size_t len;
	uint8_t *b;

	/* not ours at all */
	b = base_archive(&len);
	b[0] = 'X';
	ck_assert_int_eq(tu_load_mem(b, len, &img, &d), -ENOEXEC);
	/* a damaged gpt-rs magic */
	b[0] = 'G';
	b[7] = 'X';
	tu_expect_reject(b, len, -EBADMSG, "magic", 0);
	b[7] = 'N';
	/* unknown versions */
	patch(b, 8, 4, 3);
	tu_expect_reject(b, len, -ENOTSUP, "version", 8);
	patch(b, 8, 4, 0);
	tu_expect_reject(b, len, -ENOTSUP, "version", 8);
	patch(b, 8, 4, 2);
	/* the file ends inside the version / index_len */
	tu_expect_reject(b, 10, -EBADMSG, "version", 8);
	tu_expect_reject(b, 14, -EBADMSG, "index_len", 12);
	/* index_len past the end of the file */
	patch(b, 12, 4, 51);
	tu_expect_reject(b, len, -EBADMSG, "index_len", 12);
	patch(b, 12, 4, 0xffffffff);
	tu_expect_reject(b, len, -EBADMSG, "index_len", 12);
	free(b);

	b = base_ckpt(&len);
	tu_expect_reject(b, 14, -EBADMSG, "config_len", 12);
	patch(b, 12, 4, 73);
	tu_expect_reject(b, len, -EBADMSG, "config_len", 12);
	patch(b, 12, 4, 2);
	patch(b, 18, 4, 67);
	tu_expect_reject(b, len, -EBADMSG, "index_len", 18);
	free(b);
}
END_TEST

START_TEST(reject_config)
{
	struct gen_tensor none;
	size_t len;
	uint8_t *b;
	struct tfs_diag d;
	struct tfs_image *img = NULL;

	memset(&none, 0, sizeof(none));
	b = gen_file(true, GEN_PACKED, "{\"kind\":}", &none, 0, &len);
	ck_assert_int_eq(tu_load_mem(b, len, &img, &d), -EBADMSG);
	ck_assert(d.has_offset);
	ck_assert_uint_ge(d.offset, 16);
	ck_assert_uint_le(d.offset, 16 + 9);
	ck_assert_ptr_nonnull(strstr(d.msg, "config"));
	ck_assert_ptr_nonnull(strstr(d.msg, "JSON"));
	free(b);
	/* not UTF-8 inside a string */
	b = gen_file(true, GEN_V1, "{\"kind\":\"g\xffpt\"}", &none, 0, &len);
	ck_assert_int_eq(tu_load_mem(b, len, &img, &d), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(d.msg, "config"));
	free(b);
	/* empty */
	b = gen_file(true, GEN_PACKED, "", &none, 0, &len);
	ck_assert_int_eq(tu_load_mem(b, len, &img, &d), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(d.msg, "config"));
	free(b);
	/* valid JSON, but not an object */
	b = gen_file(true, GEN_PACKED, "[1,2]", &none, 0, &len);
	tu_expect_reject(b, len, -EBADMSG, "object", 16);
	free(b);
	/* a bare legacy config without "kind" is fine */
	b = gen_file(true, GEN_PACKED, "{\"n_layer\":2}", &none, 0, &len);
	img = load_ok(b, len);
	ck_assert_uint_eq(img->tree->ntensors, 0);
	expect_meta_str(img, "payload_layout", "empty");
	tfs_image_close(img);
	free(b);
}
END_TEST

START_TEST(reject_config_too_big)
{
	size_t len = 20 + (64u << 20) + 1 + 8;
	uint8_t *b = calloc(1, len);

	memcpy(b, "GPTRSCHK", 8);
	patch(b, 8, 4, 2);
	patch(b, 12, 4, (64u << 20) + 1);
	tu_expect_reject(b, len, -E2BIG, "config_len", 12);
	free(b);
}
END_TEST

/* one field patched to a bad value, refused, then put back */
struct field_case {
	size_t off;
	unsigned width;
	uint64_t bad, good;
	int err;
	uint64_t at;
	const char *word;
};

static void run_cases(uint8_t *b, size_t len, const struct field_case *fc,
		      size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		patch(b, fc[i].off, fc[i].width, fc[i].bad);
		tu_expect_reject(b, len, fc[i].err, fc[i].word, fc[i].at);
		patch(b, fc[i].off, fc[i].width, fc[i].good);
	}
}

/* the archive base file (layout above), field by field */
static const struct field_case archive_cases[] = {
	/* tensor_count that cannot fit in index_len 42 */
	{16, 4, 2, 1, -EBADMSG, 16, "tensor_count"},
	{16, 4, 0xffffffff, 1, -EBADMSG, 16, "tensor_count"},
	/* index_len too short for the count itself */
	{12, 4, 3, 42, -EBADMSG, 16, "tensor_count"},
	/* 28 bytes after the count: less than the smallest entry (29) */
	{12, 4, 32, 42, -EBADMSG, 16, "tensor_count"},
	/* index_len cuts the entry inside offset_abs, inside byte_len */
	{12, 4, 33, 42, -EBADMSG, 42, "offset_abs"},
	{12, 4, 41, 42, -EBADMSG, 50, "byte_len"},
	/* name_len past the index (34 bytes are left after it) */
	{20, 4, 35, 1, -EBADMSG, 20, "name_len"},
	/* rank too large for the rest of the index (29 bytes after it) */
	{25, 4, 4, 1, -EBADMSG, 25, "rank"},
	{25, 4, 0x20000000, 1, -EBADMSG, 25, "rank"},
	/* unknown dtype tags */
	{37, 4, 4, 0, -EBADMSG, 37, "dtype"},
	{37, 4, 0xffffffff, 0, -EBADMSG, 37, "dtype"},
	/* f16: 2 elements are 4 bytes, not 8 */
	{37, 4, 1, 0, -EBADMSG, 50, "does not match"},
	/* byte_len that does not match the shape */
	{50, 8, 4, 8, -EBADMSG, 50, "does not match"},
	/* offset past EOF; offset + len overflowing */
	{42, 8, 59, 58, -EBADMSG, 42, "past the end"},
	{42, 8, UINT64_MAX - 3, 58, -EBADMSG, 42, "past the end"},
	/* a shape whose byte count overflows */
	{29, 8, 1ull << 62, 2, -EBADMSG, 29, "overflows"},
};

/* the same fields in the checkpoint base file, 22 bytes later */
static const struct field_case ckpt_cases[] = {
	{22, 4, 2, 1, -EBADMSG, 22, "tensor_count"},
	{47, 4, 9, 1, -EBADMSG, 47, "rank"},
	{59, 4, 7, 0, -EBADMSG, 59, "dtype"},
	{72, 8, 12, 8, -EBADMSG, 72, "does not match"},
	{64, 8, 81, 80, -EBADMSG, 64, "past the end"},
	{18, 4, 57, 58, -EBADMSG, 72, "byte_len"},
};

START_TEST(reject_index)
{
	size_t len;
	uint8_t *b;

	b = base_archive(&len);
	run_cases(b, len, archive_cases,
		  sizeof(archive_cases) / sizeof(archive_cases[0]));
	/* a length (matching its shape) past EOF */
	patch(b, 29, 8, 1ull << 40);
	patch(b, 50, 8, 4ull << 40);
	tu_expect_reject(b, len, -EBADMSG, "past the end", 42);
	free(b);

	b = base_ckpt(&len);
	run_cases(b, len, ckpt_cases,
		  sizeof(ckpt_cases) / sizeof(ckpt_cases[0]));
	free(b);
}
END_TEST

START_TEST(reject_bincode_and_duplicates)
{
	struct gen_tensor t[2] = {base_x, base_x};
	struct tu_buf f = {0};
	size_t len;
	uint8_t *b;

	/* a v2-bincode archive index: u64 count, u64 name length, ... */
	tu_buf_put(&f, "GPTRSTEN", 8);
	put_le(&f, 2, 4);
	put_le(&f, 8 + 8 + 1 + 8 + 8 + 4 + 1 + 8 + 8, 4);
	put_le(&f, 1, 8);
	put_le(&f, 1, 8);
	tu_buf_put(&f, "x", 1);
	put_le(&f, 1, 8);
	put_le(&f, 2, 8);
	put_le(&f, 0, 4);
	put_le(&f, 0, 1);
	put_le(&f, 16 + 54, 8);
	put_le(&f, 8, 8);
	tu_buf_put(&f, f32_vals, 8);
	tu_expect_reject(f.p, f.len, -ENOTSUP, "bincode", 16);
	free(f.p);

	b = gen_file(false, GEN_ALIGNED, NULL, t, 2, &len);
	/* second entry at 20 + 38: the builder names its description */
	tu_expect_reject(b, len, -EBADMSG, "duplicate", 58);
	free(b);
	b = gen_file(true, GEN_V1, "{}", t, 2, &len);
	/* v1: 8+4+4+2, count at 18, entry 0 at 22 (21 + 1 + 8 + 8 data) */
	tu_expect_reject(b, len, -EBADMSG, "duplicate", 22 + 38);
	free(b);
}
END_TEST

START_TEST(reject_v1)
{
	struct gen_tensor t[2] = {base_x, base_x};
	size_t len;
	uint8_t *b;

	t[1].name = "y";
	/* archive v1: 12 count, 16 name_len, 20 name, 21 rank, 25 dim,
	 * 33 dtype_tag, 37 reserved, 38 byte_len, 46 data, 54 next entry
	 * (its byte_len at 76, data at 84), 92 end */
	b = gen_file(false, GEN_V1, NULL, t, 2, &len);
	ck_assert_uint_eq(len, 92);
	patch(b, 12, 4, 5);
	tu_expect_reject(b, len, -EBADMSG, "tensor_count", 12);
	/* 3 x 21 bytes fit, but the file ends after the second entry */
	patch(b, 12, 4, 3);
	tu_expect_reject(b, len, -EBADMSG, "name_len", 92);
	patch(b, 12, 4, 2);
	patch(b, 33, 4, 9);
	tu_expect_reject(b, len, -EBADMSG, "dtype", 33);
	patch(b, 33, 4, 0);
	patch(b, 38, 8, 12);
	tu_expect_reject(b, len, -EBADMSG, "does not match", 38);
	patch(b, 38, 8, 8);
	/* the last entry's data cut short: reported at its byte_len */
	tu_expect_reject(b, len - 1, -EBADMSG, "past the end", 76);
	/* a rank the rest of the file cannot hold */
	patch(b, 21, 4, 100);
	tu_expect_reject(b, len, -EBADMSG, "rank", 21);
	free(b);
}
END_TEST

/* ---- BLAKE3 ---------------------------------------------------------------
 */

/*
 * BLAKE3-team/BLAKE3 test_vectors/test_vectors.json: input bytes i % 251,
 * the first 32 bytes of each "hash".
 */
static const struct {
	size_t len;
	const char *hash;
} b3_vectors[] = {
	{0, "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"},
	{1, "2d3adedff11b61f14c886e35afa036736dcd87a74d27b5c1510225d0f592e213"},
	{1023,
	 "10108970eeda3eb932baac1428c7a2163b0e924c9a9e25b35bba72b28f70bd11"},
	{1024,
	 "42214739f095a406f3fc83deb889744ac00df831c10daa55189b5d121c855af7"},
	{1025,
	 "d00278ae47eb27b34faecf67b4fe263f82d5412916c1ffd97c8cb7fb814b8444"},
	{2048,
	 "e776b6028c7cd22a4d0ba182a8bf62205d2ef576467e838ed6f2529b85fba24a"},
	{2049,
	 "5f4d72f40d7a5f82b15ca2b2e44b1de3c2ef86c426c95c1af0b6879522563030"},
	{3072,
	 "b98cb0ff3623be03326b373de6b9095218513e64f1ee2edd2525c7ad1e5cffd2"},
	{3073,
	 "7124b49501012f81cc7f11ca069ec9226cecb8a2c850cfe644e327d22d3e1cd3"},
	{4096,
	 "015094013f57a5277b59d8475c0501042c0b642e531b0a1c8f58d2163229e969"},
	{4097,
	 "9b4052b38f1c5fc8b1f9ff7ac7b27cd242487b3d890d15c96a1c25b8aa0fb995"},
	{5120,
	 "9cadc15fed8b5d854562b26a9536d9707cadeda9b143978f319ab34230535833"},
	{5121,
	 "628bd2cb2004694adaab7bbd778a25df25c47b9d4155a55f8fbd79f2fe154cff"},
	{6144,
	 "3e2e5b74e048f3add6d21faab3f83aa44d3b2278afb83b80b3c35164ebeca205"},
	{6145,
	 "f1323a8631446cc50536a9f705ee5cb619424d46887f3c376c695b70e0f0507f"},
	{7168,
	 "61da957ec2499a95d6b8023e2b0e604ec7f6b50e80a9678b89d2628e99ada77a"},
	{7169,
	 "a003fc7a51754a9b3c7fae0367ab3d782dccf28855a03d435f8cfe74605e7817"},
	{8192,
	 "aae792484c8efe4f19e2ca7d371d8c467ffb10748d8a5a1ae579948f718a2a63"},
	{8193,
	 "bab6c09cb8ce8cf459261398d2e7aef35700bf488116ceb94a36d0f5f1b7bc3b"},
	{16384,
	 "f875d6646de28985646f34ee13be9a576fd515f76b5b0a26bb324735041ddde4"},
	{31744,
	 "62b6960e1a44bcc1eb1a611a8d6235b6b4b78f32e7abc4fb4c6cdcce94895c47"},
	{102400,
	 "bc3e3d41a1146b069abffad3c0d44860cf664390afce4d9661f7902e7943e085"},
};

static void b3_hex(const void *p, size_t len, char out[65])
{
	uint8_t h[TFS_BLAKE3_OUT_LEN];
	int i;

	tfs_blake3(p, len, h);
	for (i = 0; i < 32; i++)
		sprintf(out + 2 * i, "%02x", h[i]);
}

START_TEST(blake3_official_vectors)
{
	uint8_t *in = malloc(102400);
	char hex[65];
	size_t i;

	for (i = 0; i < 102400; i++)
		in[i] = (uint8_t)(i % 251);
	for (i = 0; i < sizeof(b3_vectors) / sizeof(b3_vectors[0]); i++) {
		b3_hex(in, b3_vectors[i].len, hex);
		ck_assert_msg(strcmp(hex, b3_vectors[i].hash) == 0,
			      "len %zu: %s", b3_vectors[i].len, hex);
	}
	free(in);
}
END_TEST

/* spec section 5: the base ids are BLAKE3 prefixes of the names */
START_TEST(blake3_spec_names)
{
	static const char *const names[][2] = {
		{"a.weight", "5106e4ba4dded0784e105a7c05bf15e1"},
		{"b.ids", "64fec99b54e628b43b21b77f8d3f262a"},
		{"x", "3ae7d805f6789a6402acb70ad4096a85"},
		{"tok_embeddings.weight", "7e7feacfe1ddb49f69ba6d05e7ec9ee6"},
		{"model.embed_tokens.weight",
		 "e376d764c5ce87e977775a5f91907109"},
	};
	char hex[65];
	size_t i;

	for (i = 0; i < 5; i++) {
		b3_hex(names[i][0], strlen(names[i][0]), hex);
		ck_assert_int_eq(strncmp(hex, names[i][1], 32), 0);
	}
}
END_TEST

/* b3sum (the Rust implementation), when installed, as a second oracle */
START_TEST(blake3_against_b3sum)
{
	static const size_t lens[] = {3,    63,	  64,	65,    1088,
				      2047, 4095, 9000, 65537, 200001};
	char path[] = "/tmp/tfs-b3-XXXXXX", cmd[128], want[80], hex[65];
	uint32_t x = 12345;
	uint8_t *in;
	FILE *f;
	size_t i, k;
	int fd;

	if (system("command -v b3sum >/dev/null 2>&1") != 0) {
		fprintf(stderr, "blake3_against_b3sum: b3sum not installed, "
				"skipped\n");
		return;
	}
	in = malloc(200001);
	for (i = 0; i < 200001; i++) {
		x = x * 1103515245u + 12345u;
		in[i] = (uint8_t)(x >> 16);
	}
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	for (k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		ck_assert_int_eq(ftruncate(fd, 0), 0);
		ck_assert_int_eq(pwrite(fd, in, lens[k], 0), (ssize_t)lens[k]);
		snprintf(cmd, sizeof(cmd), "b3sum --no-names %s", path);
		f = popen(cmd, "r");
		ck_assert_ptr_nonnull(f);
		ck_assert_ptr_nonnull(fgets(want, sizeof(want), f));
		pclose(f);
		want[64] = '\0';
		b3_hex(in, lens[k], hex);
		ck_assert_msg(strcmp(hex, want) == 0, "len %zu: %s vs %s",
			      lens[k], hex, want);
	}
	close(fd);
	unlink(path);
	free(in);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gptrs");
	TCase *real = tcase_create("real"), *gen = tcase_create("generated");
	TCase *rej = tcase_create("reject"), *b3 = tcase_create("blake3");

	tcase_add_test(real, real_feb2026_unaligned);
	tcase_add_test(real, real_latest_aligned);
	tcase_add_test(real, real_latest_f16_bf16_scalar);
	tcase_add_test(real, reject_base_id_mismatch);
	tcase_add_test(gen, generated_x_archives);
	tcase_add_test(gen, generated_base_ids);
	tcase_add_test(gen, generated_checkpoints);
	tcase_add_test(gen, generated_archives);
	tcase_add_test(gen, generated_reordered_payloads);
	tcase_add_test(gen, generated_thousands);
	tcase_add_test(gen, generated_long_names);
	tcase_add_test(gen, generated_names_and_ids);
	tcase_add_test(gen, generated_warnings);
	tcase_add_test(rej, reject_header);
	tcase_add_test(rej, reject_config);
	tcase_add_test(rej, reject_config_too_big);
	tcase_add_test(rej, reject_index);
	tcase_add_test(rej, reject_bincode_and_duplicates);
	tcase_add_test(rej, reject_v1);
	tcase_add_test(b3, blake3_official_vectors);
	tcase_add_test(b3, blake3_spec_names);
	tcase_add_test(b3, blake3_against_b3sum);
	suite_add_tcase(s, real);
	suite_add_tcase(s, gen);
	suite_add_tcase(s, rej);
	suite_add_tcase(s, b3);
	return tu_run(s);
}
