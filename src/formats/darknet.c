// SPDX-License-Identifier: MIT
/*
 * Darknet (specs/darknet.md, docs/formats/darknet.md): a `.weights` file is
 * a 16- or 20-byte header and float32 arrays back to back, with no names,
 * shapes or types; the `.cfg` beside it (the same stem) lists the layers,
 * and darknet's parser.c (load_weights_upto) reads the arrays in layer
 * order.  Either file can be mounted: from the .weights the .cfg is
 * required; from the .cfg a missing .weights leaves the tensors listed but
 * unreadable (and a .cfg read from memory, as the fuzz target does, still
 * walks every layer).
 *
 * The cfg is read as darknet's read_cfg does: every space, tab and CR/LF
 * of a line dropped, '#' and ';' lines skipped, "[section]" lines, and
 * "key=value" options, the first of a key winning (option_find).  Numbers
 * are read as atoi does, but a value outside int32 is refused.
 *
 * Tensors: `<layer index>_<layer type>/<array>`, the index counting the
 * sections after [net] from 0, the type darknet's long name of the section
 * ("convolutional" for [conv] too).  Layers whose arrays follow rules this
 * reader does not implement (deconvolutional, local, the recurrent ones,
 * implicit, shortcut with weights) are refused by name.
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
#include "core/source.h"
#include "formats/common/beside.h"

#define DN_CFG_MAX (16ull << 20)
#define DN_MAX_LAYERS 65536u
#define DN_MAX_OPTIONS (1u << 20)
#define DN_MAX_ROUTE 64u
#define DN_NAME_MAX 96

enum dn_kind {
	DN_UNKNOWN,
	DN_NET,
	DN_CONV,
	DN_CONNECTED,
	DN_BATCHNORM,
	DN_MAXPOOL,
	DN_AVGPOOL,
	DN_UPSAMPLE,
	DN_ROUTE,
	DN_SHORTCUT,
	DN_REORG,
	DN_SAME,      /* no weights, the output is the input */
	DN_FROM,      /* no weights, the output is the 'from' layer's */
	DN_SHAPELESS, /* no weights, the output's shape is not tracked */
	DN_REFUSED,   /* weights stored by rules not implemented here */
};

/* darknet's section names (string_to_layer_type), long name first */
static const struct {
	const char *name, *alias;
	enum dn_kind kind;
} dn_types[] = {
	{"net", "network", DN_NET},
	{"convolutional", "conv", DN_CONV},
	{"connected", "conn", DN_CONNECTED},
	{"batchnorm", NULL, DN_BATCHNORM},
	{"maxpool", "max", DN_MAXPOOL},
	{"local_avgpool", "local_avg", DN_SHAPELESS},
	{"avgpool", "avg", DN_AVGPOOL},
	{"upsample", NULL, DN_UPSAMPLE},
	{"route", NULL, DN_ROUTE},
	{"shortcut", NULL, DN_SHORTCUT},
	{"reorg", NULL, DN_REORG},
	{"reorg3d", NULL, DN_SHAPELESS},
	{"dropout", NULL, DN_SAME},
	{"activation", NULL, DN_SAME},
	{"logistic", NULL, DN_SAME},
	{"l2norm", NULL, DN_SAME},
	{"softmax", "soft", DN_SAME},
	{"normalization", "lrn", DN_SAME},
	{"cost", NULL, DN_SAME},
	{"yolo", NULL, DN_SAME},
	{"Gaussian_yolo", NULL, DN_SAME},
	{"region", NULL, DN_SAME},
	{"detection", NULL, DN_SHAPELESS},
	{"empty", NULL, DN_SAME},
	{"silence", NULL, DN_SAME},
	{"scale_channels", NULL, DN_FROM},
	{"sam", NULL, DN_FROM},
	{"crop", NULL, DN_SHAPELESS},
	{"contrastive", NULL, DN_SHAPELESS},
	{"deconvolutional", "deconv", DN_REFUSED},
	{"local", NULL, DN_REFUSED},
	{"rnn", NULL, DN_REFUSED},
	{"gru", NULL, DN_REFUSED},
	{"lstm", NULL, DN_REFUSED},
	{"crnn", NULL, DN_REFUSED},
	{"conv_lstm", NULL, DN_REFUSED},
	{"history", NULL, DN_REFUSED},
	{"implicit_add", NULL, DN_REFUSED},
	{"implicit_mul", NULL, DN_REFUSED},
};

