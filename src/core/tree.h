/* SPDX-License-Identifier: MIT */
/*
 * The immutable tree a container is shown as.
 *
 * Made by the builder (builder.h), then only read: every FUSE thread and the
 * CLI walk it without locks.  Node 0 is the root; a node's inode number is
 * its index + 1 (so the root is FUSE_ROOT_ID).  A directory's children are
 * contiguous in tree->children, sorted bytewise by name, so lookup is a
 * binary search and readdir an index.
 *
 * Four kinds of node:
 *   TFS_NODE_DIR     a directory (the root, a path prefix, a tensor group)
 *   TFS_NODE_TENSOR  a regular file whose bytes are a tensor's elements,
 *                    described by tree->tensors[node->tensor]
 *   TFS_NODE_MEMFILE a regular file held in memory (the .json files)
 *   TFS_NODE_VIEW    a view's file (src/core/view_ops.h): node->view says
 *                    which (tfs_view_kinds: a preview PNG, a file of the
 *                    safetensors export, ...), node->tensor what it shows,
 *                    node->mem_len its size; read through the view's hook
 */
#ifndef TENSORFS_TREE_H
#define TENSORFS_TREE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/abi.h"
#include "codec/codec.h" /* enum tfs_encoding, struct tfs_codec_params */
#include "core/dtype.h"

#define TFS_ROOT_NODE 0u
#define TFS_NO_NODE UINT32_MAX
#define TFS_XATTR_PREFIX "user.tensorfs."
/* the mount's own directory at the root (.tensorfs/: JSON files, export) */
#define TFS_META_DIR ".tensorfs"

enum tfs_node_kind {
	TFS_NODE_DIR,
	TFS_NODE_TENSOR,
	TFS_NODE_MEMFILE,
	/* a view's file (src/core/view_ops.h): tfs_node.view says which */
	TFS_NODE_VIEW,
};

/*
 * One piece of a tensor's stored bytes.  In the tree, @source indexes the
 * image's sources (the containers, then the companion files and slices the
 * readers opened); in a reader's spec (builder.h) it is a builder handle.
 * @mem non-NULL: the piece is @length bytes held in memory (the tree's
 * copy), @source and @offset unused.
 */
struct tfs_segment {
	uint64_t offset;
	uint64_t length;
	const uint8_t *mem;
	uint32_t source;
};

struct tfs_xattr {
	char *name;  /* full name, "user.tensorfs.dtype" */
	char *value; /* not NUL-terminated in the protocol sense */
	size_t len;
};

/*
 * One regular file backed by bytes of the container.  Members are ordered
 * by size, so 100,000 records waste no padding.
 */
struct tfs_tensor {
	char *name; /* stored name as in the container (may be raw bytes) */
	size_t name_len;
	char *path; /* its path in the mount, "/"-separated, no leading "/" */
	/* its name: "float32", "void12" (static or tree-owned) */
	const char *dtype;
	uint64_t *shape;
	uint64_t offset; /* stored extent, absolute in the container */
	uint64_t stored_length;
	/*
	 * nsegs > 0: the stored bytes are these pieces, in order (raw
	 * tensors only: a companion's several ranges, bytes in memory);
	 * @offset is the first piece's, @stored_length their sum.  0: the
	 * one extent @offset/@stored_length of image source @source.
	 */
	struct tfs_segment *segs;
	uint64_t size; /* the tensor's bytes: decoded byte count */
	/*
	 * Bytes the file shows before the tensor's (the npy view's header,
	 * src/views/npy.c), or NULL: the file's size is prefix_len + size.
	 */
	uint8_t *prefix;
	/*
	 * A converting view (the as view, src/views/as.c): the file shows
	 * the elements as dtype @view in @view_size bytes (after the prefix)
	 * instead of its @size own bytes; INVALID: no view.
	 */
	uint64_t view_size;
	/* -o npy: the header's descr from the container (a literal), or NULL */
	const char *npy_descr;
	struct tfs_codec_params codec; /* for the decoder (codec.h) */
	char *digest; /* "crc32c:0x..." / "sha256:..." or NULL */
	/*
	 * has_digest_extent: the digest covers [digest_offset, +digest_length)
	 * of the container instead of the stored extent (a stored zip
	 * member's CRC-32 covers its whole .npy file, header included).
	 */
	uint64_t digest_offset, digest_length;
	char *unreadable; /* why reads are refused, or NULL (builder.h) */
	char *role;	  /* component role inside its group, or NULL */
	enum tfs_dtype dtype_id;
	uint32_t record_size; /* TFS_DTYPE_VOID: bytes per record */
	uint32_t ndim;
	uint32_t prefix_len;
	enum tfs_dtype view;
	enum tfs_encoding encoding;
	uint32_t source; /* which container (image->srcs index) */
	uint32_t nsegs;
	uint32_t node;	/* its node */
	uint32_t group; /* the tensor's group node, or TFS_NO_NODE */
	bool has_digest_extent;
	bool digest_decoded; /* @digest covers the decoded bytes, not the
				stored ones (encoded tensors only) */
	bool unreadable_is_fault;
	bool big_endian; /* stored so (its or its group's byte_order) */
	bool fortran;	 /* column-major (its or its group's order) */
	/*
	 * its view computes its values from other records (the quant view):
	 * its own bytes are one of the inputs, not its values (values.h)
	 */
	bool computed;
	/*
	 * 0: the file shows the record's bytes (after the prefix); else the
	 * view tfs_view_kinds[shown_by - 1] makes them (its read_tensor hook)
	 */
	uint8_t shown_by;
};

