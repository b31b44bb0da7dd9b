// SPDX-License-Identifier: MIT
/*
 * Pre-GGUF ggml files (specs/ggml-legacy.md): whisper.cpp models and its
 * silero VAD models, llama.cpp's unversioned "ggml", "ggmf" v1 and "ggjt"
 * v1-v3.
 *
 *   u32 magic, [u32 version], a header whose layout depends on the program
 *   that wrote it, then tensor records until the end of the file:
 *   i32 n_dims, i32 name_len, i32 type, i32 ne[n_dims], the name,
 *   [ggjt: zero padding to a multiple of 32 of the file offset], the data.
 *
 * Nothing in a "ggml" file says which program wrote it, so each candidate
 * layout (whisper.cpp, silero VAD, llama) is tried and accepted only if its
 * header is plausible and walking its records ends exactly at the end of
 * the file with every record valid; exactly one must fit (section 6).
 * The quantized types are named by their generation (ggml_types.h): a
 * ggjt v1 Q4_0 block is "q4_0_v1", opaque to tensorfs, not today's "q4_0".
 * Every tensor is a raw extent of the file; a whisper.cpp model's mel
 * filter bank is the tensor "mel_filters".  Hyper-parameters and the
 * vocabulary go into metadata.json (the vocabulary when first read, if
 * large), and a one-line "summary" on the root.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ggml_types.h"
#include "common/spans.h"
#include "core/builder.h"
#include "core/checked.h"
#include "core/cursor.h"
#include "core/diag.h"
#include "core/dtype.h"
#include "core/format.h"
#include "core/names.h"
#include "core/source.h"

#define MAGIC_GGML 0x67676d6cu /* bytes "lmgg" */
#define MAGIC_GGMF 0x67676d66u
#define MAGIC_GGJT 0x67676a74u
#define MAGIC_GGLA 0x67676c61u

#define GL_MAX_DIMS 4
#define GL_NAME_MAX 4096
#define GL_VOCAB_MAX (1u << 20)
#define GL_FFT_MAX 4096
#define GL_VAD_TYPE_MAX 64
#define GL_VAD_LAYERS_MAX 64
#define GL_GGJT_ALIGN 32
/* a vocabulary up to this size goes into metadata.json at mount */
#define GL_EAGER_VOCAB_BYTES (64u << 10)

enum gl_family {
	FAM_WHISPER,
	FAM_VAD,
	FAM_LLAMA_GGML,
	FAM_LLAMA_GGMF,
	FAM_LLAMA_GGJT,
};

static const char *const family_names[] = {
	[FAM_WHISPER] = "whisper",	 [FAM_VAD] = "whisper-vad",
	[FAM_LLAMA_GGML] = "llama-ggml", [FAM_LLAMA_GGMF] = "llama-ggmf",
	[FAM_LLAMA_GGJT] = "llama-ggjt",
};

/* what a candidate is called in messages */
static const char *const family_what[] = {
	[FAM_WHISPER] = "a whisper.cpp model",
	[FAM_VAD] = "a whisper.cpp silero VAD model",
	[FAM_LLAMA_GGML] = "an unversioned llama.cpp model",
	[FAM_LLAMA_GGMF] = "a llama.cpp ggmf model",
	[FAM_LLAMA_GGJT] = "a llama.cpp ggjt model",
};

static const char *const whisper_hp[] = {
	"n_vocab",	 "n_audio_ctx", "n_audio_state", "n_audio_head",
	"n_audio_layer", "n_text_ctx",	"n_text_state",	 "n_text_head",
	"n_text_layer",	 "n_mels",	"ftype",
};
#define WHISPER_HP 11

static const char *const llama_hp[] = {
	"n_vocab", "n_embd", "n_mult", "n_head", "n_layer", "n_rot", "ftype",
};
#define LLAMA_HP 7

static const char *const vad_tail[] = {
	"lstm_input_size",
	"lstm_hidden_size",
	"final_conv_in",
	"final_conv_out",
};

struct gl_rec {
	const uint8_t *name;
	uint32_t name_len, n_dims, type;
	const struct tfs_ggml_type *gt;
	uint64_t ne[GL_MAX_DIMS];
	uint64_t at;	      /* the record's first byte */
	uint64_t pad_at, pad; /* ggjt padding before the data */
	uint64_t data, nbytes;
};

/* one layout tried on the file */
struct gl_cand {
	enum gl_family fam;
	uint32_t version; /* 0: none */
	unsigned gen;	  /* quantization generation 0..2 */
	bool float_only;  /* silero VAD: F32 and F16 */
	uint32_t align;	  /* of each tensor's data: 1 or 32 */
	int32_t hp[WHISPER_HP];
	/* whisper: the mel filters (after n_mel, n_fft at mel_at) */
	int32_t n_mel, n_fft;
	uint64_t mel_at;
	/* the vocabulary: whisper from its count, llama its first entry */
	uint64_t vocab_at, vocab_end, vocab_count;
	bool scores;
	/* silero VAD */
	const uint8_t *vad_type;
	uint32_t vad_type_len;
	int32_t vad_version[3], n_window, n_context, n_layers;
	uint64_t layers_at;
	int32_t vad_tail[4];
	uint64_t records_at;
	bool in_walk; /* the header fitted; a record failed */
	struct gl_rec *recs;
	size_t n, cap;
	struct tfs_diag d; /* its first failure */
};

