// SPDX-License-Identifier: MIT
/*
 * zTensor 2.x (.zt, container version 2: crates 2.x, Python 2.1.x).
 * Spec: shared/specs/ztensor-v2.md; docs/formats/ztensor.md.
 *
 * Layout: magic, 4096-aligned blobs (the manifest is one), a 40-byte footer
 * (manifest offset, length, XXH3-64, version 2, reserved, magic).  Loading
 * is the spec's "open" (section 9 A-D), in the reference reader's order, and
 * every refusal names the reference's rule ("BlobAlignment: ..."), so the
 * conformance corpus can be checked exactly:
 *   A. container: size, both magics, version, manifest bounds, hash;
 *   B. deterministic CBOR (tfs_cbor_check_deterministic), depth <= 32;
 *   C. schema, walking every map in its (deterministic) key order;
 *   D. semantics: shapes, blob alignment/bounds, shard references, logical
 *      types over their storage type, the dense and zt.sparse_csr/1 layout
 *      rules, and identical-or-disjoint blobs per file.
 * What the spec checks only when bytes are used (section 9 E) never refuses
 * a mount: digests are the read path's (first read, `tensorfs verify`);
 * content rules (bool bytes, the f4 padding nibble, CSR data) are checked
 * here on the raw parts they cover, and a part that breaks one is listed
 * but unreadable (EIO, verify FAILED).  A part in a shard is read from the
 * shard's file beside the root (DIR/STEM-NAME.zt, a companion file: see
 * z2_resolve); when that file is missing, or the part's encoding is one
 * we do not decode, the part is listed and unreadable, which verify
 * reports as skipped, not failed.
 *
 * Tree: an object with exactly one part named "data" is a file; any other
 * (CSR, quantized profiles, unknown layouts) a directory with one file per
 * part, as for 1.x.  CBOR goes through libcbor only after the byte-level
 * check, so field errors point at the manifest start.
 *
 * Why one file of this size: the spec's "open" is one ordered list of
 * rules (sections 9 A-D) whose refusals must name the reference's rule in
 * the reference's order, for the conformance corpus; split, that order
 * would live in two places.  CBOR walking is shared (parse/cbor.c).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "formats/common/dtype_labels.h"
#include "core/builder.h"
#include "parse/cbor.h"
#include "formats/common/cbor_xattrs.h"
#include "core/checked.h"
#include "core/cursor.h"
#include "core/diag.h"
#include "core/digest.h"
#include "core/dtype.h"
#include "core/format.h"
#include "core/names.h"
#include "core/source.h"

#define Z2_MAGIC "\x89ZT2\r\n\x1a\n"
#define Z2_FOOTER 40
#define Z2_MIN_SIZE 48
#define Z2_ALIGN 4096
#define Z2_MANIFEST_MAX (1ull << 30)
#define Z2_DEPTH 32
#define Z2_RANK_MAX 64
#define Z2_NAME_MAX 1024
#define Z2_SHARD_NAME_MAX 64
#define Z2_SEEK_FRAME_MAX (16ull << 20)
#define Z2_SEEKABLE "zt.zstd-seekable/1"
#define Z2_CSR "zt.sparse_csr/1"

/* the reference reader's rule names (spec section 9.1) */
#define RULES(X)                                                               \
	X(FileTooSmall)                                                        \
	X(HeaderMagic)                                                         \
	X(FooterMagic)                                                         \
	X(Version)                                                             \
	X(ManifestBounds)                                                      \
	X(ManifestTooLarge) X(ManifestHash) X(CborSyntax) X(CborDeterminism)   \
		X(CborDuplicateKey) X(CborDepth) X(Schema) X(Name) X(Shape)    \
			X(BlobAlignment) X(BlobBounds) X(BlobOverlap)          \
				X(ShardRef) X(ShardName) X(LayoutRule)         \
					X(LayoutData) X(DenseSize) X(Encoding) \
						X(Digest)
#define RULE_ENUM(n) R_##n,
#define RULE_NAME(n) #n,
enum z2_rule { RULES(RULE_ENUM) };
static const char *const z2_rule_names[] = {RULES(RULE_NAME)};

struct z2_part {
	char *name;
	size_t name_len;
	char *dtype_s;
	enum tfs_dtype dtype;
	char *type; /* logical type, or NULL */
	bool has_blob;
	uint64_t off, len;
	char *shard; /* or NULL: this file */
	/* the file its blob is in: this one, or its shard's (z2_resolve) */
	const struct tfs_source *in;
	uint32_t handle; /* the builder's handle of @in */
	char *encoding;
	bool has_dlen;
	uint64_t dlen;
	char *digest;
	uint64_t size;	  /* decoded size */
	char *unreadable; /* why its bytes are not served, or NULL */
	bool fault;
};

struct z2_obj {
	char *name;
	size_t name_len;
	bool has_shape;
	uint64_t *shape;
	size_t ndim;
	char *layout;
	cbor_item_t *attrs; /* borrowed from the manifest, or NULL */
	bool has_parts;
	struct z2_part *parts;
	size_t nparts;
};

struct z2_shard {
	char *name;
	uint64_t size;
	char *digest;
};

struct z2_ctx {
	const struct tfs_source *src;
	struct tfs_builder *b;
	struct tfs_diag *d;
	uint64_t man_off, man_len, data_end;
	struct z2_shard *shards;
	size_t nshards;
	bool has_table;
	struct z2_obj *objs;
	size_t nobjs;
	bool has_objects;
	cbor_item_t *root_attrs; /* borrowed */
};

/* ---- types (spec section 4) ---------------------------------------------- */

static const struct tfs_dtype_label z2_dtypes[] = {
	{"f64", TFS_DTYPE_FLOAT64}, {"f32", TFS_DTYPE_FLOAT32},
	{"f16", TFS_DTYPE_FLOAT16}, {"bf16", TFS_DTYPE_BFLOAT16},
	{"i64", TFS_DTYPE_INT64},   {"i32", TFS_DTYPE_INT32},
	{"i16", TFS_DTYPE_INT16},   {"i8", TFS_DTYPE_INT8},
	{"u64", TFS_DTYPE_UINT64},  {"u32", TFS_DTYPE_UINT32},
	{"u16", TFS_DTYPE_UINT16},  {"u8", TFS_DTYPE_UINT8},
};

/* registered logical types: storage dtype, bytes per element (0: f4) */
static const struct z2_ltype {
	const char *name;
	enum tfs_dtype storage, shown;
	unsigned unit;
} z2_ltypes[] = {
	{"bool", TFS_DTYPE_UINT8, TFS_DTYPE_BOOL, 1},
	{"f8_e4m3fn", TFS_DTYPE_UINT8, TFS_DTYPE_FLOAT8_E4M3, 1},
	{"f8_e5m2", TFS_DTYPE_UINT8, TFS_DTYPE_FLOAT8_E5M2, 1},
	{"f8_e4m3fnuz", TFS_DTYPE_UINT8, TFS_DTYPE_FLOAT8_E4M3FNUZ, 1},
	{"f8_e5m2fnuz", TFS_DTYPE_UINT8, TFS_DTYPE_FLOAT8_E5M2FNUZ, 1},
	{"f8_e8m0", TFS_DTYPE_UINT8, TFS_DTYPE_FLOAT8_E8M0, 1},
	{"f4_e2m1", TFS_DTYPE_UINT8, TFS_DTYPE_FLOAT4, 0},
	{"complex64", TFS_DTYPE_FLOAT32, TFS_DTYPE_COMPLEX64, 8},
	{"complex128", TFS_DTYPE_FLOAT64, TFS_DTYPE_COMPLEX128, 16},
};

static enum tfs_dtype z2_dtype(const char *s)
{
	const struct tfs_dtype_label *l =
		tfs_dtype_label_find(TFS_DTYPE_LABELS(z2_dtypes), s, strlen(s));

	return l ? l->dtype : TFS_DTYPE_INVALID;
}

