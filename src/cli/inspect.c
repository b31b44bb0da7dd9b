// SPDX-License-Identifier: MIT
/*
 * Looking at the numbers: `tensorfs stats` (per tensor count, min, max,
 * mean, std and the NaN, +/-Inf and zero counts) and `tensorfs diff` (what
 * differs between two inputs, and by how much).  Both stream a tensor's
 * elements through tfs_values_read in chunks (values.h): memory stays
 * bounded whatever the tensor size.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/cli.h"
#include "core/tree.h"
#include "core/values.h"

#define CHUNK 65536u /* elements per read */

/* ---- stats ---------------------------------------------------------------
 */

struct stats {
	uint64_t count, finite, nan, pinf, ninf, zeros;
	double min, max, mean, m2; /* over the finite values */
};

/*
 * Add a chunk: its own mean and sum of squared deviations by two passes
 * over it, merged into the running ones by Chan et al.'s update (the
 * pairwise form of Welford's method): stable, and no division per element.
 */
static void stats_add(struct stats *s, const double *v, size_t n)
{
	double x, sum = 0, m2 = 0, mean, delta;
	uint64_t k = 0, total;
	size_t i;

	for (i = 0; i < n; i++) {
		x = v[i];
		if (isnan(x)) {
			s->nan++;
			continue;
		}
		if (isinf(x)) {
			if (x > 0)
				s->pinf++;
			else
				s->ninf++;
			continue;
		}
		if (x == 0)
			s->zeros++;
		if ((!s->finite && !k) || x < s->min)
			s->min = x;
		if ((!s->finite && !k) || x > s->max)
			s->max = x;
		sum += x;
		k++;
	}
	s->count += n;
	if (!k)
		return;
	mean = sum / (double)k;
	if (!isfinite(mean)) { /* the sum overflowed: a running mean */
		for (mean = 0, k = 0, i = 0; i < n; i++)
			if (isfinite(v[i]))
				mean += (v[i] - mean) / (double)++k;
	}
	for (i = 0; i < n; i++)
		if (isfinite(v[i]))
			m2 += (v[i] - mean) * (v[i] - mean);
	total = s->finite + k;
	delta = mean - s->mean;
	s->mean += delta * (double)k / (double)total;
	s->m2 += m2 +
		 delta * delta * (double)s->finite * (double)k / (double)total;
	s->finite = total;
}

/* the statistics of tensor record @idx; 0, -ENOTSUP, -EIO, -ENOMEM */
static int tensor_stats(struct tfs_image *img, uint32_t idx, double *buf,
			struct stats *s, struct tfs_progress *p)
{
	uint64_t n = tfs_values_count(img->tree, idx), at = 0;
	const struct tfs_tensor *x = &img->tree->tensors[idx];
	size_t take;
	int ret;

	memset(s, 0, sizeof(*s));
	ret = tfs_values_supported(x->dtype_id,
				   tfs_values_tensor_flags(img->tree, idx));
	if (ret)
		return ret;
	while (at < n) {
		take = n - at > CHUNK ? CHUNK : (size_t)(n - at);
		ret = tfs_values_read(img, idx, 0, at, take, buf);
		if (ret)
			return ret;
		stats_add(s, buf, take);
		at += take;
		if (n)
			tfs_progress_cb(p, x->size / n * at);
	}
	return 0;
}

static json_t *num_or_null(bool have, double v)
{
	return have && isfinite(v) ? json_real(v) : json_null();
}

/* a stored name as JSON: a string when it is UTF-8, else null */
static json_t *name_json(const struct tfs_tensor *x)
{
	json_t *j = json_stringn(x->name, x->name_len);

	return j ? j : json_null();
}

static json_t *shape_json(const struct tfs_tensor *x)
{
	json_t *a = json_array();
	uint32_t i;

	for (i = 0; i < x->ndim; i++)
		json_array_append_new(a, json_integer((json_int_t)x->shape[i]));
	return a;
}

