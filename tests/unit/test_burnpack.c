// SPDX-License-Identifier: MIT
/*
 * Burnpack reader: the real Burn model and the synthesized fixtures against
 * their documented values (shared/specs/burnpack.md section 11 and the
 * model's .expected.json), then files built here in memory with libcbor's
 * encoder: both layouts, every dtype form, zero-length tensors, scalars,
 * thousands of tensors, dotted names, and every malformed case.
 *
 * The generator places the bytes itself (as the Burn writers do, spec
 * section 2), so every read-back is compared with bytes whose position the
 * test knows, not with what the reader reports.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cbor.h>
#include <jansson.h>

#include "core/builder.h"
#include "core/format.h"
#include "core/source.h"
#include "core/tree.h"
#include "testutil.h"

#define REF_BPK "burnpack/reference/mnist-inference-web_model.bpk"
#define REF_JSON "burnpack/reference/mnist-inference-web_model.expected.json"

/* ---- helpers ------------------------------------------------------------- */

static uint8_t *node_bytes(struct tfs_image *img, const char *path, size_t *len)
{
	uint32_t n = tfs_tree_resolve(img->tree, path);

	ck_assert_msg(n != TFS_NO_NODE, "no node %s", path);
	return tu_read_node(img, n, len);
}

static void check_sha(struct tfs_image *img, const char *path, const char *want)
{
	char hex[65];
	uint8_t *b;
	size_t len;

	b = node_bytes(img, path, &len);
	tu_sha256_hex(b, len, hex);
	ck_assert_msg(strcmp(hex, want) == 0, "%s: sha256 %s, want %s", path,
		      hex, want);
	free(b);
}

/* .tensorfs/<file> parsed */
static json_t *meta_json(struct tfs_image *img, const char *file)
{
	char path[64];
	json_error_t err;
	uint8_t *b;
	size_t len;
	json_t *j;

	snprintf(path, sizeof(path), ".tensorfs/%s", file);
	b = node_bytes(img, path, &len);
	j = json_loadb((const char *)b, len, JSON_ALLOW_NUL, &err);
	ck_assert_msg(j != NULL, "%s: %s", file, err.text);
	free(b);
	return j;
}

/* absolute offset of the first @needle inside the metadata [10, 10+ms) */
static uint64_t find_in_meta(const uint8_t *b, size_t len, const void *needle,
			     size_t nlen)
{
	uint32_t ms =
		b[6] | b[7] << 8 | (uint32_t)b[8] << 16 | (uint32_t)b[9] << 24;
	const uint8_t *p;

	ck_assert_uint_le(10 + (uint64_t)ms, len);
	p = memmem(b + 10, ms, needle, nlen);
	ck_assert_msg(p != NULL, "needle not in the metadata");
	return (uint64_t)(p - b);
}

/* the value after the text key @key (a 1-byte head) in the metadata */
static uint64_t value_after_key(const uint8_t *b, size_t len, const char *key)
{
	char needle[32];
	size_t k = strlen(key);

	ck_assert_uint_lt(k, 24);
	needle[0] = (char)(0x60 + k);
	memcpy(needle + 1, key, k);
	return find_in_meta(b, len, needle, k + 1) + 1 + k;
}

/* ---- a Burnpack writer --------------------------------------------------- */

static cbor_item_t *cu(uint64_t v)
{
	if (v < 256)
		return cbor_build_uint8((uint8_t)v);
	if (v < 65536)
		return cbor_build_uint16((uint16_t)v);
	if (v <= UINT32_MAX)
		return cbor_build_uint32((uint32_t)v);
	return cbor_build_uint64(v);
}

static cbor_item_t *ctext(const char *s)
{
	return cbor_build_string(s);
}

static void put(cbor_item_t *map, cbor_item_t *k, cbor_item_t *v)
{
	ck_assert(cbor_map_add(map, (struct cbor_pair){.key = cbor_move(k),
						       .value = cbor_move(v)}));
}

/* {variant: value} */
static cbor_item_t *tagged(const char *variant, cbor_item_t *value)
{
	cbor_item_t *m = cbor_new_definite_map(1);

	put(m, ctext(variant), value);
	return m;
}

struct gen_tensor {
	const char *name;
	cbor_item_t *dtype; /* consumed by gen_build */
	uint32_t esize;	    /* element size; 0: @nbytes bytes (QFloat) */
	uint64_t shape[4];
	size_t ndim;
	uint64_t nbytes; /* opaque size, when esize == 0 */
	bool has_pid;
	uint64_t pid;
	/* added to data_offsets in the CBOR only: breaks a valid file */
	int64_t bump_start, bump_end;
	/* filled by gen_build: data_offsets relative to data_start */
	uint64_t start, end;
};

struct gen_file {
	uint8_t *buf;
	size_t len;
	uint64_t ms, data_start;
};

struct gen_opts {
	bool packed;	       /* burn 0.19: data right after the metadata */
	cbor_item_t *metadata; /* optional, consumed */
	cbor_item_t *scalars;  /* optional, consumed */
	size_t trailing;       /* bytes appended after the last tensor */
};

/* a byte no other position of the file has near it: wrong offsets show */
static uint8_t pattern(uint64_t pos)
{
	return (uint8_t)((pos * 131u + 7u) ^ (pos >> 8) ^ (pos >> 16));
}

static uint64_t tensor_bytes(const struct gen_tensor *t)
{
	uint64_t n = t->esize;
	size_t i;

	if (!t->esize)
		return t->nbytes;
	for (i = 0; i < t->ndim; i++)
		n *= t->shape[i];
	return n;
}

/*
 * Header (version 1) + the CBOR of @root (consumed) + zero padding to 256
 * unless @packed + @data_len zero bytes for the caller to fill.
 */
static struct gen_file gen_wrap(cbor_item_t *root, bool packed,
				uint64_t data_len)
{
	unsigned char *meta = NULL;
	size_t meta_len, cap, i;
	struct gen_file f;
	uint64_t p;

	/* returns the encoded length; cap is the (larger) buffer size */
	meta_len = cbor_serialize_alloc(root, &meta, &cap);
	ck_assert_uint_gt(meta_len, 0);
	cbor_decref(&root);
	f.ms = meta_len;
	p = 10 + meta_len;
	f.data_start = packed ? p : (p + 255) / 256 * 256;
	f.len = f.data_start + data_len;
	f.buf = calloc(f.len, 1);
	ck_assert_ptr_nonnull(f.buf);
	memcpy(f.buf, "NRUB\x01\x00", 6);
	for (i = 0; i < 4; i++)
		f.buf[6 + i] = (uint8_t)(meta_len >> (8 * i));
	memcpy(f.buf + 10, meta, meta_len);
	free(meta);
	return f;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp((*(struct gen_tensor *const *)a)->name,
		      (*(struct gen_tensor *const *)b)->name);
}

/*
 * Lay @ts out in the given (write) order, as the 0.20+ writer (aligned) or
 * the 0.19 writer (packed) does, with the CBOR tensors map sorted by name.
 */
