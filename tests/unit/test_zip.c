// SPDX-License-Identifier: MIT
/*
 * The zip reader (src/parse/zip.h) against archives written by Python's
 * zipfile (tests/fixtures/zip, with zipfile's own reading of them in
 * expected.txt), numpy's .npz fixtures (offsets documented in
 * ../shared/specs/npy.md), torch's zip checkpoints (shared/fixtures/pytorch),
 * and archives built here from the APPNOTE layouts, each reject breaking
 * one rule.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "parse/zip.h"
#include "testutil.h"

/* ---- archives built from the APPNOTE record layouts ---- */

static void put_le(struct tu_buf *b, uint64_t v, unsigned n)
{
	uint8_t x[8];
	unsigned i;

	for (i = 0; i < n; i++)
		x[i] = (uint8_t)(v >> (8 * i));
	tu_buf_put(b, x, n);
}

static void set_le(struct tu_buf *b, size_t at, uint64_t v, unsigned n)
{
	unsigned i;

	ck_assert_uint_le(at + n, b->len);
	for (i = 0; i < n; i++)
		b->p[at + i] = (uint8_t)(v >> (8 * i));
}

struct zb_opts {
	bool local_zip64;   /* numpy: a 20-byte ZIP64 extra in local headers */
	bool central_zip64; /* saturate central sizes and offset, ZIP64 extra */
	bool eocd64;	    /* ZIP64 end record and locator, saturated EOCD */
	const char *comment;
};

#define ZB_MAX 4

/* where build() put things, for patching and for expected offsets */
struct zb_layout {
	size_t local[ZB_MAX], data[ZB_MAX], central[ZB_MAX];
	size_t cd, cd_size, eocd64, locator, eocd;
};

static void build(struct tu_buf *b, size_t n, const char *const *names,
		  const char *const *datas, const struct zb_opts *o,
		  struct zb_layout *l)
{
	size_t i, len, nlen;
	uint32_t crc;

	memset(b, 0, sizeof(*b));
	memset(l, 0, sizeof(*l));
	for (i = 0; i < n; i++) {
		len = strlen(datas[i]);
		nlen = strlen(names[i]);
		crc = (uint32_t)crc32(0, (const Bytef *)datas[i], (uInt)len);
		l->local[i] = b->len;
		put_le(b, 0x04034b50, 4);
		put_le(b, 20, 2);	/* version needed */
		put_le(b, 0, 2);	/* flags */
		put_le(b, 0, 2);	/* stored */
		put_le(b, 0x210000, 4); /* 1980-01-01 */
		put_le(b, crc, 4);
		put_le(b, len, 4);
		put_le(b, len, 4);
		put_le(b, nlen, 2);
		put_le(b, o->local_zip64 ? 20 : 0, 2);
		tu_buf_put(b, names[i], nlen);
		if (o->local_zip64) {
			put_le(b, 1, 2);
			put_le(b, 16, 2);
			put_le(b, len, 8);
			put_le(b, len, 8);
		}
		l->data[i] = b->len;
		tu_buf_put(b, datas[i], len);
	}
	l->cd = b->len;
	for (i = 0; i < n; i++) {
		bool z = o->central_zip64;

		len = strlen(datas[i]);
		nlen = strlen(names[i]);
		crc = (uint32_t)crc32(0, (const Bytef *)datas[i], (uInt)len);
		l->central[i] = b->len;
		put_le(b, 0x02014b50, 4);
		put_le(b, 45, 2);
		put_le(b, 20, 2);
		put_le(b, 0, 2);
		put_le(b, 0, 2);
		put_le(b, 0x210000, 4);
		put_le(b, crc, 4);
		put_le(b, z ? 0xffffffff : len, 4);
		put_le(b, z ? 0xffffffff : len, 4);
		put_le(b, nlen, 2);
		put_le(b, z ? 4 + 4 + 28 : 0, 2);
		put_le(b, 0, 2); /* comment */
		put_le(b, 0, 2); /* disk */
		put_le(b, 0, 2);
		put_le(b, 0, 4);
		put_le(b, z ? 0xffffffff : l->local[i], 4);
		tu_buf_put(b, names[i], nlen);
		if (z) {
			/* an unknown field first: readers skip it */
			put_le(b, 0x5455, 2);
			put_le(b, 0, 2);
			put_le(b, 0x5455, 2);
			put_le(b, 0, 2);
			put_le(b, 1, 2);
			put_le(b, 24, 2);
			put_le(b, len, 8);
			put_le(b, len, 8);
			put_le(b, l->local[i], 8);
		}
	}
	l->cd_size = b->len - l->cd;
	if (o->eocd64) {
		l->eocd64 = b->len;
		put_le(b, 0x06064b50, 4);
		put_le(b, 44, 8);
		put_le(b, 45, 2);
		put_le(b, 45, 2);
		put_le(b, 0, 4);
		put_le(b, 0, 4);
		put_le(b, n, 8);
		put_le(b, n, 8);
		put_le(b, l->cd_size, 8);
		put_le(b, l->cd, 8);
		l->locator = b->len;
		put_le(b, 0x07064b50, 4);
		put_le(b, 0, 4);
		put_le(b, l->eocd64, 8);
		put_le(b, 1, 4);
	}
	l->eocd = b->len;
	put_le(b, 0x06054b50, 4);
	put_le(b, 0, 2);
	put_le(b, 0, 2);
	put_le(b, o->eocd64 ? 0xffff : n, 2);
	put_le(b, o->eocd64 ? 0xffff : n, 2);
	put_le(b, o->eocd64 ? 0xffffffff : l->cd_size, 4);
	put_le(b, o->eocd64 ? 0xffffffff : l->cd, 4);
	len = o->comment ? strlen(o->comment) : 0;
	put_le(b, len, 2);
	if (len)
		tu_buf_put(b, o->comment, len);
}

