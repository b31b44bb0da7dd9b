// SPDX-License-Identifier: MIT
/* Any tree out as safetensors: see src/views/export.h. */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/checked.h"
#include "core/dtype.h"
#include "views/export.h"
#include "core/fd_write.h"
#include "core/image.h"
#include "core/names.h"
#include "core/tree.h"
#include "core/image_i.h"
#include "core/strbuf.h"

/* the window a swapped or transposed tensor is read through */
#define WINDOW (1u << 20)
/* a bounce buffer is assembled in steps of at most this */
#define STEP (4u << 20)
/* the most dimensions a transposed tensor may have */
#define MAX_DIMS 64

const char *tfs_export_dtype_name(int dtype)
{
	switch ((enum tfs_dtype)dtype) {
	case TFS_DTYPE_BOOL:
		return "BOOL";
	case TFS_DTYPE_UINT8:
		return "U8";
	case TFS_DTYPE_INT8:
		return "I8";
	case TFS_DTYPE_INT16:
		return "I16";
	case TFS_DTYPE_UINT16:
		return "U16";
	case TFS_DTYPE_FLOAT16:
		return "F16";
	case TFS_DTYPE_BFLOAT16:
		return "BF16";
	case TFS_DTYPE_INT32:
		return "I32";
	case TFS_DTYPE_UINT32:
		return "U32";
	case TFS_DTYPE_FLOAT32:
		return "F32";
	case TFS_DTYPE_INT64:
		return "I64";
	case TFS_DTYPE_UINT64:
		return "U64";
	case TFS_DTYPE_FLOAT64:
		return "F64";
	case TFS_DTYPE_COMPLEX64:
		return "C64";
	case TFS_DTYPE_FLOAT8_E5M2:
		return "F8_E5M2";
	case TFS_DTYPE_FLOAT8_E4M3:
		return "F8_E4M3";
	case TFS_DTYPE_FLOAT8_E8M0:
		return "F8_E8M0";
	case TFS_DTYPE_FLOAT8_E4M3FNUZ:
		return "F8_E4M3FNUZ";
	case TFS_DTYPE_FLOAT8_E5M2FNUZ:
		return "F8_E5M2FNUZ";
	case TFS_DTYPE_FLOAT4:
		return "F4";
	case TFS_DTYPE_FLOAT6_E2M3:
		return "F6_E2M3";
	case TFS_DTYPE_FLOAT6_E3M2:
		return "F6_E3M2";
	default:
		return NULL;
	}
}

/*
 * What the headers and the index are made from when first read: the
 * __metadata__ object, the names made here (a component's path joined with
 * '.', a repeated name's path), and the lock that makes them once.
 */
struct tfs_export_lazy {
	pthread_mutex_t lock;
	atomic_bool heads_made;
	json_t *meta;
	char **owned;
	uint32_t nowned;
	uint64_t total; /* the tensors' bytes: the index's total_size */
};

/* a safetensors name must be valid UTF-8 */
static bool is_utf8(const char *s, size_t n)
{
	return tfs_utf8_valid((const unsigned char *)s, n);
}

static void put_u64(struct tfs_strbuf *t, uint64_t v)
{
	char b[24];

	snprintf(b, sizeof(b), "%llu", (unsigned long long)v);
	tfs_strbuf_puts(t, b);
}

/* a tensor with its export name, while planning */
struct cand {
	uint32_t tensor;
	const char *name;
	size_t name_len;
	bool utf8;	 /* the name is valid UTF-8 */
	char *own;	 /* the name when it is the path joined with '.' */
	const char *why; /* left out: why, or NULL */
	const char *dtype;
	uint64_t size;
	uint32_t how, elem, unit;
};

