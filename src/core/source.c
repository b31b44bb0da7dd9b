// SPDX-License-Identifier: MIT
/* Container sources: see src/core/source.h. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/openat2.h>

#include "core/checked.h"
#include "codec/codec.h"
#include "core/diag.h"
#include "core/source.h"

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

bool tfs_source_name_ends(const struct tfs_source *src, const char *suffix)
{
	size_t n, k = strlen(suffix);

	if (!src->path)
		return false;
	n = strlen(src->path);
	return n >= k && memcmp(src->path + n - k, suffix, k) == 0;
}

/*
 * The second, MADV_RANDOM mapping of what @s maps (struct tfs_source,
 * serve_map).  Without it reads are served from the first mapping, as
 * before: only the page cache's footprint differs.
 */
static void map_serve(struct tfs_source *s)
{
	void *m = mmap(NULL, s->map_len, PROT_READ, MAP_SHARED, s->fd,
		       (off_t)s->map_off);

	if (m == MAP_FAILED)
		return;
	if (madvise(m, s->map_len, MADV_RANDOM) < 0) {
		munmap(m, s->map_len);
		return;
	}
	s->serve_map = m;
}

/* map the regular file open on @fd (taken) as @s, named @path */
static int map_fd(struct tfs_source *s, int fd, const char *path,
		  struct tfs_diag *d)
{
	struct stat st;
	int ret;

	s->fd = fd;
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
		s->map_len = (size_t)s->size;
		map_serve(s);
	}
	s->path = strdup(path);
	if (!s->path) {
		ret = -ENOMEM;
		goto out_unmap;
	}
	return 0;

out_unmap:
	if (s->map)
		munmap(s->map, s->map_len);
out_close:
	close(s->fd);
	memset(s, 0, sizeof(*s));
	s->fd = -1;
	return ret;
}

int tfs_source_open(struct tfs_source *s, const char *path, struct tfs_diag *d)
{
	int fd;

	tfs_diag_clear(d);
	memset(s, 0, sizeof(*s));
	if (tfs_source_is_url(path)) {
		s->fd = -1;
		if (url_opener)
			return url_opener(s, path, d);
		return tfs_diag_set(d, -EPROTONOSUPPORT,
				    "URLs need a tensorfs built with libcurl");
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		s->fd = -1;
		return tfs_diag_set(d, -errno, "cannot open: %s",
				    strerror(errno));
	}
	return map_fd(s, fd, path, d);
}

/* a companion's name stays inside the container's directory */
static int companion_name_ok(const char *name, struct tfs_diag *d)
{
	const char *c = name;
	size_t n;

	if (!*name || strlen(name) > 4095)
		return tfs_diag_set(d, -EPERM,
				    "companion file '%s': not a "
				    "file name",
				    name);
	if (*name == '/' || strchr(name, '\\'))
		return tfs_diag_set(d, -EPERM,
				    "companion file '%s': refused: an absolute "
				    "name or a backslash could leave the "
				    "model's directory",
				    name);
	for (;;) {
		n = strcspn(c, "/");
		if (n == 0 || (n == 2 && c[0] == '.' && c[1] == '.'))
			return tfs_diag_set(d, -EPERM,
					    "companion file '%s': refused: an "
					    "empty or '..' component",
					    name);
		if (!c[n])
			return 0;
		c += n + 1;
	}
}

/* openat2(@dirfd, @name, RESOLVE_BENEATH): no way out of the directory */
static int open_beneath(int dirfd, const char *name)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC | O_NOCTTY,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, dirfd, name, &how, sizeof(how));

	return fd < 0 ? -errno : (int)fd;
}