/* open and walk every entry; returns the first failure or the count */
static int walk(const void *p, size_t len, struct tfs_zip_entry *out,
		size_t max, struct tfs_diag *d)
{
	struct tfs_zip z;
	struct tfs_zip_iter it;
	struct tfs_zip_entry e;
	int ret, n = 0;

	tfs_diag_clear(d);
	ret = tfs_zip_open(&z, p, len, d);
	if (ret)
		return ret;
	tfs_zip_iter_init(&it);
	while ((ret = tfs_zip_next(&z, &it, &e, d)) == 1) {
		if ((size_t)n < max)
			out[n] = e;
		n++;
	}
	return ret ? ret : n;
}

static const char *const names2[] = {"a.npy", "dir/b"};
static const char *const datas2[] = {"hello", "zip world"};

static void check_two(const struct tu_buf *b, const struct zb_layout *l)
{
	struct tfs_zip_entry e[2];
	struct tfs_diag d;
	int i;

	ck_assert_int_eq(walk(b->p, b->len, e, 2, &d), 2);
	for (i = 0; i < 2; i++) {
		ck_assert(tfs_zip_name_is(&e[i], names2[i]));
		ck_assert_uint_eq(e[i].local_offset, l->local[i]);
		ck_assert_uint_eq(e[i].data_offset, l->data[i]);
		ck_assert_uint_eq(e[i].central_offset, l->central[i]);
		ck_assert_uint_eq(e[i].comp_size, strlen(datas2[i]));
		ck_assert_uint_eq(e[i].uncomp_size, strlen(datas2[i]));
		ck_assert_uint_eq(e[i].method, TFS_ZIP_STORED);
		ck_assert_uint_eq(e[i].index, (unsigned)i);
		ck_assert_mem_eq(b->p + e[i].data_offset, datas2[i],
				 strlen(datas2[i]));
		ck_assert_uint_eq(e[i].crc32, crc32(0, (const Bytef *)datas2[i],
						    (uInt)strlen(datas2[i])));
	}
	ck_assert(tfs_zip_name_ends(&e[0], ".npy"));
	ck_assert(!tfs_zip_name_ends(&e[1], ".npy"));
	ck_assert(!tfs_zip_name_is(&e[0], "a.np"));
}

START_TEST(built_variants)
{
	static const struct zb_opts opts[] = {
		{0},
		{.local_zip64 = true},
		{.central_zip64 = true},
		{.eocd64 = true},
		{.local_zip64 = true, .central_zip64 = true, .eocd64 = true},
		{.comment = "a comment"},
		/* a comment holding the EOCD signature: the record that ends
		 * the file exactly is the one */
		{.comment = "PK\x05\x06xxxxxxxxxxxxxxxxxx"},
	};
	struct tu_buf b;
	struct zb_layout l;
	struct tfs_zip z;
	struct tfs_diag d;
	size_t i;

	for (i = 0; i < sizeof(opts) / sizeof(opts[0]); i++) {
		build(&b, 2, names2, datas2, &opts[i], &l);
		check_two(&b, &l);
		ck_assert_int_eq(tfs_zip_open(&z, b.p, b.len, &d), 0);
		ck_assert_uint_eq(z.cd_offset, l.cd);
		ck_assert_uint_eq(z.cd_size, l.cd_size);
		ck_assert_uint_eq(z.eocd_offset, l.eocd);
		ck_assert_int_eq(z.zip64, opts[i].eocd64);
		if (opts[i].comment) {
			ck_assert_uint_eq(z.comment_len,
					  strlen(opts[i].comment));
			ck_assert_mem_eq(z.comment, opts[i].comment,
					 z.comment_len);
		}
		ck_assert(tfs_zip_magic(b.p, b.len));
		free(b.p);
	}
}
END_TEST

