/* SPDX-License-Identifier: MIT */
/*
 * The .npy view (-o npy): the header numpy's np.save would write before a
 * tensor's bytes, so that np.load(path, mmap_mode='r') gives the exact
 * array.  Private to the builder.
 */
#ifndef TFS_CORE_NPY_VIEW_H
#define TFS_CORE_NPY_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"

/*
 * With -o npy every tensor file is named with this suffix: the view's own
 * name for what it makes, not a container format the core reads
 */
#define TFS_NPY_VIEW_SUFFIX ".npy"

/*
 * The header for a tensor of @dtype (@record_size bytes per record for
 * TFS_DTYPE_VOID), @ndim dims @shape, @size bytes, stored big-endian or
 * column-major as said.  numpy's own rules: version 1.0 unless the header
 * needs more than 65535 bytes (then 2.0), padded with spaces and a final
 * '\n' so the data starts at a multiple of 64.  Dtypes numpy has no name
 * for (bfloat16, float8, sub-byte and block-quantized types, complex32)
 * are records '|V<n>' of the dtype's block size, the last dimension
 * divided by the elements per block (or, when it does not divide, one
 * dimension of blocks); opaque ones are bytes ('|u1', [size]).
 * @descr (or NULL) is the descr to write instead, as a Python literal: a
 * numpy container's own ("'<U5'", a structured list).
 * *out is malloc'd; 0 or -ENOMEM / -E2BIG.
 */
int tfs_npy_header(enum tfs_dtype dtype, uint32_t record_size,
		   const char *descr, const uint64_t *shape, uint32_t ndim,
		   uint64_t size, bool big_endian, bool fortran, uint8_t **out,
		   uint32_t *len);

#endif
