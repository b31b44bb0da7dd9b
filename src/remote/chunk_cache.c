// SPDX-License-Identifier: MIT
/* The on-disk chunk cache: see chunk_cache.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <xxhash.h>

#include "remote/chunk_cache.h"
#include "core/cursor.h"
#include "core/fd_write.h"

#define CACHE_MAGIC "TFSBLK02"

struct tfs_chunk_cache {
	char *dir;  /* the whole cache */
	char *path; /* this object's directory */
	uint64_t max;
};

/* bytes the cache held as of our last look, process-wide; -1: unknown */
static pthread_mutex_t total_lock = PTHREAD_MUTEX_INITIALIZER;
static int64_t total_bytes = -1;

static void store_le(uint8_t *b, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

static int mkdir_p(const char *path)
{
	char *p = strdup(path), *s;
	int ret = 0;

	if (!p)
		return -ENOMEM;
	for (s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(p, 0700) && errno != EEXIST) {
			ret = -errno;
			break;
		}
		*s = '/';
	}
	if (!ret && mkdir(p, 0700) && errno != EEXIST)
		ret = -errno;
	free(p);
	return ret;
}

static int object_key(char hex[65], const char *url, const char *version,
		      uint64_t size)
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0, i;
	char *text;
	int n;

	n = asprintf(&text, "%s\n%s\n%llu\n" CACHE_MAGIC, url, version,
		     (unsigned long long)size);
	if (n < 0)
		return -ENOMEM;
	if (!EVP_Digest(text, (size_t)n, md, &mdlen, EVP_sha256(), NULL) ||
	    mdlen != 32) {
		free(text);
		return -EIO;
	}
	free(text);
	for (i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	return 0;
}

int tfs_chunk_cache_open(struct tfs_chunk_cache **out, const char *dir,
			 uint64_t max, const char *url, const char *version,
			 uint64_t size)
{
	struct tfs_chunk_cache *c;
	char key[65], *info;
	FILE *f;
	int ret;

	*out = NULL;
	ret = object_key(key, url, version, size);
	if (ret)
		return ret;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->max = max;
	c->dir = strdup(dir);
	if (!c->dir || asprintf(&c->path, "%s/%s", dir, key) < 0) {
		c->path = NULL;
		ret = -ENOMEM;
		goto out;
	}
	ret = mkdir_p(c->path);
	if (ret)
		goto out;
	if (asprintf(&info, "%s/info", c->path) < 0) {
		ret = -ENOMEM;
		goto out;
	}
	if (access(info, F_OK) != 0) {
		f = fopen(info, "we");
		if (f) {
			fprintf(f, "url %s\nversion %s\nsize %llu\n", url,
				version, (unsigned long long)size);
			fclose(f);
		}
	}
	free(info);
	*out = c;
	return 0;
out:
	tfs_chunk_cache_close(c);
	return ret;
}

void tfs_chunk_cache_close(struct tfs_chunk_cache *c)
{
	if (!c)
		return;
	free(c->dir);
	free(c->path);
	free(c);
}

const char *tfs_chunk_cache_path(const struct tfs_chunk_cache *c)
{
	return c->path;
}

/*
 * Map cache file @idx and check it holds [@off, @off + @len) intact: the
 * mapping (of the data, after the header) or NULL on a miss, which also
 * removes a file that is not what we wrote.  The file's inode never
 * changes once renamed into place, so what is checked is what is copied.
 */
static const uint8_t *map_block(struct tfs_chunk_cache *c, uint64_t idx,
				uint64_t off, size_t len, void **map,
				size_t *maplen)
{
	const uint8_t *hdr;
	char path[4096];
	struct stat st;
	int fd;

	*map = NULL;
	snprintf(path, sizeof(path), "%s/%016llx", c->path,
		 (unsigned long long)idx);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || (uint64_t)st.st_size != TFS_CHUNK_HEADER + len)
		goto bad;
	*maplen = (size_t)st.st_size;
	*map = mmap(NULL, *maplen, PROT_READ, MAP_SHARED | MAP_POPULATE, fd, 0);
	if (*map == MAP_FAILED) {
		*map = NULL;
		goto bad;
	}
	hdr = *map;
	if (memcmp(hdr, CACHE_MAGIC, 8) || tfs_load_le(hdr + 8, 8) != off ||
	    tfs_load_le(hdr + 16, 8) != len ||
	    XXH3_64bits(hdr + TFS_CHUNK_HEADER, len) !=
		    tfs_load_le(hdr + 24, 8)) {
		munmap(*map, *maplen);
		*map = NULL;
		goto bad;
	}
	futimens(fd, NULL); /* recently used */
	close(fd);
	return hdr + TFS_CHUNK_HEADER;
bad:
	/* not what we wrote: never serve it, drop it */
	unlink(path);
	close(fd);
	return NULL;
}

int tfs_chunk_cache_get(struct tfs_chunk_cache *c, uint64_t idx, uint64_t off,
			void *buf, size_t len)
{
	const uint8_t *data;
	size_t maplen;
	void *map;

	data = map_block(c, idx, off, len, &map, &maplen);
	if (!data)
		return -ENOENT;
	memcpy(buf, data, len);
	munmap(map, maplen);
	return 0;
}

const uint8_t *tfs_chunk_cache_map(struct tfs_chunk_cache *c, uint64_t idx,
				   uint64_t off, size_t len,
				   struct tfs_chunk_map *m)
{
	return map_block(c, idx, off, len, &m->map, &m->len);
}

