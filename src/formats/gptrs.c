// SPDX-License-Identifier: MIT
/*
 * gpt-rs checkpoints ("GPTRSCHK") and tensor archives ("GPTRSTEN").
 * Spec: shared/specs/gptrs.md; docs/formats/gptrs.md says what we show.
 *
 * Every integer is little-endian and nothing is aligned inside the headers.
 *
 *   version 2   magic, version, [config_len, config JSON], index_len, index,
 *               data.  The index is a u32 tensor_count and, per tensor,
 *               name_len u32, name, [base_id 16 bytes], rank u32,
 *               rank x u64 dims, dtype_tag u32, reserved u8, offset_abs u64,
 *               byte_len u64.  [...] only in checkpoints.
 *   version 1   magic, version, [config_len, config JSON], tensor_count, and
 *               per tensor the same fields without base_id and offset_abs,
 *               the byte_len bytes of data following each entry inline.
 *
 * Two writer generations share version 2: one packs the payloads right
 * after the index, the other aligns each to 64 bytes.  We always follow
 * offset_abs and only report which layout we saw.  A short-lived version 2
 * whose index was bincode (u64 counts) is recognised by the test the spec
 * gives (a non-zero count whose next four bytes are zero, where a real
 * index has the first name_len >= 1) and refused by name, as the reference
 * readers refuse it.
 *
 * The index is parsed through a cursor that ends at index_len, so no entry
 * can reach past it; counts and ranks are checked against the bytes left
 * before anything is allocated.  Checkpoint names must be ASCII and a
 * non-zero base id must equal the first 16 bytes of BLAKE3(name), as in the
 * reference reader.  Duplicate names are refused (the reference keeps the
 * last one silently, which would hide a tensor).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/names.h"
#include "core/blake3.h"
#include "core/builder.h"
#include "core/checked.h"
#include "core/cursor.h"
#include "core/diag.h"
#include "core/dtype.h"
#include "core/format.h"
#include "core/source.h"

#define GPTRS_MAGIC_CKPT "GPTRSCHK"
#define GPTRS_MAGIC_ARCHIVE "GPTRSTEN"
#define GPTRS_MAGIC_PREFIX "GPTRS"
#define GPTRS_ALIGN 64
#define GPTRS_BASE_ID_LEN 16
/* a config is a few hundred bytes; more than this is not a gpt-rs config */
#define GPTRS_CONFIG_MAX (64ull << 20)
/* the smallest entry (empty name, rank 0) without base id */
#define GPTRS_V1_ENTRY_MIN (4 + 4 + 4 + 1 + 8)
#define GPTRS_V2_ENTRY_MIN (4 + 4 + 4 + 1 + 8 + 8)

struct gptrs_ctx {
	const struct tfs_source *src;
	struct tfs_builder *b;
	struct tfs_diag *d;
	bool checkpoint;
	uint32_t version;
	const char *region;  /* what the entry cursor walks: for messages */
	uint64_t data_start; /* v2: first byte after the index */
	uint64_t *dims;	     /* one entry's dims, reused */
	uint64_t dims_cap;
	uint32_t count; /* entries read */
	uint64_t prev_end; /* v2 payload layout detection */
	bool packed, aligned;
	uint32_t ids_verified, ids_absent;
};

struct gptrs_entry {
	uint32_t index;
	uint64_t at; /* absolute offset of name_len */
	uint32_t name_len;
	const uint8_t *name;
	uint64_t name_at;
	const uint8_t *base_id; /* GPTRS_BASE_ID_LEN bytes, or NULL */
	uint64_t base_id_at;
	uint32_t rank;
	enum tfs_dtype dtype;
	uint8_t reserved;
	uint64_t offset, offset_at;
	uint64_t length, length_at;
};

static int gptrs_probe(const struct tfs_source *src)
{
	if (src->size < 8)
		return 0;
	if (memcmp(src->data, GPTRS_MAGIC_CKPT, 8) == 0 ||
	    memcmp(src->data, GPTRS_MAGIC_ARCHIVE, 8) == 0)
		return 100;
	/* a damaged magic still gets a precise refusal from us */
	if (memcmp(src->data, GPTRS_MAGIC_PREFIX, 5) == 0)
		return 10;
	return 0;
}

