// SPDX-License-Identifier: MIT
/*
 * tensorfs thumbnail [-s SIZE] INPUT OUTPUT.png: a SIZE x SIZE picture of a
 * container for file managers (data/desktop/tensorfs.thumbnailer, the
 * freedesktop thumbnailer spec): the format, the parameter count and the
 * dominant dtype as text, over a mosaic of the largest tensors' value
 * pictures.  The pictures are -o previews' own (src/views/preview.h: read
 * from the preview files of a tree built with previews, so the colouring is
 * the mount's), their heat maps only.  Reads the header and the previews'
 * samples; decoded bytes are cached within TB_CACHE; writes OUTPUT only.
 * Any failure is one line on stderr and exit status 1, which is what
 * thumbnailer hosts look at.
 */
#include <errno.h>
#include <fcntl.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/checked.h"
#include "core/tree.h"
#include "views/preview.h"

#define TB_DEFAULT 256
#define TB_MIN 16
#define TB_MAX 1024
#define TB_TILES 4
#define TB_CACHE (16ull << 20)

static const uint8_t tb_back[3] = {38, 40, 48};
static const uint8_t tb_ink[3] = {240, 240, 240};

/* 5 x 7 glyphs, a row per byte (16 = the left pixel); our own drawing */
static const struct {
	char c;
	uint8_t rows[7];
} glyphs[] = {
	{'A', {14, 17, 17, 31, 17, 17, 17}},
	{'B', {30, 17, 17, 30, 17, 17, 30}},
	{'C', {14, 17, 16, 16, 16, 17, 14}},
	{'D', {30, 17, 17, 17, 17, 17, 30}},
	{'E', {31, 16, 16, 30, 16, 16, 31}},
	{'F', {31, 16, 16, 30, 16, 16, 16}},
	{'G', {14, 17, 16, 23, 17, 17, 15}},
	{'H', {17, 17, 17, 31, 17, 17, 17}},
	{'I', {14, 4, 4, 4, 4, 4, 14}},
	{'J', {7, 2, 2, 2, 2, 18, 12}},
	{'K', {17, 18, 20, 24, 20, 18, 17}},
	{'L', {16, 16, 16, 16, 16, 16, 31}},
	{'M', {17, 27, 21, 21, 17, 17, 17}},
	{'N', {17, 17, 25, 21, 19, 17, 17}},
	{'O', {14, 17, 17, 17, 17, 17, 14}},
	{'P', {30, 17, 17, 30, 16, 16, 16}},
	{'Q', {14, 17, 17, 17, 21, 18, 13}},
	{'R', {30, 17, 17, 30, 20, 18, 17}},
	{'S', {15, 16, 16, 14, 1, 1, 30}},
	{'T', {31, 4, 4, 4, 4, 4, 4}},
	{'U', {17, 17, 17, 17, 17, 17, 14}},
	{'V', {17, 17, 17, 17, 17, 10, 4}},
	{'W', {17, 17, 17, 21, 21, 21, 10}},
	{'X', {17, 17, 10, 4, 10, 17, 17}},
	{'Y', {17, 17, 10, 4, 4, 4, 4}},
	{'Z', {31, 1, 2, 4, 8, 16, 31}},
	{'0', {14, 17, 19, 21, 25, 17, 14}},
	{'1', {4, 12, 4, 4, 4, 4, 14}},
	{'2', {14, 17, 1, 2, 4, 8, 31}},
	{'3', {31, 2, 4, 2, 1, 17, 14}},
	{'4', {2, 6, 10, 18, 31, 2, 2}},
	{'5', {31, 16, 30, 1, 1, 17, 14}},
	{'6', {6, 8, 16, 30, 17, 17, 14}},
	{'7', {31, 1, 2, 4, 8, 8, 8}},
	{'8', {14, 17, 17, 14, 17, 17, 14}},
	{'9', {14, 17, 17, 15, 1, 2, 12}},
	{'.', {0, 0, 0, 0, 0, 12, 12}},
	{'-', {0, 0, 0, 31, 0, 0, 0}},
	{'_', {0, 0, 0, 0, 0, 0, 31}},
	{'/', {1, 1, 2, 4, 8, 16, 16}},
};

struct canvas {
	uint8_t *rgb; /* size x size, 3 bytes a pixel */
	uint32_t size;
};

