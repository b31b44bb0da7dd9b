/* SPDX-License-Identifier: MIT */
/*
 * The tree builder: what a format reader describes a container to.
 *
 * A reader adds tensors (files), groups (a directory that stands for one
 * logical tensor made of several component files), xattrs and metadata.
 * The builder owns the rules every format shares, so a reader cannot
 * forget them and no reader repeats them:
 *   - the stored extent lies inside the container (overflow-checked);
 *   - with a dtype of fixed unit, size == bytes of product(shape) elements
 *     (tfs_dtype_bytes: block-quantized and sub-byte types included);
 *   - a raw tensor's size equals its stored length;
 *   - stored names are unique (tensors and groups), a group's component
 *     roles are unique;
 *   - stored extents do not overlap, when the reader asks for it
 *     (tfs_builder_set_overlap_rule);
 * and keeps the reader's warnings as data (tfs_builder_warn).
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

#include "core/abi.h"
#include "core/dtype.h"
#include "core/tree.h"

struct tfs_builder;
struct tfs_diag;
struct tfs_format;
struct tfs_source;

#define TFS_BUILDER_ROOT 0u

struct tfs_build_options {
	bool flat; /* -o flat: every tensor at the root, unsplit */
	bool npy;  /* -o npy: every tensor file is a .npy file (views/npy.c) */
	/*
	 * -o as=float32: numeric tensors of another dtype are shown as this
	 * dtype, converted on read (src/views/as.c); INVALID: as stored
	 */
	enum tfs_dtype as;
	/*
	 * -o as=float32,all: every numeric dtype converted; without it only
	 * the floating ones (floats, float8/6/4, ggml's quantized blocks):
	 * integers and bool stay as stored (an int64 id of 2^24 and more is
	 * not exact as float32)
	 */
	bool as_all;
	/* -o previews: "<file>.png" beside each numeric tensor of one or
	 * more dimensions (src/views/preview.h) */
	bool previews;
	/* -o export=off: no .tensorfs/export/ (src/views/export.h) */
	bool no_export;
	/* -o export_shard=SIZE: the export's shard size; 0: the default */
	uint64_t export_shard;
};

/*
 * "float32" (the one converting view) into *out, *all false;
 * "float32,all" likewise with *all true; -EINVAL otherwise
 */
TFS_PRIVATE int tfs_parse_as(const char *s, enum tfs_dtype *out, bool *all);

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
	enum tfs_dtype dtype; /* INVALID: none (groups only) */
	uint32_t record_size; /* TFS_DTYPE_VOID: bytes per record */
	size_t ndim;
	const uint64_t *shape;
	uint64_t offset; /* stored bytes: absolute offset, length */
	uint64_t length;
	/*
	 * Where @offset/@length lie: 0, the container being described, or a
	 * handle from tfs_builder_open_companion() (a file beside it).
	 */
	uint32_t source;
	/*
	 * Stored bytes in memory (a reader converted them: varint-packed
	 * fields, a header's compact data): @length bytes here, copied;
	 * @offset/@source unused.  Raw tensors only.
	 */
	const void *mem;
	/*
	 * Stored bytes in several pieces (a weight spanning two shard
	 * files): @nsegs of them in order, each with its own handle or
	 * memory (struct tfs_segment, tree.h), copied; @offset, @length,
	 * @source and @mem unused.  Raw tensors only (at most
	 * TFS_MAX_SEGMENTS).
	 */
	const struct tfs_segment *segs;
	size_t nsegs;
	enum tfs_encoding encoding;
	uint64_t size;	      /* decoded size (must equal length when raw) */
	const char *digest;   /* or NULL */
	bool digest_decoded;  /* @digest covers the decoded bytes (zTensor 2) */
	uint64_t desc_offset; /* where the tensor is described (diagnostics) */
	/*
	 * for the decoder of an encoded tensor (tree.h); zeros: none.  A
	 * gather's layout is copied.
	 */
	struct tfs_codec_params codec;
	/*
	 * The digest covers [digest_offset, +digest_length) instead of the
	 * stored extent (raw tensors only; inside the file).
	 */
	bool has_digest_extent;
	uint64_t digest_offset, digest_length;
	/*
	 * -o npy: the header's descr, a Python literal ("'<U5'", "[('x',
	 * '<f4')]"), when the container is numpy's and knows the records
	 * better than void<n>; ASCII only; NULL: derived from the dtype.
	 */
	const char *npy_descr;
	/*
	 * Non-NULL: the file is listed with its decoded @size, but its bytes
	 * cannot be served (they are in another file, their encoding is not
	 * supported, or the reader already found them breaking a rule of the
	 * format): every read fails with EIO, `tensorfs verify` reports this
	 * text, and it is the file's "unreadable" xattr.  The extent checks
	 * (inside the file, raw size == length) are skipped and the extent
	 * takes no part in the overlap rule; @offset/@length may be 0.
	 */
	const char *unreadable;
	/* with @unreadable: the container is at fault (verify counts the file
	 * as FAILED); false: a capability is missing (verify skips it) */
	bool unreadable_is_fault;
};

