// SPDX-License-Identifier: MIT
/*
 * Mounts of several containers: a directory (tfs_image_open_dir) or a list
 * of files (tfs_image_open_files), see src/core/image.h.
 *
 * Every candidate file is opened and probed first (the readers' probes look
 * at a few bytes only), so the directory each container gets can be chosen
 * knowing all of them: "a/b.EXT" is "a/b", unless another container
 * also wants "a/b", in which case both keep their full file names.  Then
 * each is loaded into one builder between tfs_builder_begin_source() and
 * tfs_builder_end_source(); one that fails is rolled back and listed in
 * img->skipped and .tensorfs/errors.json.  Only headers are read: tensor
 * bytes stay in the mappings until a read asks for them.
 *
 * The walk follows symlinks to files (the Hugging Face cache is made of
 * links into blobs/) and symlinked directories, remembering every directory
 * it entered by device and inode so that a cycle is entered once.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/builder.h"
#include "builder_sources.h"
#include "core/diag.h"
#include "core/format.h"
#include "core/image.h"
#include "core/names.h"
#include "core/source.h"
#include "image_i.h"
#include "open_i.h"

#define WALK_MAX_DEPTH 32
#define WALK_MAX_FILES 100000

struct candidate {
	char *rel;  /* label: path relative to the directory (or as given) */
	char *dir;  /* the directory it becomes */
	char *path; /* what to open */
	struct tfs_source src;
	const struct tfs_format *fmt;
	/*
	 * In a directory mount, the first part of a set of files (a split
	 * model, tfs_format.set_part) heads its @nparts parts, which follow it: they load
	 * as one directory, all or none.  0 otherwise.
	 */
	uint32_t nparts;
	uint64_t tensors, tensors_at; /* the set's tensor count, as stated */
	struct tfs_diag *why; /* left out before loading: why (or NULL) */
	bool covers;	      /* it covers other files (tfs_format.covers) */
};

struct walk {
	const char *top;
	struct candidate *v;
	size_t n, cap;
	struct {
		dev_t dev;
		ino_t ino;
	} * seen;
	size_t nseen;
};

static void candidates_free(struct walk *w)
{
	size_t i;

	for (i = 0; i < w->n; i++) {
		free(w->v[i].rel);
		free(w->v[i].dir);
		free(w->v[i].path);
		free(w->v[i].why);
		tfs_source_close(&w->v[i].src);
	}
	free(w->v);
	free(w->seen);
}