static enum tfs_dtype gptrs_dtype(uint32_t tag)
{
	switch (tag) {
	case 0:
		return TFS_DTYPE_FLOAT32;
	case 1:
		return TFS_DTYPE_FLOAT16;
	case 2:
		return TFS_DTYPE_BFLOAT16;
	case 3:
		return TFS_DTYPE_INT32;
	default:
		return TFS_DTYPE_INVALID;
	}
}

static void hex(char *out, const uint8_t *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
	out[2 * n] = '\0';
}

static int oom(struct gptrs_ctx *z)
{
	return tfs_diag_oom(z->d);
}

/* a field of entry @e that the rest of the index (or file) cannot hold */
static int truncated(struct gptrs_ctx *z, const struct tfs_cursor *c,
		     const struct gptrs_entry *e, const char *field,
		     uint64_t need)
{
	return tfs_diag_at(z->d, -EBADMSG, tfs_cursor_offset(c),
			   "entry %u: %s: needs %llu bytes, only %llu left "
			   "in the %s",
			   e->index, field, (unsigned long long)need,
			   (unsigned long long)tfs_cursor_remaining(c),
			   z->region);
}

static int entry_u32(struct gptrs_ctx *z, struct tfs_cursor *c,
		     const struct gptrs_entry *e, const char *field,
		     uint32_t *v)
{
	return tfs_cursor_u32le(c, v) ? truncated(z, c, e, field, 4) : 0;
}

static int entry_u64(struct gptrs_ctx *z, struct tfs_cursor *c,
		     const struct gptrs_entry *e, const char *field,
		     uint64_t *v)
{
	return tfs_cursor_u64le(c, v) ? truncated(z, c, e, field, 8) : 0;
}

/* UTF-8 always; ASCII for v2 checkpoints (the base id needs it) */
static int check_name(struct gptrs_ctx *z, const struct gptrs_entry *e)
{
	bool ascii = z->checkpoint && z->version == 2;
	size_t i = 0, n;

	while (i < e->name_len) {
		if (ascii && e->name[i] >= 0x80)
			return tfs_diag_at(z->d, -EBADMSG, e->name_at + i,
					   "entry %u: name: byte 0x%02x is not "
					   "ASCII (checkpoint names must be)",
					   e->index, e->name[i]);
		n = tfs_utf8_seq(e->name + i, e->name_len - i);
		if (!n)
			return tfs_diag_at(z->d, -EBADMSG, e->name_at + i,
					   "entry %u: name: not valid UTF-8",
					   e->index);
		i += n;
	}
	return 0;
}

static int check_base_id(struct gptrs_ctx *z, const struct gptrs_entry *e)
{
	static const uint8_t zero[GPTRS_BASE_ID_LEN];
	uint8_t digest[TFS_BLAKE3_OUT_LEN];
	char stored[2 * GPTRS_BASE_ID_LEN + 1], want[sizeof(stored)];

	if (memcmp(e->base_id, zero, GPTRS_BASE_ID_LEN) == 0) {
		z->ids_absent++;
		return 0;
	}
	tfs_blake3(e->name, e->name_len, digest);
	if (memcmp(e->base_id, digest, GPTRS_BASE_ID_LEN) == 0) {
		z->ids_verified++;
		return 0;
	}
	hex(stored, e->base_id, GPTRS_BASE_ID_LEN);
	hex(want, digest, GPTRS_BASE_ID_LEN);
	return tfs_diag_at(z->d, -EBADMSG, e->base_id_at,
			   "entry %u: base_id: stored %s, but BLAKE3 of the "
			   "name '%s' starts %s",
			   e->index, stored,
			   TFS_SHOWN((const char *)e->name, e->name_len), want);
}

/* rank, dims: @z->dims holds them afterwards */
static int read_dims(struct gptrs_ctx *z, struct tfs_cursor *c,
		     struct gptrs_entry *e)
{
	uint64_t rank_at = tfs_cursor_offset(c), need, *dims;
	uint32_t i;
	int ret;

