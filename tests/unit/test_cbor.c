// SPDX-License-Identifier: MIT
/* CBOR helpers: the structural pre-pass and the JSON mapping. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "parse/cbor.h"
#include "testutil.h"

static int decode(const char *hex_bytes, size_t len, cbor_item_t **out,
		  struct tfs_diag *d)
{
	uint64_t used;

	tfs_diag_clear(d);
	return tfs_cbor_decode((const uint8_t *)hex_bytes, len, 100,
			       TFS_CBOR_MAX_DEPTH, out, &used, d);
}

static char *to_json(const char *b, size_t len)
{
	struct tfs_diag d;
	cbor_item_t *it = NULL;
	json_t *j;
	char *s;

	ck_assert_int_eq(decode(b, len, &it, &d), 0);
	j = tfs_cbor_to_json(it);
	ck_assert_ptr_nonnull(j);
	s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
	json_decref(j);
	cbor_decref(&it);
	return s;
}

static void expect_json(const char *b, size_t len, const char *want)
{
	char *s = to_json(b, len);

	ck_assert_str_eq(s, want);
	free(s);
}

START_TEST(worked_example)
{
	/* cbor.md section 6 */
	expect_json("\xa1\x63"
		    "F32\x82\x02\x03",
		    8, "{\"F32\":[2,3]}");
}
END_TEST

START_TEST(scalars)
{
	expect_json("\xf9\x38\x00", 3, "0.5");
	expect_json("\x24", 1, "-5");
	expect_json("\x3b\x7f\xff\xff\xff\xff\xff\xff\xff", 9,
		    "-9223372036854775808");
	/* beyond int64: exact decimal strings */
	expect_json("\x1b\xff\xff\xff\xff\xff\xff\xff\xff", 9,
		    "\"18446744073709551615\"");
	expect_json("\x3b\xff\xff\xff\xff\xff\xff\xff\xff", 9,
		    "\"-18446744073709551616\"");
	expect_json("\x3b\x80\x00\x00\x00\x00\x00\x00\x00", 9,
		    "\"-9223372036854775809\"");
	expect_json("\x43\x01\xab\xff", 4, "\"01abff\"");
	expect_json("\xf5", 1, "true");
	expect_json("\xf6", 1, "null");
	expect_json("\xfa\x7f\x80\x00\x00", 5, "null"); /* +inf */
	expect_json("\xc1\x19\x09\x00", 4, "2304");	/* tag skipped */
	expect_json("\x19\x00\x05", 3, "5");		/* long head */
}
END_TEST

START_TEST(indefinite_forms)
{
	expect_json("\xbf\x61"
		    "a\x01\xff",
		    5, "{\"a\":1}");
	expect_json("\x9f\x01\x02\xff", 4, "[1,2]");
	expect_json("\x7f\x61"
		    "a\x62"
		    "bc\xff",
		    7, "\"abc\"");
	/* a map with a non-text key becomes [key, value] pairs */
	expect_json("\xa1\x01\x02", 3, "[[1,2]]");
	/* so does one with a NUL inside a text key */
	expect_json("\xa1\x62"
		    "a\x00\x02",
		    5, "[[\"a\\u0000\",2]]");
	/* a tagged item: the tag is dropped and nothing leaks (ASan) */
	expect_json("\xc1\xc2\x01", 3, "1");
}
END_TEST

