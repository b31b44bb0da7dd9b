// SPDX-License-Identifier: MIT
/*
 * The fractal heap (FRHP, FHIB, FHDB; specs/hdf5.md section 11.3): where
 * dense groups keep their link messages and dense attribute storage its
 * attribute messages.  A managed object's heap offset is found by walking
 * the doubling table down from the root block; tiny objects live in the
 * heap ID itself; huge objects outside the heap, by the address in their ID
 * or through the huge-object v2 B-tree (type 1); filtered heaps are
 * refused.  Every
 * block is checksummed: header and indirect blocks over the bytes before
 * the checksum, direct blocks (flag bit 1) over the whole block with the
 * checksum field zeroed, as libhdf5 computes it (once per block).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "parse/hdf5/h5.h"
#include "core/checked.h"
#include "core/diag.h"

#define FH_MAX_ROWS 64
#define FH_MAX_BLOCK (1ull << 31)
#define FH_MAX_NEST 16

static bool pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

int h5_fheap_open(struct h5_file *f, uint64_t addr, struct h5_fheap *h)
{
	struct tfs_cursor c;
	uint64_t hlen = 14 + 10ull * f->sl + 2ull * f->so + 2 + 2ull * f->sl +
			2 + 2 + f->so + 2;
	uint16_t flen = 0, start_rows;
	uint8_t ver = 0;
	int ret;

	memset(h, 0, sizeof(*h));
	h->addr = addr;
	ret = h5_struct(f, addr, hlen, "FRHP", false, "fractal heap header",
			h5_abs(f, addr), &c);
	if (ret)
		return ret;
	tfs_cursor_skip(&c, 4);
	tfs_cursor_u8(&c, &ver);
	tfs_cursor_u16le(&c, &h->id_len);
	tfs_cursor_u16le(&c, &flen);
	tfs_cursor_u8(&c, &h->flags);
	if (ver != 0)
		return tfs_diag_at(f->d, -EBADMSG, c.base + 4,
				   "fractal heap %llu: version %u (0)",
				   (unsigned long long)addr, ver);
	if (flen)
		return tfs_diag_at(f->d, -ENOTSUP, c.base + 7,
				   "fractal heap %llu: filtered heaps are not "
				   "supported",
				   (unsigned long long)addr);
	ret = h5_checksum(f, c.base, hlen, "fractal heap header");
	if (ret)
		return ret;
	/* max managed size, next huge ID, huge B-tree, ... */
	tfs_cursor_skip(&c, 4 + f->sl);
	h5_addr(f, &c, &h->huge_bt);
	tfs_cursor_skip(&c, 9ull * f->sl + f->so);
	tfs_cursor_u16le(&c, &h->width);
	h5_len(f, &c, &h->start);
	h5_len(f, &c, &h->max_direct);
	tfs_cursor_u16le(&c, &h->max_bits);
	tfs_cursor_u16le(&c, &start_rows);
	h5_addr(f, &c, &h->root);
	tfs_cursor_u16le(&c, &h->cur_rows);
	if (h->id_len < 2 || h->id_len > 64 || !pow2(h->width) ||
	    !pow2(h->start) || h->start > FH_MAX_BLOCK ||
	    !pow2(h->max_direct) || h->max_direct > FH_MAX_BLOCK ||
	    h->max_direct < h->start || h->max_bits == 0 || h->max_bits > 64 ||
	    h->cur_rows > FH_MAX_ROWS)
		return tfs_diag_at(f->d, -EBADMSG, c.base + 4,
				   "fractal heap %llu: parameters out of "
				   "range (ID length %u, width %u, start %llu, "
				   "max direct %llu, max bits %u, rows %u)",
				   (unsigned long long)addr, h->id_len,
				   h->width, (unsigned long long)h->start,
				   (unsigned long long)h->max_direct,
				   h->max_bits, h->cur_rows);
	h->off_bytes = (h->max_bits + 7) / 8;
	h->len_bytes = h5_enc_size(h->max_direct);
	if (h->len_bytes > (unsigned)h->id_len - 1 - h->off_bytes)
		h->len_bytes = h->id_len - 1 - h->off_bytes;
	if (h->off_bytes >= h->id_len)
		return tfs_diag_at(f->d, -EBADMSG, c.base + 5,
				   "fractal heap %llu: ID length %u too short",
				   (unsigned long long)addr, h->id_len);
	h->max_direct_rows = h5_log2(h->max_direct) - h5_log2(h->start) + 2;
	return 0;
}

static uint64_t row_size(const struct h5_fheap *h, unsigned r)
{
	return r < 2 ? h->start : h->start << (r - 1);
}