	ret = entry_u32(z, c, e, "rank", &e->rank);
	if (ret)
		return ret;
	if (!tfs_mul_u64(e->rank, 8, &need) || tfs_cursor_need(c, need))
		return tfs_diag_at(
			z->d, -EBADMSG, rank_at,
			"entry %u: rank: %u dims need %llu bytes, "
			"only %llu left in the %s",
			e->index, e->rank, (unsigned long long)e->rank * 8,
			(unsigned long long)tfs_cursor_remaining(c), z->region);
	if (e->rank > z->dims_cap) {
		/* bounded: rank x 8 fits in the bytes left */
		dims = realloc(z->dims, (size_t)e->rank * sizeof(*dims));
		if (!dims)
			return oom(z);
		z->dims = dims;
		z->dims_cap = e->rank;
	}
	for (i = 0; i < e->rank; i++)
		tfs_cursor_u64le(c, &z->dims[i]);
	return 0;
}

/* byte_len against the shape, then the payload range */
static int check_extent(struct gptrs_ctx *z, const struct gptrs_entry *e,
			uint64_t dims_at)
{
	uint32_t esize = tfs_dtype_size(e->dtype);
	uint64_t count, bytes;

	if (!tfs_shape_product(z->dims, e->rank, &count) ||
	    !tfs_mul_u64(count, esize, &bytes))
		return tfs_diag_at(z->d, -EBADMSG, dims_at,
				   "entry %u: dims: element count x %u bytes "
				   "overflows 64 bits",
				   e->index, esize);
	if (bytes != e->length)
		return tfs_diag_at(z->d, -EBADMSG, e->length_at,
				   "entry %u: byte_len: %llu does not match "
				   "the shape x %u-byte %s = %llu",
				   e->index, (unsigned long long)e->length,
				   esize, tfs_dtype_name(e->dtype),
				   (unsigned long long)bytes);
	if (!tfs_range_ok(e->offset, e->length, z->src->size))
		return tfs_diag_at(z->d, -EBADMSG, e->offset_at,
				   "entry %u: %s: payload [%llu, +%llu) "
				   "extends past the end of the file (%llu "
				   "bytes)",
				   e->index,
				   z->version == 2 ? "offset_abs" : "byte_len",
				   (unsigned long long)e->offset,
				   (unsigned long long)e->length,
				   (unsigned long long)z->src->size);
	return 0;
}

/* one entry, v1 or v2; leaves the cursor after it (v1: after its data) */
static int read_entry(struct gptrs_ctx *z, struct tfs_cursor *c,
		      struct gptrs_entry *e)
{
	uint64_t dims_at, tag_at;
	uint32_t tag = 0;
	int ret;

	e->at = tfs_cursor_offset(c);
	ret = entry_u32(z, c, e, "name_len", &e->name_len);
	if (ret)
		return ret;
	e->name_at = tfs_cursor_offset(c);
	if (tfs_cursor_bytes(c, e->name_len, &e->name))
		return tfs_diag_at(z->d, -EBADMSG, e->at,
				   "entry %u: name_len: %u bytes do not fit in "
				   "the %llu left in the %s",
				   e->index, e->name_len,
				   (unsigned long long)tfs_cursor_remaining(c),
				   z->region);
	ret = check_name(z, e);
	if (ret)
		return ret;
	e->base_id = NULL;
	if (z->checkpoint && z->version == 2) {
		e->base_id_at = tfs_cursor_offset(c);
		if (tfs_cursor_bytes(c, GPTRS_BASE_ID_LEN, &e->base_id))
			return truncated(z, c, e, "base_id", GPTRS_BASE_ID_LEN);
	}
	ret = read_dims(z, c, e);
	if (ret)
		return ret;
	dims_at = tfs_cursor_offset(c) - 8ull * e->rank;
	tag_at = tfs_cursor_offset(c);
	ret = entry_u32(z, c, e, "dtype_tag", &tag);
	if (ret)
		return ret;
	e->dtype = gptrs_dtype(tag);
	if (e->dtype == TFS_DTYPE_INVALID)
		return tfs_diag_at(z->d, -EBADMSG, tag_at,
				   "entry %u: dtype_tag: unknown dtype tag %u "
				   "(0 f32, 1 f16, 2 bf16, 3 i32)",
				   e->index, tag);
	if (tfs_cursor_u8(c, &e->reserved))
		return truncated(z, c, e, "reserved", 1);
	if (z->version == 2) {
		e->offset_at = tfs_cursor_offset(c);
		ret = entry_u64(z, c, e, "offset_abs", &e->offset);
		e->length_at = tfs_cursor_offset(c);
		ret = ret ? ret : entry_u64(z, c, e, "byte_len", &e->length);
		if (ret)
			return ret;
	} else {
		e->length_at = e->offset_at = tfs_cursor_offset(c);
		ret = entry_u64(z, c, e, "byte_len", &e->length);
		if (ret)
			return ret;
		e->offset = tfs_cursor_offset(c);
	}
	ret = check_extent(z, e, dims_at);
	if (!ret && z->version == 1)
		tfs_cursor_skip(c, e->length); /* in range: checked above */
	if (!ret && e->base_id)
		ret = check_base_id(z, e);
	return ret;
}

