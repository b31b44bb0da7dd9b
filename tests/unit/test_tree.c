// SPDX-License-Identifier: MIT
/* The builder and the tree: shared checks, name mapping, lookup, JSON. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "core/builder.h"
#include "core/names.h"
#include "core/source.h"
#include "core/tree.h"
#include "core/builder_sources.h"
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
	s.dtype = TFS_DTYPE_UINT8;
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

/*
 * .tensorfs as a directory of tensors (an explicit path, a reader's '/'
 * names): escaped, so the root keeps one .tensorfs (found by the fuzzer:
 * a TensorFlow.js weight ".tensorfs////////s" made two)
 */
START_TEST(reserved_as_a_directory)
{
	static const char *const comps[] = {".tensorfs", "s"};
	struct tfs_tensor_spec s = spec_for(".tensorfs/s", 0, 4);
	struct tfs_tree *t;
	uint32_t i, n = 0;

	s.path = comps;
	s.path_len = 2;
	ck_assert_int_eq(tfs_builder_add_tensor(b, &s, NULL, &d), 0);
	ck_assert_int_eq(add(".tensorfs.manifest.json"), 0); /* split at '.' */
	t = finish();
	ck_assert_str_eq(path_of(t, ".tensorfs/s"), "%2Etensorfs/s");
	ck_assert_str_eq(path_of(t, ".tensorfs.manifest.json"),
			 "%/tensorfs/manifest/json");
	for (i = 0; i < t->nodes[0].nchildren; i++)
		n += !strcmp(t->nodes[t->children[t->nodes[0].first_child + i]]
				     .name,
			     ".tensorfs");
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_ne(tfs_tree_resolve(t, ".tensorfs/manifest.json"),
			  TFS_NO_NODE);
	ck_assert_uint_eq(t->nodes[tfs_tree_resolve(t, "%2Etensorfs/s")].kind,
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
	s.dtype = TFS_DTYPE_FLOAT32; /* 8 elements of 4 bytes != 8 bytes */
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

/* a name given twice is refused at finish, naming the later description */
START_TEST(duplicate_names)
{
	struct tfs_tensor_spec s = spec_for("a.w", 0, 4);
	struct tfs_tree *t = NULL;

	s.desc_offset = 10;
	ck_assert_int_eq(tfs_builder_add_tensor(b, &s, NULL, &d), 0);
	ck_assert_int_eq(add("a/w"), 0); /* same path, other name: fine */
	s = spec_for("a.w", 4, 4);
	s.desc_offset = 30;
	ck_assert_int_eq(tfs_builder_add_tensor(b, &s, NULL, &d), 0);
	ck_assert_int_eq(tfs_builder_finish(b, "test", &t, &d), -EBADMSG);
	ck_assert_ptr_null(t);
	ck_assert_ptr_nonnull(strstr(d.msg, "'a.w': name: duplicate"));
	ck_assert_ptr_nonnull(strstr(d.msg, "at byte offset 10"));
	ck_assert(d.has_offset);
	ck_assert_uint_eq(d.offset, 30);
}
END_TEST

/* names with NUL and control bytes differ by their bytes, and print on one
 * line */
START_TEST(duplicate_names_with_odd_bytes)
{
	struct tfs_tensor_spec s = spec_for("we\nght", 0, 4);
	struct tfs_tree *t = NULL;

	ck_assert_int_eq(tfs_builder_add_tensor(b, &s, NULL, &d), 0);
	s.name = "we\0ght";
	s.name_len = 6;
	ck_assert_int_eq(tfs_builder_add_tensor(b, &s, NULL, &d), 0);
	s.name_len = 2; /* "we": a prefix is another name */
	ck_assert_int_eq(tfs_builder_add_tensor(b, &s, NULL, &d), 0);
	s.name = "we\nght";
	s.name_len = 6;
	s.desc_offset = 77;
	ck_assert_int_eq(tfs_builder_add_tensor(b, &s, NULL, &d), 0);
	ck_assert_int_eq(tfs_builder_finish(b, "test", &t, &d), -EBADMSG);
	ck_assert_ptr_null(strchr(d.msg, '\n'));
	ck_assert_ptr_nonnull(strstr(d.msg, "'we%0Aght'"));
	ck_assert_uint_eq(d.offset, 77);
}
END_TEST

static int add_extent(const char *name, uint64_t off, uint64_t len)
{
	struct tfs_tensor_spec s = spec_for(name, off, len);

	s.desc_offset = off + 1000;
	return tfs_builder_add_tensor(b, &s, NULL, &d);
}

START_TEST(overlaps)
{
	struct tfs_tree *t = NULL;

	/* allowed by default: shared storages alias bytes */
	ck_assert_int_eq(add_extent("a", 0, 16), 0);
	ck_assert_int_eq(add_extent("b", 8, 4), 0);
	t = finish();
	ck_assert_uint_eq(t->nwarnings, 0);
	tfs_tree_free(t);
	tfs_builder_free(b);

	/* forbidden: the later extent in file order is named, with both */
	ck_assert_int_eq(tfs_builder_new(&b, &src, NULL), 0);
	tfs_builder_set_overlap_rule(b, TFS_OVERLAP_FORBID);
	ck_assert_int_eq(add_extent("z", 20, 4), 0);
	ck_assert_int_eq(add_extent("a", 0, 16), 0);
	ck_assert_int_eq(add_extent("empty", 4, 0), 0); /* never overlaps */
	ck_assert_int_eq(add_extent("c", 16, 4), 0);	/* touches: fine */
	ck_assert_int_eq(add_extent("b", 12, 2), 0);
	ck_assert_int_eq(tfs_builder_finish(b, "test", &t, &d), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(
		d.msg, "'b': data [12, 14) overlaps tensor 'a' [0, 16)"));
	ck_assert_uint_eq(d.offset, 1012);
	tfs_builder_free(b);

	/* a long extent hides behind a short one: still found */
	ck_assert_int_eq(tfs_builder_new(&b, &src, NULL), 0);
	tfs_builder_set_overlap_rule(b, TFS_OVERLAP_FORBID);
	ck_assert_int_eq(add_extent("long", 0, 32), 0);
	ck_assert_int_eq(add_extent("short", 1, 1), 0);
	ck_assert_int_eq(add_extent("late", 20, 4), 0);
	tfs_diag_clear(&d);
	ck_assert_int_eq(tfs_builder_finish(b, "test", &t, &d), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(d.msg, "'short'"));
	tfs_builder_free(b);

	/* warned: the tree is built and says so, in metadata.json too */
	ck_assert_int_eq(tfs_builder_new(&b, &src, NULL), 0);
	tfs_builder_set_overlap_rule(b, TFS_OVERLAP_WARN);
	ck_assert_int_eq(add_extent("a", 0, 16), 0);
	ck_assert_int_eq(add_extent("b", 15, 2), 0);
	t = finish();
	ck_assert_uint_eq(t->nwarnings, 1);
	ck_assert_ptr_nonnull(strstr(t->warnings[0].msg, "'b'"));
	ck_assert_uint_eq(t->warnings[0].offset, 1015);
	tfs_tree_free(t);
	tfs_builder_free(b);

	/* identical: tied weights share one extent, nothing else overlaps */
	ck_assert_int_eq(tfs_builder_new(&b, &src, NULL), 0);
	tfs_builder_set_overlap_rule(b, TFS_OVERLAP_IDENTICAL);
	ck_assert_int_eq(add_extent("w", 0, 16), 0);
	ck_assert_int_eq(add_extent("tied", 0, 16), 0);
	ck_assert_int_eq(add_extent("again", 0, 16), 0);
	ck_assert_int_eq(add_extent("next", 16, 4), 0);
	t = finish();
	ck_assert_uint_eq(t->nwarnings, 0);
	tfs_tree_free(t);
	tfs_builder_free(b);
	ck_assert_int_eq(tfs_builder_new(&b, &src, NULL), 0);
	tfs_builder_set_overlap_rule(b, TFS_OVERLAP_IDENTICAL);
	ck_assert_int_eq(add_extent("w", 0, 16), 0);
	ck_assert_int_eq(add_extent("tied", 0, 16), 0);
	ck_assert_int_eq(add_extent("head", 0, 8), 0);
	tfs_diag_clear(&d);
	ck_assert_int_eq(tfs_builder_finish(b, "test", &t, &d), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(d.msg, "overlaps"));
}
END_TEST

/* listed, never served: no extent rules, reads EIO, verify says why */
START_TEST(unreadable_files)
{
	struct tfs_tensor_spec s = spec_for("far", 0, 8);
	struct tfs_tree *t;
	char buf[64];

	s.offset = 1u << 20; /* past the end: not ours to check */
	s.length = 0;
	s.unreadable = "in another file";
	ck_assert_int_eq(tfs_builder_add_tensor(b, &s, NULL, &d), 0);
	s = spec_for("bad", 0, 8);
	s.unreadable = "breaks a rule";
	s.unreadable_is_fault = true;
	ck_assert_int_eq(tfs_builder_add_tensor(b, &s, NULL, &d), 0);
	/* the shape is still checked against the size */
	s = spec_for("wrong", 0, 8);
	s.size = 9;
	s.length = 0;
	s.unreadable = "x";
	ck_assert_int_eq(tfs_builder_add_tensor(b, &s, NULL, &d), -EBADMSG);
	t = finish();
	ck_assert_uint_eq(t->ntensors, 2);
	ck_assert_str_eq(t->tensors[0].unreadable, "in another file");
	ck_assert(!t->tensors[0].unreadable_is_fault);
	ck_assert_uint_eq(t->tensors[0].size, 8);
	ck_assert(t->tensors[1].unreadable_is_fault);
	ck_assert_int_eq(tfs_tree_getxattr(t, t->tensors[0].node,
					   "user.tensorfs.unreadable", buf,
					   sizeof(buf)),
			 strlen("in another file"));
	ck_assert_mem_eq(buf, "in another file", strlen("in another file"));
	tfs_tree_free(t);
}
END_TEST

START_TEST(warnings_are_data)
{
	struct tfs_tree *t;
	uint32_t node;
	const struct tfs_node *n;
	json_t *j, *w;

	ck_assert_int_eq(tfs_builder_warn(b, 12, "trailing %d bytes", 3), 0);
	ck_assert_int_eq(tfs_builder_warn(b, TFS_NO_OFFSET, "second"), 0);
	t = finish();
	ck_assert_uint_eq(t->nwarnings, 2);
	ck_assert_str_eq(t->warnings[0].msg, "trailing 3 bytes");
	ck_assert_uint_eq(t->warnings[0].offset, 12);
	ck_assert_uint_eq(t->warnings[1].offset, TFS_NO_OFFSET);
	node = tfs_tree_resolve(t, ".tensorfs/metadata.json");
	ck_assert_uint_ne(node, TFS_NO_NODE);
	n = &t->nodes[node];
	j = json_loadb(n->mem, n->mem_len, 0, NULL);
	ck_assert_ptr_nonnull(j);
	w = json_object_get(j, "warnings");
	ck_assert_uint_eq(json_array_size(w), 2);
	ck_assert_str_eq(json_string_value(json_array_get(w, 0)),
			 "trailing 3 bytes");
	ck_assert_str_eq(json_string_value(json_array_get(w, 1)), "second");
	json_decref(j);
	tfs_tree_free(t);
}
END_TEST

/* block and sub-byte dtypes share the one size rule (tfs_dtype_bytes) */
START_TEST(block_dtypes)
{
	static uint64_t shape[2];
	struct tfs_tensor_spec s = spec_for("q", 0, 36);

	s.dtype = TFS_DTYPE_Q4_0; /* 64 elements: 2 blocks of 18 bytes */
	s.ndim = 2;
	s.shape = shape;
	shape[0] = 2;
	shape[1] = 32;
	ck_assert_int_eq(tfs_builder_add_tensor(b, &s, NULL, &d), 0);
	s.name = "q2";
	shape[1] = 16; /* 32 elements: one block, not two */
	ck_assert_int_eq(tfs_builder_add_tensor(b, &s, NULL, &d), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(d.msg, "does not match shape x q4_0"));
	tfs_diag_clear(&d);
	shape[1] = 17; /* 34 elements: not whole blocks */
	ck_assert_int_eq(tfs_builder_add_tensor(b, &s, NULL, &d), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(d.msg, "whole number of q4_0 blocks"));
	tfs_diag_clear(&d);
	s = spec_for("f4", 0, 3);
	s.dtype = TFS_DTYPE_FLOAT4; /* 6 elements, two per byte */
	s.shape = shape;
	shape[0] = 6;
	ck_assert_int_eq(tfs_builder_add_tensor(b, &s, NULL, &d), 0);
	s = spec_for("f6", 0, 3);
	s.dtype = TFS_DTYPE_FLOAT6_E2M3; /* 4 elements in 3 bytes */
	s.shape = shape;
	shape[0] = 4;
	ck_assert_int_eq(tfs_builder_add_tensor(b, &s, NULL, &d), 0);
	shape[0] = 5;
	s.name = "f6b";
	ck_assert_int_eq(tfs_builder_add_tensor(b, &s, NULL, &d), -EBADMSG);
	tfs_diag_clear(&d);
	s = spec_for("rec", 0, 24);
	s.dtype = TFS_DTYPE_VOID;
	s.record_size = 12;
	s.shape = shape;
	shape[0] = 2;
	ck_assert_int_eq(tfs_builder_add_tensor(b, &s, NULL, &d), 0);
	s.record_size = 0;
	s.name = "rec0";
	ck_assert_int_eq(tfs_builder_add_tensor(b, &s, NULL, &d), -EINVAL);
}
END_TEST

START_TEST(dtype_table)
{
	uint64_t n;
	unsigned i;

	for (i = 1; i < TFS_DTYPE_COUNT; i++) {
		const struct tfs_dtype_info *di = tfs_dtype_info(i);

		ck_assert_ptr_nonnull(di->name);
		ck_assert_uint_eq(tfs_dtype_from_name(di->name), i);
		ck_assert_int_ne(di->kind, TFS_KIND_NONE);
	}
	/* ggml's own numbers (specs/gguf.md section 5) */
	ck_assert_int_eq(tfs_dtype_bytes(TFS_DTYPE_Q6_K, 512, &n), 0);
	ck_assert_uint_eq(n, 420);
	ck_assert_int_eq(tfs_dtype_bytes(TFS_DTYPE_Q8_0, 31, &n), -EINVAL);
	ck_assert_int_eq(tfs_dtype_bytes(TFS_DTYPE_QFLOAT, 4, &n), -EINVAL);
	ck_assert_int_eq(tfs_dtype_bytes(TFS_DTYPE_FLOAT64, UINT64_MAX, &n),
			 -EOVERFLOW);
	ck_assert_uint_eq(tfs_dtype_size(TFS_DTYPE_BFLOAT16), 2);
	ck_assert_uint_eq(tfs_dtype_size(TFS_DTYPE_Q4_K), 0);
	ck_assert_uint_eq(tfs_dtype_size(TFS_DTYPE_INVALID), 0);
	ck_assert_ptr_null(tfs_dtype_name(TFS_DTYPE_COUNT));
	ck_assert_uint_eq(tfs_dtype_from_name("q4_K"), TFS_DTYPE_INVALID);
}
END_TEST

START_TEST(shape_texts)
{
	const uint64_t shape[] = {2, 3, 18446744073709551615ull};
	char buf[32], small[6];

	ck_assert_int_eq(tfs_shape_text(buf, sizeof(buf), shape, 0), 0);
	ck_assert_str_eq(buf, "[]");
	ck_assert_int_eq(tfs_shape_text(buf, sizeof(buf), shape, 2), 0);
	ck_assert_str_eq(buf, "[2,3]");
	ck_assert_int_eq(tfs_shape_text(buf, sizeof(buf), shape, 3), 0);
	ck_assert_str_eq(buf, "[2,3,18446744073709551615]");
	/* cut: said, and still a string */
	ck_assert_int_eq(tfs_shape_text(small, sizeof(small), shape, 3),
			 -E2BIG);
	ck_assert_str_eq(small, "[2,3,");
}
END_TEST

START_TEST(printable_names)
{
	char buf[16];

	ck_assert_str_eq(tfs_name_printable(buf, sizeof(buf), "a\tb", 3),
			 "a%09b");
	ck_assert_str_eq(
		tfs_name_printable(buf, sizeof(buf), "0123456789abcdefgh", 18),
		"0123456789ab...");
	/* a cut never splits a UTF-8 sequence (\xc3\xa9 is e-acute) */
	ck_assert_str_eq(tfs_name_printable(buf, sizeof(buf),
					    "01234567890\xc3\xa9xyz", 16),
			 "01234567890...");
	/* '%' as the path escape writes it, so every %XX is an escape */
	ck_assert_str_eq(tfs_name_printable(buf, sizeof(buf), "a%\n\xff/", 5),
			 "a%25%0A%FF%2F");
	ck_assert_str_eq(tfs_name_printable(buf, sizeof(buf), "..", 2),
			 "%2E%2E");
	/* nor a %XX */
	ck_assert_str_eq(
		tfs_name_printable(buf, sizeof(buf), "0123456789a\nbc", 14),
		"0123456789a...");
	ck_assert_str_eq(tfs_name_printable(buf, 4, "abcdef", 6), "...");
}
END_TEST

/* a name in a recorded message: what tfs_name_printable made, kept */
START_TEST(shown_names_in_diagnostics)
{
	struct tfs_diag dg;

	tfs_diag_clear(&dg);
	tfs_diag_at(&dg, -EBADMSG, 7, "tensor '%s': bad",
		    TFS_SHOWN("w%\x1b\xc3", 4));
	ck_assert_str_eq(dg.msg, "tensor 'w%25%1B%C3': bad");
}
END_TEST

START_TEST(groups_and_xattrs)
{
	struct tfs_tensor_spec g = spec_for("s", 0, 0), c = spec_for("v", 0, 4);
	static const char names[] = "user.tensorfs.dtype\0"
				    "user.tensorfs.encoding\0"
				    "user.tensorfs.offset\0"
				    "user.tensorfs.role\0"
				    "user.tensorfs.shape\0"
				    "user.tensorfs.stored_length";
	uint32_t gh, ch;
	struct tfs_tree *t;
	const struct tfs_xattr *x;
	char buf[256];
	uint32_t n;

	g.dtype = TFS_DTYPE_FLOAT32;
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
	/* a reader's value wins over the one made from the record */
	ck_assert_int_eq(tfs_tree_getxattr(t, n, "user.tensorfs.dtype", buf,
					   sizeof(buf)),
			 6);
	ck_assert_mem_eq(buf, "uint64", 6);
	ck_assert_int_eq(
		tfs_tree_getxattr(t, n, "user.tensorfs.role", buf, sizeof(buf)),
		6);
	ck_assert_mem_eq(buf, "values", 6);
	ck_assert_int_eq(tfs_tree_getxattr(t, n, "user.tensorfs.role", buf, 3),
			 -ERANGE);
	/* listxattr: the stored and the made names, each once, sorted */
	ck_assert_int_eq(tfs_tree_listxattr(t, n, NULL, 0), sizeof(names));
	ck_assert_int_eq(tfs_tree_listxattr(t, n, buf, 10), -ERANGE);
	ck_assert_int_eq(tfs_tree_listxattr(t, n, buf, sizeof(buf)),
			 sizeof(names));
	ck_assert_mem_eq(buf, names, sizeof(names));
	/* a component has no name of its own */
	ck_assert_int_eq(
		tfs_tree_getxattr(t, n, "user.tensorfs.name", buf, sizeof(buf)),
		-ENODATA);
	ck_assert_int_eq(
		tfs_tree_getxattr(t, n, "user.tensorfs.nope", buf, sizeof(buf)),
		-ENODATA);
	x = tfs_tree_xattr(t, 0, "user.tensorfs.format");
	ck_assert_mem_eq(x->value, "test", 4);
	ck_assert_uint_eq(t->tensors[0].group, tfs_tree_resolve(t, "s"));
	ck_assert_str_eq(t->tensors[0].role, "values");
	tfs_tree_free(t);
}
END_TEST

/* a tensor "name" at [off, +4) with the manifest extras @extra (taken) */
static void add_with_extra(const char *name, uint64_t off, json_t *extra)
{
	struct tfs_tensor_spec s = spec_for(name, off, 4);
	uint32_t h;

	ck_assert_int_eq(tfs_builder_add_tensor(b, &s, &h, &d), 0);
	if (extra)
		ck_assert_int_eq(
			json_object_update(tfs_builder_manifest_extra(b, h),
					   extra),
			0);
	json_decref(extra);
}

/*
 * manifest.json, made on first use entry by entry, is byte for byte
 * jansson's JSON_INDENT(2) dump of the same document; extras equal but for
 * their members' order keep their own order
 */
START_TEST(manifest_text_is_jansson_dump)
{
	struct tfs_tensor_spec g = spec_for("sp", 0, 0),
			       c = spec_for("v", 8, 4);
	struct tfs_tree *t;
	json_error_t err;
	json_t *j;
	char *want;
	const char *text, *p1, *p2;
	uint32_t n, gh;

	add_with_extra("a.b", 0,
		       json_pack("{s:s, s:{s:i, s:[s,f]}}", "layout", "dense",
				 "attributes", "z", 1, "list", "x", 0.5));
	add_with_extra("a.c", 4,
		       json_pack("{s:s, s:{s:[s,f], s:i}}", "layout", "dense",
				 "attributes", "list", "x", 0.5, "z", 1));
	add_with_extra("a.d", 12, json_pack("{s:s}", "layout", "dense"));
	add_with_extra("a.e", 16, NULL);
	add_with_extra("bad\xff", 20, json_pack("{s:s}", "layout", "dense"));
	g.dtype = TFS_DTYPE_FLOAT32;
	ck_assert_int_eq(tfs_builder_add_group(b, &g, &gh, &d), 0);
	json_object_set_new(tfs_builder_manifest_extra(b, gh), "layout",
			    json_string("csr"));
	ck_assert_int_eq(
		tfs_builder_add_component(b, gh, "values", &c, NULL, &d), 0);
	t = finish();
	n = tfs_tree_resolve(t, ".tensorfs/manifest.json");
	ck_assert_uint_ne(n, TFS_NO_NODE);
	ck_assert_uint_gt(tfs_node_size(t, n), 0);
	text = t->nodes[n].mem;
	j = json_loadb(text, t->nodes[n].mem_len, 0, &err);
	ck_assert_ptr_nonnull(j);
	ck_assert_uint_eq(json_array_size(json_object_get(j, "tensors")), 6);
	want = json_dumps(j, JSON_INDENT(2));
	ck_assert_ptr_nonnull(want);
	ck_assert_uint_eq(t->nodes[n].mem_len, strlen(want) + 1);
	ck_assert_mem_eq(text, want, strlen(want));
	ck_assert_int_eq(text[strlen(want)], '\n');
	/* "a.b" lists "z" first, "a.c" "list" first */
	p1 = strstr(text, "\"z\"");
	p2 = strstr(text, "\"list\"");
	ck_assert(p1 && p2 && p1 < p2);
	p1 = strstr(p2 + 1, "\"z\"");
	p2 = strstr(p2 + 1, "\"list\"");
	ck_assert(p1 && p2 && p2 < p1);
	ck_assert_str_eq(
		json_string_value(json_object_get(
			json_array_get(json_object_get(j, "tensors"), 5),
			"layout")),
		"csr");
	free(want);
	json_decref(j);
	tfs_tree_free(t);
}
END_TEST

/*
 * Entries sharing their manifest members (tfs_builder_share_manifest_extra)
 * print them each; one entry's own member added later is its alone.
 */
START_TEST(shared_manifest_extra)
{
	json_t *shared = json_pack("{s:s}", "layout", "dense"), *j, *ts;
	struct tfs_tensor_spec s;
	struct tfs_tree *t;
	uint32_t h[3], i, n;

	for (i = 0; i < 3; i++) {
		char name[8];

		snprintf(name, sizeof(name), "t%u", i);
		s = spec_for(name, 4 * i, 4);
		ck_assert_int_eq(tfs_builder_add_tensor(b, &s, &h[i], &d), 0);
		ck_assert_int_eq(
			tfs_builder_share_manifest_extra(b, h[i], shared), 0);
	}
	/* once there, not again */
	ck_assert_int_eq(tfs_builder_share_manifest_extra(b, h[0], shared),
			 -EINVAL);
	json_object_set_new(tfs_builder_manifest_extra(b, h[1]), "own",
			    json_true());
	ck_assert_ptr_null(json_object_get(shared, "own"));
	json_decref(shared); /* the builder holds its own references */
	t = finish();
	n = tfs_tree_resolve(t, ".tensorfs/manifest.json");
	ck_assert_uint_gt(tfs_node_size(t, n), 0);
	j = json_loadb(t->nodes[n].mem, t->nodes[n].mem_len, 0, NULL);
	ts = json_object_get(j, "tensors");
	ck_assert_uint_eq(json_array_size(ts), 3);
	for (i = 0; i < 3; i++) {
		json_t *e = json_array_get(ts, i);

		ck_assert_str_eq(
			json_string_value(json_object_get(e, "layout")),
			"dense");
		ck_assert_int_eq(json_object_get(e, "own") != NULL, i == 1);
	}
	json_decref(j);
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
	/* made on first use */
	ck_assert_ptr_null(t->nodes[n].mem);
	ck_assert_uint_gt(tfs_node_size(t, n), 0);
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
	tcase_add_test(tc, reserved_as_a_directory);
	tcase_add_test(tc, deep_names_are_capped);
	tcase_add_test(tc, shared_checks);
	tcase_add_test(tc, groups_and_xattrs);
	tcase_add_test(tc, duplicate_names);
	tcase_add_test(tc, duplicate_names_with_odd_bytes);
	tcase_add_test(tc, overlaps);
	tcase_add_test(tc, unreadable_files);
	tcase_add_test(tc, warnings_are_data);
	tcase_add_test(tc, block_dtypes);
	tcase_add_test(tc, dtype_table);
	tcase_add_test(tc, shape_texts);
	tcase_add_test(tc, printable_names);
	tcase_add_test(tc, shown_names_in_diagnostics);
	tcase_add_test(tc, manifest_json);
	tcase_add_test(tc, shared_manifest_extra);
	tcase_add_test(tc, manifest_text_is_jansson_dump);
	tcase_add_test(tc, many_tensors);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
