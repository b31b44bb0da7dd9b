/* SPDX-License-Identifier: MIT */
/*
 * The views planned over a finished tree (src/core/views.c), in the mount's
 * finish step (tfs_image_finish_load): between tfs_builder_draft() and
 * tfs_draft_seal(), over the tensor records the builder made.  A view is a
 * file whose bytes are a function of other tensors' bytes; the ones with
 * nodes of their own are planned here (-o previews, .tensorfs/export/).
 */
#ifndef TFS_CORE_VIEWS_H
#define TFS_CORE_VIEWS_H

#include "tensorfs/builder.h"

/* add the views @dr's options ask for; 0 or -errno (-ENOMEM, -E2BIG) */
int tfs_views_plan(struct tfs_draft *dr);

#endif
