// SPDX-License-Identifier: MIT
/*
 * llamafile: the files of tests/fixtures/llamafile/generate.py (GGUFs of
 * tests/fixtures/gguf/valid put by a zipalign written from the spec into
 * the zip of a program) against its tables: every tensor's name, dtype,
 * shape, offset and sha256 (the GGUF generator's rows, the offsets moved
 * by where the member's data is), the .args shown, the refusals with
 * their offsets in the file; and a real GGUF of ../shared wrapped here the
 * same way, whose tensors must be the bare file's, byte for byte.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/image.h"
#include "core/tree.h"
#include "testutil.h"

START_TEST(generated_valid)
{
	ck_assert_uint_eq(tu_check_valid_tsv("llamafile", "llamafile"), 43);
}
END_TEST

/* the program before the zip, the .args, the members in metadata.json */
START_TEST(metadata)
{
	struct tfs_image *img;
	struct tfs_diag d;
	json_t *meta, *lf;

	ck_assert_int_eq(tu_load_file(tu_testdata("llamafile/valid/"
						  "ape_one.llamafile"),
				      &img, &d),
			 0);
	meta = tu_meta_json(img, "metadata.json");
	lf = json_object_get(meta, "llamafile");
	ck_assert_str_eq(json_string_value(json_object_get(lf, "program")),
			 "ape");
	ck_assert_str_eq(json_string_value(json_object_get(lf, "args")),
			 "-m\nv3_every_type.gguf\n--host\n0.0.0.0\n...\n");
	ck_assert_uint_eq(json_array_size(json_object_get(lf, "members")), 2);
	/* the GGUF's own metadata is the container's: it is at the root */
	ck_assert_ptr_nonnull(json_object_get(meta, "metadata"));
	json_decref(meta);
	tfs_image_close(img);

	ck_assert_int_eq(tu_load_file(tu_testdata("llamafile/valid/"
						  "script_two.llamafile"),
				      &img, &d),
			 0);
	meta = tu_meta_json(img, "metadata.json");
	lf = json_object_get(meta, "llamafile");
	ck_assert_str_eq(json_string_value(json_object_get(lf, "program")),
			 "script");
	ck_assert_int_eq(
		json_integer_value(json_object_get(lf, "gguf_members")), 2);
	ck_assert_ptr_nonnull(json_object_get(meta, "model.gguf"));
	json_decref(meta);
	tfs_image_close(img);
}
END_TEST

START_TEST(generated_reject)
{
	ck_assert_uint_eq(tu_check_reject_tsv("llamafile", ".llamafile"), 4);
}
END_TEST

/* a zip with no .gguf member (the name changed) is not claimed */
START_TEST(no_gguf_member)
{
	size_t len, i;
	uint8_t *b = tu_read_file(tu_testdata("llamafile/valid/"
					      "plain_zip.llamafile"),
				  &len);
	struct tfs_image *img = NULL;
	struct tfs_diag d;

	for (i = 0; i + 5 <= len; i++)
		if (!memcmp(b + i, ".gguf", 5))
			b[i + 1] = 'x';
	ck_assert_int_eq(tu_load_mem(b, len, &img, &d), -ENOEXEC);
	free(b);
}
END_TEST

static void put_le(struct tu_buf *o, uint64_t v, int n)
{
	uint8_t x[8];
	int i;

	for (i = 0; i < n; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	tu_buf_put(o, x, (size_t)n);
}

/*
 * a real GGUF (llama.cpp's own test model) in the zip of a script, its
 * data at a 4096-byte boundary: the same tensors as the bare file, each
 * @at bytes further (CRC fields left 0: readers of a llamafile, like
 * llama.cpp's, do not check them)
 */
START_TEST(real_gguf_wrapped)
{
	static const char rel[] =
		"../real/gguf/ollama-llama-2-tiny-random.gguf";
	static const char name[] = "tiny.gguf";
	struct tfs_image *bare, *lf;
	struct tfs_diag d;
	struct tu_buf o = {0};
	uint8_t *g;
	size_t glen, i, pad, lho = 40, at;

	TU_NEED_SHARED(rel);
	g = tu_read_file(tu_fixture(rel), &glen);
	tu_buf_put(&o, "#!/bin/sh\nexec llamafile \"$0\" \"$@\"\n#####\n", lho);
	pad = (4096 - (lho + 30 + sizeof(name) - 1 + 4) % 4096) % 4096;
	put_le(&o, 0x04034b50, 4);
	put_le(&o, 20, 2), put_le(&o, 0, 2), put_le(&o, 0, 2);
	put_le(&o, 0, 4), put_le(&o, 0, 4);
	put_le(&o, glen, 4), put_le(&o, glen, 4);
	put_le(&o, sizeof(name) - 1, 2), put_le(&o, pad + 4, 2);
	tu_buf_put(&o, name, sizeof(name) - 1);
	put_le(&o, 0xa11e, 2), put_le(&o, pad, 2);
	for (i = 0; i < pad; i++)
		tu_buf_put(&o, "", 1);
	at = o.len;
	ck_assert_uint_eq(at % 4096, 0);
	tu_buf_put(&o, g, glen);
	i = o.len;
	put_le(&o, 0x02014b50, 4);
	put_le(&o, 20, 2), put_le(&o, 20, 2), put_le(&o, 0, 2);
	put_le(&o, 0, 2), put_le(&o, 0, 4), put_le(&o, 0, 4);
	put_le(&o, glen, 4), put_le(&o, glen, 4);
	put_le(&o, sizeof(name) - 1, 2), put_le(&o, 0, 2), put_le(&o, 0, 2);
	put_le(&o, 0, 2), put_le(&o, 0, 2), put_le(&o, 0, 4);
	put_le(&o, lho, 4);
	tu_buf_put(&o, name, sizeof(name) - 1);
	put_le(&o, 0x06054b50, 4);
	put_le(&o, 0, 4), put_le(&o, 1, 2), put_le(&o, 1, 2);
	put_le(&o, o.len - 12 - i, 4), put_le(&o, i, 4), put_le(&o, 0, 2);

	ck_assert_int_eq(tu_load_mem(g, glen, &bare, &d), 0);
	ck_assert_int_eq(tu_load_mem(o.p, o.len, &lf, &d), 0);
	ck_assert_str_eq(lf->tree->format, "llamafile");
	ck_assert_uint_gt(bare->tree->ntensors, 0);
	ck_assert_uint_eq(lf->tree->ntensors, bare->tree->ntensors);
	for (i = 0; i < bare->tree->ntensors; i++) {
		const struct tfs_tensor *x = &bare->tree->tensors[i];
		const struct tfs_tensor *y = tu_tensor(lf, x->name);
		uint8_t *bx, *by;
		size_t nx, ny;

		ck_assert_msg(y != NULL, "no tensor %s", x->name);
		ck_assert_str_eq(y->dtype, x->dtype);
		ck_assert_uint_eq(y->offset, x->offset + at);
		bx = tu_read_node(bare, x->node, &nx);
		by = tu_read_node(lf, y->node, &ny);
		ck_assert_uint_eq(nx, ny);
		ck_assert_mem_eq(bx, by, nx);
		free(bx);
		free(by);
	}
	tfs_image_close(lf);
	tfs_image_close(bare);
	free(o.p);
	free(g);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("llamafile");
	TCase *tc = tcase_create("all");

	tcase_add_test(tc, generated_valid);
	tcase_add_test(tc, metadata);
	tcase_add_test(tc, generated_reject);
	tcase_add_test(tc, no_gguf_member);
	tcase_add_test(tc, real_gguf_wrapped);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
