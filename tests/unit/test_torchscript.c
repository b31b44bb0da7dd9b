// SPDX-License-Identifier: MIT
/*
 * TorchScript archives and a Lightning checkpoint: every file of
 * ../shared/fixtures/torchscript written by the real torch 1.13
 * (torch.jit.save, torch.save) against its expected.json (names, dtypes,
 * shapes, zero-copy file offsets, the sha256 of every tensor's bytes, the
 * root class), and every TorchScript reject refused for its reason at the
 * byte it names, found here in the file independently of the reader; the
 * same for the project's torch-written set (tests/fixtures/torchscript/
 * torch_written, made by tests/fixtures/pytorch/torch_written.py).
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/image.h"
#include "testutil.h"

static json_t *expected(void)
{
	json_error_t err;
	json_t *e = json_load_file(tu_fixture("torchscript/expected.json"), 0,
				   &err);

	ck_assert_msg(e != NULL, "expected.json: %s", err.text);
	return e;
}

static void check_tensors(struct tfs_image *img, const char *file, json_t *t)
{
	char hex[65];
	uint8_t *b;
	size_t i, len;

	ck_assert_uint_eq(img->tree->ntensors, json_array_size(t));
	for (i = 0; i < json_array_size(t); i++) {
		json_t *w = json_array_get(t, i);
		const char *name =
			json_string_value(json_object_get(w, "name"));
		const struct tfs_tensor *x = tu_tensor(img, name);
		json_t *fo = json_object_get(w, "file_offset");

		ck_assert_msg(x != NULL, "%s: no tensor '%s'", file, name);
		ck_assert_str_eq(x->dtype, json_string_value(json_object_get(
						   w, "dtype")));
		ck_assert_uint_eq(x->size,
				  (uint64_t)json_integer_value(
					  json_object_get(w, "nbytes")));
		if (fo)
			ck_assert_uint_eq(x->offset,
					  (uint64_t)json_integer_value(fo));
		b = tu_read_node(img, x->node, &len);
		tu_sha256_hex(b, len, hex);
		ck_assert_msg(!strcmp(hex, json_string_value(json_object_get(
						   w, "sha256"))),
			      "%s: '%s': sha256 %s", file, name, hex);
		free(b);
	}
}

START_TEST(scripted_and_traced)
{
	TU_NEED_SHARED("torchscript/expected.json");
	static const char *const files[] = {"cnn_scripted.pt", "mlp_traced.pt",
					    "const_traced.pt"};
	json_t *e = expected(), *v, *meta, *ts;
	struct tfs_image *img;
	struct tfs_diag d;
	char path[256];
	size_t i;

	for (i = 0; i < 3; i++) {
		v = json_object_get(json_object_get(e, "valid"), files[i]);
		ck_assert_ptr_nonnull(v);
		snprintf(path, sizeof(path), "torchscript/%s", files[i]);
		ck_assert_msg(tu_load_file(tu_fixture(path), &img, &d) == 0,
			      "%s: %s", files[i], d.msg);
		ck_assert_str_eq(img->tree->format, "torchscript");
		check_tensors(img, files[i], json_object_get(v, "tensors"));
		meta = tu_meta_json(img, "metadata.json");
		ts = json_object_get(meta, "torchscript");
		ck_assert_str_eq(
			json_string_value(json_object_get(ts, "root_class")),
			json_string_value(json_object_get(v, "root_class")));
		ck_assert_int_ne(
			json_integer_value(json_object_get(ts, "version")), 0);
		json_decref(meta);
		tfs_image_close(img);
	}
	json_decref(e);
}
END_TEST

/* attributes that are no tensors are metadata leaves; paths are dirs */
START_TEST(leaves_and_paths)
{
	TU_NEED_SHARED("torchscript/cnn_scripted.pt");
	struct tfs_image *img;
	struct tfs_diag d;
	json_t *meta, *leaves;

	ck_assert_int_eq(tu_load_file(tu_fixture("torchscript/cnn_scripted.pt"),
				      &img, &d),
			 0);
	ck_assert_ptr_nonnull(tu_tensor(img, "bn.running_var"));
	ck_assert_str_eq(tu_tensor(img, "conv1.weight")->path, "conv1/weight");
	tu_expect_xattr(img, "", "summary",
			"TorchScript module __torch__.CNN, archive version 3, "
			"10 tensors, 0 constants");
	meta = tu_meta_json(img, "metadata.json");
	leaves = json_object_get(meta, "leaves");
	ck_assert(json_is_false(json_object_get(leaves, "training")));
	ck_assert(json_is_false(json_object_get(leaves, "conv1.training")));
	/* build_intlist([0, 0, 0, 0]) is the list itself, walked by index */
	ck_assert_int_eq(json_integer_value(json_object_get(
				 leaves, "conv1._reversed_padding_repeated_"
					 "twice.3")),
			 0);
	json_decref(meta);
	tfs_image_close(img);
	ck_assert_int_eq(tu_load_file(tu_fixture("torchscript/const_traced.pt"),
				      &img, &d),
			 0);
	ck_assert_str_eq(tu_tensor(img, "CONSTANTS.c0")->path, "CONSTANTS/c0");
	tfs_image_close(img);
}
END_TEST