struct gl_ctx {
	const struct tfs_source *src;
	struct tfs_builder *b;
	struct tfs_diag *d;
};

static int gl_probe(const struct tfs_source *src)
{
	uint32_t m;

	if (src->size < 4)
		return 0;
	m = (uint32_t)tfs_load_le(src->data, 4);
	if (m == MAGIC_GGML || m == MAGIC_GGMF || m == MAGIC_GGJT ||
	    m == MAGIC_GGLA)
		return 100;
	/* a big-endian writer's magic: refused here, by name */
	m = (uint32_t)tfs_load_be(src->data, 4);
	if (m == MAGIC_GGML || m == MAGIC_GGMF || m == MAGIC_GGJT)
		return 100;
	return 0;
}

/* ---- reading --------------------------------------------------------- */

static int ends_inside(struct tfs_cursor *c, struct tfs_diag *d,
		       const char *what)
{
	return tfs_diag_at(d, -EBADMSG, tfs_cursor_offset(c),
			   "%s: the file ends inside it", what);
}

static int get_i32(struct tfs_cursor *c, struct tfs_diag *d, const char *what,
		   int32_t *v)
{
	return tfs_cursor_i32le(c, v) ? ends_inside(c, d, what) : 0;
}

/* @n strings (i32 length, bytes), each followed by @extra bytes */
static int skip_vocab(struct tfs_cursor *c, struct tfs_diag *d, uint64_t n,
		      unsigned extra)
{
	uint64_t i, at;
	int32_t len;

	for (i = 0; i < n; i++) {
		at = tfs_cursor_offset(c);
		if (tfs_cursor_i32le(c, &len))
			return tfs_diag_at(d, -EBADMSG, at,
					   "vocabulary: token %" PRIu64
					   ": the file ends inside it",
					   i);
		if (len < 0)
			return tfs_diag_at(d, -EBADMSG, at,
					   "vocabulary: token %" PRIu64
					   ": length %d is negative",
					   i, len);
		if (tfs_cursor_skip(c, (uint64_t)len + extra))
			return tfs_diag_at(d, -EBADMSG, at,
					   "vocabulary: token %" PRIu64
					   ": %d bytes%s past the end of the "
					   "file",
					   i, len, extra ? " and a score" : "");
	}
	return 0;
}

static int head_whisper(struct gl_cand *k, struct tfs_cursor *c)
{
	struct tfs_diag *d = &k->d;
	uint64_t at, bytes;
	int32_t n;
	int i;

	for (i = 0; i < WHISPER_HP; i++)
		if (get_i32(c, d, whisper_hp[i], &k->hp[i]))
			return -EBADMSG;
	for (i = 0; i < WHISPER_HP; i++)
		if (k->hp[i] < (i == 10 ? 0 : 1))
			return tfs_diag_at(d, -EBADMSG, 4 + 4 * (uint64_t)i,
					   "hparams.%s: %d, not %s",
					   whisper_hp[i], k->hp[i],
					   i == 10 ? "0 or more" : "positive");
	if (k->hp[2] != k->hp[6])
		return tfs_diag_at(d, -EBADMSG, 4 + 4 * 6,
				   "hparams.n_text_state: %d, not "
				   "n_audio_state (%d)",
				   k->hp[6], k->hp[2]);
	k->gen = (unsigned)(k->hp[10] / 1000);
	if (k->gen >= TFS_GGML_GEN_COUNT)
		return tfs_diag_at(d, -ENOTSUP, 4 + 4 * 10,
				   "hparams.ftype: %d, quantization version "
				   "%u is unknown (0 to 2 are known)",
				   k->hp[10], k->gen);
	at = tfs_cursor_offset(c);
	if (get_i32(c, d, "mel filters n_mel", &k->n_mel) ||
	    get_i32(c, d, "mel filters n_fft", &k->n_fft))
		return -EBADMSG;
	if (k->n_mel != k->hp[9])
		return tfs_diag_at(d, -EBADMSG, at,
				   "mel filters n_mel: %d, not hparams.n_mels "
				   "(%d)",
				   k->n_mel, k->hp[9]);
	if (k->n_fft < 1 || k->n_fft > GL_FFT_MAX)
		return tfs_diag_at(d, -EBADMSG, at + 4,
				   "mel filters n_fft: %d, not 1 to %d",
				   k->n_fft, GL_FFT_MAX);
	k->mel_at = tfs_cursor_offset(c);
	/* both below 2^31: no overflow in 64 bits */
	bytes = (uint64_t)k->n_mel * (uint64_t)k->n_fft * 4;
	if (tfs_cursor_skip(c, bytes))
		return tfs_diag_at(d, -EBADMSG, k->mel_at,
				   "mel filters: %d x %d floats, past the end "
				   "of the file",
				   k->n_mel, k->n_fft);
	k->vocab_at = tfs_cursor_offset(c);
	if (get_i32(c, d, "vocabulary count", &n))
		return -EBADMSG;
	if (n < 0 || (uint64_t)n > tfs_cursor_remaining(c) / 4)
		return tfs_diag_at(d, -EBADMSG, k->vocab_at,
				   "vocabulary count: %d tokens cannot fit in "
				   "the %" PRIu64 " bytes left",
				   n, tfs_cursor_remaining(c));
	k->vocab_count = (uint64_t)n;
	if (skip_vocab(c, d, k->vocab_count, 0))
		return -EBADMSG;
	k->vocab_end = tfs_cursor_offset(c);
	return 0;
}