static struct gen_file gen_build(struct gen_tensor *ts, size_t n,
				 const struct gen_opts *o)
{
	struct gen_tensor **sorted = calloc(n ? n : 1, sizeof(*sorted));
	cbor_item_t *root, *tensors, *desc, *arr;
	size_t i, k, nroot = 1;
	uint64_t cur = 0, max_end = 0;
	struct gen_file f;

	ck_assert_ptr_nonnull(sorted);
	for (i = 0; i < n; i++) {
		ts[i].start = o->packed ? cur : (cur + 255) / 256 * 256;
		ts[i].end = ts[i].start + tensor_bytes(&ts[i]);
		cur = ts[i].end;
		if (cur > max_end)
			max_end = cur;
		sorted[i] = &ts[i];
	}
	qsort(sorted, n, sizeof(*sorted), cmp_names);
	tensors = cbor_new_definite_map(n);
	for (i = 0; i < n; i++) {
		struct gen_tensor *t = sorted[i];

		desc = cbor_new_definite_map(t->has_pid ? 4 : 3);
		put(desc, ctext("dtype"), t->dtype);
		arr = cbor_new_definite_array(t->ndim);
		for (k = 0; k < t->ndim; k++)
			ck_assert(cbor_array_push(arr,
						  cbor_move(cu(t->shape[k]))));
		put(desc, ctext("shape"), arr);
		arr = cbor_new_definite_array(2);
		ck_assert(cbor_array_push(
			arr,
			cbor_move(cu(t->start + (uint64_t)t->bump_start))));
		ck_assert(cbor_array_push(
			arr, cbor_move(cu(t->end + (uint64_t)t->bump_end))));
		put(desc, ctext("data_offsets"), arr);
		if (t->has_pid)
			put(desc, ctext("param_id"), cu(t->pid));
		put(tensors, ctext(t->name), desc);
	}
	nroot += o->metadata != NULL;
	nroot += o->scalars != NULL;
	root = cbor_new_definite_map(nroot);
	put(root, ctext("tensors"), tensors);
	if (o->metadata)
		put(root, ctext("metadata"), o->metadata);
	if (o->scalars)
		put(root, ctext("scalars"), o->scalars);
	f = gen_wrap(root, o->packed, max_end + o->trailing);
	for (i = 0; i < n; i++)
		for (k = ts[i].start; k < ts[i].end; k++)
			f.buf[f.data_start + k] = pattern(f.data_start + k);
	for (i = 0; i < o->trailing; i++)
		f.buf[f.data_start + max_end + i] = 0xee;
	free(sorted);
	return f;
}

static struct tfs_image *load_ok(const struct gen_file *f)
{
	struct tfs_image *img = NULL;
	struct tfs_diag d;
	int ret = tu_load_mem(f->buf, f->len, &img, &d);

	ck_assert_msg(ret == 0, "load failed: %d %s at %llu", ret, d.msg,
		      (unsigned long long)d.offset);
	return img;
}

/* tensor @t reads back the generator's bytes at data_start + start */
static void check_gen_tensor(struct tfs_image *img, const struct gen_file *f,
			     const struct gen_tensor *t)
{
	const struct tfs_tensor *x = tu_tensor(img, t->name);
	uint8_t *b;
	size_t len;

	ck_assert_msg(x != NULL, "no tensor %s", t->name);
	ck_assert_uint_eq(x->offset, f->data_start + t->start);
	b = tu_read_node(img, x->node, &len);
	ck_assert_uint_eq(len, t->end - t->start);
	ck_assert_msg(len == 0 || memcmp(b, f->buf + f->data_start + t->start,
					 len) == 0,
		      "%s: bytes differ", t->name);
	free(b);
}

/* ---- the real model ------------------------------------------------------ */

/* the @i-th "param_id" number of the oracle's text, exactly (u64) */
static uint64_t oracle_param_id(const char *text, size_t i)
{
	const char *p = text;
	size_t k;

	for (k = 0; k <= i; k++) {
		p = strstr(p, "\"param_id\":");
		ck_assert_ptr_nonnull(p);
		p += strlen("\"param_id\":");
	}
	return strtoull(p, NULL, 10);
}

START_TEST(real_model)
{
	struct tfs_image *img;
	struct tfs_diag d;
	json_error_t jerr;
	json_t *oracle, *tensors, *t, *order, *meta;
	size_t i, k, len, text_len;
	char *text, shape[64], path[128], pid[24];
	uint8_t *b;
	const struct tfs_tensor *x, *by_offset[18];

	/* a real Burn file (tracel-ai/burn's example): stays in ../shared */
	TU_NEED_SHARED(REF_BPK);
	TU_NEED_SHARED(REF_JSON);
	text = (char *)tu_read_file(tu_fixture(REF_JSON), &text_len);
	text[text_len] = '\0';
	/* param_ids need all 64 bits: numbers as reals here, ids from text */
	oracle = json_loads(text, JSON_DECODE_INT_AS_REAL, &jerr);
	ck_assert_msg(oracle != NULL, "%s", jerr.text);
	ck_assert_int_eq(tu_load_file(tu_fixture(REF_BPK), &img, &d), 0);
	ck_assert_str_eq(img->tree->format, "burnpack");
	tu_expect_xattr(img, "", "burnpack.layout", "aligned");
	snprintf(path, sizeof(path), "%.0f",
		 json_number_value(
			 json_object_get(oracle, "data_section_start")));
	tu_expect_xattr(img, "", "burnpack.data_start", path);
	tu_expect_xattr(img, "", "burnpack.version", "1");

	tensors = json_object_get(oracle, "tensors");
	ck_assert_uint_eq(json_array_size(tensors), 18);
	ck_assert_uint_eq(img->tree->ntensors, 18);
	json_array_foreach(tensors, i, t)
	{
		const char *name =
			json_string_value(json_object_get(t, "name"));
		json_t *dims = json_object_get(t, "shape"), *v;
		size_t o = 0;

		x = tu_tensor(img, name);
		ck_assert_msg(x != NULL, "no tensor %s", name);
		ck_assert_str_eq(x->dtype, "float32");
		ck_assert_uint_eq(x->offset,
				  (uint64_t)json_number_value(
					  json_object_get(t, "abs_start")));
		ck_assert_uint_eq(x->size,
				  (uint64_t)json_number_value(
					  json_object_get(t, "nbytes")));
		o += (size_t)snprintf(shape, sizeof(shape), "[");
		json_array_foreach(dims, k, v) o +=
			(size_t)snprintf(shape + o, sizeof(shape) - o, "%s%.0f",
					 k ? "," : "", json_number_value(v));
		snprintf(shape + o, sizeof(shape) - o, "]");
		tu_expect_xattr(img, x->path, "shape", shape);
		tu_expect_xattr(img, x->path, "burnpack.dtype", "F32");
		snprintf(pid, sizeof(pid), "%" PRIu64,
			 oracle_param_id(text, i));
		tu_expect_xattr(img, x->path, "burnpack.param_id", pid);
		check_sha(img, x->path,
			  json_string_value(json_object_get(t, "sha256")));
		b = tu_read_node(img, x->node, &len);
		json_array_foreach(json_object_get(t, "first_f32"), k, v)
		{
			float f;

			memcpy(&f, b + 4 * k, 4);
			ck_assert(f == (float)json_number_value(v));
		}
		free(b);
	}
	/* spec section 9: conv1.conv.bias has param_id 1b 83eb859adffb2071 */
	tu_expect_xattr(img, "conv1/conv/bias", "burnpack.param_id",
			"9505838338724798577");

	/* the stored order is the write order, not the name order */
	order = json_object_get(oracle, "physical_order");
	for (i = 0; i < 18; i++)
		by_offset[i] = &img->tree->tensors[i];
	for (i = 0; i < 18; i++)
		for (k = i + 1; k < 18; k++)
			if (by_offset[k]->offset < by_offset[i]->offset) {
				x = by_offset[i];
				by_offset[i] = by_offset[k];
				by_offset[k] = x;
			}
	for (i = 0; i < 18; i++)
		ck_assert_str_eq(by_offset[i]->name,
				 json_string_value(json_array_get(order, i)));

	meta = meta_json(img, "metadata.json");
	ck_assert_str_eq(json_string_value(json_object_get(meta, "layout")),
			 "aligned");
	ck_assert_int_eq(
		json_integer_value(json_object_get(meta, "metadata_size")),
		1398);
	ck_assert_ptr_null(json_object_get(meta, "warnings"));
	json_decref(meta);
	meta = meta_json(img, "manifest.json");
	json_array_foreach(
		json_object_get(meta, "tensors"), i,
		t) if (strcmp(json_string_value(json_object_get(t, "name")),
			      "conv1.conv.bias") == 0)
		ck_assert_str_eq(
			json_string_value(json_object_get(t, "param_id")),
			"9505838338724798577");
	json_decref(meta);
	json_decref(oracle);
	free(text);
	tfs_image_close(img);
}
END_TEST

