// SPDX-License-Identifier: MIT
/*
 * The FUSE-free subcommands: ls, cat, info, xattr, verify.  Each opens the
 * container exactly as a mount would (same validation, same tree), so what
 * they print is what the mount shows.
 */
#include <errno.h>
#include <stdarg.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include <jansson.h>

#include "cli/cli.h"
#include "core/checked.h"
#include "core/fd_write.h"
#include "codec/codec.h"
#include "core/format.h"
#include "core/names.h"
#include "core/text.h"
#include "core/tree.h"

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

int tfs_cli_say(FILE *f, const char *fmt, ...)
{
	va_list ap;
	char *raw, *safe;
	bool nl;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&raw, fmt, ap);
	va_end(ap);
	if (n < 0)
		return EOF;
	nl = n > 0 && raw[n - 1] == '\n';
	safe = tfs_text_safe_dup(raw, (size_t)n - nl);
	free(raw);
	if (!safe)
		return EOF;
	n = fputs(safe, f);
	if (nl && n != EOF)
		n = fputc('\n', f);
	free(safe);
	return n;
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
		/* of several files, the one that failed, as it was given */
		for (i = 0; n > 1 && d.file[0] && i < (uint32_t)n; i++) {
			const char *base = strrchr(inputs[i], '/');

			if (strcmp(base ? base + 1 : inputs[i], d.file) == 0) {
				path = inputs[i];
				d.file[0] = '\0';
				break;
			}
		}
		tfs_diag_format(&d, line, sizeof(line));
		tfs_cli_say(stderr, "%s: %s: %s\n", tfs_progname,
			    tfs_cli_shown(path, shown, sizeof(shown)), line);
		return tfs_exit_for(ret);
	}
	/* a directory mount goes on without the containers that failed */
	for (i = 0; i < (*img)->nskipped; i++)
		tfs_cli_say(stderr, "%s: warning: %s/%s: left out: %s\n",
			    tfs_progname,
			    tfs_cli_shown(path, shown, sizeof(shown)),
			    (*img)->skipped[i].path, (*img)->skipped[i].why);
	return 0;
}

void tfs_cli_cmd_usage(FILE *f, const char *cmd, const struct tfs_cli_cmd *a)
{
	fprintf(f, "usage: %s %s [--flat] [--npy] [--as float32]%s%s %s%s%s\n",
		tfs_progname, cmd, a->opts_usage ? " " : "",
		a->opts_usage ? a->opts_usage : "",
		a->one_input ? "INPUT" : "INPUT...", *a->tail ? " " : "",
		a->tail);
	if (f != stdout)
		return;
	if (a->what)
		fprintf(f, "%s\n", a->what);
	fprintf(f, "  INPUT    a container file or a directory (a sharded "
		   "model is one tree)\n"
		   "  --flat   every tensor at the root under its full "
		   "stored name\n"
		   "  --npy    every tensor file as PATH.npy (numpy's "
		   "header, then the bytes)\n"
		   "  --as float32\n"
		   "           numeric tensors of another dtype as float32 "
		   "values\n"
		   "  --previews\n"
		   "           PATH.png pictures beside numeric tensors (for "
		   "cat)\n");
	if (a->opts_help)
		fputs(a->opts_help, f);
	fprintf(f, "See 'tensorfs --help' and tensorfs(1) for the rest.\n");
}

bool tfs_cli_as_option(int argc, char **argv, int *i,
		       struct tfs_build_options *o)
{
	const char *val;

	if (strcmp(argv[*i], "--as") == 0) {
		if (*i + 1 == argc) {
			val = "";
		} else {
			val = argv[++*i];
		}
	} else if (strncmp(argv[*i], "--as=", 5) == 0) {
		val = argv[*i] + 5;
	} else {
		return false;
	}
	if (tfs_parse_as(val, &o->as, &o->as_all)) {
		tfs_cli_say(stderr,
			    "%s: --as %s: the one converting view is "
			    "float32 (float32,all: integers and bool too)\n",
			    tfs_progname, val);
		*i = -1;
	}
	return true;
}

int tfs_cli_getopt(int argc, char **argv,
		   int (*take)(void *ctx, int argc, char **argv, int *i),
		   void *ctx, int *first, int *bad)
{
	char **pos = malloc(((size_t)argc + 1) * sizeof(*pos));
	int i, j, npos = 0, nopt = 1, ret = 0;
	bool ended = false;

	if (!pos)
		return -1;
	for (i = 1; i < argc; i++) {
		if (ended || argv[i][0] != '-' || !argv[i][1]) {
			pos[npos++] = argv[i];
			continue;
		}
		if (strcmp(argv[i], "--") == 0) {
			ended = true;
			continue;
		}
		j = i;
		ret = take(ctx, argc, argv, &i);
		if (ret <= 0) {
			*bad = j;
			ret = ret < 0 ? -1 : 1;
			goto out;
		}
		ret = 0;
		/* the option and any value it took, kept before the rest */
		for (; j <= i; j++)
			argv[nopt++] = argv[j];
	}
	memcpy(argv + nopt, pos, (size_t)npos * sizeof(*pos));
	*first = nopt;
out:
	free(pos);
	return ret;
}

