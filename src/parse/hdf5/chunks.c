// SPDX-License-Identifier: MIT
/*
 * The chunk indexes of chunked datasets (specs/hdf5.md section 8.3): v1
 * B-tree (layout 3), and the layout-4 indexes single chunk, implicit,
 * fixed array (FAHD/FADB), extensible array (EAHD/EAIB: the index block's
 * elements) and v2 B-tree (records 10 and 11).  The list is checked as a
 * whole: every chunk inside the file, at a multiple of the chunk dims
 * inside the dataspace, listed once, its stored size bounded.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "parse/hdf5/h5.h"
#include "core/checked.h"
#include "core/diag.h"

#define CK_MAX_CHUNKS (16u << 20)

struct ck_ctx {
	struct h5_file *f;
	const struct h5_space *s;
	const struct h5_layout *l;
	struct h5_chunks *out;
	bool filtered;
	unsigned rank;
	uint64_t nchunks[H5_MAX_RANK]; /* chunks along each dim (dims) */
	uint64_t grid[H5_MAX_RANK];    /* along each dim (max dims) */
};

static const char *const index_names[] = {
	"v1 B-tree",   "single chunk",	   "implicit",
	"fixed array", "extensible array", "v2 B-tree",
};

const char *h5_index_name(unsigned index)
{
	return index < 6 ? index_names[index] : "unknown";
}

void h5_chunks_free(struct h5_chunks *c)
{
	free(c->c);
	free(c->coords);
	memset(c, 0, sizeof(*c));
}

static uint64_t ceil_div(uint64_t a, uint64_t b)
{
	return a / b + (a % b != 0);
}

/* add a chunk at element coordinates @coords */
static int ck_add(struct ck_ctx *z, const uint64_t *coords, uint64_t addr,
		  uint64_t size, uint32_t mask, uint64_t at)
{
	struct h5_chunks *o = z->out;
	struct h5_file *f = z->f;
	struct tfs_cursor c;
	unsigned i;
	bool unfit;
	int ret;

	for (i = 0; i < z->rank; i++) {
		if (coords[i] % z->l->cdims[i] || coords[i] >= z->s->dims[i])
			return tfs_diag_at(f->d, -EBADMSG, at,
					   "chunk at %llu: coordinate %llu of "
					   "dim %u is %s",
					   (unsigned long long)addr,
					   (unsigned long long)coords[i], i,
					   coords[i] % z->l->cdims[i]
						   ? "not a multiple of the "
						     "chunk dim"
						   : "outside the dataspace");
	}
	unfit = !z->filtered && size != o->chunk_bytes;
	if (unfit || size == 0 || size > 2 * o->chunk_bytes + (1u << 20))
		return tfs_diag_at(f->d, -EBADMSG, at,
				   "chunk at %llu: %llu bytes stored for %s"
				   "%llu-byte chunk",
				   (unsigned long long)addr,
				   (unsigned long long)size,
				   unfit ? "an unfiltered " : "a ",
				   (unsigned long long)o->chunk_bytes);
	ret = h5_span(f, addr, size, "chunk", at, &c);
	if (ret)
		return ret;
	if (o->n == CK_MAX_CHUNKS)
		return tfs_diag_at(f->d, -E2BIG, at,
				   "chunked dataset: more than %u chunks",
				   CK_MAX_CHUNKS);
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 16;
		struct h5_chunk *nc = reallocarray(o->c, cap, sizeof(*nc));
		uint64_t *nco;

		if (!nc)
			return tfs_diag_oom(f->d);
		o->c = nc;
		nco = reallocarray(o->coords, cap,
				   sizeof(*nco) * (z->rank ? z->rank : 1));
		if (!nco)
			return tfs_diag_oom(f->d);
		o->coords = nco;
		o->cap = cap;
	}
	o->c[o->n].addr = addr;
	o->c[o->n].size = size;
	o->c[o->n].mask = mask;
	o->c[o->n].at = at;
	memcpy(o->coords + o->n * z->rank, coords, z->rank * sizeof(*coords));
	o->n++;
	return 0;
}

/* linear index @i over @grid (row-major) to element coordinates */
static bool ck_unlinear(const struct ck_ctx *z, const uint64_t *grid,
			const unsigned *order, uint64_t i, uint64_t *coords)
{
	unsigned k;

	for (k = z->rank; k-- > 0;) {
		unsigned d = order ? order[k] : k;
		uint64_t s = i % grid[k];

		i /= grid[k];
		if (s >= z->nchunks[d])
			return false;
		coords[d] = s * z->l->cdims[d];
	}
	return true;
}

