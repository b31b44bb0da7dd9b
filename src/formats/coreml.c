// SPDX-License-Identifier: MIT
/*
 * Core ML `.mlmodel` (specs/coreml.md, docs/formats/coreml.md): one
 * protobuf Model (coremltools' Model.proto, NeuralNetwork.proto), read with
 * the bounded wire reader of parse/protobuf.h.  The NeuralNetwork kinds
 * (500, regressor 303, classifier 403) give their layers' WeightParams as
 * tensors `<layer name>/<field>`; a pipeline (200, 201, 202) holds models
 * read under `models/<i>/`.  WeightParams: floatValue (float32, one packed
 * field zero-copy), float16Value (float16), rawValue and int8RawValue
 * (quantized bytes as stored: uint8 / int8, 1-D).  The layers whose
 * weights have a known shape are convolution, innerProduct, embedding,
 * batchnorm, scale, bias and loadConstant; other layers' weights are not
 * read (a warning names each).  An ML Program (502, weights in a
 * .mlpackage) is refused.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/builder.h"
#include "core/checked.h"
#include "core/cursor.h"
#include "core/diag.h"
#include "core/dtype.h"
#include "core/format.h"
#include "core/names.h"
#include "core/source.h"
#include "parse/protobuf.h"

#define CM_MAX_DEPTH 8 /* pipelines in pipelines */
#define CM_PATH_MAX 1024
#define CM_PROBE_FIELDS 64

enum {
	M_SPEC_VERSION = 1,
	M_PIPELINE_CLASSIFIER = 200,
	M_PIPELINE_REGRESSOR = 201,
	M_PIPELINE = 202,
	M_NN_REGRESSOR = 303,
	M_NN_CLASSIFIER = 403,
	M_NN = 500,
	M_ML_PROGRAM = 502,
	NN_LAYERS = 1,
	L_NAME = 1,
	WP_FLOAT = 1,
	WP_FLOAT16 = 2,
	WP_RAW = 30,
	WP_INT8 = 31,
};

/* a layer kind whose weights have known shapes */
enum cm_kind {
	CM_CONV,
	CM_INNER,
	CM_EMBED,
	CM_BN,
	CM_SCALE,
	CM_BIAS,
	CM_CONST
};

static const struct {
	uint32_t field;
	enum cm_kind kind;
	const char *name;
} cm_layers[] = {
	{100, CM_CONV, "convolution"},	 {140, CM_INNER, "innerProduct"},
	{150, CM_EMBED, "embedding"},	 {160, CM_BN, "batchnorm"},
	{245, CM_SCALE, "scale"},	 {250, CM_BIAS, "bias"},
	{290, CM_CONST, "loadConstant"},
};

struct cm {
	const struct tfs_source *src;
	struct tfs_builder *b;
	struct tfs_diag *d;
	char prefix[CM_PATH_MAX];
	size_t plen;
	uint64_t layers, tensors, skipped;
	json_t *kinds;
};

/* the scalar fields of a layer's params, by number (up to 64), and its
 * repeated uint64 shape fields */
struct cm_params {
	uint64_t v[64];
	bool set[64];
	uint64_t shape[2][8]; /* the two repeated-uint64 fields asked */
	size_t nshape[2];
	struct tfs_pb_field weights[8]; /* LEN fields asked for, by slot */
	bool has[8];
};

