// SPDX-License-Identifier: MIT
/* The dtype table: see src/core/dtype.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/checked.h"
#include "core/dtype.h"

#define T(id, nm, be, bb, k) [TFS_DTYPE_##id] = {nm, be, bb, TFS_KIND_##k}
/* packed sub-byte integers: @be per byte, the last byte may be partial */
#define P(id, nm, be, k)                                                       \
	[TFS_DTYPE_##id] = {nm, be, 1, TFS_KIND_##k, true}

/* ggml block sizes: ggml-org/ggml's type traits, see specs/gguf.md section 5 */
static const struct tfs_dtype_info dtypes[TFS_DTYPE_COUNT] = {
	T(FLOAT64, "float64", 1, 8, FLOAT),
	T(FLOAT32, "float32", 1, 4, FLOAT),
	T(FLOAT16, "float16", 1, 2, FLOAT),
	T(BFLOAT16, "bfloat16", 1, 2, FLOAT),
	T(INT64, "int64", 1, 8, INT),
	T(INT32, "int32", 1, 4, INT),
	T(INT16, "int16", 1, 2, INT),
	T(INT8, "int8", 1, 1, INT),
	T(UINT64, "uint64", 1, 8, UINT),
	T(UINT32, "uint32", 1, 4, UINT),
	T(UINT16, "uint16", 1, 2, UINT),
	T(UINT8, "uint8", 1, 1, UINT),
	T(BOOL, "bool", 1, 1, BOOL),
	T(COMPLEX32, "complex32", 1, 4, COMPLEX),
	T(COMPLEX64, "complex64", 1, 8, COMPLEX),
	T(COMPLEX128, "complex128", 1, 16, COMPLEX),
	T(FLOAT8_E4M3, "float8_e4m3", 1, 1, FLOAT),
	T(FLOAT8_E5M2, "float8_e5m2", 1, 1, FLOAT),
	T(FLOAT8_E4M3FNUZ, "float8_e4m3fnuz", 1, 1, FLOAT),
	T(FLOAT8_E5M2FNUZ, "float8_e5m2fnuz", 1, 1, FLOAT),
	T(FLOAT8_E8M0, "float8_e8m0", 1, 1, FLOAT),
	T(FLOAT4, "float4", 2, 1, FLOAT),
	T(FLOAT6_E2M3, "float6_e2m3", 4, 3, FLOAT),
	T(FLOAT6_E3M2, "float6_e3m2", 4, 3, FLOAT),
	T(Q4_0, "q4_0", 32, 18, QUANT),
	T(Q4_1, "q4_1", 32, 20, QUANT),
	T(Q5_0, "q5_0", 32, 22, QUANT),
	T(Q5_1, "q5_1", 32, 24, QUANT),
	T(Q8_0, "q8_0", 32, 34, QUANT),
	T(Q8_1, "q8_1", 32, 36, QUANT),
	T(Q2_K, "q2_k", 256, 84, QUANT),
	T(Q3_K, "q3_k", 256, 110, QUANT),
	T(Q4_K, "q4_k", 256, 144, QUANT),
	T(Q5_K, "q5_k", 256, 176, QUANT),
	T(Q6_K, "q6_k", 256, 210, QUANT),
	T(Q8_K, "q8_k", 256, 292, QUANT),
	T(IQ2_XXS, "iq2_xxs", 256, 66, QUANT),
	T(IQ2_XS, "iq2_xs", 256, 74, QUANT),
	T(IQ3_XXS, "iq3_xxs", 256, 98, QUANT),
	T(IQ1_S, "iq1_s", 256, 50, QUANT),
	T(IQ4_NL, "iq4_nl", 32, 18, QUANT),
	T(IQ3_S, "iq3_s", 256, 110, QUANT),
	T(IQ2_S, "iq2_s", 256, 82, QUANT),
	T(IQ4_XS, "iq4_xs", 256, 136, QUANT),
	T(IQ1_M, "iq1_m", 256, 56, QUANT),
	T(TQ1_0, "tq1_0", 256, 54, QUANT),
	T(TQ2_0, "tq2_0", 256, 66, QUANT),
	T(MXFP4, "mxfp4", 32, 17, QUANT),
	T(NVFP4, "nvfp4", 64, 36, QUANT),
	T(Q1_0, "q1_0", 128, 18, QUANT),
	T(Q2_0, "q2_0", 64, 18, QUANT),
	P(INT4, "int4", 2, INT),
	P(UINT4, "uint4", 2, UINT),
	P(INT2, "int2", 4, INT),
	P(UINT2, "uint2", 4, UINT),
	P(UINT1, "uint1", 8, UINT), /* most significant bit first */
	/* specs/ggml-legacy.md section 4: f32 scales until ggjt v3 */
	T(Q4_0_V1, "q4_0_v1", 32, 20, OPAQUE),
	T(Q4_1_V1, "q4_1_v1", 32, 24, OPAQUE),
	T(Q4_2_V1, "q4_2_v1", 16, 10, OPAQUE),
	T(Q4_3_V1, "q4_3_v1", 16, 12, OPAQUE),
	T(Q5_0_V1, "q5_0_v1", 32, 22, OPAQUE),
	T(Q5_1_V1, "q5_1_v1", 32, 24, OPAQUE),
	T(Q8_0_V1, "q8_0_v1", 32, 36, OPAQUE),
	T(Q4_0_V2, "q4_0_v2", 32, 20, OPAQUE),
	T(Q4_1_V2, "q4_1_v2", 32, 24, OPAQUE),
	T(Q5_0_V2, "q5_0_v2", 32, 22, OPAQUE),
	T(Q5_1_V2, "q5_1_v2", 32, 24, OPAQUE),
	T(Q8_0_V2, "q8_0_v2", 32, 36, OPAQUE),
	T(QFLOAT, "qfloat", 0, 0, OPAQUE),
	T(VOID, "void", 0, 0, OPAQUE),
	T(STRING, "string", 0, 0, OPAQUE),
};

static const struct tfs_dtype_info invalid;

const struct tfs_dtype_info *tfs_dtype_info(enum tfs_dtype t)
{
	return (unsigned)t < TFS_DTYPE_COUNT ? &dtypes[t] : &invalid;
}

const char *tfs_dtype_name(enum tfs_dtype t)
{
	return tfs_dtype_info(t)->name;
}

uint32_t tfs_dtype_size(enum tfs_dtype t)
{
	const struct tfs_dtype_info *i = tfs_dtype_info(t);

	return i->block_elems == 1 ? i->block_bytes : 0;
}

int tfs_dtype_bytes(enum tfs_dtype t, uint64_t count, uint64_t *bytes)
{
	const struct tfs_dtype_info *i = tfs_dtype_info(t);

	if (i->packed) { /* ceil: a last byte partly filled */
		*bytes = count / i->block_elems + !!(count % i->block_elems);
		return 0;
	}
	if (!i->block_elems || count % i->block_elems)
		return -EINVAL;
	if (!tfs_mul_u64(count / i->block_elems, i->block_bytes, bytes))
		return -EOVERFLOW;
	return 0;
}

enum tfs_dtype tfs_dtype_from_name(const char *name)
{
	unsigned i;

	for (i = 1; i < TFS_DTYPE_COUNT; i++)
		if (strcmp(dtypes[i].name, name) == 0)
			return (enum tfs_dtype)i;
	return TFS_DTYPE_INVALID;
}

int tfs_shape_text(char *buf, size_t len, const uint64_t *shape, uint32_t ndim)
{
	size_t o = 0;
	uint32_t i;

	if (!len)
		return -E2BIG;
	o += (size_t)snprintf(buf, len, "[");
	for (i = 0; i < ndim && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%llu", i ? "," : "",
				      (unsigned long long)shape[i]);
	if (o < len)
		o += (size_t)snprintf(buf + o, len - o, "]");
	return o < len ? 0 : -E2BIG;
}
