// SPDX-License-Identifier: MIT
/* Any tree out as safetensors: see include/tensorfs/export.h. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorfs/checked.h"
#include "tensorfs/dtype.h"
#include "tensorfs/export.h"
#include "tensorfs/image.h"
#include "tensorfs/tree.h"
#include "as_view.h"
#include "image_i.h"

/* the window a swapped or transposed tensor is read through */
#define WINDOW (1u << 20)
/* a bounce buffer is assembled in steps of at most this */
#define STEP (4u << 20)
/* the most dimensions a transposed tensor may have */
#define MAX_DIMS 64

const char *tfs_export_dtype_name(int dtype)
{
	switch ((enum tfs_dtype)dtype) {
	case TFS_DTYPE_BOOL: return "BOOL";
	case TFS_DTYPE_UINT8: return "U8";
	case TFS_DTYPE_INT8: return "I8";
	case TFS_DTYPE_INT16: return "I16";
	case TFS_DTYPE_UINT16: return "U16";
	case TFS_DTYPE_FLOAT16: return "F16";
	case TFS_DTYPE_BFLOAT16: return "BF16";
	case TFS_DTYPE_INT32: return "I32";
	case TFS_DTYPE_UINT32: return "U32";
	case TFS_DTYPE_FLOAT32: return "F32";
	case TFS_DTYPE_INT64: return "I64";
	case TFS_DTYPE_UINT64: return "U64";
	case TFS_DTYPE_FLOAT64: return "F64";
	case TFS_DTYPE_COMPLEX64: return "C64";
	case TFS_DTYPE_FLOAT8_E5M2: return "F8_E5M2";
	case TFS_DTYPE_FLOAT8_E4M3: return "F8_E4M3";
	case TFS_DTYPE_FLOAT8_E8M0: return "F8_E8M0";
	case TFS_DTYPE_FLOAT8_E4M3FNUZ: return "F8_E4M3FNUZ";
	case TFS_DTYPE_FLOAT8_E5M2FNUZ: return "F8_E5M2FNUZ";
	case TFS_DTYPE_FLOAT4: return "F4";
	case TFS_DTYPE_FLOAT6_E2M3: return "F6_E2M3";
	case TFS_DTYPE_FLOAT6_E3M2: return "F6_E3M2";
	default: return NULL;
	}
}

/* a growing text */
struct text {
	char *p;
	size_t len, cap;
	int err;
};

static void put(struct text *t, const char *s, size_t n)
{
	size_t cap;
	char *np;

	if (t->err)
		return;
	if (n + 1 > t->cap - t->len) {
		cap = t->cap ? t->cap : 4096;
		while (n + 1 > cap - t->len) {
			if (cap > SIZE_MAX / 2) {
				t->err = -EOVERFLOW;
				return;
			}
			cap *= 2;
		}
		np = realloc(t->p, cap);
		if (!np) {
			t->err = -ENOMEM;
			return;
		}
		t->p = np;
		t->cap = cap;
	}
	memcpy(t->p + t->len, s, n);
	t->len += n;
	t->p[t->len] = '\0';
}

static void puts_(struct text *t, const char *s)
{
	put(t, s, strlen(s));
}

/* @s (valid UTF-8) as a JSON string */
static void put_json(struct text *t, const json_t *s)
{
	char *q = json_dumps(s, JSON_ENCODE_ANY | JSON_COMPACT);

	if (!q) {
		t->err = t->err ? t->err : -ENOMEM;
		return;
	}
	puts_(t, q);
	free(q);
}

static void put_u64(struct text *t, uint64_t v)
{
	char b[24];

	snprintf(b, sizeof(b), "%llu", (unsigned long long)v);
	puts_(t, b);
}

/* a tensor with its export name, while planning */
struct cand {
	uint32_t tensor;
	const char *name;
	size_t name_len;
	json_t *js; /* the name as a JSON string, or NULL */
	const char *why; /* left out: why, or NULL */
	const char *dtype;
	uint64_t size;
	uint32_t how, elem, unit;
};

static int cmp_cand(const void *pa, const void *pb)
{
	const struct cand *a = pa, *b = pb;
	size_t n = a->name_len < b->name_len ? a->name_len : b->name_len;
	int c = memcmp(a->name, b->name, n);

	if (c)
		return c;
	if (a->name_len != b->name_len)
		return a->name_len < b->name_len ? -1 : 1;
	return a->tensor < b->tensor ? -1 : a->tensor > b->tensor;
}

