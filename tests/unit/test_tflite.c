// SPDX-License-Identifier: MIT
/*
 * TFLite: every model of ../shared/fixtures/tflite (real converter output
 * from tflite-micro and TensorFlow Serving, and synthesized edge cases)
 * against its expected.json, written by the fixtures' own independent
 * reader (verify.py): per constant tensor its path, TFLite name, dtype,
 * shape, bytes, offset and sha256 of the bytes served, quantization and
 * string encoding in xattrs; tensors without data only in metadata.json;
 * version, description, subgraphs and metadata buffers in metadata.json.
 * Every reject is refused with one line naming the field and the byte
 * offset (offsets read off the files with a hex dump: see the table).
 * Then models this suite writes (tests/fixtures/tflite/generate.py):
 * name clashes, offset-mode rules, quantization rules.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/format.h"
#include "core/image.h"
#include "testutil.h"

/* "[a,b]" of a JSON array of integers */
static void shape_text(const json_t *a, char *buf, size_t cap)
{
	size_t i, o = 0;

	o += (size_t)snprintf(buf + o, cap - o, "[");
	for (i = 0; i < json_array_size(a); i++)
		o += (size_t)snprintf(
			buf + o, cap - o, "%s%lld", i ? "," : "",
			(long long)json_integer_value(json_array_get(a, i)));
	snprintf(buf + o, cap - o, "]");
}

/* xattr @key of @path is the comma list of @want (floats as float32) */
static void expect_list(struct tfs_image *img, const char *path,
			const char *key, const json_t *want, bool is_float)
{
	const char *v = tu_xattr(img, path, key);
	char *copy, *tok, *save = NULL;
	size_t i = 0;

	ck_assert_msg(v != NULL, "%s: no %s", path, key);
	copy = strdup(v);
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save), i++) {
		const json_t *e = json_array_get(want, i);

		ck_assert_msg(e != NULL, "%s: %s has too many entries", path,
			      key);
		if (is_float)
			ck_assert_msg(strtof(tok, NULL) ==
					      (float)json_number_value(e),
				      "%s: %s[%zu] = %s, want %.9g", path, key,
				      i, tok, json_number_value(e));
		else
			ck_assert_msg(strtoll(tok, NULL, 10) ==
					      json_integer_value(e),
				      "%s: %s[%zu] = %s", path, key, i, tok);
	}
	ck_assert_uint_eq(i, json_array_size(want));
	free(copy);
}

static void expect_const(struct tfs_image *img, const json_t *t)
{
	const char *path = json_string_value(json_object_get(t, "path"));
	const json_t *q = json_object_get(t, "quantization");
	const struct tfs_tensor *x = tu_tensor(img, path);
	char shape[128], num[32], hex[65];
	uint8_t *b;
	size_t len;

	ck_assert_msg(x != NULL, "no tensor '%s'", path);
	ck_assert_str_eq(x->path, path);
	ck_assert_str_eq(x->dtype,
			 json_string_value(json_object_get(t, "dtype")));
	shape_text(json_object_get(t, "shape"), shape, sizeof(shape));
	tu_expect_xattr(img, path, "shape", shape);
	tu_expect_xattr(img, path, "tflite.name",
			json_string_value(json_object_get(t, "tflite_name")));
	snprintf(num, sizeof(num), "%lld",
		 (long long)json_integer_value(json_object_get(t, "subgraph")));
	tu_expect_xattr(img, path, "tflite.subgraph", num);
	snprintf(num, sizeof(num), "%lld",
		 (long long)json_integer_value(json_object_get(t, "index")));
	tu_expect_xattr(img, path, "tflite.tensor_index", num);
	snprintf(num, sizeof(num), "%lld",
		 (long long)json_integer_value(json_object_get(t, "buffer")));
	tu_expect_xattr(img, path, "tflite.buffer", num);
	tu_expect_xattr(
		img, path, "tflite.buffer_location",
		json_string_value(json_object_get(t, "buffer_location")));
	ck_assert_uint_eq(x->offset,
			  json_integer_value(json_object_get(t, "offset")));
	ck_assert_uint_eq(x->size,
			  json_integer_value(json_object_get(t, "nbytes")));
	b = tu_read_node(img, x->node, &len);
	ck_assert_uint_eq(len, x->size);
	tu_sha256_hex(b, len, hex);
	ck_assert_msg(strcmp(hex, json_string_value(
					  json_object_get(t, "sha256"))) == 0,
		      "'%s': sha256 %s", path, hex);
	free(b);
	if (json_object_get(t, "strings"))
		tu_expect_xattr(img, path, "string_encoding", "tflite");
	else
		ck_assert_ptr_null(tu_xattr(img, path, "string_encoding"));
	if (strcmp(x->dtype, "int4") == 0)
		tu_expect_xattr(img, path, "packing", "nibble");
	if (!q) {
		ck_assert_ptr_null(tu_xattr(img, path, "tflite.scale"));
		return;
	}
	if (json_object_get(q, "scale"))
		expect_list(img, path, "tflite.scale",
			    json_object_get(q, "scale"), true);
	if (json_object_get(q, "zero_point"))
		expect_list(img, path, "tflite.zero_point",
			    json_object_get(q, "zero_point"), false);
	snprintf(num, sizeof(num), "%lld",
		 (long long)json_integer_value(
			 json_object_get(q, "quantized_dimension")));
	tu_expect_xattr(img, path, "tflite.quantized_dimension", num);
}