/* what tfs_cli_open_cmd's options need */
struct open_opts {
	const struct tfs_cli_cmd *a;
	void *ctx;
	struct tfs_build_options o;
	bool help;
};

/* @opt as one of the plain @flags a subcommand takes, into @ctx */
static bool take_flag(unsigned flags, void *ctx, const char *opt)
{
	struct tfs_cli_flags *f = ctx;

	if ((flags & TFS_CLI_JSON) && strcmp(opt, "--json") == 0)
		return f->json = true;
	if ((flags & TFS_CLI_PATHS) && strcmp(opt, "--paths") == 0)
		return f->paths = true;
	if ((flags & TFS_CLI_FULL) && strcmp(opt, "--full") == 0)
		return f->full = true;
	return false;
}

static int take_open_option(void *arg, int argc, char **argv, int *i)
{
	struct open_opts *p = arg;
	const char *opt = argv[*i];

	if (strcmp(opt, "--flat") == 0)
		p->o.flat = true;
	else if (strcmp(opt, "--npy") == 0)
		p->o.npy = true;
	else if (strcmp(opt, "--previews") == 0)
		p->o.previews = true;
	else if (tfs_cli_as_option(argc, argv, i, &p->o))
		return *i < 0 ? -1 : 1;
	else if (strcmp(opt, "--help") == 0 || strcmp(opt, "-h") == 0)
		p->help = true;
	else if (!take_flag(p->a->flags, p->ctx, opt) &&
		 (!p->a->option || !p->a->option(p->ctx, opt)))
		return 0;
	return 1;
}

int tfs_cli_open_cmd(int argc, char **argv, const struct tfs_cli_cmd *a,
		     void *ctx, struct tfs_image **img, int *first,
		     int *ninputs)
{
	struct open_opts p = {.a = a, .ctx = ctx};
	int i, npos, n, bad = 0, ret;

	ret = tfs_cli_getopt(argc, argv, take_open_option, &p, &i, &bad);
	if (ret > 0) {
		tfs_cli_say(stderr, "%s %s: unknown option %s\n", tfs_progname,
			    argv[0], argv[bad]);
		tfs_cli_cmd_usage(stderr, argv[0], a);
		return TFS_EXIT_USAGE;
	}
	if (ret < 0)
		return TFS_EXIT_USAGE;
	if (p.help) {
		tfs_cli_cmd_usage(stdout, argv[0], a);
		return -1;
	}
	npos = argc - i;
	n = a->one_input ? 1 : npos - a->trailing;
	if (n < 1 || npos < n || (!a->any_trailing && npos - n > a->trailing) ||
	    npos - n < a->trailing - a->optional) {
		tfs_cli_cmd_usage(stderr, argv[0], a);
		return TFS_EXIT_USAGE;
	}
	*first = i;
	*ninputs = n;
	p.o.no_export = a->no_export;
	if (a->build && a->build(ctx, &p.o))
		return TFS_EXIT_USAGE;
	return tfs_cli_open_inputs(argv + i, n, &p.o, img);
}

static int cmp_path(const void *a, const void *b)
{
	return strcmp((*(const struct tfs_tensor *const *)a)->path,
		      (*(const struct tfs_tensor *const *)b)->path);
}

const struct tfs_tensor **tfs_cli_sorted_tensors(const struct tfs_image *img)
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

/* columns on a terminal a UTF-8 string takes (wcwidth; 1 when unknown) */
static int display_width(const char *s)
{
	mbstate_t st;
	size_t n, len = strlen(s);
	wchar_t wc;
	int w = 0, cw;

	memset(&st, 0, sizeof(st));
	while (len) {
		/* printable ASCII, most of every name: one column each */
		if ((unsigned char)*s >= 0x20 && (unsigned char)*s < 0x7f) {
			w++;
			s++;
			len--;
			continue;
		}
		n = mbrtowc(&wc, s, len, &st);
		if (n == (size_t)-1 || n == (size_t)-2 || n == 0) {
			memset(&st, 0, sizeof(st));
			n = 1;
			cw = 1;
		} else {
			cw = wcwidth(wc);
			if (cw < 0)
				cw = 1;
		}
		w += cw;
		s += n;
		len -= n;
	}
	return w;
}

/* @s, then spaces up to @w display columns */
static void print_padded(const char *s, int w)
{
	int pad = w - display_width(s);

	fputs(s, stdout);
	printf("%*s", pad > 0 ? pad : 0, "");
}

/* what ls shows of a tensor record */
struct ls_row {
	char *name; /* malloc'd */
	char shape[256];
	const char *dtype;
	uint64_t bytes;
};

static int ls_row(const struct tfs_tree *t, const struct tfs_tensor *x,
		  struct ls_row *r)
{
	const struct tfs_xattr *g = NULL;
	const char *name = x->name;
	size_t len = x->name_len;
	char *safe;