/* ---- the synthesized fixtures (spec section 11) -------------------------- */

#define SHA_WEIGHT                                                             \
	"24ae2dfe8df57c1b80e54cef3d90ac3b417fd98973345a5f616bbc9a75dcc202"
#define SHA_AIDX                                                               \
	"57e4397ccfb34c2040f50ff90f7850667aac626e0959bd3a4c92ec8ed62dc888"
#define SHA_H "2e1d6038edb9c7c82987074a9cb292c656a23deef19334b2c79dda64d49bf4fe"
#define SHA_MASK                                                               \
	"f613059cfba2cf127dd8644df2407b0472882b5be6674997c8e0fea11299b20f"
#define SHA_W "928c98e7bb51d2997586a3ece16ca418c1b9ff64025e11aa9265f3fa7d983f70"

/* @plain and @with_meta: absolute paths (copied: tu_* paths are static) */
static void check_single(const char *plain, const char *with_meta)
{
	struct tfs_image *img;
	struct tfs_diag d;
	json_t *meta, *m;
	char path[2][4096];

	snprintf(path[0], sizeof(path[0]), "%s", plain);
	snprintf(path[1], sizeof(path[1]), "%s", with_meta);
	ck_assert_int_eq(tu_load_file(path[0], &img, &d), 0);
	check_sha(img, "weight", SHA_WEIGHT);
	tu_expect_xattr(img, "weight", "dtype", "float32");
	tu_expect_xattr(img, "weight", "shape", "[2,3]");
	tu_expect_xattr(img, "weight", "offset", "256");
	ck_assert_ptr_null(tu_xattr(img, "weight", "burnpack.param_id"));
	ck_assert_ptr_null(tu_xattr(img, "", "burnpack.metadata.format"));
	tfs_image_close(img);

	ck_assert_int_eq(tu_load_file(path[1], &img, &d), 0);
	check_sha(img, "weight", SHA_WEIGHT);
	tu_expect_xattr(img, "", "burnpack.metadata.format", "burnpack");
	tu_expect_xattr(img, "", "burnpack.metadata.producer", "burn");
	tu_expect_xattr(img, "", "burnpack.metadata.version", "0.21.0");
	meta = meta_json(img, "metadata.json");
	m = json_object_get(meta, "metadata");
	ck_assert_str_eq(json_string_value(json_object_get(m, "producer")),
			 "burn");
	ck_assert_str_eq(json_string_value(json_object_get(m, "version")),
			 "0.21.0");
	json_decref(meta);
	tfs_image_close(img);
}

/*
 * the spec's synthesized files, written by tests/fixtures/burnpack/
 * generate.py with the same bytes as shared/fixtures/burnpack/synthesized
 * (the generator checks that when ../shared is there)
 */
START_TEST(generated_single)
{
	char plain[4096];

	snprintf(plain, sizeof(plain), "%s",
		 tu_testdata("burnpack/valid/f32_2x3.bpk"));
	check_single(plain, tu_testdata("burnpack/valid/f32_2x3_meta.bpk"));
}
END_TEST

/* @file: an absolute path */
static void check_multi(const char *file, const char *layout, uint64_t h_offset,
			const char *mask_native)
{
	struct tfs_image *img;
	struct tfs_diag d;
	char off[24];
	const int64_t idx[2] = {7, -1};
	uint8_t *b;
	size_t len;

	ck_assert_int_eq(tu_load_file(file, &img, &d), 0);
	tu_expect_xattr(img, "", "burnpack.layout", layout);
	check_sha(img, "a/idx", SHA_AIDX);
	check_sha(img, "h", SHA_H);
	check_sha(img, "mask", SHA_MASK);
	check_sha(img, "w", SHA_W);
	b = node_bytes(img, "a/idx", &len);
	ck_assert_uint_eq(len, 16);
	ck_assert_mem_eq(b, idx, 16);
	free(b);
	tu_expect_xattr(img, "a/idx", "dtype", "int64");
	tu_expect_xattr(img, "h", "dtype", "float16");
	tu_expect_xattr(img, "h", "shape", "[2,2]");
	tu_expect_xattr(img, "mask", "dtype", "bool");
	tu_expect_xattr(img, "mask", "burnpack.dtype", mask_native);
	tu_expect_xattr(img, "w", "burnpack.param_id", "42");
	snprintf(off, sizeof(off), "%" PRIu64, h_offset);
	tu_expect_xattr(img, "h", "offset", off);
	tfs_image_close(img);
}

START_TEST(generated_multi)
{
	/* aligned: data_start 512, h at 768; packed: data_start 248 + 33 */
	check_multi(tu_testdata("burnpack/valid/multi_v021.bpk"), "aligned",
		    512 + 768, "Bool(Native)");
	check_multi(tu_testdata("burnpack/valid/packed_v019.bpk"), "packed",
		    281, "Bool");
}
END_TEST

/* ---- generated: every dtype form, both layouts --------------------------- */

#define QSCHEME_JSON                                                           \
	"{\"value\":\"Q8S\",\"param\":\"F32\",\"store\":{\"PackedU32\":0},"    \
	"\"level\":\"Tensor\",\"mode\":\"Symmetric\"}"

static cbor_item_t *qscheme(void)
{
	cbor_item_t *m = cbor_new_definite_map(5);

	put(m, ctext("value"), ctext("Q8S"));
	put(m, ctext("param"), ctext("F32"));
	put(m, ctext("store"), tagged("PackedU32", cu(0)));
	put(m, ctext("level"), ctext("Tensor"));
	put(m, ctext("mode"), ctext("Symmetric"));
	return m;
}

struct dtype_case {
	const char *burn;	  /* text form, or NULL */
	const char *bool_storage; /* {"Bool": storage} */
	const char *dtype;	  /* expected user.tensorfs.dtype */
	const char *native;	  /* expected user.tensorfs.burnpack.dtype */
	uint32_t esize;
};

static const struct dtype_case dtype_cases[] = {
	{"F64", NULL, "float64", "F64", 8},
	{"F32", NULL, "float32", "F32", 4},
	{"Flex32", NULL, "float32", "Flex32", 4},
	{"F16", NULL, "float16", "F16", 2},
	{"BF16", NULL, "bfloat16", "BF16", 2},
	{"I64", NULL, "int64", "I64", 8},
	{"I32", NULL, "int32", "I32", 4},
	{"I16", NULL, "int16", "I16", 2},
	{"I8", NULL, "int8", "I8", 1},
	{"U64", NULL, "uint64", "U64", 8},
	{"U32", NULL, "uint32", "U32", 4},
	{"U16", NULL, "uint16", "U16", 2},
	{"U8", NULL, "uint8", "U8", 1},
	{"Bool", NULL, "bool", "Bool", 1},
	{NULL, "Native", "bool", "Bool(Native)", 1},
	{NULL, "U8", "bool", "Bool(U8)", 1},
	{NULL, "U32", "uint32", "Bool(U32)", 4},
};

