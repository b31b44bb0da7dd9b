// SPDX-License-Identifier: MIT
/*
 * primitiv reader: the reference-written fixtures (expected values from
 * shared/specs/primitiv.md section 9), files generated here with a small
 * MessagePack writer, and broken files.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/builder.h"
#include "core/format.h"
#include "core/source.h"
#include "core/tree.h"
#include "testutil.h"

extern const struct tfs_format tfs_format_primitiv;

#define SHA_2X2                                                                \
	"ad73b9acd6e4a74b2f5bb5386658ce3bb146cd040a1867646ab3b973fb6632b1"
#define SHA_2X2_A                                                              \
	"54bfe97475cf28afafa96643959c1db93e29b5436addb31ef8612549ce20da9c"
#define SHA_3X1                                                                \
	"265764890e0ad5eb6d0012343753eaaa2cc1597623a23c6ef4ef5a7704e93b16"
#define SHA_SCALAR                                                             \
	"d1ee66cfef3186b736ab765972a0c0b5c59943027a64a352b9041bf7e3483182"
#define SHA_1TO6                                                               \
	"24ae2dfe8df57c1b80e54cef3d90ac3b417fd98973345a5f616bbc9a75dcc202"
#define SHA_ZEROS6                                                             \
	"9d908ecfb6b256def8b49a7c504e6c889c4b0e41fe6ce3e01863dd7b61a20aa0"
#define SHA_B "acf6e6e61db4fe772f85ecb631cdd9227cc7179f783b8e5ec93fbd2dbe0d23b9"
#define SHA_SUBX                                                               \
	"5eaa5c1a4fa99cf34af94ccef42ea122dbc921d2498f68c20bf9b4d5150f5083"

/* ---- a small MessagePack writer --------------------------------------- */

enum mp_kind { K_STR, K_BIN, K_ARRAY, K_MAP };

static void mp_byte(struct tu_buf *m, uint8_t v)
{
	tu_buf_put(m, &v, 1);
}

static void mp_be(struct tu_buf *m, uint64_t v, unsigned n)
{
	while (n--)
		mp_byte(m, (uint8_t)(v >> (8 * n)));
}

static uint32_t f32_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

static void mp_u32(struct tu_buf *m, uint32_t v)
{
	mp_byte(m, 0xce);
	mp_be(m, v, 4);
}

static void mp_f32(struct tu_buf *m, float v)
{
	mp_byte(m, 0xca);
	mp_be(m, f32_bits(v), 4);
}

/*
 * The header of a str/bin/array/map of @n: @type 0 picks the shortest
 * form, otherwise that type byte (a fix form's base, or an 8/16/32 form).
 */
static void mp_hdr(struct tu_buf *m, enum mp_kind k, uint64_t n, uint8_t type)
{
	static const uint8_t fix[] = {0xa0, 0, 0x90, 0x80};
	static const uint8_t fixn[] = {32, 0, 16, 16};
	static const uint8_t t8[] = {0xd9, 0xc4, 0, 0};
	static const uint8_t t16[] = {0xda, 0xc5, 0xdc, 0xde};
	static const uint8_t t32[] = {0xdb, 0xc6, 0xdd, 0xdf};

	if (!type)
		type = n < fixn[k]	  ? fix[k]
		       : t8[k] && n < 256 ? t8[k]
		       : n < 65536	  ? t16[k]
					  : t32[k];
	if (type == fix[k] && fixn[k]) {
		mp_byte(m, (uint8_t)(fix[k] | n));
		return;
	}
	mp_byte(m, type);
	mp_be(m, n, type == t8[k] ? 1 : type == t16[k] ? 2 : 4);
}

static void mp_strn(struct tu_buf *m, const char *s, size_t n, uint8_t type)
{
	mp_hdr(m, K_STR, n, type);
	tu_buf_put(m, s, n);
}

static void mp_str(struct tu_buf *m, const char *s)
{
	mp_strn(m, s, strlen(s), 0);
}

static void mp_file_header(struct tu_buf *m, uint32_t data_type)
{
	mp_u32(m, 0);
	mp_u32(m, 1);
	mp_u32(m, data_type);
}

/* float32 little-endian, as the bin payload holds them */
static void le_floats(uint8_t *out, const float *v, size_t n)
{
	size_t i;
	int k;

	for (i = 0; i < n; i++)
		for (k = 0; k < 4; k++)
			out[4 * i + k] = (uint8_t)(f32_bits(v[i]) >> (8 * k));
}

/* a Tensor with the given forms for dims and bin (0: shortest) */
static void mp_tensor_forms(struct tu_buf *m, const uint32_t *dims,
			    size_t ndims, uint32_t batch, const float *v,
			    uint8_t dims_type, uint8_t bin_type)
{
	size_t i, count = batch;
	uint8_t *data;

	mp_hdr(m, K_ARRAY, ndims, dims_type);
	for (i = 0; i < ndims; i++) {
		mp_u32(m, dims[i]);
		count *= dims[i];
	}
	mp_u32(m, batch);
	mp_hdr(m, K_BIN, count * 4, bin_type);
	data = malloc(count * 4 + 1);
	le_floats(data, v, count);
	tu_buf_put(m, data, count * 4);
	free(data);
}

static void mp_tensor(struct tu_buf *m, const uint32_t *dims, size_t ndims,
		      const float *v)
{
	mp_tensor_forms(m, dims, ndims, 1, v, 0, 0);
}

/* ---- loading and checking --------------------------------------------- */

static struct tfs_image *load_ok(const struct tu_buf *m)
{
	struct tfs_image *img = NULL;
	struct tfs_diag d;
	int ret = tu_load_mem(m->p, m->len, &img, &d);

	ck_assert_msg(ret == 0, "load failed (%d): %s at %llu", ret, d.msg,
		      (unsigned long long)d.offset);
	ck_assert_str_eq(img->tree->format, "primitiv");
	return img;
}

/* the reader alone, without detection: also for files no probe claims */
static int direct_load(const uint8_t *b, size_t len, struct tfs_diag *d)
{
	struct tfs_builder *bld;
	struct tfs_source src;
	int ret;

	tfs_diag_clear(d);
	tfs_source_init_memory(&src, b, len);
	ck_assert_int_eq(tfs_builder_new(&bld, &src, NULL), 0);
	ret = tfs_format_primitiv.load(&src, bld, d);
	tfs_builder_free(bld);
	tfs_source_close(&src);
	return ret;
}

static void expect_reject(const struct tu_buf *m, int err, uint64_t offset,
			  const char *word)
{
	struct tfs_image *img = NULL;
	struct tfs_diag d;

	ck_assert_int_eq(tu_load_mem(m->p, m->len, &img, &d), err);
	ck_assert_ptr_null(img);
	ck_assert_str_eq(d.format, "primitiv");
	ck_assert(d.has_offset);
	ck_assert_msg(d.offset == offset, "offset %llu, expected %llu (%s)",
		      (unsigned long long)d.offset, (unsigned long long)offset,
		      d.msg);
	ck_assert_msg(strstr(d.msg, word) != NULL, "'%s' not in '%s'", word,
		      d.msg);
}

