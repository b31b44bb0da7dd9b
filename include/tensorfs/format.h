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
};

/* NULL-terminated table of every reader, in probe order */
extern const struct tfs_format *const tfs_formats[];

/* The reader with the highest confidence for @src, or NULL. */
const struct tfs_format *tfs_format_detect(const struct tfs_source *src);

/* the name users see: @f->family, else @f->name */
static inline const char *tfs_format_shown(const struct tfs_format *f)
{
	return f->family ? f->family : f->name;
}

/* The reader named @name, or NULL. */
const struct tfs_format *tfs_format_by_name(const char *name);

#endif
