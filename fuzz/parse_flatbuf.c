// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the FlatBuffers reader (src/parse/flatbuf.h), with
 * no schema: from the root table, every field id of every table is read as
 * each kind (scalar of 1/2/4/8 bytes, vector, string, sub-table), and the
 * sub-tables and vectors of tables found are walked the same way, breadth
 * bounded.  Checks: a refusal is a negative errno with a message and an
 * offset inside the input; everything returned lies inside the input (a
 * string's NUL too); the table count and depth limits hold.
 */
#include <string.h>

#include "fuzz.h"
#include "parse/flatbuf.h"

#define MAX_FIELDS 12
#define MAX_ELEMS 8

static size_t in_size;

static void refused(int ret, const struct tfs_diag *d)
{
	tfs_fuzz_check_refusal(ret, d);
	if (!d->has_offset || d->offset > in_size)
		tfs_fuzz_fail(
			"flatbuf: refusal without an offset in the input");
}

static void inside(uint64_t pos, uint64_t len, const struct tfs_fb *fb)
{
	if (pos > fb->n || len > fb->n - pos)
		tfs_fuzz_fail("flatbuf: [%llu, +%llu) outside %llu bytes",
			      (unsigned long long)pos, (unsigned long long)len,
			      (unsigned long long)fb->n);
}

static void walk(struct tfs_fb *fb, const struct tfs_fb_table *t)
{
	static const unsigned sizes[] = {1, 2, 4, 8};
	struct tfs_fb_table c;
	struct tfs_fb_vec v;
	struct tfs_fb_str s;
	struct tfs_diag d;
	uint64_t x, pos;
	unsigned id, k;
	uint32_t i;
	int ret;

	if (t->depth > fb->max_depth || fb->tables > fb->max_tables)
		tfs_fuzz_fail("flatbuf: limits exceeded");
	inside(t->pos, t->tsize, fb);
	inside(t->vt, t->vsize, fb);
	for (id = 0; id < MAX_FIELDS; id++) {
		for (k = 0; k < 4; k++) {
			tfs_diag_clear(&d);
			ret = tfs_fb_field(fb, t, id, sizes[k], "f", &pos, &d);
			if (ret < 0)
				refused(ret, &d);
			else if (ret)
				inside(pos, sizes[k], fb);
			tfs_diag_clear(&d);
			ret = tfs_fb_scalar(fb, t, id, sizes[k], 7, "f", &x,
					    &d);
			if (ret < 0)
				refused(ret, &d);
		}
		tfs_diag_clear(&d);
		ret = tfs_fb_string(fb, t, id, "s", &s, &d);
		if (ret < 0) {
			refused(ret, &d);
		} else if (ret) {
			inside((uint64_t)((const uint8_t *)s.p - fb->p),
			       (uint64_t)s.len + 1, fb);
			if (s.p[s.len] != '\0')
				tfs_fuzz_fail("flatbuf: string without NUL");
		}
		tfs_diag_clear(&d);
		ret = tfs_fb_vector(fb, t, id, 4, 1u << 20, "v", &v, &d);
		if (ret < 0) {
			refused(ret, &d);
			continue;
		}
		if (ret) {
			inside(v.pos, (uint64_t)v.count * 4, fb);
			for (i = 0; i < v.count && i < MAX_ELEMS; i++) {
				tfs_diag_clear(&d);
				ret = tfs_fb_vec_table(fb, t, &v, i, "e", &c,
						       &d);
				if (ret)
					refused(ret, &d);
				else if (fb->tables < 200)
					walk(fb, &c);
			}
		}
		tfs_diag_clear(&d);
		ret = tfs_fb_child(fb, t, id, "c", &c, &d);
		if (ret < 0)
			refused(ret, &d);
		else if (ret && fb->tables < 200)
			walk(fb, &c);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tfs_fb fb;
	struct tfs_fb_table root;
	struct tfs_diag d;
	int ret;

	in_size = size;
	tfs_fb_init(&fb, data, size);
	fb.max_depth = 8;
	tfs_diag_clear(&d);
	ret = tfs_fb_root(&fb, &root, &d);
	if (ret) {
		refused(ret, &d);
		return 0;
	}
	walk(&fb, &root);
	if (fb.high > size)
		tfs_fuzz_fail("flatbuf: high-water mark past the input");
	return 0;
}