static bool xattr_on(const struct tfs_tree *t, const struct tfs_tensor *x,
		     const char *name, const char *want)
{
	return tfs_tree_xattr_is(t, x->node, name, want) ||
	       (x->group != TFS_NO_NODE &&
		tfs_tree_xattr_is(t, x->group, name, want));
}

/* what the export does with tensor @i (fills @c) */
static void classify(const struct tfs_tree *t, uint32_t i, struct cand *c)
{
	const struct tfs_tensor *x = &t->tensors[i];
	enum tfs_dtype dt = x->view ? x->view : x->dtype_id;
	const struct tfs_dtype_info *di = tfs_dtype_info(dt);
	bool big = !x->view &&
		   xattr_on(t, x, TFS_XATTR_PREFIX "byte_order", "big");
	bool fortran = xattr_on(t, x, TFS_XATTR_PREFIX "order", "F");
	uint64_t n = 1;
	uint32_t k;

	c->tensor = i;
	c->name = x->name;
	c->name_len = x->name_len;
	c->dtype = tfs_export_dtype_name(dt);
	c->size = x->view ? x->view_size : x->size;
	if (x->view)
		c->how |= TFS_EXPORT_VIEW;
	if (x->unreadable) {
		c->why = x->unreadable;
		return;
	}
	if (!c->dtype) {
		c->why = tfs_dtype_info(x->dtype_id)->kind == TFS_KIND_QUANT
				 ? "no safetensors dtype (-o as=float32 "
				   "exports it as F32)"
				 : "no safetensors dtype";
		return;
	}
	for (k = 0; k < x->ndim; k++)
		if (!tfs_mul_u64(n, x->shape[k], &n)) {
			c->why = "shape too large";
			return;
		}
	if (big && di->block_bytes > 1 && !di->packed) {
		c->how |= TFS_EXPORT_SWAP;
		c->unit = di->kind == TFS_KIND_COMPLEX ? di->block_bytes / 2
						       : di->block_bytes;
	} else if (big && di->block_bytes > 1) {
		c->why = "big-endian packed elements";
		return;
	}
	if (fortran && x->ndim > 1 && n > 1) {
		if (di->block_elems != 1 || x->ndim > MAX_DIMS) {
			c->why = di->block_elems != 1
					 ? "column-major packed elements"
					 : "column-major, too many dimensions";
			return;
		}
		c->how |= TFS_EXPORT_TRANSPOSE;
		c->elem = di->block_bytes;
	}
}

/* "key":"value" of the __metadata__ object (both valid UTF-8) */
static void put_pair(struct text *h, bool first, const char *k,
		     const char *v)
{
	json_t *jk = json_string(k), *jv = json_string(v);

	if (!jk || !jv) {
		h->err = h->err ? h->err : -EINVAL;
	} else {
		if (!first)
			puts_(h, ",");
		put_json(h, jk);
		puts_(h, ":");
		put_json(h, jv);
	}
	json_decref(jk);
	json_decref(jv);
}

/* the __metadata__ object: the source's provenance, what was left out */
static void put_metadata(struct text *h, const struct tfs_tree *t,
			 const struct tfs_export_options *o,
			 const char *left, bool view)
{
	json_t *sm = o->source_meta ? json_loads(o->source_meta, 0, NULL)
				    : NULL;
	const char *k;
	json_t *v;

	puts_(h, "{\"__metadata__\":{");
	put_pair(h, true, "format", "pt");
	if (json_is_object(sm) && json_object_get(sm, "tensorfs.format")) {
		/* an export of an export: the original's provenance */
		json_object_foreach(sm, k, v)
			if (!strncmp(k, "tensorfs.", 9) && json_is_string(v))
				put_pair(h, false, k, json_string_value(v));
		json_decref(sm);
		return;
	}
	json_decref(sm);
	put_pair(h, false, "tensorfs.format", t->format ? t->format : "");
	if (o->source)
		put_pair(h, false, "tensorfs.source", o->source);
	if (view)
		put_pair(h, false, "tensorfs.as", "float32");
	if (left)
		put_pair(h, false, "tensorfs.left_out", left);
}