static json_t *stats_json(const struct tfs_tensor *x, const struct stats *s,
			  int err)
{
	json_t *o = json_object();
	double sd = s->finite ? sqrt(s->m2 / (double)s->finite) : 0;

	json_object_set_new(o, "name", name_json(x));
	json_object_set_new(o, "path", json_string(x->path));
	json_object_set_new(o, "dtype", json_string(x->dtype));
	json_object_set_new(o, "shape", shape_json(x));
	if (err) {
		json_object_set_new(o, "error", json_string(strerror(-err)));
		return o;
	}
	json_object_set_new(o, "count", json_integer((json_int_t)s->count));
	json_object_set_new(o, "min", num_or_null(s->finite, s->min));
	json_object_set_new(o, "max", num_or_null(s->finite, s->max));
	json_object_set_new(o, "mean", num_or_null(s->finite, s->mean));
	json_object_set_new(o, "std", num_or_null(s->finite, sd));
	json_object_set_new(o, "nan", json_integer((json_int_t)s->nan));
	json_object_set_new(o, "pos_inf", json_integer((json_int_t)s->pinf));
	json_object_set_new(o, "neg_inf", json_integer((json_int_t)s->ninf));
	json_object_set_new(o, "zeros", json_integer((json_int_t)s->zeros));
	return o;
}

static void stats_line(const struct tfs_tensor *x, const struct stats *s,
		       int err, int w)
{
	if (err == -ENOTSUP) {
		printf("%-*s  %-9s not numeric (no values to show)\n", w,
		       x->path, x->dtype);
		return;
	}
	if (err) {
		printf("%-*s  %-9s error: %s\n", w, x->path, x->dtype,
		       strerror(-err));
		return;
	}
	printf("%-*s  %-9s %10llu", w, x->path, x->dtype,
	       (unsigned long long)s->count);
	if (s->finite)
		printf(" %12.6g %12.6g %12.6g %12.6g", s->min, s->max, s->mean,
		       sqrt(s->m2 / (double)s->finite));
	else
		printf(" %12s %12s %12s %12s", "-", "-", "-", "-");
	printf(" %6llu %6llu %6llu %10llu\n", (unsigned long long)s->nan,
	       (unsigned long long)s->pinf, (unsigned long long)s->ninf,
	       (unsigned long long)s->zeros);
}


/*
 * whether tensor @x is, or is under, one of the @n nodes @sel (the NAME
 * arguments resolved: mount paths, directories or stored names); every
 * tensor when there are none
 */
static bool selected(const struct tfs_tree *t, const struct tfs_tensor *x,
		     const uint32_t *sel, int n, bool *used)
{
	uint32_t up;
	int i;

	if (!n)
		return true;
	for (i = 0; i < n; i++) {
		for (up = x->node;; up = t->nodes[up].parent) {
			if (up == sel[i]) {
				used[i] = true;
				return true;
			}
			if (up == TFS_ROOT_NODE)
				break;
		}
	}
	return false;
}