static int ck_bt1(void *arg, const uint8_t *key, uint64_t child, uint64_t at)
{
	struct ck_ctx *z = arg;
	uint64_t coords[H5_MAX_RANK];
	unsigned i;

	for (i = 0; i < z->rank; i++)
		coords[i] = tfs_load_le(key + 8 + 8 * i, 8);
	return ck_add(z, coords, child, tfs_load_le(key, 4),
		      (uint32_t)tfs_load_le(key + 4, 4), at);
}

static int ck_bt2(void *arg, const uint8_t *rec, uint64_t at)
{
	struct ck_ctx *z = arg;
	struct h5_file *f = z->f;
	uint64_t coords[H5_MAX_RANK], addr, size = z->out->chunk_bytes;
	uint32_t mask = 0;
	unsigned i, csl = 0;

	addr = tfs_load_le(rec, f->so);
	if (f->so < 8 && addr == (1ull << (8 * f->so)) - 1)
		addr = H5_UNDEF;
	rec += f->so;
	if (z->filtered) {
		csl = z->l->idx_params[4]; /* the record's size width */
		size = tfs_load_le(rec, csl);
		mask = (uint32_t)tfs_load_le(rec + csl, 4);
		rec += csl + 4;
	}
	for (i = 0; i < z->rank; i++) {
		uint64_t s = tfs_load_le(rec + 8 * i, 8);

		if (!tfs_mul_u64(s, z->l->cdims[i], &coords[i]))
			coords[i] = UINT64_MAX;
	}
	return ck_add(z, coords, addr, size, mask, at);
}

/* one index entry: address, [size, mask] */
static int ck_entry(struct ck_ctx *z, struct tfs_cursor *c, unsigned esize,
		    const uint64_t *coords, bool take)
{
	struct h5_file *f = z->f;
	uint64_t addr, size = z->out->chunk_bytes, mask = 0;
	uint64_t at = tfs_cursor_offset(c);

	h5_addr(f, c, &addr);
	if (z->filtered) {
		tfs_cursor_le(c, esize - f->so - 4, &size);
		tfs_cursor_le(c, 4, &mask);
	}
	if (!take || addr == H5_UNDEF)
		return 0;
	return ck_add(z, coords, addr, size, (uint32_t)mask, at);
}

static int ck_entry_size(struct ck_ctx *z, unsigned esize, uint64_t at)
{
	unsigned want = z->f->so + (z->filtered ? 5 : 0);

	if (esize < want || (!z->filtered && esize != z->f->so) ||
	    (z->filtered && esize - z->f->so - 4 > 8))
		return tfs_diag_at(z->f->d, -EBADMSG, at,
				   "chunk index: entries of %u bytes", esize);
	return 0;
}

/*
 * A fixed array whose data block is paged (more than 2^@pbits entries):
 * the block holds a bitmap of initialized pages (most significant bit
 * first) and its checksum; the pages follow it, each its entries and a
 * checksum, the last one shorter.  Pages never initialized hold no chunk.
 */
static int ck_farray_paged(struct ck_ctx *z, uint64_t dblk, uint64_t n,
			   unsigned esize, unsigned pbits, uint64_t at)
{
	struct h5_file *f = z->f;
	uint64_t page = 1ull << pbits, npages = n / page + (n % page != 0);
	uint64_t coords[H5_MAX_RANK], hlen, pos, p, e;
	struct tfs_cursor c;
	const uint8_t *bm;
	int ret;

	hlen = 6 + f->so + (npages + 7) / 8;
	ret = h5_struct(f, dblk, hlen, "FADB", true, "fixed array data block",
			at, &c);
	if (ret)
		return ret;
	bm = c.p + 6 + f->so;
	pos = dblk + hlen + 4;
	for (p = 0; p < npages; p++) {
		uint64_t cnt = p + 1 < npages ? page : n - p * page;
		uint64_t plen = cnt * esize;
		struct tfs_cursor pc;

		if (bm[p / 8] & (0x80 >> (p % 8))) {
			ret = h5_span(f, pos, plen + 4, "fixed array page", at,
				      &pc);
			if (!ret)
				ret = h5_checksum(f, pc.base, plen,
						  "fixed array page");
			for (e = 0; !ret && e < cnt; e++) {
				bool in = ck_unlinear(z, z->grid, NULL,
						      p * page + e, coords);

				ret = ck_entry(z, &pc, esize, coords, in);
			}
			if (ret)
				return ret;
		}
		pos += plen + 4;
	}
	return 0;
}