void tfs_chunk_cache_unmap(struct tfs_chunk_map *m)
{
	if (m->map)
		munmap(m->map, m->len);
	m->map = NULL;
}

int tfs_chunk_cache_create(struct tfs_chunk_cache *c, uint64_t idx,
			   uint64_t len, char **tmp)
{
	static unsigned long seq;
	int fd;

	if (asprintf(tmp, "%s/%016llx.tmp.%ld.%lu", c->path,
		     (unsigned long long)idx, (long)getpid(),
		     __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED)) < 0) {
		*tmp = NULL;
		return -ENOMEM;
	}
	fd = open(*tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)(TFS_CHUNK_HEADER + len))) {
		int e = -errno;

		if (fd >= 0) {
			close(fd);
			unlink(*tmp);
		}
		free(*tmp);
		*tmp = NULL;
		return e;
	}
	return fd;
}

void tfs_chunk_cache_discard(int fd, char *tmp)
{
	if (tmp)
		unlink(tmp);
	if (fd >= 0)
		close(fd);
	free(tmp);
}

int tfs_chunk_cache_commit(struct tfs_chunk_cache *c, uint64_t idx,
			   uint64_t off, const void *data, size_t len, int fd,
			   const char *tmp)
{
	uint8_t hdr[TFS_CHUNK_HEADER];
	char path[4096];
	bool evict = false;
	int ret;

	snprintf(path, sizeof(path), "%s/%016llx", c->path,
		 (unsigned long long)idx);
	memset(hdr, 0, sizeof(hdr));
	memcpy(hdr, CACHE_MAGIC, 8);
	store_le(hdr + 8, off);
	store_le(hdr + 16, len);
	store_le(hdr + 24, XXH3_64bits(data, len));
	ret = pwrite(fd, hdr, sizeof(hdr), 0) == (ssize_t)sizeof(hdr) ? 0
								      : -EIO;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret) {
		unlink(tmp);
		return ret;
	}
	pthread_mutex_lock(&total_lock);
	if (total_bytes >= 0)
		total_bytes += (int64_t)(len + TFS_CHUNK_HEADER);
	evict = total_bytes < 0 || (uint64_t)total_bytes > c->max;
	pthread_mutex_unlock(&total_lock);
	if (evict)
		tfs_chunk_cache_evict(c->dir, c->max);
	return 0;
}

int tfs_chunk_cache_put(struct tfs_chunk_cache *c, uint64_t idx, uint64_t off,
			const void *buf, size_t len)
{
	char *tmp;
	int fd, ret;

	fd = tfs_chunk_cache_create(c, idx, len, &tmp);
	if (fd < 0)
		return fd;
	ret = lseek(fd, TFS_CHUNK_HEADER, SEEK_SET) < 0
		      ? -errno
		      : tfs_write_all(fd, buf, len);
	if (!ret)
		ret = tfs_chunk_cache_commit(c, idx, off, buf, len, fd, tmp);
	else
		unlink(tmp);
	if (close(fd) && !ret)
		ret = -EIO;
	free(tmp);
	return ret;
}

struct entry {
	struct timespec mtime;
	uint64_t size;
	char *path;
};

static int by_mtime(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return 0;
}

/* every chunk file under @dir (two levels), with its size and mtime */
static int list_chunks(const char *dir, struct entry **out, size_t *n,
		       uint64_t *total)
{
	struct entry *v = NULL, *nv;
	size_t cap = 0;
	struct dirent *o, *e;
	DIR *top, *sub;
	char path[4096];
	struct stat st;
	int ret = 0;

	*n = 0;
	*total = 0;
	top = opendir(dir);
	if (!top)
		return -errno;
	while (!ret && (o = readdir(top))) {
		if (o->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, o->d_name);
		sub = opendir(path);
		if (!sub)
			continue;
		while ((e = readdir(sub))) {
			if (strlen(e->d_name) != 16 ||
			    fstatat(dirfd(sub), e->d_name, &st, 0) ||
			    !S_ISREG(st.st_mode))
				continue;
			if (*n == cap) {
				cap = cap ? 2 * cap : 256;
				nv = realloc(v, cap * sizeof(*v));
				if (!nv) {
					ret = -ENOMEM;
					break;
				}
				v = nv;
			}
			if (asprintf(&v[*n].path, "%s/%s", path, e->d_name) <
			    0) {
				ret = -ENOMEM;
				break;
			}
			v[*n].mtime = st.st_mtim;
			v[*n].size = (uint64_t)st.st_size;
			*total += v[*n].size;
			(*n)++;
		}
		closedir(sub);
	}
	closedir(top);
	*out = v;
	return ret;
}

int tfs_chunk_cache_evict(const char *dir, uint64_t target)
{
	struct entry *v = NULL;
	uint64_t total = 0;
	size_t n = 0, i;
	int ret;

	pthread_mutex_lock(&total_lock);
	ret = list_chunks(dir, &v, &n, &total);
	if (!ret && total > target) {
		/* down to 90 %: not one eviction per chunk written */
		uint64_t goal = target / 10 * 9;

		qsort(v, n, sizeof(*v), by_mtime);
		for (i = 0; i < n && total > goal; i++)
			if (unlink(v[i].path) == 0)
				total -= v[i].size;
	}
	total_bytes = ret ? -1 : (int64_t)total;
	pthread_mutex_unlock(&total_lock);
	for (i = 0; i < n; i++)
		free(v[i].path);
	free(v);
	return ret;
}
