// SPDX-License-Identifier: MIT
/*
 * ONNX (src/formats/onnx.c): every valid file of the shared fixtures
 * (written by onnx 1.12, onnx's own backend test data, hand-encoded edge
 * cases) and of ours (tests/fixtures/onnx/generate.py: python3-onnx's
 * writer, the same layout) against its expected.json, tensor by tensor:
 * qualified name, path, dtype, shape, size, where the bytes lie and their
 * sha256, sparse groups, string tensors and the model's metadata; every reject
 * of reject/ refused with the field and the byte offset; and models encoded
 * here with a small protobuf writer for what the fixtures do not hold (renamed
 * duplicates, packed float_data served in place, external data beside a model
 * on disk: present, missing, a symbolic link).
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/builder.h"
#include "core/format.h"
#include "core/image.h"
#include "core/source.h"
#include "core/values.h"
#include "testutil.h"

/* ---- helpers ------------------------------------------------------------ */

static char *compact(const json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

	ck_assert(s != NULL);
	return s;
}

static void expect_json_eq(const char *what, const json_t *got,
			   const json_t *want)
{
	char *g = compact(got), *w = compact(want);

	ck_assert_msg(json_equal(got, want), "%s: %s, want %s", what, g, w);
	free(g);
	free(w);
}

/* one tensor file against its expected.json entry */
static void expect_tensor(struct tfs_image *img, const char *file,
			  const json_t *e)
{
	const char *name = json_string_value(json_object_get(e, "name"));
	const char *path = json_string_value(json_object_get(e, "path"));
	const json_t *st = json_object_get(e, "storage");
	const char *kind = json_string_value(json_object_get(st, "kind"));
	const struct tfs_tensor *x = tu_tensor(img, name);
	char *shape;
	char hex[65];
	uint8_t *b;
	size_t len;

	ck_assert_msg(x != NULL, "%s: no tensor '%s'", file, name);
	if (path)
		ck_assert_msg(strcmp(x->path, path) == 0, "%s: '%s' at %s",
			      file, name, x->path);
	ck_assert_str_eq(x->dtype,
			 json_string_value(json_object_get(e, "dtype")));
	shape = compact(json_object_get(e, "shape"));
	tu_expect_xattr(img, x->path, "shape", shape);
	free(shape);
	ck_assert_uint_eq(x->size,
			  json_integer_value(json_object_get(e, "nbytes")));
	if (strcmp(kind, "external") == 0) {
		char num[32];

		tu_expect_xattr(img, x->path, "onnx.storage", "external");
		tu_expect_xattr(img, x->path, "onnx.location",
				json_string_value(json_object_get(st, "file")));
		snprintf(num, sizeof(num), "%lld",
			 json_integer_value(json_object_get(st, "offset")));
		tu_expect_xattr(img, x->path, "onnx.offset", num);
		snprintf(num, sizeof(num), "%lld",
			 json_integer_value(json_object_get(st, "length")));
		tu_expect_xattr(img, x->path, "onnx.length", num);
	} else if (strcmp(kind, "raw_data") == 0) {
		tu_expect_xattr(img, x->path, "onnx.storage", "raw_data");
		ck_assert_msg(x->unreadable == NULL, "%s: '%s' unreadable",
			      file, name);
		/* zero-copy: the very bytes of the file */
		ck_assert_uint_eq(
			x->offset,
			json_integer_value(json_object_get(st, "offset")));
	} else if (strcmp(kind, "typed") == 0) {
		tu_expect_xattr(img, x->path, "onnx.storage", "typed");
	} else if (strcmp(kind, "attribute") == 0) {
		tu_expect_xattr(img, x->path, "onnx.storage", "attribute");
	} else {
		ck_assert_str_eq(kind, "empty");
		ck_assert_uint_eq(x->size, 0);
	}
	/* typed values converted, external data read beside the model */
	ck_assert_msg(x->unreadable == NULL, "%s: '%s' unreadable: %s", file,
		      name, x->unreadable);
	b = tu_read_node(img, x->node, &len);
	ck_assert_uint_eq(len, x->size);
	tu_sha256_hex(b, len, hex);
	ck_assert_msg(
		strcmp(hex, json_string_value(json_object_get(e, "sha256"))) ==
			0,
		"%s: '%s': sha256 %s", file, name, hex);
	free(b);
}

