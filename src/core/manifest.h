/* SPDX-License-Identifier: MIT */
/*
 * .tensorfs/manifest.json, made on first use from the tree's tensor records.
 *
 * A mount of 100,000 tensors would otherwise write ~26 MB of JSON text and
 * keep it for its lifetime although few users ever read it.  The builder
 * hands this module what the records do not hold (each tensor's reader
 * extras, interned; groups' own members and their components' records;
 * container labels), in manifest order; the text is made on the first stat
 * or read and is byte for byte what jansson's JSON_INDENT(2) dump of the
 * whole document would be.
 */
#ifndef TFS_CORE_MANIFEST_H
#define TFS_CORE_MANIFEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/tree.h"

/* The fields of one manifest entry (a tensor, a group or a component). */
struct tfs_mf_fields {
	const char *role; /* a component's role (then no name), or NULL */
	const char *name;
	size_t name_len;
	const char *path;
	const char *dtype;   /* NULL: none */
	enum tfs_dtype view; /* -o as: the dtype shown, or INVALID */
	const uint64_t *shape;
	uint32_t ndim;
	bool group; /* no size, extent, encoding, digest */
	uint64_t size, offset, stored_length;
	enum tfs_encoding encoding;
	const char *digest, *unreadable;
	const json_t *extra;   /* the reader's members, or NULL */
	const char *container; /* its container's label, or NULL */
};

/* one entry as a JSON object (the same members in the same order) */
json_t *tfs_mf_entry(const struct tfs_mf_fields *f);

/* @j as jansson's JSON_INDENT(2) prints it nested @depth deep, or NULL */
char *tfs_mf_indent(const json_t *j, unsigned depth);

struct tfs_mf;

/* a manifest of @format (borrowed: it outlives the tree), or NULL */
struct tfs_mf *tfs_mf_new(const char *format);
/*
 * The next entry: tensor record @tensor with the reader's @extra (borrowed
 * until tfs_mf_lazy_file(); identical extras are stored once).  0 or
 * -ENOMEM.
 */
int tfs_mf_add_tensor(struct tfs_mf *m, uint32_t tensor, const json_t *extra);
/*
 * The next entry: a group, its own members in @group (taken, even on
 * failure), then its @n components, records @records with the readers'
 * @extras (borrowed as above; NULL: none).  0 or -ENOMEM.
 */
int tfs_mf_add_group(struct tfs_mf *m, json_t *group, const uint32_t *records,
		     const json_t *const *extras, uint32_t n);
/*
 * Records renumbered (tfs_draft_compact): record i is now @map[i]; those
 * mapped to @shown or more are hidden and leave the manifest
 */
void tfs_mf_renumber(struct tfs_mf *m, const uint32_t *map, uint32_t shown);
/* container @source's label (copied), for the entries' "container" */
int tfs_mf_set_label(struct tfs_mf *m, uint32_t source, const char *label);
/*
 * The lazy file that makes the text from @tree's records; @m is its
 * (freed with the tree, or now on failure: NULL).
 */
struct tfs_lazy_file *tfs_mf_lazy_file(struct tfs_mf *m,
				       const struct tfs_tree *tree);
void tfs_mf_free(struct tfs_mf *m);

#endif
