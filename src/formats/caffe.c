// SPDX-License-Identifier: MIT
/*
 * Caffe `.caffemodel` (specs/caffe.md, docs/formats/caffe.md): one protobuf
 * NetParameter, read with the bounded wire reader of parse/protobuf.h.
 * Its layers are V2 LayerParameters (field 100: 1 name, 2 type, 7 blobs)
 * or V1LayerParameters (field 2: 4 name, 5 type enum, 6 blobs; an old V0
 * layer nested at field 1 gives its name, type and blobs 50, as
 * upgrade_proto.cpp takes them).  Every BlobProto is a tensor
 * `<layer name>/<k>`: its shape by Blob::FromProto's rule (the deprecated
 * num/channels/height/width when any of them is set, else BlobShape), its
 * values float32 (`data`) or float64 (`double_data`), whose count must be
 * the shape's (caffe CHECKs it).  One packed field is served zero-copy;
 * values in several fields (unpacked, or packed more than once) are
 * gathered into memory at load.  Diffs are ignored.
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
#include "core/strmap.h"
#include "parse/protobuf.h"

#define CF_MAX_AXES 32 /* caffe's kMaxBlobAxes */
#define CF_MAX_LAYERS (1u << 20)
#define CF_PROBE_FIELDS 4096
#define CF_NAME_MAX 4096

/* NetParameter, V2 LayerParameter, V1LayerParameter, V0, BlobProto */
enum {
	NET_NAME = 1,
	NET_LAYERS_V1 = 2,
	NET_INPUT = 3,
	NET_LAYER = 100,
	L2_NAME = 1,
	L2_TYPE = 2,
	L2_BLOBS = 7,
	L1_V0 = 1,
	L1_NAME = 4,
	L1_TYPE = 5,
	L1_BLOBS = 6,
	L0_NAME = 1,
	L0_TYPE = 2,
	L0_BLOBS = 50,
	BP_NUM = 1,
	BP_CHANNELS = 2,
	BP_HEIGHT = 3,
	BP_WIDTH = 4,
	BP_DATA = 5,
	BP_SHAPE = 7,
	BP_DOUBLE = 8,
	BS_DIM = 1,
};

/* V1LayerParameter.LayerType */
static const char *const cf_v1_types[] = {
	"NONE",
	"ACCURACY",
	"BNLL",
	"CONCAT",
	"CONVOLUTION",
	"DATA",
	"DROPOUT",
	"EUCLIDEAN_LOSS",
	"FLATTEN",
	"HDF5_DATA",
	"HDF5_OUTPUT",
	"IM2COL",
	"IMAGE_DATA",
	"INFOGAIN_LOSS",
	"INNER_PRODUCT",
	"LRN",
	"MULTINOMIAL_LOGISTIC_LOSS",
	"POOLING",
	"RELU",
	"SIGMOID",
	"SOFTMAX",
	"SOFTMAX_LOSS",
	"SPLIT",
	"TANH",
	"WINDOW_DATA",
	"ELTWISE",
	"POWER",
	"SIGMOID_CROSS_ENTROPY_LOSS",
	"HINGE_LOSS",
	"MEMORY_DATA",
	"ARGMAX",
	"THRESHOLD",
	"DUMMY_DATA",
	"SLICE",
	"MVN",
	"ABSVAL",
	"SILENCE",
	"CONTRASTIVE_LOSS",
	"EXP",
	"DECONVOLUTION",
};

static const struct tfs_pb_wanted cf_net_rows[] = {
	{NET_NAME, TFS_PB_LEN, "NetParameter.name"},
	{NET_LAYERS_V1, TFS_PB_LEN, "NetParameter.layers"},
	{NET_INPUT, TFS_PB_LEN, "NetParameter.input"},
	{NET_LAYER, TFS_PB_LEN, "NetParameter.layer"},
};

static const struct tfs_pb_wanted cf_v2_rows[] = {
	{L2_NAME, TFS_PB_LEN, "LayerParameter.name"},
	{L2_TYPE, TFS_PB_LEN, "LayerParameter.type"},
	{L2_BLOBS, TFS_PB_LEN, "LayerParameter.blobs"},
};