static void expect_sparse(struct tfs_image *img, const char *file,
			  const json_t *e)
{
	const char *path = json_string_value(json_object_get(e, "path"));
	const json_t *comps = json_object_get(e, "components");
	char *shape = compact(json_object_get(e, "dense_shape"));

	ck_assert_msg(tfs_tree_resolve(img->tree, path) != TFS_NO_NODE,
		      "%s: no sparse group %s", file, path);
	tu_expect_xattr(img, path, "format", "sparse_coo");
	tu_expect_xattr(img, path, "dtype",
			json_string_value(json_object_get(e, "dtype")));
	tu_expect_xattr(img, path, "shape", shape);
	free(shape);
	expect_tensor(img, file, json_object_get(comps, "values"));
	expect_tensor(img, file, json_object_get(comps, "indices"));
}

static void expect_model(const char *file, json_t *meta, const json_t *m)
{
	static const char *const same[] = {
		"ir_version",	"producer_name", "producer_version",
		"domain",	"model_version", "doc_string",
		"opset_import", "metadata_props", "functions",
		"training_info",
	};
	json_t *graph = json_object_get(meta, "graph");
	const json_t *in, *out;
	size_t i;
	char what[160];

	for (i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		snprintf(what, sizeof(what), "%s: %s", file, same[i]);
		expect_json_eq(what, json_object_get(meta, same[i]),
			       json_object_get(m, same[i]));
	}
	ck_assert_str_eq(json_string_value(json_object_get(graph, "name")),
			 json_string_value(json_object_get(m, "graph_name")));
	in = json_object_get(m, "inputs");
	out = json_object_get(m, "outputs");
	snprintf(what, sizeof(what), "%s: inputs", file);
	expect_json_eq(what, json_object_get(graph, "inputs"), in);
	snprintf(what, sizeof(what), "%s: outputs", file);
	expect_json_eq(what, json_object_get(graph, "outputs"), out);
}

/* ../shared's set (onnx/) or ours (tests/fixtures/onnx) */
static const char *dir_of(bool shared)
{
	static char dir[2][4096];

	snprintf(dir[shared], sizeof(dir[shared]), "%s",
		 shared ? tu_fixture("onnx") : tu_testdata("onnx"));
	return dir[shared];
}

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

static void check_valid(const char *dir, const char *file, const json_t *v)
{
	char rel[4096];
	struct tfs_image *img;
	struct tfs_diag d;
	json_t *meta, *strings, *e, *s;
	uint32_t files = 0;
	size_t i;
	int ret;

	snprintf(rel, sizeof(rel), "%s/%s", dir, file);
	ret = tu_load_file(rel, &img, &d);
	ck_assert_msg(ret == 0, "%s: %s", file, d.msg);
	ck_assert_str_eq(img->tree->format, "onnx");
	meta = tu_meta_json(img, "metadata.json");
	strings = json_object_get(meta, "string_tensors");
	if (!json_is_true(json_object_get(v, "bare_tensor")))
		expect_model(file, meta, json_object_get(v, "model"));
	json_array_foreach(json_object_get(v, "tensors"), i, e)
	{
		const char *name = json_string_value(json_object_get(e, "name"));
		const char *dt = json_string_value(json_object_get(e, "dtype"));

		if (strcmp(dt, "string") == 0) {
			/* not a file: metadata.json string_tensors */
			s = json_object_get(strings, name);
			ck_assert_msg(s != NULL, "%s: no strings '%s'", file,
				      name);
			expect_json_eq(name, json_object_get(s, "values"),
				       json_object_get(e, "values"));
			expect_json_eq(name, json_object_get(s, "shape"),
				       json_object_get(e, "shape"));
			ck_assert(tu_tensor(img, name) == NULL);
		} else if (json_object_get(e, "kind")) {
			expect_sparse(img, file, e);
			files += 2;
		} else {
			expect_tensor(img, file, e);
			files++;
		}
	}
	ck_assert_msg(img->tree->ntensors == files, "%s: %u files, want %u",
		      file, img->tree->ntensors, files);
	json_decref(meta);
	tfs_image_close(img);
}

/* every valid file of @dir's expected.json; returns how many */
static unsigned every_valid_in(const char *dir)
{
	json_t *j = expected(dir), *v;
	const char *file;
	unsigned n = 0;

	json_object_foreach(json_object_get(j, "valid"), file, v)
	{
		check_valid(dir, file, v);
		n++;
	}
	json_decref(j);
	return n;
}

START_TEST(every_valid_fixture)
{
	TU_NEED_SHARED("onnx/expected.json");
	ck_assert_uint_eq(every_valid_in(dir_of(true)), 25);
}
END_TEST