static bool printable_ascii(const uint8_t *s, uint32_t len)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return false;
	return true;
}

static int head_vad(struct gl_cand *k, struct tfs_cursor *c)
{
	struct tfs_diag *d = &k->d;
	uint64_t at = tfs_cursor_offset(c);
	int32_t len, v;
	int i;

	k->float_only = true;
	k->gen = 2;
	if (get_i32(c, d, "model type length", &len))
		return -EBADMSG;
	if (len < 1 || len > GL_VAD_TYPE_MAX)
		return tfs_diag_at(d, -EBADMSG, at,
				   "model type length: %d, not 1 to %d", len,
				   GL_VAD_TYPE_MAX);
	k->vad_type_len = (uint32_t)len;
	if (tfs_cursor_bytes(c, k->vad_type_len, &k->vad_type))
		return ends_inside(c, d, "model type");
	if (!printable_ascii(k->vad_type, k->vad_type_len))
		return tfs_diag_at(d, -EBADMSG, at + 4,
				   "model type: not printable ASCII");
	for (i = 0; i < 3; i++)
		if (get_i32(c, d, "version", &k->vad_version[i]))
			return -EBADMSG;
	if (get_i32(c, d, "n_window", &k->n_window) ||
	    get_i32(c, d, "n_context", &k->n_context))
		return -EBADMSG;
	at = tfs_cursor_offset(c);
	if (get_i32(c, d, "n_encoder_layers", &k->n_layers))
		return -EBADMSG;
	if (k->n_layers < 0 || k->n_layers > GL_VAD_LAYERS_MAX)
		return tfs_diag_at(d, -EBADMSG, at,
				   "n_encoder_layers: %d, not 0 to %d",
				   k->n_layers, GL_VAD_LAYERS_MAX);
	k->layers_at = tfs_cursor_offset(c);
	for (i = 0; i < 3 * k->n_layers; i++)
		if (get_i32(c, d, "encoder layer", &v))
			return -EBADMSG;
	for (i = 0; i < 4; i++)
		if (get_i32(c, d, vad_tail[i], &k->vad_tail[i]))
			return -EBADMSG;
	return 0;
}

static int head_llama(struct gl_cand *k, struct tfs_cursor *c)
{
	struct tfs_diag *d = &k->d;
	uint64_t at = tfs_cursor_offset(c);
	int i;

	k->scores = k->fam != FAM_LLAMA_GGML;
	k->align = k->fam == FAM_LLAMA_GGJT ? GL_GGJT_ALIGN : 1;
	k->gen = k->fam == FAM_LLAMA_GGJT ? k->version - 1 : 0;
	for (i = 0; i < LLAMA_HP; i++)
		if (get_i32(c, d, llama_hp[i], &k->hp[i]))
			return -EBADMSG;
	for (i = 0; i < LLAMA_HP; i++)
		if (k->hp[i] < 0)
			return tfs_diag_at(d, -EBADMSG, at + 4 * (uint64_t)i,
					   "hparams.%s: %d is negative",
					   llama_hp[i], k->hp[i]);
	if (k->hp[0] < 1 || (uint32_t)k->hp[0] > GL_VOCAB_MAX)
		return tfs_diag_at(d, -EBADMSG, at,
				   "hparams.n_vocab: %d, not 1 to 2^20",
				   k->hp[0]);
	k->vocab_at = tfs_cursor_offset(c);
	k->vocab_count = (uint64_t)k->hp[0];
	if (k->vocab_count > tfs_cursor_remaining(c) / (k->scores ? 8u : 4u))
		return tfs_diag_at(d, -EBADMSG, at,
				   "hparams.n_vocab: %d tokens cannot fit in "
				   "the %" PRIu64 " bytes left",
				   k->hp[0], tfs_cursor_remaining(c));
	if (skip_vocab(c, d, k->vocab_count, k->scores ? 4 : 0))
		return -EBADMSG;
	k->vocab_end = tfs_cursor_offset(c);
	return 0;
}

static int push_rec(struct gl_cand *k, const struct gl_rec *r)
{
	struct gl_rec *p;
	size_t cap;

	if (k->n == k->cap) {
		cap = k->cap ? 2 * k->cap : 16;
		p = reallocarray(k->recs, cap, sizeof(*p));
		if (!p)
			return tfs_diag_oom(&k->d);
		k->recs = p;
		k->cap = cap;
	}
	k->recs[k->n++] = *r;
	return 0;
}

