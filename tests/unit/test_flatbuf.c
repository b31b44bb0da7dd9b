// SPDX-License-Identifier: MIT
/*
 * The FlatBuffers reader (src/parse/flatbuf.h) on a buffer laid out here by
 * hand from the FlatBuffers binary format (a root table with a scalar, a
 * string, a vector of u32, a vector of tables and a sub-table; a vtable
 * after its table), then one breakage per rule, each refused with the
 * byte offset of the offending bytes; limits (depth, tables, counts); and
 * TFLite models' roots and buffers: ours (tests/fixtures/tflite, where its
 * generator says each buffer's bytes are) and the spec's worked example
 * (../shared/fixtures/tflite).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse/flatbuf.h"
#include "testutil.h"

/*
 * The hand-made buffer (92 bytes):
 *   0  root uoffset 24              4  "TEST"
 *   8  vtable: size 14, table 24, fields +4 +8 +12 +16 +20
 *  24  table: soffset 16 (vtable at 8)
 *  28  f0 u32 = 42                 32  f1 -> string at 48
 *  36  f2 -> vector at 56          40  f3 -> vector at 68
 *  44  f4 -> table at 76
 *  48  string: 3, "abc\0"          56  vector u32: 2, 7, 9
 *  68  vector of tables: 1, -> 76
 *  76  table: soffset -8 (vtable at 84), f0 u32 = 5 at 80
 *  84  vtable: size 6, table 8, field +4
 */
#define HAND_LEN 92

static void put(uint8_t *b, size_t at, uint64_t v, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		b[at + i] = (uint8_t)(v >> (8 * i));
}

static void hand(uint8_t *b)
{
	memset(b, 0, HAND_LEN);
	put(b, 0, 24, 4);
	memcpy(b + 4, "TEST", 4);
	put(b, 8, 14, 2);
	put(b, 10, 24, 2);
	put(b, 12, 4, 2);
	put(b, 14, 8, 2);
	put(b, 16, 12, 2);
	put(b, 18, 16, 2);
	put(b, 20, 20, 2);
	put(b, 24, 16, 4);
	put(b, 28, 42, 4);
	put(b, 32, 48 - 32, 4);
	put(b, 36, 56 - 36, 4);
	put(b, 40, 68 - 40, 4);
	put(b, 44, 76 - 44, 4);
	put(b, 48, 3, 4);
	memcpy(b + 52, "abc", 4);
	put(b, 56, 2, 4);
	put(b, 60, 7, 4);
	put(b, 64, 9, 4);
	put(b, 68, 1, 4);
	put(b, 72, 76 - 72, 4);
	put(b, 76, (uint32_t)-8, 4);
	put(b, 80, 5, 4);
	put(b, 84, 6, 2);
	put(b, 86, 8, 2);
	put(b, 88, 4, 2);
}

START_TEST(hand_made)
{
	uint8_t b[HAND_LEN];
	struct tfs_fb fb;
	struct tfs_fb_table root, t, c;
	struct tfs_fb_vec v;
	struct tfs_fb_str s;
	struct tfs_diag d;
	uint64_t x;

	hand(b);
	tfs_fb_init(&fb, b, sizeof(b));
	tfs_diag_clear(&d);
	ck_assert_int_eq(tfs_fb_root(&fb, &root, &d), 0);
	ck_assert_uint_eq(root.pos, 24);
	ck_assert_uint_eq(root.vt, 8);
	ck_assert_uint_eq(root.depth, 0);
	ck_assert_int_eq(tfs_fb_scalar(&fb, &root, 0, 4, 0, "f0", &x, &d), 0);
	ck_assert_uint_eq(x, 42);
	/* beyond the vtable: absent, the default */
	ck_assert_int_eq(tfs_fb_scalar(&fb, &root, 9, 4, 77, "f9", &x, &d), 0);
	ck_assert_uint_eq(x, 77);
	ck_assert_int_eq(tfs_fb_string(&fb, &root, 1, "f1", &s, &d), 1);
	ck_assert_uint_eq(s.len, 3);
	ck_assert_uint_eq(s.at, 48);
	ck_assert_int_eq(memcmp(s.p, "abc", 4), 0);
	ck_assert_int_eq(tfs_fb_string(&fb, &root, 9, "f9", &s, &d), 0);
	ck_assert_ptr_null(s.p);
	ck_assert_int_eq(tfs_fb_vector(&fb, &root, 2, 4, 10, "f2", &v, &d), 1);
	ck_assert_uint_eq(v.count, 2);
	ck_assert_uint_eq(tfs_fb_vec_le(&fb, &v, 0), 7);
	ck_assert_uint_eq(tfs_fb_vec_le(&fb, &v, 1), 9);
	ck_assert_int_eq(tfs_fb_vector(&fb, &root, 3, 4, 10, "f3", &v, &d), 1);
	ck_assert_int_eq(tfs_fb_vec_table(&fb, &root, &v, 0, "f3", &t, &d), 0);
	ck_assert_uint_eq(t.pos, 76);
	ck_assert_uint_eq(t.vt, 84);
	ck_assert_uint_eq(t.depth, 1);
	ck_assert_int_eq(tfs_fb_scalar(&fb, &t, 0, 4, 0, "t.f0", &x, &d), 0);
	ck_assert_uint_eq(x, 5);
	ck_assert_int_eq(tfs_fb_child(&fb, &root, 4, "f4", &c, &d), 1);
	ck_assert_uint_eq(c.pos, 76);
	ck_assert_int_eq(tfs_fb_child(&fb, &root, 11, "f11", &c, &d), 0);
	ck_assert_uint_eq(fb.high, 90);
	ck_assert_uint_eq(fb.tables, 3);
	/* a count over the caller's limit */
	ck_assert_int_eq(tfs_fb_vector(&fb, &root, 2, 4, 1, "f2", &v, &d),
			 -E2BIG);
	ck_assert_uint_eq(d.offset, 56);
}
END_TEST