static int ck_farray(struct ck_ctx *z)
{
	struct h5_file *f = z->f;
	struct tfs_cursor c;
	uint64_t hlen = 8 + f->sl + f->so, n, dblk, want = 1, i;
	uint64_t coords[H5_MAX_RANK];
	uint8_t esize, pbits;
	unsigned k;
	int ret;

	ret = h5_struct(f, z->l->idx_addr, hlen, "FAHD", true,
			"fixed array header", z->l->at, &c);
	if (ret)
		return ret;
	esize = c.p[6];
	pbits = c.p[7];
	tfs_cursor_skip(&c, 8);
	h5_len(f, &c, &n);
	h5_addr(f, &c, &dblk);
	ret = ck_entry_size(z, esize, c.base + 6);
	if (ret)
		return ret;
	for (k = 0; k < z->rank; k++)
		if (!tfs_mul_u64(want, z->grid[k], &want))
			want = UINT64_MAX;
	if (n != want)
		return tfs_diag_at(f->d, -EBADMSG, c.base + 8,
				   "fixed array header: %llu entries for a "
				   "grid of %llu chunks",
				   (unsigned long long)n,
				   (unsigned long long)want);
	if (!tfs_mul_u64(n, esize, &hlen) || hlen > f->size)
		return tfs_diag_at(f->d, -EBADMSG, c.base + 8,
				   "fixed array header: %llu entries of %u "
				   "bytes, more than the file holds",
				   (unsigned long long)n, esize);
	if (pbits < 64 && n > (1ull << pbits))
		return ck_farray_paged(z, dblk, n, esize, pbits, c.base + 8);
	hlen += 6 + f->so;
	ret = h5_struct(f, dblk, hlen, "FADB", true, "fixed array data block",
			c.base + 8 + f->sl, &c);
	if (ret)
		return ret;
	tfs_cursor_skip(&c, 6 + f->so);
	for (i = 0; !ret && i < n; i++) {
		bool in = ck_unlinear(z, z->grid, NULL, i, coords);

		ret = ck_entry(z, &c, esize, coords, in);
	}
	return ret;
}

/* an extensible array's layout, once its index block is read */
struct ck_ea {
	uint64_t addrs[512 + 80]; /* index block: data, then super blocks */
	uint64_t ibe, esize, dmin, first, ndblk, nsblks, aoff, limit;
	unsigned page_bits;
	const uint64_t *grid;
	const unsigned *order;
};

/* the entries of one data block: elements [start, start + count) */
static int ck_ea_dblock(struct ck_ctx *z, const struct ck_ea *ea, uint64_t addr,
			uint64_t start, uint64_t count, const uint8_t *bitmap,
			uint64_t at)
{
	struct h5_file *f = z->f;
	uint64_t coords[H5_MAX_RANK], e, page = count, pos, hlen;
	uint64_t pre = 6 + f->so + ea->aoff;
	struct tfs_cursor c;
	int ret;

	/* paged (the super block holds the bitmap): header, then pages of
	 * entries each followed by its checksum */
	if (bitmap)
		page = 1ull << ea->page_bits;
	hlen = pre + (bitmap ? 0 : count * ea->esize);
	ret = h5_struct(f, addr, hlen, "EADB", true,
			"extensible array data block", at, &c);
	if (ret)
		return ret;
	tfs_cursor_skip(&c, pre);
	pos = addr + hlen + 4;
	for (e = 0; !ret && e < count; e++) {
		uint64_t lin = ea->ibe + start + e;
		bool in;

		if (bitmap && e % page == 0) {
			uint64_t p = e / page;

			if (!(bitmap[p / 8] & (0x80 >> (p % 8)))) {
				/* never initialized: no chunk in it */
				e += page - 1;
				pos += page * ea->esize + 4;
				continue;
			}
			ret = h5_span(f, pos, page * ea->esize + 4,
				      "extensible array page", at, &c);
			if (!ret)
				ret = h5_checksum(f, c.base, page * ea->esize,
						  "extensible array page");
			if (ret)
				return ret;
			pos += page * ea->esize + 4;
		}
		in = lin < ea->limit &&
		     ck_unlinear(z, ea->grid, ea->order, lin, coords);
		ret = ck_entry(z, &c, (unsigned)ea->esize, coords, in);
	}
	return ret;
}

