// SPDX-License-Identifier: MIT
/*
 * Caffe reader: the files tests/fixtures/caffe/generate.py wrote from
 * caffe.proto (every blob against the writer's own sha256), the rejects,
 * the probe (never an ONNX model), and the real MTCNN det1.caffemodel of
 * ../shared/real (skipped when absent) against
 * tests/fixtures/caffe/reference_reader.py, an independent reader.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/format.h"
#include "core/source.h"
#include "core/tree.h"
#include "testutil.h"

static void expect_model(const char *path, const json_t *want,
			 const char *version)
{
	struct tfs_image *img;
	struct tfs_diag d;
	json_t *meta;

	ck_assert_msg(tu_load_file(path, &img, &d) == 0, "%s: %s", path, d.msg);
	ck_assert_str_eq(img->tree->format, "caffe");
	tu_expect_tensor_list(img, json_object_get(want, "tensors"));
	meta = tu_meta_json(img, "metadata.json");
	ck_assert_str_eq(json_string_value(json_object_get(meta, "version")),
			 version);
	json_decref(meta);
	tfs_image_close(img);
}

START_TEST(generated)
{
	json_t *exp = tu_load_json(tu_testdata("caffe/expected.json"));
	const json_t *valid = json_object_get(exp, "valid");

	expect_model(tu_testdata("caffe/valid/v2.caffemodel"),
		     json_object_get(valid, "v2.caffemodel"), "V2");
	expect_model(tu_testdata("caffe/valid/v1.caffemodel"),
		     json_object_get(valid, "v1.caffemodel"), "V1");
	ck_assert_uint_eq(json_object_size(valid), 2);
	json_decref(exp);
}
END_TEST

/* layer types and counts in metadata.json; V1's enum by its name */
START_TEST(metadata)
{
	struct tfs_image *img;
	struct tfs_diag d;
	json_t *meta, *types;

	ck_assert_int_eq(tu_load_file(tu_testdata("caffe/valid/v1.caffemodel"),
				      &img, &d),
			 0);
	meta = tu_meta_json(img, "metadata.json");
	ck_assert_str_eq(json_string_value(json_object_get(meta, "name")),
			 "old");
	ck_assert_int_eq(json_integer_value(json_object_get(meta, "layers")),
			 3);
	types = json_object_get(meta, "layer_types");
	ck_assert_int_eq(
		json_integer_value(json_object_get(types, "CONVOLUTION")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(types, "RELU")), 1);
	ck_assert_int_eq(json_integer_value(json_object_get(types, "conv")), 1);
	json_decref(meta);
	tfs_image_close(img);
}
END_TEST

START_TEST(probe)
{
	/* name "n", one V2 layer {name "l"} */
	static const uint8_t net[] = {0x0a, 0x01, 'n',	0xa2, 0x06,
				      0x03, 0x0a, 0x01, 'l'};
	/* an ONNX ModelProto: ir_version first */
	static const uint8_t onnx[] = {0x08, 0x08, 0x3a, 0x00};
	/* name only: no layer */
	static const uint8_t bare[] = {0x0a, 0x01, 'n'};
	const struct tfs_format *f = tfs_format_by_name("caffe");
	struct tfs_source s;

	tfs_source_init_memory(&s, net, sizeof(net));
	ck_assert_int_eq(f->probe(&s), 70);
	tfs_source_init_memory(&s, onnx, sizeof(onnx));
	ck_assert_int_eq(f->probe(&s), 0);
	tfs_source_init_memory(&s, bare, sizeof(bare));
	ck_assert_int_eq(f->probe(&s), 0);
	tfs_source_init_memory(&s, net, sizeof(net));
	ck_assert_int_eq(tfs_format_by_name("onnx")->probe(&s), 0);
}
END_TEST

START_TEST(rejects)
{
	json_t *exp = tu_load_json(tu_testdata("caffe/expected.json"));

	ck_assert_uint_eq(tu_expect_rejects_json("caffe/reject",
						 json_object_get(exp, "reject"),
						 "caffe"),
			  10);
	json_decref(exp);
}
END_TEST

/* MTCNN's P-Net (kpzhang93/MTCNN_face_detection_alignment): 13 blobs */
START_TEST(real_det1)
{
	json_t *exp;

	TU_NEED_SHARED("../real/caffe/det1.caffemodel");
	exp = tu_load_json(tu_testdata("caffe/real-det1.expected.json"));
	expect_model(tu_fixture("../real/caffe/det1.caffemodel"), exp, "V2");
	json_decref(exp);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("caffe");
	TCase *tc = tcase_create("caffe");

	tcase_add_test(tc, generated);
	tcase_add_test(tc, metadata);
	tcase_add_test(tc, probe);
	tcase_add_test(tc, rejects);
	tcase_add_test(tc, real_det1);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
