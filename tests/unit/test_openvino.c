// SPDX-License-Identifier: MIT
/*
 * OpenVINO IR (src/formats/openvino.c) against the shared fixtures
 * (../shared/fixtures/openvino-ir: expected.json, written by its own
 * generator and checked by verify.py through Python's expat) and ours
 * (tests/fixtures/openvino/generate.py, the same layout): every Const
 * with its dtype, shape, size and bytes, the decompression chains, every
 * reject refused at the attribute that is wrong; then documents written
 * here: names (output names, clashes), versions, ids, a missing .bin, the
 * probe, and the packed bit orders.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/format.h"
#include "core/image.h"
#include "core/source.h"
#include "core/values.h"
#include "testutil.h"

/*
 * Two sets, each with an expected.json in one layout: ../shared's
 * (openvino-ir/) and ours (tests/fixtures/openvino/generate.py, the same
 * features), so every check runs on ours without ../shared.
 */
static const char *dir_of(bool shared)
{
	static char dir[2][4096];

	snprintf(dir[shared], sizeof(dir[shared]), "%s",
		 shared ? tu_fixture("openvino-ir") : tu_testdata("openvino"));
	return dir[shared];
}

static json_t *expected(const char *dir)
{
	char path[4096];
	json_error_t e;
	json_t *j;

	snprintf(path, sizeof(path), "%s/expected.json", dir);
	j = json_load_file(path, 0, &e);
	ck_assert_msg(j != NULL, "%s: %s", path, e.text);
	return j;
}

static void every_const_in(const char *dir)
{
	json_t *exp = expected(dir), *v, *c, *map, *want, *meta, *mc;
	const char *key;
	size_t i;

	map = json_object_get(json_object_get(exp, "conventions"), "dtype_map");
	json_object_foreach(json_object_get(exp, "valid"), key, v)
	{
		struct tfs_image *img = NULL;
		struct tfs_diag d;
		char path[4096];

		snprintf(path, sizeof(path), "%s/%s", dir, key);
		ck_assert_msg(tu_load_file(path, &img, &d) == 0, "%s: %s", key,
			      d.msg);
		ck_assert_uint_eq(
			img->tree->ntensors,
			json_array_size(json_object_get(v, "consts")));
		meta = tu_meta_json(img, "metadata.json");
		json_array_foreach(json_object_get(v, "consts"), i, c)
		{
			const char *name =
				json_string_value(json_object_get(c, "name"));
			const char *et = json_string_value(
				json_object_get(c, "element_type"));
			const struct tfs_tensor *t = tu_tensor(img, name);

			want = json_pack("{sOsOsOsO}", "dtype",
					 json_object_get(map, et), "shape",
					 json_object_get(c, "shape"), "nbytes",
					 json_object_get(c, "size"), "sha256",
					 json_object_get(c, "sha256"));
			tu_expect_tensor_json(img, name, want);
			json_decref(want);
			ck_assert_uint_eq(t->offset,
					  json_integer_value(json_object_get(
						  c, "offset")));
			snprintf(path, sizeof(path), "%lld",
				 json_integer_value(
					 json_object_get(c, "layer_id")));
			tu_expect_xattr(img, t->path, "openvino.layer_id",
					path);
			tu_expect_xattr(img, t->path, "openvino.element_type",
					et);
			mc = json_object_get(json_object_get(meta, "consts"),
					     name);
			ck_assert_msg(
				json_equal(json_object_get(mc, "output_names"),
					   json_object_get(c, "output_names")),
				"%s: output names", name);
		}
		ck_assert_msg(json_equal(json_object_get(meta, "decompression"),
					 json_object_get(v, "decompression")),
			      "%s: decompression chains", key);
		ck_assert_int_eq(
			json_integer_value(json_object_get(meta, "ir_version")),
			json_integer_value(json_object_get(v, "ir_version")));
		json_decref(meta);
		tfs_image_close(img);
	}
	ck_assert_uint_ge(json_object_size(json_object_get(exp, "valid")), 1);
	json_decref(exp);
}

START_TEST(every_shared_const_as_expected)
{
	TU_NEED_SHARED("openvino-ir/expected.json");
	every_const_in(dir_of(true));
}
END_TEST

