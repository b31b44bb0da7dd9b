/* SPDX-License-Identifier: MIT */
/*
 * The tree builder: what a format reader describes a container to.
 *
 * A reader adds tensors (files), groups (a directory that stands for one
 * logical tensor made of several component files), xattrs and metadata.
 * The builder re-checks the rules every format shares, so a reader cannot
 * forget them:
 *   - the stored extent lies inside the container (overflow-checked);
 *   - with a known element size, size == product(shape) x elem_size;
 *   - a raw tensor's size equals its stored length;
 *   - a group's component roles are unique.
 * Names are mapped to paths when the tree is finished (tfs_builder_finish),
 * by the rules in docs/tree.md: every tensor stays reachable and distinct,
 * and nothing escapes the mount.
 *
 * Handles are small integers naming what was added; TFS_BUILDER_ROOT names
 * the root directory.  Strings passed in are copied.  Not thread-safe.
 */
#ifndef TENSORFS_BUILDER_H
#define TENSORFS_BUILDER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tensorfs/tree.h"

struct tfs_builder;
struct tfs_diag;
struct tfs_source;

#define TFS_BUILDER_ROOT 0u

struct tfs_build_options {
	bool flat; /* -o flat: every tensor at the root, unsplit */
};

struct tfs_tensor_spec {
	const char *name; /* stored name (any bytes) */
	size_t name_len;
	/*
	 * Optional explicit path: @path_len components, each used as one
	 * path component (escaped, never split).  NULL: split @name at '.'
	 * and '/' (or keep it whole with -o flat).
	 */
	const char *const *path;
	size_t path_len;
	const char *dtype;  /* canonical dtype name; copied */
	uint32_t elem_size; /* 0: opaque, size not checked against shape */
	size_t ndim;
	const uint64_t *shape;
	uint64_t offset; /* stored bytes: absolute offset, length */
	uint64_t length;
	enum tfs_encoding encoding;
	uint64_t size;	      /* decoded size (must equal length when raw) */
	const char *digest;   /* or NULL */
	uint64_t desc_offset; /* where the tensor is described (diagnostics) */
};

int tfs_builder_new(struct tfs_builder **out, const struct tfs_source *src,
		    const struct tfs_build_options *opts);
void tfs_builder_free(struct tfs_builder *b);

/* Add a tensor file.  *handle (may be NULL) names it afterwards. */
int tfs_builder_add_tensor(struct tfs_builder *b,
			   const struct tfs_tensor_spec *spec, uint32_t *handle,
			   struct tfs_diag *d);

/*
 * Add a group: a directory standing for one logical tensor whose components
 * are added with tfs_builder_add_component.  @spec's name/path place it;
 * its dtype and shape (optional, dtype may be NULL) become its xattrs.
 * Extent fields are ignored.
 */
int tfs_builder_add_group(struct tfs_builder *b,
			  const struct tfs_tensor_spec *spec, uint32_t *handle,
			  struct tfs_diag *d);

/* Add a component file @role (one path component) to group @group. */
int tfs_builder_add_component(struct tfs_builder *b, uint32_t group,
			      const char *role,
			      const struct tfs_tensor_spec *spec,
			      uint32_t *handle, struct tfs_diag *d);

/*
 * Set xattr "user.tensorfs.<key>" on what @handle names (a tensor, group,
 * component or TFS_BUILDER_ROOT).  A later value for the same key replaces
 * the earlier one.  Returns 0 or -ENOMEM / -EINVAL.
 */
int tfs_builder_set_xattr(struct tfs_builder *b, uint32_t handle,
			  const char *key, const void *value, size_t len);
int tfs_builder_set_xattr_str(struct tfs_builder *b, uint32_t handle,
			      const char *key, const char *value);
/* compact JSON of @value (a borrowed reference) */
int tfs_builder_set_xattr_json(struct tfs_builder *b, uint32_t handle,
			       const char *key, const json_t *value);

/*
 * The JSON object that becomes .tensorfs/metadata.json.  Borrowed: the
 * builder owns it; the reader adds members to it.
 */
json_t *tfs_builder_metadata(struct tfs_builder *b);

/*
 * Extra members for a tensor's entry in manifest.json (borrowed object the
 * builder owns), e.g. a reader-specific "param_id".
 */
json_t *tfs_builder_manifest_extra(struct tfs_builder *b, uint32_t handle);

/* Add .tensorfs/@name with @len bytes (copied). */
int tfs_builder_add_meta_file(struct tfs_builder *b, const char *name,
			      const void *data, size_t len);

/*
 * Map names to paths, build the tree and the JSON files.  @format is the
 * reader's short name (static string).  On success *out owns everything;
 * the builder may then be freed.
 */
int tfs_builder_finish(struct tfs_builder *b, const char *format,
		       struct tfs_tree **out, struct tfs_diag *d);

/* number of tensor files and groups added so far */
uint32_t tfs_builder_count(const struct tfs_builder *b);

#endif
