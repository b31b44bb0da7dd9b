// SPDX-License-Identifier: MIT
/* Container sources: see include/tensorfs/source.h. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tensorfs/checked.h"
#include "tensorfs/diag.h"
#include "tensorfs/source.h"

void tfs_source_init_memory(struct tfs_source *s, const void *data,
			    uint64_t size)
{
	memset(s, 0, sizeof(*s));
	s->data = size ? data : NULL;
	s->size = size;
	s->fd = -1;
}

static tfs_source_url_opener url_opener;

void tfs_source_set_url_opener(tfs_source_url_opener open)
{
	url_opener = open;
}

static tfs_source_url_index_finder url_index_finder;

void tfs_source_set_url_index_finder(tfs_source_url_index_finder find)
{
	url_index_finder = find;
}

int tfs_source_url_index(const char *url, char **dir, char **index,
			 struct tfs_diag *d)
{
	return url_index_finder ? url_index_finder(url, dir, index, d) : 0;
}

bool tfs_source_is_url(const char *path)
{
	size_t n = strspn(path, "abcdefghijklmnopqrstuvwxyz0123456789+.-");

	return n && strncmp(path + n, "://", 3) == 0;
}

int tfs_source_open(struct tfs_source *s, const char *path, struct tfs_diag *d)
{
	struct stat st;
	int ret;

	tfs_diag_clear(d);
	memset(s, 0, sizeof(*s));
	if (tfs_source_is_url(path)) {
		s->fd = -1;
		if (url_opener)
			return url_opener(s, path, d);
		return tfs_diag_set(d, -EPROTONOSUPPORT,
				    "URLs need a tensorfs built with libcurl");
	}
	s->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (s->fd < 0)
		return tfs_diag_set(d, -errno, "cannot open: %s",
				    strerror(errno));
	if (fstat(s->fd, &st) < 0) {
		ret = tfs_diag_set(d, -errno, "cannot stat: %s",
				   strerror(errno));
		goto out_close;
	}
	if (S_ISDIR(st.st_mode)) {
		ret = tfs_diag_set(d, -EISDIR, "is a directory");
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = tfs_diag_set(d, -EINVAL, "not a regular file");
		goto out_close;
	}
	s->size = (uint64_t)st.st_size;
	s->mtime = st.st_mtim;
	if (s->size > SIZE_MAX) {
		ret = tfs_diag_set(d, -EFBIG, "file too large to map");
		goto out_close;
	}
	if (s->size) {
		s->map = mmap(NULL, (size_t)s->size, PROT_READ, MAP_SHARED,
			      s->fd, 0);
		if (s->map == MAP_FAILED) {
			s->map = NULL;
			ret = tfs_diag_set(d, -errno, "cannot map: %s",
					   strerror(errno));
			goto out_close;
		}
		s->data = s->map;
	}
	s->path = strdup(path);
	if (!s->path) {
		ret = -ENOMEM;
		goto out_unmap;
	}
	return 0;

out_unmap:
	if (s->map)
		munmap(s->map, (size_t)s->size);
out_close:
	close(s->fd);
	memset(s, 0, sizeof(*s));
	s->fd = -1;
	return ret;
}

void tfs_source_close(struct tfs_source *s)
{
	if (s->ops)
		s->ops->close(s->impl);
	if (s->map)
		munmap(s->map, (size_t)s->size);
	if (s->fd >= 0)
		close(s->fd);
	free(s->path);
	memset(s, 0, sizeof(*s));
	s->fd = -1;
}

void tfs_source_drop_cache(const struct tfs_source *s, uint64_t off,
			   uint64_t len)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), first, end;

	if (s->ops) {
		s->ops->drop(s->impl, off, len);
		return;
	}
	if (!s->map || s->fd < 0 || !tfs_source_range_ok(s, off, len))
		return;
	/* whole pages only: the neighbours may belong to other tensors */
	first = (off + page - 1) & ~(page - 1);
	end = (off + len) & ~(page - 1);
	if (end <= first)
		return;
	/* our own mapping pins the pages: unmap them here first */
	madvise((uint8_t *)s->map + first, (size_t)(end - first),
		MADV_DONTNEED);
	posix_fadvise(s->fd, (off_t)first, (off_t)(end - first),
		      POSIX_FADV_DONTNEED);
}

bool tfs_source_range_ok(const struct tfs_source *s, uint64_t off, uint64_t len)
{
	return tfs_range_ok(off, len, s->size);
}

bool tfs_source_live_range_ok(const struct tfs_source *s, uint64_t off,
			      uint64_t len)
{
	struct stat st;

	if (s->ops)
		return s->ops->fetch(s->impl, off, len) == 0;
	if (s->fd < 0)
		return tfs_range_ok(off, len, s->size);
	if (fstat(s->fd, &st) < 0)
		return false;
	/* the mapping never grows: also stay inside what was mapped */
	return tfs_range_ok(off, len, s->size) &&
	       tfs_range_ok(off, len, (uint64_t)st.st_size);
}

int tfs_source_fetch(const struct tfs_source *s, uint64_t off, uint64_t len)
{
	if (s->ops)
		return s->ops->fetch(s->impl, off, len);
	return tfs_source_live_range_ok(s, off, len) ? 0 : -EIO;
}

/* ---- SIGBUS guard ---------------------------------------------------------*/

/* the innermost guard of this thread, or NULL */
static _Thread_local sigjmp_buf *guard_jmp;

static void on_sigbus(int sig)
{
	if (guard_jmp)
		siglongjmp(*guard_jmp, 1);
	/* not ours to handle: die of it, as without the handler */
	signal(sig, SIG_DFL);
	raise(sig);
}

int tfs_source_catch_sigbus(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigbus;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_NODEFER;
	return sigaction(SIGBUS, &sa, NULL) < 0 ? -errno : 0;
}

int tfs_source_guard(int (*fn)(void *arg), void *arg)
{
	sigjmp_buf jb, *outer = guard_jmp;
	int ret;

	if (sigsetjmp(jb, 1)) {
		guard_jmp = outer;
		return -EFAULT;
	}
	guard_jmp = &jb;
	ret = fn(arg);
	guard_jmp = outer;
	return ret;
}
