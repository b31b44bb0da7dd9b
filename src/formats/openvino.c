// SPDX-License-Identifier: MIT
/*
 * OpenVINO IR v10/v11 (specs/openvino-ir.md, docs/formats/openvino.md):
 * model.xml, read through the bounded expat reader of parse/xml.h (no
 * DOCTYPE, no entity, expat's amplification limits on), describes the
 * graph; model.bin beside it (the same stem) is a flat blob with no header
 * holding every Const layer's bytes.  Each Const becomes a file served
 * zero-copy from the .bin (a companion file: tfs_builder_open_companion),
 * its range checked against the .bin's size and its size against
 * ceil(elements x bits / 8).  A missing .bin leaves those files unreadable
 * and the rest (metadata) mounts.
 *
 * The file's name: the first name of the Const's output port (names="a,b"
 * with "\," for a literal comma) where present, else the layer's name;
 * a name already given is suffixed "#<layer id>".  metadata.json holds the
 * graph summary: IR version, layer count per type, inputs and outputs,
 * each Const's layer id and consumers, and the decompression chains
 * (Const -> Convert [-> Subtract -> Multiply] -> Convert).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/kept_strings.h"
#include "core/strmap.h"
#include "formats/common/beside.h"
#include "formats/common/info_xattr.h"
#include "parse/xml.h"
#include "core/builder.h"
#include "core/checked.h"
#include "core/diag.h"
#include "core/dtype.h"
#include "core/format.h"
#include "core/names.h"
#include "core/source.h"

#define OV_XML_MAX (256ull << 20)
#define OV_MAX_DEPTH 16
#define OV_MAX_ATTRS 64
#define OV_MAX_VALUE (1ull << 20)
#define OV_MAX_LAYERS 1000000u
#define OV_MAX_EDGES 8000000u
#define OV_MAX_DIMS 64
#define OV_CHAIN_MAX 8

/* specs/openvino-ir.md section 3 */
static const struct ov_type {
	const char *name;
	unsigned bits;
	enum tfs_dtype dtype; /* VOID: opaque, shown as its bytes */
	const char *packing;  /* sub-byte: element order in a byte */
} ov_types[] = {
	{"f64", 64, TFS_DTYPE_FLOAT64, NULL},
	{"f32", 32, TFS_DTYPE_FLOAT32, NULL},
	{"f16", 16, TFS_DTYPE_FLOAT16, NULL},
	{"bf16", 16, TFS_DTYPE_BFLOAT16, NULL},
	{"i64", 64, TFS_DTYPE_INT64, NULL},
	{"i32", 32, TFS_DTYPE_INT32, NULL},
	{"i16", 16, TFS_DTYPE_INT16, NULL},
	{"i8", 8, TFS_DTYPE_INT8, NULL},
	{"u64", 64, TFS_DTYPE_UINT64, NULL},
	{"u32", 32, TFS_DTYPE_UINT32, NULL},
	{"u16", 16, TFS_DTYPE_UINT16, NULL},
	{"u8", 8, TFS_DTYPE_UINT8, NULL},
	{"boolean", 8, TFS_DTYPE_BOOL, NULL},
	{"f8e4m3", 8, TFS_DTYPE_FLOAT8_E4M3, NULL},
	{"f8e5m2", 8, TFS_DTYPE_FLOAT8_E5M2, NULL},
	{"f8e8m0", 8, TFS_DTYPE_FLOAT8_E8M0, NULL},
	{"u4", 4, TFS_DTYPE_UINT4, "element 0 in the low nibble"},
	{"i4", 4, TFS_DTYPE_INT4, "element 0 in the low nibble"},
	{"f4e2m1", 4, TFS_DTYPE_FLOAT4, "element 0 in the low nibble"},
	{"u1", 1, TFS_DTYPE_UINT1, "element 0 in the most significant bit"},
	/* no tensorfs dtype: the packed bytes as they are */
	{"nf4", 4, TFS_DTYPE_VOID, "element 0 in the low nibble"},
	{"u2", 2, TFS_DTYPE_VOID, "packed, OpenVINO's order"},
	{"u3", 3, TFS_DTYPE_VOID, "packed, OpenVINO's order"},
	{"u6", 6, TFS_DTYPE_VOID, "packed, OpenVINO's order"},
};

/* the container's parts we keep */
enum ov_where { OV_NONE, OV_LAYERS, OV_LAYER, OV_OUTPUT, OV_EDGES };

struct ov_layer {
	uint64_t id;
	uint64_t at; /* its <layer> tag */
	char *name;
	char *type;
	/* Const: its <data> */
	bool has_data;
	uint64_t data_at;
	char *etype, *shape, *dest; /* dest: a Convert's destination_type */
	uint64_t etype_at, shape_at;
	uint64_t offset, size, offset_at, size_at;
	bool has_offset, has_size;
	char *names; /* the first output port's names attribute */
	uint64_t names_at;
	bool port_seen;
	/* edges leaving it, by index into ov.edges sorted by from */
	uint32_t nconsumers;
	const char *tensor; /* the file's stored name (owned elsewhere) */
};

struct ov_edge {
	uint64_t from, to;
	uint64_t from_port, to_port;
};

struct ov {
	const struct tfs_source *src;
	struct tfs_builder *b;
	struct tfs_diag *d;
	/* parse state */
	enum ov_where where;
	unsigned version;
	char *net_name;
	struct ov_layer *layers;
	size_t nlayers, layers_cap;
	struct ov_edge *edges;
	size_t nedges, edges_cap;
	uint32_t *by_id; /* layer indexes sorted by id */
	uint32_t *by_to; /* edge indexes sorted by to-layer */
	char rt_version[128];
	/* load state */
	struct tfs_strmap names;
	struct tfs_kept_strings owned;
	uint32_t bin; /* companion handle */
	uint64_t bin_size;
	const char *unreadable;
	bool unreadable_fault;
	char why[TFS_DIAG_MSG_MAX];
	char bin_name[256];
	uint64_t consts, const_bytes;
	uint64_t body_consts; /* Consts inside TensorIterator/Loop bodies */
};