int tfs_cmd_stats(int argc, char **argv)
{
	static const struct tfs_cli_cmd a = {
		.no_export = true,
		.tail = "[NAME...]",
		.one_input = true,
		.any_trailing = true,
		.what = "Per tensor: element count, min, max, mean, std (over "
			"the finite values),\nNaN, +Inf, -Inf and zero counts.  "
			"NAME: a stored name, a path or a directory\nin the "
			"mount (default: every tensor).",
		.opts_usage = "[--json]",
		.opts_help = "  --json   one JSON document (min/max/mean/std "
			     "null when no value is finite)\n",
		.flags = TFS_CLI_JSON,
	};
	struct tfs_image_options io = {.log = tfs_cli_log_stderr};
	struct tfs_cli_flags o = {0};
	const struct tfs_tensor **v = NULL;
	struct tfs_image *img;
	struct tfs_progress p;
	json_t *arr = NULL;
	struct stats s;
	bool *used = NULL;
	uint32_t *sel = NULL;
	double *buf = NULL;
	uint64_t total = 0;
	uint32_t k, idx;
	int i, ni, ret, w = 4, nnames, status = TFS_EXIT_OK, err;

	ret = tfs_cli_open_cmd(argc, argv, &a, &o, &img, &i, &ni);
	if (ret)
		return TFS_CLI_OPENED(ret);
	tfs_image_configure(img, &io);
	nnames = argc - i - 1;
	v = tfs_cli_sorted_tensors(img);
	buf = malloc(CHUNK * sizeof(*buf));
	used = calloc((size_t)nnames + 1, sizeof(*used));
	sel = calloc((size_t)nnames + 1, sizeof(*sel));
	arr = json_array();
	if (!v || !buf || !used || !sel || !arr) {
		status = TFS_EXIT_USAGE;
		goto out;
	}
	for (k = 0; k < (uint32_t)nnames; k++)
		sel[k] = tfs_cli_find_node(img->tree, argv[i + 1 + k]);
	for (k = 0; k < img->tree->ntensors; k++) {
		if (!selected(img->tree, v[k], sel, nnames, used))
			continue;
		total += v[k]->size;
		if ((int)strlen(v[k]->path) > w)
			w = (int)strlen(v[k]->path);
	}
	for (k = 0; k < (uint32_t)nnames; k++)
		if (!used[k]) {
			tfs_cli_say(stderr,
				    "%s: %s: %s: no such tensor or path\n",
				    tfs_progname, argv[i], argv[i + 1 + k]);
			status = TFS_EXIT_NOTFOUND;
			goto out;
		}
	if (w > 64)
		w = 64;
	if (!o.json)
		printf("%-*s  %-9s %10s %12s %12s %12s %12s %6s %6s %6s %10s\n",
		       w, "tensor", "dtype", "count", "min", "max", "mean",
		       "std", "nan", "+inf", "-inf", "zeros");
	tfs_progress_start(&p, "stats", total);
	for (k = 0; k < img->tree->ntensors; k++) {
		if (!selected(img->tree, v[k], sel, nnames, used))
			continue;
		idx = (uint32_t)(v[k] - img->tree->tensors);
		p.done_before = p.now;
		err = tensor_stats(img, idx, buf, &s, &p);
		p.now = p.done_before + v[k]->size;
		if (err && err != -ENOTSUP)
			status = err == -ENOMEM ? TFS_EXIT_USAGE : TFS_EXIT_IO;
		tfs_progress_clear(&p);
		if (o.json) {
			json_array_append_new(arr, stats_json(v[k], &s, err));
		} else {
			stats_line(v[k], &s, err, w);
			fflush(stdout);
		}
		tfs_progress_show(&p, false);
	}
	tfs_progress_clear(&p);
	if (o.json) {
		json_dumpf(arr, stdout,
			   JSON_INDENT(1) | JSON_REAL_PRECISION(17));
		putchar('\n');
	}
out:
	json_decref(arr);
	free(sel);
	free(used);
	free(buf);
	free(v);
	tfs_image_close(img);
	return status;
}

/* ---- diff ----------------------------------------------------------------
 */

enum diff_kind {
	D_SAME,	  /* byte-identical */
	D_VALUES, /* same dtype and shape, different bytes */
	D_DTYPE,  /* same shape, another dtype (values compared if numeric) */
	D_CLOSE,  /* other bytes, every value within --atol/--rtol */
	D_SHAPE,
	D_ONLY_A,
	D_ONLY_B,
	D_ERROR,
};

static const char *const diff_word[] = {
	[D_SAME] = "same",     [D_VALUES] = "differ", [D_DTYPE] = "dtype",
	[D_CLOSE] = "close",   [D_SHAPE] = "shape",   [D_ONLY_A] = "only-a",
	[D_ONLY_B] = "only-b", [D_ERROR] = "error",
};

struct diff_result {
	enum diff_kind kind;
	bool numbers;	    /* the value statistics below are known */
	uint64_t count;	    /* elements compared */
	uint64_t finite;    /* of which both finite */
	uint64_t nonfinite; /* NaN/Inf in one and not the same in the other */
	double max_abs, sum_abs, sum_sq_diff, sum_sq_a;
	int err;
	/* --atol/--rtol given: pairs with |a - b| > atol + rtol |b| */
	bool tol;
	double atol, rtol;
	uint64_t outside;
};

static bool same_shape(const struct tfs_tensor *x, const struct tfs_tensor *y)
{
	return x->ndim == y->ndim &&
	       (!x->ndim ||
		!memcmp(x->shape, y->shape, x->ndim * sizeof(*x->shape)));
}

