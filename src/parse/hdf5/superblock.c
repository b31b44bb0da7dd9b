// SPDX-License-Identifier: MIT
/*
 * The HDF5 signature (at 0, 512, 1024...) and superblocks 0-3
 * (specs/hdf5.md sections 2 and 3), and the bounds helpers every
 * structure uses.
 */
#include <errno.h>
#include <string.h>

#include "parse/hdf5/h5.h"
#include "core/checked.h"
#include "core/diag.h"

static const uint8_t h5_sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
#define H5_SEARCH_MAX (1ull << 30)

int64_t h5_find_signature(const uint8_t *p, uint64_t size, uint64_t max)
{
	uint64_t at = 0;

	while (at <= H5_SEARCH_MAX && at < max && size >= 8 && at <= size - 8) {
		if (memcmp(p + at, h5_sig, 8) == 0)
			return (int64_t)at;
		at = at ? at * 2 : 512;
	}
	return -ENOENT;
}

uint64_t h5_abs(const struct h5_file *f, uint64_t addr)
{
	return f->base + addr;
}

unsigned h5_log2(uint64_t v)
{
	unsigned n = 0;

	while (v > 1) {
		v >>= 1;
		n++;
	}
	return n;
}

unsigned h5_enc_size(uint64_t v)
{
	return h5_log2(v) / 8 + 1; /* bytes up to the highest set bit */
}

int h5_span(struct h5_file *f, uint64_t addr, uint64_t len, const char *what,
	    uint64_t at, struct tfs_cursor *c)
{
	uint64_t off;

	if (addr == H5_UNDEF)
		return tfs_diag_at(f->d, -EBADMSG, at,
				   "%s: the address is undefined", what);
	if (!tfs_add_u64(f->base, addr, &off) ||
	    !tfs_range_ok(off, len, f->size))
		return tfs_diag_at(f->d, -EBADMSG, at,
				   "%s: address %llu + %llu bytes is past the "
				   "end of the file (%llu bytes)",
				   what, (unsigned long long)addr,
				   (unsigned long long)len,
				   (unsigned long long)(f->size - f->base));
	tfs_cursor_init(c, f->p + off, len, off);
	return 0;
}

int h5_struct(struct h5_file *f, uint64_t addr, uint64_t len, const char *sig,
	      bool sum, const char *what, uint64_t at, struct tfs_cursor *c)
{
	int ret = h5_span(f, addr, len + (sum ? 4 : 0), what, at, c);

	if (ret)
		return ret;
	if (len < 4 || !tfs_cursor_match(c, sig, 4))
		return tfs_diag_at(f->d, -EBADMSG, c->base,
				   "%s %llu: no %s signature", what,
				   (unsigned long long)addr, sig);
	c->len = len;
	return sum ? h5_checksum(f, c->base, len, what) : 0;
}

int h5_short(struct h5_file *f, const struct tfs_cursor *c, const char *what)
{
	return tfs_diag_at(f->d, -EBADMSG, tfs_cursor_offset(c),
			   "%s: truncated (%llu bytes left)", what,
			   (unsigned long long)tfs_cursor_remaining(c));
}

int h5_addr(struct h5_file *f, struct tfs_cursor *c, uint64_t *v)
{
	uint64_t x;

	if (tfs_cursor_le(c, f->so, &x))
		return -EBADMSG;
	*v = (f->so == 8 || x != (1ull << (8 * f->so)) - 1) ? x : H5_UNDEF;
	return 0;
}

int h5_len(struct h5_file *f, struct tfs_cursor *c, uint64_t *v)
{
	return tfs_cursor_le(c, f->sl, v);
}

static bool size_ok(unsigned n)
{
	return n == 2 || n == 4 || n == 8;
}

