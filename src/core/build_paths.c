// SPDX-License-Identifier: MIT
/*
 * Placing the leaves at finish: each tensor or group gets its path by the
 * rules of docs/tree.md (see builder.c's opening comment).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/builder.h"
#include "core/names.h"
#include "strmap.h"
#include "builder_i.h"

static char *join_comps(const char *const *comps, size_t n)
{
	size_t i, len = 0, o = 0;
	char *p;

	for (i = 0; i < n; i++)
		len += strlen(comps[i]) + 1;
	p = malloc(len + 1);
	if (!p)
		return NULL;
	for (i = 0; i < n; i++) {
		if (i)
			p[o++] = '/';
		len = strlen(comps[i]);
		memcpy(p + o, comps[i], len);
		o += len;
	}
	p[o] = '\0';
	return p;
}

#define CLAIM_DIR 1u
#define CLAIM_LEAF 2u

int tfs_path_own(struct path_state *ps, char *s)
{
	return s ? tfs_kept_add(&ps->kept, s) : -ENOMEM;
}

void tfs_path_state_free(struct path_state *ps)
{
	tfs_kept_free(&ps->kept);
	tfs_strmap_free(&ps->claims);
}

/* a free "<dir>/<last>~N" for leaf @e, claimed */
static int place_suffixed(struct path_state *ps, struct entry *e)
{
	const char *last = e->comps[e->ncomps - 1];
	char *dir = join_comps(e->comps, e->ncomps - 1);
	char suffix[24], *cut, *cand = NULL;
	unsigned long n;
	int ret = -ENOMEM;

	if (!dir)
		return -ENOMEM;
	for (n = 1;; n++) {
		snprintf(suffix, sizeof(suffix), "~%lu", n);
		cut = strdup(last);
		if (!cut)
			goto out;
		tfs_name_cut(cut, TFS_NAME_MAX - strlen(suffix));
		if (asprintf(&cand, "%s%s%s%s", dir, *dir ? "/" : "", cut,
			     suffix) < 0) {
			free(cut);
			cand = NULL;
			goto out;
		}
		free(cut);
		if (!tfs_strmap_get(&ps->claims, cand, NULL))
			break;
		free(cand);
		cand = NULL;
	}
	e->path = cand;
	ret = tfs_path_own(ps, strdup(cand));
	if (!ret)
		ret = tfs_strmap_put(&ps->claims, ps->kept.v[ps->kept.n - 1],
				     CLAIM_LEAF);
out:
	free(dir);
	return ret;
}

int tfs_build_place_leaves(struct tfs_builder *b)
{
	struct path_state ps = {0};
	struct tfs_strmap counts;
	uint32_t i, cnt, claim;
	size_t k, dlen, prev_dlen = 0;
	char *prefix, *slash;
	const char *prev = NULL;
	bool claimed;
	int ret = 0;

	tfs_strmap_init(&ps.claims);
	tfs_strmap_init(&counts);
	/*
	 * The reserved .tensorfs as the first of several components (a
	 * directory of tensors, a container's directory) would be a second
	 * directory of that name at the root: it is escaped like '.' and
	 * '..' are ("%2Etensorfs" cannot be an escaped stored name, whose
	 * '%' is "%25").  A leaf named .tensorfs is a collision (~N), below.
	 */
	for (i = 1; i < b->n; i++) {
		struct entry *e = &b->e[i];

		if ((e->kind == ENTRY_DIR ||
		     ((e->kind == ENTRY_TENSOR || e->kind == ENTRY_GROUP) &&
		      e->ncomps > 1)) &&
		    e->ncomps && !strcmp(e->comps[0], META_DIR))
			e->comps[0] = META_DIR_ESCAPED; /* interned: shared */
	}
	ret = tfs_path_own(&ps, strdup(META_DIR));
	if (!ret)
		ret = tfs_strmap_put(&ps.claims, ps.kept.v[0], CLAIM_DIR);
	/* containers' directories, with their prefixes */
	for (i = 1; !ret && i < b->n; i++) {
		struct entry *e = &b->e[i];

		if (e->kind != ENTRY_DIR)
			continue;
		e->path = join_comps(e->comps, e->ncomps);
		for (k = 1; e->path && !ret && k <= e->ncomps; k++) {
			prefix = join_comps(e->comps, k);
			ret = tfs_path_own(&ps, prefix);
			if (!ret)
				ret = tfs_strmap_put(&ps.claims, prefix,
						     CLAIM_DIR);
		}
		if (!e->path)
			ret = -ENOMEM;
	}
	/* wanted paths, and every proper prefix as a directory */
	for (i = 1; !ret && i < b->n; i++) {
		struct entry *e = &b->e[i];

		if (e->kind != ENTRY_TENSOR && e->kind != ENTRY_GROUP)
			continue;
		e->path = join_comps(e->comps, e->ncomps);
		if (!e->path) {
			ret = -ENOMEM;
			break;
		}
		cnt = 0;
		tfs_strmap_get(&counts, e->path, &cnt);
		ret = tfs_strmap_put(&counts, e->path, cnt + 1);
		/* the directory of the leaf before: its prefixes are claimed */
		slash = strrchr(e->path, '/');
		dlen = slash ? (size_t)(slash - e->path) : 0;
		if (prev && dlen == prev_dlen && !memcmp(prev, e->path, dlen))
			continue;
		prev = e->path;
		prev_dlen = dlen;
		/* most share their directories: copy only new ones */
		for (slash = e->path; !ret && (slash = strchr(slash, '/'));
		     slash++) {
			*slash = '\0';
			claimed = tfs_strmap_get(&ps.claims, e->path, &claim) &&
				  claim == CLAIM_DIR;
			prefix = claimed ? NULL : strdup(e->path);
			*slash = '/';
			if (claimed)
				continue;
			ret = tfs_path_own(&ps, prefix);
			if (!ret)
				ret = tfs_strmap_put(&ps.claims, prefix,
						     CLAIM_DIR);
		}
	}
	/* leaves alone on their path take it first */
	for (i = 1; !ret && i < b->n; i++) {
		struct entry *e = &b->e[i];

		if (e->kind != ENTRY_TENSOR && e->kind != ENTRY_GROUP)
			continue;
		tfs_strmap_get(&counts, e->path, &cnt);
		if (cnt == 1 && !tfs_strmap_get(&ps.claims, e->path, NULL))
			ret = tfs_strmap_put(&ps.claims, e->path, CLAIM_LEAF);
		else
			e->node = TFS_NO_NODE; /* marks: still to place */
	}
	/* then the rest, in container order */
	for (i = 1; !ret && i < b->n; i++) {
		struct entry *e = &b->e[i];

		if ((e->kind != ENTRY_TENSOR && e->kind != ENTRY_GROUP) ||
		    e->node != TFS_NO_NODE)
			continue;
		e->node = 0;
		if (!tfs_strmap_get(&ps.claims, e->path, &claim)) {
			ret = tfs_strmap_put(&ps.claims, e->path, CLAIM_LEAF);
			continue;
		}
		free(e->path);
		e->path = NULL;
		ret = place_suffixed(&ps, e);
	}
	tfs_strmap_free(&counts);
	tfs_path_state_free(&ps);
	return ret;
}