START_TEST(empty_archive)
{
	static const struct zb_opts o = {0};
	struct tu_buf b;
	struct zb_layout l;
	struct tfs_diag d;

	build(&b, 0, NULL, NULL, &o, &l);
	ck_assert_uint_eq(b.len, 22);
	ck_assert(tfs_zip_magic(b.p, b.len));
	ck_assert_int_eq(walk(b.p, b.len, NULL, 0, &d), 0);
	free(b.p);
	ck_assert(!tfs_zip_magic("PK\x03", 3));
	ck_assert(!tfs_zip_magic("\x93NUMPY", 6));
}
END_TEST

/* one way to break a built archive, and what the refusal must say */
struct breakage {
	const char *what;
	struct zb_opts o;
	int err;
	const char *word;
	void (*patch)(struct tu_buf *b, const struct zb_layout *l);
	size_t (*at)(const struct zb_layout *l); /* NULL: no offset check */
};

static void p_cut_eocd(struct tu_buf *b, const struct zb_layout *l)
{
	b->len = l->eocd + 21;
}
static void p_no_sig(struct tu_buf *b, const struct zb_layout *l)
{
	b->p[l->eocd + 3] = 0;
}
static void p_comment_long(struct tu_buf *b, const struct zb_layout *l)
{
	set_le(b, l->eocd + 20, 1, 2);
}
static void p_cd_past(struct tu_buf *b, const struct zb_layout *l)
{
	set_le(b, l->eocd + 16, l->cd + 1, 4);
}
static void p_count_big(struct tu_buf *b, const struct zb_layout *l)
{
	set_le(b, l->eocd + 8, 3, 2);
	set_le(b, l->eocd + 10, 3, 2);
}
static void p_count_small(struct tu_buf *b, const struct zb_layout *l)
{
	set_le(b, l->eocd + 8, 1, 2);
	set_le(b, l->eocd + 10, 1, 2);
}
static void p_multidisk(struct tu_buf *b, const struct zb_layout *l)
{
	set_le(b, l->eocd + 4, 1, 2);
}
static void p_saturated(struct tu_buf *b, const struct zb_layout *l)
{
	set_le(b, l->eocd + 16, 0xffffffff, 4);
}
static void p_central_sig(struct tu_buf *b, const struct zb_layout *l)
{
	b->p[l->central[1]] = 'X';
}
static void p_local_sig(struct tu_buf *b, const struct zb_layout *l)
{
	b->p[l->local[1] + 2] = 0;
}
static void p_local_name(struct tu_buf *b, const struct zb_layout *l)
{
	b->p[l->local[1] + 30] = 'D'; /* "Dir/b" */
}
static void p_local_name_len(struct tu_buf *b, const struct zb_layout *l)
{
	set_le(b, l->local[0] + 26, 4, 2); /* "a.np", data one byte early */
}
static void p_local_extra(struct tu_buf *b, const struct zb_layout *l)
{
	set_le(b, l->local[1] + 28, 0xffff, 2);
}
static void p_data_into_cd(struct tu_buf *b, const struct zb_layout *l)
{
	set_le(b, l->central[1] + 20, 10, 4);
	set_le(b, l->central[1] + 24, 10, 4);
}
static void p_stored_sizes(struct tu_buf *b, const struct zb_layout *l)
{
	set_le(b, l->central[0] + 20, 4, 4);
}
static void p_encrypted(struct tu_buf *b, const struct zb_layout *l)
{
	set_le(b, l->central[0] + 8, 1, 2);
}
static void p_method(struct tu_buf *b, const struct zb_layout *l)
{
	set_le(b, l->central[0] + 10, 8, 2);
}
static void p_offset_cd(struct tu_buf *b, const struct zb_layout *l)
{
	set_le(b, l->central[1] + 42, l->cd, 4);
}
static void p_name_nul(struct tu_buf *b, const struct zb_layout *l)
{
	b->p[l->central[0] + 46 + 1] = 0;
}
static void p_name_past(struct tu_buf *b, const struct zb_layout *l)
{
	set_le(b, l->central[1] + 28, 100, 2);
}
static void p_no_zip64_extra(struct tu_buf *b, const struct zb_layout *l)
{
	set_le(b, l->central[0] + 46 + 5 + 8, 0x5455, 2); /* id 1 -> other */
}
static void p_zip64_extra_short(struct tu_buf *b, const struct zb_layout *l)
{
	/* the field shrinks to 16 bytes, its last 8 become another field */
	set_le(b, l->central[0] + 46 + 5 + 10, 16, 2);
	set_le(b, l->central[0] + 46 + 5 + 12 + 16, 0x5455, 2);
	set_le(b, l->central[0] + 46 + 5 + 12 + 18, 4, 2);
}
static void p_extra_overrun(struct tu_buf *b, const struct zb_layout *l)
{
	set_le(b, l->central[0] + 46 + 5 + 10, 25, 2);
}
static void p_loc_offset(struct tu_buf *b, const struct zb_layout *l)
{
	set_le(b, l->locator + 8, l->locator - 50, 8);
}
static void p_rec_sig(struct tu_buf *b, const struct zb_layout *l)
{
	b->p[l->eocd64 + 3] = 7;
}
static void p_rec_size(struct tu_buf *b, const struct zb_layout *l)
{
	set_le(b, l->eocd64 + 4, 45, 8);
}
static void p_rec_count(struct tu_buf *b, const struct zb_layout *l)
{
	set_le(b, l->eocd64 + 24, 1u << 20, 8);
	set_le(b, l->eocd64 + 32, 1u << 20, 8);
}
static void p_rec_cd_huge(struct tu_buf *b, const struct zb_layout *l)
{
	set_le(b, l->eocd64 + 48, UINT64_MAX - 4, 8);
}
static void p_rec_disagree(struct tu_buf *b, const struct zb_layout *l)
{
	set_le(b, l->eocd + 10, 1, 2);
}
static void p_loc_disks(struct tu_buf *b, const struct zb_layout *l)
{
	set_le(b, l->locator + 16, 2, 4);
}
static void p_trailing_cd(struct tu_buf *b, const struct zb_layout *l)
{
	/* the directory claims 46 more bytes than its entries use */
	size_t pad = 46;
	uint8_t *tail;
	size_t tail_len = b->len - l->eocd;

	tail = malloc(tail_len);
	ck_assert_ptr_nonnull(tail);
	memcpy(tail, b->p + l->eocd, tail_len);
	b->len = l->eocd;
	while (pad--)
		tu_buf_put(b, "\0", 1);
	tu_buf_put(b, tail, tail_len);
	free(tail);
	set_le(b, l->eocd + 46 + 12, l->cd_size + 46, 4);
}

