// SPDX-License-Identifier: MIT
/* The chunked codec and its filters: see src/codec/chunked.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "codec/chunked.h"
#include "core/checked.h"
#include "core/cursor.h"
#include "codec/codec.h"

#define CHUNK_MAX (4ull << 30) /* one decoded chunk */
#define SLAB_MAX (1ull << 30)  /* one row of the grid, decoded */

struct chunked {
	const struct tfs_chunk_params *c; /* the tree's, immutable */
	const uint8_t *src;
	size_t src_len;
	uint64_t size;	    /* output bytes */
	uint64_t row_bytes; /* bytes of one index along dimension 0 */
	uint64_t chunk_bytes;
	uint64_t grid[TFS_GATHER_MAX_DIMS]; /* chunks along each dim */
	uint64_t out;			    /* output bytes made */
	uint8_t *slab;			    /* the rows of the current slab */
	uint64_t slab_no, slab_first, slab_len; /* its grid row and bytes */
	bool slab_ok;
	uint8_t *tmp[2]; /* filter stages */
	size_t tmp_cap;
	char msg[TFS_CODEC_MSG_MAX];
};

void tfs_chunk_params_free(struct tfs_chunk_params *c)
{
	if (c)
		free(c->chunks);
	free(c);
}

int tfs_chunk_params_check(const struct tfs_chunk_params *c, uint64_t stored,
			   uint64_t *size)
{
	uint64_t n = 1, elems = 1, chunk = c->itemsize, slab, g, i;

	if (!c->ndim || c->ndim > TFS_GATHER_MAX_DIMS || !c->itemsize ||
	    (c->has_fill && c->itemsize > sizeof(c->fill)) ||
	    c->nfilters > TFS_CHUNK_MAX_FILTERS)
		return -EINVAL;
	for (i = 0; i < c->ndim; i++) {
		if (!c->chunk[i] || !tfs_mul_u64(elems, c->shape[i], &elems) ||
		    !tfs_mul_u64(chunk, c->chunk[i], &chunk))
			return -EINVAL;
		g = c->shape[i] / c->chunk[i] + !!(c->shape[i] % c->chunk[i]);
		if (!tfs_mul_u64(n, g, &n))
			return -EINVAL;
	}
	if (chunk > CHUNK_MAX || n != c->nchunks || (n && !c->chunks) ||
	    !tfs_mul_u64(elems, c->itemsize, size))
		return -EINVAL;
	/* a slab: up to chunk[0] rows of the output */
	slab = *size / (c->shape[0] ? c->shape[0] : 1) *
	       (c->chunk[0] < c->shape[0] ? c->chunk[0] : c->shape[0]);
	if (slab > SLAB_MAX)
		return -EINVAL;
	for (i = 0; i < n; i++)
		if (c->chunks[i].length &&
		    !tfs_range_ok(c->chunks[i].offset, c->chunks[i].length,
				  stored))
			return -EINVAL;
	for (i = 0; i < c->nfilters; i++)
		if (c->filters[i].id > TFS_FILTER_LZF ||
		    (c->filters[i].id == TFS_FILTER_SHUFFLE &&
		     !c->filters[i].arg))
			return -EINVAL;
	return 0;
}

