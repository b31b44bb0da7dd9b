// SPDX-License-Identifier: MIT
/*
 * The safetensors export (src/views/export.c, export_view.c): its bytes against files built
 * here by hand from the spec, reads at every offset, big-endian Fortran
 * data swapped and transposed, shards and their index, zero-copy reads.
 */
#include <errno.h>
#include <check.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/diag.h"
#include "views/export.h"
#include "core/view_ops.h"
#include "core/image.h"
#include "core/source.h"
#include "core/tree.h"
#include "testutil.h"

/* a safetensors file: 8-byte length, @json, @data */
static uint8_t *st_file(const char *json, const void *data, size_t dlen,
			size_t *len)
{
	size_t n = strlen(json);
	uint8_t *b = malloc(8 + n + dlen);
	size_t i;

	ck_assert_ptr_nonnull(b);
	for (i = 0; i < 8; i++)
		b[i] = (uint8_t)((uint64_t)n >> (8 * i));
	memcpy(b + 8, json, n);
	memcpy(b + 8 + n, data, dlen);
	*len = 8 + n + dlen;
	return b;
}

static const uint8_t data_ba[] = {
	/* b: F32 [2] = 1, 2 */
	0x00,
	0x00,
	0x80,
	0x3f,
	0x00,
	0x00,
	0x00,
	0x40,
	/* a: I16 [3] = 1, -2, 3 */
	0x01,
	0x00,
	0xfe,
	0xff,
	0x03,
	0x00,
};

static uint8_t *source_ba(size_t *len)
{
	return st_file("{\"b\":{\"dtype\":\"F32\",\"shape\":[2],"
		       "\"data_offsets\":[0,8]},"
		       "\"a\":{\"dtype\":\"I16\",\"shape\":[3],"
		       "\"data_offsets\":[8,14]}}",
		       data_ba, sizeof(data_ba), len);
}

/* what the export of source_ba must be, written out by hand */
static uint8_t *want_ba(size_t *len)
{
	static const char head[] = "{\"__metadata__\":{\"format\":\"pt\","
				   "\"tensorfs.format\":\"safetensors\"},"
				   "\"a\":{\"dtype\":\"I16\",\"shape\":[3],"
				   "\"data_offsets\":[0,6]},"
				   "\"b\":{\"dtype\":\"F32\",\"shape\":[2],"
				   "\"data_offsets\":[6,14]}}";
	char padded[256];
	uint8_t data[14];
	size_t n = strlen(head);

	ck_assert_uint_lt(n + 8, sizeof(padded));
	memcpy(padded, head, n);
	while (n % 8)
		padded[n++] = ' ';
	padded[n] = '\0';
	memcpy(data, data_ba + 8, 6); /* a first: sorted by name */
	memcpy(data + 6, data_ba, 8);
	return st_file(padded, data, sizeof(data), len);
}

static uint32_t export_node(const struct tfs_image *img, const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), ".tensorfs/export/%s", name);
	return tfs_tree_resolve(img->tree, path);
}

START_TEST(bytes_as_the_spec_says)
{
	size_t slen, wlen, got_len;
	uint8_t *src = source_ba(&slen), *want = want_ba(&wlen), *got;
	struct tfs_image *img = tu_load_ok(src, slen);
	uint32_t node = export_node(img, "model.safetensors");

	ck_assert_uint_ne(node, TFS_NO_NODE);
	ck_assert_int_eq(img->tree->nodes[node].kind, TFS_NODE_VIEW);
	ck_assert_str_eq(tfs_view_kinds[img->tree->nodes[node].view]->name,
			 "export");
	/* known at mount: the size, before any read */
	ck_assert_uint_eq(tfs_node_size(img->tree, node), wlen);
	got = tu_read_node(img, node, &got_len);
	ck_assert_uint_eq(got_len, wlen);
	ck_assert_mem_eq(got, want, wlen);
	/* the header length is a multiple of 8 */
	ck_assert_uint_eq(got[0] % 8, 0);
	free(got);
	tfs_image_close(img);
	free(src);
	free(want);
}
END_TEST

