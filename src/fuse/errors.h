/* SPDX-License-Identifier: MIT */
/*
 * .tensorfs/errors.json of a live mount: what the loader left out (the
 * file's content at mount) and every integrity failure the daemon has met
 * since, so a file-manager user can see why a read failed.  The file's
 * size and bytes change: the FUSE layer serves it uncached.
 */
#ifndef TFS_FUSE_ERRORS_H
#define TFS_FUSE_ERRORS_H

#include <stddef.h>
#include <stdint.h>

struct tfs_image;
struct tfs_errors;

/* for @img (which must outlive it); NULL when out of memory */
struct tfs_errors *tfs_errors_new(struct tfs_image *img);
void tfs_errors_free(struct tfs_errors *e);
/* the node of .tensorfs/errors.json, or TFS_NO_NODE */
uint32_t tfs_errors_node(const struct tfs_errors *e);
/* a failure of tensor record @tensor: thread-safe */
void tfs_errors_add(struct tfs_errors *e, uint32_t tensor, const char *what);
/* the file's current bytes (malloc'd), or NULL when out of memory */
char *tfs_errors_text(struct tfs_errors *e, size_t *len);

#endif
