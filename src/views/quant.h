/* SPDX-License-Identifier: MIT */
/*
 * The quant view's layers (src/views/quant.c finds them at the finish
 * step, src/views/quant_decode.c computes their rows on read).  The
 * formulas, their evaluation order and the packings are
 * docs/formats/quantized.md's (from ../shared/specs/quantized-views.md).
 */
#ifndef TFS_VIEWS_QUANT_H
#define TFS_VIEWS_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"

struct tfs_image;
struct tfs_view;

enum quant_family {
	QF_GPTQ,     /* qweight/qzeros/scales/g_idx, [in/k, out] packed */
	QF_AWQ,	     /* qweight/qzeros/scales, interleaved nibbles */
	QF_CT_PACK,  /* compressed-tensors pack-quantized */
	QF_CT_INT,   /* compressed-tensors int-quantized (int8 weight) */
	QF_FP8,	     /* float8_e4m3 weight x block scale (DeepSeek, ct) */
	QF_MXFP4,    /* gpt-oss N_blocks, N_scales */
	QF_NVFP4,    /* ModelOpt NVFP4 */
	QF_BNB_INT8, /* bitsandbytes LLM.int8 */
	QF_MLX,	     /* MLX affine: weight/scales/biases */
};

/* the stored tensors a layer reads, by their role */
enum quant_part {
	QP_MAIN,   /* the packed or low-precision values */
	QP_SCALE,  /* scales (gptq, awq, ct, fp8, mxfp4, nvfp4, mlx), SCB */
	QP_ZERO,   /* zero points (gptq, awq, ct), biases (mlx) */
	QP_GIDX,   /* g_idx (gptq, ct) */
	QP_SCALE2, /* nvfp4's weight_scale_2 */
	QP_SHAPE,  /* ct's weight_shape (read by the plan only) */
	QP_COUNT,
};

#define QUANT_NO_PART UINT32_MAX

struct quant_layer {
	uint32_t node; /* the logical tensor's node (stays: records move) */
	uint32_t part[QP_COUNT]; /* stored tensors' nodes, or QUANT_NO_PART */
	enum tfs_dtype dtype[QP_COUNT]; /* their dtypes */
	enum quant_family family;
	uint32_t bits;
	uint64_t rows, cols; /* the logical matrix (mxfp4: prefix x G*32) */
	uint64_t group;	     /* inputs per group (G); 0: one per row */
	uint64_t bh, bw;     /* fp8: scale block; */
	uint64_t zcols;	     /* ct pack: zero-point groups per row */
	uint64_t scols;	     /* ct: scales per row (1 channel, 0 tensor); gptq:
				groups */
	bool v1;	     /* gptq: zeros stored minus one */
	const char *method;  /* "gptq", ... (static) */
	const char *stored_name; /* the main part's stored name (tree's) */
	size_t stored_len;
};

struct quant_data {
	struct quant_layer *v; /* sorted by node */
	uint32_t n;
};

/* the groups of a row @l decodes through per-row tables (0: none) */
uint64_t tfs_quant_groups(const struct quant_layer *l);

/*
 * Rows [@row, @row + @nrows) of @l's logical float32 matrix into @out,
 * from the stored tensors' bytes @parts (each its whole stored bytes,
 * @plen[i] long); @aux: room for 2 x tfs_quant_groups(@l) floats.  0, or
 * -EIO when the bytes break the rules the plan could not check (a g_idx
 * out of range).
 */
int tfs_quant_rows(const struct quant_layer *l, const uint8_t *const *parts,
		   const uint64_t *plen, uint64_t row, uint64_t nrows,
		   float *out, float *aux);

#endif
