// SPDX-License-Identifier: MIT
/*
 * The public C API of libtensorfs (include/tensorfs/tensorfs.h): a thin
 * layer over the image (image.h), its tree and values.h.  The only file of
 * the library whose functions are exported (TFS_API).
 */
#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "core/diag.h"
#include "core/image.h"
#include "core/source.h"
#include "core/text.h"
#include "tensorfs/tensorfs.h"
#include "core/tree.h"
#include "core/values.h"
#include "lib/name_index.h"
#if TFS_HAVE_REMOTE
#include "remote/remote.h"
#endif

struct tfs_model {
	struct tfs_image *img;
	uint32_t *order; /* tensor records sorted by path */
	pthread_mutex_t meta_lock;
	char *meta; /* metadata.json, NUL-terminated, once made */
	size_t meta_len;
	struct tfs_name_index names; /* stored name -> public indexes */
	unsigned long faults;	     /* tfs_remote_faults_failed() at open */
	pthread_mutex_t fail_lock;
	char **fail_line; /* per tensor record: its read failure, reported */
};

/*
 * The last failure of this thread (tfs_errmsg): on which model (NULL: an
 * open), its line, and the record a read is on (for the image's log).
 */
static _Thread_local const struct tfs_model *err_model;
static _Thread_local char err_line[1024];
static _Thread_local uint32_t reading_rec = UINT32_MAX;

/* the last line of the remote layer's log (fetch failures), any thread */
static pthread_mutex_t remote_line_lock = PTHREAD_MUTEX_INITIALIZER;
static char remote_line[512];

