// SPDX-License-Identifier: MIT
/*
 * The chunked codec (src/codec/chunked.c): a grid of separately stored,
 * filtered chunks served as the row-major array.  The chunks are made here
 * with independent tools (zlib's own compress2, a byte-plane shuffle
 * written out longhand, LZF literal runs and back-references assembled by
 * hand), the expected array computed element by element.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "codec/chunked.h"
#include "core/builder.h"
#include "codec/codec.h"
#include "core/format.h"
#include "core/image.h"
#include "testutil.h"

/* the array: 5 x 7 uint32, element (i, j) = 1000 i + j; chunks 2 x 3 */
#define ROWS 5
#define COLS 7
#define CR 2
#define CC 3
#define GR 3 /* ceil(5 / 2) */
#define GC 3 /* ceil(7 / 3) */

static uint8_t stored[1 << 16];
static size_t stored_len;
static struct tfs_chunk chunks[GR * GC];
static struct tfs_chunk_params params;
static bool corrupt;

static uint32_t value(uint64_t i, uint64_t j)
{
	return (uint32_t)(1000 * i + j);
}

/* chunk (gi, gj) decoded: full-size, edge elements padded with 0xEE */
static void chunk_bytes(int gi, int gj, uint8_t *out)
{
	int a, b;

	for (a = 0; a < CR; a++)
		for (b = 0; b < CC; b++) {
			uint64_t i = (uint64_t)gi * CR + a,
				 j = (uint64_t)gj * CC + b;
			uint32_t v =
				i < ROWS && j < COLS ? value(i, j) : 0xEEEEEEEE;

			memcpy(out + (a * CC + b) * 4, &v, 4);
		}
}

static void shuffle(const uint8_t *in, uint8_t *out, size_t len, size_t size)
{
	size_t n = len / size, i, j;

	for (i = 0; i < n; i++)
		for (j = 0; j < size; j++)
			out[j * n + i] = in[i * size + j];
}

/* HDF5's fletcher32, from the spec's words */
static uint32_t fletcher(const uint8_t *p, size_t len)
{
	uint32_t a = 0, b = 0;
	size_t i;

	for (i = 0; i < len; i += 2) {
		uint32_t w = (uint32_t)p[i] << 8 | (i + 1 < len ? p[i + 1] : 0);

		a = (a + w) % 65535;
		b = (b + a) % 65535;
	}
	return b << 16 | a;
}

/* LZF of @in: all literal runs, then one back-reference of 4 bytes */
static size_t lzf(const uint8_t *in, size_t len, uint8_t *out)
{
	size_t o = 0, i = 0, n;

	while (i < len - 4) {
		n = len - 4 - i < 32 ? len - 4 - i : 32;
		out[o++] = (uint8_t)(n - 1);
		memcpy(out + o, in + i, n);
		o += n;
		i += n;
	}
	/* the last 4 bytes: only a back-reference when they repeat */
	out[o++] = 3;
	memcpy(out + o, in + len - 4, 4);
	return o + 4;
}

static void put_chunk(int k, const uint8_t *p, size_t n, uint32_t mask)
{
	chunks[k] = (struct tfs_chunk){
		.offset = stored_len, .length = n, .mask = mask};
	memcpy(stored + stored_len, p, n);
	stored_len += n;
}

/*
 * Filters (write order): shuffle(4), deflate, fletcher32.  Chunk 0 goes
 * through all three; chunk 1 skips shuffle (mask bit 0); chunk 4 is never
 * written (fill 7); chunk 5 skips every filter; the rest all three too,
 * but chunk 2 in LZF instead (a second grid's filters would do; here it
 * is its own tensor, see lzf_chunks)
 */
