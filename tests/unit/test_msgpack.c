// SPDX-License-Identifier: MIT
/*
 * The MessagePack pull reader (src/parse/msgpack.h): every type byte of
 * msgpack/msgpack spec.md against values written here by hand, the
 * offsets of payloads, counts that cannot fit, truncations, 0xc1, and the
 * depth limit of tfs_mp_skip.
 */
#include <errno.h>
#include <string.h>

#include "parse/msgpack.h"
#include "testutil.h"

#define BASE 100 /* the bytes' first byte is at this absolute offset */

static int next(const void *b, size_t len, struct tfs_mp_obj *o,
		struct tfs_diag *d)
{
	struct tfs_mp m;

	tfs_diag_clear(d);
	tfs_mp_init(&m, b, len, BASE, d);
	return tfs_mp_next(&m, "x", o);
}

START_TEST(scalars)
{
	static const struct {
		uint8_t b[9];
		size_t len;
		enum tfs_mp_type type;
		int64_t v; /* INT / UINT */
	} v[] = {
		{{0x00}, 1, TFS_MP_UINT, 0},
		{{0x7f}, 1, TFS_MP_UINT, 127},
		{{0xe0}, 1, TFS_MP_INT, -32},
		{{0xff}, 1, TFS_MP_INT, -1},
		{{0xcc, 0xff}, 2, TFS_MP_UINT, 255},
		{{0xcd, 0x12, 0x34}, 3, TFS_MP_UINT, 0x1234},
		{{0xce, 0, 1, 0, 0}, 5, TFS_MP_UINT, 65536},
		{{0xcf, 0, 0, 0, 1, 0, 0, 0, 0}, 9, TFS_MP_UINT, 1LL << 32},
		{{0xd0, 0x80}, 2, TFS_MP_INT, -128},
		{{0xd0, 0x05}, 2, TFS_MP_UINT, 5},
		{{0xd1, 0xff, 0xfe}, 3, TFS_MP_INT, -2},
		{{0xd2, 0x80, 0, 0, 0}, 5, TFS_MP_INT, INT32_MIN},
		{{0xd3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfd},
		 9,
		 TFS_MP_INT,
		 -3},
		{{0xc0}, 1, TFS_MP_NIL, 0},
		{{0xc2}, 1, TFS_MP_BOOL, 0},
		{{0xc3}, 1, TFS_MP_BOOL, 1},
	};
	static const uint8_t f32[] = {0xca, 0x3e, 0x80, 0, 0}; /* 0.25 */
	static const uint8_t f64[] = {0xcb, 0x3f, 0x50, 0x62, 0x4d,
				      0xd2, 0xf1, 0xa9, 0xfc}; /* 0.001 */
	struct tfs_mp_obj o;
	struct tfs_diag d;
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		ck_assert_int_eq(next(v[i].b, v[i].len, &o, &d), 0);
		ck_assert_int_eq(o.type, v[i].type);
		ck_assert_uint_eq(o.start, BASE);
		ck_assert_uint_eq(o.byte, v[i].b[0]);
		if (o.type == TFS_MP_INT)
			ck_assert_int_eq(o.i, v[i].v);
		if (o.type == TFS_MP_UINT)
			ck_assert_uint_eq(o.u, (uint64_t)v[i].v);
		if (o.type == TFS_MP_BOOL)
			ck_assert_int_eq(o.b, v[i].v);
		/* one byte short: refused at the type byte */
		if (v[i].len > 1) {
			ck_assert_int_eq(next(v[i].b, v[i].len - 1, &o, &d),
					 -EBADMSG);
			ck_assert_uint_eq(d.offset, BASE);
			ck_assert_ptr_nonnull(strstr(d.msg, "x: "));
		}
	}
	ck_assert_int_eq(next(f32, 5, &o, &d), 0);
	ck_assert_int_eq(o.type, TFS_MP_FLOAT);
	ck_assert_double_eq(o.f, 0.25);
	ck_assert_int_eq(next(f64, 9, &o, &d), 0);
	ck_assert_double_eq(o.f, 0.001);
	ck_assert_int_eq(next("\xc1", 1, &o, &d), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(d.msg, "0xc1"));
	ck_assert_int_eq(next("", 0, &o, &d), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(d.msg, "end of the file"));
}
END_TEST