/* byte equality of two tensors' own bytes; 1 equal, 0 not, -errno */
static int same_bytes(struct tfs_image *ia, uint32_t xa, struct tfs_image *ib,
		      uint32_t xb)
{
	uint64_t size = ia->tree->tensors[xa].size, off = 0;
	struct tfs_view va, vb;
	size_t len;
	int ret = 1;

	if (size != ib->tree->tensors[xb].size)
		return 0;
	while (off < size && ret == 1) {
		len = size - off > (1u << 20) ? 1u << 20 : (size_t)(size - off);
		ret = tfs_image_read_tensor(ia, xa, off, len, &va);
		if (!ret) {
			ret = tfs_image_read_tensor(ib, xb, off, len, &vb);
			if (!ret) {
				ret = va.len == len && vb.len == len
					      ? !memcmp(va.data, vb.data, len)
					      : -EIO;
				tfs_view_release(ib, &vb);
			}
			tfs_view_release(ia, &va);
		}
		off += len;
	}
	return ret;
}

static void diff_add(struct diff_result *r, const double *a, const double *b,
		     size_t n)
{
	double d;
	size_t i;

	for (i = 0; i < n; i++) {
		r->count++;
		if (!isfinite(a[i]) || !isfinite(b[i])) {
			if (!(isnan(a[i]) && isnan(b[i])) && a[i] != b[i])
				r->nonfinite++;
			continue;
		}
		r->finite++;
		d = fabs(a[i] - b[i]);
		/* numpy.isclose's rule */
		if (r->tol && d > r->atol + r->rtol * fabs(b[i]))
			r->outside++;
		if (d > r->max_abs)
			r->max_abs = d;
		r->sum_abs += d;
		r->sum_sq_diff += d * d;
		r->sum_sq_a += a[i] * a[i];
	}
}

/* the value comparison of two tensors of the same element count */
static int diff_values(struct tfs_image *ia, uint32_t xa, struct tfs_image *ib,
		       uint32_t xb, double *bufa, double *bufb,
		       struct diff_result *r)
{
	uint64_t n = tfs_values_count(ia->tree, xa), at = 0;
	size_t take;
	int ret;

	if (tfs_values_supported(ia->tree->tensors[xa].dtype_id,
				 tfs_values_tensor_flags(ia->tree, xa)) ||
	    tfs_values_supported(ib->tree->tensors[xb].dtype_id,
				 tfs_values_tensor_flags(ib->tree, xb)) ||
	    n != tfs_values_count(ib->tree, xb))
		return 0; /* no numbers to give */
	while (at < n) {
		take = n - at > CHUNK ? CHUNK : (size_t)(n - at);
		ret = tfs_values_read(ia, xa, 0, at, take, bufa);
		if (!ret)
			ret = tfs_values_read(ib, xb, 0, at, take, bufb);
		if (ret)
			return ret;
		diff_add(r, bufa, bufb, take);
		at += take;
	}
	r->numbers = true;
	return 0;
}

static double mean_abs(const struct diff_result *r)
{
	return r->finite ? r->sum_abs / (double)r->finite : 0;
}

/* ||a - b|| / ||a|| over the finite pairs; inf when a is 0 and b is not */
static double rel_l2(const struct diff_result *r)
{
	if (r->sum_sq_a == 0)
		return r->sum_sq_diff == 0 ? 0 : INFINITY;
	return sqrt(r->sum_sq_diff) / sqrt(r->sum_sq_a);
}

static void diff_line(const char *path, const struct tfs_tensor *x,
		      const struct tfs_tensor *y, const struct diff_result *r)
{
	char sa[128], sb[128];

	printf("%-7s %s", diff_word[r->kind], path);
	if (r->kind == D_SHAPE) {
		tfs_shape_text(sa, sizeof(sa), x->shape, x->ndim);
		tfs_shape_text(sb, sizeof(sb), y->shape, y->ndim);
		printf(": %s %s -> %s %s", x->dtype, sa, y->dtype, sb);
	} else if (r->kind == D_DTYPE ||
		   (r->kind == D_CLOSE && strcmp(x->dtype, y->dtype))) {
		printf(": %s -> %s", x->dtype, y->dtype);
	} else if (r->kind == D_CLOSE) {
		printf(": %s", x->dtype);
	} else if (r->kind == D_ERROR) {
		printf(": %s", strerror(-r->err));
	}
	if (r->numbers && r->kind != D_SAME) {
		printf("%s max abs %.6g, mean abs %.6g, ",
		       r->kind == D_DTYPE || r->kind == D_CLOSE ? ";" : ":",
		       r->max_abs, mean_abs(r));
		/* ||A|| is 0: no relative error to give */
		if (isfinite(rel_l2(r)))
			printf("rel L2 %.6g", rel_l2(r));
		else
			printf("A is all zeros");
		if (r->tol && r->outside)
			printf(", %llu outside the tolerance",
			       (unsigned long long)r->outside);
		if (r->nonfinite)
			printf(" (NaN/Inf differ in some elements)");
	} else if (r->kind == D_VALUES)
		printf(": %s, bytes differ (no values to compare)", x->dtype);
	putchar('\n');
}