/* the registered logical type @s, or NULL (unknown, or none) */
static const struct z2_ltype *z2_ltype(const char *s)
{
	size_t i;

	for (i = 0; s && i < sizeof(z2_ltypes) / sizeof(z2_ltypes[0]); i++)
		if (strcmp(z2_ltypes[i].name, s) == 0)
			return &z2_ltypes[i];
	return NULL;
}

/*
 * Bytes of @n elements of the part's type; false when the size function is
 * unknown (an unknown logical type) or the product overflows (*ovf).
 */
static bool z2_type_bytes(const struct z2_part *p, uint64_t n, uint64_t *out,
			  bool *ovf)
{
	const struct z2_ltype *lt = z2_ltype(p->type);

	*ovf = false;
	if (p->type && !lt)
		return false;
	if (lt && !lt->unit) {
		*out = n / 2 + n % 2; /* two per byte, rounded up */
		return true;
	}
	if (!tfs_mul_u64(n, lt ? lt->unit : tfs_dtype_size(p->dtype), out)) {
		*ovf = true;
		return false;
	}
	return true;
}

/* ---- small helpers ------------------------------------------------------- */

static void z2_part_free(struct z2_part *p)
{
	free(p->name);
	free(p->dtype_s);
	free(p->type);
	free(p->shard);
	free(p->encoding);
	free(p->digest);
	free(p->unreadable);
}

static void z2_ctx_free(struct z2_ctx *z)
{
	size_t i, k;

	for (i = 0; i < z->nobjs; i++) {
		free(z->objs[i].name);
		free(z->objs[i].shape);
		free(z->objs[i].layout);
		for (k = 0; k < z->objs[i].nparts; k++)
			z2_part_free(&z->objs[i].parts[k]);
		free(z->objs[i].parts);
	}
	free(z->objs);
	for (i = 0; i < z->nshards; i++) {
		free(z->shards[i].name);
		free(z->shards[i].digest);
	}
	free(z->shards);
}