static size_t at_eocd(const struct zb_layout *l)
{
	return l->eocd;
}
static size_t at_eocd_count(const struct zb_layout *l)
{
	return l->eocd + 10;
}
static size_t at_eocd_size(const struct zb_layout *l)
{
	return l->eocd + 12;
}
static size_t at_central1(const struct zb_layout *l)
{
	return l->central[1];
}
static size_t at_local1(const struct zb_layout *l)
{
	return l->local[1];
}
static size_t at_local1_name(const struct zb_layout *l)
{
	return l->local[1] + 30;
}
static size_t at_local0_name(const struct zb_layout *l)
{
	return l->local[0] + 30;
}
static size_t at_data1(const struct zb_layout *l)
{
	return l->data[1];
}
static size_t at_central0_flags(const struct zb_layout *l)
{
	return l->central[0] + 8;
}
static size_t at_rec(const struct zb_layout *l)
{
	return l->eocd64;
}
static size_t at_cd_end(const struct zb_layout *l)
{
	return l->cd + l->cd_size;
}

static const struct breakage breakages[] = {
	{"cut EOCD",
	 {0},
	 -EBADMSG,
	 "end of central directory",
	 p_cut_eocd,
	 NULL},
	{"no EOCD signature", {0}, -EBADMSG, "no record", p_no_sig, NULL},
	{"comment past the end",
	 {0},
	 -EBADMSG,
	 "no record",
	 p_comment_long,
	 NULL},
	{"directory past the EOCD",
	 {0},
	 -EBADMSG,
	 "runs past",
	 p_cd_past,
	 at_eocd_size},
	{"count too big",
	 {0},
	 -EBADMSG,
	 "cannot fit",
	 p_count_big,
	 at_eocd_count},
	{"count too small",
	 {0},
	 -EBADMSG,
	 "before its end",
	 p_count_small,
	 at_central1},
	{"directory bytes left over",
	 {0},
	 -EBADMSG,
	 "before its end",
	 p_trailing_cd,
	 at_cd_end},
	{"multi-disk", {0}, -ENOTSUP, "multi-disk", p_multidisk, NULL},
	{"saturated without ZIP64",
	 {0},
	 -EBADMSG,
	 "no ZIP64 locator",
	 p_saturated,
	 at_eocd},
	{"central signature",
	 {0},
	 -EBADMSG,
	 "bad signature",
	 p_central_sig,
	 at_central1},
	{"local signature",
	 {0},
	 -EBADMSG,
	 "bad signature",
	 p_local_sig,
	 at_local1},
	{"local name differs",
	 {0},
	 -EBADMSG,
	 "name differs",
	 p_local_name,
	 at_local1_name},
	{"local name length differs",
	 {0},
	 -EBADMSG,
	 "name differs",
	 p_local_name_len,
	 at_local0_name},
	{"local extra into directory",
	 {0},
	 -EBADMSG,
	 "run into",
	 p_local_extra,
	 NULL},
	{"data into directory",
	 {0},
	 -EBADMSG,
	 "run into the central",
	 p_data_into_cd,
	 at_data1},
	{"stored sizes differ",
	 {0},
	 -EBADMSG,
	 "stored member",
	 p_stored_sizes,
	 NULL},
	{"encrypted",
	 {0},
	 -ENOTSUP,
	 "encrypted",
	 p_encrypted,
	 at_central0_flags},
	{"method differs", {0}, -EBADMSG, "method", p_method, NULL},
	{"local offset at directory",
	 {0},
	 -EBADMSG,
	 "not before",
	 p_offset_cd,
	 NULL},
	{"NUL in name", {0}, -EBADMSG, "NUL", p_name_nul, NULL},
	{"name past directory",
	 {0},
	 -EBADMSG,
	 "past the directory",
	 p_name_past,
	 NULL},
	{"saturated, no ZIP64 extra",
	 {.central_zip64 = true},
	 -EBADMSG,
	 "no ZIP64 extra",
	 p_no_zip64_extra,
	 NULL},
	{"ZIP64 extra too short",
	 {.central_zip64 = true},
	 -EBADMSG,
	 "needs 24",
	 p_zip64_extra_short,
	 NULL},
	{"extra field overrun",
	 {.central_zip64 = true},
	 -EBADMSG,
	 "extra field runs past",
	 p_extra_overrun,
	 NULL},
	{"locator offset",
	 {.eocd64 = true},
	 -EBADMSG,
	 "no room",
	 p_loc_offset,
	 NULL},
	{"ZIP64 record signature",
	 {.eocd64 = true},
	 -EBADMSG,
	 "bad signature",
	 p_rec_sig,
	 at_rec},
	{"ZIP64 record size",
	 {.eocd64 = true},
	 -EBADMSG,
	 "does not end",
	 p_rec_size,
	 NULL},
	{"ZIP64 count",
	 {.eocd64 = true},
	 -EBADMSG,
	 "cannot fit",
	 p_rec_count,
	 NULL},
	{"ZIP64 directory offset overflows",
	 {.eocd64 = true},
	 -EBADMSG,
	 "runs past",
	 p_rec_cd_huge,
	 NULL},
	{"EOCD disagrees with ZIP64",
	 {.eocd64 = true},
	 -EBADMSG,
	 "disagrees",
	 p_rec_disagree,
	 at_eocd_count},
	{"ZIP64 disks", {.eocd64 = true}, -ENOTSUP, "disks", p_loc_disks, NULL},
};

