// SPDX-License-Identifier: MIT
/*
 * Element values of every numeric dtype: see src/core/values.h.
 * Pure decoding of bytes into numbers; reading them out of a tensor is
 * sample.c's.
 * The ggml block decoders follow dequantize_row_* of ggml-quants.c (the
 * block structs of ggml-common.h), written with explicit little-endian
 * loads so that they do not depend on the host's byte order.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/values.h"

/* ---- loads ----------------------------------------------------------------
 */

static uint64_t load(const uint8_t *p, unsigned n, bool big)
{
	uint64_t v = 0;
	unsigned i;

	for (i = 0; i < n; i++)
		v |= (uint64_t)p[big ? n - 1 - i : i] << (8 * i);
	return v;
}

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

/* ---- small floats ---------------------------------------------------------
 */

/* sign, @eb exponent bits, @mb mantissa bits, @bias; no specials */
static double minifloat(unsigned v, unsigned eb, unsigned mb, int bias)
{
	unsigned s = (v >> (eb + mb)) & 1, e = (v >> mb) & ((1u << eb) - 1);
	unsigned m = v & ((1u << mb) - 1);
	double r;

	if (e)
		r = ldexp((double)(m | 1u << mb), (int)e - bias - (int)mb);
	else
		r = ldexp((double)m, 1 - bias - (int)mb);
	return s ? -r : r;
}

static double half_value(uint16_t h)
{
	if (((h >> 10) & 0x1f) == 0x1f)
		return (h & 0x3ff) ? NAN : (h >> 15) ? -INFINITY : INFINITY;
	return minifloat(h, 5, 10, 15);
}

