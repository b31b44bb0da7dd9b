// SPDX-License-Identifier: MIT
/*
 * TensorFlow V2 checkpoints, "tensor bundles" (docs/formats/tf-checkpoint.md,
 * ../shared/specs/tf-checkpoint.md): `PREFIX.index`, an SSTable
 * (src/parse/sstable.c) mapping each tensor's key to a BundleEntryProto
 * (read by src/parse/protobuf.c), the key "" holding the BundleHeaderProto;
 * the bytes in `PREFIX.data-NNNNN-of-MMMMM`, opened as companion files.
 * Every tensor is served zero-copy from its shard with its CRC32C as the
 * digest (checked on first read: EIO on a mismatch).  String tensors are
 * served as stored, their lengths, length checksum and CRC checked at mount
 * and their values in metadata.json.  TF2 keys lose a trailing
 * "/.ATTRIBUTES/VARIABLE_VALUE" unless the short name is a folder of
 * another key; optimizer slots stay under their .OPTIMIZER_SLOT folders.
 * V1 (TensorSlice) checkpoints are refused by name.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/kept_strings.h"
#include "core/strmap.h"
#include "parse/protobuf.h"
#include "parse/sstable.h"
#include "core/builder.h"
#include "core/checked.h"
#include "core/cursor.h"
#include "core/diag.h"
#include "core/digest.h"
#include "core/format.h"
#include "core/names.h"
#include "core/source.h"
#include "common/saved_model.h"

#define TC_INDEX_MAX (1ull << 30)
#define TC_MAX_DIMS 64
#define TC_MAX_SHARDS 1024 /* = TFS_MAX_COMPANIONS */
#define TC_MAX_ENTRIES (1u << 24)
#define TC_MAX_STRINGS 4096 /* decoded strings kept per tensor */
#define TC_SUFFIX "/.ATTRIBUTES/VARIABLE_VALUE"

struct tc_dtype {
	const char *tf;
	enum tfs_dtype dtype;
	bool string; /* DT_STRING */
};

/* types.proto: index = DataType id; NULL tf: unknown */
static const struct tc_dtype tc_dtypes[] = {
	[1] = {"DT_FLOAT", TFS_DTYPE_FLOAT32, false},
	[2] = {"DT_DOUBLE", TFS_DTYPE_FLOAT64, false},
	[3] = {"DT_INT32", TFS_DTYPE_INT32, false},
	[4] = {"DT_UINT8", TFS_DTYPE_UINT8, false},
	[5] = {"DT_INT16", TFS_DTYPE_INT16, false},
	[6] = {"DT_INT8", TFS_DTYPE_INT8, false},
	[7] = {"DT_STRING", TFS_DTYPE_STRING, true},
	[8] = {"DT_COMPLEX64", TFS_DTYPE_COMPLEX64, false},
	[9] = {"DT_INT64", TFS_DTYPE_INT64, false},
	[10] = {"DT_BOOL", TFS_DTYPE_BOOL, false},
	[11] = {"DT_QINT8", TFS_DTYPE_INT8, false},
	[12] = {"DT_QUINT8", TFS_DTYPE_UINT8, false},
	[13] = {"DT_QINT32", TFS_DTYPE_INT32, false},
	[14] = {"DT_BFLOAT16", TFS_DTYPE_BFLOAT16, false},
	[15] = {"DT_QINT16", TFS_DTYPE_INT16, false},
	[16] = {"DT_QUINT16", TFS_DTYPE_UINT16, false},
	[17] = {"DT_UINT16", TFS_DTYPE_UINT16, false},
	[18] = {"DT_COMPLEX128", TFS_DTYPE_COMPLEX128, false},
	[19] = {"DT_HALF", TFS_DTYPE_FLOAT16, false},
	[20] = {"DT_RESOURCE", TFS_DTYPE_INVALID, false},
	[21] = {"DT_VARIANT", TFS_DTYPE_INVALID, false},
	[22] = {"DT_UINT32", TFS_DTYPE_UINT32, false},
	[23] = {"DT_UINT64", TFS_DTYPE_UINT64, false},
	[24] = {"DT_FLOAT8_E5M2", TFS_DTYPE_FLOAT8_E5M2, false},
	[25] = {"DT_FLOAT8_E4M3FN", TFS_DTYPE_FLOAT8_E4M3, false},
	[26] = {"DT_FLOAT8_E4M3FNUZ", TFS_DTYPE_FLOAT8_E4M3FNUZ, false},
	[27] = {"DT_FLOAT8_E4M3B11FNUZ", TFS_DTYPE_INVALID, false},
	[28] = {"DT_FLOAT8_E5M2FNUZ", TFS_DTYPE_FLOAT8_E5M2FNUZ, false},
	/* one value per byte in TF's layout */
	[29] = {"DT_INT4", TFS_DTYPE_INT8, false},
	[30] = {"DT_UINT4", TFS_DTYPE_UINT8, false},
	[31] = {"DT_INT2", TFS_DTYPE_INT8, false},
	[32] = {"DT_UINT2", TFS_DTYPE_UINT8, false},
};

