// SPDX-License-Identifier: MIT
/*
 * The public C API of libtensorfs (include/tensorfs/tensorfs.h): a thin
 * layer over the image (image.h), its tree and values.h.  The only file of
 * the library whose functions are exported (TFS_API).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "core/diag.h"
#include "core/image.h"
#include "core/source.h"
#include "tensorfs/tensorfs.h"
#include "core/tree.h"
#include "core/values.h"
#if TFS_HAVE_REMOTE
#include "remote/remote.h"
#endif

struct tfs_model {
	struct tfs_image *img;
	uint32_t *order; /* tensor records sorted by path */
	pthread_mutex_t meta_lock;
	char *meta; /* metadata.json, NUL-terminated, once made */
	size_t meta_len;
};

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static int init_done;

static void set_err(char *err, size_t errlen, const char *msg)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", msg);
}

#if TFS_HAVE_REMOTE
/* @opts: "a=1,b,c=2" into @cfg; -EINVAL naming the bad one */
static int remote_options(struct tfs_remote_config *cfg, const char *opts,
			  char *err, size_t errlen)
{
	const char *p, *end;
	size_t len;
	char msg[256];

	for (p = opts; p && *p; p += len + (end ? 1 : 0)) {
		end = strchr(p, ',');
		len = end ? (size_t)(end - p) : strlen(p);
		if (len && tfs_remote_option(cfg, p, len) != 1) {
			snprintf(msg, sizeof(msg),
				 "%.*s: not a remote option, or a bad value",
				 (int)(len > 128 ? 128 : len), p);
			set_err(err, errlen, msg);
			return -EINVAL;
		}
	}
	return 0;
}
#endif

static int do_init(unsigned flags, const char *ropts, char *err, size_t errlen)
{
	int ret = 0;
#if TFS_HAVE_REMOTE
	struct tfs_remote_config cfg;

	tfs_remote_config_default(&cfg);
	cfg.log = NULL; /* the library never prints */
	if (!ropts)
		ret = remote_options(&cfg, getenv("TENSORFS_REMOTE_OPTIONS"),
				     err, errlen);
	else
		ret = remote_options(&cfg, ropts, err, errlen);
	if (!ret)
		ret = tfs_remote_configure(&cfg);
	tfs_remote_config_free(&cfg);
	if (ret)
		goto out;
	tfs_source_set_url_opener(tfs_remote_open);
	tfs_source_set_url_index_finder(tfs_remote_find_index);
	tfs_image_set_url_lister(tfs_remote_list);
	/* a fetch that fails after open is an error of that read */
	tfs_remote_mounted();
#else
	(void)ropts;
#endif
	if (!(flags & TFS_INIT_NO_SIGBUS))
		ret = tfs_source_catch_sigbus();
#if TFS_HAVE_REMOTE
out:
#endif
	return ret;
}

TFS_API int tfs_init(unsigned flags, const char *remote_options, char *err,
		     size_t errlen)
{
	int ret = -EALREADY;

	pthread_mutex_lock(&init_lock);
	if (!init_done) {
		ret = do_init(flags, remote_options, err, errlen);
		if (!ret)
			init_done = 1;
	}
	pthread_mutex_unlock(&init_lock);
	return ret;
}

static const struct tfs_tree *tree_of(const struct tfs_model *m)
{
	return m->img->tree;
}

static int cmp_path(const void *a, const void *b, void *arg)
{
	const struct tfs_tree *t = arg;

	return strcmp(t->tensors[*(const uint32_t *)a].path,
		      t->tensors[*(const uint32_t *)b].path);
}

TFS_API int tfs_open(const char *path, const struct tfs_open_options *opts,
		     struct tfs_model **out, char *err, size_t errlen)
{
	struct tfs_build_options bo = {0};
	struct tfs_image_options io = {0};
	struct tfs_model *m = NULL;
	struct tfs_diag d;
	uint32_t flags = 0, k;
	int ret;

	*out = NULL;
	set_err(err, errlen, "");
	ret = tfs_init(0, NULL, err, errlen);
	if (ret && ret != -EALREADY)
		return ret;
	if (opts && opts->size >= sizeof(uint32_t) * 2)
		flags = opts->flags;
	if (opts && opts->size >= sizeof(*opts))
		io.cache_size = opts->cache_size;
	io.verify = flags & TFS_OPEN_VERIFY_OFF	     ? TFS_VERIFY_OFF
		    : flags & TFS_OPEN_VERIFY_ALWAYS ? TFS_VERIFY_ALWAYS
						     : TFS_VERIFY_FIRST;
	if (io.cache_size && io.cache_size < TFS_CACHE_SIZE_MIN) {
		set_err(err, errlen, "cache_size below 1 MiB");
		return -EINVAL;
	}
	bo.flat = flags & TFS_OPEN_FLAT;
	m = calloc(1, sizeof(*m));
	if (!m) {
		ret = -ENOMEM;
		set_err(err, errlen, "out of memory");
		goto out;
	}
	pthread_mutex_init(&m->meta_lock, NULL);
	tfs_diag_clear(&d);
	ret = tfs_image_open(&m->img, path, &bo, &d);
	if (ret) {
		m->img = NULL;
		if (err && errlen)
			tfs_diag_format(&d, err, errlen);
		goto out;
	}
	ret = tfs_image_configure(m->img, &io);
	if (ret) {
		set_err(err, errlen, "bad read options");
		goto out;
	}
	m->order = calloc(m->img->tree->ntensors + 1, sizeof(*m->order));
	if (!m->order) {
		ret = -ENOMEM;
		set_err(err, errlen, "out of memory");
		goto out;
	}
	for (k = 0; k < m->img->tree->ntensors; k++)
		m->order[k] = k;
	qsort_r(m->order, m->img->tree->ntensors, sizeof(*m->order), cmp_path,
		m->img->tree);
	*out = m;
	m = NULL;
out:
	tfs_close(m);
	return ret;
}