START_TEST(rejects)
{
	struct tfs_diag d;
	cbor_item_t *it = NULL;
	char deep[200];

	/* truncated */
	ck_assert_int_eq(decode("\x82\x01\x81", 3, &it, &d), -EBADMSG);
	ck_assert_uint_eq(d.offset, 102);
	ck_assert_int_eq(decode("\x19\x01", 2, &it, &d), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(d.msg, "truncated"));
	/* reserved additional info */
	ck_assert_int_eq(decode("\x1c", 1, &it, &d), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(d.msg, "reserved"));
	/* a 2^32-item array in 9 bytes: refused before any allocation */
	ck_assert_int_eq(
		decode("\x9a\xff\xff\xff\xff\x00\x00\x00\x00", 9, &it, &d),
		-EBADMSG);
	ck_assert_ptr_nonnull(strstr(d.msg, "cannot fit"));
	ck_assert_uint_eq(d.offset, 100);
	/* a text of 2^64-1 bytes */
	ck_assert_int_eq(
		decode("\x7b\xff\xff\xff\xff\xff\xff\xff\xff", 9, &it, &d),
		-EBADMSG);
	/* lone break, break in a definite array, odd indefinite map */
	ck_assert_int_eq(decode("\xff", 1, &it, &d), -EBADMSG);
	ck_assert_int_eq(decode("\x81\xff", 2, &it, &d), -EBADMSG);
	ck_assert_int_eq(decode("\xbf\x01\xff", 3, &it, &d), -EBADMSG);
	/* an indefinite text with a byte-string chunk */
	ck_assert_int_eq(decode("\x7f\x41\x00\xff", 4, &it, &d), -EBADMSG);
	/* indefinite length on an integer */
	ck_assert_int_eq(decode("\x1f", 1, &it, &d), -EBADMSG);
	/* nesting: 129 arrays */
	memset(deep, 0x81, 129);
	deep[129] = 0x00;
	ck_assert_int_eq(decode(deep, 130, &it, &d), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(d.msg, "nesting"));
	memset(deep, 0x81, 128);
	deep[128] = 0x00;
	ck_assert_int_eq(decode(deep, 129, &it, &d), 0);
	cbor_decref(&it);
}
END_TEST

/* the class tfs_cbor_check_deterministic gives @b (and 0 when none) */
static int det(const char *b, size_t len, uint64_t *at)
{
	enum tfs_cbor_violation v = TFS_CBOR_OK;
	struct tfs_diag d;
	int ret;

	tfs_diag_clear(&d);
	ret = tfs_cbor_check_deterministic((const uint8_t *)b, len, 1000, 32,
					   &v, &d);
	ck_assert_int_eq(ret, v == TFS_CBOR_OK ? 0 : -EBADMSG);
	if (at)
		*at = d.offset;
	return (int)v;
}