struct tc_entry {
	char *key;
	size_t key_len;
	uint64_t at; /* the value's offset (or its block's) */
	const struct tc_dtype *dt;
	uint64_t shape[TC_MAX_DIMS];
	size_t ndim;
	uint64_t shard, offset, size;
	uint32_t crc; /* unmasked */
	bool has_crc, sliced;
	uint32_t source;
};

struct tc {
	const struct tfs_source *src;
	struct tfs_builder *b;
	struct tfs_diag *d;
	struct tfs_pb_limits lim;
	uint64_t nshards, header_at, producer;
	bool have_header;
	struct tc_entry *e;
	size_t ne, cap;
	uint8_t *prev;
	size_t prev_len, prev_cap;
	bool have_prev;
	uint32_t *shard_src;
	json_t *meta, *strings, *skipped;
	struct tfs_strmap dirs; /* every folder of every key */
	struct tfs_kept_strings dir_names; /* its keys (the map borrows) */
	char *prefix; /* PREFIX of PREFIX.index, or NULL */
};

static int oom(struct tc *z)
{
	return tfs_diag_oom(z->d);
}

/* ---- probe -------------------------------------------------------------- */

static bool is_saved_model(const struct tfs_source *src)
{
	const char *base;

	if (!src->path)
		return false;
	base = strrchr(src->path, '/');
	base = base ? base + 1 : src->path;
	return strcmp(base, "saved_model.pb") == 0;
}

/*
 * A SavedModel's graph (its variables: variables/variables.index) or a
 * TF1 .meta (no tensors, refused): claimed by name
 */
static bool graph_only(const struct tfs_source *src)
{
	return is_saved_model(src) || tfs_source_name_ends(src, ".meta");
}

/*
 * A SavedModel folder is one model, mounted through its saved_model.pb:
 * its variables/ and fingerprint.pb are its own files, not containers of
 * the folder.
 */
static bool tc_covers(const struct tfs_source *src, const char *name)
{
	return is_saved_model(src) && (strncmp(name, "variables/", 10) == 0 ||
				       strcmp(name, "fingerprint.pb") == 0);
}

static int tc_probe(const struct tfs_source *src)
{
	/*
	 * The magic is at the end: a remote container's tail is fetched
	 * only for a name that says bundle index (every probe runs on every
	 * container)
	 */
	bool look = !src->path || !tfs_source_is_url(src->path) ||
		    tfs_source_name_ends(src, ".index");

	if (look && tfs_sst_has_magic(src->data, src->size))
		return 100;
	if (graph_only(src))
		return 95;
	/* a damaged .index: refused by this reader, naming why */
	if (tfs_source_name_ends(src, ".index"))
		return 50;
	return 0;
}

/* ---- messages ----------------------------------------------------------- */

#define WANTED(rows) (rows), sizeof(rows) / sizeof(*(rows))

/*
 * The fields read, by the wire type of their declared type: another one is
 * refused (tfs_pb_want).  The header's field 1 is not here: any other wire
 * type there is a V1 checkpoint; bad_consumers is read packed or not.
 */
static const struct tfs_pb_wanted header_fields[] = {
	{2, TFS_PB_VARINT, "BundleHeaderProto.endianness"},
	{3, TFS_PB_LEN, "BundleHeaderProto.version"},
};
static const struct tfs_pb_wanted version_fields[] = {
	{1, TFS_PB_VARINT, "VersionDef.producer"},
	{2, TFS_PB_VARINT, "VersionDef.min_consumer"},
};
static const struct tfs_pb_wanted shape_fields[] = {
	{2, TFS_PB_LEN, "TensorShapeProto.dim"},
	{3, TFS_PB_VARINT, "TensorShapeProto.unknown_rank"},
};
static const struct tfs_pb_wanted dim_fields[] = {
	{1, TFS_PB_VARINT, "TensorShapeProto.Dim.size"},
};
static const struct tfs_pb_wanted entry_fields[] = {
	{1, TFS_PB_VARINT, "BundleEntryProto.dtype"},
	{2, TFS_PB_LEN, "BundleEntryProto.shape"},
	{3, TFS_PB_VARINT, "BundleEntryProto.shard_id"},
	{4, TFS_PB_VARINT, "BundleEntryProto.offset"},
	{5, TFS_PB_VARINT, "BundleEntryProto.size"},
	{6, TFS_PB_I32, "BundleEntryProto.crc32c"},
	{7, TFS_PB_LEN, "BundleEntryProto.slices"},
};