START_TEST(every_const_of_ours_as_expected)
{
	every_const_in(dir_of(false));
}
END_TEST

/*
 * The graph summary and the packed values, by the generators' comments:
 * both tiny_mlp.xml (ours and ../shared's) have the same 26 layers, the
 * same names and the same packed values.
 */
static void summary_and_packed_values(const char *xml)
{
	struct tfs_image *img = NULL;
	struct tfs_diag d;
	json_t *meta;
	double v[10];
	static const double u1[10] = {1, 0, 1, 1, 0, 0, 0, 0, 0, 1};
	static const double u4[6] = {1, 2, 3, 4, 5, 6};
	static const double i4[3] = {7, -1, -8};
	const struct tfs_tensor *t;
	unsigned k;

	ck_assert_int_eq(tu_load_file(xml, &img, &d), 0);
	meta = tu_meta_json(img, "metadata.json");
	ck_assert_int_eq(json_integer_value(json_object_get(meta, "layers")),
			 26);
	ck_assert_int_eq(
		json_integer_value(json_object_get(
			json_object_get(meta, "layer_types"), "Const")),
		13);
	ck_assert_int_eq(
		json_integer_value(json_object_get(
			json_object_get(meta, "layer_types"), "MatMul")),
		3);
	ck_assert_str_eq(
		json_string_value(json_object_get(
			json_array_get(json_object_get(meta, "inputs"), 0),
			"name")),
		"x");
	ck_assert_str_eq(
		json_string_value(json_object_get(
			json_array_get(json_object_get(meta, "outputs"), 0),
			"name")),
		"y");
	/* fc1.weight feeds the first MatMul (layer 2) at port 1 */
	ck_assert_int_eq(
		json_integer_value(json_object_get(
			json_array_get(
				json_object_get(
					json_object_get(
						json_object_get(meta, "consts"),
						"fc1.weight"),
					"consumers"),
				0),
			"port")),
		1);
	json_decref(meta);
	tu_expect_xattr(img, "", "info.ir_version", "11");
	t = tu_tensor(img, "misc.u1");
	tu_expect_xattr(img, t->path, "packed_bits", "1");
	ck_assert_int_eq(tfs_values_read(img,
					 (uint32_t)(t - img->tree->tensors), 0,
					 0, 10, v),
			 0);
	for (k = 0; k < 10; k++)
		ck_assert_double_eq(v[k], u1[k]);
	t = tu_tensor(img, "misc.u4");
	tu_expect_xattr(img, t->path, "packed_bits", "4");
	ck_assert_int_eq(tfs_values_read(img,
					 (uint32_t)(t - img->tree->tensors), 0,
					 0, 6, v),
			 0);
	for (k = 0; k < 6; k++)
		ck_assert_double_eq(v[k], u4[k]);
	t = tu_tensor(img, "misc.i4");
	ck_assert_int_eq(tfs_values_read(img,
					 (uint32_t)(t - img->tree->tensors), 0,
					 0, 3, v),
			 0);
	for (k = 0; k < 3; k++)
		ck_assert_double_eq(v[k], i4[k]);
	tfs_image_close(img);
}

START_TEST(shared_summary_and_packed_values)
{
	TU_NEED_SHARED("openvino-ir/tiny_mlp.xml");
	summary_and_packed_values(tu_fixture("openvino-ir/tiny_mlp.xml"));
}
END_TEST

START_TEST(our_summary_and_packed_values)
{
	summary_and_packed_values(tu_testdata("openvino/model/tiny_mlp.xml"));
}
END_TEST

/* the offset of the first @needle in @path */
static uint64_t needle_at(const char *path, const char *needle)
{
	size_t len;
	uint8_t *b = tu_read_file(path, &len);
	const uint8_t *p = memmem(b, len, needle, strlen(needle));
	uint64_t at;

	ck_assert_msg(p != NULL, "%s: no '%s'", path, needle);
	at = (uint64_t)(p - b);
	free(b);
	return at;
}

