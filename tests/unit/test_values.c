// SPDX-License-Identifier: MIT
/*
 * Element values (values.h): the vectors of tests/fixtures/values (numpy and
 * the formats' definitions, see its generate.py), blocks made by hand, the
 * refusals, and streaming a tensor's elements through an image.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/source.h"
#include "core/values.h"
#include "testutil.h"

/* equal as values: both NaN, or the same number with the same sign */
static int same(double a, double b)
{
	if (isnan(a) || isnan(b))
		return isnan(a) && isnan(b);
	return a == b && signbit(a) == signbit(b);
}

static unsigned parse_flags(const char *s)
{
	unsigned f = 0;

	if (strstr(s, "be"))
		f |= TFS_VALUES_BIG_ENDIAN;
	if (strstr(s, "re"))
		f |= TFS_VALUES_REAL;
	if (strstr(s, "im"))
		f |= TFS_VALUES_IMAG;
	return f;
}

START_TEST(fixture_vectors)
{
	char line[256], name[64], dtype[32], flags[16], path[512];
	FILE *f = fopen(tu_testdata("values/cases.txt"), "r");
	unsigned ncases = 0;

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		const struct tfs_dtype_info *di;
		enum tfs_dtype t;
		uint8_t *in, *want;
		size_t inlen, wantlen, n, i;
		double *got, w;

		ck_assert_int_eq(
			sscanf(line, "%63s %31s %15s", name, dtype, flags), 3);
		t = tfs_dtype_from_name(dtype);
		ck_assert_msg(t != TFS_DTYPE_INVALID, "%s", dtype);
		di = tfs_dtype_info(t);
		snprintf(path, sizeof(path), "values/%s.in", name);
		in = tu_read_file(tu_testdata(path), &inlen);
		snprintf(path, sizeof(path), "values/%s.out", name);
		want = tu_read_file(tu_testdata(path), &wantlen);
		ck_assert_uint_eq(inlen % di->block_bytes, 0);
		n = inlen / di->block_bytes;
		ck_assert_uint_eq(wantlen, n * di->block_elems * 8);
		got = malloc(wantlen);
		ck_assert_int_eq(
			tfs_values_decode(t, parse_flags(flags), in, n, got),
			0);
		for (i = 0; i < n * di->block_elems; i++) {
			memcpy(&w, want + 8 * i, 8);
			ck_assert_msg(same(got[i], w),
				      "%s[%zu]: got %.17g, want %.17g", name, i,
				      got[i], w);
		}
		free(got);
		free(in);
		free(want);
		ncases++;
	}
	fclose(f);
	ck_assert_uint_ge(ncases, 40);
}
END_TEST

/* q4_0 by hand: d = 0.5 (binary16 0x3800), element j is nibble - 8 */
START_TEST(q4_0_by_hand)
{
	uint8_t b[18] = {0x00, 0x38};
	double y[32];
	int j;

	for (j = 0; j < 16; j++) /* low nibble j, high nibble 15 - j */
		b[2 + j] = (uint8_t)(j | (15 - j) << 4);
	ck_assert_int_eq(tfs_values_decode(TFS_DTYPE_Q4_0, 0, b, 1, y), 0);
	for (j = 0; j < 16; j++) {
		ck_assert_double_eq(y[j], (j - 8) * 0.5);
		ck_assert_double_eq(y[j + 16], (15 - j - 8) * 0.5);
	}
}
END_TEST

/* q8_0 by hand: d = 2 (0x4000), int8 quants -128, -1, 0, 1, 127 ... */
START_TEST(q8_0_by_hand)
{
	uint8_t b[34] = {0x00, 0x40, 0x80, 0xff, 0x00, 0x01, 0x7f};
	double y[32];

	ck_assert_int_eq(tfs_values_decode(TFS_DTYPE_Q8_0, 0, b, 1, y), 0);
	ck_assert_double_eq(y[0], -256);
	ck_assert_double_eq(y[1], -2);
	ck_assert_double_eq(y[2], 0);
	ck_assert_double_eq(y[3], 2);
	ck_assert_double_eq(y[4], 254);
	ck_assert_double_eq(y[31], 0);
}
END_TEST