/*
 * Filling a spec: readers set what they know through these setters (as
 * libarchive's archive_entry_set_*), never the fields one by one, so the
 * spec can grow without touching every reader.  Each sets its fields only;
 * tfs_spec_name (or tfs_spec_tensor) starts a spec and empties it first.
 * Pointers are borrowed until the spec is added (the builder copies them).
 * The builder checks what was set (see the header comment).
 */
/* *s emptied, then stored name @name (any bytes), described at byte @at
 * of its container (diagnostics) */
void tfs_spec_name(struct tfs_tensor_spec *s, const char *name, size_t len,
		   uint64_t at);
/* its dtype and shape (of a group: its xattrs; dtype INVALID: none) */
void tfs_spec_type(struct tfs_tensor_spec *s, enum tfs_dtype dtype,
		   const uint64_t *shape, size_t ndim);
/* tfs_spec_name, then tfs_spec_type: a tensor or group */
void tfs_spec_tensor(struct tfs_tensor_spec *s, const char *name, size_t len,
		     enum tfs_dtype dtype, const uint64_t *shape, size_t ndim,
		     uint64_t at);
/* its @n path components, each one path component (see @path) */
void tfs_spec_path(struct tfs_tensor_spec *s, const char *const *comps,
		   size_t n);
/* TFS_DTYPE_VOID: each element a record of @size bytes */
void tfs_spec_records(struct tfs_tensor_spec *s, uint32_t size);
/* -o npy: the header's descr (see @npy_descr) */
void tfs_spec_npy_descr(struct tfs_tensor_spec *s, const char *descr);
/*
 * Its bytes as stored: [@off, +@len) of its source, @len bytes (raw).
 * The common case: tfs_spec_tensor, then this.
 */
void tfs_spec_raw(struct tfs_tensor_spec *s, uint64_t off, uint64_t len);
/*
 * Where its stored bytes lie, [@off, +@len) of its source, when its size
 * (tfs_spec_size) comes from elsewhere: the builder checks the two agree.
 */
void tfs_spec_stored(struct tfs_tensor_spec *s, uint64_t off, uint64_t len);
/* its decoded size, as described (the file's size) */
void tfs_spec_size(struct tfs_tensor_spec *s, uint64_t size);
/* its stored bytes are in @source (0 or a tfs_builder_open_companion
 * handle), not in the container */
void tfs_spec_in(struct tfs_tensor_spec *s, uint32_t source);
/* its stored bytes are @len bytes at @mem (copied), raw: size @len */
void tfs_spec_mem(struct tfs_tensor_spec *s, const void *mem, uint64_t len);
/* its stored bytes are @n pieces in order (copied); size: tfs_spec_size */
void tfs_spec_segments(struct tfs_tensor_spec *s,
		       const struct tfs_segment *segs, size_t n);
/* its stored bytes are @encoding, decoded with @params (NULL: none) */
void tfs_spec_encoded(struct tfs_tensor_spec *s, enum tfs_encoding encoding,
		      const struct tfs_codec_params *params);
/* its digest (text, as tfs_digest_parse reads it), of the stored bytes or,
 * @decoded, of the decoded ones */
void tfs_spec_digest(struct tfs_tensor_spec *s, const char *digest,
		     bool decoded);
/* its digest covers [@off, +@len) of the file, not the stored extent */
void tfs_spec_digest_over(struct tfs_tensor_spec *s, const char *digest,
			  uint64_t off, uint64_t len);
