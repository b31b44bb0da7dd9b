// SPDX-License-Identifier: MIT
/*
 * The setters of a reader's tensor spec (src/core/builder.h): each
 * sets its fields only; the builder checks them when the spec is added.
 */
#include <string.h>

#include "core/builder.h"

void tfs_spec_name(struct tfs_tensor_spec *s, const char *name, size_t len,
		   uint64_t at)
{
	memset(s, 0, sizeof(*s));
	s->name = name;
	s->name_len = len;
	s->desc_offset = at;
}

void tfs_spec_type(struct tfs_tensor_spec *s, enum tfs_dtype dtype,
		   const uint64_t *shape, size_t ndim)
{
	s->dtype = dtype;
	s->shape = shape;
	s->ndim = ndim;
}

void tfs_spec_tensor(struct tfs_tensor_spec *s, const char *name, size_t len,
		     enum tfs_dtype dtype, const uint64_t *shape, size_t ndim,
		     uint64_t at)
{
	tfs_spec_name(s, name, len, at);
	tfs_spec_type(s, dtype, shape, ndim);
}

void tfs_spec_path(struct tfs_tensor_spec *s, const char *const *comps,
		   size_t n)
{
	s->path = comps;
	s->path_len = n;
}

void tfs_spec_records(struct tfs_tensor_spec *s, uint32_t size)
{
	s->record_size = size;
}

void tfs_spec_npy_descr(struct tfs_tensor_spec *s, const char *descr)
{
	s->npy_descr = descr;
}

void tfs_spec_raw(struct tfs_tensor_spec *s, uint64_t off, uint64_t len)
{
	tfs_spec_stored(s, off, len);
	s->size = len;
	s->encoding = TFS_ENCODING_RAW;
}

void tfs_spec_stored(struct tfs_tensor_spec *s, uint64_t off, uint64_t len)
{
	s->offset = off;
	s->length = len;
}

void tfs_spec_size(struct tfs_tensor_spec *s, uint64_t size)
{
	s->size = size;
}

void tfs_spec_in(struct tfs_tensor_spec *s, uint32_t source)
{
	s->source = source;
}

void tfs_spec_mem(struct tfs_tensor_spec *s, const void *mem, uint64_t len)
{
	s->mem = mem;
	s->length = len;
	s->size = len;
	s->encoding = TFS_ENCODING_RAW;
}

void tfs_spec_segments(struct tfs_tensor_spec *s,
		       const struct tfs_segment *segs, size_t n)
{
	s->segs = segs;
	s->nsegs = n;
}

void tfs_spec_encoded(struct tfs_tensor_spec *s, enum tfs_encoding encoding,
		      const struct tfs_codec_params *params)
{
	s->encoding = encoding;
	if (params)
		s->codec = *params;
	else
		memset(&s->codec, 0, sizeof(s->codec));
}

void tfs_spec_digest(struct tfs_tensor_spec *s, const char *digest,
		     bool decoded)
{
	s->digest = digest;
	s->digest_decoded = decoded;
}

void tfs_spec_digest_over(struct tfs_tensor_spec *s, const char *digest,
			  uint64_t off, uint64_t len)
{
	s->digest = digest;
	s->has_digest_extent = true;
	s->digest_offset = off;
	s->digest_length = len;
}

void tfs_spec_unreadable(struct tfs_tensor_spec *s, const char *why,
			 bool is_fault)
{
	s->unreadable = why;
	s->unreadable_is_fault = is_fault;
}