/* one broken rule: the patch, the call that must fail, err and offset */
struct breakage {
	const char *what;
	size_t at;
	uint64_t val;
	unsigned n;
	int call; /* 0 root, 1 f1 string, 2 f2 vector u32, 3 f3 element 0,
		     4 f0 scalar of 4, 5 f2 vector of 8-byte elements */
	int err;
	uint64_t offset;
	const char *word;
};

static const struct breakage breakages[] = {
	{"zero root uoffset", 0, 0, 4, 0, -EBADMSG, 0, "zero uoffset"},
	{"root past the end", 0, 92, 4, 0, -EBADMSG, 0, "past the end"},
	{"root misaligned", 0, 26, 4, 0, -EBADMSG, 26, "4-aligned"},
	{"vtable before byte 0", 24, 100, 4, 0, -EBADMSG, 24, "vtable"},
	{"vtable after the end", 24, (uint32_t)-100000, 4, 0, -EBADMSG, 24,
	 "vtable"},
	{"vtable odd", 24, 15, 4, 0, -EBADMSG, 24, "misaligned"},
	{"vtable size 2", 8, 2, 2, 0, -EBADMSG, 8, "vtable size"},
	{"vtable size odd", 8, 13, 2, 0, -EBADMSG, 8, "vtable size"},
	{"vtable size past the end", 8, 0xfffe, 2, 0, -EBADMSG, 8,
	 "vtable size"},
	{"table size 2", 10, 2, 2, 0, -EBADMSG, 10, "table size"},
	{"table size past the end", 10, 200, 2, 0, -EBADMSG, 10, "table size"},
	{"field past the table", 12, 22, 2, 4, -EBADMSG, 12, "past the end"},
	{"scalar misaligned", 12, 6, 2, 4, -EBADMSG, 30, "aligned"},
	{"string past the end", 48, 1000, 4, 1, -EBADMSG, 48, "past the end"},
	{"string without NUL", 55, 'x', 1, 1, -EBADMSG, 48, "NUL"},
	{"string NUL at the end", 48, 92 - 52, 4, 1, -EBADMSG, 48, "NUL"},
	{"vector misaligned", 36, 22, 4, 2, -EBADMSG, 58, "4-aligned"},
	{"vector count 2^32-1", 56, 0xffffffff, 4, 2, -EBADMSG, 56,
	 "past the end"},
	{"vector zero uoffset", 36, 0, 4, 2, -EBADMSG, 36, "zero uoffset"},
	{"8-byte elements misaligned", 56, 1, 4, 5, -EBADMSG, 56, "8-aligned"},
	{"element uoffset past the end", 72, 100, 4, 3, -EBADMSG, 72,
	 "past the end"},
	{"element table misaligned", 72, 6, 4, 3, -EBADMSG, 78, "4-aligned"},
};

