// SPDX-License-Identifier: MIT
/*
 * The remote sources' pure pieces: the range planner, the disk chunk cache
 * (checksums, atomic files, LRU eviction), options and URL redaction.
 * Fetching over HTTP is the end-to-end test e2e-remote's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "remote/chunk_cache.h"
#include "remote/range_plan.h"
#include "remote/remote.h"
#include "remote/resolve.h"
#include "testutil.h"

enum {
	M = TFS_CHUNK_MISSING,
	F = TFS_CHUNK_FETCHING,
	P = TFS_CHUNK_PRESENT,
	X = TFS_CHUNK_FAILED
};

START_TEST(plan_skips_present_and_fetching)
{
	const uint8_t st[] = {P, M, M, F, M, X, P, M};
	struct tfs_plan_piece out[8];
	uint64_t next;
	size_t n = tfs_plan_pieces(st, 0, 7, 100, out, 8, &next);

	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(out[0].first, 1);
	ck_assert_uint_eq(out[0].count, 2);
	ck_assert_uint_eq(out[1].first, 4); /* a failed chunk is retried */
	ck_assert_uint_eq(out[1].count, 2);
	ck_assert_uint_eq(out[2].first, 7);
	ck_assert_uint_eq(out[2].count, 1);
	ck_assert_uint_eq(next, 8);
}
END_TEST

START_TEST(plan_splits_long_runs_and_resumes)
{
	uint8_t st[10] = {0};
	struct tfs_plan_piece out[2];
	uint64_t next;
	size_t n;

	n = tfs_plan_pieces(st, 2, 9, 3, out, 2, &next);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(out[0].first, 2);
	ck_assert_uint_eq(out[0].count, 3);
	ck_assert_uint_eq(out[1].first, 5);
	ck_assert_uint_eq(out[1].count, 3);
	ck_assert_uint_eq(next, 8); /* out full: go on from here */
	n = tfs_plan_pieces(st, next, 9, 3, out, 2, &next);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_eq(out[0].first, 8);
	ck_assert_uint_eq(out[0].count, 2);
	ck_assert_uint_eq(next, 10);
	/* a piece is never longer than the buffers allow */
	{
		uint8_t big[2 * TFS_PLAN_MAX_PIECE] = {0};
		struct tfs_plan_piece o[4];

		n = tfs_plan_pieces(big, 0, sizeof(big) - 1, 1u << 30, o, 4,
				    &next);
		ck_assert_uint_eq(n, 2);
		ck_assert_uint_eq(o[0].count, TFS_PLAN_MAX_PIECE);
	}
}
END_TEST

static char *tmpdir(void)
{
	char tmpl[] = "/tmp/tfs-unit-cache.XXXXXX";
	char *d = mkdtemp(tmpl);

	ck_assert_ptr_nonnull(d);
	return strdup(d);
}

static void rm_rf(const char *dir)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(cache_round_trip_and_corruption)
{
	char *dir = tmpdir(), path[600];
	struct tfs_chunk_cache *c, *other;
	uint8_t data[1000], back[1000];
	int fd;
	size_t i;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7);
	ck_assert_int_eq(tfs_chunk_cache_open(&c, dir, 1 << 20, "http://h/m",
					      "\"v1\"", 5000),
			 0);
	ck_assert_int_eq(tfs_chunk_cache_get(c, 3, 3000, back, 1000), -ENOENT);
	ck_assert_int_eq(tfs_chunk_cache_put(c, 3, 3000, data, 1000), 0);
	memset(back, 0, sizeof(back));
	ck_assert_int_eq(tfs_chunk_cache_get(c, 3, 3000, back, 1000), 0);
	ck_assert_mem_eq(back, data, sizeof(data));
	/* asked as another chunk's place or length: a miss, not bytes */
	ck_assert_int_eq(tfs_chunk_cache_get(c, 3, 0, back, 1000), -ENOENT);
	ck_assert_int_eq(tfs_chunk_cache_put(c, 3, 3000, data, 1000), 0);
	ck_assert_int_eq(tfs_chunk_cache_get(c, 3, 3000, back, 999), -ENOENT);
	/* another version of the same URL is another key */
	ck_assert_int_eq(tfs_chunk_cache_open(&other, dir, 1 << 20,
					      "http://h/m", "\"v2\"", 5000),
			 0);
	ck_assert_str_ne(tfs_chunk_cache_path(c), tfs_chunk_cache_path(other));
	ck_assert_int_eq(tfs_chunk_cache_get(other, 3, 3000, back, 1000),
			 -ENOENT);
	/* a flipped data byte: never served, and the file is dropped */
	ck_assert_int_eq(tfs_chunk_cache_put(c, 3, 3000, data, 1000), 0);
	snprintf(path, sizeof(path), "%s/%016x", tfs_chunk_cache_path(c), 3);
	fd = open(path, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, "\xff", 1, TFS_CHUNK_HEADER + 10), 1);
	close(fd);
	ck_assert_int_eq(tfs_chunk_cache_get(c, 3, 3000, back, 1000), -ENOENT);
	ck_assert_int_eq(access(path, F_OK), -1);
	/* mapped (what a hit maps in place): the data, page-aligned */
	ck_assert_int_eq(tfs_chunk_cache_put(c, 3, 3000, data, 1000), 0);
	{
		struct tfs_chunk_map m = {0};
		const uint8_t *p = tfs_chunk_cache_map(c, 3, 3000, 1000, &m);

		ck_assert_ptr_nonnull(p);
		ck_assert_mem_eq(p, data, sizeof(data));
		ck_assert_uint_eq((uintptr_t)p % 4096, 0);
		tfs_chunk_cache_unmap(&m);
		ck_assert_ptr_null(
			tfs_chunk_cache_map(c, 3, 3000 + 4096, 1000, &m));
	}
	tfs_chunk_cache_close(c);
	tfs_chunk_cache_close(other);
	rm_rf(dir);
	free(dir);
}
END_TEST