static void put(struct canvas *c, uint32_t x, uint32_t y, const uint8_t *px)
{
	if (x < c->size && y < c->size)
		memcpy(c->rgb + ((size_t)y * c->size + x) * 3, px, 3);
}

/* @text in capitals at (@x, @y), each glyph pixel @k x @k, clipped */
static void draw_text(struct canvas *c, uint32_t x, uint32_t y, uint32_t k,
		      const char *text)
{
	uint32_t r, b, dx, dy;
	size_t g, i;
	char ch;

	for (i = 0; text[i]; i++, x += 6 * k) {
		ch = text[i] >= 'a' && text[i] <= 'z' ? text[i] - 32 : text[i];
		for (g = 0; g < sizeof(glyphs) / sizeof(glyphs[0]); g++)
			if (glyphs[g].c == ch)
				break;
		if (g == sizeof(glyphs) / sizeof(glyphs[0]))
			continue;
		for (r = 0; r < 7; r++)
			for (b = 0; b < 5; b++)
				if (glyphs[g].rows[r] & (16 >> b))
					for (dy = 0; dy < k; dy++)
						for (dx = 0; dx < k; dx++)
							put(c, x + b * k + dx,
							    y + r * k + dy,
							    tb_ink);
	}
}

/* "1.2B": @n with a unit, 3 significant digits at most */
static void count_text(uint64_t n, char *buf, size_t len)
{
	static const char units[] = " KMBT";
	double v = (double)n;
	int u = 0;

	while (v >= 1000 && u < 4) {
		v /= 1000;
		u++;
	}
	if (!u)
		snprintf(buf, len, "%llu", (unsigned long long)n);
	else
		snprintf(buf, len, v < 10 ? "%.1f%c" : "%.0f%c", v, units[u]);
}