struct dn_opt {
	const char *key, *val; /* in the stripped copy, NUL-terminated */
	uint64_t at;	       /* the line's first byte in the cfg */
};

struct dn_section {
	const char *type; /* the line as written, stripped, NUL-terminated */
	unsigned t;	  /* index in dn_types, or ~0u */
	uint64_t at;
	size_t first, n; /* its options */
};

/* one layer's output, as parse_network_cfg tracks it */
struct dn_shape {
	int64_t h, w, c;
	bool known; /* h and w (c is always known) */
};

struct dn {
	const struct tfs_source *src; /* the container */
	struct tfs_builder *b;
	struct tfs_diag *d;
	bool cfg_is_container;
	char cfg_name[256], weights_name[256];
	/* the cfg */
	const uint8_t *cfg;
	uint64_t cfg_size;
	char *text; /* the stripped lines */
	struct dn_opt *opts;
	size_t nopts;
	struct dn_section *secs;
	size_t nsecs;
	struct dn_shape net;  /* [net]: the input */
	struct dn_shape *out; /* per layer */
	/* the weights */
	const uint8_t *w;
	uint64_t w_size;
	uint32_t w_source;
	const char *unreadable;
	char why[TFS_DIAG_MSG_MAX];
	int32_t major, minor, revision;
	uint64_t seen, header;
	bool transpose;
	uint64_t pos; /* the next array's offset in the weights */
	uint64_t ntensors;
	uint64_t counts[sizeof(dn_types) / sizeof(dn_types[0])];
};

