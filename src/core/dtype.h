/* SPDX-License-Identifier: MIT */
/*
 * The element types tensorfs knows: one table (src/core/dtype.c) with each
 * type's canonical lowercase name (the value of user.tensorfs.dtype), its
 * storage unit and its kind.
 *
 * Every type is stored in blocks of @block_elems elements taking
 * @block_bytes bytes: an ordinary type is a block of one element
 * (float32: 1 element in 4 bytes); a sub-byte type packs several elements
 * per block (float4: 2 in 1 byte, float6: 4 in 3 bytes); a ggml quantized
 * type is a block of 32 or 256 elements with its scales (q4_0: 32 in 18
 * bytes).  So one rule sizes them all: bytes = count / block_elems x
 * block_bytes, with count a multiple of block_elems (tfs_dtype_bytes).
 * Opaque types have no numeric meaning tensorfs knows; some have no fixed
 * unit (qfloat, void records: their size is not checked against a shape),
 * others do (the pre-GGUF ggml blocks q4_0_v1...: sized like the rest).
 */
#ifndef TENSORFS_DTYPE_H
#define TENSORFS_DTYPE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/abi.h"

enum tfs_dtype {
	TFS_DTYPE_INVALID = 0,
	TFS_DTYPE_FLOAT64,
	TFS_DTYPE_FLOAT32,
	TFS_DTYPE_FLOAT16,
	TFS_DTYPE_BFLOAT16,
	TFS_DTYPE_INT64,
	TFS_DTYPE_INT32,
	TFS_DTYPE_INT16,
	TFS_DTYPE_INT8,
	TFS_DTYPE_UINT64,
	TFS_DTYPE_UINT32,
	TFS_DTYPE_UINT16,
	TFS_DTYPE_UINT8,
	TFS_DTYPE_BOOL,
	TFS_DTYPE_COMPLEX32, /* two float16 */
	TFS_DTYPE_COMPLEX64,
	TFS_DTYPE_COMPLEX128,
	TFS_DTYPE_FLOAT8_E4M3,
	TFS_DTYPE_FLOAT8_E5M2,
	TFS_DTYPE_FLOAT8_E4M3FNUZ,
	TFS_DTYPE_FLOAT8_E5M2FNUZ,
	TFS_DTYPE_FLOAT8_E8M0,
	TFS_DTYPE_FLOAT4,      /* e2m1, two per byte */
	TFS_DTYPE_FLOAT6_E2M3, /* packed bit stream, 4 per 3 bytes */
	TFS_DTYPE_FLOAT6_E3M2,
	/* ggml block-quantized types (GGUF), lowercase ggml names */
	TFS_DTYPE_Q4_0,
	TFS_DTYPE_Q4_1,
	TFS_DTYPE_Q5_0,
	TFS_DTYPE_Q5_1,
	TFS_DTYPE_Q8_0,
	TFS_DTYPE_Q8_1,
	TFS_DTYPE_Q2_K,
	TFS_DTYPE_Q3_K,
	TFS_DTYPE_Q4_K,
	TFS_DTYPE_Q5_K,
	TFS_DTYPE_Q6_K,
	TFS_DTYPE_Q8_K,
	TFS_DTYPE_IQ2_XXS,
	TFS_DTYPE_IQ2_XS,
	TFS_DTYPE_IQ3_XXS,
	TFS_DTYPE_IQ1_S,
	TFS_DTYPE_IQ4_NL,
	TFS_DTYPE_IQ3_S,
	TFS_DTYPE_IQ2_S,
	TFS_DTYPE_IQ4_XS,
	TFS_DTYPE_IQ1_M,
	TFS_DTYPE_TQ1_0,
	TFS_DTYPE_TQ2_0,
	TFS_DTYPE_MXFP4,
	TFS_DTYPE_NVFP4,
	TFS_DTYPE_Q1_0,
	TFS_DTYPE_Q2_0,
	/*
	 * packed small integers (ONNX, TFLite), the first element in the low
	 * bits; the last byte is partly filled when the count is not a
	 * multiple of the elements per byte (tfs_dtype_info.packed)
	 */
	TFS_DTYPE_INT4,
	TFS_DTYPE_UINT4,
	TFS_DTYPE_INT2,
	TFS_DTYPE_UINT2,
	/* OpenVINO's u1: 8 per byte, element 0 in the most significant bit */
	TFS_DTYPE_UINT1,
	/*
	 * pre-GGUF ggml blocks (specs/ggml-legacy.md section 4): the same
	 * ids as today's, other bit layouts (gen 0: ggjt v1 and older, gen 1:
	 * ggjt v2); a fixed unit but no numeric meaning tensorfs decodes
	 */
	TFS_DTYPE_Q4_0_V1,
	TFS_DTYPE_Q4_1_V1,
	TFS_DTYPE_Q4_2_V1,
	TFS_DTYPE_Q4_3_V1,
	TFS_DTYPE_Q5_0_V1,
	TFS_DTYPE_Q5_1_V1,
	TFS_DTYPE_Q8_0_V1,
	TFS_DTYPE_Q4_0_V2,
	TFS_DTYPE_Q4_1_V2,
	TFS_DTYPE_Q5_0_V2,
	TFS_DTYPE_Q5_1_V2,
	TFS_DTYPE_Q8_0_V2,
	/* opaque: no fixed unit */
	TFS_DTYPE_QFLOAT, /* Burnpack's quantized float */
	TFS_DTYPE_VOID,	  /* fixed-size records of a size the reader gives */
	/* variable-length strings in a format's own layout
	 * (user.tensorfs.string_encoding says which) */
	TFS_DTYPE_STRING,
	TFS_DTYPE_COUNT
};

