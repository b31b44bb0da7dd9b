// SPDX-License-Identifier: MIT
/*
 * The protobuf wire reader (src/parse/protobuf.c) and the varint helper of
 * cursor.h, on bytes written out by hand from the encoding rules of
 * specs/onnx.md section 1: varints of 1 to 10 bytes and their refusals,
 * the four wire types, the refused ones, LEN bounds, packed and unpacked
 * repeated scalars mixed, the nesting limits, and absolute offsets.
 */
#include <errno.h>
#include <string.h>

#include "parse/protobuf.h"
#include "core/cursor.h"
#include "core/diag.h"
#include "testutil.h"

static int varint(const void *p, size_t n, uint64_t *v, uint64_t *pos)
{
	struct tfs_cursor c;
	int ret;

	tfs_cursor_init(&c, p, n, 0);
	ret = tfs_cursor_varint(&c, v);
	*pos = c.pos;
	return ret;
}

START_TEST(varints)
{
	static const struct {
		const char *b;
		size_t n;
		int ret;
		uint64_t v;
	} cases[] = {
		{"\x00", 1, 0, 0},
		{"\x7f", 1, 0, 127},
		{"\x80\x01", 2, 0, 128},
		{"\xac\x02", 2, 0, 300},
		/* int64 -1: ten bytes, the last 0x01 */
		{"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10, 0, UINT64_MAX},
		/* a tenth byte above 1: above 2^64-1 */
		{"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 10, -EOVERFLOW, 0},
		/* an eleventh byte */
		{"\x80\x80\x80\x80\x80\x80\x80\x80\x80\x81\x00", 11, -EOVERFLOW,
		 0},
		/* cut off */
		{"\x80\x80", 2, -EBADMSG, 0},
		{"", 0, -EBADMSG, 0},
		/* non-minimal encodings are valid */
		{"\x81\x80\x00", 3, 0, 1},
	};
	uint64_t v, pos;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		v = 12345;
		ck_assert_int_eq(varint(cases[i].b, cases[i].n, &v, &pos),
				 cases[i].ret);
		if (cases[i].ret) {
			ck_assert_uint_eq(pos, 0); /* left where it was */
			ck_assert_uint_eq(v, 12345);
		} else {
			ck_assert_uint_eq(v, cases[i].v);
			ck_assert_uint_eq(pos, cases[i].n);
			ck_assert_uint_eq(tfs_varint_len(v),
					  i == 9 ? 1 : cases[i].n);
		}
	}
}
END_TEST

/* the fields of @b (at absolute @base), into @f; returns how many */
static int fields(const void *b, size_t n, uint64_t base,
		  struct tfs_pb_field *f, int max, struct tfs_diag *d)
{
	struct tfs_cursor c;
	int k = 0, ret;

	tfs_diag_clear(d);
	tfs_cursor_init(&c, b, n, base);
	while (k < max && (ret = tfs_pb_next(&c, "M", &f[k], d)) == 1)
		k++;
	return ret < 0 ? ret : k;
}

START_TEST(wire_types)
{
	/* 1: varint 150; 2: LEN "hi"; 3: I64; 4: I32; field 536870911 */
	static const uint8_t b[] = {
		0x08, 0x96, 0x01, 0x12, 0x02, 'h',  'i',  0x19, 1,
		2,    3,    4,	  5,	6,    7,    8,	  0x25, 0x00,
		0x00, 0x80, 0x3f, 0xf8, 0xff, 0xff, 0xff, 0x0f, 0x00,
	};
	struct tfs_pb_field f[8];
	struct tfs_diag d;

	ck_assert_int_eq(fields(b, sizeof(b), 100, f, 8, &d), 5);
	ck_assert_uint_eq(f[0].number, 1);
	ck_assert_uint_eq(f[0].wire, TFS_PB_VARINT);
	ck_assert_uint_eq(f[0].v, 150);
	ck_assert_uint_eq(f[0].at, 100);
	ck_assert_uint_eq(f[0].value_at, 101);
	ck_assert_uint_eq(f[1].wire, TFS_PB_LEN);
	ck_assert_uint_eq(f[1].len, 2);
	ck_assert_uint_eq(f[1].value_at, 105);
	ck_assert(memcmp(f[1].data, "hi", 2) == 0);
	ck_assert_uint_eq(f[2].wire, TFS_PB_I64);
	ck_assert_uint_eq(f[2].v, 0x0807060504030201ull);
	ck_assert_uint_eq(f[3].wire, TFS_PB_I32);
	ck_assert_uint_eq(f[3].v, 0x3f800000u);
	ck_assert_uint_eq(f[4].number, TFS_PB_MAX_FIELD);
	ck_assert_uint_eq(f[4].at, 121);
}
END_TEST

/* a field read with the wrong wire type: refused at its key, named */
START_TEST(wanted_wire)
{
	/* field 1 as I32 (key 0x0d at offset 10), field 2 as LEN */
	static const uint8_t b[] = {0x0d, 1, 2, 3, 4, 0x12, 0x01, 'x'};
	struct tfs_pb_field f[2];
	struct tfs_diag d;

	ck_assert_int_eq(fields(b, sizeof(b), 10, f, 2, &d), 2);
	tfs_diag_clear(&d);
	ck_assert_int_eq(tfs_pb_want(&f[1], TFS_PB_LEN, "M.name", &d), 0);
	ck_assert_str_eq(d.msg, "");
	ck_assert_int_eq(tfs_pb_want(&f[0], TFS_PB_VARINT, "M.type", &d),
			 -EBADMSG);
	ck_assert_str_eq(d.msg, "M.type: wire type I32, not VARINT");
	ck_assert(d.has_offset);
	ck_assert_uint_eq(d.offset, 10);
	tfs_diag_clear(&d);
	ck_assert_int_eq(tfs_pb_want(&f[1], TFS_PB_I64, "M.x", &d), -EBADMSG);
	ck_assert_str_eq(d.msg, "M.x: wire type LEN, not I64");
	ck_assert_uint_eq(d.offset, 15);
}
END_TEST

/* a table of the fields read: each by its row, others pass */
START_TEST(wanted_table)
{
	static const uint8_t b[] = {0x0d, 1, 2, 3, 4, 0x12, 0x01, 'x'};
	static const struct tfs_pb_wanted rows[] = {
		{2, TFS_PB_LEN, "M.name"},
		{1, TFS_PB_VARINT, "M.type"},
	};
	struct tfs_pb_field f[2];
	struct tfs_diag d;

	ck_assert_int_eq(fields(b, sizeof(b), 10, f, 2, &d), 2);
	tfs_diag_clear(&d);
	ck_assert_int_eq(tfs_pb_want_in(&f[1], rows, 2, &d), 0);
	/* field 1 without its row: not read, passes */
	ck_assert_int_eq(tfs_pb_want_in(&f[0], rows, 1, &d), 0);
	ck_assert_int_eq(tfs_pb_want_in(&f[0], rows, 2, &d), -EBADMSG);
	ck_assert_str_eq(d.msg, "M.type: wire type I32, not VARINT");
	/* the same while reading: field 2 passes, field 1 refused */
	{
		struct tfs_cursor c;
		struct tfs_pb_field g;

		tfs_cursor_init(&c, b, sizeof(b), 10);
		tfs_diag_clear(&d);
		ck_assert_int_eq(tfs_pb_next_in(&c, "M", rows, 1, &g, &d), 1);
		ck_assert_int_eq(tfs_pb_next_in(&c, "M", rows, 1, &g, &d), 1);
		ck_assert_int_eq(tfs_pb_next_in(&c, "M", rows, 1, &g, &d), 0);
		tfs_cursor_init(&c, b, sizeof(b), 10);
		ck_assert_int_eq(tfs_pb_next_in(&c, "M", rows, 2, &g, &d),
				 -EBADMSG);
		ck_assert_str_eq(d.msg, "M.type: wire type I32, not VARINT");
	}
}
END_TEST

static void refused(const void *b, size_t n, const char *word, uint64_t at)
{
	struct tfs_pb_field f[4];
	struct tfs_diag d;

	ck_assert_int_eq(fields(b, n, 10, f, 4, &d), -EBADMSG);
	ck_assert_msg(strstr(d.msg, word) != NULL, "'%s' lacks '%s'", d.msg,
		      word);
	ck_assert_msg(d.has_offset && d.offset == at, "'%s' at %llu, want %llu",
		      d.msg, (unsigned long long)d.offset,
		      (unsigned long long)at);
}

START_TEST(refusals)
{
	/* groups and the invalid wire types */
	refused("\x08\x01\x0b", 3, "wire type 3 (SGROUP)", 12);
	refused("\x0c", 1, "wire type 4 (EGROUP)", 10);
	refused("\x0e", 1, "wire type 6", 10);
	refused("\x0f", 1, "wire type 7", 10);
	/* field number 0, and above 2^29-1 */
	refused("\x00\x01", 2, "field number 0", 10);
	refused("\x80\x80\x80\x80\x10", 5, "field number 536870912", 10);
	/* a LEN past its message: compared before anything is touched */
	refused("\x12\xff\xff\xff\xff\x07", 6, "length 2147483647", 11);
	refused("\x12\x03" "ab", 4, "only 2 bytes", 11);
	/* cut values */
	refused("\x08", 1, "ends inside a varint", 11);
	refused("\x19\x01\x02", 3, "I64 value", 11);
	refused("\x25\x01", 2, "I32 value", 11);
	refused("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 11,
		"longer than 10 bytes", 11);
}
END_TEST

/* packed and unpacked values of one repeated field, mixed */
START_TEST(repeated_mixed)
{
	/* field 1 unpacked 3, packed [1, 300, -1], unpacked 7 */
	static const uint8_t b[] = {
		0x08, 0x03, 0x0a, 0x0d, 0x01, 0xac, 0x02, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x08, 0x07,
	};
	static const uint64_t want[] = {3, 1, 300, UINT64_MAX, 7};
	/* floats: I32 1.0, packed [2.0, -0.0] */
	static const uint8_t fl[] = {0x15, 0, 0, 0x80, 0x3f, 0x12, 8, 0, 0,
				     0,	   0x40, 0, 0, 0, 0x80};
	static const uint64_t fwant[] = {0x3f800000u, 0x40000000u,
					 0x80000000u};
	struct tfs_pb_field f[8];
	struct tfs_pb_values it;
	struct tfs_diag d;
	uint64_t v;
	int n, i, k = 0;

	n = fields(b, sizeof(b), 0, f, 8, &d);
	ck_assert_int_eq(n, 3);
	for (i = 0; i < n; i++) {
		ck_assert_int_eq(tfs_pb_values_init(&it, &f[i],
						    TFS_PB_SCALAR_VARINT, "M",
						    "x", &d),
				 0);
		ck_assert_uint_eq(it.count, i == 1 ? 3 : 1);
		while (tfs_pb_values_next(&it, &v) == 1)
			ck_assert_uint_eq(v, want[k++]);
	}
	ck_assert_int_eq(k, 5);
	n = fields(fl, sizeof(fl), 0, f, 8, &d);
	ck_assert_int_eq(n, 2);
	for (k = 0, i = 0; i < n; i++) {
		ck_assert_int_eq(tfs_pb_values_init(&it, &f[i],
						    TFS_PB_SCALAR_FIXED32, "M",
						    "f", &d),
				 0);
		while (tfs_pb_values_next(&it, &v) == 1)
			ck_assert_uint_eq(v, fwant[k++]);
	}
	ck_assert_int_eq(k, 3);
	/* a float field as VARINT: the wrong wire type */
	n = fields("\x10\x01", 2, 0, f, 8, &d);
	ck_assert_int_eq(tfs_pb_values_init(&it, &f[0], TFS_PB_SCALAR_FIXED32,
					    "M", "f", &d),
			 -EBADMSG);
	ck_assert(strstr(d.msg, "M.f: wire type VARINT, not I32") != NULL);
	/* packed fixed-width not a whole number of values */
	n = fields("\x0a\x05\x00\x00\x00\x00\x00", 7, 0, f, 8, &d);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(tfs_pb_values_init(&it, &f[0], TFS_PB_SCALAR_FIXED32,
					    "M", "f", &d),
			 -EBADMSG);
	ck_assert(strstr(d.msg, "not a multiple of 4") != NULL);
	ck_assert_uint_eq(d.offset, 2);
	/* a packed varint cut by the field's end */
	n = fields("\x0a\x02\x01\x80", 4, 0, f, 8, &d);
	tfs_diag_clear(&d);
	ck_assert_int_eq(tfs_pb_values_init(&it, &f[0], TFS_PB_SCALAR_VARINT,
					    "M", "x", &d),
			 -EBADMSG);
	ck_assert(strstr(d.msg, "packed value 1") != NULL);
	ck_assert_uint_eq(d.offset, 3);
}
END_TEST

/* sub-messages keep absolute offsets; the limits stop nesting */
START_TEST(nesting)
{
	static const uint8_t b[] = {0x0a, 0x04, 0x12, 0x02, 0x08, 0x05};
	struct tfs_pb_limits l = {.max_depth = 2, .max_messages = 3};
	struct tfs_pb_field f, g, h;
	struct tfs_cursor c, s, s2;
	struct tfs_diag d;

	tfs_diag_clear(&d);
	tfs_cursor_init(&c, b, sizeof(b), 1000);
	ck_assert_int_eq(tfs_pb_next(&c, "M", &f, &d), 1);
	ck_assert_int_eq(tfs_pb_enter(&l, f.value_at, "M", &d), 0);
	tfs_pb_sub(&f, &s);
	ck_assert_int_eq(tfs_pb_next(&s, "N", &g, &d), 1);
	ck_assert_uint_eq(g.at, 1002);
	ck_assert_int_eq(tfs_pb_enter(&l, g.value_at, "N", &d), 0);
	tfs_pb_sub(&g, &s2);
	ck_assert_int_eq(tfs_pb_next(&s2, "O", &h, &d), 1);
	ck_assert_uint_eq(h.at, 1004);
	ck_assert_uint_eq(h.v, 5);
	ck_assert_int_eq(tfs_pb_next(&s2, "O", &h, &d), 0);
	/* a third level: past max_depth */
	ck_assert_int_eq(tfs_pb_enter(&l, h.at, "O", &d), -E2BIG);
	ck_assert(strstr(d.msg, "more than 2 messages deep") != NULL);
	tfs_pb_leave(&l);
	tfs_pb_leave(&l);
	ck_assert_uint_eq(l.depth, 0);
	tfs_diag_clear(&d);
	ck_assert_int_eq(tfs_pb_enter(&l, 7, "P", &d), 0);
	tfs_pb_leave(&l);
	/* the message count: a fourth message is one too many */
	ck_assert_int_eq(tfs_pb_enter(&l, 9, "Q", &d), -E2BIG);
	ck_assert(strstr(d.msg, "more than 3 messages") != NULL);
	ck_assert_uint_eq(d.offset, 9);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("protobuf");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, varints);
	tcase_add_test(tc, wire_types);
	tcase_add_test(tc, refusals);
	tcase_add_test(tc, wanted_wire);
	tcase_add_test(tc, wanted_table);
	tcase_add_test(tc, repeated_mixed);
	tcase_add_test(tc, nesting);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