START_TEST(payloads)
{
	static const struct {
		const char *b;
		size_t len;
		enum tfs_mp_type type;
		uint64_t n, at; /* payload length and offset from BASE */
		int8_t ext;
	} v[] = {
		{"\xa3"
		 "abc",
		 4, TFS_MP_STR, 3, 1, 0},
		{"\xd9\x02"
		 "ab",
		 4, TFS_MP_STR, 2, 2, 0},
		{"\xda\x00\x01"
		 "a",
		 4, TFS_MP_STR, 1, 3, 0},
		{"\xdb\x00\x00\x00\x01"
		 "a",
		 6, TFS_MP_STR, 1, 5, 0},
		{"\xc4\x02"
		 "\x01\x02",
		 4, TFS_MP_BIN, 2, 2, 0},
		{"\xc5\x00\x01"
		 "\x01",
		 4, TFS_MP_BIN, 1, 3, 0},
		{"\xc6\x00\x00\x00\x00", 5, TFS_MP_BIN, 0, 5, 0},
		{"\xd4\x01"
		 "z",
		 3, TFS_MP_EXT, 1, 2, 1},
		{"\xd5\xfe"
		 "zz",
		 4, TFS_MP_EXT, 2, 2, -2},
		{"\xd6\x03"
		 "zzzz",
		 6, TFS_MP_EXT, 4, 2, 3},
		{"\xd7\x01"
		 "zzzzzzzz",
		 10, TFS_MP_EXT, 8, 2, 1},
		{"\xd8\x01"
		 "zzzzzzzzzzzzzzzz",
		 18, TFS_MP_EXT, 16, 2, 1},
		{"\xc7\x03\x01"
		 "zzz",
		 6, TFS_MP_EXT, 3, 3, 1},
		{"\xc8\x00\x01\x04"
		 "z",
		 5, TFS_MP_EXT, 1, 4, 4},
		{"\xc9\x00\x00\x00\x01\x09"
		 "z",
		 7, TFS_MP_EXT, 1, 6, 9},
	};
	struct tfs_mp_obj o;
	struct tfs_diag d;
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		ck_assert_int_eq(next(v[i].b, v[i].len, &o, &d), 0);
		ck_assert_int_eq(o.type, v[i].type);
		ck_assert_uint_eq(o.n, v[i].n);
		ck_assert_uint_eq(o.at, BASE + v[i].at);
		ck_assert_ptr_eq(o.p, (const uint8_t *)v[i].b + v[i].at);
		ck_assert_int_eq(o.ext, v[i].ext);
		/* the payload cut short */
		ck_assert_int_eq(next(v[i].b, v[i].len - 1, &o, &d), -EBADMSG);
		ck_assert_uint_eq(d.offset, BASE);
	}
}
END_TEST

START_TEST(containers)
{
	struct tfs_mp_obj o;
	struct tfs_diag d;
	struct tfs_mp m;

	ck_assert_int_eq(next("\x92\x01\x02", 3, &o, &d), 0);
	ck_assert_int_eq(o.type, TFS_MP_ARRAY);
	ck_assert_uint_eq(o.n, 2);
	ck_assert_int_eq(next("\x81\x01\x02", 3, &o, &d), 0);
	ck_assert_int_eq(o.type, TFS_MP_MAP);
	ck_assert_uint_eq(o.n, 1);
	ck_assert_int_eq(next("\xdc\x00\x01\x00", 4, &o, &d), 0);
	ck_assert_uint_eq(o.n, 1);
	ck_assert_int_eq(next("\xdf\x00\x00\x00\x01\x00\x00", 7, &o, &d), 0);
	ck_assert_int_eq(o.type, TFS_MP_MAP);
	/* counts that cannot fit in the bytes left */
	ck_assert_int_eq(next("\x93\x01\x02", 3, &o, &d), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(d.msg, "array items"));
	ck_assert_int_eq(next("\x82\x01\x02\x03", 4, &o, &d), -EBADMSG);
	ck_assert_int_eq(next("\xdd\xff\xff\xff\xff\x00", 6, &o, &d), -EBADMSG);
	ck_assert_uint_eq(d.offset, BASE);
	/* skip: a whole object, and the depth limit */
	tfs_diag_clear(&d);
	tfs_mp_init(&m,
		    "\x82\xa1"
		    "a\x91\xc0\xa1"
		    "b\xc4\x01"
		    "x\x05",
		    11, BASE, &d);
	ck_assert_int_eq(tfs_mp_skip(&m, "x", 2, NULL, NULL), 0);
	ck_assert_uint_eq(tfs_cursor_offset(&m.c), BASE + 10);
	tfs_mp_init(&m, "\x91\x91\x91\xc0", 4, BASE, &d);
	ck_assert_int_eq(tfs_mp_skip(&m, "x", 2, NULL, NULL), -EBADMSG);
	ck_assert_uint_eq(d.offset, BASE + 2); /* the third array */
	ck_assert_ptr_nonnull(strstr(d.msg, "deeper than 2"));
}
END_TEST

/* the primitiv forms: exact kinds, messages as primitiv always gave them */
START_TEST(kinds)
{
	const uint8_t *s;
	uint64_t n, start, at;
	struct tfs_diag d;
	struct tfs_mp m;

	tfs_diag_clear(&d);
	tfs_mp_init(&m,
		    "\xa2"
		    "hi\xc4\x01"
		    "z",
		    6, BASE, &d);
	ck_assert_int_eq(
		tfs_mp_bytes(&m, "k", TFS_MP_KSTR, &s, &n, &start, &at), 0);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(at, BASE + 1);
	ck_assert_int_eq(
		tfs_mp_bytes(&m, "k", TFS_MP_KSTR, &s, &n, &start, &at),
		-EBADMSG);
	ck_assert_str_eq(d.msg, "k: expected str (0xa0-0xbf, 0xd9-0xdb), "
				"found type byte 0xc4");
	ck_assert_uint_eq(d.offset, BASE + 3);
	tfs_diag_clear(&d);
	tfs_mp_init(&m, "\x95", 1, BASE, &d);
	ck_assert_int_eq(tfs_mp_len(&m, "a", TFS_MP_KARRAY, &n, &start), 0);
	ck_assert_int_eq(tfs_mp_count_fits(&m, "a", start, n, 1, "dims"),
			 -EBADMSG);
	ck_assert_str_eq(d.msg, "a: 5 dims need at least 1 bytes each, only "
				"0 remain before the end of the file");
}
END_TEST

static Suite *msgpack_suite(void)
{
	Suite *s = suite_create("msgpack");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, scalars);
	tcase_add_test(tc, payloads);
	tcase_add_test(tc, containers);
	tcase_add_test(tc, kinds);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run(msgpack_suite());
}