/* one WeightParams as a tensor of @shape (NULL: 1-D) */
static int cm_weights(struct cm *z, const char *layer, size_t llen,
		      const char *what, const struct tfs_pb_field *wf,
		      const uint64_t *shape, size_t ndim)
{
	struct tfs_cursor c;
	struct tfs_pb_field f, data = {0};
	struct tfs_pb_values it;
	struct tfs_tensor_spec spec;
	enum tfs_dtype dt = TFS_DTYPE_INVALID;
	uint64_t count = 0, want = 1, one, v, k;
	unsigned nfields = 0;
	char name[CM_PATH_MAX + 320];
	uint8_t *mem = NULL;
	size_t i;
	int r, len;

	tfs_pb_sub(wf, &c);
	while ((r = tfs_pb_next(&c, "WeightParams", &f, z->d)) == 1) {
		switch (f.number) {
		case WP_FLOAT:
			r = tfs_pb_values_init(&it, &f, TFS_PB_SCALAR_FIXED32,
					       "WeightParams", "floatValue",
					       z->d);
			if (r)
				return r;
			if (dt != TFS_DTYPE_INVALID && dt != TFS_DTYPE_FLOAT32)
				goto two;
			dt = TFS_DTYPE_FLOAT32;
			count += it.count;
			if (!nfields++)
				data = f;
			break;
		case WP_FLOAT16:
		case WP_RAW:
		case WP_INT8:
			r = tfs_pb_want(&f, TFS_PB_LEN, "WeightParams", z->d);
			if (r)
				return r;
			if (dt != TFS_DTYPE_INVALID || nfields)
				goto two;
			dt = f.number == WP_FLOAT16 ? TFS_DTYPE_FLOAT16
			     : f.number == WP_RAW   ? TFS_DTYPE_UINT8
						    : TFS_DTYPE_INT8;
			if (f.number == WP_FLOAT16 && f.len % 2)
				return tfs_diag_at(
					z->d, -EBADMSG, f.at,
					"layer '%s' %s: float16Value "
					"of %" PRIu64 " bytes (odd)",
					TFS_SHOWN(layer, llen), what, f.len);
			count = f.number == WP_FLOAT16 ? f.len / 2 : f.len;
			nfields++;
			data = f;
			break;
		default:
			break;
		}
	}
	if (r)
		return r;
	if (dt == TFS_DTYPE_INVALID) /* an empty WeightParams: no tensor */
		return 0;
	len = snprintf(name, sizeof(name), "%.*s%.*s/%s", (int)z->plen,
		       z->prefix, (int)llen, layer, what);
	if (len < 0 || (size_t)len >= sizeof(name))
		return tfs_diag_at(z->d, -E2BIG, wf->at,
				   "layer '%s': its name is too long",
				   TFS_SHOWN(layer, llen));
	/* quantized bytes keep their own 1-D shape */
	if (dt == TFS_DTYPE_UINT8 || dt == TFS_DTYPE_INT8)
		shape = NULL;
	for (i = 0; shape && i < ndim; i++)
		if (!tfs_mul_u64(want, shape[i], &want))
			want = UINT64_MAX;
	if (shape && want != count)
		return tfs_diag_at(z->d, -EBADMSG, data.at,
				   "layer '%s' %s: %" PRIu64 " values, but its "
				   "parameters give %" PRIu64,
				   TFS_SHOWN(layer, llen), what, count, want);
	one = count;
	tfs_spec_tensor(&spec, name, (size_t)len, dt, shape ? shape : &one,
			shape ? ndim : 1, wf->at);
	if (nfields == 1 && data.wire == TFS_PB_LEN) {
		tfs_spec_raw(&spec, data.value_at, count * tfs_dtype_size(dt));
	} else { /* floats in several fields, or unpacked */
		mem = malloc(count ? count * 4 : 1);
		if (!mem)
			return tfs_diag_oom(z->d);
		tfs_pb_sub(wf, &c);
		k = 0;
		while (tfs_pb_next(&c, "WeightParams", &f, z->d) == 1) {
			if (f.number != WP_FLOAT)
				continue;
			tfs_pb_values_init(&it, &f, TFS_PB_SCALAR_FIXED32,
					   "WeightParams", "floatValue", z->d);
			while (k < count && tfs_pb_values_next(&it, &v) == 1) {
				for (i = 0; i < 4; i++)
					mem[k * 4 + i] =
						(uint8_t)(v >> (8 * i));
				k++;
			}
		}
		tfs_spec_mem(&spec, mem, count * 4);
	}
	r = tfs_builder_add_tensor(z->b, &spec, NULL, z->d);
	free(mem);
	z->tensors++;
	return r;
two:
	return tfs_diag_at(z->d, -EBADMSG, f.at,
			   "layer '%s' %s: values in two forms "
			   "(floatValue, float16Value, rawValue, "
			   "int8RawValue)",
			   TFS_SHOWN(layer, llen), what);
}

/* the params message of a known layer: scalars, two shape fields, and
 * the WeightParams fields @wf[] (slots in order) */