static const struct tfs_pb_wanted cf_v1_rows[] = {
	{L1_V0, TFS_PB_LEN, "V1LayerParameter.layer"},
	{L1_NAME, TFS_PB_LEN, "V1LayerParameter.name"},
	{L1_TYPE, TFS_PB_VARINT, "V1LayerParameter.type"},
	{L1_BLOBS, TFS_PB_LEN, "V1LayerParameter.blobs"},
};

static const struct tfs_pb_wanted cf_v0_rows[] = {
	{L0_NAME, TFS_PB_LEN, "V0LayerParameter.name"},
	{L0_TYPE, TFS_PB_LEN, "V0LayerParameter.type"},
	{L0_BLOBS, TFS_PB_LEN, "V0LayerParameter.blobs"},
};

static const struct tfs_pb_wanted cf_blob_rows[] = {
	{BP_NUM, TFS_PB_VARINT, "BlobProto.num"},
	{BP_CHANNELS, TFS_PB_VARINT, "BlobProto.channels"},
	{BP_HEIGHT, TFS_PB_VARINT, "BlobProto.height"},
	{BP_WIDTH, TFS_PB_VARINT, "BlobProto.width"},
	{BP_SHAPE, TFS_PB_LEN, "BlobProto.shape"},
};

#define CF_ROWS(r) (r), sizeof(r) / sizeof((r)[0])

struct cf {
	const struct tfs_source *src;
	struct tfs_builder *b;
	struct tfs_diag *d;
	struct tfs_strmap names; /* layer names given so far (in @keys) */
	char **keys;		 /* the map's keys, owned */
	size_t nkeys, keys_cap;
	json_t *types; /* layer type -> count */
	uint64_t layers, blobs;
	int version; /* 1 or 2; 0: no layer yet */
};

/* one layer as read: its name, type and blob fields */
struct cf_layer {
	const uint8_t *name;
	uint64_t name_len, at;
	char type[64];
	struct tfs_cursor blobs; /* the message holding them */
	uint32_t blob_field;
};

/* ---- a blob ---------------------------------------------------------------
 */

/* the values of one BlobProto field (data or double_data), all of them */
struct cf_values {
	uint64_t count, fields;
	struct tfs_pb_field first; /* the first field holding them */
};

static int cf_count(const struct tfs_pb_field *f, enum tfs_pb_scalar kind,
		    struct cf_values *v, struct tfs_diag *d)
{
	struct tfs_pb_values it;
	int ret = tfs_pb_values_init(
		&it, f, kind, "BlobProto",
		kind == TFS_PB_SCALAR_FIXED32 ? "data" : "double_data", d);

	if (ret)
		return ret;
	if (!v->fields++)
		v->first = *f;
	v->count += it.count;
	return 0;
}

/* the values gathered into one buffer (several fields, or unpacked) */
static int cf_gather(struct tfs_cursor *blob, uint32_t number,
		     enum tfs_pb_scalar kind, uint8_t *out, uint64_t count,
		     struct tfs_diag *d)
{
	unsigned size = kind == TFS_PB_SCALAR_FIXED32 ? 4 : 8;
	struct tfs_cursor c = *blob;
	struct tfs_pb_field f;
	struct tfs_pb_values it;
	uint64_t v, n = 0;
	unsigned i;
	int r;

	while ((r = tfs_pb_next(&c, "BlobProto", &f, d)) == 1) {
		if (f.number != number)
			continue;
		r = tfs_pb_values_init(&it, &f, kind, "BlobProto", "data", d);
		if (r)
			return r;
		while (n < count && tfs_pb_values_next(&it, &v) == 1) {
			for (i = 0; i < size; i++)
				out[n * size + i] = (uint8_t)(v >> (8 * i));
			n++;
		}
	}
	return r;
}