START_TEST(every_valid_file_of_ours)
{
	ck_assert_uint_eq(every_valid_in(dir_of(false)), 6);
}
END_TEST

/* the external tensors: served from the data file, at their offsets */
/*
 * @dir/model.onnx keeps its @count initializers in @dir/model.onnx_data;
 * @name lies there at @at, @n bytes
 */
static void external_is_located(const char *dir, const char *name, uint64_t at,
				uint64_t n, long long count)
{
	char path[4096];
	struct tfs_image *img;
	struct tfs_diag d;
	const struct tfs_tensor *x;
	uint8_t *data, *b;
	size_t dlen, len;
	json_t *meta;

	snprintf(path, sizeof(path), "%s/model.onnx_data", dir);
	data = tu_read_file(path, &dlen);
	ck_assert_uint_le(at + n, dlen);
	snprintf(path, sizeof(path), "%s/model.onnx", dir);
	ck_assert_int_eq(tu_load_file(path, &img, &d), 0);
	x = tu_tensor(img, name);
	ck_assert(x != NULL && x->unreadable == NULL);
	ck_assert_uint_ne(x->source, 0); /* the companion, not the model */
	ck_assert_uint_eq(x->offset, at);
	b = tu_read_node(img, x->node, &len);
	ck_assert_uint_eq(len, n);
	ck_assert(memcmp(b, data + at, n) == 0);
	meta = tu_meta_json(img, "metadata.json");
	ck_assert_str_eq(json_string_value(json_array_get(
				 json_object_get(meta, "external_files"), 0)),
			 "model.onnx_data");
	ck_assert_int_eq(
		json_integer_value(json_object_get(meta, "external_tensors")),
		count);
	json_decref(meta);
	free(b);
	free(data);
	tfs_image_close(img);
}

START_TEST(shared_external_is_located)
{
	char dir[4096];

	TU_NEED_SHARED("onnx/external_one_file/model.onnx");
	snprintf(dir, sizeof(dir), "%s", tu_fixture("onnx/external_one_file"));
	external_is_located(dir, "pooler.dense.weight", 1472, 128, 9);
}
END_TEST

/* ours: where onnx.save put head.weight, as its expected.json says */
START_TEST(our_external_is_located)
{
	json_t *j = expected(dir_of(false)), *t, *st = NULL;
	char dir[4096];
	size_t i, n = 0;

	json_array_foreach(
		json_object_get(json_object_get(json_object_get(j, "valid"),
						"models/external/model.onnx"),
				"tensors"),
		i, t)
	{
		n++;
		if (strcmp(json_string_value(json_object_get(t, "name")),
			   "head.weight") == 0)
			st = json_object_get(t, "storage");
	}
	ck_assert_ptr_nonnull(st);
	ck_assert_str_eq(json_string_value(json_object_get(st, "file")),
			 "model.onnx_data");
	snprintf(dir, sizeof(dir), "%s", tu_testdata("onnx/models/external"));
	external_is_located(
		dir, "head.weight",
		(uint64_t)json_integer_value(json_object_get(st, "offset")),
		(uint64_t)json_integer_value(json_object_get(st, "length")),
		(long long)n);
	json_decref(j);
}
END_TEST

/* ---- rejects ------------------------------------------------------------- */

static const struct {
	const char *file;
	int err;
	const char *word;
	uint64_t at;
} rejects[] = {
	{"truncated.onnx", -EBADMSG, "field 7: length 4449", 95},
	{"raw_data_short.onnx", -EBADMSG, "raw_data: 20 bytes", 26},
	{"raw_data_long.onnx", -EBADMSG, "raw_data: 12 bytes", 24},
	{"typed_count_mismatch.onnx", -EBADMSG, "float_data: 5 values", 24},
	{"ext_traversal/model.onnx", -EBADMSG, "'..' component", 22},
	{"ext_absolute.onnx", -EBADMSG, "absolute path", 22},
	{"ext_past_end/model.onnx", -EBADMSG, "past the end of 'weights.bin'",
	 47},
	{"ext_no_location.onnx", -EBADMSG, "no 'location'", 22},
	{"len_past_end.onnx", -EBADMSG, "length 2147483647", 3},
	{"varint_overlong.onnx", -EBADMSG, "longer than 10 bytes", 1},
	{"bad_wire_type.onnx", -EBADMSG, "wire type 6", 4},
	{"nesting_bomb.onnx", -E2BIG, "nested more than 32", 1230},
	{"huge_dims.onnx", -EBADMSG, "overflows 64 bits", 15},
	{"negative_dim.onnx", -EBADMSG, "dims[0]: -1 is negative", 15},
	{"duplicate_initializer.onnx", -EBADMSG, "given twice in one graph",
	 30},
	{"unknown_dtype.onnx", -EBADMSG, "data_type: unknown value 99", 17},
	{"string_in_raw.onnx", -EBADMSG, "STRING tensor keeps", 24},
};