static void every_reject_in(const char *dir)
{
	static const struct {
		const char *file, *needle, *word;
		int err;
	} v[] = {
		{"const_past_bin", "offset=\"156\"",
		 "past the end of "
		 "'const_past_bin.bin' (164 bytes)",
		 -EBADMSG},
		{"size_mismatch", "size=\"44\"",
		 "data size 44, but f32 [4,3] "
		 "takes 48 bytes",
		 -EBADMSG},
		{"xxe", "<!DOCTYPE", "DOCTYPE 'net'", -EBADMSG},
		{"billion_laughs", "<!DOCTYPE", "DOCTYPE 'net'", -EBADMSG},
		{"bad_element_type", "element_type=\"string\"",
		 "element_type 'string'", -ENOTSUP},
		{"negative_dim", "shape=\"4,-3\"", "dimension '-3'", -EBADMSG},
	};
	json_t *exp = expected(dir), *rej = json_object_get(exp, "reject");
	char rel[128], path[4096];
	size_t i;

	ck_assert_uint_eq(json_object_size(rej), sizeof(v) / sizeof(v[0]));
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		struct tfs_image *img = NULL;
		struct tfs_diag d;
		int ret;

		snprintf(rel, sizeof(rel), "reject/%s.xml", v[i].file);
		ck_assert_msg(json_object_get(rej, rel),
			      "%s: not in "
			      "expected.json",
			      rel);
		snprintf(path, sizeof(path), "%s/reject/%s.xml", dir,
			 v[i].file);
		ret = tu_load_file(path, &img, &d);
		ck_assert_msg(ret == v[i].err, "%s: %d (%s)", rel, ret, d.msg);
		ck_assert_ptr_null(img);
		ck_assert_msg(strstr(d.msg, v[i].word), "%s: '%s'", rel, d.msg);
		ck_assert_msg(!strchr(d.msg, '\n'), "%s: two lines", rel);
		ck_assert(d.has_offset);
		ck_assert_msg(d.offset == needle_at(path, v[i].needle),
			      "%s: offset %llu", rel,
			      (unsigned long long)d.offset);
	}
	json_decref(exp);
}

START_TEST(every_shared_reject_at_its_field)
{
	TU_NEED_SHARED("openvino-ir/expected.json");
	every_reject_in(dir_of(true));
}
END_TEST

START_TEST(every_reject_of_ours_at_its_field)
{
	every_reject_in(dir_of(false));
}
END_TEST

/* ---- documents written here ------------------------------------------- */

#define HEAD "<?xml version=\"1.0\"?>\n<net name=\"t\" version=\"11\">\n"

static const char *const clash_doc = HEAD
	"<layers>"
	"<layer id=\"7\" name=\"w\" type=\"Const\" version=\"opset1\">"
	"<data element_type=\"u8\" shape=\"2\" offset=\"0\" size=\"2\"/>"
	"<output><port id=\"0\" precision=\"U8\" names=\"a\\,b,c\"/>"
	"</output></layer>"
	"<layer id=\"8\" name=\"w\" type=\"Const\" version=\"opset1\">"
	"<data element_type=\"f16\" shape=\" 1, 2 \" offset=\"2\" size=\"4\"/>"
	"</layer>"
	"<layer id=\"9\" name=\"w\" type=\"Const\" version=\"opset1\">"
	"<data element_type=\"u3\" shape=\"8\" offset=\"0\" size=\"3\"/>"
	"</layer>"
	"<layer id=\"10\" name=\"s\" type=\"Const\" version=\"opset1\">"
	"<data element_type=\"i32\" shape=\"\" offset=\"0\" size=\"4\"/>"
	"</layer></layers><edges>"
	"<edge from-layer=\"10\" from-port=\"0\" to-layer=\"99\" "
	"to-port=\"0\"/></edges></net>\n";