/* ---- small helpers ------------------------------------------------------ */

/* decimal digits only, below 2^64; false otherwise */
static bool ov_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || !tfs_mul_u64(v, 10, &v) ||
		    !tfs_add_u64(v, (uint64_t)(*s - '0'), &v))
			return false;
	}
	*out = v;
	return true;
}

static const struct tfs_xml_attr *ov_attr(const struct tfs_xml_attr *a,
					  size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(a[i].name, name) == 0)
			return &a[i];
	return NULL;
}

static int ov_dup(struct ov *z, const struct tfs_xml_attr *a, char **out)
{
	*out = strdup(a ? a->value : "");
	return *out ? 0 : tfs_diag_oom(z->d);
}

static const struct ov_type *ov_type(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(ov_types) / sizeof(ov_types[0]); i++)
		if (strcmp(ov_types[i].name, name) == 0)
			return &ov_types[i];
	return NULL;
}

/*
 * The array @p of *@cap items of @size bytes with room for item @n: @p,
 * or @p reallocated (*@cap updated), or NULL (@p untouched).  Counts are
 * bounded by OV_MAX_* and the document's size: no overflow.
 */
static void *ov_grow(void *p, size_t *cap, size_t n, size_t size)
{
	size_t c = *cap ? 2 * *cap : 64;
	void *q;

	if (n < *cap)
		return p;
	q = realloc(p, c * size);
	if (q)
		*cap = c;
	return q;
}

/*
 * A new zeroed entry at the end of *@arr (*@n of them, at most @max):
 * 0 with it in *@slot, or -E2BIG ("WHAT: more than MAX") or -ENOMEM.
 */
static int ov_push(struct ov *z, void **arr, size_t *cap, size_t *n,
		   size_t size, unsigned max, const char *what, uint64_t at,
		   void **slot)
{
	char *p;

	if (*n >= max)
		return tfs_diag_at(z->d, -E2BIG, at, "%s: more than %u", what,
				   max);
	p = ov_grow(*arr, cap, *n, size);
	if (!p)
		return tfs_diag_oom(z->d);
	*arr = p;
	p += (*n)++ * size;
	memset(p, 0, size);
	*slot = p;
	return 0;
}

static int ov_own(struct ov *z, char *s)
{
	if (!s || tfs_kept_add(&z->owned, s))
		return tfs_diag_oom(z->d);
	return 0;
}

/* ---- the XML ------------------------------------------------------------ */

static int ov_net(struct ov *z, uint64_t at, const struct tfs_xml_attr *a,
		  size_t n)
{
	const struct tfs_xml_attr *v = ov_attr(a, n, "version");
	const struct tfs_xml_attr *nm = ov_attr(a, n, "name");
	uint64_t ver;

	if (!v)
		return tfs_diag_at(z->d, -EBADMSG, at,
				   "net: no 'version' attribute");
	if (!ov_u64(v->value, &ver))
		return tfs_diag_at(z->d, -EBADMSG, v->at,
				   "net version '%s': not a decimal number",
				   v->value);
	if (ver <= 7)
		return tfs_diag_at(z->d, -ENOTSUP, v->at,
				   "net version %llu: IR v7 and older not "
				   "supported (v10 and v11 are)",
				   (unsigned long long)ver);
	if (ver != 10 && ver != 11)
		return tfs_diag_at(z->d, -ENOTSUP, v->at,
				   "net version %llu: not supported (v10 and "
				   "v11 are)",
				   (unsigned long long)ver);
	z->version = (unsigned)ver;
	return ov_dup(z, nm, &z->net_name);
}

static int ov_layer_open(struct ov *z, uint64_t at,
			 const struct tfs_xml_attr *a, size_t n)
{
	const struct tfs_xml_attr *id = ov_attr(a, n, "id");
	struct ov_layer *l;
	int ret;

	ret = ov_push(z, (void **)&z->layers, &z->layers_cap, &z->nlayers,
		      sizeof(*l), OV_MAX_LAYERS, "layers", at, (void **)&l);
	if (ret)
		return ret;
	l->at = at;
	if (!id)
		return tfs_diag_at(z->d, -EBADMSG, at,
				   "layer: no 'id' attribute");
	if (!ov_u64(id->value, &l->id))
		return tfs_diag_at(z->d, -EBADMSG, id->at,
				   "layer id '%s': not a decimal number",
				   id->value);
	ret = ov_dup(z, ov_attr(a, n, "name"), &l->name);
	if (!ret)
		ret = ov_dup(z, ov_attr(a, n, "type"), &l->type);
	if (!ret && !ov_attr(a, n, "type"))
		ret = tfs_diag_at(z->d, -EBADMSG, at,
				  "layer %llu: no 'type' attribute",
				  (unsigned long long)l->id);
	return ret;
}

static int ov_need(struct ov *z, uint64_t at, const struct tfs_xml_attr *a,
		   size_t n, const char *name, const struct tfs_xml_attr **out)
{
	*out = ov_attr(a, n, name);
	if (*out)
		return 0;
	return tfs_diag_at(z->d, -EBADMSG, at,
			   "layer '%s' (id %llu): data: no '%s' attribute",
			   TFS_SHOWN(z->layers[z->nlayers - 1].name,
				     strlen(z->layers[z->nlayers - 1].name)),
			   (unsigned long long)z->layers[z->nlayers - 1].id,
			   name);
}

