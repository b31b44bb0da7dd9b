// SPDX-License-Identifier: MIT
/*
 * The FUSE-free subcommands: ls, cat, info, xattr, verify.  Each opens the
 * container exactly as a mount would (same validation, same tree), so what
 * they print is what the mount shows.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "tensorfs/codec.h"
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

int tfs_cli_open_inputs(char *const *inputs, int n,
			const struct tfs_build_options *opts,
			struct tfs_image **img)
{
	const char *path = inputs[0];
	struct tfs_diag d;
	char line[512], shown[1024];
	uint32_t i;
	int ret;

	tfs_diag_clear(&d);
	if (tfs_cli_remote_setup())
		return TFS_EXIT_USAGE;
	if (n == 1)
		ret = tfs_image_open(img, path, opts, &d);
	else
		ret = tfs_image_open_files(img, (const char *const *)inputs,
					   (size_t)n, opts, &d);
	if (ret) {
		tfs_diag_format(&d, line, sizeof(line));
		fprintf(stderr, "%s: %s: %s\n", tfs_progname,
			tfs_cli_shown(path, shown, sizeof(shown)), line);
		return tfs_exit_for(ret);
	}
	/* a directory mount goes on without the containers that failed */
	for (i = 0; i < (*img)->nskipped; i++)
		fprintf(stderr, "%s: warning: %s/%s: left out: %s\n",
			tfs_progname, path, (*img)->skipped[i].path,
			(*img)->skipped[i].why);
	return 0;
}

/* what a subcommand takes after its options */
struct cmd_args {
	const char *tail; /* usage after the inputs: "NAME|PATH", "[PATH]" */
	bool one_input;	  /* exactly one INPUT (else INPUT...) */
	int trailing;	  /* arguments after the inputs (cat: 1) */
	int optional;	  /* of which optional (xattr: 1) */
};

static void cmd_usage(FILE *f, const char *cmd, const struct cmd_args *a)
{
	fprintf(f, "usage: %s %s [--flat] [--npy] %s%s%s\n", tfs_progname, cmd,
		a->one_input ? "INPUT" : "INPUT...", *a->tail ? " " : "",
		a->tail);
	if (f == stdout)
		fprintf(f,
			"  INPUT    a container file or a directory (a sharded "
			"model is one tree)\n"
			"  --flat   every tensor at the root under its full "
			"stored name\n"
			"  --npy    every tensor file as PATH.npy (numpy's "
			"header, then the bytes)\n"
			"See 'tensorfs --help' for the rest.\n");
}

/*
 * The start of every subcommand: options, INPUT..., the trailing
 * arguments; then open the inputs.  Returns 0 with *img, *first (index of
 * the first input in argv) and *ninputs, or the exit status to return
 * (-1: --help was printed, exit 0).
 */
static int open_for(int argc, char **argv, const struct cmd_args *a,
		    struct tfs_image **img, int *first, int *ninputs)
{
	struct tfs_build_options o = {0};
	int i = 1, npos, n;

	for (; i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
		if (strcmp(argv[i], "--flat") == 0) {
			o.flat = true;
		} else if (strcmp(argv[i], "--npy") == 0) {
			o.npy = true;
		} else if (strcmp(argv[i], "--help") == 0 ||
			   strcmp(argv[i], "-h") == 0) {
			cmd_usage(stdout, argv[0], a);
			return -1;
		} else if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		} else {
			fprintf(stderr, "%s %s: unknown option %s\n",
				tfs_progname, argv[0], argv[i]);
			cmd_usage(stderr, argv[0], a);
			return TFS_EXIT_USAGE;
		}
	}
	npos = argc - i;
	n = a->one_input ? 1 : npos - a->trailing;
	if (n < 1 || npos - n > a->trailing ||
	    npos - n < a->trailing - a->optional) {
		cmd_usage(stderr, argv[0], a);
		return TFS_EXIT_USAGE;
	}
	*first = i;
	*ninputs = n;
	return tfs_cli_open_inputs(argv + i, n, &o, img);
}

/* the exit status of open_for's result: --help is a success */
#define OPENED(ret) ((ret) == -1 ? TFS_EXIT_OK : (ret))

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