/* a direct block's checksum: lookup3 of the block, its field zeroed */
static int fh_direct_sum(struct h5_file *f, const struct h5_fheap *h,
			 const struct tfs_cursor *c, uint64_t addr,
			 uint64_t bsize)
{
	uint64_t at = 5 + f->so + h->off_bytes;
	uint32_t want, got;
	uint8_t *copy;

	if (bsize < at + 4)
		return tfs_diag_at(f->d, -EBADMSG, c->base,
				   "fractal heap direct block %llu: %llu bytes "
				   "cannot hold its header",
				   (unsigned long long)addr,
				   (unsigned long long)bsize);
	copy = malloc(bsize);
	if (!copy)
		return tfs_diag_oom(f->d);
	memcpy(copy, c->p, bsize);
	want = (uint32_t)tfs_load_le(copy + at, 4);
	memset(copy + at, 0, 4);
	got = h5_lookup3(copy, bsize, 0);
	free(copy);
	if (want != got)
		return tfs_diag_at(
			f->d, -EBADMSG, c->base + at,
			"fractal heap direct block %llu: checksum "
			"0x%08x, but the bytes give 0x%08x (lookup3)",
			(unsigned long long)addr, want, got);
	if (h->verified && h5_set_add(h->verified, addr) < 0)
		return tfs_diag_oom(f->d);
	return 0;
}

/* the object at heap offset @off in the direct block at @addr */
static int fh_direct(struct h5_file *f, const struct h5_fheap *h, uint64_t addr,
		     uint64_t boff, uint64_t bsize, uint64_t off, uint64_t len,
		     uint64_t at, const uint8_t **p, uint64_t *pat)
{
	struct tfs_cursor c;
	uint64_t hdr = 5 + f->so + h->off_bytes + (h->flags & 2 ? 4 : 0);
	int ret;

	ret = h5_struct(f, addr, bsize, "FHDB", false,
			"fractal heap direct block", at, &c);
	if (ret)
		return ret;
	if ((h->flags & 2) && !(h->verified && h5_set_has(h->verified, addr))) {
		ret = fh_direct_sum(f, h, &c, addr, bsize);
		if (ret)
			return ret;
	}
	if (off - boff < hdr || len > bsize - (off - boff))
		return tfs_diag_at(f->d, -EBADMSG, at,
				   "fractal heap %llu: object at offset %llu "
				   "(%llu bytes) is outside its direct block",
				   (unsigned long long)h->addr,
				   (unsigned long long)off,
				   (unsigned long long)len);
	*p = c.p + (off - boff);
	*pat = c.base + (off - boff);
	return 0;
}

static int fh_indirect(struct h5_file *f, const struct h5_fheap *h,
		       uint64_t addr, unsigned nrows, uint64_t iboff,
		       uint64_t off, uint64_t len, uint64_t at, unsigned nest,
		       const uint8_t **p, uint64_t *pat)
{
	struct tfs_cursor c;
	uint64_t n = (uint64_t)nrows * h->width, hdr, boff = iboff;
	unsigned r, k;
	int ret;

	if (nest > FH_MAX_NEST || nrows > FH_MAX_ROWS)
		return tfs_diag_at(f->d, -EBADMSG, at,
				   "fractal heap %llu: indirect blocks nested "
				   "too deep",
				   (unsigned long long)h->addr);
	hdr = 5 + f->so + h->off_bytes;
	ret = h5_struct(f, addr, hdr + n * f->so, "FHIB", true,
			"fractal heap indirect block", at, &c);
	if (ret)
		return ret;
	tfs_cursor_skip(&c, hdr);
	for (r = 0; r < nrows && r < 34; r++) {
		uint64_t bs = row_size(h, r);

		for (k = 0; k < h->width; k++, boff += bs) {
			uint64_t child, cat = tfs_cursor_offset(&c);

			h5_addr(f, &c, &child);
			if (off < boff || off - boff >= bs)
				continue;
			if (child == H5_UNDEF)
				break;
			if (r < h->max_direct_rows)
				return fh_direct(f, h, child, boff, bs, off,
						 len, cat, p, pat);
			if (h5_log2(bs) < h5_log2(h->start * h->width))
				break;
			return fh_indirect(
				f, h, child,
				h5_log2(bs) - h5_log2(h->start * h->width) + 1,
				boff, off, len, cat, nest + 1, p, pat);
		}
		if (k < h->width)
			break;
	}
	return tfs_diag_at(f->d, -EBADMSG, at,
			   "fractal heap %llu: offset %llu is in no block",
			   (unsigned long long)h->addr,
			   (unsigned long long)off);
}

struct huge_ctx {
	struct h5_file *f;
	uint64_t id, addr, len;
};

static int huge_rec(void *arg, const uint8_t *rec, uint64_t at)
{
	struct huge_ctx *x = arg;
	unsigned so = x->f->so, sl = x->f->sl;

	(void)at;
	if (tfs_load_le(rec + so + sl, sl) != x->id)
		return 0;
	x->addr = tfs_load_le(rec, so);
	x->len = tfs_load_le(rec + so, sl);
	return 1; /* found: stop the walk */
}

/*
 * A huge object: its address and length in the ID when the ID is long
 * enough, else its ID's record in the huge-object v2 B-tree.
 */