/* Lightning: today's torch.save reader, names as expected.json says */
START_TEST(lightning_ckpt)
{
	TU_NEED_SHARED("torchscript/lightning_like.ckpt");
	json_t *e = expected(), *v, *meta, *leaves;
	struct tfs_image *img;
	struct tfs_diag d;

	v = json_object_get(json_object_get(e, "valid"), "lightning_like.ckpt");
	ck_assert_msg(
		tu_load_file(tu_fixture("torchscript/lightning_like.ckpt"),
			     &img, &d) == 0,
		"%s", d.msg);
	ck_assert_str_eq(img->tree->format, "pytorch");
	check_tensors(img, "lightning_like.ckpt",
		      json_object_get(v, "tensors"));
	meta = tu_meta_json(img, "metadata.json");
	leaves = json_object_get(meta, "leaves");
	ck_assert_ptr_nonnull(json_object_get(leaves, "epoch"));
	ck_assert_ptr_nonnull(json_object_get(leaves, "global_step"));
	ck_assert_ptr_nonnull(
		json_object_get(leaves, "pytorch-lightning_version"));
	ck_assert(json_is_number(json_object_get(
		leaves, "optimizer_states.0.param_groups.0.lr")));
	json_decref(meta);
	tfs_image_close(img);
	json_decref(e);
}
END_TEST

/* the data offset of the stored zip record whose name ends in @suffix */
static uint64_t record_data(const uint8_t *b, size_t len, const char *suffix)
{
	size_t sl = strlen(suffix), i, n, x;

	for (i = 0; i + 30 <= len; i++) {
		if (memcmp(b + i, "PK\3\4", 4))
			continue;
		n = b[i + 26] | (size_t)b[i + 27] << 8;
		x = b[i + 28] | (size_t)b[i + 29] << 8;
		if (i + 30 + n <= len && n >= sl &&
		    !memcmp(b + i + 30 + n - sl, suffix, sl))
			return i + 30 + n + x;
	}
	ck_abort_msg("no record '%s'", suffix);
	return 0;
}

static uint64_t find(const uint8_t *b, size_t len, const void *s, size_t n)
{
	const uint8_t *p = memmem(b, len, s, n);

	ck_assert_ptr_nonnull(p);
	return (uint64_t)(p - b);
}

START_TEST(rejects)
{
	TU_NEED_SHARED("torchscript/reject/evil_os_system_script.pt");
	uint8_t *b;
	size_t len;

	b = tu_read_file(
		tu_fixture("torchscript/reject/evil_os_system_script.pt"),
		&len);
	tu_expect_reject(b, len, -ENOTSUP, "os.system",
			 find(b, len, "cos\nsystem\n", 11));
	free(b);
	b = tu_read_file(
		tu_fixture("torchscript/reject/evil_exec_constants.pt"), &len);
	tu_expect_reject(b, len, -ENOTSUP, "builtins.exec",
			 find(b, len, "cbuiltins\nexec\n", 15));
	free(b);
	b = tu_read_file(
		tu_fixture("torchscript/reject/short_storage_script.pt"), &len);
	tu_expect_reject(b, len, -EBADMSG, "holds 100 bytes",
			 record_data(b, len, "/data/1"));
	free(b);
}
END_TEST