/* q4_K by hand: d = 1, dmin = 1, sub-block 0 scale 3 min 2, quants 5 */
START_TEST(q4_k_by_hand)
{
	uint8_t b[144] = {0x00, 0x3c, 0x00, 0x3c};
	double y[256];

	b[4] = 3;     /* scale 0 */
	b[8] = 2;     /* min 0 */
	b[5] = 1;     /* scale 1 (high nibbles of the first 32 bytes) */
	b[16] = 0x75; /* element 0: low nibble 5, element 32: 7 */
	ck_assert_int_eq(tfs_values_decode(TFS_DTYPE_Q4_K, 0, b, 1, y), 0);
	ck_assert_double_eq(y[0], 3 * 5 - 2);
	ck_assert_double_eq(y[1], -2);
	ck_assert_double_eq(y[32], 1 * 7);
	ck_assert_double_eq(y[64], 0);
}
END_TEST

/* values named by the definitions (OCP 8-bit floats, MX, e2m1) */
START_TEST(small_floats_by_hand)
{
	static const struct {
		enum tfs_dtype t;
		uint8_t byte;
		double want;
	} v[] = {
		{TFS_DTYPE_FLOAT8_E4M3, 0x7e, 448},
		{TFS_DTYPE_FLOAT8_E4M3, 0x01, 0x1p-9},
		{TFS_DTYPE_FLOAT8_E4M3, 0x38, 1},
		{TFS_DTYPE_FLOAT8_E4M3, 0xfe, -448},
		{TFS_DTYPE_FLOAT8_E5M2, 0x7b, 57344},
		{TFS_DTYPE_FLOAT8_E5M2, 0x7c, INFINITY},
		{TFS_DTYPE_FLOAT8_E5M2, 0xfc, -INFINITY},
		{TFS_DTYPE_FLOAT8_E5M2, 0x01, 0x1p-16},
		{TFS_DTYPE_FLOAT8_E4M3FNUZ, 0x7f, 240},
		{TFS_DTYPE_FLOAT8_E4M3FNUZ, 0x40, 1},
		{TFS_DTYPE_FLOAT8_E5M2FNUZ, 0x7f, 57344},
		{TFS_DTYPE_FLOAT8_E5M2FNUZ, 0x40, 1},
		{TFS_DTYPE_FLOAT8_E8M0, 0x7f, 1},
		{TFS_DTYPE_FLOAT8_E8M0, 0x00, 0x1p-127},
		{TFS_DTYPE_FLOAT8_E8M0, 0x80, 2},
	};
	static const enum tfs_dtype nan_at[] = {
		TFS_DTYPE_FLOAT8_E4M3,	   TFS_DTYPE_FLOAT8_E4M3FNUZ,
		TFS_DTYPE_FLOAT8_E5M2FNUZ, TFS_DTYPE_FLOAT8_E8M0,
		TFS_DTYPE_FLOAT8_E5M2,
	};
	static const uint8_t nan_byte[] = {0x7f, 0x80, 0x80, 0xff, 0x7d};
	uint8_t f4 = 0x71; /* e2m1: low nibble 1 = 0.5, high 7 = 6 */
	double y[2];
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		ck_assert_int_eq(tfs_values_decode(v[i].t, 0, &v[i].byte, 1, y),
				 0);
		ck_assert_msg(same(y[0], v[i].want), "%s 0x%02x: %g",
			      tfs_dtype_name(v[i].t), v[i].byte, y[0]);
	}
	for (i = 0; i < sizeof(nan_at) / sizeof(nan_at[0]); i++) {
		ck_assert_int_eq(
			tfs_values_decode(nan_at[i], 0, &nan_byte[i], 1, y), 0);
		ck_assert(isnan(y[0]));
	}
	ck_assert_int_eq(tfs_values_decode(TFS_DTYPE_FLOAT4, 0, &f4, 1, y), 0);
	ck_assert_double_eq(y[0], 0.5);
	ck_assert_double_eq(y[1], 6);
}
END_TEST