static int cmp_cand(const void *pa, const void *pb)
{
	const struct cand *a = pa, *b = pb;
	int c = tfs_name_cmp(a->name, a->name_len, b->name, b->name_len);

	if (c)
		return c;
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

/* the __metadata__ object: the source's provenance, what was left out */
static json_t *metadata(const struct tfs_tree *t,
			const struct tfs_export_options *o, const char *left,
			bool view)
{
	json_t *sm =
		o->source_meta ? json_loads(o->source_meta, 0, NULL) : NULL;
	json_t *m = json_object(), *v;
	const char *k;
	int bad = !m;

	bad |= json_object_set_new(m, "format", json_string("pt"));
	if (json_is_object(sm) && json_object_get(sm, "tensorfs.format")) {
		/* an export of an export: the original's provenance */
		json_object_foreach(sm, k, v)
		{
			if (!strncmp(k, "tensorfs.", 9) && json_is_string(v))
				bad |= json_object_set(m, k, v);
		}
		json_decref(sm);
		goto out;
	}
	json_decref(sm);
	bad |= json_object_set_new(m, "tensorfs.format",
				   json_string(t->format ? t->format : ""));
	if (o->source)
		bad |= json_object_set_new(m, "tensorfs.source",
					   json_string(o->source));
	if (view)
		bad |= json_object_set_new(m, "tensorfs.as",
					   json_string("float32"));
	if (left)
		bad |= json_object_set_new(m, "tensorfs.left_out",
					   json_string(left));
out:
	if (bad) {
		json_decref(m);
		return NULL;
	}
	return m;
}

/*
 * The header of v[0, @n) after @meta into @h (which may only count): 0,
 * -EINVAL, -EOVERFLOW; *@data_len the data bytes.  @h's 8 bytes of length
 * are left zero.
 */
static int header_text(struct tfs_strbuf *h, const struct tfs_export_entry *v,
		       uint32_t n, const json_t *meta, uint64_t *data_len)
{
	uint64_t at = 0;
	const char *k;
	json_t *x;
	uint32_t i, d;
	bool first = true;
	int err = 0;

	tfs_strbuf_put(h, "\0\0\0\0\0\0\0\0", 8);
	tfs_strbuf_puts(h, "{\"__metadata__\":{");
	json_object_foreach((json_t *)meta, k, x)
	{
		if (!json_is_string(x)) {
			err = -EINVAL;
			break;
		}
		if (!first)
			tfs_strbuf_puts(h, ",");
		first = false;
		/* jansson's keys and strings are valid UTF-8 */
		tfs_strbuf_put_json_str(h, k, strlen(k));
		tfs_strbuf_puts(h, ":");
		tfs_strbuf_put_json_str(h, json_string_value(x),
					json_string_length(x));
	}
	tfs_strbuf_puts(h, "}");
	for (i = 0; !err && i < n; i++) {
		if (!is_utf8(v[i].name, v[i].name_len)) {
			err = -EINVAL;
			break;
		}
		tfs_strbuf_puts(h, ",");
		tfs_strbuf_put_json_str(h, v[i].name, v[i].name_len);
		tfs_strbuf_puts(h, ":{\"dtype\":\"");
		tfs_strbuf_puts(h, v[i].dtype);
		tfs_strbuf_puts(h, "\",\"shape\":[");
		for (d = 0; d < v[i].ndim; d++) {
			if (d)
				tfs_strbuf_puts(h, ",");
			put_u64(h, v[i].shape[d]);
		}
		tfs_strbuf_puts(h, "],\"data_offsets\":[");
		put_u64(h, at);
		tfs_strbuf_puts(h, ",");
		if (!tfs_add_u64(at, v[i].size, &at))
			err = -EOVERFLOW;
		put_u64(h, at);
		tfs_strbuf_puts(h, "]}");
	}
	tfs_strbuf_puts(h, "}");
	/* spaces to a multiple of 8, as the reference writer pads */
	while (!err && !h->failed && h->len % 8)
		tfs_strbuf_puts(h, " ");
	*data_len = at;
	return err ? err : h->failed ? -ENOMEM : 0;
}

int tfs_export_header(const struct tfs_export_entry *v, uint32_t n,
		      const void *meta, char **head, uint64_t *head_len,
		      uint64_t *data_len)
{
	struct tfs_strbuf h = {0};
	uint64_t len;
	int ret = header_text(&h, v, n, meta, data_len), d;

	if (ret) {
		free(h.p);
		return ret;
	}
	len = h.len - 8;
	for (d = 0; d < 8; d++)
		h.p[d] = (char)(len >> (8 * d));
	*head = h.p;
	*head_len = h.len;
	return 0;
}

/* the header entries of @n items (their tensors' dtypes and shapes) */
static struct tfs_export_entry *
entries(const struct tfs_tree *t, const struct tfs_export_item *it, uint32_t n)
{
	struct tfs_export_entry *v = calloc(n ? n : 1, sizeof(*v));
	uint32_t i;

	for (i = 0; v && i < n; i++) {
		const struct tfs_tensor *x = &t->tensors[it[i].tensor];

		v[i] = (struct tfs_export_entry){
			.name = it[i].name,
			.name_len = it[i].name_len,
			.dtype = tfs_export_dtype_name(x->view ? x->view
							       : x->dtype_id),
			.shape = x->shape,
			.ndim = x->ndim,
			.size = it[i].size,
		};
	}
	return v;
}

/*
 * File @f's items from its candidates c[0, n) and its size: the header
 * only counted here, made when first read (make_heads)
 */
static int plan_file(struct tfs_export_file *f, const struct tfs_tree *t,
		     const json_t *meta, const struct cand *c, uint32_t n,
		     struct tfs_export_item *items)
{
	struct tfs_strbuf h = {.count = 1};
	struct tfs_export_entry *v;
	uint64_t at = 0, data;
	uint32_t i;
	int ret;

	for (i = 0; i < n; i++) {
		items[i] = (struct tfs_export_item){
			.name = c[i].name,
			.name_len = c[i].name_len,
			.begin = at,
			.size = c[i].size,
			.tensor = c[i].tensor,
			.how = c[i].how,
			.elem = c[i].elem,
			.unit = c[i].unit,
		};
		at += c[i].size; /* the header's sum is checked */
	}
	v = entries(t, items, n);
	if (!v)
		return -ENOMEM;
	ret = header_text(&h, v, n, meta, &data);
	free(v);
	f->head_len = h.len;
	if (!ret && !tfs_add_u64(f->head_len, data, &f->size))
		ret = -EOVERFLOW;
	return ret;
}

/* every file's header, once (the plan counted their lengths) */
static int make_heads(const struct tfs_tree *t, const struct tfs_export *ce)
{
	struct tfs_export *e = (struct tfs_export *)ce;
	struct tfs_export_lazy *lz = e->lazy;
	struct tfs_export_entry *v;
	uint64_t data, len;
	uint32_t f;
	int ret = 0;

	if (atomic_load_explicit(&lz->heads_made, memory_order_acquire))
		return 0;
	pthread_mutex_lock(&lz->lock);
	for (f = 0; !ret && f < e->nfiles; f++) {
		struct tfs_export_file *ef = &e->files[f];

		if (ef->head)
			continue;
		v = entries(t, e->items + ef->first, ef->n);
		ret = v ? tfs_export_header(v, ef->n, lz->meta, &ef->head, &len,
					    &data)
			: -ENOMEM;
		free(v);
		/* the same tree, options and code: the length planned */
		if (!ret && len != ef->head_len) {
			free(ef->head);
			ef->head = NULL;
			ret = -EIO;
		}
	}
	if (!ret)
		atomic_store_explicit(&lz->heads_made, true,
				      memory_order_release);
	pthread_mutex_unlock(&lz->lock);
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
		json_t *why, *js;
		const char *key;

		if (!c[i].why)
			continue;
		js = c[i].utf8 ? json_stringn(c[i].name, c[i].name_len) : NULL;
		key = js ? json_string_value(js) : NULL;
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
		json_decref(js);
	}
	if (!ret && json_object_size(o)) {
		*out = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
		if (!*out)
			ret = -ENOMEM;
	}
	json_decref(o);
	return ret;
}

