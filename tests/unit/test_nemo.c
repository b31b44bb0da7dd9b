// SPDX-License-Identifier: MIT
/*
 * NeMo .nemo and tar archives: the shared mlp.nemo (Python tarfile, GNU
 * format; model_weights.ckpt by torch.save) mounts model_weights.ckpt as a
 * directory whose tensors are zero-copy slices of the tar (their offsets
 * in the tar, their sha256 as expected.json says), model_config.yaml as
 * text; the gzip .nemo refused with "gunzip it first"; every tar reject
 * refused naming the field at its offset.  The same for the project's
 * (tests/fixtures/nemo/torch_written: tarfile's USTAR, torch.save), its
 * offsets as tarfile reports them; archives nested 8 deep mount, 9 do not.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/builder.h"
#include "core/image.h"
#include "testutil.h"

START_TEST(mlp_nemo)
{
	TU_NEED_SHARED("torchscript/mlp.nemo");
	json_error_t err;
	json_t *e = json_load_file(tu_fixture("torchscript/expected.json"), 0,
				   &err),
	       *v, *t, *meta, *text;
	const struct tfs_tensor *x;
	struct tfs_image *img;
	struct tfs_diag d;
	char name[256], hex[65];
	uint8_t *b, *file;
	size_t i, len, flen;

	ck_assert_ptr_nonnull(e);
	v = json_object_get(json_object_get(e, "valid"), "mlp.nemo");
	t = json_object_get(v, "model_weights_tensors");
	file = tu_read_file(tu_fixture("torchscript/mlp.nemo"), &flen);
	ck_assert_msg(
		tu_load_file(tu_fixture("torchscript/mlp.nemo"), &img, &d) == 0,
		"%s", d.msg);
	ck_assert_str_eq(img->tree->format, "nemo");
	tu_expect_xattr(img, "", "summary",
			"tar of 2 members: 1 mounted as directories, 1 shown "
			"as text");
	ck_assert_uint_eq(img->tree->ntensors, json_array_size(t));
	for (i = 0; i < json_array_size(t); i++) {
		json_t *w = json_array_get(t, i);

		snprintf(name, sizeof(name), "model_weights.ckpt/%s",
			 json_string_value(json_object_get(w, "name")));
		/* tensor names are the inner reader's, paths under the dir */
		x = NULL;
		for (size_t k = 0; k < img->tree->ntensors; k++) {
			char want[256];

			snprintf(want, sizeof(want), "%s",
				 json_string_value(json_object_get(w, "name")));
			for (char *c = want; *c; c++)
				if (*c == '.')
					*c = '/';
			if (!strcmp(img->tree->tensors[k].path + 19, want) &&
			    !strncmp(img->tree->tensors[k].path,
				     "model_weights.ckpt/", 19))
				x = &img->tree->tensors[k];
		}
		ck_assert_msg(x != NULL, "no %s", name);
		ck_assert_str_eq(x->dtype, json_string_value(json_object_get(
						   w, "dtype")));
		ck_assert_uint_eq(x->size, json_integer_value(json_object_get(
						   w, "nbytes")));
		b = tu_read_node(img, x->node, &len);
		tu_sha256_hex(b, len, hex);
		ck_assert_str_eq(
			hex, json_string_value(json_object_get(w, "sha256")));
		/*
		 * zero-copy: the offset is in the slice, the member's data
		 * at 1536 in the tar (expected.json's data_offset)
		 */
		ck_assert_uint_le(1536 + x->offset + len, flen);
		ck_assert(!memcmp(file + 1536 + x->offset, b, len));
		free(b);
	}
	meta = tu_meta_json(img, "metadata.json");
	text = json_object_get(json_object_get(meta, "text"),
			       "model_config.yaml");
	ck_assert(json_is_string(text));
	ck_assert_uint_eq(json_string_length(text), 124);
	ck_assert_int_eq(json_integer_value(json_object_get(
				 json_object_get(meta, "tar"), "count")),
			 2);
	ck_assert_uint_ne(
		tfs_tree_resolve(img->tree, ".tensorfs/model_config.yaml"),
		TFS_NO_NODE);
	json_decref(meta);
	tfs_image_close(img);
	free(file);
	json_decref(e);
}
END_TEST

