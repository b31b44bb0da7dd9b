// SPDX-License-Identifier: MIT
/* Pictures of tensors (-o previews): see src/views/preview.h. */
#include <errno.h>
#include <math.h>
#include <png.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/decode_cache.h"
#include "core/image_i.h"
#include "core/nodes.h"
#include "core/strmap.h"
#include "core/view_ops.h"
#include "core/builder.h"
#include "core/names.h"
#include "core/tree.h"
#include "core/values.h"
#include "views/preview.h"

/*
 * The decode cache key of a tensor's picture: the tensor index and a
 * window number the decode engine never uses (its keys are the tensor
 * index and a window number below 2^32 - 2: src/core/decode.c).
 */
#define PREVIEW_WINDOW 0xfffffffeu

/* palette: 0..251 the colour map, then these */
#define NCOLORS 252
#define C_NAN 252
#define C_BACK 253
#define C_LINE 254

static uint64_t clamp_u64(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* floor(i * n / m) for i < m, without overflow */
static uint64_t scaled(uint64_t i, uint64_t n, uint64_t m)
{
	return i * (n / m) + i * (n % m) / m;
}

_Static_assert(TFS_PREVIEW_MAX == 512, "to_bound doubles 9 times");

/* floor(c * 512 / big) for c <= big, bit by bit: no overflow */
static uint64_t to_bound(uint64_t c, uint64_t big)
{
	uint64_t q = c / big, r = c % big;
	int k;

	for (k = 0; k < 9; k++) { /* 512 = 2^9 */
		q *= 2;
		if (r >= big - r) {
			q++;
			r -= big - r;
		} else {
			r *= 2;
		}
	}
	return q;
}

/* rows (all dimensions but the last) and columns; false when empty */
static bool rows_cols(const uint64_t *shape, uint32_t ndim, uint64_t *rows,
		      uint64_t *cols)
{
	uint32_t i;

	*rows = 1;
	for (i = 0; i + 1 < ndim; i++) {
		if (shape[i] && *rows > UINT64_MAX / shape[i])
			return false;
		*rows *= shape[i];
	}
	*cols = ndim ? shape[ndim - 1] : 0;
	return *rows && *cols;
}

bool tfs_preview_geometry(enum tfs_dtype dtype, bool big, const uint64_t *shape,
			  uint32_t ndim, uint32_t *w, uint32_t *h)
{
	uint64_t rows, cols;

	if (!ndim ||
	    tfs_values_supported(dtype, big ? TFS_VALUES_BIG_ENDIAN : 0) ||
	    !rows_cols(shape, ndim, &rows, &cols))
		return false;
	/* larger than the bound: both scaled by one factor (the larger side
	 * becomes 512), so the picture keeps the tensor's aspect ratio */
	if (rows > TFS_PREVIEW_MAX || cols > TFS_PREVIEW_MAX) {
		uint64_t most = rows > cols ? rows : cols;

		cols = to_bound(cols, most);
		rows = to_bound(rows, most);
	}
	*w = (uint32_t)clamp_u64(cols, TFS_PREVIEW_MIN_W, TFS_PREVIEW_MAX);
	*h = (uint32_t)clamp_u64(rows, TFS_PREVIEW_MIN_H, TFS_PREVIEW_MAX);
	return true;
}

/* ---- PNG ----------------------------------------------------------------
 */

static void palette(png_color *p)
{
	/* viridis, by five anchors */
	static const uint8_t a[5][3] = {{68, 1, 84},
					{59, 82, 139},
					{33, 145, 140},
					{94, 201, 98},
					{253, 231, 37}};
	double x, f;
	int i, k, c;

	for (i = 0; i < NCOLORS; i++) {
		x = (double)i / (NCOLORS - 1) * 4;
		k = x >= 4 ? 3 : (int)x;
		f = x - k;
		for (c = 0; c < 3; c++) {
			uint8_t v = (uint8_t)lround(a[k][c] * (1 - f) +
						    a[k + 1][c] * f);

			if (c == 0)
				p[i].red = v;
			else if (c == 1)
				p[i].green = v;
			else
				p[i].blue = v;
		}
	}
	p[C_NAN] = (png_color){255, 0, 255};
	p[C_BACK] = (png_color){255, 255, 255};
	p[C_LINE] = (png_color){0, 0, 0};
	p[255] = (png_color){128, 128, 128};
}

struct membuf {
	uint8_t *p;
	size_t len, cap;
};

static void write_cb(png_structp png, png_bytep data, size_t n)
{
	struct membuf *m = png_get_io_ptr(png);
	uint8_t *np;

	if (m->len + n > m->cap) {
		m->cap = (m->len + n) * 2;
		np = realloc(m->p, m->cap);
		if (!np)
			png_error(png, "out of memory");
		m->p = np;
	}
	memcpy(m->p + m->len, data, n);
	m->len += n;
}

static void flush_cb(png_structp png)
{
	(void)png;
}

/*
 * The value scale as tEXt chunks: the sampled finite minimum and maximum,
 * and the values the colour bar's ends stand for; each value padded to
 * SCALE_TEXT bytes, so the file's size still depends on its pixels only.
 */
#define SCALE_TEXT 24
struct scale {
	double min, max, lo, hi; /* NaN: no finite value */
};

static const char *const scale_keys[4] = {"tensorfs.min", "tensorfs.max",
					  "tensorfs.scale_low",
					  "tensorfs.scale_high"};

static void write_image(png_structp png, png_infop info, const uint8_t *pix,
			uint32_t w, uint32_t h, const struct scale *sc)
{
	const double v[4] = {sc->min, sc->max, sc->lo, sc->hi};
	char text[4][SCALE_TEXT + 8];
	png_text t[4];
	png_color pal[256];
	uint32_t y;
	int i;

	palette(pal);
	png_set_IHDR(png, info, w, h, 8, PNG_COLOR_TYPE_PALETTE,
		     PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
		     PNG_FILTER_TYPE_DEFAULT);
	png_set_PLTE(png, info, pal, 256);
	memset(t, 0, sizeof(t));
	for (i = 0; i < 4; i++) {
		/* %.17g is at most 24 bytes ("-1.7976931348623157e+308") */
		snprintf(text[i], sizeof(text[i]), "%-*.17g", SCALE_TEXT, v[i]);
		t[i].compression = PNG_TEXT_COMPRESSION_NONE;
		t[i].key = (png_charp)scale_keys[i];
		t[i].text = text[i];
		t[i].text_length = strlen(text[i]);
	}
	png_set_text(png, info, t, 4);
	/* stored deflate blocks, no filter: the size depends on w, h only */
	png_set_compression_level(png, 0);
	png_set_filter(png, 0, PNG_FILTER_NONE);
	png_write_info(png, info);
	for (y = 0; y < h; y++)
		png_write_row(png, pix + (size_t)y * w);
	png_write_end(png, info);
}

/* @w x @h palette indices into a PNG (malloc'd) */
static int encode(const uint8_t *pix, uint32_t w, uint32_t h,
		  const struct scale *sc, uint8_t **out, size_t *len)
{
	png_structp png;
	png_infop info;
	struct membuf m = {0};

	png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
	if (!png)
		return -ENOMEM;
	info = png_create_info_struct(png);
	if (!info) {
		png_destroy_write_struct(&png, NULL);
		return -ENOMEM;
	}
	if (setjmp(png_jmpbuf(png))) {
		png_destroy_write_struct(&png, &info);
		free(m.p);
		return -ENOMEM;
	}
	png_set_write_fn(png, &m, write_cb, flush_cb);
	write_image(png, info, pix, w, h, sc);
	png_destroy_write_struct(&png, &info);
	*out = m.p;
	*len = m.len;
	return 0;
}

/* ---- sizes ----------------------------------------------------------------
 */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	uint32_t w, h;
	uint64_t size;
} memo[64];
static unsigned nmemo;