static void build(void)
{
	uint8_t raw[CR * CC * 4], sh[CR * CC * 4], z[256], out[300];
	uLongf zl;
	int k;

	stored_len = 0;
	memset(&params, 0, sizeof(params));
	params.itemsize = 4;
	params.ndim = 2;
	params.shape[0] = ROWS;
	params.shape[1] = COLS;
	params.chunk[0] = CR;
	params.chunk[1] = CC;
	params.nfilters = 3;
	params.filters[0].id = TFS_FILTER_SHUFFLE;
	params.filters[0].arg = 4;
	params.filters[1].id = TFS_FILTER_DEFLATE;
	params.filters[2].id = TFS_FILTER_FLETCHER32;
	params.has_fill = true;
	memcpy(params.fill, "\x07\x00\x00\x00", 4);
	params.nchunks = GR * GC;
	params.chunks = chunks;
	for (k = 0; k < GR * GC; k++) {
		uint32_t mask = k == 1 ? 1u : k == 5 ? 7u : 0u;
		uint32_t f;

		chunk_bytes(k / GC, k % GC, raw);
		if (k == 4) {
			chunks[k] = (struct tfs_chunk){0};
			continue;
		}
		if (k == 5) {
			put_chunk(k, raw, sizeof(raw), mask);
			continue;
		}
		if (mask & 1)
			memcpy(sh, raw, sizeof(raw));
		else
			shuffle(raw, sh, sizeof(raw), 4);
		zl = sizeof(z);
		ck_assert_int_eq(compress2(z, &zl, sh, sizeof(sh), 6), Z_OK);
		memcpy(out, z, zl);
		f = fletcher(z, zl);
		memcpy(out + zl, &f, 4);
		if (corrupt && k == 7)
			out[zl / 2] ^= 0x55;
		put_chunk(k, out, zl + 4, mask);
	}
}

static int load_grid(const struct tfs_source *src, struct tfs_builder *b,
		     struct tfs_diag *d)
{
	static const uint64_t shape[2] = {ROWS, COLS};
	struct tfs_tensor_spec s = {0};

	(void)src;
	s.name = "grid";
	s.name_len = 4;
	s.dtype = TFS_DTYPE_UINT32;
	s.ndim = 2;
	s.shape = shape;
	s.offset = 0;
	s.length = stored_len;
	s.size = ROWS * COLS * 4;
	s.encoding = TFS_ENCODING_CHUNKED;
	s.codec.chunks = &params;
	return tfs_builder_add_tensor(b, &s, NULL, d);
}

static const struct tfs_format grid_format = {
	.name = "grid", .description = "test", .load = load_grid};

static struct tfs_image *open_grid(void)
{
	struct tfs_image *img = NULL;
	struct tfs_source src;
	struct tfs_diag d;

	build();
	tfs_source_init_memory(&src, stored, stored_len);
	ck_assert_msg(
		tfs_image_load_format(&img, &src, &grid_format, NULL, &d) == 0,
		"load: %s", d.msg);
	return img;
}

START_TEST(grid_reads_row_major)
{
	struct tfs_image *img;
	struct tfs_check_result r;
	uint32_t want[ROWS * COLS];
	uint8_t *got;
	size_t len;
	int i, j;

	corrupt = false;
	img = open_grid();
	for (i = 0; i < ROWS; i++)
		for (j = 0; j < COLS; j++)
			/* chunk (1, 1): never written, the fill value */
			want[i * COLS + j] =
				i / CR == 1 && j / CC == 1 ? 7 : value(i, j);
	got = tu_read_node(img, img->tree->tensors[0].node, &len);
	ck_assert_uint_eq(len, sizeof(want));
	for (i = 0; i < ROWS * COLS; i++) {
		uint32_t v;

		memcpy(&v, got + 4 * i, 4);
		ck_assert_msg(v == want[i], "element %d: %u, want %u", i, v,
			      want[i]);
	}
	free(got);
	tfs_image_check_tensor(img, 0, &r, NULL, NULL);
	ck_assert_msg(r.err == 0, "verify: %s", r.msg);
	ck_assert_str_eq(tu_xattr(img, "grid", "encoding"), "chunked");
	tfs_image_close(img);
}
END_TEST