/* the file at @path: float32 of @shape, order F, holding @v */
static void expect_tensor(struct tfs_image *img, const char *path,
			  const char *shape, const float *v, size_t n)
{
	uint32_t node = tfs_tree_resolve(img->tree, path);
	uint8_t *want = malloc(n * 4 + 1), *got;
	size_t len;

	ck_assert_msg(node != TFS_NO_NODE, "no %s", path);
	ck_assert_int_eq(img->tree->nodes[node].kind, TFS_NODE_TENSOR);
	ck_assert_str_eq(tu_xattr(img, path, "dtype"), "float32");
	ck_assert_str_eq(tu_xattr(img, path, "shape"), shape);
	ck_assert_str_eq(tu_xattr(img, path, "order"), "F");
	got = tu_read_node(img, node, &len);
	ck_assert_uint_eq(len, n * 4);
	le_floats(want, v, n);
	ck_assert_mem_eq(got, want, n * 4);
	free(got);
	free(want);
}

static void expect_sha(struct tfs_image *img, const char *path,
		       const char *shape, size_t bytes, const char *sha)
{
	uint32_t node = tfs_tree_resolve(img->tree, path);
	char hex[65];
	uint8_t *got;
	size_t len;

	ck_assert_msg(node != TFS_NO_NODE, "no %s", path);
	ck_assert_str_eq(tu_xattr(img, path, "dtype"), "float32");
	ck_assert_str_eq(tu_xattr(img, path, "shape"), shape);
	ck_assert_str_eq(tu_xattr(img, path, "order"), "F");
	got = tu_read_node(img, node, &len);
	ck_assert_uint_eq(len, bytes);
	tu_sha256_hex(got, len, hex);
	ck_assert_str_eq(hex, sha);
	free(got);
}

static json_t *json_file(struct tfs_image *img, const char *path)
{
	uint32_t node = tfs_tree_resolve(img->tree, path);
	json_error_t err;
	uint8_t *data;
	json_t *j;
	size_t len;

	ck_assert_uint_ne(node, TFS_NO_NODE);
	data = tu_read_node(img, node, &len);
	j = json_loadb((const char *)data, len, 0, &err);
	free(data);
	ck_assert_ptr_nonnull(j);
	return j;
}

static uint32_t root_children(struct tfs_image *img)
{
	return img->tree->nodes[TFS_ROOT_NODE].nchildren;
}

/* ---- the reference-written fixtures ------------------------------------- */

static struct tfs_image *load_fixture(const char *name)
{
	char rel[128];
	struct tfs_image *img = NULL;
	struct tfs_diag d;

	snprintf(rel, sizeof(rel), "primitiv/%s", name);
	ck_assert_msg(tu_load_file(tu_fixture(rel), &img, &d) == 0, "%s: %s",
		      name, d.msg);
	ck_assert_str_eq(img->tree->format, "primitiv");
	ck_assert_str_eq(tu_xattr(img, "", "format"), "primitiv");
	return img;
}

START_TEST(real_param_2x2)
{
	static const char *const same[] = {"param_2x2.data",
					   "param_2x2_stats_dropped.data"};
	static const float v[] = {1, 2, 3, 4};
	struct tfs_view view;
	json_t *meta;
	size_t i;

	TU_NEED_SHARED("primitiv/param_2x2.data");
	for (i = 0; i < 2; i++) {
		struct tfs_image *img = load_fixture(same[i]);

		expect_sha(img, "value", "[2,2]", 16, SHA_2X2);
		expect_tensor(img, "value", "[2,2]", v, 4);
		ck_assert_str_eq(tu_xattr(img, "", "primitiv.data_type"),
				 "Parameter");
		/* served from the mapping: header 15, dims 11, batch 5, c4 10
		 */
		ck_assert_str_eq(tu_xattr(img, "value", "offset"), "33");
		ck_assert_int_eq(
			tfs_image_read(img,
				       tfs_tree_resolve(img->tree, "value"), 0,
				       16, &view),
			0);
		ck_assert_ptr_eq(view.data,
				 tfs_source_serve(&img->srcs[0], 33, 0, 0));
		tfs_view_release(img, &view);
		/* "value" and ".tensorfs" only */
		ck_assert_uint_eq(root_children(img), 2);
		meta = json_file(img, ".tensorfs/metadata.json");
		ck_assert_str_eq(
			json_string_value(json_object_get(meta, "format")),
			"primitiv");
		ck_assert_str_eq(
			json_string_value(json_object_get(meta, "data_type")),
			"Parameter");
		ck_assert_str_eq(
			json_string_value(json_object_get(meta, "version")),
			"0.1");
		ck_assert_int_eq(
			json_integer_value(json_object_get(meta, "stat_count")),
			0);
		ck_assert_ptr_null(json_object_get(meta, "trailing_bytes"));
		json_decref(meta);
		tfs_image_close(img);
	}
}
END_TEST

START_TEST(real_param_stats)
{
	static const float a[] = {5, 6, 7, 8};
	struct tfs_image *img;

	TU_NEED_SHARED("primitiv/param_2x2_stats.data");
	img = load_fixture("param_2x2_stats.data");
	expect_sha(img, "value", "[2,2]", 16, SHA_2X2);
	expect_sha(img, "a", "[2,2]", 16, SHA_2X2_A);
	expect_tensor(img, "a", "[2,2]", a, 4);
	ck_assert_uint_eq(root_children(img), 3);
	tfs_image_close(img);
}
END_TEST

START_TEST(real_param_shapes)
{
	static const float v3[] = {-1, 0.5f, 2}, s[] = {42};
	struct tfs_image *img;

	TU_NEED_SHARED("primitiv/param_3x1.data");
	img = load_fixture("param_3x1.data");
	/* Shape {3,1} is stored as dims [3]: shown as stored */
	expect_sha(img, "value", "[3]", 12, SHA_3X1);
	expect_tensor(img, "value", "[3]", v3, 3);
	tfs_image_close(img);
	img = load_fixture("param_scalar.data");
	expect_sha(img, "value", "[]", 4, SHA_SCALAR);
	expect_tensor(img, "value", "[]", s, 1);
	tfs_image_close(img);
}
END_TEST

START_TEST(real_param_adam_stats)
{
	static const float v[] = {1, 2, 3, 4, 5, 6};
	struct tfs_image *img;
	json_t *meta;

	TU_NEED_SHARED("primitiv/param_w_adam_stats.data");
	img = load_fixture("param_w_adam_stats.data");
	expect_sha(img, "value", "[2,3]", 24, SHA_1TO6);
	expect_tensor(img, "value", "[2,3]", v, 6);
	/* stat keys are one path component each: not split at '.' */
	expect_sha(img, "Adam.m1", "[2,3]", 24, SHA_ZEROS6);
	expect_sha(img, "Adam.m2", "[2,3]", 24, SHA_ZEROS6);
	ck_assert_uint_eq(tfs_tree_resolve(img->tree, "Adam"), TFS_NO_NODE);
	ck_assert_uint_eq(root_children(img), 4);
	meta = json_file(img, ".tensorfs/metadata.json");
	ck_assert_int_eq(
		json_integer_value(json_object_get(meta, "stat_count")), 2);
	json_decref(meta);
	tfs_image_close(img);
}
END_TEST

/* the manifest entry whose path is @path */
static json_t *manifest_entry(json_t *man, const char *path)
{
	json_t *e;
	size_t i;

	json_array_foreach(
		json_object_get(man, "tensors"), i,
		e) if (strcmp(json_string_value(json_object_get(e, "path")),
			      path) == 0) return e;
	return NULL;
}

static void expect_key(json_t *man, const char *path, const char *key_json)
{
	json_t *e = manifest_entry(man, path), *want;

	ck_assert_msg(e != NULL, "no manifest entry %s", path);
	want = json_loads(key_json, 0, NULL);
	ck_assert(json_equal(json_object_get(e, "key"), want));
	json_decref(want);
}