/* a tensor without a file: in metadata.json's tensors_without_data */
static void expect_listed(const json_t *meta, const json_t *t)
{
	const json_t *list = json_object_get(meta, "tensors_without_data");
	json_int_t sg = json_integer_value(json_object_get(t, "subgraph"));
	json_int_t ix = json_integer_value(json_object_get(t, "index"));
	const json_t *e, *want_q = json_object_get(t, "quantization");
	size_t i;

	json_array_foreach(list, i, e)
	{
		if (json_integer_value(json_object_get(e, "subgraph")) != sg ||
		    json_integer_value(json_object_get(e, "index")) != ix)
			continue;
		ck_assert_str_eq(
			json_string_value(json_object_get(e, "name")),
			json_string_value(json_object_get(t, "tflite_name")));
		ck_assert(json_equal(json_object_get(e, "shape"),
				     json_object_get(t, "shape")));
		ck_assert_int_eq(
			json_integer_value(json_object_get(e, "buffer")),
			json_integer_value(json_object_get(t, "buffer")));
		if (json_object_get(t, "shape_signature"))
			ck_assert(json_equal(
				json_object_get(e, "shape_signature"),
				json_object_get(t, "shape_signature")));
		if (json_object_get(t, "skipped"))
			ck_assert_ptr_nonnull(
				strstr(json_string_value(json_object_get(
					       e, "not_served")),
				       "sparse"));
		if (json_object_get(t, "is_variable"))
			ck_assert(json_is_true(
				json_object_get(e, "is_variable")));
		if (want_q) {
			const json_t *q = json_object_get(e, "quantization");
			static const char *const keys[] = {"zero_point", "min",
							   "max"};
			size_t k;

			ck_assert_ptr_nonnull(q);
			/* integers and floats that are exact in float32 */
			for (k = 0; k < 3; k++)
				if (json_object_get(want_q, keys[k]))
					ck_assert(json_equal(
						json_object_get(q, keys[k]),
						json_object_get(want_q,
								keys[k])));
				else
					ck_assert_ptr_null(
						json_object_get(q, keys[k]));
			ck_assert_uint_eq(
				json_array_size(json_object_get(q, "scale")),
				json_array_size(
					json_object_get(want_q, "scale")));
		}
		return;
	}
	ck_abort_msg("tensor %lld/%lld '%s' not in tensors_without_data",
		     (long long)sg, (long long)ix,
		     json_string_value(json_object_get(t, "tflite_name")));
}