static int cm_params(struct cm *z, const struct tfs_pb_field *pf,
		     const uint32_t *shape_fields, const uint32_t *wf,
		     size_t nwf, struct cm_params *p)
{
	struct tfs_cursor c;
	struct tfs_pb_field f;
	struct tfs_pb_values it;
	uint64_t v;
	size_t i;
	int r;

	memset(p, 0, sizeof(*p));
	tfs_pb_sub(pf, &c);
	while ((r = tfs_pb_next(&c, "layer params", &f, z->d)) == 1) {
		for (i = 0; i < 2; i++) {
			if (!shape_fields[i] || f.number != shape_fields[i])
				continue;
			r = tfs_pb_values_init(&it, &f, TFS_PB_SCALAR_VARINT,
					       "layer params", "shape", z->d);
			while (!r && tfs_pb_values_next(&it, &v) == 1) {
				if (p->nshape[i] == 8)
					return tfs_diag_at(z->d, -EBADMSG, f.at,
							   "a shape of more "
							   "than 8 dims");
				p->shape[i][p->nshape[i]++] = v;
			}
			if (r)
				return r;
		}
		for (i = 0; i < nwf; i++)
			if (f.number == wf[i]) {
				r = tfs_pb_want(&f, TFS_PB_LEN, "layer params",
						z->d);
				if (r)
					return r;
				p->weights[i] = f;
				p->has[i] = true;
			}
		if (f.number < 64 && f.wire == TFS_PB_VARINT) {
			p->v[f.number] = f.v;
			p->set[f.number] = true;
		}
	}
	return r;
}

static int cm_layer(struct cm *z, const struct tfs_pb_field *lf)
{
	static const uint32_t none[2] = {0, 0};
	struct tfs_cursor c;
	struct tfs_pb_field f, pf = {0};
	struct cm_params p;
	const char *name = "";
	size_t nlen = 0, i, k = ~(size_t)0;
	uint64_t shape[4];
	int r;

	tfs_pb_sub(lf, &c);
	while ((r = tfs_pb_next(&c, "NeuralNetworkLayer", &f, z->d)) == 1) {
		if (f.number == L_NAME) {
			r = tfs_pb_want(&f, TFS_PB_LEN, "NeuralNetworkLayer",
					z->d);
			if (r)
				return r;
			name = (const char *)f.data;
			nlen = (size_t)f.len;
		} else if (f.number >= 100 && f.wire == TFS_PB_LEN) {
			pf = f;
		}
	}
	if (r)
		return r;
	z->layers++;
	if (!pf.number)
		return 0;
	for (i = 0; i < sizeof(cm_layers) / sizeof(cm_layers[0]); i++)
		if (cm_layers[i].field == pf.number)
			k = i;
	if (k == ~(size_t)0) {
		z->skipped++;
		return 0;
	}
	{
		json_t *n = json_object_get(z->kinds, cm_layers[k].name);

		if (json_object_set_new(
			    z->kinds, cm_layers[k].name,
			    json_integer(n ? json_integer_value(n) + 1 : 1)))
			return tfs_diag_oom(z->d);
	}
	switch (cm_layers[k].kind) {
	case CM_CONV: {
		static const uint32_t sf[2] = {20, 0}, wf[2] = {90, 91};
		uint64_t out, kc, g;

		r = cm_params(z, &pf, sf, wf, 2, &p);
		if (r)
			return r;
		out = p.v[1];
		kc = p.v[2];
		g = p.set[10] && p.v[10] ? p.v[10] : 1;
		shape[2] = p.nshape[0] > 0 ? p.shape[0][0] : 3;
		shape[3] = p.nshape[0] > 1 ? p.shape[0][1] : 3;
		if (p.v[60]) { /* isDeconvolution */
			shape[0] = kc;
			shape[1] = out / g;
		} else {
			shape[0] = out;
			shape[1] = kc;
		}
		r = p.has[0] ? cm_weights(z, name, nlen, "weights",
					  &p.weights[0], shape, 4)
			     : 0;
		return r || !p.has[1] ? r
				      : cm_weights(z, name, nlen, "bias",
						   &p.weights[1], &out, 1);
	}
	case CM_INNER:
	case CM_EMBED: {
		static const uint32_t wf[2] = {20, 21};

		r = cm_params(z, &pf, none, wf, 2, &p);
		if (r)
			return r;
		shape[0] = p.v[2];
		shape[1] = p.v[1];
		r = p.has[0] ? cm_weights(z, name, nlen, "weights",
					  &p.weights[0], shape, 2)
			     : 0;
		return r || !p.has[1] ? r
				      : cm_weights(z, name, nlen, "bias",
						   &p.weights[1], shape, 1);
	}
	case CM_BN: {
		static const uint32_t wf[4] = {15, 16, 17, 18};
		static const char *const names[4] = {"gamma", "beta", "mean",
						     "variance"};

		r = cm_params(z, &pf, none, wf, 4, &p);
		for (i = 0; !r && i < 4; i++)
			if (p.has[i])
				r = cm_weights(z, name, nlen, names[i],
					       &p.weights[i], &p.v[1], 1);
		return r;
	}
	case CM_SCALE: {
		static const uint32_t sf[2] = {1, 4}, wf[2] = {2, 5};

		r = cm_params(z, &pf, sf, wf, 2, &p);
		r = r || !p.has[0]
			    ? r
			    : cm_weights(z, name, nlen, "scale", &p.weights[0],
					 p.shape[0], p.nshape[0]);
		return r || !p.has[1] ? r
				      : cm_weights(z, name, nlen, "bias",
						   &p.weights[1], p.shape[1],
						   p.nshape[1]);
	}
	case CM_BIAS:
	case CM_CONST: {
		static const uint32_t sf[2] = {1, 0}, wf[1] = {2};

		r = cm_params(z, &pf, sf, wf, 1, &p);
		return r || !p.has[0] ? r
				      : cm_weights(z, name, nlen,
						   cm_layers[k].kind == CM_BIAS
							   ? "bias"
							   : "data",
						   &p.weights[0], p.shape[0],
						   p.nshape[0]);
	}
	}
	return 0;
}