/* the header of file @f: its tensors are c[0, n) */
static int make_head(struct tfs_export_file *f, const struct tfs_tree *t,
		     const struct tfs_export_options *o, const char *left,
		     bool view, struct cand *c, uint32_t n,
		     struct tfs_export_item *items)
{
	struct text h = {0};
	uint64_t at = 0, len, size;
	uint32_t i, k;
	int ret;

	put(&h, "\0\0\0\0\0\0\0\0", 8);
	put_metadata(&h, t, o, left, view);
	puts_(&h, "}");
	for (i = 0; i < n; i++) {
		const struct tfs_tensor *x = &t->tensors[c[i].tensor];

		puts_(&h, ",");
		put_json(&h, c[i].js);
		puts_(&h, ":{\"dtype\":\"");
		puts_(&h, c[i].dtype);
		puts_(&h, "\",\"shape\":[");
		for (k = 0; k < x->ndim; k++) {
			if (k)
				puts_(&h, ",");
			put_u64(&h, x->shape[k]);
		}
		puts_(&h, "],\"data_offsets\":[");
		put_u64(&h, at);
		puts_(&h, ",");
		items[i] = (struct tfs_export_item){
			.begin = at,
			.size = c[i].size,
			.tensor = c[i].tensor,
			.how = c[i].how,
			.elem = c[i].elem,
			.unit = c[i].unit,
		};
		if (!tfs_add_u64(at, c[i].size, &at))
			h.err = -EOVERFLOW;
		put_u64(&h, at);
		puts_(&h, "]}");
	}
	puts_(&h, "}");
	/* spaces to a multiple of 8, as the reference writer pads */
	while (!h.err && h.len % 8)
		puts_(&h, " ");
	ret = h.err;
	if (ret)
		goto out;
	len = h.len - 8;
	for (k = 0; k < 8; k++)
		h.p[k] = (char)(len >> (8 * k));
	if (!tfs_add_u64(h.len, at, &size)) {
		ret = -EOVERFLOW;
		goto out;
	}
	f->head = h.p;
	f->head_len = h.len;
	f->size = size;
	h.p = NULL;
out:
	free(h.p);
	return ret;
}

/* tensorfs.left_out: {"name": "why", ...} as text, or NULL for none */
static int left_text(struct cand *c, uint32_t n, char **out)
{
	json_t *o = json_object();
	uint32_t i;
	int ret = o ? 0 : -ENOMEM;

	*out = NULL;
	for (i = 0; !ret && i < n; i++) {
		json_t *why;
		char *key;

		if (!c[i].why)
			continue;
		key = c[i].js ? (char *)json_string_value(c[i].js) : NULL;
		why = json_string(c[i].why);
		if (!why)
			why = json_string("unprintable reason");
		if (!key) {
			/* not UTF-8: its escaped form */
			char *e = malloc(c[i].name_len * 4 + 1);
			size_t k, m = 0;

			if (!e) {
				json_decref(why);
				ret = -ENOMEM;
				break;
			}
			for (k = 0; k < c[i].name_len; k++) {
				unsigned char ch = (unsigned char)c[i].name[k];

				if (ch >= 0x20 && ch < 0x7f && ch != '%')
					e[m++] = (char)ch;
				else
					m += (size_t)sprintf(e + m, "%%%02X",
							     ch);
			}
			e[m] = '\0';
			ret = json_object_set_new(o, e, why) ? -ENOMEM : 0;
			free(e);
			continue;
		}
		ret = json_object_set_new(o, key, why) ? -ENOMEM : 0;
	}
	if (!ret && json_object_size(o)) {
		*out = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
		if (!*out)
			ret = -ENOMEM;
	}
	json_decref(o);
	return ret;
}

static int shard_name(char **out, uint32_t k, uint32_t n)
{
	if (n == 1)
		*out = strdup("model.safetensors");
	else if (asprintf(out, "model-%05u-of-%05u.safetensors", k + 1, n) < 0)
		*out = NULL;
	return *out ? 0 : -ENOMEM;
}