START_TEST(rejects)
{
	TU_NEED_SHARED("torchscript/mlp_gz.nemo");
	uint8_t *b;
	size_t len;

	b = tu_read_file(tu_fixture("torchscript/mlp_gz.nemo"), &len);
	tu_expect_reject(b, len, -ENOTSUP, "gunzip it first", 0);
	free(b);
	b = tu_read_file(tu_fixture("torchscript/reject/tar_bad_checksum.nemo"),
			 &len);
	/* the checksum is what makes a tar: it is not one */
	tu_expect_reject(b, len, -ENOEXEC, "not a container format", 0);
	free(b);
	b = tu_read_file(
		tu_fixture("torchscript/reject/tar_member_past_eof.nemo"),
		&len);
	tu_expect_reject(b, len, -EBADMSG, "size", 1024 + 124);
	free(b);
	b = tu_read_file(
		tu_fixture("torchscript/reject/tar_path_traversal.nemo"), &len);
	tu_expect_reject(b, len, -EBADMSG, "'..'", 0);
	free(b);
}
END_TEST

/* tests/fixtures/nemo (generate.py: Python's tarfile) */
/* ---- the project's .nemo (tests/fixtures/pytorch/torch_written.py) ---- */

static json_t *own_expected(void)
{
	json_error_t err;
	json_t *e = json_load_file(
		tu_testdata("nemo/torch_written/expected.json"), 0, &err);

	ck_assert_msg(e != NULL, "expected.json: %s", err.text);
	return e;
}

/*
 * Python's tarfile put model_weights.ckpt (torch.save) and
 * model_config.yaml in it: every tensor of the weights under the member's
 * directory, zero-copy at the member's data offset tarfile reports
 */
START_TEST(project_mlp_nemo)
{
	json_t *e = own_expected(), *v, *t, *m, *meta, *text;
	struct tfs_image *img;
	struct tfs_diag d;
	uint64_t data = 0;
	uint8_t *b, *file;
	size_t i, k, len, flen;
	char path[4096], want[256], hex[65];

	snprintf(path, sizeof(path), "%s",
		 tu_testdata("nemo/torch_written/mlp.nemo"));
	v = json_object_get(e, "mlp.nemo");
	json_array_foreach(
		json_object_get(v, "members"), i,
		m) if (!strcmp(json_string_value(json_object_get(m, "name")),
			       "./model_weights.ckpt")) data =
		(uint64_t)json_integer_value(json_object_get(m, "data_offset"));
	ck_assert_uint_gt(data, 0);
	file = tu_read_file(path, &flen);
	ck_assert_msg(tu_load_file(path, &img, &d) == 0, "%s", d.msg);
	ck_assert_str_eq(img->tree->format, "nemo");
	t = json_object_get(v, "model_weights_tensors");
	ck_assert_uint_eq(img->tree->ntensors, json_array_size(t));
	for (i = 0; i < json_array_size(t); i++) {
		json_t *w = json_array_get(t, i);
		const struct tfs_tensor *x = NULL;
		char *c;

		snprintf(want, sizeof(want), "model_weights.ckpt/%s",
			 json_string_value(json_object_get(w, "name")));
		for (c = want + 19; *c; c++)
			if (*c == '.')
				*c = '/';
		for (k = 0; k < img->tree->ntensors; k++)
			if (!strcmp(img->tree->tensors[k].path, want))
				x = &img->tree->tensors[k];
		ck_assert_msg(x != NULL, "no %s", want);
		ck_assert_str_eq(x->dtype, json_string_value(json_object_get(
						   w, "dtype")));
		b = tu_read_node(img, x->node, &len);
		ck_assert_uint_eq(
			len, json_integer_value(json_object_get(w, "nbytes")));
		tu_sha256_hex(b, len, hex);
		ck_assert_str_eq(
			hex, json_string_value(json_object_get(w, "sha256")));
		ck_assert_uint_le(data + x->offset + len, flen);
		ck_assert(!memcmp(file + data + x->offset, b, len));
		free(b);
	}
	meta = tu_meta_json(img, "metadata.json");
	text = json_object_get(json_object_get(meta, "text"),
			       "model_config.yaml");
	ck_assert(json_is_string(text));
	ck_assert_uint_eq(
		json_string_length(text),
		json_integer_value(json_object_get(v, "model_config_bytes")));
	ck_assert_int_eq(json_integer_value(json_object_get(
				 json_object_get(meta, "tar"), "count")),
			 2);
	ck_assert_uint_ne(
		tfs_tree_resolve(img->tree, ".tensorfs/model_config.yaml"),
		TFS_NO_NODE);
	json_decref(meta);
	tfs_image_close(img);
	free(file);
	json_decref(e);
}
END_TEST