static void expect_model(const char *rel, const json_t *want)
{
	char path[256];
	struct tfs_image *img;
	struct tfs_diag d;
	json_t *meta, *t, *m, *g;
	size_t i, consts = 0;

	snprintf(path, sizeof(path), "tflite/%s", rel);
	ck_assert_msg(tu_load_file(tu_fixture(path), &img, &d) == 0, "%s: %s",
		      rel, d.msg);
	ck_assert_str_eq(img->format->name, "tflite");
	meta = tu_meta_json(img, "metadata.json");
	json_array_foreach(json_object_get(want, "tensors"), i, t)
	{
		if (json_is_true(json_object_get(t, "constant"))) {
			expect_const(img, t);
			consts++;
		} else {
			expect_listed(meta, t);
		}
	}
	ck_assert_msg(img->tree->ntensors == consts, "%s: %u files, want %zu",
		      rel, img->tree->ntensors, consts);
	ck_assert_int_eq(json_integer_value(json_object_get(meta, "version")),
			 json_integer_value(json_object_get(want, "version")));
	ck_assert(json_equal(json_object_get(meta, "description"),
			     json_object_get(want, "description")));
	tu_expect_xattr(img, "", "tflite.version", "3");
	/* subgraphs: name (null when absent), tensors, inputs, outputs */
	ck_assert(json_equal(json_object_get(meta, "subgraphs"),
			     json_object_get(want, "subgraphs")));
	ck_assert_uint_eq(json_array_size(json_object_get(meta, "metadata")),
			  json_array_size(json_object_get(want, "metadata")));
	json_array_foreach(json_object_get(want, "metadata"), i, m)
	{
		g = json_array_get(json_object_get(meta, "metadata"), i);
		ck_assert(json_equal(json_object_get(g, "name"),
				     json_object_get(m, "name")));
		ck_assert(json_equal(json_object_get(g, "buffer"),
				     json_object_get(m, "buffer")));
		ck_assert(json_equal(json_object_get(g, "size"),
				     json_object_get(m, "nbytes")));
		if (json_object_get(m, "value")) {
			ck_assert(json_equal(json_object_get(g, "value"),
					     json_object_get(m, "value")));
			ck_assert(json_equal(
				json_object_get(meta, "min_runtime_version"),
				json_object_get(m, "value")));
		}
	}
	json_decref(meta);
	tfs_image_close(img);
}

START_TEST(every_fixture)
{
	json_t *exp, *want;
	const char *rel;
	size_t n = 0;

	TU_NEED_SHARED("tflite/expected.json");
	exp = tu_expected_json("tflite");
	json_object_foreach(json_object_get(exp, "valid"), rel, want)
	{
		expect_model(rel, want);
		n++;
	}
	ck_assert_uint_eq(n, 10);
	json_decref(exp);
}
END_TEST

/* all_types: what expected.json does not spell out (types, shared buffer) */
START_TEST(all_types_details)
{
	struct tfs_image *img;
	struct tfs_diag d;
	const struct tfs_tensor *x;

	TU_NEED_SHARED("tflite/synthesized/all_types.tflite");
	ck_assert_int_eq(tu_load_file(tu_fixture("tflite/synthesized/"
						 "all_types.tflite"),
				      &img, &d),
			 0);
	/* the per-channel int8 tensor: two scales on axis 0 */
	x = tu_tensor(img, "const/int8_per_channel");
	ck_assert_ptr_nonnull(x);
	tu_expect_xattr(img, x->path, "tflite.scale", "0.5,0.25");
	tu_expect_xattr(img, x->path, "tflite.zero_point", "0,-1");
	tu_expect_xattr(img, x->path, "tflite.type", "INT8");
	/* two tensors of two subgraphs on one buffer: the same bytes */
	ck_assert_uint_eq(
		tu_tensor(img, "const/float32")->offset,
		tu_tensor(img, "subgraph_1/aux/shared_weights")->offset);
	tu_expect_xattr(img, "const/int4_packed", "tflite.type", "INT4");
	tu_expect_xattr(img, "", "tflite.min_runtime_version", "1.5.0");
	tfs_image_close(img);
}
END_TEST

/*
 * The rejects: word (the field) and byte offset, read off each file with
 * xxd and cmp -l against minimal.tflite (the spec's worked example): the
 * root uoffset at 0; the Model table's soffset at 0x18; Model.subgraphs'
 * uoffset at 0x24 (zero; or +2: a vector at 0x56); the 160-byte cut of
 * minimal.tflite leaves Model.description's uoffset at 0x28 pointing at
 * 0xd4; SubGraph.tensors' length at 0x84; Tensor.buffer at 0xa0,
 * Tensor.type at 0xa8, the shape [-2]'s dim at 0xb0, the name's length
 * at 0xb4; buffer 1's data length at 0x12c; in offset_buffer_past_eof
 * (offset_buffers.tflite minus 8 bytes) buffer 2's offset field at 0x218
 * (640 + 12 > 651).
 */
