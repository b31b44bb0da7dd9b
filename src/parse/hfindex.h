/* SPDX-License-Identifier: MIT */
/*
 * A Hugging Face shard index (model.safetensors.index.json,
 * pytorch_model.bin.index.json):
 *   {"metadata": {"total_size": N, ...}, "weight_map": {"name": "file"}}
 * read with the offset-keeping JSON reader.  Used by the readers whose
 * shards it lists (their read_index: src/formats/common/hf_index.c).
 */
#ifndef TFS_PARSE_HFINDEX_H
#define TFS_PARSE_HFINDEX_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tfs_diag;

struct tfs_hf_entry {
	char *name; /* the tensor's stored name (may hold any bytes) */
	size_t name_len;
	const char *shard; /* one of tfs_hf_index.shards */
	uint64_t at;	   /* offset of its key in the index file */
};

struct tfs_hf_index {
	struct tfs_hf_entry *v; /* in file order */
	size_t n;
	char **shards; /* distinct shard file names, sorted */
	size_t nshards;
	json_t *metadata; /* "metadata", or NULL */
	bool has_total;
	uint64_t total_size, total_at;
};

/*
 * Parse @len bytes.  Shard names must be plain file names (not empty, no
 * '/', not "." or ".."), a tensor name may appear once.  0, or -EBADMSG /
 * -ENOMEM with @d (offsets in the index file).
 */
int tfs_hf_index_parse(const void *buf, size_t len, struct tfs_hf_index *x,
		       struct tfs_diag *d);
void tfs_hf_index_free(struct tfs_hf_index *x);

#endif
