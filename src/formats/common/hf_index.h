/* SPDX-License-Identifier: MIT */
/*
 * The Hugging Face shard index (model.safetensors.index.json,
 * pytorch_model.bin.index.json: {"metadata": {...}, "weight_map": {...}}),
 * the tfs_format.read_index of the readers whose shards it lists.
 */
#ifndef TFS_FORMATS_COMMON_HF_INDEX_H
#define TFS_FORMATS_COMMON_HF_INDEX_H

#include <stddef.h>

struct tfs_diag;
struct tfs_shard_index;

/* tfs_format.read_index, by src/parse/hfindex.c */
int tfs_hf_read_index(const void *buf, size_t len, struct tfs_shard_index *x,
		      struct tfs_diag *d);

#endif
