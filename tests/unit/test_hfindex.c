// SPDX-License-Identifier: MIT
/* Hugging Face shard indexes (src/parse/hfindex.h). */
#include <errno.h>
#include <string.h>

#include "parse/hfindex.h"
#include "testutil.h"

static int parse(const char *doc, struct tfs_hf_index *x, struct tfs_diag *d)
{
	tfs_diag_clear(d);
	return tfs_hf_index_parse(doc, strlen(doc), x, d);
}

START_TEST(a_real_layout)
{
	/* the shape transformers writes (save_pretrained, indent 2) */
	static const char doc[] =
		"{\n  \"metadata\": {\n    \"total_size\": 16\n  },\n"
		"  \"weight_map\": {\n    \"b.w\": \"m-2.safetensors\",\n"
		"    \"a.w\": \"m-1.safetensors\",\n"
		"    \"a.b\": \"m-1.safetensors\"\n  }\n}\n";
	struct tfs_hf_index x;
	struct tfs_diag d;

	ck_assert_int_eq(parse(doc, &x, &d), 0);
	ck_assert_uint_eq(x.n, 3);
	ck_assert_uint_eq(x.nshards, 2);
	ck_assert_str_eq(x.shards[0], "m-1.safetensors");
	ck_assert_str_eq(x.shards[1], "m-2.safetensors");
	ck_assert_str_eq(x.v[0].name, "b.w");
	ck_assert_str_eq(x.v[0].shard, "m-2.safetensors");
	ck_assert_ptr_eq(x.v[1].shard, x.v[2].shard); /* interned */
	ck_assert_uint_eq(x.v[1].at, (uint64_t)(strstr(doc, "\"a.w\"") - doc));
	ck_assert(x.has_total);
	ck_assert_uint_eq(x.total_size, 16);
	tfs_hf_index_free(&x);
	/* no metadata, other keys ignored, escapes in names */
	ck_assert_int_eq(parse("{\"x\": [1, {}], \"weight_map\": "
			       "{\"\\u00e9\": \"s\"}}",
			       &x, &d),
			 0);
	ck_assert(!x.has_total);
	ck_assert_ptr_null(x.metadata);
	ck_assert_str_eq(x.v[0].name, "\xc3\xa9");
	tfs_hf_index_free(&x);
}
END_TEST

START_TEST(rejects)
{
	static const struct {
		const char *doc, *word, *at;
	} v[] = {
		{"[]", "not a JSON object", "["},
		{"{}", "no weight_map", "{"},
		{"{\"weight_map\": []}", "not an object", "[]"},
		{"{\"weight_map\": {\"a\": 1}}",
		 "weight_map: 'a': not a string", "1}"},
		{"{\"weight_map\": {\"a\": \"../x\"}}", "not a file name",
		 "\"../x\""},
		{"{\"weight_map\": {\"a\": \"\"}}", "not a file name", "\"\"}"},
		{"{\"weight_map\": {\"a\": \"..\"}}", "not a file name",
		 "\"..\""},
		{"{\"weight_map\": {\"a\": \"x\\u0000y\"}}", "not a file name",
		 "\"x"},
		{"{\"weight_map\": {\"a\": \"s\", \"a\": \"t\"}}",
		 "'a' is listed twice", "\"a\": \"t"},
		{"{\"weight_map\": {}, \"weight_map\": {}}", "given twice",
		 "\"weight_map\": {}}"},
		{"{\"metadata\": 3, \"weight_map\": {}}", "not an object", "3"},
		{"{\"weight_map\": {}} x", "after the top-level", "x"},
	};
	struct tfs_hf_index x;
	struct tfs_diag d;
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		ck_assert_msg(parse(v[i].doc, &x, &d) == -EBADMSG, "%s",
			      v[i].doc);
		ck_assert_msg(strstr(d.msg, v[i].word), "%s: %s", v[i].doc,
			      d.msg);
		ck_assert_msg(d.offset == (uint64_t)(strstr(v[i].doc, v[i].at) -
						     v[i].doc),
			      "%s: at %llu", v[i].doc,
			      (unsigned long long)d.offset);
		ck_assert_ptr_null(x.v);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hfindex");
	TCase *tc = tcase_create("hfindex");

	tcase_add_test(tc, a_real_layout);
	tcase_add_test(tc, rejects);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
