/* SPDX-License-Identifier: MIT */
/*
 * Private exports (src/core/abi.h) of functions whose headers
 * belong to a format reader.  src/formats/common/npy_header.h is the .npy and
 * .npz readers' own header, so its functions keep the core's hidden visibility;
 * `tensorfs pack` (src/cli/pack.c) reads a .npy file's header through
 * these instead.  Not on any read path.
 */
#ifndef TFS_LIB_PRIVATE_H
#define TFS_LIB_PRIVATE_H

#include <stdint.h>

#include "core/abi.h"

struct tfs_npy;

/* tfs_npy_parse(@p, @avail, 0, @h, NULL): the header at the file's start */
TFS_PRIVATE int tfs_npy_header_parse(const uint8_t *p, uint64_t avail,
				     struct tfs_npy *h);
/* tfs_npy_free(@h) */
TFS_PRIVATE void tfs_npy_header_free(struct tfs_npy *h);

#endif