static double bf16_value(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

static double f32_value(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

static double f64_value(uint64_t u)
{
	double f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

static double float8_value(enum tfs_dtype t, uint8_t v)
{
	switch (t) {
	case TFS_DTYPE_FLOAT8_E4M3: /* OCP e4m3fn */
		return (v & 0x7f) == 0x7f ? NAN : minifloat(v, 4, 3, 7);
	case TFS_DTYPE_FLOAT8_E4M3FNUZ:
		return v == 0x80 ? NAN : minifloat(v, 4, 3, 8);
	case TFS_DTYPE_FLOAT8_E5M2:
		if ((v & 0x7c) == 0x7c)
			return (v & 3)	    ? NAN
			       : (v & 0x80) ? -INFINITY
					    : INFINITY;
		return minifloat(v, 5, 2, 15);
	case TFS_DTYPE_FLOAT8_E5M2FNUZ:
		return v == 0x80 ? NAN : minifloat(v, 5, 2, 16);
	case TFS_DTYPE_FLOAT8_E8M0:
		return v == 0xff ? NAN : ldexp(1.0, (int)v - 127);
	default:
		return NAN;
	}
}

/* ---- ggml blocks ----------------------------------------------------------
 */

static float fp16(const uint8_t *p)
{
	return (float)half_value(le16(p));
}

static void dq_q4_0(const uint8_t *b, float *y)
{
	float d = fp16(b);
	const uint8_t *qs = b + 2;
	int j;

	for (j = 0; j < 16; j++) {
		y[j] = (float)((qs[j] & 0x0f) - 8) * d;
		y[j + 16] = (float)((qs[j] >> 4) - 8) * d;
	}
}

static void dq_q4_1(const uint8_t *b, float *y)
{
	float d = fp16(b), m = fp16(b + 2);
	const uint8_t *qs = b + 4;
	int j;

	for (j = 0; j < 16; j++) {
		y[j] = (float)(qs[j] & 0x0f) * d + m;
		y[j + 16] = (float)(qs[j] >> 4) * d + m;
	}
}

/* q5_0 (@has_min false) and q5_1: d[, m], qh[4], qs[16] */
static void dq_q5(const uint8_t *b, float *y, bool has_min)
{
	float d = fp16(b), m = has_min ? fp16(b + 2) : 0;
	const uint8_t *p = b + (has_min ? 4 : 2);
	uint32_t qh = (uint32_t)load(p, 4, false);
	const uint8_t *qs = p + 4;
	int j, x0, x1, off = has_min ? 0 : 16;

	for (j = 0; j < 16; j++) {
		x0 = (int)((qs[j] & 0x0f) | (((qh >> j) << 4) & 0x10));
		x1 = (int)((qs[j] >> 4) | ((qh >> (j + 12)) & 0x10));
		y[j] = (float)(x0 - off) * d;
		y[j + 16] = (float)(x1 - off) * d;
		if (has_min) { /* not + 0 for q5_0: a -0 stays -0 */
			y[j] += m;
			y[j + 16] += m;
		}
	}
}

static void dq_q8_0(const uint8_t *b, float *y)
{
	float d = fp16(b);
	int j;

	for (j = 0; j < 32; j++)
		y[j] = (float)(int8_t)b[2 + j] * d;
}

/* q2_K: scales[16], qs[64], d, dmin */
static void dq_q2_k(const uint8_t *b, float *y)
{
	const uint8_t *sc = b, *q = b + 16;
	float d = fp16(b + 80), min = fp16(b + 82), dl, ml;
	int n, j, l, is = 0, shift;

	for (n = 0; n < 256; n += 128, q += 32) {
		for (shift = 0, j = 0; j < 4; j++, shift += 2) {
			dl = d * (float)(sc[is] & 0xf);
			ml = min * (float)(sc[is++] >> 4);
			for (l = 0; l < 16; l++)
				*y++ = dl * (float)((q[l] >> shift) & 3) - ml;
			dl = d * (float)(sc[is] & 0xf);
			ml = min * (float)(sc[is++] >> 4);
			for (l = 0; l < 16; l++)
				*y++ = dl * (float)((q[l + 16] >> shift) & 3) -
				       ml;
		}
	}
}

/* q3_K: hmask[32], qs[64], scales[12] (16 6-bit scales), d */
static void dq_q3_k(const uint8_t *b, float *y)
{
	const uint8_t *hm = b, *q = b + 32, *s = b + 96;
	float d = fp16(b + 108), dl;
	int8_t scales[16];
	int n, j, l, is = 0, shift;
	uint8_t m = 1;

	/* scale i: low 4 bits from s[i % 8] (nibble i / 8), high 2 bits
	 * from s[8 + i % 4] (bits 2 * (i / 4)) */
	for (j = 0; j < 16; j++) {
		int lo = (s[j % 8] >> (4 * (j / 8))) & 0xf;
		int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;

		scales[j] = (int8_t)((lo | hi << 4) - 32);
	}
	for (n = 0; n < 256; n += 128, q += 32) {
		for (shift = 0, j = 0; j < 4; j++, shift += 2, m <<= 1) {
			dl = d * (float)scales[is++];
			for (l = 0; l < 16; l++)
				*y++ = dl * (float)(((q[l] >> shift) & 3) -
						    ((hm[l] & m) ? 0 : 4));
			dl = d * (float)scales[is++];
			for (l = 0; l < 16; l++)
				*y++ = dl * (float)(((q[l + 16] >> shift) & 3) -
						    ((hm[l + 16] & m) ? 0 : 4));
		}
	}
}

/* the 6-bit scale and min @j of a q4_K/q5_K block's scales[12] */
static void scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m)
{
	if (j < 4) {
		*d = q[j] & 63;
		*m = q[j + 4] & 63;
	} else {
		*d = (uint8_t)((q[j + 4] & 0xf) | ((q[j - 4] >> 6) << 4));
		*m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
	}
}

/* q4_K: d, dmin, scales[12], qs[128]; q5_K: the same, qh[32] before qs */
static void dq_q45_k(const uint8_t *b, float *y, bool five)
{
	float d = fp16(b), min = fp16(b + 2), d1, m1, d2, m2;
	const uint8_t *s = b + 4, *qh = b + 16, *q = b + (five ? 48 : 16);
	uint8_t sc, m, u1 = 1, u2 = 2;
	int j, l, is = 0;

	for (j = 0; j < 256; j += 64, q += 32, is += 2) {
		scale_min_k4(is, s, &sc, &m);
		d1 = d * sc;
		m1 = min * m;
		scale_min_k4(is + 1, s, &sc, &m);
		d2 = d * sc;
		m2 = min * m;
		for (l = 0; l < 32; l++)
			*y++ = d1 * (float)((q[l] & 0xf) +
					    (five && (qh[l] & u1) ? 16 : 0)) -
			       m1;
		for (l = 0; l < 32; l++)
			*y++ = d2 * (float)((q[l] >> 4) +
					    (five && (qh[l] & u2) ? 16 : 0)) -
			       m2;
		u1 = (uint8_t)(u1 << 2);
		u2 = (uint8_t)(u2 << 2);
	}
}

/* q6_K: ql[128], qh[64], scales[16] (int8), d */
static void dq_q6_k(const uint8_t *b, float *y)
{
	const uint8_t *ql = b, *qh = b + 128;
	const int8_t *sc = (const int8_t *)(b + 192);
	float d = fp16(b + 208);
	int n, l, is, q1, q2, q3, q4;

	for (n = 0; n < 256; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
		for (l = 0; l < 32; l++) {
			is = l / 16;
			q1 = ((ql[l] & 0xf) | ((qh[l] & 3) << 4)) - 32;
			q2 = ((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4)) -
			     32;
			q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
			q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) -
			     32;
			y[l] = d * (float)sc[is] * (float)q1;
			y[l + 32] = d * (float)sc[is + 2] * (float)q2;
			y[l + 64] = d * (float)sc[is + 4] * (float)q3;
			y[l + 96] = d * (float)sc[is + 6] * (float)q4;
		}
	}
}

/* q8_K: d (float32), qs[256] (int8), bsums[16] */
static void dq_q8_k(const uint8_t *b, float *y)
{
	float d = (float)f32_value((uint32_t)load(b, 4, false));
	int j;

	for (j = 0; j < 256; j++)
		y[j] = d * (float)(int8_t)b[4 + j];
}

typedef void (*dequant_fn)(const uint8_t *b, float *y);

static void dq_q5_0(const uint8_t *b, float *y)
{
	dq_q5(b, y, false);
}

static void dq_q5_1(const uint8_t *b, float *y)
{
	dq_q5(b, y, true);
}

static void dq_q4_k(const uint8_t *b, float *y)
{
	dq_q45_k(b, y, false);
}

static void dq_q5_k(const uint8_t *b, float *y)
{
	dq_q45_k(b, y, true);
}

static dequant_fn dequant_of(enum tfs_dtype t)
{
	switch (t) {
	case TFS_DTYPE_Q4_0:
		return dq_q4_0;
	case TFS_DTYPE_Q4_1:
		return dq_q4_1;
	case TFS_DTYPE_Q5_0:
		return dq_q5_0;
	case TFS_DTYPE_Q5_1:
		return dq_q5_1;
	case TFS_DTYPE_Q8_0:
		return dq_q8_0;
	case TFS_DTYPE_Q2_K:
		return dq_q2_k;
	case TFS_DTYPE_Q3_K:
		return dq_q3_k;
	case TFS_DTYPE_Q4_K:
		return dq_q4_k;
	case TFS_DTYPE_Q5_K:
		return dq_q5_k;
	case TFS_DTYPE_Q6_K:
		return dq_q6_k;
	case TFS_DTYPE_Q8_K:
		return dq_q8_k;
	default:
		return NULL;
	}
}

/* ---- decode ---------------------------------------------------------------
 */

int tfs_values_supported(enum tfs_dtype t, unsigned flags)
{
	const struct tfs_dtype_info *di = tfs_dtype_info(t);

	switch (di->kind) {
	case TFS_KIND_INT:
	case TFS_KIND_UINT:
	case TFS_KIND_BOOL:
	case TFS_KIND_COMPLEX:
		return 0;
	case TFS_KIND_FLOAT:
		/* float6: no spec we follow defines the bit packing */
		return t == TFS_DTYPE_FLOAT6_E2M3 || t == TFS_DTYPE_FLOAT6_E3M2
			       ? -ENOTSUP
			       : 0;
	case TFS_KIND_QUANT:
		return dequant_of(t) && !(flags & TFS_VALUES_BIG_ENDIAN)
			       ? 0
			       : -ENOTSUP;
	default:
		return -ENOTSUP;
	}
}

/* one element of an ordinary (one element per block) type at @p */
static double scalar_value(enum tfs_dtype t, const uint8_t *p, bool big)
{
	switch (t) {
	case TFS_DTYPE_FLOAT64:
		return f64_value(load(p, 8, big));
	case TFS_DTYPE_FLOAT32:
		return f32_value((uint32_t)load(p, 4, big));
	case TFS_DTYPE_FLOAT16:
		return half_value((uint16_t)load(p, 2, big));
	case TFS_DTYPE_BFLOAT16:
		return bf16_value((uint16_t)load(p, 2, big));
	case TFS_DTYPE_INT64:
		return (double)(int64_t)load(p, 8, big);
	case TFS_DTYPE_INT32:
		return (double)(int32_t)(uint32_t)load(p, 4, big);
	case TFS_DTYPE_INT16:
		return (double)(int16_t)(uint16_t)load(p, 2, big);
	case TFS_DTYPE_INT8:
		return (double)(int8_t)p[0];
	case TFS_DTYPE_UINT64:
		return (double)load(p, 8, big);
	case TFS_DTYPE_UINT32:
	case TFS_DTYPE_UINT16:
	case TFS_DTYPE_UINT8:
		return (double)load(p, tfs_dtype_size(t), big);
	case TFS_DTYPE_BOOL:
		return p[0] ? 1.0 : 0.0;
	default:
		return float8_value(t, p[0]);
	}
}

static double complex_value(enum tfs_dtype t, const uint8_t *p, bool big,
			    unsigned flags)
{
	enum tfs_dtype part = t == TFS_DTYPE_COMPLEX32	 ? TFS_DTYPE_FLOAT16
			      : t == TFS_DTYPE_COMPLEX64 ? TFS_DTYPE_FLOAT32
							 : TFS_DTYPE_FLOAT64;
	unsigned half = tfs_dtype_size(part);
	double re = scalar_value(part, p, big);
	double im = scalar_value(part, p + half, big);

	if (flags & TFS_VALUES_REAL)
		return re;
	if (flags & TFS_VALUES_IMAG)
		return im;
	return hypot(re, im);
}

/*
 * The common little-endian types without the per-element dispatch of
 * scalar_value (the same values: the suite's little- and big-endian
 * vectors check both paths); false for
 * the others.  memcpy, not casts: the bytes need not be aligned.
 */
static bool fast_decode(enum tfs_dtype t, const uint8_t *p, size_t n,
			double *out)
{
	size_t i;
	float f;
	uint32_t u;
	uint16_t h;

	switch (t) {
	case TFS_DTYPE_FLOAT32:
		for (i = 0; i < n; i++) {
			memcpy(&f, p + 4 * i, 4);
			out[i] = f;
		}
		return true;
	case TFS_DTYPE_BFLOAT16:
		for (i = 0; i < n; i++) {
			u = (uint32_t)le16(p + 2 * i) << 16;
			memcpy(&f, &u, 4);
			out[i] = f;
		}
		return true;
	case TFS_DTYPE_FLOAT16:
		for (i = 0; i < n; i++) {
			h = le16(p + 2 * i);
			/* normal numbers: rebias into a binary32 */
			if (((h >> 10) & 0x1f) - 1u < 30u) {
				u = (uint32_t)(h & 0x8000) << 16 |
				    (((uint32_t)(h & 0x7fff) + 0x1c000) << 13);
				memcpy(&f, &u, 4);
				out[i] = f;
			} else {
				out[i] = half_value(h);
			}
		}
		return true;
	default:
		return false;
	}
}

int tfs_values_decode(enum tfs_dtype t, unsigned flags, const void *src,
		      size_t nblocks, double *out)
{
	const struct tfs_dtype_info *di = tfs_dtype_info(t);
	const uint8_t *p = src;
	bool big = flags & TFS_VALUES_BIG_ENDIAN;
	float y[256];
	dequant_fn dq;
	size_t i;
	unsigned j;

	if (tfs_values_supported(t, flags))
		return -ENOTSUP;
	if (di->kind == TFS_KIND_QUANT) {
		dq = dequant_of(t);
		for (i = 0; i < nblocks; i++, p += di->block_bytes) {
			dq(p, y);
			for (j = 0; j < di->block_elems; j++)
				*out++ = y[j];
		}
		return 0;
	}
	if (di->block_elems > 1 &&
	    (di->kind == TFS_KIND_INT || di->kind == TFS_KIND_UINT)) {
		/*
		 * int4/uint4/int2/uint2: low bits first (specs/onnx.md s3);
		 * uint1: the most significant bit first (OpenVINO's u1)
		 */
		unsigned bits = 8 / di->block_elems;
		int v;

		for (i = 0; i < nblocks; i++)
			for (j = 0; j < di->block_elems; j++) {
				v = (p[i] >> (t == TFS_DTYPE_UINT1 ? 7 - j
								  : j * bits)) &
				    ((1 << bits) - 1);
				if (di->kind == TFS_KIND_INT &&
				    v >> (bits - 1))
					v -= 1 << bits;
				*out++ = v;
			}
		return 0;
	}
	if (t == TFS_DTYPE_FLOAT4) {
		for (i = 0; i < nblocks; i++) {
			*out++ = minifloat(p[i] & 0xf, 2, 1, 1);
			*out++ = minifloat(p[i] >> 4, 2, 1, 1);
		}
		return 0;
	}
	if (di->kind == TFS_KIND_COMPLEX) {
		for (i = 0; i < nblocks; i++, p += di->block_bytes)
			out[i] = complex_value(t, p, big, flags);
		return 0;
	}
	if (!big && fast_decode(t, p, nblocks, out))
		return 0;
	for (i = 0; i < nblocks; i++, p += di->block_bytes)
		out[i] = scalar_value(t, p, big);
	return 0;
}

/* ---- tensors --------------------------------------------------------------
 */
