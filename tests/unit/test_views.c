// SPDX-License-Identifier: MIT
/*
 * The view seam (src/core/view_ops.h, src/core/view_registry.c) and the
 * tensor-read layer below it (src/core/tensor_read.c): the builder plans no
 * view, the mount's finish step does; a view's nodes are dispatched by its
 * hooks; tensors read through the layer the views use give the container's
 * own bytes.
 */
#include <errno.h>
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/builder.h"
#include "core/diag.h"
#include "core/format.h"
#include "core/image.h"
#include "core/nodes.h"
#include "core/source.h"
#include "core/tree.h"
#include "core/view_ops.h"
#include "testutil.h"

/* b: F32 [2] = 1, 2; a: I16 [3] = 1, -2, 3 (a safetensors file) */
static const uint8_t data_ba[] = {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00,
				  0x40, 0x01, 0x00, 0xfe, 0xff, 0x03, 0x00};

static uint8_t *source_ba(size_t *len)
{
	static const char json[] = "{\"b\":{\"dtype\":\"F32\",\"shape\":[2],"
				   "\"data_offsets\":[0,8]},"
				   "\"a\":{\"dtype\":\"I16\",\"shape\":[3],"
				   "\"data_offsets\":[8,14]}}";
	size_t n = strlen(json), i;
	uint8_t *b = malloc(8 + n + sizeof(data_ba));

	ck_assert_ptr_nonnull(b);
	for (i = 0; i < 8; i++)
		b[i] = (uint8_t)((uint64_t)n >> (8 * i));
	memcpy(b + 8, json, n);
	memcpy(b + 8 + n, data_ba, sizeof(data_ba));
	*len = 8 + n + sizeof(data_ba);
	return b;
}

static struct tfs_image *load_with(const uint8_t *src, size_t len,
				   const struct tfs_build_options *bo)
{
	struct tfs_source s;
	struct tfs_image *img;
	struct tfs_diag d;

	tfs_source_init_memory(&s, src, len);
	ck_assert_int_eq(tfs_image_load(&img, &s, bo, &d), 0);
	return img;
}

/* node @path of a draft (its nodes are not linked yet: by name) */
static uint32_t tfs_tree_resolve_in(const struct tfs_draft *dr,
				    const char *name)
{
	uint32_t i;

	for (i = 0; i < dr->nodes->n; i++)
		if (dr->nodes->v[i].kind == TFS_NODE_TENSOR &&
		    !strcmp(dr->nodes->v[i].name, name))
			return i;
	ck_abort_msg("no node %s", name);
	return 0;
}

static const char *view_name(const struct tfs_image *img, uint32_t node)
{
	const struct tfs_view_ops *v = tfs_view_of(img, node);

	return v ? v->name : NULL;
}

START_TEST(registry_lists_each_view_once)
{
	uint32_t i, k;

	bool node_views = false, tensor_views = false;

	for (i = 0; tfs_view_kinds[i]; i++) {
		ck_assert_ptr_nonnull(tfs_view_kinds[i]->name);
		ck_assert_ptr_nonnull(tfs_view_kinds[i]->plan);
		node_views |= tfs_view_kinds[i]->read != NULL;
		tensor_views |= tfs_view_kinds[i]->read_tensor != NULL;
		for (k = 0; k < i; k++)
			ck_assert_str_ne(tfs_view_kinds[k]->name,
					 tfs_view_kinds[i]->name);
	}
	ck_assert_uint_ge(i, 4); /* as, npy, preview, export */
	ck_assert(node_views && tensor_views);
}
END_TEST