START_TEST(real_model)
{
	static const float b[] = {0.25f, 0.5f, 0.75f}, x[] = {9};
	struct tfs_image *img;
	json_t *man, *meta;

	TU_NEED_SHARED("primitiv/model.model");
	img = load_fixture("model.model");
	expect_sha(img, "b/value", "[3]", 12, SHA_B);
	expect_tensor(img, "b/value", "[3]", b, 3);
	expect_sha(img, "sub/x/value", "[]", 4, SHA_SUBX);
	expect_tensor(img, "sub/x/value", "[]", x, 1);
	expect_sha(img, "w/value", "[2,3]", 24, SHA_1TO6);
	ck_assert_uint_eq(img->tree->ntensors, 3);
	/* a parameter is a group directory: the value's dtype and shape */
	ck_assert_str_eq(tu_xattr(img, "sub/x", "name"), "sub.x");
	ck_assert_str_eq(tu_xattr(img, "w", "shape"), "[2,3]");
	ck_assert_str_eq(tu_xattr(img, "w", "dtype"), "float32");
	ck_assert_str_eq(tu_xattr(img, "w", "order"), "F");
	ck_assert_str_eq(tu_xattr(img, "w/value", "role"), "value");
	ck_assert_str_eq(tu_xattr(img, "", "primitiv.data_type"), "Model");
	man = json_file(img, ".tensorfs/manifest.json");
	expect_key(man, "b", "[\"b\"]");
	expect_key(man, "sub/x", "[\"sub\", \"x\"]");
	expect_key(man, "w", "[\"w\"]");
	json_decref(man);
	meta = json_file(img, ".tensorfs/metadata.json");
	ck_assert_int_eq(
		json_integer_value(json_object_get(meta, "parameter_count")),
		3);
	json_decref(meta);
	tfs_image_close(img);
}
END_TEST

struct config {
	const char *key;
	bool is_float;
	double value;	  /* the float32 value, exactly */
	const char *text; /* the xattr */
};

static void expect_configs(struct tfs_image *img, const struct config *c,
			   size_t n, size_t nuint, size_t nfloat)
{
	json_t *meta = json_file(img, ".tensorfs/metadata.json"), *map, *v;
	char xname[128];
	size_t i;

	ck_assert_uint_eq(img->tree->ntensors, 0);
	ck_assert_uint_eq(root_children(img), 1); /* .tensorfs */
	ck_assert_str_eq(json_string_value(json_object_get(meta, "data_type")),
			 "Optimizer");
	ck_assert_uint_eq(
		json_object_size(json_object_get(meta, "uint_configs")), nuint);
	ck_assert_uint_eq(
		json_object_size(json_object_get(meta, "float_configs")),
		nfloat);
	for (i = 0; i < n; i++) {
		map = json_object_get(meta, c[i].is_float ? "float_configs"
							  : "uint_configs");
		v = json_object_get(map, c[i].key);
		ck_assert_msg(v != NULL, "no config %s", c[i].key);
		if (isfinite(c[i].value))
			ck_assert_msg(json_number_value(v) == c[i].value,
				      "%s: %.17g != %.17g", c[i].key,
				      json_number_value(v), c[i].value);
		else
			ck_assert(json_is_null(v));
		ck_assert(c[i].is_float ? json_is_real(v) || json_is_null(v)
					: json_is_integer(v));
		snprintf(xname, sizeof(xname), "config.%s", c[i].key);
		ck_assert_msg(tu_xattr(img, "", xname) != NULL, "no xattr %s",
			      xname);
		ck_assert_str_eq(tu_xattr(img, "", xname), c[i].text);
	}
	json_decref(meta);
}

START_TEST(real_optimizers)
{
	static const struct config sgd[] = {
		{"Optimizer.epoch", false, 0, "0"},
		{"SGD.eta", true, (double)0.1f, "0.1"},
		{"Optimizer.clip_threshold", true, 0, "0"},
		{"Optimizer.l2_strength", true, 0, "0"},
		{"Optimizer.lr_scale", true, 1, "1"},
	};
	static const struct config adam[] = {
		{"Optimizer.epoch", false, 0, "0"},
		{"Adam.beta2", true, (double)0.999f, "0.999"},
		{"Adam.beta1", true, (double)0.9f, "0.9"},
		{"Optimizer.clip_threshold", true, 0, "0"},
		{"Adam.eps", true, (double)1e-8f, "1e-08"},
		{"Adam.alpha", true, (double)0.001f, "0.001"},
		{"Optimizer.l2_strength", true, 0, "0"},
		{"Optimizer.lr_scale", true, 1, "1"},
	};
	struct tfs_image *img;

	TU_NEED_SHARED("primitiv/sgd.optimizer");
	img = load_fixture("sgd.optimizer");
	expect_configs(img, sgd, 5, 1, 4);
	ck_assert_str_eq(tu_xattr(img, "", "primitiv.data_type"), "Optimizer");
	tfs_image_close(img);
	img = load_fixture("adam.optimizer");
	expect_configs(img, adam, 8, 1, 7);
	tfs_image_close(img);
}
END_TEST

/* ---- detection ------------------------------------------------------------
 */

static int probe(const uint8_t *b, size_t len)
{
	struct tfs_source src;

	tfs_source_init_memory(&src, b, len);
	return tfs_format_primitiv.probe(&src);
}

START_TEST(probe_is_the_15_byte_prefix)
{
	/* spec section 6: CE 00000000 CE 00000001 CE 00000T00, T in 0..4 */
	static const uint8_t prefix[15] = {0xce, 0, 0,	  0, 0, 0xce, 0, 0,
					   0,	 1, 0xce, 0, 0, 0,    0};
	static const uint8_t flips[] = {0x01, 0x02, 0x10, 0x80, 0xff};
	uint8_t b[15];
	size_t pos, f;
	int t;

	ck_assert_ptr_eq(tfs_format_by_name("primitiv"), &tfs_format_primitiv);
	for (t = 0; t < 256; t++) {
		memcpy(b, prefix, 15);
		b[13] = (uint8_t)t;
		ck_assert_int_eq(probe(b, 15), t <= 4 ? 100 : 10);
		/* one byte short: never claimed */
		ck_assert_int_eq(probe(b, 14), 0);
	}
	/*
	 * Any other change of the 15 bytes loses the full claim.  Only the
	 * three uint32 type bytes keep a weak one, so that a wrong version
	 * or data type is reported by field rather than "not recognised".
	 */
	for (pos = 0; pos < 15; pos++) {
		for (f = 0; f < sizeof(flips); f++) {
			bool typed;

			memcpy(b, prefix, 15);
			b[pos] ^= flips[f];
			if (pos == 13 && b[13] <= 4)
				continue;
			typed = b[0] == 0xce && b[5] == 0xce && b[10] == 0xce;
			ck_assert_int_eq(probe(b, 15), typed ? 10 : 0);
		}
	}
}
END_TEST

/* every reader is asked, and primitiv's wins for the file at @path */
static void expect_detected(const char *path)
{
	struct tfs_source src;
	size_t len;
	uint8_t *b = tu_read_file(path, &len);

	tfs_source_init_memory(&src, b, len);
	ck_assert_ptr_eq(tfs_format_detect(&src), &tfs_format_primitiv);
	free(b);
}

/* the reference-written model (primitiv's Model::save) */
START_TEST(detected_real_model)
{
	TU_NEED_SHARED("primitiv/model.model");
	expect_detected(tu_fixture("primitiv/model.model"));
}
END_TEST

