// SPDX-License-Identifier: MIT
/*
 * The quant view's arithmetic: one logical row at a time, each value one
 * binary32 operation after another in the spec's order (C11 mode: no FMA
 * contraction, no excess precision on x86-64), so results are bit for bit
 * those of the references (docs/formats/quantized.md).
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "views/quant.h"

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static float bits_float(uint32_t u)
{
	float f;

	memcpy(&f, &u, 4);
	return f;
}

/* IEEE binary16 to binary32 (exact) */
static float half_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31,
		 m = h & 1023;

	if (e == 31)
		return bits_float(sign | 0x7f800000u | m << 13);
	if (e)
		return bits_float(sign | (e + 112) << 23 | m << 13);
	/* subnormal: m x 2^-24, exact in binary32 */
	return (sign ? -1.0f : 1.0f) * ldexpf((float)m, -24);
}

/* OCP float8 e4m3fn: bias 7, no infinity, S.1111.111 NaN */
static float e4m3_float(uint8_t b)
{
	uint32_t e = (b >> 3) & 15, m = b & 7;
	float v;

	if ((b & 0x7f) == 0x7f)
		return NAN;
	v = e ? ldexpf((float)(8 + m), (int)e - 10) : ldexpf((float)m, -9);
	return b & 0x80 ? -v : v;
}

static const float e2m1[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,
			       4.0f,  6.0f,  -0.0f, -0.5f, -1.0f, -1.5f,
			       -2.0f, -3.0f, -4.0f, -6.0f};

/* element @i of a tensor of @t (a scale: float32/16, bfloat16, e4m3) */
static float scale_at(enum tfs_dtype t, const uint8_t *p, uint64_t i)
{
	switch (t) {
	case TFS_DTYPE_FLOAT16:
		return half_float((uint16_t)(p[2 * i] | p[2 * i + 1] << 8));
	case TFS_DTYPE_BFLOAT16:
		return bits_float((uint32_t)(p[2 * i] | p[2 * i + 1] << 8)
				  << 16);
	case TFS_DTYPE_FLOAT8_E4M3:
		return e4m3_float(p[i]);
	default: /* float32: the plan allows nothing else */
		return bits_float(le32(p + 4 * i));
	}
}

/*
 * Row @o's per-group scales and zero points into @s, @z (ngroups each):
 * the inner loops then read one packed word per k elements and index two
 * small tables (a row of a 4096-wide layer has 32 groups)
 */
static int gptq_row(const struct quant_layer *l, const uint8_t *const *p,
		    uint64_t o, float *w, float *s, int32_t *z)
{
	uint32_t b = l->bits, k = 32 / b, mask = (1u << b) - 1, word, j;
	uint64_t out = l->rows, in = l->cols, i, r, g, ngroups = l->scols;

	for (g = 0; g < ngroups; g++) {
		s[g] = scale_at(l->dtype[QP_SCALE], p[QP_SCALE], g * out + o);
		z[g] = (int32_t)((le32(p[QP_ZERO] +
				       (g * (out / k) + o / k) * 4) >>
				  (o % k * b)) &
				 mask) +
		       l->v1;
	}
	for (r = 0, i = 0; r < in / k; r++) {
		word = le32(p[QP_MAIN] + (r * out + o) * 4);
		for (j = 0; j < k; j++, i++) {
			g = p[QP_GIDX] ? le32(p[QP_GIDX] + 4 * i)
				       : (l->group ? i / l->group : 0);
			if (g >= ngroups)
				return -EIO;
			w[i] = (float)((int32_t)(word >> (j * b) & mask) -
				       z[g]) *
			       s[g];
		}
	}
	return 0;
}