START_TEST(built_rejects)
{
	const struct breakage *k = &breakages[_i];
	struct tu_buf b;
	struct zb_layout l;
	struct tfs_diag d;
	int ret;

	build(&b, 2, names2, datas2, &k->o, &l);
	k->patch(&b, &l);
	ret = walk(b.p, b.len, NULL, 0, &d);
	ck_assert_msg(ret == k->err, "%s: got %d (%s)", k->what, ret, d.msg);
	ck_assert_msg(strstr(d.msg, k->word), "%s: message '%s'", k->what,
		      d.msg);
	ck_assert_msg(d.has_offset, "%s: no offset", k->what);
	ck_assert_uint_le(d.offset, b.len);
	if (k->at)
		ck_assert_msg(d.offset == k->at(&l),
			      "%s: offset %llu, want %zu", k->what,
			      (unsigned long long)d.offset, k->at(&l));
	free(b.p);
}
END_TEST

/* every truncation of a valid archive is refused without reading past */
START_TEST(every_truncation)
{
	static const struct zb_opts o = {
		.local_zip64 = true, .central_zip64 = true, .eocd64 = true};
	struct tu_buf b;
	struct zb_layout l;
	struct tfs_diag d;
	uint8_t *copy;
	size_t n;

	build(&b, 2, names2, datas2, &o, &l);
	for (n = 0; n < b.len; n++) {
		copy = malloc(n ? n : 1);
		ck_assert_ptr_nonnull(copy);
		memcpy(copy, b.p, n);
		ck_assert_int_lt(walk(copy, n, NULL, 0, &d), 0);
		free(copy);
	}
	free(b.p);
}
END_TEST