static int add_candidate(struct walk *w, const char *path, const char *rel)
{
	struct candidate *nv, *c;

	if (w->n == WALK_MAX_FILES)
		return -E2BIG;
	if (w->n == w->cap) {
		w->cap = w->cap ? w->cap * 2 : 16;
		nv = reallocarray(w->v, w->cap, sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		w->v = nv;
	}
	c = &w->v[w->n];
	memset(c, 0, sizeof(*c));
	c->src.fd = -1;
	c->path = strdup(path);
	c->rel = strdup(rel);
	if (!c->path || !c->rel) {
		free(c->path);
		free(c->rel);
		return -ENOMEM;
	}
	w->n++;
	return 0;
}

/* enter directory @st once: false when it was seen already (a cycle) */
static int enter_once(struct walk *w, const struct stat *st)
{
	size_t i;
	void *nv;

	for (i = 0; i < w->nseen; i++)
		if (w->seen[i].dev == st->st_dev &&
		    w->seen[i].ino == st->st_ino)
			return 0;
	nv = reallocarray(w->seen, w->nseen + 1, sizeof(*w->seen));
	if (!nv)
		return -ENOMEM;
	w->seen = nv;
	w->seen[w->nseen].dev = st->st_dev;
	w->seen[w->nseen].ino = st->st_ino;
	w->nseen++;
	return 1;
}

static int cmp_names(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int walk_dir(struct walk *w, const char *path, const char *rel,
		    unsigned depth)
{
	struct dirent **ents = NULL;
	char *child = NULL, *crel = NULL;
	struct stat st;
	int i, n, ret = 0;

	if (depth > WALK_MAX_DEPTH)
		return 0;
	n = scandir(path, &ents, NULL, cmp_names);
	if (n < 0)
		return depth ? 0 : -errno; /* unreadable subdirectory: skip */
	for (i = 0; i < n; i++) {
		const char *name = ents[i]->d_name;

		if (ret || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			continue;
		if (asprintf(&child, "%s/%s", path, name) < 0 ||
		    asprintf(&crel, "%s%s%s", rel, *rel ? "/" : "", name) < 0) {
			ret = -ENOMEM;
			child = crel = NULL;
			break;
		}
		/* stat, not lstat: symlinks are followed */
		if (stat(child, &st) == 0) {
			if (S_ISDIR(st.st_mode)) {
				ret = enter_once(w, &st);
				ret = ret > 0 ? walk_dir(w, child, crel,
							 depth + 1)
					      : ret;
			} else if (S_ISREG(st.st_mode)) {
				ret = add_candidate(w, child, crel);
			}
		}
		free(child);
		free(crel);
		child = crel = NULL;
	}
	for (i = 0; i < n; i++)
		free(ents[i]);
	free(ents);
	return ret;
}

/* "a/b.EXT" -> "a/b"; NULL when the name has no extension */
static char *strip_extension(const char *rel)
{
	const char *base = strrchr(rel, '/'), *dot;

	base = base ? base + 1 : rel;
	dot = strrchr(base, '.');
	/* a bare dotfile (".zarray") stands for the directory holding it */
	if (dot == base)
		return strndup(rel, base > rel ? (size_t)(base - 1 - rel) : 0);
	if (!dot)
		return NULL;
	return strndup(rel, (size_t)(dot - rel));
}

/*
 * @d = @from, failed in @file (a file of a directory or of a list: the
 * message names it once, first); @format fills an empty format.  @from
 * may be @d.  A file inside a file already named goes into the message.
 */
static void diag_in_file(struct tfs_diag *d, const struct tfs_diag *from,
			 const char *file, const char *format)
{
	struct tfs_diag f = *from;

	*d = f;
	if (f.file[0])
		snprintf(d->msg, sizeof(d->msg), "%.100s: %.*s", f.file,
			 (int)sizeof(d->msg) - 104, f.msg);
	snprintf(d->file, sizeof(d->file), "%s", file);
	if (!d->format)
		d->format = format;
}

/* open and probe every candidate; drop those no reader claims */
static int probe_all(struct walk *w, bool keep_unclaimed, struct tfs_diag *d)
{
	size_t i, k = 0;
	int ret;

	for (i = 0; i < w->n; i++) {
		struct candidate *c = &w->v[i];
		struct tfs_diag od;

		ret = tfs_source_open(&c->src, c->path, &od);
		if (!ret)
			c->fmt = tfs_format_detect(&c->src);
		if (ret && keep_unclaimed) {
			diag_in_file(d, &od, c->rel, NULL);
			return ret;
		}
		if (!c->fmt && !keep_unclaimed) {
			free(c->rel);
			free(c->path);
			tfs_source_close(&c->src);
			continue;
		}
		w->v[k++] = *c;
	}
	w->n = k;
	return 0;
}

/* probe_all, every candidate a container: a file no reader claims is
 * refused, named by its path (@by_path) or relative name */
static int probe_known(struct walk *w, bool by_path, struct tfs_diag *d)
{
	int ret = probe_all(w, true, d);
	size_t i;

	for (i = 0; !ret && i < w->n; i++)
		if (!w->v[i].fmt)
			ret = tfs_diag_at(d, -ENOEXEC, 0,
					  "%s: magic: not a container format "
					  "tensorfs recognises",
					  by_path ? w->v[i].path : w->v[i].rel);
	return ret;
}

/* each container's directory: its path less the extension, unless shared */
static int choose_dirs(struct walk *w)
{
	size_t i, k;

	for (i = 0; i < w->n; i++) {
		w->v[i].dir = strip_extension(w->v[i].rel);
		if (!w->v[i].dir && !(w->v[i].dir = strdup(w->v[i].rel)))
			return -ENOMEM;
	}
	for (i = 0; i < w->n; i++)
		for (k = i + 1; k < w->n; k++)
			if (strcmp(w->v[i].dir, w->v[k].dir) == 0 &&
			    strcmp(w->v[i].dir, w->v[i].rel) &&
			    strcmp(w->v[k].dir, w->v[k].rel)) {
				/* both keep their full names */
				free(w->v[i].dir);
				free(w->v[k].dir);
				w->v[i].dir = strdup(w->v[i].rel);
				w->v[k].dir = strdup(w->v[k].rel);
				if (!w->v[i].dir || !w->v[k].dir)
					return -ENOMEM;
			}
	return 0;
}

static int add_skipped(struct tfs_image *img, const char *rel,
		       const struct tfs_diag *cd)
{
	struct tfs_skipped *ns;
	char why[TFS_DIAG_MSG_MAX + 64];

	if (cd->msg[0])
		tfs_diag_format(cd, why, sizeof(why));
	else
		snprintf(why, sizeof(why), "%s", strerror(-cd->err));
	ns = reallocarray(img->skipped, img->nskipped + 1, sizeof(*ns));
	if (!ns)
		return -ENOMEM;
	img->skipped = ns;
	ns = &img->skipped[img->nskipped];
	ns->path = strdup(rel);
	ns->why = strdup(why);
	ns->err = cd->err ? cd->err : -EBADMSG;
	if (!ns->path || !ns->why) {
		free(ns->path);
		free(ns->why);
		return -ENOMEM;
	}
	img->nskipped++;
	return 0;
}

/* .tensorfs/errors.json: every container left out, and why */
static int errors_file(struct tfs_image *img, struct tfs_builder *b)
{
	json_t *list = json_array();
	char *data;
	uint32_t i;
	int ret;

	if (!list)
		return -ENOMEM;
	for (i = 0; i < img->nskipped; i++)
		json_array_append_new(list,
				      json_pack("{s:s,s:s}", "path",
						img->skipped[i].path, "error",
						img->skipped[i].why));
	data = json_dumps(list, JSON_INDENT(2));
	json_decref(list);
	if (!data)
		return -ENOMEM;
	ret = tfs_builder_add_meta_file(b, "errors.json", data, strlen(data));
	free(data);
	return ret;
}

/* How load_all() composes the containers. */
struct plan {
	bool skip_bad; /* a container that fails is left out (a directory) */
	bool merged;   /* shards of one model: one tree, user.tensorfs.shard */
	/* run before the tree is built (the shard index's rules) */
	int (*check)(void *arg, struct tfs_builder *b, struct tfs_image *img,
		     struct tfs_diag *d);
	void *arg;
	bool hf_config; /* a model directory: its config.json (hf_config) */
	/* the directory is one container's folder (a SavedModel): at root */
	bool whole;
};

/* config.json larger than this is not read (a few KB in practice) */
#define HF_CONFIG_MAX (1u << 20)

/* a string fit for an xattr and a line of info: no control bytes */
static bool plain_text(const json_t *v)
{
	const char *p = json_string_value(v);
	size_t n = json_string_length(v), i;

	if (!p || !n || n > 256)
		return false;
	for (i = 0; i < n; i++)
		if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
			return false;
	return true;
}

/*
 * A Hugging Face model directory's config.json: its model_type (else the
 * first of its architectures) is user.tensorfs.architecture on the root,
 * its architectures user.tensorfs.hf.architectures (comma-separated), and
 * both are in metadata.json under "config".  No config.json is no error;
 * one that cannot be read as JSON is a warning.  0 or -ENOMEM.
 */
static int hf_config(struct tfs_builder *b, const char *top)
{
	json_t *cfg = NULL, *mt, *archs, *a, *meta = NULL;
	char *path = NULL, *list = NULL;
	json_error_t err;
	struct stat st;
	size_t i, len = 0;
	int ret = 0;

	if (asprintf(&path, "%s/config.json", top) < 0)
		return -ENOMEM;
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		goto out;
	if (st.st_size > HF_CONFIG_MAX) {
		ret = tfs_builder_warn(b, TFS_NO_OFFSET,
				       "config.json: larger than 1 MiB, not "
				       "read");
		goto out;
	}
	cfg = json_load_file(path, JSON_REJECT_DUPLICATES, &err);
	if (!cfg || !json_is_object(cfg)) {
		ret = tfs_builder_warn(b, TFS_NO_OFFSET,
				       "config.json: not a JSON object (%s)",
				       cfg ? "another value" : err.text);
		goto out;
	}
	tfs_builder_set_model_config(b, cfg);
	mt = json_object_get(cfg, "model_type");
	archs = json_object_get(cfg, "architectures");
	meta = json_pack("{s:s}", "file", "config.json");
	if (!meta) {
		ret = -ENOMEM;
		goto out;
	}
	if (plain_text(mt) && json_object_set(meta, "model_type", mt))
		ret = -ENOMEM;
	if (!ret && json_is_array(archs) &&
	    json_object_set(meta, "architectures", archs))
		ret = -ENOMEM;
	/* "A,B": the plain strings of architectures */
	json_array_foreach(json_is_array(archs) ? archs : NULL, i, a)
	{
		size_t n = json_string_length(a);
		char *more;

		if (ret || !plain_text(a))
			continue;
		more = realloc(list, len + n + 2);
		if (!more) {
			ret = -ENOMEM;
			break;
		}
		list = more;
		if (len)
			list[len++] = ',';
		memcpy(list + len, json_string_value(a), n);
		len += n;
		list[len] = '\0';
	}
	if (!ret && plain_text(mt))
		ret = tfs_builder_set_top_xattr(b, "architecture",
						json_string_value(mt),
						json_string_length(mt));
	else if (!ret && list)
		ret = tfs_builder_set_top_xattr(b, "architecture", list,
						strcspn(list, ","));
	if (!ret && list)
		ret = tfs_builder_set_top_xattr(b, "hf.architectures", list,
						strlen(list));
	if (!ret && json_object_set(tfs_builder_metadata(b), "config", meta))
		ret = -ENOMEM;
out:
	json_decref(meta);
	json_decref(cfg);
	free(list);
	free(path);
	return ret;
}

/* the one format all containers share, or "directory" */
static const char *common_format(const struct walk *w)
{
	size_t i;

	for (i = 1; i < w->n; i++)
		if (strcmp(tfs_format_shown(w->v[i].fmt),
			   tfs_format_shown(w->v[0].fmt)))
			return "directory";
	return w->n ? tfs_format_shown(w->v[0].fmt) : "directory";
}

struct count_from {
	uint32_t source, n;
};

static int count_tensor(void *arg, const char *name, size_t len,
			uint32_t source)
{
	struct count_from *cf = arg;

	cf->n += source >= cf->source;
	return 0;
}

/* tensors and groups of the builder's sources from @source on */
static uint32_t tensors_from(struct tfs_builder *b, uint32_t source)
{
	struct count_from cf = {source, 0};

	tfs_builder_each_tensor(b, count_tensor, &cf);
	return cf.n;
}

/* Load the probed candidates into one builder, as @p says. */
static int load_all(struct tfs_image **out, struct walk *w, const char *top,
		    const struct plan *p, const struct tfs_build_options *opts,
		    struct tfs_diag *d)
{
	struct tfs_builder *b = NULL;
	struct tfs_image *img;
	size_t i, parts;
	int ret;

	img = calloc(1, sizeof(*img));
	if (!img)
		return tfs_diag_oom(d);
	img->srcs = calloc(w->n ? w->n : 1, sizeof(*img->srcs));
	img->path = strdup(top);
	ret = img->srcs && img->path ? tfs_builder_new(&b, NULL, opts)
				     : -ENOMEM;
	if (ret) {
		ret = tfs_diag_oom(d);
		goto out;
	}
	for (i = 0; i < w->n; i += parts) {
		struct candidate *c = &w->v[i], *fc = c;
		uint32_t k, loaded = 0, n;
		struct tfs_diag cd;

		/* a set's parts: one directory, all or none */
		parts = c->nparts ? c->nparts : 1;
		if (c->why && !p->skip_bad) {
			diag_in_file(d, c->why, c->rel, NULL);
			ret = d->err ? d->err : -EBADMSG;
			goto out;
		}
		if (c->why) {
			/* a part of a set that is not whole */
			ret = add_skipped(img, c->rel, c->why);
			if (ret) {
				ret = tfs_diag_oom(d);
				goto out;
			}
			continue;
		}
		tfs_diag_clear(&cd);
		for (ret = 0, k = 0; !ret && k < parts; k++) {
			struct candidate *pc = &w->v[i + k];
			struct tfs_builder_source bs = {
				.src = &pc->src,
				.label = pc->rel,
				.dir = p->merged || p->whole ? NULL : c->dir,
				.shard =
					p->merged || parts > 1 ? pc->rel : NULL,
				.join = k > 0};

			if (tfs_builder_begin_source(b, &bs)) {
				ret = tfs_diag_oom(d);
				goto out;
			}
			fc = pc;
			ret = pc->fmt->load(&pc->src, b, &cd);
			if (!ret)
				ret = tfs_builder_end_source(b, &cd);
			if (ret)
				tfs_builder_abort_source(b);
			else
				loaded++;
			if (ret && !cd.format)
				cd.format = tfs_format_shown(pc->fmt);
		}
		/* the builder's source index of part k is img->nsrcs + k */
		n = parts > 1 ? tensors_from(b, img->nsrcs) : 0;
		if (!ret && parts > 1 && c->tensors != UINT64_MAX &&
		    n != c->tensors) {
			fc = c;
			ret = tfs_diag_at(&cd, -EBADMSG, c->tensors_at,
					  "the set's parts hold %u tensors, "
					  "but its header says %llu",
					  n, (unsigned long long)c->tensors);
		}
		if (!ret) {
			/* the builder's source index is img->nsrcs */
			for (k = 0; k < parts; k++) {
				struct candidate *pc = &w->v[i + k];

				img->srcs[img->nsrcs++] = pc->src;
				memset(&pc->src, 0, sizeof(pc->src));
				pc->src.fd = -1;
			}
			continue;
		}
		while (loaded--)
			tfs_builder_abort_source(b);
		if (!p->skip_bad) {
			diag_in_file(d, &cd, fc->rel, NULL);
			goto out;
		}
		ret = add_skipped(img, fc->rel, &cd);
		if (ret) {
			ret = tfs_diag_oom(d);
			goto out;
		}
	}
	if (!img->nsrcs) {
		ret = img->nskipped
			      ? tfs_diag_set(d, -ENOEXEC,
					     "no container could be mounted "
					     "(%u left out; the first, %s: %s)",
					     img->nskipped,
					     img->skipped[0].path,
					     img->skipped[0].why)
			      : tfs_diag_set(d, -ENOEXEC,
					     "no container tensorfs "
					     "recognises in it");
		goto out;
	}
	ret = img->nskipped ? errors_file(img, b) : 0;
	if (ret) {
		ret = tfs_diag_oom(d);
		goto out;
	}
	ret = p->check ? p->check(p->arg, b, img, d) : 0;
	if (!ret && p->hf_config && hf_config(b, top))
		ret = tfs_diag_oom(d);
	if (!ret)
		ret = tfs_image_finish_load(
			img, b, p->merged ? common_format(w) : "directory", d);
out:
	return tfs_image_load_end(img, b, ret, out);
}

/* ---- a sharded model: the index says which tensor is in which file ---- */

struct shard_check {
	struct tfs_shard_index *x;
	const char *index_name;
	const struct walk *w; /* source k is w->v[k]: none is left out */
	struct name_rec {
		const char *name;
		size_t len;
		uint32_t source;
	} * v;
	size_t n;
};

static int collect_name(void *arg, const char *name, size_t len,
			uint32_t source)
{
	struct shard_check *sc = arg;

	sc->v[sc->n++] = (struct name_rec){name, len, source};
	return 0;
}

static int cmp_rec(const void *pa, const void *pb)
{
	const struct name_rec *a = pa, *b = pb;
	size_t n = a->len < b->len ? a->len : b->len;
	int c = memcmp(a->name, b->name, n);

	if (c)
		return c;
	return a->len < b->len ? -1 : a->len > b->len;
}

/*
 * Every weight_map entry is in its shard (the builder already refuses a
 * name in two shards); a shard's tensor the index does not list, and a
 * total_size that is not the tensors' bytes, are warnings.
 */
static int check_shards(void *arg, struct tfs_builder *b,
			struct tfs_image *img __attribute__((unused)),
			struct tfs_diag *d)
{
	struct shard_check *sc = arg;
	struct tfs_shard_index *x = sc->x;
	char nb[TFS_PRINTABLE_MAX];
	bool *listed = NULL;
	uint64_t total;
	size_t i, unlisted = 0;
	int ret = 0;

	sc->v = calloc(tfs_builder_count(b) + 1, sizeof(*sc->v));
	listed = calloc(tfs_builder_count(b) + 1, sizeof(*listed));
	if (!sc->v || !listed) {
		ret = tfs_diag_oom(d);
		goto out;
	}
	tfs_builder_each_tensor(b, collect_name, sc);
	qsort(sc->v, sc->n, sizeof(*sc->v), cmp_rec);
	for (i = 0; i < x->n && !ret; i++) {
		struct name_rec key = {x->v[i].name, x->v[i].name_len, 0}, *r;

		r = bsearch(&key, sc->v, sc->n, sizeof(*sc->v), cmp_rec);
		if (r && !strcmp(sc->w->v[r->source].rel, x->v[i].shard)) {
			listed[r - sc->v] = true;
			continue;
		}
		/* escaped on the error path only: 90,000 names in a MoE */
		tfs_name_printable(nb, sizeof(nb), x->v[i].name,
				   x->v[i].name_len);
		if (!r)
			ret = tfs_diag_at(d, -EBADMSG, x->v[i].at,
					  "%s: weight_map: tensor '%s' is not "
					  "in %s",
					  sc->index_name, nb, x->v[i].shard);
		else
			ret = tfs_diag_at(d, -EBADMSG, x->v[i].at,
					  "%s: weight_map: tensor '%s' is "
					  "said to be in %s, but it is in %s",
					  sc->index_name, nb, x->v[i].shard,
					  sc->w->v[r->source].rel);
	}
	for (i = 0; i < sc->n && !ret; i++) {
		if (listed[i])
			continue;
		if (unlisted++ < 10)
			ret = tfs_builder_warn(
				b, TFS_NO_OFFSET,
				"tensor '%s' is in a shard but not in %s",
				tfs_name_printable(nb, sizeof(nb),
						   sc->v[i].name, sc->v[i].len),
				sc->index_name);
	}
	if (!ret && unlisted > 10)
		ret = tfs_builder_warn(b, TFS_NO_OFFSET,
				       "%zu more tensors are not in %s",
				       unlisted - 10, sc->index_name);
	total = tfs_builder_total_bytes(b);
	if (!ret && x->has_total && x->total_size != total)
		ret = tfs_builder_warn(b, TFS_NO_OFFSET,
				       "%s: metadata.total_size is %llu, but "
				       "the tensors hold %llu bytes",
				       sc->index_name,
				       (unsigned long long)x->total_size,
				       (unsigned long long)total);
	if (ret == -ENOMEM)
		ret = tfs_diag_oom(d);
	if (!ret &&
	    json_object_set_new(tfs_builder_metadata(b), "index",
				json_pack("{s:s,s:O?}", "file", sc->index_name,
					  "metadata", x->metadata)))
		ret = tfs_diag_oom(d);
out:
	free(sc->v);
	free(listed);
	return ret;
}

/*
 * The shard index at the top of @dir, or NULL: the readers say which names
 * are indexes (tfs_format.index_suffix) and which comes first.
 */
static char *find_index(const char *dir)
{
	struct dirent **ents;
	const char **names;
	const char *found = NULL;
	char *copy = NULL;
	int i, n;

	n = scandir(dir, &ents, NULL, cmp_names);
	if (n < 0)
		return NULL;
	names = calloc((size_t)n + 1, sizeof(*names));
	if (names) {
		for (i = 0; i < n; i++)
			names[i] = ents[i]->d_name;
		found = tfs_format_pick_index(names, (size_t)n);
		copy = found ? strdup(found) : NULL;
	}
	free(names);
	for (i = 0; i < n; i++)
		free(ents[i]);
	free(ents);
	return copy;
}

static int open_sharded(struct tfs_image **out, const char *dir,
			const char *index_name,
			const struct tfs_build_options *opts,
			struct tfs_diag *d)
{
	struct tfs_shard_index x = {0};
	struct walk w = {.top = dir};
	struct shard_check sc = {.x = &x, .index_name = index_name, .w = &w};
	const struct tfs_format *fmt;
	struct tfs_source src;
	char *path = NULL;
	size_t i;
	int ret;

	if (asprintf(&path, "%s/%s", dir, index_name) < 0)
		return tfs_diag_oom(d);
	/* the reader whose index it is reads it (find_index chose it so) */
	fmt = tfs_format_by_index(index_name);
	if (!fmt || !fmt->read_index)
		ret = tfs_diag_set(d, -ENOEXEC, "%s: not a shard index",
				   index_name);
	else
		ret = tfs_source_open(&src, path, d);
	if (!ret) {
		ret = fmt->read_index(src.data, (size_t)src.size, &x, d);
		tfs_source_close(&src);
		if (ret)
			diag_in_file(d, d, index_name, NULL);
	}
	for (i = 0; !ret && i < x.nshards; i++) {
		free(path);
		path = NULL;
		if (asprintf(&path, "%s/%s", dir, x.shards[i]) < 0)
			ret = tfs_diag_oom(d);
		else if (add_candidate(&w, path, x.shards[i]))
			ret = tfs_diag_oom(d);
	}
	if (!ret)
		ret = probe_known(&w, false, d);
	if (!ret)
		ret = load_all(out, &w, dir,
			       &(struct plan){.merged = true,
					      .check = check_shards,
					      .arg = &sc,
					      .hf_config = true},
			       opts, d);
	free(path);
	candidates_free(&w);
	tfs_shard_index_free(&x);
	return ret;
}

/* ---- a set of files (split models): the format names the parts --------- */

struct set_check {
	const char *first; /* the first part, which states the set's size */
	uint64_t tensors, tensors_at; /* as it states them */
};

/* the whole set holds the tensors its first part says */
static int check_set(void *arg, struct tfs_builder *b,
		     struct tfs_image *img __attribute__((unused)),
		     struct tfs_diag *d)
{
	struct set_check *sc = arg;
	uint64_t n = tfs_builder_count(b);

	if (sc->tensors != UINT64_MAX && sc->tensors != n)
		return tfs_diag_at(d, -EBADMSG, sc->tensors_at,
				   "%s: the set's parts hold %llu tensors, "
				   "but its header says %llu",
				   sc->first, (unsigned long long)n,
				   (unsigned long long)sc->tensors);
	return 0;
}

/* "a/b/c" -> "a/b" (or "."), malloc'd */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

/*
 * Mount the set @p (of format @fmt) whose parts are in directory @dir as
 * one tree: every part must exist, be of the format, and say it is part
 * k of the same count; each tensor gets user.tensorfs.shard.
 */
static int open_set(struct tfs_image **out, const char *dir,
		    const struct tfs_format *fmt, const struct tfs_set_part *p,
		    const struct tfs_build_options *opts, struct tfs_diag *d)
{
	struct walk w = {.top = dir};
	struct set_check sc = {.first = p->names[0]};
	struct tfs_set_part q;
	char *path = NULL;
	uint32_t i;
	int ret = 0;

	for (i = 0; !ret && i < p->count; i++) {
		if (asprintf(&path, "%s/%s", dir, p->names[i]) < 0) {
			path = NULL;
			ret = tfs_diag_oom(d);
		} else if (add_candidate(&w, path, p->names[i])) {
			ret = tfs_diag_oom(d);
		}
		free(path);
		path = NULL;
	}
	/* a missing part: the message names it (a URL's open does) */
	for (i = 0; !ret && i < w.n; i++) {
		struct stat st;

		if (!tfs_source_is_url(w.v[i].path) &&
		    stat(w.v[i].path, &st) != 0)
			ret = tfs_diag_set(d, -errno,
					   "%s: part %u of %u of the split "
					   "model: %s",
					   w.v[i].rel, i + 1, p->count,
					   strerror(errno));
	}
	if (!ret)
		ret = probe_all(&w, true, d);
	for (i = 0; !ret && i < w.n; i++) {
		struct tfs_diag pd;

		tfs_diag_clear(&pd);
		if (w.v[i].fmt != fmt) {
			ret = tfs_diag_at(d, -EBADMSG, 0,
					  "%s: part %u of %u of a split %s "
					  "model is not %s",
					  w.v[i].rel, i + 1, p->count,
					  fmt->name, fmt->name);
			break;
		}
		ret = fmt->set_part(&w.v[i].src, w.v[i].rel, &q, &pd);
		if (!ret && (q.count != p->count || q.no != i))
			ret = tfs_diag_set(&pd, -EBADMSG,
					   "it says it is part %u of %u, not "
					   "part %u of %u",
					   q.no + 1, q.count, i + 1, p->count);
		if (!ret && i == 0) {
			sc.tensors = q.tensors;
			sc.tensors_at = q.tensors_at;
		}
		tfs_set_part_free(&q);
		if (ret)
			diag_in_file(d, &pd, w.v[i].rel, fmt->name);
	}
	if (!ret)
		ret = load_all(out, &w, dir,
			       &(struct plan){.merged = true,
					      .check = check_set,
					      .arg = &sc},
			       opts, d);
	candidates_free(&w);
	return ret;
}

/*
 * @path's file as a part of a set: 1 when it stands alone (the caller
 * loads it by itself), else the set's mount (0) or a refusal.
 */
int tfs_image_open_set(struct tfs_image **out, const char *path,
		       const struct tfs_source *src,
		       const struct tfs_format *fmt,
		       const struct tfs_build_options *opts, struct tfs_diag *d)
{
	struct tfs_set_part p;
	const char *base = strrchr(path, '/');
	char *dir;
	int ret;

	if (!fmt || !fmt->set_part)
		return 1;
	base = base ? base + 1 : path;
	ret = fmt->set_part(src, base, &p, d);
	if (ret) {
		diag_in_file(d, d, base, fmt->name);
		return ret;
	}
	if (!p.count)
		return 1;
	dir = dir_of(path);
	ret = dir ? open_set(out, dir, fmt, &p, opts, d) : tfs_diag_oom(d);
	free(dir);
	tfs_set_part_free(&p);
	return ret;
}

/*
 * A directory whose containers are all parts of one set (a split model,
 * nothing else): that set, as one tree; a part there that contradicts its
 * name refuses the mount.  1 when it is not such a directory (a part next
 * to other containers is then one container among them).
 */
static int open_dir_set(struct tfs_image **out, const char *dir,
			const struct walk *w,
			const struct tfs_build_options *opts,
			struct tfs_diag *d)
{
	const struct tfs_format *fmt = w->n ? w->v[0].fmt : NULL;
	struct tfs_set_part p = {0}, q;
	struct tfs_diag pd, bad;
	size_t i;
	uint32_t k;
	bool one = fmt && fmt->set_part, same = true;
	int ret, err = 0;

	for (i = 0; one && i < w->n; i++) {
		/* parts in subdirectories are not a set of this directory */
		one = w->v[i].fmt == fmt && !strchr(w->v[i].rel, '/');
		if (!one)
			break;
		tfs_diag_clear(&pd);
		memset(&q, 0, sizeof(q));
		ret = fmt->set_part(&w->v[i].src, w->v[i].rel, &q, &pd);
		if (ret && !err) {
			err = ret;
			diag_in_file(&bad, &pd, w->v[i].rel, fmt->name);
		}
		/* a container that stands alone: not a set's directory */
		one = ret || q.count;
		if (!ret && q.count && !p.count) {
			p = q;
			continue;
		}
		if (!ret && q.count) {
			same = same && q.count == p.count;
			for (k = 0; same && k < p.count; k++)
				same = strcmp(q.names[k], p.names[k]) == 0;
		}
		tfs_set_part_free(&q);
	}
	ret = 1;
	if (one && err) {
		*d = bad;
		ret = err;
	} else if (one && same) {
		ret = open_set(out, dir, fmt, &p, opts, d);
	}
	tfs_set_part_free(&p);
	return ret;
}

/* what group_sets knows of each candidate */
struct part_info {
	int err;	       /* set_part refused it (@why says why) */
	struct tfs_diag why;   /* err */
	struct tfs_set_part p; /* p.count 0: it stands alone */
	size_t dlen;	       /* length of its directory in rel, "/" too */
};

/* the candidate that is @name in the directory of @rel (@dlen), or n */
static size_t find_named(const struct walk *w, const char *rel, size_t dlen,
			 const char *name)
{
	size_t i;

	for (i = 0; i < w->n; i++)
		if (strncmp(w->v[i].rel, rel, dlen) == 0 &&
		    strcmp(w->v[i].rel + dlen, name) == 0)
			break;
	return i;
}

/*
 * Part @i's set: 0 and its parts' candidate indexes in @idx (each of the
 * same format, saying it is part k of the same count), or -1 and @why
 * says which part is missing or wrong.
 */
static int whole_set(const struct walk *w, const struct part_info *pi, size_t i,
		     size_t *idx, struct tfs_diag *why)
{
	const struct tfs_set_part *p = &pi[i].p;
	size_t j;
	uint32_t k;

	for (k = 0; k < p->count; k++) {
		j = find_named(w, w->v[i].rel, pi[i].dlen, p->names[k]);
		if (j == w->n)
			return tfs_diag_set(why, -ENOENT,
					    "part %u of %u of a split model: "
					    "%s is missing",
					    p->no + 1, p->count, p->names[k]);
		if (w->v[j].fmt != w->v[i].fmt || pi[j].err ||
		    pi[j].p.count != p->count || pi[j].p.no != k)
			return tfs_diag_set(why, -EBADMSG,
					    "part %u of %u of a split model: "
					    "%s is not its part %u",
					    p->no + 1, p->count, p->names[k],
					    k + 1);
		idx[k] = j;
	}
	return 0;
}

/*
 * A directory mount: every complete set of files (split parts, all
 * present and consistent) becomes one directory, named by the parts' file
 * name less "-00001-of-0000N.EXT" (the first part's own name if another
 * container wants that directory); its parts follow its first part in the
 * walk.  A part of an incomplete or inconsistent set is left out, with
 * the reason (@why).
 */
static int group_sets(struct walk *w)
{
	struct part_info *pi = calloc(w->n + 1, sizeof(*pi));
	struct candidate *nv = calloc(w->n + 1, sizeof(*nv));
	size_t *idx = calloc(w->n + 1, sizeof(*idx)), i, n = 0, k;
	bool *taken = calloc(w->n + 1, sizeof(*taken));
	struct tfs_diag why;
	char *dir;
	int ret = -ENOMEM;

	if (!pi || !nv || !idx || !taken)
		goto out;
	for (i = 0; i < w->n; i++) {
		const char *base = strrchr(w->v[i].rel, '/');

		pi[i].dlen = base ? (size_t)(base + 1 - w->v[i].rel) : 0;
		tfs_diag_clear(&pi[i].why);
		if (w->v[i].fmt->set_part)
			pi[i].err = w->v[i].fmt->set_part(
				&w->v[i].src, w->v[i].rel + pi[i].dlen,
				&pi[i].p, &pi[i].why);
		if (pi[i].err == -ENOMEM)
			goto out;
		if (pi[i].err && !pi[i].why.format)
			pi[i].why.format = w->v[i].fmt->name;
	}
	for (i = 0; i < w->n; i++) {
		const struct tfs_set_part *p = &pi[i].p;

		if (taken[i])
			continue;
		tfs_diag_clear(&why);
		if (!pi[i].err && p->count < 2) {
			taken[i] = true; /* alone */
			nv[n++] = w->v[i];
			continue;
		}
		if (pi[i].err) {
			why = pi[i].why;
		} else if (!whole_set(w, pi, i, idx, &why) && p->no == 0) {
			dir = strndup(w->v[i].rel, strlen(w->v[i].rel) - 20);
			for (k = 0; dir && k < w->n; k++)
				if (strcmp(w->v[k].dir, dir) == 0)
					break;
			if (dir && k == w->n) {
				free(w->v[i].dir);
				w->v[i].dir = dir;
			} else {
				free(dir);
			}
			w->v[i].nparts = p->count;
			w->v[i].tensors = p->tensors;
			w->v[i].tensors_at = p->tensors_at;
			for (k = 0; k < p->count; k++) {
				taken[idx[k]] = true;
				nv[n++] = w->v[idx[k]];
			}
			continue;
		} else if (!why.msg[0]) {
			/* a complete set: its first part takes it */
			continue;
		}
		w->v[i].why = malloc(sizeof(why));
		if (!w->v[i].why)
			goto out;
		*w->v[i].why = why;
		taken[i] = true;
		nv[n++] = w->v[i];
	}
	/* parts of complete sets whose first part comes later: taken by it */
	for (i = 0; i < w->n; i++)
		if (!taken[i])
			nv[n++] = w->v[i];
	free(w->v);
	w->v = nv;
	w->cap = w->n;
	nv = NULL;
	ret = 0;
out:
	for (i = 0; pi && i < w->n; i++)
		tfs_set_part_free(&pi[i].p);
	free(pi);
	free(nv);
	free(idx);
	free(taken);
	return ret;
}

static tfs_image_url_lister url_lister;

void tfs_image_set_url_lister(tfs_image_url_lister list)
{
	url_lister = list;
}

static int mount_walk(struct tfs_image **out, struct walk *w, const char *dir,
		      const struct tfs_build_options *opts, struct tfs_diag *d);

/* remote directory @dir, no index: its listing walked as a directory's */
static int open_listing(struct tfs_image **out, const char *dir,
			const struct tfs_build_options *opts,
			struct tfs_diag *d)
{
	struct walk w = {.top = dir};
	char **names = NULL, *path;
	size_t n = 0, i;
	int ret;

	if (!url_lister)
		return tfs_diag_set(d, -EINVAL,
				    "remote directories: no lister");
	ret = url_lister(dir, &names, &n, d);
	if (!ret && n > WALK_MAX_FILES)
		ret = tfs_diag_set(d, -E2BIG, "more than %d files under it",
				   WALK_MAX_FILES);
	for (i = 0; !ret && i < n; i++) {
		if (asprintf(&path, "%s/%s", dir, names[i]) < 0) {
			path = NULL;
			ret = tfs_diag_oom(d);
		} else if (add_candidate(&w, path, names[i])) {
			ret = tfs_diag_oom(d);
		}
		free(path);
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (!ret)
		ret = mount_walk(out, &w, dir, opts, d);
	candidates_free(&w);
	return ret;
}

int tfs_image_open_sharded(struct tfs_image **out, const char *dir,
			   const char *index_name,
			   const struct tfs_build_options *opts,
			   struct tfs_diag *d)
{
	tfs_diag_clear(d);
	if (!index_name)
		return open_listing(out, dir, opts, d);
	return open_sharded(out, dir, index_name, opts, d);
}

int tfs_image_open_dir(struct tfs_image **out, const char *dir,
		       const struct tfs_build_options *opts, struct tfs_diag *d)
{
	struct walk w = {.top = dir};
	char *index_name;
	struct stat st;
	int ret;

	tfs_diag_clear(d);
	if (stat(dir, &st) != 0)
		return tfs_diag_set(d, -errno, "%s", strerror(errno));
	index_name = find_index(dir);
	if (index_name) {
		ret = open_sharded(out, dir, index_name, opts, d);
		free(index_name);
		return ret;
	}
	ret = enter_once(&w, &st);
	if (ret > 0)
		ret = walk_dir(&w, dir, "", 0);
	if (ret == -E2BIG)
		ret = tfs_diag_set(d, -E2BIG, "more than %d files under it",
				   WALK_MAX_FILES);
	else if (ret)
		ret = tfs_diag_set(d, ret, "cannot read it: %s",
				   strerror(-ret));
	if (!ret)
		ret = mount_walk(out, &w, dir, opts, d);
	candidates_free(&w);
	return ret;
}

/* does candidate @c cover @o: a file of its own, in its directory or below */
static bool covered_by(const struct candidate *c, const struct candidate *o)
{
	const char *base = strrchr(c->rel, '/');
	size_t dlen = base ? (size_t)(base + 1 - c->rel) : 0;

	return c != o && c->fmt->covers && strncmp(o->rel, c->rel, dlen) == 0 &&
	       c->fmt->covers(&c->src, o->rel + dlen);
}

/* drop the candidates another one covers (struct tfs_format.covers) */
static int drop_covered(struct walk *w)
{
	bool *drop = calloc(w->n + 1, sizeof(*drop));
	size_t i, j, k = 0;

	if (!drop)
		return -ENOMEM;
	for (i = 0; i < w->n; i++)
		for (j = 0; j < w->n && !drop[i]; j++)
			if (covered_by(&w->v[j], &w->v[i]))
				drop[i] = w->v[j].covers = true;
	for (i = 0; i < w->n; i++) {
		if (!drop[i]) {
			w->v[k++] = w->v[i];
			continue;
		}
		free(w->v[i].rel);
		free(w->v[i].dir);
		free(w->v[i].path);
		free(w->v[i].why);
		tfs_source_close(&w->v[i].src);
	}
	w->n = k;
	free(drop);
	return 0;
}

/*
 * The walked files of directory @dir (local, or a remote listing): probed,
 * then one set's tree, or every container a directory.
 */
static int mount_walk(struct tfs_image **out, struct walk *w, const char *dir,
		      const struct tfs_build_options *opts, struct tfs_diag *d)
{
	int ret;

	ret = probe_all(w, false, d);
	if (!ret && drop_covered(w))
		ret = tfs_diag_oom(d);
	if (!ret)
		ret = open_dir_set(out, dir, w, opts, d);
	if (ret == 1 && (choose_dirs(w) || group_sets(w)))
		ret = tfs_diag_oom(d);
	else if (ret == 1)
		ret = load_all(
			out, w, dir,
			&(struct plan){.skip_bad = true,
				       .hf_config = true,
				       .whole = w->n == 1 && w->v[0].covers &&
						!strchr(w->v[0].rel, '/')},
			opts, d);
	return ret;
}

/*
 * Several files: a part of a set (a split model) brings the parts not
 * given, from its own directory, so that the set loads whole; a missing
 * one refuses the mount, naming it.
 */
static int add_set_parts(struct walk *w, struct tfs_diag *d)
{
	size_t i, n0 = w->n, first;
	struct tfs_set_part p;
	struct tfs_diag pd;
	uint32_t k;
	char *dir, *path = NULL;
	int ret = 0;

	for (i = 0; !ret && i < n0; i++) {
		if (!w->v[i].fmt->set_part ||
		    w->v[i].fmt->set_part(&w->v[i].src, w->v[i].rel, &p, &pd))
			continue; /* a contradiction is for group_sets */
		dir = p.count >= 2 ? dir_of(w->v[i].path) : NULL;
		for (k = 0; dir && !ret && k < p.count; k++) {
			if (find_named(w, p.names[k], 0, p.names[k]) < w->n)
				continue;
			first = w->n;
			if (asprintf(&path, "%s/%s", dir, p.names[k]) < 0) {
				path = NULL;
				ret = tfs_diag_oom(d);
			} else if (add_candidate(w, path, p.names[k]))
				ret = tfs_diag_oom(d);
			else if (tfs_source_open(&w->v[first].src, path, &pd)) {
				diag_in_file(d, &pd, p.names[k], NULL);
				ret = d->err;
			} else {
				w->v[first].fmt =
					tfs_format_detect(&w->v[first].src);
				if (!w->v[first].fmt)
					ret = tfs_diag_at(
						d, -ENOEXEC, 0,
						"%s: magic: not a container "
						"format tensorfs recognises",
						path);
			}
			free(path);
		}
		if (p.count >= 2 && !dir && !ret)
			ret = tfs_diag_oom(d);
		free(dir);
		tfs_set_part_free(&p);
	}
	return ret;
}

int tfs_image_open_files(struct tfs_image **out, const char *const *paths,
			 size_t n, const struct tfs_build_options *opts,
			 struct tfs_diag *d)
{
	struct walk w = {0};
	size_t i;
	int ret = 0;

	tfs_diag_clear(d);
	for (i = 0; !ret && i < n; i++) {
		const char *base = strrchr(paths[i], '/');

		ret = add_candidate(&w, paths[i], base ? base + 1 : paths[i]);
	}
	if (ret)
		ret = tfs_diag_oom(d);
	if (!ret)
		ret = probe_known(&w, true, d);
	if (!ret)
		ret = add_set_parts(&w, d);
	if (!ret && (choose_dirs(&w) || group_sets(&w)))
		ret = tfs_diag_oom(d);
	if (!ret)
		ret = load_all(out, &w, paths[0], &(struct plan){0}, opts, d);
	candidates_free(&w);
	return ret;
}
