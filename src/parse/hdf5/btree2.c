// SPDX-License-Identifier: MIT
/*
 * Version 2 B-trees (BTHD, BTIN, BTLF; specs/hdf5.md section 10.2), of
 * any depth: the child pointers' widths are derived from the node size
 * and record size as libhdf5 derives them (H5B2__hdr_init).  Every node is
 * visited once and checksummed; a child's depth is its parent's minus one;
 * a node's record count is bounded by what its size can hold.
 */
#include <errno.h>

#include "parse/hdf5/h5.h"
#include "core/checked.h"
#include "core/diag.h"

struct bt2_level {
	uint64_t max_nrec, cum_max_nrec;
	unsigned cum_size; /* bytes of a "total records" field */
};

struct bt2_ctx {
	struct h5_file *f;
	unsigned type, depth;
	uint32_t node_size;
	uint16_t rec_size;
	unsigned nrec_size; /* bytes of a child's record count */
	struct bt2_level lv[H5_MAX_TREE_DEPTH + 1];
	h5_bt2_fn fn;
	void *arg;
	struct h5_set seen;
	uint64_t records;
};

#define BT2_PREFIX 10 /* signature, version, type, checksum */

static unsigned bt2_ptr_size(const struct bt2_ctx *z, unsigned d)
{
	return z->f->so + z->nrec_size + (d > 1 ? z->lv[d - 1].cum_size : 0);
}

static int bt2_init(struct bt2_ctx *z, uint64_t at)
{
	unsigned d;

	if (z->node_size <= BT2_PREFIX || z->rec_size == 0 ||
	    (z->node_size - BT2_PREFIX) / z->rec_size == 0)
		return tfs_diag_at(z->f->d, -EBADMSG, at,
				   "v2 B-tree: node size %u cannot hold a "
				   "%u-byte record",
				   z->node_size, z->rec_size);
	z->lv[0].max_nrec = (z->node_size - BT2_PREFIX) / z->rec_size;
	z->lv[0].cum_max_nrec = z->lv[0].max_nrec;
	z->lv[0].cum_size = 0;
	z->nrec_size = h5_enc_size(z->lv[0].max_nrec);
	for (d = 1; d <= z->depth; d++) {
		unsigned ps = bt2_ptr_size(z, d);
		uint64_t m, cum;

		if (z->node_size <= BT2_PREFIX + ps)
			return tfs_diag_at(z->f->d, -EBADMSG, at,
					   "v2 B-tree: node size %u too small "
					   "for depth %u",
					   z->node_size, z->depth);
		m = (z->node_size - (BT2_PREFIX + ps)) / (z->rec_size + ps);
		if (m == 0)
			return tfs_diag_at(z->f->d, -EBADMSG, at,
					   "v2 B-tree: node size %u too small "
					   "for depth %u",
					   z->node_size, z->depth);
		z->lv[d].max_nrec = m;
		if (!tfs_mul_u64(m + 1, z->lv[d - 1].cum_max_nrec, &cum) ||
		    !tfs_add_u64(cum, m, &cum))
			cum = UINT64_MAX;
		z->lv[d].cum_max_nrec = cum;
		z->lv[d].cum_size = h5_enc_size(cum);
	}
	return 0;
}

