// SPDX-License-Identifier: MIT
/*
 * Flax msgpack: the shared fixtures (../shared/fixtures/flax-msgpack,
 * written by flax's own algorithm with python3-msgpack) and the project's
 * (tests/fixtures/flax, our own msgpack writer) against their
 * expected.json (names, dtypes, shapes, offsets, sha256 of the bytes
 * served, the leaves in metadata.json, a chunked array served whole
 * from its chunks), the rejects with the field and the byte offset worked out
 * from the fixtures' bytes, and files written here for the rest of the spec
 * (tuples, lists, escaped keys, duplicates, every refusal).
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/format.h"
#include "core/image.h"
#include "core/source.h"
#include "testutil.h"

#define FIX "flax-msgpack/"

static void shape_text(const json_t *a, char *buf, size_t len)
{
	size_t i, o = (size_t)snprintf(buf, len, "[");

	for (i = 0; i < json_array_size(a); i++)
		o += (size_t)snprintf(
			buf + o, len - o, "%s%lld", i ? "," : "",
			(long long)json_integer_value(json_array_get(a, i)));
	snprintf(buf + o, len - o, "]");
}

/* the manifest entry of tensor @name */
static json_t *manifest_entry(json_t *man, const char *name)
{
	json_t *t;
	size_t i;

	json_array_foreach(
		json_object_get(man, "tensors"), i,
		t) if (!strcmp(json_string_value(json_object_get(t, "name")),
			       name)) return t;
	return NULL;
}

static void check_tensor(struct tfs_image *img, json_t *man, const json_t *t)
{
	const char *name = json_string_value(json_object_get(t, "name"));
	const struct tfs_tensor *x = tu_tensor(img, name);
	const json_t *chunks = json_object_get(t, "chunks");
	char shape[96], hex[65];
	uint8_t *b;
	size_t len;

	ck_assert_msg(x != NULL, "no tensor '%s'", name);
	ck_assert_str_eq(x->dtype,
			 json_string_value(json_object_get(t, "dtype")));
	shape_text(json_object_get(t, "shape"), shape, sizeof(shape));
	tu_expect_xattr(img, x->path, "shape", shape);
	ck_assert_uint_eq(x->size,
			  json_integer_value(json_object_get(t, "nbytes")));
	if (chunks) {
		/* one file of several pieces: the chunks, in order */
		ck_assert(json_equal(
			json_object_get(manifest_entry(man, name), "chunks"),
			chunks));
	} else {
		ck_assert_uint_eq(x->offset, json_integer_value(json_object_get(
						     t, "offset")));
	}
	ck_assert_ptr_null(x->unreadable);
	b = tu_read_node(img, x->node, &len);
	ck_assert_uint_eq(len, x->size);
	tu_sha256_hex(b, len, hex);
	ck_assert_str_eq(hex, json_string_value(json_object_get(t, "sha256")));
	free(b);
}

/*
 * Every file of @dir against @dir/expected.json (the shared set, or the
 * project's of tests/fixtures/flax/generate.py; the same layout)
 */