/* RFC 8949 core deterministic encoding: shared/specs/ztensor-v2.md 2 */
START_TEST(deterministic)
{
	static const struct {
		const char *b;
		size_t len;
		int want;
	} v[] = {
		/* the spec's table of violations, one by one */
		{"\x18\x05", 2, TFS_CBOR_DETERMINISM},
		{"\x19\x00\xff", 3, TFS_CBOR_DETERMINISM},
		{"\x1a\x00\x00\xff\xff", 5, TFS_CBOR_DETERMINISM},
		{"\x1b\x00\x00\x00\x00\xff\xff\xff\xff", 9,
		 TFS_CBOR_DETERMINISM},
		{"\x78\x01\x61", 3, TFS_CBOR_DETERMINISM},
		{"\x9f\xff", 2, TFS_CBOR_SYNTAX},
		{"\x5f\xff", 2, TFS_CBOR_SYNTAX},
		{"\x7f\xff", 2, TFS_CBOR_SYNTAX},
		{"\xbf\xff", 2, TFS_CBOR_SYNTAX},
		{"\x1c", 1, TFS_CBOR_SYNTAX},
		{"\xc0\x00", 2, TFS_CBOR_SYNTAX},
		{"\xf7", 1, TFS_CBOR_SYNTAX},
		{"\xf8\x20", 2, TFS_CBOR_SYNTAX},
		{"\xe0", 1, TFS_CBOR_SYNTAX},
		{"\xff", 1, TFS_CBOR_SYNTAX},
		{"\xa2\x61\x62\x00\x61\x61\x00", 7, TFS_CBOR_DETERMINISM},
		{"\xa2\x61\x61\x00\x61\x61\x00", 7, TFS_CBOR_DUPLICATE_KEY},
		/* a proper prefix sorts first: "a" < "aa"; 0x18 keys by bytes
		 */
		{"\xa2\x61\x61\x00\x62\x61\x61\x00", 8, TFS_CBOR_OK},
		{"\xa2\x62\x61\x61\x00\x61\x61\x00", 8, TFS_CBOR_DETERMINISM},
		{"\xa2\x17\x00\x18\x18\x00", 6, TFS_CBOR_OK},
		{"\xf9\x7e\x00", 3, TFS_CBOR_OK},
		{"\xf9\x7e\x01", 3, TFS_CBOR_DETERMINISM},
		{"\xf9\xfe\x00", 3, TFS_CBOR_DETERMINISM},
		{"\xfa\x3f\xc0\x00\x00", 5, TFS_CBOR_DETERMINISM},
		{"\xfa\x7f\xc0\x00\x00", 5, TFS_CBOR_DETERMINISM},
		{"\xfb\x3f\xf8\x00\x00\x00\x00\x00\x00", 9,
		 TFS_CBOR_DETERMINISM},
		/* infinities and -0.0 belong in half floats */
		{"\xf9\x7c\x00", 3, TFS_CBOR_OK},
		{"\xf9\x80\x00", 3, TFS_CBOR_OK},
		{"\xfa\x7f\x80\x00\x00", 5, TFS_CBOR_DETERMINISM},
		{"\xfa\x80\x00\x00\x00", 5, TFS_CBOR_DETERMINISM},
		/* 65504 (the largest half) and 2^-24 (its smallest subnormal)
		 * fit a half; 65536 and 2^-25 do not, 0.1f is a single */
		{"\xfa\x47\x7f\xe0\x00", 5, TFS_CBOR_DETERMINISM},
		{"\xfa\x33\x80\x00\x00", 5, TFS_CBOR_DETERMINISM},
		{"\xfa\x47\x80\x00\x00", 5, TFS_CBOR_OK},
		{"\xfa\x33\x00\x00\x00", 5, TFS_CBOR_OK},
		{"\xfa\x3d\xcc\xcc\xcd", 5, TFS_CBOR_OK},
		/* 0.1 as a double is not a single; 1e300 has no single */
		{"\xfb\x3f\xb9\x99\x99\x99\x99\x99\x9a", 9, TFS_CBOR_OK},
		{"\xfb\x7e\x37\xe4\x3c\x88\x00\x75\x9c", 9, TFS_CBOR_OK},
		{"\xfb\x7f\xf8\x00\x00\x00\x00\x00\x00", 9,
		 TFS_CBOR_DETERMINISM},
		{"\xa0\x00", 2, TFS_CBOR_SYNTAX},
		{"\xa1\x61", 2, TFS_CBOR_SYNTAX},
		{"\x7a\xff\xff\xff\xff", 5, TFS_CBOR_SYNTAX},
		{"\x62\xc3\x28", 3, TFS_CBOR_SYNTAX},
		{"\xb8\x20\x00", 3, TFS_CBOR_SYNTAX},
		{"\xf4", 1, TFS_CBOR_OK},
		{"\x3b\xff\xff\xff\xff\xff\xff\xff\xff", 9, TFS_CBOR_OK},
	};
	char deep[64];
	uint64_t at;
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		ck_assert_msg(det(v[i].b, v[i].len, NULL) == v[i].want,
			      "case %zu: %d, want %d", i,
			      det(v[i].b, v[i].len, NULL), v[i].want);
	/* depth: 32 arrays around a scalar are fine, 33 are not */
	memset(deep, 0x81, 33);
	deep[33] = 0x00;
	ck_assert_int_eq(det(deep, 34, &at), TFS_CBOR_DEPTH);
	ck_assert_uint_eq(at, 1000 + 33);
	ck_assert_int_eq(det(deep + 1, 33, NULL), TFS_CBOR_OK);
	/* the offset of the first violation, in byte order */
	ck_assert_int_eq(det("\x82\x00\x18\x01", 4, &at), TFS_CBOR_DETERMINISM);
	ck_assert_uint_eq(at, 1002);
}
END_TEST