START_TEST(refusals)
{
	static const enum tfs_dtype no[] = {
		TFS_DTYPE_Q8_1,	       TFS_DTYPE_IQ2_XXS, TFS_DTYPE_IQ4_NL,
		TFS_DTYPE_TQ1_0,       TFS_DTYPE_MXFP4,	  TFS_DTYPE_NVFP4,
		TFS_DTYPE_FLOAT6_E2M3, TFS_DTYPE_QFLOAT,  TFS_DTYPE_VOID,
		TFS_DTYPE_INVALID,
	};
	uint8_t b[300] = {0};
	double y[256] = {42};
	size_t i;

	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		ck_assert_int_eq(tfs_values_supported(no[i], 0), -ENOTSUP);
		ck_assert_int_eq(tfs_values_decode(no[i], 0, b, 1, y),
				 -ENOTSUP);
	}
	ck_assert_double_eq(y[0], 42); /* nothing written */
	ck_assert_int_eq(
		tfs_values_supported(TFS_DTYPE_Q4_0, TFS_VALUES_BIG_ENDIAN),
		-ENOTSUP);
	ck_assert_int_eq(tfs_values_supported(TFS_DTYPE_Q6_K, 0), 0);
	ck_assert_int_eq(tfs_values_supported(TFS_DTYPE_BOOL, 0), 0);
}
END_TEST

/*
 * A safetensors file in memory: the 8-byte length, header @hdr, then
 * @data_len zero bytes of data (at *data); *len is the whole length.
 */
static uint8_t *st_file(const char *hdr, size_t data_len, size_t *len,
			uint8_t **data)
{
	size_t hl = strlen(hdr), i;
	uint8_t *buf;

	*len = 8 + hl + data_len;
	buf = calloc(1, *len);
	ck_assert_ptr_nonnull(buf);
	for (i = 0; i < 8; i++)
		buf[i] = (uint8_t)(hl >> (8 * i));
	memcpy(buf + 8, hdr, hl);
	*data = buf + 8 + hl;
	return buf;
}

/*
 * Streaming through an image: a safetensors file with a float16 tensor of
 * 200,000 elements (element i is the binary16 pattern i % 0x7c00, all
 * finite) and a float4 one; any range, across the 64 Ki-element chunks and
 * from odd element offsets, equals the decode of the same bytes.
 */