/* the type of a record: known in the candidate's generation */
static const struct tfs_ggml_type *rec_type(const struct gl_cand *k,
					    int32_t type)
{
	if (type < 0 || (k->float_only && type > 1))
		return NULL;
	return tfs_ggml_legacy_type(k->gen, (uint32_t)type);
}

/* one record at the cursor, checked, into *@r */
static int read_record(struct gl_cand *k, struct tfs_cursor *c, size_t idx,
		       struct gl_rec *r)
{
	struct tfs_diag *d = &k->d;
	char nb[TFS_PRINTABLE_MAX];
	const struct tfs_dtype_info *di;
	int32_t nd, nl, type, ne;
	uint64_t count = 1, pos;
	uint32_t i;

	memset(r, 0, sizeof(*r));
	r->at = tfs_cursor_offset(c);
	if (tfs_cursor_i32le(c, &nd) || tfs_cursor_i32le(c, &nl) ||
	    tfs_cursor_i32le(c, &type))
		return tfs_diag_at(d, -EBADMSG, r->at,
				   "tensor record %zu: the file ends inside "
				   "its head (n_dims, name length, type)",
				   idx);
	if (nd < 0 || nd > GL_MAX_DIMS)
		return tfs_diag_at(d, -EBADMSG, r->at,
				   "tensor record %zu: n_dims: %d, not 0 to 4",
				   idx, nd);
	if (nl < 1 || nl > GL_NAME_MAX)
		return tfs_diag_at(d, -EBADMSG, r->at + 4,
				   "tensor record %zu: name length: %d, not 1 "
				   "to %d",
				   idx, nl, GL_NAME_MAX);
	r->gt = rec_type(k, type);
	if (!r->gt)
		return tfs_diag_at(d, -EBADMSG, r->at + 8,
				   "tensor record %zu: type: %d is not a ggml "
				   "type of %s",
				   idx, type,
				   k->float_only ? "a VAD model (F32, F16)"
				   : k->gen == 0 ? "quantization generation 0"
				   : k->gen == 1 ? "quantization generation 1"
						 : "quantization generation 2");
	r->n_dims = (uint32_t)nd;
	r->name_len = (uint32_t)nl;
	r->type = (uint32_t)type;
	for (i = 0; i < r->n_dims; i++) {
		pos = tfs_cursor_offset(c);
		if (tfs_cursor_i32le(c, &ne))
			return tfs_diag_at(
				d, -EBADMSG, pos,
				"tensor record %zu: ne[%u]: the file "
				"ends inside it",
				idx, i);
		if (ne < 1)
			return tfs_diag_at(d, -EBADMSG, pos,
					   "tensor record %zu: ne[%u]: %d, not "
					   "positive",
					   idx, i, ne);
		r->ne[i] = (uint64_t)ne;
		if (!tfs_mul_u64(count, r->ne[i], &count))
			return tfs_diag_at(d, -EBADMSG, pos,
					   "tensor record %zu: the element "
					   "count overflows",
					   idx);
	}
	pos = tfs_cursor_offset(c);
	if (tfs_cursor_bytes(c, r->name_len, &r->name))
		return tfs_diag_at(d, -EBADMSG, r->at + 4,
				   "tensor record %zu: name length: %u bytes "
				   "at %" PRIu64 ", past the end of the file",
				   idx, r->name_len, pos);
	if (!tfs_utf8_valid(r->name, r->name_len))
		return tfs_diag_at(d, -EBADMSG, pos,
				   "tensor record %zu: name: not UTF-8", idx);
	tfs_name_printable(nb, sizeof(nb), (const char *)r->name, r->name_len);
	if (k->fam == FAM_WHISPER && r->name_len == 11 &&
	    memcmp(r->name, "mel_filters", 11) == 0)
		return tfs_diag_at(d, -EBADMSG, pos,
				   "tensor 'mel_filters': the name of the "
				   "header's filter bank");
	r->pad_at = tfs_cursor_offset(c);
	r->pad = (k->align - r->pad_at % k->align) % k->align;
	if (tfs_cursor_skip(c, r->pad))
		return tfs_diag_at(d, -EBADMSG, r->pad_at,
				   "tensor '%s': padding: the file ends inside "
				   "it",
				   nb);
	di = tfs_dtype_info(r->gt->dtype);
	if (!r->n_dims && di->block_elems > 1)
		return tfs_diag_at(d, -EBADMSG, r->at,
				   "tensor '%s': a scalar cannot be a %s "
				   "block of %u",
				   nb, r->gt->name, di->block_elems);
	if (r->ne[0] % di->block_elems)
		return tfs_diag_at(d, -EBADMSG, r->at + 12,
				   "tensor '%s': ne[0] = %" PRIu64
				   " is not a multiple of %s's block of %u",
				   nb, r->ne[0], r->gt->name, di->block_elems);
	if (tfs_dtype_bytes(r->gt->dtype, count, &r->nbytes))
		return tfs_diag_at(d, -EBADMSG, r->at + 8,
				   "tensor '%s': the byte size overflows", nb);
	r->data = tfs_cursor_offset(c);
	if (tfs_cursor_skip(c, r->nbytes))
		return tfs_diag_at(d, -EBADMSG, r->data,
				   "tensor '%s': data: %" PRIu64
				   " bytes, only %" PRIu64 " left in the file",
				   nb, r->nbytes, tfs_cursor_remaining(c));
	return 0;
}