int tfs_chunked_new(void **st, const void *src, size_t len, bool stable,
		    const struct tfs_codec_params *p)
{
	const struct tfs_chunk_params *c = p ? p->chunks : NULL;
	struct chunked *x;
	uint64_t size, slab;
	uint32_t i;

	(void)stable;
	if (!c || p->skip || p->check_crc32 || p->gather ||
	    tfs_chunk_params_check(c, len, &size) || size > SIZE_MAX)
		return -EINVAL;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->c = c;
	x->src = src;
	x->src_len = len;
	x->size = size;
	x->row_bytes = c->shape[0] ? size / c->shape[0] : 0;
	x->chunk_bytes = c->itemsize;
	for (i = 0; i < c->ndim; i++) {
		x->chunk_bytes *= c->chunk[i];
		x->grid[i] = c->shape[i] / c->chunk[i] +
			     !!(c->shape[i] % c->chunk[i]);
	}
	slab = x->row_bytes *
	       (c->chunk[0] < c->shape[0] ? c->chunk[0] : c->shape[0]);
	/* a fletcher32 checksum or a stage's overrun: a little more room */
	x->tmp_cap = (size_t)x->chunk_bytes + 64;
	x->slab = malloc(slab ? (size_t)slab : 1);
	x->tmp[0] = malloc(x->tmp_cap);
	x->tmp[1] = malloc(x->tmp_cap);
	if (!x->slab || !x->tmp[0] || !x->tmp[1]) {
		tfs_chunked_free(x);
		return -ENOMEM;
	}
	*st = x;
	return 0;
}

void tfs_chunked_free(void *st)
{
	struct chunked *x = st;

	if (!x)
		return;
	free(x->slab);
	free(x->tmp[0]);
	free(x->tmp[1]);
	free(x);
}

void tfs_chunked_reset(void *st)
{
	struct chunked *x = st;

	x->out = 0;
	x->slab_ok = false;
}

void tfs_unshuffle(const uint8_t *in, uint8_t *out, size_t len, size_t size)
{
	size_t n = len / size, i, j;

	for (j = 0; j < size; j++)
		for (i = 0; i < n; i++)
			out[i * size + j] = in[j * n + i];
	memcpy(out + n * size, in + n * size, len - n * size);
}

uint32_t tfs_fletcher32(const uint8_t *p, size_t len)
{
	uint64_t s1 = 0, s2 = 0;
	size_t i;

	for (i = 0; i + 1 < len; i += 2) {
		s1 = (s1 + ((uint32_t)p[i] << 8 | p[i + 1])) % 65535;
		s2 = (s2 + s1) % 65535;
	}
	if (len & 1) {
		s1 = (s1 + ((uint32_t)p[len - 1] << 8)) % 65535;
		s2 = (s2 + s1) % 65535;
	}
	return (uint32_t)(s2 << 16 | s1);
}

long tfs_lzf_decode(const uint8_t *in, size_t len, uint8_t *out, size_t cap)
{
	size_t i = 0, o = 0, n, back, k;
	unsigned c;

	while (i < len) {
		c = in[i++];
		if (c < 32) { /* c + 1 literal bytes */
			n = c + 1;
			if (n > len - i || n > cap - o)
				return -EBADMSG;
			memcpy(out + o, in + i, n);
			i += n;
			o += n;
			continue;
		}
		n = c >> 5;
		if (n == 7) {
			if (i >= len)
				return -EBADMSG;
			n += in[i++];
		}
		if (i >= len)
			return -EBADMSG;
		back = ((size_t)(c & 31) << 8) + in[i++] + 1;
		n += 2;
		if (back > o || n > cap - o)
			return -EBADMSG;
		/* byte by byte: the source may overlap what is written */
		for (k = 0; k < n; k++, o++)
			out[o] = out[o - back];
	}
	return (long)o;
}

long tfs_zlib_decode(const uint8_t *in, size_t len, uint8_t *out, size_t cap)
{
	z_stream z;
	int ret;
	long got;

	memset(&z, 0, sizeof(z));
	if (inflateInit(&z) != Z_OK)
		return -ENOMEM;
	z.next_in = (Bytef *)in;
	z.next_out = out;
	/* zlib counts in uInt: a chunk is at most 4 GiB, inputs are cut */
	z.avail_in = len > UINT32_MAX ? UINT32_MAX : (uInt)len;
	z.avail_out = cap > UINT32_MAX ? UINT32_MAX : (uInt)cap;
	ret = inflate(&z, Z_FINISH);
	got = (long)z.total_out;
	inflateEnd(&z);
	return ret == Z_STREAM_END ? got : -EBADMSG;
}