static const struct {
	const char *file, *word;
	int err;
	uint64_t at;
} rejects[] = {
	{"bad_identifier", "identifier", -EBADMSG, 4},
	{"root_offset_out_of_bounds", "root table", -EBADMSG, 0},
	{"vtable_offset_out_of_bounds", "vtable", -EBADMSG, 0x18},
	{"truncated", "Model.description", -EBADMSG, 0x28},
	{"vector_length_past_end", "SubGraph.tensors", -EBADMSG, 0x84},
	{"zero_uoffset_cycle", "Model.subgraphs", -EBADMSG, 0x24},
	{"misaligned_vector", "Model.subgraphs", -EBADMSG, 0x56},
	{"string_past_end", "Tensor.name", -EBADMSG, 0xb4},
	{"buffer_index_out_of_range", "Tensor.buffer", -EBADMSG, 0xa0},
	{"data_size_mismatch", "does not match", -EBADMSG, 0x12c},
	{"unknown_tensor_type", "Tensor.type", -EBADMSG, 0xa8},
	{"negative_dim", "Tensor.shape", -EBADMSG, 0xb0},
	{"offset_buffer_past_eof", "Buffer.offset", -EBADMSG, 0x218},
};

START_TEST(every_reject)
{
	char rel[128];
	struct tfs_image *img = NULL;
	struct tfs_diag d;
	json_t *exp;
	size_t i;
	int ret;

	TU_NEED_SHARED("tflite/expected.json");
	exp = tu_expected_json("tflite");
	ck_assert_uint_eq(json_object_size(json_object_get(exp, "reject")),
			  sizeof(rejects) / sizeof(rejects[0]));
	for (i = 0; i < sizeof(rejects) / sizeof(rejects[0]); i++) {
		snprintf(rel, sizeof(rel), "%s.tflite", rejects[i].file);
		ck_assert_ptr_nonnull(
			json_object_get(json_object_get(exp, "reject"), rel));
		snprintf(rel, sizeof(rel), "tflite/reject/%s.tflite",
			 rejects[i].file);
		ret = tu_load_file(tu_fixture(rel), &img, &d);
		ck_assert_msg(ret == rejects[i].err, "%s: %d (%s)",
			      rejects[i].file, ret, d.msg);
		ck_assert_ptr_null(img);
		ck_assert_msg(strstr(d.msg, rejects[i].word) != NULL,
			      "%s: '%s' lacks '%s'", rejects[i].file, d.msg,
			      rejects[i].word);
		ck_assert_msg(d.has_offset && d.offset == rejects[i].at,
			      "%s: offset %llu, want %llu (%s)",
			      rejects[i].file, (unsigned long long)d.offset,
			      (unsigned long long)rejects[i].at, d.msg);
		ck_assert_ptr_null(strchr(d.msg, '\n'));
	}
	json_decref(exp);
}
END_TEST

/* ---- the models of tests/fixtures/tflite/generate.py -------------------- */

static int errno_of(const char *name)
{
	return strcmp(name, "EBADMSG") == 0   ? -EBADMSG
	       : strcmp(name, "E2BIG") == 0   ? -E2BIG
	       : strcmp(name, "ENOTSUP") == 0 ? -ENOTSUP
					      : 0;
}

/* valid.tsv: file, path, dtype, shape, offset, nbytes, sha256, k=v;k=v */
START_TEST(generated_valid)
{
	FILE *f = fopen(tu_testdata("tflite/valid.tsv"), "r");
	char line[1024], *col[8], *save, *kv, *s2, *eq;
	char file[256] = "", rel[300];
	struct tfs_image *img = NULL;
	const struct tfs_tensor *x;
	struct tfs_diag d;
	unsigned rows = 0, k;
	uint8_t *b;
	size_t len;
	char hex[65];

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		for (k = 0, save = NULL; k < 8; k++)
			col[k] = strtok_r(k ? NULL : line, "\t", &save);
		ck_assert_ptr_nonnull(col[7]);
		if (strcmp(file, col[0]) != 0) {
			if (img)
				tfs_image_close(img);
			snprintf(file, sizeof(file), "%s", col[0]);
			snprintf(rel, sizeof(rel), "tflite/valid/%s", file);
			ck_assert_msg(
				tu_load_file(tu_testdata(rel), &img, &d) == 0,
				"%s: %s", file, d.msg);
		}
		x = tu_tensor(img, col[1]);
		ck_assert_msg(x != NULL, "%s: no '%s'", file, col[1]);
		ck_assert_str_eq(x->dtype, col[2]);
		tu_expect_xattr(img, x->path, "shape", col[3]);
		ck_assert_uint_eq(x->offset, strtoull(col[4], NULL, 10));
		ck_assert_uint_eq(x->size, strtoull(col[5], NULL, 10));
		b = tu_read_node(img, x->node, &len);
		tu_sha256_hex(b, len, hex);
		free(b);
		ck_assert_msg(strcmp(hex, col[6]) == 0, "%s: sha256", col[1]);
		if (strcmp(col[7], "-") != 0)
			for (kv = strtok_r(col[7], ";", &s2); kv;
			     kv = strtok_r(NULL, ";", &s2)) {
				eq = strchr(kv, '=');
				*eq = '\0';
				if (strcmp(kv, "path") == 0)
					ck_assert_str_eq(x->path, eq + 1);
				else
					tu_expect_xattr(img, x->path, kv,
							eq + 1);
			}
		rows++;
	}
	fclose(f);
	tfs_image_close(img);
	ck_assert_uint_eq(rows, 40);
}
END_TEST