struct tfs_node {
	char *name;	 /* "" for the root */
	uint32_t parent; /* the root is its own parent */
	enum tfs_node_kind kind;
	uint32_t first_child; /* index into tree->children */
	uint32_t nchildren;
	union {
		uint32_t nsubdirs; /* DIR: for st_nlink */
		uint32_t view;	   /* VIEW: its index in tfs_view_kinds */
	};
	/* TENSOR: index into tree->tensors; VIEW: the view's own number */
	uint32_t tensor;
	const char *mem;  /* TFS_NODE_MEMFILE: contents */
	uint64_t mem_len; /* MEMFILE, VIEW: size */
	/* a MEMFILE made on first use (tfs_node_size), or NULL */
	struct tfs_lazy_file *lazy;
	/*
	 * the stored xattrs (see tfs_tree_getxattr), sorted by name: a block
	 * holding the names and values, maybe shared with other nodes
	 */
	struct tfs_xattr *xattrs;
	uint32_t nxattrs;
	/*
	 * the stored names, NUL-separated, follow the array in the block
	 * (tfs_node_xattr_names): their length, sum of strlen(name) + 1
	 */
	uint32_t xattr_names_len;
};

/* the stored xattrs' names, NUL-separated (xattr_names_len bytes) */
static inline const char *tfs_node_xattr_names(const struct tfs_node *n)
{
	return n->nxattrs ? (const char *)(n->xattrs + n->nxattrs) : "";
}

/*
 * A memory file whose contents are made the first time its size or bytes
 * are needed (a metadata.json holding a 150,000-token vocabulary would
 * slow the mount): @make runs once, under @lock, and fills node->mem and
 * mem_len; @destroy frees it with the tree.  Made by the builder.
 */
struct tfs_lazy_file {
	pthread_mutex_t lock;
	atomic_bool done;
	int (*make)(struct tfs_lazy_file *lf, char **data, size_t *len);
	void (*destroy)(struct tfs_lazy_file *lf);
};

struct tfs_tree;
struct tfs_export;

/*
 * A directory whose children are made the first time it is looked in:
 * .tensorfs/export/, whose plan took a third of a 90,000-tensor model's
 * mount and 15 MB that most mounts never use.  At build its node slots
 * [first, first + cap) (children of @dir, kind MEMFILE, named "") and its
 * slice of tree->children are reserved and @dir shows no children; @make
 * runs once, under @lock: it fills the slots it needs, puts them in the
 * slice in name order and sets @dir's nchildren.  On failure the directory
 * stays empty.  @destroy frees it with the tree.  Made by the builder.
 */
struct tfs_lazy_dir {
	pthread_mutex_t lock;
	atomic_bool done;
	uint32_t dir, first, cap;
	int err; /* what @make returned: 0 or -errno */
	int (*make)(struct tfs_tree *t, struct tfs_lazy_dir *ld);
	void (*destroy)(struct tfs_lazy_dir *ld);
};

/* A reader's warning about the container (tfs_builder_warn). */
struct tfs_warning {
	uint64_t offset; /* UINT64_MAX: none */
	char *msg;
};

