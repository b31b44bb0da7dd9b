// SPDX-License-Identifier: MIT
/* Escaping of stored names into path components (docs/tree.md). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/diag.h"
#include "core/names.h"
#include "core/text.h"
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

/* the one escaper of printed text (core/text.h) */
static void safe_is(const char *in, size_t n, size_t buflen, const char *want)
{
	char buf[256];

	ck_assert_uint_le(buflen, sizeof(buf));
	tfs_text_safe(buf, buflen, in, n);
	ck_assert_msg(strcmp(buf, want) == 0, "got '%s', want '%s'", buf, want);
	ck_assert(tfs_text_is_safe(buf, strlen(buf)));
}

START_TEST(text_safe)
{
	/* controls, DEL, C1 (U+009B, a CSI), invalid UTF-8: one byte each */
	safe_is("we\nght\x1b[31m", 11, 64, "we%0Aght%1B[31m");
	safe_is("a\x07\x7f\tb", 5, 64, "a%07%7F%09b");
	safe_is("x\xc2\x9b"
		"1m",
		5, 64, "x%C2%9B1m");
	safe_is("\xff\xc3", 2, 64, "%FF%C3");
	/* printable text, '%' and '/' included, stays as it is */
	safe_is("caf\xc3\xa9 a/b 100%", 14, 64, "caf\xc3\xa9 a/b 100%");
	safe_is("\xc2\xa0", 2, 64, "\xc2\xa0"); /* U+00A0 is printable */
	/* cut at a boundary: never inside "%XX" or a UTF-8 sequence */
	safe_is("ab\n", 3, 5, "ab");
	safe_is("a\xe2\x98\x83", 4, 4, "a");
	ck_assert(!tfs_text_is_safe("a\nb", 3));
	ck_assert(tfs_text_is_safe("", 0));
}
END_TEST

START_TEST(text_whole_and_location)
{
	char buf[128];

	/* a sequence cut by a fixed buffer is dropped, not escaped */
	ck_assert_uint_eq(tfs_text_whole("a\xe2\x98", 3), 1);
	ck_assert_uint_eq(tfs_text_whole("a\xe2\x98\x83", 4), 4);
	ck_assert_uint_eq(tfs_text_whole("a\xc3", 2), 1);
	ck_assert_uint_eq(tfs_text_whole("abc", 3), 3);
	ck_assert_uint_eq(tfs_text_whole("a\xff", 2), 2);
	/* URLs lose credentials, query and fragment */
	tfs_text_location(buf, sizeof(buf),
			  "https://u:p@host/m.safetensors?X-Sig=1#f");
	ck_assert_str_eq(buf, "https://host/m.safetensors");
	tfs_text_location(buf, sizeof(buf), "s3://b/p/m.gguf");
	ck_assert_str_eq(buf, "s3://b/p/m.gguf");
	tfs_text_location(buf, sizeof(buf), "dir/a@b?.zt\n");
	ck_assert_str_eq(buf, "dir/a@b?.zt%0A");
}
END_TEST

/* a diagnostic is one printable line whatever the reader quoted */
START_TEST(diag_escapes)
{
	struct tfs_diag d;
	char big[TFS_DIAG_MSG_MAX * 3];

	tfs_diag_clear(&d);
	tfs_diag_at(&d, -EBADMSG, 7, "tensor '%s': dtype '%.3s'", "a\nb\x1b",
		    "\x7f\xc2\x9b");
	ck_assert_str_eq(d.msg, "tensor 'a%0Ab%1B': dtype '%7F%C2%9B'");
	/* a long message is cut at a character boundary */
	memset(big, 'x', sizeof(big));
	memcpy(big + TFS_DIAG_MSG_MAX - 3, "\xe2\x98\x83\xe2\x98\x83", 6);
	big[sizeof(big) - 1] = '\0';
	tfs_diag_clear(&d);
	tfs_diag_set(&d, -EBADMSG, "%s", big);
	ck_assert(tfs_text_is_safe(d.msg, strlen(d.msg)));
	ck_assert_uint_lt(strlen(d.msg), TFS_DIAG_MSG_MAX);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("names");
	TCase *tc = tcase_create("names");

	tcase_add_test(tc, escapes);
	tcase_add_test(tc, long_names);
	tcase_add_test(tc, utf8);
	tcase_add_test(tc, text_safe);
	tcase_add_test(tc, text_whole_and_location);
	tcase_add_test(tc, diag_escapes);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