/*
 * Every reject of @dir's expected.json refused as the table says; in ours
 * (@shared false) the words are expected.json's own "word" and the offset
 * only has to be inside the file: the table's offsets are the shared
 * files' own.
 */
static void every_reject_in(const char *dir, bool shared)
{
	json_t *j = expected(dir), *v;
	struct tfs_image *img;
	struct tfs_diag d;
	const char *file, *word;
	char rel[4096], line[512];
	size_t i;
	unsigned n = 0;
	struct stat st;

	json_object_foreach(json_object_get(j, "reject"), file, v)
	{
		ck_assert(strncmp(file, "reject/", 7) == 0);
		n++;
		if (strcmp(file, "reject/not_onnx.onnx") == 0)
			continue; /* not_onnx below */
		for (i = 0; i < sizeof(rejects) / sizeof(rejects[0]); i++)
			if (strcmp(rejects[i].file, file + 7) == 0)
				break;
		ck_assert_msg(i < sizeof(rejects) / sizeof(rejects[0]),
			      "no row for %s", file);
		snprintf(rel, sizeof(rel), "%s/%s", dir, file);
		ck_assert_int_eq(tu_load_file(rel, &img, &d), rejects[i].err);
		tfs_diag_format(&d, line, sizeof(line));
		word = shared ? rejects[i].word
			      : json_string_value(json_object_get(v, "word"));
		ck_assert_msg(word != NULL, "%s: no word", file);
		ck_assert_msg(strstr(d.msg, word) != NULL, "%s: %s", file,
			      line);
		ck_assert_int_eq(stat(rel, &st), 0);
		ck_assert_msg(
			d.has_offset &&
				(shared ? d.offset == rejects[i].at
					: d.offset < (uint64_t)st.st_size),
			"%s: %s", file, line);
		ck_assert_str_eq(d.format, "onnx");
		ck_assert(strchr(line, '\n') == NULL);
	}
	ck_assert_uint_eq(n, 18);
	json_decref(j);
}

START_TEST(every_reject)
{
	TU_NEED_SHARED("onnx/expected.json");
	every_reject_in(dir_of(true), true);
}
END_TEST

START_TEST(every_reject_of_ours)
{
	every_reject_in(dir_of(false), false);
}
END_TEST

/* a GGUF header: the probe does not claim it; forced, the reader refuses */
static void not_onnx(const char *path)
{
	struct tfs_source src;
	struct tfs_image *img;
	struct tfs_diag d;

	ck_assert_int_eq(tfs_source_open(&src, path, &d), 0);
	ck_assert_int_eq(tfs_format_by_name("onnx")->probe(&src), 0);
	ck_assert_int_eq(tfs_image_load_format(&img, &src,
					       tfs_format_by_name("onnx"), NULL,
					       &d),
			 -EBADMSG);
	ck_assert(d.has_offset && d.offset == 0);
}

START_TEST(shared_not_onnx)
{
	TU_NEED_SHARED("onnx/reject/not_onnx.onnx");
	not_onnx(tu_fixture("onnx/reject/not_onnx.onnx"));
}
END_TEST

START_TEST(our_not_onnx)
{
	not_onnx(tu_testdata("onnx/reject/not_onnx.onnx"));
}
END_TEST

/* ---- models encoded here --------------------------------------------------- */

static void put_varint(struct tu_buf *b, uint64_t v)
{
	uint8_t c;

	do {
		c = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			c |= 0x80;
		tu_buf_put(b, &c, 1);
	} while (v);
}

static void put_key(struct tu_buf *b, uint32_t field, unsigned wire)
{
	put_varint(b, (uint64_t)field << 3 | wire);
}

static void put_int(struct tu_buf *b, uint32_t field, uint64_t v)
{
	put_key(b, field, 0);
	put_varint(b, v);
}

static void put_bytes(struct tu_buf *b, uint32_t field, const void *p,
		      size_t n)
{
	put_key(b, field, 2);
	put_varint(b, n);
	tu_buf_put(b, p, n);
}

static void put_str(struct tu_buf *b, uint32_t field, const char *s)
{
	put_bytes(b, field, s, strlen(s));
}

