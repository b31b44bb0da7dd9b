// SPDX-License-Identifier: MIT
/*
 * The remote sources' pure pieces: the range planner, the disk chunk cache
 * (checksums, atomic files, LRU eviction), options and URL redaction;
 * and, against a small range server of its own on loopback, what a remote
 * source keeps of blocks it fetched only in part.  The rest of fetching
 * over HTTP is the end-to-end test e2e-remote's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "remote/chunk_cache.h"
#include "remote/range_plan.h"
#include "remote/remote.h"
#include "remote/resolve.h"
#include "core/source.h"
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

/* ---- a range server on loopback: a generated object, strong ETag -------- */

#define SRV_CHUNK (256u << 10)
#define SRV_BLOCK (16ull * SRV_CHUNK)

static uint64_t srv_size;

static uint8_t pattern(uint64_t i)
{
	return (uint8_t)(i * 31 + (i >> 12) * 7 + (i >> 22));
}

static int send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len) {
		n = send(fd, p, len, MSG_NOSIGNAL);
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* one connection: requests until the client closes it (kept alive) */
static void *srv_conn(void *arg)
{
	int fd = (int)(intptr_t)arg;
	static __thread uint8_t body[64 << 10];
	char req[8192], hdr[512], *end, *range;
	size_t have = 0;
	ssize_t n;

	for (;;) {
		unsigned long long a = 0, b = srv_size - 1, o;

		req[have] = '\0';
		end = strstr(req, "\r\n\r\n");
		if (!end) {
			if (have >= sizeof(req) - 1)
				break;
			n = recv(fd, req + have, sizeof(req) - 1 - have, 0);
			if (n <= 0)
				break;
			have += (size_t)n;
			continue;
		}
		*end = '\0';
		for (range = req; (range = strchr(range, '\n'));)
			if (strncasecmp(++range, "range: bytes=", 13) == 0)
				break;
		if (range)
			sscanf(range + 13, "%llu-%llu", &a, &b);
		if (b >= srv_size)
			b = srv_size - 1;
		snprintf(hdr, sizeof(hdr),
			 "HTTP/1.1 206 Partial Content\r\n"
			 "Content-Range: bytes %llu-%llu/%llu\r\n"
			 "Content-Length: %llu\r\nETag: \"t1\"\r\n\r\n",
			 a, b, (unsigned long long)srv_size, b - a + 1);
		if (send_all(fd, hdr, strlen(hdr)))
			break;
		for (o = a; o <= b; o += n) {
			n = (ssize_t)(b + 1 - o < sizeof(body) ? b + 1 - o
							       : sizeof(body));
			for (ssize_t k = 0; k < n; k++)
				body[k] = pattern(o + (uint64_t)k);
			if (send_all(fd, body, (size_t)n))
				goto out;
		}
		have -= (size_t)(end + 4 - req);
		memmove(req, end + 4, have);
	}
out:
	close(fd);
	return NULL;
}

static void *srv_accept(void *arg)
{
	int lfd = (int)(intptr_t)arg, fd;
	pthread_t t;

	while ((fd = accept(lfd, NULL, NULL)) >= 0)
		if (pthread_create(&t, NULL, srv_conn, (void *)(intptr_t)fd))
			close(fd);
		else
			pthread_detach(t);
	return NULL;
}

/* serve an object of @size bytes; its URL */
static char *srv_start(uint64_t size)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	pthread_t t;
	char *url;
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	srv_size = size;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_ge(lfd, 0);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(lfd, 64), 0);
	ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
	ck_assert_int_eq(
		pthread_create(&t, NULL, srv_accept, (void *)(intptr_t)lfd), 0);
	pthread_detach(t);
	ck_assert_int_ge(
		asprintf(&url, "http://127.0.0.1:%u/m.bin", ntohs(sa.sin_port)),
		0);
	return url;
}

/* a remote source of @size generated bytes, @prefetch, cache in @dir
 * (NULL: no disk cache) */
static void open_served_ahead(struct tfs_source *s, uint64_t size,
			      const char *dir, uint64_t prefetch)
{
	struct tfs_remote_config c;
	struct tfs_diag d;
	char *url = srv_start(size);

	tfs_remote_config_default(&c);
	c.prefetch = prefetch;
	free(c.cache_dir);
	c.cache_dir = dir ? strdup(dir) : NULL;
	ck_assert_int_eq(tfs_remote_configure(&c), 0);
	tfs_remote_config_free(&c);
	ck_assert_int_eq(tfs_remote_open(s, url, &d), 0);
	ck_assert_uint_eq(s->size, size);
	free(url);
}