START_TEST(every_offset_every_length)
{
	size_t slen, wlen, off, len;
	uint8_t *src = source_ba(&slen), *want = want_ba(&wlen);
	struct tfs_image *img = tu_load_ok(src, slen);
	uint32_t node = export_node(img, "model.safetensors");
	struct tfs_view v;

	for (off = 0; off <= wlen; off++)
		for (len = 1; len <= 20; len++) {
			ck_assert_int_eq(
				tfs_image_read(img, node, off, len, &v), 0);
			ck_assert_uint_eq(v.len,
					  off + len <= wlen ? len : wlen - off);
			if (v.len)
				ck_assert_mem_eq(v.data, want + off, v.len);
			tfs_view_release(img, &v);
		}
	tfs_image_close(img);
	free(src);
	free(want);
}
END_TEST

START_TEST(raw_reads_are_zero_copy)
{
	size_t slen, wlen;
	uint8_t *src = source_ba(&slen), *want = want_ba(&wlen);
	struct tfs_image *img = tu_load_ok(src, slen);
	uint32_t node = export_node(img, "model.safetensors");
	const uint8_t *base = img->srcs[0].data;
	struct tfs_view v;

	/* b's 8 bytes: the last 8 of the export, the first 8 of the data */
	ck_assert_int_eq(tfs_image_read(img, node, wlen - 8, 8, &v), 0);
	ck_assert_ptr_eq(v.data, base + slen - sizeof(data_ba));
	ck_assert_ptr_null(v.pin);
	tfs_view_release(img, &v);
	tfs_image_close(img);
	free(src);
	free(want);
}
END_TEST

/* an .npy of '>i4', Fortran order, shape (2, 3): its values stored
 * column-major, big-endian */
START_TEST(big_endian_fortran_npy)
{
	static const char dict[] =
		"{'descr': '>i4', 'fortran_order': True, 'shape': (2, 3), }";
	/* element (i, j) = 10 * i + j, stored column-major */
	static const int32_t vals[2][3] = {{0, 1, 2}, {10, 11, 12}};
	uint8_t file[128 + 24], *got;
	size_t n = strlen(dict), i, j, k, got_len;
	struct tfs_image *img;
	uint32_t node, hl;
	uint16_t hlen;

	memset(file, ' ', 128);
	memcpy(file, "\x93NUMPY\x01\x00", 8);
	hlen = 128 - 10;
	file[8] = (uint8_t)hlen;
	file[9] = 0;
	memcpy(file + 10, dict, n);
	file[127] = '\n';
	for (j = 0, k = 0; j < 3; j++)
		for (i = 0; i < 2; i++, k++) {
			uint32_t u = (uint32_t)vals[i][j];

			file[128 + 4 * k] = (uint8_t)(u >> 24);
			file[128 + 4 * k + 1] = (uint8_t)(u >> 16);
			file[128 + 4 * k + 2] = (uint8_t)(u >> 8);
			file[128 + 4 * k + 3] = (uint8_t)u;
		}
	img = tu_load_ok(file, sizeof(file));
	node = export_node(img, "model.safetensors");
	ck_assert_uint_ne(node, TFS_NO_NODE);
	got = tu_read_node(img, node, &got_len);
	hl = got[0] | (uint32_t)got[1] << 8;
	ck_assert_uint_eq(got_len, 8 + hl + 24);
	ck_assert_ptr_nonnull(strstr((char *)got + 8,
				     "\"tensor\":{\"dtype\":\"I32\","
				     "\"shape\":[2,3],"
				     "\"data_offsets\":[0,24]}"));
	/* row-major, little-endian */
	for (i = 0, k = 0; i < 2; i++)
		for (j = 0; j < 3; j++, k++) {
			const uint8_t *p = got + 8 + hl + 4 * k;
			int32_t v =
				(int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 |
					  (uint32_t)p[2] << 16 |
					  (uint32_t)p[3] << 24);

			ck_assert_int_eq(v, vals[i][j]);
		}
	free(got);
	tfs_image_close(img);
}
END_TEST