/* the image's tensor records sorted by path (malloc'd), or NULL */
static const struct tfs_tensor **sorted_tensors(const struct tfs_image *img)
{
	const struct tfs_tensor **v;
	uint32_t k;

	v = calloc(img->tree->ntensors + 1, sizeof(*v));
	if (!v)
		return NULL;
	for (k = 0; k < img->tree->ntensors; k++)
		v[k] = &img->tree->tensors[k];
	qsort(v, img->tree->ntensors, sizeof(*v), cmp_path);
	return v;
}

int tfs_cmd_ls(int argc, char **argv)
{
	struct tfs_image *img;
	const struct tfs_tensor **v;
	static const struct cmd_args a = {.tail = ""};
	char shape[256];
	int i, n, ret, w = 4;
	uint32_t k;

	ret = open_for(argc, argv, &a, &img, &i, &n);
	if (ret)
		return OPENED(ret);
	v = sorted_tensors(img);
	if (!v) {
		tfs_image_close(img);
		return TFS_EXIT_USAGE;
	}
	/* align on the longest path, up to a point: a 250-byte name must
	 * not push every other line off the screen */
	for (k = 0; k < img->tree->ntensors; k++)
		if ((int)strlen(v[k]->path) > w)
			w = (int)strlen(v[k]->path);
	if (w > 64)
		w = 64;
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

/* integrity failures met by reads (digest, zstd) go to stderr */
static void log_stderr(void *arg, const char *line)
{
	(void)arg;
	fprintf(stderr, "%s: %s\n", tfs_progname, line);
}

int tfs_cmd_cat(int argc, char **argv)
{
	static const struct cmd_args a = {.tail = "NAME|PATH", .trailing = 1};
	struct tfs_image_options io = {.log = log_stderr};
	struct tfs_image *img;
	struct tfs_view v;
	uint64_t off = 0, size;
	const char *what;
	uint32_t n;
	int i, k, ret;

	ret = open_for(argc, argv, &a, &img, &i, &k);
	if (ret)
		return OPENED(ret);
	what = argv[i + k];
	tfs_image_configure(img, &io);
	n = find_node(img->tree, what);
	if (n == TFS_NO_NODE || img->tree->nodes[n].kind == TFS_NODE_DIR) {
		fprintf(stderr, "%s: %s: %s: %s\n", tfs_progname, argv[i], what,
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
				argv[i], what, strerror(-ret));
			tfs_image_close(img);
			return TFS_EXIT_IO;
		}
	}
	tfs_image_close(img);
	return TFS_EXIT_OK;
}