/* @sub as a LEN field, freed */
static void put_msg(struct tu_buf *b, uint32_t field, struct tu_buf *sub)
{
	put_bytes(b, field, sub->p, sub->len);
	free(sub->p);
	memset(sub, 0, sizeof(*sub));
}

/* a float32 [n] TensorProto named @name with raw_data @v */
static void raw_tensor(struct tu_buf *t, const char *name, const float *v,
		       size_t n)
{
	put_int(t, 1, n);
	put_int(t, 2, 1);
	put_str(t, 8, name);
	put_bytes(t, 9, v, n * 4);
}

/* ModelProto { ir_version 8, graph @g } */
static void model(struct tu_buf *m, struct tu_buf *g)
{
	put_int(m, 1, 8);
	put_msg(m, 7, g);
}

/* a Constant node whose value is @t, output @out */
static void constant(struct tu_buf *g, const char *out, struct tu_buf *t)
{
	struct tu_buf n = {0}, a = {0};

	put_str(&n, 2, out);
	put_str(&n, 4, "Constant");
	put_str(&a, 1, "value");
	put_int(&a, 20, 4);
	put_msg(&a, 5, t);
	put_msg(&n, 5, &a);
	put_msg(g, 1, &n);
}

/* a stored name that is another tensor's qualified name: renamed ~1 */
START_TEST(qualified_name_twice)
{
	static const float v[2] = {1, 2}, w[2] = {3, 4};
	struct tu_buf m = {0}, g = {0}, t = {0};
	struct tfs_image *img;
	const struct tfs_tensor *x;

	raw_tensor(&t, "", w, 2);
	constant(&g, "x", &t);
	raw_tensor(&t, "@constants/x", v, 2);
	put_msg(&g, 5, &t);
	model(&m, &g);
	img = tu_load_ok(m.p, m.len);
	x = tu_tensor(img, "@constants/x");
	ck_assert(x != NULL);
	ck_assert_uint_eq(x->size, 8);
	ck_assert(memcmp(img->srcs[0].data + x->offset, w, 8) == 0);
	x = tu_tensor(img, "@constants/x~1");
	ck_assert(x != NULL);
	ck_assert(memcmp(img->srcs[0].data + x->offset, v, 8) == 0);
	ck_assert_str_eq(x->path, "@constants/x~1");
	ck_assert_uint_eq(img->tree->nwarnings, 1);
	ck_assert(strstr(img->tree->warnings[0].msg, "given twice"));
	tfs_image_close(img);
	free(m.p);
}
END_TEST

/* names holding NUL bytes stay distinct; a name given thrice: ~1, ~2 */
START_TEST(names_with_nul_and_repeats)
{
	static const float v[2] = {1, 2};
	struct tu_buf m = {0}, g = {0}, t = {0};
	struct tfs_image *img;
	int i;

	put_int(&t, 1, 2);
	put_int(&t, 2, 1);
	put_bytes(&t, 8, "a\0b", 3);
	put_bytes(&t, 9, v, 8);
	put_msg(&g, 5, &t);
	put_int(&t, 1, 2);
	put_int(&t, 2, 1);
	put_bytes(&t, 8, "a\0c", 3);
	put_bytes(&t, 9, v, 8);
	put_msg(&g, 5, &t);
	for (i = 0; i < 3; i++) {
		raw_tensor(&t, "", v, 2);
		constant(&g, "k", &t);
	}
	model(&m, &g);
	img = tu_load_ok(m.p, m.len);
	ck_assert_uint_eq(img->tree->ntensors, 5);
	ck_assert(tu_tensor(img, "@constants/k") != NULL);
	ck_assert(tu_tensor(img, "@constants/k~1") != NULL);
	ck_assert(tu_tensor(img, "@constants/k~2") != NULL);
	ck_assert_uint_eq(img->tree->nwarnings, 2);
	tfs_image_close(img);
	free(m.p);
}
END_TEST

/* a packed float_data is the tensor's bytes: served where it lies */
START_TEST(packed_float_data_in_place)
{
	static const float v[3] = {0.5f, -1, 8};
	struct tu_buf m = {0}, g = {0}, t = {0};
	struct tfs_image *img;
	const struct tfs_tensor *x;
	uint8_t *b;
	size_t len;

	put_int(&t, 1, 3);
	put_int(&t, 2, 1);
	put_bytes(&t, 4, v, sizeof(v));
	put_str(&t, 8, "p");
	put_msg(&g, 5, &t);
	model(&m, &g);
	img = tu_load_ok(m.p, m.len);
	x = tu_tensor(img, "p");
	ck_assert(x != NULL && x->unreadable == NULL);
	tu_expect_xattr(img, "p", "onnx.storage", "typed");
	b = tu_read_node(img, x->node, &len);
	ck_assert_uint_eq(len, 12);
	ck_assert(memcmp(b, v, 12) == 0);
	ck_assert(memcmp(m.p + x->offset, v, 12) == 0);
	free(b);
	tfs_image_close(img);
	free(m.p);
}
END_TEST

