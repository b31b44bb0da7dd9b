/* SPDX-License-Identifier: MIT */
/*
 * The seam of the views (src/views/): a view is a file whose bytes are a
 * function of tensors' bytes.  A view either adds nodes of its own (the
 * previews, the export's files) or changes what tensor files show (the
 * as view's converted elements, the npy view's header): planned over the
 * finished records, it sets a record's prefix, view dtype and size and
 * shown_by, and serves its bytes through read_tensor.  Each view exports one
 * `const struct tfs_view_ops tfs_view_<name>` and is listed in meson.build
 * (view_names, generated into views.h for src/core/view_registry.c), so
 * adding one touches its own file and that list.  The core calls a view
 * only through these hooks, and a view reads tensors only through the
 * tensor-read layer (tfs_image_read_tensor, src/core/tensor_read.c): reads
 * flow down, nothing calls back up.
 */
#ifndef TFS_CORE_VIEW_OPS_H
#define TFS_CORE_VIEW_OPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct tfs_draft;
struct tfs_image;
struct tfs_tree;
struct tfs_view;

struct tfs_view_ops {
	const char *name;
	/*
	 * At the mount's finish, over the finished tensor records (before the
	 * nodes are sealed), in meson.build's order: add this view's nodes,
	 * each with tfs_nodes_add_view(..., @id, ...) and its size in
	 * mem_len, or change records (shown_by = @id + 1).  0 or -errno.
	 */
	int (*plan)(struct tfs_draft *dr, uint32_t id);
	/* bytes [@off, +@len) of its node @node (inside its size), in @v */
	int (*read)(struct tfs_image *img, uint32_t node, uint64_t off,
		    size_t len, struct tfs_view *v);
	/*
	 * Bytes [@off, +@len) of what record @tensor's file shows after its
	 * prefix (inside its view_size), for the records it planned, in @v
	 */
	int (*read_tensor)(struct tfs_image *img, uint32_t tensor, uint64_t off,
			   size_t len, struct tfs_view *v);
	/*
	 * Optional: xattrs of its own beside the stored ones.  getxattr:
	 * -ENODATA for a name that is not its; listxattr: its names appended
	 * to the @used bytes already in @buf (size 0: the length).
	 */
	ssize_t (*getxattr)(struct tfs_image *img, uint32_t node,
			    const char *name, char *buf, size_t size);
	ssize_t (*listxattr)(char *buf, size_t size, size_t used);
	/* Optional: frees what the plan put in tree->view_data[id] */
	void (*free_data)(void *data);
	/* Optional: bytes [@off, +@len) of @node were served (page cache) */
	void (*drop_cache)(struct tfs_image *img, uint32_t node, uint64_t off,
			   uint64_t len);
};

/*
 * Plan every view over @dr (src/core/view_registry.c), in the mount's
 * finish step (tfs_image_finish_load): between tfs_builder_draft() and
 * tfs_draft_seal().  0 or -errno (-ENOMEM, -E2BIG).
 */
int tfs_views_plan(struct tfs_draft *dr);

/* each view's data in @t->view_data, with its free_data hook */
void tfs_views_free_data(struct tfs_tree *t);

/*
 * For a view's plan (src/core/draft.c).  Record @rec becomes an input only
 * views read: its node leaves the tree and, once the plan returns, the
 * record moves past tree->ntensors (records and the manifest are
 * renumbered: a view keeps node numbers, which stay).  0 or -ENOMEM.
 */
int tfs_draft_hide(struct tfs_draft *dr, uint32_t rec);
/*
 * Record @rec is shown as @name (its stored name's place: the manifest's
 * and the xattr's name) in a file @file (one path component) in the same
 * directory, which the caller knows holds no other @file.  0 or -ENOMEM.
 */
int tfs_draft_rename(struct tfs_draft *dr, uint32_t rec, const char *name,
		     const char *file);
/*
 * A warning about the container in the tree's warnings (printed at mount,
 * as the readers' are; metadata.json is already made).  0 or -ENOMEM.
 */
int tfs_draft_warn(struct tfs_draft *dr, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* the records hidden since the last call leave (the registry calls it) */
int tfs_draft_compact(struct tfs_draft *dr);

/* every view, in meson.build's order, NULL-terminated */
extern const struct tfs_view_ops *const tfs_view_kinds[];

/*
 * The ops of view node @node of @img, or of the view that shows tensor
 * file @node (shown_by), or NULL for another node
 */
const struct tfs_view_ops *tfs_view_of(const struct tfs_image *img,
				       uint32_t node);

#endif