/* layer @l's <data> attribute @v ("offset", "size") as a u64 into *@out */
static int ov_data_u64(struct ov *z, const struct ov_layer *l,
		       const struct tfs_xml_attr *v, const char *what,
		       uint64_t *out)
{
	if (ov_u64(v->value, out))
		return 0;
	return tfs_diag_at(z->d, -EBADMSG, v->at,
			   "layer '%s' (id %llu): data %s '%s': not a decimal "
			   "number below 2^64",
			   TFS_SHOWN(l->name, strlen(l->name)),
			   (unsigned long long)l->id, what, v->value);
}

static int ov_data(struct ov *z, uint64_t at, const struct tfs_xml_attr *a,
		   size_t n)
{
	struct ov_layer *l = &z->layers[z->nlayers - 1];
	const struct tfs_xml_attr *et, *sh, *off, *sz;
	int ret;

	if (strcmp(l->type, "Convert") == 0) {
		et = ov_attr(a, n, "destination_type");
		return et && !l->dest ? ov_dup(z, et, &l->dest) : 0;
	}
	if (strcmp(l->type, "Parameter") == 0 && !l->etype) {
		ret = ov_dup(z, ov_attr(a, n, "element_type"), &l->etype);
		return ret ? ret : ov_dup(z, ov_attr(a, n, "shape"), &l->shape);
	}
	if (strcmp(l->type, "Const") != 0 || l->has_data)
		return 0;
	l->has_data = true;
	l->data_at = at;
	ret = ov_need(z, at, a, n, "element_type", &et);
	if (!ret)
		ret = ov_need(z, at, a, n, "shape", &sh);
	if (!ret)
		ret = ov_need(z, at, a, n, "offset", &off);
	if (!ret)
		ret = ov_need(z, at, a, n, "size", &sz);
	if (!ret)
		ret = ov_data_u64(z, l, off, "offset", &l->offset);
	if (!ret)
		ret = ov_data_u64(z, l, sz, "size", &l->size);
	if (ret)
		return ret;
	l->offset_at = off->at;
	l->size_at = sz->at;
	l->etype_at = et->at;
	l->shape_at = sh->at;
	ret = ov_dup(z, et, &l->etype);
	return ret ? ret : ov_dup(z, sh, &l->shape);
}

static int ov_edge(struct ov *z, uint64_t at, const struct tfs_xml_attr *a,
		   size_t n)
{
	static const char *const keys[4] = {"from-layer", "from-port",
					    "to-layer", "to-port"};
	uint64_t v[4];
	struct ov_edge *e;
	unsigned i;
	int ret;

	for (i = 0; i < 4; i++) {
		const struct tfs_xml_attr *x = ov_attr(a, n, keys[i]);

		if (!x)
			return tfs_diag_at(z->d, -EBADMSG, at,
					   "edge: no '%s' attribute", keys[i]);
		if (!ov_u64(x->value, &v[i]))
			return tfs_diag_at(z->d, -EBADMSG, x->at,
					   "edge %s '%s': not a decimal number",
					   keys[i], x->value);
	}
	ret = ov_push(z, (void **)&z->edges, &z->edges_cap, &z->nedges,
		      sizeof(*e), OV_MAX_EDGES, "edges", at, (void **)&e);
	if (ret)
		return ret;
	e->from = v[0];
	e->from_port = v[1];
	e->to = v[2];
	e->to_port = v[3];
	return 0;
}

static int ov_start(void *arg, const char *name, unsigned depth, uint64_t at,
		    const struct tfs_xml_attr *a, size_t n)
{
	struct ov *z = arg;
	struct ov_layer *l;
	const struct tfs_xml_attr *x;

	if (depth == 1) {
		if (strcmp(name, "net") != 0)
			return tfs_diag_at(z->d, -EBADMSG, at,
					   "root element '%s': not 'net'",
					   name);
		return ov_net(z, at, a, n);
	}
	if (depth == 2) {
		z->where = strcmp(name, "layers") == 0	? OV_LAYERS
			   : strcmp(name, "edges") == 0 ? OV_EDGES
							: OV_NONE;
		if (strcmp(name, "rt_info") == 0)
			z->where = OV_NONE;
		return 0;
	}
	if (depth == 3 && z->where == OV_EDGES && strcmp(name, "edge") == 0)
		return ov_edge(z, at, a, n);
	if (z->where == OV_NONE || z->where == OV_EDGES)
		return 0;
	if (depth == 3) {
		if (strcmp(name, "layer") != 0) {
			z->where = OV_LAYERS;
			return 0;
		}
		z->where = OV_LAYER;
		return ov_layer_open(z, at, a, n);
	}
	if (z->where != OV_LAYER && z->where != OV_OUTPUT)
		return 0;
	if (depth > 5 && strcmp(name, "layer") == 0) {
		x = ov_attr(a, n, "type");
		if (x && strcmp(x->value, "Const") == 0)
			z->body_consts++;
		return 0;
	}
	l = &z->layers[z->nlayers - 1];
	if (depth == 4) {
		z->where = strcmp(name, "output") == 0 ? OV_OUTPUT : OV_LAYER;
		if (strcmp(name, "data") == 0)
			return ov_data(z, at, a, n);
		if (strcmp(name, "blobs") == 0)
			return tfs_diag_at(z->d, -ENOTSUP, at,
					   "layer '%s': <blobs>: IR v7 and "
					   "older not supported",
					   TFS_SHOWN(l->name, strlen(l->name)));
		return 0;
	}
	if (depth == 5 && z->where == OV_OUTPUT && strcmp(name, "port") == 0 &&
	    !l->port_seen) {
		l->port_seen = true;
		x = ov_attr(a, n, "names");
		if (x) {
			l->names_at = x->at;
			return ov_dup(z, x, &l->names);
		}
	}
	return 0;
}