/* INT4 (data_type 22): two per byte, the first in the low nibble */
START_TEST(int4_values)
{
	static const uint8_t b[2] = {0x21, 0xf8};
	static const double want[4] = {1, 2, -8, -1};
	struct tu_buf m = {0}, g = {0}, t = {0};
	struct tfs_image *img;
	const struct tfs_tensor *x;
	double v[4];

	put_int(&t, 1, 4);
	put_int(&t, 2, 22);
	put_str(&t, 8, "q");
	put_bytes(&t, 9, b, 2);
	put_msg(&g, 5, &t);
	model(&m, &g);
	img = tu_load_ok(m.p, m.len);
	x = tu_tensor(img, "q");
	ck_assert(x != NULL);
	ck_assert_str_eq(x->dtype, "int4");
	ck_assert_uint_eq(x->size, 2);
	ck_assert_int_eq(tfs_values_read(img, (uint32_t)(x - img->tree->tensors),
					 0, 0, 4, v),
			 0);
	ck_assert(memcmp(v, want, sizeof(v)) == 0);
	tfs_image_close(img);
	free(m.p);
	memset(&m, 0, sizeof(m));
	/* an odd count leaves half the last byte: ONNX pads it */
	free(t.p);
	free(g.p);
	memset(&t, 0, sizeof(t));
	memset(&g, 0, sizeof(g));
	put_int(&t, 1, 3);
	put_int(&t, 2, 22);
	put_str(&t, 8, "q");
	put_bytes(&t, 9, b, 2);
	put_msg(&g, 5, &t);
	model(&m, &g);
	img = tu_load_ok(m.p, m.len);
	x = tu_tensor(img, "q");
	ck_assert_uint_eq(x->size, 2);
	ck_assert_int_eq(tfs_values_read(img, (uint32_t)(x - img->tree->tensors),
					 0, 0, 3, v),
			 0);
	ck_assert(memcmp(v, want, 3 * sizeof(v[0])) == 0);
	tfs_image_close(img);
	free(m.p);
	free(t.p);
	free(g.p);
}
END_TEST

/* one refusal of an encoded model: @word in the message, at @at */
static void expect_refused(struct tu_buf *m, int err, const char *word,
			   uint64_t at)
{
	tu_expect_reject(m->p, m->len, err, word, at);
	free(m->p);
	memset(m, 0, sizeof(*m));
}

START_TEST(encoded_rejects)
{
	static const float v[2] = {1, 2};
	struct tu_buf m = {0}, g = {0}, t = {0};

	/* uint32 in uint64_data must fit */
	put_int(&t, 1, 1);
	put_int(&t, 2, 12);
	put_str(&t, 8, "u");
	put_int(&t, 11, 1ull << 32);
	put_msg(&g, 5, &t);
	model(&m, &g);
	expect_refused(&m, -EBADMSG, "does not fit uint32", 13);
	/* the graph given twice */
	raw_tensor(&t, "a", v, 2);
	put_msg(&g, 5, &t);
	model(&m, &g);
	put_bytes(&m, 7, "", 0);
	expect_refused(&m, -EBADMSG, "ModelProto.graph: given twice", 23);
	/* a typed field of the wrong type */
	put_int(&t, 1, 1);
	put_int(&t, 2, 1);
	put_str(&t, 8, "w");
	put_int(&t, 7, 5);
	put_msg(&g, 5, &t);
	model(&m, &g);
	expect_refused(&m, -EBADMSG, "FLOAT tensors keep typed values in "
				     "float_data", 13);
	/* raw_data and float_data both */
	raw_tensor(&t, "b", v, 2);
	put_bytes(&t, 4, v, 8);
	put_msg(&g, 5, &t);
	model(&m, &g);
	expect_refused(&m, -EBADMSG, "more than one data source", 15);
	/* a segment */
	put_int(&t, 2, 1);
	put_bytes(&t, 3, "\x08\x00", 2);
	put_msg(&g, 5, &t);
	model(&m, &g);
	expect_refused(&m, -ENOTSUP, "segmented", 8);
	/* an initializer without a name */
	raw_tensor(&t, "", v, 2);
	put_msg(&g, 5, &t);
	model(&m, &g);
	expect_refused(&m, -EBADMSG, "without a name", 6);
}
END_TEST