int tfs_cmd_info(int argc, char **argv)
{
	struct tfs_image *img;
	static const struct cmd_args a = {.tail = ""};
	const struct tfs_node *meta;
	uint64_t size;
	uint32_t n, k;
	int i, ni, ret;

	ret = open_for(argc, argv, &a, &img, &i, &ni);
	if (ret)
		return OPENED(ret);
	printf("file:     %s\n", argv[i]);
	if (img->format)
		printf("format:   %s (%s)\n", img->format->name,
		       img->format->description);
	else
		printf("format:   %s (%u containers)\n", img->tree->format,
		       img->nsrcs);
	for (size = 0, k = 0; k < img->nsrcs; k++)
		size += img->srcs[k].size;
	printf("size:     %llu bytes\n", (unsigned long long)size);
	printf("tensors:  %u files, %llu bytes of tensor data\n",
	       img->tree->ntensors, (unsigned long long)img->tree->total_bytes);
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
	struct tfs_image *img;
	const struct tfs_node *nd;
	static const struct cmd_args a = {.tail = "[PATH]",
					  .one_input = true,
					  .trailing = 1,
					  .optional = 1};
	const char *path;
	uint32_t n, k;
	size_t j;
	int i, ni, ret;

	ret = open_for(argc, argv, &a, &img, &i, &ni);
	if (ret)
		return OPENED(ret);
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

/* ---- verify ---------------------------------------------------------------
 */

struct progress {
	bool on; /* stderr is a terminal and the work is large */
	uint64_t total, done_before, now;
	struct timespec last;
};

static void progress_show(struct progress *p, bool force)
{
	struct timespec t;
	double ms;

	if (!p->on)
		return;
	clock_gettime(CLOCK_MONOTONIC, &t);
	ms = (double)(t.tv_sec - p->last.tv_sec) * 1e3 +
	     (double)(t.tv_nsec - p->last.tv_nsec) / 1e6;
	if (!force && ms < 200)
		return;
	p->last = t;
	fprintf(stderr, "\rverifying: %3d%% (%llu of %llu MiB)",
		p->total ? (int)(p->now * 100 / p->total) : 100,
		(unsigned long long)(p->now >> 20),
		(unsigned long long)(p->total >> 20));
	fflush(stderr);
}

static void progress_cb(void *arg, uint64_t done)
{
	struct progress *p = arg;

	p->now = p->done_before + done;
	progress_show(p, false);
}

/* the readers' warnings (rules they report, not enforce) */
static unsigned print_warnings(const struct tfs_image *img)
{
	uint32_t i;

	for (i = 0; i < img->tree->nwarnings; i++)
		printf("warning  %s\n", img->tree->warnings[i].msg);
	return img->tree->nwarnings;
}

int tfs_cmd_verify(int argc, char **argv)
{
	struct tfs_image *img;
	struct tfs_check_result r;
	struct progress p = {0};
	const struct tfs_tensor **v;
	static const struct cmd_args a = {.tail = ""};
	unsigned failed = 0, digests = 0, unknown = 0, decoded = 0, warnings;
	uint32_t k, idx;
	int i, ni, ret;

	/* loading checks every structural rule; a failure is one line */
	ret = open_for(argc, argv, &a, &img, &i, &ni);
	if (ret)
		return OPENED(ret);
	v = sorted_tensors(img);
	if (!v) {
		tfs_image_close(img);
		return TFS_EXIT_USAGE;
	}
	for (k = 0; k < img->tree->ntensors; k++)
		p.total += v[k]->stored_length;
	p.on = isatty(STDERR_FILENO) && p.total >= (64u << 20);
	warnings = print_warnings(img);
	for (k = 0; k < img->tree->ntensors; k++) {
		idx = (uint32_t)(v[k] - img->tree->tensors);
		p.done_before = p.now;
		tfs_image_check_tensor(img, idx, &r, progress_cb, &p);
		p.now = p.done_before + v[k]->stored_length;
		if (p.on)
			fprintf(stderr, "\r\033[K");
		if (r.digest_checked)
			digests++;
		if (r.digest == TFS_DIGEST_UNKNOWN)
			unknown++;
		if (v[k]->encoding != TFS_ENCODING_RAW)
			decoded++;
		if (r.err) {
			failed++;
			printf("FAILED   %s: %s\n", v[k]->path, r.msg);
		} else {
			printf("ok       %s (%s%s%s", v[k]->path,
			       r.digest_checked ? tfs_digest_alg_name(r.digest)
			       : r.digest == TFS_DIGEST_UNKNOWN
				       ? "digest of an unknown algorithm, not "
					 "checked"
				       : "no digest",
			       r.digest_checked ? " matches" : "",
			       v[k]->encoding != TFS_ENCODING_RAW ? "; "
								  : ")\n");
			if (v[k]->encoding != TFS_ENCODING_RAW)
				printf("%s decodes to %llu bytes)\n",
				       tfs_encoding_name(v[k]->encoding),
				       (unsigned long long)v[k]->size);
		}
		fflush(stdout);
		progress_show(&p, false);
	}
	if (p.on)
		fprintf(stderr, "\r\033[K");
	printf("%s: %u %s, %u ok, %u failed; %u %s checked, %u with an "
	       "unknown algorithm (not checked), %u decoded; %u %s\n",
	       argv[i], img->tree->ntensors,
	       img->tree->ntensors == 1 ? "tensor" : "tensors",
	       img->tree->ntensors - failed, failed, digests,
	       digests == 1 ? "digest" : "digests", unknown, decoded, warnings,
	       warnings == 1 ? "warning" : "warnings");
	free(v);
	tfs_image_close(img);
	return failed ? TFS_EXIT_MALFORMED : TFS_EXIT_OK;
}