/*
 * The data blocks beyond the index block, super block by super block
 * (libhdf5's H5EA__hdr_init): super block u holds 2^(u/2) data blocks of
 * dmin x 2^((u+1)/2) elements; the first ones hang off the index block,
 * the others off super blocks (EASB).
 */
static int ck_ea_blocks(struct ck_ctx *z, const struct ck_ea *ea)
{
	struct h5_file *f = z->f;
	uint64_t start = 0, sdblk = 0, u, j;
	int ret = 0;

	for (u = 0; !ret && u < ea->nsblks && ea->ibe + start < ea->limit;
	     u++) {
		uint64_t nd = 1ull << (u / 2), dn = ea->dmin << ((u + 1) / 2);
		uint64_t pinit = 0;
		const uint8_t *bm = NULL;
		struct tfs_cursor sb;
		bool have_sb = u >= ea->first;

		if (have_sb) {
			uint64_t sa = ea->addrs[ea->ndblk + u - ea->first];

			if (sa == H5_UNDEF) {
				start += nd * dn;
				continue;
			}
			/* paged data blocks: a page bitmap per data block */
			if (ea->page_bits < 32 && dn > (1ull << ea->page_bits))
				pinit = ((dn >> ea->page_bits) + 7) / 8;
			ret = h5_struct(
				f, sa,
				6 + f->so + ea->aoff + nd * (pinit + f->so),
				"EASB", true, "extensible array super block",
				h5_abs(f, sa), &sb);
			if (ret)
				return ret;
			tfs_cursor_skip(&sb, 6 + f->so + ea->aoff);
			bm = sb.p + sb.pos;
			tfs_cursor_skip(&sb, nd * pinit);
		}
		for (j = 0; !ret && j < nd && ea->ibe + start < ea->limit;
		     j++, start += dn) {
			uint64_t da, at;

			if (have_sb) {
				at = tfs_cursor_offset(&sb);
				h5_addr(f, &sb, &da);
			} else {
				da = ea->addrs[sdblk + j];
				at = z->l->at;
				if (ea->page_bits < 64 &&
				    dn > (1ull << ea->page_bits))
					return tfs_diag_at(
						f->d, -ENOTSUP, at,
						"extensible array: a paged "
						"data block under the index "
						"block is not supported");
			}
			if (da != H5_UNDEF)
				ret = ck_ea_dblock(
					z, ea, da, start, dn,
					pinit ? bm + j * pinit : NULL, at);
		}
		start += (nd - j) * dn;
		if (!have_sb)
			sdblk += nd;
	}
	return ret;
}