/* tfs_builder_finish alone: the tensors and .tensorfs/'s JSON, no view */
START_TEST(the_builder_plans_no_view)
{
	struct tfs_build_options bo = {.previews = true,
				       .npy = true,
				       .as = TFS_DTYPE_FLOAT32,
				       .as_all = true};
	size_t len;
	uint8_t *src = source_ba(&len);
	struct tfs_source s;
	struct tfs_builder *b;
	struct tfs_tree *t;
	struct tfs_diag d;
	uint32_t i;

	tfs_source_init_memory(&s, src, len);
	ck_assert_int_eq(tfs_builder_new(&b, &s, &bo), 0);
	ck_assert_int_eq(tfs_format_by_name("safetensors")->load(&s, b, &d), 0);
	ck_assert_int_eq(tfs_builder_finish(b, "safetensors", &t, &d), 0);
	tfs_builder_free(b);
	ck_assert_uint_eq(t->ntensors, 2);
	for (i = 0; i < t->nnodes; i++)
		ck_assert_int_ne(t->nodes[i].kind, TFS_NODE_VIEW);
	/* nor the views that change what tensor files show */
	for (i = 0; i < t->ntensors; i++) {
		ck_assert_ptr_null(t->tensors[i].prefix);
		ck_assert_int_eq(t->tensors[i].view, TFS_DTYPE_INVALID);
		ck_assert_uint_eq(t->tensors[i].shown_by, 0);
	}
	ck_assert_uint_eq(tfs_tree_resolve(t, ".tensorfs/export"), TFS_NO_NODE);
	ck_assert_uint_eq(tfs_tree_resolve(t, "b.png"), TFS_NO_NODE);
	ck_assert_uint_ne(tfs_tree_resolve(t, ".tensorfs/manifest.json"),
			  TFS_NO_NODE);
	ck_assert_ptr_null(t->lazy_dir);
	tfs_tree_free(t);
	free(src);
}
END_TEST

/* the mount's finish step plans them: previews beside, the export below */
START_TEST(the_finish_step_plans_them)
{
	struct tfs_build_options bo = {.previews = true};
	size_t len, got_len;
	uint8_t *src = source_ba(&len), *png;
	struct tfs_image *img = load_with(src, len, &bo);
	uint32_t pb = tfs_tree_resolve(img->tree, "b.png");
	uint32_t dir = tfs_tree_resolve(img->tree, ".tensorfs/export");
	uint32_t tb = tfs_tree_resolve(img->tree, "b");

	ck_assert_uint_ne(pb, TFS_NO_NODE);
	ck_assert_str_eq(view_name(img, pb), "preview");
	/* a preview shows its tensor: the view's own number is the record */
	ck_assert_uint_eq(img->tree->nodes[pb].tensor,
			  img->tree->nodes[tb].tensor);
	ck_assert_ptr_null(tfs_view_of(img, tb));
	ck_assert_uint_ne(dir, TFS_NO_NODE);
	ck_assert_ptr_null(tfs_view_of(img, dir));
	ck_assert_str_eq(view_name(img, tfs_tree_resolve(
						img->tree,
						".tensorfs/export/"
						"model.safetensors")),
			 "export");
	/* its size known at load, its bytes a PNG of that size */
	png = tu_read_node(img, pb, &got_len);
	ck_assert_uint_eq(got_len, tfs_node_size(img->tree, pb));
	ck_assert_mem_eq(png, "\x89PNG\r\n\x1a\n", 8);
	free(png);
	tfs_image_close(img);
	free(src);
}
END_TEST

/*
 * The as and npy views change what the tensor files show, planned at the
 * finish step: a.npy is numpy's header for float32 [3] and then a's int16
 * values 1, -2, 3 as float32; b (float32 already) only gets its header;
 * the layer below still reads a's stored bytes.
 */
