// SPDX-License-Identifier: MIT
/*
 * Mounts of several containers: a directory (tfs_image_open_dir) or a list
 * of files (tfs_image_open_files), see include/tensorfs/image.h.
 *
 * Every candidate file is opened and probed first (the readers' probes look
 * at a few bytes only), so the directory each container gets can be chosen
 * knowing all of them: "a/b.safetensors" is "a/b", unless another container
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

#include "tensorfs/builder.h"
#include "tensorfs/diag.h"
#include "tensorfs/format.h"
#include "tensorfs/image.h"
#include "tensorfs/source.h"
#include "image_i.h"

#define WALK_MAX_DEPTH 32
#define WALK_MAX_FILES 100000

struct candidate {
	char *rel;  /* label: path relative to the directory (or as given) */
	char *dir;  /* the directory it becomes */
	char *path; /* what to open */
	struct tfs_source src;
	const struct tfs_format *fmt;
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

/* "a/b.safetensors" -> "a/b"; NULL when the name has no extension */
static char *strip_extension(const char *rel)
{
	const char *base = strrchr(rel, '/'), *dot;

	base = base ? base + 1 : rel;
	dot = strrchr(base, '.');
	if (!dot || dot == base)
		return NULL;
	return strndup(rel, (size_t)(dot - rel));
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
			*d = od;
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

/*
 * Load the probed candidates into one builder.  @skip_bad: a container that
 * fails is left out (a directory); otherwise its failure fails the open.
 */
static int load_all(struct tfs_image **out, struct walk *w, const char *top,
		    bool skip_bad, const struct tfs_build_options *opts,
		    struct tfs_diag *d)
{
	struct tfs_builder *b = NULL;
	struct tfs_image *img;
	size_t i;
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
	for (i = 0; i < w->n; i++) {
		struct candidate *c = &w->v[i];
		struct tfs_builder_source bs = {
			.src = &c->src, .label = c->rel, .dir = c->dir};
		struct tfs_diag cd;

		tfs_diag_clear(&cd);
		ret = tfs_builder_begin_source(b, &bs);
		if (ret) {
			ret = tfs_diag_oom(d);
			goto out;
		}
		ret = c->fmt->load(&c->src, b, &cd);
		if (!ret)
			ret = tfs_builder_end_source(b, &cd);
		if (!ret) {
			/* the builder's source index is img->nsrcs */
			img->srcs[img->nsrcs++] = c->src;
			memset(&c->src, 0, sizeof(c->src));
			c->src.fd = -1;
			continue;
		}
		tfs_builder_abort_source(b);
		if (!cd.format)
			cd.format = c->fmt->name;
		if (!skip_bad) {
			/* the message names the file */
			*d = cd;
			snprintf(d->msg, sizeof(d->msg), "%.60s: %.*s", c->rel,
				 (int)sizeof(d->msg) - 64, cd.msg);
			goto out;
		}
		ret = add_skipped(img, c->rel, &cd);
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
	ret = tfs_image_finish_load(img, b, "directory", d);
out:
	tfs_builder_free(b);
	if (ret) {
		tfs_image_close(img);
		return ret;
	}
	*out = img;
	return 0;
}

int tfs_image_open_dir(struct tfs_image **out, const char *dir,
		       const struct tfs_build_options *opts, struct tfs_diag *d)
{
	struct walk w = {.top = dir};
	struct stat st;
	int ret;

	tfs_diag_clear(d);
	if (stat(dir, &st) != 0)
		return tfs_diag_set(d, -errno, "%s", strerror(errno));
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
		ret = probe_all(&w, false, d);
	if (!ret && choose_dirs(&w))
		ret = tfs_diag_oom(d);
	if (!ret)
		ret = load_all(out, &w, dir, true, opts, d);
	candidates_free(&w);
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
		ret = probe_all(&w, true, d);
	for (i = 0; !ret && i < w.n; i++)
		if (!w.v[i].fmt)
			ret = tfs_diag_at(d, -ENOEXEC, 0,
					  "%s: magic: not a container format "
					  "tensorfs recognises",
					  w.v[i].path);
	if (!ret && choose_dirs(&w))
		ret = tfs_diag_oom(d);
	if (!ret)
		ret = load_all(out, &w, paths[0], false, opts, d);
	candidates_free(&w);
	return ret;
}