/*
 * the probe: what a real ModelProto has (a graph, or functions; with
 * ir_version 90, without 60); never safetensors, never Core ML
 * (specs/coreml.md 1)
 */
START_TEST(probe)
{
	static const uint8_t st[] = {0x10, 0, 0, 0, 0, 0, 0, 0, '{', '}'};
	static const uint8_t model8[] = {0x08, 0x08, 0x3a, 0x00};
	static const uint8_t nographs[] = {0x08, 0x08, 0x12, 0x01, 't'};
	static const uint8_t functions[] = {0x08, 0x08, 0xca, 0x01, 0x00};
	static const uint8_t noir[] = {0x12, 0x01, 't', 0x3a, 0x00};
	static const uint8_t ir0[] = {0x08, 0x00, 0x3a, 0x00};
	/* specificationVersion 4, description {}, neuralNetwork {} */
	static const uint8_t coreml[] = {0x08, 0x04, 0x12, 0x00,
					 0xa2, 0x1f, 0x00};
	/* a graph key too: field 502 (mlProgram) still says Core ML */
	static const uint8_t coreml_graph[] = {0x08, 0x08, 0x3a, 0x00,
					       0xb2, 0x1f, 0x00};
	const struct tfs_format *f = tfs_format_by_name("onnx");
	struct tfs_source s;

	tfs_source_init_memory(&s, st, sizeof(st));
	ck_assert_int_eq(f->probe(&s), 0);
	tfs_source_init_memory(&s, model8, sizeof(model8));
	ck_assert_int_eq(f->probe(&s), 90);
	tfs_source_init_memory(&s, nographs, sizeof(nographs));
	ck_assert_int_eq(f->probe(&s), 0);
	tfs_source_init_memory(&s, functions, sizeof(functions));
	ck_assert_int_eq(f->probe(&s), 40);
	tfs_source_init_memory(&s, noir, sizeof(noir));
	ck_assert_int_eq(f->probe(&s), 60);
	tfs_source_init_memory(&s, ir0, sizeof(ir0));
	ck_assert_int_eq(f->probe(&s), 0);
	tfs_source_init_memory(&s, coreml, sizeof(coreml));
	ck_assert_int_eq(f->probe(&s), 0);
	tfs_source_init_memory(&s, coreml_graph, sizeof(coreml_graph));
	ck_assert_int_eq(f->probe(&s), 0);
}
END_TEST

/* a real Core ML model (onnxmltools' baseline) is not taken for ONNX */
START_TEST(real_coreml_not_onnx)
{
	static const char rel[] =
		"../real/coreml/keras2coreml_Dense_ImageNet_small.mlmodel";
	const struct tfs_format *f = tfs_format_by_name("onnx");
	struct tfs_source s;
	uint8_t *b;
	size_t len;

	TU_NEED_SHARED(rel);
	b = tu_read_file(tu_fixture(rel), &len);
	tfs_source_init_memory(&s, b, len);
	ck_assert_int_eq(f->probe(&s), 0);
	free(b);
}
END_TEST

/* ---- external data beside a model on disk ---------------------------------- */

static char tmpdir[64];

static void write_file(const char *name, const void *p, size_t n)
{
	char path[160];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "wb");
	ck_assert(f != NULL);
	ck_assert_uint_eq(fwrite(p, 1, n, f), n);
	fclose(f);
}

/* a model with float32 [2] "e" in @loc at offset 4 */
static void external_model(const char *loc)
{
	struct tu_buf m = {0}, g = {0}, t = {0}, e = {0};

	put_int(&t, 1, 2);
	put_int(&t, 2, 1);
	put_str(&t, 8, "e");
	put_str(&e, 1, "location");
	put_str(&e, 2, loc);
	put_msg(&t, 13, &e);
	put_str(&e, 1, "offset");
	put_str(&e, 2, "4");
	put_msg(&t, 13, &e);
	put_int(&t, 14, 1);
	put_msg(&g, 5, &t);
	model(&m, &g);
	write_file("model.onnx", m.p, m.len);
	free(m.p);
}