#define NDTYPES (sizeof(dtype_cases) / sizeof(dtype_cases[0]))

static void every_dtype(bool packed)
{
	struct gen_tensor ts[NDTYPES + 1];
	struct gen_opts o = {.packed = packed};
	char names[NDTYPES][16];
	struct tfs_image *img;
	struct gen_file f;
	json_t *meta;
	size_t i;

	memset(ts, 0, sizeof(ts));
	for (i = 0; i < NDTYPES; i++) {
		const struct dtype_case *c = &dtype_cases[i];

		/* reverse name order: the write order differs */
		snprintf(names[i], sizeof(names[i]), "t%02zu", NDTYPES - i);
		ts[i].name = names[i];
		ts[i].dtype = c->burn ? ctext(c->burn)
				      : tagged("Bool", ctext(c->bool_storage));
		ts[i].esize = c->esize;
		ts[i].ndim = 2;
		ts[i].shape[0] = 3;
		ts[i].shape[1] = i % 3 + 1; /* odd sizes: packed starts vary */
		ts[i].has_pid = i % 2;
		ts[i].pid = UINT64_MAX - i;
	}
	ts[NDTYPES].name = "quant.weight";
	ts[NDTYPES].dtype = tagged("QFloat", qscheme());
	ts[NDTYPES].ndim = 2;
	ts[NDTYPES].shape[0] = 4;
	ts[NDTYPES].shape[1] = 4;
	ts[NDTYPES].nbytes = 16 + 4; /* 16 q8 values + one f32 scale */
	f = gen_build(ts, NDTYPES + 1, &o);
	/* the layouts must not coincide, or this tests nothing */
	ck_assert_uint_ne((10 + f.ms) % 256, 0);
	img = load_ok(&f);
	tu_expect_xattr(img, "", "burnpack.layout",
			packed ? "packed" : "aligned");
	for (i = 0; i < NDTYPES; i++) {
		const struct tfs_tensor *x = tu_tensor(img, ts[i].name);
		char pid[24];

		check_gen_tensor(img, &f, &ts[i]);
		ck_assert_str_eq(x->dtype, dtype_cases[i].dtype);
		ck_assert_uint_eq(tfs_dtype_size(x->dtype_id), dtype_cases[i].esize);
		tu_expect_xattr(img, x->path, "burnpack.dtype",
				dtype_cases[i].native);
		if (ts[i].has_pid) {
			snprintf(pid, sizeof(pid), "%" PRIu64, ts[i].pid);
			tu_expect_xattr(img, x->path, "burnpack.param_id", pid);
		} else {
			ck_assert_ptr_null(
				tu_xattr(img, x->path, "burnpack.param_id"));
		}
	}
	check_gen_tensor(img, &f, &ts[NDTYPES]);
	ck_assert_str_eq(tu_tensor(img, "quant.weight")->dtype, "qfloat");
	ck_assert_uint_eq(tu_tensor(img, "quant.weight")->dtype_id, TFS_DTYPE_QFLOAT);
	tu_expect_xattr(img, "quant/weight", "shape", "[4,4]");
	tu_expect_xattr(img, "quant/weight", "burnpack.dtype", "QFloat");
	tu_expect_xattr(img, "quant/weight", "burnpack.quant_scheme",
			QSCHEME_JSON);
	meta = meta_json(img, "metadata.json");
	{
		char *s = json_dumps(
			json_object_get(json_object_get(meta, "qfloat_schemes"),
					"quant.weight"),
			JSON_COMPACT);

		ck_assert_str_eq(s, QSCHEME_JSON);
		free(s);
	}
	ck_assert_str_eq(json_string_value(json_object_get(meta, "layout")),
			 packed ? "packed" : "aligned");
	json_decref(meta);
	tfs_image_close(img);
	free(f.buf);
}

START_TEST(every_dtype_aligned)
{
	every_dtype(false);
}
END_TEST

START_TEST(every_dtype_packed)
{
	every_dtype(true);
}
END_TEST

/* ---- generated: zero-length tensors, scalars, many tensors, names -------- */

START_TEST(zero_length)
{
	struct gen_tensor ts[4] = {
		{.name = "empty.a", .esize = 4, .ndim = 1, .shape = {0}},
		{.name = "x", .esize = 1, .ndim = 1, .shape = {3}},
		{.name = "empty.b", .esize = 2, .ndim = 2, .shape = {5, 0}},
		{.name = "empty.last",
		 .esize = 8,
		 .ndim = 3,
		 .shape = {0, 2, 2}},
	};
	size_t i;

	for (i = 0; i < 2; i++) {
		struct gen_opts o = {.packed = i == 1};
		struct tfs_image *img;
		struct gen_file f;
		size_t k;

		ts[0].dtype = ctext("F32");
		ts[1].dtype = ctext("U8");
		ts[2].dtype = ctext("I16");
		ts[3].dtype = ctext("F64");
		f = gen_build(ts, 4, &o);
		img = load_ok(&f);
		for (k = 0; k < 4; k++)
			check_gen_tensor(img, &f, &ts[k]);
		ck_assert_uint_eq(
			tfs_node_size(img->tree,
				      tfs_tree_resolve(img->tree, "empty/b")),
			0);
		tu_expect_xattr(img, "empty/b", "shape", "[5,0]");
		tu_expect_xattr(img, "", "burnpack.layout",
				i ? "packed" : "aligned");
		tfs_image_close(img);
		free(f.buf);
	}
}
END_TEST

START_TEST(scalars_and_no_tensors)
{
	struct gen_tensor ts[1] = {
		{.name = "w", .esize = 4, .ndim = 0},
	};
	struct gen_opts o = {0};
	cbor_item_t *sc = cbor_new_definite_map(5), *md;
	const struct tfs_xattr *x;
	struct tfs_image *img;
	struct gen_file f;
	json_t *meta;
	char *s;

	put(sc, ctext("epoch"), tagged("UInt", cu(7)));
	put(sc, ctext("huge"), tagged("UInt", cu(UINT64_MAX)));
	put(sc, ctext("lr"), tagged("Float", cbor_build_float2(0.5f)));
	put(sc, ctext("offset"), tagged("Int", cbor_build_negint8(4)));
	put(sc, ctext("trained"), tagged("Bool", cbor_build_bool(true)));
	md = cbor_new_definite_map(2);
	put(md, ctext("note"), cbor_build_stringn("a\0b", 3));
	put(md, ctext("producer"), ctext("burn"));
	o.scalars = sc;
	o.metadata = md;
	ts[0].dtype = ctext("F32"); /* a rank-0 tensor: one element */
	f = gen_build(ts, 1, &o);
	img = load_ok(&f);
	check_gen_tensor(img, &f, &ts[0]);
	tu_expect_xattr(img, "w", "shape", "[]");
	tu_expect_xattr(img, "", "burnpack.metadata.producer", "burn");
	/* a metadata value keeps its NUL byte in the xattr */
	x = tfs_tree_xattr(img->tree, TFS_ROOT_NODE,
			   TFS_XATTR_PREFIX "burnpack.metadata.note");
	ck_assert_ptr_nonnull(x);
	ck_assert_uint_eq(x->len, 3);
	ck_assert_mem_eq(x->value, "a\0b", 3);
	/* scalars have no bytes: no file for them */
	ck_assert_uint_eq(tfs_tree_resolve(img->tree, "epoch"), TFS_NO_NODE);
	ck_assert_uint_eq(img->tree->ntensors, 1);
	meta = meta_json(img, "metadata.json");
	s = json_dumps(json_object_get(meta, "scalars"), JSON_COMPACT);
	ck_assert_str_eq(s, "{\"epoch\":{\"UInt\":7},"
			    "\"huge\":{\"UInt\":\"18446744073709551615\"},"
			    "\"lr\":{\"Float\":0.5},\"offset\":{\"Int\":-5},"
			    "\"trained\":{\"Bool\":true}}");
	free(s);
	json_decref(meta);
	tfs_image_close(img);
	free(f.buf);

	/* no tensors at all: only the metadata */
	o = (struct gen_opts){0};
	f = gen_build(NULL, 0, &o);
	img = load_ok(&f);
	ck_assert_uint_eq(img->tree->ntensors, 0);
	tfs_image_close(img);
	free(f.buf);
}
END_TEST

