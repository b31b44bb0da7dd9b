// SPDX-License-Identifier: MIT
/*
 * The Python literal reader (src/parse/pyliteral.h): numpy's header dicts
 * as numpy writes them (repr of a dict, see shared/specs/npy.md section 2),
 * Python's tuple and string rules, and refusals with their offsets.
 */
#include <errno.h>
#include <string.h>

#include "parse/pyliteral.h"
#include "testutil.h"

#define BASE 10 /* the text's first byte is at this absolute offset */

static int parse(const char *text, bool latin1, struct tfs_py *v,
		 struct tfs_diag *d)
{
	struct tfs_py_options o = {.latin1 = latin1, .long_suffix = true};

	tfs_diag_clear(d);
	return tfs_py_parse(text, strlen(text), BASE, &o, v, d);
}

START_TEST(numpy_header)
{
	/* numpy 1.24's header for f4_1d.npy, with its padding */
	static const char h[] =
		"{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"
		"                                                            \n";
	const struct tfs_py *descr, *fo, *shape;
	struct tfs_py v;
	struct tfs_diag d;

	ck_assert_int_eq(parse(h, true, &v, &d), 0);
	ck_assert_int_eq(v.kind, TFS_PY_DICT);
	ck_assert_uint_eq(v.n, 6);
	ck_assert_uint_eq(v.offset, BASE);
	descr = tfs_py_dict_get(&v, "descr");
	ck_assert_ptr_nonnull(descr);
	ck_assert_int_eq(descr->kind, TFS_PY_STR);
	ck_assert_str_eq(descr->s, "<f4");
	ck_assert_uint_eq(descr->offset, BASE + 10);
	ck_assert_uint_eq(descr->end, BASE + 15);
	ck_assert_uint_eq(v.end, BASE + 57);
	fo = tfs_py_dict_get(&v, "fortran_order");
	ck_assert_int_eq(fo->kind, TFS_PY_BOOL);
	ck_assert(!fo->b);
	shape = tfs_py_dict_get(&v, "shape");
	ck_assert_int_eq(shape->kind, TFS_PY_TUPLE);
	ck_assert_uint_eq(shape->n, 1);
	ck_assert_int_eq(shape->items[0].i, 3);
	ck_assert_ptr_null(tfs_py_dict_get(&v, "nope"));
	ck_assert_ptr_null(tfs_py_dict_get(shape, "descr"));
	tfs_py_free(&v);
}
END_TEST

START_TEST(tuples_and_ints)
{
	static const struct {
		const char *text;
		enum tfs_py_kind kind;
		size_t n;
		int64_t first;
	} v[] = {
		{"()", TFS_PY_TUPLE, 0, 0},
		{"(3,)", TFS_PY_TUPLE, 1, 3},
		{"(2, 3)", TFS_PY_TUPLE, 2, 2},
		{"(2, 3,)", TFS_PY_TUPLE, 2, 2},
		{" ( 2 ,\n3 , ) ", TFS_PY_TUPLE, 2, 2},
		{"(3)", TFS_PY_INT, 0, 3}, /* parentheses, not a tuple */
		{"((3))", TFS_PY_INT, 0, 3},
		{"((3,))", TFS_PY_TUPLE, 1, 3},
		{"3L", TFS_PY_INT, 0, 3},
		{"0", TFS_PY_INT, 0, 0},
		{"-7", TFS_PY_INT, 0, -7},
		{"9223372036854775807", TFS_PY_INT, 0, INT64_MAX},
		{"-9223372036854775808", TFS_PY_INT, 0, INT64_MIN},
		{"[]", TFS_PY_LIST, 0, 0},
		{"[1, 2,]", TFS_PY_LIST, 2, 1},
		{"{}", TFS_PY_DICT, 0, 0},
		{"None", TFS_PY_NONE, 0, 0},
		{"True", TFS_PY_BOOL, 0, 1},
	};
	struct tfs_py x;
	struct tfs_diag d;
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		ck_assert_msg(parse(v[i].text, true, &x, &d) == 0, "%s: %s",
			      v[i].text, d.msg);
		ck_assert_msg(x.kind == v[i].kind, "%s: kind %s", v[i].text,
			      tfs_py_kind_name(x.kind));
		if (x.kind == TFS_PY_INT || x.kind == TFS_PY_BOOL)
			ck_assert_int_eq(x.i, v[i].first);
		else
			ck_assert_uint_eq(x.n, v[i].n);
		if (x.n && x.items[0].kind == TFS_PY_INT)
			ck_assert_int_eq(x.items[0].i, v[i].first);
		tfs_py_free(&x);
	}
}
END_TEST

