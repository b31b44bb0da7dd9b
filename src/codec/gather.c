// SPDX-License-Identifier: MIT
/*
 * The gather codec (src/codec/gather.h).  The output is walked in row-major
 * order with one index counter per dimension; where the last dimension is
 * contiguous in the stored bytes (stride 1) a whole run of a row is copied
 * at once, otherwise one element.  A read may start or stop inside an
 * element: the byte position inside the current element is kept.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "codec/gather.h"
#include "core/checked.h"
#include "codec/codec.h"

struct gather {
	struct tfs_gather_params g;
	const uint8_t *src;
	size_t src_len;
	uint64_t size;	   /* output bytes */
	uint64_t out;	   /* output bytes produced */
	uint64_t elem_off; /* stored byte offset of the current element */
	uint64_t idx[TFS_GATHER_MAX_DIMS];
};

int tfs_gather_extent(const struct tfs_gather_params *g, uint64_t *span,
		      uint64_t *size)
{
	uint64_t count, last = 0, step;
	uint32_t i;

	if (!g->itemsize || g->ndim > TFS_GATHER_MAX_DIMS)
		return -EINVAL;
	if (!tfs_shape_product(g->shape, g->ndim, &count) ||
	    !tfs_mul_u64(count, g->itemsize, size))
		return -EOVERFLOW;
	if (!count) {
		*span = 0;
		return 0;
	}
	for (i = 0; i < g->ndim; i++)
		if (!tfs_mul_u64(g->shape[i] - 1, g->stride[i], &step) ||
		    !tfs_add_u64(last, step, &last))
			return -EOVERFLOW;
	if (!tfs_add_u64(last, 1, &last) ||
	    !tfs_mul_u64(last, g->itemsize, span))
		return -EOVERFLOW;
	return 0;
}

int tfs_gather_new(void **st, const void *src, size_t len, bool stable,
		   const struct tfs_codec_params *p)
{
	struct gather *x;
	uint64_t span, size;

	(void)stable;
	if (!p || !p->gather || p->skip || p->check_crc32 || p->chunks)
		return -EINVAL;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	memcpy(&x->g, p->gather, sizeof(x->g));
	if (tfs_gather_extent(&x->g, &span, &size) || span > len ||
	    size > SIZE_MAX) {
		free(x);
		return -EINVAL;
	}
	x->src = src;
	x->src_len = len;
	x->size = size;
	*st = x;
	return 0;
}

void tfs_gather_free(void *st)
{
	free(st);
}

void tfs_gather_reset(void *st)
{
	struct gather *x = st;

	x->out = 0;
	x->elem_off = 0;
	memset(x->idx, 0, sizeof(x->idx));
}

/* move the counters on by @n elements, @n <= what is left of the row */
static void advance(struct gather *x, uint64_t n)
{
	const struct tfs_gather_params *g = &x->g;
	uint32_t d;

	if (!g->ndim)
		return;
	d = g->ndim - 1;
	x->idx[d] += n;
	x->elem_off += n * g->stride[d] * g->itemsize;
	while (x->idx[d] == g->shape[d] && d > 0) {
		/* back to the row's start, one on in the dimension above */
		x->elem_off -= g->shape[d] * g->stride[d] * g->itemsize;
		x->idx[d] = 0;
		d--;
		x->idx[d]++;
		x->elem_off += g->stride[d] * g->itemsize;
	}
}

/* @k whole elements @step bytes apart, from @p to @out */
static void copy_strided(uint8_t *out, const uint8_t *p, uint64_t k,
			 uint64_t step, uint32_t itemsize)
{
	uint64_t i;

	/* constant sizes let the compiler make each copy one move */
	switch (itemsize) {
	case 2:
		for (i = 0; i < k; i++, p += step, out += 2)
			memcpy(out, p, 2);
		break;
	case 4:
		for (i = 0; i < k; i++, p += step, out += 4)
			memcpy(out, p, 4);
		break;
	case 8:
		for (i = 0; i < k; i++, p += step, out += 8)
			memcpy(out, p, 8);
		break;
	default:
		for (i = 0; i < k; i++, p += step, out += itemsize)
			memcpy(out, p, itemsize);
	}
}

int tfs_gather_decode(void *st, void *dst, size_t cap, size_t *pos, size_t want)
{
	struct gather *x = st;
	const struct tfs_gather_params *g = &x->g;
	uint8_t *out = dst;
	uint64_t in_elem, run = 1, n, last = 0, k;

	if (want > cap)
		want = cap;
	while (*pos < want && x->out < x->size) {
		in_elem = x->out % g->itemsize;
		if (g->ndim) {
			last = g->ndim - 1;
			run = g->shape[last] - x->idx[last];
		}
		if (g->ndim && g->stride[last] != 1 && !in_elem &&
		    want - *pos >= g->itemsize) {
			/* whole elements of the row, each a stride apart */
			k = (want - *pos) / g->itemsize;
			if (k > run)
				k = run;
			copy_strided(out + *pos, x->src + x->elem_off, k,
				     g->stride[last] * g->itemsize,
				     g->itemsize);
			*pos += (size_t)(k * g->itemsize);
			x->out += k * g->itemsize;
			if (x->out < x->size)
				advance(x, k);
			continue;
		}
		/* the rest of a contiguous row, or (part of) one element */
		if (!g->ndim || g->stride[last] != 1)
			run = 1;
		n = run * g->itemsize - in_elem;
		if (n > want - *pos)
			n = want - *pos;
		memcpy(out + *pos, x->src + x->elem_off + in_elem, (size_t)n);
		*pos += (size_t)n;
		x->out += n;
		/* whole elements finished by this copy */
		n = (in_elem + n) / g->itemsize;
		if (n && x->out < x->size)
			advance(x, n);
	}
	return 0;
}

int tfs_gather_expect_end(void *st, void *dst, size_t cap)
{
	const struct gather *x = st;

	(void)dst;
	(void)cap;
	return x->out == x->size ? 0 : -EBADMSG;
}

bool tfs_gather_finished(const void *st)
{
	const struct gather *x = st;

	return x->out == x->size;
}

size_t tfs_gather_consumed(const void *st)
{
	const struct gather *x = st;

	return x->out == x->size ? x->src_len : 0;
}

const char *tfs_gather_message(const void *st)
{
	(void)st;
	return "gather: the output ends early";
}