int tfs_source_open_companion(struct tfs_source *s, const struct tfs_source *of,
			      const char *name, struct tfs_diag *d)
{
	char *dir = NULL, *url = NULL;
	const char *slash;
	int ret, dirfd, fd;

	tfs_diag_clear(d);
	memset(s, 0, sizeof(*s));
	s->fd = -1;
	ret = companion_name_ok(name, d);
	if (ret)
		return ret;
	if (!of->path)
		return tfs_diag_set(d, -ENOENT,
				    "companion file '%s': the container has "
				    "no directory",
				    name);
	slash = strrchr(of->path, '/');
	if (tfs_source_is_url(of->path)) {
		/* beside the object: the URL's path up to its last '/' */
		size_t q = strcspn(of->path, "?#");

		while (slash && (size_t)(slash - of->path) > q)
			slash = memrchr(of->path, '/',
					(size_t)(slash - of->path));
		if (asprintf(&url, "%.*s/%s", (int)(slash - of->path), of->path,
			     name) < 0)
			return tfs_diag_oom(d);
		ret = tfs_source_open(s, url, d);
		free(url);
		return ret;
	}
	dir = slash ? strndup(of->path, (size_t)(slash - of->path) + 1)
		    : strdup(".");
	if (!dir)
		return tfs_diag_oom(d);
	dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (dirfd < 0)
		return tfs_diag_set(d, -errno,
				    "companion file '%s': cannot open its "
				    "directory: %s",
				    name, strerror(errno));
	fd = open_beneath(dirfd, name);
	close(dirfd);
	if (fd == -EXDEV || fd == -ELOOP)
		return tfs_diag_set(d, -EPERM,
				    "companion file '%s': refused: it leads "
				    "outside the model's directory",
				    name);
	if (fd < 0)
		return tfs_diag_set(d, fd,
				    "companion file '%s': cannot open: "
				    "%s",
				    name, strerror(-fd));
	if (asprintf(&url, "%.*s%s", slash ? (int)(slash - of->path) + 1 : 0,
		     of->path, name) < 0) {
		close(fd);
		return tfs_diag_oom(d);
	}
	ret = map_fd(s, fd, url, d);
	free(url);
	return ret;
}

/*
 * A slice of a source with ops (a remote object): the root's ops and
 * object, borrowed, and where the slice starts in the root.  A slice of
 * such a slice points at the same root (its @at adds up), so a read never
 * goes through more than one hop.
 */
struct window {
	const struct tfs_source_ops *ops;
	void *impl;
	uint64_t at, size;
};

static int window_fetch(void *impl, uint64_t off, uint64_t len)
{
	struct window *w = impl;

	if (!tfs_range_ok(off, len, w->size))
		return -EIO;
	return w->ops->fetch(w->impl, w->at + off, len);
}

static void window_drop(void *impl, uint64_t off, uint64_t len)
{
	struct window *w = impl;

	if (tfs_range_ok(off, len, w->size))
		w->ops->drop(w->impl, w->at + off, len);
}

static int window_fetch_in(void *impl, uint64_t off, uint64_t len,
			   uint64_t ext_off, uint64_t ext_len)
{
	struct window *w = impl;

	if (!tfs_range_ok(off, len, w->size))
		return -EIO;
	if (!w->ops->fetch_in)
		return w->ops->fetch(w->impl, w->at + off, len);
	/* the tensor's extent lies in the slice too: the reader checked */
	return w->ops->fetch_in(w->impl, w->at + off, len, w->at + ext_off,
				ext_len);
}

static void window_unpin(void *impl, uint64_t off, uint64_t len)
{
	struct window *w = impl;

	if (w->ops->fetch_in && w->ops->unpin &&
	    tfs_range_ok(off, len, w->size))
		w->ops->unpin(w->impl, w->at + off, len);
}

static void window_close(void *impl)
{
	free(impl); /* the root is borrowed: its owner closes it */
}

static const struct tfs_source_ops window_ops = {
	.fetch = window_fetch,
	.drop = window_drop,
	.fetch_in = window_fetch_in,
	.close = window_close,
	.unpin = window_unpin,
};

/* @s, a window of @parent (which has ops) at @off: borrows the root */
static int slice_of_ops(struct tfs_source *s, const struct tfs_source *parent,
			uint64_t off, uint64_t len)
{
	const struct window *pw = parent->impl;
	struct window *w = malloc(sizeof(*w));

	if (!w)
		return -ENOMEM;
	*w = (struct window){parent->ops, parent->impl, off, len};
	if (parent->ops == &window_ops)
		*w = (struct window){pw->ops, pw->impl, pw->at + off, len};
	s->ops = &window_ops;
	s->impl = w;
	s->data = len ? parent->data + off : NULL;
	return 0;
}