/*
 * tests/fixtures/torchscript (generate.py, real torch.save): Lightning
 * hyper_parameters as argparse.Namespace and AttributeDict are dicts;
 * TorchScript pickles that break the object rules, at the opcode.
 */
START_TEST(own_fixtures)
{
	struct tfs_image *img;
	struct tfs_diag d;
	json_t *meta, *leaves;
	uint8_t *b;
	size_t len;

	ck_assert_msg(tu_load_file(tu_testdata("torchscript/valid/"
					       "lightning_namespace.ckpt"),
				   &img, &d) == 0,
		      "%s", d.msg);
	ck_assert_ptr_nonnull(tu_tensor(img, "state_dict.model.w"));
	meta = tu_meta_json(img, "metadata.json");
	leaves = json_object_get(meta, "leaves");
	ck_assert_int_eq(json_integer_value(json_object_get(
				 leaves, "hyper_parameters.layers")),
			 3);
	ck_assert_str_eq(json_string_value(json_object_get(
				 leaves, "hyper_parameters.optim.kind")),
			 "adam");
	json_decref(meta);
	tfs_image_close(img);
	ck_assert_msg(tu_load_file(tu_testdata("torchscript/valid/"
					       "lightning_attrdict.ckpt"),
				   &img, &d) == 0,
		      "%s", d.msg);
	meta = tu_meta_json(img, "metadata.json");
	leaves = json_object_get(meta, "leaves");
	ck_assert_str_eq(json_string_value(json_object_get(
				 leaves, "hyper_parameters.name")),
			 "mlp2");
	ck_assert_int_eq(json_integer_value(json_object_get(
				 leaves, "hyper_parameters.layers")),
			 4);
	json_decref(meta);
	tfs_image_close(img);

	/* PROTO 2, GLOBAL '__torch__ Net' (15), EMPTY_TUPLE, NEWOBJ, here */
	b = tu_read_file(tu_testdata("torchscript/reject/build_list_script.pt"),
			 &len);
	tu_expect_reject(b, len, -EBADMSG, "BUILD state is a list",
			 record_data(b, len, "/data.pkl") + 19);
	free(b);
	b = tu_read_file(
		tu_testdata("torchscript/reject/root_not_object_script.pt"),
		&len);
	tu_expect_reject(b, len, -EBADMSG, "not a __torch__ module",
			 record_data(b, len, "/data.pkl") + 2);
	free(b);
}
END_TEST

/* ---- the project's torch-written set (pytorch/torch_written.py) -------- */

static json_t *own_expected(void)
{
	json_error_t err;
	json_t *e = json_load_file(
		tu_testdata("torchscript/torch_written/expected.json"), 0,
		&err);

	ck_assert_msg(e != NULL, "expected.json: %s", err.text);
	return e;
}

static const char *own(const char *file)
{
	static char buf[4096];
	char rel[512];

	snprintf(rel, sizeof(rel), "torchscript/torch_written/%s", file);
	snprintf(buf, sizeof(buf), "%s", tu_testdata(rel));
	return buf;
}