START_TEST(thousands_of_tensors)
{
	enum { N = 3000 };
	struct gen_tensor *ts = calloc(N, sizeof(*ts));
	char(*names)[32] = calloc(N, sizeof(*names));
	struct gen_opts o = {0};
	struct tfs_image *img;
	struct gen_file f;
	size_t i;

	for (i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "layers.%zu.%s", i / 3,
			 i % 3 == 0   ? "weight"
			 : i % 3 == 1 ? "bias"
				      : "scale");
		ts[i].name = names[i];
		ts[i].dtype = ctext(i % 2 ? "F32" : "U8");
		ts[i].esize = i % 2 ? 4 : 1;
		ts[i].ndim = 1;
		ts[i].shape[0] = i % 7 + 1;
		ts[i].has_pid = true;
		ts[i].pid = i * 1000003u;
	}
	f = gen_build(ts, N, &o);
	img = load_ok(&f);
	ck_assert_uint_eq(img->tree->ntensors, N);
	for (i = 0; i < N; i++)
		check_gen_tensor(img, &f, &ts[i]);
	tu_expect_xattr(img, "layers/999/scale", "burnpack.param_id",
			"2999008997");
	tfs_image_close(img);

	/* the same tensors packed */
	for (i = 0; i < N; i++)
		ts[i].dtype = ctext(i % 2 ? "F32" : "U8");
	free(f.buf);
	o.packed = true;
	f = gen_build(ts, N, &o);
	img = load_ok(&f);
	tu_expect_xattr(img, "", "burnpack.layout", "packed");
	for (i = 0; i < N; i += 97)
		check_gen_tensor(img, &f, &ts[i]);
	tfs_image_close(img);
	free(f.buf);
	free(names);
	free(ts);
}
END_TEST

START_TEST(names_with_dots)
{
	static const char *const names[] = {
		"conv1.conv.weight",
		"a.b",
		"a.b.c",
		"x..y",
		".lead",
		"trail.",
		"enc.layers.0.attn.q_proj.weight",
		"plain",
	};
	struct gen_tensor ts[8];
	struct gen_opts o = {0};
	struct tfs_image *img;
	struct gen_file f;
	size_t i;

	memset(ts, 0, sizeof(ts));
	for (i = 0; i < 8; i++) {
		ts[i].name = names[i];
		ts[i].dtype = ctext("I32");
		ts[i].esize = 4;
		ts[i].ndim = 1;
		ts[i].shape[0] = i + 1;
	}
	f = gen_build(ts, 8, &o);
	img = load_ok(&f);
	for (i = 0; i < 8; i++) {
		const struct tfs_tensor *x = tu_tensor(img, names[i]);

		check_gen_tensor(img, &f, &ts[i]);
		/* each name reaches its own file, and the name is kept */
		ck_assert_uint_eq(tfs_tree_resolve(img->tree, x->path),
				  x->node);
		tu_expect_xattr(img, x->path, "name", names[i]);
	}
	ck_assert_str_eq(tu_tensor(img, "conv1.conv.weight")->path,
			 "conv1/conv/weight");
	ck_assert_str_eq(tu_tensor(img, "a.b.c")->path, "a/b/c");
	tfs_image_close(img);
	free(f.buf);
}
END_TEST

/* ---- layout detection (spec section 3) ----------------------------------- */

/* gen_build consumes the dtypes: set them again before each file */
static void layout_dtypes(struct gen_tensor *ts)
{
	ts[0].dtype = ctext("U8");
	ts[1].dtype = ctext("U8");
	ts[2].dtype = ctext("F32");
}

START_TEST(layout_rules)
{
	struct gen_tensor ts[3] = {
		{.name = "a", .esize = 1, .ndim = 1, .shape = {5}},
		{.name = "b", .esize = 1, .ndim = 1, .shape = {7}},
		{.name = "c", .esize = 4, .ndim = 1, .shape = {3}},
	};
	struct gen_opts o = {0};
	struct tfs_image *img;
	struct gen_file f;
	json_t *meta;
	size_t i;

	/* rule 4, aligned hint (starts on 256, gaps): trailing bytes kept */
	layout_dtypes(ts);
	o.trailing = 100;
	f = gen_build(ts, 3, &o);
	img = load_ok(&f);
	tu_expect_xattr(img, "", "burnpack.layout", "aligned");
	for (i = 0; i < 3; i++)
		check_gen_tensor(img, &f, &ts[i]);
	meta = meta_json(img, "metadata.json");
	ck_assert_str_eq(json_string_value(json_array_get(
				 json_object_get(meta, "warnings"), 0)),
			 "100 trailing bytes after the last tensor");
	ck_assert_ptr_nonnull(
		strstr(json_string_value(json_object_get(meta, "layout_rule")),
		       "aligned hint"));
	json_decref(meta);
	tfs_image_close(img);
	free(f.buf);

	/* rule 4, packed hint (contiguous from 0, starts off 256) */
	layout_dtypes(ts);
	o.packed = true;
	o.trailing = 3;
	f = gen_build(ts, 3, &o);
	/* the size must not happen to fit the aligned rule exactly */
	ck_assert_uint_ne((10 + f.ms + 255) / 256 * 256 + 24, f.len);
	img = load_ok(&f);
	tu_expect_xattr(img, "", "burnpack.layout", "packed");
	for (i = 0; i < 3; i++)
		check_gen_tensor(img, &f, &ts[i]);
	tfs_image_close(img);
	free(f.buf);

	/* version 0 is accepted, as by the reference reader */
	layout_dtypes(ts);
	o = (struct gen_opts){.packed = true};
	f = gen_build(ts, 3, &o);
	f.buf[4] = 0;
	img = load_ok(&f);
	tu_expect_xattr(img, "", "burnpack.version", "0");
	tfs_image_close(img);
	free(f.buf);
}
END_TEST

/* rule 1: the metadata ends on a 256-byte boundary, both layouts agree */
START_TEST(layout_coincide)
{
	struct gen_tensor ts[1] = {
		{.name = "v", .esize = 2, .ndim = 1, .shape = {9}},
	};
	struct gen_opts o = {0};
	struct tfs_image *img;
	struct gen_file f;
	cbor_item_t *md;
	char pad[600];
	size_t n;

	/* grow a metadata value until 10 + ms is a multiple of 256 */
	for (n = 0; n < sizeof(pad) - 1; n++) {
		memset(pad, 'p', n);
		pad[n] = '\0';
		md = cbor_new_definite_map(1);
		put(md, ctext("pad"), ctext(pad));
		o.metadata = md;
		ts[0].dtype = ctext("BF16");
		f = gen_build(ts, 1, &o);
		if ((10 + f.ms) % 256 == 0)
			break;
		free(f.buf);
	}
	ck_assert_uint_lt(n, sizeof(pad) - 1);
	ck_assert_uint_eq(f.data_start, 10 + f.ms);
	img = load_ok(&f);
	check_gen_tensor(img, &f, &ts[0]);
	tfs_image_close(img);
	free(f.buf);
}
END_TEST