/* ---- Python's zipfile as the independent writer ---- */

/* content(name) of tests/fixtures/zip/generate.py */
static uint8_t *py_content(const char *name, size_t *len)
{
	size_t nlen = strlen(name), n = nlen * 37, i;
	uint8_t *p = malloc(n);

	ck_assert_ptr_nonnull(p);
	for (i = 0; i < n; i++)
		p[i] = i < nlen ? (uint8_t)name[i]
				: (uint8_t)((i - nlen) % 256);
	*len = n;
	return p;
}

static void inflate_raw(const uint8_t *in, size_t in_len, uint8_t *out,
			size_t out_len)
{
	z_stream s;

	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(inflateInit2(&s, -15), Z_OK);
	s.next_in = (Bytef *)in;
	s.avail_in = (uInt)in_len;
	s.next_out = out;
	s.avail_out = (uInt)out_len;
	ck_assert_int_eq(inflate(&s, Z_FINISH), Z_STREAM_END);
	ck_assert_uint_eq(s.total_out, out_len);
	inflateEnd(&s);
}

START_TEST(python_zipfile)
{
	FILE *f = fopen(tu_testdata("zip/archives/expected.txt"), "r");
	char archive[64], name[64], cur[64] = "", path[128];
	unsigned method, idx = 0, lines = 0;
	unsigned long crc;
	unsigned long long csize, usize, lo, data;
	struct tfs_zip z;
	struct tfs_zip_iter it;
	struct tfs_zip_entry e;
	struct tfs_diag d;
	uint8_t *buf = NULL, *want, *got;
	size_t len = 0, want_len;

	ck_assert_ptr_nonnull(f);
	while (fscanf(f, "%63s %63s %u %lu %llu %llu %llu %llu", archive, name,
		      &method, &crc, &csize, &usize, &lo, &data) == 8) {
		if (strcmp(archive, cur) != 0) {
			if (buf) /* the previous archive ends here */
				ck_assert_int_eq(tfs_zip_next(&z, &it, &e, &d),
						 0);
			free(buf);
			snprintf(path, sizeof(path), "zip/archives/%s",
				 archive);
			buf = tu_read_file(tu_testdata(path), &len);
			tfs_diag_clear(&d);
			ck_assert_msg(tfs_zip_open(&z, buf, len, &d) == 0,
				      "%s: %s", archive, d.msg);
			tfs_zip_iter_init(&it);
			strcpy(cur, archive);
			idx = 0;
		}
		ck_assert_msg(tfs_zip_next(&z, &it, &e, &d) == 1, "%s %s: %s",
			      archive, name, d.msg);
		ck_assert_msg(tfs_zip_name_is(&e, name), "%s: %s", archive,
			      name);
		ck_assert_uint_eq(e.index, idx++);
		ck_assert_uint_eq(e.method, method);
		ck_assert_uint_eq(e.crc32, crc);
		ck_assert_uint_eq(e.comp_size, csize);
		ck_assert_uint_eq(e.uncomp_size, usize);
		ck_assert_uint_eq(e.local_offset, lo);
		ck_assert_uint_eq(e.data_offset, data);
		want = py_content(name, &want_len);
		ck_assert_uint_eq(want_len, usize);
		got = malloc(usize);
		ck_assert_ptr_nonnull(got);
		if (method == TFS_ZIP_STORED)
			memcpy(got, buf + e.data_offset, usize);
		else
			inflate_raw(buf + e.data_offset, e.comp_size, got,
				    usize);
		ck_assert_mem_eq(got, want, usize);
		ck_assert_uint_eq(crc32(0, got, (uInt)usize), e.crc32);
		free(got);
		free(want);
		lines++;
	}
	ck_assert_int_eq(tfs_zip_next(&z, &it, &e, &d), 0);
	free(buf);
	fclose(f);
	ck_assert_uint_eq(lines, 13);
	/* the empty archive has no line: zero entries */
	buf = tu_read_file(tu_testdata("zip/archives/empty.zip"), &len);
	ck_assert_int_eq(walk(buf, len, NULL, 0, &d), 0);
	free(buf);
}
END_TEST