static void open_served(struct tfs_source *s, uint64_t size, const char *dir)
{
	open_served_ahead(s, size, dir, 0);
}

/* chunk 1 of block @b fetched, checked, and served (a drop asked) */
static void read_chunk1(struct tfs_source *s, uint64_t b)
{
	uint64_t off = b * SRV_BLOCK + SRV_CHUNK, i;

	ck_assert_int_eq(tfs_source_fetch(s, off, SRV_CHUNK), 0);
	for (i = 0; i < SRV_CHUNK; i += 4093)
		ck_assert_uint_eq(s->data[off + i], pattern(off + i));
	tfs_source_drop_cache(s, off, SRV_CHUNK);
}

/* files named *.tmp.* (blocks partly fetched) under @dir, one level down */
static unsigned count_tmp(const char *dir)
{
	char cmd[600];
	unsigned n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "find '%s' -name '*.tmp.*' | wc -l", dir);
	f = popen(cmd, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fscanf(f, "%u", &n), 1);
	pclose(f);
	return n;
}

/*
 * A reader jumping about a large object leaves blocks partly fetched: no
 * more than TFS_REMOTE_MAX_PARTIAL of them hold a temporary cache file
 * (and a descriptor) at a time; the bytes are right either way.
 */
START_TEST(partial_blocks_are_bounded)
{
	uint64_t nb = TFS_REMOTE_MAX_PARTIAL + 8, b;
	struct tfs_remote_stats st;
	struct tfs_source s;
	char *dir = tmpdir();

	open_served(&s, nb * SRV_BLOCK, dir);
	for (b = 1; b < nb; b++)
		read_chunk1(&s, b);
	ck_assert_uint_le(count_tmp(dir), TFS_REMOTE_MAX_PARTIAL);
	ck_assert_int_eq(tfs_remote_stats(&s, &st), 0);
	ck_assert_uint_le(st.partial, TFS_REMOTE_MAX_PARTIAL);
	ck_assert_uint_eq(st.bytes_fetched, nb * SRV_CHUNK); /* + the probe */
	tfs_source_close(&s);
	ck_assert_uint_eq(count_tmp(dir), 0); /* never whole: removed */
	rm_rf(dir);
	free(dir);
}
END_TEST

/*
 * Blocks that cannot have a cache file (its directory gone: no space, no
 * descriptor do the same) are fetched into memory: once served, their
 * chunks leave it, not kept until the mount ends for a block never whole.
 */
START_TEST(partial_blocks_leave_memory)
{
	uint64_t nb = 12, b, page = (uint64_t)sysconf(_SC_PAGESIZE);
	struct tfs_remote_stats st;
	struct tfs_source s;
	char *dir = tmpdir(), cmd[600];
	unsigned char vec[SRV_CHUNK / 4096];
	unsigned resident = 0, i;

	open_served(&s, nb * SRV_BLOCK, dir);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'/*", dir);
	ck_assert_int_eq(system(cmd), 0);
	for (b = 1; b < nb; b++)
		read_chunk1(&s, b);
	/* the memfd's pages of those chunks, from the kernel */
	for (b = 1; b < nb; b++) {
		ck_assert_int_eq(
			mincore((void *)(s.data + b * SRV_BLOCK + SRV_CHUNK),
				SRV_CHUNK, vec),
			0);
		for (i = 0; i < SRV_CHUNK / page; i++)
			resident += vec[i] & 1;
	}
	ck_assert_uint_eq(resident, 0);
	ck_assert_int_eq(tfs_remote_stats(&s, &st), 0);
	ck_assert_uint_eq(st.held, 0);
	tfs_source_close(&s);
	rm_rf(dir);
	free(dir);
}
END_TEST

