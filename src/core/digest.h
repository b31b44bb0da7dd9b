/* SPDX-License-Identifier: MIT */
/*
 * Digests of stored bytes: CRC-32C (Castagnoli), SHA-256 and XXH3-64.
 *
 * Containers name a digest as text ("crc32c:0x3302B302", "sha256:<64 hex>",
 * "crc32:0xF4EAB33D" for zip members' CRC-32, zlib's);
 * tfs_digest_parse() turns that into an algorithm and an expected value.
 * Algorithms tensorfs does not know are reported as TFS_DIGEST_UNKNOWN (not
 * an error: they are shown, never checked).  A known algorithm with a
 * malformed value is an error, so a typo never silently disables a check.
 *
 * CRC-32C uses the SSE4.2 instruction when the CPU has it and a
 * slicing-by-8 table otherwise; both give the same values.  SHA-256 is
 * OpenSSL's (EVP).  All functions are thread-safe.
 */
#ifndef TENSORFS_DIGEST_H
#define TENSORFS_DIGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/abi.h"
#include "core/crc32c.h"

enum tfs_digest_alg {
	TFS_DIGEST_NONE = 0, /* no digest given */
	TFS_DIGEST_UNKNOWN,  /* an algorithm we do not check */
	TFS_DIGEST_CRC32C,
	TFS_DIGEST_SHA256,
	TFS_DIGEST_CRC32, /* zlib/IEEE CRC-32 (zip members) */
	TFS_DIGEST_XXH3, /* XXH3-64, seed 0 (zTensor 2.x) */
};

#define TFS_DIGEST_MAX 32 /* bytes of the largest value (SHA-256) */
/* "sha256:" + 64 hex digits + NUL, the longest text we produce */
#define TFS_DIGEST_TEXT_MAX 80

struct tfs_digest {
	enum tfs_digest_alg alg;
	uint8_t value[TFS_DIGEST_MAX]; /* CRC-32(C), XXH3: big-endian */
	unsigned len;		       /* bytes in value */
};

/*
 * Parse @text.  "crc32c:0x" / "crc32c:0X" (or "crc32:0x") + 1..8
 * significant hex digits
 * (either case; leading zeros allowed), "sha256:" + exactly 64 hex digits
 * (either case), "xxh3:" + exactly 16 hex digits (either case; the u64
 * value as printed by "%016" PRIx64).  Anything else with a different prefix is
 * TFS_DIGEST_UNKNOWN.  Returns 0, or -EBADMSG for a malformed value of a
 * known algorithm.
 */
int tfs_digest_parse(const char *text, struct tfs_digest *out);

/* short algorithm name: "crc32c", "sha256", "xxh3", "unknown", "none" */
TFS_PRIVATE const char *tfs_digest_alg_name(enum tfs_digest_alg alg);

/* The canonical text of @dg ("crc32c:0x%08X", "sha256:" / "xxh3:" +
 * lowercase hex). */
void tfs_digest_format(const struct tfs_digest *dg, char *buf, size_t len);

/*
 * Incremental computation of @alg over a byte stream.  A context must be
 * finished with tfs_digest_final() (which also frees it) or dropped with
 * tfs_digest_abort().
 */
struct tfs_digest_ctx;

int tfs_digest_begin(struct tfs_digest_ctx **out, enum tfs_digest_alg alg);
int tfs_digest_update(struct tfs_digest_ctx *c, const void *p, size_t len);
/* the value computed so far into *out (same algorithm); frees @c */
int tfs_digest_final(struct tfs_digest_ctx *c, struct tfs_digest *out);
void tfs_digest_abort(struct tfs_digest_ctx *c);

/*
 * Compute @expect's algorithm over @p and compare.  *actual (may be NULL)
 * gets the computed value.  Returns 0 on a match, -EBADMSG on a mismatch,
 * -EINVAL for an algorithm that cannot be checked, -ENOMEM.
 */
int tfs_digest_check(const struct tfs_digest *expect, const void *p, size_t len,
		     struct tfs_digest *actual);

#endif
