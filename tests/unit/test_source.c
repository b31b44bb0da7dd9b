// SPDX-License-Identifier: MIT
/*
 * Sources: read-only mapping, live range checks, and the SIGBUS guard that
 * keeps a container truncated under us from killing the process (zstd
 * decoding and digests run under it).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "tensorfs/digest.h"
#include "tensorfs/source.h"
#include "codec/zstd.h"
#include "testutil.h"

#define PAGES 64

static char path[64];
static long page;

static void make_file(const void *data, size_t len)
{
	FILE *f;

	strcpy(path, "/tmp/tfs-source-XXXXXX");
	ck_assert_int_ge(mkstemp(path), 0);
	f = fopen(path, "wb");
	ck_assert_uint_eq(fwrite(data, 1, len, f), len);
	fclose(f);
}

static void setup(void)
{
	page = sysconf(_SC_PAGESIZE);
	ck_assert_int_eq(tfs_source_catch_sigbus(), 0);
}

static void teardown(void)
{
	unlink(path);
}

struct touch {
	const volatile uint8_t *p;
	uint64_t sum;
};

static int touch_fn(void *arg)
{
	struct touch *t = arg;

	t->sum += t->p[0];
	return 0;
}

START_TEST(open_is_read_only_and_checks_ranges)
{
	uint8_t data[100] = {1, 2, 3};
	struct tfs_source s;
	struct tfs_diag d;
	struct stat st;

	make_file(data, sizeof(data));
	tfs_diag_clear(&d);
	ck_assert_int_eq(tfs_source_open(&s, path, &d), 0);
	ck_assert_uint_eq(s.size, 100);
	ck_assert_int_eq(s.data[2], 3);
	ck_assert(tfs_source_range_ok(&s, 90, 10));
	ck_assert(!tfs_source_range_ok(&s, 91, 10));
	ck_assert(!tfs_source_range_ok(&s, UINT64_MAX, 2));
	ck_assert(tfs_source_live_range_ok(&s, 0, 100));
	ck_assert_int_eq(truncate(path, 50), 0);
	ck_assert(!tfs_source_live_range_ok(&s, 0, 100));
	ck_assert(tfs_source_live_range_ok(&s, 0, 50));
	/* opened O_RDONLY: the descriptor cannot write */
	ck_assert_int_eq(write(s.fd, "x", 1), -1);
	ck_assert_int_eq(fstat(s.fd, &st), 0);
	tfs_source_close(&s);
	tfs_diag_clear(&d);
	ck_assert_int_eq(tfs_source_open(&s, "/nonexistent", &d), -ENOENT);
	ck_assert_ptr_nonnull(strstr(d.msg, "cannot open"));
}
END_TEST

START_TEST(guard_turns_sigbus_into_efault)
{
	uint8_t *data = calloc(PAGES, (size_t)page);
	struct tfs_source s;
	struct tfs_diag d;
	struct touch t = {0};

	data[0] = 7;
	make_file(data, (size_t)page * PAGES);
	ck_assert_int_eq(tfs_source_open(&s, path, &d), 0);
	ck_assert_int_eq(truncate(path, page), 0);
	t.p = s.data;
	ck_assert_int_eq(tfs_source_guard(touch_fn, &t), 0);
	ck_assert_uint_eq(t.sum, 7);
	t.p = s.data + 5 * page; /* gone: SIGBUS, caught */
	ck_assert_int_eq(tfs_source_guard(touch_fn, &t), -EFAULT);
	/* and again: the handler stays in place, nothing is left blocked */
	ck_assert_int_eq(tfs_source_guard(touch_fn, &t), -EFAULT);
	t.p = s.data;
	ck_assert_int_eq(tfs_source_guard(touch_fn, &t), 0);
	tfs_source_close(&s);
	free(data);
}
END_TEST

START_TEST(zstd_and_digest_survive_truncation)
{
	size_t n = (size_t)page * PAGES, bound = ZSTD_compressBound(n), clen;
	uint8_t *raw = malloc(n), *frame = malloc(bound), *out = malloc(n);
	struct tfs_digest want = {.alg = TFS_DIGEST_SHA256}, got;
	struct tfs_zstd *z;
	struct tfs_source s;
	struct tfs_diag d;
	size_t pos = 0, i;
	uint32_t x = 1;

	/* incompressible: the frame spans as many pages as the data */
	for (i = 0; i < n; i++) {
		x = x * 1103515245 + 12345;
		raw[i] = (uint8_t)(x >> 16);
	}
	clen = ZSTD_compress(frame, bound, raw, n, 1);
	ck_assert(!ZSTD_isError(clen));
	make_file(frame, clen);
	ck_assert_int_eq(tfs_source_open(&s, path, &d), 0);
	ck_assert_int_eq(tfs_zstd_new(&z, s.data, clen, false), 0);
	ck_assert_int_eq(truncate(path, 2 * page), 0);
	ck_assert_int_eq(tfs_zstd_decode(z, out, n, &pos, n), -EIO);
	ck_assert_int_eq(tfs_zstd_decode(z, out, n, &pos, n), -EIO);
	tfs_zstd_free(z);
	want.len = 32;
	ck_assert_int_eq(tfs_digest_check(&want, s.data, clen, &got), -EIO);
	tfs_source_close(&s);
	free(raw);
	free(frame);
	free(out);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("source");
	TCase *tc = tcase_create("source");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, open_is_read_only_and_checks_ranges);
	tcase_add_test(tc, guard_turns_sigbus_into_efault);
	tcase_add_test(tc, zstd_and_digest_survive_truncation);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