START_TEST(project_scripted_and_traced)
{
	static const char *const files[] = {"cnn_scripted.pt", "mlp_traced.pt",
					    "const_traced.pt"};
	json_t *e = own_expected(), *v, *meta, *ts, *leaves;
	struct tfs_image *img;
	struct tfs_diag d;
	size_t i;

	for (i = 0; i < 3; i++) {
		v = json_object_get(json_object_get(e, "valid"), files[i]);
		ck_assert_ptr_nonnull(v);
		ck_assert_msg(tu_load_file(own(files[i]), &img, &d) == 0,
			      "%s: %s", files[i], d.msg);
		ck_assert_str_eq(img->tree->format, "torchscript");
		check_tensors(img, files[i], json_object_get(v, "tensors"));
		meta = tu_meta_json(img, "metadata.json");
		ts = json_object_get(meta, "torchscript");
		ck_assert_str_eq(
			json_string_value(json_object_get(ts, "root_class")),
			json_string_value(json_object_get(v, "root_class")));
		ck_assert_int_ne(
			json_integer_value(json_object_get(ts, "version")), 0);
		if (i == 0) {
			/* attributes that are no tensors are leaves */
			leaves = json_object_get(meta, "leaves");
			ck_assert(json_is_false(
				json_object_get(leaves, "training")));
			ck_assert(json_is_false(
				json_object_get(leaves, "conv1.training")));
			ck_assert_str_eq(tu_tensor(img, "conv1.weight")->path,
					 "conv1/weight");
			/* a buffer that is not persistent is still there */
			ck_assert_ptr_nonnull(tu_tensor(img, "scale"));
		}
		if (i == 2)
			ck_assert_str_eq(tu_tensor(img, "CONSTANTS.c0")->path,
					 "CONSTANTS/c0");
		json_decref(meta);
		tfs_image_close(img);
	}
	json_decref(e);
}
END_TEST

START_TEST(project_lightning_ckpt)
{
	json_t *e = own_expected(), *v, *meta, *leaves;
	struct tfs_image *img;
	struct tfs_diag d;

	v = json_object_get(json_object_get(e, "valid"), "lightning_like.ckpt");
	ck_assert_msg(tu_load_file(own("lightning_like.ckpt"), &img, &d) == 0,
		      "%s", d.msg);
	ck_assert_str_eq(img->tree->format, "pytorch");
	check_tensors(img, "lightning_like.ckpt",
		      json_object_get(v, "tensors"));
	meta = tu_meta_json(img, "metadata.json");
	leaves = json_object_get(meta, "leaves");
	ck_assert_int_eq(json_integer_value(json_object_get(leaves, "epoch")),
			 2);
	ck_assert_int_eq(
		json_integer_value(json_object_get(leaves, "global_step")), 10);
	ck_assert_str_eq(json_string_value(json_object_get(
				 leaves, "pytorch-lightning_version")),
			 "1.9.0");
	ck_assert(json_is_number(json_object_get(
		leaves, "optimizer_states.0.param_groups.0.lr")));
	json_decref(meta);
	tfs_image_close(img);
	json_decref(e);
}
END_TEST

/* each reject as expected.json says: at the global's opcode, or at the
 * data of the record cut short */
START_TEST(project_rejects)
{
	json_t *e = own_expected(), *r;
	const char *name;
	size_t len, n = 0;
	uint8_t *b;
	char rel[128];

	json_object_foreach(json_object_get(e, "reject"), name, r)
	{
		const char *at = json_string_value(json_object_get(r, "at"));
		const char *rec =
			json_string_value(json_object_get(r, "record"));
		const char *err = json_string_value(json_object_get(r, "err"));

		snprintf(rel, sizeof(rel), "reject/%s", name);
		b = tu_read_file(own(rel), &len);
		tu_expect_reject(b, len,
				 strcmp(err, "ENOTSUP") ? -EBADMSG : -ENOTSUP,
				 json_string_value(json_object_get(r, "word")),
				 at    ? find(b, len, at, strlen(at))
				 : rec ? record_data(b, len, rec)
				       : TU_ANY_OFFSET);
		free(b);
		n++;
	}
	ck_assert_uint_eq(n, 3);
	json_decref(e);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("torchscript");
	TCase *tc = tcase_create("torchscript");

	tcase_add_test(tc, scripted_and_traced);
	tcase_add_test(tc, leaves_and_paths);
	tcase_add_test(tc, lightning_ckpt);
	tcase_add_test(tc, rejects);
	tcase_add_test(tc, project_scripted_and_traced);
	tcase_add_test(tc, project_lightning_ckpt);
	tcase_add_test(tc, project_rejects);
	tcase_add_test(tc, own_fixtures);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
