// SPDX-License-Identifier: MIT
/*
 * Burnpack (.bpk), the native checkpoint format of the Burn framework.
 * Spec: shared/specs/burnpack.md (CBOR subset: shared/specs/cbor.md).
 *
 * Layout: "NRUB" (4E 52 55 42), u16 LE version, u32 LE metadata size ms,
 * ms bytes of CBOR metadata, then the data section.  The CBOR maps each
 * tensor name to {dtype, shape, data_offsets [start, end), param_id?};
 * the offsets are relative to the data section's start, which is
 *   - the next 256-byte boundary after the metadata (burn 0.20 and later),
 *   - the byte right after the metadata (burn 0.19: "packed", unaligned).
 * No field says which.  bpk_layout() decides with the rules of spec section
 * 3 (the decision table is also in docs/formats/burnpack.md), and
 * bpk_check_extents() refuses the file, naming both layouts, when the chosen
 * one puts a tensor past the end of the file.
 *
 * Design decisions:
 *   - the CBOR is decoded with libcbor through tfs_cbor_decode().  Before
 *     that a raw, bounds-checked walk (raw_skip) counts the items and the
 *     tensors, so the 100,000-tensor limit and an item cap hold before
 *     libcbor allocates one node per item;
 *   - libcbor's tree has no byte offsets; the same raw walk finds where each
 *     descriptor and field starts, so every message names its byte offset;
 *   - every descriptor is parsed and every check that needs the whole list
 *     (layout, ranges, overlaps) runs before the first tensor reaches the
 *     builder;
 *   - tensors are added in name (CBOR map) order; the file stores them in
 *     write order, which the offsets in the manifest show;
 *   - Flex32 is served as float32 and {"Bool":"U32"} as uint32 (what the
 *     bytes are); QFloat as an opaque "qfloat" blob.  The Burn dtype is kept
 *     in user.tensorfs.burnpack.dtype;
 *   - param_id is a u64 (real files use all 64 bits), more than a JSON
 *     integer holds exactly in jansson, so the manifest carries it as a
 *     decimal string.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/common/dtype_labels.h"
#include "core/builder.h"
#include "parse/cbor.h"
#include "core/checked.h"
#include "core/cursor.h"
#include "core/diag.h"
#include "core/names.h"
#include "core/dtype.h"
#include "core/format.h"
#include "core/source.h"

#define BPK_MAGIC "NRUB"
#define BPK_HEADER_SIZE 10u
#define BPK_ALIGN 256u
#define BPK_VERSION_MAX 1u
/* the reference reader's limits (spec section 8) */
#define BPK_METADATA_MAX (100ull << 20)
#define BPK_TENSORS_MAX 100000u
#define BPK_FILE_MAX (100ull << 30)
#define BPK_TENSOR_BYTES_MAX (10ull << 30)
/*
 * Ours: libcbor takes ~70 bytes per item, so 100 MiB of one-byte items
 * would cost ~7 GB.  A real descriptor is ~15 items (~30 with a QFloat
 * scheme); 4 M items allow 40 per tensor at the tensor limit.
 */
#define BPK_CBOR_ITEMS_MAX 4000000u
/* the raw walk must accept what tfs_cbor_decode accepts (tags add a level) */
#define BPK_RAW_DEPTH_MAX (2 * TFS_CBOR_MAX_DEPTH + 2)
/* a value shown as an xattr only up to this size; always in metadata.json */
#define BPK_XATTR_VALUE_MAX 4096u
/* a metadata key shown as xattr user.tensorfs.burnpack.metadata.<key> */
#define BPK_XATTR_KEY_MAX 200u
#define BPK_NAME_PRINT_MAX 64u

enum bpk_layout { BPK_ALIGNED, BPK_PACKED };

struct bpk_tensor {
	char *name;
	size_t name_len;
	uint64_t desc_off;    /* its descriptor (the map value) */
	uint64_t offsets_off; /* its data_offsets value */
	enum tfs_dtype dtype;
	uint32_t elem_size;   /* 0 for QFloat (opaque) */
	char native[16];      /* the Burn dtype: "F32", "Bool(U32)", ... */
	cbor_item_t *qscheme; /* QFloat's scheme (borrowed from the root) */
	uint64_t *shape;
	size_t ndim;
	uint64_t start, end; /* data_offsets, relative to data_start */
	bool has_param_id;
	uint64_t param_id;
};

struct bpk_ctx {
	const struct tfs_source *src;
	struct tfs_builder *b;
	struct tfs_diag *d;
	uint32_t version;
	uint64_t ms;	   /* metadata size */
	uint64_t meta_end; /* P = 10 + ms */
	uint64_t data_start;
	enum bpk_layout layout;
	const char *layout_rule; /* the rule that decided (metadata.json) */
	const char *layout_why;	 /* the same, said in an error message */
	cbor_item_t *root;	 /* untagged root map */
	struct bpk_tensor *t;	 /* in map order */
	size_t n;
	bool map_bool;	  /* a {"Bool": ...} dtype: written by 0.21+ */
	bool has_scalars; /* a "scalars" key: written by 0.22+ */
};

static int bpk_probe(const struct tfs_source *src)
{
	return src->size >= 4 && memcmp(src->data, BPK_MAGIC, 4) == 0 ? 100 : 0;
}

static int bpk_nomem(struct bpk_ctx *z)
{
	return tfs_diag_oom(z->d);
}

/* ---- raw CBOR walk: item counts and byte offsets ------------------------- */

/*
 * The head of one item.  A break (0xff) is an error here: containers look
 * for it with raw_at_break before asking for an item.
 */
static int raw_head(struct tfs_cursor *c, uint8_t *mt, uint64_t *arg,
		    bool *indefinite)
{
	uint8_t ib, ai;

	if (tfs_cursor_u8(c, &ib))
		return -EBADMSG;
	*mt = ib >> 5;
	ai = ib & 0x1f;
	*arg = ai;
	*indefinite = false;
	if (ai >= 24 && ai <= 27)
		return tfs_cursor_be(c, 1u << (ai - 24), arg);
	if (ai >= 28 && ai <= 30)
		return -EBADMSG;
	if (ai == 31) {
		if (*mt < 2 || *mt > 5)
			return -EBADMSG;
		*indefinite = true;
	}
	return 0;
}

