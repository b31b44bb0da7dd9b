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
 *   TFS_NODE_PREVIEW a PNG picture of tree->tensors[node->tensor] (-o
 *                    previews), node->mem_len bytes, made on first read
 */
#ifndef TENSORFS_TREE_H
#define TENSORFS_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "tensorfs/dtype.h"

#define TFS_ROOT_NODE 0u
#define TFS_NO_NODE UINT32_MAX
#define TFS_XATTR_PREFIX "user.tensorfs."

enum tfs_node_kind {
	TFS_NODE_DIR,
	TFS_NODE_TENSOR,
	TFS_NODE_MEMFILE,
	TFS_NODE_PREVIEW,
};

enum tfs_encoding {
	TFS_ENCODING_RAW,  /* the stored bytes are the file's bytes */
	TFS_ENCODING_ZSTD, /* the stored bytes are zstd frame(s) */
};

struct tfs_xattr {
	char *name;  /* full name, "user.tensorfs.dtype" */
	char *value; /* not NUL-terminated in the protocol sense */
	size_t len;
};

/* One regular file backed by bytes of the container. */
struct tfs_tensor {
	char *name; /* stored name as in the container (may be raw bytes) */
	size_t name_len;
	char *path;  /* its path in the mount, "/"-separated, no leading "/" */
	char *dtype; /* its name: "float32", "void12" (tree-owned) */
	enum tfs_dtype dtype_id;
	uint32_t record_size; /* TFS_DTYPE_VOID: bytes per record */
	uint32_t ndim;
	uint64_t *shape;
	uint64_t offset; /* stored extent, absolute in the container */
	uint64_t stored_length;
	uint64_t size; /* the tensor's bytes: decoded byte count */
	/*
	 * Bytes the file shows before the tensor's (the -o npy header), or
	 * NULL: the file's size is prefix_len + size.
	 */
	uint8_t *prefix;
	uint32_t prefix_len;
	/*
	 * A converting view (-o as=float32, src/core/as_view.h): the file
	 * shows the elements as dtype @view in @view_size bytes (after the
	 * prefix) instead of its @size own bytes; INVALID: no view.
	 */
	enum tfs_dtype view;
	uint64_t view_size;
	enum tfs_encoding encoding;
	char *digest;	 /* "crc32c:0x..." / "sha256:..." or NULL */
	uint32_t source; /* which container (image->srcs index) */
	uint32_t node;	 /* its node */
	uint32_t group;	 /* the tensor's group node, or TFS_NO_NODE */
	char *role;	 /* component role inside its group, or NULL */
};

struct tfs_node {
	char *name;	 /* "" for the root */
	uint32_t parent; /* the root is its own parent */
	enum tfs_node_kind kind;
	uint32_t first_child; /* index into tree->children */
	uint32_t nchildren;
	uint32_t nsubdirs; /* for st_nlink */
	uint32_t tensor;   /* TENSOR, PREVIEW: index into tree->tensors */
	const char *mem;   /* TFS_NODE_MEMFILE: contents */
	uint64_t mem_len;  /* MEMFILE, PREVIEW: size */
	struct tfs_xattr *xattrs; /* sorted by name */
	uint32_t nxattrs;
	size_t xattr_names_len; /* listxattr length: sum of strlen(name) + 1 */
	char *xattr_names;	/* the listxattr buffer, NUL-separated */
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
	struct tfs_tensor *tensors;
	uint32_t ntensors;
	const char *format;   /* short name of the reader */
	uint64_t total_bytes; /* sum of tensor file sizes */
	struct tfs_warning *warnings;
	uint32_t nwarnings;
};

/*
 * The child of directory @dir named @name (length @len), or TFS_NO_NODE.
 * @dir must be a directory node.
 */
uint32_t tfs_tree_lookup(const struct tfs_tree *t, uint32_t dir,
			 const char *name, size_t len);

/* Resolve a "/"-separated path from the root; TFS_NO_NODE if absent. */
uint32_t tfs_tree_resolve(const struct tfs_tree *t, const char *path);

/* The xattr named @name on @node, or NULL. */
const struct tfs_xattr *tfs_tree_xattr(const struct tfs_tree *t, uint32_t node,
				       const char *name);

/* the size of a regular file node (0 for directories) */
uint64_t tfs_node_size(const struct tfs_tree *t, uint32_t node);

void tfs_tree_free(struct tfs_tree *t);

#endif
