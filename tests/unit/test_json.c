// SPDX-License-Identifier: MIT
/*
 * The JSON pull reader (src/parse/json.h): tokens and their offsets,
 * string decoding against Python's json module (the vectors below were
 * decoded by it), strict RFC 8259 rejects with exact offsets, depth, skip,
 * the jansson conversion.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "parse/json.h"
#include "testutil.h"

#define BASE 1000 /* the buffer's first byte is at file offset 1000 */

static struct tfs_json j;
static struct tfs_diag d;

static void start(const char *doc)
{
	tfs_diag_clear(&d);
	tfs_json_init(&j, doc, strlen(doc), BASE, 0);
}

static struct tfs_json_token next_ok(enum tfs_json_kind kind, uint64_t at)
{
	struct tfs_json_token t;

	ck_assert_int_eq(tfs_json_next(&j, &t, &d), 0);
	ck_assert_int_eq(t.kind, kind);
	ck_assert_uint_eq(t.offset, BASE + at);
	return t;
}

START_TEST(tokens_and_offsets)
{
	struct tfs_json_token t;
	uint64_t v;

	start(" {\"a\" : [1, -2.5e3, true,false ,null], \"b\":{}}  ");
	next_ok(TFS_JSON_OBJECT, 1);
	t = next_ok(TFS_JSON_KEY, 2);
	ck_assert(tfs_json_eq(&t, "a"));
	next_ok(TFS_JSON_ARRAY, 8);
	t = next_ok(TFS_JSON_NUMBER, 9);
	ck_assert_int_eq(tfs_json_u64(&t, &v), 0);
	ck_assert_uint_eq(v, 1);
	t = next_ok(TFS_JSON_NUMBER, 12);
	ck_assert_int_eq(tfs_json_u64(&t, &v), -EINVAL);
	ck_assert_uint_eq(t.len, 6);
	next_ok(TFS_JSON_TRUE, 20);
	next_ok(TFS_JSON_FALSE, 25);
	next_ok(TFS_JSON_NULL, 32);
	next_ok(TFS_JSON_ARRAY_END, 36);
	t = next_ok(TFS_JSON_KEY, 39);
	ck_assert(tfs_json_eq(&t, "b"));
	next_ok(TFS_JSON_OBJECT, 43);
	next_ok(TFS_JSON_OBJECT_END, 44);
	next_ok(TFS_JSON_OBJECT_END, 45);
	next_ok(TFS_JSON_END, 48);
	/* END again is still END */
	next_ok(TFS_JSON_END, 48);
}
END_TEST

/* strings decode as Python's json.loads decodes them */
START_TEST(strings_as_python_decodes_them)
{
	static const struct {
		const char *doc, *want;
		size_t len;
	} v[] = {
		{"\"plain\"", "plain", 5},
		{"\"tab\\tq\\\"b\\\\s\\/\"",
		 "\x74\x61\x62\x09\x71\x22\x62\x5c\x73\x2f", 10},
		{"\"\\u00e9\\u4e2d\\ud83d\\ude00\"",
		 "\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80", 9},
		{"\"\xc3\xa9\xe4\xb8\xad\"", "\xc3\xa9\xe4\xb8\xad", 5},
		{"\"nul\\u0000in\"", "\x6e\x75\x6c\x00\x69\x6e", 6},
		{"\"\\b\\f\\n\\r\"", "\b\f\n\r", 4},
	};
	struct tfs_json_token t;
	char *s;
	size_t i, n;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		start(v[i].doc);
		t = next_ok(TFS_JSON_STRING, 0);
		ck_assert_uint_eq(tfs_json_decoded_len(&t), v[i].len);
		s = tfs_json_strdup(&t, &n);
		ck_assert_uint_eq(n, v[i].len);
		ck_assert(memcmp(s, v[i].want, n) == 0);
		ck_assert_int_eq(s[n], '\0');
		free(s);
		if (!memchr(v[i].want, 0, v[i].len))
			ck_assert(tfs_json_eq(&t, v[i].want));
		next_ok(TFS_JSON_END, strlen(v[i].doc));
	}
	/* eq compares decoded bytes, not the escaped spelling */
	start("\"\\u0041\"");
	t = next_ok(TFS_JSON_STRING, 0);
	ck_assert(tfs_json_eq(&t, "A"));
	ck_assert(!tfs_json_eq(&t, "AB"));
}
END_TEST