static bool raw_at_break(struct tfs_cursor *c)
{
	if (!tfs_cursor_match(c, "\xff", 1))
		return false;
	c->pos++;
	return true;
}

/* skip one item; *items counts the data items passed (tags excluded) */
static int raw_skip(struct tfs_cursor *c, unsigned depth, uint64_t *items)
{
	uint64_t arg, i;
	uint8_t mt, chunk_mt;
	bool indef, chunk_indef;

	if (depth > BPK_RAW_DEPTH_MAX || raw_head(c, &mt, &arg, &indef))
		return -EBADMSG;
	if (mt == 6)
		return raw_skip(c, depth + 1, items);
	(*items)++;
	switch (mt) {
	case 2:
	case 3:
		if (!indef)
			return tfs_cursor_skip(c, arg);
		while (!raw_at_break(c))
			if (raw_head(c, &chunk_mt, &arg, &chunk_indef) ||
			    chunk_mt != mt || chunk_indef ||
			    tfs_cursor_skip(c, arg))
				return -EBADMSG;
		return 0;
	case 4:
	case 5:
		if (indef) {
			while (!raw_at_break(c))
				if (raw_skip(c, depth + 1, items))
					return -EBADMSG;
			return 0;
		}
		/* each item takes a byte: this also bounds the loop */
		if (arg > tfs_cursor_remaining(c))
			return -EBADMSG;
		if (mt == 5)
			arg *= 2;
		for (i = 0; i < arg; i++)
			if (raw_skip(c, depth + 1, items))
				return -EBADMSG;
		return 0;
	default:
		return 0;
	}
}

/* iterating over the pairs of a map in the raw metadata bytes */
struct raw_map {
	struct tfs_cursor c;
	uint64_t left; /* pairs left (definite) */
	bool indefinite;
};

static int raw_map_open(const struct bpk_ctx *z, uint64_t off,
			struct raw_map *m)
{
	uint64_t arg;
	uint8_t mt;

	tfs_cursor_init(&m->c, z->src->data + BPK_HEADER_SIZE, z->ms,
			BPK_HEADER_SIZE);
	if (off < BPK_HEADER_SIZE ||
	    tfs_cursor_seek(&m->c, off - BPK_HEADER_SIZE))
		return -EBADMSG;
	do {
		if (raw_head(&m->c, &mt, &arg, &m->indefinite))
			return -EBADMSG;
	} while (mt == 6);
	m->left = arg;
	return mt == 5 ? 0 : -EBADMSG;
}

/* 1 and the offsets of the next key and value, 0 at the end, or -EBADMSG */
static int raw_map_next(struct raw_map *m, uint64_t *key_off, uint64_t *val_off)
{
	uint64_t items = 0;

	if (m->indefinite ? raw_at_break(&m->c) : m->left == 0)
		return 0;
	m->left--;
	*key_off = tfs_cursor_offset(&m->c);
	if (raw_skip(&m->c, 0, &items))
		return -EBADMSG;
	*val_off = tfs_cursor_offset(&m->c);
	if (raw_skip(&m->c, 0, &items))
		return -EBADMSG;
	return 1;
}

/* where the value of pair @index of the map at @map_off starts */
static uint64_t raw_value_offset(const struct bpk_ctx *z, uint64_t map_off,
				 size_t index)
{
	struct raw_map m;
	uint64_t k, v;
	size_t i;

	if (raw_map_open(z, map_off, &m))
		return map_off;
	for (i = 0; i <= index; i++)
		if (raw_map_next(&m, &k, &v) != 1)
			return map_off;
	return v;
}

/* true when the raw item at @off is the definite text @s */
static bool raw_text_is(const struct bpk_ctx *z, uint64_t off, const char *s)
{
	struct tfs_cursor c;
	const uint8_t *p;
	uint64_t arg;
	uint8_t mt;
	bool indef;

	tfs_cursor_init(&c, z->src->data + off, z->meta_end - off, off);
	return raw_head(&c, &mt, &arg, &indef) == 0 && mt == 3 && !indef &&
	       arg == strlen(s) && tfs_cursor_bytes(&c, arg, &p) == 0 &&
	       memcmp(p, s, arg) == 0;
}

/*
 * Before libcbor allocates anything: the item cap and the tensor count.
 * Structural errors are left to tfs_cbor_decode, which words them.
 */
/* @n of @what (the field at @at) within @max: 0, or -E2BIG */
static int bpk_within(struct bpk_ctx *z, uint64_t at, const char *field,
		      uint64_t n, const char *what, unsigned max)
{
	if (n <= max)
		return 0;
	return tfs_diag_at(z->d, -E2BIG, at,
			   "%s: %llu %s exceed the limit of %u", field,
			   (unsigned long long)n, what, max);
}

static int bpk_prescan(struct bpk_ctx *z)
{
	struct raw_map root, tensors;
	struct tfs_cursor c;
	uint64_t items = 0, count = 0, k, v, tk, tv;

	tfs_cursor_init(&c, z->src->data + BPK_HEADER_SIZE, z->ms,
			BPK_HEADER_SIZE);
	if (raw_skip(&c, 0, &items))
		return 0;
	if (bpk_within(z, BPK_HEADER_SIZE, "metadata", items, "CBOR items",
		       BPK_CBOR_ITEMS_MAX))
		return -E2BIG;
	if (raw_map_open(z, BPK_HEADER_SIZE, &root))
		return 0;
	while (raw_map_next(&root, &k, &v) == 1) {
		if (!raw_text_is(z, k, "tensors") ||
		    raw_map_open(z, v, &tensors))
			continue;
		while (raw_map_next(&tensors, &tk, &tv) == 1)
			count++;
		if (bpk_within(z, v, "tensors", count, "tensors",
			       BPK_TENSORS_MAX))
			return -E2BIG;
	}
	return 0;
}

/* ---- decoded CBOR helpers ------------------------------------------------ */

static bool bpk_key_is(cbor_item_t *key, const char *s)
{
	char *text;
	bool eq;

	if (tfs_cbor_text_eq(key, s))
		return true;
	key = tfs_cbor_untag(key);
	if (!key || !cbor_isa_string(key) || cbor_string_is_definite(key) ||
	    tfs_cbor_text(key, &text, NULL))
		return false;
	eq = strcmp(text, s) == 0; /* a chunked key */
	free(text);
	return eq;
}

