// SPDX-License-Identifier: MIT
/*
 * Core ML reader: the files tests/fixtures/coreml/generate.py wrote from
 * Model.proto and NeuralNetwork.proto (convolution and deconvolution,
 * inner product in float16, batch norm, int8 raw values, a pipeline),
 * every weight against the writer's own sha256; the rejects; the probe
 * (a Core ML model is never ONNX); the real onnxmltools .mlmodel of
 * ../shared/real (skipped when absent) against
 * tests/fixtures/coreml/reference_reader.py, an independent reader.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/format.h"
#include "core/source.h"
#include "core/tree.h"
#include "testutil.h"

static void expect_model(const char *path, const json_t *want)
{
	struct tfs_image *img;
	struct tfs_diag d;

	ck_assert_msg(tu_load_file(path, &img, &d) == 0, "%s: %s", path, d.msg);
	ck_assert_str_eq(img->tree->format, "coreml");
	tu_expect_tensor_list(img, json_object_get(want, "tensors"));
	tfs_image_close(img);
}

START_TEST(generated)
{
	json_t *exp = tu_load_json(tu_testdata("coreml/expected.json"));
	const json_t *valid = json_object_get(exp, "valid");

	expect_model(tu_testdata("coreml/valid/net.mlmodel"),
		     json_object_get(valid, "net.mlmodel"));
	expect_model(tu_testdata("coreml/valid/pipeline.mlmodel"),
		     json_object_get(valid, "pipeline.mlmodel"));
	json_decref(exp);
}
END_TEST

START_TEST(probe)
{
	/* specificationVersion 4, description {}, neuralNetwork {} */
	static const uint8_t nn[] = {0x08, 0x04, 0x12, 0x00, 0xa2, 0x1f, 0x00};
	/* no model kind: not claimed from memory */
	static const uint8_t bare[] = {0x08, 0x04, 0x12, 0x00};
	const struct tfs_format *f = tfs_format_by_name("coreml");
	struct tfs_source s;

	tfs_source_init_memory(&s, nn, sizeof(nn));
	ck_assert_int_eq(f->probe(&s), 80);
	ck_assert_int_eq(tfs_format_by_name("onnx")->probe(&s), 0);
	tfs_source_init_memory(&s, bare, sizeof(bare));
	ck_assert_int_eq(f->probe(&s), 0);
}
END_TEST

START_TEST(rejects)
{
	json_t *exp = tu_load_json(tu_testdata("coreml/expected.json"));

	ck_assert_uint_eq(tu_expect_rejects_json("coreml/reject",
						 json_object_get(exp, "reject"),
						 "coreml"),
			  5);
	json_decref(exp);
}
END_TEST

/* onnxmltools' keras2coreml_Dense_ImageNet_small: one innerProduct */
START_TEST(real_dense)
{
	static const char rel[] =
		"../real/coreml/keras2coreml_Dense_ImageNet_small.mlmodel";
	json_t *exp;

	TU_NEED_SHARED(rel);
	exp = tu_load_json(
		tu_testdata("coreml/real-keras2coreml-dense.expected.json"));
	expect_model(tu_fixture(rel), exp);
	json_decref(exp);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("coreml");
	TCase *tc = tcase_create("coreml");

	tcase_add_test(tc, generated);
	tcase_add_test(tc, probe);
	tcase_add_test(tc, rejects);
	tcase_add_test(tc, real_dense);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
