// SPDX-License-Identifier: MIT
/*
 * ncnn (specs/ncnn.md, docs/formats/ncnn.md): a text `.param` (magic
 * 7767517, `layer_count blob_count`, then per layer `Type Name n_in n_out
 * in... out... k=v...`) and the `.bin` beside it (the same stem): each
 * layer's weights in .param order, no header, no names, read as the
 * layer's load_model() reads them through ModelBinFromDataReader::load.
 * A type-0 Mat starts with a 4-byte flag (float16, int8, float32 raw, or
 * 0: float32) that sets its dtype; a type-1 Mat is float32 without one.
 *
 * The .param is the container; a missing .bin (or a .param read from
 * memory) leaves the weights listed but unreadable, each flagged Mat
 * listed as float32 (its flag is in the .bin).  Tensors:
 * `<layer name>/<blob>` (`185/weight_data`), 1-D as ncnn keeps them.
 * Layers whose weights this reader does not know are refused by type.
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
#include "formats/common/beside.h"

#define NC_MAGIC "7767517"
#define NC_MAX_LAYERS (1u << 20)
#define NC_MAX_PARAMS 32 /* NCNN_MAX_PARAM_COUNT */
#define NC_TOKEN_MAX 256
#define NC_FP16 0x01306B47u
#define NC_INT8 0x000D4B38u
#define NC_RAW 0x0002C056u

/* layers that load no weights (their load_model is Layer's) */
static const char *const nc_plain[] = {
	"AbsVal",
	"ArgMax",
	"BinaryOp",
	"BNLL",
	"Cast",
	"CELU",
	"Clip",
	"Concat",
	"CopyTo",
	"Crop",
	"CumulativeSum",
	"DeepCopy",
	"DetectionOutput",
	"Dropout",
	"Einsum",
	"ELU",
	"Eltwise",
	"Erf",
	"ExpandDims",
	"Exp",
	"Flatten",
	"Flip",
	"Fold",
	"GELU",
	"GLU",
	"GridSample",
	"HardSigmoid",
	"HardSwish",
	"Input",
	"Interp",
	"Log",
	"LRN",
	"MatMul",
	"Mish",
	"MVN",
	"Noop",
	"Packing",
	"Permute",
	"PixelShuffle",
	"Pooling",
	"Pooling1D",
	"Pooling3D",
	"Power",
	"PriorBox",
	"Proposal",
	"PSROIPooling",
	"Reduction",
	"ReLU",
	"Reorg",
	"Reshape",
	"ROIAlign",
	"ROIPooling",
	"SELU",
	"ShuffleChannel",
	"Sigmoid",
	"Slice",
	"Softmax",
	"Softplus",
	"Split",
	"SPP",
	"Squeeze",
	"StatisticsPooling",
	"Swish",
	"TanH",
	"Threshold",
	"Tile",
	"UnaryOp",
	"Unfold",
	"YoloDetectionOutput",
	"Yolov3DetectionOutput",
};

struct nc {
	const struct tfs_source *src;
	struct tfs_builder *b;
	struct tfs_diag *d;
	uint64_t pos; /* in the .param */
	/* the .bin */
	const uint8_t *w;
	uint64_t w_size, w_pos;
	uint32_t w_source;
	const char *unreadable;
	char why[TFS_DIAG_MSG_MAX];
	char bin_name[256];
	/* the layer being read */
	char type[NC_TOKEN_MAX], name[NC_TOKEN_MAX];
	uint64_t layer_at;
	int64_t ints[NC_MAX_PARAMS];
	bool set[NC_MAX_PARAMS];
	json_t *types;
	uint64_t tensors;
};

/* ---- the .param -----------------------------------------------------------
 */

