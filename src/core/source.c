// SPDX-License-Identifier: MIT
/* Container sources: see include/tensorfs/source.h. */
#include <errno.h>
#include <fcntl.h>
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

int tfs_source_open(struct tfs_source *s, const char *path, struct tfs_diag *d)
{
	struct stat st;
	int ret;

	memset(s, 0, sizeof(*s));
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
	if (s->map)
		munmap(s->map, (size_t)s->size);
	if (s->fd >= 0)
		close(s->fd);
	free(s->path);
	memset(s, 0, sizeof(*s));
	s->fd = -1;
}

bool tfs_source_range_ok(const struct tfs_source *s, uint64_t off,
			 uint64_t len)
{
	return tfs_range_ok(off, len, s->size);
}

bool tfs_source_live_range_ok(const struct tfs_source *s, uint64_t off,
			      uint64_t len)
{
	struct stat st;

	if (s->fd < 0)
		return tfs_range_ok(off, len, s->size);
	if (fstat(s->fd, &st) < 0)
		return false;
	/* the mapping never grows: also stay inside what was mapped */
	return tfs_range_ok(off, len, s->size) &&
	       tfs_range_ok(off, len, (uint64_t)st.st_size);
}