/*
 * Field @key of the struct-like map @map (at raw offset @map_off): its value,
 * or NULL; *off gets where the value starts (@map_off when absent).
 */
static cbor_item_t *bpk_field(const struct bpk_ctx *z, cbor_item_t *map,
			      uint64_t map_off, const char *key, uint64_t *off)
{
	struct cbor_pair *pairs = cbor_map_handle(map);
	size_t i, n = cbor_map_size(map);

	*off = map_off;
	for (i = 0; i < n; i++) {
		if (bpk_key_is(pairs[i].key, key)) {
			*off = raw_value_offset(z, map_off, i);
			return pairs[i].value;
		}
	}
	return NULL;
}

/* keys_check with a message: "WHAT: duplicate key 'k'" */
static int bpk_keys_check(struct bpk_ctx *z, cbor_item_t *map, uint64_t off,
			  const char *what)
{
	char *bad = NULL, kb[BPK_NAME_PRINT_MAX + 4];
	int ret = tfs_cbor_keys_check(map, &bad);

	if (ret == -ENOMEM)
		return bpk_nomem(z);
	if (ret && bad)
		ret = tfs_diag_at(
			z->d, -EBADMSG, off, "%s: duplicate key '%s'", what,
			tfs_name_printable(kb, sizeof(kb), bad, strlen(bad)));
	else if (ret)
		ret = tfs_diag_at(z->d, -EBADMSG, off,
				  "%s: a key is not UTF-8 text (or holds a "
				  "NUL byte)",
				  what);
	free(bad);
	return ret;
}

/* @*v, under any tags, as a map with unique text keys: the struct-like maps */
static int bpk_map(struct bpk_ctx *z, cbor_item_t **v, uint64_t off,
		   const char *what, const char *of)
{
	*v = tfs_cbor_untag(*v);
	if (!*v || !cbor_isa_map(*v))
		return tfs_diag_at(z->d, -EBADMSG, off, "%s: not a map of %s",
				   what, of);
	return bpk_keys_check(z, *v, off, what);
}

/* ---- header -------------------------------------------------------------- */

static int bpk_header(struct bpk_ctx *z)
{
	const struct tfs_source *src = z->src;
	struct tfs_cursor c;
	uint16_t version;
	uint32_t ms;

	if (src->size > BPK_FILE_MAX)
		return tfs_diag_at(z->d, -E2BIG, 0,
				   "file: %llu bytes exceed the 100 GiB limit",
				   (unsigned long long)src->size);
	tfs_cursor_init(&c, src->data, src->size, 0);
	if (src->size < BPK_HEADER_SIZE)
		return tfs_diag_at(z->d, -EBADMSG, src->size,
				   "header: file is %llu bytes, the header "
				   "needs 10",
				   (unsigned long long)src->size);
	if (!tfs_cursor_match(&c, BPK_MAGIC, 4))
		return tfs_diag_at(z->d, -EBADMSG, 0,
				   "magic: not 4E 52 55 42 (\"NRUB\")");
	tfs_cursor_skip(&c, 4);
	tfs_cursor_u16le(&c, &version);
	tfs_cursor_u32le(&c, &ms);
	if (version > BPK_VERSION_MAX)
		return tfs_diag_at(z->d, -ENOTSUP, 4,
				   "version: %u is not supported (only 0 and "
				   "1 are)",
				   version);
	if (ms > BPK_METADATA_MAX)
		return tfs_diag_at(
			z->d, -E2BIG, 6,
			"metadata_size: %u exceeds the 100 MiB limit", ms);
	if (ms > src->size - BPK_HEADER_SIZE)
		return tfs_diag_at(
			z->d, -EBADMSG, 6,
			"metadata_size: %u runs past the end of the "
			"file (%llu bytes after the header)",
			ms, (unsigned long long)(src->size - BPK_HEADER_SIZE));
	z->version = version;
	z->ms = ms;
	z->meta_end = BPK_HEADER_SIZE + (uint64_t)ms;
	return 0;
}

/* ---- descriptors --------------------------------------------------------- */

static const struct tfs_dtype_label bpk_unit_dtypes[] = {
	{"F64", TFS_DTYPE_FLOAT64},    {"F32", TFS_DTYPE_FLOAT32},
	{"Flex32", TFS_DTYPE_FLOAT32}, {"F16", TFS_DTYPE_FLOAT16},
	{"BF16", TFS_DTYPE_BFLOAT16},  {"I64", TFS_DTYPE_INT64},
	{"I32", TFS_DTYPE_INT32},      {"I16", TFS_DTYPE_INT16},
	{"I8", TFS_DTYPE_INT8},	       {"U64", TFS_DTYPE_UINT64},
	{"U32", TFS_DTYPE_UINT32},     {"U16", TFS_DTYPE_UINT16},
	{"U8", TFS_DTYPE_UINT8},       {"Bool", TFS_DTYPE_BOOL},
};

/* {"Bool": storage} (0.21+); U32 storage is 4 bytes per element */
static const struct tfs_dtype_label bpk_bool_storages[] = {
	{"Native", TFS_DTYPE_BOOL},
	{"U8", TFS_DTYPE_BOOL},
	{"U32", TFS_DTYPE_UINT32},
};

static void bpk_set_dtype(struct bpk_tensor *t, enum tfs_dtype dt,
			  const char *native)
{
	t->dtype = dt;
	t->elem_size = tfs_dtype_size(dt);
	snprintf(t->native, sizeof(t->native), "%s", native);
}

/* the entry of @table whose name the text @v is, or NULL */
static const struct tfs_dtype_label *
bpk_label(cbor_item_t *v, const struct tfs_dtype_label *table, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (tfs_cbor_text_eq(v, table[i].name))
			return &table[i];
	return NULL;
}

static int bpk_dtype_text(struct bpk_ctx *z, struct bpk_tensor *t,
			  cbor_item_t *v, uint64_t off)
{
	char vb[BPK_NAME_PRINT_MAX + 4], *s = NULL;
	const struct tfs_dtype_label *l;
	int ret;

	l = bpk_label(v, TFS_DTYPE_LABELS(bpk_unit_dtypes));
	if (l) {
		bpk_set_dtype(t, l->dtype, l->name);
		return 0;
	}
	ret = tfs_cbor_text(v, &s, NULL);
	if (ret == -ENOMEM)
		return bpk_nomem(z);
	ret = tfs_diag_at(
		z->d, -EBADMSG, off, "tensor '%s': dtype: unknown dtype '%s'",
		TFS_SHOWN(t->name, t->name_len),
		s ? tfs_name_printable(vb, sizeof(vb), s, strlen(s)) : "?");
	free(s);
	return ret;
}

