// SPDX-License-Identifier: MIT
/*
 * TensorFlow V2 checkpoints (src/formats/tf_checkpoint.c): every bundle
 * of the shared fixtures (TF Serving's real bundles, two with snappy
 * blocks; synthesized all-dtype and multi-shard ones) and of ours
 * (tests/fixtures/tf_checkpoint: all dtypes, 3 shards, snappy blocks)
 * against its expected.json tensor by tensor: display path (the TF2 suffix
 * rule), dtype, shape, size, shard offset (zero-copy), the sha256 of the bytes,
 * the CRC32C digest, decoded strings; every reject refused naming the
 * rule and the byte offset (the tensor CRC one: EIO on read); our own
 * bundle (tests/fixtures/tf_checkpoint) loaded from memory: listed,
 * unreadable.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse/sstable.h"
#include "core/format.h"
#include "core/image.h"
#include "testutil.h"

/*
 * The two sets of bundles, each with its expected.json in one layout:
 * ../shared's (real TF Serving bundles and synthesized ones) and ours
 * (tests/fixtures/tf_checkpoint/generate.py: all dtypes, 3 shards, snappy
 * blocks, the rejects), so every check below runs on ours without ../shared.
 */
static const char *shared_dir(void)
{
	static char dir[4096];

	snprintf(dir, sizeof(dir), "%s", tu_fixture("tf-checkpoint"));
	return dir;
}