START_TEST(names_output_names_and_clashes)
{
	struct tfs_image *img = tu_load_ok(clash_doc, strlen(clash_doc));
	const struct tfs_tensor *t;
	json_t *meta = tu_meta_json(img, "metadata.json"), *n;
	char *w;

	/* the first output name, "\," unescaped */
	t = tu_tensor(img, "a,b");
	ck_assert_ptr_nonnull(t);
	n = json_object_get(
		json_object_get(json_object_get(meta, "consts"), "a,b"),
		"output_names");
	ck_assert_uint_eq(json_array_size(n), 2);
	ck_assert_str_eq(json_string_value(json_array_get(n, 1)), "c");
	/* no output name: the layer's; the second "w" gets its id */
	t = tu_tensor(img, "w");
	ck_assert_ptr_nonnull(t);
	ck_assert_str_eq(t->dtype, "float16");
	ck_assert_uint_eq(t->ndim, 2);
	ck_assert_uint_eq(t->shape[1], 2);
	t = tu_tensor(img, "w#9");
	ck_assert_ptr_nonnull(t);
	/* u3: opaque, its packed bytes, the shape said in an xattr */
	ck_assert_str_eq(t->dtype, "void1");
	ck_assert_uint_eq(t->size, 3);
	tu_expect_xattr(img, t->path, "openvino.shape", "8");
	tu_expect_xattr(img, t->path, "packed_bits", "3");
	t = tu_tensor(img, "s");
	ck_assert_uint_eq(t->ndim, 0);
	/* an edge to layer 99: kept as a warning */
	w = json_dumps(json_object_get(meta, "warnings"), 0);
	ck_assert_ptr_nonnull(w);
	ck_assert_ptr_nonnull(strstr(w, "edges: 1 refer to a layer"));
	free(w);
	/* from memory: the .bin is not found, the files are unreadable */
	ck_assert_ptr_nonnull(tu_xattr(img, t->path, "unreadable"));
	json_decref(meta);
	tfs_image_close(img);
}
END_TEST

static void reject_doc(const char *body, int err, const char *word,
		       const char *needle)
{
	char doc[2048];

	snprintf(doc, sizeof(doc), "%s", body);
	tu_expect_reject(doc, strlen(doc), err, word,
			 needle ? (uint64_t)(strstr(doc, needle) - doc)
				: TU_ANY_OFFSET);
}

START_TEST(refusals)
{
	reject_doc("<?xml version=\"1.0\"?><net version=\"7\"/>", -ENOTSUP,
		   "IR v7", "version=\"7\"");
	reject_doc("<net version=\"12\"><layers/></net>", -ENOTSUP,
		   "net version 12", "version=");
	reject_doc("<net name=\"x\"></net>", -EBADMSG, "no 'version'", "<net");
	reject_doc(HEAD "<layers><layer id=\"1\" name=\"a\" type=\"Add\"/>"
			"<layer id=\"1\" name=\"b\" type=\"Add\"/></layers>"
			"</net>",
		   -EBADMSG, "layer id 1: given twice",
		   "<layer id=\"1\" "
		   "name=\"b\"");
	reject_doc(HEAD "<layers><layer id=\"x1\" type=\"Add\"/></layers>"
			"</net>",
		   -EBADMSG, "layer id 'x1'", "id=");
	reject_doc(HEAD "<layers><layer id=\"1\" name=\"a\" type=\"Const\">"
			"<data element_type=\"f32\" shape=\"2,?\" offset=\"0\" "
			"size=\"8\"/></layer></layers></net>",
		   -EBADMSG, "dimension '?'", "shape=");
	reject_doc(HEAD "<layers><layer id=\"1\" name=\"a\" type=\"Const\">"
			"<data element_type=\"f32\" shape=\"2\" offset=\"-1\" "
			"size=\"8\"/></layer></layers></net>",
		   -EBADMSG, "data offset '-1'", "offset=");
	reject_doc(HEAD "<layers><layer id=\"1\" name=\"a\" type=\"Const\">"
			"<data element_type=\"q9\" shape=\"2\" offset=\"0\" "
			"size=\"8\"/></layer></layers></net>",
		   -EBADMSG, "element_type 'q9': unknown", "element_type=");
	reject_doc(HEAD "<layers><layer id=\"1\" name=\"a\" type=\"Const\">"
			"<data element_type=\"u1\" shape=\"9\" offset=\"0\" "
			"size=\"1\"/></layer></layers></net>",
		   -EBADMSG, "data size 1, but u1 [9] takes 2 bytes", "size=");
	reject_doc(HEAD "<layers><layer id=\"1\" name=\"a\" type=\"Const\">"
			"<data element_type=\"f32\" shape=\"4294967296,"
			"4294967296\" offset=\"0\" size=\"8\"/></layer>"
			"</layers></net>",
		   -EOVERFLOW, "too many elements", "shape=");
	reject_doc(HEAD "<layers><layer id=\"1\" name=\"a\" type=\"Const\">"
			"</layer></layers></net>",
		   -EBADMSG, "Const without <data>", "<layer id");
	/* a layer's name in a message: '%' as %25, '/' as %2F, a control
	 * character as %XX (U+0085, one XML allows), as every reader names a
	 * tensor */
	reject_doc(HEAD "<layers><layer id=\"1\" name=\"m/a%\xc2\x85\" "
			"type=\"Const\"></layer></layers></net>",
		   -EBADMSG,
		   "layer 'm%2Fa%25%C2%85' (id 1): Const without <data>",
		   "<layer id");
	reject_doc("<netx version=\"11\"/>", -ENOEXEC, "", NULL);
}
END_TEST