START_TEST(numbers)
{
	struct tfs_json_token t;
	uint64_t v;

	start("[18446744073709551615, 18446744073709551616, 0, 1e2, -0]");
	next_ok(TFS_JSON_ARRAY, 0);
	t = next_ok(TFS_JSON_NUMBER, 1);
	ck_assert_int_eq(tfs_json_u64(&t, &v), 0);
	ck_assert_uint_eq(v, UINT64_MAX);
	t = next_ok(TFS_JSON_NUMBER, 23);
	ck_assert_int_eq(tfs_json_u64(&t, &v), -ERANGE);
	t = next_ok(TFS_JSON_NUMBER, 45);
	ck_assert_int_eq(tfs_json_u64(&t, &v), 0);
	ck_assert_uint_eq(v, 0);
	t = next_ok(TFS_JSON_NUMBER, 48);
	ck_assert_int_eq(tfs_json_u64(&t, &v), -EINVAL); /* not an integer */
	t = next_ok(TFS_JSON_NUMBER, 53);
	ck_assert_int_eq(tfs_json_u64(&t, &v), -EINVAL); /* has a sign */
}
END_TEST

/* each document is refused at the byte named, with the word given */
START_TEST(rejects)
{
	static const struct {
		const char *doc;
		uint64_t at;
		const char *word;
	} v[] = {
		{"", 0, "value expected"},
		{"{", 1, "ends inside an object"},
		{"[1,]", 3, "no trailing comma"},
		{"{\"a\":1,}", 7, "no trailing comma"},
		{"{\"a\" 1}", 5, "':' expected"},
		{"{1:2}", 1, "member name"},
		{"[1 2]", 3, "',' or ']'"},
		{"{\"a\":1 \"b\":2}", 7, "',' or '}'"},
		{"[01]", 2, "leading zero"},
		{"[1.]", 3, "after '.'"},
		{"[1e]", 3, "exponent"},
		{"[-]", 2, "digit"},
		{"[+1]", 1, "value expected"},
		{"[NaN]", 1, "value expected"},
		{"[tru]", 1, "value expected"},
		{"\"a\tb\"", 2, "control byte"},
		{"\"a\\x\"", 2, "invalid escape"},
		{"\"\\u12g4\"", 1, "four hex"},
		{"\"\\udc00\"", 1, "lone low surrogate"},
		{"\"\\ud800x\"", 1, "without its low half"},
		{"\"\\ud800\\u0041\"", 1, "without its low half"},
		{"\"\xc3\"", 1, "UTF-8"},
		{"\"\xc0\xaf\"", 1, "UTF-8"},	      /* overlong */
		{"\"\xed\xa0\x80\"", 1, "UTF-8"},     /* a surrogate */
		{"\"\xf4\x90\x80\x80\"", 1, "UTF-8"}, /* > U+10FFFF */
		{"\"abc", 0, "closing quote"},
		{"{} {}", 3, "after the top-level value"},
		{"[1] x", 4, "after the top-level value"},
		{"\x0c[]", 0, "value expected"}, /* form feed: not whitespace */
		/* comments are not JSON */
		{"[1 /* c */]", 3, "',' or ']'"},
	};
	struct tfs_json_token t;
	size_t i;
	int ret;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		start(v[i].doc);
		do
			ret = tfs_json_next(&j, &t, &d);
		while (!ret && t.kind != TFS_JSON_END);
		ck_assert_msg(ret == -EBADMSG, "'%s' accepted", v[i].doc);
		ck_assert_msg(strstr(d.msg, v[i].word), "'%s': '%s'", v[i].doc,
			      d.msg);
		ck_assert_msg(d.offset == BASE + v[i].at,
			      "'%s': at %llu, want %llu", v[i].doc,
			      (unsigned long long)d.offset,
			      (unsigned long long)(BASE + v[i].at));
	}
}
END_TEST

START_TEST(depth_is_bounded)
{
	char doc[200];
	struct tfs_json_token t;
	int i, ret;

	memset(doc, '[', 65);
	memset(doc + 65, ']', 65);
	doc[130] = '\0';
	start(doc);
	for (i = 0; i < 64; i++)
		next_ok(TFS_JSON_ARRAY, (uint64_t)i);
	ret = tfs_json_next(&j, &t, &d);
	ck_assert_int_eq(ret, -EBADMSG);
	ck_assert_ptr_nonnull(strstr(d.msg, "nested too deeply"));
	ck_assert_uint_eq(d.offset, BASE + 64);
	/* a smaller limit of the caller's */
	tfs_diag_clear(&d);
	tfs_json_init(&j, "[[[]]]", 6, 0, 2);
	next_ok(TFS_JSON_ARRAY, (uint64_t)0 - BASE);
	next_ok(TFS_JSON_ARRAY, (uint64_t)1 - BASE);
	ck_assert_int_eq(tfs_json_next(&j, &t, &d), -EBADMSG);
}
END_TEST