/*
 * The QFloat scheme is shown as JSON: every map inside it needs unique text
 * keys without NUL bytes (serde structs and enums have nothing else).
 * Depth is bounded by the decoder.  0, -EBADMSG or -ENOMEM.
 */
static int bpk_scheme_check(cbor_item_t *item)
{
	struct cbor_pair *pairs;
	char *bad = NULL;
	size_t i, n;
	int ret = 0;

	item = tfs_cbor_untag(item);
	if (!item)
		return -EBADMSG;
	if (cbor_isa_array(item)) {
		n = cbor_array_size(item);
		for (i = 0; i < n && !ret; i++)
			ret = bpk_scheme_check(cbor_array_handle(item)[i]);
	} else if (cbor_isa_map(item)) {
		ret = tfs_cbor_keys_check(item, &bad);
		free(bad);
		pairs = cbor_map_handle(item);
		n = cbor_map_size(item);
		for (i = 0; i < n && !ret; i++)
			ret = bpk_scheme_check(pairs[i].value);
	}
	return ret;
}

static int bpk_dtype_map(struct bpk_ctx *z, struct bpk_tensor *t,
			 cbor_item_t *v, uint64_t off)
{
	char kb[BPK_NAME_PRINT_MAX + 4];
	const struct tfs_dtype_label *l;
	struct cbor_pair *pair;
	cbor_item_t *arg;
	char *s = NULL;
	int ret;

	if (cbor_map_size(v) != 1)
		return tfs_diag_at(z->d, -EBADMSG, off,
				   "tensor '%s': dtype: a map dtype has one "
				   "entry, this one %zu",
				   TFS_SHOWN(t->name, t->name_len),
				   cbor_map_size(v));
	pair = &cbor_map_handle(v)[0];
	arg = tfs_cbor_untag(pair->value);
	if (bpk_key_is(pair->key, "QFloat")) {
		/* the scheme's fields differ between releases: keep it whole */
		ret = bpk_scheme_check(pair->value);
		if (ret == -ENOMEM)
			return bpk_nomem(z);
		if (ret)
			return tfs_diag_at(z->d, -EBADMSG, off,
					   "tensor '%s': dtype: QFloat scheme: "
					   "a map key is not unique UTF-8 text "
					   "(or holds a NUL byte)",
					   TFS_SHOWN(t->name, t->name_len));
		t->dtype = TFS_DTYPE_QFLOAT;
		t->elem_size = 0;
		snprintf(t->native, sizeof(t->native), "QFloat");
		t->qscheme = pair->value;
		return 0;
	}
	if (bpk_key_is(pair->key, "Bool")) {
		z->map_bool = true;
		l = bpk_label(arg, TFS_DTYPE_LABELS(bpk_bool_storages));
		if (l) {
			char native[16];

			snprintf(native, sizeof(native), "Bool(%s)", l->name);
			bpk_set_dtype(t, l->dtype, native);
			return 0;
		}
		return tfs_diag_at(z->d, -EBADMSG, off,
				   "tensor '%s': dtype: unknown Bool storage "
				   "(Native, U8 or U32)",
				   TFS_SHOWN(t->name, t->name_len));
	}
	ret = tfs_cbor_text(pair->key, &s, NULL);
	if (ret == -ENOMEM)
		return bpk_nomem(z);
	ret = tfs_diag_at(z->d, -EBADMSG, off,
			  "tensor '%s': dtype: unknown dtype variant '%s'",
			  TFS_SHOWN(t->name, t->name_len),
			  s ? tfs_name_printable(kb, sizeof(kb), s, strlen(s))
			    : "?");
	free(s);
	return ret;
}

static int bpk_shape(struct bpk_ctx *z, struct bpk_tensor *t, cbor_item_t *v,
		     uint64_t off)
{
	cbor_item_t **dims;
	size_t i, n;

	v = tfs_cbor_untag(v);
	if (!cbor_isa_array(v))
		return tfs_diag_at(z->d, -EBADMSG, off,
				   "tensor '%s': shape: not an array",
				   TFS_SHOWN(t->name, t->name_len));
	n = cbor_array_size(v);
	dims = cbor_array_handle(v);
	/* n <= the CBOR bytes, already bounded by the metadata size */
	t->shape = calloc(n ? n : 1, sizeof(*t->shape));
	if (!t->shape)
		return bpk_nomem(z);
	for (i = 0; i < n; i++)
		if (!tfs_cbor_uint(dims[i], &t->shape[i]))
			return tfs_diag_at(z->d, -EBADMSG, off,
					   "tensor '%s': shape: dim %zu is not "
					   "an unsigned integer",
					   TFS_SHOWN(t->name, t->name_len), i);
	t->ndim = n;
	return 0;
}

static int bpk_data_offsets(struct bpk_ctx *z, struct bpk_tensor *t,
			    cbor_item_t *v, uint64_t off)
{
	cbor_item_t **items;

	v = tfs_cbor_untag(v);
	if (!cbor_isa_array(v) || cbor_array_size(v) != 2)
		return tfs_diag_at(z->d, -EBADMSG, off,
				   "tensor '%s': data_offsets: not an array "
				   "of 2 [start, end]",
				   TFS_SHOWN(t->name, t->name_len));
	items = cbor_array_handle(v);
	if (!tfs_cbor_uint(items[0], &t->start) ||
	    !tfs_cbor_uint(items[1], &t->end))
		return tfs_diag_at(z->d, -EBADMSG, off,
				   "tensor '%s': data_offsets: start and end "
				   "must be unsigned integers",
				   TFS_SHOWN(t->name, t->name_len));
	if (t->end < t->start)
		return tfs_diag_at(z->d, -EBADMSG, off,
				   "tensor '%s': data_offsets: end %llu < "
				   "start %llu",
				   TFS_SHOWN(t->name, t->name_len),
				   (unsigned long long)t->end,
				   (unsigned long long)t->start);
	if (t->end - t->start > BPK_TENSOR_BYTES_MAX)
		return tfs_diag_at(z->d, -E2BIG, off,
				   "tensor '%s': data_offsets: %llu bytes "
				   "exceed the 10 GiB limit for one tensor",
				   TFS_SHOWN(t->name, t->name_len),
				   (unsigned long long)(t->end - t->start));
	return 0;
}