START_TEST(broken)
{
	const struct breakage *k = &breakages[_i];
	uint8_t b[HAND_LEN];
	struct tfs_fb fb;
	struct tfs_fb_table root, t;
	struct tfs_fb_vec v;
	struct tfs_fb_str s;
	struct tfs_diag d;
	uint64_t x;
	int ret;

	hand(b);
	put(b, k->at, k->val, k->n);
	tfs_fb_init(&fb, b, sizeof(b));
	tfs_diag_clear(&d);
	ret = tfs_fb_root(&fb, &root, &d);
	if (k->call && !ret) {
		switch (k->call) {
		case 1:
			ret = tfs_fb_string(&fb, &root, 1, "f1", &s, &d);
			break;
		case 2:
			ret = tfs_fb_vector(&fb, &root, 2, 4, 100, "f2", &v,
					    &d);
			break;
		case 3:
			ret = tfs_fb_vector(&fb, &root, 3, 4, 100, "f3", &v,
					    &d);
			ck_assert_int_eq(ret, 1);
			ret = tfs_fb_vec_table(&fb, &root, &v, 0, "f3", &t, &d);
			break;
		case 4:
			ret = tfs_fb_scalar(&fb, &root, 0, 4, 0, "f0", &x, &d);
			break;
		case 5:
			ret = tfs_fb_vector(&fb, &root, 2, 8, 100, "f2", &v,
					    &d);
			break;
		}
	}
	ck_assert_msg(ret == k->err, "%s: %d (%s)", k->what, ret, d.msg);
	ck_assert_msg(d.has_offset && d.offset == k->offset,
		      "%s: offset %llu, want %llu (%s)", k->what,
		      (unsigned long long)d.offset,
		      (unsigned long long)k->offset, d.msg);
	ck_assert_msg(strstr(d.msg, k->word), "%s: '%s' lacks '%s'", k->what,
		      d.msg, k->word);
}
END_TEST

/* a chain of tables: depth counted from the root, bounded; tables counted */
START_TEST(depth_and_table_limits)
{
	uint8_t b[40] = {0};
	struct tfs_fb fb;
	struct tfs_fb_table t, c;
	struct tfs_diag d;
	unsigned depth = 0;
	int ret;

	/* 0: root -> 16; 4: vtable size 6 table 12 field +8; 16: table */
	put(b, 0, 16, 4);
	put(b, 4, 6, 2);
	put(b, 6, 12, 2);
	put(b, 8, 8, 2);
	put(b, 16, 12, 4); /* vtable at 4 */
	/* a uoffset only points forward: field 0 at 24 -> 28, a table at 28
	 * with the same vtable (soffset 24) */
	put(b, 24, 4, 4);
	put(b, 28, 24, 4);
	tfs_fb_init(&fb, b, sizeof(b));
	tfs_diag_clear(&d);
	ck_assert_int_eq(tfs_fb_root(&fb, &t, &d), 0);
	ret = tfs_fb_child(&fb, &t, 0, "next", &c, &d);
	ck_assert_int_eq(ret, 1);
	ck_assert_uint_eq(c.pos, 28);
	ck_assert_uint_eq(c.depth, 1);
	/* depth: a table opened deeper than the limit */
	fb.max_depth = 3;
	ck_assert_int_eq(tfs_fb_table_at(&fb, 16, 4, "deep", &c, &d), -E2BIG);
	ck_assert_uint_eq(d.offset, 16);
	ck_assert_ptr_nonnull(strstr(d.msg, "deeper"));
	/* tables: the count limit */
	tfs_fb_init(&fb, b, sizeof(b));
	fb.max_tables = 5;
	for (;;) {
		tfs_diag_clear(&d);
		ret = tfs_fb_table_at(&fb, 16, 0, "again", &c, &d);
		if (ret)
			break;
		depth++;
	}
	ck_assert_int_eq(ret, -E2BIG);
	ck_assert_uint_eq(depth, 5);
	ck_assert_ptr_nonnull(strstr(d.msg, "more than 5 tables"));
}
END_TEST

/* every prefix of the hand-made buffer: refused with an offset, or read */
START_TEST(every_truncation)
{
	uint8_t b[HAND_LEN];
	struct tfs_fb fb;
	struct tfs_fb_table root;
	struct tfs_fb_str s;
	struct tfs_diag d;
	size_t n;
	int ret;

	hand(b);
	for (n = 0; n < HAND_LEN; n++) {
		tfs_fb_init(&fb, b, n);
		tfs_diag_clear(&d);
		ret = tfs_fb_root(&fb, &root, &d);
		if (!ret)
			ret = tfs_fb_string(&fb, &root, 1, "f1", &s, &d);
		if (n < 56) /* the string's NUL is byte 55 */
			ck_assert_msg(ret < 0, "%zu bytes accepted", n);
		if (ret < 0)
			ck_assert_msg(d.has_offset && d.offset <= n,
				      "%zu: offset %llu", n,
				      (unsigned long long)d.offset);
	}
}
END_TEST