struct tfs_tree {
	struct tfs_node *nodes;
	uint32_t nnodes;
	uint32_t *children; /* node indices, grouped by parent */
	/*
	 * The records: [0, ntensors) are the tensor files the tree shows;
	 * [ntensors, nrecords) are inputs a view took (tfs_draft_hide: a
	 * quantized layer's scales), read only through that view
	 */
	struct tfs_tensor *tensors;
	uint32_t ntensors, nrecords;
	/* each view's own data (tfs_view_kinds order; freed by its hook) */
	void **view_data;
	const char *format;   /* short name of the reader */
	uint64_t total_bytes; /* sum of tensor file sizes */
	struct tfs_warning *warnings;
	uint32_t nwarnings;
	/*
	 * Where the builder puts the tree's small, long-lived pieces (names,
	 * paths, dtypes, shapes, digests, roles, xattr blocks): chunks freed
	 * together by tfs_tree_free, so 100,000 tensors are not 1,000,000
	 * allocations scattered among the loader's freed scratch.
	 */
	struct tfs_arena_chunk *arena;
	/*
	 * the safetensors export (export.h): NULL until .tensorfs/export/ is
	 * first looked in (tfs_tree_export), and with -o export=off
	 */
	struct tfs_export *export;
	struct tfs_lazy_dir *lazy_dir; /* .tensorfs/export/, or NULL */
};

/* @n bytes from @t's arena (8-byte aligned), or NULL */
void *tfs_tree_alloc(struct tfs_tree *t, size_t n);
/* a copy of @n bytes plus a NUL in @t's arena, or NULL */
char *tfs_tree_dup(struct tfs_tree *t, const void *p, size_t n);

/*
 * The child of directory @dir named @name (length @len), or TFS_NO_NODE.
 * @dir must be a directory node.
 */
TFS_PRIVATE uint32_t tfs_tree_lookup(const struct tfs_tree *t, uint32_t dir,
				     const char *name, size_t len);

/*
 * Make directory @dir's children if it is the lazy one (tfs_lazy_dir):
 * before reading its nchildren other than through tfs_tree_lookup.
 */
TFS_PRIVATE void tfs_tree_dir_ready(const struct tfs_tree *t, uint32_t dir);

/* the export, made if it was not yet; NULL with -o export=off */
TFS_PRIVATE const struct tfs_export *tfs_tree_export(const struct tfs_tree *t);

/* Resolve a "/"-separated path from the root; TFS_NO_NODE if absent. */
TFS_PRIVATE uint32_t tfs_tree_resolve(const struct tfs_tree *t,
				      const char *path);

/*
 * Extended attributes.  A tensor file's standard ones (name, dtype,
 * stored_dtype, shape, role, offset, stored_length, encoding, digest,
 * unreadable) are made from its record when asked: 100,000 tensors would
 * otherwise hold ~40 MB of them.  A node stores only the others (the
 * reader's, a shard's, and every xattr of a directory), in a block that
 * nodes with the same ones share.
 */

/* The stored xattr named @name on @node (not a derived one), or NULL. */
TFS_PRIVATE const struct tfs_xattr *
tfs_tree_xattr(const struct tfs_tree *t, uint32_t node, const char *name);

/*
 * getxattr(2): the length of @node's xattr @name, its bytes copied to @buf
 * when @size > 0 (-ERANGE when they do not fit); -ENODATA, -ENOENT (no
 * such node), -ENOMEM.
 */
TFS_PRIVATE ssize_t tfs_tree_getxattr(const struct tfs_tree *t, uint32_t node,
				      const char *name, char *buf, size_t size);

/* listxattr(2): the NUL-terminated names, sorted, in the same way */
TFS_PRIVATE ssize_t tfs_tree_listxattr(const struct tfs_tree *t, uint32_t node,
				       char *buf, size_t size);

/* @node has xattr @name and its value is @want (under 64 bytes) */
bool tfs_tree_xattr_is(const struct tfs_tree *t, uint32_t node,
		       const char *name, const char *want);

/*
 * the size of a regular file node (0 for directories); a lazy memory file
 * is made here (thread-safe), so node->mem is valid after this call
 */
TFS_PRIVATE uint64_t tfs_node_size(const struct tfs_tree *t, uint32_t node);

void tfs_tree_free(struct tfs_tree *t);

#endif