static json_t *diff_json(const char *path, const struct tfs_tensor *x,
			 const struct tfs_tensor *y,
			 const struct diff_result *r)
{
	json_t *o = json_object();

	json_object_set_new(o, "name", name_json(x ? x : y));
	json_object_set_new(o, "path", json_string(path));
	json_object_set_new(o, "status", json_string(diff_word[r->kind]));
	if (x) {
		json_object_set_new(o, "dtype_a", json_string(x->dtype));
		json_object_set_new(o, "shape_a", shape_json(x));
	}
	if (y) {
		json_object_set_new(o, "dtype_b", json_string(y->dtype));
		json_object_set_new(o, "shape_b", shape_json(y));
	}
	if (r->kind == D_ERROR)
		json_object_set_new(o, "error", json_string(strerror(-r->err)));
	if (r->numbers) {
		json_object_set_new(o, "count",
				    json_integer((json_int_t)r->count));
		json_object_set_new(o, "max_abs_diff", json_real(r->max_abs));
		json_object_set_new(o, "mean_abs_diff", json_real(mean_abs(r)));
		json_object_set_new(o, "rel_l2",
				    isfinite(rel_l2(r)) ? json_real(rel_l2(r))
							: json_null());
		json_object_set_new(o, "nonfinite_mismatch",
				    json_integer((json_int_t)r->nonfinite));
		json_object_set_new(o, "a_all_zeros",
				    json_boolean(!isfinite(rel_l2(r))));
		if (r->tol)
			json_object_set_new(
				o, "outside_tolerance",
				json_integer((json_int_t)r->outside));
	}
	return o;
}

static void diff_usage(FILE *f)
{
	fprintf(f,
		"usage: %s diff [--flat] [--npy] [--json] [--brief|-q] "
		"[--atol X] [--rtol Y] A B\n",
		tfs_progname);
	if (f != stdout)
		return;
	fprintf(f,
		"Compare the tensors of A and B (container files or "
		"directories, any formats),\nmatched by path in the mount: "
		"one line per tensor, then a summary.\n"
		"  same     byte-identical\n"
		"  differ   same dtype and shape, other bytes: max abs, mean "
		"abs difference\n"
		"           and relative L2 error ||A-B||/||A|| over the "
		"finite elements\n"
		"  dtype    same shape, another dtype (values compared when "
		"both are numeric)\n"
		"  shape    another shape\n"
		"  only-a, only-b   in one input only\n"
		"  close    other values, each within the tolerance "
		"(--atol/--rtol)\n"
		"  --flat   every tensor at the root under its full stored "
		"name\n"
		"  --npy    every tensor file as PATH.npy (compares the same "
		"values)\n"
		"  --json   one JSON document\n"
		"  --brief, -q\n"
		"           only the tensors that differ, then the summary\n"
		"  --atol X, --rtol Y\n"
		"           values with |a - b| <= X + Y |b| (numpy.isclose; "
		"both 0 unless\n"
		"           given) count as the same: such a tensor is close, "
		"exit 0\n"
		"Values are compared across dtypes already (dtype lines): "
		"--as is refused.\n"
		"Exit status as diff(1): 0 same, 1 different, 2 trouble.\n"
		"See 'tensorfs --help' and tensorfs(1) for the rest.\n");
}

#define DIFF_TROUBLE 2

/* tensor record of @img at mount path @path (regular tensor), or -1 */
static int64_t tensor_at(const struct tfs_image *img, const char *path)
{
	uint32_t n = tfs_tree_resolve(img->tree, path);

	if (n == TFS_NO_NODE || img->tree->nodes[n].kind != TFS_NODE_TENSOR)
		return -1;
	return img->tree->nodes[n].tensor;
}