/* end - start == product(shape) x element size, for every plain dtype */
static int bpk_check_size(struct bpk_ctx *z, struct bpk_tensor *t,
			  uint64_t shape_off)
{
	uint64_t count, bytes;

	if (!tfs_shape_product(t->shape, t->ndim, &count) ||
	    (t->elem_size && !tfs_mul_u64(count, t->elem_size, &bytes)))
		return tfs_diag_at(z->d, -EBADMSG, shape_off,
				   "tensor '%s': shape: the byte count "
				   "overflows 64 bits",
				   TFS_SHOWN(t->name, t->name_len));
	if (t->elem_size && bytes != t->end - t->start)
		return tfs_diag_at(z->d, -EBADMSG, t->offsets_off,
				   "tensor '%s': data_offsets: %llu bytes, "
				   "but the shape needs %llu x %u-byte %s = "
				   "%llu",
				   TFS_SHOWN(t->name, t->name_len),
				   (unsigned long long)(t->end - t->start),
				   (unsigned long long)count, t->elem_size,
				   t->native, (unsigned long long)bytes);
	return 0;
}

/* one "name": {dtype, shape, data_offsets, param_id?} entry */
static int bpk_descriptor(struct bpk_ctx *z, struct cbor_pair *pair,
			  uint64_t key_off, uint64_t off, struct bpk_tensor *t)
{
	cbor_item_t *desc, *v;
	uint64_t foff, shape_off;
	char what[BPK_NAME_PRINT_MAX + 40];
	int ret;

	ret = tfs_cbor_text(pair->key, &t->name, &t->name_len);
	if (ret)
		return ret == -ENOMEM ? bpk_nomem(z)
				      : tfs_diag_at(z->d, -EBADMSG, key_off,
						    "tensors: a name is not "
						    "UTF-8 text");
	t->desc_off = off;
	desc = pair->value;
	snprintf(what, sizeof(what), "tensor '%s': descriptor",
		 TFS_SHOWN(t->name, t->name_len));
	ret = bpk_map(z, &desc, off, what, "field to value");
	if (ret)
		return ret;

	v = tfs_cbor_untag(bpk_field(z, desc, off, "dtype", &foff));
	if (!v)
		return tfs_diag_at(z->d, -EBADMSG, off,
				   "tensor '%s': dtype: missing",
				   TFS_SHOWN(t->name, t->name_len));
	if (cbor_isa_string(v))
		ret = bpk_dtype_text(z, t, v, foff);
	else if (cbor_isa_map(v))
		ret = bpk_dtype_map(z, t, v, foff);
	else
		ret = tfs_diag_at(z->d, -EBADMSG, foff,
				  "tensor '%s': dtype: neither text nor a "
				  "1-entry map",
				  TFS_SHOWN(t->name, t->name_len));
	if (ret)
		return ret;

	v = bpk_field(z, desc, off, "shape", &shape_off);
	if (!v)
		return tfs_diag_at(z->d, -EBADMSG, off,
				   "tensor '%s': shape: missing",
				   TFS_SHOWN(t->name, t->name_len));
	ret = bpk_shape(z, t, v, shape_off);
	if (ret)
		return ret;

	v = bpk_field(z, desc, off, "data_offsets", &t->offsets_off);
	if (!v)
		return tfs_diag_at(z->d, -EBADMSG, off,
				   "tensor '%s': data_offsets: missing",
				   TFS_SHOWN(t->name, t->name_len));
	ret = bpk_data_offsets(z, t, v, t->offsets_off);
	if (ret)
		return ret;

	v = bpk_field(z, desc, off, "param_id", &foff);
	if (v) {
		if (!tfs_cbor_uint(v, &t->param_id))
			return tfs_diag_at(z->d, -EBADMSG, foff,
					   "tensor '%s': param_id: not an "
					   "unsigned integer",
					   TFS_SHOWN(t->name, t->name_len));
		t->has_param_id = true;
	}
	return bpk_check_size(z, t, shape_off);
}

static int bpk_tensors(struct bpk_ctx *z, cbor_item_t *tensors, uint64_t off)
{
	struct cbor_pair *pairs;
	struct raw_map m;
	uint64_t key_off, val_off;
	size_t i, n;
	int ret;

	ret = bpk_map(z, &tensors, off, "tensors", "name to descriptor");
	if (ret)
		return ret;
	n = cbor_map_size(tensors);
	if (bpk_within(z, off, "tensors", n, "tensors", BPK_TENSORS_MAX))
		return -E2BIG; /* bpk_prescan saw it first */
	z->t = calloc(n ? n : 1, sizeof(*z->t));
	if (!z->t)
		return bpk_nomem(z);
	z->n = n;
	pairs = cbor_map_handle(tensors);
	/* the raw walk visits the pairs in the order libcbor stored them */
	if (raw_map_open(z, off, &m))
		return tfs_diag_at(z->d, -EBADMSG, off,
				   "tensors: cannot walk the map");
	for (i = 0; i < n; i++) {
		if (raw_map_next(&m, &key_off, &val_off) != 1)
			return tfs_diag_at(z->d, -EBADMSG, off,
					   "tensors: cannot walk the map");
		ret = bpk_descriptor(z, &pairs[i], key_off, val_off, &z->t[i]);
		if (ret)
			return ret;
	}
	return 0;
}

/* ---- layout (spec section 3) --------------------------------------------- */

static int bpk_cmp_extent(const void *a, const void *b)
{
	const struct bpk_tensor *x = *(const struct bpk_tensor *const *)a;
	const struct bpk_tensor *y = *(const struct bpk_tensor *const *)b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return 0;
}

/*
 * The hints of rule 4, from the tensors sorted by extent.  Aligned: a
 * {"Bool": ...} dtype (0.21+), a "scalars" key (0.22+), or every start a
 * multiple of 256 with a gap between two tensors.  Packed: the first start
 * is 0, each start is the previous end, and some start is not a multiple
 * of 256.
 */
