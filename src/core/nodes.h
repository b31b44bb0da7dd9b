/* SPDX-License-Identifier: MIT */
/*
 * A tree's nodes while it is being made (src/core/nodes.c).  The builder
 * adds the directories, the tensor files and .tensorfs/'s JSON files; the
 * view planners (src/views/, through view_ops.h) then add theirs (previews, the
 * export's directory) over the finished tensor records; tfs_nodes_seal() links
 * the list into its tree, after which nothing is added.
 */
#ifndef TFS_CORE_NODES_H
#define TFS_CORE_NODES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tree.h"

struct tfs_node_list {
	struct tfs_node *v;
	uint32_t n, cap;
	struct tfs_tree *tree; /* whose arena holds the names */
};

/*
 * A node @name (@len bytes, copied into the tree's arena) of @kind under
 * @parent, its index in *@out; 0, -ENOMEM or -E2BIG
 */
int tfs_nodes_add(struct tfs_node_list *nl, const char *name, size_t len,
		  uint32_t parent, enum tfs_node_kind kind, uint32_t *out);

/* a node of view @view (tfs_view_kinds) showing its item @item, @size bytes */
int tfs_nodes_add_view(struct tfs_node_list *nl, const char *name, size_t len,
		       uint32_t parent, uint32_t view, uint32_t item,
		       uint64_t size, uint32_t *out);

/*
 * The list becomes @nl->tree's nodes, each directory's children sorted by
 * name (tfs_tree_lookup's order); the lazy directory's reserved slots show
 * only once it is made.  @nl is empty afterwards, also on failure (-ENOMEM:
 * the tree then frees what it was given).
 */
int tfs_nodes_seal(struct tfs_node_list *nl);

/* free an unsealed list (the names are the tree's) */
void tfs_nodes_free(struct tfs_node_list *nl);

/*
 * @n xattrs @x, sorted by name, packed into one block of the tree's arena
 * that @nd then holds: the array, the listxattr names, the values (one
 * allocation for a node's xattrs: a tree of 100,000 tensors holds 800,000).
 * 0, -ENOMEM or -E2BIG.
 */
int tfs_nodes_pack_xattrs(struct tfs_tree *t, struct tfs_node *nd,
			  const struct tfs_xattr *x, uint32_t n);

/*
 * Node @node's xattr @from (if it has one) is named @to: its block, which
 * other nodes may share, is copied first.  0 or -ENOMEM.
 */
int tfs_nodes_rename_xattr(struct tfs_node_list *nl, uint32_t node,
			   const char *from, const char *to);

/* byte_order=big (or stored_byte_order=big: -o as) on a node */
bool tfs_node_big(const struct tfs_node *nd);

#endif