/*
 * ---- numpy's archives: offsets documented in shared/specs/npy.md ----
 * zip/generate.py has numpy write shared/fixtures/npy's stored.npz and
 * deflated.npz again (the same bytes; it checks so when ../shared is there)
 */

START_TEST(numpy_npz)
{
	struct tfs_zip_entry e[2];
	struct tfs_zip z;
	struct tfs_diag d;
	uint8_t *buf;
	size_t len;

	buf = tu_read_file(tu_testdata("zip/writers/numpy_stored.npz"), &len);
	ck_assert_uint_eq(len, 526);
	ck_assert_int_eq(tfs_zip_open(&z, buf, len, &d), 0);
	ck_assert_uint_eq(z.count, 2);
	ck_assert_uint_eq(z.cd_size, 106);
	ck_assert_uint_eq(z.cd_offset, 398);
	ck_assert_int_eq(walk(buf, len, e, 2, &d), 2);
	ck_assert(tfs_zip_name_is(&e[0], "w.npy"));
	ck_assert_uint_eq(e[0].local_offset, 0);
	ck_assert_uint_eq(e[0].data_offset, 55);
	ck_assert_uint_eq(e[0].comp_size, 144);
	ck_assert_uint_eq(e[0].crc32, 0xF4EAB33Du);
	ck_assert(tfs_zip_name_is(&e[1], "arr_0.npy"));
	ck_assert_uint_eq(e[1].local_offset, 199);
	ck_assert_uint_eq(e[1].data_offset, 258);
	ck_assert_uint_eq(e[1].uncomp_size, 140);
	ck_assert_uint_eq(e[1].crc32, 0xD140A677u);
	ck_assert_uint_eq(crc32(0, buf + 258, 140), 0xD140A677u);
	free(buf);

	buf = tu_read_file(tu_testdata("zip/writers/numpy_deflated.npz"), &len);
	ck_assert_uint_eq(len, 208);
	ck_assert_int_eq(walk(buf, len, e, 1, &d), 1);
	ck_assert(tfs_zip_name_is(&e[0], "w.npy"));
	ck_assert_uint_eq(e[0].method, TFS_ZIP_DEFLATED);
	ck_assert_uint_eq(e[0].comp_size, 80);
	ck_assert_uint_eq(e[0].uncomp_size, 144);
	ck_assert_uint_eq(e[0].data_offset, 55);
	ck_assert_uint_eq(e[0].crc32, 0xF4EAB33Du);
	free(buf);
}
END_TEST

/*
 * PyTorch's zip checkpoints (shared/fixtures/pytorch: torch's own archive
 * writer, and zipfile for bigendian_zip.pt): every member found, stored,
 * its bytes at data_offset match its CRC-32, and its data starts at a
 * multiple of 64 (pytorch/README.md: torch pads with an 'FB' extra field
 * in the local header only).
 */
START_TEST(pytorch_zips)
{
	static const char *const files[] = {
		"state_dict_zip.pt",	    "dtypes_zip.pt",
		"training_ckpt_zip.pt",	    "shared_and_views_zip.pt",
		"parameters_proto4_zip.pt", "bigendian_zip.pt",
	};
	struct tfs_zip_iter it;
	struct tfs_zip_entry e;
	struct tfs_zip z;
	struct tfs_diag d;
	char rel[96];
	uint8_t *buf;
	size_t len, i;
	int ret, n;

	TU_NEED_SHARED("pytorch/state_dict_zip.pt");
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(rel, sizeof(rel), "pytorch/%s", files[i]);
		buf = tu_read_file(tu_fixture(rel), &len);
		tfs_diag_clear(&d);
		ck_assert_msg(tfs_zip_open(&z, buf, len, &d) == 0, "%s: %s",
			      rel, d.msg);
		tfs_zip_iter_init(&it);
		n = 0;
		while ((ret = tfs_zip_next(&z, &it, &e, &d)) == 1) {
			ck_assert_uint_eq(e.method, TFS_ZIP_STORED);
			ck_assert_msg(e.data_offset % 64 == 0,
				      "%s: entry %d at %llu", rel, n,
				      (unsigned long long)e.data_offset);
			ck_assert_uint_eq(crc32(0, buf + e.data_offset,
						(uInt)e.comp_size),
					  e.crc32);
			n++;
		}
		ck_assert_msg(ret == 0, "%s: %s", rel, d.msg);
		ck_assert_int_gt(n, 2);
		free(buf);
	}
}
END_TEST