static void bpk_hints(const struct bpk_ctx *z, struct bpk_tensor **sorted,
		      bool *aligned, bool *packed)
{
	bool all_aligned = true, gap = false, contiguous, off_boundary = false;
	uint64_t prev_end = 0;
	size_t i;

	contiguous = z->n && sorted[0]->start == 0;
	for (i = 0; i < z->n; i++) {
		const struct bpk_tensor *t = sorted[i];

		if (t->start % BPK_ALIGN) {
			all_aligned = false;
			off_boundary = true;
		}
		if (i && t->start > prev_end)
			gap = true;
		if (i && t->start != prev_end)
			contiguous = false;
		if (!i || t->end > prev_end)
			prev_end = t->end;
	}
	*aligned = z->map_bool || z->has_scalars || (all_aligned && gap);
	*packed = contiguous && off_boundary;
}

/* which layout; sets data_start (not yet checked against the file) */
static void bpk_layout(struct bpk_ctx *z, struct bpk_tensor **sorted,
		       uint64_t max_end)
{
	uint64_t p = z->meta_end, size = z->src->size, a, need_a, need_p;
	bool hint_aligned, hint_packed;

	/* p <= 10 + 100 MiB: no overflow */
	a = (p + BPK_ALIGN - 1) / BPK_ALIGN * BPK_ALIGN;
	if (p % BPK_ALIGN == 0) {
		z->layout = BPK_ALIGNED;
		z->layout_rule = "1: metadata ends on a 256-byte boundary, "
				 "both layouts agree";
		z->layout_why = "the layouts coincide";
	} else if (z->n == 0) {
		z->layout = size >= a ? BPK_ALIGNED : BPK_PACKED;
		z->layout_rule = "5: no tensors; aligned when the file "
				 "reaches the aligned data start";
	} else if (tfs_add_u64(a, max_end, &need_a) && size == need_a) {
		z->layout = BPK_ALIGNED;
		z->layout_rule = "2: size == aligned data start + max(end)";
	} else if (tfs_add_u64(p, max_end, &need_p) && size == need_p) {
		z->layout = BPK_PACKED;
		z->layout_rule = "3: size == metadata end + max(end)";
	} else {
		bpk_hints(z, sorted, &hint_aligned, &hint_packed);
		if (hint_packed && !hint_aligned) {
			z->layout = BPK_PACKED;
			z->layout_rule = "4: size fits neither exactly; the "
					 "packed hint decides";
			z->layout_why = "a 0.19 hint chose packed";
		} else if (hint_aligned && !hint_packed) {
			z->layout = BPK_ALIGNED;
			z->layout_rule = "4: size fits neither exactly; the "
					 "aligned hint decides";
			z->layout_why = "a 0.20+ hint chose aligned";
		} else {
			z->layout = BPK_ALIGNED;
			z->layout_rule = "4: size fits neither exactly; no "
					 "single hint, aligned by default";
			z->layout_why = "without a single hint aligned is "
					"the default";
		}
	}
	z->data_start = z->layout == BPK_ALIGNED ? a : p;
}

static const char *bpk_layout_name(enum bpk_layout l)
{
	return l == BPK_ALIGNED ? "aligned" : "packed";
}

/*
 * Every tensor inside the file under the chosen layout, no two non-empty
 * tensors sharing a byte; warnings for trailing bytes and, in the aligned
 * layout, starts off a 256-byte boundary.
 */
static int bpk_check_extents(struct bpk_ctx *z, struct bpk_tensor **sorted,
			     uint64_t max_end)
{
	uint64_t size = z->src->size, a, abs_end, need_a, need_p;
	size_t i, misaligned = 0;

	a = (z->meta_end + BPK_ALIGN - 1) / BPK_ALIGN * BPK_ALIGN;
	for (i = 0; i < z->n; i++) {
		struct bpk_tensor *t = &z->t[i];

		if (tfs_add_u64(z->data_start, t->end, &abs_end) &&
		    abs_end <= size)
			continue;
		if (!tfs_add_u64(a, max_end, &need_a))
			need_a = UINT64_MAX;
		if (!tfs_add_u64(z->meta_end, max_end, &need_p))
			need_p = UINT64_MAX;
		return tfs_diag_at(
			z->d, -EBADMSG, t->offsets_off,
			"tensor '%s': data_offsets: [%llu, %llu) at data "
			"start %llu ends past the end of the file (%llu "
			"bytes): the size fits neither layout (aligned needs "
			"%llu bytes, packed %llu) and %s",
			TFS_SHOWN(t->name, t->name_len),
			(unsigned long long)t->start,
			(unsigned long long)t->end,
			(unsigned long long)z->data_start,
			(unsigned long long)size, (unsigned long long)need_a,
			(unsigned long long)need_p, z->layout_why);
	}
	/* overlaps: the builder (TFS_OVERLAP_FORBID) */
	for (i = 0; i < z->n; i++)
		if (z->layout == BPK_ALIGNED && sorted[i]->start % BPK_ALIGN)
			misaligned++;
	if (misaligned &&
	    tfs_builder_warn(z->b, TFS_NO_OFFSET,
			     "%zu tensor(s) of the aligned layout start off a "
			     "256-byte boundary",
			     misaligned))
		return bpk_nomem(z);
	/* every tensor is inside: data_start + max_end <= size */
	if (size > z->data_start + max_end &&
	    tfs_builder_warn(
		    z->b, z->data_start + max_end,
		    "%llu trailing bytes after the last tensor",
		    (unsigned long long)(size - z->data_start - max_end)))
		return bpk_nomem(z);
	return 0;
}

static int bpk_place(struct bpk_ctx *z)
{
	struct bpk_tensor **sorted;
	uint64_t max_end = 0;
	size_t i;
	int ret;

	sorted = calloc(z->n ? z->n : 1, sizeof(*sorted));
	if (!sorted)
		return bpk_nomem(z);
	for (i = 0; i < z->n; i++) {
		sorted[i] = &z->t[i];
		if (z->t[i].end > max_end)
			max_end = z->t[i].end;
	}
	qsort(sorted, z->n, sizeof(*sorted), bpk_cmp_extent);
	bpk_layout(z, sorted, max_end);
	ret = bpk_check_extents(z, sorted, max_end);
	free(sorted);
	return ret;
}

