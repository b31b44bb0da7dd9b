// SPDX-License-Identifier: MIT
/*
 * What a tensor's stored bytes may be besides one extent of its container
 * (src/core/companions.c, stored.c): an extent of a companion file, bytes
 * in memory, several pieces, a slice (under a directory or at the root,
 * nested at most TFS_MAX_SLICE_DEPTH deep); and the containment of
 * companion names.  A test reader (struct tfs_format) describes a container in
 * a temporary directory; the bytes come back through the image's read path and
 * verify.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/builder.h"
#include "core/diag.h"
#include "core/format.h"
#include "core/image.h"
#include "core/source.h"
#include "testutil.h"

static char dir[64];
static char path[128];

/* the container: 64 bytes i * 3 */
static uint8_t root_bytes[64];
/* model.bin_data: 32 bytes 200 + i */
static uint8_t side_bytes[32];

static void put(const char *name, const void *p, size_t n)
{
	char f[256];
	FILE *fp;

	snprintf(f, sizeof(f), "%s/%s", dir, name);
	fp = fopen(f, "wb");
	ck_assert_ptr_nonnull(fp);
	ck_assert_uint_eq(fwrite(p, 1, n, fp), n);
	fclose(fp);
}

static void setup(void)
{
	char f[256];
	size_t i;

	snprintf(dir, sizeof(dir), "/tmp/tfs-companions-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	for (i = 0; i < sizeof(root_bytes); i++)
		root_bytes[i] = (uint8_t)(i * 3);
	for (i = 0; i < sizeof(side_bytes); i++)
		side_bytes[i] = (uint8_t)(200 + i);
	put("model.bin", root_bytes, sizeof(root_bytes));
	put("model.bin_data", side_bytes, sizeof(side_bytes));
	snprintf(f, sizeof(f), "%s/sub", dir);
	ck_assert_int_eq(mkdir(f, 0755), 0);
	put("sub/more.bin", "abcd", 4);
	/* a symlink out of the directory, and one inside it */
	snprintf(f, sizeof(f), "%s/out.bin", dir);
	ck_assert_int_eq(symlink("/etc/passwd", f), 0);
	snprintf(f, sizeof(f), "%s/in.bin", dir);
	ck_assert_int_eq(symlink("model.bin_data", f), 0);
	snprintf(path, sizeof(path), "%s/model.bin", dir);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static struct tfs_tensor_spec raw(const char *name, uint64_t len)
{
	static uint64_t shape[1];
	struct tfs_tensor_spec s = {0};

	shape[0] = len;
	s.name = name;
	s.name_len = strlen(name);
	s.dtype = TFS_DTYPE_UINT8;
	s.ndim = 1;
	s.shape = shape;
	s.length = len;
	s.size = len;
	return s;
}

/* the reader of the test container: every kind of stored bytes */
static int load_pieces(const struct tfs_source *src, struct tfs_builder *b,
		       struct tfs_diag *d)
{
	static const uint8_t mem[5] = {9, 8, 7, 6, 5};
	struct tfs_segment segs[3];
	struct tfs_tensor_spec s;
	uint32_t side, again;
	int ret;

	(void)src;
	ret = tfs_builder_open_companion(b, "model.bin_data", &side, d);
	if (ret)
		return ret;
	ck_assert_uint_ne(side, 0);
	/* the same name again: the same file */
	ck_assert_int_eq(
		tfs_builder_open_companion(b, "model.bin_data", &again, d), 0);
	ck_assert_uint_eq(again, side);
	ck_assert_uint_eq(tfs_builder_source(b, side)->data[0], 200);

	s = raw("own", 8); /* bytes 8..16 of the container */
	s.offset = 8;
	if ((ret = tfs_builder_add_tensor(b, &s, NULL, d)))
		return ret;
	s = raw("external", 16); /* bytes 4..20 of the companion */
	s.source = side;
	s.offset = 4;
	if ((ret = tfs_builder_add_tensor(b, &s, NULL, d)))
		return ret;
	s = raw("inmemory", sizeof(mem));
	s.mem = mem;
	if ((ret = tfs_builder_add_tensor(b, &s, NULL, d)))
		return ret;
	/* companion 28..32, memory, container 60..64: 4 + 5 + 4 bytes */
	segs[0] =
		(struct tfs_segment){.offset = 28, .length = 4, .source = side};
	segs[1] = (struct tfs_segment){.length = 5, .mem = mem};
	segs[2] = (struct tfs_segment){.offset = 60, .length = 4};
	s = raw("pieces", 13);
	s.segs = segs;
	s.nsegs = 3;
	/* sha256 of the 13 bytes, computed in the test */
	s.digest = getenv("TFS_TEST_PIECES_DIGEST");
	return tfs_builder_add_tensor(b, &s, NULL, d);
}

static const struct tfs_format pieces_format = {
	.name = "pieces", .description = "test", .load = load_pieces};

static struct tfs_image *open_pieces(void)
{
	struct tfs_image *img = NULL;
	struct tfs_source src;
	struct tfs_diag d;

	ck_assert_int_eq(tfs_source_open(&src, path, &d), 0);
	ck_assert_msg(tfs_image_load_format(&img, &src, &pieces_format, NULL,
					    &d) == 0,
		      "load: %s", d.msg);
	return img;
}

static void want_bytes(struct tfs_image *img, const char *name,
		       const uint8_t *want, size_t n)
{
	const struct tfs_tensor *x = tu_tensor(img, name);
	uint8_t *got;
	size_t len;

	ck_assert_ptr_nonnull(x);
	got = tu_read_node(img, x->node, &len);
	ck_assert_uint_eq(len, n);
	ck_assert_msg(memcmp(got, want, n) == 0, "%s: other bytes", name);
	free(got);
}

static void pieces_expected(uint8_t out[13])
{
	static const uint8_t mem[5] = {9, 8, 7, 6, 5};

	memcpy(out, side_bytes + 28, 4);
	memcpy(out + 4, mem, 5);
	memcpy(out + 9, root_bytes + 60, 4);
}

START_TEST(every_kind_of_stored_bytes)
{
	static const uint8_t mem[5] = {9, 8, 7, 6, 5};
	uint8_t want[13];
	struct tfs_image *img = open_pieces();
	struct tfs_check_result r;
	struct tfs_view v;
	uint32_t i;

	pieces_expected(want);
	/* the container, then its companion */
	ck_assert_uint_eq(img->nsrcs, 2);
	want_bytes(img, "own", root_bytes + 8, 8);
	want_bytes(img, "external", side_bytes + 4, 16);
	want_bytes(img, "inmemory", mem, 5);
	want_bytes(img, "pieces", want, 13);
	/* a read inside one piece is a view of it, one across is copied */
	i = tu_tensor(img, "pieces") - img->tree->tensors;
	ck_assert_int_eq(tfs_image_read_tensor(img, i, 0, 4, &v), 0);
	ck_assert_ptr_eq(v.data, img->srcs[1].data + 28);
	tfs_view_release(img, &v);
	ck_assert_int_eq(tfs_image_read_tensor(img, i, 2, 9, &v), 0);
	ck_assert_uint_eq(v.len, 9);
	ck_assert_mem_eq(v.data, want + 2, 9);
	tfs_view_release(img, &v);
	/* one extent of a companion is served from its mapping */
	i = tu_tensor(img, "external") - img->tree->tensors;
	ck_assert_int_eq(tfs_image_read_tensor(img, i, 0, 16, &v), 0);
	ck_assert_ptr_eq(v.data, tfs_source_serve(&img->srcs[1], 4, 0, 0));
	tfs_view_release(img, &v);
	for (i = 0; i < img->tree->ntensors; i++) {
		tfs_image_check_tensor(img, i, &r, NULL, NULL);
		ck_assert_msg(r.err == 0, "verify: %s", r.msg);
	}
	tfs_image_close(img);
}
END_TEST

/* a digest over pieces: hashed across them; a wrong one fails the reads */
START_TEST(digest_over_pieces)
{
	uint8_t want[13];
	char hex[65], dg[80];
	struct tfs_image *img;
	struct tfs_check_result r;
	struct tfs_view v;
	uint32_t i;

	pieces_expected(want);
	tu_sha256_hex(want, 13, hex);
	snprintf(dg, sizeof(dg), "sha256:%s", hex);
	setenv("TFS_TEST_PIECES_DIGEST", dg, 1);
	img = open_pieces();
	i = tu_tensor(img, "pieces") - img->tree->tensors;
	tfs_image_check_tensor(img, i, &r, NULL, NULL);
	ck_assert_msg(r.err == 0 && r.digest_checked, "verify: %s", r.msg);
	want_bytes(img, "pieces", want, 13);
	tfs_image_close(img);

	hex[0] = hex[0] == '0' ? '1' : '0';
	snprintf(dg, sizeof(dg), "sha256:%s", hex);
	setenv("TFS_TEST_PIECES_DIGEST", dg, 1);
	img = open_pieces();
	i = tu_tensor(img, "pieces") - img->tree->tensors;
	ck_assert_int_eq(tfs_image_read_tensor(img, i, 0, 13, &v), -EIO);
	tfs_image_check_tensor(img, i, &r, NULL, NULL);
	ck_assert_int_eq(r.err, -EBADMSG);
	tfs_image_close(img);
	unsetenv("TFS_TEST_PIECES_DIGEST");
}
END_TEST

/* a companion truncated while mounted: its reads fail, nothing crashes */
START_TEST(companion_truncated)
{
	struct tfs_image *img = open_pieces();
	char f[256];
	struct tfs_view v;
	uint32_t i;

	snprintf(f, sizeof(f), "%s/model.bin_data", dir);
	ck_assert_int_eq(truncate(f, 8), 0);
	i = tu_tensor(img, "external") - img->tree->tensors;
	ck_assert_int_eq(tfs_image_read_tensor(img, i, 0, 16, &v), -EIO);
	i = tu_tensor(img, "pieces") - img->tree->tensors;
	ck_assert_int_eq(tfs_image_read_tensor(img, i, 0, 13, &v), -EIO);
	i = tu_tensor(img, "own") - img->tree->tensors;
	ck_assert_int_eq(tfs_image_read_tensor(img, i, 0, 8, &v), 0);
	tfs_view_release(img, &v);
	tfs_image_close(img);
}
END_TEST

static const char *companion_name;

static int load_one(const struct tfs_source *src, struct tfs_builder *b,
		    struct tfs_diag *d)
{
	uint32_t h;

	(void)src;
	return tfs_builder_open_companion(b, companion_name, &h, d);
}

static const struct tfs_format one_format = {
	.name = "one", .description = "test", .load = load_one};

static int try_companion(const char *name, struct tfs_diag *d)
{
	struct tfs_image *img = NULL;
	struct tfs_source src;
	int ret;

	companion_name = name;
	ck_assert_int_eq(tfs_source_open(&src, path, d), 0);
	ret = tfs_image_load_format(&img, &src, &one_format, NULL, d);
	tfs_image_close(img);
	return ret;
}

/* names that would leave the directory are refused by name */
START_TEST(containment)
{
	static const char *const refused[] = {
		"/etc/passwd",	 "../model.bin", "sub/../../x", "a\\b", "",
		"sub//more.bin", "out.bin",	 "./../x",
	};
	struct tfs_diag d;
	size_t i;

	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		tfs_diag_clear(&d);
		ck_assert_msg(try_companion(refused[i], &d) == -EPERM,
			      "'%s' was not refused: %s", refused[i], d.msg);
		ck_assert_ptr_nonnull(strstr(d.msg, "companion file"));
		ck_assert_msg(strstr(d.msg, "refused") ||
				      strstr(d.msg, "not a file name"),
			      "'%s': %s", refused[i], d.msg);
	}
	tfs_diag_clear(&d);
	ck_assert_int_eq(try_companion("missing.bin", &d), -ENOENT);
	ck_assert_ptr_nonnull(strstr(d.msg, "missing.bin"));
	/* inside: a subdirectory, a symlink that stays in */
	ck_assert_int_eq(try_companion("sub/more.bin", &d), 0);
	ck_assert_int_eq(try_companion("in.bin", &d), 0);
	/* a memory container has no directory */
	{
		struct tfs_image *img = NULL;
		struct tfs_source src;

		companion_name = "x";
		tfs_source_init_memory(&src, root_bytes, sizeof(root_bytes));
		tfs_diag_clear(&d);
		ck_assert_int_eq(tfs_image_load_format(&img, &src, &one_format,
						       NULL, &d),
				 -ENOENT);
	}
}
END_TEST

/* ---- slices --------------------------------------------------------------
 */

static uint8_t *outer;
static size_t outer_len, inner_at, inner_len;

/* a safetensors file, the container inside the container */
static uint8_t *inner_file(size_t *len)
{
	static const char hdr[] = "{\"w\":{\"dtype\":\"U8\",\"shape\":[6],"
				  "\"data_offsets\":[0,6]}}";
	size_t h = sizeof(hdr) - 1;
	uint8_t *p = malloc(8 + h + 6);

	ck_assert_ptr_nonnull(p);
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(h >> (8 * i));
	memcpy(p + 8, hdr, h);
	memcpy(p + 8 + h, "\x01\x02\x03\x04\x05\x06", 6);
	*len = 8 + h + 6;
	return p;
}

static int load_outer(const struct tfs_source *src, struct tfs_builder *b,
		      struct tfs_diag *d)
{
	(void)src;
	return tfs_builder_load_slice(b, inner_at, inner_len, "inner.st",
				      "inner", NULL, d);
}

static const struct tfs_format outer_format = {
	.name = "outer", .description = "test", .load = load_outer};

/* outer.bin: @in at an odd offset (a slice's mapping starts mid-page),
 * loaded by @fmt into *@img; its path in @f */
static void load_outer_file(const uint8_t *in, const struct tfs_format *fmt,
			    struct tfs_image **img, char *f, size_t cap)
{
	struct tfs_source src;
	struct tfs_diag d;

	inner_at = 4099;
	outer_len = inner_at + inner_len + 10;
	outer = calloc(1, outer_len);
	memcpy(outer + inner_at, in, inner_len);
	put("outer.bin", outer, outer_len);
	snprintf(f, cap, "%s/outer.bin", dir);
	ck_assert_int_eq(tfs_source_open(&src, f, &d), 0);
	ck_assert_msg(tfs_image_load_format(img, &src, fmt, NULL, &d) == 0,
		      "load: %s", d.msg);
}

START_TEST(slice_of_a_file)
{
	uint8_t *in = inner_file(&inner_len);
	struct tfs_image *img = NULL;
	struct tfs_source src;
	struct tfs_diag d;
	const struct tfs_tensor *x;
	uint8_t *got;
	size_t len;
	char f[256];

	load_outer_file(in, &outer_format, &img, f, sizeof(f));
	x = tu_tensor(img, "w");
	ck_assert_ptr_nonnull(x);
	ck_assert_str_eq(x->path, "inner/w");
	got = tu_read_node(img, x->node, &len);
	ck_assert_uint_eq(len, 6);
	ck_assert_mem_eq(got, "\x01\x02\x03\x04\x05\x06", 6);
	free(got);
	/* the slice's own metadata sits under its directory's name */
	ck_assert_ptr_nonnull(tu_xattr(img, "", "format"));
	/* the slice's bytes vanish: EIO, not SIGBUS */
	ck_assert_int_eq(truncate(f, (off_t)inner_at + 20), 0);
	{
		struct tfs_view v;

		ck_assert_int_eq(tfs_image_read_tensor(
					 img, x - img->tree->tensors, 0, 6, &v),
				 -EIO);
	}
	tfs_image_close(img);
	/* a refusal inside the slice says so, at the slice's offset */
	in[8] = 'X';
	memcpy(outer + inner_at, in, inner_len);
	put("outer.bin", outer, outer_len);
	ck_assert_int_eq(tfs_source_open(&src, f, &d), 0);
	ck_assert_int_lt(
		tfs_image_load_format(&img, &src, &outer_format, NULL, &d), 0);
	/* a slice past the end of its container */
	inner_at = outer_len;
	ck_assert_int_eq(tfs_source_open(&src, f, &d), 0);
	ck_assert_int_eq(
		tfs_image_load_format(&img, &src, &outer_format, NULL, &d),
		-EBADMSG);
	free(in);
	free(outer);
}
END_TEST

/* the same inner file loaded at the root: the container's own content */
static int load_at_root(const struct tfs_source *src, struct tfs_builder *b,
			struct tfs_diag *d)
{
	(void)src;
	return tfs_builder_load_slice(b, inner_at, inner_len, "inner.st", "",
				      NULL, d);
}

static const struct tfs_format root_format = {
	.name = "atroot", .description = "test", .load = load_at_root};

/* load @f with @fmt; the refusal's offset and format in *@at, @shown */
static int load_refused(const char *f, const struct tfs_format *fmt,
			uint64_t *at, const char **shown)
{
	struct tfs_image *img = NULL;
	struct tfs_source src;
	struct tfs_diag d;
	int ret;

	ck_assert_int_eq(tfs_source_open(&src, f, &d), 0);
	ret = tfs_image_load_format(&img, &src, fmt, NULL, &d);
	ck_assert(d.has_offset);
	*at = d.offset;
	*shown = d.format;
	return ret;
}

START_TEST(slice_at_the_root)
{
	uint8_t *in = inner_file(&inner_len);
	size_t data_at = inner_len - 6, len;
	struct tfs_image *img = NULL;
	const struct tfs_tensor *x;
	const char *shown;
	uint64_t at, at_dir;
	uint8_t *got;
	char f[256];

	load_outer_file(in, &root_format, &img, f, sizeof(f));
	x = tu_tensor(img, "w");
	ck_assert_ptr_nonnull(x);
	ck_assert_str_eq(x->path, "w");
	/* its offset is the container's, read through the container */
	ck_assert_uint_eq(x->offset, inner_at + data_at);
	ck_assert_uint_eq(img->nsrcs, 1);
	ck_assert_uint_eq(x->source, 0);
	got = tu_read_node(img, x->node, &len);
	ck_assert_uint_eq(len, 6);
	ck_assert_mem_eq(got, "\x01\x02\x03\x04\x05\x06", 6);
	free(got);
	snprintf(f + 200, 40, "%zu", inner_at + data_at);
	tu_expect_xattr(img, "w", "offset", f + 200);
	tfs_image_close(img);
	/* a refusal: in the container's bytes and named by its reader */
	*(uint8_t *)memmem(in, inner_len, "[6]", 3) = '{';
	memcpy(outer + inner_at, in, inner_len);
	put("outer.bin", outer, outer_len);
	ck_assert_int_eq(load_refused(f, &outer_format, &at_dir, &shown),
			 -EBADMSG);
	ck_assert_str_eq(shown, "safetensors");
	ck_assert_int_eq(load_refused(f, &root_format, &at, &shown), -EBADMSG);
	ck_assert_str_eq(shown, "atroot");
	ck_assert_uint_eq(at, inner_at + at_dir);
	free(in);
	free(outer);
}
END_TEST

/* a container holding itself: each level loads its whole bytes again */
static unsigned deepest;
static const struct tfs_format self_format;

static int load_self(const struct tfs_source *src, struct tfs_builder *b,
		     struct tfs_diag *d)
{
	if (tfs_builder_slice_depth(b) > deepest)
		deepest = tfs_builder_slice_depth(b);
	return tfs_builder_load_slice(b, 1, src->size - 1, "again", "again",
				      &self_format, d);
}

static const struct tfs_format self_format = {
	.name = "self", .description = "test", .load = load_self};

START_TEST(slices_nest_at_most_8_deep)
{
	static const uint8_t bytes[32];
	struct tfs_image *img = NULL;
	struct tfs_source src;
	struct tfs_diag d;

	tfs_source_init_memory(&src, bytes, sizeof(bytes));
	deepest = 0;
	ck_assert_int_eq(
		tfs_image_load_format(&img, &src, &self_format, NULL, &d),
		-E2BIG);
	ck_assert_str_eq(d.msg, "again: containers nested deeper than 8");
	ck_assert_uint_eq(deepest, TFS_MAX_SLICE_DEPTH);
	ck_assert_uint_eq(TFS_MAX_SLICE_DEPTH, 8);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("companions");
	TCase *tc = tcase_create("companions");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, every_kind_of_stored_bytes);
	tcase_add_test(tc, digest_over_pieces);
	tcase_add_test(tc, companion_truncated);
	tcase_add_test(tc, containment);
	tcase_add_test(tc, slice_of_a_file);
	tcase_add_test(tc, slice_at_the_root);
	tcase_add_test(tc, slices_nest_at_most_8_deep);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