/* VersionDef: producer, min_consumer; refused when we are a bad consumer */
static int read_version(struct tc *z, const struct tfs_pb_field *vf,
			uint64_t *min_consumer)
{
	struct tfs_pb_values bad;
	struct tfs_pb_field g;
	struct tfs_cursor v;
	uint64_t x;
	int ret;

	tfs_pb_sub(vf, &v);
	while ((ret = tfs_pb_next_in(&v, "VersionDef", WANTED(version_fields),
				     &g, z->d)) == 1) {
		if (g.number == 1) {
			z->producer = g.v;
		} else if (g.number == 2) {
			*min_consumer = g.v;
		} else if (g.number == 3) {
			/* repeated int32: packed or not */
			ret = tfs_pb_values_init(&bad, &g, TFS_PB_SCALAR_VARINT,
						 "VersionDef", "bad_consumers",
						 z->d);
			if (ret)
				return ret;
			while (tfs_pb_values_next(&bad, &x))
				if (x == 1)
					return tfs_diag_at(
						z->d, -ENOTSUP, g.value_at,
						"header: version: consumer 1 "
						"is a bad consumer");
		}
	}
	return ret;
}

static int read_header(struct tc *z, const uint8_t *p, uint64_t len,
		       uint64_t at)
{
	struct tfs_pb_field f;
	struct tfs_cursor c;
	uint64_t min_consumer = 0;
	int ret;

	z->header_at = at;
	z->nshards = 1;
	tfs_cursor_init(&c, p, len, at);
	/* V1: field 1 is a length-delimited SavedTensorSlices message */
	if (len && p[0] == 0x0a)
		return tfs_diag_at(z->d, -ENOTSUP, at,
				   "header: TensorFlow V1 checkpoint "
				   "(TensorSlice format) not supported");
	while ((ret = tfs_pb_next_in(&c, "BundleHeaderProto",
				     WANTED(header_fields), &f, z->d)) == 1) {
		if (f.number == 1 && f.wire == TFS_PB_VARINT) {
			z->nshards = f.v;
		} else if (f.number == 1) {
			return tfs_diag_at(z->d, -ENOTSUP, f.at,
					   "header: TensorFlow V1 checkpoint "
					   "(TensorSlice format) not "
					   "supported");
		} else if (f.number == 2) {
			if (f.v != 0)
				return tfs_diag_at(
					z->d, -ENOTSUP, f.value_at,
					"header: endianness %" PRIu64
					": big-endian bundle not supported",
					f.v);
		} else if (f.number == 3) {
			ret = read_version(z, &f, &min_consumer);
			if (ret)
				return ret;
			if (min_consumer > 1 && min_consumer < (1ull << 31))
				return tfs_diag_at(
					z->d, -ENOTSUP, f.value_at,
					"header: version: min_consumer "
					"%" PRIu64 " (we read 1)",
					min_consumer);
		}
	}
	if (ret)
		return ret;
	if (z->nshards < 1 || z->nshards > TC_MAX_SHARDS)
		return tfs_diag_at(z->d, -EBADMSG, at,
				   "header: num_shards %" PRId64 " (1 to %u)",
				   (int64_t)z->nshards, TC_MAX_SHARDS);
	z->have_header = true;
	return 0;
}

/* entry @e's field at @at holds @v, refused: "@what @v" */
static int bad_value(struct tc *z, const struct tc_entry *e, uint64_t at,
		     const char *what, uint64_t v)
{
	return tfs_diag_at(z->d, -EBADMSG, at, "tensor '%s': %s %" PRId64,
			   TFS_SHOWN(e->key, e->key_len), what, (int64_t)v);
}

static int read_shape(struct tc *z, struct tc_entry *e,
		      const struct tfs_pb_field *sf)
{
	struct tfs_pb_field f, g;
	struct tfs_cursor c, v;
	int ret;

	tfs_pb_sub(sf, &c);
	while ((ret = tfs_pb_next_in(&c, "TensorShapeProto",
				     WANTED(shape_fields), &f, z->d)) == 1) {
		if (f.number == 3 && f.v)
			return tfs_diag_at(z->d, -EBADMSG, f.at,
					   "tensor '%s': shape: unknown rank",
					   TFS_SHOWN(e->key, e->key_len));
		if (f.number != 2)
			continue;
		if (e->ndim == TC_MAX_DIMS)
			return tfs_diag_at(z->d, -E2BIG, f.at,
					   "tensor '%s': shape: more than %d "
					   "dimensions",
					   TFS_SHOWN(e->key, e->key_len),
					   TC_MAX_DIMS);
		e->shape[e->ndim] = 0;
		tfs_pb_sub(&f, &v);
		while ((ret = tfs_pb_next_in(&v, "TensorShapeProto.Dim",
					     WANTED(dim_fields), &g, z->d)) ==
		       1) {
			if (g.number != 1)
				continue;
			if (g.v > (uint64_t)INT64_MAX)
				return bad_value(z, e, g.value_at,
						 "shape: negative dimension",
						 g.v);
			e->shape[e->ndim] = g.v;
		}
		if (ret)
			return ret;
		e->ndim++;
	}
	return ret;
}

