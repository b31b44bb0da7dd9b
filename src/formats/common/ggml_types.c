// SPDX-License-Identifier: MIT
/* ggml's tensor type ids: see ggml_types.h. */
#include <inttypes.h>
#include <stdio.h>

#include "ggml_types.h"
#include "core/names.h"

/* ggml type ids (ggml.h), removed ids have no dtype */
static const struct tfs_ggml_type ggml_types[] = {
	[0] = {TFS_DTYPE_FLOAT32, "F32"},
	[1] = {TFS_DTYPE_FLOAT16, "F16"},
	[2] = {TFS_DTYPE_Q4_0, "Q4_0"},
	[3] = {TFS_DTYPE_Q4_1, "Q4_1"},
	[6] = {TFS_DTYPE_Q5_0, "Q5_0"},
	[7] = {TFS_DTYPE_Q5_1, "Q5_1"},
	[8] = {TFS_DTYPE_Q8_0, "Q8_0"},
	[9] = {TFS_DTYPE_Q8_1, "Q8_1"},
	[10] = {TFS_DTYPE_Q2_K, "Q2_K"},
	[11] = {TFS_DTYPE_Q3_K, "Q3_K"},
	[12] = {TFS_DTYPE_Q4_K, "Q4_K"},
	[13] = {TFS_DTYPE_Q5_K, "Q5_K"},
	[14] = {TFS_DTYPE_Q6_K, "Q6_K"},
	[15] = {TFS_DTYPE_Q8_K, "Q8_K"},
	[16] = {TFS_DTYPE_IQ2_XXS, "IQ2_XXS"},
	[17] = {TFS_DTYPE_IQ2_XS, "IQ2_XS"},
	[18] = {TFS_DTYPE_IQ3_XXS, "IQ3_XXS"},
	[19] = {TFS_DTYPE_IQ1_S, "IQ1_S"},
	[20] = {TFS_DTYPE_IQ4_NL, "IQ4_NL"},
	[21] = {TFS_DTYPE_IQ3_S, "IQ3_S"},
	[22] = {TFS_DTYPE_IQ2_S, "IQ2_S"},
	[23] = {TFS_DTYPE_IQ4_XS, "IQ4_XS"},
	[24] = {TFS_DTYPE_INT8, "I8"},
	[25] = {TFS_DTYPE_INT16, "I16"},
	[26] = {TFS_DTYPE_INT32, "I32"},
	[27] = {TFS_DTYPE_INT64, "I64"},
	[28] = {TFS_DTYPE_FLOAT64, "F64"},
	[29] = {TFS_DTYPE_IQ1_M, "IQ1_M"},
	[30] = {TFS_DTYPE_BFLOAT16, "BF16"},
	[34] = {TFS_DTYPE_TQ1_0, "TQ1_0"},
	[35] = {TFS_DTYPE_TQ2_0, "TQ2_0"},
	[39] = {TFS_DTYPE_MXFP4, "MXFP4"},
	[40] = {TFS_DTYPE_NVFP4, "NVFP4"},
	[41] = {TFS_DTYPE_Q1_0, "Q1_0"},
	[42] = {TFS_DTYPE_Q2_0, "Q2_0"},
};
#define GGML_TYPE_COUNT (sizeof(ggml_types) / sizeof(ggml_types[0]))

/*
 * The pre-GGUF generations (specs/ggml-legacy.md section 4): ids 0..14
 * only; F32 and F16 never changed, gen 2's blocks are today's.
 */
#define LEGACY_IDS 15
static const struct tfs_ggml_type legacy_types[2][LEGACY_IDS] = {
	{
		[2] = {TFS_DTYPE_Q4_0_V1, "Q4_0"},
		[3] = {TFS_DTYPE_Q4_1_V1, "Q4_1"},
		[4] = {TFS_DTYPE_Q4_2_V1, "Q4_2"},
		[5] = {TFS_DTYPE_Q4_3_V1, "Q4_3"},
		[6] = {TFS_DTYPE_Q5_0_V1, "Q5_0"},
		[7] = {TFS_DTYPE_Q5_1_V1, "Q5_1"},
		[8] = {TFS_DTYPE_Q8_0_V1, "Q8_0"},
	},
	{
		[2] = {TFS_DTYPE_Q4_0_V2, "Q4_0"},
		[3] = {TFS_DTYPE_Q4_1_V2, "Q4_1"},
		[6] = {TFS_DTYPE_Q5_0_V2, "Q5_0"},
		[7] = {TFS_DTYPE_Q5_1_V2, "Q5_1"},
		[8] = {TFS_DTYPE_Q8_0_V2, "Q8_0"},
	},
};

const struct tfs_ggml_type *tfs_ggml_type(uint32_t id)
{
	return id < GGML_TYPE_COUNT && ggml_types[id].name ? &ggml_types[id]
							   : NULL;
}

const struct tfs_ggml_type *tfs_ggml_legacy_type(unsigned gen, uint32_t id)
{
	if (gen >= TFS_GGML_GEN_COUNT || id >= LEGACY_IDS)
		return NULL;
	if (id <= 1)
		return &ggml_types[id];
	if (gen == 2)
		/* Q8_1 was never stored in files; Q4_2 and Q4_3 removed */
		return id == 9 ? NULL : tfs_ggml_type(id);
	return legacy_types[gen][id].name ? &legacy_types[gen][id] : NULL;
}

void tfs_ggml_ne_text(char *buf, size_t len, const uint64_t *ne,
		      unsigned n_dims)
{
	size_t o = 0;
	unsigned k;

	o += (size_t)snprintf(buf, len, "[");
	for (k = 0; k < n_dims && o < len; k++)
		o += (size_t)snprintf(buf + o, len - o, "%s%" PRIu64,
				      k ? "," : "", ne[k]);
	if (o < len)
		snprintf(buf + o, len - o, "]");
}

json_t *tfs_ggml_string_json(const uint8_t *s, uint64_t len)
{
	char hex[2 * 64 + 1];
	uint64_t k;

	if (tfs_utf8_valid(s, (size_t)len))
		return json_stringn_nocheck((const char *)s, (size_t)len);
	for (k = 0; k < len && k < 64; k++)
		snprintf(hex + 2 * k, 3, "%02x", s[k]);
	hex[2 * k] = '\0';
	return json_pack("{s:s,s:I}", "not_utf8_hex", hex, "length",
			 (json_int_t)len);
}