static int cf_blob(struct cf *z, const char *base, size_t base_len, uint64_t k,
		   const struct tfs_pb_field *bf)
{
	struct tfs_cursor c, sc;
	struct tfs_pb_field f;
	struct tfs_pb_values it;
	struct cf_values data = {0}, dbl = {0};
	struct tfs_tensor_spec spec;
	uint64_t legacy[4] = {0}, shape[CF_MAX_AXES], count, bytes, v;
	bool has_legacy = false, has_shape = false;
	size_t ndim = 0, i;
	char name[CF_NAME_MAX + 32];
	uint8_t *mem = NULL;
	int r, len;

	tfs_pb_sub(bf, &c);
	while ((r = tfs_pb_next_in(&c, "BlobProto", CF_ROWS(cf_blob_rows), &f,
				   z->d)) == 1) {
		switch (f.number) {
		case BP_NUM:
		case BP_CHANNELS:
		case BP_HEIGHT:
		case BP_WIDTH:
			if (f.v > INT32_MAX)
				return tfs_diag_at(
					z->d, -EBADMSG, f.value_at,
					"layer '%s' blob %" PRIu64
					": BlobProto field %u: %" PRId64
					" is negative or above int32",
					TFS_SHOWN(base, base_len), k, f.number,
					(int64_t)f.v);
			legacy[f.number - BP_NUM] = f.v;
			has_legacy = true;
			r = 0;
			break;
		case BP_SHAPE:
			has_shape = true;
			ndim = 0;
			tfs_pb_sub(&f, &sc);
			while ((r = tfs_pb_next(&sc, "BlobShape", &f, z->d)) ==
			       1) {
				if (f.number != BS_DIM)
					continue;
				r = tfs_pb_values_init(
					&it, &f, TFS_PB_SCALAR_VARINT,
					"BlobShape", "dim", z->d);
				while (!r && tfs_pb_values_next(&it, &v) == 1) {
					if (ndim == CF_MAX_AXES)
						return tfs_diag_at(
							z->d, -EBADMSG, f.at,
							"layer '%s' blob "
							"%" PRIu64
							": more than "
							"%d axes",
							TFS_SHOWN(base,
								  base_len),
							k, CF_MAX_AXES);
					if ((int64_t)v < 0)
						return tfs_diag_at(
							z->d, -EBADMSG, f.at,
							"layer '%s' blob "
							"%" PRIu64
							": dim %" PRId64
							" is negative",
							TFS_SHOWN(base,
								  base_len),
							k, (int64_t)v);
					shape[ndim++] = v;
				}
				if (r)
					return r;
			}
			if (r)
				return r;
			r = 0;
			break;
		case BP_DATA:
			r = cf_count(&f, TFS_PB_SCALAR_FIXED32, &data, z->d);
			break;
		case BP_DOUBLE:
			r = cf_count(&f, TFS_PB_SCALAR_FIXED64, &dbl, z->d);
			break;
		default:
			r = 0;
			break;
		}
		if (r < 0)
			return r;
	}
	if (r)
		return r;
	/* Blob::FromProto: the deprecated 4-D shape wins when set */
	if (has_legacy) {
		ndim = 4;
		memcpy(shape, legacy, sizeof(legacy));
	} else if (!has_shape) {
		ndim = 0;
	}
	if (data.fields && dbl.fields)
		return tfs_diag_at(z->d, -EBADMSG, dbl.first.at,
				   "layer '%s' blob %" PRIu64
				   ": both data and double_data",
				   TFS_SHOWN(base, base_len), k);
	count = 1;
	for (i = 0; i < ndim; i++)
		if (!tfs_mul_u64(count, shape[i], &count))
			return tfs_diag_at(z->d, -EBADMSG, bf->value_at,
					   "layer '%s' blob %" PRIu64
					   ": the shape's element count "
					   "overflows 64 bits",
					   TFS_SHOWN(base, base_len), k);
	v = dbl.fields ? dbl.count : data.count;
	if (v != count)
		return tfs_diag_at(z->d, -EBADMSG,
				   dbl.fields	 ? dbl.first.at
				   : data.fields ? data.first.at
						 : bf->value_at,
				   "layer '%s' blob %" PRIu64 ": %" PRIu64
				   " %s values, but its shape holds %" PRIu64,
				   TFS_SHOWN(base, base_len), k, v,
				   dbl.fields ? "double_data" : "data", count);
	bytes = count * (dbl.fields ? 8 : 4); /* inside the file: no overflow */
	len = snprintf(name, sizeof(name), "%.*s/%" PRIu64, (int)base_len, base,
		       k);
	tfs_spec_tensor(&spec, name, (size_t)len,
			dbl.fields ? TFS_DTYPE_FLOAT64 : TFS_DTYPE_FLOAT32,
			shape, ndim, bf->at);
	{
		const struct cf_values *x = dbl.fields ? &dbl : &data;

		if (x->fields == 1 && x->first.wire == TFS_PB_LEN) {
			tfs_spec_raw(&spec, x->first.value_at, bytes);
		} else if (!x->fields) {
			tfs_spec_raw(&spec, bf->value_at, 0);
		} else {
			mem = malloc(bytes ? bytes : 1);
			if (!mem)
				return tfs_diag_oom(z->d);
			tfs_pb_sub(bf, &c);
			r = cf_gather(&c, dbl.fields ? BP_DOUBLE : BP_DATA,
				      dbl.fields ? TFS_PB_SCALAR_FIXED64
						 : TFS_PB_SCALAR_FIXED32,
				      mem, count, z->d);
			if (r) {
				free(mem);
				return r;
			}
			tfs_spec_mem(&spec, mem, bytes);
		}
	}
	r = tfs_builder_add_tensor(z->b, &spec, NULL, z->d);
	free(mem);
	z->blobs++;
	return r;
}