START_TEST(probe_by_name_and_root)
{
	const struct tfs_format *f = tfs_format_by_name("openvino");
	static const char doc[] = "\xef\xbb\xbf<?xml version=\"1.0\"?>\n"
				  "<!-- x -->\n<net name=\"a\" version=\"11\">"
				  "</net>";
	struct tfs_source s;

	ck_assert_ptr_nonnull(f);
	tfs_source_init_memory(&s, doc, sizeof(doc) - 1);
	ck_assert_int_gt(f->probe(&s), 0);
	s.path = (char *)"dir/model.xml";
	ck_assert_int_gt(f->probe(&s), 0);
	s.path = (char *)"dir/model.txt";
	ck_assert_int_eq(f->probe(&s), 0);
	s.path = NULL;
	tfs_source_init_memory(&s, "<network version=\"11\"/>", 23);
	ck_assert_int_eq(f->probe(&s), 0);
}
END_TEST

/* a model without its .bin: listed, unreadable, the rest mounts */
/* @xml (tiny_mlp.xml) copied alone to a folder of its own */
static void missing_bin(const char *xml)
{
	char dir[] = "/tmp/tfs-ov-XXXXXX", path[64];
	struct tfs_image *img = NULL;
	struct tfs_diag d;
	const struct tfs_tensor *t;
	uint8_t *b;
	size_t len;
	FILE *f;
	struct tfs_view v;

	b = tu_read_file(xml, &len);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/model.xml", dir);
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(b, 1, len, f), len);
	fclose(f);
	free(b);
	ck_assert_int_eq(tu_load_file(path, &img, &d), 0);
	ck_assert_uint_eq(img->tree->ntensors, 13);
	t = tu_tensor(img, "fc1.weight");
	ck_assert_ptr_nonnull(t);
	ck_assert_ptr_nonnull(
		strstr(tu_xattr(img, t->path, "unreadable"), "model.bin"));
	ck_assert_int_ne(tfs_image_read(img, t->node, 0, 16, &v), 0);
	tfs_image_close(img);
	unlink(path);
	rmdir(dir);
}

START_TEST(shared_missing_bin)
{
	TU_NEED_SHARED("openvino-ir/tiny_mlp.xml");
	missing_bin(tu_fixture("openvino-ir/tiny_mlp.xml"));
}
END_TEST

START_TEST(our_missing_bin)
{
	missing_bin(tu_testdata("openvino/model/tiny_mlp.xml"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("openvino");
	TCase *tc = tcase_create("fixtures");
	TCase *own = tcase_create("own");

	tcase_add_test(tc, every_const_of_ours_as_expected);
	tcase_add_test(tc, our_summary_and_packed_values);
	tcase_add_test(tc, every_reject_of_ours_at_its_field);
	tcase_add_test(tc, our_missing_bin);
	tcase_add_test(tc, every_shared_const_as_expected);
	tcase_add_test(tc, shared_summary_and_packed_values);
	tcase_add_test(tc, every_shared_reject_at_its_field);
	tcase_add_test(tc, shared_missing_bin);
	tcase_add_test(own, names_output_names_and_clashes);
	tcase_add_test(own, refusals);
	tcase_add_test(own, probe_by_name_and_root);
	suite_add_tcase(s, own);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