/* names are unique: the later of two equal names is reported */
static int unique_names(struct gl_cand *k)
{
	const struct tfs_span *dup, *first;
	char nb[TFS_PRINTABLE_MAX];
	struct tfs_span *v;
	size_t i;
	int ret = 0;

	if (k->n < 2)
		return 0;
	v = calloc(k->n, sizeof(*v));
	if (!v)
		return tfs_diag_oom(&k->d);
	for (i = 0; i < k->n; i++)
		v[i] = (struct tfs_span){k->recs[i].name, k->recs[i].name_len,
					 k->recs[i].at};
	dup = tfs_span_twice(v, k->n, &first);
	if (dup) {
		tfs_name_printable(nb, sizeof(nb), (const char *)dup->p,
				   (size_t)dup->len);
		ret = tfs_diag_at(&k->d, -EBADMSG, dup->at,
				  "tensor '%s': the name is given twice (first "
				  "in the record at %" PRIu64 ")",
				  nb, first->at);
	}
	free(v);
	return ret;
}

/* the records from the cursor to the end of the file, every one valid */
static int walk_records(struct gl_cand *k, struct tfs_cursor *c)
{
	struct gl_rec r;
	int ret;

	k->records_at = tfs_cursor_offset(c);
	k->in_walk = true;
	while (tfs_cursor_remaining(c)) {
		ret = read_record(k, c, k->n, &r);
		if (!ret)
			ret = push_rec(k, &r);
		if (ret)
			return ret;
	}
	return unique_names(k);
}

/* try candidate @k on the whole file: 0 when it fits */
static int try_cand(const struct tfs_source *src, struct gl_cand *k)
{
	struct tfs_cursor c;
	int ret;

	tfs_diag_clear(&k->d);
	k->align = 1;
	tfs_cursor_init(&c, src->data, src->size, 0);
	tfs_cursor_skip(&c, k->version ? 8 : 4);
	switch (k->fam) {
	case FAM_WHISPER:
		ret = head_whisper(k, &c);
		break;
	case FAM_VAD:
		ret = head_vad(k, &c);
		break;
	default:
		ret = head_llama(k, &c);
		break;
	}
	return ret ? ret : walk_records(k, &c);
}

/* ---- describing ------------------------------------------------------ */

static int add_tensor(struct gl_ctx *g, const struct gl_rec *r)
{
	struct tfs_tensor_spec s;
	uint64_t shape[GL_MAX_DIMS];
	char ne[96];
	uint32_t i, h;
	int ret;

	for (i = 0; i < r->n_dims; i++)
		shape[i] = r->ne[r->n_dims - 1 - i]; /* row-major */
	tfs_spec_tensor(&s, (const char *)r->name, r->name_len, r->gt->dtype,
			shape, r->n_dims, r->at);
	tfs_spec_raw(&s, r->data, r->nbytes);
	ret = tfs_builder_add_tensor(g->b, &s, &h, g->d);
	if (ret)
		return ret;
	tfs_ggml_ne_text(ne, sizeof(ne), r->ne, r->n_dims);
	if (tfs_builder_set_xattr_str(g->b, h, "ggml.ne", ne) ||
	    tfs_builder_set_xattr_str(g->b, h, "ggml.type", r->gt->name))
		return tfs_diag_oom(g->d);
	/* ggjt's padding is skipped by llama.cpp: a warning, not a refusal */
	for (i = 0; i < r->pad; i++)
		if (g->src->data[r->pad_at + i]) {
			char nb[TFS_PRINTABLE_MAX];

			tfs_name_printable(nb, sizeof(nb),
					   (const char *)r->name, r->name_len);
			if (tfs_builder_warn(g->b, r->pad_at,
					     "tensor '%s': the %" PRIu64
					     " padding bytes before its data "
					     "are not all zero",
					     nb, r->pad))
				return tfs_diag_oom(g->d);
			break;
		}
	return 0;
}

static int add_mel_filters(struct gl_ctx *g, const struct gl_cand *k)
{
	uint64_t shape[2] = {(uint64_t)k->n_mel, (uint64_t)k->n_fft};
	struct tfs_tensor_spec s;

	tfs_spec_tensor(&s, "mel_filters", strlen("mel_filters"),
			TFS_DTYPE_FLOAT32, shape, 2, k->mel_at - 8);
	tfs_spec_raw(&s, k->mel_at, shape[0] * shape[1] * 4);
	return tfs_builder_add_tensor(g->b, &s, NULL, g->d);
}

/* the vocabulary's bytes, copied, for metadata.json */
struct vocab_copy {
	uint8_t *p;
	uint64_t len, count, offset;
	bool has_count; /* whisper: the bytes start with the count */
	bool scores;
};