	/* the stored name as stored, but for what a terminal would obey; a
	 * component of a group is its group's name and its role */
	if (x->group != TFS_NO_NODE)
		g = tfs_tree_xattr(t, x->group, TFS_XATTR_PREFIX "name");
	if (g) {
		name = g->value;
		len = g->len;
	}
	safe = tfs_text_safe_dup(name, len);
	if (!safe)
		return -ENOMEM;
	if (x->role) {
		if (asprintf(&r->name, "%s [%s]", safe, x->role) < 0)
			r->name = NULL;
		free(safe);
	} else {
		r->name = safe;
	}
	if (!r->name)
		return -ENOMEM;
	tfs_shape_text(r->shape, sizeof(r->shape), x->shape, x->ndim);
	r->dtype = x->view ? tfs_dtype_name(x->view) : x->dtype;
	r->bytes = x->view ? x->view_size : x->size;
	return 0;
}


/* a name as a JSON string: itself when UTF-8, else its escaped text */
static json_t *name_json(const char *p, size_t len)
{
	json_t *s = json_stringn(p, len);
	char *safe;

	if (s)
		return s;
	safe = tfs_text_safe_dup(p, len);
	s = safe ? json_string(safe) : NULL;
	free(safe);
	return s;
}

/*
 * ls --json: [{"name", "path", "dtype", "shape": [...], "bytes"}, ...]
 * ("group" and "role" for a component of a group), sorted as ls sorts;
 * the form is stable (docs/tensorfs.1)
 */
static int ls_json(const struct tfs_tree *t, const struct tfs_tensor **v)
{
	json_t *arr = json_array(), *o, *shape;
	const struct tfs_xattr *g;
	uint32_t k, d;

	for (k = 0; arr && k < t->ntensors; k++) {
		const struct tfs_tensor *x = v[k];

		shape = json_array();
		for (d = 0; shape && d < x->ndim; d++)
			if (json_array_append_new(
				    shape,
				    json_integer((json_int_t)x->shape[d])))
				shape = NULL;
		o = json_pack("{s:o,s:o,s:s,s:o,s:I}", "name",
			      name_json(x->name, x->name_len), "path",
			      name_json(x->path, strlen(x->path)), "dtype",
			      x->view ? tfs_dtype_name(x->view) : x->dtype,
			      "shape", shape, "bytes",
			      (json_int_t)(x->view ? x->view_size : x->size));
		g = x->group != TFS_NO_NODE
			    ? tfs_tree_xattr(t, x->group,
					     TFS_XATTR_PREFIX "name")
			    : NULL;
		if (o && g &&
		    (json_object_set_new(o, "group",
					 name_json(g->value, g->len)) ||
		     json_object_set_new(o, "role",
					 json_string(x->role ?: ""))))
			o = NULL;
		if (!o || json_array_append_new(arr, o)) {
			json_decref(arr);
			return -ENOMEM;
		}
	}
	if (!arr)
		return -ENOMEM;
	json_dumpf(arr, stdout, JSON_INDENT(1));
	putchar('\n');
	json_decref(arr);
	return 0;
}

int tfs_cmd_ls(int argc, char **argv)
{
	static const struct tfs_cli_cmd a = {
		.no_export = true,
		.tail = "",
		.what = "List every tensor: its stored name, dtype, shape and "
			"bytes, in aligned\ncolumns (a component of a group: "
			"the group's name and [ROLE]).",
		.opts_usage = "[--paths] [--json]",
		.opts_help = "  --paths  add each tensor's path in the mount\n"
			     "  --json   one JSON document: name, path, dtype, "
			     "shape, bytes\n",
		.flags = TFS_CLI_PATHS | TFS_CLI_JSON,
	};
	struct tfs_cli_flags o = {0};
	struct tfs_image *img;
	const struct tfs_tensor **v;
	struct ls_row *rows;
	int i, n, ret, wn = 4, wd = 5, ws = 2, wb = 1, len;
	char num[24];
	uint32_t k, nt;

	ret = tfs_cli_open_cmd(argc, argv, &a, &o, &img, &i, &n);
	if (ret)
		return TFS_CLI_OPENED(ret);
	nt = img->tree->ntensors;
	v = tfs_cli_sorted_tensors(img);
	if (v && o.json) {
		ret = ls_json(img->tree, v);
		free(v);
		tfs_image_close(img);
		return ret ? TFS_EXIT_USAGE : TFS_EXIT_OK;
	}
	rows = calloc(nt + 1, sizeof(*rows));
	if (!v || !rows) {
		free(v);
		free(rows);
		tfs_image_close(img);
		return TFS_EXIT_USAGE;
	}
	/* UTF-8 names are measured in terminal columns */
	setlocale(LC_CTYPE, "C.UTF-8");
	for (k = 0; k < nt; k++) {
		if (ls_row(img->tree, v[k], &rows[k]))
			break;
		len = display_width(rows[k].name);
		wn = len > wn ? len : wn;
		len = (int)strlen(rows[k].dtype);
		wd = len > wd ? len : wd;
		len = (int)strlen(rows[k].shape);
		ws = len > ws ? len : ws;
		len = snprintf(num, sizeof(num), "%llu",
			       (unsigned long long)rows[k].bytes);
		wb = len > wb ? len : wb;
	}
	if (k < nt) {
		while (k--)
			free(rows[k].name);
		free(rows);
		free(v);
		tfs_image_close(img);
		return TFS_EXIT_USAGE;
	}
	/*
	 * On a terminal a 250-byte name must not push every other line off
	 * the screen (it overflows its column); into a pipe every line is
	 * aligned
	 */
	if (isatty(STDOUT_FILENO) && wn > 64)
		wn = 64;
	for (k = 0; k < nt; k++) {
		print_padded(rows[k].name, wn);
		printf("  %-*s  %-*s  %*llu", wd, rows[k].dtype, ws,
		       rows[k].shape, wb, (unsigned long long)rows[k].bytes);
		if (o.paths)
			printf("  %s", v[k]->path);
		putchar('\n');
		free(rows[k].name);
	}
	free(rows);
	free(v);
	tfs_image_close(img);
	return TFS_EXIT_OK;
}

