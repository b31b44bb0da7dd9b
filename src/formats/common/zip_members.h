/* SPDX-License-Identifier: MIT */
/*
 * Zips whose members are containers tensorfs reads (llamafile, MediaPipe
 * .task, DDUF): one member read in place as a slice of the archive by its
 * own reader, and the member's line in metadata.json.  Only stored members
 * can be slices; a compressed one is refused by name.
 */
#ifndef TFS_FORMATS_ZIP_MEMBERS_H
#define TFS_FORMATS_ZIP_MEMBERS_H

#include <jansson.h>

#include <stdbool.h>
#include <stdint.h>

struct tfs_builder;
struct tfs_diag;
struct tfs_format;
struct tfs_source;
struct tfs_zip;
struct tfs_zip_entry;

/* how many members @match (given @arg); -errno when the directory is bad */
int64_t tfs_zip_member_count(const struct tfs_zip *z,
			     bool (*match)(const struct tfs_zip_entry *e,
					   const void *arg),
			     const void *arg, struct tfs_diag *d);

/*
 * How many members of @src, an archive that starts with a zip header,
 * @match: 0 when @src is not one or its directory is bad (for a probe).
 */
int64_t tfs_zip_source_count(const struct tfs_source *src,
			     bool (*match)(const struct tfs_zip_entry *e,
					   const void *arg),
			     const void *arg);

/*
 * Each member of @z in directory order given to @fn with its name
 * (tfs_zip_member_name's, freed after): 0, the first nonzero return of
 * @fn, or -errno with @d filled when the directory is bad.
 */
int tfs_zip_each_member(const struct tfs_zip *z,
			int (*fn)(void *ctx, const struct tfs_zip_entry *e,
				  const char *name),
			void *ctx, struct tfs_diag *d);

/* the member's name as a C string (malloc'd), escaped when not UTF-8 */
char *tfs_zip_member_name(const struct tfs_zip_entry *e);

/*
 * Member @e (named @name, tfs_zip_member_name) read by @fmt: under
 * directory @dir, or at the root when @dir is "".  A compressed member is
 * refused at its local header (-ENOTSUP); an inner refusal is said of the
 * member, its offset in the archive.
 */
int tfs_zip_member_load(struct tfs_builder *b, const struct tfs_zip_entry *e,
			const char *name, const char *dir,
			const struct tfs_format *fmt, struct tfs_diag *d);

/* {name, size, offset, method, as} of member @e, appended to @members */
int tfs_zip_member_list(json_t *members, const struct tfs_zip_entry *e,
			const char *name, const char *as);

#endif