/* left_out.json: [{"name", "path", "why"}...] in name order, or NULL */
static int left_file(const struct tfs_tree *t, struct cand *c, uint32_t n,
		     struct tfs_export *e)
{
	json_t *a = json_array(), *o;
	uint32_t i;
	int ret = a ? 0 : -ENOMEM;

	for (i = 0; !ret && i < n; i++) {
		if (!c[i].why)
			continue;
		o = json_object();
		if (!o || json_array_append_new(a, o) ||
		    json_object_set_new(
			    o, "name",
			    c[i].utf8 ? json_stringn(c[i].name, c[i].name_len)
				      : json_string("(not UTF-8)")) ||
		    json_object_set_new(
			    o, "path",
			    json_string(t->tensors[c[i].tensor].path)) ||
		    json_object_set_new(o, "why", json_string(c[i].why)))
			ret = -ENOMEM;
	}
	if (!ret && json_array_size(a)) {
		char *text = json_dumps(a, JSON_INDENT(2));

		if (!text || asprintf(&e->left, "%s\n", text) < 0) {
			e->left = NULL;
			ret = -ENOMEM;
		}
		free(text);
		if (!ret)
			e->left_len = strlen(e->left);
	}
	json_decref(a);
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

int tfs_export_index(const struct tfs_export *e, char **text, size_t *len)
{
	json_t *root = json_object(), *meta = json_object(),
	       *map = json_object();
	uint32_t f, i;
	char *p = NULL, *np;
	int ret = -ENOMEM;

	*text = NULL;
	*len = 0;
	if (e->nfiles < 2) {
		ret = -EINVAL;
		goto out;
	}
	if (!root || !meta || !map ||
	    json_object_set_new(meta, "total_size",
				json_integer((json_int_t)e->lazy->total)))
		goto out;
	/* each item's file: the items are in file order */
	for (f = 0; f < e->nfiles; f++)
		for (i = 0; i < e->files[f].n; i++) {
			const struct tfs_export_item *it =
				&e->items[e->files[f].first + i];

			if (json_object_setn_new(map, it->name, it->name_len,
						 json_string(e->files[f].name)))
				goto out;
		}
	if (json_object_set(root, "metadata", meta) ||
	    json_object_set(root, "weight_map", map))
		goto out;
	p = json_dumps(root,
		       JSON_INDENT(2) | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
	if (!p)
		goto out;
	/* json.dumps(index, indent=2, sort_keys=True) + "\n" */
	*len = strlen(p);
	np = realloc(p, *len + 2);
	if (!np)
		goto out;
	p = np;
	p[(*len)++] = '\n';
	p[*len] = '\0';
	*text = p;
	p = NULL;
	ret = 0;
out:
	free(p);
	json_decref(root);
	json_decref(meta);
	json_decref(map);
	return ret;
}

/* a mount path joined with '.' (malloc'd), or NULL */
static char *dotted(const char *path)
{
	char *s = strdup(path);
	size_t k;

	for (k = 0; s && s[k]; k++)
		if (s[k] == '/')
			s[k] = '.';
	return s;
}

static bool same_name(const struct cand *a, const struct cand *b)
{
	return a->name_len == b->name_len &&
	       !memcmp(a->name, b->name, a->name_len);
}

/* the candidates c[0, n) (sorted) whose names collide: named by path */
static int rename_dups(const struct tfs_tree *t, struct cand *c, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		const struct tfs_tensor *x = &t->tensors[c[i].tensor];

		if (!((i > 0 && same_name(&c[i - 1], &c[i])) ||
		      (i + 1 < n && same_name(&c[i], &c[i + 1]))))
			continue;
		if (c[i].own)
			continue;
		c[i].own = dotted(x->path);
		if (!c[i].own)
			return -ENOMEM;
		/* the name stays for the comparisons until all are made */
	}
	for (i = 0; i < n; i++) {
		if (!c[i].own)
			continue;
		c[i].name = c[i].own;
		c[i].name_len = strlen(c[i].own);
		c[i].utf8 = is_utf8(c[i].name, c[i].name_len);
		if (!c[i].utf8 && !c[i].why)
			c[i].why = "name not UTF-8";
	}
	return 0;
}

int tfs_export_plan(struct tfs_export **out, const struct tfs_tree *t,
		    const struct tfs_export_options *o)
{
	uint64_t shard =
		o && o->shard_size ? o->shard_size : TFS_EXPORT_SHARD_DEFAULT;
	struct tfs_export_options none = {0};
	struct tfs_export *e = calloc(1, sizeof(*e));
	struct tfs_export_lazy *lz = calloc(1, sizeof(*lz));
	struct cand *c = NULL, *in = NULL;
	uint32_t i, n = 0, nin = 0, f, start;
	uint64_t cur = 0, total = 0;
	json_t *meta = NULL;
	bool view = false;
	char *left = NULL;
	int ret = -ENOMEM;

	if (!o)
		o = &none;
	*out = NULL;
	if (!e || !lz) {
		free(e);
		free(lz);
		return -ENOMEM;
	}
	pthread_mutex_init(&lz->lock, NULL);
	atomic_init(&lz->heads_made, false);
	e->lazy = lz;
	c = calloc(t->ntensors ? t->ntensors : 1, sizeof(*c));
	in = calloc(t->ntensors ? t->ntensors : 1, sizeof(*in));
	if (!c || !in)
		goto out;
	for (i = 0; i < t->ntensors; i++) {
		classify(t, i, &c[i]);
		/* a component of a group: its path joined with '.' */
		if (t->tensors[i].role) {
			c[i].own = dotted(t->tensors[i].path);
			if (!c[i].own)
				goto out;
			c[i].name = c[i].own;
			c[i].name_len = strlen(c[i].own);
		}
		c[i].utf8 = is_utf8(c[i].name, c[i].name_len);
		if (!c[i].utf8 && !c[i].why)
			c[i].why = "name not UTF-8";
		if (c[i].name_len == 12 &&
		    !memcmp(c[i].name, "__metadata__", 12))
			c[i].why = "name reserved by safetensors";
	}
	n = t->ntensors;
	qsort(c, n, sizeof(*c), cmp_cand);
	/*
	 * a name given in several containers of one mount: those tensors
	 * are named by their path in the mount, joined with '.'
	 */
	if (rename_dups(t, c, n))
		goto out;
	qsort(c, n, sizeof(*c), cmp_cand);
	for (i = 1; i < n; i++)
		if (!c[i].why && c[i].name_len == c[i - 1].name_len &&
		    !memcmp(c[i].name, c[i - 1].name, c[i].name_len))
			c[i].why =
				"name given twice, its path too (the first is exported)";
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
	if (!ret)
		ret = left_file(t, c, n, e);
	if (ret)
		goto out;
	ret = -ENOMEM;
	meta = metadata(t, o, left, view);
	if (!meta)
		goto out;
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
			ret = plan_file(&e->files[f], t, meta, in + start,
					e->files[f].n, e->items + start);
		if (ret)
			goto out;
	}
	/* the items' names made here stay with the export */
	ret = -ENOMEM;
	lz->owned = calloc(nin ? nin : 1, sizeof(*lz->owned));
	if (!lz->owned)
		goto out;
	for (i = 0; i < n; i++)
		if (c[i].own && !c[i].why) {
			lz->owned[lz->nowned++] = c[i].own;
			c[i].own = NULL;
		}
	lz->meta = meta;
	meta = NULL;
	lz->total = total;
	ret = 0;
out:
	for (i = 0; c && i < n; i++)
		free(c[i].own);
	free(c);
	free(in);
	free(left);
	json_decref(meta);
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
	free(e->left);
	if (e->lazy) {
		for (i = 0; i < e->lazy->nowned; i++)
			free(e->lazy->owned[i]);
		free(e->lazy->owned);
		json_decref(e->lazy->meta);
		pthread_mutex_destroy(&e->lazy->lock);
		free(e->lazy);
	}
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
		return tfs_image_read_shown(img, it->tensor, off, len, v);
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
		    uint32_t file, uint64_t off, size_t len, struct tfs_view *v)
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
	if (off < f->head_len) {
		ret = make_heads(img->tree, e);
		if (ret)
			return ret;
	}
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
	tfs_view_own(v, buf, len);
	return 0;
}

