/* SPDX-License-Identifier: MIT */
/*
 * The HDF5 reader (hdf5.c) on a file inside a container: the Keras 3
 * .keras zip (keras.c) reads its stored model.weights.h5 in place.
 */
#ifndef TFS_FORMATS_HDF5_H
#define TFS_FORMATS_HDF5_H

#include <stdint.h>

struct tfs_builder;
struct tfs_diag;
struct tfs_source;

/*
 * Describe the HDF5 file at [@offset, + @length) of @src to @b: its HDF5
 * addresses are relative to @offset (its superblock is searched from
 * there), every offset given to the builder and in diagnostics is
 * absolute in @src.
 */
int tfs_hdf5_load_at(const struct tfs_source *src, struct tfs_builder *b,
		     uint64_t offset, uint64_t length, struct tfs_diag *d);

#endif