static void check_valid_set(const char *dir, size_t nfiles)
{
	json_error_t err;
	json_t *exp, *e, *t, *meta, *man, *leaves;
	const char *file;
	struct tfs_image *img;
	struct tfs_diag d;
	char path[4096];
	size_t i, files = 0;

	snprintf(path, sizeof(path), "%s/expected.json", dir);
	exp = json_load_file(path, 0, &err);
	ck_assert_msg(exp != NULL, "expected.json: %s", err.text);
	json_object_foreach(json_object_get(exp, "valid"), file, e)
	{
		snprintf(path, sizeof(path), "%s/%s", dir, file);
		ck_assert_msg(tu_load_file(path, &img, &d) == 0, "%s: %s", file,
			      d.msg);
		ck_assert_str_eq(img->tree->format, "flax");
		ck_assert_uint_eq(
			img->tree->ntensors,
			json_array_size(json_object_get(e, "tensors")));
		man = tu_meta_json(img, "manifest.json");
		json_array_foreach(json_object_get(e, "tensors"), i, t)
			check_tensor(img, man, t);
		meta = tu_meta_json(img, "metadata.json");
		leaves = json_object_get(meta, "leaves");
		ck_assert_uint_eq(
			json_object_size(leaves),
			json_array_size(json_object_get(e, "leaves")));
		json_array_foreach(json_object_get(e, "leaves"), i, t)
			ck_assert_msg(
				json_equal(json_object_get(
						   leaves,
						   json_string_value(
							   json_object_get(
								   t, "name"))),
					   json_object_get(t, "value")),
				"%s: leaf %s", file,
				json_string_value(json_object_get(t, "name")));
		json_decref(man);
		json_decref(meta);
		tfs_image_close(img);
		files++;
	}
	ck_assert_uint_eq(files, nfiles);
	json_decref(exp);
}

START_TEST(fixtures_valid)
{
	char dir[4096];

	TU_NEED_SHARED("flax-msgpack/expected.json");
	snprintf(dir, sizeof(dir), "%s", tu_fixture("flax-msgpack"));
	check_valid_set(dir, 2);
}
END_TEST

START_TEST(project_valid)
{
	char dir[4096];

	snprintf(dir, sizeof(dir), "%s", tu_testdata("flax/valid"));
	check_valid_set(dir, 2);
}
END_TEST

/*
 * The project's rejects: each refused as expected.json says (the offset
 * is the byte generate.py broke), and every file has its row
 */
START_TEST(project_reject)
{
	json_error_t err;
	json_t *exp = json_load_file(tu_testdata("flax/valid/expected.json"), 0,
				     &err);
	json_t *rej = json_object_get(exp, "reject"), *r;
	struct tu_reject v[16];
	const char *file;
	char names[16][64];
	size_t n = 0;

	ck_assert_msg(exp != NULL, "expected.json: %s", err.text);
	json_object_foreach(rej, file, r)
	{
		const char *e = json_string_value(json_object_get(r, "errno"));

		ck_assert_uint_lt(n, 16);
		ck_assert_ptr_nonnull(strstr(file, ".msgpack"));
		snprintf(names[n], sizeof(names[n]), "%.*s",
			 (int)(strstr(file, ".msgpack") - file), file);
		v[n] = (struct tu_reject){
			.file = names[n],
			.err = !strcmp(e, "ENOTSUP") ? -ENOTSUP : -EBADMSG,
			.word = json_string_value(json_object_get(r, "word")),
			.at = (uint64_t)json_integer_value(
				json_object_get(r, "offset")),
		};
		n++;
	}
	ck_assert_uint_ge(n, 8);
	tu_check_rejects("flax/reject", ".msgpack", v, n);
	json_decref(exp);
}
END_TEST

START_TEST(fixtures_reject)
{
	TU_NEED_SHARED("flax-msgpack/reject");
	static const struct {
		const char *file;
		int err;
		const char *word;
		uint64_t at;
	} v[] = {
		/* {"w": ext 0xc7 len 0x22 type 1 [[2,3], "float32", bin]}:
		 * the bin's type byte at 18 */
		{"ext_size_mismatch.msgpack", -EBADMSG, "20 bytes", 18},
		/* 81 a1 'w' c7 14 01 93 91 01, then the dtype str */
		{"object_dtype.msgpack", -ENOTSUP, "'object'", 9},
		/* 81 a1 'w', then the fixext 1 of type 9 */
		{"unknown_ext.msgpack", -ENOTSUP, "ext type 9", 3},
		/* 81 a3 'big', then the chunked map */
		{"chunk_sum_mismatch.msgpack", -EBADMSG, "need 20", 5},
		/* each level is 81 a1 'a': the 64th map is too deep */
		{"deep_nesting.msgpack", -EBADMSG, "deeper than 64", 3 * 63},
		/* flax_model.msgpack (729 bytes) ends with a7 'nothing' c0:
		 * that str, cut 7 bytes short */
		{"truncated.msgpack", -EBADMSG, "past the end", 729 - 9},
	};
	struct tfs_image *img;
	struct tfs_diag d;
	char path[128];
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		snprintf(path, sizeof(path), FIX "reject/%s", v[i].file);
		img = NULL;
		ck_assert_int_eq(tu_load_file(tu_fixture(path), &img, &d),
				 v[i].err);
		ck_assert_ptr_null(img);
		ck_assert_msg(strstr(d.msg, v[i].word), "%s: '%s' lacks '%s'",
			      v[i].file, d.msg, v[i].word);
		ck_assert_msg(d.has_offset && d.offset == v[i].at,
			      "%s: '%s' at %llu, want %llu", v[i].file, d.msg,
			      (unsigned long long)d.offset,
			      (unsigned long long)v[i].at);
	}
}
END_TEST

