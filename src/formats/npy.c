// SPDX-License-Identifier: MIT
/*
 * NumPy .npy, format versions 1.0, 2.0 and 3.0 (specs/npy.md; numpy's
 * numpy/lib/_format_impl.py): magic, version, header length, a Python dict
 * literal {'descr', 'fortran_order', 'shape'} padded with spaces, then the
 * array's raw bytes.  One array: the file "tensor" at the root.
 *
 * The header is read by formats/common/npy_header.c (the strict literal
 * reader, parse/pyliteral.h: never evaluated), which .npz shares.  Served as
 * stored, with what numpy would need to read the bytes as xattrs:
 * byte_order=big for '>' types, order=F for fortran_order arrays, npy.descr the
 * descr itself.  Byte strings ('S'), unicode strings ('U': UCS-4 code units),
 * raw voids ('V') and structured dtypes (a list descr) are records: dtype
 * void<itemsize>.  Object arrays (pickled Python objects) are refused by name
 * and never unpickled; so are datetimes and long doubles, whose layout is the
 * writer's platform's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/common/npy_header.h"
#include "core/builder.h"
#include "core/checked.h"
#include "core/cursor.h"
#include "core/diag.h"
#include "core/format.h"
#include "core/source.h"

static int npy_probe(const struct tfs_source *src)
{
	return src->size >= TFS_NPY_MAGIC_LEN &&
			       memcmp(src->data, TFS_NPY_MAGIC,
				      TFS_NPY_MAGIC_LEN) == 0
		       ? 100
		       : 0;
}

static int npy_load(const struct tfs_source *src, struct tfs_builder *b,
		    struct tfs_diag *d)
{
	struct tfs_tensor_spec spec;
	struct tfs_npy h;
	uint64_t have;
	uint32_t handle;
	json_t *meta, *shape;
	size_t i;
	int ret;

	ret = tfs_npy_parse(src->data, src->size, 0, &h, d);
	if (ret)
		goto out;
	have = src->size - h.data_offset;
	if (have < h.nbytes) {
		ret = tfs_diag_at(d, -EBADMSG, src->size,
				  "data: %llu bytes after the header, the "
				  "array needs %llu",
				  (unsigned long long)have,
				  (unsigned long long)h.nbytes);
		goto out;
	}
	if (have > h.nbytes &&
	    tfs_builder_warn(b, h.data_offset + h.nbytes,
			     "%llu bytes after the array's data are ignored",
			     (unsigned long long)(have - h.nbytes))) {
		ret = tfs_diag_oom(d);
		goto out;
	}
	tfs_spec_name(&spec, "tensor", 6, h.major == 1 ? 10 : 12);
	tfs_npy_spec(&h, &spec);
	tfs_spec_raw(&spec, h.data_offset, h.nbytes);
	ret = tfs_builder_add_tensor(b, &spec, &handle, d);
	if (ret)
		goto out;
	if (tfs_npy_describe(b, handle, &h)) {
		ret = tfs_diag_oom(d);
		goto out;
	}
	meta = tfs_builder_metadata(b);
	shape = json_array();
	for (i = 0; i < h.ndim; i++)
		json_array_append_new(shape,
				      json_integer((json_int_t)h.shape[i]));
	json_object_set_new(meta, "version", json_sprintf("%u.0", h.major));
	json_object_set_new(meta, "header_len",
			    json_integer((json_int_t)h.header_len));
	json_object_set_new(meta, "data_offset",
			    json_integer((json_int_t)h.data_offset));
	json_object_set_new(meta, "descr", json_string(h.descr));
	json_object_set_new(meta, "fortran_order", json_boolean(h.fortran));
	json_object_set_new(meta, "shape", shape);
out:
	tfs_npy_free(&h);
	return ret;
}

TFS_FORMAT(npy, "NumPy .npy (format 1.0, 2.0, 3.0), one array",
	   .probe = npy_probe, .load = npy_load);
