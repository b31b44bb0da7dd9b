// SPDX-License-Identifier: MIT
/*
 * HDF5's chunk filters (src/codec/h5filters.c): LZF streams written by
 * hand (literals, overlapping back references, long matches, every
 * refusal), the shuffle against a hand-shuffled buffer, and the whole
 * pipeline on real data: every chunked dataset of the shared fixtures
 * (written by libhdf5 with deflate, shuffle, fletcher32 and h5py's LZF),
 * its chunks found by the parser, decoded, assembled (edge chunks
 * cropped, unwritten chunks as the fill value) and hashed against the
 * sha256 h5py's read gave.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/h5filters.h"
#include "parse/hdf5/h5.h"
#include "tensorfs/diag.h"
#include "testutil.h"

static void lzf_ok(const uint8_t *in, size_t n, const char *want)
{
	uint8_t out[64];
	size_t len = 0, at;

	ck_assert_int_eq(tfs_lzf_decode(in, n, out, sizeof(out), &len, &at),
			 0);
	ck_assert_uint_eq(len, strlen(want));
	ck_assert(memcmp(out, want, len) == 0);
}

START_TEST(lzf_streams)
{
	static const uint8_t lit[] = {0x02, 'a', 'b', 'c'};
	static const uint8_t overlap[] = {0x00, 'a', 0x40, 0x00};
	static const uint8_t longm[] = {0x00, 'x', 0xe0, 0x03, 0x00};
	static const uint8_t far[] = {0x03, 'a', 'b', 'c', 'd', 0x20, 0x03};
	static const uint8_t before[] = {0x00, 'a', 0x20, 0x01};
	static const uint8_t cut_lit[] = {0x05, 'a'};
	static const uint8_t cut_ref[] = {0x00, 'a', 0x20};
	static const uint8_t cut_len[] = {0x00, 'a', 0xe0};
	uint8_t out[8];
	size_t len, at = 99;

	lzf_ok(lit, sizeof(lit), "abc");
	lzf_ok(overlap, sizeof(overlap), "aaaaa");
	lzf_ok(longm, sizeof(longm), "xxxxxxxxxxxxx");
	lzf_ok(far, sizeof(far), "abcdabc");
	lzf_ok(NULL, 0, "");
	ck_assert_int_eq(tfs_lzf_decode(before, sizeof(before), out, 8, &len,
					&at),
			 -EBADMSG);
	ck_assert_uint_eq(at, 2);
	ck_assert_int_eq(tfs_lzf_decode(cut_lit, sizeof(cut_lit), out, 8,
					&len, &at),
			 -EBADMSG);
	ck_assert_int_eq(tfs_lzf_decode(cut_ref, sizeof(cut_ref), out, 8,
					&len, &at),
			 -EBADMSG);
	ck_assert_int_eq(tfs_lzf_decode(cut_len, sizeof(cut_len), out, 8,
					&len, &at),
			 -EBADMSG);
	/* 13 bytes into 8: refused, never written past */
	ck_assert_int_eq(tfs_lzf_decode(longm, sizeof(longm), out, 8, &len,
					&at),
			 -E2BIG);
	ck_assert_int_eq(tfs_lzf_decode(lit, sizeof(lit), out, 2, &len, &at),
			 -E2BIG);
}
END_TEST

START_TEST(shuffle_planes)
{
	/* 3 elements of 4 bytes, then 2 leftover bytes */
	static const uint8_t plain[] = {0x10, 0x11, 0x12, 0x13, 0x20, 0x21,
					0x22, 0x23, 0x30, 0x31, 0x32, 0x33,
					0xaa, 0xbb};
	static const uint8_t shuf[] = {0x10, 0x20, 0x30, 0x11, 0x21, 0x31,
				       0x12, 0x22, 0x32, 0x13, 0x23, 0x33,
				       0xaa, 0xbb};
	uint8_t out[sizeof(plain)];

	tfs_unshuffle(shuf, sizeof(shuf), 4, out);
	ck_assert(memcmp(out, plain, sizeof(plain)) == 0);
	tfs_unshuffle(shuf, sizeof(shuf), 1, out);
	ck_assert(memcmp(out, shuf, sizeof(shuf)) == 0);
}
END_TEST