static const char *our_dir(void)
{
	static char dir[4096];

	snprintf(dir, sizeof(dir), "%s", tu_testdata("tf_checkpoint"));
	return dir;
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

/* expected.json keeps TF's names where tensorfs has plain integers */
static const char *tfs_name(const char *dtype)
{
	static const char *const map[][2] = {
		{"qint8", "int8"},   {"quint8", "uint8"},
		{"qint16", "int16"}, {"quint16", "uint16"},
		{"qint32", "int32"}, {"float8_e4m3fn", "float8_e4m3"},
	};
	size_t i;

	for (i = 0; i < sizeof(map) / sizeof(*map); i++)
		if (strcmp(dtype, map[i][0]) == 0)
			return map[i][1];
	return dtype;
}

static void expect_tensor(struct tfs_image *img, const char *bundle,
			  const json_t *e, const json_t *strings)
{
	const char *key = json_string_value(json_object_get(e, "key"));
	const char *name = json_string_value(json_object_get(e, "name"));
	const char *dtype = json_string_value(json_object_get(e, "dtype"));
	const struct tfs_tensor *x = tu_tensor(img, key);
	char *shape, hex[65], digest[32];
	unsigned long masked;
	uint8_t *b;
	size_t len;
	uint32_t n;

	ck_assert_msg(x != NULL, "%s: no tensor '%s'", bundle, key);
	ck_assert_msg(strcmp(x->path, name) == 0, "%s: '%s' at %s", bundle, key,
		      x->path);
	ck_assert_ptr_null(x->unreadable);
	ck_assert_str_eq(x->dtype, tfs_name(dtype));
	shape = json_dumps(json_object_get(e, "shape"), JSON_COMPACT);
	tu_expect_xattr(img, x->path, "shape", shape);
	free(shape);
	tu_expect_xattr(img, x->path, "key", key);
	ck_assert_uint_eq(x->size,
			  json_integer_value(json_object_get(e, "nbytes")));
	ck_assert_uint_eq(x->offset,
			  json_integer_value(json_object_get(e, "offset")));
	n = tfs_tree_resolve(img->tree, x->path);
	b = tu_read_node(img, n, &len);
	ck_assert_uint_eq(len, x->size);
	tu_sha256_hex(b, len, hex);
	ck_assert_msg(strcmp(hex, json_string_value(
					  json_object_get(e, "sha256"))) == 0,
		      "%s: '%s': sha256", bundle, key);
	masked = strtoul(json_string_value(json_object_get(e, "crc32c_masked")),
			 NULL, 16);
	if (strcmp(dtype, "string") == 0) {
		tu_expect_xattr(img, x->path, "string_encoding", "tf_bundle");
		ck_assert(json_equal(json_object_get(strings, key),
				     json_object_get(e, "strings")));
	} else {
		/* the digest: the unmasked CRC, by our own bitwise CRC too */
		ck_assert_uint_eq(tu_crc32c_bitwise(b, len),
				  tfs_sst_unmask((uint32_t)masked));
		snprintf(digest, sizeof(digest), "crc32c:0x%08X",
			 tfs_sst_unmask((uint32_t)masked));
		ck_assert_str_eq(x->digest, digest);
	}
	free(b);
}

static void every_bundle_in(const char *dir)
{
	json_t *e = expected(dir), *m, *t, *meta;
	const char *k;
	size_t i;

	ck_assert_uint_ge(json_object_size(json_object_get(e, "valid")), 3);
	json_object_foreach(json_object_get(e, "valid"), k, m)
	{
		char rel[4096];
		struct tfs_image *img = NULL;
		struct tfs_diag d;

		snprintf(rel, sizeof(rel), "%s/%s.index", dir, k);
		ck_assert_msg(tu_load_file(rel, &img, &d) == 0, "%s: %s", k,
			      d.msg);
		ck_assert_str_eq(img->format->name, "tf_checkpoint");
		ck_assert_uint_eq(
			img->tree->ntensors,
			json_array_size(json_object_get(m, "tensors")));
		meta = tu_meta_json(img, "metadata.json");
		ck_assert_int_eq(
			json_integer_value(json_object_get(meta, "num_shards")),
			json_integer_value(json_object_get(
				json_object_get(m, "header"), "num_shards")));
		json_array_foreach(json_object_get(m, "tensors"), i, t)
			expect_tensor(img, k, t,
				      json_object_get(meta, "string_tensors"));
		json_decref(meta);
		tfs_image_close(img);
	}
	json_decref(e);
}

START_TEST(every_shared_bundle_as_expected)
{
	TU_NEED_SHARED("tf-checkpoint/expected.json");
	every_bundle_in(shared_dir());
}
END_TEST

START_TEST(every_bundle_of_ours_as_expected)
{
	every_bundle_in(our_dir());
}
END_TEST

static const struct {
	const char *path; /* under reject/ */
	const char *word;
} rejects[] = {
	{"bad_magic/ckpt.index", "bad table magic"},
	{"handle_past_eof/ckpt.index", "past end of file"},
	{"block_crc_mismatch/ckpt.index", "checksum mismatch"},
	{"bad_compression_type/ckpt.index", "bad block type 2"},
	{"entry_past_shard/ckpt.index", "past the end of its shard"},
	{"missing_shard/ckpt.index", "missing shard 1"},
	{"shard_id_out_of_range/ckpt.index", "shard_id 5 out of range"},
	{"size_shape_mismatch/ckpt.index", "size 12 != 2 elements"},
	{"negative_dim/ckpt.index", "negative dimension"},
	{"unknown_dtype/ckpt.index", "unknown dtype 99"},
	{"big_endian/ckpt.index", "big-endian bundle"},
	{"unsorted_keys/ckpt.index", "not strictly increasing"},
	{"bad_restart_count/ckpt.index", "bad restart count"},
	{"v1_checkpoint/model.ckpt-0", "TensorFlow V1 checkpoint"},
	{"no_header_entry/ckpt.index", "first key is not the empty header"},
	{"truncated_index/ckpt.index", "shorter than the 48-byte footer"},
	/* newer than ../shared's copy of the fixtures: ours only */
	{"offset_wire_type/ckpt.index",
	 "BundleEntryProto.offset: wire type LEN, not VARINT"},
};
#define SHARED_REJECTS (sizeof(rejects) / sizeof(*rejects) - 1)

static void every_reject_in(const char *dir, size_t n)
{
	json_t *e = expected(dir);
	size_t i;

	/* every reject but tensor_crc_mismatch (a read fails: in "reject"
	 * in ../shared's, in "read_eio" in ours) has a row */
	ck_assert_uint_eq(
		json_object_size(json_object_get(e, "reject")) +
			json_object_size(json_object_get(e, "read_eio")),
		n + 1);
	for (i = 0; i < n; i++) {
		char rel[4096];
		struct tfs_image *img = NULL;
		struct tfs_diag d;
		int ret;

		snprintf(rel, sizeof(rel), "%s/reject/%s", dir,
			 rejects[i].path);
		ret = tu_load_file(rel, &img, &d);
		ck_assert_msg(ret < 0, "%s: loaded", rejects[i].path);
		ck_assert_msg(strstr(d.msg, rejects[i].word), "%s: '%s'",
			      rejects[i].path, d.msg);
		ck_assert_msg(d.has_offset, "%s: no offset: %s",
			      rejects[i].path, d.msg);
	}
	json_decref(e);
}

START_TEST(every_shared_reject_refused)
{
	TU_NEED_SHARED("tf-checkpoint/expected.json");
	every_reject_in(shared_dir(), SHARED_REJECTS);
}
END_TEST

START_TEST(every_reject_of_ours_refused)
{
	every_reject_in(our_dir(), sizeof(rejects) / sizeof(*rejects));
}
END_TEST

/* the tensor's CRC: mounted, but its bytes are never served */
static void tensor_crc_mismatch_in(const char *path)
{
	struct tfs_image *img = NULL;
	struct tfs_view v;
	struct tfs_diag d;
	uint32_t n, i, eio = 0;
	int ret;

	ck_assert_int_eq(tu_load_file(path, &img, &d), 0);
	/* w's first byte changed, x untouched */
	for (i = 0; i < img->tree->ntensors; i++) {
		n = tfs_tree_resolve(img->tree, img->tree->tensors[i].path);
		ret = tfs_image_read(img, n, 0, 4096, &v);
		if (!ret)
			tfs_view_release(img, &v);
		else
			ck_assert_int_eq(ret, -EIO);
		eio += ret == -EIO;
	}
	ck_assert_uint_eq(eio, 1);
	tfs_image_close(img);
}

START_TEST(shared_tensor_crc_mismatch_fails_on_read)
{
	TU_NEED_SHARED("tf-checkpoint/reject/tensor_crc_mismatch/ckpt.index");
	tensor_crc_mismatch_in(
		tu_fixture("tf-checkpoint/reject/tensor_crc_mismatch/"
			   "ckpt.index"));
}
END_TEST

START_TEST(our_tensor_crc_mismatch_fails_on_read)
{
	tensor_crc_mismatch_in(tu_testdata("tf_checkpoint/read_eio/"
					   "tensor_crc_mismatch/ckpt.index"));
}
END_TEST

/* @path: a 3-shard bundle with optimizer slots and a checkpoint file */
static void tf2_names_in(const char *path)
{
	struct tfs_image *img = NULL;
	struct tfs_diag d;
	json_t *meta, *st;

	ck_assert_int_eq(tu_load_file(path, &img, &d), 0);
	/* a slot stays apart, under its .OPTIMIZER_SLOT folder */
	ck_assert_str_eq(tu_tensor(img,
				   "model/layer_with_weights-0/kernel/"
				   ".OPTIMIZER_SLOT/optimizer/m/.ATTRIBUTES/"
				   "VARIABLE_VALUE")
				 ->path,
			 "model/layer_with_weights-0/kernel/.OPTIMIZER_SLOT/"
			 "optimizer/m");
	tu_expect_xattr(img, "", "info.generation",
			"V2 tensor bundle, 3 shards");
	/* the checkpoint file beside it names this bundle */
	meta = tu_meta_json(img, "metadata.json");
	st = json_object_get(meta, "checkpoint_state");
	ck_assert_str_eq(
		json_string_value(json_object_get(st, "model_checkpoint_path")),
		"model.ckpt-7");
	ck_assert(json_is_true(json_object_get(st, "latest")));
	json_decref(meta);
	tfs_image_close(img);
}

START_TEST(shared_tf2_names_and_info)
{
	TU_NEED_SHARED("tf-checkpoint/synthesized/multi_shard/"
		       "model.ckpt-7.index");
	tf2_names_in(tu_fixture("tf-checkpoint/synthesized/multi_shard/"
				"model.ckpt-7.index"));
}
END_TEST

START_TEST(our_tf2_names_and_info)
{
	tf2_names_in(tu_testdata("tf_checkpoint/bundles/multi_shard/"
				 "model.ckpt-7.index"));
}
END_TEST

/*
 * A checkpoint file beside @path written on another machine, naming
 * .../export by an absolute path: by basename, and not this bundle
 */
static void checkpoint_of_another_machine(const char *path)
{
	struct tfs_image *img = NULL;
	struct tfs_diag d;
	json_t *meta, *st;

	ck_assert_int_eq(tu_load_file(path, &img, &d), 0);
	meta = tu_meta_json(img, "metadata.json");
	st = json_object_get(meta, "checkpoint_state");
	ck_assert_str_eq(
		json_string_value(json_object_get(st, "model_checkpoint_path")),
		"export");
	ck_assert(json_is_false(json_object_get(st, "latest")));
	json_decref(meta);
	tfs_image_close(img);
}

/* TF Serving's own */
START_TEST(checkpoint_file_of_another_machine)
{
	TU_NEED_SHARED("tf-checkpoint/real/half_plus_two_cpu/variables.index");
	checkpoint_of_another_machine(tu_fixture(
		"tf-checkpoint/real/half_plus_two_cpu/variables.index"));
}
END_TEST

START_TEST(our_checkpoint_file_of_another_machine)
{
	checkpoint_of_another_machine(
		tu_testdata("tf_checkpoint/bundles/all_dtypes/ckpt.index"));
}
END_TEST

/* our bundle from memory: no shards to find, every tensor listed */
START_TEST(index_in_memory)
{
	size_t len;
	uint8_t *b = tu_read_file(tu_testdata("tf_checkpoint/valid/tiny/"
					      "tiny.index"),
				  &len);
	struct tfs_image *img = tu_load_ok(b, len);
	const struct tfs_tensor *x;

	ck_assert_uint_eq(img->tree->ntensors, 4);
	x = tu_tensor(img, "m/k/.ATTRIBUTES/VARIABLE_VALUE");
	ck_assert_str_eq(x->path, "m/k");
	ck_assert_ptr_nonnull(x->unreadable);
	ck_assert_str_eq(tu_tensor(img, "i8")->dtype, "int8");
	tfs_image_close(img);
	free(b);
}
END_TEST

/* our bundle from its file: every value */
START_TEST(tiny_bundle)
{
	struct tfs_image *img = NULL;
	struct tfs_diag d;
	uint8_t *b;
	size_t len;
	float f[2];
	json_t *meta;

	ck_assert_int_eq(tu_load_file(tu_testdata("tf_checkpoint/valid/tiny/"
						  "tiny.index"),
				      &img, &d),
			 0);
	b = tu_read_node(img, tfs_tree_resolve(img->tree, "w"), &len);
	ck_assert_uint_eq(len, 8);
	memcpy(f, b, 8);
	ck_assert(f[0] == 1.0f && f[1] == -2.0f);
	free(b);
	meta = tu_meta_json(img, "metadata.json");
	ck_assert_str_eq(
		json_string_value(json_object_get(
			json_array_get(
				json_object_get(
					json_object_get(meta, "string_tensors"),
					"s"),
				0),
			"utf8")),
		"ab");
	json_decref(meta);
	tfs_image_close(img);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tf_checkpoint");
	TCase *tc = tcase_create("ours");

	tcase_add_test(tc, index_in_memory);
	tcase_add_test(tc, tiny_bundle);
	suite_add_tcase(s, tc);
	tc = tcase_create("fixtures");
	tcase_add_test(tc, every_bundle_of_ours_as_expected);
	tcase_add_test(tc, every_reject_of_ours_refused);
	tcase_add_test(tc, our_tensor_crc_mismatch_fails_on_read);
	tcase_add_test(tc, our_tf2_names_and_info);
	tcase_add_test(tc, our_checkpoint_file_of_another_machine);
	tcase_add_test(tc, every_shared_bundle_as_expected);
	tcase_add_test(tc, every_shared_reject_refused);
	tcase_add_test(tc, shared_tensor_crc_mismatch_fails_on_read);
	tcase_add_test(tc, shared_tf2_names_and_info);
	tcase_add_test(tc, checkpoint_file_of_another_machine);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
