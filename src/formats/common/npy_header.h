/* SPDX-License-Identifier: MIT */
/*
 * The .npy header (specs/npy.md sections 1-4), shared by the .npy reader
 * (npy.c), the .npz reader (npz.c), whose members are .npy files, and
 * tensorfs pack (through src/lib/private.h).
 */
#ifndef TFS_FORMATS_COMMON_NPY_HEADER_H
#define TFS_FORMATS_COMMON_NPY_HEADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"

struct tfs_builder;
struct tfs_diag;
struct tfs_tensor_spec;

#define TFS_NPY_MAGIC "\x93NUMPY"
#define TFS_NPY_MAGIC_LEN 6

/* numpy's default max_header_size: longer headers are refused */
#define TFS_NPY_HEADER_MAX 10000u
/* the most bytes a header takes: magic, version, u32 length, text */
#define TFS_NPY_PREFIX_MAX (12u + TFS_NPY_HEADER_MAX)

struct tfs_npy {
	unsigned major;	      /* 1, 2 or 3 */
	uint64_t header_len;  /* HEADER_LEN: the text, padding included */
	uint64_t data_offset; /* absolute: the first byte of the array */
	uint64_t nbytes;      /* the array's bytes: count x itemsize */
	uint64_t count;	      /* elements: the product of the shape */
	enum tfs_dtype dtype; /* TFS_DTYPE_VOID for records */
	uint32_t itemsize;    /* bytes per element (record) */
	bool big_endian;      /* '>' on a multi-byte type */
	bool fortran;	      /* fortran_order: True */
	bool structured;      /* descr is a list (fields) */
	size_t ndim;
	uint64_t *shape;  /* malloc'd */
	char *descr;	  /* the descr as text, UTF-8 (malloc'd) */
	char *view_descr; /* records: the descr literal for -o npy, or NULL */
};

/*
 * Parse the header at @p (@avail bytes readable; the first at absolute
 * offset @base).  Checks the magic, the version, the header's length
 * (within @avail and TFS_NPY_HEADER_MAX), the dict (exactly descr,
 * fortran_order, shape), the descr and the byte count; not whether the
 * data is there.  0, or -EBADMSG / -ENOTSUP / -E2BIG / -ENOMEM with @d.
 */
int tfs_npy_parse(const uint8_t *p, uint64_t avail, uint64_t base,
		  struct tfs_npy *h, struct tfs_diag *d);
void tfs_npy_free(struct tfs_npy *h);

/*
 * The dtype, record size, shape and -o npy descr of @h into @spec
 * (pointers into @h).
 */
void tfs_npy_spec(const struct tfs_npy *h, struct tfs_tensor_spec *spec);

/* its xattrs on @handle: byte_order, order, npy.descr */
int tfs_npy_describe(struct tfs_builder *b, uint32_t handle,
		     const struct tfs_npy *h);

#endif