static void awq_row(const struct quant_layer *l, const uint8_t *const *p,
		    uint64_t o, float *w, float *s, int32_t *z)
{
	static const uint32_t rev[8] = {0, 4, 1, 5, 2, 6, 3, 7};
	uint64_t out = l->rows, in = l->cols, i, g;
	uint32_t sh = 4 * rev[o % 8];

	for (g = 0; g < in / l->group; g++) {
		s[g] = scale_at(l->dtype[QP_SCALE], p[QP_SCALE], g * out + o);
		z[g] = (int32_t)(le32(p[QP_ZERO] +
				      (g * (out / 8) + o / 8) * 4) >>
					 sh &
				 15);
	}
	for (i = 0; i < in; i++) {
		g = i / l->group;
		w[i] = (float)((int32_t)(le32(p[QP_MAIN] +
					      (i * (out / 8) + o / 8) * 4) >>
						 sh &
					 15) -
			       z[g]) *
		       s[g];
	}
}

/* compressed-tensors' group of input @i (g_idx, groups, channel) */
static uint64_t ct_group(const struct quant_layer *l, const uint8_t *const *p,
			 uint64_t i)
{
	if (p[QP_GIDX])
		return le32(p[QP_GIDX] + 4 * i);
	return l->group ? i / l->group : 0;
}

static int ct_row(const struct quant_layer *l, const uint8_t *const *p,
		  uint64_t o, float *w)
{
	uint32_t b = l->bits, k = 32 / b, mask = (1u << b) - 1;
	int32_t half = 1 << (b - 1), q, zp = 0;
	uint64_t in = l->cols, cols = (in + k - 1) / k, i, g;
	float s;

	for (i = 0; i < in; i++) {
		g = ct_group(l, p, i);
		if (l->scols > 1 && g >= l->scols)
			return -EIO;
		if (l->family == QF_CT_PACK)
			q = (int32_t)(le32(p[QP_MAIN] +
					   (o * cols + i / k) * 4) >>
					      (i % k * b) &
				      mask) -
			    half;
		else
			q = (int8_t)p[QP_MAIN][o * in + i];
		s = scale_at(l->dtype[QP_SCALE], p[QP_SCALE],
			     l->scols ? o * l->scols + (l->scols > 1 ? g : 0)
				      : 0);
		if (p[QP_ZERO] && l->family == QF_CT_PACK)
			zp = (int32_t)(le32(p[QP_ZERO] +
					    ((o / k) * l->zcols + g) * 4) >>
					       (o % k * b) &
				       mask) -
			     half;
		else if (p[QP_ZERO])
			zp = (int8_t)p[QP_ZERO]
				      [l->scols ? o * l->scols +
							  (l->scols > 1 ? g : 0)
						: 0];
		w[i] = (float)(q - zp) * s;
	}
	return 0;
}

static void fp8_row(const struct quant_layer *l, const uint8_t *const *p,
		    uint64_t o, float *w)
{
	uint64_t in = l->cols, nbw = (in + l->bw - 1) / l->bw, i;

	for (i = 0; i < in; i++)
		w[i] = e4m3_float(p[QP_MAIN][o * in + i]) *
		       scale_at(l->dtype[QP_SCALE], p[QP_SCALE],
				(o / l->bh) * nbw + i / l->bw);
}

static void mxfp4_row(const struct quant_layer *l, const uint8_t *const *p,
		      uint64_t r, float *w)
{
	uint64_t groups = l->cols / 32, g, j;
	const uint8_t *blk;
	uint8_t e, byte;

	for (g = 0; g < groups; g++) {
		e = p[QP_SCALE][r * groups + g];
		blk = p[QP_MAIN] + (r * groups + g) * 16;
		for (j = 0; j < 32; j++) {
			byte = blk[j / 2];
			w[g * 32 + j] =
				e == 255 ? NAN
					 : ldexpf(e2m1[j % 2 ? byte >> 4
							     : byte & 15],
						  (int)e - 127);
		}
	}
}