/* the picture's height: heat map, a line, histogram, the scale strip */
static uint32_t total_height(uint32_t h)
{
	return h + 1 + TFS_PREVIEW_HIST_H + TFS_PREVIEW_SCALE_H;
}

int tfs_preview_size(uint32_t w, uint32_t h, uint64_t *size)
{
	const struct scale none = {NAN, NAN, NAN, NAN};
	uint32_t total = total_height(h);
	uint8_t *pix, *png = NULL;
	size_t len = 0;
	unsigned i;
	int ret = 0;

	pthread_mutex_lock(&lock);
	for (i = 0; i < nmemo; i++)
		if (memo[i].w == w && memo[i].h == h) {
			*size = memo[i].size;
			goto out;
		}
	/* measured: the same pixel size always encodes to the same size */
	pix = calloc((size_t)w * total, 1);
	ret = pix ? encode(pix, w, total, &none, &png, &len) : -ENOMEM;
	free(pix);
	free(png);
	if (ret)
		goto out;
	*size = len;
	if (nmemo < sizeof(memo) / sizeof(memo[0])) {
		memo[nmemo].w = w;
		memo[nmemo].h = h;
		memo[nmemo++].size = len;
	}
out:
	pthread_mutex_unlock(&lock);
	return ret;
}

/* ---- sampling -------------------------------------------------------------
 */