START_TEST(cache_evicts_least_recently_used)
{
	char *dir = tmpdir();
	struct tfs_chunk_cache *c;
	static uint8_t data[10000], back[10000];
	struct timespec t[2] = {{.tv_sec = 0}, {.tv_sec = 0}};
	char path[600];
	uint64_t i;

	ck_assert_int_eq(tfs_chunk_cache_open(&c, dir, 1 << 30, "http://h/e",
					      "\"x\"", 100000),
			 0);
	for (i = 0; i < 10; i++) {
		ck_assert_int_eq(
			tfs_chunk_cache_put(c, i, i * 10000, data, 10000), 0);
		/* chunk i last used at time i (seconds), chunk 0 oldest */
		snprintf(path, sizeof(path), "%s/%016llx",
			 tfs_chunk_cache_path(c), (unsigned long long)i);
		t[0].tv_sec = t[1].tv_sec = (time_t)(1000 + i);
		ck_assert_int_eq(utimensat(AT_FDCWD, path, t, 0), 0);
	}
	/* a hit makes chunk 0 the most recently used */
	ck_assert_int_eq(tfs_chunk_cache_get(c, 0, 0, back, 10000), 0);
	/* room for 5 chunks: down to 90 % of it, 4 remain */
	ck_assert_int_eq(
		tfs_chunk_cache_evict(dir, 5 * (10000 + TFS_CHUNK_HEADER)), 0);
	ck_assert_int_eq(tfs_chunk_cache_get(c, 0, 0, back, 10000), 0);
	for (i = 1; i <= 6; i++)
		ck_assert_int_eq(
			tfs_chunk_cache_get(c, i, i * 10000, back, 10000),
			-ENOENT);
	for (i = 7; i < 10; i++)
		ck_assert_int_eq(
			tfs_chunk_cache_get(c, i, i * 10000, back, 10000), 0);
	tfs_chunk_cache_close(c);
	rm_rf(dir);
	free(dir);
}
END_TEST

START_TEST(options_and_redaction)
{
	struct tfs_remote_config c;
	char *s;

	tfs_remote_config_default(&c);
	ck_assert_int_eq(tfs_remote_option(&c, "remote_mem=128M", 15), 1);
	ck_assert_uint_eq(c.mem, 128u << 20);
	ck_assert_int_eq(tfs_remote_option(&c, "remote_timeout=5", 16), 1);
	ck_assert_uint_eq(c.timeout_ms, 5000);
	ck_assert_int_eq(tfs_remote_option(&c, "remote_timeout=0", 16),
			 -EINVAL);
	ck_assert_int_eq(tfs_remote_option(&c, "remote_mem=1K", 13), -EINVAL);
	ck_assert_int_eq(tfs_remote_option(&c, "cache_dir=/x/y", 14), 1);
	ck_assert_str_eq(c.cache_dir, "/x/y");
	ck_assert_int_eq(tfs_remote_option(&c, "cache_max=2G", 12), 1);
	ck_assert_uint_eq(c.cache_max, 2ull << 30);
	ck_assert_int_eq(tfs_remote_option(&c, "insecure", 8), 1);
	ck_assert(c.insecure);
	ck_assert_int_eq(tfs_remote_option(&c, "allow_other", 11), 0);
	tfs_remote_config_free(&c);
	s = tfs_remote_redact("https://u:pw@host:8/a/b.st?X-Amz-Signature=s");
	ck_assert_str_eq(s, "https://host:8/a/b.st");
	free(s);
	s = tfs_remote_redact("http://host/p@q/m");
	ck_assert_str_eq(s, "http://host/p@q/m");
	free(s);
	/* S3 keys and Hub paths: RFC 3986 unreserved and '/' stay */
	s = tfs_remote_escape_path("dir/a b+c~_.-/\xc3\xa9=");
	ck_assert_str_eq(s, "dir/a%20b%2Bc~_.-/%C3%A9%3D");
	free(s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("remote");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, plan_skips_present_and_fetching);
	tcase_add_test(tc, plan_splits_long_runs_and_resumes);
	tcase_add_test(tc, cache_round_trip_and_corruption);
	tcase_add_test(tc, cache_evicts_least_recently_used);
	tcase_add_test(tc, options_and_redaction);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