START_TEST(strings)
{
	static const struct {
		const char *text;
		bool latin1;
		const char *want;
		size_t len;
	} v[] = {
		{"'abc'", true, "abc", 3},
		{"\"a'b\"", true, "a'b", 3},
		{"'a\\'b\\\\c'", true, "a'b\\c", 5},
		{"'\\n\\t\\x41\\u00e9\\U0001F600'", true,
		 "\n\tA\xc3\xa9\xf0\x9f\x98\x80", 9},
		{"'\\x00'", true, "\0", 1},
		/* latin-1: byte 0xE9 is U+00E9 */
		{"'caf\xe9'", true, "caf\xc3\xa9", 5},
		/* UTF-8 (v3.0 headers): bytes kept */
		{"'caf\xc3\xa9'", false, "caf\xc3\xa9", 5},
		{"''", true, "", 0},
	};
	struct tfs_py x;
	struct tfs_diag d;
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		ck_assert_msg(parse(v[i].text, v[i].latin1, &x, &d) == 0,
			      "%zu: %s", i, d.msg);
		ck_assert_int_eq(x.kind, TFS_PY_STR);
		ck_assert_uint_eq(x.len, v[i].len);
		ck_assert_mem_eq(x.s, v[i].want, v[i].len);
		ck_assert_int_eq(x.s[x.len], 0);
		tfs_py_free(&x);
	}
}
END_TEST

START_TEST(structured_descr)
{
	/* repr of a structured dtype's descr, as numpy writes it */
	static const char h[] =
		"{'descr': [('x', '<f4'), ('y', '<i2', (2,)), ('', '|V2')], "
		"'fortran_order': False, 'shape': (2,), }";
	const struct tfs_py *descr;
	struct tfs_py v;
	struct tfs_diag d;

	ck_assert_int_eq(parse(h, true, &v, &d), 0);
	descr = tfs_py_dict_get(&v, "descr");
	ck_assert_int_eq(descr->kind, TFS_PY_LIST);
	ck_assert_uint_eq(descr->n, 3);
	ck_assert_int_eq(descr->items[1].kind, TFS_PY_TUPLE);
	ck_assert_uint_eq(descr->items[1].n, 3);
	ck_assert_str_eq(descr->items[1].items[1].s, "<i2");
	ck_assert_int_eq(descr->items[1].items[2].items[0].i, 2);
	tfs_py_free(&v);
}
END_TEST