START_TEST(detected_among_all_readers)
{
	struct tfs_diag d;
	uint8_t *b;

	expect_detected(tu_testdata("primitiv/valid/model_nested_keys.model"));
	expect_detected(tu_testdata("primitiv/valid/param_long_forms.param"));
	expect_detected(tu_testdata("primitiv/valid/momentum_sgd.optimizer"));
	/* a header in the shortest integer forms is not a primitiv file */
	b = (uint8_t *)"\x00\x01\xcd\x02\x00\x90\xce\x00\x00\x00\x01\xc4\x04"
		       "\x00\x00\x00\x00\xce\x00\x00\x00\x00";
	ck_assert_int_eq(probe(b, 22), 0);
	ck_assert_int_eq(direct_load(b, 22, &d), -EBADMSG);
	ck_assert_uint_eq(d.offset, 0);
	ck_assert_ptr_nonnull(strstr(d.msg, "ver_major: expected uint32"));
}
END_TEST

/* ---- generated valid files ------------------------------------------- */

START_TEST(gen_parameter_stats)
{
	static const uint32_t d23[] = {2, 3}, d31[] = {3, 1};
	static const float v[] = {1.5f, -2, 0, 3, 1e-3f, 100};
	static const float m[] = {6, 5, 4, 3, 2, 1}, c[] = {7, 8, 9};
	static const float one[] = {-0.0f};
	struct tu_buf mp = {0};
	struct tfs_image *img;

	mp_file_header(&mp, 0x200);
	mp_tensor(&mp, d23, 2, v);
	mp_u32(&mp, 4);
	/* any order; names with '.', '/' and a stored trailing 1 */
	mp_str(&mp, "RMSProp.m");
	mp_tensor(&mp, d23, 2, m);
	mp_str(&mp, "a/b");
	mp_tensor(&mp, d31, 2, c);
	mp_str(&mp, "Adam.m1");
	mp_tensor(&mp, NULL, 0, one);
	mp_str(&mp, "");
	mp_tensor(&mp, NULL, 0, one);
	img = load_ok(&mp);
	expect_tensor(img, "value", "[2,3]", v, 6);
	expect_tensor(img, "RMSProp.m", "[2,3]", m, 6);
	expect_tensor(img, "a%2Fb", "[3,1]", c, 3);
	expect_tensor(img, "Adam.m1", "[]", one, 1);
	expect_tensor(img, "%", "[]", one, 1);
	ck_assert_uint_eq(img->tree->ntensors, 5);
	ck_assert_uint_eq(root_children(img), 6);
	tfs_image_close(img);
	free(mp.p);
}
END_TEST

START_TEST(gen_parameter_no_stats)
{
	static const uint32_t dims[] = {1, 4, 2, 1, 1, 1, 1, 2};
	float v[16];
	struct tu_buf mp = {0};
	struct tfs_image *img;
	int i;

	for (i = 0; i < 16; i++)
		v[i] = (float)i / 4;
	mp_file_header(&mp, 0x200);
	mp_tensor(&mp, dims, 8, v); /* 8 dims, the most a Shape has */
	mp_u32(&mp, 0);
	img = load_ok(&mp);
	expect_tensor(img, "value", "[1,4,2,1,1,1,1,2]", v, 16);
	ck_assert_uint_eq(root_children(img), 2);
	tfs_image_close(img);
	free(mp.p);
}
END_TEST

/* a Model key from NUL-separated elements ("a\0b\0" = ["a","b"]) */
static void mp_key(struct tu_buf *m, const char *elems, size_t n)
{
	size_t i;

	mp_hdr(m, K_ARRAY, n, 0);
	for (i = 0; i < n; i++) {
		mp_str(m, elems);
		elems += strlen(elems) + 1;
	}
}

START_TEST(gen_model_nested)
{
	static const uint32_t d2[] = {2}, d22[] = {2, 2};
	static const float w[] = {1, 2}, b[] = {3, 4}, dw[] = {5, 6, 7, 8};
	static const float m1[] = {0.5f, 0.25f}, ab[] = {9, 10};
	struct tfs_image *img;
	struct tu_buf mp = {0};
	json_t *man;

	mp_file_header(&mp, 0x300);
	mp_u32(&mp, 4);
	/* not in std::map order: the reader must not care */
	mp_key(&mp, "enc\0layer0\0w", 3);
	mp_tensor(&mp, d2, 1, w);
	mp_u32(&mp, 1);
	mp_str(&mp, "Adam.m1");
	mp_tensor(&mp, d2, 1, m1);
	mp_key(&mp, "dec\0w", 2);
	mp_tensor(&mp, d22, 2, dw);
	mp_u32(&mp, 0);
	mp_key(&mp, "enc\0layer0\0b", 3);
	mp_tensor(&mp, d2, 1, b);
	mp_u32(&mp, 0);
	/* key elements are not split further */
	mp_key(&mp, "a.b\0c", 2);
	mp_tensor(&mp, d2, 1, ab);
	mp_u32(&mp, 0);
	img = load_ok(&mp);
	expect_tensor(img, "enc/layer0/w/value", "[2]", w, 2);
	expect_tensor(img, "enc/layer0/w/Adam.m1", "[2]", m1, 2);
	expect_tensor(img, "enc/layer0/b/value", "[2]", b, 2);
	expect_tensor(img, "dec/w/value", "[2,2]", dw, 4);
	expect_tensor(img, "a.b/c/value", "[2]", ab, 2);
	ck_assert_uint_eq(img->tree->ntensors, 5);
	ck_assert_str_eq(tu_xattr(img, "enc/layer0/w", "name"), "enc.layer0.w");
	ck_assert_str_eq(tu_xattr(img, "dec/w", "shape"), "[2,2]");
	ck_assert_str_eq(tu_xattr(img, "enc/layer0/w/Adam.m1", "role"),
			 "Adam.m1");
	man = json_file(img, ".tensorfs/manifest.json");
	expect_key(man, "enc/layer0/w", "[\"enc\",\"layer0\",\"w\"]");
	expect_key(man, "a.b/c", "[\"a.b\",\"c\"]");
	json_decref(man);
	tfs_image_close(img);
	free(mp.p);
}
END_TEST

START_TEST(gen_model_prefix_keys)
{
	static const uint32_t d1[] = {1};
	static const float v[] = {1};
	struct tfs_image *img;
	struct tu_buf mp = {0};

	/* ["a"] and ["a","b"]: both stay reachable */
	mp_file_header(&mp, 0x300);
	mp_u32(&mp, 2);
	mp_key(&mp, "a", 1);
	mp_tensor(&mp, d1, 1, v);
	mp_u32(&mp, 0);
	mp_key(&mp, "a\0b", 2);
	mp_tensor(&mp, d1, 1, v);
	mp_u32(&mp, 0);
	img = load_ok(&mp);
	ck_assert_uint_eq(img->tree->ntensors, 2);
	expect_tensor(img, "a/b/value", "[1]", v, 1);
	expect_tensor(img, "a~1/value", "[1]", v, 1);
	tfs_image_close(img);
	free(mp.p);
}
END_TEST

START_TEST(gen_big_bins)
{
	static const uint32_t big[] = {130, 130}, mid[] = {200};
	float *v = malloc(130 * 130 * sizeof(float));
	struct tfs_image *img;
	struct tu_buf mp = {0};
	size_t i, bin_at;

	for (i = 0; i < 130 * 130; i++)
		v[i] = (float)i * 0.5f - 1000;
	mp_file_header(&mp, 0x200);
	bin_at = mp.len + 1 + 10 + 5;
	mp_tensor(&mp, big, 2, v); /* 67600 bytes: bin32 */
	ck_assert_uint_eq(mp.p[bin_at], 0xc6);
	mp_u32(&mp, 1);
	mp_str(&mp, "m");
	bin_at = mp.len + 1 + 5 + 5;
	mp_tensor(&mp, mid, 1, v); /* 800 bytes: bin16 */
	ck_assert_uint_eq(mp.p[bin_at], 0xc5);
	img = load_ok(&mp);
	expect_tensor(img, "value", "[130,130]", v, 130 * 130);
	ck_assert_str_eq(tu_xattr(img, "value", "offset"), "36");
	expect_tensor(img, "m", "[200]", v, 200);
	tfs_image_close(img);
	free(mp.p);
	free(v);
}
END_TEST