static void vocab_free(void *arg)
{
	struct vocab_copy *v = arg;

	free(v->p);
	free(v);
}

static json_t *float_json(uint32_t bits)
{
	float f;

	memcpy(&f, &bits, 4);
	return isfinite(f) ? json_real(f) : json_null();
}

/* @o[@key] = *@v, whose reference is given away (*@v NULL) even on failure */
static int set_taken(json_t *o, const char *key, json_t **v)
{
	json_t *x = *v;

	*v = NULL;
	return json_object_set_new(o, key, x);
}

/* {"count", "offset", "has_scores", "tokens": [...], ["scores": [...]]} */
static json_t *vocab_json(void *arg)
{
	const struct vocab_copy *v = arg;
	json_t *o, *toks, *scores = NULL, *e;
	const uint8_t *s;
	struct tfs_cursor c;
	uint32_t len, sc;
	uint64_t i;

	o = json_pack("{s:I,s:I,s:b}", "count", (json_int_t)v->count, "offset",
		      (json_int_t)v->offset, "has_scores", v->scores);
	toks = json_array();
	if (v->scores)
		scores = json_array();
	if (!o || !toks || (v->scores && !scores))
		goto fail;
	/* checked at mount: every read succeeds */
	tfs_cursor_init(&c, v->p, v->len, v->offset);
	if (v->has_count)
		tfs_cursor_skip(&c, 4);
	for (i = 0; i < v->count; i++) {
		if (tfs_cursor_u32le(&c, &len) || tfs_cursor_bytes(&c, len, &s))
			goto fail;
		e = tfs_ggml_string_json(s, len);
		if (!e || json_array_append_new(toks, e))
			goto fail;
		if (!v->scores)
			continue;
		if (tfs_cursor_u32le(&c, &sc))
			goto fail;
		e = float_json(sc);
		if (!e || json_array_append_new(scores, e))
			goto fail;
	}
	if (set_taken(o, "tokens", &toks) ||
	    (scores && set_taken(o, "scores", &scores)))
		goto fail;
	return o;
fail:
	json_decref(toks);
	json_decref(scores);
	json_decref(o);
	return NULL;
}

/* "vocab" in metadata.json: at once when small, else when first read */
static int metadata_vocab(struct gl_ctx *g, const struct gl_cand *k)
{
	uint64_t len = k->vocab_end - k->vocab_at;
	struct vocab_copy *v;
	json_t *o;
	int ret;

	v = calloc(1, sizeof(*v));
	if (!v || !(v->p = malloc(len ? (size_t)len : 1))) {
		free(v);
		return tfs_diag_oom(g->d);
	}
	memcpy(v->p, g->src->data + k->vocab_at, (size_t)len);
	v->len = len;
	v->count = k->vocab_count;
	v->offset = k->vocab_at;
	v->has_count = k->fam == FAM_WHISPER;
	v->scores = k->scores;
	if (len > GL_EAGER_VOCAB_BYTES)
		return tfs_builder_defer_metadata(g->b, "vocab", vocab_json, v,
						  vocab_free)
			       ? tfs_diag_oom(g->d)
			       : 0;
	o = vocab_json(v);
	vocab_free(v);
	ret = o && !json_object_set_new(tfs_builder_metadata(g->b), "vocab", o)
		      ? 0
		      : tfs_diag_oom(g->d);
	return ret;
}

static json_t *hparams_json(const struct gl_cand *k, const char *const *names,
			    int n)
{
	json_t *o = json_object();
	int i;

	for (i = 0; o && i < n; i++)
		if (json_object_set_new(o, names[i], json_integer(k->hp[i]))) {
			json_decref(o);
			return NULL;
		}
	return o;
}

static json_t *vad_json(const struct gl_cand *k, const uint8_t *data)
{
	json_t *o, *layers, *l;
	const uint8_t *p = data + k->layers_at;
	int32_t i;
	int j;

	o = json_pack("{s:s%,s:[iii],s:i,s:i}", "model_type",
		      (const char *)k->vad_type, (size_t)k->vad_type_len,
		      "version", k->vad_version[0], k->vad_version[1],
		      k->vad_version[2], "n_window", k->n_window, "n_context",
		      k->n_context);
	layers = json_array();
	if (!o || !layers)
		goto fail;
	for (i = 0; i < k->n_layers; i++, p += 12) {
		l = json_pack("[iii]", (int32_t)tfs_load_le(p, 4),
			      (int32_t)tfs_load_le(p + 4, 4),
			      (int32_t)tfs_load_le(p + 8, 4));
		if (!l || json_array_append_new(layers, l))
			goto fail;
	}
	if (set_taken(o, "encoder_layers", &layers))
		goto fail;
	for (j = 0; j < 4; j++)
		if (json_object_set_new(o, vad_tail[j],
					json_integer(k->vad_tail[j])))
			goto fail;
	return o;
fail:
	json_decref(layers);
	json_decref(o);
	return NULL;
}