static int fh_huge(struct h5_file *f, const struct h5_fheap *h,
		   const uint8_t *id, uint64_t id_at, const uint8_t **p,
		   uint64_t *len, uint64_t *at)
{
	struct huge_ctx x = {.f = f};
	struct tfs_cursor c;
	int ret;

	if (h->id_len >= 1u + f->so + f->sl) {
		x.addr = tfs_load_le(id + 1, f->so);
		x.len = tfs_load_le(id + 1 + f->so, f->sl);
	} else {
		x.id = tfs_load_le(id + 1,
				   h->id_len - 1u < 8 ? h->id_len - 1u : 8);
		ret = h5_btree2_walk(f, h->huge_bt, 1, f->so + 2u * f->sl,
				     huge_rec, &x);
		if (ret < 0)
			return ret;
		if (ret == 0)
			return tfs_diag_at(
				f->d, -EBADMSG, id_at,
				"fractal heap %llu: huge object %llu "
				"is not in its B-tree",
				(unsigned long long)h->addr,
				(unsigned long long)x.id);
	}
	ret = h5_span(f, x.addr, x.len, "fractal heap huge object", id_at, &c);
	if (ret)
		return ret;
	*p = c.p;
	*len = x.len;
	*at = c.base;
	return 0;
}

int h5_fheap_get(struct h5_file *f, const struct h5_fheap *h, const uint8_t *id,
		 uint64_t id_at, const uint8_t **p, uint64_t *len, uint64_t *at)
{
	unsigned kind = (id[0] >> 4) & 3;
	uint64_t off;

	if (id[0] & 0xc0)
		return tfs_diag_at(f->d, -EBADMSG, id_at,
				   "fractal heap ID: version %u (0)",
				   id[0] >> 6);
	if (kind == 2) { /* tiny: the bytes are in the ID */
		*len = (id[0] & 15) + 1u;
		if (*len > h->id_len - 1u)
			return tfs_diag_at(f->d, -EBADMSG, id_at,
					   "fractal heap ID: tiny object of "
					   "%llu bytes in a %u-byte ID",
					   (unsigned long long)*len, h->id_len);
		*p = id + 1;
		*at = id_at + 1;
		return 0;
	}
	if (kind == 1)
		return fh_huge(f, h, id, id_at, p, len, at);
	if (kind != 0)
		return tfs_diag_at(f->d, -EBADMSG, id_at,
				   "fractal heap ID: object type 3");
	off = tfs_load_le(id + 1, h->off_bytes);
	*len = tfs_load_le(id + 1 + h->off_bytes, h->len_bytes);
	if (h->root == H5_UNDEF)
		return tfs_diag_at(f->d, -EBADMSG, id_at,
				   "fractal heap %llu: an object in an empty "
				   "heap",
				   (unsigned long long)h->addr);
	if (h->cur_rows == 0) {
		if (off >= h->start)
			return tfs_diag_at(f->d, -EBADMSG, id_at,
					   "fractal heap %llu: offset %llu "
					   "past the root block",
					   (unsigned long long)h->addr,
					   (unsigned long long)off);
		return fh_direct(f, h, h->root, 0, h->start, off, *len, id_at,
				 p, at);
	}
	return fh_indirect(f, h, h->root, h->cur_rows, 0, off, *len, id_at, 0,
			   p, at);
}

struct dense_ctx {
	struct h5_file *f;
	struct h5_fheap fh;
	struct h5_set verified;
	unsigned id_off;
	h5_obj_fn fn;
	void *arg;
};

static int dense_rec(void *arg, const uint8_t *rec, uint64_t at)
{
	struct dense_ctx *z = arg;
	const uint8_t *p;
	uint64_t len, pat;
	int ret;

	ret = h5_fheap_get(z->f, &z->fh, rec + z->id_off, at + z->id_off, &p,
			   &len, &pat);
	return ret ? ret : z->fn(z->arg, p, len, pat);
}

int h5_dense_walk(struct h5_file *f, const struct h5_msg *m, const char *what,
		  unsigned crt, unsigned type, unsigned id_off, h5_obj_fn fn,
		  void *arg, bool *dense)
{
	struct dense_ctx z = {.f = f, .id_off = id_off, .fn = fn, .arg = arg};
	struct tfs_cursor c;
	uint8_t ver, fl;
	uint64_t heap, name_bt;
	int ret;

	h5_msg_cursor(m, &c);
	if (tfs_cursor_u8(&c, &ver) || tfs_cursor_u8(&c, &fl) ||
	    ((fl & 1) && tfs_cursor_skip(&c, crt)) || h5_addr(f, &c, &heap) ||
	    h5_addr(f, &c, &name_bt))
		return h5_short(f, &c, what);
	if (ver != 0)
		return tfs_diag_at(f->d, -EBADMSG, m->at, "%s: version %u (0)",
				   what, ver);
	if (heap == H5_UNDEF)
		return 0;
	*dense = true;
	ret = h5_fheap_open(f, heap, &z.fh);
	if (ret)
		return ret;
	z.fh.verified = &z.verified;
	ret = h5_btree2_walk(f, name_bt, type, id_off + z.fh.id_len, dense_rec,
			     &z);
	h5_set_free(&z.verified);
	return ret;
}