START_TEST(keys)
{
	struct tfs_diag d;
	cbor_item_t *it = NULL;
	char *bad = NULL, *s = NULL;

	ck_assert_int_eq(decode("\xa2\x61"
				"a\x01\x61"
				"a\x02",
				7, &it, &d),
			 0);
	ck_assert_int_eq(tfs_cbor_keys_check(it, &bad), -EBADMSG);
	ck_assert_str_eq(bad, "a");
	free(bad);
	cbor_decref(&it);
	ck_assert_int_eq(decode("\xa2\x61"
				"a\x01\x61"
				"b\x02",
				7, &it, &d),
			 0);
	ck_assert_int_eq(tfs_cbor_keys_check(it, &bad), 0);
	ck_assert_ptr_nonnull(tfs_cbor_get(it, "b"));
	ck_assert_ptr_null(tfs_cbor_get(it, "c"));
	cbor_decref(&it);
	/* invalid UTF-8 text is refused with its offset */
	ck_assert_int_eq(decode("\x82\x00\x61\xff", 4, &it, &d), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(d.msg, "UTF-8"));
	ck_assert_uint_eq(d.offset, 102);
	/* NUL inside a key */
	ck_assert_int_eq(decode("\xa1\x62"
				"a\x00\x01",
				5, &it, &d),
			 0);
	ck_assert_int_eq(tfs_cbor_keys_check(it, &bad), -EBADMSG);
	ck_assert_int_eq(tfs_cbor_text(cbor_map_handle(it)[0].key, &s, NULL),
			 0);
	free(s);
	cbor_decref(&it);
}
END_TEST

/* a map of @n pairs: text keys @names[i] (under 24 bytes), values 0 */
static size_t key_map(uint8_t *buf, const char *const *names, size_t n)
{
	size_t o = 0, i, l;

	buf[o++] = 0xb8; /* map, count in one byte */
	buf[o++] = (uint8_t)n;
	for (i = 0; i < n; i++) {
		l = strlen(names[i]);
		buf[o++] = (uint8_t)(0x60 + l);
		memcpy(buf + o, names[i], l);
		o += l;
		buf[o++] = 0x00;
	}
	return o;
}

/* small maps are compared in place, large ones sorted: the same answer */
/*
 * Reading in place: plain items are read and passed; anything else (a
 * tag, an indefinite length, another type, bytes past the end, text that
 * is not UTF-8) answers -EAGAIN and leaves the position alone.
 */
