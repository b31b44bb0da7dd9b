// SPDX-License-Identifier: MIT
/* Writing a whole buffer (fd_write.h). */
#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include "core/fd_write.h"

int tfs_write_all(int fd, const void *p, size_t len)
{
	const uint8_t *b = p;
	ssize_t n;

	while (len) {
		n = write(fd, b, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		b += n;
		len -= (size_t)n;
	}
	return 0;
}
