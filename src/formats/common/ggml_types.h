/* SPDX-License-Identifier: MIT */
/*
 * ggml's tensor type ids, shared by the GGUF reader and the pre-GGUF ggml
 * reader (specs/gguf.md section 5, specs/ggml-legacy.md section 4).
 *
 * GGUF files use today's ids and block layouts.  The files written before
 * GGUF used the same ids with other layouts in each quantization
 * generation: gen 0 (ggjt v1, ggmf, unversioned ggml, whisper.cpp qntvr 0)
 * had f32 scales and the first nibble order, gen 1 (ggjt v2, qntvr 1) the
 * new nibble order with f32 scales, gen 2 (ggjt v3, qntvr 2) today's
 * blocks.  Each generation's quantized types get their own dtype
 * (q4_0_v1, q4_0_v2, q4_0), so no consumer mistakes one for another.
 */
#ifndef TFS_FORMATS_GGML_TYPES_H
#define TFS_FORMATS_GGML_TYPES_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "core/dtype.h"

struct tfs_ggml_type {
	enum tfs_dtype dtype;
	const char *name; /* ggml's name: "F32", "Q4_0" */
};

/* quantization generations of the pre-GGUF files */
#define TFS_GGML_GEN_COUNT 3

/* today's id @id (GGUF), or NULL: unknown or removed */
const struct tfs_ggml_type *tfs_ggml_type(uint32_t id);

/*
 * id @id as stored by a pre-GGUF file of generation @gen (0..2), or NULL:
 * unknown in that generation, or never stored in files (Q8_1, Q8_K)
 */
const struct tfs_ggml_type *tfs_ggml_legacy_type(unsigned gen, uint32_t id);

/*
 * ggml's dimensions @ne[0..@n_dims) as compact JSON ("[4096,32000]",
 * ne[0] first) into @buf: 4 x 20 digits need at most 86 bytes
 */
void tfs_ggml_ne_text(char *buf, size_t len, const uint64_t *ne,
		      unsigned n_dims);

/*
 * A string of the file as JSON: UTF-8 as is, anything else as
 * {"not_utf8_hex": its first 64 bytes in hex, "length": its length}.
 * NULL when out of memory.
 */
json_t *tfs_ggml_string_json(const uint8_t *s, uint64_t len);

#endif
