// SPDX-License-Identifier: MIT
/*
 * The quant view (-o as=float32 over a quantized checkpoint): each
 * quantized linear layer's stored tensors (GPTQ's qweight, qzeros, scales,
 * g_idx; an fp8 weight and its block scales; ...) are shown as ONE float32
 * file of the logical name and shape, computed on read (quant_decode.c);
 * the stored tensors it consumed are hidden from the tree and the manifest
 * (tfs_draft_hide).  The family comes from the model directory's
 * config.json (quantization_config; MLX: quantization) and the tensors'
 * names, dtypes and shapes; a layer that breaks a rule is left as stored
 * with one warning: never wrong numbers.  docs/formats/quantized.md.
 */
#include <errno.h>
#include <jansson.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/builder.h"
#include "core/checked.h"
#include "core/image.h"
#include "core/image_i.h" /* tfs_view_own */
#include "core/nodes.h"
#include "core/strmap.h"
#include "core/tree.h"
#include "core/view_ops.h"
#include "views/quant.h"

extern const struct tfs_view_ops tfs_view_quant;

struct plan {
	struct tfs_draft *dr;
	uint32_t id;
	struct tfs_strmap names; /* stored name -> record */
	struct quant_data *qd;
	const json_t *qc; /* quantization_config (or MLX's quantization) */
	const char *method;
};

/* the record named @prefix@suffix, or UINT32_MAX */
static uint32_t find(const struct plan *p, const char *prefix, size_t plen,
		     const char *suffix)
{
	char key[512];
	uint32_t rec;

	if (plen + strlen(suffix) >= sizeof(key))
		return UINT32_MAX;
	memcpy(key, prefix, plen);
	strcpy(key + plen, suffix);
	return tfs_strmap_get(&p->names, key, &rec) ? rec : UINT32_MAX;
}

static const struct tfs_tensor *rec_of(const struct plan *p, uint32_t rec)
{
	return rec == UINT32_MAX ? NULL : &p->dr->tree->tensors[rec];
}

/* @x has dtype @dt and shape @ndim dims (dims[i] == 0: any) */
static bool is(const struct tfs_tensor *x, enum tfs_dtype dt, uint32_t ndim,
	       const uint64_t *dims)
{
	uint32_t i;

	if (!x || x->unreadable || x->dtype_id != dt || x->ndim != ndim)
		return false;
	for (i = 0; i < ndim; i++)
		if (dims && dims[i] && x->shape[i] != dims[i])
			return false;
	return true;
}

static bool is_scale_dtype(enum tfs_dtype t)
{
	return t == TFS_DTYPE_FLOAT32 || t == TFS_DTYPE_FLOAT16 ||
	       t == TFS_DTYPE_BFLOAT16;
}

static uint64_t elems(const struct tfs_tensor *x)
{
	uint64_t n = 1;
	uint32_t i;

	for (i = 0; i < x->ndim; i++)
		if (!tfs_mul_u64(n, x->shape[i], &n))
			return 0;
	return n;
}

static int64_t int_of(const json_t *o, const char *k1, const char *k2,
		      int64_t dflt)
{
	const json_t *v = json_object_get(o, k1);

	if (!v && k2)
		v = json_object_get(o, k2);
	return json_is_integer(v) ? json_integer_value(v) : dflt;
}