static int ck_earray(struct ck_ctx *z)
{
	struct h5_file *f = z->f;
	struct tfs_cursor c;
	uint64_t hlen = 12 + 6ull * f->sl + f->so, iblk, max_idx, n = 1, i;
	uint64_t coords[H5_MAX_RANK], grid[H5_MAX_RANK], nsblks, first;
	uint64_t ndblk, nsblk;
	unsigned order[H5_MAX_RANK], k, u = H5_MAX_RANK, j = 1;
	uint8_t esize, maxbits, ibe, dmin, smin, page_bits;
	struct ck_ea ea;
	int ret;

	for (k = 0; k < z->rank; k++)
		if (z->s->maxdims[k] == H5_UNDEF)
			u = k;
	if (u == H5_MAX_RANK)
		return tfs_diag_at(f->d, -EBADMSG, z->l->at,
				   "extensible array index without an "
				   "unlimited dim");
	order[0] = u;
	grid[0] = z->nchunks[u];
	for (k = 0; k < z->rank; k++)
		if (k != u) {
			order[j] = k;
			grid[j++] = z->grid[k];
		}
	ret = h5_struct(f, z->l->idx_addr, hlen, "EAHD", true,
			"extensible array header", z->l->at, &c);
	if (ret)
		return ret;
	esize = c.p[6];
	maxbits = c.p[7];
	ibe = c.p[8];
	dmin = c.p[9];
	smin = c.p[10];
	page_bits = c.p[11];
	tfs_cursor_skip(&c, 12 + 4ull * f->sl);
	h5_len(f, &c, &max_idx);
	tfs_cursor_skip(&c, f->sl);
	h5_addr(f, &c, &iblk);
	ret = ck_entry_size(z, esize, c.base + 6);
	if (ret)
		return ret;
	if (!dmin || (dmin & (dmin - 1)) || !smin || (smin & (smin - 1)) ||
	    maxbits > 64 || maxbits < h5_log2(dmin))
		return tfs_diag_at(f->d, -EBADMSG, c.base + 7,
				   "extensible array header: parameters out "
				   "of range");
	for (k = 0; k < z->rank; k++)
		if (!tfs_mul_u64(n, grid[k], &n))
			n = UINT64_MAX;
	if (max_idx > (uint64_t)ibe + CK_MAX_CHUNKS)
		return tfs_diag_at(f->d, -E2BIG, c.base + 12 + 4ull * f->sl,
				   "extensible array: %llu elements (at most "
				   "%u)",
				   (unsigned long long)max_idx,
				   ibe + CK_MAX_CHUNKS);
	nsblks = 1 + (maxbits - h5_log2(dmin));
	first = 2ull * h5_log2(smin);
	ndblk = 2ull * (smin - 1);
	nsblk = nsblks > first ? nsblks - first : 0;
	hlen = 6 + f->so + (uint64_t)ibe * esize + (ndblk + nsblk) * f->so;
	ret = h5_struct(f, iblk, hlen, "EAIB", true,
			"extensible array index block",
			c.base + 12 + 6ull * f->sl, &c);
	if (ret)
		return ret;
	tfs_cursor_skip(&c, 6 + f->so);
	for (i = 0; !ret && i < ibe; i++) {
		bool in = i < n && ck_unlinear(z, grid, order, i, coords);

		ret = ck_entry(z, &c, esize, coords, in);
	}
	for (i = 0; !ret && i < ndblk + nsblk; i++)
		h5_addr(f, &c, &ea.addrs[i]);
	ea.ibe = ibe;
	ea.esize = esize;
	ea.dmin = dmin;
	ea.first = first;
	ea.ndblk = ndblk;
	ea.nsblks = nsblks;
	ea.aoff = (maxbits + 7u) / 8;
	ea.page_bits = page_bits;
	ea.limit = max_idx < n ? max_idx : n;
	ea.grid = grid;
	ea.order = order;
	return ret ? ret : ck_ea_blocks(z, &ea);
}

static int ck_implicit(struct ck_ctx *z)
{
	uint64_t n = 1, total, i, coords[H5_MAX_RANK];
	struct tfs_cursor c;
	unsigned k;
	int ret;

	for (k = 0; k < z->rank; k++)
		if (!tfs_mul_u64(n, z->grid[k], &n))
			n = UINT64_MAX;
	if (!tfs_mul_u64(n, z->out->chunk_bytes, &total))
		total = UINT64_MAX;
	ret = h5_span(z->f, z->l->idx_addr, total, "implicit chunk index",
		      z->l->at, &c);
	if (ret)
		return ret;
	for (i = 0; !ret && i < n; i++)
		if (ck_unlinear(z, z->grid, NULL, i, coords))
			ret = ck_add(z, coords,
				     z->l->idx_addr + i * z->out->chunk_bytes,
				     z->out->chunk_bytes, 0, z->l->at);
	return ret;
}

static int ck_cmp(const void *a, const void *b, void *arg)
{
	const struct h5_chunks *o = arg;
	const uint64_t *x = o->coords + *(const size_t *)a * o->rank;
	const uint64_t *y = o->coords + *(const size_t *)b * o->rank;
	unsigned i;

	for (i = 0; i < o->rank; i++)
		if (x[i] != y[i])
			return x[i] < y[i] ? -1 : 1;
	return 0;
}

/* sort by coordinates; a chunk listed twice is refused */
static int ck_sort(struct ck_ctx *z)
{
	struct h5_chunks *o = z->out;
	size_t *ix, i;
	struct h5_chunk *nc;
	uint64_t *nco;
	int ret = 0;

	if (o->n < 2)
		return 0;
	ix = calloc(o->n, sizeof(*ix));
	nc = calloc(o->n, sizeof(*nc));
	nco = calloc(o->n * z->rank, sizeof(*nco));
	if (!ix || !nc || !nco) {
		ret = tfs_diag_oom(z->f->d);
		goto out;
	}
	for (i = 0; i < o->n; i++)
		ix[i] = i;
	qsort_r(ix, o->n, sizeof(*ix), ck_cmp, o);
	for (i = 0; i < o->n; i++) {
		nc[i] = o->c[ix[i]];
		memcpy(nco + i * z->rank, o->coords + ix[i] * z->rank,
		       z->rank * sizeof(*nco));
		if (i && !memcmp(nco + i * z->rank, nco + (i - 1) * z->rank,
				 z->rank * sizeof(*nco))) {
			ret = tfs_diag_at(z->f->d, -EBADMSG, nc[i].at,
					  "chunk at %llu: its coordinates are "
					  "listed twice",
					  (unsigned long long)nc[i].addr);
			goto out;
		}
	}
	free(o->c);
	free(o->coords);
	o->c = nc;
	o->coords = nco;
	nc = NULL;
	nco = NULL;
out:
	free(ix);
	free(nc);
	free(nco);
	return ret;
}