START_TEST(rejects)
{
	static const struct {
		const char *text;
		bool latin1;
		const char *word;
		const char *at; /* where, as a suffix of the text */
	} v[] = {
		{"", true, "found the end", ""},
		{"   ", true, "found the end", ""},
		{"{'a': 1", true, "expected ',' or '}'", ""},
		{"{'a' 1}", true, "expected ':'", "1}"},
		{"{'a': 1 'b': 2}", true, "expected ',' or '}'", "'b': 2}"},
		{"{'a': 1, 'a': 2}", true, "duplicate key", "'a': 2}"},
		{"{(1,): 2}", true, "not a str or int", "(1,): 2}"},
		{"{'a': 1} x", true, "text after the value", "x"},
		{"(1 2)", true, "expected ',' or ')'", "2)"},
		{"[1 2]", true, "expected ',' or ']'", "2]"},
		{"(,)", true, "not a literal", ",)"},
		{"'abc", true, "unterminated", "'abc"},
		{"'ab\ncd'", true, "line break", "\ncd'"},
		{"'a\\q'", true, "unsupported escape", "\\q'"},
		{"'\\x4'", true, "bad hex digit", "'"},
		{"'\\ud800'", true, "not a code point", "\\ud800'"},
		{"'caf\xe9'", false, "invalid UTF-8", "\xe9'"},
		{"'\xc0\xaf'", false, "invalid UTF-8", "\xc0\xaf'"},
		{"'a' 'b'", true, "text after the value", "'b'"},
		{"007", true, "leading zero", "007"},
		{"1_000", true, "not a plain decimal", "_000"},
		{"1.5", true, "not a plain decimal", ".5"},
		{"0x10", true, "not a plain decimal", "x10"},
		{"3l", true, "not a plain decimal", "l"},
		{"9223372036854775808", true, "64-bit range",
		 "9223372036854775808"},
		{"-", true, "without digits", "-"},
		{"true", true, "not a literal", "true"},
		{"Trueish", true, "not a literal", "Trueish"},
		{"__import__('os')", true, "not a literal", "__import__('os')"},
		{"b'x'", true, "not a literal", "b'x'"},
		{"1 + 2", true, "text after the value", "+ 2"},
		/* 34 lists: the 34th is at depth 33 */
		{"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
		 true, "nested too deep",
		 "[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"},
	};
	struct tfs_py x;
	struct tfs_diag d;
	size_t i, len;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		ck_assert_msg(parse(v[i].text, v[i].latin1, &x, &d) == -EBADMSG,
			      "%zu '%s' accepted", i, v[i].text);
		ck_assert_msg(strstr(d.msg, v[i].word), "%zu: '%s'", i, d.msg);
		len = strlen(v[i].text);
		ck_assert_msg(d.has_offset &&
				      d.offset == BASE + len - strlen(v[i].at),
			      "%zu: offset %llu, want %zu", i,
			      (unsigned long long)d.offset,
			      BASE + len - strlen(v[i].at));
		ck_assert_int_eq(x.kind, TFS_PY_NONE); /* freed, zeroed */
		ck_assert_ptr_null(x.items);
	}
	/* 'L' only when allowed (v3.0 headers: Python 3 has no long) */
	{
		struct tfs_py_options o = {.long_suffix = false};

		tfs_diag_clear(&d);
		ck_assert_int_eq(tfs_py_parse("3L", 2, 0, &o, &x, &d),
				 -EBADMSG);
		ck_assert_uint_eq(d.offset, 1);
	}
}
END_TEST

/* every prefix of a valid header is refused or parsed, never over-read */
START_TEST(every_prefix)
{
	static const char h[] = "{'descr': [('a', '<U3'), ('b', '>f8', (2, "
				"3))], 'fortran_order': True, 'shape': (0, "
				"1L,), 'k': None, 's': \"\\u00e9\\x00\"}";
	struct tfs_py_options o = {.latin1 = true, .long_suffix = true};
	struct tfs_py x;
	struct tfs_diag d;
	size_t n, len = strlen(h);
	char *copy;

	for (n = 0; n <= len; n++) {
		copy = malloc(n ? n : 1);
		ck_assert_ptr_nonnull(copy);
		memcpy(copy, h, n);
		tfs_diag_clear(&d);
		if (tfs_py_parse(copy, n, 0, &o, &x, &d) == 0) {
			ck_assert_uint_eq(n, len);
			tfs_py_free(&x);
		} else {
			ck_assert_uint_le(d.offset, n);
		}
		free(copy);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pyliteral");
	TCase *tc = tcase_create("pyliteral");

	tcase_add_test(tc, numpy_header);
	tcase_add_test(tc, tuples_and_ints);
	tcase_add_test(tc, strings);
	tcase_add_test(tc, structured_descr);
	tcase_add_test(tc, rejects);
	tcase_add_test(tc, every_prefix);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
