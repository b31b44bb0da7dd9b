// SPDX-License-Identifier: MIT
/* Diagnostics: see src/core/diag.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/diag.h"
#include "core/text.h"

void tfs_diag_clear(struct tfs_diag *d)
{
	if (d)
		memset(d, 0, sizeof(*d));
}

static int diag_vset(struct tfs_diag *d, int err, bool has_offset,
		     uint64_t offset, const char *fmt, va_list ap)
{
	char raw[TFS_DIAG_MSG_MAX * 2];
	int n;

	if (!d || d->msg[0])
		return err;
	/*
	 * Messages quote container bytes (names, dtype strings): made one
	 * printable line here, once, for every reader
	 */
	n = vsnprintf(raw, sizeof(raw), fmt, ap);
	if (n < 0)
		n = 0;
	tfs_text_safe(d->msg, sizeof(d->msg), raw,
		      tfs_text_whole(raw, (size_t)n < sizeof(raw)
						  ? (size_t)n
						  : sizeof(raw) - 1));
	d->has_offset = has_offset;
	d->offset = offset;
	d->err = err;
	return err;
}

int tfs_diag_at(struct tfs_diag *d, int err, uint64_t offset, const char *fmt,
		...)
{
	va_list ap;

	va_start(ap, fmt);
	err = diag_vset(d, err, true, offset, fmt, ap);
	va_end(ap);
	return err;
}

int tfs_diag_set(struct tfs_diag *d, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err = diag_vset(d, err, false, 0, fmt, ap);
	va_end(ap);
	return err;
}

void tfs_diag_format(const struct tfs_diag *d, char *buf, size_t len)
{
	const char *msg = d->msg[0] ? d->msg : strerror(-d->err);
	char at[48] = "";

	if (!len)
		return;
	if (d->has_offset)
		snprintf(at, sizeof(at), " (at byte offset %llu)",
			 (unsigned long long)d->offset);
	snprintf(buf, len, "%s%s%s%s%s%s", d->file, d->file[0] ? ": " : "",
		 d->format ? d->format : "", d->format ? ": " : "", msg, at);
}

int tfs_diag_vrefer(struct tfs_diag *d, int err, uint64_t offset,
		    const char *fmt, va_list ap)
{
	char why[TFS_DIAG_MSG_MAX], what[TFS_DIAG_MSG_MAX];

	if (err == -ENOMEM || !d)
		return err;
	snprintf(why, sizeof(why), "%s", d->msg);
	vsnprintf(what, sizeof(what), fmt, ap);
	tfs_diag_clear(d);
	return tfs_diag_at(d, err, offset, "%s: %s", what, why);
}

int tfs_diag_refer(struct tfs_diag *d, int err, uint64_t offset,
		   const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err = tfs_diag_vrefer(d, err, offset, fmt, ap);
	va_end(ap);
	return err;
}

int tfs_diag_oom(struct tfs_diag *d)
{
	return tfs_diag_set(d, -ENOMEM, "out of memory");
}