/* elements of tensor @x, saturated */
static uint64_t elements(const struct tfs_tensor *x)
{
	uint64_t n = 1;
	uint32_t i;

	for (i = 0; i < x->ndim; i++)
		if (!tfs_mul_u64(n, x->shape[i], &n))
			return UINT64_MAX;
	return n;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* the dtype holding the most bytes (of the first TB_DTYPES names seen) */
#define TB_DTYPES 64
static const char *dominant_dtype(const struct tfs_tree *t)
{
	const char *name[TB_DTYPES];
	uint64_t bytes[TB_DTYPES];
	uint32_t i, j, n = 0, best = 0;

	for (i = 0; i < t->ntensors; i++) {
		for (j = 0; j < n; j++)
			if (strcmp(name[j], t->tensors[i].dtype) == 0)
				break;
		if (j == n && n == TB_DTYPES)
			continue;
		if (j == n) {
			name[n] = t->tensors[i].dtype;
			bytes[n++] = 0;
		}
		bytes[j] = add_sat(bytes[j], t->tensors[i].size);
		if (bytes[j] > bytes[best])
			best = j;
	}
	return n ? name[best] : "no tensors";
}

static int by_elements(const void *pa, const void *pb, void *arg)
{
	const struct tfs_tensor *t = arg;
	uint64_t a = elements(&t[*(const uint32_t *)pa]);
	uint64_t b = elements(&t[*(const uint32_t *)pb]);

	return a < b ? 1 : a > b ? -1 : 0;
}

/* the node of tensor @k's preview file (its path + ".png"), or NO_NODE */
static uint32_t preview_node(const struct tfs_tree *t, uint32_t k)
{
	uint32_t node;
	char *path;

	if (t->tensors[k].unreadable ||
	    asprintf(&path, "%s.png", t->tensors[k].path) < 0)
		return TFS_NO_NODE;
	node = tfs_tree_resolve(t, path);
	free(path);
	return node;
}

/* the whole preview file @node, malloc'd */
static int read_preview(struct tfs_image *img, uint32_t node, uint8_t **png,
			size_t *len)
{
	uint64_t size = tfs_node_size(img->tree, node), off = 0;
	struct tfs_view v;
	int ret = -ENOMEM;

	*png = malloc(size ? size : 1);
	if (!*png)
		return -ENOMEM;
	while (off < size) {
		ret = tfs_image_read(img, node, off, size - off, &v);
		if (ret)
			goto out;
		if (!v.len) {
			tfs_view_release(img, &v);
			ret = -EIO;
			goto out;
		}
		memcpy(*png + off, v.data, v.len);
		off += v.len;
		tfs_view_release(img, &v);
	}
	*len = size;
	ret = 0;
out:
	if (ret) {
		free(*png);
		*png = NULL;
	}
	return ret;
}

/*
 * The heat map of preview file @k (its rows above the histogram and the
 * scale) fitted into @w x @h at (@x, @y), its aspect ratio kept
 */
static int draw_tile(struct canvas *c, struct tfs_image *img, uint32_t k,
		     uint32_t x, uint32_t y, uint32_t w, uint32_t h)
{
	png_image pi = {.version = PNG_IMAGE_VERSION};
	uint32_t pw, ph, tw, th, i, j;
	uint8_t *png = NULL, *pix = NULL;
	size_t len;
	int ret;

	ret = read_preview(img, k, &png, &len);
	if (ret)
		return ret;
	ret = -EINVAL;
	if (!png_image_begin_read_from_memory(&pi, png, len))
		goto out;
	pi.format = PNG_FORMAT_RGB;
	if (pi.height <= 1 + TFS_PREVIEW_HIST_H + TFS_PREVIEW_SCALE_H ||
	    pi.width > TFS_PREVIEW_MAX)
		goto out;
	ret = -ENOMEM;
	pix = malloc(PNG_IMAGE_SIZE(pi));
	if (!pix)
		goto out;
	ret = -EINVAL;
	if (!png_image_finish_read(&pi, NULL, pix, 0, NULL))
		goto out;
	pw = pi.width;
	ph = pi.height - 1 - TFS_PREVIEW_HIST_H - TFS_PREVIEW_SCALE_H;
	/* the larger scale that fits: w / pw or h / ph */
	if ((uint64_t)w * ph <= (uint64_t)h * pw) {
		tw = w;
		th = (uint32_t)((uint64_t)ph * w / pw);
	} else {
		th = h;
		tw = (uint32_t)((uint64_t)pw * h / ph);
	}
	tw = tw ? tw : 1;
	th = th ? th : 1;
	x += (w - tw) / 2;
	y += (h - th) / 2;
	for (j = 0; j < th; j++)
		for (i = 0; i < tw; i++)
			put(c, x + i, y + j,
			    pix + ((size_t)((uint64_t)j * ph / th) * pw +
				   (uint64_t)i * pw / tw) *
					    3);
	ret = 0;
out:
	png_image_free(&pi);
	free(pix);
	free(png);
	return ret;
}

/* the tiles of the largest tensors that have a picture, under the text */
static void draw_mosaic(struct canvas *c, struct tfs_image *img, uint32_t top,
			uint32_t k)
{
	const struct tfs_tree *t = img->tree;
	uint32_t *order, i, n = 0, done = 0, cols, rows, cw, ch, m = 2 * k;

	if (!t->ntensors || top + 2 * m >= c->size)
		return;
	order = malloc(t->ntensors * sizeof(*order));
	if (!order)
		return;
	for (i = 0; i < t->ntensors; i++)
		order[i] = i;
	qsort_r(order, t->ntensors, sizeof(*order), by_elements,
		(void *)t->tensors);
	/* the first TB_TILES tensors that have a picture: their previews */
	for (i = 0; i < t->ntensors && n < TB_TILES; i++)
		if ((order[n] = preview_node(t, order[i])) != TFS_NO_NODE)
			n++;
	cols = n > 1 ? 2 : 1;
	rows = n > 2 ? 2 : 1;
	cw = (c->size - 2 * m - (cols - 1) * k) / cols;
	ch = (c->size - top - m - (rows - 1) * k) / rows;
	for (i = 0; i < n && cw && ch; i++)
		if (!draw_tile(c, img, order[i], m + (done % cols) * (cw + k),
			       top + (done / cols) * (ch + k), cw, ch))
			done++;
	free(order);
}

static int write_png(const struct canvas *c, const char *out)
{
	png_image pi = {.version = PNG_IMAGE_VERSION,
			.width = c->size,
			.height = c->size,
			.format = PNG_FORMAT_RGB};
	png_alloc_size_t len = 0;
	uint8_t *buf = NULL;
	size_t done = 0;
	ssize_t n;
	int fd = -1, ret = -ENOMEM;

	if (!png_image_write_to_memory(&pi, NULL, &len, 0, c->rgb, 0, NULL))
		return -EINVAL;
	buf = malloc(len);
	if (!buf)
		goto out;
	ret = -EINVAL;
	if (!png_image_write_to_memory(&pi, buf, &len, 0, c->rgb, 0, NULL))
		goto out;
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	while (done < len) {
		n = write(fd, buf + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			ret = n < 0 ? -errno : -EIO;
			goto out;
		}
		done += (size_t)n;
	}
	ret = close(fd) ? -errno : 0;
	fd = -1;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return ret;
}

static int thumbnail_usage(FILE *f)
{
	fprintf(f, "usage: %s thumbnail [-s SIZE] INPUT OUTPUT.png\n",
		tfs_progname);
	if (f == stdout)
		fprintf(f,
			"A SIZE x SIZE PNG of a container for file managers "
			"(default %d, %d to %d):\nits format, parameter count "
			"and dominant dtype over the largest tensors'\n"
			"pictures.  Any failure: one line, exit status 1.\n",
			TB_DEFAULT, TB_MIN, TB_MAX);
	return f == stdout ? TFS_EXIT_OK : TFS_EXIT_USAGE;
}

int tfs_cmd_thumbnail(int argc, char **argv)
{
	struct tfs_build_options bo = {
		.as = TFS_DTYPE_INVALID, .previews = true, .no_export = true};
	struct tfs_image_options io = {.cache_size = TB_CACHE};
	struct tfs_image *img = NULL;
	struct canvas c = {0};
	const struct tfs_tree *t;
	uint64_t params = 0;
	unsigned long size = TB_DEFAULT;
	char line[64], num[32], *end;
	const char *pos[2];
	uint32_t i, k, np = 0;
	int a, ret;

	for (a = 1; a < argc; a++) {
		if (strcmp(argv[a], "--help") == 0 ||
		    strcmp(argv[a], "-h") == 0)
			return thumbnail_usage(stdout);
		if (strcmp(argv[a], "-s") == 0 && a + 1 < argc) {
			errno = 0;
			size = strtoul(argv[++a], &end, 10);
			if (errno || *end || size < TB_MIN || size > TB_MAX) {
				tfs_cli_say(stderr,
					    "%s thumbnail: -s %s: not a size "
					    "from %d to %d\n",
					    tfs_progname, argv[a], TB_MIN,
					    TB_MAX);
				return TFS_EXIT_USAGE;
			}
		} else if (np < 2 && (argv[a][0] != '-' || !argv[a][1])) {
			pos[np++] = argv[a];
		} else {
			return thumbnail_usage(stderr);
		}
	}
	if (np != 2)
		return thumbnail_usage(stderr);
	/* thumbnailers run without network: local files only */
	if (strstr(pos[0], "://")) {
		tfs_cli_say(stderr, "%s: %s: not a local file\n", tfs_progname,
			    pos[0]);
		return TFS_EXIT_USAGE;
	}
	if (tfs_cli_open_inputs((char *const *)pos, 1, &bo, &img))
		return TFS_EXIT_USAGE;
	tfs_image_configure(img, &io);
	t = img->tree;
	c.size = (uint32_t)size;
	ret = -ENOMEM;
	c.rgb = malloc((size_t)c.size * c.size * 3);
	if (!c.rgb)
		goto out;
	for (i = 0; i < c.size * c.size; i++)
		memcpy(c.rgb + (size_t)i * 3, tb_back, 3);
	for (i = 0; i < t->ntensors; i++)
		params = add_sat(params, elements(&t->tensors[i]));
	k = c.size >= 128 ? c.size / 128 : 1;
	draw_text(&c, 2 * k, 2 * k, k, t->format ? t->format : "tensors");
	count_text(params, num, sizeof(num));
	snprintf(line, sizeof(line), "%s params", num);
	draw_text(&c, 2 * k, 11 * k, k, line);
	draw_text(&c, 2 * k, 20 * k, k, dominant_dtype(t));
	draw_mosaic(&c, img, 29 * k, k);
	ret = write_png(&c, pos[1]);
	if (ret)
		tfs_cli_say(stderr, "%s: %s: %s\n", tfs_progname, pos[1],
			    strerror(-ret));
out:
	if (ret == -ENOMEM)
		tfs_cli_say(stderr, "%s: %s: out of memory\n", tfs_progname,
			    pos[0]);
	free(c.rgb);
	tfs_image_close(img);
	return ret ? TFS_EXIT_USAGE : TFS_EXIT_OK;
}
