/* SPDX-License-Identifier: MIT */
/*
 * Diagnostics: why a container was refused, and where.
 *
 * Every fallible function returns 0 or -errno.  Parse failures also fill a
 * struct tfs_diag so the caller (the CLI or the daemon, the only layers that
 * print) can say which field was wrong and at which byte offset.
 *
 * Error classes used across the readers:
 *   -EBADMSG    the container is malformed (a rule of its format is broken)
 *   -ENOTSUP    the container is well formed but uses something not supported
 *   -ENOEXEC    no reader recognises the container
 *   -E2BIG      a declared size or count exceeds a documented limit
 *   -EIO, ...   the operating system failed (open, stat, mmap)
 */
#ifndef TENSORFS_DIAG_H
#define TENSORFS_DIAG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "core/abi.h"

#define TFS_DIAG_MSG_MAX 320
#define TFS_DIAG_FILE_MAX 256

struct tfs_diag {
	const char *format; /* short name of the reader that failed, or NULL */
	/* the file of a directory or of several that failed ("" : the one) */
	char file[TFS_DIAG_FILE_MAX];
	char msg[TFS_DIAG_MSG_MAX];
	uint64_t offset; /* absolute byte offset in the container */
	bool has_offset;
	int err; /* the -errno that was returned */
};

TFS_PRIVATE void tfs_diag_clear(struct tfs_diag *d);

/*
 * The public entry points that take a diagnostic (tfs_source_open,
 * tfs_image_open, tfs_image_load...) clear it first.
 *
 * Record a failure at @offset and return @err (a negative errno), so readers
 * can write "return tfs_diag_at(d, -EBADMSG, off, "dtype: unknown value %u",
 * v);".  @d may be NULL.  The first failure recorded wins: a later call does
 * not overwrite a message that is already set.
 */
int tfs_diag_at(struct tfs_diag *d, int err, uint64_t offset, const char *fmt,
		...) __attribute__((format(printf, 4, 5)));

/* The same without a byte offset (for failures that have none). */
int tfs_diag_set(struct tfs_diag *d, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Say again, at @offset and after "FMT: ", the failure @d holds: what a
 * reader does when something it opened for a field (a companion file)
 * failed, so the message names that field.  Returns @err; -ENOMEM passes
 * as it is ("out of memory" stays the message).
 */
int tfs_diag_refer(struct tfs_diag *d, int err, uint64_t offset,
		   const char *fmt, ...) __attribute__((format(printf, 4, 5)));
int tfs_diag_vrefer(struct tfs_diag *d, int err, uint64_t offset,
		    const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));

/* Record "out of memory" and return -ENOMEM: the one OOM diagnostic. */
int tfs_diag_oom(struct tfs_diag *d);

/*
 * Write "FILE: FORMAT: MESSAGE (at byte offset N)" into @buf (each part
 * when known).  Never fails; the
 * text is truncated to @len.
 */
TFS_PRIVATE void tfs_diag_format(const struct tfs_diag *d, char *buf,
				 size_t len);

#endif