static int cm_model(struct cm *z, struct tfs_cursor *c, unsigned depth);

static int cm_network(struct cm *z, const struct tfs_pb_field *nf)
{
	struct tfs_cursor c;
	struct tfs_pb_field f;
	int r;

	tfs_pb_sub(nf, &c);
	while ((r = tfs_pb_next(&c, "NeuralNetwork", &f, z->d)) == 1)
		if (f.number == NN_LAYERS) {
			r = tfs_pb_want(&f, TFS_PB_LEN, "NeuralNetwork", z->d);
			r = r ? r : cm_layer(z, &f);
			if (r)
				return r;
		}
	return r;
}

/* Pipeline: 1 repeated Model, each under models/<i>/ */
static int cm_pipeline(struct cm *z, const struct tfs_pb_field *pf,
		       unsigned depth)
{
	struct tfs_cursor c, m;
	struct tfs_pb_field f;
	size_t old = z->plen;
	uint64_t i = 0;
	int r, n;

	if (depth >= CM_MAX_DEPTH)
		return tfs_diag_at(z->d, -E2BIG, pf->at,
				   "pipelines nested more than %d deep",
				   CM_MAX_DEPTH);
	tfs_pb_sub(pf, &c);
	while ((r = tfs_pb_next(&c, "Pipeline", &f, z->d)) == 1) {
		if (f.number != 1 || f.wire != TFS_PB_LEN)
			continue;
		n = snprintf(z->prefix + old, sizeof(z->prefix) - old,
			     "models/%" PRIu64 "/", i++);
		if (n < 0 || (size_t)n >= sizeof(z->prefix) - old)
			return tfs_diag_at(z->d, -E2BIG, f.at,
					   "pipeline: a path too long");
		z->plen = old + (size_t)n;
		tfs_pb_sub(&f, &m);
		r = cm_model(z, &m, depth + 1);
		z->plen = old;
		if (r)
			return r;
	}
	return r;
}