/* the root's one-line "summary" (tensorfs info), into @buf */
static void summary(const struct gl_cand *k, char *buf, size_t len)
{
	const char *const *names =
		k->fam == FAM_WHISPER ? whisper_hp : llama_hp;
	int n = k->fam == FAM_WHISPER ? WHISPER_HP : LLAMA_HP, i;
	size_t o;

	if (k->fam == FAM_VAD) {
		snprintf(buf, len,
			 "whisper.cpp silero VAD (%.*s %d.%d.%d), "
			 "n_window=%d n_context=%d, %d encoder layers, "
			 "lstm %d/%d",
			 (int)k->vad_type_len, (const char *)k->vad_type,
			 k->vad_version[0], k->vad_version[1],
			 k->vad_version[2], k->n_window, k->n_context,
			 k->n_layers, k->vad_tail[0], k->vad_tail[1]);
		return;
	}
	if (k->fam == FAM_WHISPER)
		o = (size_t)snprintf(buf, len,
				     "whisper.cpp ggml, quantization "
				     "generation %u:",
				     k->gen);
	else if (k->version)
		o = (size_t)snprintf(buf, len,
				     "llama.cpp %s v%u, quantization "
				     "generation %u%s:",
				     k->fam == FAM_LLAMA_GGJT ? "ggjt" : "ggmf",
				     k->version, k->gen,
				     k->align > 1 ? ", 32-byte aligned" : "");
	else
		o = (size_t)snprintf(buf, len,
				     "llama.cpp unversioned ggml, "
				     "quantization generation 0:");
	for (i = 0; i < n && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, " %s=%d", names[i],
				      k->hp[i]);
	if (o < len)
		snprintf(buf + o, len - o, "; %" PRIu64 " tokens%s",
			 k->vocab_count, k->scores ? " with scores" : "");
}

static int describe(struct gl_ctx *g, const struct gl_cand *k)
{
	json_t *meta = tfs_builder_metadata(g->b), *hp = NULL;
	const char *arch;
	char buf[512];
	size_t i;
	int ret = 0;

	tfs_builder_set_overlap_rule(g->b, TFS_OVERLAP_FORBID);
	if (k->fam == FAM_WHISPER)
		ret = add_mel_filters(g, k);
	for (i = 0; !ret && i < k->n; i++)
		ret = add_tensor(g, &k->recs[i]);
	if (ret)
		return ret;
	if (k->fam == FAM_VAD)
		hp = vad_json(k, g->src->data);
	else if (k->fam == FAM_WHISPER)
		hp = hparams_json(k, whisper_hp, WHISPER_HP);
	else
		hp = hparams_json(k, llama_hp, LLAMA_HP);
	if (!hp ||
	    json_object_set_new(meta, "family",
				json_string(family_names[k->fam])) ||
	    json_object_set_new(meta, "version",
				k->version ? json_integer(k->version)
					   : json_null()) ||
	    json_object_set_new(meta, "qnt_version", json_integer(k->gen)) ||
	    json_object_set_new(meta, "alignment", json_integer(k->align)) ||
	    json_object_set_new(meta, "tensors_start",
				json_integer((json_int_t)k->records_at)) ||
	    json_object_set_new(meta, "hparams", hp))
		return tfs_diag_oom(g->d);
	if (k->fam == FAM_WHISPER &&
	    json_object_set_new(meta, "mel_filters",
				json_pack("{s:i,s:i,s:I}", "n_mel", k->n_mel,
					  "n_fft", k->n_fft, "offset",
					  (json_int_t)k->mel_at)))
		return tfs_diag_oom(g->d);
	if (k->fam == FAM_LLAMA_GGML &&
	    json_object_set_new(meta, "note",
				json_string("an unversioned llama.cpp file "
					    "may be one part (model.bin, "
					    "model.bin.1, ...) holding a "
					    "slice of every tensor; each part "
					    "mounts on its own")))
		return tfs_diag_oom(g->d);
	if (k->fam != FAM_VAD) {
		ret = metadata_vocab(g, k);
		if (ret)
			return ret;
	}
	arch = k->fam == FAM_WHISPER ? "whisper"
	       : k->fam == FAM_VAD   ? "silero-vad"
				     : "llama";
	summary(k, buf, sizeof(buf));
	if (tfs_builder_set_xattr_str(g->b, TFS_BUILDER_ROOT, "architecture",
				      arch) ||
	    tfs_builder_set_xattr_str(g->b, TFS_BUILDER_ROOT, "ggml.family",
				      family_names[k->fam]) ||
	    tfs_builder_set_xattr_str(g->b, TFS_BUILDER_ROOT, "summary", buf))
		return tfs_diag_oom(g->d);
	snprintf(buf, sizeof(buf), "%u", k->gen);
	if (tfs_builder_set_xattr_str(g->b, TFS_BUILDER_ROOT,
				      "ggml.qnt_version", buf))
		return tfs_diag_oom(g->d);
	snprintf(buf, sizeof(buf), "%u", k->version);
	if (k->version && tfs_builder_set_xattr_str(g->b, TFS_BUILDER_ROOT,
						    "ggml.version", buf))
		return tfs_diag_oom(g->d);
	return 0;
}