/* model.safetensors.index.json as transformers writes it */
static int make_index(struct tfs_export *e, const struct cand *c,
		      uint32_t nc, uint64_t total)
{
	json_t *root = json_object(), *meta = json_object(),
	       *map = json_object();
	uint32_t f, i;
	int ret = -ENOMEM;

	if (!root || !meta || !map)
		goto out;
	if (json_object_set_new(meta, "total_size",
				json_integer((json_int_t)total)))
		goto out;
	for (f = 0; f < e->nfiles; f++)
		for (i = 0; i < e->files[f].n; i++) {
			const struct tfs_export_item *it =
				&e->items[e->files[f].first + i];
			uint32_t k;

			/* the candidate of this item: its name */
			for (k = 0; k < nc; k++)
				if (c[k].tensor == it->tensor && !c[k].why)
					break;
			if (k == nc ||
			    json_object_set_new(map,
						json_string_value(c[k].js),
						json_string(e->files[f].name)))
				goto out;
		}
	if (json_object_set(root, "metadata", meta) ||
	    json_object_set(root, "weight_map", map))
		goto out;
	e->index = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS |
					    JSON_ENSURE_ASCII);
	if (!e->index)
		goto out;
	/* json.dumps(index, indent=2, sort_keys=True) + "\n" */
	e->index_len = strlen(e->index);
	{
		char *p = realloc(e->index, e->index_len + 2);

		if (!p)
			goto out;
		e->index = p;
		e->index[e->index_len++] = '\n';
		e->index[e->index_len] = '\0';
	}
	ret = 0;
out:
	json_decref(root);
	json_decref(meta);
	json_decref(map);
	return ret;
}

int tfs_export_plan(struct tfs_export **out, const struct tfs_tree *t,
		    const struct tfs_export_options *o)
{
	uint64_t shard = o && o->shard_size ? o->shard_size
					    : TFS_EXPORT_SHARD_DEFAULT;
	struct tfs_export_options none = {0};
	struct tfs_export *e = calloc(1, sizeof(*e));
	struct cand *c = NULL, *in = NULL;
	uint32_t i, n = 0, nin = 0, f, start;
	uint64_t cur = 0, total = 0;
	bool view = false;
	char *left = NULL;
	int ret = -ENOMEM;

	if (!o)
		o = &none;
	*out = NULL;
	if (!e)
		return -ENOMEM;
	c = calloc(t->ntensors ? t->ntensors : 1, sizeof(*c));
	in = calloc(t->ntensors ? t->ntensors : 1, sizeof(*in));
	if (!c || !in)
		goto out;
	for (i = 0; i < t->ntensors; i++) {
		classify(t, i, &c[i]);
		c[i].js = json_stringn(c[i].name, c[i].name_len);
		if (!c[i].js && !c[i].why)
			c[i].why = "name not UTF-8";
		if (c[i].name_len == 12 &&
		    !memcmp(c[i].name, "__metadata__", 12))
			c[i].why = "name reserved by safetensors";
	}
	n = t->ntensors;
	qsort(c, n, sizeof(*c), cmp_cand);
	for (i = 1; i < n; i++)
		if (!c[i].why && c[i].name_len == c[i - 1].name_len &&
		    !memcmp(c[i].name, c[i - 1].name, c[i].name_len))
			c[i].why = "name given twice (the first is exported)";
	for (i = 0; i < n; i++) {
		if (c[i].why) {
			e->nleft++;
			continue;
		}
		if (c[i].how & TFS_EXPORT_VIEW)
			view = true;
		in[nin++] = c[i];
		if (!tfs_add_u64(total, c[i].size, &total)) {
			ret = -EOVERFLOW;
			goto out;
		}
	}
	ret = left_text(c, n, &left);
	if (ret)
		goto out;
	ret = -ENOMEM;
	/* the shards: huggingface_hub's greedy split, in name order */
	e->files = calloc(nin ? nin : 1, sizeof(*e->files));
	e->items = calloc(nin ? nin : 1, sizeof(*e->items));
	if (!e->files || !e->items)
		goto out;
	e->nfiles = 1;
	for (i = 0; i < nin; i++) {
		if (e->files[e->nfiles - 1].n && cur + in[i].size > shard) {
			e->files[e->nfiles].first = i;
			e->nfiles++;
			cur = 0;
		}
		e->files[e->nfiles - 1].n++;
		cur += in[i].size; /* below total: no overflow */
	}
	e->nitems = nin;
	for (f = 0; f < e->nfiles; f++) {
		start = e->files[f].first;
		ret = shard_name(&e->files[f].name, f, e->nfiles);
		if (!ret)
			ret = make_head(&e->files[f], t, o, left, view,
					in + start, e->files[f].n,
					e->items + start);
		if (ret)
			goto out;
	}
	if (e->nfiles > 1) {
		ret = make_index(e, in, nin, total);
		if (ret)
			goto out;
	}
	ret = 0;
out:
	for (i = 0; c && i < n; i++)
		json_decref(c[i].js);
	free(c);
	free(in);
	free(left);
	if (ret) {
		tfs_export_free(e);
		return ret;
	}
	*out = e;
	return 0;
}