static int track_layout(struct gptrs_ctx *z, const struct gptrs_entry *e)
{
	uint64_t up;

	if (e->offset != z->prev_end)
		z->packed = false;
	if (!tfs_add_u64(z->prev_end, GPTRS_ALIGN - 1, &up) ||
	    e->offset != up / GPTRS_ALIGN * GPTRS_ALIGN)
		z->aligned = false;
	z->prev_end = e->offset + e->length; /* in range: checked */
	if (e->offset < z->data_start && e->length &&
	    tfs_builder_warn(z->b, e->offset_at,
			     "entry %u: offset_abs %llu lies before the data "
			     "region (which starts at %llu)",
			     e->index, (unsigned long long)e->offset,
			     (unsigned long long)z->data_start))
		return oom(z);
	return 0;
}

/* describe entry @e (its dims in z->dims) to the builder */
static int add_entry(struct gptrs_ctx *z, const struct gptrs_entry *e)
{
	struct tfs_tensor_spec spec;
	char num[8], id[2 * GPTRS_BASE_ID_LEN + 1];
	json_t *extra;
	uint32_t h;
	int ret;

	tfs_spec_tensor(&spec, (const char *)e->name, e->name_len, e->dtype,
			e->rank ? z->dims : NULL, e->rank, e->at);
	tfs_spec_raw(&spec, e->offset, e->length);
	ret = tfs_builder_add_tensor(z->b, &spec, &h, z->d);
	if (ret)
		return ret;
	extra = tfs_builder_manifest_extra(z->b, h);
	if (!extra)
		return oom(z);
	snprintf(num, sizeof(num), "%u", e->reserved);
	ret = tfs_builder_set_xattr_str(z->b, h, "gptrs.reserved", num);
	json_object_set_new(extra, "reserved", json_integer(e->reserved));
	if (!ret && e->base_id) {
		hex(id, e->base_id, GPTRS_BASE_ID_LEN);
		ret = tfs_builder_set_xattr_str(z->b, h, "gptrs.base_id", id);
		json_object_set_new(extra, "base_id", json_string(id));
	}
	return ret ? oom(z) : 0;
}

/*
 * tensor_count and the entries that follow it in @c.  @min is the smallest
 * possible entry, so a count the rest cannot hold is refused before the
 * name table is allocated.
 */
