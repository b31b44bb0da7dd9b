// SPDX-License-Identifier: MIT
/*
 * Version 1 B-trees (TREE; specs/hdf5.md section 10.1): group nodes (type
 * 0, keys are local heap offsets) and chunk nodes (type 1).  Every node is
 * visited once, its level is its parent's minus one, at most
 * H5_MAX_TREE_DEPTH levels and 2K entries.  Siblings are not followed.
 */
#include <errno.h>

#include "parse/hdf5/h5.h"
#include "core/checked.h"
#include "core/diag.h"

struct bt1_ctx {
	struct h5_file *f;
	unsigned type, key_size, max_entries;
	h5_bt1_fn leaf;
	void *arg;
	struct h5_set seen;
};

static int bt1_node(struct bt1_ctx *z, uint64_t addr, int want_level,
		    unsigned depth, uint64_t at)
{
	struct h5_file *f = z->f;
	struct tfs_cursor c;
	uint8_t type = 0, level = 0;
	uint16_t used = 0;
	uint64_t per, i;
	int ret;

	ret = h5_struct(f, addr, 8 + 2ull * f->so, "TREE", false,
			"v1 B-tree node", at, &c);
	if (!ret)
		ret = h5_visit(f, &z->seen, addr, at, "v1 B-tree");
	if (ret)
		return ret;
	tfs_cursor_skip(&c, 4);
	tfs_cursor_u8(&c, &type);
	tfs_cursor_u8(&c, &level);
	tfs_cursor_u16le(&c, &used);
	if (type != z->type)
		return tfs_diag_at(f->d, -EBADMSG, c.base + 4,
				   "v1 B-tree node %llu: type %u, expected %u",
				   (unsigned long long)addr, type, z->type);
	if (want_level >= 0 && level != want_level)
		return tfs_diag_at(f->d, -EBADMSG, c.base + 5,
				   "v1 B-tree node %llu: level %u under a "
				   "level %d node",
				   (unsigned long long)addr, level,
				   want_level + 1);
	if (level >= H5_MAX_TREE_DEPTH || depth >= H5_MAX_TREE_DEPTH)
		return tfs_diag_at(f->d, -EBADMSG, c.base + 5,
				   "v1 B-tree node %llu: level %u (at most "
				   "%u)",
				   (unsigned long long)addr, level,
				   H5_MAX_TREE_DEPTH - 1);
	if (used > z->max_entries)
		return tfs_diag_at(f->d, -EBADMSG, c.base + 6,
				   "v1 B-tree node %llu: %u entries, above "
				   "2K = %u",
				   (unsigned long long)addr, used,
				   z->max_entries);
	per = (uint64_t)z->key_size + f->so;
	ret = h5_span(f, addr, 8 + 2ull * f->so + per * used + z->key_size,
		      "v1 B-tree node", at, &c);
	if (ret)
		return ret;
	tfs_cursor_skip(&c, 8 + 2ull * f->so);
	for (i = 0; i < used; i++) {
		const uint8_t *key = c.p + c.pos;
		uint64_t child, cat;

		tfs_cursor_skip(&c, z->key_size);
		cat = tfs_cursor_offset(&c);
		h5_addr(f, &c, &child);
		if (level > 0)
			ret = bt1_node(z, child, level - 1, depth + 1, cat);
		else
			ret = z->leaf(z->arg, key, child, cat);
		if (ret)
			return ret;
	}
	return 0;
}

int h5_btree1_walk(struct h5_file *f, uint64_t addr, unsigned type,
		   unsigned key_size, h5_bt1_fn leaf, void *arg)
{
	struct bt1_ctx z = {.f = f,
			    .type = type,
			    .key_size = key_size,
			    .leaf = leaf,
			    .arg = arg};
	int ret;

	z.max_entries = 2 * (type == 0 ? f->internal_k : f->chunk_k);
	ret = bt1_node(&z, addr, -1, 0, h5_abs(f, addr));
	h5_set_free(&z.seen);
	return ret;
}