static const char *str_of(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* no parts yet but the main one, record @rec */
static void init_parts(uint32_t *recs, uint32_t rec)
{
	uint32_t k;

	for (k = 0; k < QP_COUNT; k++)
		recs[k] = UINT32_MAX;
	recs[QP_MAIN] = rec;
}

/* a layer found: its logical record @main takes the view, the parts hide */
static int take(struct plan *p, struct quant_layer *l, uint32_t main,
		const uint32_t *recs, const char *name, const char *file,
		const char *tag, const uint64_t *shape, uint32_t ndim)
{
	struct tfs_tree *t = p->dr->tree;
	struct tfs_tensor *x = &t->tensors[main];
	struct quant_layer *nv;
	uint64_t size;
	uint32_t i;
	int ret;

	if (!tfs_mul_u64(l->rows, l->cols, &size) ||
	    !tfs_mul_u64(size, 4, &size))
		return tfs_draft_warn(p->dr,
				      "quantized view: %s: too large, left as "
				      "stored",
				      x->name);
	nv = reallocarray(p->qd->v, p->qd->n + 1, sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	p->qd->v = nv;
	for (i = 0; i < QP_COUNT; i++) {
		const struct tfs_tensor *c = rec_of(p, recs[i]);

		l->part[i] = c ? c->node : QUANT_NO_PART;
		l->dtype[i] = c ? c->dtype_id : TFS_DTYPE_INVALID;
		if (c && recs[i] != main) {
			ret = tfs_draft_hide(p->dr, recs[i]);
			if (ret)
				return ret;
		}
	}
	l->node = x->node;
	l->stored_name = x->name;
	l->stored_len = x->name_len;
	x->shape = tfs_tree_alloc(t, ndim * sizeof(*shape));
	x->dtype = tfs_tree_dup(t, tag, strlen(tag));
	if (!x->shape || !x->dtype)
		return -ENOMEM;
	memcpy(x->shape, shape, ndim * sizeof(*shape));
	x->ndim = ndim;
	x->view = TFS_DTYPE_FLOAT32;
	x->view_size = size;
	x->shown_by = (uint8_t)(p->id + 1);
	x->computed = true;
	if (name && (ret = tfs_draft_rename(p->dr, main, name, file)))
		return ret;
	p->qd->v[p->qd->n++] = *l;
	return 0;
}

static int reject(struct plan *p, const char *layer, size_t len,
		  const char *why)
{
	return tfs_draft_warn(p->dr, "quantized view: %.*s: %s; left as stored",
			      (int)len, layer, why);
}

/* the last path component of @x's file, with @from at its end as @to */
static int file_name(const struct tfs_tensor *x, const char *from,
		     const char *to, char *out, size_t cap)
{
	const char *slash = strrchr(x->path, '/');
	const char *base = slash ? slash + 1 : x->path;
	size_t n = strlen(base), f = strlen(from);

	if (n < f || strcmp(base + n - f, from) || n - f + strlen(to) >= cap)
		return -EINVAL;
	memcpy(out, base, n - f);
	strcpy(out + n - f, to);
	return 0;
}

/* a logical name @prefix@suffix no stored tensor has: the caller's */
static bool free_name(const struct plan *p, const char *prefix, size_t plen,
		      const char *suffix, char *out, size_t cap)
{
	if (plen + strlen(suffix) >= cap)
		return false;
	memcpy(out, prefix, plen);
	strcpy(out + plen, suffix);
	return find(p, prefix, plen, suffix) == UINT32_MAX;
}

/* ---- the families (docs/formats/quantized.md, sections 3-11) --------- */

/* GPTQ (3) and AWQ (4): P.qweight with P.qzeros, P.scales (P.g_idx) */
static int gptq_awq(struct plan *p, uint32_t rec, bool awq)
{
	const struct tfs_tensor *qw = rec_of(p, rec), *qz, *sc, *gi;
	const char *pre = qw->name;
	size_t plen = qw->name_len - strlen(".qweight");
	int64_t bits = int_of(p->qc, "bits", awq ? "w_bit" : NULL, 0);
	int64_t g =
		int_of(p->qc, "group_size", awq ? "q_group_size" : NULL, -1);
	const char *fmt = str_of(p->qc, "checkpoint_format");
	struct quant_layer l = {.family = awq ? QF_AWQ : QF_GPTQ,
				.method = awq ? "awq" : "gptq"};
	uint32_t recs[QP_COUNT];
	uint64_t in, out, k, ng, shape[2];
	char name[512], file[256], tag[32];

	init_parts(recs, rec);
	recs[QP_ZERO] = find(p, pre, plen, ".qzeros");
	recs[QP_SCALE] = find(p, pre, plen, ".scales");
	recs[QP_GIDX] = awq ? UINT32_MAX : find(p, pre, plen, ".g_idx");
	qz = rec_of(p, recs[QP_ZERO]);
	sc = rec_of(p, recs[QP_SCALE]);
	gi = rec_of(p, recs[QP_GIDX]);
	if (!is(qw, TFS_DTYPE_INT32, 2, NULL) || !qz || !sc ||
	    !is_scale_dtype(sc->dtype_id) || sc->ndim != 2)
		return reject(p, pre, plen,
			      "a companion is missing or of "
			      "another dtype or rank");
	if (awq ? bits != 4 : bits != 2 && bits != 4 && bits != 8)
		return reject(p, pre, plen,
			      "its bits are not 2, 4 or 8 (AWQ: 4)");
	if (!awq && fmt && strcmp(fmt, "gptq") && strcmp(fmt, "gptq_v2"))
		return reject(p, pre, plen,
			      "its checkpoint_format is not "
			      "gptq or gptq_v2");
	k = 32 / (uint64_t)bits;
	if (awq) {
		in = qw->shape[0];
		out = qw->shape[1] * 8;
		ng = g > 0 && in % (uint64_t)g == 0 ? in / (uint64_t)g : 0;
		shape[0] = ng;
		shape[1] = out / 8;
		if (!ng || !is(sc, sc->dtype_id, 2, (uint64_t[]){ng, out}) ||
		    !is(qz, TFS_DTYPE_INT32, 2, shape))
			return reject(p, pre, plen,
				      "its scales or zeros do not fit its "
				      "qweight and group size");
	} else {
		in = qw->shape[0] * k;
		out = qw->shape[1];
		ng = sc->shape[0];
		if (gi && !is(gi, TFS_DTYPE_INT32, 1, (uint64_t[]){in}))
			return reject(p, pre, plen, "g_idx is not [in] int32");
		if (out % k || !ng ||
		    (!gi && ng != (g > 0 ? (in + (uint64_t)g - 1) / (uint64_t)g
					 : 1)) ||
		    !is(sc, sc->dtype_id, 2, (uint64_t[]){ng, out}) ||
		    !is(qz, TFS_DTYPE_INT32, 2, (uint64_t[]){ng, out / k}))
			return reject(p, pre, plen,
				      "its scales or zeros do not fit its "
				      "qweight and group size");
		l.v1 = !fmt || !strcmp(fmt, "gptq");
		l.scols = ng;
	}
	l.bits = (uint32_t)bits;
	l.group = g > 0 ? (uint64_t)g : 0;
	l.rows = out;
	l.cols = in;
	shape[0] = out;
	shape[1] = in;
	if (!free_name(p, pre, plen, ".weight", name, sizeof(name)) ||
	    file_name(qw, "qweight", "weight", file, sizeof(file)))
		return reject(p, pre, plen,
			      "a stored tensor has its "
			      "logical name");
	snprintf(tag, sizeof(tag), "%s_int%u", l.method, l.bits);
	return take(p, &l, rec, recs, name, file, tag, shape, 2);
}

/* compressed-tensors' quantization arguments for module @pre, or NULL */
static const json_t *ct_args(const struct plan *p, const char *pre, size_t plen,
			     const char **format)
{
	const json_t *groups = json_object_get(p->qc, "config_groups"), *grp,
		     *t, *ign = json_object_get(p->qc, "ignore");
	char mod[512];
	const char *key;
	size_t i;

	if (plen >= sizeof(mod))
		return NULL;
	memcpy(mod, pre, plen);
	mod[plen] = '\0';
	json_array_foreach(ign, i, t)
	{
		const char *s = json_string_value(t);
		regex_t re;
		regmatch_t m;
		bool hit;

		if (!s)
			continue;
		if (strncmp(s, "re:", 3)) {
			if (!strcmp(s, mod))
				return NULL;
			continue;
		}
		if (regcomp(&re, s + 3, REG_EXTENDED))
			continue;
		/* Python's re.match: anchored at the start */
		hit = !regexec(&re, mod, 1, &m, 0) && m.rm_so == 0;
		regfree(&re);
		if (hit)
			return NULL;
	}
	json_object_foreach((json_t *)groups, key, grp)
	{
		json_array_foreach(json_object_get(grp, "targets"), i, t)
		{
			const char *s = json_string_value(t);
			regex_t re;
			regmatch_t m;
			bool hit = false;

			if (s && !strncmp(s, "re:", 3) &&
			    !regcomp(&re, s + 3, REG_EXTENDED)) {
				hit = !regexec(&re, mod, 1, &m, 0) &&
				      m.rm_so == 0;
				regfree(&re);
			} else if (s && strncmp(s, "re:", 3)) {
				hit = true; /* a class name: every layer */
			}
			if (!hit)
				continue;
			*format = str_of(grp, "format")
					  ? str_of(grp, "format")
					  : str_of(p->qc, "format");
			return json_object_get(grp, "weights");
		}
	}
	return NULL;
}

/*
 * Scale shape rules of compressed-tensors (5) for [out, in]: the scales per
 * row in l->scols (0: one for the tensor), the groups in l->group
 */
static bool ct_scale_fits(struct quant_layer *l, const struct tfs_tensor *sc,
			  const char *strategy, int64_t g)
{
	uint64_t out = l->rows, in = l->cols;

	if (!sc || !is_scale_dtype(sc->dtype_id))
		return false;
	if (!strcmp(strategy, "tensor")) {
		l->scols = 0;
		return elems(sc) == 1;
	}
	if (!strcmp(strategy, "channel")) {
		l->scols = 1;
		return is(sc, sc->dtype_id, 2, (uint64_t[]){out, 1});
	}
	if (strcmp(strategy, "group") || g <= 0)
		return false;
	l->group = (uint64_t)g;
	l->scols = (in + l->group - 1) / l->group;
	return is(sc, sc->dtype_id, 2, (uint64_t[]){out, l->scols});
}

/* compressed-tensors (5): pack-quantized, int-quantized, float-quantized */
static int compressed(struct plan *p, uint32_t rec)
{
	const struct tfs_tensor *w = rec_of(p, rec), *sc, *zp, *gi;
	bool packed = w->name_len > 14 &&
		      !strcmp(w->name + w->name_len - 14, ".weight_packed");
	size_t plen = w->name_len - (packed ? 14 : 7);
	const char *pre = w->name, *format = NULL, *strategy;
	const json_t *args = ct_args(p, pre, plen, &format);
	struct quant_layer l = {.method = "compressed-tensors"};
	uint32_t recs[QP_COUNT], k;
	int64_t bits = int_of(args, "num_bits", NULL, 0),
		g = int_of(args, "group_size", NULL, -1);
	const json_t *bs = json_object_get(args, "block_structure");
	uint64_t shape[2];
	char name[512], tag[32];

	if (!args || !format)
		return 0; /* not a quantized layer */
	strategy = str_of(args, "strategy") ? str_of(args, "strategy") : "";
	init_parts(recs, rec);
	recs[QP_SCALE] = find(p, pre, plen, ".weight_scale");
	recs[QP_ZERO] = find(p, pre, plen, ".weight_zero_point");
	recs[QP_GIDX] = find(p, pre, plen, ".weight_g_idx");
	sc = rec_of(p, recs[QP_SCALE]);
	zp = rec_of(p, recs[QP_ZERO]);
	gi = rec_of(p, recs[QP_GIDX]);
	if (packed && !strcmp(format, "pack-quantized")) {
		if (bits != 2 && bits != 4 && bits != 8)
			return reject(p, pre, plen, "num_bits not 2, 4 or 8");
		recs[QP_SHAPE] = find(p, pre, plen, ".weight_shape");
		k = 32 / (uint32_t)bits;
		if (!is(w, TFS_DTYPE_INT32, 2, NULL) ||
		    recs[QP_SHAPE] == UINT32_MAX)
			return reject(p, pre, plen,
				      "weight_packed or "
				      "weight_shape missing");
		l.family = QF_CT_PACK;
		l.rows = w->shape[0];
		/* the padding is at the row's end: weight_shape (checked on
		 * read) says where; the groups say it here */
		l.cols = w->shape[1] * k;
		if (!strcmp(strategy, "group") && g > 0 && sc && sc->ndim == 2)
			l.cols = sc->shape[1] * (uint64_t)g;
		if (l.cols > w->shape[1] * k || l.cols + k <= w->shape[1] * k)
			return reject(p, pre, plen,
				      "scales do not fit "
				      "weight_packed");
		l.zcols = 0;
		if (zp && !(is(zp, TFS_DTYPE_INT32, 2, NULL) &&
			    zp->shape[0] == (l.rows + k - 1) / k))
			return reject(p, pre, plen,
				      "weight_zero_point does "
				      "not fit");
	} else if (!packed && !strcmp(format, "int-quantized")) {
		if (!is(w, TFS_DTYPE_INT8, 2, NULL))
			return 0;
		l.family = QF_CT_INT;
		l.rows = w->shape[0];
		l.cols = w->shape[1];
		bits = 8;
	} else if (!packed && !strcmp(format, "float-quantized")) {
		if (!is(w, TFS_DTYPE_FLOAT8_E4M3, 2, NULL) || !sc)
			return 0;
		l.family = QF_FP8;
		l.method = "compressed-tensors";
		l.rows = w->shape[0];
		l.cols = w->shape[1];
		l.bh = l.rows;
		l.bw = l.cols;
		if (!strcmp(strategy, "channel"))
			l.bh = 1;
		if (!strcmp(strategy, "block") && json_array_size(bs) == 2) {
			l.bh = (uint64_t)json_integer_value(
				json_array_get(bs, 0));
			l.bw = (uint64_t)json_integer_value(
				json_array_get(bs, 1));
		}
		if (!l.bh || !l.bw || !is_scale_dtype(sc->dtype_id) ||
		    elems(sc) != ((l.rows + l.bh - 1) / l.bh) *
					 ((l.cols + l.bw - 1) / l.bw))
			return reject(p, pre, plen,
				      "weight_scale does not "
				      "fit its strategy");
		recs[QP_ZERO] = recs[QP_GIDX] = UINT32_MAX;
		bits = 8;
		goto found;
	} else {
		return 0;
	}
	if (!ct_scale_fits(&l, sc, strategy, g))
		return reject(p, pre, plen,
			      "weight_scale does not fit its "
			      "strategy");
	if (l.family == QF_CT_PACK && zp)
		l.zcols = zp->shape[1];
	if (l.family == QF_CT_PACK && zp && l.zcols != (l.scols ? l.scols : 1))
		return reject(p, pre, plen, "weight_zero_point does not fit");
	if (l.family == QF_CT_INT && zp &&
	    !is(zp, TFS_DTYPE_INT8, sc->ndim, sc->shape))
		return reject(p, pre, plen, "weight_zero_point does not fit");
	if (gi && !is(gi, TFS_DTYPE_INT32, 1, (uint64_t[]){l.cols}))
		return reject(p, pre, plen, "weight_g_idx is not [in] int32");
found:
	l.bits = (uint32_t)bits;
	shape[0] = l.rows;
	shape[1] = l.cols;
	snprintf(tag, sizeof(tag), "ct_%s%u", l.family == QF_FP8 ? "fp" : "int",
		 l.bits);
	if (!packed)
		return take(p, &l, rec, recs, NULL, NULL, tag, shape, 2);
	if (!free_name(p, pre, plen, ".weight", name, sizeof(name)))
		return reject(p, pre, plen,
			      "a stored tensor has its "
			      "logical name");
	{
		char file[256];

		if (file_name(w, "weight_packed", "weight", file, sizeof(file)))
			return reject(p, pre, plen,
				      "its file name is not "
				      "its stored name's");
		return take(p, &l, rec, recs, name, file, tag, shape, 2);
	}
}

/* FP8 block (6): P.weight float8_e4m3 with P.weight_scale_inv (or _scale) */
static int fp8_block(struct plan *p, uint32_t rec)
{
	const struct tfs_tensor *w = rec_of(p, rec), *sc;
	size_t plen = w->name_len - strlen(".weight");
	const json_t *bs = json_object_get(p->qc, "weight_block_size");
	struct quant_layer l = {.family = QF_FP8, .method = "fp8", .bits = 8};
	uint32_t recs[QP_COUNT];

	if (!is(w, TFS_DTYPE_FLOAT8_E4M3, 2, NULL))
		return 0;
	init_parts(recs, rec);
	l.rows = w->shape[0];
	l.cols = w->shape[1];
	if (json_array_size(bs) == 2) {
		recs[QP_SCALE] = find(p, w->name, plen, ".weight_scale_inv");
		l.bh = (uint64_t)json_integer_value(json_array_get(bs, 0));
		l.bw = (uint64_t)json_integer_value(json_array_get(bs, 1));
	} else {
		recs[QP_SCALE] = find(p, w->name, plen, ".weight_scale");
		l.bh = l.rows;
		l.bw = l.cols;
	}
	sc = rec_of(p, recs[QP_SCALE]);
	if (!sc)
		return 0;
	if (!l.bh || !l.bw || l.bh > l.rows || l.bw > l.cols ||
	    !is_scale_dtype(sc->dtype_id) ||
	    (json_array_size(bs) == 2
		     ? !is(sc, sc->dtype_id, 2,
			   (uint64_t[]){(l.rows + l.bh - 1) / l.bh,
					(l.cols + l.bw - 1) / l.bw})
		     : elems(sc) != 1))
		return reject(p, w->name, plen,
			      "its scales do not fit its "
			      "blocks");
	return take(p, &l, rec, recs, NULL, NULL, "fp8_block", w->shape, 2);
}

/* MXFP4 (7): N_blocks [*prefix, G, 16] and N_scales [*prefix, G], uint8 */
static int mxfp4(struct plan *p, uint32_t rec)
{
	const struct tfs_tensor *bl = rec_of(p, rec), *sc;
	size_t plen = bl->name_len - strlen("_blocks");
	struct quant_layer l = {
		.family = QF_MXFP4, .method = "mxfp4", .bits = 4, .group = 32};
	uint32_t recs[QP_COUNT], k, nd = bl->ndim;
	uint64_t shape[8];
	char name[512], file[256];

	init_parts(recs, rec);
	recs[QP_SCALE] = find(p, bl->name, plen, "_scales");
	sc = rec_of(p, recs[QP_SCALE]);
	if (!sc || bl->dtype_id != TFS_DTYPE_UINT8 || nd < 2 || nd > 8)
		return 0;
	if (bl->shape[nd - 1] != 16 ||
	    !is(sc, TFS_DTYPE_UINT8, nd - 1, bl->shape))
		return reject(p, bl->name, plen,
			      "its scales do not fit its "
			      "blocks");
	for (l.rows = 1, k = 0; k + 2 < nd; k++) {
		shape[k] = bl->shape[k];
		if (!tfs_mul_u64(l.rows, shape[k], &l.rows))
			return reject(p, bl->name, plen, "too large");
	}
	if (!tfs_mul_u64(bl->shape[nd - 2], 32, &l.cols))
		return reject(p, bl->name, plen, "too large");
	shape[nd - 2] = l.cols;
	if (!free_name(p, bl->name, plen, "", name, sizeof(name)) ||
	    file_name(bl, "_blocks", "", file, sizeof(file)))
		return reject(p, bl->name, plen,
			      "a stored tensor has its "
			      "logical name");
	return take(p, &l, rec, recs, name, file, "mxfp4", shape, nd - 1);
}

/* NVFP4 (8): P.weight uint8 [out, in/2], P.weight_scale e4m3, _scale_2 */
static int nvfp4(struct plan *p, uint32_t rec)
{
	const struct tfs_tensor *w = rec_of(p, rec), *sc, *s2;
	size_t plen = w->name_len - strlen(".weight");
	struct quant_layer l = {
		.family = QF_NVFP4, .method = "nvfp4", .bits = 4, .group = 16};
	uint32_t recs[QP_COUNT];
	uint64_t shape[2];

	init_parts(recs, rec);
	recs[QP_SCALE] = find(p, w->name, plen, ".weight_scale");
	recs[QP_SCALE2] = find(p, w->name, plen, ".weight_scale_2");
	sc = rec_of(p, recs[QP_SCALE]);
	s2 = rec_of(p, recs[QP_SCALE2]);
	if (!is(w, TFS_DTYPE_UINT8, 2, NULL) || !sc)
		return 0;
	l.rows = w->shape[0];
	l.cols = w->shape[1] * 2;
	if (l.cols % 16 || !s2 || s2->dtype_id != TFS_DTYPE_FLOAT32 ||
	    elems(s2) != 1 ||
	    !is(sc, TFS_DTYPE_FLOAT8_E4M3, 2,
		(uint64_t[]){l.rows, l.cols / 16}))
		return reject(p, w->name, plen,
			      "its scales do not fit its "
			      "weight");
	shape[0] = l.rows;
	shape[1] = l.cols;
	return take(p, &l, rec, recs, NULL, NULL, "nvfp4", shape, 2);
}

/* bitsandbytes LLM.int8 (10): P.weight int8 [out, in], P.SCB [out] */
static int bnb_int8(struct plan *p, uint32_t rec)
{
	const struct tfs_tensor *w = rec_of(p, rec), *scb;
	size_t plen = w->name_len - strlen(".weight");
	struct quant_layer l = {
		.family = QF_BNB_INT8, .method = "bitsandbytes", .bits = 8};
	uint32_t recs[QP_COUNT];

	init_parts(recs, rec);
	recs[QP_SCALE] = find(p, w->name, plen, ".SCB");
	/* weight_format 0 is row-major; other layouts are not decoded */
	recs[QP_GIDX] = find(p, w->name, plen, ".weight_format");
	scb = rec_of(p, recs[QP_SCALE]);
	if (!is(w, TFS_DTYPE_INT8, 2, NULL) || !scb)
		return 0;
	l.rows = w->shape[0];
	l.cols = w->shape[1];
	if (!is(scb, TFS_DTYPE_FLOAT32, 1, (uint64_t[]){l.rows}))
		return reject(p, w->name, plen, "SCB is not [out] float32");
	return take(p, &l, rec, recs, NULL, NULL, "bnb_int8", w->shape, 2);
}

/* MLX affine (11): P.weight uint32 [out, in*b/32], P.scales, P.biases */
static int mlx(struct plan *p, uint32_t rec)
{
	const struct tfs_tensor *w = rec_of(p, rec), *sc, *bi;
	size_t plen = w->name_len - strlen(".weight");
	struct quant_layer l = {.family = QF_MLX, .method = "mlx"};
	const json_t *over;
	uint32_t recs[QP_COUNT];
	int64_t bits = int_of(p->qc, "bits", NULL, 0),
		g = int_of(p->qc, "group_size", NULL, 0);
	uint64_t shape[2];
	char mod[512];

	if (!is(w, TFS_DTYPE_UINT32, 2, NULL) || plen >= sizeof(mod))
		return 0;
	memcpy(mod, w->name, plen);
	mod[plen] = '\0';
	over = json_object_get(p->qc, mod);
	if (json_is_false(over))
		return 0;
	if (json_is_object(over)) {
		bits = int_of(over, "bits", NULL, bits);
		g = int_of(over, "group_size", NULL, g);
	}
	init_parts(recs, rec);
	recs[QP_SCALE] = find(p, w->name, plen, ".scales");
	recs[QP_ZERO] = find(p, w->name, plen, ".biases");
	sc = rec_of(p, recs[QP_SCALE]);
	bi = rec_of(p, recs[QP_ZERO]);
	if (!sc || !bi)
		return 0;
	if ((bits < 2 || bits > 8 || bits == 7) ||
	    (g != 32 && g != 64 && g != 128))
		return reject(p, w->name, plen,
			      "bits or group_size not "
			      "supported");
	l.bits = (uint32_t)bits;
	l.group = (uint64_t)g;
	l.rows = w->shape[0];
	l.cols = w->shape[1] * 32 / l.bits;
	if (w->shape[1] * 32 % l.bits || l.cols % l.group ||
	    !is_scale_dtype(sc->dtype_id) ||
	    !is(sc, sc->dtype_id, 2, (uint64_t[]){l.rows, l.cols / l.group}) ||
	    !is(bi, sc->dtype_id, 2, sc->shape))
		return reject(p, w->name, plen,
			      "its scales or biases do not "
			      "fit its weight");
	shape[0] = l.rows;
	shape[1] = l.cols;
	{
		char tag[32];

		snprintf(tag, sizeof(tag), "mlx_int%u", l.bits);
		return take(p, &l, rec, recs, NULL, NULL, tag, shape, 2);
	}
}

static bool ends(const struct tfs_tensor *x, const char *s)
{
	size_t n = strlen(s);

	return x->name_len > n && !strcmp(x->name + x->name_len - n, s);
}

/* every layer of the checkpoint's family; unknown ones: one warning */
static int find_layers(struct plan *p)
{
	struct tfs_tree *t = p->dr->tree;
	const char *m = p->method;
	uint32_t i, n = t->ntensors;
	int ret = 0;

	if (m && strcmp(m, "gptq") && strcmp(m, "awq") &&
	    strcmp(m, "compressed-tensors") && strcmp(m, "fp8") &&
	    strcmp(m, "mxfp4") && strcmp(m, "mlx") &&
	    !(!strcmp(m, "modelopt") &&
	      !strcmp(str_of(p->qc, "quant_algo") ? str_of(p->qc, "quant_algo")
						  : "",
		      "NVFP4")) &&
	    !(!strcmp(m, "bitsandbytes") &&
	      json_is_true(json_object_get(p->qc, "load_in_8bit"))))
		return tfs_draft_warn(p->dr,
				      "quantized view: quant_method %s is not "
				      "one tensorfs decodes; left as stored",
				      m);
	/* the layers' main tensors; records hidden meanwhile are skipped */
	for (i = 0; !ret && i < n; i++) {
		const struct tfs_tensor *x = &t->tensors[i];

		if (p->dr->hidden && p->dr->hidden[i])
			continue;
		if (!m || !strcmp(m, "mxfp4")) {
			if (ends(x, "_blocks"))
				ret = mxfp4(p, i);
		} else if (!strcmp(m, "gptq") || !strcmp(m, "awq")) {
			if (ends(x, ".qweight"))
				ret = gptq_awq(p, i, !strcmp(m, "awq"));
		} else if (!strcmp(m, "compressed-tensors")) {
			if (ends(x, ".weight_packed") || ends(x, ".weight"))
				ret = compressed(p, i);
		} else if (ends(x, ".weight")) {
			ret = !strcmp(m, "fp8")	       ? fp8_block(p, i)
			      : !strcmp(m, "mlx")      ? mlx(p, i)
			      : !strcmp(m, "modelopt") ? nvfp4(p, i)
						       : bnb_int8(p, i);
		}
	}
	return ret;
}

static int cmp_layers(const void *a, const void *b)
{
	const struct quant_layer *x = a, *y = b;

	return x->node < y->node ? -1 : x->node > y->node;
}

static void quant_free(void *data)
{
	struct quant_data *qd = data;

	if (qd)
		free(qd->v);
	free(qd);
}

static int quant_plan(struct tfs_draft *dr, uint32_t id)
{
	struct tfs_tree *t = dr->tree;
	struct plan p = {.dr = dr, .id = id};
	uint32_t i;
	int ret = 0;

	if (dr->opts.as != TFS_DTYPE_FLOAT32)
		return 0;
	p.qc = json_object_get(dr->model_config, "quantization_config");
	if (!json_is_object(p.qc) ||
	    (!str_of(p.qc, "quant_method") &&
	     json_is_object(json_object_get(dr->model_config, "quantization"))))
		p.qc = json_object_get(dr->model_config, "quantization");
	if (!json_is_object(p.qc))
		p.qc = NULL;
	p.method = p.qc ? str_of(p.qc, "quant_method") : NULL;
	if (p.qc && !p.method)
		p.method = "mlx"; /* quantization: {group_size, bits} */
	p.qd = calloc(1, sizeof(*p.qd));
	if (!p.qd)
		return -ENOMEM;
	t->view_data[id] = p.qd;
	tfs_strmap_init(&p.names);
	for (i = 0; !ret && i < t->ntensors; i++)
		ret = tfs_strmap_put(&p.names, t->tensors[i].name, i);
	if (!ret)
		ret = find_layers(&p);
	tfs_strmap_free(&p.names);
	if (!ret && p.qd->n) /* qsort and bsearch want a base */
		qsort(p.qd->v, p.qd->n, sizeof(*p.qd->v), cmp_layers);
	return ret;
}

static const struct quant_layer *layer_of(const struct tfs_tree *t,
					  uint32_t node)
{
	const struct quant_data *qd;
	struct quant_layer key = {.node = node};
	uint32_t rec;

	if (node >= t->nnodes || t->nodes[node].kind != TFS_NODE_TENSOR)
		return NULL;
	rec = t->nodes[node].tensor;
	if (rec >= t->nrecords || !t->tensors[rec].shown_by || !t->view_data)
		return NULL;
	qd = t->view_data[t->tensors[rec].shown_by - 1];
	if (!qd || !qd->n ||
	    tfs_view_kinds[t->tensors[rec].shown_by - 1] != &tfs_view_quant)
		return NULL;
	return bsearch(&key, qd->v, qd->n, sizeof(*qd->v), cmp_layers);
}

/* the whole stored bytes of part node @node, or -EIO */
static int part_bytes(struct tfs_image *img, uint32_t node, struct tfs_view *v)
{
	uint32_t rec = img->tree->nodes[node].tensor;
	uint64_t size = img->tree->tensors[rec].size;
	int ret;

	if (size > SIZE_MAX)
		return -EIO;
	ret = tfs_image_read_tensor(img, rec, 0, (size_t)size, v);
	if (!ret && v->len != size)
		ret = -EIO;
	return ret;
}

/* compressed-tensors' weight_shape holds the logical shape we derived */
static bool shape_agrees(const struct quant_layer *l, const uint8_t *p,
			 uint64_t len)
{
	uint64_t a = 0, b = 0;
	int i;

	for (i = 7; len == 16 && i >= 0; i--) {
		a = a << 8 | p[i];
		b = b << 8 | p[8 + i];
	}
	for (i = 3; len == 8 && i >= 0; i--) {
		a = a << 8 | p[i];
		b = b << 8 | p[4 + i];
	}
	return a == l->rows && b == l->cols;
}

static int quant_read_tensor(struct tfs_image *img, uint32_t tensor,
			     uint64_t off, size_t len, struct tfs_view *v)
{
	const struct quant_layer *l =
		layer_of(img->tree, img->tree->tensors[tensor].node);
	struct tfs_view pv[QP_COUNT] = {0};
	const uint8_t *parts[QP_COUNT] = {0};
	uint64_t plen[QP_COUNT] = {0}, row_bytes, r, o, a, b;
	uint8_t *out = NULL;
	float *row = NULL;
	int ret = -EIO, i;

	memset(v, 0, sizeof(*v));
	if (!l || !len)
		return l ? 0 : -EIO;
	for (i = 0; i < QP_COUNT; i++) {
		if (l->part[i] == QUANT_NO_PART)
			continue;
		ret = part_bytes(img, l->part[i], &pv[i]);
		if (ret)
			goto out;
		parts[i] = pv[i].data;
		plen[i] = pv[i].len;
	}
	ret = -EIO;
	if (parts[QP_SHAPE] &&
	    !shape_agrees(l, parts[QP_SHAPE], plen[QP_SHAPE]))
		goto out;
	row_bytes = l->cols * 4;
	/* the row, then the per-group tables (quant_decode.c) */
	row = malloc(row_bytes + 8 * tfs_quant_groups(l) + 8);
	out = malloc(len);
	ret = -ENOMEM;
	if (!row || !out)
		goto out;
	/* row by row: bounded memory whatever the read's size */
	for (o = 0, r = off / row_bytes; o < len; r++) {
		ret = tfs_quant_rows(l, parts, plen, r, 1, row,
				     row + l->cols + 1);
		if (ret)
			goto out;
		a = off + o - r * row_bytes; /* from here in the row */
		b = row_bytes - a < len - o ? row_bytes - a : len - o;
		memcpy(out + o, (uint8_t *)row + a, b);
		o += b;
	}
	tfs_view_own(v, out, len);
	out = NULL;
	ret = 0;
out:
	for (i = 0; i < QP_COUNT; i++)
		tfs_view_release(img, &pv[i]);
	free(out);
	free(row);
	return ret;
}

#define QUANT_XATTR TFS_XATTR_PREFIX "quant"

static ssize_t quant_getxattr(struct tfs_image *img, uint32_t node,
			      const char *name, char *buf, size_t size)
{
	const struct quant_layer *l = layer_of(img->tree, node);
	json_t *o, *comps;
	char *text;
	ssize_t n;
	int i;

	if (!l || strcmp(name, QUANT_XATTR))
		return -ENODATA;
	comps = json_array();
	for (i = 0; comps && i < QP_COUNT; i++) {
		const struct tfs_tensor *x;

		if (l->part[i] == QUANT_NO_PART)
			continue;
		x = &img->tree->tensors[img->tree->nodes[l->part[i]].tensor];
		json_array_append_new(
			comps,
			i == QP_MAIN
				? json_stringn(l->stored_name, l->stored_len)
				: json_stringn(x->name, x->name_len));
	}
	o = json_pack("{s:s,s:I,s:I,s:o}", "method", l->method, "bits",
		      (json_int_t)l->bits, "group_size",
		      (json_int_t)(l->group ? (int64_t)l->group : -1),
		      "components", comps ? comps : json_null());
	text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!text)
		return -ENOMEM;
	n = (ssize_t)strlen(text);
	if (size && (size_t)n > size)
		n = -ERANGE;
	else if (size)
		memcpy(buf, text, (size_t)n);
	free(text);
	return n;
}

static ssize_t quant_listxattr(char *buf, size_t size, size_t used)
{
	size_t n = sizeof(QUANT_XATTR);

	if (!size)
		return (ssize_t)(used + n);
	if (used + n > size)
		return -ERANGE;
	memcpy(buf + used, QUANT_XATTR, n);
	return (ssize_t)(used + n);
}

const struct tfs_view_ops tfs_view_quant = {
	.name = "quant",
	.plan = quant_plan,
	.read_tensor = quant_read_tensor,
	.getxattr = quant_getxattr,
	.listxattr = quant_listxattr,
	.free_data = quant_free,
};