START_TEST(read_through_image)
{
	const char *hdr_fmt = "{\"h\":{\"dtype\":\"F16\",\"shape\":[200000],"
			      "\"data_offsets\":[0,400000]},"
			      "\"q\":{\"dtype\":\"F4\",\"shape\":[10],"
			      "\"data_offsets\":[400000,400005]}}";
	size_t len, i;
	uint8_t *data, *buf = st_file(hdr_fmt, 400005, &len, &data);
	static double got[200000], want[200000];
	struct tfs_image *img;
	struct tfs_diag d;
	const struct tfs_tensor *h, *q;
	uint32_t hi, qi;
	static const struct {
		uint64_t first;
		size_t count;
	} r[] = {{0, 200000},
		 {65530, 20},
		 {1, 131073},
		 {199999, 1},
		 {200000, 0}};

	for (i = 0; i < 200000; i++) {
		data[2 * i] = (uint8_t)(i % 0x7c00);
		data[2 * i + 1] = (uint8_t)((i % 0x7c00) >> 8);
	}
	memcpy(data + 400000, "\x10\x32\x54\x76\x98", 5);
	ck_assert_int_eq(tu_load_mem(buf, len, &img, &d), 0);
	h = tu_tensor(img, "h");
	q = tu_tensor(img, "q");
	hi = (uint32_t)(h - img->tree->tensors);
	qi = (uint32_t)(q - img->tree->tensors);
	ck_assert_uint_eq(tfs_values_count(img->tree, hi), 200000);
	ck_assert_uint_eq(tfs_values_count(img->tree, qi), 10);
	ck_assert_uint_eq(tfs_values_tensor_flags(img->tree, hi), 0);
	ck_assert_int_eq(
		tfs_values_decode(TFS_DTYPE_FLOAT16, 0, data, 200000, want), 0);
	for (i = 0; i < sizeof(r) / sizeof(r[0]); i++) {
		memset(got, 0, sizeof(got));
		ck_assert_int_eq(tfs_values_read(img, hi, 0, r[i].first,
						 r[i].count, got),
				 0);
		ck_assert_mem_eq(got, want + r[i].first,
				 r[i].count * sizeof(double));
	}
	ck_assert_int_eq(tfs_values_read(img, hi, 0, 199999, 2, got), -ERANGE);
	/* float4 from element 3 (a high nibble): 0x32's 3, then 0x54's 4, 5 */
	ck_assert_int_eq(tfs_values_read(img, qi, 0, 3, 3, got), 0);
	ck_assert_double_eq(got[0], 1.5);
	ck_assert_double_eq(got[1], 2);
	ck_assert_double_eq(got[2], 3);
	tfs_image_close(img);
	free(buf);
}
END_TEST

/*
 * -o as=float32 (builder option .as): a float16 tensor is shown as float32
 * (size, xattrs) and a read at any offset gives the bytes of the
 * float32 conversion of the decoded values; a float32 tensor is left as it
 * is.
 */
START_TEST(as_float32_view)
{
	const char *hdr = "{\"h\":{\"dtype\":\"F16\",\"shape\":[5000],"
			  "\"data_offsets\":[0,10000]},"
			  "\"f\":{\"dtype\":\"F32\",\"shape\":[2],"
			  "\"data_offsets\":[10000,10008]}}";
	struct tfs_build_options o = {.as = TFS_DTYPE_FLOAT32};
	size_t len, i;
	uint8_t *data, *buf = st_file(hdr, 10008, &len, &data);
	static const struct {
		uint64_t off;
		size_t len;
	} r[] = {{0, 20000}, {1, 7}, {4095, 4099}, {19999, 1}, {19990, 100}};
	static double dv[5000];
	static float want[5000];
	struct tfs_source src;
	struct tfs_image *img;
	struct tfs_view v;
	struct tfs_diag d;
	uint32_t h, f;
	size_t k;

	for (i = 0; i < 10000; i++)
		data[i] = (uint8_t)(i * 7 + (i >> 3));
	ck_assert_int_eq(
		tfs_values_decode(TFS_DTYPE_FLOAT16, 0, data, 5000, dv), 0);
	for (i = 0; i < 5000; i++)
		want[i] = (float)dv[i];
	tfs_source_init_memory(&src, buf, len);
	ck_assert_int_eq(tfs_image_load(&img, &src, &o, &d), 0);
	h = tfs_tree_resolve(img->tree, "h");
	f = tfs_tree_resolve(img->tree, "f");
	ck_assert_uint_eq(tfs_node_size(img->tree, h), 20000);
	ck_assert_uint_eq(tfs_node_size(img->tree, f), 8);
	ck_assert_str_eq(tu_xattr(img, "h", "dtype"), "float32");
	ck_assert_str_eq(tu_xattr(img, "h", "stored_dtype"), "float16");
	ck_assert_ptr_null(tu_xattr(img, "f", "stored_dtype"));
	for (k = 0; k < sizeof(r) / sizeof(r[0]); k++) {
		ck_assert_int_eq(tfs_image_read(img, h, r[k].off, r[k].len, &v),
				 0);
		ck_assert_uint_eq(v.len, r[k].off + r[k].len > 20000
						 ? 20000 - r[k].off
						 : r[k].len);
		ck_assert_mem_eq(v.data, (const uint8_t *)want + r[k].off,
				 v.len);
		tfs_view_release(img, &v);
	}
	ck_assert_int_eq(tfs_image_read(img, f, 0, 8, &v), 0);
	ck_assert_ptr_eq(v.data, data + 10000); /* straight from the bytes */
	tfs_view_release(img, &v);
	tfs_image_close(img);
	free(buf);
}
END_TEST

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