/* ---- detection ------------------------------------------------------- */

/*
 * The candidates for the magic and version: 0 with *@n filled, or the
 * refusal of a magic or version that is known and not supported.
 */
static int candidates(const struct tfs_source *src, struct gl_cand *k,
		      size_t *n, struct tfs_diag *d)
{
	uint32_t magic, version;

	*n = 0;
	if (src->size < 4)
		return tfs_diag_at(d, -EBADMSG, 0,
				   "magic: the file ends inside it");
	magic = (uint32_t)tfs_load_le(src->data, 4);
	if (magic == MAGIC_GGML) {
		k[0].fam = FAM_WHISPER;
		k[1].fam = FAM_VAD;
		k[2].fam = FAM_LLAMA_GGML;
		*n = 3;
		return 0;
	}
	if (magic == MAGIC_GGLA)
		return tfs_diag_at(d, -ENOTSUP, 0,
				   "magic: ggla, a llama.cpp LoRA adapter: "
				   "not supported");
	if (magic != MAGIC_GGMF && magic != MAGIC_GGJT)
		return tfs_diag_at(d, -ENOTSUP, 0,
				   "magic: a big-endian ggml file (bytes "
				   "\"%.4s\"): not supported",
				   (const char *)src->data);
	if (src->size < 8)
		return tfs_diag_at(d, -EBADMSG, 4,
				   "version: the file ends inside it");
	version = (uint32_t)tfs_load_le(src->data + 4, 4);
	if (magic == MAGIC_GGMF && (version == 100 || version == 101))
		return tfs_diag_at(d, -ENOTSUP, 4,
				   "version: %u, a rwkv.cpp file (ggmf "
				   "version 100 or 101): not supported",
				   version);
	if (magic == MAGIC_GGMF ? version != 1 : version < 1 || version > 3)
		return tfs_diag_at(d, -ENOTSUP, 4,
				   "version: %s version %u is unknown (%s)",
				   magic == MAGIC_GGMF ? "ggmf" : "ggjt",
				   version,
				   magic == MAGIC_GGMF ? "1 is" : "1 to 3 are");
	k[0].fam = magic == MAGIC_GGMF ? FAM_LLAMA_GGMF : FAM_LLAMA_GGJT;
	k[0].version = version;
	*n = 1;
	return 0;
}

/* no candidate fits: the one that went furthest, and the others */
static int no_fit(const struct gl_cand *k, size_t n, struct tfs_diag *d)
{
	char msg[TFS_DIAG_MSG_MAX];
	size_t i, best = 0, o;

	if (n == 1) {
		*d = k[0].d;
		return k[0].d.err;
	}
	for (i = 1; i < n; i++)
		if (k[i].d.offset > k[best].d.offset)
			best = i;
	/* a header that fits and a broken record: the file is that one's */
	if (k[best].in_walk)
		o = (size_t)snprintf(msg, sizeof(msg), "%s (read as %s",
				     k[best].d.msg, family_what[k[best].fam]);
	else
		o = (size_t)snprintf(msg, sizeof(msg),
				     "unknown ggml-family header: as %s, %s",
				     family_what[k[best].fam], k[best].d.msg);
	for (i = 0; i < n && o < sizeof(msg); i++)
		if (i != best)
			o += (size_t)snprintf(msg + o, sizeof(msg) - o,
					      "; as %s, at byte %" PRIu64
					      ": %s",
					      family_what[k[i].fam],
					      k[i].d.offset, k[i].d.msg);
	if (k[best].in_walk && o < sizeof(msg))
		snprintf(msg + o, sizeof(msg) - o, ")");
	return tfs_diag_at(d, k[best].d.err, k[best].d.offset, "%s", msg);
}

static int gl_load(const struct tfs_source *src, struct tfs_builder *b,
		   struct tfs_diag *d)
{
	struct gl_ctx g = {.src = src, .b = b, .d = d};
	struct gl_cand k[3];
	size_t n, i, fit = 0, fits = 0;
	int ret;

	memset(k, 0, sizeof(k));
	ret = candidates(src, k, &n, d);
	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		if (try_cand(src, &k[i]) == 0) {
			if (!fits++)
				fit = i;
		} else if (k[i].d.err == -ENOMEM) {
			*d = k[i].d;
			ret = -ENOMEM;
			goto out;
		}
	}
	if (fits == 0) {
		ret = no_fit(k, n, d);
		goto out;
	}
	if (fits > 1) {
		ret = tfs_diag_at(d, -EBADMSG, 4,
				  "header: ambiguous, %zu of the ggml layouts "
				  "(whisper.cpp, silero VAD, llama) fit the "
				  "whole file",
				  fits);
		goto out;
	}
	ret = describe(&g, &k[fit]);
out:
	for (i = 0; i < n; i++)
		free(k[i].recs);
	return ret;
}

TFS_FORMAT(ggml_legacy,
	   "pre-GGUF ggml: whisper.cpp, silero VAD, llama.cpp "
	   "ggml/ggmf/ggjt",
	   .family = "ggml-legacy", .probe = gl_probe, .load = gl_load);
