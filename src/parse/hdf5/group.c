// SPDX-License-Identifier: MIT
/*
 * Groups (specs/hdf5.md section 11): old-style (symbol table message, a
 * v1 B-tree of SNOD nodes whose names are in a local heap) and new-style
 * (link messages in the header, or dense: in a fractal heap indexed by a
 * type-5 v2 B-tree).  Links are handed to a callback in storage order.
 */
#include <errno.h>
#include <string.h>

#include "parse/hdf5/h5.h"
#include "core/checked.h"
#include "core/diag.h"

struct grp_ctx {
	struct h5_file *f;
	h5_link_fn fn;
	void *arg;
	/* old-style: the local heap's data segment */
	const uint8_t *heap;
	uint64_t heap_len, heap_at;
	struct h5_set snods;
};

bool h5_is_group(const struct h5_ohdr *oh)
{
	return h5_ohdr_find(oh, 0x11) || h5_ohdr_find(oh, 0x02) ||
	       h5_ohdr_find(oh, 0x06);
}

/* the NUL-terminated name at @off of the local heap */
static int grp_heap_name(struct grp_ctx *z, uint64_t off, uint64_t at,
			 const char **s, size_t *len)
{
	const uint8_t *nul;

	if (off >= z->heap_len)
		return tfs_diag_at(z->f->d, -EBADMSG, at,
				   "symbol table entry: name offset %llu past "
				   "the local heap's %llu bytes",
				   (unsigned long long)off,
				   (unsigned long long)z->heap_len);
	nul = memchr(z->heap + off, 0, z->heap_len - off);
	if (!nul)
		return tfs_diag_at(z->f->d, -EBADMSG, z->heap_at + off,
				   "local heap: a name without its NUL before "
				   "the end of the data segment");
	*s = (const char *)z->heap + off;
	*len = (size_t)(nul - (z->heap + off));
	return 0;
}

static int grp_snod(void *arg, const uint8_t *key, uint64_t addr, uint64_t at)
{
	struct grp_ctx *z = arg;
	struct h5_file *f = z->f;
	struct tfs_cursor c;
	uint64_t esz = 2ull * f->so + 24;
	uint16_t n, i;
	int ret;

	(void)key;
	ret = h5_struct(f, addr, 8, "SNOD", false, "symbol table node", at, &c);
	if (!ret)
		ret = h5_visit(f, &z->snods, addr, at, "symbol table");
	if (ret)
		return ret;
	if (c.p[4] != 1)
		return tfs_diag_at(f->d, -EBADMSG, c.base + 4,
				   "symbol table node %llu: version %u (1)",
				   (unsigned long long)addr, c.p[4]);
	n = (uint16_t)tfs_load_le(c.p + 6, 2);
	if (n > 2 * f->leaf_k)
		return tfs_diag_at(f->d, -EBADMSG, c.base + 6,
				   "symbol table node %llu: %u entries, above "
				   "2K = %u",
				   (unsigned long long)addr, n, 2 * f->leaf_k);
	ret = h5_span(f, addr, 8 + n * esz, "symbol table node", at, &c);
	if (ret)
		return ret;
	tfs_cursor_skip(&c, 8);
	for (i = 0; i < n; i++) {
		struct h5_link l = {0};
		uint64_t noff = 0, ct = 0;

		l.at = tfs_cursor_offset(&c);
		h5_addr(f, &c, &noff);
		h5_addr(f, &c, &l.addr);
		tfs_cursor_le(&c, 4, &ct);
		tfs_cursor_skip(&c, 4);
		ret = grp_heap_name(z, noff, l.at, &l.name, &l.name_len);
		if (!ret && ct == 2) {
			uint64_t voff = tfs_load_le(c.p + c.pos, 4);

			l.type = H5_LINK_SOFT;
			ret = grp_heap_name(z, voff, l.at + 2ull * f->so + 8,
					    &l.target, &l.target_len);
		}
		tfs_cursor_skip(&c, 16);
		if (!ret)
			ret = z->fn(z->arg, &l);
		if (ret)
			return ret;
	}
	return 0;
}