static void nvfp4_row(const struct quant_layer *l, const uint8_t *const *p,
		      uint64_t o, float *w)
{
	uint64_t in = l->cols, i;
	float s2 = scale_at(l->dtype[QP_SCALE2], p[QP_SCALE2], 0), s = 0;
	uint8_t byte;

	for (i = 0; i < in; i++) {
		if (i % 16 == 0)
			s = scale_at(l->dtype[QP_SCALE], p[QP_SCALE],
				     o * (in / 16) + i / 16) *
			    s2;
		byte = p[QP_MAIN][o * (in / 2) + i / 2];
		w[i] = e2m1[i % 2 ? byte >> 4 : byte & 15] * s;
	}
}

static void bnb_int8_row(const struct quant_layer *l, const uint8_t *const *p,
			 uint64_t o, float *w)
{
	uint64_t in = l->cols, i;
	float scb = scale_at(l->dtype[QP_SCALE], p[QP_SCALE], o);
	const float inv127 = bits_float(0x3C010204u);

	for (i = 0; i < in; i++)
		w[i] = ((float)(int8_t)p[QP_MAIN][o * in + i] * scb) * inv127;
}

/* @n (< 8) bytes from @p, little-endian: a bit window that ends early */
uint64_t tfs_quant_groups(const struct quant_layer *l)
{
	switch (l->family) {
	case QF_GPTQ:
		return l->scols;
	case QF_AWQ:
	case QF_MLX:
		return l->cols / l->group;
	default:
		return 0;
	}
}

static uint64_t le_bytes(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

static void mlx_row(const struct quant_layer *l, const uint8_t *const *p,
		    uint64_t o, float *w, float *s, float *bias)
{
	uint64_t in = l->cols, i, bit, groups = in / l->group, v;
	uint64_t row_len = in * l->bits / 8, at;
	const uint8_t *row = p[QP_MAIN] + o * row_len;
	uint32_t b = l->bits, mask = (1u << b) - 1;
	float prod;

	for (i = 0; i < groups; i++) {
		s[i] = scale_at(l->dtype[QP_SCALE], p[QP_SCALE],
				o * groups + i);
		bias[i] =
			scale_at(l->dtype[QP_ZERO], p[QP_ZERO], o * groups + i);
	}
	for (i = 0, bit = 0; i < in; i++, bit += b) {
		/* bits [i*b, (i+1)*b) of the row, least significant first */
		at = bit / 8;
		v = at + 8 <= row_len ? le_bytes(row + at, 8)
				      : le_bytes(row + at, row_len - at);
		prod = (float)((uint32_t)(v >> (bit % 8)) & mask) *
		       s[i / l->group];
		w[i] = prod + bias[i / l->group];
	}
}

int tfs_quant_rows(const struct quant_layer *l, const uint8_t *const *parts,
		   const uint64_t *plen, uint64_t row, uint64_t nrows,
		   float *out, float *aux)
{
	/* per-group tables: scales, then zero points or biases */
	uint64_t ng = tfs_quant_groups(l);
	int32_t *zi = (int32_t *)(aux + ng);
	float *zf = aux + ng;

	uint64_t r;
	int ret = 0;

	(void)plen; /* the plan checked every size against the shapes */
	for (r = row; !ret && r < row + nrows; r++, out += l->cols) {
		switch (l->family) {
		case QF_GPTQ:
			ret = gptq_row(l, parts, r, out, aux, zi);
			break;
		case QF_AWQ:
			awq_row(l, parts, r, out, aux, zi);
			break;
		case QF_CT_PACK:
		case QF_CT_INT:
			ret = ct_row(l, parts, r, out);
			break;
		case QF_FP8:
			fp8_row(l, parts, r, out);
			break;
		case QF_MXFP4:
			mxfp4_row(l, parts, r, out);
			break;
		case QF_NVFP4:
			nvfp4_row(l, parts, r, out);
			break;
		case QF_BNB_INT8:
			bnb_int8_row(l, parts, r, out);
			break;
		case QF_MLX:
			mlx_row(l, parts, r, out, aux, zf);
			break;
		}
	}
	return ret;
}