/* undo the pipeline on chunk @k: its decoded bytes in *@out, or -EBADMSG */
static int chunk_decode(struct chunked *x, uint64_t k, const uint8_t **out)
{
	const struct tfs_chunk_params *c = x->c;
	const struct tfs_chunk *ch = &c->chunks[k];
	const uint8_t *p = x->src + ch->offset;
	size_t len = (size_t)ch->length;
	uint8_t *dst;
	long n;
	int f, t = 0;

	for (f = (int)c->nfilters - 1; f >= 0; f--) {
		if (ch->mask & (1u << f))
			continue;
		dst = x->tmp[t];
		switch (c->filters[f].id) {
		case TFS_FILTER_FLETCHER32:
			if (len < 4 ||
			    tfs_fletcher32(p, len - 4) !=
				    (uint32_t)tfs_load_le(p + len - 4, 4)) {
				snprintf(x->msg, sizeof(x->msg),
					 "chunk %llu: fletcher32 checksum "
					 "mismatch",
					 (unsigned long long)k);
				return -EBADMSG;
			}
			len -= 4;
			continue;
		case TFS_FILTER_DEFLATE:
			n = tfs_zlib_decode(p, len, dst, x->tmp_cap);
			break;
		case TFS_FILTER_LZF:
			n = tfs_lzf_decode(p, len, dst, x->tmp_cap);
			break;
		case TFS_FILTER_SHUFFLE:
			if (len > x->tmp_cap)
				return -EBADMSG;
			tfs_unshuffle(p, dst, len, c->filters[f].arg);
			n = (long)len;
			break;
		default:
			n = -EBADMSG;
		}
		if (n < 0) {
			snprintf(x->msg, sizeof(x->msg),
				 "chunk %llu: %s: corrupt or longer than the "
				 "chunk",
				 (unsigned long long)k,
				 c->filters[f].id == TFS_FILTER_DEFLATE
					 ? "deflate"
					 : "lzf");
			return -EBADMSG;
		}
		p = dst;
		len = (size_t)n;
		t ^= 1;
	}
	if (len != x->chunk_bytes) {
		snprintf(x->msg, sizeof(x->msg),
			 "chunk %llu decodes to %zu bytes, not %llu",
			 (unsigned long long)k, len,
			 (unsigned long long)x->chunk_bytes);
		return -EBADMSG;
	}
	*out = p;
	return 0;
}

/*
 * Scatter decoded chunk @p (grid coordinates @g, @g[0] the slab's) into
 * the slab, cropped to the array: runs along the last dimension.  Two or
 * more dimensions (one dimension: the slab is the chunk's own part).
 */
static void scatter(struct chunked *x, const uint64_t *g, const uint8_t *p)
{
	const struct tfs_chunk_params *c = x->c;
	uint32_t nd = c->ndim, d;
	uint64_t j[TFS_GATHER_MAX_DIMS] = {0}, lim[TFS_GATHER_MAX_DIMS];
	uint64_t ostride[TFS_GATHER_MAX_DIMS], cstride[TFS_GATHER_MAX_DIMS];
	uint64_t run, o, s;

	for (d = 0; d < nd; d++) {
		lim[d] = c->shape[d] - g[d] * c->chunk[d];
		if (lim[d] > c->chunk[d])
			lim[d] = c->chunk[d];
	}
	ostride[nd - 1] = cstride[nd - 1] = c->itemsize;
	for (d = nd - 1; d > 0; d--) {
		ostride[d - 1] = ostride[d] * c->shape[d];
		cstride[d - 1] = cstride[d] * c->chunk[d];
	}
	run = lim[nd - 1] * c->itemsize;
	for (;;) {
		o = j[0] * ostride[0];
		s = j[0] * cstride[0];
		for (d = 1; d < nd; d++) {
			o += (g[d] * c->chunk[d] + j[d]) * ostride[d];
			s += j[d] * cstride[d];
		}
		memcpy(x->slab + o, p + s, (size_t)run);
		/* the next run: count up the dims before the last */
		for (d = nd - 1; d-- > 0;) {
			if (++j[d] < lim[d])
				break;
			j[d] = 0;
			if (d == 0)
				return;
		}
	}
}