static int cm_model(struct cm *z, struct tfs_cursor *c, unsigned depth)
{
	struct tfs_pb_field f;
	int r;

	while ((r = tfs_pb_next(c, "Model", &f, z->d)) == 1) {
		switch (f.number) {
		case M_PIPELINE_CLASSIFIER:
		case M_PIPELINE_REGRESSOR:
		case M_PIPELINE:
			/* PipelineClassifier/Regressor hold a Pipeline at 1 */
			if (f.number != M_PIPELINE) {
				struct tfs_cursor s;
				struct tfs_pb_field g;

				tfs_pb_sub(&f, &s);
				while ((r = tfs_pb_next(&s, "Pipeline", &g,
							z->d)) == 1)
					if (g.number == 1 &&
					    g.wire == TFS_PB_LEN)
						r = cm_pipeline(z, &g, depth);
				if (r)
					return r;
				break;
			}
			r = cm_pipeline(z, &f, depth);
			break;
		case M_NN:
		case M_NN_REGRESSOR:
		case M_NN_CLASSIFIER:
			r = tfs_pb_want(&f, TFS_PB_LEN, "Model", z->d);
			r = r ? r : cm_network(z, &f);
			break;
		case M_ML_PROGRAM:
			return tfs_diag_at(z->d, -ENOTSUP, f.at,
					   "Model.mlProgram (502): an ML "
					   "Program's weights (.mlpackage) are "
					   "not supported yet");
		default:
			r = 0;
		}
		if (r)
			return r;
	}
	return r;
}

/* specificationVersion first, then description, isUpdatable or a model
 * kind (200..699): a Core ML Model, never an ONNX ModelProto; a file named
 * .mlmodel that starts so is claimed weakly without one */
static int cm_probe(const struct tfs_source *src)
{
	struct tfs_cursor c;
	struct tfs_pb_field f;
	int named = tfs_source_name_ends(src, ".mlmodel") ? 20 : 0;
	bool kind = false;
	unsigned n;
	int r;

	tfs_cursor_init(&c, src->data, src->size, 0);
	if (tfs_pb_next(&c, "Model", &f, NULL) != 1 ||
	    f.number != M_SPEC_VERSION || f.wire != TFS_PB_VARINT || !f.v ||
	    f.v > 100)
		return 0;
	for (n = 0; n < CM_PROBE_FIELDS; n++) {
		r = tfs_pb_next(&c, "Model", &f, NULL);
		if (r < 0) /* broken: a .mlmodel is claimed to say why */
			return kind ? 80 : named;
		if (r == 0)
			break;
		if (f.number >= 200 && f.number < 700 && f.wire == TFS_PB_LEN)
			kind = true;
		else if (!(f.number == 2 && f.wire == TFS_PB_LEN) &&
			 !(f.number == 10 && f.wire == TFS_PB_VARINT))
			return 0;
	}
	return kind ? 80 : named;
}

static int cm_load(const struct tfs_source *src, struct tfs_builder *b,
		   struct tfs_diag *d)
{
	struct cm z = {.src = src, .b = b, .d = d};
	json_t *meta = tfs_builder_metadata(b);
	struct tfs_cursor c;
	struct tfs_pb_field f;
	int r;

	z.kinds = json_object();
	if (!z.kinds)
		return tfs_diag_oom(d);
	tfs_cursor_init(&c, src->data, src->size, 0);
	r = tfs_pb_next(&c, "Model", &f, d);
	if (r == 1 && (f.number != M_SPEC_VERSION || f.wire != TFS_PB_VARINT))
		r = tfs_diag_at(d, -EBADMSG, 0,
				"Model: the first field is not "
				"specificationVersion");
	else if (r == 0)
		r = tfs_diag_at(d, -EBADMSG, 0, "Model: empty");
	if (r < 0)
		goto out;
	tfs_cursor_init(&c, src->data, src->size, 0);
	r = cm_model(&z, &c, 0);
	if (!r && z.skipped &&
	    tfs_builder_warn(b, TFS_NO_OFFSET,
			     "%" PRIu64 " layers of other kinds: any weights "
			     "they hold (LSTM, GRU, ...) are not read",
			     z.skipped))
		r = tfs_diag_oom(d);
	if (!r && (json_object_set_new(meta, "specification_version",
				       json_integer((json_int_t)f.v)) ||
		   json_object_set_new(meta, "layers",
				       json_integer((json_int_t)z.layers)) ||
		   json_object_set(meta, "layer_types", z.kinds)))
		r = tfs_diag_oom(d);
out:
	json_decref(z.kinds);
	return r;
}

TFS_FORMAT(coreml, "Core ML .mlmodel (NeuralNetwork weights)",
	   .probe = cm_probe, .load = cm_load);
