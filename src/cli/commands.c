// SPDX-License-Identifier: MIT
/*
 * The FUSE-free subcommands: ls, cat, info, xattr.  Each opens the
 * container exactly as a mount would (same validation, same tree), so what
 * they print is what the mount shows.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "tensorfs/format.h"
#include "tensorfs/tree.h"

int tfs_exit_for(int err)
{
	switch (err) {
	case -EBADMSG:
	case -E2BIG:
		return TFS_EXIT_MALFORMED;
	case -ENOTSUP:
	case -ENOEXEC:
		return TFS_EXIT_UNSUPPORTED;
	case -ENOMEM:
		return TFS_EXIT_USAGE;
	default:
		return TFS_EXIT_IO;
	}
}

int tfs_cli_open(const char *path, const struct tfs_build_options *opts,
		 struct tfs_image **img)
{
	struct tfs_diag d;
	char line[512];
	int ret;

	tfs_diag_clear(&d);
	ret = tfs_image_open(img, path, opts, &d);
	if (ret) {
		tfs_diag_format(&d, line, sizeof(line));
		fprintf(stderr, "%s: %s: %s\n", tfs_progname, path, line);
		return tfs_exit_for(ret);
	}
	return 0;
}

/* parse "[--flat] ARGS...": returns the index of the first positional */
static int common_args(int argc, char **argv, struct tfs_build_options *o)
{
	int i = 1;

	memset(o, 0, sizeof(*o));
	for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		if (strcmp(argv[i], "--flat") == 0) {
			o->flat = true;
		} else if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		} else {
			fprintf(stderr, "%s %s: unknown option %s\n",
				tfs_progname, argv[0], argv[i]);
			return -1;
		}
	}
	return i;
}

static void shape_str(char *buf, size_t len, const struct tfs_tensor *t)
{
	size_t o = 0;
	uint32_t i;

	o += (size_t)snprintf(buf, len, "[");
	for (i = 0; i < t->ndim && o < len; i++)
		o += (size_t)snprintf(buf + o, len - o, "%s%llu", i ? "," : "",
				      (unsigned long long)t->shape[i]);
	if (o < len)
		snprintf(buf + o, len - o, "]");
}

static int cmp_path(const void *a, const void *b)
{
	return strcmp((*(const struct tfs_tensor *const *)a)->path,
		      (*(const struct tfs_tensor *const *)b)->path);
}

int tfs_cmd_ls(int argc, char **argv)
{
	struct tfs_build_options o;
	struct tfs_image *img;
	const struct tfs_tensor **v;
	char shape[256];
	int i = common_args(argc, argv, &o), ret, w = 4;
	uint32_t k;

	if (i < 0 || argc - i != 1) {
		fprintf(stderr, "usage: %s ls [--flat] CONTAINER\n",
			tfs_progname);
		return TFS_EXIT_USAGE;
	}
	ret = tfs_cli_open(argv[i], &o, &img);
	if (ret)
		return ret;
	v = calloc(img->tree->ntensors + 1, sizeof(*v));
	if (!v) {
		tfs_image_close(img);
		return TFS_EXIT_USAGE;
	}
	for (k = 0; k < img->tree->ntensors; k++) {
		v[k] = &img->tree->tensors[k];
		if ((int)strlen(v[k]->path) > w)
			w = (int)strlen(v[k]->path);
	}
	qsort(v, img->tree->ntensors, sizeof(*v), cmp_path);
	for (k = 0; k < img->tree->ntensors; k++) {
		shape_str(shape, sizeof(shape), v[k]);
		printf("%-*s  %-9s %-16s %12llu\n", w, v[k]->path, v[k]->dtype,
		       shape, (unsigned long long)v[k]->size);
	}
	free(v);
	tfs_image_close(img);
	return TFS_EXIT_OK;
}

/* a node by mount path, else a tensor by its stored name */
static uint32_t find_node(const struct tfs_tree *t, const char *what)
{
	uint32_t n = tfs_tree_resolve(t, what), k;

	if (n != TFS_NO_NODE)
		return n;
	for (k = 0; k < t->ntensors; k++)
		if (t->tensors[k].group == TFS_NO_NODE &&
		    t->tensors[k].name_len == strlen(what) &&
		    memcmp(t->tensors[k].name, what, t->tensors[k].name_len) ==
			    0)
			return t->tensors[k].node;
	return TFS_NO_NODE;
}

