// SPDX-License-Identifier: MIT
/* The builder and the tree: shared checks, name mapping, lookup, JSON. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "tensorfs/builder.h"
#include "tensorfs/source.h"
#include "tensorfs/tree.h"
#include "testutil.h"

static uint8_t bytes[4096];
static struct tfs_source src;
static struct tfs_builder *b;
static struct tfs_diag d;

static void setup(void)
{
	tfs_source_init_memory(&src, bytes, sizeof(bytes));
	tfs_diag_clear(&d);
	ck_assert_int_eq(tfs_builder_new(&b, &src, NULL), 0);
}

static void teardown(void)
{
	tfs_builder_free(b);
	b = NULL;
}

static struct tfs_tensor_spec spec_for(const char *name, uint64_t off,
				       uint64_t len)
{
	static uint64_t shape[1];
	struct tfs_tensor_spec s = {0};

	shape[0] = len;
	s.name = name;
	s.name_len = strlen(name);
	s.dtype = "uint8";
	s.elem_size = 1;
	s.ndim = 1;
	s.shape = shape;
	s.offset = off;
	s.length = len;
	s.size = len;
	return s;
}

static int add(const char *name)
{
	struct tfs_tensor_spec s = spec_for(name, 0, 4);

	return tfs_builder_add_tensor(b, &s, NULL, &d);
}

static struct tfs_tree *finish(void)
{
	struct tfs_tree *t = NULL;

	ck_assert_int_eq(tfs_builder_finish(b, "test", &t, &d), 0);
	return t;
}

static const char *path_of(struct tfs_tree *t, const char *name)
{
	uint32_t i;

	for (i = 0; i < t->ntensors; i++)
		if (t->tensors[i].name_len == strlen(name) &&
		    memcmp(t->tensors[i].name, name, strlen(name)) == 0)
			return t->tensors[i].path;
	return NULL;
}

START_TEST(splits_names)
{
	struct tfs_tree *t;

	ck_assert_int_eq(add("encoder.layers.0.weight"), 0);
	ck_assert_int_eq(add("encoder/layers/0/bias"), 0);
	ck_assert_int_eq(add("embed"), 0);
	t = finish();
	ck_assert_str_eq(path_of(t, "encoder.layers.0.weight"),
			 "encoder/layers/0/weight");
	ck_assert_str_eq(path_of(t, "encoder/layers/0/bias"),
			 "encoder/layers/0/bias");
	ck_assert_uint_ne(tfs_tree_resolve(t, "encoder/layers/0/weight"),
			  TFS_NO_NODE);
	ck_assert_uint_eq(tfs_tree_resolve(t, "encoder/layers/1"), TFS_NO_NODE);
	ck_assert_uint_eq(
		t->nodes[tfs_tree_resolve(t, "encoder/layers/0")].nchildren, 2);
	/* root: .tensorfs, embed, encoder (sorted) */
	ck_assert_uint_eq(t->nodes[0].nchildren, 3);
	ck_assert_str_eq(t->nodes[t->children[t->nodes[0].first_child]].name,
			 ".tensorfs");
	ck_assert_uint_eq(t->nodes[0].nsubdirs, 2);
	tfs_tree_free(t);
}
END_TEST

START_TEST(conflicts_are_deterministic)
{
	struct tfs_tree *t;

	ck_assert_int_eq(add("a"), 0);	 /* file at a dir path */
	ck_assert_int_eq(add("a.b"), 0); /* needs dir "a" */
	ck_assert_int_eq(add("x.y"), 0); /* two names, one path */
	ck_assert_int_eq(add("x/y"), 0);
	ck_assert_int_eq(add("a~1"), 0); /* a real name like a suffix */
	ck_assert_int_eq(add("..q"), 0); /* empty components */
	t = finish();
	ck_assert_str_eq(path_of(t, "a.b"), "a/b");
	ck_assert_str_eq(path_of(t, "a~1"), "a~1");
	ck_assert_str_eq(path_of(t, "a"), "a~2");
	ck_assert_str_eq(path_of(t, "x.y"), "x/y");
	ck_assert_str_eq(path_of(t, "x/y"), "x/y~1");
	ck_assert_str_eq(path_of(t, "..q"), "%/%/q");
	ck_assert_uint_eq(t->nodes[tfs_tree_resolve(t, "a~2")].kind,
			  TFS_NODE_TENSOR);
	tfs_tree_free(t);
}
END_TEST