/* ---- rejects ------------------------------------------------------------- */

/* one F32 [4] tensor "w" at [start, end), aligned, for hand-breaking */
static struct gen_file one_tensor(const char *dtype, uint64_t n)
{
	struct gen_tensor ts[1] = {
		{.name = "w", .esize = 4, .ndim = 1, .shape = {n}},
	};
	struct gen_opts o = {0};

	ts[0].dtype = ctext(dtype);
	return gen_build(ts, 1, &o);
}

START_TEST(reject_header)
{
	size_t len;
	uint8_t *b =
		tu_read_file(tu_testdata("burnpack/valid/f32_2x3.bpk"), &len);
	uint8_t *c;

	/* the edits below reach byte 60 */
	ck_assert_uint_ge(len, 64);
	c = malloc(len);
	ck_assert_ptr_nonnull(c);
	/* shorter than the header */
	tu_expect_reject(b, 6, -EBADMSG, "header", 6);
	/* version 2: unsupported */
	memcpy(c, b, len);
	c[4] = 2;
	tu_expect_reject(c, len, -ENOTSUP, "version", 4);
	/* metadata size past EOF (ms 54 -> 1000) */
	memcpy(c, b, len);
	c[6] = 0xe8;
	c[7] = 0x03;
	tu_expect_reject(c, len, -EBADMSG, "metadata_size", 6);
	/* metadata size over the 100 MiB limit */
	memcpy(c, b, len);
	c[6] = 1;
	c[7] = 0;
	c[8] = 0x40;
	c[9] = 0x06; /* 0x06400001 = 100 MiB + 1 */
	tu_expect_reject(c, len, -E2BIG, "100 MiB", 6);
	/* the file cut inside the metadata */
	tu_expect_reject(b, 40, -EBADMSG, "metadata_size", 6);
	/*
	 * truncated metadata: ms 54 -> 52 cuts "82 00 18 18" (data_offsets
	 * at 60, spec section 9) after "82 00": that array cannot fit
	 */
	memcpy(c, b, len);
	c[6] = 52;
	tu_expect_reject(c, len, -EBADMSG, "CBOR", 60);
	/* CBOR garbage */
	memcpy(c, b, len);
	memset(c + 10, 0xff, 8);
	tu_expect_reject(c, len, -EBADMSG, "CBOR", 10);
	memcpy(c, b, len);
	c[10] = 0x1c; /* reserved additional info */
	tu_expect_reject(c, len, -EBADMSG, "CBOR", 10);
	/* the root is not a map */
	memcpy(c, b, len);
	c[10] = 0x81; /* array(1) holding "tensors" */
	tu_expect_reject(c, len, -EBADMSG, "not a map", 10);
	/* no "tensors" key: "tensors" -> "tensorz" */
	memcpy(c, b, len);
	c[18] = 'z';
	tu_expect_reject(c, len, -EBADMSG, "tensors: missing", 10);
	free(c);
	free(b);
}
END_TEST

START_TEST(reject_offsets)
{
	struct gen_tensor ts[1] = {
		{.name = "w", .esize = 4, .ndim = 1, .shape = {6}},
	};
	struct gen_opts o = {0};
	struct gen_file f;
	uint64_t at;

	/* end < start: [100, 24] */
	ts[0].dtype = ctext("F32");
	ts[0].bump_start = 100;
	f = gen_build(ts, 1, &o);
	at = value_after_key(f.buf, f.len, "data_offsets");
	tu_expect_reject(f.buf, f.len, -EBADMSG, "end 24 < start 100", at);
	free(f.buf);

	/* data offsets past EOF: [4, 28] in a file that holds [0, 24] */
	ts[0].dtype = ctext("F32");
	ts[0].bump_start = 4;
	ts[0].bump_end = 4;
	f = gen_build(ts, 1, &o);
	at = value_after_key(f.buf, f.len, "data_offsets");
	tu_expect_reject(f.buf, f.len, -EBADMSG, "past the end", at);
	free(f.buf);

	/* far past EOF, and start + data_start overflowing 64 bits */
	ts[0].dtype = ctext("F32");
	ts[0].bump_start = INT64_MAX;
	ts[0].bump_end = INT64_MAX;
	f = gen_build(ts, 1, &o);
	at = value_after_key(f.buf, f.len, "data_offsets");
	tu_expect_reject(f.buf, f.len, -EBADMSG, "past the end", at);
	free(f.buf);
	/* [2^64 - 25, 2^64 - 1]: 24 bytes, data_start + start overflows */
	ts[0].dtype = ctext("F32");
	ts[0].bump_start = -25;
	ts[0].bump_end = -25;
	f = gen_build(ts, 1, &o);
	at = value_after_key(f.buf, f.len, "data_offsets");
	tu_expect_reject(f.buf, f.len, -EBADMSG, "past the end", at);
	free(f.buf);

	/* the file cut 4 bytes short: the tensor ends past EOF */
	ts[0].dtype = ctext("F32");
	ts[0].bump_start = ts[0].bump_end = 0;
	f = gen_build(ts, 1, &o);
	at = value_after_key(f.buf, f.len, "data_offsets");
	tu_expect_reject(f.buf, f.len - 4, -EBADMSG, "neither", at);
	/* byte length does not match the shape: [0, 24] -> [0, 20] */
	ck_assert_mem_eq(f.buf + at, "\x82\x00\x18\x18", 4);
	f.buf[at + 3] = 20;
	tu_expect_reject(f.buf, f.len, -EBADMSG, "needs 6 x 4-byte F32", at);
	free(f.buf);
}
END_TEST

/* rule 4 with a hint for the aligned layout, but the file only fits packed */
START_TEST(reject_layout_neither)
{
	struct gen_tensor ts[1] = {
		{.name = "m", .esize = 1, .ndim = 1, .shape = {5}},
	};
	struct gen_opts o = {.packed = true, .trailing = 3};
	struct gen_file f;
	uint64_t at;

	/* {"Bool": "Native"} is only written by 0.21+ (aligned) */
	ts[0].dtype = tagged("Bool", ctext("Native"));
	f = gen_build(ts, 1, &o);
	ck_assert_uint_lt(f.len, (10 + f.ms + 255) / 256 * 256 + 5);
	at = value_after_key(f.buf, f.len, "data_offsets");
	tu_expect_reject(f.buf, f.len, -EBADMSG,
			 "fits neither layout (aligned needs", at);
	tu_expect_reject(f.buf, f.len, -EBADMSG, "0.20+ hint chose aligned",
			 at);
	free(f.buf);
}
END_TEST