int tfs_source_slice(struct tfs_source *s, const struct tfs_source *parent,
		     uint64_t off, uint64_t len, const char *name,
		     struct tfs_diag *d)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), at, delta;

	tfs_diag_clear(d);
	memset(s, 0, sizeof(*s));
	s->fd = -1;
	if (!tfs_source_range_ok(parent, off, len))
		return tfs_diag_set(d, -EBADMSG,
				    "%s: bytes [%llu, +%llu) are not inside "
				    "the file",
				    name, (unsigned long long)off,
				    (unsigned long long)len);
	if (asprintf(&s->path, "%s/%s", parent->path ? parent->path : "",
		     name) < 0) {
		s->path = NULL;
		return tfs_diag_oom(d);
	}
	s->size = len;
	s->mtime = parent->mtime;
	s->base = parent->base + off;
	if (parent->ops) { /* remote: a window onto the parent's fetches */
		if (slice_of_ops(s, parent, off, len)) {
			tfs_source_close(s);
			return tfs_diag_oom(d);
		}
		return 0;
	}
	if (parent->fd < 0 || !len) { /* memory, or nothing to map */
		s->data = len ? parent->data + off : NULL;
		return 0;
	}
	/*
	 * A mapping of its own (so the parent may be closed first): its page
	 * cache footprint, drops and read-ahead stay the file's, aligned by
	 * the slice's @base
	 */
	s->fd = fcntl(parent->fd, F_DUPFD_CLOEXEC, 0);
	if (s->fd < 0)
		goto fail;
	at = s->base & ~(page - 1);
	delta = s->base - at;
	s->map = mmap(NULL, (size_t)(len + delta), PROT_READ, MAP_SHARED, s->fd,
		      (off_t)at);
	if (s->map == MAP_FAILED) {
		s->map = NULL;
		goto fail;
	}
	s->map_len = (size_t)(len + delta);
	s->map_off = at;
	s->data = (const uint8_t *)s->map + delta;
	map_serve(s);
	return 0;
fail:
	tfs_diag_set(d, -errno, "%s: cannot map: %s", name, strerror(errno));
	tfs_source_close(s);
	return d ? d->err : -EIO;
}

void tfs_source_close(struct tfs_source *s)
{
	if (s->ops)
		s->ops->close(s->impl);
	if (s->serve_map)
		munmap(s->serve_map, s->map_len);
	if (s->map)
		munmap(s->map, s->map_len);
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
	/* whole pages of the file only: the neighbours may belong to other
	 * tensors (a slice starts anywhere in its file) */
	first = (s->base + off + page - 1) & ~(page - 1);
	end = (s->base + off + len) & ~(page - 1);
	if (end <= first)
		return;
	/* our own mappings pin the pages: unmap them here first */
	madvise((uint8_t *)s->map + (first - s->map_off), (size_t)(end - first),
		MADV_DONTNEED);
	if (s->serve_map)
		madvise((uint8_t *)s->serve_map + (first - s->map_off),
			(size_t)(end - first), MADV_DONTNEED);
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
	       tfs_range_ok(s->base + off, len, (uint64_t)st.st_size);
}

/*
 * How far tfs_source_serve() reads ahead of a sequential reader, in steps
 * of one window: when a read crosses into window k, windows k + 1 and
 * k + 2 are asked for (clipped to the tensor), so the disk stays ahead
 * of the kernel's readahead of the mount's file (1 MiB by default).
 */
#define SERVE_WINDOW (1u << 20)

const uint8_t *tfs_source_serve(const struct tfs_source *s, uint64_t off,
				size_t len, uint64_t limit)
{
	const uint8_t *base;
	uint64_t end = off + len, to = end;

	if (!s->serve_map)
		return s->data + off;
	base = (const uint8_t *)s->serve_map +
	       (s->data - (const uint8_t *)s->map);
	if (len && (off == 0 || off / SERVE_WINDOW != (end - 1) / SERVE_WINDOW))
		to = ((end - 1) / SERVE_WINDOW + 3) * SERVE_WINDOW;
	if (to > limit)
		to = limit;
	/*
	 * The pages of this read and those ahead, without waiting: already
	 * cached pages cost a lookup each, missing ones one large read
	 * instead of a fault per page (the mapping is MADV_RANDOM)
	 */
	if (to > off)
		posix_fadvise(s->fd, (off_t)(s->base + off), (off_t)(to - off),
			      POSIX_FADV_WILLNEED);
	return base + off;
}

int tfs_source_fetch(const struct tfs_source *s, uint64_t off, uint64_t len)
{
	if (s->ops)
		return s->ops->fetch(s->impl, off, len);
	return tfs_source_live_range_ok(s, off, len) ? 0 : -EIO;
}

int tfs_source_fetch_in(const struct tfs_source *s, uint64_t off, uint64_t len,
			uint64_t ext_off, uint64_t ext_len)
{
	if (s->ops && s->ops->fetch_in)
		return s->ops->fetch_in(s->impl, off, len, ext_off, ext_len);
	return tfs_source_fetch(s, off, len);
}

void tfs_source_unpin(const struct tfs_source *s, uint64_t off, uint64_t len)
{
	if (s->ops && s->ops->fetch_in && s->ops->unpin)
		s->ops->unpin(s->impl, off, len);
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
	if (sigaction(SIGBUS, &sa, NULL) < 0)
		return -errno;
	tfs_codec_set_guard(tfs_source_guard); /* the decoders' steps */
	return 0;
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