/* listed but never served: reads fail, @why says why (see @unreadable);
 * @is_fault: the container is at fault, else a capability is missing */
void tfs_spec_unreadable(struct tfs_tensor_spec *s, const char *why,
			 bool is_fault);

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
/*
 * Set xattr "user.tensorfs.<key>" on the mount's root itself, whatever
 * source is current (a collection's own knowledge: a model directory's
 * config.json).  0 or -ENOMEM / -EINVAL.
 */
int tfs_builder_set_top_xattr(struct tfs_builder *b, const char *key,
			      const void *value, size_t len);
/* compact JSON of @value (a borrowed reference) */
int tfs_builder_set_xattr_json(struct tfs_builder *b, uint32_t handle,
			       const char *key, const json_t *value);

/*
 * The JSON object that becomes .tensorfs/metadata.json.  Borrowed: the
 * builder owns it; the reader adds members to it.
 */
json_t *tfs_builder_metadata(struct tfs_builder *b);

/*
 * A member @key of the metadata (where tfs_builder_metadata()'s members
 * go) made only when .tensorfs/metadata.json is first read or stat'ed:
 * @make(@arg) returns a new reference (NULL: out of memory).  For metadata
 * too large to put into JSON at every mount (a 150,000-token vocabulary).
 * @make runs at most once, later, in any thread; it must not use the
 * builder or the source's mapping (give it a copy).  @free_arg(@arg) is
 * called when it is no longer needed, also when this call fails (-ENOMEM).
 */
int tfs_builder_defer_metadata(struct tfs_builder *b, const char *key,
			       json_t *(*make)(void *arg), void *arg,
			       void (*free_arg)(void *arg));

/*
 * Extra members for a tensor's entry in manifest.json (borrowed object the
 * builder owns), e.g. a reader-specific "param_id".
 */
json_t *tfs_builder_manifest_extra(struct tfs_builder *b, uint32_t handle);

/*
 * The same members for many entries: @handle's extra members are @shared's
 * (a reference taken), copied only if tfs_builder_manifest_extra() is
 * asked for this entry's own later.  For an entry with none yet; 0, or
 * -EINVAL.  100,000 tensors with {"layout": "dense"} hold one object.
 */
int tfs_builder_share_manifest_extra(struct tfs_builder *b, uint32_t handle,
				     json_t *shared);

/* Add .tensorfs/@name with @len bytes (copied). */
int tfs_builder_add_meta_file(struct tfs_builder *b, const char *name,
			      const void *data, size_t len);

/*
 * Companion files: a file next to the container, by a name relative to
 * its directory ("model.onnx_data", "variables/variables.data-00000-of-
 * 00001"), for a local file or a remote URL alike.  The name must stay
 * inside the container's directory: absolute names, backslashes, empty
 * and ".." components are refused, and no symlink may lead out (openat2's
 * RESOLVE_BENEATH).  The same name again gives the same handle.  *@source
 * is the handle to put in a spec's @source or a segment.  0 or -errno with
 * @d naming the file (-ENOENT when it is missing: a reader may then make
 * the tensors in it unreadable instead of refusing the container).  At most
 * TFS_MAX_COMPANIONS per container.
 */
#define TFS_MAX_COMPANIONS 1024
#define TFS_MAX_SEGMENTS (1u << 20)
int tfs_builder_open_companion(struct tfs_builder *b, const char *name,
			       uint32_t *source, struct tfs_diag *d);

/*
 * The same for the field at @at that names the file: a failure is said
 * again there as "FMT: <why>" (tfs_diag_refer), a missing file as
 * malformed (-EBADMSG: the container names a file that is not there) or,
 * with TFS_MISSING_UNREADABLE, returned as -ENOENT with @d holding why
 * (for a reader that makes the tensors in it unreadable, then clears @d).
 */
#define TFS_MISSING_UNREADABLE 1u
int tfs_builder_open_companion_at(struct tfs_builder *b, const char *name,
				  uint64_t at, unsigned flags, uint32_t *source,
				  struct tfs_diag *d, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));

/* the bytes of a handle tfs_builder_open_companion() gave (0: the
 * container), for a reader that must parse a companion; NULL if none */
const struct tfs_source *tfs_builder_source(struct tfs_builder *b,
					    uint32_t source);