static enum diff_kind compare(struct tfs_image *ia, uint32_t xa,
			      struct tfs_image *ib, uint32_t xb, double *bufa,
			      double *bufb, struct diff_result *r)
{
	const struct tfs_tensor *x = &ia->tree->tensors[xa];
	const struct tfs_tensor *y = &ib->tree->tensors[xb];
	int ret;

	if (!same_shape(x, y))
		return D_SHAPE;
	if (x->dtype_id == y->dtype_id && !strcmp(x->dtype, y->dtype)) {
		ret = same_bytes(ia, xa, ib, xb);
		if (ret < 0) {
			r->err = ret;
			return D_ERROR;
		}
		if (ret == 1)
			return D_SAME;
	}
	ret = diff_values(ia, xa, ib, xb, bufa, bufb, r);
	if (ret) {
		r->err = ret;
		return D_ERROR;
	}
	if (r->tol && r->numbers && !r->outside && !r->nonfinite)
		return D_CLOSE;
	return x->dtype_id == y->dtype_id && !strcmp(x->dtype, y->dtype)
		       ? D_VALUES
		       : D_DTYPE;
}

struct diff_opts {
	struct tfs_build_options bo;
	bool json, help, brief, tol;
	double atol, rtol;
};

/* --atol X / --atol=X (and --rtol) at argv[*i]: 1 taken, 0 not it, -1 bad */
static int tol_option(int argc, char **argv, int *i, const char *name,
		      double *out)
{
	size_t n = strlen(name);
	const char *v;
	char *end;

	if (strcmp(argv[*i], name) == 0)
		v = *i + 1 < argc ? argv[++*i] : "";
	else if (strncmp(argv[*i], name, n) == 0 && argv[*i][n] == '=')
		v = argv[*i] + n + 1;
	else
		return 0;
	errno = 0;
	*out = strtod(v, &end);
	if (!*v || *end || errno || !isfinite(*out) || *out < 0) {
		fprintf(stderr,
			"%s diff: %s %s: expected a number >= 0, such as "
			"1e-5\n",
			tfs_progname, name, v);
		return -1;
	}
	return 1;
}

static int take_diff_option(void *arg, int argc, char **argv, int *i)
{
	struct diff_opts *o = arg;
	const char *opt = argv[*i];
	int ret;

	if (strcmp(opt, "--flat") == 0)
		o->bo.flat = true;
	else if (strcmp(opt, "--npy") == 0)
		o->bo.npy = true;
	else if (strcmp(opt, "--json") == 0)
		o->json = true;
	else if (strcmp(opt, "--brief") == 0 || strcmp(opt, "-q") == 0)
		o->brief = true;
	else if ((ret = tol_option(argc, argv, i, "--atol", &o->atol)) ||
		 (ret = tol_option(argc, argv, i, "--rtol", &o->rtol)))
		return ret < 0 ? -1 : (o->tol = true);
	else if (strcmp(opt, "--as") == 0 || strncmp(opt, "--as=", 5) == 0) {
		fprintf(stderr,
			"%s diff: --as is not taken: diff compares the values "
			"of numeric tensors\nacross dtypes already (the "
			"'dtype' lines; --atol/--rtol for a tolerance)\n",
			tfs_progname);
		return -1;
	} else if (strcmp(opt, "--help") == 0 || strcmp(opt, "-h") == 0)
		o->help = true;
	else
		return 0;
	return 1;
}