static int ov_end(void *arg, const char *name, unsigned depth, uint64_t at)
{
	struct ov *z = arg;

	if (depth == 2)
		z->where = OV_NONE;
	else if (depth == 3 && z->where != OV_NONE && z->where != OV_EDGES)
		z->where = OV_LAYERS;
	else if (depth == 4 && z->where == OV_OUTPUT)
		z->where = OV_LAYER;
	return 0;
}

/* ---- the graph ---------------------------------------------------------- */

static int ov_cmp_id(const void *pa, const void *pb, void *arg)
{
	const struct ov *z = arg;
	uint64_t a = z->layers[*(const uint32_t *)pa].id;
	uint64_t b = z->layers[*(const uint32_t *)pb].id;

	return a < b ? -1 : a > b;
}

static int ov_cmp_edge(const void *pa, const void *pb)
{
	const struct ov_edge *a = pa, *b = pb;

	if (a->from != b->from)
		return a->from < b->from ? -1 : 1;
	if (a->to != b->to)
		return a->to < b->to ? -1 : 1;
	return a->to_port < b->to_port ? -1 : a->to_port > b->to_port;
}

static uint64_t ov_layer_key(const struct ov *z, size_t i)
{
	return z->layers[z->by_id[i]].id;
}

static uint64_t ov_from_key(const struct ov *z, size_t i)
{
	return z->edges[i].from;
}

static uint64_t ov_to_key(const struct ov *z, size_t i)
{
	return z->edges[z->by_to[i]].to;
}