static int read_entry(struct tc *z, struct tc_entry *e, const uint8_t *p,
		      uint64_t len, uint64_t at)
{
	struct tfs_pb_field f;
	struct tfs_cursor c;
	int ret;

	tfs_cursor_init(&c, p, len, at);
	while ((ret = tfs_pb_next_in(&c, "BundleEntryProto",
				     WANTED(entry_fields), &f, z->d)) == 1) {
		switch (f.number) {
		case 1:
			if (f.v >= sizeof(tc_dtypes) / sizeof(*tc_dtypes) ||
			    !tc_dtypes[f.v].tf)
				return bad_value(z, e, f.value_at,
						 "unknown dtype", f.v);
			e->dt = &tc_dtypes[f.v];
			break;
		case 2:
			ret = tfs_pb_enter(&z->lim, f.value_at,
					   "TensorShapeProto", z->d);
			ret = ret ? ret : read_shape(z, e, &f);
			tfs_pb_leave(&z->lim);
			if (ret)
				return ret;
			break;
		case 3:
			e->shard = f.v;
			break;
		case 4:
		case 5:
			if (f.v > (uint64_t)INT64_MAX)
				return tfs_diag_at(
					z->d, -EBADMSG, f.value_at,
					"tensor '%s': negative %s",
					TFS_SHOWN(e->key, e->key_len),
					f.number == 4 ? "offset" : "size");
			if (f.number == 4)
				e->offset = f.v;
			else
				e->size = f.v;
			break;
		case 6:
			e->crc = tfs_sst_unmask((uint32_t)f.v);
			e->has_crc = true;
			break;
		case 7:
			e->sliced = true;
			break;
		default:
			break;
		}
	}
	if (ret)
		return ret;
	if (!e->dt)
		return tfs_diag_at(z->d, -EBADMSG, at,
				   "tensor '%s': unknown dtype 0 (DT_INVALID)",
				   TFS_SHOWN(e->key, e->key_len));
	return 0;
}

/* ---- the table ---------------------------------------------------------- */

static int entry(struct tc *z, const struct tfs_sst_iter *it)
{
	struct tc_entry *e;
	size_t n = (size_t)it->key_len;
	int cmp;

	/* keys strictly increasing, bytewise, across the whole table */
	if (z->have_prev) {
		size_t m = n < z->prev_len ? n : z->prev_len;

		cmp = m ? memcmp(z->prev, it->key, m) : 0;
		if (cmp > 0 || (cmp == 0 && n <= z->prev_len))
			return tfs_diag_at(z->d, -EBADMSG, it->at,
					   "data block: key '%s': keys not "
					   "strictly increasing",
					   TFS_SHOWN((const char *)it->key, n));
	} else if (n != 0) {
		return tfs_diag_at(z->d, -EBADMSG, it->at,
				   "data block: first key is not the empty "
				   "header key");
	}
	if (n > z->prev_cap) {
		uint8_t *p = realloc(z->prev, n);

		if (!p)
			return oom(z);
		z->prev = p;
		z->prev_cap = n;
	}
	if (n)
		memcpy(z->prev, it->key, n);
	z->prev_len = n;
	if (!z->have_prev) {
		z->have_prev = true;
		return read_header(z, it->value, it->value_len, it->value_at);
	}
	z->have_prev = true;
	/* a slice of a partitioned tensor (EncodeTensorNameSlice) */
	if (it->key[0] == 0)
		return 0;
	if (z->ne == TC_MAX_ENTRIES)
		return tfs_diag_at(z->d, -E2BIG, it->at, "more than %u tensors",
				   TC_MAX_ENTRIES);
	if (z->ne == z->cap) {
		size_t c = z->cap ? z->cap * 2 : 64;
		struct tc_entry *p = reallocarray(z->e, c, sizeof(*p));

		if (!p)
			return oom(z);
		z->e = p;
		z->cap = c;
	}
	e = &z->e[z->ne];
	memset(e, 0, sizeof(*e));
	e->key = malloc(n + 1);
	if (!e->key)
		return oom(z);
	memcpy(e->key, it->key, n);
	e->key[n] = 0;
	e->key_len = n;
	e->at = it->value_at;
	z->ne++;
	return read_entry(z, e, it->value, it->value_len, it->value_at);
}

static int read_table(struct tc *z)
{
	const uint8_t *p = z->src->data;
	uint64_t size = z->src->size;
	struct tfs_sst_handle meta, index, h;
	struct tfs_sst_block ib = {0}, db = {0};
	struct tfs_sst_iter ii = {0}, di = {0};
	int ret;

	ret = tfs_sst_footer(p, size, &meta, &index, z->d);
	ret = ret ? ret
		  : tfs_sst_block_read(p, size, &index, "index block", &ib,
				       z->d);
	ret = ret ? ret : tfs_sst_iter_init(&ii, &ib, "index block", z->d);
	while (!ret && (ret = tfs_sst_iter_next(&ii, z->d)) == 1) {
		ret = tfs_sst_handle_decode(ii.value, ii.value_len, ii.value_at,
					    &h, z->d);
		ret = ret ? ret
			  : tfs_sst_block_read(p, size, &h, "data block", &db,
					       z->d);
		ret = ret ? ret
			  : tfs_sst_iter_init(&di, &db, "data block", z->d);
		while (!ret && (ret = tfs_sst_iter_next(&di, z->d)) == 1)
			ret = entry(z, &di);
		tfs_sst_iter_free(&di);
		tfs_sst_block_free(&db);
	}
	tfs_sst_iter_free(&ii);
	tfs_sst_block_free(&ib);
	if (!ret && !z->have_header)
		ret = tfs_diag_at(z->d, -EBADMSG, index.offset,
				  "table: no entries (no header key)");
	return ret;
}