/* ---- msgpack written here ----------------------------------------------- */

static void put(struct tu_buf *b, const void *p, size_t n)
{
	tu_buf_put(b, p, n);
}

static void byte(struct tu_buf *b, uint8_t v)
{
	put(b, &v, 1);
}

static void str(struct tu_buf *b, const char *s)
{
	byte(b, (uint8_t)(0xa0 | strlen(s)));
	put(b, s, strlen(s));
}

/* ext 1 (or @ext) [[dims...], dtype, bin of @n bytes of @fill] */
static uint64_t ndarray(struct tu_buf *b, int ext, const uint8_t *dims,
			size_t nd, const char *dtype, size_t n, uint8_t fill)
{
	struct tu_buf in = {0};
	uint64_t data;
	size_t i;

	byte(&in, 0x93);
	byte(&in, (uint8_t)(0x90 | nd));
	put(&in, dims, nd);
	str(&in, dtype);
	byte(&in, 0xc4);
	byte(&in, (uint8_t)n);
	for (i = 0; i < n; i++)
		byte(&in, fill);
	byte(b, 0xc7);
	byte(b, (uint8_t)in.len);
	byte(b, (uint8_t)ext);
	data = b->len + in.len - n;
	put(b, in.p, in.len);
	free(in.p);
	return data;
}

static struct tfs_image *load(struct tu_buf *b)
{
	return tu_load_ok(b->p, b->len);
}

static json_t *leaves(struct tfs_image *img)
{
	json_t *m = tu_meta_json(img, "metadata.json");
	json_t *l = json_incref(json_object_get(m, "leaves"));

	json_decref(m);
	return l;
}