/* the stored index of element (row @r, column @c) of a column-major tensor */
static uint64_t fortran_index(const struct tfs_tensor *x, uint64_t r,
			      uint64_t c)
{
	uint64_t idx = c, k;
	uint32_t i;

	/* r is the row-major number of (i0 .. i_{n-2}); the stored index
	 * is i0 + s0 * (i1 + s1 * (... + s_{n-2} * c)) */
	for (i = x->ndim - 1; i-- > 0;) {
		k = r % x->shape[i];
		r /= x->shape[i];
		idx = idx * x->shape[i] + k;
	}
	return idx;
}

/* the sampled values: @h rows of @w, row i from tensor row i*rows/h */
static int sample(struct tfs_image *img, uint32_t tensor, uint32_t w,
		  uint32_t h, double *out)
{
	const struct tfs_tree *t = img->tree;
	const struct tfs_tensor *x = &t->tensors[tensor];
	bool fortran =
		tfs_tree_xattr_is(t, x->node, TFS_XATTR_PREFIX "order", "F") ||
		tfs_tree_xattr_is(t, x->group, TFS_XATTR_PREFIX "order", "F");
	uint64_t rows, cols, r, prev = UINT64_MAX;
	double *row = NULL;
	uint32_t i, j;
	int ret = 0;

	rows_cols(x->shape, x->ndim, &rows, &cols);
	/* a row no more than 8 times the samples: read it whole */
	if (!fortran && cols <= 8 * (uint64_t)w) {
		row = malloc(cols * sizeof(*row));
		if (!row)
			return -ENOMEM;
	}
	for (i = 0; i < h && !ret; i++) {
		double *o = out + (size_t)i * w;

		r = scaled(i, rows, h);
		if (r == prev) {
			memcpy(o, o - w, w * sizeof(*o));
			continue;
		}
		prev = r;
		if (row)
			ret = tfs_values_read(img, tensor, 0, r * cols,
					      (size_t)cols, row);
		for (j = 0; j < w && !ret; j++) {
			uint64_t c = scaled(j, cols, w);

			if (row)
				o[j] = row[c];
			else
				ret = tfs_values_read(
					img, tensor, 0,
					fortran ? fortran_index(x, r, c)
						: r * cols + c,
					1, &o[j]);
		}
	}
	free(row);
	return ret;
}

static uint8_t color_of(double v, double lo, double hi)
{
	double f;

	if (isnan(v))
		return C_NAN;
	if (!(hi > lo))
		return NCOLORS / 2;
	f = (v - lo) / (hi - lo);
	f = f < 0 ? 0 : f > 1 ? 1 : f;
	return (uint8_t)lround(f * (NCOLORS - 1));
}

#define HIST_BINS 64 /* at most; one per column on narrower pictures */

/* 3 x 5 pixel glyphs, a row per 3 bits (4 = the left pixel) */
static const struct {
	char c;
	uint8_t rows[5];
} glyphs[] = {
	{'0', {7, 5, 5, 5, 7}}, {'1', {2, 6, 2, 2, 7}}, {'2', {7, 1, 7, 4, 7}},
	{'3', {7, 1, 7, 1, 7}}, {'4', {5, 5, 7, 1, 1}}, {'5', {7, 4, 7, 1, 7}},
	{'6', {7, 4, 7, 5, 7}}, {'7', {7, 1, 1, 2, 2}}, {'8', {7, 5, 7, 5, 7}},
	{'9', {7, 5, 7, 1, 7}}, {'.', {0, 0, 0, 0, 2}}, {'-', {0, 0, 7, 0, 0}},
	{'+', {0, 2, 7, 2, 0}}, {'e', {0, 6, 7, 4, 3}}, {'<', {1, 2, 4, 2, 1}},
	{'>', {4, 2, 1, 2, 4}}, {'n', {0, 6, 5, 5, 5}}, {'a', {0, 3, 5, 5, 3}},
	{'i', {2, 0, 2, 2, 2}}, {'f', {3, 4, 6, 4, 4}},
};