/* the first of @n sorted entries whose @key is not below @id, or @n */
static size_t ov_lower_bound(const struct ov *z, size_t n, uint64_t id,
			     uint64_t (*key)(const struct ov *, size_t))
{
	size_t lo = 0, hi = n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (key(z, mid) < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* the layer with id @id, or NULL */
static struct ov_layer *ov_find(const struct ov *z, uint64_t id)
{
	size_t lo = ov_lower_bound(z, z->nlayers, id, ov_layer_key);

	if (lo < z->nlayers && z->layers[z->by_id[lo]].id == id)
		return &z->layers[z->by_id[lo]];
	return NULL;
}

/* the first edge leaving @id (edges sorted by from), or nedges */
static size_t ov_first_edge(const struct ov *z, uint64_t id)
{
	return ov_lower_bound(z, z->nedges, id, ov_from_key);
}

/* the first edge (in by_to order) entering @id, or nedges */
static size_t ov_first_input(const struct ov *z, uint64_t id)
{
	return ov_lower_bound(z, z->nedges, id, ov_to_key);
}

static int ov_cmp_to(const void *pa, const void *pb, void *arg)
{
	const struct ov *z = arg;
	const struct ov_edge *a = &z->edges[*(const uint32_t *)pa];
	const struct ov_edge *b = &z->edges[*(const uint32_t *)pb];

	if (a->to != b->to)
		return a->to < b->to ? -1 : 1;
	return a->to_port < b->to_port ? -1 : a->to_port > b->to_port;
}

/* the indices 0..@n-1 in the order of @cmp, into *@out (malloc'd) */
static int ov_order(struct ov *z, size_t n,
		    int (*cmp)(const void *, const void *, void *),
		    uint32_t **out)
{
	uint32_t *v = malloc((n + 1) * sizeof(*v));
	size_t i;

	*out = v;
	if (!v)
		return tfs_diag_oom(z->d);
	for (i = 0; i < n; i++)
		v[i] = (uint32_t)i;
	qsort_r(v, n, sizeof(*v), cmp, z);
	return 0;
}

static int ov_index(struct ov *z)
{
	uint64_t dangling = 0;
	size_t i;

	if (ov_order(z, z->nlayers, ov_cmp_id, &z->by_id))
		return -ENOMEM;
	for (i = 1; i < z->nlayers; i++) {
		const struct ov_layer *a = &z->layers[z->by_id[i - 1]];
		const struct ov_layer *b = &z->layers[z->by_id[i]];

		if (a->id == b->id)
			return tfs_diag_at(z->d, -EBADMSG,
					   a->at > b->at ? a->at : b->at,
					   "layer id %llu: given twice",
					   (unsigned long long)a->id);
	}
	if (z->nedges) /* edges may be NULL: qsort's pointer is nonnull */
		qsort(z->edges, z->nedges, sizeof(*z->edges), ov_cmp_edge);
	if (ov_order(z, z->nedges, ov_cmp_to, &z->by_to))
		return -ENOMEM;
	for (i = 0; i < z->nedges; i++) {
		struct ov_layer *f = ov_find(z, z->edges[i].from);

		if (f)
			f->nconsumers++;
		if (!f || !ov_find(z, z->edges[i].to))
			dangling++;
	}
	if (dangling &&
	    tfs_builder_warn(z->b, TFS_NO_OFFSET,
			     "edges: %llu refer to a layer that does not "
			     "exist (ignored)",
			     (unsigned long long)dangling))
		return tfs_diag_oom(z->d);
	return 0;
}

/* the one layer @l feeds (at its input *@port), or NULL */
static struct ov_layer *
ov_sole_consumer(const struct ov *z, const struct ov_layer *l, uint64_t *port)
{
	size_t e = ov_first_edge(z, l->id);

	if (l->nconsumers != 1 || e >= z->nedges || z->edges[e].from != l->id)
		return NULL;
	*port = z->edges[e].to_port;
	return ov_find(z, z->edges[e].to);
}

/* the stored name of the Const feeding @to other than from @from (directly
 * or through a Convert), or NULL */
static const char *ov_other_const(const struct ov *z, const struct ov_layer *to,
				  uint64_t from)
{
	size_t i;

	for (i = ov_first_input(z, to->id);
	     i < z->nedges && z->edges[z->by_to[i]].to == to->id; i++) {
		const struct ov_edge *e = &z->edges[z->by_to[i]];
		const struct ov_layer *s;
		size_t k;

		if (e->from == from)
			continue;
		s = ov_find(z, e->from);
		if (s && strcmp(s->type, "Convert") == 0) {
			k = ov_first_input(z, s->id);
			s = k < z->nedges && z->edges[z->by_to[k]].to == s->id
				    ? ov_find(z, z->edges[z->by_to[k]].from)
				    : NULL;
		}
		return s && s->tensor ? s->tensor : NULL;
	}
	return NULL;
}

/*
 * A decompression chain from Const @c: Convert, then Subtract / Multiply
 * by other Consts and Converts, ending in a Convert to a float type;
 * metadata "decompression": {"<last layer>": ["<const>", "Convert f32"]}
 */
static int ov_chain(struct ov *z, const struct ov_layer *c, json_t *out)
{
	const struct ov_layer *cur = c, *next, *end = NULL;
	json_t *a = json_array();
	size_t end_len = 0;
	unsigned k;
	char buf[512];
	int ret = 0;

	if (!a || json_array_append_new(a, json_string(c->tensor)))
		goto oom;
	for (k = 0; k < OV_CHAIN_MAX; k++) {
		const char *other = NULL;
		uint64_t port;

		next = ov_sole_consumer(z, cur, &port);
		if (!next)
			break;
		if (strcmp(next->type, "Convert") == 0) {
			snprintf(buf, sizeof(buf), "Convert %s",
				 next->dest ? next->dest : "?");
			if (next->dest && (strcmp(next->dest, "f32") == 0 ||
					   strcmp(next->dest, "f16") == 0 ||
					   strcmp(next->dest, "bf16") == 0))
				end = next;
		} else if (k && (strcmp(next->type, "Subtract") == 0 ||
				 strcmp(next->type, "Multiply") == 0)) {
			/* the weights come in first; the zero point or the
			 * scale second */
			if (port != 0)
				break;
			other = ov_other_const(z, next, cur->id);
			if (!other)
				break;
			snprintf(buf, sizeof(buf), "%s %s", next->type, other);
		} else {
			break;
		}
		if (json_array_append_new(a, json_string(buf)))
			goto oom;
		cur = next;
		if (end == cur)
			end_len = json_array_size(a);
		if (end == cur && strcmp(end->dest, "f32") == 0)
			break;
	}
	if (end) {
		uint64_t port;

		/* a zero point or a scale of another chain: not one */
		next = ov_sole_consumer(z, end, &port);
		if (next && port != 0 &&
		    (strcmp(next->type, "Subtract") == 0 ||
		     strcmp(next->type, "Multiply") == 0))
			end = NULL;
	}
	if (end) {
		/* drop what came after the last float Convert */
		while (json_array_size(a) > end_len)
			json_array_remove(a, json_array_size(a) - 1);
		if (!json_object_get(out, end->name) &&
		    json_object_set(out, end->name, a))
			goto oom;
	}
	json_decref(a);
	return ret;
oom:
	json_decref(a);
	return tfs_diag_oom(z->d);
}

/* ---- Consts ------------------------------------------------------------- */

/* the first name of names="a,b\,c" (unescaped), malloc'd; NULL: none */
static char *ov_first_name(const char *names)
{
	char *out, *o;
	const char *p;

	if (!names || !*names)
		return NULL;
	out = malloc(strlen(names) + 1);
	if (!out)
		return NULL;
	for (p = names, o = out; *p && *p != ','; p++) {
		if (*p == '\\' && p[1] == ',')
			p++;
		*o++ = *p;
	}
	*o = 0;
	return out;
}

/* names="a,b\,c" as a JSON array */
static json_t *ov_names_json(const char *names)
{
	json_t *a = json_array();
	char *buf = malloc(strlen(names ? names : "") + 1), *o;
	const char *p;

	if (!a || !buf)
		goto fail;
	for (p = names ? names : "", o = buf; *p; p++) {
		if (*p == '\\' && p[1] == ',') {
			*o++ = *++p;
			continue;
		}
		if (*p == ',') {
			*o = 0;
			if (json_array_append_new(a, json_string(buf)))
				goto fail;
			o = buf;
			continue;
		}
		*o++ = *p;
	}
	*o = 0;
	if (names && *names && json_array_append_new(a, json_string(buf)))
		goto fail;
	free(buf);
	return a;
fail:
	free(buf);
	json_decref(a);
	return NULL;
}

/* a refused dimension @tok of layer @l's shape: "@tok @why" */
static int ov_bad_dim(struct ov *z, const struct ov_layer *l, const char *tok,
		      const char *why)
{
	return tfs_diag_at(z->d, -EBADMSG, l->shape_at,
			   "layer '%s' (id %llu): shape '%s': dimension '%s' "
			   "%s",
			   TFS_SHOWN(l->name, strlen(l->name)),
			   (unsigned long long)l->id, l->shape, tok, why);
}

/* shape="4, 3" (empty: a scalar); -1 and ? are dynamic: refused */
static int ov_shape(struct ov *z, const struct ov_layer *l, uint64_t *dims,
		    size_t *ndim)
{
	const char *p = l->shape, *s, *e;
	char tok[32];
	size_t len;

	*ndim = 0;
	while (*p == ' ')
		p++;
	if (!*p)
		return 0;
	for (;;) {
		for (s = p; *p && *p != ','; p++)
			;
		for (e = p; e > s && e[-1] == ' ';)
			e--;
		while (s < e && *s == ' ')
			s++;
		len = (size_t)(e - s);
		if (len >= sizeof(tok))
			len = sizeof(tok) - 1;
		memcpy(tok, s, len);
		tok[len] = 0;
		if (*ndim >= OV_MAX_DIMS)
			return tfs_diag_at(z->d, -E2BIG, l->shape_at,
					   "layer '%s' (id %llu): shape: more "
					   "than %u dimensions",
					   TFS_SHOWN(l->name, strlen(l->name)),
					   (unsigned long long)l->id,
					   OV_MAX_DIMS);
		if (tok[0] == '-' || tok[0] == '?')
			return ov_bad_dim(z, l, tok,
					  "is negative or dynamic, not allowed "
					  "in a Const");
		if ((size_t)(e - s) >= sizeof(tok) ||
		    !ov_u64(tok, &dims[*ndim]))
			return ov_bad_dim(z, l, tok, "is not a decimal number");
		(*ndim)++;
		if (!*p)
			return 0;
		p++;
	}
}

/* the file's stored name: first output name, else the layer name; a name
 * given already gets "#<layer id>" */
static int ov_name(struct ov *z, struct ov_layer *l)
{
	char *n = ov_first_name(l->names);
	char *alt;
	uint32_t v;
	int ret;

	if (!n || !*n) {
		free(n);
		n = strdup(l->name);
	}
	ret = ov_own(z, n);
	if (ret)
		return ret;
	if (tfs_strmap_get(&z->names, n, &v)) {
		if (asprintf(&alt, "%s#%llu", n, (unsigned long long)l->id) < 0)
			return tfs_diag_oom(z->d);
		ret = ov_own(z, alt);
		if (ret)
			return ret;
		n = alt;
		if (tfs_strmap_get(&z->names, n, &v))
			return tfs_diag_at(z->d, -EBADMSG, l->at,
					   "layer '%s' (id %llu): name '%s' "
					   "given twice",
					   TFS_SHOWN(l->name, strlen(l->name)),
					   (unsigned long long)l->id, n);
	}
	l->tensor = n;
	return tfs_strmap_put(&z->names, n, 0) ? tfs_diag_oom(z->d) : 0;
}

static int ov_xattr_u64(struct ov *z, uint32_t h, const char *key, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	return tfs_builder_set_xattr_str(z->b, h, key, buf) ? tfs_diag_oom(z->d)
							    : 0;
}

static int ov_const(struct ov *z, struct ov_layer *l, json_t *consts)
{
	struct tfs_tensor_spec s;
	const struct ov_type *t;
	uint64_t dims[OV_MAX_DIMS], count, bits, need, one;
	size_t ndim, i, e;
	json_t *o, *c;
	bool opaque;
	uint32_t h;
	int ret;

	if (!l->has_data)
		return tfs_diag_at(z->d, -EBADMSG, l->at,
				   "layer '%s' (id %llu): Const without "
				   "<data>",
				   TFS_SHOWN(l->name, strlen(l->name)),
				   (unsigned long long)l->id);
	t = ov_type(l->etype);
	if (!t) {
		bool str = strcmp(l->etype, "string") == 0;
		bool dyn = strcmp(l->etype, "dynamic") == 0 ||
			   strcmp(l->etype, "undefined") == 0;

		return tfs_diag_at(z->d, str || dyn ? -ENOTSUP : -EBADMSG,
				   l->etype_at,
				   "layer '%s' (id %llu): element_type '%s': "
				   "%s",
				   TFS_SHOWN(l->name, strlen(l->name)),
				   (unsigned long long)l->id, l->etype,
				   str	 ? "string Consts (a variable-length "
					   "layout) not supported"
				   : dyn ? "not a stored type"
					 : "unknown");
	}
	ret = ov_shape(z, l, dims, &ndim);
	if (ret)
		return ret;
	bits = t->bits;
	if (!tfs_shape_product(dims, ndim, &count) ||
	    !tfs_mul_u64(count, bits, &need) || !tfs_add_u64(need, 7, &need))
		return tfs_diag_at(z->d, -EOVERFLOW, l->shape_at,
				   "layer '%s' (id %llu): shape '%s': too "
				   "many elements",
				   TFS_SHOWN(l->name, strlen(l->name)),
				   (unsigned long long)l->id, l->shape);
	need /= 8;
	if (need != l->size)
		return tfs_diag_at(z->d, -EBADMSG, l->size_at,
				   "layer '%s' (id %llu): data size %llu, but "
				   "%s [%s] takes %llu bytes",
				   TFS_SHOWN(l->name, strlen(l->name)),
				   (unsigned long long)l->id,
				   (unsigned long long)l->size, l->etype,
				   l->shape, (unsigned long long)need);
	if (!z->unreadable && !tfs_range_ok(l->offset, l->size, z->bin_size))
		return tfs_diag_at(z->d, -EBADMSG, l->offset_at,
				   "layer '%s' (id %llu): data offset %llu + "
				   "size %llu is past the end of '%s' (%llu "
				   "bytes)",
				   TFS_SHOWN(l->name, strlen(l->name)),
				   (unsigned long long)l->id,
				   (unsigned long long)l->offset,
				   (unsigned long long)l->size, z->bin_name,
				   (unsigned long long)z->bin_size);
	ret = ov_name(z, l);
	if (ret)
		return ret;
	tfs_spec_tensor(&s, l->tensor, strlen(l->tensor), t->dtype, dims, ndim,
			l->data_at);
	/* an odd count of a whole-block dtype (f4e2m1): its bytes */
	opaque = t->dtype == TFS_DTYPE_VOID ||
		 tfs_dtype_bytes(t->dtype, count, &one) != 0;
	if (opaque) {
		/* opaque packed bytes: one record per byte */
		one = l->size;
		tfs_spec_type(&s, TFS_DTYPE_VOID, &one, 1);
		tfs_spec_records(&s, 1);
	}
	tfs_spec_size(&s, l->size);
	tfs_spec_unreadable(&s, z->unreadable, z->unreadable_fault);
	if (!z->unreadable) {
		tfs_spec_in(&s, z->bin);
		tfs_spec_stored(&s, l->offset, l->size);
	}
	ret = tfs_builder_add_tensor(z->b, &s, &h, z->d);
	if (ret)
		return ret;
	z->consts++;
	z->const_bytes += l->size;
	ret = ov_xattr_u64(z, h, "openvino.layer_id", l->id);
	if (!ret &&
	    tfs_builder_set_xattr_str(z->b, h, "openvino.layer", l->name))
		ret = tfs_diag_oom(z->d);
	if (!ret && tfs_builder_set_xattr_str(z->b, h, "openvino.element_type",
					      l->etype))
		ret = tfs_diag_oom(z->d);
	if (!ret && t->bits < 8) {
		ret = ov_xattr_u64(z, h, "packed_bits", t->bits);
		if (!ret && tfs_builder_set_xattr_str(
				    z->b, h, "openvino.packing", t->packing))
			ret = tfs_diag_oom(z->d);
	}
	if (!ret && opaque &&
	    tfs_builder_set_xattr_str(z->b, h, "openvino.shape", l->shape))
		ret = tfs_diag_oom(z->d);
	if (ret)
		return ret;
	/* metadata: layer, names, consumers */
	/* the map owns @o (and @o @c) from here, also when the set fails */
	o = json_object();
	if (!o || json_object_set_new(consts, l->tensor, o))
		return tfs_diag_oom(z->d);
	c = json_array();
	if (!c || json_object_set_new(o, "consumers", c) ||
	    json_object_set_new(o, "layer_id",
				json_integer((json_int_t)l->id)) ||
	    json_object_set_new(o, "layer", json_string(l->name)) ||
	    json_object_set_new(o, "element_type", json_string(l->etype)) ||
	    json_object_set_new(o, "output_names", ov_names_json(l->names)))
		return tfs_diag_oom(z->d);
	for (e = ov_first_edge(z, l->id), i = 0;
	     e < z->nedges && z->edges[e].from == l->id && i < 64; e++, i++) {
		const struct ov_layer *to = ov_find(z, z->edges[e].to);
		json_t *x = json_pack("{sIsssI}", "layer_id",
				      (json_int_t)z->edges[e].to, "type",
				      to ? to->type : "?", "port",
				      (json_int_t)z->edges[e].to_port);

		if (!x || json_array_append_new(c, x))
			return tfs_diag_oom(z->d);
	}
	return 0;
}

/* the .bin beside the .xml: "<stem>.bin" */
static int ov_open_bin(struct ov *z)
{
	int ret = tfs_open_weights_beside(z->b, z->src, ".bin", "the model",
					  z->bin_name, sizeof(z->bin_name),
					  &z->bin, NULL, &z->bin_size, z->why,
					  &z->unreadable, z->d);

	/* a model read from memory has no file to miss */
	if (!ret && z->unreadable)
		z->unreadable_fault = z->src->path != NULL;
	return ret;
}

/* ---- metadata and info -------------------------------------------------- */

static int ov_info(struct ov *z, const char *label, const char *text)
{
	return tfs_info_xattr(z->b, label, text) ? tfs_diag_oom(z->d) : 0;
}

static int ov_summary(struct ov *z, json_t *meta)
{
	json_t *types = json_object(), *in = json_array(), *out = json_array();
	char buf[160];
	size_t i;
	int ret = 0;

	if (!types || !in || !out)
		goto oom;
	for (i = 0; i < z->nlayers; i++) {
		const struct ov_layer *l = &z->layers[i];
		json_t *n = json_object_get(types, l->type);

		if (json_object_set_new(
			    types, l->type,
			    json_integer(json_integer_value(n) + 1)))
			goto oom;
		if (strcmp(l->type, "Parameter") == 0) {
			json_t *p = json_pack("{sssIssss}", "name", l->name,
					      "layer_id", (json_int_t)l->id,
					      "element_type",
					      l->etype ? l->etype : "", "shape",
					      l->shape ? l->shape : "");

			if (!p || json_array_append_new(in, p))
				goto oom;
		} else if (strcmp(l->type, "Result") == 0) {
			json_t *p = json_pack("{sssI}", "name", l->name,
					      "layer_id", (json_int_t)l->id);

			if (!p || json_array_append_new(out, p))
				goto oom;
		}
	}
	if (json_object_set_new(meta, "ir_version", json_integer(z->version)) ||
	    json_object_set_new(meta, "name", json_string(z->net_name)) ||
	    json_object_set_new(meta, "layers",
				json_integer((json_int_t)z->nlayers)) ||
	    json_object_set_new(meta, "edges",
				json_integer((json_int_t)z->nedges)) ||
	    json_object_set(meta, "layer_types", types) ||
	    json_object_set(meta, "inputs", in) ||
	    json_object_set(meta, "outputs", out) ||
	    json_object_set_new(meta, "weights", json_string(z->bin_name)))
		goto oom;
	snprintf(buf, sizeof(buf), "%u", z->version);
	ret = ov_info(z, "ir_version", buf);
	if (!ret && z->net_name[0])
		ret = ov_info(z, "model", z->net_name);
	snprintf(buf, sizeof(buf),
		 "%zu (%llu Const), %zu input%s, %zu output%s", z->nlayers,
		 (unsigned long long)z->consts, json_array_size(in),
		 json_array_size(in) == 1 ? "" : "s", json_array_size(out),
		 json_array_size(out) == 1 ? "" : "s");
	if (!ret)
		ret = ov_info(z, "layers", buf);
	json_decref(types);
	json_decref(in);
	json_decref(out);
	return ret;
oom:
	json_decref(types);
	json_decref(in);
	json_decref(out);
	return tfs_diag_oom(z->d);
}

/* ---- probe and load ----------------------------------------------------- */

static bool ov_xml_name(const struct tfs_source *src)
{
	size_t n;

	if (!src->path)
		return true; /* memory (tests, fuzzing): by content alone */
	n = strlen(src->path);
	return n > 4 && strcasecmp(src->path + n - 4, ".xml") == 0;
}

/*
 * After an optional BOM, whitespace, the XML declaration and comments:
 * "<net" followed by whitespace.
 */
static int ov_probe(const struct tfs_source *src)
{
	const char *p = (const char *)src->data, *end;
	size_t n = src->size < 4096 ? src->size : 4096;
	const char *q;

	if (!p || !ov_xml_name(src))
		return 0;
	end = p + n;
	if (n >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0)
		p += 3;
	for (;;) {
		while (p < end &&
		       (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
			p++;
		if (end - p >= 5 && memcmp(p, "<?xml", 5) == 0) {
			q = memmem(p, (size_t)(end - p), "?>", 2);
			if (!q)
				return 0;
			p = q + 2;
		} else if (end - p >= 4 && memcmp(p, "<!--", 4) == 0) {
			q = memmem(p, (size_t)(end - p), "-->", 3);
			if (!q)
				return 0;
			p = q + 3;
		} else {
			break;
		}
	}
	/* a DOCTYPE before <net: still ours, to say why it is refused */
	if (end - p >= 9 && memcmp(p, "<!DOCTYPE", 9) == 0) {
		q = memmem(p, (size_t)(end - p), "<net", 4);
		return q && q + 4 < end &&
				       (q[4] == ' ' || q[4] == '\t' ||
					q[4] == '\n' || q[4] == '\r' ||
					q[4] == '>')
			       ? 80
			       : 0;
	}
	if (end - p < 5 || memcmp(p, "<net", 4) != 0 ||
	    !(p[4] == ' ' || p[4] == '\t' || p[4] == '\n' || p[4] == '\r'))
		return 0;
	return 95;
}

static int ov_load(const struct tfs_source *src, struct tfs_builder *b,
		   struct tfs_diag *d)
{
	struct ov z = {.src = src, .b = b, .d = d};
	struct tfs_xml_limits lim = {
		.max_depth = OV_MAX_DEPTH,
		.max_attrs = OV_MAX_ATTRS,
		.max_value = OV_MAX_VALUE,
		.max_size = OV_XML_MAX,
	};
	struct tfs_xml_handler h = {
		.start = ov_start, .end = ov_end, .arg = &z};
	json_t *meta = tfs_builder_metadata(b), *consts = NULL, *dec = NULL;
	size_t i;
	int ret;

	tfs_strmap_init(&z.names);
	ret = tfs_xml_parse(src->data, src->size, &lim, &h, d);
	if (!ret && !z.version)
		ret = tfs_diag_at(d, -EBADMSG, 0, "net: no root element");
	if (!ret)
		ret = ov_index(&z);
	if (!ret)
		ret = ov_open_bin(&z);
	consts = json_object();
	dec = json_object();
	if (!ret && (!consts || !dec))
		ret = tfs_diag_oom(d);
	for (i = 0; !ret && i < z.nlayers; i++)
		if (strcmp(z.layers[i].type, "Const") == 0)
			ret = ov_const(&z, &z.layers[i], consts);
	for (i = 0; !ret && i < z.nlayers; i++)
		if (z.layers[i].tensor)
			ret = ov_chain(&z, &z.layers[i], dec);
	if (!ret)
		ret = ov_summary(&z, meta);
	if (!ret && (json_object_set(meta, "consts", consts) ||
		     json_object_set(meta, "decompression", dec)))
		ret = tfs_diag_oom(d);
	if (!ret && z.body_consts &&
	    (json_object_set_new(meta, "body_consts",
				 json_integer((json_int_t)z.body_consts)) ||
	     tfs_builder_warn(b, TFS_NO_OFFSET,
			      "%llu Const layers inside TensorIterator or "
			      "Loop bodies: not read",
			      (unsigned long long)z.body_consts)))
		ret = tfs_diag_oom(d);
	if (!ret && z.unreadable && z.consts)
		ret = tfs_builder_warn(b, TFS_NO_OFFSET, "%s", z.unreadable)
			      ? tfs_diag_oom(d)
			      : 0;
	json_decref(consts);
	json_decref(dec);
	for (i = 0; i < z.nlayers; i++) {
		free(z.layers[i].name);
		free(z.layers[i].type);
		free(z.layers[i].etype);
		free(z.layers[i].shape);
		free(z.layers[i].dest);
		free(z.layers[i].names);
	}
	free(z.layers);
	free(z.edges);
	free(z.by_id);
	free(z.by_to);
	free(z.net_name);
	tfs_strmap_free(&z.names);
	tfs_kept_free(&z.owned);
	return ret;
}

TFS_FORMAT(openvino, "OpenVINO IR v10/v11 (model.xml + model.bin)",
	   .probe = ov_probe, .load = ov_load,
	   .shared_name = "shared constants");