START_TEST(gen_long_forms)
{
	static const uint32_t d22[] = {2, 2};
	static const float v[] = {1, 2, 3, 4};
	struct tfs_image *img;
	struct tu_buf mp = {0};

	/* every size form the reference reader accepts, not only shortest */
	mp_file_header(&mp, 0x300);
	mp_u32(&mp, 3);
	mp_hdr(&mp, K_ARRAY, 1, 0xdc);
	mp_strn(&mp, "p", 1, 0xd9);
	mp_tensor_forms(&mp, d22, 2, 1, v, 0xdd, 0xc6);
	mp_u32(&mp, 2);
	mp_strn(&mp, "s16", 3, 0xda);
	mp_tensor_forms(&mp, d22, 2, 1, v, 0xdc, 0xc5);
	mp_strn(&mp, "s32", 3, 0xdb);
	mp_tensor_forms(&mp, d22, 2, 1, v, 0, 0xc4);
	mp_hdr(&mp, K_ARRAY, 1, 0xdd);
	mp_strn(&mp, "q", 1, 0xdb);
	mp_tensor(&mp, d22, 2, v);
	mp_u32(&mp, 0);
	mp_hdr(&mp, K_ARRAY, 1, 0);
	mp_strn(&mp, "r", 1, 0xda);
	mp_tensor(&mp, d22, 2, v);
	mp_u32(&mp, 0);
	img = load_ok(&mp);
	expect_tensor(img, "p/value", "[2,2]", v, 4);
	expect_tensor(img, "p/s16", "[2,2]", v, 4);
	expect_tensor(img, "p/s32", "[2,2]", v, 4);
	expect_tensor(img, "q/value", "[2,2]", v, 4);
	expect_tensor(img, "r/value", "[2,2]", v, 4);
	tfs_image_close(img);
	free(mp.p);
}
END_TEST

START_TEST(gen_tensor_batch)
{
	static const uint32_t d2[] = {2};
	static const float v[] = {1, 2, 3, 4, 5, 6};
	struct tfs_image *img;
	struct tu_buf mp = {0};

	/* data type 0x100, batch 3: the batch is the slowest axis */
	mp_file_header(&mp, 0x100);
	mp_tensor_forms(&mp, d2, 1, 3, v, 0, 0);
	img = load_ok(&mp);
	expect_tensor(img, "tensor", "[2,3]", v, 6);
	ck_assert_str_eq(tu_xattr(img, "", "primitiv.data_type"), "Tensor");
	tfs_image_close(img);
	free(mp.p);
	/* a Parameter value with batch > 1 is shown the same way */
	mp = (struct tu_buf){0};
	mp_file_header(&mp, 0x200);
	mp_tensor_forms(&mp, NULL, 0, 2, v, 0, 0);
	mp_u32(&mp, 0);
	img = load_ok(&mp);
	expect_tensor(img, "value", "[2]", v, 2);
	tfs_image_close(img);
	free(mp.p);
}
END_TEST

static void mp_configs(struct tu_buf *m, const struct config *c, size_t n,
		       bool is_float, uint8_t map_type)
{
	size_t i, count = 0;

	for (i = 0; i < n; i++)
		count += c[i].is_float == is_float;
	mp_hdr(m, K_MAP, count, map_type);
	for (i = 0; i < n; i++) {
		if (c[i].is_float != is_float)
			continue;
		mp_str(m, c[i].key);
		if (is_float)
			mp_f32(m, (float)c[i].value);
		else
			mp_u32(m, (uint32_t)c[i].value);
	}
}

static void check_optimizer(const struct config *c, size_t n, uint8_t utype,
			    uint8_t ftype)
{
	struct tfs_image *img;
	struct tu_buf mp = {0};
	size_t i, nu = 0;

	for (i = 0; i < n; i++)
		nu += !c[i].is_float;
	mp_file_header(&mp, 0x400);
	mp_configs(&mp, c, n, false, utype);
	mp_configs(&mp, c, n, true, ftype);
	img = load_ok(&mp);
	expect_configs(img, c, n, nu, n - nu);
	tfs_image_close(img);
	free(mp.p);
}

START_TEST(gen_optimizers)
{
	static const struct config momentum[] = {
		{"Optimizer.epoch", false, 12, "12"},
		{"MomentumSGD.eta", true, (double)0.01f, "0.01"},
		{"MomentumSGD.momentum", true, (double)0.9f, "0.9"},
		{"Optimizer.lr_scale", true, 0.5, "0.5"},
	};
	static const struct config adagrad[] = {
		{"AdaGrad.eta", true, (double)0.001f, "0.001"},
		{"Optimizer.epoch", false, 4294967295.0, "4294967295"},
		{"AdaGrad.eps", true, (double)1e-8f, "1e-08"},
	};
	static const struct config rmsprop[] = {
		{"RMSProp.eta", true, (double)0.01f, "0.01"},
		{"RMSProp.alpha", true, (double)0.9f, "0.9"},
		{"RMSProp.eps", true, (double)1e-8f, "1e-08"},
		{"Optimizer.clip_threshold", true, (double)(-1.0f / 3),
		 "-0.33333334"},
		{"Optimizer.epoch", false, 0, "0"},
	};
	static const struct config adadelta[] = {
		{"AdaDelta.rho", true, (double)0.95f, "0.95"},
		{"AdaDelta.eps", true, (double)1e-6f, "1e-06"},
		{"Optimizer.l2_strength", true, INFINITY, "inf"},
		{"x", false, 1, "1"},
	};

	check_optimizer(momentum, 4, 0, 0);
	check_optimizer(adagrad, 3, 0xde, 0xdf);
	check_optimizer(rmsprop, 5, 0xdf, 0xde);
	check_optimizer(adadelta, 4, 0, 0);
	check_optimizer(NULL, 0, 0, 0);
	/* a key too long for an xattr name: only in metadata.json */
	{
		char key[241];
		struct tfs_image *img;
		struct tu_buf mp = {0};
		json_t *meta;

		memset(key, 'k', 240);
		key[240] = '\0';
		mp_file_header(&mp, 0x400);
		mp_hdr(&mp, K_MAP, 1, 0);
		mp_str(&mp, key);
		mp_u32(&mp, 5);
		mp_hdr(&mp, K_MAP, 0, 0);
		img = load_ok(&mp);
		meta = json_file(img, ".tensorfs/metadata.json");
		ck_assert_int_eq(
			json_integer_value(json_object_get(
				json_object_get(meta, "uint_configs"), key)),
			5);
		ck_assert_uint_eq(img->tree->nodes[TFS_ROOT_NODE].nxattrs, 2);
		json_decref(meta);
		tfs_image_close(img);
		free(mp.p);
	}
}
END_TEST