void tfs_export_free(struct tfs_export *e)
{
	uint32_t i;

	if (!e)
		return;
	for (i = 0; e->files && i < e->nfiles; i++) {
		free(e->files[i].name);
		free(e->files[i].head);
	}
	free(e->files);
	free(e->items);
	free(e->index);
	free(e);
}

/* ---- reading ----------------------------------------------------------- */

/* the tensor's bytes as exported before any reordering: stored or view */
static int src_read(struct tfs_image *img, const struct tfs_export_item *it,
		    uint64_t off, size_t len, struct tfs_view *v)
{
	memset(v, 0, sizeof(*v));
	if (off >= it->size)
		return 0;
	if (len > it->size - off)
		len = (size_t)(it->size - off);
	if (it->how & TFS_EXPORT_VIEW)
		return tfs_as_view_read(img, it->tensor, off, len, v);
	return tfs_image_read_tensor(img, it->tensor, off, len, v);
}

/* copy [off, off + len) of the source bytes to @dst */
static int src_copy(struct tfs_image *img, const struct tfs_export_item *it,
		    uint64_t off, size_t len, uint8_t *dst)
{
	struct tfs_view v;
	int ret;

	while (len) {
		ret = src_read(img, it, off, len < STEP ? len : STEP, &v);
		if (!ret && !v.len)
			ret = -EIO;
		if (ret) {
			tfs_view_release(img, &v);
			return ret;
		}
		memcpy(dst, v.data, v.len);
		dst += v.len;
		off += v.len;
		len -= v.len;
		tfs_view_release(img, &v);
	}
	return 0;
}

/* a window of the source bytes of one item */
struct window {
	struct tfs_view v;
	uint64_t at; /* v covers [at, at + v.len) */
	bool held;
};

/* the @n bytes at source offset @off (inside one element) */
static int window_get(struct tfs_image *img, const struct tfs_export_item *it,
		      struct window *w, uint64_t off, uint32_t n,
		      const uint8_t **p)
{
	uint64_t from;
	int ret;

	if (w->held && off >= w->at && off - w->at + n <= w->v.len) {
		*p = (const uint8_t *)w->v.data + (off - w->at);
		return 0;
	}
	if (w->held)
		tfs_view_release(img, &w->v);
	w->held = false;
	from = off / n * n;
	ret = src_read(img, it, from, WINDOW / n * n, &w->v);
	if (ret)
		return ret;
	w->held = true;
	w->at = from;
	if (off - from + n > w->v.len)
		return -EIO;
	*p = (const uint8_t *)w->v.data + (off - from);
	return 0;
}

/*
 * bytes [off, off + len) of a swapped and/or transposed item into @dst:
 * element by element through a window of the source
 */