/* fill the slab of grid row @r: every chunk decoded and scattered */
static int make_slab(struct chunked *x, uint64_t r)
{
	const struct tfs_chunk_params *c = x->c;
	uint64_t g[TFS_GATHER_MAX_DIMS] = {0}, per = 1, k, i, rows;
	const uint8_t *p;
	uint32_t d;
	int ret;

	rows = c->shape[0] - r * c->chunk[0];
	if (rows > c->chunk[0])
		rows = c->chunk[0];
	x->slab_first = r * c->chunk[0] * x->row_bytes;
	x->slab_len = rows * x->row_bytes;
	if (c->ndim == 1) { /* one chunk's part of the row */
		rows = c->shape[0] - r * c->chunk[0];
		x->slab_len =
			(rows < c->chunk[0] ? rows : c->chunk[0]) * c->itemsize;
		x->slab_first = r * c->chunk[0] * c->itemsize;
	}
	/* unwritten chunks read as the fill value */
	if (c->has_fill)
		for (i = 0; i < x->slab_len; i += c->itemsize)
			memcpy(x->slab + i, c->fill, c->itemsize);
	else
		memset(x->slab, 0, (size_t)x->slab_len);
	for (d = 1; d < c->ndim; d++)
		per *= x->grid[d];
	g[0] = r;
	for (k = r * per; k < (r + 1) * per; k++) {
		if (c->chunks[k].length) {
			ret = chunk_decode(x, k, &p);
			if (ret)
				return ret;
			if (c->ndim == 1) {
				memcpy(x->slab, p, (size_t)x->slab_len);
			} else {
				scatter(x, g, p);
			}
		}
		/* the next chunk's coordinates, last dimension fastest */
		for (d = c->ndim - 1; d > 0; d--) {
			if (++g[d] < x->grid[d])
				break;
			g[d] = 0;
		}
	}
	x->slab_no = r;
	x->slab_ok = true;
	return 0;
}

int tfs_chunked_decode(void *st, void *dst, size_t cap, size_t *pos,
		       size_t want)
{
	struct chunked *x = st;
	const struct tfs_chunk_params *c = x->c;
	uint64_t r, in, n;
	int ret;

	if (want > cap)
		want = cap;
	while (*pos < want && x->out < x->size) {
		/* the grid row holding output byte x->out */
		r = c->ndim == 1 ? x->out / (c->chunk[0] * c->itemsize)
				 : x->out / x->row_bytes / c->chunk[0];
		if (!x->slab_ok || x->slab_no != r) {
			ret = make_slab(x, r);
			if (ret)
				return ret;
		}
		in = x->out - x->slab_first;
		n = x->slab_len - in;
		if (n > want - *pos)
			n = want - *pos;
		memcpy((uint8_t *)dst + *pos, x->slab + in, (size_t)n);
		*pos += (size_t)n;
		x->out += n;
	}
	return 0;
}

int tfs_chunked_expect_end(void *st, void *dst, size_t cap)
{
	const struct chunked *x = st;

	(void)dst;
	(void)cap;
	return x->out == x->size ? 0 : -EBADMSG;
}

bool tfs_chunked_finished(const void *st)
{
	const struct chunked *x = st;

	return x->out == x->size;
}

size_t tfs_chunked_consumed(const void *st)
{
	const struct chunked *x = st;

	return x->out == x->size ? x->src_len : 0;
}

const char *tfs_chunked_message(const void *st)
{
	const struct chunked *x = st;

	return x->msg[0] ? x->msg : "chunked: the output ends early";
}