START_TEST(as_and_npy_through_the_seam)
{
	struct tfs_build_options bo = {
		.npy = true, .as = TFS_DTYPE_FLOAT32, .as_all = true};
	const float want[3] = {1.0f, -2.0f, 3.0f};
	size_t len, got_len;
	uint8_t *src = source_ba(&len), *got;
	struct tfs_image *img = load_with(src, len, &bo);
	uint32_t na = tfs_tree_resolve(img->tree, "a.npy");
	uint32_t nb = tfs_tree_resolve(img->tree, "b.npy");
	const struct tfs_tensor *a, *b;
	struct tfs_view v;

	ck_assert_uint_ne(na, TFS_NO_NODE);
	ck_assert_uint_ne(nb, TFS_NO_NODE);
	a = &img->tree->tensors[img->tree->nodes[na].tensor];
	b = &img->tree->tensors[img->tree->nodes[nb].tensor];
	ck_assert_uint_ne(a->shown_by, 0);
	ck_assert_str_eq(tfs_view_kinds[a->shown_by - 1]->name, "as");
	ck_assert_uint_eq(b->shown_by, 0);
	ck_assert_uint_eq(a->view_size, sizeof(want));
	got = tu_read_node(img, na, &got_len);
	ck_assert_uint_eq(got_len, a->prefix_len + sizeof(want));
	ck_assert_mem_eq(got, "\x93NUMPY\x01\x00", 8);
	ck_assert_uint_eq(a->prefix_len % 64, 0);
	ck_assert_ptr_nonnull(strstr((char *)got + 10, "'descr': '<f4'"));
	ck_assert_ptr_nonnull(strstr((char *)got + 10, "'shape': (3,)"));
	ck_assert_mem_eq(got + a->prefix_len, want, sizeof(want));
	free(got);
	got = tu_read_node(img, nb, &got_len);
	ck_assert_uint_eq(got_len, b->prefix_len + 8);
	ck_assert_ptr_nonnull(strstr((char *)got + 10, "'descr': '<f4'"));
	ck_assert_mem_eq(got + b->prefix_len, data_ba, 8);
	free(got);
	/* below the views: the stored int16 bytes */
	ck_assert_int_eq(tfs_image_read_tensor(img, img->tree->nodes[na].tensor,
					       0, 6, &v),
			 0);
	ck_assert_uint_eq(v.len, 6);
	ck_assert_mem_eq(v.data, data_ba + 8, 6);
	tfs_view_release(img, &v);
	tfs_image_close(img);
	free(src);
}
END_TEST

/*
 * What a plan may do to records (src/core/draft.c): a hidden record leaves
 * the tree and the manifest but stays readable past ntensors; a renamed
 * one is found under its new name
 */
START_TEST(hidden_and_renamed_records)
{
	struct tfs_build_options bo = {0};
	size_t len;
	uint8_t *src = source_ba(&len);
	const uint8_t *man;
	struct tfs_source s;
	struct tfs_builder *b;
	struct tfs_draft dr;
	struct tfs_tree *t;
	struct tfs_diag d;
	uint32_t ra, rb, n;

	tfs_source_init_memory(&s, src, len);
	ck_assert_int_eq(tfs_builder_new(&b, &s, &bo), 0);
	ck_assert_int_eq(tfs_format_by_name("safetensors")->load(&s, b, &d), 0);
	ck_assert_int_eq(tfs_builder_draft(b, "safetensors", &dr, &d), 0);
	tfs_builder_free(b);
	ra = dr.nodes->v[tfs_tree_resolve_in(&dr, "a")].tensor;
	rb = 1 - ra;
	ck_assert_int_eq(tfs_draft_hide(&dr, ra), 0);
	ck_assert_int_eq(tfs_draft_rename(&dr, rb, "b.renamed", "c"), 0);
	ck_assert_int_eq(tfs_draft_compact(&dr), 0);
	ck_assert_int_eq(tfs_draft_seal(&dr, &t, &d), 0);
	ck_assert_uint_eq(t->ntensors, 1);
	ck_assert_uint_eq(t->nrecords, 2);
	ck_assert_str_eq(t->tensors[0].name, "b.renamed");
	ck_assert_str_eq(t->tensors[0].path, "c");
	ck_assert_str_eq(t->tensors[1].name, "a");
	ck_assert_uint_eq(tfs_tree_resolve(t, "a"), TFS_NO_NODE);
	ck_assert_uint_eq(tfs_tree_resolve(t, "b"), TFS_NO_NODE);
	n = tfs_tree_resolve(t, "c");
	ck_assert_uint_ne(n, TFS_NO_NODE);
	ck_assert_uint_eq(t->nodes[n].tensor, 0);
	/* the root lists c and .tensorfs only */
	ck_assert_uint_eq(t->nodes[TFS_ROOT_NODE].nchildren, 2);
	n = tfs_tree_resolve(t, ".tensorfs/manifest.json");
	ck_assert_uint_gt(tfs_node_size(t, n), 0);
	man = (uint8_t *)t->nodes[n].mem;
	ck_assert_ptr_nonnull(strstr((char *)man, "\"b.renamed\""));
	ck_assert_ptr_null(strstr((char *)man, "\"a\""));
	tfs_tree_free(t);
	free(src);
}
END_TEST

