// SPDX-License-Identifier: MIT
/*
 * zTensor 2.x against upstream's conformance corpus (../shared/fixtures/
 * ztensor-v2, 19 valid and 57 reject files) and against the files of
 * tests/fixtures/ztensor2/generate.py (written from the spec).  Both come
 * with a table of expected outcomes in one schema (expected.json: for the
 * corpus transcribed from upstream and re-checked independently, for ours
 * written by the generator from what it wrote), parsed here with jansson;
 * nothing expected is taken from tensorfs.
 *
 * Per file: a reject that fails at open is refused with the rule's name
 * first in the message and a byte offset, and no image; every other file
 * loads as format "ztensor", version 2, with exactly the listed objects:
 * one tensor record per part (a file for a lone "data" part, else a
 * component of the object's directory), its manifest dtype, logical type,
 * layout and shape, its decoded size and the sha256 of its bytes.  Data-
 * level outcomes go through the read path and `tensorfs verify`'s check:
 * a part that must fail reads EIO and fails its check naming the rule; an
 * unsupported one (foreign, unknown encoding) reads EIO and is skipped.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/format.h"
#include "core/image.h"
#include "core/source.h"
#include "testutil.h"

static json_t *load_table(const char *path)
{
	json_error_t e;
	json_t *t = json_load_file(path, 0, &e);

	ck_assert_msg(t != NULL, "%s: %s (line %d)", path, e.text, e.line);
	return t;
}

/* the case of @rel ("valid/x.zt") in table @t, or NULL */
static json_t *find_case(json_t *t, const char *rel)
{
	json_t *c;
	size_t i;

	json_array_foreach(json_object_get(t, "cases"), i, c)
	{
		if (strcmp(json_string_value(json_object_get(c, "file")),
			   rel) == 0)
			return c;
	}
	return NULL;
}

