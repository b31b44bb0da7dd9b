/* SPDX-License-Identifier: MIT */
/*
 * Writing a whole buffer to a file descriptor: `tensorfs cat` to stdout,
 * a remote chunk into the cache.
 */
#ifndef TFS_CORE_FD_WRITE_H
#define TFS_CORE_FD_WRITE_H

#include <stddef.h>

#include "core/abi.h"

/*
 * @len bytes of @p written to @fd, again after a short write or EINTR:
 * 0, or -errno (-EIO when write() writes nothing).
 */
TFS_PRIVATE int tfs_write_all(int fd, const void *p, size_t len);

#endif
