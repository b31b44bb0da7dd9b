// SPDX-License-Identifier: MIT
/*
 * Sources: read-only mapping, live range checks, the SIGBUS guard that
 * keeps a container truncated under us from killing the process (zstd
 * decoding and digests run under it), and slices of memory, of a file and
 * of a source with ops (a remote one), slices of slices among them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "core/digest.h"
#include "core/source.h"
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

/* ---- slices ---------------------------------------------------------------
 */

/* a source with ops, as a remote one: every call it gets, logged */
struct fake {
	char log[512];
	int closed;
};

static void logf_(struct fake *f, const char *what, uint64_t a, uint64_t b,
		  uint64_t c, uint64_t e)
{
	size_t n = strlen(f->log);

	snprintf(f->log + n, sizeof(f->log) - n, "%s %llu %llu %llu %llu;",
		 what, (unsigned long long)a, (unsigned long long)b,
		 (unsigned long long)c, (unsigned long long)e);
}

static int fake_fetch(void *impl, uint64_t off, uint64_t len)
{
	logf_(impl, "fetch", off, len, 0, 0);
	return 0;
}

static void fake_drop(void *impl, uint64_t off, uint64_t len)
{
	logf_(impl, "drop", off, len, 0, 0);
}

static int fake_fetch_in(void *impl, uint64_t off, uint64_t len,
			 uint64_t ext_off, uint64_t ext_len)
{
	logf_(impl, "in", off, len, ext_off, ext_len);
	return 0;
}

static void fake_unpin(void *impl, uint64_t off, uint64_t len)
{
	logf_(impl, "unpin", off, len, 0, 0);
}

static void fake_close(void *impl)
{
	((struct fake *)impl)->closed++;
}

static const struct tfs_source_ops fake_ops = {
	.fetch = fake_fetch,
	.drop = fake_drop,
	.fetch_in = fake_fetch_in,
	.close = fake_close,
	.unpin = fake_unpin,
};

START_TEST(slice_of_a_slice_of_memory)
{
	uint8_t data[64];
	struct tfs_source m, a, b;
	struct tfs_diag d;

	for (int i = 0; i < 64; i++)
		data[i] = (uint8_t)i;
	tfs_source_init_memory(&m, data, sizeof(data));
	ck_assert_int_eq(tfs_source_slice(&a, &m, 10, 40, "a", &d), 0);
	ck_assert_int_eq(tfs_source_slice(&b, &a, 5, 20, "b", &d), 0);
	/* bytes 15.. of the memory: a window, no copy */
	ck_assert_ptr_eq(b.data, data + 15);
	ck_assert_uint_eq(b.size, 20);
	ck_assert_uint_eq(b.base, 15);
	ck_assert_str_eq(b.path, "/a/b");
	ck_assert(tfs_source_live_range_ok(&b, 0, 20));
	ck_assert(!tfs_source_live_range_ok(&b, 1, 20));
	tfs_source_close(&b);
	/* past the end of the parent slice (inside the memory): refused */
	ck_assert_int_eq(tfs_source_slice(&b, &a, 30, 11, "c", &d), -EBADMSG);
	ck_assert_str_eq(d.msg, "c: bytes [30, +11) are not inside the file");
	tfs_source_close(&a);
	tfs_source_close(&m);
}
END_TEST

START_TEST(slice_of_a_remote_forwards_to_the_root)
{
	static uint8_t data[1000];
	struct fake f = {0};
	struct tfs_source r, a, b;
	struct tfs_diag d;

	tfs_source_init_memory(&r, data, sizeof(data));
	r.ops = &fake_ops;
	r.impl = &f;
	ck_assert_int_eq(tfs_source_slice(&a, &r, 100, 500, "a", &d), 0);
	ck_assert_int_eq(tfs_source_slice(&b, &a, 50, 200, "b", &d), 0);
	ck_assert_ptr_eq(b.data, data + 150);
	ck_assert_uint_eq(b.base, 150);
	ck_assert_ptr_nonnull(b.ops);
	/* the slice of a slice goes to the root, both offsets added */
	ck_assert_int_eq(tfs_source_fetch(&b, 10, 20), 0);
	ck_assert(tfs_source_live_range_ok(&b, 0, 200));
	ck_assert_int_eq(tfs_source_fetch_in(&b, 30, 5, 20, 100), 0);
	tfs_source_unpin(&b, 30, 5);
	tfs_source_drop_cache(&b, 0, 200);
	tfs_source_drop_cache(&a, 1, 2);
	ck_assert_str_eq(f.log, "fetch 160 20 0 0;fetch 150 200 0 0;"
				"in 180 5 170 100;unpin 180 5 0 0;"
				"drop 150 200 0 0;drop 101 2 0 0;");
	/* outside the slice: refused here, never asked of the root */
	f.log[0] = 0;
	ck_assert_int_eq(tfs_source_fetch(&b, 190, 11), -EIO);
	ck_assert_int_eq(tfs_source_fetch_in(&b, 201, 0, 0, 1), -EIO);
	tfs_source_drop_cache(&b, 199, 2);
	tfs_source_unpin(&b, 199, 2);
	ck_assert_str_eq(f.log, "");
	/* slices borrow the root: closing them leaves it open */
	tfs_source_close(&b);
	tfs_source_close(&a);
	ck_assert_int_eq(f.closed, 0);
	tfs_source_close(&r);
	ck_assert_int_eq(f.closed, 1);
}
END_TEST

START_TEST(slice_of_a_slice_of_a_file)
{
	size_t len = (size_t)page * 3;
	uint8_t *data = malloc(len);
	struct tfs_source s, a, b;
	struct tfs_diag d;

	for (size_t i = 0; i < len; i++)
		data[i] = (uint8_t)(i * 7);
	make_file(data, len);
	ck_assert_int_eq(tfs_source_open(&s, path, &d), 0);
	ck_assert_int_eq(
		tfs_source_slice(&a, &s, 3, (uint64_t)page * 2, "a", &d), 0);
	ck_assert_int_eq(
		tfs_source_slice(&b, &a, (uint64_t)page - 1, 100, "b", &d), 0);
	/* its own mapping, from the file page holding its first byte */
	ck_assert_uint_eq(b.base, (uint64_t)page + 2);
	ck_assert_uint_eq(b.map_off, (uint64_t)page);
	ck_assert_ptr_ne(b.data, a.data + page - 1);
	ck_assert_mem_eq(b.data, data + page + 2, 100);
	/* the parents closed first: the slice still reads */
	tfs_source_close(&s);
	tfs_source_close(&a);
	ck_assert(tfs_source_live_range_ok(&b, 0, 100));
	ck_assert_mem_eq(tfs_source_serve(&b, 10, 50, 100), data + page + 12,
			 50);
	ck_assert_int_eq(truncate(path, page + 50), 0);
	ck_assert(!tfs_source_live_range_ok(&b, 0, 100));
	ck_assert(tfs_source_live_range_ok(&b, 0, 48));
	tfs_source_close(&b);
	free(data);
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
	tcase_add_test(tc, slice_of_a_slice_of_memory);
	tcase_add_test(tc, slice_of_a_remote_forwards_to_the_root);
	tcase_add_test(tc, slice_of_a_slice_of_a_file);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
