// SPDX-License-Identifier: MIT
/*
 * Digests: see src/core/digest.h.
 *
 * CRC-32C is crc32c.c's; XXH3-64 (seed 0) is Debian's libxxhash; SHA-256
 * OpenSSL's.
 */
#include <errno.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <xxhash.h>

#include "core/crc32c.h"
#include "core/digest.h"
#include "core/source.h"

/* ---- text form ----------------------------------------------------------- */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int parse_crc32c(const char *hex, struct tfs_digest *out,
			enum tfs_digest_alg alg)
{
	uint32_t v = 0;
	unsigned sig = 0;
	int h;

	if (!*hex)
		return -EBADMSG;
	for (; *hex; hex++) {
		h = hexval(*hex);
		if (h < 0)
			return -EBADMSG;
		if (sig || h)
			sig++;
		if (sig > 8)
			return -EBADMSG;
		v = v << 4 | (uint32_t)h;
	}
	out->alg = alg;
	out->len = 4;
	out->value[0] = (uint8_t)(v >> 24);
	out->value[1] = (uint8_t)(v >> 16);
	out->value[2] = (uint8_t)(v >> 8);
	out->value[3] = (uint8_t)v;
	return 0;
}

/* exactly 2 x @n hex digits (either case), the value's bytes in order */
static int parse_hex(const char *hex, unsigned n, enum tfs_digest_alg alg,
		     struct tfs_digest *out)
{
	unsigned i;
	int hi, lo;

