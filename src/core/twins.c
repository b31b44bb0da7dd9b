// SPDX-License-Identifier: MIT
/*
 * Tensors whose stored bytes overlap in one container: tied weights (a
 * PyTorch file's lm_head on the storage of wte).  The read path gives the
 * container's pages of a tensor back once the tensor is served
 * (tfs_image_drop_source_cache); for a shared extent that sent the second
 * tensor's reader to the disk for the same bytes again (16 readers of a
 * GPT-2 torch file: 1.24x the file read from the disk).  Such pages are
 * given back once every tensor on them was served.
 */
#include <errno.h>
#include <stdlib.h>

#include "core/image_i.h"

struct extent {
	uint32_t source, tensor;
	uint64_t off, end;
};

static int cmp_extent(const void *pa, const void *pb)
{
	const struct extent *a = pa, *b = pb;

	if (a->source != b->source)
		return a->source < b->source ? -1 : 1;
	if (a->off != b->off)
		return a->off < b->off ? -1 : 1;
	return a->tensor < b->tensor ? -1 : a->tensor > b->tensor;
}

/* the records whose pages the read path gives back (image.c) */
static bool dropped(const struct tfs_tensor *x)
{
	return !x->view && !x->nsegs && x->encoding == TFS_ENCODING_RAW &&
	       x->stored_length;
}

int tfs_twins_find(const struct tfs_tree *t, uint32_t **out)
{
	struct extent *v;
	uint32_t *twin = NULL;
	uint64_t end;
	size_t n = 0, i, g, k;

	*out = NULL;
	v = malloc((t->ntensors ? t->ntensors : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < t->ntensors; i++)
		if (dropped(&t->tensors[i]))
			v[n++] = (struct extent){
				t->tensors[i].source, (uint32_t)i,
				t->tensors[i].offset,
				t->tensors[i].offset +
					t->tensors[i].stored_length};
	qsort(v, n, sizeof(*v), cmp_extent);
	for (i = 0; i < n; i = g) {
		/* a group: extents each overlapping the union before it */
		end = v[i].end;
		for (g = i + 1;
		     g < n && v[g].source == v[i].source && v[g].off < end; g++)
			if (v[g].end > end)
				end = v[g].end;
		if (g - i < 2)
			continue;
		if (!twin) {
			twin = malloc(t->ntensors * sizeof(*twin));
			if (!twin) {
				free(v);
				return -ENOMEM;
			}
			for (k = 0; k < t->ntensors; k++)
				twin[k] = TFS_NO_TWIN;
		}
		/* a ring: each member names the next */
		for (k = i; k < g; k++)
			twin[v[k].tensor] = v[k + 1 < g ? k + 1 : i].tensor;
	}
	free(v);
	*out = twin;
	return 0;
}