/* ---- shards ------------------------------------------------------------- */

static int open_shards(struct tc *z)
{
	char name[4096];
	uint64_t i;
	int ret;

	z->shard_src = calloc((size_t)z->nshards, sizeof(*z->shard_src));
	if (!z->shard_src)
		return oom(z);
	for (i = 0; i < z->nshards; i++) {
		snprintf(name, sizeof(name),
			 "%s.data-%05" PRIu64 "-of-%05" PRIu64, z->prefix, i,
			 z->nshards);
		ret = tfs_builder_open_companion_at(
			z->b, name, z->header_at, 0, &z->shard_src[i], z->d,
			"header: num_shards %" PRIu64
			": missing shard %" PRIu64,
			z->nshards, i);
		if (ret)
			return ret;
	}
	return 0;
}

/* ---- strings ------------------------------------------------------------ */

static json_t *string_json(const uint8_t *s, uint64_t len)
{
	struct tfs_digest_ctx *c;
	struct tfs_digest dg;
	char hex[TFS_DIGEST_TEXT_MAX];
	uint64_t i;
	bool plain = len <= 64;

	for (i = 0; plain && i < len; i++)
		plain = s[i] >= 0x20 && s[i] < 0x7f;
	if (plain)
		return json_pack("{s:s%}", "utf8", (const char *)s,
				 (size_t)len);
	if (tfs_digest_begin(&c, TFS_DIGEST_SHA256) ||
	    tfs_digest_update(c, s, (size_t)len) || tfs_digest_final(c, &dg))
		return NULL;
	tfs_digest_format(&dg, hex, sizeof(hex));
	return json_pack("{s:I,s:s}", "len", (json_int_t)len, "sha256",
			 hex + 7);
}

/*
 * A DT_STRING region: n varint lengths, the masked CRC32C of the lengths
 * (as u32 LE, u64 when larger), the bytes; its size exact and the entry's
 * CRC over lengths, length checksum and bytes.  The values into @out.
 */
static int check_strings(struct tc *z, struct tc_entry *e, uint64_t count,
			 json_t *out)
{
	const struct tfs_source *s = tfs_builder_source(z->b, e->source);
	const uint8_t *p = s->data + e->offset;
	struct tfs_cursor c;
	uint64_t i, total = 0, len, at;
	uint32_t lcrc = 0, crc, stored;
	const uint8_t *lp, *bytes;
	int ret;

	if (count == 0 && e->size == 0)
		return 0;
	tfs_cursor_init(&c, p, e->size, 0);
	for (i = 0; i < count; i++) {
		uint8_t b8[8];

		if (tfs_cursor_varint(&c, &len))
			return tfs_diag_at(
				z->d, -EBADMSG, e->at,
				"tensor '%s': string %" PRIu64
				": bad length varint in its %" PRIu64 " bytes",
				TFS_SHOWN(e->key, e->key_len), i, e->size);
		if (!tfs_add_u64(total, len, &total))
			return tfs_diag_at(z->d, -EBADMSG, e->at,
					   "tensor '%s': string lengths "
					   "overflow",
					   TFS_SHOWN(e->key, e->key_len));
		memcpy(b8, &len, 8); /* little-endian hosts only */
		lcrc = tfs_crc32c(lcrc, b8, len > 0xffffffffu ? 8 : 4);
	}
	lp = p;
	at = c.pos;
	if (tfs_cursor_bytes(&c, 4, &bytes))
		return tfs_diag_at(z->d, -EBADMSG, e->at,
				   "tensor '%s': no length checksum in its "
				   "%" PRIu64 " bytes",
				   TFS_SHOWN(e->key, e->key_len), e->size);
	stored = (uint32_t)tfs_load_le(bytes, 4);
	if (tfs_sst_unmask(stored) != lcrc)
		return tfs_diag_at(z->d, -EBADMSG, e->at,
				   "tensor '%s': string length checksum "
				   "mismatch",
				   TFS_SHOWN(e->key, e->key_len));
	if (tfs_cursor_remaining(&c) != total)
		return tfs_diag_at(
			z->d, -EBADMSG, e->at,
			"tensor '%s': size %" PRIu64 " != %" PRIu64
			" bytes of lengths + 4 + %" PRIu64 " string bytes",
			TFS_SHOWN(e->key, e->key_len), e->size, at, total);
	/* the entry's CRC: the lengths again, the checksum, the bytes */
	crc = lcrc;
	crc = tfs_crc32c(crc, bytes, 4);
	crc = tfs_crc32c(crc, p + c.pos, (size_t)total);
	if (e->has_crc && crc != e->crc)
		return tfs_diag_at(z->d, -EBADMSG, e->at,
				   "tensor '%s': tensor crc32c mismatch "
				   "(0x%08x, entry says 0x%08x)",
				   TFS_SHOWN(e->key, e->key_len), crc, e->crc);
	/* the values, for metadata.json */
	tfs_cursor_init(&c, lp, at, 0);
	bytes = p + at + 4;
	for (i = 0; i < count && i < TC_MAX_STRINGS; i++) {
		json_t *v;

		ret = tfs_cursor_varint(&c, &len);
		if (ret)
			return ret;
		v = string_json(bytes, len);
		if (!v || json_array_append_new(out, v))
			return oom(z);
		bytes += len;
	}
	return 0;
}