static int read_entries(struct gptrs_ctx *z, struct tfs_cursor *c, uint64_t min)
{
	uint64_t count_at = tfs_cursor_offset(c), need;
	struct gptrs_entry e;
	uint32_t count, i;
	int ret;

	if (tfs_cursor_u32le(c, &count))
		return tfs_diag_at(z->d, -EBADMSG, count_at,
				   "tensor_count: needs 4 bytes, only %llu "
				   "left in the %s",
				   (unsigned long long)tfs_cursor_remaining(c),
				   z->region);
	if (z->version == 2 && count > 0 && c->len >= 8 &&
	    tfs_load_le(c->p + 4, 4) == 0)
		return tfs_diag_at(z->d, -ENOTSUP, count_at,
				   "index: unsupported (bincode index): the "
				   "v2-bincode layout of Dec 2025 has u64 "
				   "counts; no gpt-rs reader accepts it");
	need = (uint64_t)count * min;
	if (need > tfs_cursor_remaining(c))
		return tfs_diag_at(z->d, -EBADMSG, count_at,
				   "tensor_count: %u entries need at least "
				   "%llu bytes, only %llu left in the %s",
				   count, (unsigned long long)need,
				   (unsigned long long)tfs_cursor_remaining(c),
				   z->region);
	json_object_set_new(tfs_builder_metadata(z->b), "tensor_count",
			    json_integer(count));
	for (i = 0; i < count; i++) {
		memset(&e, 0, sizeof(e));
		e.index = i;
		ret = read_entry(z, c, &e);
		if (ret)
			return ret;
		if (z->version == 2)
			ret = track_layout(z, &e);
		if (!ret)
			ret = add_entry(z, &e);
		if (ret)
			return ret;
		z->count++;
	}
	return 0;
}

/* bytes after the last entry: the reference ignores them, so do we */
static int warn_trailing(struct gptrs_ctx *z, const struct tfs_cursor *c)
{
	if (!tfs_cursor_remaining(c))
		return 0;
	if (tfs_builder_warn(z->b, tfs_cursor_offset(c),
			     "%s: %llu bytes after the last entry (at byte "
			     "%llu) are ignored",
			     z->region,
			     (unsigned long long)tfs_cursor_remaining(c),
			     (unsigned long long)tfs_cursor_offset(c)))
		return oom(z);
	return 0;
}

/* a u32 length (@field) and the bytes it counts: the config, the index */
static int read_section(struct gptrs_ctx *z, struct tfs_cursor *c,
			const char *field, const char *what, uint32_t *len,
			const uint8_t **p)
{
	uint64_t len_at = tfs_cursor_offset(c);

	if (tfs_cursor_u32le(c, len))
		return tfs_diag_at(z->d, -EBADMSG, len_at,
				   "%s: the file ends before it", field);
	if (tfs_cursor_bytes(c, *len, p))
		return tfs_diag_at(z->d, -EBADMSG, len_at,
				   "%s: %u bytes of %s do not fit in the %llu "
				   "left in the file",
				   field, *len, what,
				   (unsigned long long)tfs_cursor_remaining(c));
	return 0;
}

/* config_len and the config JSON of a checkpoint (both versions) */
static int read_config(struct gptrs_ctx *z, struct tfs_cursor *c)
{
	json_t *meta = tfs_builder_metadata(z->b), *cfg;
	uint64_t len_at = tfs_cursor_offset(c), at = len_at + 4;
	const uint8_t *p;
	json_error_t err;
	uint32_t len;
	int ret;

	ret = read_section(z, c, "config_len", "config", &len, &p);
	if (ret)
		return ret;
	if (len > GPTRS_CONFIG_MAX)
		return tfs_diag_at(z->d, -E2BIG, len_at,
				   "config_len: %u bytes exceeds the %llu-byte "
				   "limit",
				   len, GPTRS_CONFIG_MAX);
	cfg = json_loadb((const char *)p, len, 0, &err);
	if (!cfg)
		return tfs_diag_at(z->d, -EBADMSG,
				   at + ((uint64_t)err.position <= len
						 ? (uint64_t)err.position
						 : len),
				   "config: not valid JSON: %s", err.text);
	if (!json_is_object(cfg)) {
		json_decref(cfg);
		return tfs_diag_at(z->d, -EBADMSG, at,
				   "config: the JSON is not an object");
	}
	json_object_set_new(meta, "config_len", json_integer(len));
	json_object_set_new(meta, "config", cfg);
	if (tfs_builder_add_meta_file(z->b, "config.json", p, len))
		return oom(z);
	return 0;
}