START_TEST(reject_dtypes)
{
	cbor_item_t *bad_scheme;
	struct gen_file f = one_tensor("F8", 6);
	uint64_t at = value_after_key(f.buf, f.len, "dtype");
	struct gen_tensor ts[1] = {
		{.name = "w", .esize = 4, .ndim = 1, .shape = {1}},
	};
	struct gen_opts o = {0};

	tu_expect_reject(f.buf, f.len, -EBADMSG, "unknown dtype 'F8'", at);
	free(f.buf);
	/* lowercase is not a variant name either */
	f = one_tensor("f32", 6);
	tu_expect_reject(f.buf, f.len, -EBADMSG, "unknown dtype 'f32'", at);
	free(f.buf);

	ts[0].dtype = tagged("Complex", ctext("F32"));
	f = gen_build(ts, 1, &o);
	tu_expect_reject(f.buf, f.len, -EBADMSG,
			 "unknown dtype variant 'Complex'",
			 value_after_key(f.buf, f.len, "dtype"));
	free(f.buf);
	ts[0].dtype = tagged("Bool", ctext("U16"));
	f = gen_build(ts, 1, &o);
	tu_expect_reject(f.buf, f.len, -EBADMSG, "Bool storage",
			 value_after_key(f.buf, f.len, "dtype"));
	free(f.buf);
	ts[0].dtype = cu(4);
	f = gen_build(ts, 1, &o);
	tu_expect_reject(f.buf, f.len, -EBADMSG, "neither text nor",
			 value_after_key(f.buf, f.len, "dtype"));
	free(f.buf);
	/* a QFloat scheme key with a NUL byte cannot become a JSON key */
	bad_scheme = cbor_new_definite_map(1);
	put(bad_scheme, cbor_build_stringn("mo\0de", 5), ctext("Symmetric"));
	ts[0].dtype = tagged("QFloat", bad_scheme);
	f = gen_build(ts, 1, &o);
	tu_expect_reject(f.buf, f.len, -EBADMSG, "QFloat scheme",
			 value_after_key(f.buf, f.len, "dtype"));
	free(f.buf);
}
END_TEST

START_TEST(reject_overlap_and_duplicates)
{
	struct gen_tensor ts[2] = {
		{.name = "a", .esize = 4, .ndim = 1, .shape = {100}},
		/* aligned at 512; moved to [396, 796) in the CBOR */
		{.name = "b",
		 .esize = 4,
		 .ndim = 1,
		 .shape = {100},
		 .bump_start = -116,
		 .bump_end = -116},
	};
	struct gen_opts o = {0};
	struct gen_file f;
	uint64_t at;
	uint8_t *p;

	ts[0].dtype = ctext("F32");
	ts[1].dtype = ctext("F32");
	f = gen_build(ts, 2, &o);
	/* b's data_offsets: 82 19 018c 19 031c */
	p = memmem(f.buf + 10, f.ms, "\x82\x19\x01\x8c\x19\x03\x1c", 7);
	ck_assert_ptr_nonnull(p);
	/* the builder names b's descriptor: the map after the key "b" */
	p = memmem(f.buf + 10, f.ms, "\x61\x62\xa3", 3);
	ck_assert_ptr_nonnull(p);
	at = (uint64_t)(p - f.buf) + 2;
	tu_expect_reject(f.buf, f.len, -EBADMSG,
			 "'b': data [652, 1052) overlaps tensor 'a' [256, 656)",
			 at);
	/* the same name twice: "b" -> "a" */
	p = memmem(f.buf + 10, f.ms, "\x61\x62\xa3", 3);
	ck_assert_ptr_nonnull(p);
	p[1] = 'a';
	tu_expect_reject(f.buf, f.len, -EBADMSG, "duplicate key 'a'",
			 value_after_key(f.buf, f.len, "tensors"));
	free(f.buf);
}
END_TEST

START_TEST(reject_fields)
{
	struct gen_tensor ts[1] = {
		{.name = "w",
		 .esize = 4,
		 .ndim = 1,
		 .shape = {6},
		 .has_pid = true,
		 .pid = 42},
	};
	struct gen_opts o = {0};
	struct gen_file f;
	uint64_t at, desc;
	uint8_t *p;

	ts[0].dtype = ctext("F32");
	f = gen_build(ts, 1, &o);
	desc = find_in_meta(f.buf, f.len, "\x61w", 2) + 2;
	/* a dim that is not an unsigned integer: [6] -> [-1] */
	at = value_after_key(f.buf, f.len, "shape");
	ck_assert_mem_eq(f.buf + at, "\x81\x06", 2);
	f.buf[at + 1] = 0x20;
	tu_expect_reject(f.buf, f.len, -EBADMSG, "shape: dim 0", at);
	f.buf[at + 1] = 0x06;
	/* param_id 42 (18 2a) -> -43 (38 2a) */
	at = value_after_key(f.buf, f.len, "param_id");
	ck_assert_mem_eq(f.buf + at, "\x18\x2a", 2);
	f.buf[at] = 0x38;
	tu_expect_reject(f.buf, f.len, -EBADMSG, "param_id: not an unsigned",
			 at);
	f.buf[at] = 0x18;
	/* a descriptor field given twice: "shape" -> "dtype" */
	p = memmem(f.buf + 10, f.ms, "\x65shape", 6);
	memcpy(p + 1, "dtype", 5);
	tu_expect_reject(f.buf, f.len, -EBADMSG, "duplicate key 'dtype'", desc);
	memcpy(p + 1, "shape", 5);
	/* a missing field: "data_offsets" -> "data_offsetz" (ignored) */
	p = memmem(f.buf + 10, f.ms, "data_offsets", 12);
	p[11] = 'z';
	tu_expect_reject(f.buf, f.len, -EBADMSG, "data_offsets: missing", desc);
	free(f.buf);
}
END_TEST

/* {"tensors": {"w": @desc}} with 24 data bytes, aligned */
static struct gen_file wrap_descriptor(cbor_item_t *desc)
{
	cbor_item_t *root = cbor_new_definite_map(1);
	cbor_item_t *tensors = cbor_new_definite_map(1);

	put(tensors, ctext("w"), desc);
	put(root, ctext("tensors"), tensors);
	return gen_wrap(root, false, 24);
}

static cbor_item_t *uint_array(size_t n, const uint64_t *v)
{
	cbor_item_t *a = cbor_new_definite_array(n);
	size_t i;

	for (i = 0; i < n; i++)
		ck_assert(cbor_array_push(a, cbor_move(cu(v[i]))));
	return a;
}

/* a descriptor with dtype F32, shape @shape, data_offsets @offsets */
static cbor_item_t *descriptor(cbor_item_t *shape, cbor_item_t *offsets)
{
	cbor_item_t *d = cbor_new_definite_map(3);

	put(d, ctext("dtype"), ctext("F32"));
	put(d, ctext("shape"), shape);
	put(d, ctext("data_offsets"), offsets);
	return d;
}

START_TEST(reject_shapes_of_fields)
{
	static const uint64_t six[1] = {6}, ok[2] = {0, 24},
			      three[3] = {0, 24, 48};
	struct gen_file f;

	/* the descriptor is not a map */
	f = wrap_descriptor(cu(5));
	tu_expect_reject(f.buf, f.len, -EBADMSG, "descriptor: not a map",
			 find_in_meta(f.buf, f.len, "\x61w", 2) + 2);
	free(f.buf);
	/* the tensors value is not a map */
	f = gen_wrap(tagged("tensors", uint_array(1, six)), false, 0);
	tu_expect_reject(f.buf, f.len, -EBADMSG, "tensors: not a map",
			 value_after_key(f.buf, f.len, "tensors"));
	free(f.buf);
	/* shape is not an array */
	f = wrap_descriptor(descriptor(cu(6), uint_array(2, ok)));
	tu_expect_reject(f.buf, f.len, -EBADMSG, "shape: not an array",
			 value_after_key(f.buf, f.len, "shape"));
	free(f.buf);
	/* data_offsets with three entries */
	f = wrap_descriptor(
		descriptor(uint_array(1, six), uint_array(3, three)));
	tu_expect_reject(f.buf, f.len, -EBADMSG, "not an array of 2",
			 value_after_key(f.buf, f.len, "data_offsets"));
	free(f.buf);
	/* and the well-formed control loads */
	f = wrap_descriptor(descriptor(uint_array(1, six), uint_array(2, ok)));
	tfs_image_close(load_ok(&f));
	free(f.buf);
}
END_TEST