TFS_API void tfs_close(struct tfs_model *m)
{
	if (!m)
		return;
	if (m->img)
		tfs_image_close(m->img);
	free(m->order);
	free(m->meta);
	pthread_mutex_destroy(&m->meta_lock);
	free(m);
}

TFS_API const char *tfs_format(const struct tfs_model *m)
{
	const char *f = tree_of(m)->format;

	return f ? f : "multi";
}

TFS_API size_t tfs_tensor_count(const struct tfs_model *m)
{
	return tree_of(m)->ntensors;
}

/* the tensor record of public index @index, or NULL */
static const struct tfs_tensor *record(const struct tfs_model *m, size_t index,
				       uint32_t *rec)
{
	if (index >= tree_of(m)->ntensors)
		return NULL;
	*rec = m->order[index];
	return &tree_of(m)->tensors[*rec];
}

/* @key set to "F" (or "big") on the tensor's node or its group */
static int has_attr(const struct tfs_tree *t, const struct tfs_tensor *x,
		    const char *key, const char *want)
{
	return tfs_tree_xattr_is(t, x->node, key, want) ||
	       (x->group != TFS_NO_NODE &&
		tfs_tree_xattr_is(t, x->group, key, want));
}

TFS_API int tfs_tensor_info(const struct tfs_model *m, size_t index,
			    struct tfs_tensor_info *info, size_t size)
{
	const struct tfs_tree *t = tree_of(m);
	const struct tfs_xattr *g = NULL;
	const struct tfs_tensor *x;
	struct tfs_tensor_info r = {0};
	uint32_t rec;

	if (size < offsetof(struct tfs_tensor_info, role))
		return -EINVAL;
	x = record(m, index, &rec);
	if (!x)
		return -ENOENT;
	r.name = x->name;
	r.name_len = x->name_len;
	r.path = x->path;
	r.dtype = x->dtype;
	r.shape = x->shape;
	r.ndim = x->ndim;
	r.itemsize = x->dtype_id == TFS_DTYPE_VOID
			     ? x->record_size
			     : tfs_dtype_size(x->dtype_id);
	r.nbytes = x->size;
	r.count = tfs_values_count(t, rec);
	r.byte_order = tfs_values_tensor_flags(t, rec) & TFS_VALUES_BIG_ENDIAN
			       ? "big"
			       : "little";
	r.order = has_attr(t, x, TFS_XATTR_PREFIX "order", "F") ? "F" : "C";
	r.role = x->role;
	if (x->group != TFS_NO_NODE && x->role)
		g = tfs_tree_xattr(t, x->group, TFS_XATTR_PREFIX "name");
	if (g) {
		r.group = g->value;
		r.group_len = g->len;
	}
	r.raw = x->encoding == TFS_ENCODING_RAW && !x->nsegs &&
		!x->unreadable && x->size &&
		!tfs_image_source(m->img, x)->ops &&
		tfs_image_source(m->img, x)->data;
	r.numeric = tfs_values_supported(x->dtype_id,
					 tfs_values_tensor_flags(t, rec)) == 0;
	memcpy(info, &r, size < sizeof(r) ? size : sizeof(r));
	return 0;
}

TFS_API ssize_t tfs_tensor_find(const struct tfs_model *m, const char *name,
				size_t len)
{
	const struct tfs_tree *t = tree_of(m);
	size_t lo = 0, hi = t->ntensors, mid;
	int c;
	uint32_t k;

	/* by path: the order is sorted by it */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = strncmp(t->tensors[m->order[mid]].path, name, len);
		if (!c && t->tensors[m->order[mid]].path[len])
			c = 1;
		if (!c)
			return (ssize_t)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (k = 0; k < t->ntensors; k++)
		if (t->tensors[m->order[k]].name_len == len &&
		    memcmp(t->tensors[m->order[k]].name, name, len) == 0)
			return (ssize_t)k;
	return -ENOENT;
}

