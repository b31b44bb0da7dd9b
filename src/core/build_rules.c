// SPDX-License-Identifier: MIT
/*
 * The builder's rules that need every entry of a container: unique stored
 * names, non-overlapping extents (tfs_builder_set_overlap_rule).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "core/builder.h"
#include "core/diag.h"
#include "core/names.h"
#include "builder_i.h"

/*
 * Names are unique per mount, or per container where each container has a
 * directory of its own: the namespace of an entry.
 */
static uint32_t name_space(const struct tfs_builder *b, const struct entry *e)
{
	return b->sources[e->source].own_dir ? b->sources[e->source].space
					     : UINT32_MAX;
}

static bool same_name(const struct tfs_builder *b, const struct entry *x,
		      const struct entry *y)
{
	return name_space(b, x) == name_space(b, y) &&
	       x->name_len == y->name_len &&
	       memcmp(x->name, y->name, x->name_len) == 0;
}

/*
 * Stored names of tensors and groups are unique: a hash set of entries,
 * filled in container order, so the later of two is reported
 */
int tfs_build_check_names(struct tfs_builder *b, uint32_t from,
			  struct tfs_diag *d)
{
	char nm[TFS_PRINTABLE_MAX];
	uint32_t *set, i, space;
	size_t cap = 64, slot;
	int ret = 0;

	while (cap < (size_t)(b->n - from) * 2)
		cap *= 2;
	set = malloc(cap * sizeof(*set));
	if (!set)
		return tfs_diag_oom(d);
	memset(set, 0xff, cap * sizeof(*set));
	for (i = from; !ret && i < b->n; i++) {
		const struct entry *a = NULL, *c = &b->e[i];

		if (c->kind != ENTRY_TENSOR && c->kind != ENTRY_GROUP)
			continue;
		space = name_space(b, c);
		slot = XXH3_64bits_withSeed(c->name, c->name_len, space) &
		       (cap - 1);
		for (; set[slot] != UINT32_MAX; slot = (slot + 1) & (cap - 1))
			if (same_name(b, &b->e[set[slot]], c)) {
				a = &b->e[set[slot]];
				break;
			}
		if (!a) {
			set[slot] = i;
			continue;
		}
		tfs_name_printable(nm, sizeof(nm), c->name, c->name_len);
		if (a->source != c->source)
			ret = tfs_diag_set(d, -EBADMSG,
					   "%s: tensor '%s': name: also in %s",
					   b->sources[c->source].label, nm,
					   b->sources[a->source].label);
		else
			ret = tfs_diag_at(d, -EBADMSG, c->desc_offset,
					  "tensor '%s': name: duplicate of the "
					  "tensor described at byte offset "
					  "%llu",
					  nm,
					  (unsigned long long)a->desc_offset);
	}
	free(set);
	return ret;
}

static int cmp_extents(const void *pa, const void *pb, void *arg)
{
	const struct entry *e = arg, *a = &e[*(const uint32_t *)pa],
			   *b = &e[*(const uint32_t *)pb];

	if (a->source != b->source)
		return a->source < b->source ? -1 : 1;
	if (a->offset != b->offset)
		return a->offset < b->offset ? -1 : 1;
	return *(const uint32_t *)pa < *(const uint32_t *)pb ? -1 : 1;
}

/* the printable name of a file entry: "name" or "name/role" */
static void entry_label(const struct tfs_builder *b, const struct entry *e,
			char *buf, size_t len)
{
	const struct entry *g =
		e->kind == ENTRY_COMPONENT ? &b->e[e->group] : e;
	size_t n;

	tfs_name_printable(buf, len, g->name, g->name_len);
	n = strlen(buf);
	if (e != g && n + 1 < len)
		snprintf(buf + n, len - n, "/%s", e->comps[0]);
}

/* stored extents of files do not overlap (TFS_OVERLAP_FORBID / _WARN), or
 * only as exact copies (_IDENTICAL) */
int tfs_build_check_overlaps(struct tfs_builder *b, uint32_t from,
			     struct tfs_diag *d)
{
	char na[TFS_PRINTABLE_MAX], nb[TFS_PRINTABLE_MAX + 64];
	uint32_t *v, i, n = 0, far = 0;
	int ret = 0;

	v = calloc(b->n, sizeof(*v));
	if (!v)
		return tfs_diag_oom(d);
	for (i = from; i < b->n; i++)
		if ((b->e[i].kind == ENTRY_TENSOR ||
		     b->e[i].kind == ENTRY_COMPONENT) &&
		    b->e[i].length && !b->e[i].unreadable && !b->e[i].sib &&
		    !b->e[i].nsegs &&
		    b->sources[b->e[i].source].overlap != TFS_OVERLAP_ALLOW)
			v[n++] = i;
	qsort_r(v, n, sizeof(*v), cmp_extents, b->e);
	/* @far: the extent reaching furthest so far (ends never overflow:
	 * every extent was checked to lie inside the file) */
	for (i = 1; !ret && i < n; i++) {
		const struct entry *a = &b->e[v[far]], *c = &b->e[v[i]];
		enum tfs_overlap_rule rule = b->sources[c->source].overlap;

		if (a->source != c->source ||
		    c->offset >= a->offset + a->length) {
			far = i;
			continue;
		}
		/* the same extent again: shared bytes (tied weights) */
		if (rule == TFS_OVERLAP_IDENTICAL && c->offset == a->offset &&
		    c->length == a->length)
			continue;
		entry_label(b, c, nb, sizeof(nb));
		entry_label(b, a, na, sizeof(na));
		if (rule == TFS_OVERLAP_FORBID || rule == TFS_OVERLAP_IDENTICAL)
			ret = tfs_diag_at(
				d, -EBADMSG, c->desc_offset,
				"tensor '%s': data [%llu, %llu) overlaps "
				"tensor '%s' [%llu, %llu)",
				nb, (unsigned long long)c->offset,
				(unsigned long long)(c->offset + c->length), na,
				(unsigned long long)a->offset,
				(unsigned long long)(a->offset + a->length));
		else if (tfs_builder_warn(
				 b, c->desc_offset,
				 "tensor '%s': data [%llu, %llu) overlaps "
				 "tensor '%s' [%llu, %llu)",
				 nb, (unsigned long long)c->offset,
				 (unsigned long long)(c->offset + c->length),
				 na, (unsigned long long)a->offset,
				 (unsigned long long)(a->offset + a->length)))
			ret = tfs_diag_oom(d);
		if (c->offset + c->length > a->offset + a->length)
			far = i;
	}
	free(v);
	return ret;
}
