// SPDX-License-Identifier: MIT
/*
 * Concurrent readers against a mount: THREADS threads each do READS preads
 * of random offset and size on random files of the list, and compare every
 * byte with the same range read from the container.  Bounded in count; the
 * seed is fixed so a failure can be replayed.
 * Usage: stress_reader THREADS READS CONTAINER MOUNTED_FILE:OFFSET:SIZE...
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct file {
	const char *path;
	uint64_t offset, size;
};

static struct file *files;
static int nfiles, reads, container_fd;
static int failures;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *reader(void *arg)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull * ((uintptr_t)arg + 1);
	char *a = malloc(1 << 20), *b = malloc(1 << 20);
	int *fds = calloc((size_t)nfiles, sizeof(int));
	int i, bad = 0;

	for (i = 0; i < nfiles; i++) {
		fds[i] = open(files[i].path, O_RDONLY);
		if (fds[i] < 0) {
			perror(files[i].path);
			bad++;
			goto out;
		}
	}
	for (i = 0; i < reads; i++) {
		struct file *f;
		uint64_t off, len;
		ssize_t got, want;
		int k = (int)(next_rand(&seed) % (uint64_t)nfiles);

		f = &files[k];
		off = next_rand(&seed) % (f->size + 64);
		len = 1 + next_rand(&seed) %
				  ((next_rand(&seed) & 1) ? 4096 : (1 << 20));
		got = pread(fds[k], a, len, (off_t)off);
		want = off >= f->size
			       ? 0
			       : (ssize_t)(len < f->size - off ? len
							       : f->size - off);
		if (want && pread(container_fd, b, (size_t)want,
				  (off_t)(f->offset + off)) != want) {
			bad++;
			continue;
		}
		if (got != want || memcmp(a, b, (size_t)want) != 0) {
			fprintf(stderr,
				"mismatch: %s off %llu len %llu: got %zd want "
				"%zd (errno %d)\n",
				f->path, (unsigned long long)off,
				(unsigned long long)len, got, want, errno);
			bad++;
		}
	}
out:
	for (i = 0; i < nfiles; i++)
		if (fds[i] > 0)
			close(fds[i]);
	free(fds);
	free(a);
	free(b);
	pthread_mutex_lock(&lock);
	failures += bad;
	pthread_mutex_unlock(&lock);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t *t;
	int threads, i;

	if (argc < 5)
		return 2;
	threads = atoi(argv[1]);
	reads = atoi(argv[2]);
	container_fd = open(argv[3], O_RDONLY);
	if (container_fd < 0)
		return 2;
	nfiles = argc - 4;
	files = calloc((size_t)nfiles, sizeof(*files));
	for (i = 0; i < nfiles; i++) {
		char *s = strdup(argv[4 + i]), *c2 = strrchr(s, ':'), *c1;

		*c2 = '\0';
		c1 = strrchr(s, ':');
		*c1 = '\0';
		files[i].path = s;
		files[i].offset = strtoull(c1 + 1, NULL, 10);
		files[i].size = strtoull(c2 + 1, NULL, 10);
	}
	t = calloc((size_t)threads, sizeof(*t));
	for (i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, reader, (void *)(uintptr_t)i);
	for (i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	printf("%d threads x %d reads over %d files: %d failures\n", threads,
	       reads, nfiles, failures);
	return failures ? 1 : 0;
}
