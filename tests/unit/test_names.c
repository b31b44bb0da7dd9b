// SPDX-License-Identifier: MIT
/* Escaping of stored names into path components (docs/tree.md). */
#include <stdlib.h>
#include <string.h>

#include "tensorfs/names.h"
#include "testutil.h"

static void expect(const char *in, size_t len, const char *want)
{
	char *got = tfs_name_escape(in, len, TFS_NAME_MAX);

	ck_assert_ptr_nonnull(got);
	ck_assert_str_eq(got, want);
	free(got);
}

START_TEST(escapes)
{
	expect("weight", 6, "weight");
	expect("", 0, "%");
	expect(".", 1, "%2E");
	expect("..", 2, "%2E%2E");
	expect("...", 3, "...");
	expect("a/b", 3, "a%2Fb");
	expect("100%", 4, "100%25");
	expect("a\0b", 3, "a%00b");
	expect("tab\there\n", 9, "tab%09here%0A");
	expect("\x7f", 1, "%7F");
	expect("caf\xc3\xa9", 5, "caf\xc3\xa9"); /* valid UTF-8 kept */
	expect("\xc3", 1, "%C3");		 /* truncated sequence */
	expect("\xc0\xaf", 2, "%C0%AF");	 /* overlong '/' */
	expect("\xed\xa0\x80", 3, "%ED%A0%80");	 /* surrogate */
	expect("\xf0\x9f\x98\x80", 4, "\xf0\x9f\x98\x80"); /* emoji */
}
END_TEST

START_TEST(long_names)
{
	char in[600], *a, *b;

	memset(in, 'x', sizeof(in));
	a = tfs_name_escape(in, 300, TFS_NAME_MAX);
	b = tfs_name_escape(in, 301, TFS_NAME_MAX);
	ck_assert_uint_eq(strlen(a), 255);
	ck_assert_uint_eq(strlen(b), 255);
	ck_assert_str_ne(a, b); /* the hash keeps them apart */
	ck_assert_int_eq(a[238], '~');
	free(a);
	free(b);
	/* never cut inside an escape or a UTF-8 sequence */
	memset(in, '/', 200);
	a = tfs_name_escape(in, 200, TFS_NAME_MAX);
	ck_assert_uint_le(strlen(a), 255);
	ck_assert_int_eq(a[0], '%');
	ck_assert_int_eq(strchr(a, '~') - a, 237); /* 79 whole "%2F" */
	free(a);
	expect("x", 1, "x");
	a = tfs_name_escape(in, 255, 255 * 3); /* 200 '/', 55 'x' */
	ck_assert_uint_eq(strlen(a), 655);
	free(a);
}
END_TEST

START_TEST(utf8)
{
	ck_assert(tfs_utf8_valid((const unsigned char *)"abc", 3));
	ck_assert(!tfs_utf8_valid((const unsigned char *)"\xff", 1));
	ck_assert(!tfs_utf8_valid((const unsigned char *)"\xf4\x90\x80\x80",
				  4)); /* > U+10FFFF */
	ck_assert(tfs_utf8_valid((const unsigned char *)"\xf4\x8f\xbf\xbf", 4));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("names");
	TCase *tc = tcase_create("names");

	tcase_add_test(tc, escapes);
	tcase_add_test(tc, long_names);
	tcase_add_test(tc, utf8);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