/* a refusal about the cfg, at byte @at of it */
__attribute__((format(printf, 4, 5))) static int
dn_cfg_fail(struct dn *z, int err, uint64_t at, const char *fmt, ...)
{
	char msg[TFS_DIAG_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (z->cfg_is_container)
		return tfs_diag_at(z->d, err, at, "cfg: %s", msg);
	/* the weights are mounted: where their reading stopped */
	return tfs_diag_at(z->d, err, z->pos,
			   "cfg '%s', byte %" PRIu64 ": %s", z->cfg_name, at,
			   msg);
}

/* ---- the cfg ------------------------------------------------------------ */

static bool dn_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

static unsigned dn_type_of(const char *line)
{
	size_t n = strlen(line), i;

	if (n < 2 || line[0] != '[' || line[n - 1] != ']')
		return ~0u;
	for (i = 0; i < sizeof(dn_types) / sizeof(dn_types[0]); i++) {
		const char *a = dn_types[i].name, *b = dn_types[i].alias;

		if ((strlen(a) == n - 2 && !memcmp(line + 1, a, n - 2)) ||
		    (b && strlen(b) == n - 2 && !memcmp(line + 1, b, n - 2)))
			return (unsigned)i;
	}
	return ~0u;
}

static int dn_grow(void **v, size_t *cap, size_t n, size_t size)
{
	size_t c = *cap ? *cap * 2 : 64;
	void *p;

	if (n < *cap)
		return 0;
	p = realloc(*v, c * size);
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = c;
	return 0;
}

/* read_cfg: sections and their options, lines stripped of white space */
static int dn_read_cfg(struct dn *z)
{
	size_t capo = 0, caps = 0, k = 0;
	uint64_t i = 0, start;
	char *line;

	if (z->cfg_size > DN_CFG_MAX)
		return dn_cfg_fail(z, -E2BIG, 0,
				   "%" PRIu64 " bytes, more than the %llu a "
				   "cfg may have",
				   z->cfg_size, DN_CFG_MAX);
	z->text = malloc(z->cfg_size + 1);
	if (!z->text)
		return tfs_diag_oom(z->d);
	while (i < z->cfg_size) {
		start = i;
		line = z->text + k;
		while (i < z->cfg_size && z->cfg[i] != '\n') {
			char ch = (char)z->cfg[i++];

			if (ch == '\0')
				return dn_cfg_fail(z, -EBADMSG, i - 1,
						   "a NUL byte: not text");
			if (!dn_space(ch))
				z->text[k++] = ch;
		}
		i += i < z->cfg_size; /* the '\n' */
		z->text[k++] = '\0';
		if (!line[0] || line[0] == '#' || line[0] == ';')
			continue;
		if (line[0] == '[') {
			if (z->nsecs >= DN_MAX_LAYERS + 1)
				return dn_cfg_fail(z, -E2BIG, start,
						   "more than %u sections",
						   DN_MAX_LAYERS + 1);
			if (dn_grow((void **)&z->secs, &caps, z->nsecs,
				    sizeof(*z->secs)))
				return tfs_diag_oom(z->d);
			z->secs[z->nsecs++] = (struct dn_section){
				.type = line,
				.t = dn_type_of(line),
				.at = start,
				.first = z->nopts,
			};
			continue;
		}
		if (!z->nsecs)
			return dn_cfg_fail(
				z, -EBADMSG, start,
				"an option before the first section");
		if (!strchr(line, '=')) {
			if (tfs_builder_warn(
				    z->b,
				    z->cfg_is_container ? start : TFS_NO_OFFSET,
				    "cfg: byte %" PRIu64 ": a line that is not "
				    "key=value, skipped as darknet "
				    "does",
				    start))
				return tfs_diag_oom(z->d);
			continue;
		}
		if (z->nopts >= DN_MAX_OPTIONS)
			return dn_cfg_fail(z, -E2BIG, start,
					   "more than %u options",
					   DN_MAX_OPTIONS);
		if (dn_grow((void **)&z->opts, &capo, z->nopts,
			    sizeof(*z->opts)))
			return tfs_diag_oom(z->d);
		*strchr(line, '=') = '\0';
		z->opts[z->nopts++] = (struct dn_opt){
			.key = line,
			.val = line + strlen(line) + 1,
			.at = start,
		};
		z->secs[z->nsecs - 1].n++;
	}
	if (!z->nsecs || z->secs[0].t == ~0u ||
	    dn_types[z->secs[0].t].kind != DN_NET)
		return dn_cfg_fail(z, -EBADMSG, z->nsecs ? z->secs[0].at : 0,
				   "the first section must be [net] or "
				   "[network]");
	return 0;
}

static const struct dn_opt *dn_find(const struct dn *z,
				    const struct dn_section *s, const char *key)
{
	size_t i;

	for (i = s->first; i < s->first + s->n; i++)
		if (!strcmp(z->opts[i].key, key))
			return &z->opts[i];
	return NULL;
}

/* atoi's reading of @v (leading digits), refused outside int32 */
static int dn_atoi(struct dn *z, const struct dn_opt *o, const char *v,
		   int64_t *out)
{
	int64_t x = 0;
	bool neg = false;

	if (*v == '+' || *v == '-')
		neg = *v++ == '-';
	while (*v >= '0' && *v <= '9') {
		x = x * 10 + (*v++ - '0');
		if (x > INT32_MAX + (int64_t)neg)
			return dn_cfg_fail(z, -EBADMSG, o->at,
					   "%s=%s: outside 32-bit integers",
					   o->key, o->val);
	}
	*out = neg ? -x : x;
	return 0;
}

/* option @key as an int, @def when absent (option_find_int_quiet) */
static int dn_int(struct dn *z, const struct dn_section *s, const char *key,
		  int64_t def, int64_t *out)
{
	const struct dn_opt *o = dn_find(z, s, key);

	if (!o) {
		*out = def;
		return 0;
	}
	return dn_atoi(z, o, o->val, out);
}

/* a count that must be at least @min */
static int dn_count(struct dn *z, const struct dn_section *s, const char *key,
		    int64_t def, int64_t min, int64_t *out)
{
	const struct dn_opt *o = dn_find(z, s, key);
	int ret = dn_int(z, s, key, def, out);

	if (!ret && *out < min)
		return dn_cfg_fail(z, -EBADMSG, o ? o->at : s->at,
				   "%s %s=%" PRId64
				   ": must be at least %" PRId64,
				   s->type, key, *out, min);
	return ret;
}

/* ---- the arrays --------------------------------------------------------- */

/* the next array of layer @l, @n floats of @shape */
static int dn_array(struct dn *z, size_t l, const char *array,
		    const uint64_t *shape, size_t ndim)
{
	const struct dn_section *s = &z->secs[l + 1];
	struct tfs_tensor_spec spec;
	uint64_t n = 1, bytes, end;
	char name[DN_NAME_MAX];
	size_t i;
	int len;

	for (i = 0; i < ndim; i++)
		if (!tfs_mul_u64(n, shape[i], &n))
			n = UINT64_MAX;
	if (!tfs_mul_u64(n, 4, &bytes) || !tfs_add_u64(z->pos, bytes, &end))
		return dn_cfg_fail(z, -EBADMSG, s->at,
				   "%s (layer %zu) %s: the size overflows "
				   "64 bits",
				   s->type, l, array);
	len = snprintf(name, sizeof(name), "%zu_%s/%s", l, dn_types[s->t].name,
		       array);
	tfs_spec_tensor(&spec, name, (size_t)len, TFS_DTYPE_FLOAT32, shape,
			ndim, z->cfg_is_container ? s->at : z->pos);
	tfs_spec_size(&spec, bytes);
	if (z->unreadable) {
		tfs_spec_unreadable(&spec, z->unreadable, true);
	} else {
		if (end > z->w_size)
			return tfs_diag_at(
				z->d, -EBADMSG,
				z->cfg_is_container ? s->at : z->w_size,
				"%s%s: needs bytes %" PRIu64 "..%" PRIu64
				" of the weights, which have %" PRIu64,
				z->cfg_is_container ? "cfg: " : "", name,
				z->pos, end, z->w_size);
		tfs_spec_stored(&spec, z->pos, bytes);
		tfs_spec_in(&spec, z->w_source);
	}
	z->pos = end;
	z->ntensors++;
	return tfs_builder_add_tensor(z->b, &spec, NULL, z->d);
}

static int dn_bn(struct dn *z, size_t l, uint64_t n)
{
	int ret = dn_array(z, l, "scales", &n, 1);

	ret = ret ? ret : dn_array(z, l, "rolling_mean", &n, 1);
	return ret ? ret : dn_array(z, l, "rolling_variance", &n, 1);
}

/* the layer after which @s's index option points, checked */
static int dn_layer_ref(struct dn *z, const struct dn_section *s, size_t l,
			const struct dn_opt *o, const char *v, size_t *out)
{
	int64_t x;
	int ret = dn_atoi(z, o, v, &x);

	if (ret)
		return ret;
	if (x < 0)
		x += (int64_t)l;
	if (x < 0 || (uint64_t)x >= l)
		return dn_cfg_fail(z, -EBADMSG, o->at,
				   "%s (layer %zu) %s=%s: no earlier layer %s",
				   s->type, l, o->key, o->val, v);
	*out = (size_t)x;
	return 0;
}

static int dn_conv(struct dn *z, size_t l, const struct dn_shape *in,
		   struct dn_shape *out)
{
	const struct dn_section *s = &z->secs[l + 1];
	int64_t n, size, stride, sx, sy, pad, padding, groups, bn, noscales;
	int64_t share, numload;
	uint64_t shape[4];
	int ret;

	ret = dn_count(z, s, "filters", 1, 1, &n);
	ret = ret ? ret : dn_count(z, s, "size", 1, 1, &size);
	ret = ret ? ret : dn_count(z, s, "stride", 1, 1, &stride);
	ret = ret ? ret : dn_count(z, s, "stride_x", stride, 1, &sx);
	ret = ret ? ret : dn_count(z, s, "stride_y", stride, 1, &sy);
	ret = ret ? ret : dn_int(z, s, "pad", 0, &pad);
	ret = ret ? ret : dn_count(z, s, "padding", 0, 0, &padding);
	ret = ret ? ret : dn_count(z, s, "groups", 1, 1, &groups);
	ret = ret ? ret : dn_int(z, s, "batch_normalize", 0, &bn);
	ret = ret ? ret : dn_int(z, s, "dontloadscales", 0, &noscales);
	ret = ret ? ret : dn_int(z, s, "share_index", -1000000, &share);
	ret = ret ? ret : dn_int(z, s, "numload", 0, &numload);
	if (ret)
		return ret;
	if (share != -1000000 || numload)
		return dn_cfg_fail(z, -ENOTSUP, s->at,
				   "%s (layer %zu): %s is not supported",
				   s->type, l,
				   numload ? "numload" : "share_index");
	if (in->c % groups)
		return dn_cfg_fail(z, -EBADMSG, s->at,
				   "%s (layer %zu): %" PRId64 " input channels "
				   "do not split into groups=%" PRId64,
				   s->type, l, in->c, groups);
	if (pad)
		padding = size / 2;
	*out = (struct dn_shape){.c = n, .known = in->known};
	if (in->known) {
		out->h = (in->h + 2 * padding - size) / sy + 1;
		out->w = (in->w + 2 * padding - size) / sx + 1;
		out->known = out->h > 0 && out->w > 0;
	}
	shape[0] = (uint64_t)n;
	ret = dn_array(z, l, "biases", shape, 1);
	if (!ret && bn && !noscales)
		ret = dn_bn(z, l, (uint64_t)n);
	shape[1] = (uint64_t)(in->c / groups);
	shape[2] = shape[3] = (uint64_t)size;
	return ret ? ret : dn_array(z, l, "weights", shape, 4);
}

static int dn_connected(struct dn *z, size_t l, const struct dn_shape *in,
			uint64_t inputs, struct dn_shape *out)
{
	const struct dn_section *s = &z->secs[l + 1];
	int64_t o, bn, noscales;
	uint64_t shape[2];
	int ret;

	ret = dn_count(z, s, "output", 1, 1, &o);
	ret = ret ? ret : dn_int(z, s, "batch_normalize", 0, &bn);
	ret = ret ? ret : dn_int(z, s, "dontloadscales", 0, &noscales);
	if (ret)
		return ret;
	if (!inputs && !in->known)
		return dn_cfg_fail(z, -ENOTSUP, s->at,
				   "%s (layer %zu): its inputs come from a "
				   "layer whose output size is not tracked",
				   s->type, l);
	if (z->transpose)
		return dn_cfg_fail(z, -ENOTSUP, s->at,
				   "%s (layer %zu): the weights file stores "
				   "connected weights transposed (version "
				   "%d.%d), not supported",
				   s->type, l, z->major, z->minor);
	*out = (struct dn_shape){.h = 1, .w = 1, .c = o, .known = true};
	shape[0] = (uint64_t)o;
	shape[1] = inputs;
	ret = dn_array(z, l, "biases", shape, 1);
	ret = ret ? ret : dn_array(z, l, "weights", shape, 2);
	if (!ret && bn && !noscales)
		ret = dn_bn(z, l, (uint64_t)o);
	return ret;
}

static int dn_route(struct dn *z, size_t l, struct dn_shape *out)
{
	const struct dn_section *s = &z->secs[l + 1];
	const struct dn_opt *o = dn_find(z, s, "layers");
	char buf[16];
	const char *p;
	int64_t groups;
	size_t k, i = 0;
	int ret;

	if (!o || !o->val[0])
		return dn_cfg_fail(z, -EBADMSG, s->at,
				   "%s (layer %zu): no layers=", s->type, l);
	ret = dn_count(z, s, "groups", 1, 1, &groups);
	if (ret)
		return ret;
	*out = (struct dn_shape){.known = true};
	for (p = o->val; i < DN_MAX_ROUTE; i++) {
		size_t len = strcspn(p, ",");

		snprintf(buf, sizeof(buf), "%.*s", (int)(len < 15 ? len : 15),
			 p);
		ret = dn_layer_ref(z, s, l, o, buf, &k);
		if (ret)
			return ret;
		if (!i) {
			out->h = z->out[k].h;
			out->w = z->out[k].w;
		}
		out->known &= z->out[k].known && z->out[k].h == out->h &&
			      z->out[k].w == out->w;
		out->c += z->out[k].c;
		if (!p[len])
			break;
		p += len + 1;
	}
	if (i == DN_MAX_ROUTE)
		return dn_cfg_fail(z, -E2BIG, o->at,
				   "%s (layer %zu): more than %u layers",
				   s->type, l, DN_MAX_ROUTE);
	out->c /= groups;
	return 0;
}

/* a layer without weights: its output from its input */
static int dn_plain(struct dn *z, size_t l, const struct dn_shape *in,
		    struct dn_shape *out)
{
	const struct dn_section *s = &z->secs[l + 1];
	const struct dn_opt *o;
	int64_t size, stride, sx, sy, padding, depth;
	size_t k;
	int ret;

	*out = *in;
	switch (dn_types[s->t].kind) {
	case DN_MAXPOOL:
		ret = dn_count(z, s, "stride", 1, 1, &stride);
		ret = ret ? ret : dn_count(z, s, "stride_x", stride, 1, &sx);
		ret = ret ? ret : dn_count(z, s, "stride_y", stride, 1, &sy);
		ret = ret ? ret : dn_count(z, s, "size", stride, 1, &size);
		ret = ret ? ret
			  : dn_count(z, s, "padding", size - 1, 0, &padding);
		ret = ret ? ret : dn_int(z, s, "maxpool_depth", 0, &depth);
		if (ret)
			return ret;
		out->h = (in->h + padding - size) / sy + 1;
		out->w = (in->w + padding - size) / sx + 1;
		out->known = in->known && !depth && out->h > 0 && out->w > 0;
		return 0;
	case DN_AVGPOOL:
		out->h = out->w = 1;
		out->known = true;
		return 0;
	case DN_UPSAMPLE:
		ret = dn_int(z, s, "stride", 2, &stride);
		if (ret)
			return ret;
		if (!stride)
			return dn_cfg_fail(z, -EBADMSG, s->at,
					   "%s (layer %zu): stride=0", s->type,
					   l);
		out->h = stride > 0 ? in->h * stride : in->h / -stride;
		out->w = stride > 0 ? in->w * stride : in->w / -stride;
		return 0;
	case DN_REORG:
		ret = dn_count(z, s, "stride", 1, 1, &stride);
		ret = ret ? ret : dn_int(z, s, "reverse", 0, &depth);
		if (ret)
			return ret;
		if (stride > 46340) /* stride * stride above INT32_MAX */
			return dn_cfg_fail(z, -EBADMSG, s->at,
					   "%s (layer %zu): stride=%" PRId64
					   ": too large",
					   s->type, l, stride);
		if (depth) {
			out->h = in->h * stride;
			out->w = in->w * stride;
			out->c = in->c / (stride * stride);
		} else {
			out->h = in->h / stride;
			out->w = in->w / stride;
			out->c = in->c * stride * stride;
		}
		out->known = in->known && (dn_find(z, s, "extra") == NULL) &&
			     (dn_find(z, s, "flatten") == NULL);
		return 0;
	case DN_SHORTCUT:
		o = dn_find(z, s, "weights_type");
		if (o && strcmp(o->val, "none"))
			return dn_cfg_fail(z, -ENOTSUP, o->at,
					   "%s (layer %zu): weights_type=%s: "
					   "shortcut weights are not supported",
					   s->type, l, o->val);
		__attribute__((fallthrough)); /* 'from' names a layer */
	case DN_FROM:
		o = dn_find(z, s, "from");
		if (!o)
			return dn_cfg_fail(z, -EBADMSG, s->at,
					   "%s (layer %zu): no from=", s->type,
					   l);
		ret = dn_layer_ref(z, s, l, o, o->val, &k);
		if (!ret && dn_types[s->t].kind == DN_FROM)
			*out = z->out[k];
		return ret;
	case DN_SHAPELESS:
		out->known = false;
		return 0;
	default:
		return 0;
	}
}

/*
 * A layer's output kept in int32 as darknet's ints are: channels must stay
 * in 1..INT32_MAX (they size the next weights), a height or width outside
 * it is no longer tracked.
 */
static int dn_settle(struct dn *z, size_t l, struct dn_shape *out)
{
	const struct dn_section *s = &z->secs[l + 1];

	if (out->c < 1 || out->c > INT32_MAX)
		return dn_cfg_fail(z, -EBADMSG, s->at,
				   "%s (layer %zu): %" PRId64 " output "
				   "channels",
				   s->type, l, out->c);
	if (out->h < 1 || out->h > INT32_MAX || out->w < 1 ||
	    out->w > INT32_MAX)
		out->known = false;
	return 0;
}

static int dn_layers(struct dn *z)
{
	const struct dn_section *net = &z->secs[0];
	struct dn_shape in;
	int64_t h, w, c, inputs;
	size_t l, nlayers = z->nsecs - 1;
	int ret;

	ret = dn_count(z, net, "height", 0, 0, &h);
	ret = ret ? ret : dn_count(z, net, "width", 0, 0, &w);
	ret = ret ? ret : dn_count(z, net, "channels", 3, 1, &c);
	ret = ret ? ret
		  : dn_count(z, net, "inputs",
			     (h * w > INT32_MAX / c) ? 0 : h * w * c, 0,
			     &inputs);
	if (ret)
		return ret;
	z->out = calloc(nlayers ? nlayers : 1, sizeof(*z->out));
	if (!z->out)
		return tfs_diag_oom(z->d);
	in = (struct dn_shape){.h = h, .w = w, .c = c, .known = h && w};
	z->net = in;
	for (l = 0; l < nlayers; l++) {
		const struct dn_section *s = &z->secs[l + 1];
		uint64_t in_count = l ? 0 : (uint64_t)inputs;
		int64_t dontload;

		if (s->t == ~0u)
			return dn_cfg_fail(z, -EBADMSG, s->at,
					   "section %zu %s: not a layer type "
					   "darknet knows",
					   l + 1, s->type);
		z->counts[s->t]++;
		ret = dn_int(z, s, "dontload", 0, &dontload);
		if (ret)
			return ret;
		if (in.known && !in_count &&
		    (!tfs_mul_u64((uint64_t)in.h, (uint64_t)in.w, &in_count) ||
		     !tfs_mul_u64(in_count, (uint64_t)in.c, &in_count)))
			in_count = 0;
		if (dontload && (dn_types[s->t].kind == DN_CONV ||
				 dn_types[s->t].kind == DN_CONNECTED ||
				 dn_types[s->t].kind == DN_BATCHNORM))
			return dn_cfg_fail(z, -ENOTSUP, s->at,
					   "%s (layer %zu): dontload is not "
					   "supported",
					   s->type, l);
		switch (dn_types[s->t].kind) {
		case DN_NET:
			return dn_cfg_fail(z, -EBADMSG, s->at,
					   "section %zu %s: a second [net]",
					   l + 1, s->type);
		case DN_REFUSED:
			return dn_cfg_fail(z, -ENOTSUP, s->at,
					   "%s (layer %zu): this layer's "
					   "weights are not supported",
					   s->type, l);
		case DN_CONV:
			ret = dn_conv(z, l, &in, &z->out[l]);
			break;
		case DN_CONNECTED:
			ret = dn_connected(z, l, &in, in_count, &z->out[l]);
			break;
		case DN_BATCHNORM:
			z->out[l] = in;
			ret = dn_bn(z, l, (uint64_t)in.c);
			break;
		case DN_ROUTE:
			ret = dn_route(z, l, &z->out[l]);
			break;
		default:
			ret = dn_plain(z, l, &in, &z->out[l]);
		}
		if (ret)
			return ret;
		ret = dn_settle(z, l, &z->out[l]);
		if (ret)
			return ret;
		in = z->out[l];
	}
	return 0;
}

/* ---- the files ---------------------------------------------------------- */

/* the first line that is not blank or a comment is [net] or [network] */
static bool dn_is_cfg(const uint8_t *p, uint64_t size)
{
	char line[16];
	uint64_t i = 0;
	size_t k;

	if (size > 4096)
		size = 4096;
	while (i < size) {
		for (k = 0; i < size && p[i] != '\n'; i++)
			if (!dn_space((char)p[i]) && k < sizeof(line) - 1)
				line[k++] = (char)p[i];
		i++;
		line[k] = '\0';
		if (!k || line[0] == '#' || line[0] == ';')
			continue;
		return i <= size &&
		       (!strcmp(line, "[net]") || !strcmp(line, "[network]"));
	}
	return false;
}

static int dn_probe(const struct tfs_source *src)
{
	int32_t major, minor;

	if (src->size && dn_is_cfg(src->data, src->size))
		return 60;
	/* from 8 bytes: a short header is claimed, to say so */
	if (!tfs_source_name_ends(src, ".weights") || src->size < 8)
		return 0;
	major = (int32_t)tfs_load_le(src->data, 4);
	minor = (int32_t)tfs_load_le(src->data + 4, 4);
	return major >= 0 && major < 10 && minor >= 0 && minor < 100 ? 40 : 0;
}

/* load_weights_upto's header: version, then `seen` as size_t or int */
static int dn_header(struct dn *z)
{
	int64_t v;

	if (z->w_size < 12)
		goto short_file;
	z->major = (int32_t)tfs_load_le(z->w, 4);
	z->minor = (int32_t)tfs_load_le(z->w + 4, 4);
	z->revision = (int32_t)tfs_load_le(z->w + 8, 4);
	v = (int64_t)z->major * 10 + z->minor;
	z->header = v >= 2 && z->major < 1000 && z->minor < 1000 ? 20 : 16;
	z->transpose = z->major > 1000 || z->minor > 1000;
	if (z->w_size < z->header)
		goto short_file;
	z->seen = tfs_load_le(z->w + 12, (unsigned)(z->header - 12));
	z->pos = z->header;
	return 0;
short_file:
	if (z->cfg_is_container)
		return tfs_diag_at(z->d, -EBADMSG, 0,
				   "weights '%s': %" PRIu64 " bytes, shorter "
				   "than its header",
				   z->weights_name, z->w_size);
	return tfs_diag_at(z->d, -EBADMSG, z->w_size,
			   "header: %" PRIu64 " bytes, shorter than the "
			   "header (version, seen)",
			   z->w_size);
}

/* the .weights (the container, or the file beside the cfg) */
static int dn_open_weights(struct dn *z)
{
	int ret;

	if (!z->cfg_is_container) {
		z->w = z->src->data;
		z->w_size = z->src->size;
		return dn_header(z);
	}
	ret = tfs_open_weights_beside(z->b, z->src, ".weights", "the cfg",
				      z->weights_name, sizeof(z->weights_name),
				      &z->w_source, &z->w, &z->w_size, z->why,
				      &z->unreadable, z->d);
	return ret || z->unreadable ? ret : dn_header(z);
}

/* the .cfg (the container, or the file beside the weights: required) */
static int dn_open_cfg(struct dn *z)
{
	uint32_t h;
	int ret;

	if (z->cfg_is_container) {
		z->cfg = z->src->data;
		z->cfg_size = z->src->size;
		snprintf(z->cfg_name, sizeof(z->cfg_name), "cfg");
		return 0;
	}
	if (!z->src->path)
		return tfs_diag_at(z->d, -ENOTSUP, 0,
				   "cfg: the weights were read from memory, "
				   "so the .cfg that gives their layers is "
				   "not found");
	ret = tfs_name_beside(z->src, ".cfg", z->cfg_name, sizeof(z->cfg_name),
			      "cfg: the weights'", z->d);
	ret = ret ? ret
		  : tfs_builder_open_companion_at(
			    z->b, z->cfg_name, 0, 0, &h, z->d,
			    "cfg: the layers of the weights are in '%s'",
			    z->cfg_name);
	if (ret)
		return ret;
	z->cfg = tfs_builder_source(z->b, h)->data;
	z->cfg_size = tfs_builder_source(z->b, h)->size;
	return 0;
}

static int dn_metadata(struct dn *z)
{
	json_t *meta = tfs_builder_metadata(z->b), *types = json_object();
	size_t i;
	int ret = types ? 0 : -1;

	for (i = 1; !ret && i < sizeof(dn_types) / sizeof(dn_types[0]); i++)
		if (z->counts[i])
			ret = json_object_set_new(
				types, dn_types[i].name,
				json_integer((json_int_t)z->counts[i]));
	ret = ret ? ret
		  : json_object_set_new(
			    meta, "layers",
			    json_integer((json_int_t)(z->nsecs - 1)));
	ret = ret ? ret : json_object_set_new(meta, "layer_types", types);
	types = NULL;
	ret = ret ? ret
		  : json_object_set_new(meta, "input",
					json_pack("{s:I,s:I,s:I}", "height",
						  (json_int_t)z->net.h, "width",
						  (json_int_t)z->net.w,
						  "channels",
						  (json_int_t)z->net.c));
	if (!ret && !z->unreadable)
		ret = json_object_set_new(
			meta, "weights",
			json_pack("{s:i,s:i,s:i,s:I,s:I}", "major", z->major,
				  "minor", z->minor, "revision", z->revision,
				  "seen", (json_int_t)z->seen, "header_bytes",
				  (json_int_t)z->header));
	json_decref(types);
	return ret ? tfs_diag_oom(z->d) : 0;
}

static int dn_load(const struct tfs_source *src, struct tfs_builder *b,
		   struct tfs_diag *d)
{
	struct dn z = {.src = src, .b = b, .d = d};
	int ret;

	z.cfg_is_container = src->size && dn_is_cfg(src->data, src->size);
	ret = dn_open_cfg(&z);
	ret = ret ? ret : dn_open_weights(&z);
	ret = ret ? ret : dn_read_cfg(&z);
	ret = ret ? ret : dn_layers(&z);
	if (ret)
		goto out;
	if (!z.unreadable && z.pos != z.w_size) {
		ret = z.cfg_is_container
			      ? tfs_diag_at(d, -EBADMSG, 0,
					    "weights '%s': %" PRIu64
					    " bytes, but the cfg's layers "
					    "need %" PRIu64,
					    z.weights_name, z.w_size, z.pos)
			      : tfs_diag_at(d, -EBADMSG, z.pos,
					    "weights: %" PRIu64 " bytes after "
					    "the arrays of the cfg's layers "
					    "(%" PRIu64 " bytes)",
					    z.w_size - z.pos, z.pos);
		goto out;
	}
	ret = dn_metadata(&z);
out:
	free(z.text);
	free(z.opts);
	free(z.secs);
	free(z.out);
	return ret;
}

TFS_FORMAT(darknet, "Darknet .weights with its .cfg (YOLO)", .probe = dn_probe,
	   .load = dn_load);