static int grp_symtab(struct grp_ctx *z, const struct h5_msg *m)
{
	struct h5_file *f = z->f;
	struct tfs_cursor c, h;
	uint64_t bt, heap, dsize, dfree, daddr;
	int ret;

	h5_msg_cursor(m, &c);
	if (h5_addr(f, &c, &bt) || h5_addr(f, &c, &heap))
		return h5_short(f, &c, "symbol table message");
	ret = h5_span(f, heap, 8 + 2ull * f->sl + f->so, "local heap", m->at,
		      &h);
	if (ret)
		return ret;
	if (!tfs_cursor_match(&h, "HEAP", 4) || h.p[4] != 0)
		return tfs_diag_at(f->d, -EBADMSG, h.base,
				   "local heap %llu: no HEAP version 0 "
				   "signature",
				   (unsigned long long)heap);
	tfs_cursor_skip(&h, 8);
	h5_len(f, &h, &dsize);
	h5_len(f, &h, &dfree);
	h5_addr(f, &h, &daddr);
	ret = h5_span(f, daddr, dsize, "local heap data segment",
		      h.base + 8 + 2ull * f->sl, &c);
	if (ret)
		return ret;
	z->heap = c.p;
	z->heap_len = dsize;
	z->heap_at = c.base;
	ret = h5_btree1_walk(f, bt, 0, f->sl, grp_snod, z);
	h5_set_free(&z->snods);
	return ret;
}

/* a link message (0x06) in [p, p + len) at @at */
static int grp_link_msg(struct grp_ctx *z, const uint8_t *p, uint64_t len,
			uint64_t at)
{
	struct h5_file *f = z->f;
	struct tfs_cursor c;
	struct h5_link l = {0};
	uint8_t ver, fl, type = 0;
	uint64_t nlen;

	tfs_cursor_init(&c, p, len, at);
	l.at = at;
	if (tfs_cursor_u8(&c, &ver) || tfs_cursor_u8(&c, &fl))
		return h5_short(f, &c, "link message");
	if (ver != 1)
		return tfs_diag_at(f->d, -EBADMSG, at,
				   "link message: version %u (1)", ver);
	if (((fl & 8) && tfs_cursor_u8(&c, &type)) ||
	    ((fl & 4) && tfs_cursor_skip(&c, 8)) ||
	    ((fl & 16) && tfs_cursor_skip(&c, 1)) ||
	    tfs_cursor_le(&c, 1u << (fl & 3), &nlen))
		return h5_short(f, &c, "link message");
	if (nlen == 0 || tfs_cursor_need(&c, nlen))
		return tfs_diag_at(
			f->d, -EBADMSG, tfs_cursor_offset(&c),
			"link message: a name of %llu bytes (%llu "
			"left)",
			(unsigned long long)nlen,
			(unsigned long long)tfs_cursor_remaining(&c));
	l.name = (const char *)(c.p + c.pos);
	l.name_len = (size_t)nlen;
	tfs_cursor_skip(&c, nlen);
	l.type = type;
	if (type == H5_LINK_HARD) {
		if (h5_addr(f, &c, &l.addr))
			return h5_short(f, &c, "link message");
	} else {
		uint16_t vlen;
		const uint8_t *v, *nul;

		if (tfs_cursor_u16le(&c, &vlen) ||
		    tfs_cursor_bytes(&c, vlen, &v))
			return h5_short(f, &c, "link message");
		if (type == H5_LINK_SOFT) {
			l.target = (const char *)v;
			l.target_len = vlen;
		} else if (type == H5_LINK_EXTERNAL && vlen >= 1) {
			/* flags byte, file name NUL, object path NUL */
			nul = memchr(v + 1, 0, vlen - 1u);
			if (!nul)
				return tfs_diag_at(f->d, -EBADMSG, at,
						   "link message: external "
						   "link without its NULs");
			l.target = (const char *)v + 1;
			l.target_len = (size_t)(nul - (v + 1));
			l.obj = (const char *)nul + 1;
			l.obj_len = (size_t)(v + vlen - (nul + 1));
			if (l.obj_len && l.obj[l.obj_len - 1] == 0)
				l.obj_len--;
		}
	}
	return z->fn(z->arg, &l);
}

static int grp_obj(void *arg, const uint8_t *p, uint64_t len, uint64_t at)
{
	return grp_link_msg(arg, p, len, at);
}

int h5_group_links(struct h5_file *f, const struct h5_ohdr *oh, h5_link_fn fn,
		   void *arg, bool *dense)
{
	struct grp_ctx z = {.f = f, .fn = fn, .arg = arg};
	size_t i;
	int ret = 0;

	*dense = false;
	for (i = 0; !ret && i < oh->n; i++) {
		const struct h5_msg *m = &oh->m[i];

		if (m->type == 0x11)
			ret = grp_symtab(&z, m);
		else if (m->type == 0x06)
			ret = grp_link_msg(&z, m->p, m->size, m->at);
		else if (m->type == 0x02)
			ret = h5_dense_walk(f, m, "link info message", 8, 5, 4,
					    grp_obj, &z, dense);
	}
	return ret;
}