START_TEST(skip_values)
{
	struct tfs_json_token t;

	start("{\"x\": {\"y\": [1, {\"z\": [[]]}]}, \"w\": 2}");
	next_ok(TFS_JSON_OBJECT, 0);
	next_ok(TFS_JSON_KEY, 1);
	t = next_ok(TFS_JSON_OBJECT, 6);
	ck_assert_int_eq(tfs_json_skip(&j, &t, &d), 0);
	t = next_ok(TFS_JSON_KEY, 31);
	ck_assert(tfs_json_eq(&t, "w"));
	t = next_ok(TFS_JSON_NUMBER, 36);
	ck_assert_int_eq(tfs_json_skip(&j, &t, &d), 0); /* a scalar */
	next_ok(TFS_JSON_OBJECT_END, 37);
	next_ok(TFS_JSON_END, 38);
	/* skipping into broken JSON reports it */
	start("[{\"a\": [1,]}]");
	next_ok(TFS_JSON_ARRAY, 0);
	t = next_ok(TFS_JSON_OBJECT, 1);
	ck_assert_int_eq(tfs_json_skip(&j, &t, &d), -EBADMSG);
	ck_assert_uint_eq(d.offset, BASE + 10);
}
END_TEST

START_TEST(to_jansson)
{
	struct tfs_json_token t;
	json_t *v;
	char *s;

	start("{\"k\": [1, 2.5, \"s\\n\", true, null, {}, "
	      "99999999999999999999], \"e\\u00e9\": false}");
	t = next_ok(TFS_JSON_OBJECT, 0);
	ck_assert_int_eq(tfs_json_to_jansson(&j, &t, 100, &v, &d), 0);
	s = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
	ck_assert_str_eq(s, "{\"e\xc3\xa9\":false,\"k\":[1,2.5,\"s\\n\",true,"
			    "null,{},\"99999999999999999999\"]}");
	free(s);
	json_decref(v);
	next_ok(TFS_JSON_END, 78);
	/* the node limit */
	start("[1, 2, 3, 4]");
	t = next_ok(TFS_JSON_ARRAY, 0);
	ck_assert_int_eq(tfs_json_to_jansson(&j, &t, 4, &v, &d), -E2BIG);
	ck_assert_ptr_null(v);
	ck_assert_uint_eq(d.offset, BASE + 10);
}
END_TEST

START_TEST(typed_checks)
{
	struct tfs_json_token t;

	/* one message shape: "WHAT: not KIND", at the value */
	start("[\"s\", 2, {}, [], true]");
	next_ok(TFS_JSON_ARRAY, 0);
	t = next_ok(TFS_JSON_STRING, 1);
	ck_assert_int_eq(tfs_json_want(&t, TFS_JSON_STRING, &d, "x"), 0);
	ck_assert_int_eq(
		tfs_json_want(&t, TFS_JSON_OBJECT, &d, "tensor '%s'", "w"),
		-EBADMSG);
	ck_assert_str_eq(d.msg, "tensor 'w': not an object");
	ck_assert_uint_eq(d.offset, BASE + 1);
	t = next_ok(TFS_JSON_NUMBER, 6);
	tfs_diag_clear(&d);
	ck_assert_int_eq(tfs_json_want(&t, TFS_JSON_STRING, &d, "a[%d]", 1),
			 -EBADMSG);
	ck_assert_str_eq(d.msg, "a[1]: not a string");
	ck_assert_uint_eq(d.offset, BASE + 6);
	t = next_ok(TFS_JSON_OBJECT, 9);
	tfs_diag_clear(&d);
	ck_assert_int_eq(tfs_json_want(&t, TFS_JSON_ARRAY, &d, "s"), -EBADMSG);
	ck_assert_str_eq(d.msg, "s: not an array");
	tfs_diag_clear(&d);
	ck_assert_int_eq(tfs_json_want(&t, TFS_JSON_NUMBER, &d, "n"), -EBADMSG);
	ck_assert_str_eq(d.msg, "n: not a number");
	/* the root must be an object */
	start(" [1]");
	ck_assert_int_eq(tfs_json_root(&j, &t, "header", &d), -EBADMSG);
	ck_assert_str_eq(d.msg, "header: not a JSON object");
	ck_assert_uint_eq(d.offset, BASE + 1);
	start(" {}");
	ck_assert_int_eq(tfs_json_root(&j, &t, "header", &d), 0);
	ck_assert_int_eq(t.kind, TFS_JSON_OBJECT);
}
END_TEST