START_TEST(shards_and_index)
{
	size_t slen;
	uint8_t *src = source_ba(&slen);
	struct tfs_image *img = tu_load_ok(src, slen);
	struct tfs_export_options o = {.shard_size = 6};
	struct tfs_export *e;
	char *text;
	size_t text_len;
	static const char index[] =
		"{\n"
		"  \"metadata\": {\n"
		"    \"total_size\": 14\n"
		"  },\n"
		"  \"weight_map\": {\n"
		"    \"a\": \"model-00001-of-00002.safetensors\",\n"
		"    \"b\": \"model-00002-of-00002.safetensors\"\n"
		"  }\n"
		"}\n";

	ck_assert_int_eq(tfs_export_plan(&e, img->tree, &o), 0);
	ck_assert_uint_eq(e->nfiles, 2);
	ck_assert_str_eq(e->files[0].name, "model-00001-of-00002.safetensors");
	ck_assert_str_eq(e->files[1].name, "model-00002-of-00002.safetensors");
	ck_assert_uint_eq(e->files[0].size, e->files[0].head_len + 6);
	ck_assert_uint_eq(e->files[1].size, e->files[1].head_len + 8);
	ck_assert_int_eq(tfs_export_index(e, &text, &text_len), 0);
	ck_assert_str_eq(text, index);
	ck_assert_uint_eq(text_len, strlen(index));
	free(text);
	tfs_export_free(e);
	/* one shard bigger than the limit holds the tensor alone; 14 fits */
	o.shard_size = 14;
	ck_assert_int_eq(tfs_export_plan(&e, img->tree, &o), 0);
	ck_assert_uint_eq(e->nfiles, 1);
	ck_assert_int_eq(tfs_export_index(e, &text, &text_len), -EINVAL);
	ck_assert_ptr_null(text);
	tfs_export_free(e);
	tfs_image_close(img);
	free(src);
}
END_TEST

/*
 * Names that need escaping in JSON: the header (made when first read, its
 * length counted at mount) holds each as jansson writes it, and the whole
 * file is the size the mount announced.
 */
START_TEST(escaped_names_as_jansson_writes_them)
{
	static const char *const names[] = {
		"q\"t", "b\\s", "n\nl\tt", "c\001\037", "\303\251t\342\202\254",
		"d\177", "s/l", "\360\237\230\200",
	};
	static const uint8_t zeros[8];
	struct tfs_export_options o = {.shard_size = 2};
	struct tfs_export *e;
	char json[1024], *head, *text;
	size_t n = 0, slen, got_len, text_len;
	uint8_t *src, *got;
	struct tfs_image *img;
	json_t *hj, *ij, *js;
	uint32_t i, node;
	char *want;

	n += (size_t)snprintf(json + n, sizeof(json) - n, "{");
	for (i = 0; i < 8; i++) {
		js = json_string(names[i]);
		want = json_dumps(js, JSON_ENCODE_ANY);
		n += (size_t)snprintf(json + n, sizeof(json) - n,
				      "%s%s:{\"dtype\":\"U8\",\"shape\":[1],"
				      "\"data_offsets\":[%u,%u]}",
				      i ? "," : "", want, i, i + 1);
		free(want);
		json_decref(js);
	}
	snprintf(json + n, sizeof(json) - n, "}");
	src = st_file(json, zeros, sizeof(zeros), &slen);
	img = tu_load_ok(src, slen);
	node = export_node(img, "model.safetensors");
	ck_assert_uint_ne(node, TFS_NO_NODE);
	n = (size_t)tfs_node_size(img->tree, node);
	got = tu_read_node(img, node, &got_len);
	ck_assert_uint_eq(got_len, n);
	head = strndup((char *)got + 8, got[0] | (size_t)got[1] << 8);
	hj = json_loads(head, 0, NULL);
	ck_assert_ptr_nonnull(hj);
	for (i = 0; i < 8; i++) {
		ck_assert_ptr_nonnull(json_object_get(hj, names[i]));
		js = json_string(names[i]);
		want = json_dumps(js, JSON_ENCODE_ANY);
		ck_assert_ptr_nonnull(strstr(head, want));
		free(want);
		json_decref(js);
	}
	json_decref(hj);
	free(head);
	free(got);
	/* sharded: every name in the index, in its own file */
	ck_assert_int_eq(tfs_export_plan(&e, img->tree, &o), 0);
	ck_assert_uint_eq(e->nfiles, 4);
	ck_assert_int_eq(tfs_export_index(e, &text, &text_len), 0);
	ij = json_loads(text, 0, NULL);
	ck_assert_ptr_nonnull(ij);
	for (i = 0; i < 8; i++)
		ck_assert_ptr_nonnull(json_object_get(
			json_object_get(ij, "weight_map"), names[i]));
	json_decref(ij);
	free(text);
	tfs_export_free(e);
	tfs_image_close(img);
	free(src);
}
END_TEST