/*
 * A container inside the container (a stored zip member, an uncompressed
 * tar member): bytes [@offset, +@length) of it, read zero-copy as a file
 * of its own (a slice, tfs_source_slice: of a local or a remote container
 * alike) by reader @fmt (NULL: detected), as if its tensors were the
 * container's.  @name names it in messages.  Two placements:
 *   - under directory @dir: a container of its own, its tree under @dir,
 *     its metadata under metadata member @dir; its offsets (xattrs,
 *     manifest, warnings) are inside the slice, and so are those of @d
 *     when its reader refuses it (its format named);
 *   - @dir "" or NULL: the container's own content (Keras's weights
 *     member): its tree at the root, its metadata in the container's,
 *     every offset and message in the container's bytes (the tensors
 *     read through the container; the slice's source is closed unless
 *     its reader opened companions).
 * 0 or -errno with @d filled.
 * Slices nest at most TFS_MAX_SLICE_DEPTH deep (-E2BIG beyond);
 * tfs_builder_slice_depth() is how many are loading now.
 */
#define TFS_MAX_SLICE_DEPTH 8u
unsigned tfs_builder_slice_depth(const struct tfs_builder *b);
int tfs_builder_load_slice(struct tfs_builder *b, uint64_t offset,
			   uint64_t length, const char *name, const char *dir,
			   const struct tfs_format *fmt, struct tfs_diag *d);

/*
 * A finished builder's tree before its nodes are sealed: the tensor
 * records, their nodes and the JSON files.  The mount's finish step plans
 * the views over it (src/core/views.h), then seals it.
 */
struct tfs_node_list;
struct tfs_draft {
	struct tfs_tree *tree;
	struct tfs_node_list *nodes; /* src/core/nodes.h */
	struct tfs_build_options opts;
	char *sources;	   /* the containers' names, comma-separated */
	char *source_meta; /* one container's __metadata__ (JSON) or NULL */
	/* a model directory's config.json (quantization_config...) or NULL */
	json_t *model_config;
	struct tfs_mf *manifest; /* its lazy file's; for tfs_draft_compact */
	uint8_t *hidden;	 /* by record: tfs_draft_hide'n */
	uint32_t nhidden;
};

/*
 * Map names to paths, build the tensor records, their nodes and the JSON
 * files into @dr.  @format is the reader's short name (static string).  0,
 * or -errno with @d filled and @dr empty.  The builder may then be freed.
 */
int tfs_builder_draft(struct tfs_builder *b, const char *format,
		      struct tfs_draft *dr, struct tfs_diag *d);
/* link @dr's nodes into its tree, *@out; @dr is emptied either way */
int tfs_draft_seal(struct tfs_draft *dr, struct tfs_tree **out,
		   struct tfs_diag *d);
void tfs_draft_free(struct tfs_draft *dr);

/* tfs_builder_draft then tfs_draft_seal: a tree without views */
int tfs_builder_finish(struct tfs_builder *b, const char *format,
		       struct tfs_tree **out, struct tfs_diag *d);

/*
 * Stored extents: may they overlap?  ALLOW (the default: formats that
 * alias bytes, e.g. shared storages), FORBID (refused at finish, naming
 * both tensors), WARN (a warning naming both), IDENTICAL (several files may
 * share exactly the same extent, e.g. tied weights; any other overlap is
 * refused as with FORBID).  Zero-length extents never overlap anything.
 */
enum tfs_overlap_rule {
	TFS_OVERLAP_ALLOW = 0,
	TFS_OVERLAP_FORBID,
	TFS_OVERLAP_WARN,
	TFS_OVERLAP_IDENTICAL,
};
void tfs_builder_set_overlap_rule(struct tfs_builder *b,
				  enum tfs_overlap_rule rule);

/*
 * A model directory's config.json (kept: a view reads its
 * quantization_config at the finish step), or NULL
 */
void tfs_builder_set_model_config(struct tfs_builder *b, json_t *config);

/*
 * Record a warning about the container (at byte @offset, or
 * TFS_NO_OFFSET): kept in tree->warnings and in metadata.json's
 * "warnings".  Returns 0 or -ENOMEM.
 */
#define TFS_NO_OFFSET UINT64_MAX
int tfs_builder_warn(struct tfs_builder *b, uint64_t offset, const char *fmt,
		     ...) __attribute__((format(printf, 3, 4)));

#endif