/*
 * Archives written by numpy (np.savez, np.savez_compressed) and torch.save,
 * made by tests/fixtures/zip/generate.py: every member where zipfile says,
 * its content's SHA-256 as zipfile read it, and torch's members stored at
 * multiples of 64 (its writer pads the local header's extra field).
 */
START_TEST(writer_archives)
{
	FILE *f = fopen(tu_testdata("zip/writers/expected.txt"), "r");
	char archive[64], name[64], cur[64] = "", path[128], sha[65], hex[65];
	unsigned method, idx = 0, lines = 0, torch = 0;
	unsigned long crc;
	unsigned long long csize, usize, lo, data;
	struct tfs_zip z;
	struct tfs_zip_iter it;
	struct tfs_zip_entry e;
	struct tfs_diag d;
	uint8_t *buf = NULL, *got;
	size_t len = 0;

	ck_assert_ptr_nonnull(f);
	while (fscanf(f, "%63s %63s %u %lu %llu %llu %llu %llu %64s", archive,
		      name, &method, &crc, &csize, &usize, &lo, &data,
		      sha) == 9) {
		if (strcmp(archive, cur) != 0) {
			if (buf) /* the previous archive ends here */
				ck_assert_int_eq(tfs_zip_next(&z, &it, &e, &d),
						 0);
			free(buf);
			snprintf(path, sizeof(path), "zip/writers/%s", archive);
			buf = tu_read_file(tu_testdata(path), &len);
			tfs_diag_clear(&d);
			ck_assert_msg(tfs_zip_open(&z, buf, len, &d) == 0,
				      "%s: %s", archive, d.msg);
			tfs_zip_iter_init(&it);
			snprintf(cur, sizeof(cur), "%s", archive);
			idx = 0;
		}
		ck_assert_msg(tfs_zip_next(&z, &it, &e, &d) == 1, "%s %s: %s",
			      archive, name, d.msg);
		ck_assert_msg(tfs_zip_name_is(&e, name), "%s: %s", archive,
			      name);
		ck_assert_uint_eq(e.index, idx++);
		ck_assert_uint_eq(e.method, method);
		ck_assert_uint_eq(e.crc32, crc);
		ck_assert_uint_eq(e.comp_size, csize);
		ck_assert_uint_eq(e.uncomp_size, usize);
		ck_assert_uint_eq(e.local_offset, lo);
		ck_assert_uint_eq(e.data_offset, data);
		got = malloc(usize ? usize : 1);
		ck_assert_ptr_nonnull(got);
		if (method == TFS_ZIP_STORED)
			memcpy(got, buf + e.data_offset, usize);
		else
			inflate_raw(buf + e.data_offset, e.comp_size, got,
				    usize);
		tu_sha256_hex(got, usize, hex);
		ck_assert_msg(strcmp(hex, sha) == 0, "%s %s: sha256 %s",
			      archive, name, hex);
		free(got);
		if (strncmp(archive, "torch", 5) == 0) {
			ck_assert_uint_eq(e.method, TFS_ZIP_STORED);
			ck_assert_msg(e.data_offset % 64 == 0, "%s: %s at %llu",
				      archive, name,
				      (unsigned long long)e.data_offset);
			torch++;
		}
		lines++;
	}
	ck_assert_int_eq(tfs_zip_next(&z, &it, &e, &d), 0);
	free(buf);
	fclose(f);
	/* w and arr_0, w alone, data.pkl + version + 2 storages */
	ck_assert_uint_eq(lines, 7);
	ck_assert_uint_eq(torch, 4);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("zip");
	TCase *tc = tcase_create("zip");

	tcase_add_test(tc, built_variants);
	tcase_add_test(tc, empty_archive);
	tcase_add_loop_test(tc, built_rejects, 0,
			    sizeof(breakages) / sizeof(breakages[0]));
	tcase_add_test(tc, every_truncation);
	tcase_add_test(tc, python_zipfile);
	tcase_add_test(tc, numpy_npz);
	tcase_add_test(tc, pytorch_zips);
	tcase_add_test(tc, writer_archives);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