/* ---- metadata and scalars ------------------------------------------------ */

/* "metadata": text -> text; in metadata.json, and as root xattrs if small */
static int bpk_metadata(struct bpk_ctx *z, cbor_item_t *v, uint64_t off)
{
	struct cbor_pair *pairs;
	char *dump = NULL, *key = NULL, *val = NULL, xname[256];
	bool small = true;
	size_t i, n, klen, vlen;
	json_t *j;
	int ret;

	ret = bpk_map(z, &v, off, "metadata", "text to text");
	if (ret)
		return ret;
	pairs = cbor_map_handle(v);
	n = cbor_map_size(v);
	for (i = 0; i < n; i++)
		if (!cbor_isa_string(tfs_cbor_untag(pairs[i].value)))
			return tfs_diag_at(z->d, -EBADMSG,
					   raw_value_offset(z, off, i),
					   "metadata: a value is not text");
	j = tfs_cbor_to_json(v);
	if (!j)
		return bpk_nomem(z); /* UTF-8 was checked by the decoder */
	json_object_set_new(tfs_builder_metadata(z->b), "metadata", j);
	dump = json_dumps(j, JSON_COMPACT);
	if (!dump)
		return bpk_nomem(z);
	small = strlen(dump) <= BPK_XATTR_VALUE_MAX;
	free(dump);
	for (i = 0; small && i < n; i++) {
		if (tfs_cbor_text(pairs[i].key, &key, &klen) ||
		    klen > BPK_XATTR_KEY_MAX)
			small = false;
		free(key);
		key = NULL;
	}
	for (i = 0; small && i < n && !ret; i++) {
		ret = tfs_cbor_text(pairs[i].key, &key, NULL);
		if (!ret)
			ret = tfs_cbor_text(pairs[i].value, &val, &vlen);
		if (!ret) {
			/* a value may hold NUL bytes: pass its length */
			snprintf(xname, sizeof(xname), "burnpack.metadata.%s",
				 key);
			ret = tfs_builder_set_xattr(z->b, TFS_BUILDER_ROOT,
						    xname, val, vlen);
		}
		free(key);
		free(val);
		key = val = NULL;
	}
	return ret ? bpk_nomem(z) : 0;
}

/* one {"Int"|"UInt"|"Float"|"Bool": value} scalar as JSON, or NULL */
static json_t *bpk_scalar(cbor_item_t *v, const char **why)
{
	struct cbor_pair *pair;
	cbor_item_t *x;
	char num[24];
	double f;

	*why = "not a 1-entry map";
	v = tfs_cbor_untag(v);
	if (!v || !cbor_isa_map(v) || cbor_map_size(v) != 1)
		return NULL;
	pair = &cbor_map_handle(v)[0];
	x = tfs_cbor_untag(pair->value);
	*why = "the value does not match its kind";
	if (bpk_key_is(pair->key, "Int")) {
		if (!x || !cbor_is_int(x) || cbor_get_int(x) > INT64_MAX)
			return NULL;
		return json_pack("{sI}", "Int",
				 cbor_isa_uint(x)
					 ? (json_int_t)cbor_get_int(x)
					 : -1 - (json_int_t)cbor_get_int(x));
	}
	if (bpk_key_is(pair->key, "UInt")) {
		if (!x || !cbor_isa_uint(x))
			return NULL;
		if (cbor_get_int(x) <= INT64_MAX)
			return json_pack("{sI}", "UInt",
					 (json_int_t)cbor_get_int(x));
		/* exact, as a JSON integer cannot hold it in jansson */
		snprintf(num, sizeof(num), "%" PRIu64, cbor_get_int(x));
		return json_pack("{ss}", "UInt", num);
	}
	if (bpk_key_is(pair->key, "Float")) {
		if (!x || !cbor_is_float(x))
			return NULL;
		f = cbor_float_get_float(x);
		if (isfinite(f))
			return json_pack("{sf}", "Float", f);
		return json_pack("{ss}", "Float",
				 isnan(f) ? "NaN"
				 : f > 0  ? "inf"
					  : "-inf");
	}
	if (bpk_key_is(pair->key, "Bool")) {
		if (!x || !cbor_is_bool(x))
			return NULL;
		return json_pack("{sb}", "Bool", cbor_get_bool(x));
	}
	*why = "unknown kind (Int, UInt, Float or Bool)";
	return NULL;
}

static int bpk_scalars(struct bpk_ctx *z, cbor_item_t *v, uint64_t off)
{
	char kb[BPK_NAME_PRINT_MAX + 4], *name;
	struct cbor_pair *pairs;
	json_t *all, *one;
	const char *why;
	size_t i, n, len;
	int ret;

	ret = bpk_map(z, &v, off, "scalars", "name to scalar");
	if (ret)
		return ret;
	all = json_object();
	if (!all)
		return bpk_nomem(z);
	json_object_set_new(tfs_builder_metadata(z->b), "scalars", all);
	pairs = cbor_map_handle(v);
	n = cbor_map_size(v);
	for (i = 0; i < n; i++) {
		ret = tfs_cbor_text(pairs[i].key, &name, &len);
		if (ret)
			return bpk_nomem(z); /* keys_check: text */
		one = bpk_scalar(pairs[i].value, &why);
		if (!one) {
			ret = tfs_diag_at(
				z->d, -EBADMSG, raw_value_offset(z, off, i),
				"scalars: '%s': %s",
				tfs_name_printable(kb, sizeof(kb), name, len), why);
			free(name);
			return ret;
		}
		json_object_setn_new(all, name, len, one);
		free(name);
	}
	return 0;
}

/* ---- the builder --------------------------------------------------------- */