/* ---- names -------------------------------------------------------------- */

/*
 * every folder of every key, the TF2 suffix taken off: "a", "a/b" for
 * "a/b/c" and "a/b/c/.ATTRIBUTES/VARIABLE_VALUE"
 */
static int collect_dirs(struct tc *z)
{
	size_t i, k, n, s = strlen(TC_SUFFIX);

	for (i = 0; i < z->ne; i++) {
		char *key = z->e[i].key;

		n = z->e[i].key_len;
		if (n > s && memcmp(key + n - s, TC_SUFFIX, s) == 0)
			n -= s;
		for (k = 0; k < n; k++) {
			bool have;
			char *dir;

			if (key[k] != '/')
				continue;
			key[k] = 0;
			have = tfs_strmap_get(&z->dirs, key, NULL);
			dir = have ? NULL : strdup(key);
			key[k] = '/';
			if (have)
				continue;
			if (!dir || tfs_kept_add(&z->dir_names, dir) ||
			    tfs_strmap_put(&z->dirs, dir, 0))
				return oom(z);
		}
	}
	return 0;
}

/* ---- tensors ------------------------------------------------------------ */

static int add_tensor(struct tc *z, struct tc_entry *e)
{
	char digest[32];
	struct tfs_tensor_spec s;
	const char **comp = NULL;
	char *disp = NULL, *c;
	size_t dlen = e->key_len, ncomp = 0, k = strlen(TC_SUFFIX);
	uint64_t count, want, ssize;
	json_t *strs = NULL;
	uint32_t h;
	int ret;

	if (!e->dt->dtype) {
		/* resource, variant, e4m3b11fnuz: listed, not served */
		return json_array_append_new(z->skipped,
					     json_pack("{s:s%,s:s}", "key",
						       e->key, e->key_len,
						       "dtype", e->dt->tf))
			       ? oom(z)
			       : 0;
	}
	if (e->sliced)
		return json_array_append_new(
			       z->skipped,
			       json_pack("{s:s%,s:s}", "key", e->key,
					 e->key_len, "why",
					 "partitioned, not supported"))
			       ? oom(z)
			       : 0;
	if (!tfs_shape_product(e->shape, e->ndim, &count) ||
	    count > (uint64_t)INT64_MAX)
		return tfs_diag_at(z->d, -EBADMSG, e->at,
				   "tensor '%s': element count overflows",
				   TFS_SHOWN(e->key, e->key_len));
	if (e->shard >= z->nshards)
		return tfs_diag_at(z->d, -EBADMSG, e->at,
				   "tensor '%s': shard_id %" PRIu64
				   " out of range (%" PRIu64 " shards)",
				   TFS_SHOWN(e->key, e->key_len), e->shard,
				   z->nshards);
	if (!e->dt->string) {
		if (tfs_dtype_bytes(e->dt->dtype, count, &want) ||
		    want != e->size)
			return tfs_diag_at(z->d, -EBADMSG, e->at,
					   "tensor '%s': size %" PRIu64
					   " != %" PRIu64 " elements x %u "
					   "bytes",
					   TFS_SHOWN(e->key, e->key_len),
					   e->size, count,
					   tfs_dtype_size(e->dt->dtype));
	}
	tfs_spec_tensor(&s, e->key, e->key_len, e->dt->dtype, e->shape, e->ndim,
			e->at);
	if (z->shard_src) {
		e->source = z->shard_src[e->shard];
		ssize = tfs_builder_source(z->b, e->source)->size;
		if (!tfs_range_ok(e->offset, e->size, ssize))
			return tfs_diag_at(z->d, -EBADMSG, e->at,
					   "tensor '%s': bytes %" PRIu64
					   "..+%" PRIu64 " past the end of its "
					   "shard %" PRIu64 " (%" PRIu64
					   " bytes)",
					   TFS_SHOWN(e->key, e->key_len),
					   e->offset, e->size, e->shard, ssize);
		tfs_spec_in(&s, e->source);
		tfs_spec_raw(&s, e->offset, e->size);
		if (e->dt->string) {
			strs = json_array();
			if (!strs)
				return oom(z);
			ret = check_strings(z, e, count, strs);
			if (!ret &&
			    json_object_set_new(z->strings, e->key, strs))
				ret = oom(z);
			if (ret) {
				if (ret != -ENOMEM)
					json_decref(strs);
				return ret;
			}
		} else if (e->has_crc) {
			snprintf(digest, sizeof(digest), "crc32c:0x%08X",
				 e->crc);
			tfs_spec_digest(&s, digest, false);
		}
	} else {
		tfs_spec_size(&s, e->size);
		tfs_spec_unreadable(&s,
				    "shard files: the index was not read "
				    "from a file named PREFIX.index, so its "
				    ".data shards are not found",
				    false);
	}
	/* the display name: without the TF2 suffix unless a folder */
	if (dlen > k && memcmp(e->key + dlen - k, TC_SUFFIX, k) == 0) {
		e->key[dlen - k] = 0;
		if (!tfs_strmap_get(&z->dirs, e->key, NULL))
			dlen -= k;
		e->key[e->key_len - k] = '/';
	}
	disp = malloc(dlen + 1);
	comp = calloc(dlen + 2, sizeof(*comp));
	if (!disp || !comp) {
		ret = oom(z);
		goto out;
	}
	memcpy(disp, e->key, dlen);
	disp[dlen] = 0;
	for (c = disp;;) {
		char *sl = memchr(c, '/', dlen - (size_t)(c - disp));

		comp[ncomp++] = c;
		if (!sl)
			break;
		*sl = 0;
		c = sl + 1;
	}
	tfs_spec_path(&s, comp, ncomp);
	ret = tfs_builder_add_tensor(z->b, &s, &h, z->d);
	if (!ret &&
	    (tfs_builder_set_xattr(z->b, h, "key", e->key, e->key_len) ||
	     tfs_builder_set_xattr_str(z->b, h, "tf.dtype", e->dt->tf) ||
	     (e->dt->string &&
	      tfs_builder_set_xattr_str(z->b, h, "string_encoding",
					"tf_bundle"))))
		ret = oom(z);
out:
	free(comp);
	free(disp);
	return ret;
}