START_TEST(external_on_disk)
{
	static const uint8_t data[12] = {0, 0, 0, 0, 0, 0, 0x80, 0x3f,
					 0, 0, 0, 0x40};
	char path[160], link[160];
	struct tfs_image *img;
	struct tfs_diag d;
	const struct tfs_tensor *x;
	uint8_t *b;
	size_t len;

	strcpy(tmpdir, "/tmp/tfs-onnx-XXXXXX");
	ck_assert(mkdtemp(tmpdir) != NULL);
	snprintf(path, sizeof(path), "%s/model.onnx", tmpdir);
	/* present: served from offset 4 of the data file */
	write_file("w.bin", data, sizeof(data));
	external_model("./w.bin");
	ck_assert_int_eq(tu_load_file(path, &img, &d), 0);
	x = tu_tensor(img, "e");
	ck_assert(x != NULL && x->unreadable == NULL);
	tu_expect_xattr(img, "e", "onnx.location", "w.bin");
	tu_expect_xattr(img, "e", "onnx.offset", "4");
	tu_expect_xattr(img, "e", "onnx.length", "8");
	b = tu_read_node(img, x->node, &len);
	ck_assert_uint_eq(len, 8);
	ck_assert(memcmp(b, data + 4, 8) == 0);
	free(b);
	tfs_image_close(img);
	/* missing: the model mounts, that tensor unreadable, a fault */
	external_model("gone.bin");
	ck_assert_int_eq(tu_load_file(path, &img, &d), 0);
	x = tu_tensor(img, "e");
	ck_assert(x != NULL && x->unreadable && x->unreadable_is_fault);
	ck_assert(strstr(x->unreadable, "gone.bin") != NULL);
	tfs_image_close(img);
	/* a symbolic link leading out of the directory: refused */
	snprintf(link, sizeof(link), "%s/l.bin", tmpdir);
	ck_assert_int_eq(symlink("/etc/passwd", link), 0);
	external_model("l.bin");
	ck_assert_int_eq(tu_load_file(path, &img, &d), -EPERM);
	ck_assert(strstr(d.msg, "external_data") != NULL);
	ck_assert(strstr(d.msg, "outside") != NULL);
	ck_assert(d.has_offset);
	/* a length to the end that is not the tensor's */
	write_file("w.bin", data, 11);
	external_model("w.bin");
	ck_assert_int_eq(tu_load_file(path, &img, &d), -EBADMSG);
	ck_assert(strstr(d.msg, "7 bytes to the end") != NULL);
	unlink(link);
	snprintf(link, sizeof(link), "%s/w.bin", tmpdir);
	unlink(link);
	unlink(path);
	ck_assert_int_eq(rmdir(tmpdir), 0);
}
END_TEST

/* from memory (no file name): external data cannot be found */
START_TEST(external_from_memory)
{
	struct tu_buf m = {0}, g = {0}, t = {0}, e = {0};
	struct tfs_image *img;
	const struct tfs_tensor *x;

	put_int(&t, 1, 1);
	put_int(&t, 2, 1);
	put_str(&t, 8, "e");
	put_str(&e, 1, "location");
	put_str(&e, 2, "d.bin");
	put_msg(&t, 13, &e);
	put_int(&t, 14, 1);
	put_msg(&g, 5, &t);
	model(&m, &g);
	img = tu_load_ok(m.p, m.len);
	x = tu_tensor(img, "e");
	ck_assert(x != NULL && x->unreadable != NULL);
	tfs_image_close(img);
	free(m.p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("onnx");
	TCase *tc = tcase_create("encoded");
	TCase *fx = tcase_create("fixtures");

	tcase_add_test(tc, qualified_name_twice);
	tcase_add_test(tc, packed_float_data_in_place);
	tcase_add_test(tc, names_with_nul_and_repeats);
	tcase_add_test(tc, encoded_rejects);
	tcase_add_test(tc, probe);
	tcase_add_test(tc, real_coreml_not_onnx);
	tcase_add_test(tc, int4_values);
	tcase_add_test(tc, external_on_disk);
	tcase_add_test(tc, external_from_memory);
	suite_add_tcase(s, tc);
	tcase_add_test(fx, every_valid_file_of_ours);
	tcase_add_test(fx, every_reject_of_ours);
	tcase_add_test(fx, our_not_onnx);
	tcase_add_test(fx, our_external_is_located);
	tcase_add_test(fx, every_valid_fixture);
	tcase_add_test(fx, shared_external_is_located);
	tcase_add_test(fx, every_reject);
	tcase_add_test(fx, shared_not_onnx);
	suite_add_tcase(s, fx);
	return tu_run(s);
}