START_TEST(reject_metadata_and_scalars)
{
	struct gen_tensor ts[1] = {
		{.name = "w", .esize = 4, .ndim = 1, .shape = {1}},
	};
	struct gen_opts o = {0};
	struct gen_file f;
	cbor_item_t *m;

	m = cbor_new_definite_map(1);
	put(m, ctext("epochs"), cu(3));
	o.metadata = m;
	ts[0].dtype = ctext("F32");
	f = gen_build(ts, 1, &o);
	tu_expect_reject(f.buf, f.len, -EBADMSG,
			 "metadata: a value is not text",
			 value_after_key(f.buf, f.len, "epochs"));
	free(f.buf);

	m = cbor_new_definite_map(1);
	put(m, ctext("lr"), tagged("Float", ctext("0.5")));
	o.metadata = NULL;
	o.scalars = m;
	ts[0].dtype = ctext("F32");
	f = gen_build(ts, 1, &o);
	tu_expect_reject(f.buf, f.len, -EBADMSG, "scalars: 'lr'",
			 value_after_key(f.buf, f.len, "lr"));
	free(f.buf);

	m = cbor_new_definite_map(1);
	put(m, ctext("n"), tagged("Int", cu(UINT64_MAX)));
	o.scalars = m;
	ts[0].dtype = ctext("F32");
	f = gen_build(ts, 1, &o);
	tu_expect_reject(f.buf, f.len, -EBADMSG, "scalars: 'n'",
			 value_after_key(f.buf, f.len, "n"));
	free(f.buf);
}
END_TEST

START_TEST(reject_limits)
{
	enum { N = 100001 };
	struct gen_tensor ts[1] = {
		{.name = "w",
		 .esize = 4,
		 .ndim = 1,
		 .shape = {1},
		 .bump_end = 12ll << 30},
	};
	struct gen_opts o = {0};
	const struct tfs_format *fmt = tfs_format_by_name("burnpack");
	struct tfs_builder *b;
	struct tfs_source src;
	struct tfs_diag d;
	struct gen_file f;
	uint8_t *buf;
	size_t i, len;
	uint64_t at;

	/* one tensor above 10 GiB: data_offsets [0, 12 GiB] (no bytes) */
	ts[0].dtype = ctext("F32");
	f = gen_build(ts, 1, &o);
	at = value_after_key(f.buf, f.len, "data_offsets");
	tu_expect_reject(f.buf, f.len, -E2BIG, "10 GiB", at);
	free(f.buf);

	/* 100,001 tensors: "" -> 0 pairs, counted before decoding */
	len = 10 + 1 + 8 + 5 + 2 * (size_t)N;
	buf = calloc(len, 1);
	memcpy(buf, "NRUB\x01\x00", 6);
	for (i = 0; i < 4; i++)
		buf[6 + i] = (uint8_t)((len - 10) >> (8 * i));
	memcpy(buf + 10, "\xa1\x67tensors\xba", 10);
	for (i = 0; i < 4; i++)
		buf[20 + i] = (uint8_t)(N >> (8 * (3 - i)));
	for (i = 0; i < N; i++)
		buf[24 + 2 * i] = 0x60;
	tu_expect_reject(buf, len, -E2BIG, "100000", 19);
	free(buf);

	/* 4,000,001 CBOR items (under an ignored key), before decoding */
	len = 10 + 1 + 8 + 1 + 5 + 5 + 4000001;
	buf = calloc(len, 1);
	memcpy(buf, "NRUB\x01\x00", 6);
	for (i = 0; i < 4; i++)
		buf[6 + i] = (uint8_t)((len - 10) >> (8 * i));
	memcpy(buf + 10, "\xa2\x67tensors\xa0\x64junk\x9a\x00\x3d\x09\x01", 20);
	tu_expect_reject(buf, len, -E2BIG, "CBOR items exceed", 10);
	free(buf);

	/* a file above 100 GiB: only the size is looked at */
	ck_assert_ptr_nonnull(fmt);
	f = one_tensor("F32", 6);
	tfs_source_init_memory(&src, f.buf, (101ull << 30));
	ck_assert_int_eq(tfs_builder_new(&b, &src, NULL), 0);
	tfs_diag_clear(&d);
	ck_assert_int_eq(fmt->load(&src, b, &d), -E2BIG);
	ck_assert_ptr_nonnull(strstr(d.msg, "100 GiB"));
	tfs_builder_free(b);
	free(f.buf);
}
END_TEST

/* the committed sample files: valid ones load, rejects fail with exit 2/3 */
START_TEST(sample_files)
{
	static const char *const valid[] = {
		"burnpack/valid/aligned_every_dtype.bpk",
		"burnpack/valid/packed_v019.bpk",
		"burnpack/valid/scalars_v022.bpk",
		"burnpack/valid/f32_2x3.bpk",
		"burnpack/valid/f32_2x3_meta.bpk",
		"burnpack/valid/multi_v021.bpk",
	};
	static const struct {
		const char *file;
		int err;
	} reject[] = {
		{"burnpack/reject/truncated_metadata.bpk", -EBADMSG},
		{"burnpack/reject/metadata_size_past_eof.bpk", -EBADMSG},
		{"burnpack/reject/data_offset_past_eof.bpk", -EBADMSG},
		{"burnpack/reject/end_before_start.bpk", -EBADMSG},
		{"burnpack/reject/layout_fits_neither.bpk", -EBADMSG},
		{"burnpack/reject/unknown_dtype.bpk", -EBADMSG},
		{"burnpack/reject/cbor_garbage.bpk", -EBADMSG},
		{"burnpack/reject/version_2.bpk", -ENOTSUP},
	};
	struct tfs_image *img;
	struct tfs_diag d;
	size_t i;

	for (i = 0; i < sizeof(valid) / sizeof(valid[0]); i++) {
		ck_assert_msg(tu_load_file(tu_testdata(valid[i]), &img, &d) ==
				      0,
			      "%s: %s", valid[i], d.msg);
		tfs_image_close(img);
	}
	for (i = 0; i < sizeof(reject) / sizeof(reject[0]); i++) {
		ck_assert_msg(tu_load_file(tu_testdata(reject[i].file), &img,
					   &d) == reject[i].err,
			      "%s: %s", reject[i].file, d.msg);
		ck_assert(d.has_offset);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("burnpack");
	TCase *tc = tcase_create("burnpack");

	tcase_add_test(tc, real_model);
	tcase_add_test(tc, generated_single);
	tcase_add_test(tc, generated_multi);
	tcase_add_test(tc, every_dtype_aligned);
	tcase_add_test(tc, every_dtype_packed);
	tcase_add_test(tc, zero_length);
	tcase_add_test(tc, scalars_and_no_tensors);
	tcase_add_test(tc, thousands_of_tensors);
	tcase_add_test(tc, names_with_dots);
	tcase_add_test(tc, layout_rules);
	tcase_add_test(tc, layout_coincide);
	tcase_add_test(tc, reject_header);
	tcase_add_test(tc, reject_offsets);
	tcase_add_test(tc, reject_layout_neither);
	tcase_add_test(tc, reject_dtypes);
	tcase_add_test(tc, reject_overlap_and_duplicates);
	tcase_add_test(tc, reject_fields);
	tcase_add_test(tc, reject_shapes_of_fields);
	tcase_add_test(tc, reject_metadata_and_scalars);
	tcase_add_test(tc, reject_limits);
	tcase_add_test(tc, sample_files);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