/* @text in black at (@x, @y) of a @w-wide picture, 4 pixels a glyph */
static void draw_text(uint8_t *pix, uint32_t w, uint32_t x, uint32_t y,
		      const char *text)
{
	size_t g, i;
	uint32_t r, b;

	for (i = 0; text[i]; i++, x += 4) {
		for (g = 0; g < sizeof(glyphs) / sizeof(glyphs[0]); g++)
			if (glyphs[g].c == text[i])
				break;
		if (g == sizeof(glyphs) / sizeof(glyphs[0]))
			continue;
		for (r = 0; r < 5; r++)
			for (b = 0; b < 3; b++)
				if (glyphs[g].rows[r] & (4 >> b) && x + b < w)
					pix[(size_t)(y + r) * w + x + b] =
						C_LINE;
	}
}

static int cmp_double(const void *pa, const void *pb)
{
	double a = *(const double *)pa, b = *(const double *)pb;

	return a < b ? -1 : a > b;
}

/*
 * The colour range: the 1st and 99th percentiles of the finite sampled
 * values (with n sorted values and k = (n - 1) / 100, the k-th smallest
 * and the k-th largest), so that a few outliers do not paint the picture
 * one colour; also their minimum and maximum.  NaN when none is finite.
 */
static int value_scale(const double *v, size_t n, struct scale *sc)
{
	double *f = malloc((n ? n : 1) * sizeof(*f));
	size_t m = 0, i, k;

	if (!f)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		if (isfinite(v[i]))
			f[m++] = v[i];
	*sc = (struct scale){NAN, NAN, NAN, NAN};
	if (m) {
		qsort(f, m, sizeof(*f), cmp_double);
		k = (m - 1) / 100;
		*sc = (struct scale){f[0], f[m - 1], f[k], f[m - 1 - k]};
	}
	free(f);
	return 0;
}

/*
 * The strip under the histogram: a line, the colour bar (its left end
 * stands for the scale's low value, its right end for the high one), then
 * those values as text, the low one at the left, the high one on the next
 * line at the right; "<" or ">" when values lie beyond (clipped).
 */
static void draw_scale(uint8_t *strip, uint32_t w, const struct scale *sc)
{
	char lo[32], hi[32];
	uint32_t x, y;
	size_t n;

	memset(strip, C_BACK, (size_t)w * TFS_PREVIEW_SCALE_H);
	memset(strip, C_LINE, w);
	for (y = 1; y < 9; y++)
		for (x = 0; x < w; x++)
			strip[(size_t)y * w + x] =
				(uint8_t)((uint64_t)x * (NCOLORS - 1) /
					  (w > 1 ? w - 1 : 1));
	if (isnan(sc->lo)) {
		draw_text(strip, w, 1, 10, "nan");
		return;
	}
	snprintf(lo, sizeof(lo), "%s%.3g", sc->min < sc->lo ? "<" : "", sc->lo);
	snprintf(hi, sizeof(hi), "%s%.3g", sc->max > sc->hi ? ">" : "", sc->hi);
	draw_text(strip, w, 1, 10, lo);
	n = strlen(hi) * 4;
	draw_text(strip, w, n + 1 < w ? w - (uint32_t)n : 0, 16, hi);
}

/* the heat map of @v (@w x @h), the histogram and the scale into @pix */
static void draw(const double *v, uint32_t w, uint32_t h,
		 const struct scale *sc, uint8_t *pix)
{
	uint32_t bins[HIST_BINS] = {0};
	uint32_t nb = w < HIST_BINS ? w : HIST_BINS;
	double lo = sc->lo, hi = sc->hi, f;
	size_t n = (size_t)w * h, i;
	uint32_t x, y, k, most = 0, bar;
	uint8_t *strip;

	for (i = 0; i < n; i++)
		pix[i] = color_of(v[i], lo, hi);
	memset(pix + n, C_LINE, w);
	for (i = 0; i < n; i++) {
		if (!isfinite(v[i]))
			continue;
		/* values beyond the scale fall in the end bins */
		f = hi > lo ? (v[i] - lo) / (hi - lo) * nb : nb / 2;
		k = f <= 0 ? 0 : f >= nb ? nb - 1 : (uint32_t)f;
		bins[k]++;
	}
	for (k = 0; k < nb; k++)
		most = bins[k] > most ? bins[k] : most;
	strip = pix + n + w;
	for (x = 0; x < w; x++) {
		k = (uint32_t)((uint64_t)x * nb / w);
		bar = most ? (uint32_t)(((uint64_t)bins[k] *
						 TFS_PREVIEW_HIST_H +
					 most - 1) /
					most)
			   : 0;
		for (y = 0; y < TFS_PREVIEW_HIST_H; y++)
			strip[(size_t)y * w + x] =
				y >= TFS_PREVIEW_HIST_H - bar
					? (uint8_t)(k * (NCOLORS - 1) /
						    (nb > 1 ? nb - 1 : 1))
					: C_BACK;
	}
	draw_scale(strip + (size_t)TFS_PREVIEW_HIST_H * w, w, sc);
}