/* what clash.tflite lists without a file, and why; the offset warning */
START_TEST(generated_listed)
{
	static const char *const want[][2] = {
		{"act", "no data"},
		{"sparse", "sparse"},
		{"ext", "external"},
		{"res", "resource"},
	};
	struct tfs_image *img;
	struct tfs_diag d;
	json_t *meta, *list, *e, *q;
	char *warnings;
	size_t i, k;

	ck_assert_int_eq(tu_load_file(tu_testdata("tflite/valid/clash.tflite"),
				      &img, &d),
			 0);
	ck_assert_uint_eq(img->tree->ntensors, 18);
	meta = tu_meta_json(img, "metadata.json");
	list = json_object_get(meta, "tensors_without_data");
	ck_assert_uint_eq(json_array_size(list), 4);
	for (k = 0; k < 4; k++) {
		const char *why;

		e = NULL;
		for (i = 0; i < json_array_size(list); i++)
			if (strcmp(json_string_value(json_object_get(
					   json_array_get(list, i), "name")),
				   want[k][0]) == 0)
				e = json_array_get(list, i);
		ck_assert_msg(e != NULL, "'%s' not listed", want[k][0]);
		why = json_string_value(json_object_get(e, "not_served"));
		ck_assert_msg(why && strstr(why, want[k][1]), "'%s': %s",
			      want[k][0], why);
	}
	/* per-axis quantization of an activation, in metadata.json */
	e = json_array_get(list, 0);
	q = json_object_get(e, "quantization");
	ck_assert_int_eq(
		json_integer_value(json_object_get(q, "quantized_dimension")),
		1);
	ck_assert_uint_eq(json_array_size(json_object_get(q, "scale")), 4);
	ck_assert_str_eq(
		json_string_value(json_object_get(
			json_array_get(json_object_get(meta, "subgraphs"), 1),
			"name")),
		"one");
	ck_assert(json_is_null(json_object_get(
		json_array_get(json_object_get(meta, "subgraphs"), 2),
		"name")));
	json_decref(meta);
	tfs_image_close(img);

	ck_assert_int_eq(
		tu_load_file(tu_testdata("tflite/valid/offsets.tflite"), &img,
			     &d),
		0);
	meta = tu_meta_json(img, "metadata.json");
	ck_assert_uint_eq(json_array_size(json_object_get(meta, "warnings")),
			  1);
	warnings = json_dumps(json_object_get(meta, "warnings"), 0);
	ck_assert_ptr_nonnull(strstr(warnings, "both data and an offset"));
	free(warnings);
	json_decref(meta);
	tfs_image_close(img);
}
END_TEST

/*
 * Quantization fields that do not fit the tensor, a metadata entry on a
 * buffer that does not exist: they change no byte served, so a warning each
 * in metadata.json, naming the tensor and the field, and the model mounts
 * (tflite-micro's person_detect.tflite: rank-1 biases that declare
 * quantized_dimension 3).
 */
START_TEST(quantization_warnings)
{
	static const char *const want[][2] = {
		{"'bias'", "quantized_dimension: 3 is not a dimension of a "
			   "rank-1 tensor"},
		{"'w'", "scale: 3 entries for dimension 0 of size 2"},
		{"'zp'", "zero_point: 3 entries, but 2 scales"},
		{"Metadata.buffer", "buffer index 7 out of range"},
	};
	struct tfs_image *img;
	struct tfs_diag d;
	json_t *meta, *w;
	const char *s;
	size_t k, i;

	ck_assert_int_eq(
		tu_load_file(tu_testdata("tflite/valid/ignored.tflite"), &img,
			     &d),
		0);
	meta = tu_meta_json(img, "metadata.json");
	w = json_object_get(meta, "warnings");
	ck_assert_uint_eq(json_array_size(w), 4);
	for (k = 0; k < 4; k++) {
		for (i = 0; i < 4; i++) {
			s = json_string_value(json_array_get(w, i));
			ck_assert_ptr_nonnull(s);
			if (strstr(s, want[k][0]) && strstr(s, want[k][1]) &&
			    strstr(s, "ignored"))
				break;
		}
		ck_assert_msg(i < 4, "no warning %s %s", want[k][0],
			      want[k][1]);
	}
	json_decref(meta);
	tfs_image_close(img);
}
END_TEST