START_TEST(tree)
{
	static const uint8_t d23[] = {2, 3}, d2[] = {2};
	struct tu_buf b = {0};
	struct tfs_image *img;
	uint64_t w, t0, l1;
	json_t *l;
	char *s;

	/* {"a.b/c": {"w": f32 [2,3]}, "t": ext4 (u8 [2], 7),
	 *  "l": [nil, f16 [2]], "x": -5, "big": 2^64-1, "nan": NaN} */
	byte(&b, 0x86);
	str(&b, "a.b/c");
	byte(&b, 0x81);
	str(&b, "w");
	w = ndarray(&b, 1, d23, 2, "float32", 24, 0x3f);
	str(&b, "t");
	{
		struct tu_buf tup = {0};

		byte(&tup, 0x92);
		t0 = ndarray(&tup, 1, d2, 1, "uint8", 2, 9);
		byte(&tup, 0x07);
		byte(&b, 0xc7);
		byte(&b, (uint8_t)tup.len);
		byte(&b, 4);
		t0 += b.len;
		put(&b, tup.p, tup.len);
		free(tup.p);
	}
	str(&b, "l");
	byte(&b, 0x92);
	byte(&b, 0xc0);
	l1 = ndarray(&b, 1, d2, 1, "float16", 4, 1);
	str(&b, "x");
	byte(&b, 0xfb);
	str(&b, "big");
	put(&b, "\xcf\xff\xff\xff\xff\xff\xff\xff\xff", 9);
	str(&b, "nan");
	put(&b, "\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00", 9);
	img = load(&b);
	/*
	 * '.' and '/' inside a key are escaped in the name: one path
	 * component, whose '%' the tree escapes again (docs/tree.md)
	 */
	ck_assert_uint_eq(tu_tensor(img, "a%2Eb%2Fc.w")->offset, w);
	tu_expect_xattr(img, "a%252Eb%252Fc/w", "shape", "[2,3]");
	ck_assert_uint_eq(tu_tensor(img, "t.0")->offset, t0);
	ck_assert_str_eq(tu_tensor(img, "t.0")->dtype, "uint8");
	ck_assert_uint_eq(tu_tensor(img, "l.1")->offset, l1);
	l = leaves(img);
	s = json_dumps(l, JSON_COMPACT | JSON_SORT_KEYS);
	ck_assert_str_eq(s, "{\"big\":\"18446744073709551615\",\"l.0\":null,"
			    "\"nan\":null,\"t.1\":7,\"x\":-5}");
	free(s);
	json_decref(l);
	tfs_image_close(img);
	free(b.p);
}
END_TEST

/* a map {"w": ndarray} with @tail written after the ndarray */
static void reject_one(const char *dtype, size_t n, const void *tail,
		       size_t tlen, int err, const char *word, uint64_t at)
{
	static const uint8_t d2[] = {2};
	struct tu_buf b = {0};

	byte(&b, 0x81 + (tlen ? 1 : 0));
	str(&b, "w");
	ndarray(&b, 1, d2, 1, dtype, n, 0);
	put(&b, tail, tlen);
	tu_expect_reject(b.p, b.len, err, word, at);
	free(b.p);
}

START_TEST(refusals)
{
	/* the ndarray above takes 3 + 1 + 2 + 1 + 1 + strlen(dtype) + 2 + n
	 * bytes after the 3 bytes of 81 a1 'w' */
	const uint64_t end4 = 3 + 3 + 1 + 2 + 1 + 5 + 2 + 4; /* "int16" */
	struct tfs_image *img = NULL;
	struct tfs_diag d;

	reject_one("int4", 2, NULL, 0, -ENOTSUP, "'int4'", 3 + 3 + 1 + 2);
	reject_one("int16", 4, "\xa1w\x01", 3, -EBADMSG, "given twice", end4);
	reject_one("int16", 4, "\x01\x01", 2, -EBADMSG, "not a str", end4);
	reject_one("int16", 4, "\xa1v\xc7\x01\x01\x00", 6, -EBADMSG,
		   "an ndarray ext holds", end4 + 5);
	reject_one("int16", 4, "\xa1v\xa2\xff\xfe", 5, -EBADMSG, "not UTF-8",
		   end4 + 2);
	reject_one("int16", 4, "\xa1\x2e\xc1", 3, -EBADMSG, "0xc1", end4 + 2);
	/* one byte more than the map */
	{
		struct tu_buf b = {0};
		static const uint8_t d2[] = {2};

		byte(&b, 0x81);
		str(&b, "w");
		ndarray(&b, 1, d2, 1, "int8", 2, 0);
		byte(&b, 0xc0);
		tu_expect_reject(b.p, b.len, -EBADMSG, "1 bytes after the map",
				 b.len - 1);
		/* no ndarray at all: not a checkpoint */
		tu_expect_reject("\x81\xa1w\x01", 4, -EBADMSG, "no ndarray", 0);
		free(b.p);
	}
	/* a map that is not flax's is left to the other readers */
	ck_assert_int_eq(tu_load_mem("\x81\x01\x01", 3, &img, &d), -ENOEXEC);
}
END_TEST