/* the TFLite fixtures: root Model at the place the spec's example says */
START_TEST(tflite_minimal)
{
	size_t len;
	uint8_t *b;
	struct tfs_fb fb;
	struct tfs_fb_table m, buf;
	struct tfs_fb_vec v, data;
	struct tfs_diag d;
	uint64_t version;

	TU_NEED_SHARED("tflite/synthesized/minimal.tflite");
	b = tu_read_file(tu_fixture("tflite/synthesized/minimal.tflite"), &len);
	tfs_fb_init(&fb, b, len);
	ck_assert_int_eq(tfs_fb_root(&fb, &m, &d), 0);
	/* specs/tflite.md section 10 */
	ck_assert_uint_eq(m.pos, 0x18);
	ck_assert_uint_eq(m.vt, 0x0a);
	ck_assert_uint_eq(m.vsize, 14);
	ck_assert_uint_eq(m.tsize, 24);
	ck_assert_int_eq(
		tfs_fb_scalar(&fb, &m, 0, 4, 0, "version", &version, &d), 0);
	ck_assert_uint_eq(version, 3);
	ck_assert_int_eq(tfs_fb_vector(&fb, &m, 4, 4, 10, "buffers", &v, &d),
			 1);
	ck_assert_uint_eq(v.at, 0x108);
	ck_assert_uint_eq(v.count, 2);
	ck_assert_int_eq(tfs_fb_vec_table(&fb, &m, &v, 1, "buffers", &buf, &d),
			 0);
	ck_assert_uint_eq(buf.pos, 0x124);
	ck_assert_int_eq(tfs_fb_vector(&fb, &buf, 0, 1, 100, "data", &data, &d),
			 1);
	ck_assert_uint_eq(data.at, 0x12c);
	ck_assert_uint_eq(data.count, 8);
	ck_assert_int_eq(
		memcmp(b + data.pos, "\x00\x00\x80\x3f\x00\x00\x00\x40", 8), 0);
	free(b);
}
END_TEST

/*
 * types.tflite of tests/fixtures/tflite: Model.version 3, and buffer k
 * (k >= 1) holds the bytes of the k-th row of valid.tsv for that file, at
 * the offset and of the length the generator wrote there.
 */
START_TEST(tflite_ours)
{
	FILE *f = fopen(tu_testdata("tflite/valid.tsv"), "r");
	char line[1024], file[256];
	unsigned long long off, n;
	size_t len;
	uint8_t *b =
		tu_read_file(tu_testdata("tflite/valid/types.tflite"), &len);
	struct tfs_fb fb;
	struct tfs_fb_table m, buf;
	struct tfs_fb_vec v, data;
	struct tfs_diag d;
	uint64_t version, k = 0;

	ck_assert_ptr_nonnull(f);
	tfs_fb_init(&fb, b, len);
	ck_assert_int_eq(tfs_fb_root(&fb, &m, &d), 0);
	ck_assert_int_eq(
		tfs_fb_scalar(&fb, &m, 0, 4, 0, "version", &version, &d), 0);
	ck_assert_uint_eq(version, 3);
	ck_assert_int_eq(tfs_fb_vector(&fb, &m, 4, 4, 100, "buffers", &v, &d),
			 1);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%255s %*s %*s %*s %llu %llu", file, &off,
			   &n) != 3 ||
		    strcmp(file, "types.tflite") != 0)
			continue;
		k++;
		ck_assert_uint_lt(k, v.count);
		ck_assert_int_eq(
			tfs_fb_vec_table(&fb, &m, &v, k, "buffers", &buf, &d),
			0);
		ck_assert_int_eq(
			tfs_fb_vector(&fb, &buf, 0, 1, 100, "data", &data, &d),
			1);
		ck_assert_uint_eq(data.pos, off);
		ck_assert_uint_eq(data.count, n);
	}
	fclose(f);
	ck_assert_uint_eq(k, 15);
	ck_assert_uint_eq(v.count, 16);
	free(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("flatbuf");
	TCase *tc = tcase_create("flatbuf");

	tcase_add_test(tc, hand_made);
	tcase_add_loop_test(tc, broken, 0,
			    sizeof(breakages) / sizeof(breakages[0]));
	tcase_add_test(tc, depth_and_table_limits);
	tcase_add_test(tc, every_truncation);
	tcase_add_test(tc, tflite_ours);
	tcase_add_test(tc, tflite_minimal);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