/*
 * Custom operators (EdgeTPU's): their name, how many, and the bytes of
 * their options in metadata.json (generate.py custom_ops: two
 * edgetpu-custom-op of 300 and 20 bytes, one detection op without
 * options; CONV_2D and a builtin above 127 are not custom)
 */
START_TEST(custom_ops)
{
	struct tfs_image *img;
	struct tfs_diag d;
	json_t *meta, *ops, *want;

	ck_assert_int_eq(
		tu_load_file(tu_testdata("tflite/valid/custom_ops.tflite"),
			     &img, &d),
		0);
	meta = tu_meta_json(img, "metadata.json");
	ops = json_object_get(meta, "custom_ops");
	want = json_pack("{s:{s:i,s:i},s:{s:i,s:i}}", "edgetpu-custom-op",
			 "operators", 2, "options_bytes", 320,
			 "TFLite_Detection_PostProcess", "operators", 1,
			 "options_bytes", 0);
	ck_assert_msg(json_equal(ops, want), "%s",
		      json_dumps(ops, JSON_COMPACT));
	ck_assert_ptr_null(json_object_get(meta, "warnings"));
	tu_expect_xattr(img, "", "info.custom_ops",
			"edgetpu-custom-op: 2 operators, 320 bytes of "
			"options; TFLite_Detection_PostProcess: 1 operator, "
			"0 bytes of options");
	json_decref(want);
	json_decref(meta);
	tfs_image_close(img);
}
END_TEST

/* reject.tsv: file, errno, a word of the message, byte offset */
START_TEST(generated_rejects)
{
	FILE *f = fopen(tu_testdata("tflite/reject.tsv"), "r");
	char line[512], *col[4], *save, rel[300];
	struct tfs_image *img = NULL;
	struct tfs_diag d;
	unsigned rows = 0, k;
	int ret;

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		for (k = 0, save = NULL; k < 4; k++)
			col[k] = strtok_r(k ? NULL : line, "\t", &save);
		ck_assert_ptr_nonnull(col[3]);
		snprintf(rel, sizeof(rel), "tflite/reject/%s", col[0]);
		ret = tu_load_file(tu_testdata(rel), &img, &d);
		ck_assert_msg(ret == errno_of(col[1]), "%s: %d (%s)", col[0],
			      ret, d.msg);
		ck_assert_ptr_null(img);
		ck_assert_msg(strstr(d.msg, col[2]) != NULL,
			      "%s: '%s' lacks '%s'", col[0], d.msg, col[2]);
		ck_assert_msg(d.has_offset &&
				      d.offset == strtoull(col[3], NULL, 10),
			      "%s: offset %llu, want %s (%s)", col[0],
			      (unsigned long long)d.offset, col[3], d.msg);
		rows++;
	}
	fclose(f);
	ck_assert_uint_eq(rows, 18);
}
END_TEST

/* every prefix of a valid model is refused with an offset inside it */
START_TEST(every_truncation)
{
	size_t len, n;
	uint8_t *b =
		tu_read_file(tu_testdata("tflite/valid/clash.tflite"), &len);
	struct tfs_image *img;
	struct tfs_diag d;
	int ret;

	for (n = 0; n < len; n++) {
		img = NULL;
		ret = tu_load_mem(b, n, &img, &d);
		if (ret == 0) {
			/* only a cut after the last byte of the flatbuffer
			 * and of every buffer could load: none here */
			ck_abort_msg("%zu of %zu bytes loaded", n, len);
		}
		ck_assert_ptr_null(img);
		if (n >= 8)
			ck_assert_msg(d.has_offset && d.offset <= n, "%zu: %s",
				      n, d.msg);
	}
	free(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tflite");
	TCase *tc = tcase_create("tflite");

	tcase_add_test(tc, every_fixture);
	tcase_add_test(tc, all_types_details);
	tcase_add_test(tc, every_reject);
	tcase_add_test(tc, generated_valid);
	tcase_add_test(tc, generated_listed);
	tcase_add_test(tc, generated_rejects);
	tcase_add_test(tc, quantization_warnings);
	tcase_add_test(tc, custom_ops);
	tcase_add_test(tc, every_truncation);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