static int bt2_node(struct bt2_ctx *z, uint64_t addr, unsigned depth,
		    uint64_t nrec, uint64_t at)
{
	struct h5_file *f = z->f;
	struct tfs_cursor c;
	uint64_t len, i;
	const char *sig = depth ? "BTIN" : "BTLF";
	int ret;

	if (nrec > z->lv[depth].max_nrec)
		return tfs_diag_at(f->d, -EBADMSG, at,
				   "v2 B-tree: %llu records for a node that "
				   "holds %llu",
				   (unsigned long long)nrec,
				   (unsigned long long)z->lv[depth].max_nrec);
	len = 6 + nrec * z->rec_size;
	if (depth)
		len += (nrec + 1) * bt2_ptr_size(z, depth);
	ret = h5_visit(f, &z->seen, addr, at, "v2 B-tree");
	if (!ret)
		ret = h5_struct(f, addr, len, sig, true,
				depth ? "v2 B-tree internal node"
				      : "v2 B-tree leaf node",
				at, &c);
	if (ret)
		return ret;
	if (c.p[4] != 0 || c.p[5] != z->type)
		return tfs_diag_at(f->d, -EBADMSG, c.base + 4,
				   "v2 B-tree node %llu: version %u type %u, "
				   "expected 0 and %u",
				   (unsigned long long)addr, c.p[4], c.p[5],
				   z->type);
	tfs_cursor_skip(&c, 6);
	for (i = 0; i < nrec; i++) {
		if (z->records++ > H5_MAX_NODES * 64ull)
			return tfs_diag_at(f->d, -E2BIG, at,
					   "v2 B-tree: too many records");
		ret = z->fn(z->arg, c.p + c.pos, tfs_cursor_offset(&c));
		if (ret)
			return ret;
		tfs_cursor_skip(&c, z->rec_size);
	}
	for (i = 0; depth && i <= nrec; i++) {
		uint64_t child, cn = 0, tot, cat = tfs_cursor_offset(&c);

		h5_addr(f, &c, &child);
		tfs_cursor_le(&c, z->nrec_size, &cn);
		if (depth > 1)
			tfs_cursor_le(&c, z->lv[depth - 1].cum_size, &tot);
		ret = bt2_node(z, child, depth - 1, cn, cat);
		if (ret)
			return ret;
	}
	return 0;
}

int h5_btree2_walk(struct h5_file *f, uint64_t addr, unsigned type,
		   unsigned min_rec, h5_bt2_fn fn, void *arg)
{
	struct bt2_ctx z = {.f = f, .type = type, .fn = fn, .arg = arg};
	struct tfs_cursor c;
	uint8_t ver = 0, t = 0;
	uint16_t depth = 0, nroot = 0;
	uint64_t root, hlen = 4 + 1 + 1 + 4 + 2 + 2 + 1 + 1 + f->so + 2 + f->sl;
	uint64_t total;
	int ret;

	ret = h5_struct(f, addr, hlen, "BTHD", true, "v2 B-tree header",
			h5_abs(f, addr), &c);
	if (ret)
		return ret;
	tfs_cursor_skip(&c, 4);
	tfs_cursor_u8(&c, &ver);
	tfs_cursor_u8(&c, &t);
	tfs_cursor_u32le(&c, &z.node_size);
	tfs_cursor_u16le(&c, &z.rec_size);
	tfs_cursor_u16le(&c, &depth);
	tfs_cursor_skip(&c, 2);
	h5_addr(f, &c, &root);
	tfs_cursor_u16le(&c, &nroot);
	h5_len(f, &c, &total);
	if (ver != 0 || t != type)
		return tfs_diag_at(f->d, -EBADMSG, c.base + 4,
				   "v2 B-tree header %llu: version %u type %u, "
				   "expected 0 and %u",
				   (unsigned long long)addr, ver, t, type);
	if (depth >= H5_MAX_TREE_DEPTH)
		return tfs_diag_at(f->d, -EBADMSG, c.base + 12,
				   "v2 B-tree header %llu: depth %u (at most "
				   "%u)",
				   (unsigned long long)addr, depth,
				   H5_MAX_TREE_DEPTH - 1);
	if (z.rec_size < min_rec)
		return tfs_diag_at(f->d, -EBADMSG, c.base + 10,
				   "v2 B-tree header %llu: records of %u "
				   "bytes, type %u needs %u",
				   (unsigned long long)addr, z.rec_size, type,
				   min_rec);
	z.depth = depth;
	ret = bt2_init(&z, c.base + 6);
	if (!ret && root != H5_UNDEF)
		ret = bt2_node(&z, root, depth, nroot, c.base + 16);
	h5_set_free(&z.seen);
	return ret;
}