/*
 * -o previews (builder option .previews): "h.png" beside a [50, 5000]
 * float16 tensor is a PNG of the announced size, 512 x (16 + 1 + 48 + 22)
 * (the aspect ratio kept: 50 rows scaled by 512/5000 are 5, then at least
 * 16; the heat map, a line, the histogram, the value scale), 8-bit
 * palette; the same bytes on a second read (kept in the cache) and
 * at an offset; none beside a scalar.
 */
START_TEST(previews)
{
	const char *hdr = "{\"h\":{\"dtype\":\"F16\",\"shape\":[50,5000],"
			  "\"data_offsets\":[0,500000]},"
			  "\"s\":{\"dtype\":\"F32\",\"shape\":[],"
			  "\"data_offsets\":[500000,500004]}}";
	struct tfs_build_options o = {.previews = true};
	size_t len, plen, plen2, i;
	uint8_t *data, *buf = st_file(hdr, 500004, &len, &data), *png, *png2;
	struct tfs_source src;
	struct tfs_image *img;
	struct tfs_view v;
	struct tfs_diag d;
	uint32_t n;

	for (i = 0; i < 500000; i++)
		data[i] = (uint8_t)(i * 13 + (i >> 9));
	tfs_source_init_memory(&src, buf, len);
	ck_assert_int_eq(tfs_image_load(&img, &src, &o, &d), 0);
	n = tfs_tree_resolve(img->tree, "h.png");
	ck_assert_uint_ne(n, TFS_NO_NODE);
	ck_assert_uint_eq(tfs_tree_resolve(img->tree, "s.png"), TFS_NO_NODE);
	png = tu_read_node(img, n, &plen);
	ck_assert_uint_eq(plen, tfs_node_size(img->tree, n));
	ck_assert_mem_eq(png, "\x89PNG\r\n\x1a\n", 8);
	ck_assert_mem_eq(png + 12, "IHDR", 4);
	ck_assert_uint_eq(be32(png + 16), 512);
	ck_assert_uint_eq(be32(png + 20), 16 + 1 + 48 + 22);
	ck_assert_uint_eq(png[24], 8); /* bit depth */
	ck_assert_uint_eq(png[25], 3); /* palette */
	png2 = tu_read_node(img, n, &plen2);
	ck_assert_uint_eq(plen2, plen);
	ck_assert_mem_eq(png2, png, plen);
	ck_assert_int_eq(tfs_image_read(img, n, 1000, 77, &v), 0);
	ck_assert_uint_eq(v.len, 77);
	ck_assert_mem_eq(v.data, png + 1000, 77);
	tfs_view_release(img, &v);
	free(png);
	free(png2);
	tfs_image_close(img);
	free(buf);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("values");
	TCase *tc = tcase_create("values");

	tcase_add_test(tc, fixture_vectors);
	tcase_add_test(tc, q4_0_by_hand);
	tcase_add_test(tc, q8_0_by_hand);
	tcase_add_test(tc, q4_k_by_hand);
	tcase_add_test(tc, small_floats_by_hand);
	tcase_add_test(tc, refusals);
	tcase_add_test(tc, read_through_image);
	tcase_add_test(tc, as_float32_view);
	tcase_add_test(tc, previews);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