	if (strlen(hex) != 2 * n)
		return -EBADMSG;
	for (i = 0; i < n; i++) {
		hi = hexval(hex[2 * i]);
		lo = hexval(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -EBADMSG;
		out->value[i] = (uint8_t)(hi << 4 | lo);
	}
	out->alg = alg;
	out->len = n;
	return 0;
}

int tfs_digest_parse(const char *text, struct tfs_digest *out)
{
	memset(out, 0, sizeof(*out));
	if (!text)
		return 0;
	if (strncmp(text, "crc32c:", 7) == 0) {
		if (text[7] != '0' || (text[8] != 'x' && text[8] != 'X'))
			return -EBADMSG;
		return parse_crc32c(text + 9, out, TFS_DIGEST_CRC32C);
	}
	if (strncmp(text, "crc32:", 6) == 0) {
		if (text[6] != '0' || (text[7] != 'x' && text[7] != 'X'))
			return -EBADMSG;
		return parse_crc32c(text + 8, out, TFS_DIGEST_CRC32);
	}
	if (strncmp(text, "sha256:", 7) == 0)
		return parse_hex(text + 7, 32, TFS_DIGEST_SHA256, out);
	if (strncmp(text, "xxh3:", 5) == 0)
		return parse_hex(text + 5, 8, TFS_DIGEST_XXH3, out);
	out->alg = TFS_DIGEST_UNKNOWN;
	return 0;
}

const char *tfs_digest_alg_name(enum tfs_digest_alg alg)
{
	switch (alg) {
	case TFS_DIGEST_CRC32C:
		return "crc32c";
	case TFS_DIGEST_CRC32:
		return "crc32";
	case TFS_DIGEST_SHA256:
		return "sha256";
	case TFS_DIGEST_XXH3:
		return "xxh3";
	case TFS_DIGEST_UNKNOWN:
		return "unknown";
	default:
		return "none";
	}
}

void tfs_digest_format(const struct tfs_digest *dg, char *buf, size_t len)
{
	size_t o;
	unsigned i;

	if (!len)
		return;
	switch (dg->alg) {
	case TFS_DIGEST_CRC32C:
	case TFS_DIGEST_CRC32:
		snprintf(buf, len, "%s:0x%02X%02X%02X%02X",
			 tfs_digest_alg_name(dg->alg), dg->value[0],
			 dg->value[1], dg->value[2], dg->value[3]);
		break;
	case TFS_DIGEST_SHA256:
	case TFS_DIGEST_XXH3:
		o = (size_t)snprintf(buf, len,
				     "%s:", tfs_digest_alg_name(dg->alg));
		for (i = 0; i < dg->len && o + 2 < len; i++, o += 2)
			snprintf(buf + o, len - o, "%02x", dg->value[i]);
		break;
	default:
		snprintf(buf, len, "%s", tfs_digest_alg_name(dg->alg));
	}
}

/* ---- computing ----------------------------------------------------------- */

/* zlib's CRC-32 over any length (its length argument is 32-bit) */
static uint32_t crc32_any(uint32_t crc, const uint8_t *p, size_t len)
{
	uInt n;

	while (len) {
		n = len > (1u << 30) ? (1u << 30) : (uInt)len;
		crc = (uint32_t)crc32(crc, p, n);
		p += n;
		len -= n;
	}
	return crc;
}

struct tfs_digest_ctx {
	enum tfs_digest_alg alg;
	uint32_t crc;
	EVP_MD_CTX *md;
	XXH3_state_t *xxh;
};

int tfs_digest_begin(struct tfs_digest_ctx **out, enum tfs_digest_alg alg)
{
	struct tfs_digest_ctx *c;

	if (alg != TFS_DIGEST_CRC32C && alg != TFS_DIGEST_CRC32 &&
	    alg != TFS_DIGEST_SHA256 && alg != TFS_DIGEST_XXH3)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->alg = alg;
	if (alg == TFS_DIGEST_SHA256) {
		c->md = EVP_MD_CTX_new();
		if (!c->md ||
		    EVP_DigestInit_ex(c->md, EVP_sha256(), NULL) != 1) {
			tfs_digest_abort(c);
			return -ENOMEM;
		}
	}
	if (alg == TFS_DIGEST_XXH3) {
		c->xxh = XXH3_createState();
		if (!c->xxh || XXH3_64bits_reset(c->xxh) != XXH_OK) {
			tfs_digest_abort(c);
			return -ENOMEM;
		}
	}
	*out = c;
	return 0;
}

struct update_args {
	struct tfs_digest_ctx *c;
	const void *p;
	size_t len;
};

static int update_fn(void *arg)
{
	struct update_args *a = arg;

	if (a->c->alg == TFS_DIGEST_CRC32C) {
		a->c->crc = tfs_crc32c(a->c->crc, a->p, a->len);
		return 0;
	}
	if (a->c->alg == TFS_DIGEST_CRC32) {
		a->c->crc = crc32_any(a->c->crc, a->p, a->len);
		return 0;
	}
	if (a->c->alg == TFS_DIGEST_XXH3)
		return XXH3_64bits_update(a->c->xxh, a->p, a->len) == XXH_OK
			       ? 0
			       : -ENOMEM;
	return EVP_DigestUpdate(a->c->md, a->p, a->len) == 1 ? 0 : -ENOMEM;
}

/*
 * The bytes hashed are usually the container's mapping, which may shrink
 * under us: a SIGBUS abandons the update (-EIO) and the context must then
 * only be aborted.
 */
int tfs_digest_update(struct tfs_digest_ctx *c, const void *p, size_t len)
{
	struct update_args a = {c, p, len};
	int ret = tfs_source_guard(update_fn, &a);

	return ret == -EFAULT ? -EIO : ret;
}

int tfs_digest_final(struct tfs_digest_ctx *c, struct tfs_digest *out)
{
	unsigned int n = 0;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	out->alg = c->alg;
	if (c->alg == TFS_DIGEST_CRC32C || c->alg == TFS_DIGEST_CRC32) {
		out->len = 4;
		out->value[0] = (uint8_t)(c->crc >> 24);
		out->value[1] = (uint8_t)(c->crc >> 16);
		out->value[2] = (uint8_t)(c->crc >> 8);
		out->value[3] = (uint8_t)c->crc;
	} else if (c->alg == TFS_DIGEST_XXH3) {
		uint64_t h = XXH3_64bits_digest(c->xxh);
		unsigned i;

		out->len = 8;
		for (i = 0; i < 8; i++)
			out->value[i] = (uint8_t)(h >> (56 - 8 * i));
	} else if (EVP_DigestFinal_ex(c->md, out->value, &n) != 1 || n != 32) {
		ret = -ENOMEM;
	} else {
		out->len = 32;
	}
	tfs_digest_abort(c);
	return ret;
}

void tfs_digest_abort(struct tfs_digest_ctx *c)
{
	if (!c)
		return;
	EVP_MD_CTX_free(c->md);
	if (c->xxh)
		XXH3_freeState(c->xxh);
	free(c);
}

int tfs_digest_check(const struct tfs_digest *expect, const void *p, size_t len,
		     struct tfs_digest *actual)
{
	struct tfs_digest_ctx *c;
	struct tfs_digest got;
	int ret;

	ret = tfs_digest_begin(&c, expect->alg);
	if (ret)
		return ret;
	ret = tfs_digest_update(c, p, len);
	if (ret) {
		tfs_digest_abort(c);
		return ret;
	}
	ret = tfs_digest_final(c, &got);
	if (ret)
		return ret;
	if (actual)
		*actual = got;
	return got.len == expect->len &&
			       memcmp(got.value, expect->value, got.len) == 0
		       ? 0
		       : -EBADMSG;
}