int tfs_cmd_diff(int argc, char **argv)
{
	struct diff_opts o = {0};
	struct tfs_image_options io = {.log = tfs_cli_log_stderr};
	struct tfs_image *ia = NULL, *ib = NULL;
	const struct tfs_tensor **va = NULL, **vb = NULL, *x, *y;
	unsigned counts[D_ERROR + 1] = {0};
	struct diff_result r;
	double *bufa = NULL, *bufb = NULL;
	json_t *arr = NULL, *doc;
	int64_t other;
	uint32_t k;
	int i, status, bad = 0;
	bool json;

	status = tfs_cli_getopt(argc, argv, take_diff_option, &o, &i, &bad);
	if (status > 0) {
		tfs_cli_say(stderr, "%s diff: unknown option %s\n",
			    tfs_progname, argv[bad]);
		diff_usage(stderr);
		return DIFF_TROUBLE;
	}
	if (status < 0)
		return DIFF_TROUBLE;
	if (o.help) {
		diff_usage(stdout);
		return 0;
	}
	json = o.json;
	if (argc - i != 2) {
		diff_usage(stderr);
		return DIFF_TROUBLE;
	}
	status = DIFF_TROUBLE;
	o.bo.no_export = true; /* tensors only */
	if (tfs_cli_open_inputs(argv + i, 1, &o.bo, &ia) ||
	    tfs_cli_open_inputs(argv + i + 1, 1, &o.bo, &ib))
		goto out;
	tfs_image_configure(ia, &io);
	tfs_image_configure(ib, &io);
	va = tfs_cli_sorted_tensors(ia);
	vb = tfs_cli_sorted_tensors(ib);
	bufa = malloc(CHUNK * sizeof(*bufa));
	bufb = malloc(CHUNK * sizeof(*bufb));
	arr = json_array();
	if (!va || !vb || !bufa || !bufb || !arr)
		goto out;
	for (k = 0; k < ia->tree->ntensors; k++) {
		x = va[k];
		memset(&r, 0, sizeof(r));
		r.tol = o.tol;
		r.atol = o.atol;
		r.rtol = o.rtol;
		other = tensor_at(ib, x->path);
		y = other < 0 ? NULL : &ib->tree->tensors[other];
		r.kind = !y ? D_ONLY_A
			    : compare(ia, (uint32_t)(x - ia->tree->tensors), ib,
				      (uint32_t)other, bufa, bufb, &r);
		counts[r.kind]++;
		if (o.brief && (r.kind == D_SAME || r.kind == D_CLOSE))
			continue;
		if (json) {
			json_array_append_new(arr,
					      diff_json(x->path, x, y, &r));
		} else {
			diff_line(x->path, x, y, &r);
			fflush(stdout);
		}
	}
	for (k = 0; k < ib->tree->ntensors; k++) {
		y = vb[k];
		if (tensor_at(ia, y->path) >= 0)
			continue;
		memset(&r, 0, sizeof(r));
		r.kind = D_ONLY_B;
		counts[D_ONLY_B]++;
		if (json)
			json_array_append_new(arr,
					      diff_json(y->path, NULL, y, &r));
		else
			diff_line(y->path, y, y, &r);
	}
	status = counts[D_ERROR] ? DIFF_TROUBLE
		 : counts[D_SAME] + counts[D_CLOSE] == ia->tree->ntensors &&
				 !counts[D_ONLY_B]
			 ? 0
			 : 1;
	if (json) {
		doc = json_pack("{s:s, s:s, s:o, s:{s:i, s:i, s:i, s:i, s:i, "
				"s:i, s:i, s:i}}",
				"a", argv[i], "b", argv[i + 1], "tensors", arr,
				"summary", "same", counts[D_SAME], "close",
				counts[D_CLOSE], "differ", counts[D_VALUES],
				"dtype", counts[D_DTYPE], "shape",
				counts[D_SHAPE], "only_a", counts[D_ONLY_A],
				"only_b", counts[D_ONLY_B], "error",
				counts[D_ERROR]);
		arr = NULL; /* the document owns it */
		if (!doc) {
			status = DIFF_TROUBLE;
			goto out;
		}
		json_dumpf(doc, stdout,
			   JSON_INDENT(1) | JSON_REAL_PRECISION(17));
		putchar('\n');
		json_decref(doc);
	} else {
		printf("%u same, ", counts[D_SAME]);
		if (o.tol)
			printf("%u within the tolerance, ", counts[D_CLOSE]);
		printf("%u differ, %u another dtype, %u another "
		       "shape, %u only in A, %u only in B, %u errors\n",
		       counts[D_VALUES], counts[D_DTYPE], counts[D_SHAPE],
		       counts[D_ONLY_A], counts[D_ONLY_B], counts[D_ERROR]);
	}
out:
	json_decref(arr);
	free(bufa);
	free(bufb);
	free(va);
	free(vb);
	tfs_image_close(ia);
	tfs_image_close(ib);
	return status;
}
