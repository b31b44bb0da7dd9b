// SPDX-License-Identifier: MIT
/*
 * Reading a tensor's own bytes: the layer below everything that computes.
 * A raw tensor is a view of its stored bytes wherever they lie (stored.c),
 * after the digest rule (decode.c); an encoded one is decoded through the
 * decode engine (decode.c).  The views (src/views/: as.c, preview.c, the
 * export), stats and the library read tensors here, and this file calls
 * none of them: reads flow down.  See src/core/image.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/image.h"
#include "core/image_i.h"

int tfs_tensor_read(struct tfs_image *img, uint32_t idx, uint64_t off,
		    size_t len, struct tfs_view *v)
{
	const struct tfs_tensor *x = &img->tree->tensors[idx];
	int ret;

	if (x->encoding != TFS_ENCODING_RAW)
		return tfs_decode_read(img, idx, off, len, v);
	ret = tfs_digest_gate(img, idx);
	if (ret)
		return ret;
	return tfs_stored_view(img, x, off, len, v);
}

int tfs_image_read_tensor(struct tfs_image *img, uint32_t tensor, uint64_t off,
			  size_t len, struct tfs_view *v)
{
	const struct tfs_tensor *x;

	memset(v, 0, sizeof(*v));
	if (tensor >= img->tree->nrecords)
		return -ENOENT;
	x = &img->tree->tensors[tensor];
	if (off >= x->size)
		return 0;
	if (len > x->size - off)
		len = (size_t)(x->size - off);
	return tfs_tensor_read(img, tensor, off, len, v);
}

bool tfs_view_stays(const struct tfs_view *v)
{
	return v->pin_kind == PIN_NONE || v->pin_kind == PIN_SOURCE;
}

void tfs_view_own(struct tfs_view *v, void *buf, size_t len)
{
	v->data = buf;
	v->len = len;
	v->pin = buf;
	v->pin_kind = PIN_BOUNCE;
}

void tfs_view_release(struct tfs_image *img, struct tfs_view *v)
{
	const struct tfs_source *src = v->pin;

	if (v->pin_kind == PIN_ENTRY)
		tfs_cache_put(img->rs->cache, v->pin);
	else if (v->pin_kind == PIN_BOUNCE)
		free(v->pin);
	else if (v->pin_kind == PIN_SOURCE && src->ops)
		/* a remote source serves data + off (no serve_map) */
		tfs_source_unpin(
			src, (uint64_t)((const uint8_t *)v->data - src->data),
			v->len);
	memset(v, 0, sizeof(*v));
}