int h5_superblock(struct h5_file *f)
{
	struct tfs_cursor c;
	int64_t found = h5_find_signature(f->p, f->size, UINT64_MAX);
	uint8_t v, so, sl;
	uint64_t base, fs, drv = H5_UNDEF, x;
	uint16_t k;
	int ret;

	if (found < 0)
		return tfs_diag_at(f->d, -EBADMSG, 0,
				   "superblock: no HDF5 signature at byte 0, "
				   "512, 1024, ...");
	f->base = (uint64_t)found;
	tfs_cursor_init(&c, f->p + f->base, f->size - f->base, f->base);
	tfs_cursor_skip(&c, 8);
	if (tfs_cursor_u8(&c, &v))
		return h5_short(f, &c, "superblock");
	if (v > 3)
		return tfs_diag_at(f->d, -ENOTSUP, tfs_cursor_offset(&c) - 1,
				   "superblock: version %u (0 to 3 are "
				   "known)",
				   v);
	f->sb_version = v;
	f->ext = H5_UNDEF;
	if (v <= 1) {
		if (tfs_cursor_skip(&c, 4) || tfs_cursor_u8(&c, &so) ||
		    tfs_cursor_u8(&c, &sl) || tfs_cursor_skip(&c, 1))
			return h5_short(f, &c, "superblock");
	} else {
		if (tfs_cursor_u8(&c, &so) || tfs_cursor_u8(&c, &sl) ||
		    tfs_cursor_skip(&c, 1))
			return h5_short(f, &c, "superblock");
	}
	if (!size_ok(so) || !size_ok(sl))
		return tfs_diag_at(f->d, -EBADMSG, tfs_cursor_offset(&c) - 3,
				   "superblock: size of offsets %u / lengths "
				   "%u (2, 4 or 8)",
				   so, sl);
	f->so = so;
	f->sl = sl;
	f->leaf_k = 4;
	f->internal_k = 16;
	f->chunk_k = 32;
	if (v <= 1) {
		if (tfs_cursor_u16le(&c, &k))
			return h5_short(f, &c, "superblock");
		f->leaf_k = k;
		if (tfs_cursor_u16le(&c, &k) || tfs_cursor_skip(&c, 4))
			return h5_short(f, &c, "superblock");
		f->internal_k = k;
		if (!f->leaf_k || !f->internal_k)
			return tfs_diag_at(f->d, -EBADMSG,
					   tfs_cursor_offset(&c) - 8,
					   "superblock: group B-tree K of 0");
		if (v == 1) {
			if (tfs_cursor_u16le(&c, &k) || tfs_cursor_skip(&c, 2))
				return h5_short(f, &c, "superblock");
			if (!k)
				return tfs_diag_at(f->d, -EBADMSG,
						   tfs_cursor_offset(&c) - 4,
						   "superblock: indexed "
						   "storage K of 0");
			f->chunk_k = k;
		}
	}
	x = tfs_cursor_offset(&c);
	if (h5_addr(f, &c, &base))
		return h5_short(f, &c, "superblock");
	if (base != f->base && !(base == 0 && f->base == 0))
		return tfs_diag_at(f->d, -EBADMSG, x,
				   "superblock: base address %llu, but the "
				   "superblock is at byte %llu",
				   (unsigned long long)base,
				   (unsigned long long)f->base);
	if (v <= 1) {
		uint64_t fsi;

		if (h5_addr(f, &c, &fsi) || h5_addr(f, &c, &f->eof) ||
		    h5_addr(f, &c, &drv))
			return h5_short(f, &c, "superblock");
		x = tfs_cursor_offset(&c);
		/* the root symbol table entry: name offset, header address */
		if (h5_addr(f, &c, &fs) || h5_addr(f, &c, &f->root) ||
		    tfs_cursor_skip(&c, 24))
			return h5_short(f, &c, "superblock");
		x += f->so;
		if (drv != H5_UNDEF)
			return tfs_diag_at(f->d, -ENOTSUP,
					   x - 2 * (uint64_t)f->so,
					   "superblock: a driver information "
					   "block (multi or family files are "
					   "not supported)");
	} else {
		if (h5_addr(f, &c, &f->ext) || h5_addr(f, &c, &f->eof))
			return h5_short(f, &c, "superblock");
		x = tfs_cursor_offset(&c);
		if (h5_addr(f, &c, &f->root) || tfs_cursor_need(&c, 4))
			return h5_short(f, &c, "superblock");
		ret = h5_checksum(f, f->base, c.pos, "superblock");
		if (ret)
			return ret;
	}
	fs = f->size;
	if (f->eof == H5_UNDEF || f->eof > fs)
		return tfs_diag_at(
			f->d, -EBADMSG,
			f->base + (v <= 1 ? 24 + (v == 1 ? 4 : 0) + 2 * f->so
					  : 12 + 2 * f->so),
			"superblock: end-of-file address %llu, but "
			"the file is %llu bytes (truncated)",
			(unsigned long long)f->eof, (unsigned long long)fs);
	{
		struct tfs_cursor r;

		ret = h5_span(f, f->root, 16, "superblock: root object header",
			      x, &r);
		if (ret)
			return ret;
	}
	return 0;
}