int tfs_preview_make(struct tfs_image *img, uint32_t tensor, uint8_t **png,
		     size_t *len)
{
	const struct tfs_tensor *x = &img->tree->tensors[tensor];
	uint32_t w, h, total;
	uint8_t *pix = NULL;
	double *v = NULL;
	struct scale sc;
	int ret = -ENOMEM;

	if (!tfs_preview_geometry(x->dtype_id,
				  tfs_values_tensor_flags(img->tree, tensor) &
					  TFS_VALUES_BIG_ENDIAN,
				  x->shape, x->ndim, &w, &h))
		return -EINVAL;
	total = total_height(h);
	v = malloc((size_t)w * h * sizeof(*v));
	pix = malloc((size_t)w * total);
	if (!v || !pix)
		goto out;
	ret = sample(img, tensor, w, h, v);
	if (!ret)
		ret = value_scale(v, (size_t)w * h, &sc);
	if (ret)
		goto out;
	draw(v, w, h, &sc, pix);
	ret = encode(pix, w, total, &sc, png, len);
out:
	free(v);
	free(pix);
	return ret;
}

int tfs_preview_read(struct tfs_image *img, uint32_t node, uint64_t off,
		     size_t len, struct tfs_view *v)
{
	const struct tfs_node *n = &img->tree->nodes[node];
	size_t size = (size_t)n->mem_len, plen = 0;
	struct tfs_cache_entry *e;
	uint8_t *png = NULL;
	int ret;

	ret = tfs_cache_get(img->rs->cache,
			    (uint64_t)n->tensor << 32 | PREVIEW_WINDOW, size,
			    &e, NULL);
	if (ret)
		return ret;
	if (tfs_cache_valid(e) < size) {
		/* one picture made at a time: previews are for people */
		pthread_mutex_lock(&lock);
		if (tfs_cache_valid(e) < size) {
			ret = tfs_preview_make(img, n->tensor, &png, &plen);
			if (!ret && plen != size)
				ret = -EIO; /* cannot happen: see the size */
			if (!ret) {
				memcpy(e->data, png, size);
				tfs_cache_set_valid(e, size);
			}
			free(png);
		}
		pthread_mutex_unlock(&lock);
		if (ret) {
			tfs_cache_forget(img->rs->cache, e);
			tfs_cache_put(img->rs->cache, e);
			return ret == -ENOTSUP || ret == -ERANGE ? -EIO : ret;
		}
	}
	v->data = e->data + off;
	v->len = len;
	v->pin = e;
	v->pin_kind = PIN_ENTRY;
	return 0;
}

/* ---- the value scale as xattrs ------------------------------------------
 */

static const char *const scale_xattrs[4] = {
	"user.tensorfs.preview.min", "user.tensorfs.preview.max",
	"user.tensorfs.preview.scale_low", "user.tensorfs.preview.scale_high"};

/* the text of tEXt chunk @key in PNG @p (@len bytes), trimmed; or NULL */
static const uint8_t *text_chunk(const uint8_t *p, size_t len, const char *key,
				 size_t *n)
{
	size_t at = 8, klen = strlen(key);
	uint32_t clen;

	while (at + 12 <= len) {
		clen = (uint32_t)p[at] << 24 | (uint32_t)p[at + 1] << 16 |
		       (uint32_t)p[at + 2] << 8 | p[at + 3];
		if (clen > len - at - 12)
			return NULL;
		if (!memcmp(p + at + 4, "tEXt", 4) && clen > klen &&
		    !memcmp(p + at + 8, key, klen) && !p[at + 8 + klen]) {
			*n = clen - klen - 1;
			while (*n && p[at + 9 + klen + *n - 1] == ' ')
				(*n)--;
			return p + at + 9 + klen;
		}
		at += 12 + (size_t)clen;
	}
	return NULL;
}