START_TEST(project_rejects)
{
	json_t *e = own_expected(), *r = json_object_get(e, "reject");
	uint8_t *b;
	size_t len;

	b = tu_read_file(tu_testdata("nemo/torch_written/mlp_gz.nemo"), &len);
	tu_expect_reject(b, len, -ENOTSUP, "gunzip it first", 0);
	free(b);
	b = tu_read_file(tu_testdata("nemo/torch_written/reject/"
				     "tar_bad_checksum.nemo"),
			 &len);
	tu_expect_reject(b, len, -ENOEXEC, "not a container format", 0);
	free(b);
	b = tu_read_file(tu_testdata("nemo/torch_written/reject/"
				     "tar_member_past_eof.nemo"),
			 &len);
	tu_expect_reject(b, len, -EBADMSG, "size",
			 (uint64_t)json_integer_value(json_object_get(
				 json_object_get(r, "tar_member_past_eof.nemo"),
				 "offset")));
	free(b);
	b = tu_read_file(tu_testdata("nemo/torch_written/reject/"
				     "tar_path_traversal.nemo"),
			 &len);
	tu_expect_reject(b, len, -EBADMSG, "'..'", 0);
	free(b);
	json_decref(e);
}
END_TEST

START_TEST(own_fixtures)
{
	struct tfs_image *img, *ref;
	const struct tfs_tensor *x, *y;
	struct tfs_diag d;
	json_t *meta, *members, *w;
	uint8_t *a, *b;
	size_t la, lb, i;
	bool link = false;

	ck_assert_msg(tu_load_file(tu_testdata("nemo/valid/nested.nemo"), &img,
				   &d) == 0,
		      "%s", d.msg);
	ck_assert_msg(tu_load_file(tu_testdata("torchscript/valid/"
					       "lightning_attrdict.ckpt"),
				   &ref, &d) == 0,
		      "%s", d.msg);
	/* a .nemo in a tar: its weights two directories down, same bytes */
	ck_assert_uint_eq(img->tree->ntensors, ref->tree->ntensors);
	for (i = 0; i < ref->tree->ntensors; i++) {
		char path[256];

		y = &ref->tree->tensors[i];
		snprintf(path, sizeof(path), "inner.nemo/model_weights.ckpt/%s",
			 y->path);
		x = NULL;
		for (size_t k = 0; k < img->tree->ntensors; k++)
			if (!strcmp(img->tree->tensors[k].path, path))
				x = &img->tree->tensors[k];
		ck_assert_msg(x != NULL, "no %s", path);
		a = tu_read_node(img, x->node, &la);
		b = tu_read_node(ref, y->node, &lb);
		ck_assert_uint_eq(la, lb);
		ck_assert(!memcmp(a, b, la));
		free(a);
		free(b);
	}
	meta = tu_meta_json(img, "metadata.json");
	ck_assert_str_eq(
		json_string_value(json_object_get(
			json_object_get(meta, "text"),
			"dddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
			"dddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
			"dddddd/notes.txt")),
		"long pax name\n");
	members = json_object_get(json_object_get(meta, "tar"), "members");
	json_array_foreach(
		members, i,
		w) if (!strcmp(json_string_value(json_object_get(w, "name")),
			       "link")) link =
		!strcmp(json_string_value(json_object_get(w, "as")),
			"skipped (link or device)");
	ck_assert(link);
	json_decref(meta);
	tfs_image_close(ref);
	tfs_image_close(img);

	ck_assert_int_eq(tu_load_file(tu_testdata("nemo/valid/latin1_name.tar"),
				      &img, &d),
			 0);
	meta = tu_meta_json(img, "metadata.json");
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(meta, "text"), "caf%E9.txt")),
			 "hello\n");
	json_decref(meta);
	tfs_image_close(img);

	a = tu_read_file(tu_testdata("nemo/reject/duplicate.tar"), &la);
	tu_expect_reject(a, la, -EBADMSG, "a second regular file", 1024);
	free(a);
	/* the name comes from the pax record: its offset (data of block 0) */
	a = tu_read_file(tu_testdata("nemo/reject/absolute_pax.tar"), &la);
	tu_expect_reject(a, la, -EBADMSG, "absolute", 512);
	free(a);
}
END_TEST

