// SPDX-License-Identifier: MIT
/* The bounds-checked cursor and the checked arithmetic. */
#include <errno.h>
#include <stdint.h>

#include "core/checked.h"
#include "core/cursor.h"
#include "testutil.h"

START_TEST(reads_little_endian)
{
	const uint8_t b[] = {0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07,
			     0x08, 0xff, 0xfe, 0xff, 0xff, 0xaa};
	struct tfs_cursor c;
	uint64_t u64;
	uint32_t u32;
	uint16_t u16;
	int32_t i32;
	uint8_t u8;

	tfs_cursor_init(&c, b, sizeof(b), 1000);
	ck_assert_int_eq(tfs_cursor_u16le(&c, &u16), 0);
	ck_assert_uint_eq(u16, 0x0201);
	ck_assert_int_eq(tfs_cursor_u32le(&c, &u32), 0);
	ck_assert_uint_eq(u32, 0x06050403);
	ck_assert_uint_eq(tfs_cursor_offset(&c), 1006);
	ck_assert_int_eq(tfs_cursor_seek(&c, 0), 0);
	ck_assert_int_eq(tfs_cursor_u64le(&c, &u64), 0);
	ck_assert_uint_eq(u64, 0x0807060504030201ull);
	ck_assert_int_eq(tfs_cursor_i32le(&c, &i32), 0);
	ck_assert_int_eq(i32, -257);
	ck_assert_int_eq(tfs_cursor_u8(&c, &u8), 0);
	ck_assert_uint_eq(u8, 0xaa);
	ck_assert_uint_eq(tfs_cursor_remaining(&c), 0);
}
END_TEST

START_TEST(never_reads_past_end)
{
	const uint8_t b[] = {1, 2, 3};
	const uint8_t *p;
	struct tfs_cursor c;
	uint32_t u32;
	uint64_t be;

	tfs_cursor_init(&c, b, sizeof(b), 0);
	ck_assert_int_eq(tfs_cursor_u32le(&c, &u32), -EBADMSG);
	ck_assert_uint_eq(c.pos, 0); /* a failed read does not advance */
	ck_assert_int_eq(tfs_cursor_skip(&c, 4), -EBADMSG);
	ck_assert_int_eq(tfs_cursor_skip(&c, UINT64_MAX), -EBADMSG);
	ck_assert_int_eq(tfs_cursor_bytes(&c, 3, &p), 0);
	ck_assert_ptr_eq(p, b);
	ck_assert_int_eq(tfs_cursor_bytes(&c, 1, &p), -EBADMSG);
	ck_assert_int_eq(tfs_cursor_seek(&c, 4), -EBADMSG);
	ck_assert_int_eq(tfs_cursor_seek(&c, 1), 0);
	ck_assert_int_eq(tfs_cursor_be(&c, 2, &be), 0);
	ck_assert_uint_eq(be, 0x0203);
	ck_assert(tfs_cursor_match(&c, "", 0));
}
END_TEST

START_TEST(checked_arithmetic)
{
	uint64_t r = 7, dims[3] = {1ull << 32, 1ull << 31, 2};

	ck_assert(!tfs_add_u64(UINT64_MAX, 1, &r));
	ck_assert_uint_eq(r, 7);
	ck_assert(tfs_add_u64(UINT64_MAX - 1, 1, &r));
	ck_assert(!tfs_mul_u64(1ull << 32, 1ull << 32, &r));
	ck_assert(tfs_mul_u64(1ull << 31, 1ull << 32, &r));
	ck_assert(!tfs_shape_product(dims, 3, &r));
	ck_assert(tfs_shape_product(dims, 2, &r));
	ck_assert_uint_eq(r, 1ull << 63);
	ck_assert(tfs_shape_product(dims, 0, &r));
	ck_assert_uint_eq(r, 1);
	ck_assert(tfs_range_ok(10, 0, 10));
	ck_assert(!tfs_range_ok(11, 0, 10));
	ck_assert(!tfs_range_ok(5, UINT64_MAX, 10));
	ck_assert(tfs_range_ok(0, 10, 10));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cursor");
	TCase *tc = tcase_create("cursor");

	tcase_add_test(tc, reads_little_endian);
	tcase_add_test(tc, never_reads_past_end);
	tcase_add_test(tc, checked_arithmetic);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
