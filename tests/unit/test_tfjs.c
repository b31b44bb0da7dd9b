// SPDX-License-Identifier: MIT
/*
 * TensorFlow.js models (src/formats/tfjs.c): every model of the shared
 * fixtures (written by tfjs 4.22's serializer; a synthesized quantized
 * graph model with a weight straddling two shard files) and of ours
 * (tests/fixtures/tfjs/generate.py: the same features) against its
 * expected.json weight by weight: path, stored and logical dtype, shape,
 * size, the pieces it lies in (zero-copy offsets), the sha256 of its
 * bytes, quantization xattrs, decoded strings; metadata.json; every reject
 * refused with the field and the byte offset; and manifests written here
 * (loaded from memory: listed, unreadable).
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

/*
 * Two sets of models, each with an expected.json in one layout: ../shared's
 * (tfjs's own writer, a synthesized quantized graph model) and ours
 * (tests/fixtures/tfjs/generate.py: the same features), so every check
 * runs on ours without ../shared.
 */
static const char *dir_of(bool shared)
{
	static char dir[2][4096];

	snprintf(dir[shared], sizeof(dir[shared]), "%s",
		 shared ? tu_fixture("tfjs") : tu_testdata("tfjs"));
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

static char *compact(const json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

	ck_assert(s != NULL);
	return s;
}

static void expect_weight(struct tfs_image *img, const char *model,
			  const json_t *e)
{
	const char *name = json_string_value(json_object_get(e, "name"));
	const char *dtype = json_string_value(json_object_get(e, "dtype"));
	const char *logical =
		json_string_value(json_object_get(e, "logical_dtype"));
	const json_t *pieces = json_object_get(e, "pieces");
	const json_t *q = json_object_get(e, "quantization");
	const struct tfs_tensor *x = tu_tensor(img, name);
	char *shape, hex[65], num[40];
	uint8_t *b;
	size_t len;
	uint32_t n;

	ck_assert_msg(x != NULL, "%s: no weight '%s'", model, name);
	ck_assert_msg(x->unreadable == NULL, "%s: '%s' unreadable: %s", model,
		      name, x->unreadable);
	ck_assert_str_eq(x->dtype, dtype);
	shape = compact(json_object_get(e, "shape"));
	tu_expect_xattr(img, x->path, "shape", shape);
	free(shape);
	ck_assert_uint_eq(x->size,
			  json_integer_value(json_object_get(e, "nbytes")));
	if (json_array_size(pieces) == 1) {
		/* zero-copy: the very bytes of the shard file */
		ck_assert_ptr_null(x->segs);
		ck_assert_uint_eq(x->offset, json_integer_value(json_object_get(
						     json_array_get(pieces, 0),
						     "offset")));
	} else {
		size_t i;

		ck_assert_uint_eq(x->nsegs, json_array_size(pieces));
		for (i = 0; i < x->nsegs; i++) {
			const json_t *p = json_array_get(pieces, i);

			ck_assert_uint_eq(x->segs[i].offset,
					  json_integer_value(json_object_get(
						  p, "offset")));
			ck_assert_uint_eq(x->segs[i].length,
					  json_integer_value(json_object_get(
						  p, "length")));
		}
	}
	n = tfs_tree_resolve(img->tree, x->path);
	ck_assert_uint_ne(n, TFS_NO_NODE);
	b = tu_read_node(img, n, &len);
	ck_assert_uint_eq(len, x->size);
	tu_sha256_hex(b, len, hex);
	free(b);
	ck_assert_msg(strcmp(hex, json_string_value(
					  json_object_get(e, "sha256"))) == 0,
		      "%s: '%s': sha256 %s", model, name, hex);
	if (logical) {
		tu_expect_xattr(img, x->path, "logical_dtype", logical);
		tu_expect_xattr(img, x->path, "quant.scheme",
				strcmp(dtype, "float16") == 0 ? "tfjs-float16"
							      : "tfjs-affine");
		if (json_object_get(q, "scale")) {
			snprintf(
				num, sizeof(num), "%.17g",
				json_number_value(json_object_get(q, "scale")));
			tu_expect_xattr(img, x->path, "quant.scale", num);
			snprintf(num, sizeof(num), "%.17g",
				 json_number_value(json_object_get(q, "min")));
			tu_expect_xattr(img, x->path, "quant.min", num);
		}
	} else {
		ck_assert_ptr_null(tu_xattr(img, x->path, "quant.scheme"));
	}
}

static void check_model(const char *dir, const char *model, const json_t *m)
{
	char path[4096];
	struct tfs_image *img = NULL;
	struct tfs_diag d;
	const json_t *w, *meta_want = json_object_get(m, "model");
	json_t *meta, *strs;
	const char *k;
	json_t *v;
	size_t i;
	int ret;

	snprintf(path, sizeof(path), "%s/%s/model.json", dir, model);
	ret = tu_load_file(path, &img, &d);
	ck_assert_msg(ret == 0, "%s: %s", model, d.msg);
	ck_assert_str_eq(img->format->name, "tfjs");
	ck_assert_uint_eq(img->tree->ntensors,
			  json_array_size(json_object_get(m, "weights")));
	json_array_foreach(json_object_get(m, "weights"), i, w)
		expect_weight(img, model, w);
	meta = tu_meta_json(img, "metadata.json");
	json_object_foreach((json_t *)meta_want, k, v)
		ck_assert_msg(json_equal(json_object_get(meta, k), v),
			      "%s: metadata %s", model, k);
	ck_assert_ptr_null(json_object_get(meta, "weightsManifest"));
	ck_assert_ptr_nonnull(json_object_get(meta, "modelTopology"));
	/* the decoded strings */
	strs = json_object_get(meta, "string_weights");
	json_array_foreach(json_object_get(m, "weights"), i,
			   w) if (json_object_get(w, "strings"))
		ck_assert(json_equal(
			json_object_get(strs, json_string_value(json_object_get(
						      w, "name"))),
			json_object_get(w, "strings")));
	json_decref(meta);
	tfs_image_close(img);
}

static void every_model_in(const char *dir)
{
	json_t *e = expected(dir);
	const char *k;
	json_t *m;

	ck_assert_uint_ge(json_object_size(json_object_get(e, "valid")), 2);
	json_object_foreach(json_object_get(e, "valid"), k, m)
		check_model(dir, k, m);
	json_decref(e);
}

START_TEST(every_shared_model_as_expected)
{
	TU_NEED_SHARED("tfjs/expected.json");
	every_model_in(dir_of(true));
}
END_TEST

START_TEST(every_model_of_ours_as_expected)
{
	every_model_in(dir_of(false));
}
END_TEST

/* @layers: a layers model with Adam's state; @graph: a graph model with
 * userDefinedMetadata.note @note */
static void optimizer_and_info(const char *layers, const char *graph,
			       const char *note)
{
	struct tfs_image *img = NULL;
	struct tfs_diag d;
	const struct tfs_tensor *x;
	json_t *meta;

	ck_assert_int_eq(tu_load_file(layers, &img, &d), 0);
	x = tu_tensor(img, "d/kernel/m");
	ck_assert_str_eq(x->path, "optimizer/d/kernel/m");
	tu_expect_xattr(img, x->path, "tfjs.group", "optimizer");
	x = tu_tensor(img, "d/kernel");
	ck_assert_str_eq(x->path, "d/kernel");
	ck_assert_ptr_null(tu_xattr(img, "d/kernel", "tfjs.group"));
	tu_expect_xattr(img, "", "info.generation", "layers-model");
	meta = tu_meta_json(img, "metadata.json");
	ck_assert_ptr_nonnull(json_object_get(meta, "trainingConfig"));
	json_decref(meta);
	tfs_image_close(img);

	ck_assert_int_eq(tu_load_file(graph, &img, &d), 0);
	meta = tu_meta_json(img, "metadata.json");
	ck_assert_str_eq(
		json_string_value(json_object_get(
			json_object_get(meta, "userDefinedMetadata"), "note")),
		note);
	json_decref(meta);
	tfs_image_close(img);
}

START_TEST(shared_optimizer_and_info)
{
	char layers[4096];

	TU_NEED_SHARED("tfjs/reference-written/layers_with_optimizer/"
		       "model.json");
	TU_NEED_SHARED("tfjs/synthesized/graph_model_quantized/model.json");
	snprintf(layers, sizeof(layers), "%s",
		 tu_fixture("tfjs/reference-written/layers_with_optimizer/"
			    "model.json"));
	optimizer_and_info(layers,
			   tu_fixture("tfjs/synthesized/graph_model_quantized/"
				      "model.json"),
			   "synthesized tensorfs fixture");
}
END_TEST

START_TEST(our_optimizer_and_info)
{
	char layers[4096];

	snprintf(layers, sizeof(layers), "%s",
		 tu_testdata("tfjs/models/layers/model.json"));
	optimizer_and_info(layers,
			   tu_testdata("tfjs/models/quantized/model.json"),
			   "tensorfs's own fixture");
}
END_TEST

/* every reject: its reason, the offset of the field that breaks it */
static const struct {
	const char *dir;
	const char *word;
	const char *needle; /* the offset: first byte of this in model.json */
} rejects[] = {
	{"bad_quantization_dtype", "unknown quantization dtype", "\"int8\""},
	{"duplicate_name", "duplicate weight name", NULL},
	{"fractional_dim", "bad dimension", "1.5"},
	{"missing_shard", "missing shard", "\"./model.weights2.bin\""},
	{"negative_dim", "bad dimension", "-1"},
	{"no_weights_manifest", "no weightsManifest", NULL},
	{"not_json", "", NULL},
	{"path_traversal", "escapes the model folder",
	 "\"../model.weights.bin\""},
	{"quantization_without_scale", "without scale/min", NULL},
	{"short_shard", "past the end", NULL},
	{"string_length_past_end", "string bytes past end", NULL},
	{"unknown_dtype", "unknown dtype", "\"float64\""},
};

static void every_reject_in(const char *dir)
{
	json_t *e = expected(dir);
	size_t i, len;

	ck_assert_uint_eq(json_object_size(json_object_get(e, "reject")),
			  sizeof(rejects) / sizeof(*rejects));
	for (i = 0; i < sizeof(rejects) / sizeof(*rejects); i++) {
		char rel[4096];
		struct tfs_image *img = NULL;
		struct tfs_diag d;
		uint8_t *b;
		int ret;

		ck_assert_ptr_nonnull(json_object_get(
			json_object_get(e, "reject"), rejects[i].dir));
		snprintf(rel, sizeof(rel), "%s/reject/%s/model.json", dir,
			 rejects[i].dir);
		ret = tu_load_file(rel, &img, &d);
		ck_assert_msg(ret < 0, "%s: loaded", rejects[i].dir);
		ck_assert_msg(strstr(d.msg, rejects[i].word), "%s: '%s'",
			      rejects[i].dir, d.msg);
		ck_assert_msg(d.has_offset, "%s: no offset: %s", rejects[i].dir,
			      d.msg);
		ck_assert_msg(!strchr(d.msg, '\n'), "%s", d.msg);
		if (rejects[i].needle) {
			const char *p;

			b = tu_read_file(rel, &len);
			p = memmem(b, len, rejects[i].needle,
				   strlen(rejects[i].needle));
			ck_assert_ptr_nonnull(p);
			ck_assert_msg(d.offset == (uint64_t)(p - (char *)b),
				      "%s: offset %llu: %s", rejects[i].dir,
				      (unsigned long long)d.offset, d.msg);
			free(b);
		}
	}
	json_decref(e);
}

START_TEST(every_shared_reject_refused)
{
	TU_NEED_SHARED("tfjs/expected.json");
	every_reject_in(dir_of(true));
}
END_TEST

START_TEST(every_reject_of_ours_refused)
{
	every_reject_in(dir_of(false));
}
END_TEST

/* a manifest in memory: probed by its key, weights listed, unreadable */
START_TEST(manifest_in_memory)
{
	static const char doc[] =
		"{\"format\":\"graph-model\",\"weightsManifest\":[{\"paths\":"
		"[\"a.bin\"],\"weights\":[{\"name\":\"x/y\",\"shape\":[2,3],"
		"\"dtype\":\"float32\"},{\"name\":\"q\",\"shape\":[4],"
		"\"dtype\":\"int32\",\"quantization\":{\"dtype\":\"uint16\","
		"\"scale\":0.5,\"min\":-100}}]}]}";
	static const char bare[] =
		"[{\"paths\":[\"w.bin\"],\"weights\":[{\"name\":\"k\","
		"\"shape\":[],\"dtype\":\"bool\"}]}]";
	struct tfs_image *img = tu_load_ok(doc, sizeof(doc) - 1);
	const struct tfs_tensor *x;

	ck_assert_str_eq(img->format->name, "tfjs");
	x = tu_tensor(img, "x/y");
	ck_assert_str_eq(x->path, "x/y");
	ck_assert_uint_eq(x->size, 24);
	ck_assert_ptr_nonnull(x->unreadable);
	x = tu_tensor(img, "q");
	ck_assert_str_eq(x->dtype, "uint16");
	ck_assert_uint_eq(x->size, 8);
	tu_expect_xattr(img, "q", "quant.scale", "0.5");
	tu_expect_xattr(img, "q", "quant.min", "-100");
	tu_expect_xattr(img, "q", "logical_dtype", "int32");
	tfs_image_close(img);
	img = tu_load_ok(bare, sizeof(bare) - 1);
	ck_assert_str_eq(tu_tensor(img, "k")->dtype, "bool");
	tfs_image_close(img);
}
END_TEST

START_TEST(manifest_rejects_in_memory)
{
	/* float16 quantization of an int32 weight */
	tu_expect_reject(
		"{\"weightsManifest\":[{\"paths\":[],\"weights\":[{\"name\":"
		"\"a\",\"shape\":[1],\"dtype\":\"int32\",\"quantization\":"
		"{\"dtype\":\"float16\"}}]}]}",
		122, -EBADMSG, "quantization of a int32", 98);
	/* a URL as a shard path */
	tu_expect_reject("{\"weightsManifest\":[{\"paths\":[\"http://x/a\"],"
			 "\"weights\":[]}]}",
			 59, -EBADMSG, "escapes", 30);
	/* a group without weights */
	tu_expect_reject("{\"weightsManifest\":[{\"paths\":[]}]}", 34, -EBADMSG,
			 "no weights", 20);
}
END_TEST

/* our own model (tests/fixtures/tfjs/generate.py), from its folder */
START_TEST(our_model_from_disk)
{
	struct tfs_image *img = NULL;
	struct tfs_diag d;
	uint8_t *b;
	size_t len;
	float f[6];
	json_t *meta;

	ck_assert_int_eq(tu_load_file(tu_testdata("tfjs/valid/graph/"
						  "model.manifest"),
				      &img, &d),
			 0);
	b = tu_read_node(img, tfs_tree_resolve(img->tree, "dense/kernel"),
			 &len);
	ck_assert_uint_eq(len, 24);
	memcpy(f, b, 24);
	ck_assert(f[0] == 1.0f && f[5] == 6.0f);
	free(b);
	b = tu_read_node(img, tfs_tree_resolve(img->tree, "dense/q"), &len);
	ck_assert_uint_eq(len, 4);
	ck_assert(b[0] == 0 && b[3] == 3);
	free(b);
	tu_expect_xattr(img, "words", "string_encoding", "tfjs");
	meta = tu_meta_json(img, "metadata.json");
	ck_assert_str_eq(
		json_string_value(json_array_get(
			json_object_get(json_object_get(meta, "string_weights"),
					"words"),
			0)),
		"ab");
	json_decref(meta);
	tfs_image_close(img);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tfjs");
	TCase *tc = tcase_create("tfjs");

	tcase_add_test(tc, every_model_of_ours_as_expected);
	tcase_add_test(tc, our_optimizer_and_info);
	tcase_add_test(tc, every_reject_of_ours_refused);
	tcase_add_test(tc, every_shared_model_as_expected);
	tcase_add_test(tc, shared_optimizer_and_info);
	tcase_add_test(tc, every_shared_reject_refused);
	tcase_add_test(tc, manifest_in_memory);
	tcase_add_test(tc, manifest_rejects_in_memory);
	tcase_add_test(tc, our_model_from_disk);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