/* a ustar archive holding one member @name of @len bytes at @p */
static uint8_t *tar_of(const char *name, const uint8_t *p, size_t len,
		       size_t *out)
{
	size_t pad = (len + 511) / 512 * 512, i;
	uint8_t *t = calloc(1, 512 + pad + 1024);
	unsigned sum = 0;

	ck_assert_ptr_nonnull(t);
	memcpy(t, name, strlen(name));
	memcpy(t + 100, "0000644", 7);
	snprintf((char *)t + 124, 12, "%011llo", (unsigned long long)len);
	t[156] = '0';
	memcpy(t + 257,
	       "ustar\0"
	       "00",
	       8);
	memset(t + 148, ' ', 8);
	for (i = 0; i < 512; i++)
		sum += t[i];
	snprintf((char *)t + 148, 8, "%06o", sum);
	memcpy(t + 512, p, len);
	*out = 512 + pad + 1024;
	return t;
}

/* a tar in a tar ... @levels deep around a text member */
static uint8_t *nested_tars(unsigned levels, size_t *len)
{
	uint8_t *t = tar_of("a.txt", (const uint8_t *)"hello\n", 6, len), *o;

	while (levels--) {
		o = tar_of("n.nemo", t, *len, len);
		free(t);
		t = o;
	}
	return t;
}

START_TEST(nesting_limit)
{
	struct tfs_image *img;
	size_t len;
	uint8_t *t = nested_tars(TFS_MAX_SLICE_DEPTH, &len);

	/* 8 archives inside the outer one mount */
	img = tu_load_ok(t, len);
	ck_assert_str_eq(tu_xattr(img, "", "format"), "nemo");
	tfs_image_close(img);
	free(t);
	/*
	 * a 9th is refused by the 8th (the offset is not checked: the
	 * outer members' inner_failed() does not rewrite a message already
	 * set, so it stays the innermost one's, inside its slice)
	 */
	t = nested_tars(TFS_MAX_SLICE_DEPTH + 1, &len);
	tu_expect_reject(t, len, -E2BIG,
			 "tar: member 'n.nemo': archives nested deeper than 8",
			 TU_ANY_OFFSET);
	free(t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("nemo");
	TCase *tc = tcase_create("nemo");

	tcase_add_test(tc, mlp_nemo);
	tcase_add_test(tc, rejects);
	tcase_add_test(tc, project_mlp_nemo);
	tcase_add_test(tc, project_rejects);
	tcase_add_test(tc, own_fixtures);
	tcase_add_test(tc, nesting_limit);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