START_TEST(probe)
{
	const struct tfs_format *f = tfs_format_by_name("flax");
	struct tfs_source src;
	static const uint8_t d2[] = {2};
	struct tu_buf b = {0};

	ck_assert_ptr_nonnull(f);
	byte(&b, 0x81);
	str(&b, "w");
	ndarray(&b, 1, d2, 1, "int8", 2, 0);
	tfs_source_init_memory(&src, b.p, b.len);
	ck_assert_int_eq(f->probe(&src), 60);
	/* cut short: still claimed, so the refusal is flax's */
	tfs_source_init_memory(&src, b.p, b.len - 1);
	ck_assert_int_eq(f->probe(&src), 15);
	/* not a map with a str key */
	tfs_source_init_memory(&src, "\x80", 1);
	ck_assert_int_eq(f->probe(&src), 0);
	tfs_source_init_memory(&src, "\x81\x01\x01", 3);
	ck_assert_int_eq(f->probe(&src), 0);
	tfs_source_init_memory(&src, "\xde\x00\x01\xa1w\x01", 6);
	ck_assert_int_eq(f->probe(&src), 15);
	free(b.p);
}
END_TEST

/*
 * {"c": {"__msgpack_chunked_array__": @flag, "shape": {"0": 4},
 *  "chunks": {"0": int8 [2], @key1: @dtype1 [2]}}}; *@second: the offset
 * of the second chunk's key
 */
static void chunked(struct tu_buf *b, uint8_t flag, const char *key1,
		    const char *dtype1, uint64_t *second)
{
	static const uint8_t d2[] = {2};

	memset(b, 0, sizeof(*b));
	byte(b, 0x81);
	str(b, "c");
	byte(b, 0x83);
	str(b, "__msgpack_chunked_array__");
	byte(b, flag);
	str(b, "shape");
	byte(b, 0x81);
	str(b, "0");
	byte(b, 4);
	str(b, "chunks");
	byte(b, 0x82);
	str(b, "0");
	ndarray(b, 1, d2, 1, "int8", 2, 1);
	*second = b->len;
	str(b, key1);
	ndarray(b, 1, d2, 1, dtype1, 2 * (strcmp(dtype1, "int8") ? 2 : 1), 2);
}

START_TEST(chunked_arrays)
{
	struct tfs_image *img;
	struct tu_buf b;
	uint64_t second;
	uint8_t *data;
	size_t len;

	chunked(&b, 0xc3, "1", "int8", &second);
	img = tu_load_ok(b.p, b.len);
	tu_expect_xattr(img, "c", "shape", "[4]");
	data = tu_read_node(img, tu_tensor(img, "c")->node, &len);
	ck_assert_uint_eq(len, 4);
	ck_assert_mem_eq(data, "\x01\x01\x02\x02", 4);
	free(data);
	tfs_image_close(img);
	free(b.p);
	/* the chunks' keys are "0".."n-1" in order */
	chunked(&b, 0xc3, "2", "int8", &second);
	tu_expect_reject(b.p, b.len, -EBADMSG, "key 1 is not \"1\"", second);
	free(b.p);
	/* one dtype */
	chunked(&b, 0xc3, "1", "int16", &second);
	tu_expect_reject(b.p, b.len, -EBADMSG, "not 1-D int8", second + 2);
	free(b.p);
	/* the marker must be true */
	chunked(&b, 0xc2, "1", "int8", &second);
	tu_expect_reject(b.p, b.len, -EBADMSG, "a chunked array is a map", 3);
	free(b.p);
}
END_TEST

static Suite *flax_suite(void)
{
	Suite *s = suite_create("flax");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, fixtures_valid);
	tcase_add_test(tc, project_valid);
	tcase_add_test(tc, project_reject);
	tcase_add_test(tc, fixtures_reject);
	tcase_add_test(tc, tree);
	tcase_add_test(tc, refusals);
	tcase_add_test(tc, probe);
	tcase_add_test(tc, chunked_arrays);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run(flax_suite());
}