/* ---- writing (tensorfs convert) ---------------------------------------- */

/*
 * a plain raw tensor in one extent of a local file: copied by the kernel
 * (after the digest rule of the read path).  1 when it did, 0 when the
 * item is not such a tensor or the file systems cannot, else -errno.
 */
static int copy_range(struct tfs_image *img, const struct tfs_export_item *it,
		      int fd, uint64_t *pos, bool *can)
{
	const struct tfs_tensor *x = &img->tree->tensors[it->tensor];
	const struct tfs_source *src = tfs_image_source(img, x);
	loff_t in, out = (loff_t)*pos;
	uint64_t done = 0;
	ssize_t n;
	int ret;

	if (!*can || it->how || x->encoding != TFS_ENCODING_RAW || x->nsegs ||
	    src->ops || src->fd < 0 || x->stored_length != it->size)
		return 0;
	ret = tfs_digest_gate(img, it->tensor);
	if (ret)
		return ret;
	in = (loff_t)(src->base + x->offset);
	while (done < it->size) {
		n = copy_file_range(src->fd, &in, fd, &out,
				    it->size - done < (1u << 30)
					    ? (size_t)(it->size - done)
					    : (1u << 30),
				    0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (done == 0 && n < 0 &&
			    (errno == EXDEV || errno == EINVAL ||
			     errno == ENOSYS || errno == EOPNOTSUPP ||
			     errno == EBADF)) {
				*can = false; /* the read path, from now on */
				return 0;
			}
			return n < 0 ? -errno : -EIO;
		}
		done += (uint64_t)n;
	}
	*pos += done;
	return 1;
}

