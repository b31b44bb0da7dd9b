/* SPDX-License-Identifier: MIT */
/* What the CBOR-based readers (zTensor 1.x and 2.x) share beyond syntax. */
#ifndef TFS_FORMATS_COMMON_CBOR_XATTRS_H
#define TFS_FORMATS_COMMON_CBOR_XATTRS_H

#include <cbor.h>
#include <stdint.h>

/*
 * The attributes map @m (text keys; others skipped) as xattrs
 * "user.tensorfs.attr.<key>" on builder handle @handle: scalar values of up
 * to 1024 bytes of text, keys of up to 200 bytes without NUL.  0 or
 * -ENOMEM (the caller records the diagnostic).
 */
struct tfs_builder;
int tfs_cbor_attr_xattrs(struct tfs_builder *b, uint32_t handle,
			 cbor_item_t *m);

#endif
