// SPDX-License-Identifier: MIT
/*
 * The mapping of a remote source (a memfd the size of the object): whole
 * pages installed as they arrive (UFFDIO_COPY, else pwrite), and the
 * userfaultfd's thread, which fetches a page an access found missing and
 * wakes it (or, when it cannot be had, makes it SIGBUS, or zeros that the
 * library reports as the failure).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "remote/remote_i.h"

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

void tfs_remote_wake_range(struct remote *r, uint64_t off, uint64_t len)
{
	struct uffdio_range rg;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t end = (off + len + page - 1) & ~(page - 1);

	if (r->uffd < 0 || !r->map)
		return;
	off &= ~(page - 1);
	rg.start = (uint64_t)(uintptr_t)(r->map + off);
	rg.len = end - off;
	ioctl(r->uffd, UFFDIO_WAKE, &rg);
}

int tfs_remote_pwrite_all(int fd, const uint8_t *p, uint64_t len, uint64_t off)
{
	ssize_t n;

	while (len) {
		n = pwrite(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EIO;
		p += n;
		len -= (uint64_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

/*
 * Whole pages [@off, @off + @len) of the object into the memfd (the last
 * page of the object may be short: @p then holds a whole page).  With a
 * userfaultfd, UFFDIO_COPY installs each page at once, taking no inode
 * lock (parallel pwrites into one memfd spin on it); a page there already
 * (a retried transfer) and the sources without one take pwrite.
 */
int tfs_remote_put_pages(const struct remote *r, const uint8_t *p, uint64_t len,
			 uint64_t off)
{
	struct uffdio_copy uc;
	int tries = 0;

	while (r->uffd >= 0 && len && tries++ < 100) {
		uc.dst = (uint64_t)(uintptr_t)(r->map + off);
		uc.src = (uint64_t)(uintptr_t)p;
		uc.len = (len + r->page - 1) / r->page * r->page;
		uc.mode = UFFDIO_COPY_MODE_DONTWAKE;
		uc.copy = 0;
		if (ioctl(r->uffd, UFFDIO_COPY, &uc) == 0)
			return 0;
		/* not registered: a cache file is mapped there, same bytes */
		if (uc.copy <= 0 && errno == ENOENT)
			return 0;
		if (uc.copy <= 0 && errno != EAGAIN)
			break;
		if (uc.copy > 0) {
			if ((uint64_t)uc.copy >= len)
				return 0;
			p += uc.copy;
			off += (uint64_t)uc.copy;
			len -= (uint64_t)uc.copy;
		}
	}
	if (off + len > r->size)
		len = r->size - off;
	return tfs_remote_pwrite_all(r->memfd, p, len, off);
}

static void poison(struct remote *r, uint64_t page_off)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);

	/* past the end of an empty file: the access gets SIGBUS */
	mmap(r->map + page_off, (size_t)page, PROT_READ, MAP_SHARED | MAP_FIXED,
	     r->poison_fd, 0);
}

/* library mode: a zero page there, and the failure counted */
static void zero_fill(struct remote *r, uint64_t page_off, int err)
{
	struct uffdio_zeropage z;

	tfs_remote_fault_failed(r, page_off, err);
	memset(&z, 0, sizeof(z));
	z.range.start = (uint64_t)(uintptr_t)(r->map + page_off);
	z.range.len = r->page;
	z.mode = UFFDIO_ZEROPAGE_MODE_DONTWAKE;
	if (ioctl(r->uffd, UFFDIO_ZEROPAGE, &z) && errno != EEXIST)
		poison(r, page_off); /* no other way out: SIGBUS */
}

static void *fault_loop(void *arg)
{
	struct remote *r = arg;
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	struct pollfd pf[2] = {{.fd = r->uffd, .events = POLLIN},
			       {.fd = r->stop_pipe[0], .events = POLLIN}};
	struct uffd_msg msg;
	uint64_t off;
	ssize_t n;
	int ret;

	pthread_mutex_lock(&r->lock);
	r->fault_ready = true;
	pthread_cond_broadcast(&r->done);
	pthread_mutex_unlock(&r->lock);
	for (;;) {
		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			break;
		if (pf[1].revents)
			break;
		n = read(r->uffd, &msg, sizeof(msg));
		if (n != sizeof(msg) || msg.event != UFFD_EVENT_PAGEFAULT)
			continue;
		off = (msg.arg.pagefault.address -
		       (uint64_t)(uintptr_t)r->map) &
		      ~(page - 1);
		ret = off < r->size ? tfs_remote_fetch(r, off, 1, false, 0,
						       UINT64_MAX, false)
				    : -EIO;
		if (ret && !tfs_remote_is_mounted()) {
			/* loading the container: the command cannot go on
			 * (the program's log says why: the library has none) */
			tfs_remote_log(r, "%s: cannot fetch: %s", r->shown,
				       strerror(-ret));
			_exit(4);
		}
		if (ret && tfs_remote_fails_as_zeros())
			zero_fill(r, off, ret);
		else if (ret)
			poison(r, off);
		tfs_remote_wake_range(r, off, page);
	}
	return NULL;
}

/*
 * Register the mapping with the userfaultfd, but for the blocks a cache
 * file is mapped on (a file mapping cannot be registered; its pages are
 * all there).  0 or -1 with errno.
 */
static int register_memfd(struct remote *r)
{
	struct uffdio_register reg;
	uint64_t c, e, end;

	for (c = 0; c < r->nchunks; c = e) {
		if (tfs_remote_file_backed(r, c)) {
			e = c + 1;
			continue;
		}
		for (e = c; e < r->nchunks && !tfs_remote_file_backed(r, e);
		     e++)
			;
		end = e >= r->nchunks ? r->maplen : chunk_off(e);
		memset(&reg, 0, sizeof(reg));
		reg.range.start = (uint64_t)(uintptr_t)(r->map + chunk_off(c));
		reg.range.len = end - chunk_off(c);
		reg.mode = UFFDIO_REGISTER_MODE_MISSING;
		if (ioctl(r->uffd, UFFDIO_REGISTER, &reg))
			return -1;
	}
	return 0;
}

int tfs_remote_start_uffd(struct remote *r)
{
	struct uffdio_api api = {.api = UFFD_API};

	r->uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (r->uffd < 0 && errno == EPERM)
		/* unprivileged: our own faults only (docs/remote.md) */
		r->uffd = (int)syscall(SYS_userfaultfd,
				       O_CLOEXEC | O_NONBLOCK |
					       UFFD_USER_MODE_ONLY);
	if (r->uffd < 0)
		return -errno;
	if (ioctl(r->uffd, UFFDIO_API, &api) || register_memfd(r) ||
	    pipe2(r->stop_pipe, O_CLOEXEC)) {
		int e = -errno;

		close(r->uffd);
		r->uffd = -1;
		return e;
	}
	r->fault_ready = false;
	if (pthread_create(&r->fault_thread, NULL, fault_loop, r)) {
		close(r->stop_pipe[0]);
		close(r->stop_pipe[1]);
		close(r->uffd);
		r->uffd = -1;
		return -EAGAIN;
	}
	r->fault_running = true;
	return 0;
}