START_TEST(gen_trailing_bytes)
{
	static const float v[] = {2};
	struct tfs_image *img;
	struct tu_buf mp = {0};
	json_t *meta;

	mp_file_header(&mp, 0x200);
	mp_tensor(&mp, NULL, 0, v);
	mp_u32(&mp, 0);
	tu_buf_put(&mp, "xyz", 3);
	/* the reference reader ignores them; we accept and record them */
	img = load_ok(&mp);
	expect_tensor(img, "value", "[]", v, 1);
	meta = json_file(img, ".tensorfs/metadata.json");
	ck_assert_int_eq(
		json_integer_value(json_object_get(meta, "trailing_bytes")), 3);
	ck_assert_int_eq(
		json_integer_value(json_object_get(meta, "trailing_offset")),
		(json_int_t)mp.len - 3);
	json_decref(meta);
	tfs_image_close(img);
	free(mp.p);
}
END_TEST

/* ---- rejects ---------------------------------------------------------- */

START_TEST(reject_header)
{
	static const float v[] = {1};
	struct tu_buf mp = {0};
	struct tfs_diag d;
	static const struct {
		uint32_t major, minor, type;
		int err;
		uint64_t offset;
		const char *word;
	} cases[] = {
		{1, 1, 0x200, -ENOTSUP, 0, "ver_major"},
		{0, 2, 0x200, -ENOTSUP, 5, "ver_minor: version 0.2"},
		{0, 0, 0x200, -ENOTSUP, 5, "ver_minor"},
		{0, 1, 0x500, -EBADMSG, 10, "data_type: 0x500"},
		{0, 1, 0x201, -EBADMSG, 10, "data_type"},
		{0, 1, 0x2, -EBADMSG, 10, "data_type"},
		{0, 1, 0x000, -ENOTSUP, 10, "Shape"},
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		mp.len = 0;
		mp_u32(&mp, cases[i].major);
		mp_u32(&mp, cases[i].minor);
		mp_u32(&mp, cases[i].type);
		mp_tensor(&mp, NULL, 0, v);
		mp_u32(&mp, 0);
		expect_reject(&mp, cases[i].err, cases[i].offset,
			      cases[i].word);
	}
	/* truncated inside the header: only the reader itself sees it */
	mp.len = 0;
	mp_file_header(&mp, 0x200);
	ck_assert_int_eq(direct_load(mp.p, 12, &d), -EBADMSG);
	ck_assert_uint_eq(d.offset, 10);
	ck_assert_ptr_nonnull(strstr(d.msg, "data_type: uint32 runs past the "
					    "end of the file"));
	ck_assert_int_eq(direct_load(mp.p, 0, &d), -EBADMSG);
	ck_assert_uint_eq(d.offset, 0);
	ck_assert_ptr_nonnull(strstr(d.msg, "found the end of the file"));
	free(mp.p);
}
END_TEST

/*
 * A Parameter [2,2] = 1..4 with one stat "s" [2]; @o gets the offsets of
 * its objects.
 */
struct param_offsets {
	size_t dims, dim1, batch, bin, count, key, stat_dims, stat_bin, end;
};

static void mp_param(struct tu_buf *m, struct param_offsets *o)
{
	static const uint32_t d22[] = {2, 2}, d2[] = {2};
	static const float v[] = {1, 2, 3, 4};

	m->len = 0;
	mp_file_header(m, 0x200);
	o->dims = m->len;
	o->dim1 = o->dims + 6;
	o->batch = o->dims + 11;
	o->bin = o->batch + 5;
	mp_tensor(m, d22, 2, v);
	o->count = m->len;
	mp_u32(m, 1);
	o->key = m->len;
	mp_str(m, "s");
	o->stat_dims = m->len;
	o->stat_bin = m->len + 1 + 5 + 5;
	mp_tensor(m, d2, 1, v);
	o->end = m->len;
}

/* @m with bytes [at, at + cut) replaced by @n bytes */
static void splice(struct tu_buf *m, size_t at, size_t cut, const void *b,
		   size_t n)
{
	uint8_t *tail = malloc(m->len - at - cut + 1);
	size_t tail_len = m->len - at - cut;

	memcpy(tail, m->p + at + cut, tail_len);
	m->len = at;
	tu_buf_put(m, b, n);
	tu_buf_put(m, tail, tail_len);
	free(tail);
}

/* one change to the Parameter of mp_param and what it must cause */
struct param_edit {
	size_t field; /* offsetof(struct param_offsets, ...) */
	size_t cut;   /* bytes replaced there */
	const char *bytes;
	size_t n;
	int err; /* refused at that object's offset */
	const char *word;
};

#define AT(f) offsetof(struct param_offsets, f)
#define BYTES(s) s, sizeof(s) - 1

static const struct param_edit param_edits[] = {
	/* shortest-form uints where 0xce is required */
	{AT(batch), 5, BYTES("\x01"), -EBADMSG,
	 "value.shape.batch: expected uint32 (0xce), found type byte 0x01 "
	 "(a shorter integer form"},
	{AT(dim1), 5, BYTES("\xcd\x00\x02"), -EBADMSG,
	 "value.shape.dims[1]: expected uint32"},
	{AT(count), 5, BYTES("\xcc\x01"), -EBADMSG,
	 "stat_count: expected uint32"},
	{AT(count), 5, BYTES("\xcf\x00\x00\x00\x00\x00\x00\x00\x01"), -EBADMSG,
	 "0xcf"},
	/* other wrong kinds; no integer hint where no integer belongs */
	{AT(dims), 1, BYTES("\xc0"), -EBADMSG,
	 "value.shape.dims: expected array (0x90-0x9f, 0xdc, 0xdd), found "
	 "type byte 0xc0"},
	{AT(bin), 1, BYTES("\xd9"), -EBADMSG, "value.data: expected bin"},
	{AT(key), 1, BYTES("\xc4"), -EBADMSG, "stats[0].key: expected str"},
	{AT(stat_dims), 1, BYTES("\x01"), -EBADMSG,
	 "stats[0].value.shape.dims: expected array (0x90-0x9f, 0xdc, 0xdd), "
	 "found type byte 0x01"},
	/* bin length does not match [2,2] x 4 bytes, or [2] x 4 */
	{AT(bin), 2 + 16,
	 BYTES("\xc4\x0c"
	       "0123456789ab"),
	 -EBADMSG,
	 "value.data: bin length 12 does not match the shape: 4 elements"},
	{AT(bin), 2 + 16,
	 BYTES("\xc4\x14"
	       "0123456789abcdefghij"),
	 -EBADMSG, "bin length 20"},
	{AT(stat_bin), 2 + 8,
	 BYTES("\xc4\x10"
	       "0123456789abcdef"),
	 -EBADMSG, "stats[0].value.data: bin length 16"},
	/* zero dim, zero batch */
	{AT(dim1), 5, BYTES("\xce\x00\x00\x00\x00"), -EBADMSG,
	 "dims[1]: dim is 0"},
	{AT(batch), 5, BYTES("\xce\x00\x00\x00\x00"), -EBADMSG, "batch is 0"},
	/* a str or bin whose length runs past the end */
	{AT(key), 2, BYTES("\xd9\xc8s"), -EBADMSG,
	 "stats[0].key: str of 200 bytes runs past the end of the file"},
	{AT(key), 2, BYTES("\xdb\xff\xff\xff\xff"), -EBADMSG,
	 "str of 4294967295 bytes"},
	{AT(bin), 2, BYTES("\xc6\xff\xff\xff\xff"), -EBADMSG,
	 "value.data: bin of 4294967295 bytes runs past the end"},
	{AT(stat_bin), 2, BYTES("\xc5\x01\x00"), -EBADMSG, "bin of 256 bytes"},
	/* an absurd stat count */
	{AT(count), 5, BYTES("\xce\xff\x00\x00\xff"), -EBADMSG,
	 "stat_count: 4278190335 stats need at least 9 bytes each"},
	/* keys: not a stat named like the value file; UTF-8 without NUL */
	{AT(key), 2, BYTES("\xa5value"), -ENOTSUP, "'value'"},
	{AT(key), 2, BYTES("\xa2\xc0\x80"), -EBADMSG, "not valid UTF-8"},
	{AT(key), 2, BYTES("\xa3\xed\xa0\x80"), -EBADMSG, "UTF-8"},
	{AT(key), 2, BYTES("\xa3\xe0\x80\x80"), -EBADMSG, "UTF-8"},
	{AT(key), 2, BYTES("\xa4\xf4\x90\x80\x80"), -EBADMSG, "UTF-8"},
	{AT(key), 2, BYTES("\xa2\xe2\x82"), -EBADMSG, "UTF-8"},
	{AT(key), 2, BYTES("\xa1\x80"), -EBADMSG, "UTF-8"},
	{AT(key), 2, BYTES("\xa3\x61\x00\x62"), -ENOTSUP, "NUL"},
};