START_TEST(flat_and_reserved)
{
	struct tfs_build_options o = {.flat = true};
	struct tfs_tree *t;

	tfs_builder_free(b);
	ck_assert_int_eq(tfs_builder_new(&b, &src, &o), 0);
	ck_assert_int_eq(add("enc.w"), 0);
	ck_assert_int_eq(add(".tensorfs"), 0);
	ck_assert_int_eq(add(".."), 0);
	ck_assert_int_eq(add("a/../../etc"), 0);
	t = finish();
	ck_assert_str_eq(path_of(t, "enc.w"), "enc.w");
	ck_assert_str_eq(path_of(t, ".tensorfs"), ".tensorfs~1");
	ck_assert_str_eq(path_of(t, ".."), "%2E%2E");
	ck_assert_str_eq(path_of(t, "a/../../etc"), "a%2F..%2F..%2Fetc");
	ck_assert_uint_eq(t->nodes[tfs_tree_resolve(t, ".tensorfs")].kind,
			  TFS_NODE_DIR);
	tfs_tree_free(t);
}
END_TEST

START_TEST(deep_names_are_capped)
{
	char name[4001];
	struct tfs_tree *t;
	const char *p;
	int i, slashes = 0;

	for (i = 0; i < 2000; i++) {
		name[2 * i] = 'a';
		name[2 * i + 1] = '.';
	}
	name[3999] = 'z';
	name[4000] = '\0';
	ck_assert_int_eq(add(name), 0);
	t = finish();
	p = path_of(t, name);
	for (i = 0; p[i]; i++)
		slashes += p[i] == '/';
	ck_assert_int_eq(slashes, 63); /* 64 components at most */
	/* the rest stays whole in the last component, cut with a hash */
	ck_assert_ptr_nonnull(strstr(strrchr(p, '/'), "a.a.a"));
	ck_assert_uint_le(strlen(strrchr(p, '/') + 1), 255);
	ck_assert_uint_ne(tfs_tree_resolve(t, p), TFS_NO_NODE);
	tfs_tree_free(t);
}
END_TEST

START_TEST(shared_checks)
{
	struct tfs_tensor_spec s = spec_for("w", 4090, 8);
	uint64_t shape[2] = {1ull << 40, 1ull << 40};

	ck_assert_int_eq(tfs_builder_add_tensor(b, &s, NULL, &d), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(d.msg, "past the end"));
	tfs_diag_clear(&d);
	s = spec_for("w", UINT64_MAX - 1, 8);
	ck_assert_int_eq(tfs_builder_add_tensor(b, &s, NULL, &d), -EBADMSG);
	tfs_diag_clear(&d);
	s = spec_for("w", 0, 8);
	s.elem_size = 4; /* 8 elements of 4 bytes != 8 bytes */
	ck_assert_int_eq(tfs_builder_add_tensor(b, &s, NULL, &d), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(d.msg, "does not match"));
	tfs_diag_clear(&d);
	s = spec_for("w", 0, 8);
	s.ndim = 2;
	s.shape = shape;
	ck_assert_int_eq(tfs_builder_add_tensor(b, &s, NULL, &d), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(d.msg, "overflows"));
	tfs_diag_clear(&d);
	s = spec_for("w", 0, 8);
	s.size = 9; /* raw: size must equal the stored length */
	ck_assert_int_eq(tfs_builder_add_tensor(b, &s, NULL, &d), -EBADMSG);
	ck_assert_uint_eq(tfs_builder_count(b), 0);
}
END_TEST