static int z2_err(struct z2_ctx *z, enum z2_rule rule, uint64_t off,
		  const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* "<Rule>: <what>" at @off: -E2BIG for a limit, -EBADMSG otherwise */
static int z2_err(struct z2_ctx *z, enum z2_rule rule, uint64_t off,
		  const char *fmt, ...)
{
	char what[260];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return tfs_diag_at(z->d, rule == R_ManifestTooLarge ? -E2BIG : -EBADMSG,
			   off, "%s: %s", z2_rule_names[rule], what);
}

/* a manifest field error (libcbor keeps no positions: the manifest) */
#define z2_schema(z, rule, ...) z2_err((z), (rule), (z)->man_off, __VA_ARGS__)

static const char *z2_pn(char *buf, size_t len, const char *name, size_t n)
{
	return tfs_name_printable(buf, len, name, n);
}

/* a text item as a malloc'd string (NUL-free not required), or -EBADMSG */
static int z2_text(struct z2_ctx *z, cbor_item_t *v, char **out, size_t *len)
{
	int ret;

	if (!v || !cbor_isa_string(v))
		return -EBADMSG;
	ret = tfs_cbor_text(v, out, len);
	if (ret == -ENOMEM)
		return tfs_diag_oom(z->d);
	return ret;
}

/* names of objects, parts, attribute keys: 1..1024 bytes, no NUL */
static bool z2_name_ok(const char *s, size_t n)
{
	return n && n <= Z2_NAME_MAX && !memchr(s, '\0', n);
}

/*
 * The map @m (@what, for the message) as its pairs, *@n of them, and a
 * zeroed array of as many entries of @size bytes for what they describe
 */
static int z2_table(struct z2_ctx *z, cbor_item_t *m, const char *what,
		    size_t size, void **arr, struct cbor_pair **pairs,
		    size_t *n)
{
	if (!cbor_isa_map(m))
		return z2_schema(z, R_Schema, "%s: not a map", what);
	*pairs = cbor_map_handle(m);
	*n = cbor_map_size(m);
	*arr = calloc(*n ? *n : 1, size);
	return *arr ? 0 : tfs_diag_oom(z->d);
}

/* shard names: 1..64 of [A-Za-z0-9._-], not starting with '.' */
static bool z2_shard_name_ok(const char *s, size_t n)
{
	size_t i;

	if (!n || n > Z2_SHARD_NAME_MAX || s[0] == '.')
		return false;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '.' ||
		      s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

/*
 * Map key @k as a name of objects, parts or attribute keys (section 3.5)
 * or of a shard (@shard), into *@name (malloc'd, NULL unless it is text,
 * kept when its rules fail: the caller frees it).  @where and @noun make
 * the messages: "WHERE: a NOUN is not text", "WHERE: NOUN '...' is
 * empty, longer than ...".
 */
static int z2_key_name(struct z2_ctx *z, cbor_item_t *k, const char *where,
		       const char *noun, bool shard, char **name, size_t *len)
{
	char pn[TFS_PRINTABLE_MAX], *s = NULL;
	int ret;

	*name = NULL;
	ret = z2_text(z, k, &s, len);
	if (ret == -ENOMEM)
		return ret;
	if (ret)
		return z2_schema(z, R_Schema, "%s: a %s is not text", where,
				 noun);
	*name = s;
	if (shard ? z2_shard_name_ok(s, *len) : z2_name_ok(s, *len))
		return 0;
	z2_pn(pn, sizeof(pn), s, *len);
	if (shard)
		return z2_schema(z, R_ShardName,
				 "%s: name '%s' is not 1-64 bytes of "
				 "[A-Za-z0-9._-] without a leading '.'",
				 where, pn);
	return z2_schema(z, R_Name,
			 "%s: %s '%s' is empty, longer than 1024 bytes or "
			 "holds NUL",
			 where, noun, pn);
}

/* "<algo>:<hex>": [a-z0-9]+ ':' [0-9a-f]+ (section 7) */
static bool z2_digest_syntax_ok(const char *s)
{
	const char *c = strchr(s, ':');
	const char *q;

	if (!c || c == s || !c[1])
		return false;
	for (q = s; q < c; q++)
		if (!((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9')))
			return false;
	for (q = c + 1; *q; q++)
		if (!((*q >= 'a' && *q <= 'f') || (*q >= '0' && *q <= '9')))
			return false;
	return true;
}

static int z2_shard_index(const struct z2_ctx *z, const char *name)
{
	size_t i;

	for (i = 0; i < z->nshards; i++)
		if (strcmp(z->shards[i].name, name) == 0)
			return (int)i;
	return -1;
}

/* ---- A. the container ---------------------------------------------------- */

static int z2_container(struct z2_ctx *z, bool *data_shard)
{
	const struct tfs_source *src = z->src;
	const uint8_t *f;
	uint64_t off, len, hash, end;
	uint32_t version;

	*data_shard = false;
	if (src->size < Z2_MIN_SIZE)
		return z2_err(z, R_FileTooSmall, 0,
			      "file of %llu bytes, fewer than the 48 of magic "
			      "and footer",
			      (unsigned long long)src->size);
	if (memcmp(src->data, Z2_MAGIC, 8) != 0)
		return z2_err(z, R_HeaderMagic, 0, "magic: not \\x89ZT2");
	f = src->data + src->size - Z2_FOOTER;
	z->data_end = src->size - Z2_FOOTER;
	if (memcmp(f + 32, Z2_MAGIC, 8) != 0)
		return z2_err(z, R_FooterMagic, src->size - 8,
			      "footer magic: not \\x89ZT2");
	version = (uint32_t)tfs_load_le(f + 24, 4);
	if (version != 2)
		return z2_err(z, R_Version, z->data_end + 24,
			      "footer version: %u, not 2", version);
	off = tfs_load_le(f, 8);
	len = tfs_load_le(f + 8, 8);
	hash = tfs_load_le(f + 16, 8);
	if (!len) {
		if (off || hash)
			return z2_err(z, R_ManifestBounds, z->data_end,
				      "manifest_length 0 (a data shard) needs "
				      "manifest_offset and manifest_hash 0, "
				      "not %llu and %016llx",
				      (unsigned long long)off,
				      (unsigned long long)hash);
		*data_shard = true;
		return 0;
	}
	if (len > Z2_MANIFEST_MAX)
		return z2_err(z, R_ManifestTooLarge, z->data_end + 8,
			      "manifest_length %llu exceeds 1 GiB",
			      (unsigned long long)len);
	if (off % Z2_ALIGN || off < Z2_ALIGN)
		return z2_err(z, R_BlobAlignment, z->data_end,
			      "manifest_offset %llu is not a multiple of 4096 "
			      "at or above 4096",
			      (unsigned long long)off);
	if (!tfs_add_u64(off, len, &end) || end > z->data_end)
		return z2_err(z, R_ManifestBounds, z->data_end,
			      "manifest [%llu, +%llu) does not end inside the "
			      "data region [0, %llu)",
			      (unsigned long long)off, (unsigned long long)len,
			      (unsigned long long)z->data_end);
	if (XXH3_64bits(src->data + off, (size_t)len) != hash)
		return z2_err(z, R_ManifestHash, z->data_end + 16,
			      "XXH3-64 of the manifest is %016llx, the footer "
			      "says %016llx",
			      (unsigned long long)XXH3_64bits(src->data + off,
							      (size_t)len),
			      (unsigned long long)hash);
	z->man_off = off;
	z->man_len = len;
	return 0;
}

/* ---- B. deterministic CBOR ----------------------------------------------- */

static int z2_cbor(struct z2_ctx *z, cbor_item_t **root)
{
	static const enum z2_rule rule[] = {
		[TFS_CBOR_OK] = R_CborSyntax,
		[TFS_CBOR_SYNTAX] = R_CborSyntax,
		[TFS_CBOR_DETERMINISM] = R_CborDeterminism,
		[TFS_CBOR_DUPLICATE_KEY] = R_CborDuplicateKey,
		[TFS_CBOR_DEPTH] = R_CborDepth,
	};
	enum tfs_cbor_violation v = TFS_CBOR_OK;
	struct tfs_diag cd;
	uint64_t used;
	int ret;

	tfs_diag_clear(&cd);
	ret = tfs_cbor_check_deterministic(z->src->data + z->man_off,
					   z->man_len, z->man_off, Z2_DEPTH, &v,
					   &cd);
	if (ret == -ENOMEM)
		return tfs_diag_oom(z->d);
	if (ret)
		return z2_err(z, rule[v], cd.offset, "manifest: %s", cd.msg);
	/* libcbor's depth counts containers: one more than our item depth */
	return tfs_cbor_decode(z->src->data + z->man_off, z->man_len,
			       z->man_off, Z2_DEPTH + 1, root, &used, z->d);
}

/* ---- C. schema ----------------------------------------------------------- */

/* a key of a schema map: its text, or NULL when not text (ignored) */
static int z2_key(struct z2_ctx *z, cbor_item_t *k, char **out)
{
	int ret;

	*out = NULL;
	if (!cbor_isa_string(k))
		return 0;
	ret = tfs_cbor_text(k, out, NULL);
	return ret == -ENOMEM ? tfs_diag_oom(z->d) : 0;
}

/* attributes: a map, text keys obeying the name rules (section 3.5) */
static int z2_attributes(struct z2_ctx *z, cbor_item_t *m, const char *where)
{
	struct cbor_pair *pairs;
	char *k, in[TFS_PRINTABLE_MAX + 16];
	size_t i, n, kl;
	int ret;

	if (!cbor_isa_map(m))
		return z2_schema(z, R_Schema, "%s: attributes: not a map",
				 where);
	snprintf(in, sizeof(in), "%s: attributes", where);
	pairs = cbor_map_handle(m);
	n = cbor_map_size(m);
	for (i = 0; i < n; i++) {
		ret = z2_key_name(z, pairs[i].key, in, "key", false, &k, &kl);
		free(k);
		if (ret)
			return ret;
	}
	return 0;
}

static int z2_shard_table(struct z2_ctx *z, cbor_item_t *m)
{
	struct cbor_pair *pairs, *fp;
	struct z2_shard *s;
	char *key;
	size_t i, j, n, fn, kl;
	bool has_size;
	int ret;

	ret = z2_table(z, m, "shards", sizeof(*z->shards), (void **)&z->shards,
		       &pairs, &n);
	if (ret)
		return ret;
	z->has_table = true;
	for (i = 0; i < n; i++) {
		s = &z->shards[z->nshards];
		ret = z2_key_name(z, pairs[i].key, "shards", "shard name", true,
				  &s->name, &kl);
		if (s->name)
			z->nshards++;
		if (ret)
			return ret;
		if (!cbor_isa_map(pairs[i].value))
			return z2_schema(z, R_Schema, "shards: '%s': not a map",
					 s->name);
		fp = cbor_map_handle(pairs[i].value);
		fn = cbor_map_size(pairs[i].value);
		has_size = false;
		for (j = 0; j < fn; j++) {
			ret = z2_key(z, fp[j].key, &key);
			if (ret)
				return ret;
			if (key && strcmp(key, "size") == 0)
				has_size =
					tfs_cbor_uint(fp[j].value, &s->size) &&
					cbor_isa_uint(fp[j].value);
			else if (key && strcmp(key, "digest") == 0 &&
				 cbor_isa_string(fp[j].value)) {
				free(s->digest);
				s->digest = NULL;
				ret = z2_text(z, fp[j].value, &s->digest, NULL);
			}
			free(key);
			if (ret == -ENOMEM)
				return ret;
		}
		if (!has_size || !s->digest)
			return z2_schema(z, R_Schema,
					 "shards: '%s': size (uint) or digest "
					 "(text) missing",
					 s->name);
		if (!z2_digest_syntax_ok(s->digest))
			return z2_schema(z, R_Schema,
					 "shards: '%s': digest '%.80s' is not "
					 "<[a-z0-9]+>:<lowercase hex>",
					 s->name, s->digest);
	}
	return 0;
}

/* one part field; @key is its text */
static int z2_part_field(struct z2_ctx *z, struct z2_part *p, const char *on,
			 const char *key, cbor_item_t *v)
{
	char pn[TFS_PRINTABLE_MAX];
	size_t n = 0;
	int ret = 0;

	if (strcmp(key, "dtype") == 0)
		ret = z2_text(z, v, &p->dtype_s, NULL);
	else if (strcmp(key, "type") == 0)
		ret = z2_text(z, v, &p->type, NULL);
	else if (strcmp(key, "shard") == 0)
		ret = z2_text(z, v, &p->shard, &n);
	else if (strcmp(key, "digest") == 0)
		ret = z2_text(z, v, &p->digest, NULL);
	else if (strcmp(key, "encoding") == 0)
		ret = z2_text(z, v, &p->encoding, NULL);
	else if (strcmp(key, "decoded_length") == 0)
		ret = (p->has_dlen = cbor_isa_uint(v)) ? 0 : -EBADMSG;
	else if (strcmp(key, "blob") == 0)
		ret = (p->has_blob = cbor_isa_array(v) &&
				     cbor_array_size(v) == 2 &&
				     cbor_isa_uint(cbor_array_handle(v)[0]) &&
				     cbor_isa_uint(cbor_array_handle(v)[1]))
			      ? 0
			      : -EBADMSG;
	if (ret == -ENOMEM)
		return ret;
	if (ret)
		return z2_schema(
			z, R_Schema,
			"object '%s' part '%s': %s has the wrong "
			"type%s",
			on, p->name, key,
			strcmp(key, "blob") == 0
				? " (not [offset, length] of two uints)"
				: "");
	if (strcmp(key, "decoded_length") == 0)
		tfs_cbor_uint(v, &p->dlen);
	if (strcmp(key, "blob") == 0) {
		tfs_cbor_uint(cbor_array_handle(v)[0], &p->off);
		tfs_cbor_uint(cbor_array_handle(v)[1], &p->len);
	}
	if (strcmp(key, "dtype") == 0 &&
	    (p->dtype = z2_dtype(p->dtype_s)) == TFS_DTYPE_INVALID)
		return z2_schema(z, R_Schema,
				 "object '%s' part '%s': dtype '%.40s' is not "
				 "a storage type",
				 on, p->name, p->dtype_s);
	if (strcmp(key, "shard") == 0 && !z2_shard_name_ok(p->shard, n))
		return z2_schema(z, R_ShardName,
				 "object '%s' part '%s': shard '%s' is not a "
				 "valid shard name",
				 on, p->name,
				 z2_pn(pn, sizeof(pn), p->shard, n));
	if (strcmp(key, "digest") == 0 && !z2_digest_syntax_ok(p->digest))
		return z2_schema(z, R_Schema,
				 "object '%s' part '%s': digest '%.80s' is not "
				 "<[a-z0-9]+>:<lowercase hex>",
				 on, p->name, p->digest);
	return 0;
}

static int z2_parts(struct z2_ctx *z, struct z2_obj *o, const char *on,
		    cbor_item_t *m)
{
	struct cbor_pair *pairs, *fp;
	struct z2_part *p;
	char *key, in[TFS_PRINTABLE_MAX + 24];
	size_t i, j, n, fn;
	int ret;

	snprintf(in, sizeof(in), "object '%s': parts", on);
	ret = z2_table(z, m, in, sizeof(*o->parts), (void **)&o->parts, &pairs,
		       &n);
	if (ret)
		return ret;
	o->has_parts = true;
	snprintf(in, sizeof(in), "object '%s'", on);
	for (i = 0; i < n; i++) {
		p = &o->parts[o->nparts];
		ret = z2_key_name(z, pairs[i].key, in, "part name", false,
				  &p->name, &p->name_len);
		if (p->name)
			o->nparts++;
		if (ret)
			return ret;
		if (!cbor_isa_map(pairs[i].value))
			return z2_schema(z, R_Schema,
					 "object '%s' part '%s': not a map", on,
					 p->name);
		fp = cbor_map_handle(pairs[i].value);
		fn = cbor_map_size(pairs[i].value);
		for (j = 0; j < fn; j++) {
			ret = z2_key(z, fp[j].key, &key);
			if (!ret && key)
				ret = z2_part_field(z, p, on, key, fp[j].value);
			free(key);
			if (ret)
				return ret;
		}
		if (!p->dtype_s || !p->has_blob)
			return z2_schema(z, R_Schema,
					 "object '%s' part '%s': %s missing",
					 on, p->name,
					 p->dtype_s ? "blob" : "dtype");
		if (!p->encoding != !p->has_dlen)
			return z2_schema(z, R_Schema,
					 "object '%s' part '%s': encoding and "
					 "decoded_length go together",
					 on, p->name);
		p->size = p->encoding ? p->dlen : p->len;
	}
	if (!o->nparts)
		return z2_schema(z, R_Schema, "object '%s': parts is empty",
				 on);
	return 0;
}

static int z2_object(struct z2_ctx *z, struct z2_obj *o, cbor_item_t *m)
{
	struct cbor_pair *pairs;
	char *key, on[TFS_PRINTABLE_MAX];
	size_t i, n, k;
	int ret = 0;

	z2_pn(on, sizeof(on), o->name, o->name_len);
	if (!cbor_isa_map(m))
		return z2_schema(z, R_Schema, "object '%s': not a map", on);
	pairs = cbor_map_handle(m);
	n = cbor_map_size(m);
	for (i = 0; i < n && !ret; i++) {
		cbor_item_t *v = pairs[i].value;

		ret = z2_key(z, pairs[i].key, &key);
		if (ret || !key)
			continue;
		if (strcmp(key, "parts") == 0) {
			ret = z2_parts(z, o, on, v);
		} else if (strcmp(key, "shape") == 0) {
			if (!cbor_isa_array(v)) {
				ret = z2_schema(z, R_Schema,
						"object '%s': shape: not an "
						"array",
						on);
			} else {
				o->ndim = cbor_array_size(v);
				o->shape = calloc(o->ndim ? o->ndim : 1,
						  sizeof(*o->shape));
				if (!o->shape)
					ret = tfs_diag_oom(z->d);
				for (k = 0; !ret && k < o->ndim; k++)
					if (!cbor_isa_uint(
						    cbor_array_handle(v)[k]) ||
					    !tfs_cbor_uint(
						    cbor_array_handle(v)[k],
						    &o->shape[k]))
						ret = z2_schema(
							z, R_Schema,
							"object '%s': shape: "
							"dim %zu is not a uint",
							on, k);
				o->has_shape = true;
			}
		} else if (strcmp(key, "layout") == 0) {
			if (z2_text(z, v, &o->layout, NULL))
				ret = z2_schema(z, R_Schema,
						"object '%s': layout: not text",
						on);
		} else if (strcmp(key, "attributes") == 0) {
			ret = z2_attributes(z, v, on);
			o->attrs = v;
		}
		free(key);
	}
	if (!ret && (!o->has_shape || !o->layout || !o->has_parts))
		ret = z2_schema(z, R_Schema, "object '%s': %s missing", on,
				!o->has_parts	? "parts"
				: !o->has_shape ? "shape"
						: "layout");
	return ret;
}

static int z2_objects(struct z2_ctx *z, cbor_item_t *m)
{
	struct cbor_pair *pairs;
	struct z2_obj *o;
	size_t i, n;
	int ret;

	ret = z2_table(z, m, "objects", sizeof(*z->objs), (void **)&z->objs,
		       &pairs, &n);
	if (ret)
		return ret;
	z->has_objects = true;
	for (i = 0; i < n; i++) {
		o = &z->objs[z->nobjs];
		ret = z2_key_name(z, pairs[i].key, "objects", "name", false,
				  &o->name, &o->name_len);
		if (o->name)
			z->nobjs++;
		if (ret)
			return ret;
		ret = z2_object(z, o, pairs[i].value);
		if (ret)
			return ret;
	}
	return 0;
}

static int z2_schema_root(struct z2_ctx *z, cbor_item_t *root)
{
	struct cbor_pair *pairs;
	char *key;
	size_t i, n;
	int ret = 0;

	if (!cbor_isa_map(root))
		return z2_schema(z, R_Schema, "manifest: root is not a map");
	pairs = cbor_map_handle(root);
	n = cbor_map_size(root);
	for (i = 0; i < n && !ret; i++) {
		ret = z2_key(z, pairs[i].key, &key);
		if (ret || !key)
			continue;
		if (strcmp(key, "shards") == 0) {
			ret = z2_shard_table(z, pairs[i].value);
		} else if (strcmp(key, "objects") == 0) {
			ret = z2_objects(z, pairs[i].value);
		} else if (strcmp(key, "attributes") == 0) {
			ret = z2_attributes(z, pairs[i].value, "root");
			z->root_attrs = pairs[i].value;
		}
		free(key);
	}
	if (!ret && !z->has_objects)
		ret = z2_schema(z, R_Schema, "manifest: 'objects' missing");
	return ret;
}

/* ---- D. semantics -------------------------------------------------------- */

static int z2_part_blob(struct z2_ctx *z, const char *on, struct z2_part *p)
{
	const struct z2_ltype *lt;
	uint64_t end, limit = z->data_end;
	int s;

	if (p->off % Z2_ALIGN || p->off < Z2_ALIGN)
		return z2_err(z, R_BlobAlignment, z->man_off,
			      "object '%s' part '%s': blob offset %llu is not "
			      "a multiple of 4096 at or above 4096",
			      on, p->name, (unsigned long long)p->off);
	if (p->shard) {
		s = z2_shard_index(z, p->shard);
		if (s < 0)
			return z2_err(z, R_ShardRef, z->man_off,
				      "object '%s' part '%s': shard '%s' is "
				      "not in the shard table",
				      on, p->name, p->shard);
		limit = z->shards[s].size - Z2_FOOTER;
	}
	if (!tfs_add_u64(p->off, p->len, &end) || end > limit)
		return z2_err(z, R_BlobBounds, z->man_off,
			      "object '%s' part '%s': blob [%llu, +%llu) does "
			      "not end inside the data region [0, %llu) of %s",
			      on, p->name, (unsigned long long)p->off,
			      (unsigned long long)p->len,
			      (unsigned long long)limit,
			      p->shard ? "its shard" : "the file");
	lt = z2_ltype(p->type);
	if (lt && lt->storage != p->dtype)
		return z2_err(z, R_Schema, z->man_off,
			      "object '%s' part '%s': logical type %s needs "
			      "dtype %s, not %s",
			      on, p->name, lt->name,
			      lt->storage == TFS_DTYPE_UINT8	 ? "u8"
			      : lt->storage == TFS_DTYPE_FLOAT32 ? "f32"
								 : "f64",
			      p->dtype_s);
	return 0;
}

static struct z2_part *z2_find(struct z2_obj *o, const char *name)
{
	size_t i;

	for (i = 0; i < o->nparts; i++)
		if (strcmp(o->parts[i].name, name) == 0)
			return &o->parts[i];
	return NULL;
}

static int z2_dense(struct z2_ctx *z, const char *on, struct z2_obj *o,
		    uint64_t count)
{
	struct z2_part *p = &o->parts[0];
	uint64_t want;
	bool ovf;

	if (o->nparts != 1 || strcmp(p->name, "data") != 0)
		return z2_err(z, R_LayoutRule, z->man_off,
			      "object '%s': a dense object has exactly one "
			      "part, 'data'",
			      on);
	if (!z2_type_bytes(p, count, &want, &ovf)) {
		if (ovf)
			return z2_err(z, R_DenseSize, z->man_off,
				      "object '%s': element count x element "
				      "size overflows 64 bits",
				      on);
		return 0; /* unknown logical type: no size function */
	}
	if (p->size != want)
		return z2_err(z, R_DenseSize, z->man_off,
			      "object '%s': data holds %llu decoded bytes, "
			      "shape x %s needs %llu",
			      on, (unsigned long long)p->size,
			      p->type ? p->type : p->dtype_s,
			      (unsigned long long)want);
	return 0;
}

static int z2_csr(struct z2_ctx *z, const char *on, struct z2_obj *o)
{
	struct z2_part *v = z2_find(o, "values"), *ix = z2_find(o, "indices"),
		       *ip = z2_find(o, "indptr");
	uint64_t w, want, nnz;
	bool ovf;

	if (o->ndim != 2)
		return z2_err(z, R_LayoutRule, z->man_off,
			      "object '%s': zt.sparse_csr/1 needs rank 2, not "
			      "%zu",
			      on, o->ndim);
	if (o->nparts != 3 || !v || !ix || !ip)
		return z2_err(z, R_LayoutRule, z->man_off,
			      "object '%s': zt.sparse_csr/1 needs exactly the "
			      "parts values, indices, indptr",
			      on);
	if ((ix->dtype != TFS_DTYPE_UINT32 && ix->dtype != TFS_DTYPE_UINT64) ||
	    ix->type || ip->dtype != ix->dtype || ip->type)
		return z2_err(z, R_LayoutRule, z->man_off,
			      "object '%s': indices and indptr need the same "
			      "dtype, u32 or u64, and no logical type",
			      on);
	w = tfs_dtype_size(ix->dtype);
	if (!tfs_add_u64(o->shape[0], 1, &want) || !tfs_mul_u64(want, w, &want))
		return z2_err(z, R_Shape, z->man_off,
			      "object '%s': (rows + 1) x %llu overflows 64 "
			      "bits",
			      on, (unsigned long long)w);
	if (ip->size != want)
		return z2_err(z, R_LayoutRule, z->man_off,
			      "object '%s': indptr holds %llu bytes, (rows + "
			      "1) x %llu = %llu",
			      on, (unsigned long long)ip->size,
			      (unsigned long long)w, (unsigned long long)want);
	if (ix->size % w)
		return z2_err(z, R_LayoutRule, z->man_off,
			      "object '%s': indices holds %llu bytes, not a "
			      "multiple of %llu",
			      on, (unsigned long long)ix->size,
			      (unsigned long long)w);
	nnz = ix->size / w;
	if (z2_type_bytes(v, nnz, &want, &ovf) && v->size != want)
		return z2_err(z, R_LayoutRule, z->man_off,
			      "object '%s': values holds %llu bytes, nnz %llu "
			      "x %s needs %llu",
			      on, (unsigned long long)v->size,
			      (unsigned long long)nnz,
			      v->type ? v->type : v->dtype_s,
			      (unsigned long long)want);
	if (ovf)
		return z2_err(z, R_LayoutRule, z->man_off,
			      "object '%s': values: nnz x element size "
			      "overflows 64 bits",
			      on);
	return 0;
}

static int z2_semantics(struct z2_ctx *z)
{
	char on[TFS_PRINTABLE_MAX];
	struct z2_obj *o;
	uint64_t count;
	size_t i, k;
	int ret;

	for (i = 0; i < z->nshards; i++)
		if (z->shards[i].size < Z2_MIN_SIZE)
			return z2_schema(z, R_Schema,
					 "shards: '%s': size %llu is below 48",
					 z->shards[i].name,
					 (unsigned long long)z->shards[i].size);
	for (i = 0; i < z->nobjs; i++) {
		o = &z->objs[i];
		z2_pn(on, sizeof(on), o->name, o->name_len);
		if (o->ndim > Z2_RANK_MAX)
			return z2_schema(z, R_Shape,
					 "object '%s': rank %zu is above 64",
					 on, o->ndim);
		if (!tfs_shape_product(o->shape, o->ndim, &count))
			return z2_schema(z, R_Shape,
					 "object '%s': element count overflows "
					 "64 bits",
					 on);
		for (k = 0; k < o->nparts; k++) {
			ret = z2_part_blob(z, on, &o->parts[k]);
			if (ret)
				return ret;
		}
		if (strcmp(o->layout, "dense") == 0)
			ret = z2_dense(z, on, o, count);
		else if (strcmp(o->layout, Z2_CSR) == 0)
			ret = z2_csr(z, on, o);
		else
			ret = 0; /* other layouts: structural only */
		if (ret)
			return ret;
	}
	return 0;
}

/* one blob reference of the overlap rule */
struct z2_ref {
	int file; /* -1: this file, else a shard index */
	uint64_t off, len;
	const char *what;
};

static int cmp_ref(const void *pa, const void *pb)
{
	const struct z2_ref *a = pa, *b = pb;

	if (a->file != b->file)
		return a->file < b->file ? -1 : 1;
	if (a->off != b->off)
		return a->off < b->off ? -1 : 1;
	return a->len < b->len ? -1 : a->len > b->len;
}

/*
 * Section 8.1 rule 3 over every file the manifest points into (the
 * builder, which sees only this file's served extents, applies
 * TFS_OVERLAP_IDENTICAL to them again): references into one file are equal
 * or disjoint; zero-length ones are left out.
 */
static int z2_overlaps(struct z2_ctx *z)
{
	struct z2_ref *r;
	size_t i, k, n = 1, far = 0;
	int ret = 0;

	for (i = 0; i < z->nobjs; i++)
		n += z->objs[i].nparts;
	r = calloc(n, sizeof(*r));
	if (!r)
		return tfs_diag_oom(z->d);
	n = 0;
	r[n++] = (struct z2_ref){-1, z->man_off, z->man_len, "the manifest"};
	for (i = 0; i < z->nobjs; i++)
		for (k = 0; k < z->objs[i].nparts; k++) {
			struct z2_part *p = &z->objs[i].parts[k];

			if (p->len)
				r[n++] = (struct z2_ref){
					p->shard ? z2_shard_index(z, p->shard)
						 : -1,
					p->off, p->len, z->objs[i].name};
		}
	qsort(r, n, sizeof(*r), cmp_ref);
	for (i = 1; i < n && !ret; i++) {
		if (r[i].file != r[far].file ||
		    r[i].off >= r[far].off + r[far].len) {
			far = i;
			continue;
		}
		if (r[i].off == r[far].off && r[i].len == r[far].len)
			continue;
		ret = z2_err(z, R_BlobOverlap, z->man_off,
			     "blob [%llu, +%llu) of '%.80s' partly overlaps "
			     "[%llu, +%llu) of '%.80s' in %s",
			     (unsigned long long)r[i].off,
			     (unsigned long long)r[i].len, r[i].what,
			     (unsigned long long)r[far].off,
			     (unsigned long long)r[far].len, r[far].what,
			     r[i].file < 0 ? "this file" : "one shard");
		if (r[i].off + r[i].len > r[far].off + r[far].len)
			far = i;
	}
	free(r);
	return ret;
}

/* ---- reading rules: encodings, digests, content -------------------------- */

static int z2_unreadable(struct z2_ctx *z, struct z2_part *p, bool fault,
			 const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* the part is listed but its bytes are not served (the first reason wins) */
static int z2_unreadable(struct z2_ctx *z, struct z2_part *p, bool fault,
			 const char *fmt, ...)
{
	va_list ap;
	int n;

	if (p->unreadable)
		return 0;
	va_start(ap, fmt);
	n = vasprintf(&p->unreadable, fmt, ap);
	va_end(ap);
	if (n < 0) {
		p->unreadable = NULL;
		return tfs_diag_oom(z->d);
	}
	p->fault = fault;
	return 0;
}

/*
 * zt.zstd-seekable/1: zstd frames, then a skippable frame holding the seek
 * table (section 6).  The frames decode as one ordinary zstd stream (the
 * decoder skips the table); the table itself is checked here.  NULL when
 * it is sound, else why not.
 */
static const char *z2_seek_table(const uint8_t *s, uint64_t n, uint64_t decoded)
{
	uint64_t frames, esize, content, start, csum = 0, dsum = 0, first = 0;
	uint64_t i, c, d;
	uint8_t desc;

	if (n < 17)
		return "shorter than a seek table";
	if (tfs_load_le(s + n - 4, 4) != 0x8F92EAB1u)
		return "no seek table magic at the end";
	desc = s[n - 5];
	if (desc & 0x7f)
		return "seek table descriptor has reserved bits set";
	frames = tfs_load_le(s + n - 9, 4);
	esize = desc & 0x80 ? 12 : 8;
	content = frames * esize + 9; /* frames < 2^32: no overflow */
	if (content > n - 8)
		return "seek table larger than the part";
	start = n - 8 - content;
	if (tfs_load_le(s + start, 4) != 0x184D2A5Eu ||
	    tfs_load_le(s + start + 4, 4) != content)
		return "seek table skippable-frame header does not match";
	for (i = 0; i < frames; i++) {
		c = tfs_load_le(s + start + 8 + i * esize, 4);
		d = tfs_load_le(s + start + 12 + i * esize, 4);
		if (d > Z2_SEEK_FRAME_MAX)
			return "a frame decodes to more than 16 MiB";
		if (i == 0)
			first = d;
		else if (i + 1 < frames && d != first)
			return "a non-final frame's size differs from the first";
		csum += c;
		dsum += d;
	}
	if (csum != start)
		return "compressed frame sizes do not add up to the seek table";
	if (dsum != decoded)
		return "decompressed frame sizes do not add up to "
		       "decoded_length";
	return NULL;
}

/*
 * The file of shard @p->shard, by upstream's positional convention: root
 * DIR/STEM.zt, shard N is DIR/STEM-N.zt (a companion file: the core keeps
 * it inside the directory).  Checked as the reference does, cheapest
 * first: its magics, then its size against the table.  A missing file
 * leaves the part unreadable (the root is still a valid image).
 */
static int z2_resolve(struct z2_ctx *z, struct z2_part *p)
{
	const struct z2_shard *sh = &z->shards[z2_shard_index(z, p->shard)];
	const char *base = z->src->path ? strrchr(z->src->path, '/') : NULL;
	const struct tfs_source *in;
	struct tfs_diag cd;
	size_t stem;
	char *file;
	int ret;

	if (!z->src->path)
		return z2_unreadable(z, p, false,
				     "its bytes are in shard '%s', another "
				     "file, and this container has no "
				     "directory to find it in",
				     p->shard);
	base = base ? base + 1 : z->src->path;
	stem = strlen(base);
	if (stem > 3 && strcmp(base + stem - 3, ".zt") == 0)
		stem -= 3;
	if (asprintf(&file, "%.*s-%s.zt", (int)stem, base, p->shard) < 0)
		return tfs_diag_oom(z->d);
	tfs_diag_clear(&cd);
	ret = tfs_builder_open_companion(z->b, file, &p->handle, &cd);
	in = ret ? NULL : tfs_builder_source(z->b, p->handle);
	if (ret == -ENOMEM)
		ret = tfs_diag_oom(z->d);
	else if (ret == -ENOENT) /* the same words locally and remotely */
		ret = z2_unreadable(z, p, false,
				    "its bytes are in shard '%s', whose file "
				    "%s is not beside the root",
				    p->shard, file);
	else if (ret)
		ret = z2_unreadable(z, p, false,
				    "its bytes are in shard '%s' (file %s): %s",
				    p->shard, file, cd.msg);
	else if (in->size != sh->size)
		ret = z2_unreadable(z, p, true,
				    "ShardIdentity: shard '%s' (file %s) has "
				    "%llu bytes, the shard table says %llu",
				    p->shard, file,
				    (unsigned long long)in->size,
				    (unsigned long long)sh->size);
	else if (in->size < Z2_FOOTER || memcmp(in->data, Z2_MAGIC, 8) ||
		 memcmp(in->data + in->size - 8, Z2_MAGIC, 8))
		ret = z2_unreadable(z, p, true,
				    "ShardIdentity: shard '%s' (file %s) is "
				    "not a zTensor 2 file",
				    p->shard, file);
	else
		p->in = in;
	free(file);
	return ret;
}

/* encodings, digests: what the read path gets for part @p */
static int z2_reading(struct z2_ctx *z, struct z2_part *p)
{
	const char *why, *c;
	size_t hex;
	int ret;

	p->in = z->src;
	if (p->shard) {
		ret = z2_resolve(z, p);
		if (ret || p->unreadable)
			return ret;
	}
	if (p->encoding && strcmp(p->encoding, Z2_SEEKABLE) != 0)
		return z2_unreadable(z, p, false,
				     "encoding '%.60s' is not supported",
				     p->encoding);
	if (p->encoding) {
		why = z2_seek_table(p->in->data + p->off, p->len, p->dlen);
		if (why)
			return z2_unreadable(z, p, true, "Encoding: %s", why);
	}
	if (!p->digest)
		return 0;
	c = strchr(p->digest, ':') + 1;
	hex = strlen(c);
	if ((strncmp(p->digest, "xxh3:", 5) == 0 && hex != 16) ||
	    (strncmp(p->digest, "sha256:", 7) == 0 && hex != 64) ||
	    (strncmp(p->digest, "crc32c:", 7) == 0 && hex > 8))
		return z2_unreadable(z, p, true,
				     "Digest: '%.80s' has the wrong number of "
				     "hex digits: it can never match",
				     p->digest);
	return 0;
}

/* bool bytes and the f4 padding nibble of a raw local part (section 4.2) */
static int z2_content(struct z2_ctx *z, const struct z2_obj *o,
		      struct z2_part *p, uint64_t count)
{
	const uint8_t *b = p->in->data + p->off;
	uint64_t i;

	if (p->unreadable || p->encoding || !p->type)
		return 0;
	if (strcmp(p->type, "bool") == 0) {
		for (i = 0; i < p->len; i++)
			if (b[i] > 1)
				return z2_unreadable(
					z, p, true,
					"LayoutData: bool byte %llu is 0x%02X, "
					"not 0 or 1",
					(unsigned long long)i, b[i]);
	} else if (strcmp(p->type, "f4_e2m1") == 0 &&
		   strcmp(o->layout, "dense") == 0 && count % 2 && p->len &&
		   b[p->len - 1] >> 4) {
		return z2_unreadable(z, p, true,
				     "LayoutData: f4_e2m1: the unused high "
				     "nibble of the last byte is 0x%X, not 0",
				     b[p->len - 1] >> 4);
	}
	return 0;
}

static uint64_t z2_index(const uint8_t *b, uint64_t i, unsigned w)
{
	return tfs_load_le(b + i * w, w);
}

/* the CSR data rules (section 5.2) on raw local parts; NULL when sound */
static const char *z2_csr_data(struct z2_ctx *z, const struct z2_obj *o,
			       char *buf, size_t len)
{
	const struct z2_part *ix = NULL, *ip = NULL;
	const uint8_t *pi, *pp;
	uint64_t r, rows = o->shape[0], cols = o->shape[1], nnz, a, e, k;
	unsigned w;
	size_t i;

	for (i = 0; i < o->nparts; i++) {
		if (strcmp(o->parts[i].name, "indices") == 0)
			ix = &o->parts[i];
		if (strcmp(o->parts[i].name, "indptr") == 0)
			ip = &o->parts[i];
	}
	if (ix->unreadable || ip->unreadable || ix->encoding || ip->encoding)
		return NULL; /* not here: the bytes are not ours to read */
	w = tfs_dtype_size(ix->dtype);
	nnz = ix->size / w;
	pi = ix->in->data + ix->off;
	pp = ip->in->data + ip->off;
	if (z2_index(pp, 0, w) != 0)
		return "indptr[0] is not 0";
	if (z2_index(pp, rows, w) != nnz) {
		snprintf(buf, len, "indptr[%llu] is not nnz = %llu",
			 (unsigned long long)rows, (unsigned long long)nnz);
		return buf;
	}
	for (r = 0; r < rows; r++) {
		a = z2_index(pp, r, w);
		e = z2_index(pp, r + 1, w);
		if (e < a || e > nnz) {
			snprintf(buf, len,
				 "indptr decreases or passes nnz "
				 "at row %llu",
				 (unsigned long long)r);
			return buf;
		}
		for (k = a; k < e; k++) {
			if (z2_index(pi, k, w) >= cols) {
				snprintf(buf, len,
					 "column index %llu >= "
					 "cols %llu in row %llu",
					 (unsigned long long)z2_index(pi, k, w),
					 (unsigned long long)cols,
					 (unsigned long long)r);
				return buf;
			}
			if (k > a &&
			    z2_index(pi, k, w) <= z2_index(pi, k - 1, w)) {
				snprintf(buf, len,
					 "column indices of row %llu "
					 "do not strictly increase",
					 (unsigned long long)r);
				return buf;
			}
		}
	}
	return NULL;
}

/* ---- the tree ------------------------------------------------------------ */

/*
 * The dtype and shape a part's file shows: the logical type's own dtype
 * over @shape when it has one and the sizes agree; else the storage dtype
 * over the stored elements (1-D), or bytes when they do not divide.
 */
static void z2_view(const struct z2_part *p, const uint64_t *shape, size_t ndim,
		    struct tfs_tensor_spec *s, uint64_t *dim)
{
	const struct z2_ltype *lt = z2_ltype(p->type);
	uint64_t count, bytes;
	unsigned w = tfs_dtype_size(p->dtype);

	if (shape && (!p->type || lt) &&
	    tfs_shape_product(shape, ndim, &count)) {
		enum tfs_dtype shown = lt ? lt->shown : p->dtype;

		if (tfs_dtype_bytes(shown, count, &bytes) == 0 &&
		    bytes == p->size) {
			tfs_spec_type(s, shown, shape, ndim);
			return;
		}
	}
	*dim = p->size / (p->size % w ? 1 : w);
	tfs_spec_type(s, p->size % w ? TFS_DTYPE_UINT8 : p->dtype, dim, 1);
}

/* the builder's description of part @p of @o (@digest: scratch text) */
static void z2_spec(struct z2_ctx *z, const struct z2_obj *o,
		    const struct z2_part *p, struct tfs_tensor_spec *s,
		    char *digest, size_t dlen)
{
	const char *text = p->digest;

	tfs_spec_name(s, o->name, o->name_len, z->man_off);
	tfs_spec_size(s, p->size);
	tfs_spec_unreadable(s, p->unreadable, p->fault);
	if (p->unreadable && p->shard)
		return; /* nothing of this file */
	tfs_spec_in(s, p->shard ? p->handle : 0);
	tfs_spec_stored(s, p->off, p->len);
	tfs_spec_encoded(s,
			 p->encoding && !p->unreadable ? TFS_ENCODING_ZSTD
						       : TFS_ENCODING_RAW,
			 NULL);
	if (!p->digest || p->unreadable)
		return;
	/* crc32c in the project's spelling; the others as written */
	if (strncmp(p->digest, "crc32c:", 7) == 0) {
		snprintf(digest, dlen, "crc32c:0x%s", p->digest + 7);
		text = digest;
	}
	/* a zTensor digest covers the decoded bytes */
	tfs_spec_digest(s, text, p->encoding != NULL);
}

/* small scalar attributes as user.tensorfs.attr.<key> on @handle */
static int z2_attr_xattrs(struct z2_ctx *z, uint32_t handle, cbor_item_t *m)
{
	return tfs_cbor_attr_xattrs(z->b, handle, m) ? tfs_diag_oom(z->d) : 0;
}

/* xattrs and manifest members of a part's file */
static int z2_decorate_part(struct z2_ctx *z, const struct z2_part *p,
			    uint32_t h)
{
	json_t *extra = tfs_builder_manifest_extra(z->b, h);
	struct tfs_digest dg;
	int ret;

	ret = tfs_builder_set_xattr_str(z->b, h, "ztensor.dtype", p->dtype_s);
	if (!ret && p->type)
		ret = tfs_builder_set_xattr_str(z->b, h, "ztensor.logical_type",
						p->type);
	if (!ret && p->encoding)
		ret = tfs_builder_set_xattr_str(z->b, h, "ztensor.encoding",
						p->encoding);
	if (!ret && p->shard)
		ret = tfs_builder_set_xattr_str(z->b, h, "ztensor.shard",
						p->shard);
	if (!ret && p->digest)
		ret = tfs_builder_set_xattr_str(z->b, h, "ztensor.digest",
						p->digest);
	if (!ret && p->digest && p->unreadable)
		ret = tfs_builder_set_xattr_str(
			z->b, h, "digest_unverified",
			"the bytes are not readable here");
	else if (!ret && p->digest && !tfs_digest_parse(p->digest, &dg) &&
		 dg.alg == TFS_DIGEST_UNKNOWN)
		ret = tfs_builder_set_xattr_str(z->b, h, "digest_unverified",
						"unknown algorithm");
	if (ret || !extra)
		return tfs_diag_oom(z->d);
	json_object_set_new(extra, "ztensor_dtype", json_string(p->dtype_s));
	json_object_set_new(
		extra, "blob",
		json_pack("[I,I]", (json_int_t)p->off, (json_int_t)p->len));
	if (p->type)
		json_object_set_new(extra, "logical_type",
				    json_string(p->type));
	if (p->encoding)
		json_object_set_new(extra, "ztensor_encoding",
				    json_string(p->encoding));
	if (p->shard)
		json_object_set_new(extra, "shard", json_string(p->shard));
	if (p->digest)
		json_object_set_new(extra, "ztensor_digest",
				    json_string(p->digest));
	return 0;
}

/* xattrs and manifest members of an object's file or directory */
static int z2_decorate_obj(struct z2_ctx *z, const struct z2_obj *o, uint32_t h,
			   json_t *obj_attrs)
{
	json_t *extra = tfs_builder_manifest_extra(z->b, h), *ja, *shape;
	size_t i;
	int ret;

	shape = json_array();
	for (i = 0; shape && i < o->ndim; i++)
		json_array_append_new(shape,
				      json_integer((json_int_t)o->shape[i]));
	/* the object's shape, whatever the file shows (section 10) */
	ret = shape ? tfs_builder_set_xattr_json(z->b, h, "ztensor.shape",
						 shape)
		    : -ENOMEM;
	json_decref(shape);
	if (ret || !extra ||
	    tfs_builder_set_xattr_str(z->b, h, "ztensor.layout", o->layout))
		return tfs_diag_oom(z->d);
	json_object_set_new(extra, "layout", json_string(o->layout));
	if (!o->attrs)
		return 0;
	ja = tfs_cbor_to_json(o->attrs);
	if (!ja)
		return tfs_diag_oom(z->d);
	json_object_set(extra, "attributes", ja);
	json_object_setn_new(obj_attrs, o->name, o->name_len, ja);
	return z2_attr_xattrs(z, h, o->attrs);
}

static int z2_emit(struct z2_ctx *z, struct z2_obj *o, json_t *obj_attrs)
{
	char digest[TFS_DIGEST_TEXT_MAX + 8];
	struct tfs_tensor_spec s;
	uint64_t dim;
	uint32_t group, h;
	size_t i;
	int ret;

	if (o->nparts == 1 && strcmp(o->parts[0].name, "data") == 0) {
		z2_spec(z, o, &o->parts[0], &s, digest, sizeof(digest));
		z2_view(&o->parts[0],
			strcmp(o->layout, "dense") == 0 ? o->shape : NULL,
			o->ndim, &s, &dim);
		ret = tfs_builder_add_tensor(z->b, &s, &h, z->d);
		if (!ret)
			ret = z2_decorate_obj(z, o, h, obj_attrs);
		if (!ret)
			ret = z2_decorate_part(z, &o->parts[0], h);
		return ret;
	}
	tfs_spec_tensor(&s, o->name, o->name_len, TFS_DTYPE_INVALID, o->shape,
			o->ndim, z->man_off);
	ret = tfs_builder_add_group(z->b, &s, &group, z->d);
	if (!ret)
		ret = z2_decorate_obj(z, o, group, obj_attrs);
	for (i = 0; i < o->nparts && !ret; i++) {
		struct z2_part *p = &o->parts[i];

		z2_spec(z, o, p, &s, digest, sizeof(digest));
		z2_view(p, NULL, 0, &s, &dim);
		ret = tfs_builder_add_component(z->b, group, p->name, &s, &h,
						z->d);
		if (!ret)
			ret = z2_decorate_part(z, p, h);
	}
	return ret;
}

/* the reading rules of every part, then the tree */
static int z2_build(struct z2_ctx *z)
{
	char buf[160];
	const char *why;
	json_t *obj_attrs = json_object();
	struct z2_obj *o;
	uint64_t count = 0;
	size_t i, k;
	int ret = obj_attrs ? 0 : tfs_diag_oom(z->d);

	for (i = 0; i < z->nobjs && !ret; i++) {
		o = &z->objs[i];
		tfs_shape_product(o->shape, o->ndim, &count); /* checked */
		for (k = 0; k < o->nparts && !ret; k++) {
			ret = z2_reading(z, &o->parts[k]);
			if (!ret)
				ret = z2_content(z, o, &o->parts[k], count);
		}
		if (!ret && strcmp(o->layout, Z2_CSR) == 0 &&
		    (why = z2_csr_data(z, o, buf, sizeof(buf))))
			for (k = 0; k < o->nparts && !ret; k++)
				ret = z2_unreadable(z, &o->parts[k], true,
						    "LayoutData: "
						    "zt.sparse_csr/1: %s",
						    why);
		if (!ret)
			ret = z2_emit(z, o, obj_attrs);
	}
	if (!ret && json_object_size(obj_attrs))
		json_object_set(tfs_builder_metadata(z->b), "object_attributes",
				obj_attrs);
	json_decref(obj_attrs);
	return ret;
}

/* metadata.json and the root xattrs */
static int z2_meta(struct z2_ctx *z, bool data_shard)
{
	json_t *meta = tfs_builder_metadata(z->b), *j, *sh;
	const uint8_t *f = z->src->data + z->src->size - Z2_FOOTER;
	size_t i;
	int ret;

	char hx[20];

	snprintf(hx, sizeof(hx), "%016llx",
		 (unsigned long long)tfs_load_le(f + 16, 8));
	json_object_set_new(meta, "generation", json_string("2"));
	json_object_set_new(
		meta, "footer",
		json_pack("{s:I,s:I,s:s,s:I,s:I}", "manifest_offset",
			  (json_int_t)tfs_load_le(f, 8), "manifest_length",
			  (json_int_t)tfs_load_le(f + 8, 8), "manifest_hash",
			  hx, "version", (json_int_t)2, "reserved",
			  (json_int_t)tfs_load_le(f + 28, 4)));
	if (data_shard)
		json_object_set_new(meta, "data_shard", json_true());
	if (z->has_table) {
		sh = json_object();
		for (i = 0; sh && i < z->nshards; i++)
			json_object_set_new(
				sh, z->shards[i].name,
				json_pack("{s:I,s:s}", "size",
					  (json_int_t)z->shards[i].size,
					  "digest", z->shards[i].digest));
		json_object_set_new(meta, "shards", sh);
	}
	if (z->root_attrs) {
		j = tfs_cbor_to_json(z->root_attrs);
		if (!j)
			return tfs_diag_oom(z->d);
		json_object_set_new(meta, "attributes", j);
	}
	ret = tfs_builder_set_xattr_str(z->b, TFS_BUILDER_ROOT,
					"ztensor.version", "2");
	if (!ret && data_shard)
		ret = tfs_builder_set_xattr_str(z->b, TFS_BUILDER_ROOT,
						"ztensor.data_shard", "true");
	if (ret)
		return tfs_diag_oom(z->d);
	return z2_attr_xattrs(z, TFS_BUILDER_ROOT, z->root_attrs);
}

static int z2_probe(const struct tfs_source *src)
{
	return src->size >= 8 && memcmp(src->data, Z2_MAGIC, 8) == 0 ? 100 : 0;
}

static int z2_load(const struct tfs_source *src, struct tfs_builder *b,
		   struct tfs_diag *d)
{
	struct z2_ctx z = {.src = src, .b = b, .d = d};
	cbor_item_t *root = NULL;
	bool data_shard;
	int ret;

	/* tied weights share a blob; any other overlap is refused */
	tfs_builder_set_overlap_rule(b, TFS_OVERLAP_IDENTICAL);
	ret = z2_container(&z, &data_shard);
	if (ret || data_shard)
		return ret ? ret : z2_meta(&z, true);
	ret = z2_cbor(&z, &root);
	if (!ret)
		ret = z2_schema_root(&z, root);
	if (!ret)
		ret = z2_semantics(&z);
	if (!ret)
		ret = z2_overlaps(&z);
	if (!ret)
		ret = z2_meta(&z, false);
	if (!ret)
		ret = z2_build(&z);
	z2_ctx_free(&z);
	if (root)
		cbor_decref(&root);
	return ret;
}

TFS_FORMAT(ztensor2, "zTensor 2.x (.zt, \\x89ZT2): crates 2.x, Python 2.1.x",
	   .family = "ztensor", .probe = z2_probe, .load = z2_load);
