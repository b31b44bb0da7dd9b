/* SPDX-License-Identifier: MIT */
/*
 * The builder's side that readers never see (src/core/builder.h is
 * the readers' interface): several containers in one mount, and what the
 * image takes from the builder when it is finished.  For the core's
 * modules that load containers (image.c, collection.c).
 */
#ifndef TFS_CORE_BUILDER_SOURCES_H
#define TFS_CORE_BUILDER_SOURCES_H

#include <stdbool.h>
#include <stdint.h>

#include "core/builder.h"

/*
 * Several containers in one mount.  Call tfs_builder_begin_source() before
 * a reader describes each container (the builder was made with a NULL
 * source), then tfs_builder_end_source(), which checks that container's
 * own rules (names, overlaps) when it has a directory of its own; on any
 * failure tfs_builder_abort_source() removes everything it added, so the
 * mount goes on without it.
 *   @dir NULL: its tensors merge into the root (the shards of one model:
 *        names must be unique across all of them, checked at finish);
 *   @dir "a/b": it is the directory a/b (names unique inside it); the
 *        reader's root xattrs go on that directory.
 *   @join (with the previous source's @dir): one more part of the same
 *        model in the same directory (a GGUF split set among other
 *        containers): names unique across the joined parts, root xattrs
 *        on the shared directory.
 * Every tensor gets "container" = @label in manifest.json, and with @shard
 * the xattr user.tensorfs.shard; metadata goes under "containers"/@label.
 */
struct tfs_builder_source {
	const struct tfs_source *src;
	const char *label; /* path relative to the mounted directory */
	const char *dir;
	const char *shard;
	bool join;
};
int tfs_builder_begin_source(struct tfs_builder *b,
			     const struct tfs_builder_source *s);
int tfs_builder_end_source(struct tfs_builder *b, struct tfs_diag *d);
void tfs_builder_abort_source(struct tfs_builder *b);

/*
 * Every tensor and group added so far, in order: @fn(@arg, stored name,
 * its length, its source index); a non-zero return stops the walk and is
 * returned.  The name is the builder's until finish.
 */
int tfs_builder_each_tensor(struct tfs_builder *b,
			    int (*fn)(void *arg, const char *name, size_t len,
				      uint32_t source),
			    void *arg);
/* the bytes of every tensor file added so far (decoded sizes) */
uint64_t tfs_builder_total_bytes(const struct tfs_builder *b);

/* number of tensor files and groups added so far */
uint32_t tfs_builder_count(const struct tfs_builder *b);

/*
 * The companion files and slices the readers opened, moved to *@out (@n of
 * them, malloc'd; NULL, 0 when none), in handle order: the image appends
 * them to its sources after the containers.  0 or -ENOMEM.
 */
int tfs_builder_take_companions(struct tfs_builder *b,
				struct tfs_source **out, uint32_t *n);

#endif