ssize_t tfs_preview_getxattr(struct tfs_image *img, uint32_t node,
			     const char *name, char *buf, size_t size)
{
	const struct tfs_node *n = &img->tree->nodes[node];
	const uint8_t *t;
	struct tfs_view v;
	size_t len = 0;
	ssize_t ret;
	int i;

	for (i = 0; i < 4 && strcmp(name, scale_xattrs[i]); i++)
		;
	if (i == 4 || n->kind != TFS_NODE_VIEW)
		return -ENODATA;
	ret = tfs_preview_read(img, node, 0, (size_t)n->mem_len, &v);
	if (ret)
		return ret;
	t = text_chunk(v.data, v.len, scale_keys[i], &len);
	if (!t)
		ret = -EIO; /* cannot happen: every picture has them */
	else if (size && size < len)
		ret = -ERANGE;
	else
		ret = (ssize_t)len;
	if (ret > 0 && size)
		memcpy(buf, t, len);
	tfs_view_release(img, &v);
	return ret;
}

ssize_t tfs_preview_listxattr(char *buf, size_t size, size_t used)
{
	size_t n = used, k;
	int i;

	for (i = 0; i < 4; i++) {
		k = strlen(scale_xattrs[i]) + 1;
		if (size && n + k <= size)
			memcpy(buf + n, scale_xattrs[i], k);
		else if (size)
			return -ERANGE;
		n += k;
	}
	return (ssize_t)n;
}

/*
 * -o previews: "<file>.png" beside each tensor file that gets a picture,
 * unless that name is taken (a preview never displaces a file or a
 * directory) or too long.  After the tensor records: the nodes so far are
 * every name there is.
 */
static int plan_previews(struct tfs_draft *dr, uint32_t id)
{
	struct tfs_node_list *nl = dr->nodes;
	const struct tfs_tree *t = dr->tree;
	struct tfs_strmap taken;
	char **keys = NULL, *name = NULL;
	uint32_t i, n = nl->n, node, w, h;
	uint64_t size;
	int ret = -ENOMEM;

	if (!dr->opts.previews)
		return 0;
	tfs_strmap_init(&taken);
	keys = calloc(n ? n : 1, sizeof(*keys));
	if (!keys)
		goto out;
	for (i = 0; i < n; i++) {
		if (asprintf(&keys[i], "%u/%s", nl->v[i].parent,
			     nl->v[i].name) < 0) {
			keys[i] = NULL;
			goto out;
		}
		if (tfs_strmap_put(&taken, keys[i], i))
			goto out;
	}
	for (i = 0; i < t->ntensors; i++) {
		const struct tfs_tensor *x = &t->tensors[i];
		const struct tfs_node *tn = &nl->v[x->node];
		uint32_t parent = tn->parent;
		bool big = tfs_node_big(tn) || (x->group != TFS_NO_NODE &&
						tfs_node_big(&nl->v[x->group]));

		if (!tfs_preview_geometry(x->dtype_id, big, x->shape, x->ndim,
					  &w, &h) ||
		    strlen(tn->name) + 4 > TFS_NAME_MAX)
			continue;
		free(name);
		if (asprintf(&name, "%u/%s.png", parent, tn->name) < 0) {
			name = NULL;
			goto out;
		}
		if (tfs_strmap_get(&taken, name, &node))
			continue;
		ret = tfs_preview_size(w, h, &size);
		if (!ret)
			ret = tfs_nodes_add_view(nl, strchr(name, '/') + 1,
						 strlen(strchr(name, '/') + 1),
						 parent, id, i, size, &node);
		if (ret)
			goto out;
		ret = -ENOMEM;
	}
	ret = 0;
out:
	free(name);
	for (i = 0; keys && i < n; i++)
		free(keys[i]);
	free(keys);
	tfs_strmap_free(&taken);
	return ret;
}

const struct tfs_view_ops tfs_view_preview = {
	.name = "preview",
	.plan = plan_previews,
	.read = tfs_preview_read,
	.getxattr = tfs_preview_getxattr,
	.listxattr = tfs_preview_listxattr,
};