static int fail(const struct tfs_model *m, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* @ret, said as the failure of a call on @m in this thread */
static int fail(const struct tfs_model *m, int ret, const char *fmt, ...)
{
	va_list ap;

	err_model = m;
	va_start(ap, fmt);
	vsnprintf(err_line, sizeof(err_line), fmt, ap);
	va_end(ap);
	return ret;
}

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

#if TFS_HAVE_REMOTE
static void remote_log(const char *line)
{
	pthread_mutex_lock(&remote_line_lock);
	snprintf(remote_line, sizeof(remote_line), "%s", line);
	pthread_mutex_unlock(&remote_line_lock);
}
#endif

static int do_init(unsigned flags, const char *ropts, char *err, size_t errlen)
{
	int ret = 0;
#if TFS_HAVE_REMOTE
	struct tfs_remote_config cfg;

	tfs_remote_config_default(&cfg);
	/* the library never prints: the fetch failures kept for tfs_errmsg */
	cfg.log = remote_log;
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
	/* a fetch that fails is an error of that open or read, no signal */
	tfs_remote_fail_as_zeros();
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

static const char *name_of(const void *arg, uint32_t i, size_t *len)
{
	const struct tfs_model *m = arg;
	const struct tfs_tensor *x = &tree_of(m)->tensors[m->order[i]];

	*len = x->name_len;
	return x->name;
}

/* the image's integrity failures: kept per tensor for tfs_errmsg */
static void read_failed(void *arg, const char *line)
{
	struct tfs_model *m = arg;
	uint32_t rec = reading_rec;

	if (rec >= tree_of(m)->ntensors)
		return;
	pthread_mutex_lock(&m->fail_lock);
	if (!m->fail_line[rec])
		m->fail_line[rec] = strdup(line);
	pthread_mutex_unlock(&m->fail_lock);
}

/*
 * Remote page faults that failed since @since (tfs_remote_faults_failed)
 * while @path was opened or read: their pages read as zeros, so what was
 * parsed or read is wrong.  -EIO with the line in @msg, or 0.  Counted
 * process-wide: a failure of another model's URL is told apart by @path.
 */
static int faults_since(unsigned long since, const char *path, char *msg,
			size_t len)
{
#if TFS_HAVE_REMOTE
	char line[512];
	size_t n = strlen(path);

	if (tfs_remote_faults_failed(line, sizeof(line)) == since)
		return 0;
	while (n && path[n - 1] == '/')
		n--;
	if (strncmp(line, path, n))
		return 0;
	/* the fetch's own line says why ("transfer closed with...") */
	pthread_mutex_lock(&remote_line_lock);
	if (!strncmp(remote_line, line, strcspn(line, " ")))
		snprintf(line, sizeof(line), "%s", remote_line);
	pthread_mutex_unlock(&remote_line_lock);
	snprintf(msg, len, "%s", line);
	return -EIO;
#else
	(void)since;
	(void)path;
	(void)msg;
	(void)len;
	return 0;
#endif
}

static unsigned long faults_now(void)
{
#if TFS_HAVE_REMOTE
	return tfs_remote_faults_failed(NULL, 0);
#else
	return 0;
#endif
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
	char msg[1024] = "", line[512], shown[512];
	int ret;

	*out = NULL;
	set_err(err, errlen, "");
	ret = tfs_init(0, NULL, msg, sizeof(msg));
	if (ret && ret != -EALREADY)
		goto out;
	if (opts && opts->size >= sizeof(uint32_t) * 2)
		flags = opts->flags;
	if (opts && opts->size >= sizeof(*opts))
		io.cache_size = opts->cache_size;
	io.verify = flags & TFS_OPEN_VERIFY_OFF	     ? TFS_VERIFY_OFF
		    : flags & TFS_OPEN_VERIFY_ALWAYS ? TFS_VERIFY_ALWAYS
						     : TFS_VERIFY_FIRST;
	if (io.cache_size && io.cache_size < TFS_CACHE_SIZE_MIN) {
		ret = -EINVAL;
		set_err(msg, sizeof(msg), "cache_size below 1 MiB");
		goto out;
	}
	bo.flat = flags & TFS_OPEN_FLAT;
	m = calloc(1, sizeof(*m));
	if (!m) {
		ret = -ENOMEM;
		set_err(msg, sizeof(msg), "out of memory");
		goto out;
	}
	pthread_mutex_init(&m->meta_lock, NULL);
	pthread_mutex_init(&m->fail_lock, NULL);
	tfs_diag_clear(&d);
	m->faults = faults_now();
	ret = tfs_image_open(&m->img, path, &bo, &d);
	if (ret) {
		/* as the CLI says it: "SHOWN: FORMAT: WHAT (at byte offset)" */
		m->img = NULL;
		tfs_diag_format(&d, line, sizeof(line));
		snprintf(msg, sizeof(msg), "%s: %s",
			 tfs_text_location(shown, sizeof(shown), path), line);
	}
	/* a page that could not be fetched: the cause of what parsing saw */
	if (faults_since(m->faults, path, msg, sizeof(msg)))
		ret = -EIO;
	if (ret)
		goto out;
	m->fail_line =
		calloc(m->img->tree->ntensors + 1, sizeof(*m->fail_line));
	if (!m->fail_line) {
		ret = -ENOMEM;
		set_err(msg, sizeof(msg), "out of memory");
		goto out;
	}
	io.log = read_failed;
	io.log_arg = m;
	ret = tfs_image_configure(m->img, &io);
	if (ret) {
		set_err(msg, sizeof(msg), "bad read options");
		goto out;
	}
	m->order = calloc(m->img->tree->ntensors + 1, sizeof(*m->order));
	if (!m->order) {
		ret = -ENOMEM;
		set_err(msg, sizeof(msg), "out of memory");
		goto out;
	}
	for (k = 0; k < m->img->tree->ntensors; k++)
		m->order[k] = k;
	qsort_r(m->order, m->img->tree->ntensors, sizeof(*m->order), cmp_path,
		m->img->tree);
	ret = tfs_name_index_build(&m->names, m->img->tree->ntensors, name_of,
				   m);
	if (ret) {
		set_err(msg, sizeof(msg), "out of memory");
		goto out;
	}
	*out = m;
	m = NULL;
out:
	if (ret && !msg[0])
		snprintf(msg, sizeof(msg), "%s: %s",
			 tfs_text_location(shown, sizeof(shown), path),
			 strerror(-ret));
	if (ret) {
		set_err(err, errlen, msg);
		fail(NULL, ret, "%s", msg);
	}
	tfs_close(m);
	return ret;
}

TFS_API const char *tfs_errmsg(const struct tfs_model *m)
{
	return err_model == m ? err_line : "";
}

TFS_API void tfs_close(struct tfs_model *m)
{
	uint32_t k;

	if (!m)
		return;
	if (m->fail_line && m->img)
		for (k = 0; k < m->img->tree->ntensors; k++)
			free(m->fail_line[k]);
	if (m->img)
		tfs_image_close(m->img);
	free(m->fail_line);
	free(m->order);
	free(m->meta);
	tfs_name_index_free(&m->names);
	pthread_mutex_destroy(&m->meta_lock);
	pthread_mutex_destroy(&m->fail_lock);
	if (err_model == m)
		err_model = NULL;
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

/* the container of @x (or what was opened), for messages */
static const char *shown(const struct tfs_model *m, const struct tfs_tensor *x)
{
	const char *p = x ? tfs_image_source(m->img, x)->path : NULL;

	if (!p)
		p = m->img->path;
	return p ? p : "(memory)";
}

/*
 * A read of tensor record @rec failed with @ret: its reason as the CLI
 * would print it (the integrity failure reported, the remote fetch that
 * failed), else the error's text.
 */
static int read_fail(struct tfs_model *m, uint32_t rec, int ret)
{
	const struct tfs_tensor *x = &tree_of(m)->tensors[rec];
	const struct tfs_source *src = tfs_image_source(m->img, x);
	int said = 0;

	pthread_mutex_lock(&m->fail_lock);
	if (m->fail_line[rec]) {
		fail(m, ret, "%s", m->fail_line[rec]);
		said = 1;
	}
	pthread_mutex_unlock(&m->fail_lock);
	if (said)
		return ret;
	pthread_mutex_lock(&remote_line_lock);
	if (src->ops && src->path && remote_line[0] &&
	    !strncmp(remote_line, src->path, strlen(src->path))) {
		fail(m, ret, "%s (reading tensor '%s')", remote_line, x->path);
		said = 1;
	}
	pthread_mutex_unlock(&remote_line_lock);
	if (said)
		return ret;
	return fail(m, ret, "%s: tensor '%s': %s", shown(m, x), x->path,
		    strerror(-ret));
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

static int no_tensor(const struct tfs_model *m, size_t index)
{
	return fail(m, -ENOENT, "%s: no tensor %zu (of %zu)", shown(m, NULL),
		    index, (size_t)tree_of(m)->ntensors);
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
		return fail(m, -EINVAL, "tfs_tensor_info: size %zu too small",
			    size);
	x = record(m, index, &rec);
	if (!x)
		return no_tensor(m, index);
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

	if (!name)
		return fail(m, -EINVAL, "no name");

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
	k = tfs_name_index_first(&m->names, name, len, name_of, m);
	if (k != TFS_NAME_NONE)
		return (ssize_t)k;
	return fail(m, -ENOENT, "%s: %.*s: no such tensor or path",
		    shown(m, NULL), (int)(len > 256 ? 256 : len), name);
}

TFS_API ssize_t tfs_tensor_find_next(const struct tfs_model *m, size_t index)
{
	uint32_t k;

	if (index >= tree_of(m)->ntensors)
		return fail(m, -ENOENT, "%s: no tensor %zu", shown(m, NULL),
			    index);
	k = tfs_name_index_next(&m->names, (uint32_t)index);
	return k == TFS_NAME_NONE ? -ENOENT : (ssize_t)k;
}

TFS_API ssize_t tfs_read(struct tfs_model *m, size_t index, uint64_t off,
			 void *buf, size_t len)
{
	struct tfs_view v;
	size_t done = 0;
	uint32_t rec;
	int ret;

	if (!record(m, index, &rec))
		return no_tensor(m, index);
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	while (done < len) {
		reading_rec = rec;
		ret = tfs_image_read_tensor(m->img, rec, off + done, len - done,
					    &v);
		reading_rec = UINT32_MAX;
		if (ret)
			return read_fail(m, rec, ret);
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
	int ret;

	if (tfs_tensor_info(m, index, &info, sizeof(info)) || !info.raw ||
	    !record(m, index, &rec))
		return NULL;
	/* the digest gate and the live-size check of an ordinary read */
	reading_rec = rec;
	ret = tfs_image_read_tensor(m->img, rec, 0, (size_t)info.nbytes, &v);
	reading_rec = UINT32_MAX;
	if (ret) {
		read_fail(m, rec, ret);
		return NULL;
	}
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
		return no_tensor(m, index);
	d = malloc(F32_CHUNK * sizeof(*d));
	if (!d)
		return fail(m, -ENOMEM, "out of memory");
	while (count) {
		n = count < F32_CHUNK ? count : F32_CHUNK;
		reading_rec = rec;
		ret = tfs_values_read(m->img, rec, 0, first, n, d);
		reading_rec = UINT32_MAX;
		if (ret == -ENOTSUP || ret == -ERANGE) {
			fail(m, ret, "%s: tensor '%s': %s",
			     shown(m, &tree_of(m)->tensors[rec]),
			     tree_of(m)->tensors[rec].path,
			     ret == -ENOTSUP ? "not numeric: no float32 values"
					     : "past its last element");
			goto out;
		}
		if (ret) {
			read_fail(m, rec, ret);
			goto out;
		}
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
		return no_tensor(m, index);
	memset(&r, 0, sizeof(r));
	reading_rec = rec;
	ret = tfs_image_check_tensor(m->img, rec, &r, NULL, NULL);
	reading_rec = UINT32_MAX;
	if (!ret)
		ret = r.err;
	set_err(msg, msglen, r.msg);
	if (!ret && r.skipped)
		ret = 1;
	if (ret < 0)
		fail(m, ret, "%s: tensor '%s': %s",
		     shown(m, &tree_of(m)->tensors[rec]),
		     tree_of(m)->tensors[rec].path,
		     r.msg[0] ? r.msg : strerror(-ret));
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
		return fail(m, -ENOENT, "%s: %s: no such tensor or path",
			    shown(m, NULL), path);
	if (strncmp(name, TFS_XATTR_PREFIX, strlen(TFS_XATTR_PREFIX))) {
		if (asprintf(&full, TFS_XATTR_PREFIX "%s", name) < 0)
			return -ENOMEM;
		name = full;
	}
	ret = tfs_tree_getxattr(tree_of(m), node, name, buf, size);
	if (ret < 0)
		fail(m, (int)ret, "%s: %s: %s: %s", shown(m, NULL), path, name,
		     strerror((int)-ret));
	free(full);
	return ret;
}

TFS_API ssize_t tfs_listxattr(const struct tfs_model *m, const char *path,
			      char *buf, size_t size)
{
	uint32_t node = node_at(m, path);

	if (node == TFS_NO_NODE)
		return fail(m, -ENOENT, "%s: %s: no such tensor or path",
			    shown(m, NULL), path);
	return tfs_tree_listxattr(tree_of(m), node, buf, size);
}

TFS_API const char *tfs_metadata_json(struct tfs_model *m, size_t *len)
{
	const struct tfs_tree *t = tree_of(m);
	uint32_t node;
	uint64_t n = 0;
	const char *src = "{}";
	char msg[512];

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
	if (!m->meta)
		fail(m, -ENOMEM, "out of memory");
	/* a remote page the metadata needed could not be fetched */
	if (m->meta && m->img->path &&
	    faults_since(m->faults, m->img->path, msg, sizeof(msg))) {
		fail(m, -EIO, "%s", msg);
		return NULL;
	}
	return m->meta;
}

TFS_API const char *tfs_version(void)
{
	return TFS_VERSION;
}