START_TEST(reject_param_edits)
{
	struct param_offsets o;
	struct tu_buf m = {0};
	size_t i, at;

	for (i = 0; i < sizeof(param_edits) / sizeof(param_edits[0]); i++) {
		const struct param_edit *e = &param_edits[i];

		mp_param(&m, &o);
		memcpy(&at, (const char *)&o + e->field, sizeof(at));
		splice(&m, at, e->cut, e->bytes, e->n);
		expect_reject(&m, e->err, at, e->word);
	}
	/* one stat more than there is */
	mp_param(&m, &o);
	m.p[o.count + 4] = 2;
	expect_reject(&m, -EBADMSG, o.end, "stats[1].key: expected str");
	/* the length of a bin cut off */
	mp_param(&m, &o);
	m.len = o.stat_bin + 3;
	m.p[o.stat_bin] = 0xc6;
	expect_reject(&m, -EBADMSG, o.stat_bin, "its length runs past the end");
	/* the integer hint only where an integer belongs */
	mp_param(&m, &o);
	m.p[o.stat_dims] = 0x01;
	{
		struct tfs_image *img = NULL;
		struct tfs_diag d;

		ck_assert_int_eq(tu_load_mem(m.p, m.len, &img, &d), -EBADMSG);
		ck_assert_ptr_null(strstr(d.msg, "integer"));
	}
	/* a 4-byte UTF-8 key is fine */
	mp_param(&m, &o);
	splice(&m, o.key, 2, BYTES("\xa4\xf0\x9f\x98\x80"));
	{
		static const float two[] = {1, 2};
		struct tfs_image *img = load_ok(&m);

		expect_tensor(img, "\xf0\x9f\x98\x80", "[2]", two, 2);
		tfs_image_close(img);
	}
	free(m.p);
}
END_TEST

START_TEST(reject_float_forms)
{
	struct tu_buf m = {0};
	size_t at;

	mp_file_header(&m, 0x400);
	mp_hdr(&m, K_MAP, 0, 0);
	mp_hdr(&m, K_MAP, 1, 0);
	mp_str(&m, "SGD.eta");
	at = m.len;
	mp_byte(&m, 0xcb);
	mp_be(&m, 0x3fb999999999999aull, 8);
	expect_reject(&m, -EBADMSG, at,
		      "float_configs[0].value: expected float (0xca), found "
		      "type byte 0xcb (float64");
	/* a uint config written as a float */
	m.len = 0;
	mp_file_header(&m, 0x400);
	mp_hdr(&m, K_MAP, 1, 0);
	mp_str(&m, "Optimizer.epoch");
	at = m.len;
	mp_f32(&m, 1);
	mp_hdr(&m, K_MAP, 0, 0);
	expect_reject(&m, -EBADMSG, at,
		      "uint_configs[0].value: expected uint32");
	/* the maps are maps */
	m.len = 0;
	mp_file_header(&m, 0x400);
	mp_hdr(&m, K_ARRAY, 0, 0);
	mp_hdr(&m, K_MAP, 0, 0);
	expect_reject(&m, -EBADMSG, 15, "uint_configs: expected map");
	free(m.p);
}
END_TEST

START_TEST(reject_shapes)
{
	static const uint32_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
	static const float v[] = {1, 2, 3, 4};
	struct tu_buf m = {0};

	/* nine dims */
	m.len = 0;
	mp_file_header(&m, 0x200);
	mp_tensor(&m, nine, 9, v);
	mp_u32(&m, 0);
	expect_reject(&m, -EBADMSG, 15,
		      "9 dims, a primitiv Shape has at "
		      "most 8");
	/* an absurd dims count */
	m.len = 0;
	mp_file_header(&m, 0x200);
	mp_byte(&m, 0xdd);
	mp_be(&m, 0xffffffffu, 4);
	expect_reject(&m, -EBADMSG, 15, "4294967295 dims");
	/* the element count overflows: 8 dims of 2^32-1 */
	m.len = 0;
	mp_file_header(&m, 0x200);
	mp_hdr(&m, K_ARRAY, 8, 0);
	for (int i = 0; i < 8; i++)
		mp_u32(&m, 0xffffffffu);
	mp_u32(&m, 1);
	mp_hdr(&m, K_BIN, 4, 0);
	tu_buf_put(&m, "\0\0\0\0", 4);
	mp_u32(&m, 0);
	expect_reject(&m, -EBADMSG, 15 + 1 + 40 + 5, "overflows");
	free(m.p);
}
END_TEST

START_TEST(reject_absurd_counts)
{
	static const float v[] = {1};
	struct tu_buf m = {0};

	/* models */
	m.len = 0;
	mp_file_header(&m, 0x300);
	mp_u32(&m, 0xffffffffu);
	mp_key(&m, "w", 1);
	mp_tensor(&m, NULL, 0, v);
	mp_u32(&m, 0);
	expect_reject(&m, -EBADMSG, 15,
		      "parameter_count: 4294967295 "
		      "parameters need at least 15 bytes");
	m.len = 0;
	mp_file_header(&m, 0x300);
	mp_u32(&m, 1);
	mp_byte(&m, 0xdd);
	mp_be(&m, 0x7fffffff, 4);
	mp_str(&m, "w");
	mp_tensor(&m, NULL, 0, v);
	mp_u32(&m, 0);
	expect_reject(&m, -EBADMSG, 20,
		      "parameters[0].key: 2147483647 key "
		      "elements");
	/* optimizer maps */
	m.len = 0;
	mp_file_header(&m, 0x400);
	mp_byte(&m, 0xdf);
	mp_be(&m, 0xffffffffu, 4);
	mp_hdr(&m, K_MAP, 0, 0);
	expect_reject(&m, -EBADMSG, 15, "uint_configs: 4294967295 entries");
	m.len = 0;
	mp_file_header(&m, 0x400);
	mp_hdr(&m, K_MAP, 0, 0);
	mp_byte(&m, 0xde);
	mp_be(&m, 2, 2);
	mp_str(&m, "a");
	mp_f32(&m, 1);
	expect_reject(&m, -EBADMSG, 16, "float_configs: 2 entries");
	free(m.p);
}
END_TEST