/* the last path component of a checkpoint path (written on another host) */
static json_t *base_json(const char *v, size_t n)
{
	const char *p = memrchr(v, '/', n);

	if (p) {
		n -= (size_t)(p + 1 - v);
		v = p + 1;
	}
	return json_stringn(v, n);
}

/*
 * The `checkpoint` file beside the index (a text CheckpointState, a hint
 * only): its fields into metadata.json, paths by basename, and whether
 * this bundle is the latest.  Missing or unreadable: nothing.
 */
static int read_state(struct tc *z)
{
	const struct tfs_source *s;
	const char *p, *end, *nl;
	json_t *st, *all;
	uint32_t h;

	if (tfs_builder_open_companion(z->b, "checkpoint", &h, z->d)) {
		int ret = z->d->err;

		tfs_diag_clear(z->d);
		return ret == -ENOMEM ? oom(z) : 0;
	}
	s = tfs_builder_source(z->b, h);
	if (!s || s->size > (1u << 20))
		return 0;
	st = json_object();
	all = json_array();
	if (!st || !all ||
	    json_object_set_new(st, "all_model_checkpoint_paths", all)) {
		json_decref(st);
		return oom(z);
	}
	for (p = (const char *)s->data, end = p + s->size; p < end;
	     p = nl + 1) {
		const char *colon, *v, *ve;
		json_t *val;
		char key[64];

		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		colon = memchr(p, ':', (size_t)(nl - p));
		if (!colon || colon - p >= (ptrdiff_t)sizeof(key))
			continue;
		memcpy(key, p, (size_t)(colon - p));
		key[colon - p] = 0;
		for (v = colon + 1; v < nl && *v == ' '; v++)
			;
		for (ve = nl; ve > v && (ve[-1] == ' ' || ve[-1] == '\r');)
			ve--;
		if (ve - v >= 2 && *v == '"' && ve[-1] == '"') {
			v++;
			ve--;
		}
		if (strstr(key, "_path"))
			val = base_json(v, (size_t)(ve - v));
		else
			val = json_stringn(v, (size_t)(ve - v));
		if (!val)
			continue; /* not UTF-8: left out */
		if (strcmp(key, "all_model_checkpoint_paths") == 0) {
			if (json_array_append_new(all, val))
				goto oom;
		} else if (json_object_set_new(st, key, val)) {
			goto oom;
		}
	}
	if (z->prefix &&
	    json_object_set_new(
		    st, "latest",
		    json_boolean(json_string_value(json_object_get(
					 st, "model_checkpoint_path")) &&
				 strcmp(json_string_value(json_object_get(
						st, "model_checkpoint_path")),
					z->prefix) == 0)))
		goto oom;
	if (json_object_set_new(z->meta, "checkpoint_state", st))
		return oom(z);
	return 0;
oom:
	json_decref(st);
	return oom(z);
}