int tfs_export_write(struct tfs_image *img, const struct tfs_export *e,
		     uint32_t file, int fd,
		     void (*progress)(void *arg, uint64_t done), void *arg)
{
	const struct tfs_export_file *f;
	struct tfs_view v;
	uint64_t pos = 0, end;
	bool can = true;
	uint32_t i;
	int ret;

	if (file >= e->nfiles)
		return -ENOENT;
	f = &e->files[file];
	ret = make_heads(img->tree, e);
	if (!ret)
		ret = tfs_write_all(fd, f->head, f->head_len);
	pos = f->head_len;
	for (i = 0; !ret && i < f->n; i++) {
		const struct tfs_export_item *it = &e->items[f->first + i];

		ret = copy_range(img, it, fd, &pos, &can);
		if (ret < 0)
			break;
		if (ret == 1) {
			/* the descriptor's offset did not move */
			ret = lseek(fd, (off_t)pos, SEEK_SET) < 0 ? -errno : 0;
			if (progress)
				progress(arg, pos);
			continue;
		}
		end = f->head_len + it->begin + it->size;
		while (!ret && pos < end) {
			ret = tfs_export_read(
				img, e, file, pos,
				end - pos < STEP ? (size_t)(end - pos) : STEP,
				&v);
			if (!ret && !v.len)
				ret = -EIO;
			if (!ret)
				ret = tfs_write_all(fd, v.data, v.len);
			pos += v.len;
			tfs_view_release(img, &v);
			if (progress)
				progress(arg, pos);
		}
	}
	return ret;
}