START_TEST(corrupt_chunk_fails_reads)
{
	struct tfs_image *img;
	struct tfs_check_result r;
	struct tfs_view v;

	corrupt = true;
	img = open_grid();
	ck_assert_int_eq(tfs_image_read(img, img->tree->tensors[0].node, 0,
					ROWS * COLS * 4, &v),
			 -EIO);
	tfs_image_check_tensor(img, 0, &r, NULL, NULL);
	ck_assert_int_eq(r.err, -EBADMSG);
	ck_assert_ptr_nonnull(strstr(r.msg, "fletcher32"));
	tfs_image_close(img);
	corrupt = false;
}
END_TEST

/* a grid that does not fit its stored bytes or its shape is refused */
START_TEST(bad_grids_refused)
{
	uint64_t size;

	build();
	ck_assert_int_eq(tfs_chunk_params_check(&params, stored_len, &size), 0);
	ck_assert_uint_eq(size, ROWS * COLS * 4);
	ck_assert_int_eq(tfs_chunk_params_check(&params, stored_len - 1, &size),
			 -EINVAL);
	params.nchunks = 8;
	ck_assert_int_eq(tfs_chunk_params_check(&params, stored_len, &size),
			 -EINVAL);
	params.nchunks = GR * GC;
	params.chunk[1] = 0;
	ck_assert_int_eq(tfs_chunk_params_check(&params, stored_len, &size),
			 -EINVAL);
	params.chunk[1] = CC;
	params.filters[0].arg = 0; /* shuffle of 0-byte elements */
	ck_assert_int_eq(tfs_chunk_params_check(&params, stored_len, &size),
			 -EINVAL);
}
END_TEST

/* records wider than a fill value (HDF5 compounds): taken, unless a fill
 * value of that width is asked for (jhdf's isssue-523.hdf5, issue 43) */
START_TEST(wide_records)
{
	uint64_t size;

	build();
	params.itemsize = 32;
	params.filters[0].arg = 32;
	params.has_fill = false;
	ck_assert_int_eq(tfs_chunk_params_check(&params, stored_len, &size), 0);
	ck_assert_uint_eq(size, ROWS * COLS * 32);
	params.has_fill = true;
	ck_assert_int_eq(tfs_chunk_params_check(&params, stored_len, &size),
			 -EINVAL);
}
END_TEST

START_TEST(filters_alone)
{
	uint8_t in[100], packed[200], out[100];
	long n;
	size_t i, len;

	for (i = 0; i < sizeof(in); i++)
		in[i] = (uint8_t)(i * 7 % 13);
	/* LZF: literals, then a back-reference over the last 4 bytes */
	len = lzf(in, sizeof(in), packed);
	n = tfs_lzf_decode(packed, len, out, sizeof(out));
	ck_assert_int_eq(n, sizeof(in));
	ck_assert_mem_eq(out, in, sizeof(in));
	/* a back-reference: "abcabcabc" = 3 literals, copy 6 from 3 back */
	{
		const uint8_t s[] = {2, 'a', 'b', 'c', (6 - 2) << 5, 2};

		n = tfs_lzf_decode(s, sizeof(s), out, sizeof(out));
		ck_assert_int_eq(n, 9);
		ck_assert_mem_eq(out, "abcabcabc", 9);
		/* more than the room: refused, never written past it */
		ck_assert_int_eq(tfs_lzf_decode(s, sizeof(s), out, 8),
				 -EBADMSG);
		/* a reference before the start */
		ck_assert_int_eq(tfs_lzf_decode(s + 4, 2, out, sizeof(out)),
				 -EBADMSG);
	}
	/* shuffle: 10 4-byte elements and 3 leftover bytes */
	shuffle(in, packed, 43, 4);
	memcpy(packed + 40, in + 40, 3);
	tfs_unshuffle(packed, out, 43, 4);
	ck_assert_mem_eq(out, in, 43);
	/* fletcher32 of an odd length */
	ck_assert_uint_eq(tfs_fletcher32(in, 99), fletcher(in, 99));
	/* zlib: more output than the room is refused */
	{
		uLongf zl = sizeof(packed);

		ck_assert_int_eq(compress2(packed, &zl, in, sizeof(in), 9),
				 Z_OK);
		ck_assert_int_eq(tfs_zlib_decode(packed, zl, out, sizeof(out)),
				 sizeof(in));
		ck_assert_int_eq(tfs_zlib_decode(packed, zl, out, 50),
				 -EBADMSG);
		ck_assert_int_eq(tfs_zlib_decode(packed, zl - 1, out, 100),
				 -EBADMSG);
	}
}
END_TEST