START_TEST(member_and_item_loops)
{
	struct tfs_json_token o, k, v, a, e;
	int ret, n = 0, items = 0;

	/* the values not read ("a", "c", "d") are skipped */
	start("{\"a\": 1, \"b\": [2, {\"x\": [3]}, 4], \"c\": {\"y\": [{}]}, "
	      "\"d\": [5]}");
	o = next_ok(TFS_JSON_OBJECT, 0);
	while ((ret = tfs_json_member(&j, &o, &k, &v, &d)) > 0) {
		ck_assert_int_eq(k.kind, TFS_JSON_KEY);
		n++;
		if (!tfs_json_eq(&k, "b"))
			continue;
		a = v;
		ck_assert_int_eq(a.kind, TFS_JSON_ARRAY);
		ck_assert_uint_eq(a.offset, BASE + 14);
		while ((ret = tfs_json_item(&j, &a, &e, &d)) > 0)
			items++; /* the object {"x": [3]} is skipped */
		ck_assert_int_eq(ret, 0);
	}
	ck_assert_int_eq(ret, 0);
	ck_assert_int_eq(n, 4);
	ck_assert_int_eq(items, 3);
	next_ok(TFS_JSON_END, 61);
	/* a broken member, or one left unread, is the reader's error */
	start("{\"a\" 1}");
	o = next_ok(TFS_JSON_OBJECT, 0);
	ck_assert_int_eq(tfs_json_member(&j, &o, &k, &v, &d), -EBADMSG);
	ck_assert_uint_eq(d.offset, BASE + 5);
	start("{\"a\": [1,], \"b\": 2}");
	o = next_ok(TFS_JSON_OBJECT, 0);
	ck_assert_int_eq(tfs_json_member(&j, &o, &k, &v, &d), 1);
	ck_assert_int_eq(tfs_json_member(&j, &o, &k, &v, &d), -EBADMSG);
	ck_assert_uint_eq(d.offset, BASE + 9);
	start("[1 2]");
	a = next_ok(TFS_JSON_ARRAY, 0);
	ck_assert_int_eq(tfs_json_item(&j, &a, &e, &d), 1);
	ck_assert_int_eq(tfs_json_item(&j, &a, &e, &d), -EBADMSG);
}
END_TEST

START_TEST(arrays_of_u64)
{
	static const struct {
		const char *doc, *msg;
		uint64_t at;
	} bad[] = {
		{"{}", "shape: not an array", 0},
		{"[1, 2, 3, 4]", "shape: more than 3 entries", 10},
		{"[1, -2]", "shape: not a non-negative integer", 4},
		{"[1.5]", "shape: not a non-negative integer", 1},
		{"[\"1\"]", "shape: not a non-negative integer", 1},
		{"[18446744073709551616]",
		 "shape: 18446744073709551616 is above 2^64-1", 1},
	};
	struct tfs_json_token t;
	uint64_t out[3];
	uint32_t n = 99;
	size_t i;

	start("[0, 18446744073709551615, 7]");
	t = next_ok(TFS_JSON_ARRAY, 0);
	ck_assert_int_eq(tfs_json_u64s(&j, &t, out, 3, &n, &d, "%s", "shape"),
			 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(out[0], 0);
	ck_assert_uint_eq(out[1], UINT64_MAX);
	ck_assert_uint_eq(out[2], 7);
	next_ok(TFS_JSON_END, 28);
	start("[]");
	t = next_ok(TFS_JSON_ARRAY, 0);
	ck_assert_int_eq(tfs_json_u64s(&j, &t, out, 3, &n, &d, "x"), 0);
	ck_assert_uint_eq(n, 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		start(bad[i].doc);
		ck_assert_int_eq(tfs_json_next(&j, &t, &d), 0);
		ck_assert_int_eq(
			tfs_json_u64s(&j, &t, out, 3, &n, &d, "%s", "shape"),
			-EBADMSG);
		ck_assert_str_eq(d.msg, bad[i].msg);
		ck_assert_uint_eq(d.offset, BASE + bad[i].at);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("json");
	TCase *tc = tcase_create("json");

	tcase_add_test(tc, tokens_and_offsets);
	tcase_add_test(tc, strings_as_python_decodes_them);
	tcase_add_test(tc, numbers);
	tcase_add_test(tc, rejects);
	tcase_add_test(tc, depth_is_bounded);
	tcase_add_test(tc, skip_values);
	tcase_add_test(tc, to_jansson);
	tcase_add_test(tc, typed_checks);
	tcase_add_test(tc, member_and_item_loops);
	tcase_add_test(tc, arrays_of_u64);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
