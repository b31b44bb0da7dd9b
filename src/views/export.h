/* SPDX-License-Identifier: MIT */
/*
 * Any tree out as safetensors (docs/export.md): the plan of the export
 * (which tensors, in which order, the size of each file, where each
 * tensor's bytes lie) made from the tensor records alone, without reading
 * data, and the one function that serves its bytes.  The headers are
 * made the first time they are read (the plan counts their sizes): a
 * 90,000-tensor model's are 11 MB that a listing never needs.  The mount's
 * .tensorfs/export/ files (the export view, export_view.c) and `tensorfs
 * convert` both read through tfs_export_read(), so they give the same bytes.
 *
 * Every tensor with a safetensors dtype is exported, sorted bytewise by
 * stored name: raw little-endian row-major tensors straight from the read
 * path (zero-copy inside one tensor), big-endian ones swapped per element,
 * column-major ones (order=F: Fortran-order .npy, primitiv) transposed to
 * row-major through a bounded window, -o as=float32 views as F32.  The
 * others (ggml blocks, records, strings, unreadable files, a name that is
 * not UTF-8 or is given twice) are left out and listed, with the reason,
 * in the header's __metadata__ ("tensorfs.left_out", a JSON object as a
 * string).
 */
#ifndef TENSORFS_EXPORT_H
#define TENSORFS_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/abi.h"

struct tfs_image;
struct tfs_tree;
struct tfs_view;

/* the Hub's default shard size (transformers' "5GB") */
#define TFS_EXPORT_SHARD_DEFAULT 5000000000ull

/* how a tensor's bytes are made (struct tfs_export_item.how) */
#define TFS_EXPORT_SWAP 1u	/* big-endian: swapped per unit */
#define TFS_EXPORT_TRANSPOSE 2u /* column-major: transposed */
#define TFS_EXPORT_VIEW 4u	/* the -o as=float32 view */

struct tfs_export_item {
	const char *name; /* its name in the header (UTF-8) */
	size_t name_len;
	uint64_t begin; /* in its file's byte buffer */
	uint64_t size;
	uint32_t tensor; /* tree->tensors index */
	uint32_t how;	 /* TFS_EXPORT_* */
	uint32_t elem;	 /* bytes per element (transpose) */
	uint32_t unit;	 /* bytes swapped together (swap) */
};

struct tfs_export_file {
	char *name; /* "model.safetensors", "model-00001-of-00002..." */
	/*
	 * the 8-byte length and the padded JSON header: NULL until first
	 * needed (tfs_export_read), its length known from the plan
	 */
	char *head;
	uint64_t head_len;
	uint64_t size;	/* the whole file */
	uint32_t first; /* its items: items[first, first + n) */
	uint32_t n;
};

struct tfs_export {
	struct tfs_export_item *items;
	uint32_t nitems;
	struct tfs_export_file *files;
	uint32_t nfiles;
	uint32_t nleft; /* tensors left out */
	/*
	 * left_out.json: the tensors left out ([{"name", "path", "why"}],
	 * in name order), or NULL when none is
	 */
	char *left;
	size_t left_len;
	struct tfs_export_lazy *lazy; /* what the headers are made from */
};

struct tfs_export_options {
	uint64_t shard_size; /* 0: TFS_EXPORT_SHARD_DEFAULT */
	/* "tensorfs.source": the source file(s), comma-separated, or NULL */
	const char *source;
	/*
	 * the source's own __metadata__ (a JSON object of strings) or NULL:
	 * when it carries "tensorfs.format" the source is an export, and its
	 * provenance is kept, so an export of an export is the same bytes
	 */
	const char *source_meta;
};

/*
 * The plan of tree @t's export.  The tree's nodes must be present (the
 * layout xattrs byte_order and order are read from them).  0, -ENOMEM,
 * -EOVERFLOW.
 */
int tfs_export_plan(struct tfs_export **out, const struct tfs_tree *t,
		    const struct tfs_export_options *o);
void tfs_export_free(struct tfs_export *e);

/*
 * model.safetensors.index.json of a sharded export (nfiles > 1), as
 * transformers writes it: *@text (malloc'd) and *@len.  0, -EINVAL (not
 * sharded), -ENOMEM.
 */
TFS_PRIVATE int tfs_export_index(const struct tfs_export *e, char **text,
				 size_t *len);

/*
 * Bytes [@off, @off + @len) of export file @file (clipped to its size):
 * the header from memory, a read inside one plain tensor a view of the
 * read path (zero-copy for raw tensors), anything else assembled in a
 * bounce buffer.  Same returns as tfs_image_read().
 */
int tfs_export_read(struct tfs_image *img, const struct tfs_export *e,
		    uint32_t file, uint64_t off, size_t len,
		    struct tfs_view *v);

/*
 * Write export file @file to @fd (at its current offset, which must be 0
 * of an empty file): the same bytes as tfs_export_read(), raw tensors of
 * a local container copied by copy_file_range(2) where the file systems
 * allow it (after the read path's digest rule).  @progress (may be NULL)
 * gets the bytes written so far.  0 or -errno.
 */
TFS_PRIVATE int tfs_export_write(struct tfs_image *img,
				 const struct tfs_export *e, uint32_t file,
				 int fd,
				 void (*progress)(void *arg, uint64_t done),
				 void *arg);

/*
 * Bytes [@off, @off + @len) of export file @file were copied into the
 * mount's page cache: drop the containers' cached pages of the raw
 * tensors it has served, a window (TFS_DROP_WINDOW) behind the reader and
 * all at the end, so reading the export does not cache a model twice.
 */
void tfs_export_drop_cache(struct tfs_image *img, const struct tfs_export *e,
			   uint32_t file, uint64_t off, uint64_t len);

/* one tensor of a safetensors header (tfs_export_header) */
struct tfs_export_entry {
	const char *name; /* UTF-8 */
	size_t name_len;
	const char *dtype; /* "F32" */
	const uint64_t *shape;
	uint32_t ndim;
	uint64_t size;
};

/*
 * The 8-byte length and the JSON header (compact, padded with spaces to a
 * multiple of 8) of a file holding @v[0, @n) in this order after the
 * __metadata__ object @meta (a JSON object of strings, a json_t *, its
 * keys in order): *@head (malloc'd), *@head_len, and the data bytes in
 * *@data_len.  0, -EINVAL (a name not UTF-8, a value not a string),
 * -ENOMEM, -EOVERFLOW.
 */
TFS_PRIVATE int tfs_export_header(const struct tfs_export_entry *v, uint32_t n,
				  const void *meta, char **head,
				  uint64_t *head_len, uint64_t *data_len);

/* the safetensors name of a dtype ("F32"), or NULL when it has none */
TFS_PRIVATE const char *tfs_export_dtype_name(int dtype);

#endif