START_TEST(fletcher32_mismatch_refused)
{
	uint8_t in[10] = {1, 2, 3, 4, 5, 6};
	uint8_t out[6];
	uint32_t c = tfs_h5_fletcher32(in, 6);
	struct tfs_h5_filter f = {.id = 3};
	const char *why;

	/* by hand: words 0x0102 0x0304 0x0506 */
	ck_assert_uint_eq(c & 0xffff, (0x0102 + 0x0304 + 0x0506) % 65535);
	ck_assert_uint_eq(c >> 16, (0x0102 * 3 + 0x0304 * 2 + 0x0506) % 65535);
	in[6] = c & 0xff;
	in[7] = (c >> 8) & 0xff;
	in[8] = (c >> 16) & 0xff;
	in[9] = c >> 24;
	ck_assert_int_eq(tfs_h5_unfilter(&f, 1, 0, in, 10, out, 6, &why), 0);
	ck_assert(memcmp(out, in, 6) == 0);
	in[0] ^= 1;
	ck_assert_int_eq(tfs_h5_unfilter(&f, 1, 0, in, 10, out, 6, &why),
			 -EBADMSG);
	ck_assert_ptr_nonnull(strstr(why, "fletcher32"));
	/* masked: skipped, so 10 bytes for 6 is a size mismatch */
	ck_assert_int_eq(tfs_h5_unfilter(&f, 1, 1, in, 10, out, 6, &why),
			 -EBADMSG);
}
END_TEST

/* ---- real chunks --------------------------------------------------------- */

/* copy one decoded chunk at element coords @co into the dataset @dst */
static void place(uint8_t *dst, const uint64_t *dims, const uint64_t *cd,
		  const uint64_t *co, unsigned rank, uint32_t es,
		  const uint8_t *chunk)
{
	uint64_t idx[H5_MAX_RANK] = {0}, n = 1, i;
	unsigned k;

	for (k = 0; k < rank; k++)
		n *= cd[k];
	for (i = 0; i < n; i++) {
		uint64_t rem = i, off = 0;
		bool in = true;

		for (k = rank; k-- > 0;) {
			idx[k] = rem % cd[k];
			rem /= cd[k];
		}
		for (k = 0; k < rank; k++) {
			uint64_t c = co[k] + idx[k];

			if (c >= dims[k])
				in = false;
			off = off * dims[k] + c;
		}
		if (in)
			memcpy(dst + off * es, chunk + i * es, es);
	}
}