/*
 * A SavedModel's saved_model.pb: its signatures and function names into
 * metadata.json ("saved_model"), then its variables/variables.index read
 * as the bundle (z->src, z->prefix); none: z->src NULL, no tensors.
 */
static int saved_model(struct tc *z)
{
	json_t *o = tfs_saved_model_json(z->src->data, z->src->size);
	uint32_t h;
	int ret;

	if (!o || json_object_set_new(z->meta, "saved_model", o))
		return oom(z);
	ret = tfs_builder_open_companion(z->b, "variables/variables.index", &h,
					 z->d);
	if (ret == -ENOENT) {
		tfs_diag_clear(z->d);
		z->src = NULL;
		return json_object_set_new(z->meta, "num_shards",
					   json_integer(0))
			       ? oom(z)
			       : 0;
	}
	if (ret)
		return ret;
	z->src = tfs_builder_source(z->b, h);
	z->prefix = strdup("variables/variables");
	if (!z->src || !z->prefix)
		return oom(z);
	return 0;
}

static int tc_load(const struct tfs_source *src, struct tfs_builder *b,
		   struct tfs_diag *d)
{
	struct tc z = {.src = src, .b = b, .d = d};
	char num[64];
	size_t i;
	int ret;

	z.lim.max_depth = 8;
	z.lim.max_messages = UINT64_MAX;
	tfs_strmap_init(&z.dirs);
	z.meta = tfs_builder_metadata(b);
	z.strings = json_object();
	z.skipped = json_array();
	if (!z.strings || !z.skipped) {
		ret = oom(&z);
		goto out;
	}
	if (is_saved_model(src) && !tfs_sst_has_magic(src->data, src->size)) {
		ret = saved_model(&z);
		if (ret)
			goto out;
	} else if (graph_only(src) &&
		   !tfs_sst_has_magic(src->data, src->size)) {
		ret = tfs_diag_at(d, -ENOTSUP, 0,
				  "file: a MetaGraphDef holds no tensors: "
				  "mount the checkpoint's .index");
		goto out;
	}
	if (!z.src) {
		ret = 0; /* a SavedModel without variables */
		goto out;
	}
	if (z.src->size > TC_INDEX_MAX) {
		ret = tfs_diag_at(d, -E2BIG, 0,
				  "index: %" PRIu64 " bytes, above the limit "
				  "of 1 GiB",
				  z.src->size);
		goto out;
	}
	ret = read_table(&z);
	if (ret && z.prefix) /* of a SavedModel: the index failed */
		ret = tfs_diag_refer(d, ret, d->offset, "%s.index", z.prefix);
	if (ret)
		goto out;
	if (z.prefix) {
		ret = open_shards(&z);
		if (ret)
			goto out;
	} else if (src->path) {
		const char *base = strrchr(src->path, '/');

		base = base ? base + 1 : src->path;
		if (tfs_source_name_ends(src, ".index")) {
			z.prefix = strndup(base, strlen(base) - 6);
			if (!z.prefix) {
				ret = oom(&z);
				goto out;
			}
		} else {
			/* a table without .index: V1 has no header like
			 * ours; anything else has no shards to find */
			ret = tfs_diag_at(d, -ENOTSUP, 0,
					  "file: not named PREFIX.index, so "
					  "not a V2 bundle's index (a "
					  "TensorFlow V1 checkpoint?)");
			goto out;
		}
		ret = open_shards(&z);
		ret = ret ? ret : read_state(&z);
		if (ret)
			goto out;
	}
	ret = collect_dirs(&z);
	for (i = 0; !ret && i < z.ne; i++)
		ret = add_tensor(&z, &z.e[i]);
	if (ret)
		goto out;
	if (json_object_set_new(z.meta, "num_shards",
				json_integer((json_int_t)z.nshards)) ||
	    json_object_set_new(z.meta, "producer",
				json_integer((json_int_t)z.producer)) ||
	    (json_object_size(z.strings) &&
	     json_object_set(z.meta, "string_tensors", z.strings)) ||
	    (json_array_size(z.skipped) &&
	     json_object_set(z.meta, "not_served", z.skipped))) {
		ret = oom(&z);
		goto out;
	}
	snprintf(num, sizeof(num), "V2 tensor bundle, %" PRIu64 " shard%s",
		 z.nshards, z.nshards == 1 ? "" : "s");
	if (tfs_builder_set_xattr_str(b, TFS_BUILDER_ROOT, "info.generation",
				      num))
		ret = oom(&z);
out:
	json_decref(z.strings);
	json_decref(z.skipped);
	for (i = 0; i < z.ne; i++)
		free(z.e[i].key);
	free(z.e);
	free(z.prev);
	free(z.shard_src);
	free(z.prefix);
	tfs_strmap_free(&z.dirs);
	tfs_kept_free(&z.dir_names);
	return ret;
}

TFS_FORMAT(tf_checkpoint,
	   "TensorFlow V2 checkpoint (tensor bundle: .index + "
	   ".data-* shards)",
	   .family = "tf-checkpoint", .probe = tc_probe, .load = tc_load,
	   .covers = tc_covers);
