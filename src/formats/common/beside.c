// SPDX-License-Identifier: MIT
/* The file beside a container, by its stem (beside.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/builder.h"
#include "core/diag.h"
#include "core/source.h"
#include "formats/common/beside.h"

int tfs_name_beside(const struct tfs_source *src, const char *suffix, char *out,
		    size_t len, const char *what, struct tfs_diag *d)
{
	const char *base = strrchr(src->path, '/'), *dot;
	size_t n, s = strlen(suffix);

	base = base ? base + 1 : src->path;
	dot = strrchr(base, '.');
	n = dot && dot != base ? (size_t)(dot - base) : strlen(base);
	if (n + s + 1 > len)
		return tfs_diag_set(d, -ENAMETOOLONG,
				    "%s name is too long for its %s", what,
				    suffix);
	memcpy(out, base, n);
	memcpy(out + n, suffix, s + 1);
	return 0;
}

int tfs_open_beside(struct tfs_builder *b, const char *name, const char *what,
		    uint32_t *source, char *why, size_t why_len,
		    const char **unreadable, struct tfs_diag *d)
{
	int ret = tfs_builder_open_companion(b, name, source, d);

	if (ret != -ENOENT)
		return ret;
	snprintf(why, why_len, "%s: %.200s", what, d->msg);
	tfs_diag_clear(d);
	*unreadable = why;
	return 0;
}

int tfs_open_weights_beside(struct tfs_builder *b, const struct tfs_source *src,
			    const char *suffix, const char *container,
			    char *name, size_t name_len, uint32_t *source,
			    const uint8_t **data, uint64_t *size, char *why,
			    const char **unreadable, struct tfs_diag *d)
{
	const struct tfs_source *w;
	char whose[64];
	int ret;

	if (!src->path) {
		snprintf(why, TFS_DIAG_MSG_MAX,
			 "weights: %s was read from memory, so its %s is not "
			 "found",
			 container, suffix);
		*unreadable = why;
		snprintf(name, name_len, "model%s", suffix);
		return 0;
	}
	snprintf(whose, sizeof(whose), "weights: %s's", container);
	ret = tfs_name_beside(src, suffix, name, name_len, whose, d);
	ret = ret ? ret
		  : tfs_open_beside(b, name, "weights", source, why,
				    TFS_DIAG_MSG_MAX, unreadable, d);
	if (ret || *unreadable)
		return ret;
	w = tfs_builder_source(b, *source);
	if (data)
		*data = w->data;
	*size = w->size;
	return 0;
}