START_TEST(groups_and_xattrs)
{
	struct tfs_tensor_spec g = spec_for("s", 0, 0), c = spec_for("v", 0, 4);
	uint32_t gh, ch;
	struct tfs_tree *t;
	const struct tfs_xattr *x;
	uint32_t n;

	g.dtype = "float32";
	ck_assert_int_eq(tfs_builder_add_group(b, &g, &gh, &d), 0);
	ck_assert_int_eq(
		tfs_builder_add_component(b, gh, "values", &c, &ch, &d), 0);
	ck_assert_int_eq(
		tfs_builder_add_component(b, gh, "values", &c, NULL, &d),
		-EBADMSG);
	ck_assert_int_eq(tfs_builder_set_xattr_str(b, gh, "layout", "csr"), 0);
	ck_assert_int_eq(tfs_builder_set_xattr_str(b, ch, "dtype", "uint64"),
			 0);
	ck_assert_int_eq(
		tfs_builder_set_xattr_str(b, TFS_BUILDER_ROOT, "k", "v"), 0);
	t = finish();
	n = tfs_tree_resolve(t, "s");
	ck_assert_uint_eq(t->nodes[n].kind, TFS_NODE_DIR);
	x = tfs_tree_xattr(t, n, "user.tensorfs.layout");
	ck_assert_ptr_nonnull(x);
	ck_assert_mem_eq(x->value, "csr", 3);
	n = tfs_tree_resolve(t, "s/values");
	/* a reader's value wins over the standard one */
	x = tfs_tree_xattr(t, n, "user.tensorfs.dtype");
	ck_assert_mem_eq(x->value, "uint64", 6);
	ck_assert_ptr_nonnull(tfs_tree_xattr(t, n, "user.tensorfs.role"));
	/* the listxattr buffer lists every name, sorted */
	ck_assert_str_eq(t->nodes[n].xattr_names, t->nodes[n].xattrs[0].name);
	ck_assert_ptr_null(tfs_tree_xattr(t, n, "user.tensorfs.nope"));
	x = tfs_tree_xattr(t, 0, "user.tensorfs.format");
	ck_assert_mem_eq(x->value, "test", 4);
	ck_assert_uint_eq(t->tensors[0].group, tfs_tree_resolve(t, "s"));
	ck_assert_str_eq(t->tensors[0].role, "values");
	tfs_tree_free(t);
}
END_TEST

START_TEST(manifest_json)
{
	struct tfs_tree *t;
	json_error_t err;
	json_t *j, *e;
	uint32_t n;

	ck_assert_int_eq(add("enc.w"), 0);
	ck_assert_int_eq(add("bad\xff"), 0);
	json_object_set_new(tfs_builder_metadata(b), "k", json_integer(3));
	t = finish();
	n = tfs_tree_resolve(t, ".tensorfs/manifest.json");
	ck_assert_uint_ne(n, TFS_NO_NODE);
	j = json_loadb(t->nodes[n].mem, t->nodes[n].mem_len, 0, &err);
	ck_assert_ptr_nonnull(j);
	e = json_array_get(json_object_get(j, "tensors"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(e, "path")),
			 "enc/w");
	ck_assert_int_eq(json_integer_value(json_object_get(e, "size")), 4);
	e = json_array_get(json_object_get(j, "tensors"), 1);
	ck_assert_str_eq(json_string_value(json_object_get(e, "name_hex")),
			 "626164ff");
	ck_assert_str_eq(json_string_value(json_object_get(e, "path")),
			 "bad%FF");
	json_decref(j);
	n = tfs_tree_resolve(t, ".tensorfs/metadata.json");
	j = json_loadb(t->nodes[n].mem, t->nodes[n].mem_len, 0, &err);
	ck_assert_str_eq(json_string_value(json_object_get(j, "format")),
			 "test");
	ck_assert_int_eq(json_integer_value(json_object_get(j, "k")), 3);
	json_decref(j);
	tfs_tree_free(t);
}
END_TEST

START_TEST(many_tensors)
{
	char name[32];
	struct tfs_tree *t;
	int i;

	for (i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "layer.%d.w", i);
		ck_assert_int_eq(add(name), 0);
	}
	t = finish();
	ck_assert_uint_eq(t->ntensors, 5000);
	ck_assert_uint_ne(tfs_tree_resolve(t, "layer/4999/w"), TFS_NO_NODE);
	ck_assert_uint_eq(t->nodes[tfs_tree_resolve(t, "layer")].nchildren,
			  5000);
	tfs_tree_free(t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tree");
	TCase *tc = tcase_create("tree");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, splits_names);
	tcase_add_test(tc, conflicts_are_deterministic);
	tcase_add_test(tc, flat_and_reserved);
	tcase_add_test(tc, deep_names_are_capped);
	tcase_add_test(tc, shared_checks);
	tcase_add_test(tc, groups_and_xattrs);
	tcase_add_test(tc, manifest_json);
	tcase_add_test(tc, many_tensors);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