START_TEST(reject_keys)
{
	static const float v[] = {1};
	static const uint32_t d1[] = {1};
	struct tu_buf m = {0};
	size_t at;
	int i;

	/* duplicate stat keys (the reference silently keeps the first) */
	m.len = 0;
	mp_file_header(&m, 0x200);
	mp_tensor(&m, NULL, 0, v);
	mp_u32(&m, 2);
	mp_str(&m, "Adam.m1");
	mp_tensor(&m, NULL, 0, v);
	at = m.len;
	mp_strn(&m, "Adam.m1", 7, 0xd9); /* another form, the same key */
	mp_tensor(&m, NULL, 0, v);
	expect_reject(&m, -EBADMSG, at,
		      "stats[1].key: duplicate stat key "
		      "'Adam.m1' (first at offset 32)");
	/* Model keys: duplicates (in another str form), empty, too deep */
	m.len = 0;
	mp_file_header(&m, 0x300);
	mp_u32(&m, 2);
	mp_key(&m, "sub\0w", 2);
	mp_tensor(&m, d1, 1, v);
	mp_u32(&m, 0);
	at = m.len;
	mp_hdr(&m, K_ARRAY, 2, 0xdc);
	mp_strn(&m, "sub", 3, 0xda);
	mp_str(&m, "w");
	mp_tensor(&m, d1, 1, v);
	mp_u32(&m, 0);
	expect_reject(&m, -EBADMSG, at,
		      "parameters[1].key: duplicate key "
		      "'sub.w' (first at offset 20)");
	m.len = 0;
	mp_file_header(&m, 0x300);
	mp_u32(&m, 1);
	mp_hdr(&m, K_ARRAY, 0, 0);
	mp_tensor(&m, d1, 1, v);
	mp_u32(&m, 0);
	expect_reject(&m, -EBADMSG, 20, "parameters[0].key: empty key");
	m.len = 0;
	mp_file_header(&m, 0x300);
	mp_u32(&m, 1);
	mp_hdr(&m, K_ARRAY, 65, 0);
	for (i = 0; i < 65; i++)
		mp_str(&m, "k");
	mp_tensor(&m, d1, 1, v);
	mp_u32(&m, 0);
	expect_reject(&m, -E2BIG, 20,
		      "65 key elements, tensorfs allows at "
		      "most 64");
	m.len = 0;
	mp_file_header(&m, 0x300);
	mp_u32(&m, 1);
	mp_hdr(&m, K_ARRAY, 2, 0);
	mp_str(&m, "ok");
	at = m.len;
	mp_strn(&m, "\xff", 1, 0);
	mp_tensor(&m, d1, 1, v);
	mp_u32(&m, 0);
	expect_reject(&m, -EBADMSG, at,
		      "parameters[0].key[1]: the string is "
		      "not valid UTF-8");
	free(m.p);
}
END_TEST

START_TEST(reject_config_keys)
{
	struct tu_buf m = {0};
	size_t at;

	mp_file_header(&m, 0x400);
	mp_hdr(&m, K_MAP, 0, 0);
	mp_hdr(&m, K_MAP, 2, 0);
	mp_str(&m, "SGD.eta");
	mp_f32(&m, 1);
	at = m.len;
	mp_str(&m, "SGD.eta");
	mp_f32(&m, 2);
	expect_reject(&m, -EBADMSG, at,
		      "float_configs[1].key: duplicate key "
		      "'SGD.eta' (first at offset 17)");
	/* the same key in both maps: their xattrs would collide */
	m.len = 0;
	mp_file_header(&m, 0x400);
	mp_hdr(&m, K_MAP, 1, 0);
	mp_str(&m, "k");
	mp_u32(&m, 1);
	mp_hdr(&m, K_MAP, 1, 0);
	at = m.len;
	mp_str(&m, "k");
	mp_f32(&m, 1);
	expect_reject(&m, -ENOTSUP, at, "uint_configs already have a key 'k'");
	free(m.p);
}
END_TEST

/* truncation at every byte of the file at @path (@name for messages) */
static void truncate_everywhere(const char *path, const char *name, void *arg)
{
	struct tfs_image *img;
	struct tfs_diag d;
	size_t cut, len;
	uint8_t *b, *copy;

	(void)arg;
	b = tu_read_file(path, &len);
	ck_assert_int_eq(direct_load(b, len, &d), 0);
	for (cut = 0; cut < len; cut++) {
		/* an exact-size copy: reads past it would be caught */
		copy = malloc(cut ? cut : 1);
		memcpy(copy, b, cut);
		ck_assert_msg(direct_load(copy, cut, &d) == -EBADMSG,
			      "%s cut at %zu: %s", name, cut, d.msg);
		ck_assert(d.has_offset);
		ck_assert_uint_le(d.offset, cut);
		ck_assert_msg(strstr(d.msg, "end of the file"),
			      "%s cut at %zu: %s", name, cut, d.msg);
		if (cut >= 15) {
			img = NULL;
			ck_assert_int_eq(tu_load_mem(copy, cut, &img, &d),
					 -EBADMSG);
			ck_assert_ptr_null(img);
		}
		free(copy);
	}
	free(b);
}

/* the same over tests/fixtures/primitiv/valid, but the file with bytes
 * after its end (cut there, it is still whole) */
static void truncate_generated(const char *path, const char *name, void *arg)
{
	if (strstr(name, "trailing"))
		return;
	truncate_everywhere(path, name, arg);
	(*(size_t *)arg)++;
}

START_TEST(reject_truncation_generated)
{
	size_t n = 0;

	tu_each_fixture(tu_testdata("primitiv/valid"), truncate_generated, &n);
	ck_assert_uint_ge(n, 6);
}
END_TEST

/* truncation at every byte of every reference-written file */
START_TEST(reject_truncation_everywhere)
{
	static const char *const files[] = {
		"param_2x2.data",
		"param_2x2_stats.data",
		"param_2x2_stats_dropped.data",
		"param_3x1.data",
		"param_scalar.data",
		"param_w_adam_stats.data",
		"model.model",
		"sgd.optimizer",
		"adam.optimizer",
	};
	char rel[128], path[4096];
	size_t i;

	TU_NEED_SHARED("primitiv/model.model");
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(rel, sizeof(rel), "primitiv/%s", files[i]);
		snprintf(path, sizeof(path), "%s", tu_fixture(rel));
		truncate_everywhere(path, files[i], NULL);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("primitiv");
	TCase *real = tcase_create("real");
	TCase *gen = tcase_create("generated");
	TCase *bad = tcase_create("reject");

	tcase_add_test(real, real_param_2x2);
	tcase_add_test(real, real_param_stats);
	tcase_add_test(real, real_param_shapes);
	tcase_add_test(real, real_param_adam_stats);
	tcase_add_test(real, real_model);
	tcase_add_test(real, real_optimizers);
	tcase_add_test(real, probe_is_the_15_byte_prefix);
	tcase_add_test(real, detected_real_model);
	tcase_add_test(real, detected_among_all_readers);
	tcase_add_test(gen, gen_parameter_stats);
	tcase_add_test(gen, gen_parameter_no_stats);
	tcase_add_test(gen, gen_model_nested);
	tcase_add_test(gen, gen_model_prefix_keys);
	tcase_add_test(gen, gen_big_bins);
	tcase_add_test(gen, gen_long_forms);
	tcase_add_test(gen, gen_tensor_batch);
	tcase_add_test(gen, gen_optimizers);
	tcase_add_test(gen, gen_trailing_bytes);
	tcase_add_test(bad, reject_header);
	tcase_add_test(bad, reject_param_edits);
	tcase_add_test(bad, reject_float_forms);
	tcase_add_test(bad, reject_shapes);
	tcase_add_test(bad, reject_absurd_counts);
	tcase_add_test(bad, reject_keys);
	tcase_add_test(bad, reject_config_keys);
	tcase_add_test(bad, reject_truncation_everywhere);
	tcase_add_test(bad, reject_truncation_generated);
	suite_add_tcase(s, real);
	suite_add_tcase(s, gen);
	suite_add_tcase(s, bad);
	return tu_run(s);
}