/*
 * Unfiltered grids of one and three dimensions, edges cropped: element
 * (i, j, k) of shape [4, 5, 3] in chunks [3, 2, 2] is i * 100 + j * 10 + k
 * as uint16; [10] in chunks of 4 is 0..9 as uint8
 */
static uint8_t raw_stored[4096];

static void grid_stream(const struct tfs_chunk_params *c, size_t nstored,
			uint8_t *out, size_t size)
{
	struct tfs_codec_params p = {.chunks = (struct tfs_chunk_params *)c};
	struct tfs_stream *z;
	size_t pos = 0;

	ck_assert_int_eq(tfs_stream_new(&z, TFS_ENCODING_CHUNKED, raw_stored,
					nstored, false, &p),
			 0);
	/* odd pieces: a slab is left and taken up again */
	while (pos < size) {
		size_t want = pos + 7 < size ? pos + 7 : size;

		ck_assert_int_eq(tfs_stream_decode(z, out, size, &pos, want),
				 0);
	}
	ck_assert(tfs_stream_finished(z));
	ck_assert_int_eq(tfs_stream_expect_end(z, out, size), 0);
	tfs_stream_free(z);
}

START_TEST(one_and_three_dims)
{
	static struct tfs_chunk ch[12];
	struct tfs_chunk_params c = {0};
	uint8_t out[4 * 5 * 3 * 2];
	uint64_t gi, gj, gk, a, b, e, k = 0, i;
	size_t at = 0;

	c.itemsize = 2;
	c.ndim = 3;
	c.shape[0] = 4, c.shape[1] = 5, c.shape[2] = 3;
	c.chunk[0] = 3, c.chunk[1] = 2, c.chunk[2] = 2;
	c.nchunks = 2 * 3 * 2;
	c.chunks = ch;
	for (gi = 0; gi < 2; gi++)
		for (gj = 0; gj < 3; gj++)
			for (gk = 0; gk < 2; gk++, k++) {
				ch[k] = (struct tfs_chunk){.offset = at,
							   .length = 24};
				for (a = 0; a < 3; a++)
					for (b = 0; b < 2; b++)
						for (e = 0; e < 2; e++) {
							uint16_t v =
								(uint16_t)((gi * 3 +
									    a) * 100 +
									   (gj * 2 +
									    b) * 10 +
									   gk * 2 +
									   e);

							memcpy(raw_stored + at,
							       &v, 2);
							at += 2;
						}
			}
	grid_stream(&c, at, out, sizeof(out));
	for (i = 0; i < 60; i++) {
		uint16_t v, want = (uint16_t)(i / 15 * 100 + i / 3 % 5 * 10 +
					      i % 3);

		memcpy(&v, out + 2 * i, 2);
		ck_assert_msg(v == want, "element %llu: %u, want %u",
			      (unsigned long long)i, v, want);
	}
	/* one dimension, the last chunk cut short */
	memset(&c, 0, sizeof(c));
	c.itemsize = 1;
	c.ndim = 1;
	c.shape[0] = 10;
	c.chunk[0] = 4;
	c.nchunks = 3;
	c.chunks = ch;
	for (i = 0; i < 12; i++)
		raw_stored[i] = (uint8_t)i;
	for (i = 0; i < 3; i++)
		ch[i] = (struct tfs_chunk){.offset = 4 * i, .length = 4};
	grid_stream(&c, 12, out, 10);
	ck_assert_mem_eq(out, "\0\1\2\3\4\5\6\7\10\11", 10);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("chunked");
	TCase *tc = tcase_create("chunked");

	tcase_add_test(tc, grid_reads_row_major);
	tcase_add_test(tc, corrupt_chunk_fails_reads);
	tcase_add_test(tc, bad_grids_refused);
	tcase_add_test(tc, wide_records);
	tcase_add_test(tc, filters_alone);
	tcase_add_test(tc, one_and_three_dims);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
