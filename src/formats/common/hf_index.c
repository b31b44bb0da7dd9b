// SPDX-License-Identifier: MIT
/* The Hugging Face shard index as a reader's read_index: see hf_index.h. */
#include <stdlib.h>
#include <string.h>

#include "hf_index.h"
#include "parse/hfindex.h"
#include "core/diag.h"
#include "core/format.h"

static void release(struct tfs_shard_index *x)
{
	free((void *)x->v);
	tfs_hf_index_free(x->impl);
	free(x->impl);
}

int tfs_hf_read_index(const void *buf, size_t len, struct tfs_shard_index *x,
		      struct tfs_diag *d)
{
	struct tfs_hf_index *hf = malloc(sizeof(*hf));
	struct tfs_shard_entry *v;
	size_t i;
	int ret;

	memset(x, 0, sizeof(*x));
	if (!hf)
		return tfs_diag_oom(d);
	ret = tfs_hf_index_parse(buf, len, hf, d);
	if (ret) {
		free(hf);
		return ret;
	}
	v = calloc(hf->n ? hf->n : 1, sizeof(*v));
	if (!v) {
		tfs_hf_index_free(hf);
		free(hf);
		return tfs_diag_oom(d);
	}
	/* a view of the parsed index, which stays until release() */
	for (i = 0; i < hf->n; i++)
		v[i] = (struct tfs_shard_entry){hf->v[i].name,
						hf->v[i].name_len,
						hf->v[i].shard, hf->v[i].at};
	*x = (struct tfs_shard_index){
		.v = v,
		.n = hf->n,
		.shards = hf->shards,
		.nshards = hf->nshards,
		.metadata = hf->metadata,
		.has_total = hf->has_total,
		.total_size = hf->total_size,
		.impl = hf,
		.release = release,
	};
	return 0;
}