/*
 * The plan is made when .tensorfs/export/ is first looked in, not at
 * load; with one shard per tensor (export_shard=1: the most files the
 * slots reserved at load must hold) every file is there, in name order,
 * with the index.
 */
START_TEST(planned_when_first_looked_in)
{
	size_t slen;
	uint8_t *src = source_ba(&slen);
	struct tfs_build_options bo = {.export_shard = 1};
	const struct tfs_node *d;
	struct tfs_source s;
	struct tfs_image *img;
	struct tfs_diag d0;
	uint32_t dir, node, k;
	static const char *const names[] = {
		"model-00001-of-00002.safetensors",
		"model-00002-of-00002.safetensors",
		"model.safetensors.index.json",
	};

	tfs_source_init_memory(&s, src, slen);
	ck_assert_int_eq(tfs_image_load(&img, &s, &bo, &d0), 0);
	ck_assert_ptr_null(img->tree->export);
	dir = tfs_tree_resolve(img->tree, ".tensorfs/export");
	ck_assert_uint_ne(dir, TFS_NO_NODE);
	/* the directory alone is not the plan */
	ck_assert_ptr_null(img->tree->export);
	node = tfs_tree_lookup(img->tree, dir, names[0], strlen(names[0]));
	ck_assert_uint_ne(node, TFS_NO_NODE);
	ck_assert_ptr_nonnull(img->tree->export);
	ck_assert_ptr_eq(tfs_tree_export(img->tree), img->tree->export);
	d = &img->tree->nodes[dir];
	ck_assert_uint_eq(d->nchildren, 3);
	for (k = 0; k < 3; k++)
		ck_assert_str_eq(
			img->tree->nodes[img->tree->children[d->first_child + k]]
				.name,
			names[k]);
	/* a: I16 [3], 6 bytes; b: F32 [2], 8 bytes */
	ck_assert_uint_eq(tfs_node_size(img->tree, node),
			  img->tree->export->files[0].head_len + 6);
	tfs_image_close(img);
	free(src);
}
END_TEST

START_TEST(export_off)
{
	size_t slen;
	uint8_t *src = source_ba(&slen);
	struct tfs_build_options bo = {.no_export = true};
	struct tfs_source s;
	struct tfs_image *img;
	struct tfs_diag d;

	tfs_source_init_memory(&s, src, slen);
	ck_assert_int_eq(tfs_image_load(&img, &s, &bo, &d), 0);
	ck_assert_uint_eq(tfs_tree_resolve(img->tree, ".tensorfs/export"),
			  TFS_NO_NODE);
	ck_assert_ptr_null(img->tree->export);
	tfs_image_close(img);
	free(src);
}
END_TEST

START_TEST(dtype_names)
{
	ck_assert_str_eq(tfs_export_dtype_name(TFS_DTYPE_BFLOAT16), "BF16");
	ck_assert_str_eq(tfs_export_dtype_name(TFS_DTYPE_COMPLEX64), "C64");
	ck_assert_str_eq(tfs_export_dtype_name(TFS_DTYPE_FLOAT8_E4M3FNUZ),
			 "F8_E4M3FNUZ");
	ck_assert_ptr_null(tfs_export_dtype_name(TFS_DTYPE_Q4_0));
	ck_assert_ptr_null(tfs_export_dtype_name(TFS_DTYPE_COMPLEX128));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("export");
	TCase *tc = tcase_create("export");

	tcase_add_test(tc, bytes_as_the_spec_says);
	tcase_add_test(tc, every_offset_every_length);
	tcase_add_test(tc, raw_reads_are_zero_copy);
	tcase_add_test(tc, big_endian_fortran_npy);
	tcase_add_test(tc, shards_and_index);
	tcase_add_test(tc, escaped_names_as_jansson_writes_them);
	tcase_add_test(tc, export_off);
	tcase_add_test(tc, planned_when_first_looked_in);
	tcase_add_test(tc, dtype_names);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