static const char *jstr(json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* the tensor record of object @name, part @role (NULL: the object's file) */
static const struct tfs_tensor *find_part(const struct tfs_image *img,
					  const char *name, const char *role)
{
	uint32_t i;

	for (i = 0; i < img->tree->ntensors; i++) {
		const struct tfs_tensor *x = &img->tree->tensors[i];

		if (x->name_len != strlen(name) ||
		    memcmp(x->name, name, x->name_len) != 0)
			continue;
		if (role ? (x->role && strcmp(x->role, role) == 0) : !x->role)
			return x;
	}
	return NULL;
}

/* xattr user.tensorfs.<key> of tensor @x, or NULL */
static const char *txattr(const struct tfs_image *img,
			  const struct tfs_tensor *x, const char *key)
{
	return tu_xattr(img, x->path, key);
}

/* {"bytes": hex} (the table's byte strings) -> "hex" (metadata.json's) */
static json_t *bytes_as_hex(json_t *v)
{
	json_t *r, *e;
	const char *k;
	size_t i;

	if (json_is_object(v) && json_object_size(v) == 1 &&
	    json_is_string(json_object_get(v, "bytes")))
		return json_incref(json_object_get(v, "bytes"));
	if (json_is_array(v)) {
		r = json_array();
		json_array_foreach(v, i, e)
			json_array_append_new(r, bytes_as_hex(e));
		return r;
	}
	if (json_is_object(v)) {
		r = json_object();
		json_object_foreach(v, k, e)
			json_object_set_new(r, k, bytes_as_hex(e));
		return r;
	}
	return json_incref(v);
}

static void expect_json_eq(const char *file, const char *what, json_t *got,
			   json_t *want)
{
	json_t *w = bytes_as_hex(want);
	char *gs = json_dumps(got, JSON_ENCODE_ANY | JSON_SORT_KEYS);
	char *ws = json_dumps(w, JSON_ENCODE_ANY | JSON_SORT_KEYS);

	ck_assert_msg(got && json_equal(got, w), "%s: %s is %s, expected %s",
		      file, what, gs ? gs : "(none)", ws ? ws : "(none)");
	free(gs);
	free(ws);
	json_decref(w);
}

static json_t *metadata(const struct tfs_image *img)
{
	uint32_t n = tfs_tree_resolve(img->tree, ".tensorfs/metadata.json");
	json_error_t e;

	ck_assert(n != TFS_NO_NODE);
	return json_loadb(img->tree->nodes[n].mem,
			  (size_t)img->tree->nodes[n].mem_len, 0, &e);
}

/* the part's data-level outcome: "ok", "fault" (rule), "skip" */
static void check_reads(const char *file, struct tfs_image *img,
			const struct tfs_tensor *x, const char *outcome,
			const char *rule, json_t *p)
{
	struct tfs_check_result r;
	struct tfs_view v;
	const char *sha = jstr(p, "decoded_sha256");
	char hex[65];
	uint8_t *b;
	size_t len;
	uint32_t idx = (uint32_t)(x - img->tree->tensors);

	tfs_image_check_tensor(img, idx, &r, NULL, NULL);
	if (strcmp(outcome, "ok") == 0) {
		ck_assert_msg(r.err == 0 && !r.skipped, "%s: %s: check: %s",
			      file, x->path, r.msg);
		if (jstr(p, "digest") &&
		    (!strncmp(jstr(p, "digest"), "xxh3:", 5) ||
		     !strncmp(jstr(p, "digest"), "sha256:", 7) ||
		     !strncmp(jstr(p, "digest"), "crc32c:", 7)))
			ck_assert_msg(r.digest_checked,
				      "%s: %s: digest not "
				      "checked",
				      file, x->path);
		ck_assert_msg(sha != NULL, "%s: %s: no sha256", file, x->path);
		b = tu_read_node(img, x->node, &len);
		ck_assert_uint_eq(len, x->size);
		tu_sha256_hex(b, len, hex);
		ck_assert_msg(strcmp(hex, sha) == 0, "%s: %s: sha256 %s", file,
			      x->path, hex);
		free(b);
		return;
	}
	if (x->size) {
		ck_assert_int_eq(tfs_image_read(img, x->node, 0, 1, &v), -EIO);
		tfs_view_release(img, &v);
	}
	if (strcmp(outcome, "skip") == 0) {
		ck_assert_msg(r.skipped && r.err == 0,
			      "%s: %s: not skipped (%d %s)", file, x->path,
			      r.err, r.msg);
		return;
	}
	ck_assert_msg(r.err != 0 && strcasestr(r.msg, rule),
		      "%s: %s: check gives %d '%s', expected %s", file, x->path,
		      r.err, r.msg, rule);
	/* the bytes are still the listed ones: the stored extent */
	if (sha && !jstr(p, "encoding")) {
		tu_sha256_hex(tfs_image_source(img, x)->data + x->offset,
			      (size_t)x->stored_length, hex);
		ck_assert_msg(strcmp(hex, sha) == 0, "%s: %s: stored sha256 %s",
			      file, x->path, hex);
	}
}

/* operation "verify:O/P", "view:O/P", "read_csr:O": does it cover @o/@p? */
static bool op_covers(const char *op, const char *o, const char *p)
{
	const char *arg = strchr(op, ':');
	size_t n;

	if (!arg)
		return false;
	arg++;
	n = strlen(o);
	if (strncmp(op, "read_csr:", 9) == 0)
		return strcmp(arg, o) == 0;
	return strncmp(arg, o, n) == 0 && arg[n] == '/' &&
	       strcmp(arg + n + 1, p) == 0;
}

static void check_object(const char *file, struct tfs_image *img, json_t *c,
			 json_t *o, size_t *nparts)
{
	const char *name = jstr(o, "name"), *op = jstr(c, "operation"),
		   *expect = jstr(c, "expect"), *rule = jstr(c, "rule");
	json_t *parts = json_object_get(o, "parts"), *p;
	const struct tfs_tensor *x;
	const char *part, *v;
	bool lone;
	size_t i;

	lone = json_array_size(parts) == 1 &&
	       strcmp(jstr(json_array_get(parts, 0), "part"), "data") == 0;
	json_array_foreach(parts, i, p)
	{
		const char *outcome = "ok";

		part = jstr(p, "part");
		x = find_part(img, name, lone ? NULL : part);
		ck_assert_msg(x != NULL, "%s: no file for %s/%s", file, name,
			      part);
		(*nparts)++;
		ck_assert_str_eq(txattr(img, x, "ztensor.dtype"),
				 jstr(p, "dtype"));
		v = txattr(img, x, "ztensor.logical_type");
		ck_assert_msg(jstr(p, "type") ? v && !strcmp(v, jstr(p, "type"))
					      : !v,
			      "%s: %s: logical type %s", file, x->path,
			      v ? v : "(none)");
		ck_assert_uint_eq(
			x->size,
			json_object_get(p, "decoded_length")
				? (uint64_t)json_integer_value(
					  json_object_get(p, "decoded_length"))
				: (uint64_t)json_integer_value(json_array_get(
					  json_object_get(p, "blob"), 1)));
		if (jstr(p, "shard"))
			ck_assert_str_eq(txattr(img, x, "ztensor.shard"),
					 jstr(p, "shard"));
		if (jstr(p, "shard") ||
		    (strcmp(expect, "unsupported") == 0 &&
		     op_covers(op, name, part)) ||
		    (jstr(p, "encoding") && !jstr(p, "decoded_sha256")))
			outcome = "skip";
		else if (strcmp(expect, "reject") == 0 &&
			 op_covers(op, name, part))
			outcome = "fault";
		check_reads(file, img, x, outcome, rule, p);
	}
}

/* the object's shape and layout, on its file or directory */
static void check_object_node(const char *file, struct tfs_image *img,
			      json_t *o)
{
	json_t *parts = json_object_get(o, "parts"), *got;
	const struct tfs_tensor *x;
	const char *path, *v;
	bool lone = json_array_size(parts) == 1 &&
		    strcmp(jstr(json_array_get(parts, 0), "part"), "data") == 0;

	x = find_part(img, jstr(o, "name"),
		      lone ? NULL : jstr(json_array_get(parts, 0), "part"));
	path = lone ? x->path : NULL;
	if (!lone) {
		/* the component's directory: its path less "/role" */
		static char dir[4096];
		size_t n = strlen(x->path) - strlen(x->role) - 1;

		memcpy(dir, x->path, n);
		dir[n] = '\0';
		path = dir;
	}
	v = tu_xattr(img, path, "ztensor.layout");
	ck_assert_msg(v && strcmp(v, jstr(o, "layout")) == 0,
		      "%s: %s: layout %s", file, path, v ? v : "(none)");
	v = tu_xattr(img, path, "ztensor.shape");
	ck_assert_msg(v != NULL, "%s: %s: no ztensor.shape", file, path);
	got = json_loads(v, JSON_DECODE_ANY, NULL);
	expect_json_eq(file, "shape", got, json_object_get(o, "shape"));
	json_decref(got);
}

/*
 * The case whose data-level outcome applies to @c: a valid file checked
 * only at open that is byte-identical to a reject that opens (corpus:
 * f4-packed-odd-count = f4-nonzero-odd-nibble) has that reject's content,
 * so its reads must fail the same way; else @c itself.
 */
static json_t *data_case(json_t *table, json_t *c)
{
	json_t *t;
	size_t i;

	if (strcmp(jstr(c, "operation"), "open") != 0)
		return c;
	json_array_foreach(json_object_get(table, "cases"), i, t)
	{
		if (t != c &&
		    strcmp(jstr(t, "sha256_file"), jstr(c, "sha256_file")) ==
			    0 &&
		    strcmp(jstr(t, "expect"), "reject") == 0 &&
		    json_is_true(json_object_get(t, "opens")))
			return t;
	}
	return c;
}

static void check_case(const char *path, const char *file, json_t *table,
		       json_t *c)
{
	struct tfs_image *img = NULL;
	struct tfs_diag d;
	json_t *o, *meta, *want;
	const char *rule = jstr(c, "rule");
	size_t i, nparts = 0;
	int ret;

	ret = tu_load_file(path, &img, &d);
	if (ret == -ENOEXEC) {
		/* no magic to detect (file-too-small, header-magic): what
		 * the 2.x reader says when handed the file */
		struct tfs_source src;

		ck_assert_int_eq(tfs_source_open(&src, path, &d), 0);
		ret = tfs_image_load_format(
			&img, &src, tfs_format_by_name("ztensor2"), NULL, &d);
		ck_assert_msg(ret != 0, "%s: undetected but valid", file);
	}
	if (!json_is_true(json_object_get(c, "opens"))) {
		ck_assert_msg(ret != 0 && !img, "%s: loads, expected %s", file,
			      rule);
		ck_assert_msg(strncmp(d.msg, rule, strlen(rule)) == 0 &&
				      d.msg[strlen(rule)] == ':',
			      "%s: refused with '%s', expected %s", file, d.msg,
			      rule);
		ck_assert_msg(d.has_offset, "%s: no byte offset", file);
		return;
	}
	ck_assert_msg(ret == 0, "%s: refused: %s", file, d.msg);
	ck_assert_str_eq(img->format->name, "ztensor2");
	ck_assert_str_eq(img->tree->format, "ztensor");
	tu_expect_xattr(img, "", "format", "ztensor");
	tu_expect_xattr(img, "", "ztensor.version", "2");
	meta = metadata(img);
	ck_assert(meta != NULL);
	if (strcmp(jstr(c, "expect"), "data_shard") == 0)
		ck_assert(json_is_true(json_object_get(meta, "data_shard")));
	else
		ck_assert(!json_object_get(meta, "data_shard"));
	want = json_object_get(c, "attributes");
	if (want)
		expect_json_eq(file, "attributes",
			       json_object_get(meta, "attributes"), want);
	want = json_object_get(c, "shards");
	if (want)
		expect_json_eq(file, "shards", json_object_get(meta, "shards"),
			       want);
	json_array_foreach(json_object_get(c, "objects"), i, o)
	{
		check_object(file, img, data_case(table, c), o, &nparts);
		check_object_node(file, img, o);
		if (json_object_get(o, "attributes")) {
			json_t *oa = json_object_get(
				json_object_get(meta, "object_attributes"),
				jstr(o, "name"));

			expect_json_eq(file, "object attributes", oa,
				       json_object_get(o, "attributes"));
		}
	}
	/* exactly the listed parts: no other file */
	ck_assert_msg(img->tree->ntensors == nparts,
		      "%s: %u files, expected %zu", file, img->tree->ntensors,
		      nparts);
	json_decref(meta);
	tfs_image_close(img);
}

struct walk {
	json_t *table;
	const char *sub; /* "valid" or "reject" */
	size_t n;
};

static void walk_one(const char *path, const char *name, void *arg)
{
	struct walk *w = arg;
	char rel[512];
	json_t *c;

	snprintf(rel, sizeof(rel), "%s/%s", w->sub, name);
	c = find_case(w->table, rel);
	ck_assert_msg(c != NULL, "%s is not in expected.json", rel);
	/* the directories agree with the table: valid/ and reject/ (the
	 * corpus' and ours), read_eio/ (ours: opens, some reads fail) */
	if (strcmp(w->sub, "read_eio") == 0)
		ck_assert_msg(json_is_true(json_object_get(c, "opens")),
			      "%s: does not open", rel);
	else
		ck_assert_msg((strcmp(w->sub, "valid") ==
			       0) == (strcmp(jstr(c, "expect"), "reject") != 0),
			      "%s: expect %s", rel, jstr(c, "expect"));
	check_case(path, rel, w->table, c);
	w->n++;
}

/*
 * every file of @dir's valid/, reject/ and read_eio/ (absent: none) against
 * @dir/expected.json; @dir is copied at once (tu_* paths are static)
 */
static size_t walk_dir(const char *path)
{
	static const char *const subs[] = {"valid", "reject", "read_eio"};
	char dir[2048], sub[4096];
	struct walk w;
	size_t i;

	snprintf(dir, sizeof(dir), "%s", path);
	snprintf(sub, sizeof(sub), "%s/expected.json", dir);
	w = (struct walk){.table = load_table(sub)};
	for (i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
		w.sub = subs[i];
		snprintf(sub, sizeof(sub), "%s/%s", dir, subs[i]);
		if (i < 2 || access(sub, F_OK) == 0)
			tu_each_fixture(sub, walk_one, &w);
	}
	ck_assert_uint_eq(w.n,
			  json_array_size(json_object_get(w.table, "cases")));
	json_decref(w.table);
	return w.n;
}

/* upstream's conformance corpus: real, stays in ../shared */
START_TEST(conformance_corpus)
{
	TU_NEED_SHARED("ztensor-v2/expected.json");
	ck_assert_uint_eq(walk_dir(tu_fixture("ztensor-v2")), 76);
}
END_TEST

START_TEST(generated_files)
{
	ck_assert_uint_ge(walk_dir(tu_testdata("ztensor2")), 20);
}
END_TEST

/* the corpus files are the ones expected.json describes */
START_TEST(corpus_identity)
{
	json_t *t, *c;
	char path[4096], hex[65];
	uint8_t *b;
	size_t i, len;

	TU_NEED_SHARED("ztensor-v2/expected.json");
	snprintf(path, sizeof(path), "%s/expected.json",
		 tu_fixture("ztensor-v2"));
	t = load_table(path);
	json_array_foreach(json_object_get(t, "cases"), i, c)
	{
		snprintf(path, sizeof(path), "%s/%s", tu_fixture("ztensor-v2"),
			 jstr(c, "file"));
		b = tu_read_file(path, &len);
		ck_assert_uint_eq(
			len, json_integer_value(json_object_get(c, "size")));
		tu_sha256_hex(b, len, hex);
		ck_assert_str_eq(hex, jstr(c, "sha256_file"));
		free(b);
	}
	json_decref(t);
}
END_TEST

/* a 2.x file (@path) is claimed by the 2.x reader */
static void expect_ztensor2(const char *path)
{
	struct tfs_image *img;
	struct tfs_diag d;

	ck_assert_int_eq(tu_load_file(path, &img, &d), 0);
	ck_assert_str_eq(img->format->name, "ztensor2");
	tfs_image_close(img);
}

START_TEST(probe)
{
	TU_NEED_SHARED("ztensor-v2/valid/minimal.zt");
	expect_ztensor2(tu_fixture("ztensor-v2/valid/minimal.zt"));
}
END_TEST

/* ... and a 1.x file is not */
START_TEST(generated_probe)
{
	struct tfs_image *img;
	struct tfs_diag d;

	expect_ztensor2(tu_testdata("ztensor2/valid/attributes.zt"));
	expect_ztensor2(tu_testdata("ztensor2/valid/depth-32.zt"));
	ck_assert_int_eq(tu_load_file(tu_testdata("ztensor/valid/"
						  "v12_empty_and_scalar.zt"),
				      &img, &d),
			 0);
	ck_assert_str_eq(img->format->name, "ztensor");
	tfs_image_close(img);
}
END_TEST

/*
 * generate.py's shared-blobs.zt: five parts of four objects on the one
 * 16-byte blob at 4096, as f32 [4], f32 [2,2], u8 [16] and raw bytes
 */
START_TEST(generated_aliases)
{
	static const char *const parts[] = {"w1", "w2", "w3"};
	const struct tfs_tensor *t[3];
	struct tfs_image *img;
	struct tfs_diag d;
	size_t i;

	ck_assert_int_eq(tu_load_file(tu_testdata("ztensor2/valid/"
						  "shared-blobs.zt"),
				      &img, &d),
			 0);
	for (i = 0; i < 3; i++) {
		t[i] = find_part(img, parts[i], NULL);
		ck_assert_msg(t[i] != NULL, "no %s", parts[i]);
		ck_assert_uint_eq(t[i]->offset, 4096);
		ck_assert_uint_eq(t[i]->size, 16);
	}
	ck_assert_str_eq(t[0]->dtype, "float32");
	ck_assert_str_eq(t[2]->dtype, "uint8");
	tfs_image_close(img);
}
END_TEST

/* shared blobs: several files, one byte range, no copy */
START_TEST(aliases_share_bytes)
{
	struct tfs_image *img;
	struct tfs_diag d;
	const struct tfs_tensor *a, *t;

	TU_NEED_SHARED("ztensor-v2/valid/canonical-basic.zt");
	ck_assert_int_eq(
		tu_load_file(tu_fixture("ztensor-v2/valid/canonical-basic.zt"),
			     &img, &d),
		0);
	a = find_part(img, "a.weight", NULL);
	t = find_part(img, "tied", NULL);
	ck_assert(a && t);
	ck_assert_str_eq(a->path, "a/weight");
	ck_assert_uint_eq(a->offset, 131072);
	ck_assert_uint_eq(t->offset, a->offset);
	ck_assert_str_eq(a->dtype, "bfloat16");
	tfs_image_close(img);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ztensor2");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, conformance_corpus);
	tcase_add_test(tc, corpus_identity);
	tcase_add_test(tc, generated_files);
	tcase_add_test(tc, probe);
	tcase_add_test(tc, aliases_share_bytes);
	tcase_add_test(tc, generated_probe);
	tcase_add_test(tc, generated_aliases);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