enum tfs_dtype_kind {
	TFS_KIND_NONE = 0,
	TFS_KIND_FLOAT, /* IEEE-like floats, incl. float8/6/4 and bfloat16 */
	TFS_KIND_INT,	/* signed integers */
	TFS_KIND_UINT,	/* unsigned integers */
	TFS_KIND_BOOL,
	TFS_KIND_COMPLEX,
	TFS_KIND_QUANT,	 /* blocks of scaled small integers (ggml) */
	TFS_KIND_OPAQUE, /* no numeric meaning known (a unit, or none) */
};

struct tfs_dtype_info {
	const char *name;
	uint32_t block_elems; /* 0: opaque, no fixed unit */
	uint32_t block_bytes;
	enum tfs_dtype_kind kind;
	/*
	 * sub-byte elements packed into bytes: a last, partly filled block
	 * is allowed (bytes = ceil(count / block_elems)); float4 and ggml's
	 * blocks are whole
	 */
	bool packed;
};

/* the table row of @t (a zeroed row for an invalid value; never NULL) */
TFS_PRIVATE const struct tfs_dtype_info *tfs_dtype_info(enum tfs_dtype t);

/* canonical name ("float32"), or NULL for an invalid value */
TFS_PRIVATE const char *tfs_dtype_name(enum tfs_dtype t);

/*
 * Element size in bytes of a type stored one element per block; 0 for
 * sub-byte, block-quantized, opaque and invalid types.
 */
uint32_t tfs_dtype_size(enum tfs_dtype t);

/*
 * Bytes taken by @count elements of @t: 0, or -EINVAL when @t has no fixed
 * unit or @count is not a whole number of blocks, -EOVERFLOW.
 */
TFS_PRIVATE int tfs_dtype_bytes(enum tfs_dtype t, uint64_t count,
				uint64_t *bytes);

/* the dtype with canonical name @name, or TFS_DTYPE_INVALID */
TFS_PRIVATE enum tfs_dtype tfs_dtype_from_name(const char *name);

/*
 * A shape as text, "[2,3]" ("[]" for a scalar), into @buf (@len bytes,
 * always NUL-terminated when @len > 0): 0, or -E2BIG when it was cut.
 */
TFS_PRIVATE int tfs_shape_text(char *buf, size_t len, const uint64_t *shape,
			       uint32_t ndim);

#endif