static int write_all(int fd, const void *p, size_t len)
{
	const char *c = p;
	ssize_t n;

	while (len) {
		n = write(fd, c, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		c += n;
		len -= (size_t)n;
	}
	return 0;
}

int tfs_cmd_cat(int argc, char **argv)
{
	struct tfs_build_options o;
	struct tfs_image *img;
	struct tfs_view v;
	uint64_t off = 0, size;
	uint32_t n;
	int i = common_args(argc, argv, &o), ret;

	if (i < 0 || argc - i != 2) {
		fprintf(stderr, "usage: %s cat [--flat] CONTAINER NAME|PATH\n",
			tfs_progname);
		return TFS_EXIT_USAGE;
	}
	ret = tfs_cli_open(argv[i], &o, &img);
	if (ret)
		return ret;
	n = find_node(img->tree, argv[i + 1]);
	if (n == TFS_NO_NODE || img->tree->nodes[n].kind == TFS_NODE_DIR) {
		fprintf(stderr, "%s: %s: %s: %s\n", tfs_progname, argv[i],
			argv[i + 1],
			n == TFS_NO_NODE ? "no such tensor or path"
					 : "is a directory");
		tfs_image_close(img);
		return TFS_EXIT_NOTFOUND;
	}
	size = tfs_node_size(img->tree, n);
	while (off < size) {
		ret = tfs_image_read(img, n, off, 1 << 20, &v);
		if (!ret && v.len == 0)
			ret = -EIO;
		if (!ret)
			ret = write_all(STDOUT_FILENO, v.data, v.len);
		off += v.len;
		tfs_view_release(img, &v);
		if (ret) {
			fprintf(stderr, "%s: %s: %s: %s\n", tfs_progname,
				argv[i], argv[i + 1], strerror(-ret));
			tfs_image_close(img);
			return TFS_EXIT_IO;
		}
	}
	tfs_image_close(img);
	return TFS_EXIT_OK;
}

int tfs_cmd_info(int argc, char **argv)
{
	struct tfs_build_options o;
	struct tfs_image *img;
	const struct tfs_node *meta;
	uint32_t n;
	int i = common_args(argc, argv, &o), ret;

	if (i < 0 || argc - i != 1) {
		fprintf(stderr, "usage: %s info [--flat] CONTAINER\n",
			tfs_progname);
		return TFS_EXIT_USAGE;
	}
	ret = tfs_cli_open(argv[i], &o, &img);
	if (ret)
		return ret;
	printf("file:     %s\n", argv[i]);
	printf("format:   %s (%s)\n", img->format->name,
	       img->format->description);
	printf("size:     %llu bytes\n", (unsigned long long)img->src.size);
	printf("tensors:  %u files, %llu bytes of tensor data\n",
	       img->tree->ntensors,
	       (unsigned long long)img->tree->total_bytes);
	n = tfs_tree_resolve(img->tree, ".tensorfs/metadata.json");
	if (n != TFS_NO_NODE) {
		meta = &img->tree->nodes[n];
		printf("metadata: ");
		fwrite(meta->mem, 1, meta->mem_len, stdout);
	}
	tfs_image_close(img);
	return TFS_EXIT_OK;
}

int tfs_cmd_xattr(int argc, char **argv)
{
	struct tfs_build_options o;
	struct tfs_image *img;
	const struct tfs_node *nd;
	const char *path;
	uint32_t n, k;
	size_t j;
	int i = common_args(argc, argv, &o), ret;

	if (i < 0 || argc - i < 1 || argc - i > 2) {
		fprintf(stderr, "usage: %s xattr [--flat] CONTAINER [PATH]\n",
			tfs_progname);
		return TFS_EXIT_USAGE;
	}
	ret = tfs_cli_open(argv[i], &o, &img);
	if (ret)
		return ret;
	path = argc - i == 2 ? argv[i + 1] : "";
	n = find_node(img->tree, path);
	if (n == TFS_NO_NODE) {
		fprintf(stderr, "%s: %s: %s: no such tensor or path\n",
			tfs_progname, argv[i], path);
		tfs_image_close(img);
		return TFS_EXIT_NOTFOUND;
	}
	nd = &img->tree->nodes[n];
	for (k = 0; k < nd->nxattrs; k++) {
		printf("%s=\"", nd->xattrs[k].name);
		for (j = 0; j < nd->xattrs[k].len; j++) {
			unsigned char c = (unsigned char)nd->xattrs[k].value[j];

			if (c == '"' || c == '\\')
				printf("\\%c", c);
			else if (c < 0x20 || c == 0x7f)
				printf("\\%03o", c);
			else
				putchar(c);
		}
		printf("\"\n");
	}
	tfs_image_close(img);
	return TFS_EXIT_OK;
}