TFS_API ssize_t tfs_read(struct tfs_model *m, size_t index, uint64_t off,
			 void *buf, size_t len)
{
	struct tfs_view v;
	size_t done = 0;
	uint32_t rec;
	int ret;

	if (!record(m, index, &rec))
		return -ENOENT;
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	while (done < len) {
		ret = tfs_image_read_tensor(m->img, rec, off + done, len - done,
					    &v);
		if (ret)
			return ret;
		if (!v.len) {
			tfs_view_release(m->img, &v);
			break;
		}
		memcpy((char *)buf + done, v.data, v.len);
		done += v.len;
		tfs_view_release(m->img, &v);
	}
	return (ssize_t)done;
}

TFS_API const void *tfs_tensor_data(struct tfs_model *m, size_t index)
{
	struct tfs_tensor_info info;
	struct tfs_view v;
	const void *p = NULL;
	uint32_t rec;

	if (tfs_tensor_info(m, index, &info, sizeof(info)) || !info.raw ||
	    !record(m, index, &rec))
		return NULL;
	/* the digest gate and the live-size check of an ordinary read */
	if (tfs_image_read_tensor(m->img, rec, 0, (size_t)info.nbytes, &v))
		return NULL;
	if (tfs_view_stays(&v) && v.len == info.nbytes)
		p = v.data;
	tfs_view_release(m->img, &v);
	return p;
}

#define F32_CHUNK 4096

TFS_API int tfs_read_float32(struct tfs_model *m, size_t index, uint64_t first,
			     size_t count, float *out)
{
	double *d;
	size_t n, i;
	uint32_t rec;
	int ret = 0;

	if (!record(m, index, &rec))
		return -ENOENT;
	d = malloc(F32_CHUNK * sizeof(*d));
	if (!d)
		return -ENOMEM;
	while (count) {
		n = count < F32_CHUNK ? count : F32_CHUNK;
		ret = tfs_values_read(m->img, rec, 0, first, n, d);
		if (ret)
			goto out;
		for (i = 0; i < n; i++)
			out[i] = (float)d[i];
		out += n;
		first += n;
		count -= n;
	}
out:
	free(d);
	return ret;
}

TFS_API int tfs_verify(struct tfs_model *m, size_t index, char *msg,
		       size_t msglen)
{
	struct tfs_check_result r;
	uint32_t rec;
	int ret;

	set_err(msg, msglen, "");
	if (!record(m, index, &rec))
		return -ENOENT;
	memset(&r, 0, sizeof(r));
	ret = tfs_image_check_tensor(m->img, rec, &r, NULL, NULL);
	if (!ret)
		ret = r.err;
	set_err(msg, msglen, r.msg);
	if (!ret && r.skipped)
		ret = 1;
	return ret;
}

/* the node at @path ("" the root), or TFS_NO_NODE */
static uint32_t node_at(const struct tfs_model *m, const char *path)
{
	while (*path == '/')
		path++;
	if (!*path)
		return TFS_ROOT_NODE;
	return tfs_tree_resolve(tree_of(m), path);
}

TFS_API ssize_t tfs_getxattr(const struct tfs_model *m, const char *path,
			     const char *name, void *buf, size_t size)
{
	uint32_t node = node_at(m, path);
	char *full = NULL;
	ssize_t ret;

	if (node == TFS_NO_NODE)
		return -ENOENT;
	if (strncmp(name, TFS_XATTR_PREFIX, strlen(TFS_XATTR_PREFIX))) {
		if (asprintf(&full, TFS_XATTR_PREFIX "%s", name) < 0)
			return -ENOMEM;
		name = full;
	}
	ret = tfs_tree_getxattr(tree_of(m), node, name, buf, size);
	free(full);
	return ret;
}

TFS_API ssize_t tfs_listxattr(const struct tfs_model *m, const char *path,
			      char *buf, size_t size)
{
	uint32_t node = node_at(m, path);

	if (node == TFS_NO_NODE)
		return -ENOENT;
	return tfs_tree_listxattr(tree_of(m), node, buf, size);
}

TFS_API const char *tfs_metadata_json(struct tfs_model *m, size_t *len)
{
	const struct tfs_tree *t = tree_of(m);
	uint32_t node;
	uint64_t n = 0;
	const char *src = "{}";

	pthread_mutex_lock(&m->meta_lock);
	if (m->meta)
		goto out;
	node = tfs_tree_resolve(t, ".tensorfs/metadata.json");
	if (node != TFS_NO_NODE && t->nodes[node].kind == TFS_NODE_MEMFILE) {
		n = tfs_node_size(t, node); /* makes a lazy file */
		if (t->nodes[node].mem)
			src = t->nodes[node].mem;
		else
			n = 0;
	}
	if (!n)
		n = strlen(src);
	m->meta = malloc((size_t)n + 1);
	if (!m->meta)
		goto out;
	memcpy(m->meta, src, (size_t)n);
	m->meta[n] = '\0';
	m->meta_len = (size_t)n;
out:
	if (m->meta && len)
		*len = m->meta_len;
	pthread_mutex_unlock(&m->meta_lock);
	return m->meta;
}

TFS_API const char *tfs_version(void)
{
	return TFS_VERSION;
}