static void decode_dataset(const uint8_t *buf, size_t len, const char *file,
			   json_t *ds, unsigned *count)
{
	struct h5_file f = {.p = buf, .size = len};
	struct tfs_diag d;
	struct h5_ohdr oh;
	struct h5_space s;
	struct h5_layout l;
	struct h5_type *t = NULL;
	struct h5_pipeline pl = {0};
	struct h5_chunks ch;
	struct tfs_h5_filter fl[H5_MAX_FILTERS];
	struct tfs_cursor c;
	const struct h5_msg *m;
	const char *fill = json_string_value(json_object_get(
		json_object_get(ds, "layout"), "fill_value_hex"));
	uint8_t *out, *chunk;
	uint64_t nbytes, i;
	unsigned k;
	char hex[65];

	tfs_diag_clear(&d);
	f.d = &d;
	ck_assert_int_eq(h5_superblock(&f), 0);
	ck_assert_int_eq(h5_ohdr_read(&f,
				      (uint64_t)json_integer_value(
					      json_object_get(
						      ds,
						      "object_header_address")),
				      &oh),
			 0);
	h5_msg_cursor(h5_ohdr_find(&oh, 0x01), &c);
	ck_assert_int_eq(h5_space_parse(&f, &c, &s), 0);
	h5_msg_cursor(h5_ohdr_find(&oh, 0x03), &c);
	ck_assert_int_eq(h5_type_parse(&f, &c, &t), 0);
	ck_assert_int_eq(h5_layout_parse(&f, h5_ohdr_find(&oh, 0x08), &l), 0);
	m = h5_ohdr_find(&oh, 0x0b);
	if (m)
		ck_assert_int_eq(h5_pipeline_parse(&f, m, &pl), 0);
	for (k = 0; k < pl.n; k++) {
		fl[k].id = pl.f[k].id;
		fl[k].elem_size = h5_filter_val(&pl.f[k], 0);
	}
	ck_assert_int_eq(h5_chunks_collect(&f, &s, &l, t->size, pl.n > 0,
					   &ch),
			 0);
	nbytes = s.nelem * t->size;
	out = malloc(nbytes ? nbytes : 1);
	chunk = malloc(ch.chunk_bytes);
	for (i = 0; i < nbytes; i++) /* the fill value, or zeros */
		out[i] = 0;
	if (fill)
		for (i = 0; i < nbytes; i++) {
			unsigned v;

			sscanf(fill + 2 * (i % t->size), "%2x", &v);
			out[i] = (uint8_t)v;
		}
	for (i = 0; i < ch.n; i++) {
		const char *why = NULL;
		int r = tfs_h5_unfilter(fl, pl.n, ch.c[i].mask,
					buf + f.base + ch.c[i].addr,
					ch.c[i].size, chunk, ch.chunk_bytes,
					&why);

		ck_assert_msg(r == 0, "%s: %s chunk %llu: %s", file,
			      json_string_value(json_object_get(ds, "path")),
			      (unsigned long long)i, why);
		place(out, s.dims, l.cdims, ch.coords + i * ch.rank, s.rank,
		      t->size, chunk);
	}
	tu_sha256_hex(out, nbytes, hex);
	ck_assert_msg(!strcmp(hex, json_string_value(
					   json_object_get(ds, "sha256"))),
		      "%s: %s: sha256 %s", file,
		      json_string_value(json_object_get(ds, "path")), hex);
	(*count)++;
	free(out);
	free(chunk);
	h5_chunks_free(&ch);
	h5_type_free(t);
	h5_ohdr_free(&oh);
}

START_TEST(every_fixture_chunk_decodes)
{
	json_error_t err;
	json_t *exp = json_load_file(tu_fixture("hdf5/expected.json"), 0, &err);
	const char *files[] = {"layouts_earliest.h5", "layouts_latest.h5",
			       "layouts_v108.h5"};
	unsigned n = 0, i;

	ck_assert_ptr_nonnull(exp);
	for (i = 0; i < 3; i++) {
		char rel[64];
		size_t len, k;
		uint8_t *buf;
		json_t *ds = json_object_get(
			json_object_get(json_object_get(exp, "valid"),
					files[i]),
			"datasets");

		snprintf(rel, sizeof(rel), "hdf5/%s", files[i]);
		buf = tu_read_file(tu_fixture(rel), &len);
		for (k = 0; k < json_array_size(ds); k++) {
			json_t *x = json_array_get(ds, k);

			if (!strcmp(json_string_value(json_object_get(
					    json_object_get(x, "layout"),
					    "kind")),
				    "chunked"))
				decode_dataset(buf, len, files[i], x, &n);
		}
		free(buf);
	}
	ck_assert_uint_eq(n, 3 * 15);
	json_decref(exp);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("h5filters");
	TCase *tc = tcase_create("all");

	tcase_add_test(tc, lzf_streams);
	tcase_add_test(tc, shuffle_planes);
	tcase_add_test(tc, fletcher32_mismatch_refused);
	tcase_add_test(tc, every_fixture_chunk_decodes);
	suite_add_tcase(s, tc);
	return tu_run_with_fixtures(s);
}
