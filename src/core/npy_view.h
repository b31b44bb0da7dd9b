/* SPDX-License-Identifier: MIT */
/*
 * The name the .npy view (-o npy, src/views/npy.c) gives every tensor file.
 * The builder places the files with it (names must be unique before the
 * tree exists); the view makes the header the files show.
 */
#ifndef TFS_CORE_NPY_VIEW_H
#define TFS_CORE_NPY_VIEW_H

/*
 * With -o npy every tensor file is named with this suffix: the view's own
 * name for what it makes, not a container format the core reads
 */
#define TFS_NPY_VIEW_SUFFIX ".npy"

#endif
