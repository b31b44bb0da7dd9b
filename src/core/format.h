/* SPDX-License-Identifier: MIT */
/*
 * The format registry: one descriptor per container format, each in its own
 * file under src/formats/, listed in one table (src/core/registry.c).
 *
 * probe() looks at the bytes and answers a confidence: 0 = not mine,
 * 100 = my magic.  It must not fail, allocate or read out of bounds.
 * load() parses the whole container, describing it to the builder; it
 * validates everything before returning 0.  On failure it returns -errno
 * and fills the diagnostic (message naming the field, byte offset).
 * Readers never print and never include FUSE headers.
 */
#ifndef TENSORFS_FORMAT_H
#define TENSORFS_FORMAT_H

struct tfs_builder;
struct tfs_diag;
struct tfs_source;
struct json_t;

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A container that is one part of a set of files that together hold one
 * model (GGUF split models: NAME-00001-of-00003.gguf...).
 */
struct tfs_set_part {
	uint32_t no;	  /* 0-based */
	uint32_t count;	  /* parts in the set; 0: the container stands alone */
	uint64_t tensors; /* tensors of the whole set, UINT64_MAX: not said */
	uint64_t tensors_at; /* where @tensors is stated (byte offset) */
	char **names;	     /* @count file names, in the part's directory */
};

void tfs_set_part_free(struct tfs_set_part *p);

/*
 * A shard index as a reader's read_index() gives it: which file of the
 * directory holds each tensor (the core checks the shards against it).
 * Everything it points to is the reader's, given back by @release.
 */
struct tfs_shard_entry {
	const char *name; /* the tensor's stored name (may hold any bytes) */
	size_t name_len;
	const char *shard; /* one of tfs_shard_index.shards */
	uint64_t at;	   /* offset of its entry in the index file */
};

struct tfs_shard_index {
	const struct tfs_shard_entry *v; /* in file order */
	size_t n;
	char *const *shards; /* distinct shard file names, sorted */
	size_t nshards;
	struct json_t *metadata; /* the index's own metadata, or NULL */
	bool has_total;		 /* it states the tensors' total bytes */
	uint64_t total_size;
	void *impl; /* the reader's */
	void (*release)(struct tfs_shard_index *x);
};

/* @x's memory given back (release), @x zeroed */
void tfs_shard_index_free(struct tfs_shard_index *x);

struct tfs_format {
	const char *name; /* short name: tfs_format_by_name, fuzz targets */
	/*
	 * The format users see (user.tensorfs.format, metadata.json, info)
	 * when one format has several readers (zTensor 1.x and 2.x are both
	 * "ztensor"); NULL: @name.  Use tfs_format_shown().
	 */
	const char *family;
	const char *description;
	int (*probe)(const struct tfs_source *src);
	int (*load)(const struct tfs_source *src, struct tfs_builder *b,
		    struct tfs_diag *d);
	/*
	 * Optional: is @src (whose file is named @name, no directory) part
	 * of a set?  Reads the header only.  0 with @part filled (count 0:
	 * it stands alone, also when the header is broken: load() says
	 * why), or -errno with @d filled (the field and its byte offset;
	 * the core adds the file name) when the part contradicts its own
	 * name.  The
	 * core mounts the whole set as one tree (src/core/collection.c).
	 */
	int (*set_part)(const struct tfs_source *src, const char *name,
			struct tfs_set_part *part, struct tfs_diag *d);
	/*
	 * Optional: the end of the name of a Hugging Face shard index whose
	 * shards are this format's files (".safetensors.index.json"); a
	 * directory (or a remote one) holding such an index mounts its shards
	 * as one tree.  @index_rank orders the readers' indexes when a
	 * directory holds several (lower first).
	 */
	const char *index_suffix;
	int index_rank;
	/*
	 * With @index_suffix: read the index file's @len bytes at @buf into
	 * @x (shard names are plain file names, a tensor is listed once).
	 * 0, or -EBADMSG / -ENOMEM with @d filled (offsets in the index).
	 */
	int (*read_index)(const void *buf, size_t len,
			  struct tfs_shard_index *x, struct tfs_diag *d);
	/*
	 * Optional: is the file @name (relative to @src's directory) one of
	 * container @src's own files (a SavedModel's variables/ beside its
	 * saved_model.pb)?  A directory mount then mounts it through @src
	 * only, not as a container of its own.  Looks at names only.
	 */
	bool (*covers)(const struct tfs_source *src, const char *name);
	/*
	 * What tensors stored in one range are in this format, for info
	 * ("shared constants": OpenVINO's converter deduplicates constants);
	 * NULL: "tied weights".
	 */
	const char *shared_name;
};

/*
 * A reader's descriptor: TFS_FORMAT(npy, "NumPy .npy ...", .probe =
 * npy_probe, .load = npy_load) defines tfs_format_npy named "npy", its
 * name in the format list of meson.build (registry.c pastes the same
 * tfs_format_##name); the members after the description are designated
 * initializers.
 */
#define TFS_FORMAT(id, desc, ...)                                              \
	const struct tfs_format tfs_format_##id = {                            \
		.name = #id, .description = (desc), __VA_ARGS__}

/* NULL-terminated table of every reader, in probe order */
extern const struct tfs_format *const tfs_formats[];

/* The reader with the highest confidence for @src, or NULL. */
const struct tfs_format *tfs_format_detect(const struct tfs_source *src);

/* the name users see: @f->family, else @f->name */
static inline const char *tfs_format_shown(const struct tfs_format *f)
{
	return f->family ? f->family : f->name;
}

/*
 * The rank of a shard index named @name (its reader's index_rank), or -1
 * when no reader's index_suffix ends it.
 */
int tfs_format_index_rank(const char *name);

/*
 * The reader whose shard index @name is (its index_suffix ends @name; the
 * lowest index_rank of several), or NULL.
 */
const struct tfs_format *tfs_format_by_index(const char *name);

/*
 * The best shard index among the @n names at @names (the lowest rank; the
 * first of equal ones), or NULL.
 */
const char *tfs_format_pick_index(const char *const *names, size_t n);

/* The reader named @name, or NULL. */
const struct tfs_format *tfs_format_by_name(const char *name);

#endif