uint32_t tfs_cli_find_node(const struct tfs_tree *t, const char *what)
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

void tfs_cli_log_stderr(void *arg, const char *line)
{
	(void)arg;
	tfs_cli_say(stderr, "%s: %s\n", tfs_progname, line);
}

int tfs_cmd_cat(int argc, char **argv)
{
	static const struct tfs_cli_cmd a = {
		.tail = "NAME|PATH",
		.trailing = 1,
		.what = "Write one tensor's bytes (or any file of the tree) to "
			"stdout."};
	struct tfs_image_options io = {.log = tfs_cli_log_stderr};
	struct tfs_image *img;
	struct tfs_view v;
	uint64_t off = 0, size;
	const char *what;
	uint32_t n;
	int i, k, ret;

	ret = tfs_cli_open_cmd(argc, argv, &a, NULL, &img, &i, &k);
	if (ret)
		return TFS_CLI_OPENED(ret);
	what = argv[i + k];
	tfs_image_configure(img, &io);
	n = tfs_cli_find_node(img->tree, what);
	if (n == TFS_NO_NODE || img->tree->nodes[n].kind == TFS_NODE_DIR) {
		tfs_cli_say(stderr, "%s: %s: %s: %s\n", tfs_progname, argv[i],
			    what,
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
			ret = tfs_write_all(STDOUT_FILENO, v.data, v.len);
		off += v.len;
		tfs_view_release(img, &v);
		if (ret) {
			tfs_cli_say(stderr, "%s: %s: %s: %s\n", tfs_progname,
				    argv[i], what, strerror(-ret));
			tfs_image_close(img);
			return TFS_EXIT_IO;
		}
	}
	tfs_image_close(img);
	return TFS_EXIT_OK;
}

/* bytes and files per dtype, for info's quantization mix */
struct dtype_total {
	const char *dtype;
	uint64_t bytes;
	uint32_t files;
};

static int cmp_total(const void *pa, const void *pb)
{
	const struct dtype_total *a = pa, *b = pb;

	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	return strcmp(a->dtype, b->dtype);
}

static int cmp_extent(const void *pa, const void *pb, void *arg)
{
	const struct tfs_tree *t = arg;
	const struct tfs_tensor *a = &t->tensors[*(const uint32_t *)pa],
				*b = &t->tensors[*(const uint32_t *)pb];

	if (a->source != b->source)
		return a->source < b->source ? -1 : 1;
	if (a->offset != b->offset)
		return a->offset < b->offset ? -1 : 1;
	if (a->stored_length != b->stored_length)
		return a->stored_length < b->stored_length ? -1 : 1;
	if (a->encoding != b->encoding)
		return a->encoding < b->encoding ? -1 : 1;
	if (a->size != b->size)
		return a->size < b->size ? -1 : 1;
	return *(const uint32_t *)pa < *(const uint32_t *)pb ? -1 : 1;
}

/*
 * Tensors whose stored bytes are another's (the same container, offset,
 * length, encoding and size: tied weights, a storage two names view):
 * repeat[i] is true for all but the first of each such set, which info
 * counts once.  @sharing gets the tensors in sets, @ranges the sets.
 * NULL when out of memory.
 */
static bool *find_shared(const struct tfs_tree *t, uint32_t *sharing,
			 uint32_t *ranges)
{
	uint32_t *ix = malloc((t->ntensors + 1) * sizeof(*ix)), i, j;
	bool *repeat = calloc(t->ntensors + 1, sizeof(*repeat));

	*sharing = *ranges = 0;
	if (!ix || !repeat) {
		free(ix);
		free(repeat);
		return NULL;
	}
	for (i = 0; i < t->ntensors; i++)
		ix[i] = i;
	qsort_r(ix, t->ntensors, sizeof(*ix), cmp_extent, (void *)t);
	for (i = 0; i < t->ntensors; i = j) {
		const struct tfs_tensor *a = &t->tensors[ix[i]];

		for (j = i + 1; j < t->ntensors; j++) {
			const struct tfs_tensor *b = &t->tensors[ix[j]];

			/* no bytes: nothing shared */
			if (!a->stored_length || b->source != a->source ||
			    b->offset != a->offset ||
			    b->stored_length != a->stored_length ||
			    b->encoding != a->encoding || b->size != a->size)
				break;
			repeat[ix[j]] = true;
		}
		if (j - i > 1) {
			*sharing += j - i;
			(*ranges)++;
		}
	}
	free(ix);
	return repeat;
}

/*
 * A reader's own summary lines: root xattrs "user.tensorfs.info.<label>"
 * (ONNX: opset, producer, external), printed as "<label>: value".
 */
static void print_info_xattrs(const struct tfs_tree *t)
{
	const struct tfs_node *root = &t->nodes[TFS_ROOT_NODE];
	const char *pfx = TFS_XATTR_PREFIX "info.";
	uint32_t i;

	for (i = 0; i < root->nxattrs; i++) {
		const struct tfs_xattr *x = &root->xattrs[i];

		if (strncmp(x->name, pfx, strlen(pfx)) == 0)
			tfs_cli_say(stdout, "%s:%*s%.*s\n",
				    x->name + strlen(pfx),
				    (int)(strlen(x->name + strlen(pfx)) < 9
						  ? 9 - strlen(x->name +
							       strlen(pfx))
						  : 1),
				    "", (int)x->len, x->value);
	}
}

/*
 * The parameters (elements of every tensor with a shape, those of @repeat
 * not again; *@overflow when they pass 2^64) and the bytes of each dtype
 * into @v (room for every tensor), largest first: how many dtypes.
 */
static uint32_t tally(const struct tfs_tree *t, const bool *repeat,
		      struct dtype_total *v, uint64_t *params, bool *overflow)
{
	uint64_t count;
	uint32_t i, k, n = 0;

	*params = 0;
	*overflow = false;
	for (i = 0; i < t->ntensors; i++) {
		const struct tfs_tensor *x = &t->tensors[i];
		bool again = repeat && repeat[i];

		if (!tfs_shape_product(x->shape, x->ndim, &count) ||
		    !tfs_add_u64(*params, again ? 0 : count, params))
			*overflow = true;
		for (k = 0; k < n && strcmp(v[k].dtype, x->dtype); k++)
			;
		if (k == n)
			v[n++].dtype = x->dtype;
		v[k].bytes += again ? 0 : x->size;
		v[k].files++;
	}
	qsort(v, n, sizeof(*v), cmp_total);
	return n;
}

/*
 * What any tree says about the model: its parameters (elements of every
 * tensor with a shape, those of @repeat not again), the bytes of each
 * dtype, largest first (@total of them), and the architecture a reader
 * found (user.tensorfs.architecture on the root).
 */
static void print_summary(const struct tfs_tree *t, const bool *repeat,
			  uint64_t total)
{
	struct dtype_total *v = calloc(t->ntensors + 1, sizeof(*v));
	const struct tfs_xattr *arch, *classes;
	uint64_t params = 0;
	uint32_t k, n = 0;
	bool overflow = false;

	arch = tfs_tree_xattr(t, TFS_ROOT_NODE,
			      TFS_XATTR_PREFIX "architecture");
	/* a model directory's config.json: its architectures too */
	classes = tfs_tree_xattr(t, TFS_ROOT_NODE,
				 TFS_XATTR_PREFIX "hf.architectures");
	if (arch && classes &&
	    (classes->len != arch->len ||
	     memcmp(classes->value, arch->value, arch->len)))
		tfs_cli_say(stdout, "architecture: %.*s (%.*s)\n",
			    (int)arch->len, arch->value, (int)classes->len,
			    classes->value);
	else if (arch)
		tfs_cli_say(stdout, "architecture: %.*s\n", (int)arch->len,
			    arch->value);
	print_info_xattrs(t);
	/* a reader's one line about the model (pre-GGUF ggml: hparams) */
	arch = tfs_tree_xattr(t, TFS_ROOT_NODE, TFS_XATTR_PREFIX "summary");
	if (arch)
		tfs_cli_say(stdout, "summary: %.*s\n", (int)arch->len,
			    arch->value);
	if (!v)
		return;
	n = tally(t, repeat, v, &params, &overflow);
	if (!overflow)
		printf("parameters: %llu\n", (unsigned long long)params);
	for (k = 0; k < n; k++)
		printf("%s %-10s %llu bytes in %u file%s (%.1f%%)\n",
		       k ? "         " : "dtypes:  ", v[k].dtype,
		       (unsigned long long)v[k].bytes, v[k].files,
		       v[k].files == 1 ? "" : "s",
		       total ? 100.0 * (double)v[k].bytes / (double)total
			     : 0.0);
	free(v);
}

/*
 * JSON text to a terminal: jansson escapes C0 controls but writes DEL and
 * the C1 controls (U+0080..U+009F) as they are; they can only sit inside
 * strings, where "\\u00XX" says the same thing
 */
static void print_json_safe(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i, from = 0;

	for (i = 0; i < len; i++) {
		bool c1 = u[i] == 0xc2 && i + 1 < len && u[i + 1] >= 0x80 &&
			  u[i + 1] < 0xa0;

		if (u[i] != 0x7f && !c1 && (u[i] >= 0x20 || u[i] == '\n'))
			continue;
		fwrite(s + from, 1, i - from, stdout);
		printf("\\u%04x", c1 ? u[i + 1] : u[i]);
		i += c1;
		from = i + 1;
	}
	fwrite(s + from, 1, len - from, stdout);
}

/* metadata.json above this size is not printed by info */
#define INFO_METADATA_MAX (64u << 10)


/*
 * info --json: what info prints, as one stable document (docs/tensorfs.1):
 * {"file", "format", "description" | "containers", "size", "tensors",
 * "tensor_bytes", "parameters" (null past 2^64), "shared": {"tensors",
 * "ranges"}, "dtypes": [{"dtype", "bytes", "files"}] (largest first),
 * "info": {NAME: VALUE} (the root's user.tensorfs.info.* and
 * architecture), "left_out": [{"path", "error"}], "metadata": {...}}
 */
static int info_json(const char *file, const struct tfs_image *img,
		     const bool *repeat, uint32_t sharing, uint32_t ranges,
		     uint64_t size, uint64_t total)
{
	const struct tfs_tree *t = img->tree;
	const struct tfs_node *root = &t->nodes[TFS_ROOT_NODE];
	struct dtype_total *v = calloc(t->ntensors + 1, sizeof(*v));
	json_t *doc = NULL, *a, *info, *meta = NULL;
	uint64_t params;
	uint32_t k, n;
	bool overflow;
	int ret = -ENOMEM;

	if (!v)
		return -ENOMEM;
	n = tally(t, repeat, v, &params, &overflow);
	k = tfs_tree_resolve(t, ".tensorfs/metadata.json");
	if (k != TFS_NO_NODE && !t->nodes[k].lazy)
		meta = json_loadb(t->nodes[k].mem, t->nodes[k].mem_len, 0,
				  NULL);
	doc = json_pack(
		"{s:o,s:s,s:I,s:I,s:I,s:o,s:{s:I,s:I},s:[],s:{},"
		"s:[],s:o}",
		"file", name_json(file, strlen(file)), "format",
		img->format ? tfs_format_shown(img->format) : t->format, "size",
		(json_int_t)size, "tensors", (json_int_t)t->ntensors,
		"tensor_bytes", (json_int_t)total, "parameters",
		overflow ? json_null() : json_integer((json_int_t)params),
		"shared", "tensors", (json_int_t)sharing, "ranges",
		(json_int_t)ranges, "dtypes", "info", "left_out", "metadata",
		meta ? meta : json_null());
	meta = NULL;
	if (!doc)
		goto out;
	if (img->format
		    ? json_object_set_new(doc, "description",
					  json_string(img->format->description))
		    : json_object_set_new(doc, "containers",
					  json_integer(img->ncontainers)))
		goto out;
	a = json_object_get(doc, "dtypes");
	for (k = 0; k < n; k++)
		if (json_array_append_new(
			    a, json_pack("{s:s,s:I,s:I}", "dtype", v[k].dtype,
					 "bytes", (json_int_t)v[k].bytes,
					 "files", (json_int_t)v[k].files)))
			goto out;
	info = json_object_get(doc, "info");
	for (k = 0; k < root->nxattrs; k++) {
		const struct tfs_xattr *x = &root->xattrs[k];
		const char *nm = x->name + strlen(TFS_XATTR_PREFIX);

		if (strncmp(x->name, TFS_XATTR_PREFIX,
			    strlen(TFS_XATTR_PREFIX)))
			continue;
		if (strncmp(nm, "info.", 5) == 0)
			nm += 5;
		else if (strcmp(nm, "architecture"))
			continue;
		if (json_object_set_new(info, nm, name_json(x->value, x->len)))
			goto out;
	}
	a = json_object_get(doc, "left_out");
	for (k = 0; k < img->nskipped; k++)
		if (json_array_append_new(
			    a,
			    json_pack("{s:o,s:o}", "path",
				      name_json(img->skipped[k].path,
						strlen(img->skipped[k].path)),
				      "error",
				      name_json(img->skipped[k].why,
						strlen(img->skipped[k].why)))))
			goto out;
	json_dumpf(doc, stdout, JSON_INDENT(1) | JSON_REAL_PRECISION(17));
	putchar('\n');
	ret = 0;
out:
	json_decref(doc);
	free(v);
	return ret;
}

int tfs_cmd_info(int argc, char **argv)
{
	struct tfs_image *img;
	static const struct tfs_cli_cmd a = {
		.no_export = true,
		.tail = "",
		.what = "Format, size, tensor count and a summary of the "
			"container's metadata.",
		.opts_usage = "[--full] [--json]",
		.opts_help =
			"  --full   the whole metadata.json, not its "
			"summary\n"
			"  --json   one JSON document: every field and the "
			"whole metadata\n",
		.flags = TFS_CLI_FULL | TFS_CLI_JSON,
	};
	struct tfs_cli_flags o = {0};
	char *summary, *line, *save = NULL;
	const struct tfs_node *meta;
	char shown[1024];
	uint64_t size, total = 0;
	uint32_t n, k, sharing, ranges;
	bool *repeat;
	int i, ni, ret;

	ret = tfs_cli_open_cmd(argc, argv, &a, &o, &img, &i, &ni);
	if (ret)
		return TFS_CLI_OPENED(ret);
	for (size = 0, k = 0; k < img->nsrcs; k++)
		size += img->srcs[k].size;
	repeat = find_shared(img->tree, &sharing, &ranges);
	for (k = 0; k < img->tree->ntensors; k++)
		if (!repeat || !repeat[k])
			total += img->tree->tensors[k].size;
	if (o.json) {
		ret = info_json(argv[i], img, repeat, sharing, ranges, size,
				total);
		free(repeat);
		tfs_image_close(img);
		return ret ? TFS_EXIT_USAGE : TFS_EXIT_OK;
	}
	tfs_cli_say(stdout, "file:     %s\n",
		    tfs_cli_shown(argv[i], shown, sizeof(shown)));
	if (img->format)
		printf("format:   %s (%s)\n", tfs_format_shown(img->format),
		       img->format->description);
	else
		printf("format:   %s (%u container%s)\n", img->tree->format,
		       img->ncontainers, img->ncontainers == 1 ? "" : "s");
	printf("size:     %llu bytes\n", (unsigned long long)size);
	printf("tensors:  %u %s, %llu bytes of tensor data\n",
	       img->tree->ntensors,
	       img->tree->ntensors == 1 ? "tensor" : "tensors",
	       (unsigned long long)total);
	if (ranges)
		printf("shared:   %u tensors share %u stored range%s (%s): "
		       "counted once\n",
		       sharing, ranges, ranges == 1 ? "" : "s",
		       !img->format		  ? "tied weights or shared "
						    "constants"
		       : img->format->shared_name ? img->format->shared_name
						  : "tied weights");
	print_summary(img->tree, repeat, total);
	free(repeat);
	n = tfs_tree_resolve(img->tree, ".tensorfs/metadata.json");
	if (n != TFS_NO_NODE) {
		meta = &img->tree->nodes[n];
		/* made on first use when large (a vocabulary): not printed */
		if (meta->lazy) {
			tfs_cli_say(
				stdout,
				"metadata: large, not printed: tensorfs "
				"cat %s .tensorfs/metadata.json\n",
				tfs_cli_shown(argv[i], shown, sizeof(shown)));
		} else if (!o.full && (summary = tfs_cli_meta_summary(
					       meta->mem, meta->mem_len))) {
			/* each line with its control bytes escaped */
			for (line = strtok_r(summary, "\n", &save); line;
			     line = strtok_r(NULL, "\n", &save))
				tfs_cli_say(stdout, "%s\n", line);
			free(summary);
		} else {
			printf("metadata: ");
			print_json_safe(meta->mem, meta->mem_len);
		}
	}
	tfs_image_close(img);
	return TFS_EXIT_OK;
}

/*
 * An xattr's value between getfattr's quotes: '"' and '\\' escaped, and
 * every byte tfs_text_safe() would escape written as \\ooo (octal)
 */
static void print_value_escaped(const char *val, size_t len)
{
	size_t j = 0, k;

	while (j < len) {
		k = tfs_text_safe_len(val + j, len - j);
		if (k == 0) {
			printf("\\%03o", (unsigned char)val[j++]);
			continue;
		}
		if (k == 1 && (val[j] == '"' || val[j] == '\\'))
			putchar('\\');
		fwrite(val + j, 1, k, stdout);
		j += k;
	}
}

/* name="value" lines, getfattr -d style, the value's bytes escaped */
static int print_xattrs(const struct tfs_tree *t, uint32_t node)
{
	char *names = NULL, *val = NULL, *name;
	ssize_t len, vlen;
	int ret = -ENOMEM;

	len = tfs_tree_listxattr(t, node, NULL, 0);
	if (len < 0 || !(names = malloc((size_t)len + 1)))
		goto out;
	if (tfs_tree_listxattr(t, node, names, (size_t)len + 1) != len)
		goto out;
	for (name = names; name < names + len; name += strlen(name) + 1) {
		vlen = tfs_tree_getxattr(t, node, name, NULL, 0);
		free(val);
		val = vlen >= 0 ? malloc((size_t)vlen + 1) : NULL;
		if (!val || tfs_tree_getxattr(t, node, name, val,
					      (size_t)vlen + 1) != vlen)
			goto out;
		tfs_cli_say(stdout, "%s=\"", name);
		print_value_escaped(val, (size_t)vlen);
		printf("\"\n");
	}
	ret = 0;
out:
	free(names);
	free(val);
	return ret;
}

int tfs_cmd_xattr(int argc, char **argv)
{
	struct tfs_image *img;
	static const struct tfs_cli_cmd a = {
		.tail = "[PATH]",
		.one_input = true,
		.trailing = 1,
		.optional = 1,
		.what = "The extended attributes of PATH (default: the root)."};
	const char *path;
	uint32_t n;
	int i, ni, ret;

	ret = tfs_cli_open_cmd(argc, argv, &a, NULL, &img, &i, &ni);
	if (ret)
		return TFS_CLI_OPENED(ret);
	path = argc - i == 2 ? argv[i + 1] : "";
	n = tfs_cli_find_node(img->tree, path);
	if (n == TFS_NO_NODE) {
		tfs_cli_say(stderr, "%s: %s: %s: no such tensor or path\n",
			    tfs_progname, argv[i], path);
		tfs_image_close(img);
		return TFS_EXIT_NOTFOUND;
	}
	ret = print_xattrs(img->tree, n);
	if (ret)
		tfs_cli_say(stderr, "%s: %s: %s\n", tfs_progname, path,
			    strerror(-ret));
	tfs_image_close(img);
	return ret ? TFS_EXIT_USAGE : TFS_EXIT_OK;
}

/* ---- verify ---------------------------------------------------------------
 */

void tfs_progress_start(struct tfs_progress *p, const char *label,
			uint64_t total)
{
	memset(p, 0, sizeof(*p));
	p->label = label;
	p->total = total;
	p->on = isatty(STDERR_FILENO) && total >= TFS_PROGRESS_MIN;
}

void tfs_progress_show(struct tfs_progress *p, bool force)
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
	fprintf(stderr, "\r%s: %3d%% (%llu of %llu MiB)", p->label,
		p->total ? (int)(p->now * 100 / p->total) : 100,
		(unsigned long long)(p->now >> 20),
		(unsigned long long)(p->total >> 20));
	fflush(stderr);
}