START_TEST(pull_plain_items)
{
	/* {"shape": [3, 300], "dtype": "f32", "x": [1, {"y": h'00'}]} */
	static const uint8_t m[] = {
		0xa3, 0x65, 's',  'h',	'a',  'p',  'e', 0x82, 0x03, 0x19, 0x01,
		0x2c, 0x65, 'd',  't',	'y',  'p',  'e', 0x63, 'f',  '3',  '2',
		0x61, 'x',  0x82, 0x01, 0xa1, 0x61, 'y', 0x41, 0x00};
	struct tfs_cbor_pull c = {m, sizeof(m), 0};
	const char *t;
	uint64_t n, u;
	size_t tn;

	ck_assert_int_eq(tfs_cbor_pull_array(&c, &n), -EAGAIN); /* a map */
	ck_assert_uint_eq(c.pos, 0);
	ck_assert_int_eq(tfs_cbor_pull_map(&c, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(tfs_cbor_pull_text(&c, &t, &tn), 0);
	ck_assert_uint_eq(tn, 5);
	ck_assert_int_eq(memcmp(t, "shape", 5), 0);
	ck_assert_int_eq(tfs_cbor_pull_array(&c, &n), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(tfs_cbor_pull_uint(&c, &u), 0);
	ck_assert_uint_eq(u, 3);
	ck_assert_int_eq(tfs_cbor_pull_uint(&c, &u), 0);
	ck_assert_uint_eq(u, 300);
	ck_assert_int_eq(tfs_cbor_pull_skip(&c), 0);	       /* "dtype" */
	ck_assert_int_eq(tfs_cbor_pull_uint(&c, &u), -EAGAIN); /* text */
	ck_assert_int_eq(tfs_cbor_pull_text(&c, &t, &tn), 0);
	ck_assert_int_eq(memcmp(t, "f32", 3), 0);
	ck_assert_int_eq(tfs_cbor_pull_skip(&c), 0); /* "x" */
	ck_assert_int_eq(tfs_cbor_pull_skip(&c), 0); /* [1, {"y": h'00'}] */
	ck_assert_uint_eq(c.pos, sizeof(m));
	ck_assert_int_eq(tfs_cbor_pull_skip(&c), -EAGAIN); /* nothing left */
}
END_TEST

START_TEST(pull_other_forms)
{
	static const uint8_t tagged[] = {0xc2, 0x41, 0x01};	/* 2(h'01') */
	static const uint8_t indef[] = {0x7f, 0x61, 'a', 0xff}; /* (_ "a") */
	static const uint8_t short_head[] = {0x19, 0x01};	/* 2 bytes? */
	static const uint8_t long_text[] = {0x65, 'a', 'b'};	/* 5 of 2 */
	static const uint8_t not_utf8[] = {0x62, 0xc3, 0x28};	/* bad seq */
	static const uint8_t indef_map[] = {0xbf, 0x61, 'a', 0x01, 0xff};
	const uint8_t *v[] = {tagged,	 indef,	   short_head,
			      long_text, not_utf8, indef_map};
	const size_t len[] = {sizeof(tagged),	  sizeof(indef),
			      sizeof(short_head), sizeof(long_text),
			      sizeof(not_utf8),	  sizeof(indef_map)};
	const char *t;
	uint64_t n;
	size_t tn, i;

	for (i = 0; i < sizeof(v) / sizeof(*v); i++) {
		struct tfs_cbor_pull c = {v[i], len[i], 0};

		ck_assert_int_eq(tfs_cbor_pull_uint(&c, &n), -EAGAIN);
		ck_assert_int_eq(tfs_cbor_pull_text(&c, &t, &tn), -EAGAIN);
		ck_assert_int_eq(tfs_cbor_pull_map(&c, &n), -EAGAIN);
		ck_assert_int_eq(tfs_cbor_pull_array(&c, &n), -EAGAIN);
		ck_assert_uint_eq(c.pos, 0);
	}
	/* skip takes any well-formed item, and refuses a truncated one */
	{
		struct tfs_cbor_pull c = {indef_map, sizeof(indef_map), 0};
		struct tfs_cbor_pull d = {long_text, sizeof(long_text), 0};

		ck_assert_int_eq(tfs_cbor_pull_skip(&c), 0);
		ck_assert_uint_eq(c.pos, sizeof(indef_map));
		ck_assert_int_eq(tfs_cbor_pull_skip(&d), -EAGAIN);
		ck_assert_uint_eq(d.pos, 0);
	}
}
END_TEST

START_TEST(keys_given_twice)
{
	static const char *const small[] = {"b", "ab", "b", "abc", "ab"};
	static const char *const prefix[] = {"ab", "a", "ab", "a"};
	static const char *const large[] = {"k", "z", "y", "x", "w", "v", "u",
					    "t", "s", "r", "q", "c", "p", "o",
					    "n", "m", "k", "l", "c", "j"};
	static const struct {
		const char *const *keys;
		size_t n;
		const char *bad;
	} cases[] = {{small, 5, "ab"},
		     {prefix, 4, "a"},
		     {large, 20, "c"},
		     {large, 17, "k"},
		     {large, 16, NULL}};
	uint8_t buf[256];
	struct tfs_diag d;
	cbor_item_t *it;
	char *bad;
	size_t i, len;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		len = key_map(buf, cases[i].keys, cases[i].n);
		ck_assert_int_eq(decode((const char *)buf, len, &it, &d), 0);
		bad = NULL;
		ck_assert_int_eq(tfs_cbor_keys_check(it, &bad),
				 cases[i].bad ? -EBADMSG : 0);
		if (cases[i].bad)
			ck_assert_str_eq(bad, cases[i].bad);
		else
			ck_assert_ptr_null(bad);
		free(bad);
		cbor_decref(&it);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cbor");
	TCase *tc = tcase_create("cbor");

	tcase_add_test(tc, worked_example);
	tcase_add_test(tc, scalars);
	tcase_add_test(tc, indefinite_forms);
	tcase_add_test(tc, rejects);
	tcase_add_test(tc, keys);
	tcase_add_test(tc, keys_given_twice);
	tcase_add_test(tc, pull_plain_items);
	tcase_add_test(tc, pull_other_forms);
	tcase_add_test(tc, deterministic);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