/* the sources' cached pages under [from, to) of file @f: raw items only */
static void drop_range(struct tfs_image *img, const struct tfs_export *e,
		       const struct tfs_export_file *f, uint64_t from,
		       uint64_t to)
{
	uint64_t d, end, a, b;
	uint32_t i;

	if (to <= f->head_len || !f->n)
		return;
	d = from > f->head_len ? from - f->head_len : 0;
	end = to - f->head_len;
	for (i = item_at(e, f, d);
	     i < f->first + f->n && e->items[i].begin < end; i++) {
		const struct tfs_export_item *it = &e->items[i];
		const struct tfs_tensor *x = &img->tree->tensors[it->tensor];

		if (it->how || x->encoding != TFS_ENCODING_RAW || x->nsegs ||
		    it->begin + it->size <= d)
			continue;
		a = d > it->begin ? d - it->begin : 0;
		b = end < it->begin + it->size ? end - it->begin : it->size;
		tfs_source_drop_cache(tfs_image_source(img, x), x->offset + a,
				      b - a);
	}
}

void tfs_export_drop_cache(struct tfs_image *img, const struct tfs_export *e,
			   uint32_t file, uint64_t off, uint64_t len)
{
	const struct tfs_export_file *f;
	uint64_t end, w;

	if (!e || file >= e->nfiles || !tfs_add_u64(off, len, &end))
		return;
	f = &e->files[file];
	if (end >= f->size) {
		/* the end: the last two windows */
		w = f->size / TFS_DROP_WINDOW * TFS_DROP_WINDOW;
		drop_range(img, e, f,
			   w >= TFS_DROP_WINDOW ? w - TFS_DROP_WINDOW : 0,
			   f->size);
		return;
	}
	/*
	 * a window boundary crossed: the window before the one behind it
	 * (reads the kernel's readahead still has in flight stay cached)
	 */
	w = end / TFS_DROP_WINDOW * TFS_DROP_WINDOW;
	if (w < 2 * TFS_DROP_WINDOW || off >= w)
		return;
	drop_range(img, e, f, w - 2 * TFS_DROP_WINDOW, w - TFS_DROP_WINDOW);
}
