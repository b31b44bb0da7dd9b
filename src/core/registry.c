// SPDX-License-Identifier: MIT
/*
 * The format registry: every reader, in probe order (cheap, specific magics
 * first; formats without a magic last; the list is in meson.build).  A
 * reader's probe also claims the variants of its format it refuses (a
 * damaged archive, an unsupported version), so the user gets that
 * reader's reason rather than "not a container format".
 */
#include <stdlib.h>
#include <string.h>

#include "formats.h" /* TFS_FORMAT_LIST, generated from meson.build */
#include "core/format.h"
#include "core/source.h"

#define X(name) extern const struct tfs_format tfs_format_##name;
TFS_FORMAT_LIST
#undef X

#define X(name) &tfs_format_##name,
const struct tfs_format *const tfs_formats[] = {TFS_FORMAT_LIST NULL};
#undef X

const struct tfs_format *tfs_format_detect(const struct tfs_source *src)
{
	const struct tfs_format *best = NULL;
	int conf, best_conf = 0;
	unsigned i;

	for (i = 0; tfs_formats[i]; i++) {
		conf = tfs_formats[i]->probe(src);
		if (conf > best_conf) {
			best = tfs_formats[i];
			best_conf = conf;
		}
	}
	return best;
}

const struct tfs_format *tfs_format_by_index(const char *name)
{
	const struct tfs_format *best = NULL;
	size_t nl = strlen(name), sl;
	unsigned i;

	for (i = 0; tfs_formats[i]; i++) {
		if (!tfs_formats[i]->index_suffix)
			continue;
		sl = strlen(tfs_formats[i]->index_suffix);
		if (nl > sl &&
		    strcmp(name + nl - sl, tfs_formats[i]->index_suffix) == 0 &&
		    (!best || tfs_formats[i]->index_rank < best->index_rank))
			best = tfs_formats[i];
	}
	return best;
}

int tfs_format_index_rank(const char *name)
{
	const struct tfs_format *f = tfs_format_by_index(name);

	return f ? f->index_rank : -1;
}

const char *tfs_format_pick_index(const char *const *names, size_t n)
{
	const char *found = NULL;
	int rank, best = -1;
	size_t i;

	for (i = 0; i < n; i++) {
		rank = tfs_format_index_rank(names[i]);
		if (rank >= 0 && (best < 0 || rank < best)) {
			best = rank;
			found = names[i];
		}
	}
	return found;
}

const struct tfs_format *tfs_format_by_name(const char *name)
{
	unsigned i;

	for (i = 0; tfs_formats[i]; i++)
		if (strcmp(tfs_formats[i]->name, name) == 0)
			return tfs_formats[i];
	return NULL;
}

void tfs_set_part_free(struct tfs_set_part *p)
{
	uint32_t i;

	for (i = 0; p->names && i < p->count; i++)
		free(p->names[i]);
	free(p->names);
	p->names = NULL;
}

void tfs_shard_index_free(struct tfs_shard_index *x)
{
	if (x->release)
		x->release(x);
	memset(x, 0, sizeof(*x));
}