static int load_v2(struct gptrs_ctx *z, struct tfs_cursor *c)
{
	json_t *meta = tfs_builder_metadata(z->b);
	uint64_t start = tfs_cursor_offset(c) + 4;
	struct tfs_cursor ic;
	const uint8_t *p;
	uint32_t len;
	int ret;

	ret = read_section(z, c, "index_len", "index", &len, &p);
	if (ret)
		return ret;
	z->data_start = z->prev_end = start + len;
	z->packed = z->aligned = true;
	z->region = "index";
	json_object_set_new(meta, "index_len", json_integer(len));
	json_object_set_new(meta, "data_start", json_integer(z->data_start));
	tfs_cursor_init(&ic, p, len, start);
	ret = read_entries(z, &ic,
			   GPTRS_V2_ENTRY_MIN +
				   (z->checkpoint ? GPTRS_BASE_ID_LEN : 0));
	if (!ret)
		ret = warn_trailing(z, &ic);
	if (ret)
		return ret;
	json_object_set_new(meta, "payload_layout",
			    json_string(!z->count    ? "empty"
					: z->packed  ? "packed"
					: z->aligned ? "aligned64"
						     : "other"));
	if (z->checkpoint)
		json_object_set_new(meta, "base_ids",
				    json_pack("{s:I,s:I}", "verified",
					      (json_int_t)z->ids_verified,
					      "absent",
					      (json_int_t)z->ids_absent));
	return 0;
}

static int load_v1(struct gptrs_ctx *z, struct tfs_cursor *c)
{
	int ret;

	z->region = "file";
	ret = read_entries(z, c, GPTRS_V1_ENTRY_MIN);
	if (ret)
		return ret;
	json_object_set_new(tfs_builder_metadata(z->b), "payload_layout",
			    json_string("inline"));
	return warn_trailing(z, c);
}

static int gptrs_load(const struct tfs_source *src, struct tfs_builder *b,
		      struct tfs_diag *d)
{
	struct gptrs_ctx z = {.src = src, .b = b, .d = d};
	json_t *meta = tfs_builder_metadata(b);
	struct tfs_cursor c;
	char magic[9] = "", num[16];
	int ret;

	tfs_cursor_init(&c, src->data, src->size, 0);
	if (src->size >= 8)
		memcpy(magic, src->data, 8);
	if (strcmp(magic, GPTRS_MAGIC_CKPT) == 0)
		z.checkpoint = true;
	else if (strcmp(magic, GPTRS_MAGIC_ARCHIVE) != 0)
		return tfs_diag_at(d, -EBADMSG, 0,
				   "magic: neither GPTRSCHK nor GPTRSTEN");
	tfs_cursor_skip(&c, 8);
	if (tfs_cursor_u32le(&c, &z.version)) {
		ret = tfs_diag_at(d, -EBADMSG, 8,
				  "version: the file ends before it");
		goto out;
	}
	if (z.version != 1 && z.version != 2) {
		ret = tfs_diag_at(d, -ENOTSUP, 8,
				  "version: %u is not supported (1 and 2 are)",
				  z.version);
		goto out;
	}
	json_object_set_new(meta, "magic", json_string(magic));
	json_object_set_new(
		meta, "container",
		json_string(z.checkpoint ? "checkpoint" : "tensor archive"));
	json_object_set_new(meta, "version", json_integer(z.version));
	ret = z.checkpoint ? read_config(&z, &c) : 0;
	if (!ret)
		ret = z.version == 2 ? load_v2(&z, &c) : load_v1(&z, &c);
	if (ret)
		goto out;
	snprintf(num, sizeof(num), "%u", z.version);
	if (tfs_builder_set_xattr_str(b, TFS_BUILDER_ROOT, "gptrs.magic",
				      magic) ||
	    tfs_builder_set_xattr_str(b, TFS_BUILDER_ROOT, "gptrs.version",
				      num))
		ret = oom(&z);
out:
	free(z.dims);
	return ret;
}

TFS_FORMAT(gptrs,
	   "gpt-rs checkpoint (GPTRSCHK) / tensor archive "
	   "(GPTRSTEN), versions 1 and 2",
	   .probe = gptrs_probe, .load = gptrs_load);