/* ---- layers ---------------------------------------------------------------
 */

/* @name taken: a copy kept as the map's key (the map borrows its keys) */
static int cf_claim(struct cf *z, const char *name)
{
	char **v, *k;

	if (z->nkeys == z->keys_cap) {
		size_t cap = z->keys_cap ? z->keys_cap * 2 : 64;

		v = realloc(z->keys, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		z->keys = v;
		z->keys_cap = cap;
	}
	k = strdup(name);
	if (!k)
		return -ENOMEM;
	z->keys[z->nkeys++] = k;
	return tfs_strmap_put(&z->names, k, 1);
}

/* its name in the tree: the layer's, "#<index>" added when taken or empty */
static int cf_layer_blobs(struct cf *z, const struct cf_layer *l)
{
	char base[CF_NAME_MAX + 32];
	struct tfs_cursor c = l->blobs;
	struct tfs_pb_field f;
	size_t n;
	uint32_t seen;
	uint64_t k = 0;
	int r;

	if (l->name_len > CF_NAME_MAX)
		return tfs_diag_at(z->d, -EBADMSG, l->at,
				   "layer %" PRIu64 ": a name of %" PRIu64
				   " bytes (at most %d)",
				   z->layers, l->name_len, CF_NAME_MAX);
	if (l->name_len) /* a layer may have no name: l->name NULL */
		memcpy(base, l->name, l->name_len);
	base[l->name_len] = '\0';
	n = l->name_len;
	if (!n || memchr(base, '\0', n) ||
	    tfs_strmap_get(&z->names, base, &seen))
		n += (size_t)snprintf(base + n, sizeof(base) - n, "#%" PRIu64,
				      z->layers);
	else if (cf_claim(z, base))
		return tfs_diag_oom(z->d);
	while ((r = tfs_pb_next(&c, "LayerParameter", &f, z->d)) == 1) {
		if (f.number != l->blob_field)
			continue;
		r = cf_blob(z, base, n, k++, &f);
		if (r)
			return r;
	}
	return r;
}

static int cf_count_type(struct cf *z, const char *type)
{
	json_t *n = json_object_get(z->types, type);

	return json_object_set_new(
		z->types, type,
		json_integer(n ? json_integer_value(n) + 1 : 1));
}

static int cf_v2_layer(struct cf *z, const struct tfs_pb_field *lf)
{
	struct cf_layer l = {.at = lf->at, .blob_field = L2_BLOBS};
	struct tfs_cursor c;
	struct tfs_pb_field f;
	int r;

	tfs_pb_sub(lf, &c);
	l.blobs = c;
	while ((r = tfs_pb_next_in(&c, "LayerParameter", CF_ROWS(cf_v2_rows),
				   &f, z->d)) == 1) {
		if (f.number == L2_NAME) {
			l.name = f.data;
			l.name_len = f.len;
		} else if (f.number == L2_TYPE) {
			snprintf(l.type, sizeof(l.type), "%s",
				 TFS_SHOWN((const char *)f.data, f.len));
		}
	}
	if (r)
		return r;
	if (cf_count_type(z, l.type))
		return tfs_diag_oom(z->d);
	return cf_layer_blobs(z, &l);
}

static int cf_v1_layer(struct cf *z, const struct tfs_pb_field *lf)
{
	struct cf_layer l = {.at = lf->at, .blob_field = L1_BLOBS};
	struct tfs_cursor c, v0;
	struct tfs_pb_field f, g;
	bool has_v0 = false;
	int r;

	tfs_pb_sub(lf, &c);
	l.blobs = c;
	while ((r = tfs_pb_next_in(&c, "V1LayerParameter", CF_ROWS(cf_v1_rows),
				   &f, z->d)) == 1) {
		if (f.number == L1_NAME) {
			l.name = f.data;
			l.name_len = f.len;
		} else if (f.number == L1_TYPE) {
			snprintf(l.type, sizeof(l.type), "%s",
				 f.v < sizeof(cf_v1_types) /
							 sizeof(cf_v1_types[0])
					 ? cf_v1_types[f.v]
					 : "unknown");
		} else if (f.number == L1_V0) {
			has_v0 = true;
			tfs_pb_sub(&f, &v0);
			l.blobs = v0;
			l.blob_field = L0_BLOBS;
			while ((r = tfs_pb_next_in(&v0, "V0LayerParameter",
						   CF_ROWS(cf_v0_rows), &g,
						   z->d)) == 1) {
				if (g.number == L0_NAME) {
					l.name = g.data;
					l.name_len = g.len;
				} else if (g.number == L0_TYPE) {
					snprintf(l.type, sizeof(l.type), "%s",
						 TFS_SHOWN((const char *)g.data,
							   g.len));
				}
			}
			if (r)
				return r;
		}
	}
	if (r)
		return r;
	if (!l.type[0])
		snprintf(l.type, sizeof(l.type), "%s", "NONE");
	if (has_v0 &&
	    (r = tfs_builder_warn(z->b, lf->at,
				  "layer '%s': a V0 layer, read as "
				  "caffe's upgrade_proto reads it",
				  TFS_SHOWN((const char *)l.name, l.name_len))))
		return tfs_diag_oom(z->d);
	if (cf_count_type(z, l.type))
		return tfs_diag_oom(z->d);
	return cf_layer_blobs(z, &l);
}

/* ---- recognition ----------------------------------------------------------
 */

/* a layer entry: every field it has comes with its declared wire type */
static bool cf_layer_ok(const struct tfs_pb_field *lf, bool v1)
{
	struct tfs_cursor c;
	struct tfs_pb_field f;
	unsigned n = 0;
	int r;

	tfs_pb_sub(lf, &c);
	while (n++ < 64 &&
	       (r = tfs_pb_next(&c, "LayerParameter", &f, NULL)) == 1) {
		if (v1 && f.number == L1_TYPE && f.wire != TFS_PB_VARINT)
			return false;
		if ((v1 ? (f.number == L1_NAME || f.number == L1_BLOBS)
			: (f.number == L2_NAME || f.number == L2_TYPE ||
			   f.number == L2_BLOBS)) &&
		    f.wire != TFS_PB_LEN)
			return false;
	}
	return r >= 0;
}

/*
 * NetParameter: every top-level key one of its fields (1 name, 2 layers,
 * 3 input, 4 input_dim, 5 force_backward, 6 state, 7 debug_info, 8
 * input_shape, 100 layer) with its wire type, and a layer among them;
 * a file named .caffemodel is claimed weakly all the same, to say why not
 */
static int cf_probe(const struct tfs_source *src)
{
	int no = tfs_source_name_ends(src, ".caffemodel") ? 20 : 0;
	struct tfs_cursor c;
	struct tfs_pb_field f;
	bool layer = false;
	unsigned n;
	int r;

	tfs_cursor_init(&c, src->data, src->size, 0);
	for (n = 0; n < CF_PROBE_FIELDS; n++) {
		r = tfs_pb_next(&c, "NetParameter", &f, NULL);
		if (r == 0)
			break;
		if (r < 0)
			return layer ? 70 : no;
		switch (f.number) {
		case 4:
		case 5:
		case 7:
			if (f.wire != TFS_PB_VARINT)
				return no;
			break;
		case NET_NAME:
		case NET_INPUT:
		case 6:
		case 8:
			if (f.wire != TFS_PB_LEN)
				return no;
			break;
		case NET_LAYERS_V1:
		case NET_LAYER:
			if (f.wire != TFS_PB_LEN ||
			    (!layer && !cf_layer_ok(&f, f.number == 2)))
				return no;
			layer = true;
			break;
		default:
			return no;
		}
	}
	return layer ? 70 : no;
}

/* ---- the model ------------------------------------------------------------
 */

static int cf_load(const struct tfs_source *src, struct tfs_builder *b,
		   struct tfs_diag *d)
{
	struct cf z = {.src = src, .b = b, .d = d};
	json_t *meta = tfs_builder_metadata(b), *inputs = json_array();
	struct tfs_cursor c;
	struct tfs_pb_field f;
	int r;

	tfs_strmap_init(&z.names);
	z.types = json_object();
	if (!z.types || !inputs) {
		r = tfs_diag_oom(d);
		goto out;
	}
	tfs_cursor_init(&c, src->data, src->size, 0);
	while ((r = tfs_pb_next_in(&c, "NetParameter", CF_ROWS(cf_net_rows), &f,
				   d)) == 1) {
		if (f.number == NET_NAME) {
			r = json_object_set_new(
				meta, "name",
				json_string(TFS_SHOWN((const char *)f.data,
						      f.len)));
		} else if (f.number == NET_INPUT) {
			r = json_array_append_new(
				inputs, json_string(TFS_SHOWN(
						(const char *)f.data, f.len)));
		} else if (f.number == NET_LAYER || f.number == NET_LAYERS_V1) {
			int v = f.number == NET_LAYER ? 2 : 1;

			if (z.version && z.version != v) {
				r = tfs_diag_at(d, -EBADMSG, f.at,
						"NetParameter: both V1 "
						"'layers' (2) and V2 'layer' "
						"(100)");
				goto out;
			}
			if (z.layers == CF_MAX_LAYERS) {
				r = tfs_diag_at(d, -E2BIG, f.at,
						"NetParameter: more than %u "
						"layers",
						CF_MAX_LAYERS);
				goto out;
			}
			z.version = v;
			r = v == 2 ? cf_v2_layer(&z, &f) : cf_v1_layer(&z, &f);
			if (r)
				goto out;
			z.layers++;
		}
		if (r == -1) {
			r = tfs_diag_oom(d);
			goto out;
		}
	}
	if (r)
		goto out;
	if (!z.layers) {
		r = tfs_diag_at(d, -EBADMSG, 0, "NetParameter: no layer");
		goto out;
	}
	if (json_object_set_new(meta, "version",
				json_string(z.version == 2 ? "V2" : "V1")) ||
	    json_object_set_new(meta, "layers",
				json_integer((json_int_t)z.layers)) ||
	    json_object_set(meta, "layer_types", z.types) ||
	    json_object_set(meta, "inputs", inputs))
		r = tfs_diag_oom(d);
out:
	json_decref(inputs);
	json_decref(z.types);
	tfs_strmap_free(&z.names);
	while (z.nkeys)
		free(z.keys[--z.nkeys]);
	free(z.keys);
	return r;
}

TFS_FORMAT(caffe, "Caffe .caffemodel (protobuf NetParameter, V1 and V2)",
	   .probe = cf_probe, .load = cf_load);