/* pages of [@off, +@len) of @s in memory, from the kernel */
static unsigned resident_pages(const struct tfs_source *s, uint64_t off,
			       uint64_t len)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), i;
	unsigned char vec[SRV_CHUNK / 4096];
	unsigned n = 0;

	ck_assert_uint_le(len, SRV_CHUNK);
	ck_assert_int_eq(mincore((void *)(s->data + off), len, vec), 0);
	for (i = 0; i < len / page; i++)
		n += vec[i] & 1;
	return n;
}

/*
 * A read's bytes stay in memory from its fetch to the end of its reply: a
 * drop asked meanwhile (the end of the tensor served by another thread)
 * waits for the unpin.  Punched under a reply, a daemon without root (a
 * user-mode-only userfaultfd) would copy the holes as zeros; a read still
 * waiting for the rest of its range would fetch them again.
 */
START_TEST(pinned_reads_keep_their_bytes)
{
	uint64_t off = 3 * SRV_CHUNK, i;
	struct tfs_remote_stats st;
	struct tfs_source s;

	open_served(&s, 8 * SRV_CHUNK, NULL);
	ck_assert_int_eq(
		tfs_source_fetch_in(&s, off, SRV_CHUNK, off, SRV_CHUNK), 0);
	tfs_source_drop_cache(&s, off, SRV_CHUNK); /* another thread's */
	ck_assert_uint_eq(resident_pages(&s, off, SRV_CHUNK),
			  SRV_CHUNK / sysconf(_SC_PAGESIZE));
	for (i = 0; i < SRV_CHUNK; i += 4093)
		ck_assert_uint_eq(s.data[off + i], pattern(off + i));
	ck_assert_int_eq(tfs_remote_stats(&s, &st), 0);
	ck_assert_uint_eq(st.held, 1);
	tfs_source_unpin(&s, off, SRV_CHUNK); /* the reply is done */
	ck_assert_uint_eq(resident_pages(&s, off, SRV_CHUNK), 0);
	ck_assert_int_eq(tfs_remote_stats(&s, &st), 0);
	ck_assert_uint_eq(st.held, 0);
	/* unpinned, a drop is at once; the bytes come back when asked */
	ck_assert_int_eq(
		tfs_source_fetch_in(&s, off, SRV_CHUNK, off, SRV_CHUNK), 0);
	tfs_source_unpin(&s, off, SRV_CHUNK);
	tfs_source_drop_cache(&s, off, SRV_CHUNK);
	ck_assert_uint_eq(resident_pages(&s, off, SRV_CHUNK), 0);
	ck_assert_int_eq(tfs_remote_stats(&s, &st), 0);
	ck_assert_uint_eq(st.bytes_fetched, 3 * SRV_CHUNK); /* + the probe */
	tfs_source_close(&s);
}
END_TEST

/*
 * A read of a tensor's first chunk fetches the rest of the tensor over all
 * the connections (pieces of at least 1 MiB), not one request: where a
 * server limits each connection's rate, one tensor read alone arrives
 * remote_conns times sooner.
 */
START_TEST(tensor_rest_shared_over_connections)
{
	uint64_t ext = 32 * SRV_CHUNK, i;
	struct tfs_remote_stats st;
	struct tfs_source s;

	open_served_ahead(&s, ext + SRV_CHUNK, NULL, 128u << 20);
	ck_assert_int_eq(
		tfs_source_fetch_in(&s, SRV_CHUNK, SRV_CHUNK, SRV_CHUNK, ext),
		0);
	tfs_source_unpin(&s, SRV_CHUNK, SRV_CHUNK);
	ck_assert_int_eq(tfs_source_fetch(&s, SRV_CHUNK, ext), 0);
	for (i = 0; i < ext; i += 4093)
		ck_assert_uint_eq(s.data[SRV_CHUNK + i],
				  pattern(SRV_CHUNK + i));
	ck_assert_int_eq(tfs_remote_stats(&s, &st), 0);
	/* the probe, the read, then 31 chunks as 4 x 7 + 3: eight pieces */
	ck_assert_uint_eq(st.requests, 1 + 1 + 8);
	ck_assert_uint_eq(st.bytes_fetched, ext + SRV_CHUNK);
	tfs_source_close(&s);
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
	tcase_add_test(tc, pinned_reads_keep_their_bytes);
	tcase_add_test(tc, tensor_rest_shared_over_connections);
	tcase_add_test(tc, partial_blocks_are_bounded);
	tcase_add_test(tc, partial_blocks_leave_memory);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