/* a view's own xattrs through its hooks; other nodes have none */
START_TEST(xattrs_through_the_hooks)
{
	struct tfs_build_options bo = {.previews = true};
	size_t len;
	uint8_t *src = source_ba(&len);
	struct tfs_image *img = load_with(src, len, &bo);
	uint32_t pb = tfs_tree_resolve(img->tree, "b.png");
	uint32_t tb = tfs_tree_resolve(img->tree, "b");
	char buf[256];
	ssize_t n;

	/* b holds 1 and 2: its picture's scale says so */
	n = tfs_image_view_getxattr(img, pb, "user.tensorfs.preview.min", buf,
				    sizeof(buf));
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(atof((buf[n] = '\0', buf)) == 1.0, 1);
	n = tfs_image_view_getxattr(img, pb, "user.tensorfs.preview.max", buf,
				    sizeof(buf));
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(atof((buf[n] = '\0', buf)) == 2.0, 1);
	ck_assert_int_eq(tfs_image_view_getxattr(img, pb, "user.other", buf,
						 sizeof(buf)),
			 -ENODATA);
	ck_assert_int_eq(tfs_image_view_getxattr(img, tb,
						 "user.tensorfs.preview.min",
						 buf, sizeof(buf)),
			 -ENODATA);
	/* listxattr: the names appended to what is there */
	n = tfs_image_view_listxattr(img, pb, buf, sizeof(buf), 3);
	ck_assert_int_eq(n, 3 + (ssize_t)strlen("user.tensorfs.preview.min") +
				    1 + strlen("user.tensorfs.preview.max") +
				    1 +
				    strlen("user.tensorfs.preview.scale_low") +
				    1 +
				    strlen("user.tensorfs.preview.scale_high") +
				    1);
	ck_assert_str_eq(buf + 3, "user.tensorfs.preview.min");
	ck_assert_int_eq(tfs_image_view_listxattr(img, tb, buf, sizeof(buf),
						  7),
			 7);
	tfs_image_close(img);
	free(src);
}
END_TEST

/* the layer the views read through: the container's bytes, in range */
START_TEST(tensor_reads_below_the_views)
{
	struct tfs_build_options bo = {0};
	size_t len;
	uint8_t *src = source_ba(&len);
	struct tfs_image *img = load_with(src, len, &bo);
	uint32_t tb = img->tree->nodes[tfs_tree_resolve(img->tree, "b")].tensor;
	uint32_t ta = img->tree->nodes[tfs_tree_resolve(img->tree, "a")].tensor;
	struct tfs_view v;

	ck_assert_int_eq(tfs_image_read_tensor(img, tb, 0, 8, &v), 0);
	ck_assert_uint_eq(v.len, 8);
	ck_assert_mem_eq(v.data, data_ba, 8);
	tfs_view_release(img, &v);
	/* clipped at the tensor's end, then nothing */
	ck_assert_int_eq(tfs_image_read_tensor(img, ta, 2, 100, &v), 0);
	ck_assert_uint_eq(v.len, 4);
	ck_assert_mem_eq(v.data, data_ba + 10, 4);
	tfs_view_release(img, &v);
	ck_assert_int_eq(tfs_image_read_tensor(img, ta, 6, 1, &v), 0);
	ck_assert_uint_eq(v.len, 0);
	ck_assert_int_eq(
		tfs_image_read_tensor(img, img->tree->ntensors, 0, 1, &v),
		-ENOENT);
	tfs_image_close(img);
	free(src);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("views");
	TCase *tc = tcase_create("views");

	tcase_add_test(tc, registry_lists_each_view_once);
	tcase_add_test(tc, the_builder_plans_no_view);
	tcase_add_test(tc, the_finish_step_plans_them);
	tcase_add_test(tc, as_and_npy_through_the_seam);
	tcase_add_test(tc, hidden_and_renamed_records);
	tcase_add_test(tc, xattrs_through_the_hooks);
	tcase_add_test(tc, tensor_reads_below_the_views);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