static int mapped_copy(struct tfs_image *img, const struct tfs_tree *t,
		       const struct tfs_export_item *it, uint64_t off,
		       size_t len, uint8_t *dst)
{
	const struct tfs_tensor *x = &t->tensors[it->tensor];
	uint32_t es = it->how & TFS_EXPORT_TRANSPOSE ? it->elem : it->unit;
	uint64_t idx[MAX_DIMS], stride[MAX_DIMS];
	struct window w = {0};
	uint64_t e, src, rem, at = 0;
	uint8_t tmp[64];
	const uint8_t *p;
	uint32_t k, b, nd = x->ndim;
	int ret = 0;

	if (es == 0 || es > sizeof(tmp))
		return -EIO;
	if (!(it->how & TFS_EXPORT_TRANSPOSE))
		nd = 0;
	if (nd > MAX_DIMS)
		return -EIO;
	/* column-major strides, in elements */
	for (k = 0; k < nd; k++)
		stride[k] = k ? stride[k - 1] * x->shape[k - 1] : 1;
	e = off / es;
	rem = e;
	src = 0;
	for (k = nd; k-- > 0;) {
		idx[k] = rem % x->shape[k];
		rem /= x->shape[k];
		src += idx[k] * stride[k];
	}
	if (!nd)
		src = e;
	while (at < len) {
		uint64_t eoff = e * es;

		ret = window_get(img, it, &w, src * es, es, &p);
		if (ret)
			break;
		memcpy(tmp, p, es);
		if (it->how & TFS_EXPORT_SWAP)
			for (b = 0; b < es; b += it->unit)
				for (k = 0; k < it->unit / 2; k++) {
					uint8_t s = tmp[b + k];

					tmp[b + k] = tmp[b + it->unit - 1 - k];
					tmp[b + it->unit - 1 - k] = s;
				}
		for (b = 0; b < es && at < len; b++)
			if (eoff + b >= off + at) {
				dst[at] = tmp[b];
				at++;
			}
		e++;
		/* the next element in row-major order */
		if (!nd) {
			src = e;
			continue;
		}
		for (k = nd; k-- > 0;) {
			idx[k]++;
			src += stride[k];
			if (idx[k] < x->shape[k])
				break;
			src -= idx[k] * stride[k];
			idx[k] = 0;
		}
	}
	if (w.held)
		tfs_view_release(img, &w.v);
	return ret;
}

/* the item holding byte @off of file @f's buffer */
static uint32_t item_at(const struct tfs_export *e,
			const struct tfs_export_file *f, uint64_t off)
{
	uint32_t lo = f->first, hi = f->first + f->n;

	/* the last item whose begin <= off and that is not empty */
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (e->items[mid].begin <= off)
			lo = mid;
		else
			hi = mid;
	}
	while (lo + 1 < f->first + f->n && e->items[lo].size == 0)
		lo++;
	return lo;
}

int tfs_export_read(struct tfs_image *img, const struct tfs_export *e,
		    uint32_t file, uint64_t off, size_t len,
		    struct tfs_view *v)
{
	const struct tfs_export_file *f;
	const struct tfs_export_item *it;
	uint8_t *buf = NULL;
	uint64_t d, in;
	size_t at = 0, n;
	uint32_t i;
	int ret = 0;

	memset(v, 0, sizeof(*v));
	if (file >= e->nfiles)
		return -ENOENT;
	f = &e->files[file];
	if (off >= f->size)
		return 0;
	if (len > f->size - off)
		len = (size_t)(f->size - off);
	if (off + len <= f->head_len) {
		v->data = f->head + off;
		v->len = len;
		return 0;
	}
	if (off >= f->head_len) {
		d = off - f->head_len;
		i = item_at(e, f, d);
		it = &e->items[i];
		if (!(it->how & ~TFS_EXPORT_VIEW) && d >= it->begin &&
		    d - it->begin + len <= it->size) {
			/* inside one plain tensor: its own view */
			ret = src_read(img, it, d - it->begin, len, v);
			if (!ret && v->len != len) {
				tfs_view_release(img, v);
				ret = -EIO;
			}
			return ret;
		}
	}
	buf = malloc(len ? len : 1);
	if (!buf)
		return -ENOMEM;
	if (off < f->head_len) {
		at = (size_t)(f->head_len - off);
		memcpy(buf, f->head + off, at);
	}
	while (at < len) {
		d = off + at - f->head_len;
		i = item_at(e, f, d);
		it = &e->items[i];
		in = d - it->begin;
		if (d < it->begin || in >= it->size) {
			ret = -EIO;
			break;
		}
		n = it->size - in < len - at ? (size_t)(it->size - in)
					     : len - at;
		if (it->how & (TFS_EXPORT_SWAP | TFS_EXPORT_TRANSPOSE))
			ret = mapped_copy(img, img->tree, it, in, n, buf + at);
		else
			ret = src_copy(img, it, in, n, buf + at);
		if (ret)
			break;
		at += n;
	}
	if (ret) {
		free(buf);
		return ret;
	}
	v->data = buf;
	v->len = len;
	v->pin = buf;
	v->pin_kind = PIN_BOUNCE;
	return 0;
}