int h5_chunks_collect(struct h5_file *f, const struct h5_space *s,
		      const struct h5_layout *l, uint32_t elem_size,
		      bool filtered, struct h5_chunks *out)
{
	struct ck_ctx z = {
		.f = f, .s = s, .l = l, .out = out, .filtered = filtered};
	unsigned k;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	z.rank = s->rank;
	out->rank = s->rank;
	if (s->kind != H5_SPACE_SIMPLE || l->ndims != s->rank + 1)
		return tfs_diag_at(f->d, -EBADMSG, l->at,
				   "data layout: %u chunk dims for a rank-%u "
				   "dataspace",
				   l->ndims, s->rank);
	if (l->cdims[s->rank] != elem_size && l->version >= 3)
		return tfs_diag_at(f->d, -EBADMSG, l->at,
				   "data layout: the last chunk dim is %llu, "
				   "not the element size %u",
				   (unsigned long long)l->cdims[s->rank],
				   elem_size);
	out->chunk_bytes = elem_size;
	for (k = 0; k < s->rank; k++) {
		if (l->cdims[k] == 0 ||
		    !tfs_mul_u64(out->chunk_bytes, l->cdims[k],
				 &out->chunk_bytes) ||
		    out->chunk_bytes > H5_MAX_CHUNK)
			return tfs_diag_at(f->d, -EBADMSG, l->at,
					   "data layout: chunk dims give a "
					   "chunk of 0 or more than 4 GiB");
		z.nchunks[k] = ceil_div(s->dims[k], l->cdims[k]);
		z.grid[k] = ceil_div(s->maxdims[k] == H5_UNDEF ? s->dims[k]
							       : s->maxdims[k],
				     l->cdims[k]);
	}
	if (l->idx_addr == H5_UNDEF)
		return 0;
	switch (l->index) {
	case H5_IDX_BTREE1:
		ret = h5_btree1_walk(f, l->idx_addr, 1, 8 + 8 * l->ndims,
				     ck_bt1, &z);
		break;
	case H5_IDX_SINGLE: {
		uint64_t zero[H5_MAX_RANK] = {0};

		if (s->nelem == 0)
			break;
		ret = ck_add(&z, zero, l->idx_addr,
			     (l->flags & 2) ? l->single_size : out->chunk_bytes,
			     l->single_mask, l->at);
		break;
	}
	case H5_IDX_IMPLICIT:
		ret = ck_implicit(&z);
		break;
	case H5_IDX_FARRAY:
		ret = ck_farray(&z);
		break;
	case H5_IDX_EARRAY:
		ret = ck_earray(&z);
		break;
	case H5_IDX_BTREE2: {
		/* the width of a filtered record's size, kept for ck_bt2 */
		struct h5_layout l2 = *l;
		unsigned min = f->so + 8 * s->rank;

		z.l = &l2;
		if (filtered) {
			struct tfs_cursor c;

			ret = h5_span(f, l->idx_addr, 16, "v2 B-tree header",
				      l->at, &c);
			if (ret)
				break;
			min = (unsigned)tfs_load_le(c.p + 10, 2);
			if (min < f->so + 4 + 8 * s->rank + 1 ||
			    min > f->so + 4 + 8 * s->rank + 8) {
				ret = tfs_diag_at(f->d, -EBADMSG, c.base + 10,
						  "v2 B-tree chunk records of "
						  "%u bytes",
						  min);
				break;
			}
			l2.idx_params[4] =
				(uint8_t)(min - f->so - 4 - 8 * s->rank);
		}
		ret = h5_btree2_walk(f, l->idx_addr, filtered ? 11 : 10, min,
				     ck_bt2, &z);
		break;
	}
	default:
		ret = tfs_diag_at(f->d, -EBADMSG, l->at,
				  "data layout: chunk index type %u", l->index);
	}
	if (!ret)
		ret = ck_sort(&z);
	if (ret)
		h5_chunks_free(out);
	return ret;
}