void tfs_progress_cb(void *arg, uint64_t done)
{
	struct tfs_progress *p = arg;

	p->now = p->done_before + done;
	tfs_progress_show(p, false);
}

void tfs_progress_clear(struct tfs_progress *p)
{
	if (p->on)
		fprintf(stderr, "\r\033[K");
}

/* the readers' warnings (rules they report, not enforce) */
static unsigned print_warnings(const struct tfs_image *img)
{
	uint32_t i;

	for (i = 0; i < img->tree->nwarnings; i++)
		tfs_cli_say(stdout, "warning  %s\n",
			    img->tree->warnings[i].msg);
	return img->tree->nwarnings;
}

int tfs_cmd_verify(int argc, char **argv)
{
	struct tfs_image *img;
	struct tfs_check_result r;
	struct tfs_progress p;
	const struct tfs_tensor **v;
	static const struct tfs_cli_cmd a = {
		.no_export = true,
		.tail = "",
		.what = "Check every structural rule, digest and compressed "
			"tensor; exit 2 on a failure."};
	unsigned failed = 0, digests = 0, unknown = 0, decoded = 0, skipped = 0,
		 left_out = 0, warnings;
	char shown[1024];
	uint64_t total;
	uint32_t k, idx;
	int i, ni, ret;

	/* loading checks every structural rule; a failure is one line */
	ret = tfs_cli_open_cmd(argc, argv, &a, NULL, &img, &i, &ni);
	if (ret)
		return TFS_CLI_OPENED(ret);
	v = tfs_cli_sorted_tensors(img);
	if (!v) {
		tfs_image_close(img);
		return TFS_EXIT_USAGE;
	}
	for (total = 0, k = 0; k < img->tree->ntensors; k++)
		total += v[k]->stored_length;
	tfs_progress_start(&p, "verifying", total);
	warnings = print_warnings(img);
	/* a directory's containers left out as malformed or unreadable fail
	 * (an unsupported one is said at open, as every left out one is) */
	for (k = 0; k < img->nskipped; k++)
		if (img->skipped[k].err != -ENOTSUP) {
			left_out++;
			tfs_cli_say(stdout, "FAILED   %s: left out: %s\n",
				    img->skipped[k].path, img->skipped[k].why);
		}
	for (k = 0; k < img->tree->ntensors; k++) {
		idx = (uint32_t)(v[k] - img->tree->tensors);
		p.done_before = p.now;
		tfs_image_check_tensor(img, idx, &r, tfs_progress_cb, &p);
		p.now = p.done_before + v[k]->stored_length;
		tfs_progress_clear(&p);
		if (r.digest_checked)
			digests++;
		if (r.digest == TFS_DIGEST_UNKNOWN)
			unknown++;
		if (v[k]->encoding != TFS_ENCODING_RAW)
			decoded++;
		if (r.skipped) {
			skipped++;
			tfs_cli_say(stdout, "skipped  %s: %s\n", v[k]->path,
				    r.msg);
		} else if (r.err) {
			failed++;
			tfs_cli_say(stdout, "FAILED   %s: %s\n", v[k]->path,
				    r.msg);
		} else {
			printf("ok       %s (%s%s%s", v[k]->path,
			       r.digest_checked ? tfs_digest_alg_name(r.digest)
			       : r.digest == TFS_DIGEST_UNKNOWN
				       ? "digest of an unknown algorithm, not "
					 "checked"
			       : v[k]->codec.check_crc32
				       ? "crc32 of the decoded bytes matches"
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
		tfs_progress_show(&p, false);
	}
	tfs_progress_clear(&p);
	tfs_cli_say(stdout,
		    "%s: %u %s, %u ok, %u failed, %u skipped; %u %s checked, "
		    "%u with an unknown algorithm (not checked), %u decoded; "
		    "%u %s; %u %s left out as malformed or unreadable\n",
		    tfs_cli_shown(argv[i], shown, sizeof(shown)),
		    img->tree->ntensors,
		    img->tree->ntensors == 1 ? "tensor" : "tensors",
		    img->tree->ntensors - failed - skipped, failed, skipped,
		    digests, digests == 1 ? "digest" : "digests", unknown,
		    decoded, warnings, warnings == 1 ? "warning" : "warnings",
		    left_out, left_out == 1 ? "container" : "containers");
	free(v);
	tfs_image_close(img);
	return failed || left_out ? TFS_EXIT_MALFORMED : TFS_EXIT_OK;
}