static bool nc_space(uint8_t ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

/* the next whitespace-separated token, as fscanf("%s") reads it; 0 at
 * the end (*@len 0) */
static int nc_token(struct nc *z, char *out, size_t *len, uint64_t *at)
{
	const uint8_t *p = z->src->data;
	size_t n = 0;

	while (z->pos < z->src->size && nc_space(p[z->pos]))
		z->pos++;
	*at = z->pos;
	while (z->pos < z->src->size && !nc_space(p[z->pos])) {
		if (!p[z->pos] || n == NC_TOKEN_MAX - 1)
			return tfs_diag_at(z->d, -EBADMSG, *at, "param: %s",
					   p[z->pos]
						   ? "a token longer than 255 "
						     "bytes"
						   : "a NUL byte: not text");
		out[n++] = (char)p[z->pos++];
	}
	out[n] = '\0';
	*len = n;
	return 0;
}

/* a decimal integer token, whole */
static int nc_int(struct nc *z, const char *what, int64_t min, int64_t max,
		  int64_t *out)
{
	char tok[NC_TOKEN_MAX], *end;
	uint64_t at;
	size_t len;
	long long v;
	int ret = nc_token(z, tok, &len, &at);

	if (ret)
		return ret;
	errno = 0;
	v = len ? strtoll(tok, &end, 10) : 0;
	if (!len || *end || errno || v < min || v > max)
		return tfs_diag_at(z->d, -EBADMSG, at,
				   "param: %s: '%s' is not an integer in "
				   "%" PRId64 "..%" PRId64,
				   what, TFS_SHOWN(tok, len), min, max);
	*out = v;
	return 0;
}

/* the layer's k=v tokens (ParamDict::load_param): the ints kept */
static int nc_params(struct nc *z)
{
	const uint8_t *p = z->src->data;
	char tok[NC_TOKEN_MAX], *eq, *end;
	uint64_t at, save;
	size_t len;
	long id;
	int ret;

	memset(z->set, 0, sizeof(z->set));
	for (;;) {
		save = z->pos;
		while (save < z->src->size && nc_space(p[save]))
			save++;
		if (save == z->src->size ||
		    !(p[save] == '-' || (p[save] >= '0' && p[save] <= '9')))
			return 0;
		ret = nc_token(z, tok, &len, &at);
		if (ret)
			return ret;
		eq = strchr(tok, '=');
		errno = 0;
		id = eq ? strtol(tok, &end, 10) : 0;
		if (!eq || end != eq || errno)
			return tfs_diag_at(z->d, -EBADMSG, at,
					   "param: layer '%s': '%s' is not "
					   "id=value",
					   TFS_SHOWN(z->name, strlen(z->name)),
					   TFS_SHOWN(tok, len));
		if (id <= -23300) /* an array: -23300 - id, n,a,b,... */
			id = -id - 23300;
		if (id < 0 || id >= NC_MAX_PARAMS)
			return tfs_diag_at(z->d, -EBADMSG, at,
					   "param: layer '%s': id %ld is "
					   "outside 0..%d",
					   TFS_SHOWN(z->name, strlen(z->name)),
					   id, NC_MAX_PARAMS - 1);
		if (strchr(eq + 1, ',') || strpbrk(eq + 1, ".eE"))
			continue; /* an array or a float: no size is one */
		errno = 0;
		z->ints[id] = strtoll(eq + 1, &end, 10);
		if (*end || end == eq + 1 || errno)
			return tfs_diag_at(z->d, -EBADMSG, at,
					   "param: layer '%s': '%s': not a "
					   "number",
					   TFS_SHOWN(z->name, strlen(z->name)),
					   TFS_SHOWN(tok, len));
		z->set[id] = true;
	}
}

static int64_t nc_get(const struct nc *z, unsigned id, int64_t def)
{
	return z->set[id] ? z->ints[id] : def;
}

/* ---- the weights ----------------------------------------------------------
 */

/* one Mat of @w elements, type 0 (flagged) or 1 (float32) */
static int nc_mat(struct nc *z, const char *blob, int64_t w, int type)
{
	struct tfs_tensor_spec spec;
	enum tfs_dtype dt = TFS_DTYPE_FLOAT32;
	uint64_t n = (uint64_t)w, bytes, at, skip = 0, shape[1];
	char name[2 * NC_TOKEN_MAX];
	uint32_t flag = 0;
	int len;

	if (w < 0)
		return tfs_diag_at(z->d, -EBADMSG, z->layer_at,
				   "param: layer '%s' %s: %" PRId64 " elements",
				   TFS_SHOWN(z->name, strlen(z->name)), blob,
				   w);
	len = snprintf(name, sizeof(name), "%s/%s", z->name, blob);
	at = z->w_pos;
	if (!z->unreadable && type == 0) {
		if (z->w_size - z->w_pos < 4)
			goto short_bin;
		flag = (uint32_t)tfs_load_le(z->w + z->w_pos, 4);
		at += 4;
		if (flag == NC_FP16) {
			dt = TFS_DTYPE_FLOAT16;
		} else if (flag == NC_INT8) {
			dt = TFS_DTYPE_INT8;
		} else if (flag != NC_RAW &&
			   (flag & 0xff) + (flag >> 8 & 0xff) +
					   (flag >> 16 & 0xff) + (flag >> 24) !=
				   0) {
			return tfs_diag_at(
				z->d, -ENOTSUP, z->layer_at,
				"param: layer '%s' %s: flag "
				"0x%08" PRIx32 " at .bin byte "
				"%" PRIu64 ": weights quantized by "
				"a 256-value table are not supported",
				TFS_SHOWN(z->name, strlen(z->name)), blob, flag,
				z->w_pos);
		}
	}
	if (!tfs_mul_u64(n, tfs_dtype_size(dt), &bytes))
		bytes = UINT64_MAX;
	if (dt != TFS_DTYPE_FLOAT32) /* padded to 4 bytes */
		skip = (4 - bytes % 4) % 4;
	shape[0] = n;
	tfs_spec_tensor(&spec, name, (size_t)len, dt, shape, 1, z->layer_at);
	tfs_spec_size(&spec, bytes == UINT64_MAX ? 0 : bytes);
	if (z->unreadable) {
		if (bytes == UINT64_MAX)
			return tfs_diag_at(z->d, -EBADMSG, z->layer_at,
					   "param: layer '%s' %s: %" PRIu64
					   " elements overflow the byte count",
					   TFS_SHOWN(z->name, strlen(z->name)),
					   blob, n);
		tfs_spec_unreadable(&spec, z->unreadable, true);
	} else {
		if (bytes > z->w_size - at || skip > z->w_size - at - bytes)
			goto short_bin;
		tfs_spec_in(&spec, z->w_source);
		tfs_spec_stored(&spec, at, bytes);
		z->w_pos = at + bytes + skip;
	}
	z->tensors++;
	return tfs_builder_add_tensor(z->b, &spec, NULL, z->d);
short_bin:
	return tfs_diag_at(z->d, -EBADMSG, z->layer_at,
			   "param: layer '%s' %s: the .bin '%s' ends at byte "
			   "%" PRIu64 " before its %" PRId64 " elements (from "
			   "byte %" PRIu64 ")",
			   TFS_SHOWN(z->name, strlen(z->name)), blob,
			   z->bin_name, z->w_size, w, z->w_pos);
}

/*
 * Layers of one weight_data (flagged) and an optional bias_data [num_output]:
 * the ids of their parameters (load_param), -1 where they have none
 */
static const struct {
	const char *type;
	int size, bias, int8, dynamic;
} nc_weighted[] = {
	{"Convolution", 6, 5, 8, 19},
	{"ConvolutionDepthWise", 6, 5, 8, 19},
	{"Convolution1D", 6, 5, -1, 19},
	{"Deconvolution", 6, 5, -1, 28},
	{"DeconvolutionDepthWise", 6, 5, -1, 28},
	{"InnerProduct", 2, 1, 8, -1},
	{"Embed", 3, 2, 18, -1},
};

/* the weights of the current layer, in its load_model()'s order */
static int nc_weights(struct nc *z)
{
	const char *t = z->type;
	int64_t out = nc_get(z, 0, 0);
	size_t i;
	int ret = 0;

	for (i = 0; i < sizeof(nc_weighted) / sizeof(nc_weighted[0]); i++) {
		if (strcmp(t, nc_weighted[i].type))
			continue;
		if (nc_weighted[i].int8 >= 0 &&
		    nc_get(z, (unsigned)nc_weighted[i].int8, 0))
			return tfs_diag_at(
				z->d, -ENOTSUP, z->layer_at,
				"param: layer '%s' (%s): int8 "
				"scales (%d=%" PRId64 ") are not "
				"supported",
				TFS_SHOWN(z->name, strlen(z->name)), t,
				nc_weighted[i].int8,
				nc_get(z, (unsigned)nc_weighted[i].int8, 0));
		if (nc_weighted[i].dynamic >= 0 &&
		    nc_get(z, (unsigned)nc_weighted[i].dynamic, 0))
			return 0; /* dynamic_weight: from a bottom blob */
		ret = nc_mat(z, "weight_data",
			     nc_get(z, (unsigned)nc_weighted[i].size, 0), 0);
		if (!ret && nc_get(z, (unsigned)nc_weighted[i].bias, 0))
			ret = nc_mat(z, "bias_data", out, 1);
		return ret;
	}
	if (!strcmp(t, "Padding")) /* per_channel_pad_data_size */
		return nc_get(z, 6, 0) ? nc_mat(z, "per_channel_pad_data",
						nc_get(z, 6, 0), 1)
				       : 0;
	if (!strcmp(t, "BatchNorm")) {
		ret = nc_mat(z, "slope_data", out, 1);
		ret = ret ? ret : nc_mat(z, "mean_data", out, 1);
		ret = ret ? ret : nc_mat(z, "var_data", out, 1);
		return ret ? ret : nc_mat(z, "bias_data", out, 1);
	}
	if (!strcmp(t, "Scale")) {
		if (out == -233)
			return 0;
		ret = nc_mat(z, "scale_data", out, 1);
		if (!ret && nc_get(z, 1, 0))
			ret = nc_mat(z, "bias_data", out, 1);
		return ret;
	}
	if (!strcmp(t, "PReLU"))
		return nc_mat(z, "slope_data", out, 1);
	if (!strcmp(t, "Bias"))
		return nc_mat(z, "bias_data", out, 1);
	for (i = 0; i < sizeof(nc_plain) / sizeof(nc_plain[0]); i++)
		if (!strcmp(t, nc_plain[i]))
			return 0;
	return tfs_diag_at(z->d, -ENOTSUP, z->layer_at,
			   "param: layer '%s': type '%s': its weights are not "
			   "supported",
			   TFS_SHOWN(z->name, strlen(z->name)),
			   TFS_SHOWN(t, strlen(t)));
}

/* ---- the files ------------------------------------------------------------
 */

static bool nc_is_param(const struct tfs_source *src)
{
	const uint8_t *p = src->data;
	uint64_t i = 0;

	while (i < src->size && nc_space(p[i]))
		i++;
	return src->size - i >= 8 && !memcmp(p + i, NC_MAGIC, 7) &&
	       nc_space(p[i + 7]);
}

static int nc_probe(const struct tfs_source *src)
{
	return src->size && nc_is_param(src) ? 90 : 0;
}

/* the .bin beside the .param: "<stem>.bin" */
static int nc_open_bin(struct nc *z)
{
	return tfs_open_weights_beside(z->b, z->src, ".bin", "the .param",
				       z->bin_name, sizeof(z->bin_name),
				       &z->w_source, &z->w, &z->w_size, z->why,
				       &z->unreadable, z->d);
}

static int nc_layer(struct nc *z, uint64_t i)
{
	char tok[NC_TOKEN_MAX];
	int64_t nin, nout, k;
	uint64_t at;
	size_t len;
	json_t *n;
	int ret;

	ret = nc_token(z, z->type, &len, &z->layer_at);
	if (!ret && !len)
		return tfs_diag_at(z->d, -EBADMSG, z->layer_at,
				   "param: layer %" PRIu64 ": the file ends",
				   i);
	ret = ret ? ret : nc_token(z, z->name, &len, &at);
	if (!ret && !len)
		return tfs_diag_at(z->d, -EBADMSG, at,
				   "param: layer %" PRIu64 " (%s): no name", i,
				   z->type);
	ret = ret ? ret : nc_int(z, "bottom count", 0, 1 << 20, &nin);
	ret = ret ? ret : nc_int(z, "top count", 0, 1 << 20, &nout);
	for (k = 0; !ret && k < nin + nout; k++) {
		ret = nc_token(z, tok, &len, &at);
		if (!ret && !len)
			return tfs_diag_at(z->d, -EBADMSG, at,
					   "param: layer '%s': the file ends "
					   "in its blob names",
					   TFS_SHOWN(z->name, strlen(z->name)));
	}
	ret = ret ? ret : nc_params(z);
	if (ret)
		return ret;
	n = json_object_get(z->types, z->type);
	if (json_object_set_new(
		    z->types, z->type,
		    json_integer(n ? json_integer_value(n) + 1 : 1)))
		return tfs_diag_oom(z->d);
	return nc_weights(z);
}

static int nc_load(const struct tfs_source *src, struct tfs_builder *b,
		   struct tfs_diag *d)
{
	struct nc z = {.src = src, .b = b, .d = d};
	json_t *meta = tfs_builder_metadata(b);
	char tok[NC_TOKEN_MAX];
	int64_t layers, blobs;
	uint64_t at, i;
	size_t len;
	int ret;

	if (!src->size || !nc_is_param(src))
		return tfs_diag_at(d, -EBADMSG, 0,
				   "param: magic: not 7767517 (the binary "
				   ".param.bin is not supported)");
	z.types = json_object();
	if (!z.types)
		return tfs_diag_oom(d);
	ret = nc_token(&z, tok, &len, &at);
	ret = ret ? ret : nc_int(&z, "layer count", 0, NC_MAX_LAYERS, &layers);
	ret = ret ? ret : nc_int(&z, "blob count", 0, INT32_MAX, &blobs);
	ret = ret ? ret : nc_open_bin(&z);
	for (i = 0; !ret && i < (uint64_t)layers; i++)
		ret = nc_layer(&z, i);
	if (ret)
		goto out;
	ret = nc_token(&z, tok, &len, &at);
	if (!ret && len) {
		ret = tfs_diag_at(d, -EBADMSG, at,
				  "param: '%s' after the %" PRId64 " layers "
				  "the header counts",
				  TFS_SHOWN(tok, len), layers);
		goto out;
	}
	if (!ret && !z.unreadable && z.w_pos != z.w_size) {
		ret = tfs_diag_at(d, -EBADMSG, src->size,
				  "weights: the .bin '%s' has %" PRIu64
				  " bytes after the layers' %" PRIu64,
				  z.bin_name, z.w_size - z.w_pos, z.w_pos);
		goto out;
	}
	if (!ret &&
	    (json_object_set_new(meta, "layers", json_integer(layers)) ||
	     json_object_set_new(meta, "blobs", json_integer(blobs)) ||
	     json_object_set(meta, "layer_types", z.types)))
		ret = tfs_diag_oom(d);
out:
	json_decref(z.types);
	return ret;
}

TFS_FORMAT(ncnn, "ncnn .param with its .bin (Tencent ncnn)", .probe = nc_probe,
	   .load = nc_load);