static int bpk_add_tensor(struct bpk_ctx *z, struct bpk_tensor *t,
			  json_t *qschemes)
{
	struct tfs_tensor_spec spec;
	char num[24], *dump;
	json_t *extra, *scheme;
	uint32_t h;
	int ret;

	tfs_spec_tensor(&spec, t->name, t->name_len, t->dtype, t->shape,
			t->ndim, t->desc_off);
	/* checked by bpk_place */
	tfs_spec_raw(&spec, z->data_start + t->start, t->end - t->start);
	ret = tfs_builder_add_tensor(z->b, &spec, &h, z->d);
	if (ret)
		return ret;
	extra = tfs_builder_manifest_extra(z->b, h);
	if (!extra ||
	    tfs_builder_set_xattr_str(z->b, h, "burnpack.dtype", t->native))
		return bpk_nomem(z);
	json_object_set_new(extra, "burnpack_dtype", json_string(t->native));
	if (t->has_param_id) {
		snprintf(num, sizeof(num), "%" PRIu64, t->param_id);
		if (tfs_builder_set_xattr_str(z->b, h, "burnpack.param_id",
					      num))
			return bpk_nomem(z);
		json_object_set_new(extra, "param_id", json_string(num));
	}
	if (!t->qscheme)
		return 0;
	scheme = tfs_cbor_to_json(t->qscheme);
	if (!scheme)
		return bpk_nomem(z); /* UTF-8 was checked by the decoder */
	json_object_setn_new(qschemes, t->name, t->name_len, scheme);
	dump = json_dumps(scheme, JSON_COMPACT | JSON_ENCODE_ANY);
	if (!dump)
		return bpk_nomem(z);
	ret = strlen(dump) <= BPK_XATTR_VALUE_MAX
		      ? tfs_builder_set_xattr_str(z->b, h,
						  "burnpack.quant_scheme", dump)
		      : 0;
	free(dump);
	return ret ? bpk_nomem(z) : 0;
}

/* the header and the layout: the first members of metadata.json */
static void bpk_describe_layout(struct bpk_ctx *z)
{
	json_t *meta = tfs_builder_metadata(z->b);

	json_object_set_new(meta, "version", json_integer(z->version));
	json_object_set_new(meta, "metadata_size",
			    json_integer((json_int_t)z->ms));
	json_object_set_new(meta, "layout",
			    json_string(bpk_layout_name(z->layout)));
	json_object_set_new(meta, "layout_rule", json_string(z->layout_rule));
	json_object_set_new(meta, "data_start",
			    json_integer((json_int_t)z->data_start));
}

/* the tensors, their xattrs, the QFloat schemes, warnings, root xattrs */
static int bpk_describe(struct bpk_ctx *z)
{
	json_t *meta = tfs_builder_metadata(z->b), *qschemes;
	char num[24];
	size_t i;
	int ret = 0;

	qschemes = json_object();
	if (!qschemes)
		return bpk_nomem(z);
	for (i = 0; i < z->n && !ret; i++)
		ret = bpk_add_tensor(z, &z->t[i], qschemes);
	if (json_object_size(qschemes))
		json_object_set(meta, "qfloat_schemes", qschemes);
	json_decref(qschemes);
	if (ret)
		return ret;
	snprintf(num, sizeof(num), "%u", z->version);
	ret = tfs_builder_set_xattr_str(z->b, TFS_BUILDER_ROOT,
					"burnpack.version", num);
	if (!ret)
		ret = tfs_builder_set_xattr_str(z->b, TFS_BUILDER_ROOT,
						"burnpack.layout",
						bpk_layout_name(z->layout));
	snprintf(num, sizeof(num), "%" PRIu64, z->data_start);
	if (!ret)
		ret = tfs_builder_set_xattr_str(z->b, TFS_BUILDER_ROOT,
						"burnpack.data_start", num);
	return ret ? bpk_nomem(z) : 0;
}

/* ---- load ---------------------------------------------------------------- */

static int bpk_load(const struct tfs_source *src, struct tfs_builder *b,
		    struct tfs_diag *d)
{
	struct bpk_ctx z = {.src = src, .b = b, .d = d};
	cbor_item_t *item = NULL, *v;
	uint64_t used, off, tensors_off;
	size_t i;
	int ret;

	/* no two non-empty tensors may share a byte */
	tfs_builder_set_overlap_rule(b, TFS_OVERLAP_FORBID);
	ret = bpk_header(&z);
	if (!ret)
		ret = bpk_prescan(&z);
	if (ret)
		return ret;
	ret = tfs_cbor_decode(src->data + BPK_HEADER_SIZE, z.ms,
			      BPK_HEADER_SIZE, TFS_CBOR_MAX_DEPTH, &item, &used,
			      d);
	if (ret)
		goto out;
	if (used < z.ms &&
	    tfs_builder_warn(b, BPK_HEADER_SIZE + used,
			     "%llu bytes after the CBOR item inside the "
			     "metadata were ignored",
			     (unsigned long long)(z.ms - used))) {
		ret = bpk_nomem(&z);
		goto out;
	}
	z.root = tfs_cbor_untag(item);
	if (!z.root || !cbor_isa_map(z.root)) {
		ret = tfs_diag_at(d, -EBADMSG, BPK_HEADER_SIZE,
				  "metadata: the CBOR root is not a map");
		goto out;
	}
	ret = bpk_keys_check(&z, z.root, BPK_HEADER_SIZE, "metadata root");
	if (ret)
		goto out;
	v = bpk_field(&z, z.root, BPK_HEADER_SIZE, "tensors", &tensors_off);
	if (!v) {
		ret = tfs_diag_at(d, -EBADMSG, BPK_HEADER_SIZE,
				  "tensors: missing (a required key of the "
				  "metadata)");
		goto out;
	}
	z.has_scalars =
		bpk_field(&z, z.root, BPK_HEADER_SIZE, "scalars", &off) != NULL;
	ret = bpk_tensors(&z, v, tensors_off);
	if (!ret)
		ret = bpk_place(&z);
	if (ret)
		goto out;
	bpk_describe_layout(&z);
	v = bpk_field(&z, z.root, BPK_HEADER_SIZE, "metadata", &off);
	if (v)
		ret = bpk_metadata(&z, v, off);
	v = bpk_field(&z, z.root, BPK_HEADER_SIZE, "scalars", &off);
	if (!ret && v)
		ret = bpk_scalars(&z, v, off);
	if (!ret)
		ret = bpk_describe(&z);
out:
	for (i = 0; i < z.n; i++) {
		free(z.t[i].name);
		free(z.t[i].shape);
	}
	free(z.t);
	if (item)
		cbor_decref(&item);
	return ret;
}

TFS_FORMAT(burnpack, "Burnpack (.bpk), Burn's checkpoint format",
	   .probe = bpk_probe, .load = bpk_load);
