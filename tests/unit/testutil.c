// SPDX-License-Identifier: MIT
/* Helpers shared by the Check suites (tests/unit/testutil.h). */
#include <dirent.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "core/source.h"
#include "core/tree.h"
#include "testutil.h"
#include "core/text.h"

static const char *env_path(const char *var, const char *rel)
{
	static char buf[4096];
	const char *dir = getenv(var);

	ck_assert_msg(dir != NULL, "%s is not set", var);
	snprintf(buf, sizeof(buf), "%s/%s", dir, rel);
	return buf;
}

const char *tu_fixture(const char *rel)
{
	return env_path("TFS_FIXTURES", rel);
}

bool tu_shared(const char *func, const char *rel)
{
	size_t n = strlen(func);
	struct stat st;

	if (stat(tu_fixture(rel), &st) == 0)
		return true;
	/* Check names a case's function NAME_fn */
	if (n > 3 && strcmp(func + n - 3, "_fn") == 0)
		n -= 3;
	printf("SKIP-CASE: %.*s: needs ../shared/fixtures/%s\n", (int)n, func,
	       rel);
	fflush(stdout);
	return false;
}

const char *tu_testdata(const char *rel)
{
	return env_path("TFS_TESTDATA", rel);
}

uint8_t *tu_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	ck_assert_msg(f != NULL, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	ck_assert(buf != NULL);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

int tu_load_mem(const void *buf, size_t len, struct tfs_image **img,
		struct tfs_diag *d)
{
	struct tfs_source src;

	tfs_diag_clear(d);
	tfs_source_init_memory(&src, buf, len);
	return tfs_image_load(img, &src, NULL, d);
}

int tu_load_file(const char *path, struct tfs_image **img, struct tfs_diag *d)
{
	tfs_diag_clear(d);
	return tfs_image_open(img, path, NULL, d);
}

uint8_t *tu_read_node(struct tfs_image *img, uint32_t node, size_t *len)
{
	uint64_t size = tfs_node_size(img->tree, node), off = 0;
	uint8_t *buf = malloc(size ? size : 1);
	struct tfs_view v;

	ck_assert(buf != NULL);
	while (off < size) {
		/* odd chunk size: exercises reads that straddle anything */
		ck_assert_int_eq(tfs_image_read(img, node, off, 4093, &v), 0);
		ck_assert_uint_gt(v.len, 0);
		memcpy(buf + off, v.data, v.len);
		off += v.len;
		tfs_view_release(img, &v);
	}
	ck_assert_int_eq(tfs_image_read(img, node, size, 16, &v), 0);
	ck_assert_uint_eq(v.len, 0);
	*len = (size_t)size;
	return buf;
}

const struct tfs_tensor *tu_tensor(const struct tfs_image *img,
				   const char *name)
{
	uint32_t i;

	for (i = 0; i < img->tree->ntensors; i++)
		if (img->tree->tensors[i].name &&
		    img->tree->tensors[i].name_len == strlen(name) &&
		    memcmp(img->tree->tensors[i].name, name, strlen(name)) == 0)
			return &img->tree->tensors[i];
	return NULL;
}

void tu_sha256_hex(const void *p, size_t len, char out[65])
{
	unsigned char md[32];
	unsigned int mdlen = 0;
	int i;

	EVP_Digest(p, len, md, &mdlen, EVP_sha256(), NULL);
	for (i = 0; i < 32; i++)
		sprintf(out + 2 * i, "%02x", md[i]);
	out[64] = '\0';
}

const char *tu_xattr(const struct tfs_image *img, const char *path,
		     const char *key)
{
	static char buf[4096];
	char name[256];
	uint32_t n = tfs_tree_resolve(img->tree, path);
	ssize_t len;

	if (n == TFS_NO_NODE)
		return NULL;
	snprintf(name, sizeof(name), TFS_XATTR_PREFIX "%s", key);
	len = tfs_tree_getxattr(img->tree, n, name, buf, sizeof(buf) - 1);
	if (len < 0)
		return NULL;
	buf[len] = '\0';
	return buf;
}

void tu_expect_reject(const void *b, size_t len, int err, const char *word,
		      uint64_t offset)
{
	struct tfs_image *img = NULL;
	struct tfs_diag d;
	int ret = tu_load_mem(b, len, &img, &d);

	ck_assert_msg(ret == err, "load gave %d, want %d (%s)", ret, err,
		      d.msg);
	ck_assert_ptr_null(img);
	ck_assert_msg(strstr(d.msg, word) != NULL, "message '%s' lacks '%s'",
		      d.msg, word);
	ck_assert_msg(d.has_offset, "message '%s' has no offset", d.msg);
	ck_assert_msg(tfs_text_is_safe(d.msg, strlen(d.msg)),
		      "message '%s' is not one printable line", d.msg);
	if (offset != TU_ANY_OFFSET)
		ck_assert_msg(d.offset == offset, "'%s' at %llu, want %llu",
			      d.msg, (unsigned long long)d.offset,
			      (unsigned long long)offset);
}

struct tfs_image *tu_load_ok(const void *b, size_t len)
{
	struct tfs_image *img = NULL;
	struct tfs_diag d;
	int ret = tu_load_mem(b, len, &img, &d);

	ck_assert_msg(ret == 0, "load failed: %d %s (offset %llu)", ret, d.msg,
		      (unsigned long long)d.offset);
	return img;
}

void tu_expect_xattr(const struct tfs_image *img, const char *path,
		     const char *key, const char *want)
{
	const char *v = tu_xattr(img, path, key);

	ck_assert_msg(v != NULL, "%s: no xattr %s", path, key);
	ck_assert_msg(strcmp(v, want) == 0, "%s: %s = '%s', want '%s'", path,
		      key, v, want);
}

uint32_t tu_crc32c_bitwise(const void *p, size_t len)
{
	const uint8_t *b = p;
	uint32_t c = 0xFFFFFFFFu;
	int k;

	while (len--) {
		c ^= *b++;
		for (k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
	}
	return ~c;
}

void tu_buf_put(struct tu_buf *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		ck_assert_ptr_nonnull(b->p);
	}
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
}

int tu_run_with_fixtures(Suite *s)
{
	const char *dir = getenv("TFS_FIXTURES");
	struct stat st;

	if (!dir || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		/* a clone without ../shared beside it: skipped, not failed */
		printf("SKIP: the shared fixtures (%s) are missing\n",
		       dir ? dir : "TFS_FIXTURES unset");
		srunner_free(srunner_create(s));
		return 77;
	}
	return tu_run(s);
}

int tu_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

size_t tu_each_fixture(const char *dir,
		       void (*fn)(const char *path, const char *name,
				  void *arg),
		       void *arg)
{
	char *base = strdup(dir), **names = NULL, path[4096];
	size_t n = 0, cap = 0, i, files = 0;
	struct dirent *e;
	struct stat st;
	DIR *d;

	ck_assert(base != NULL);
	d = opendir(base);
	ck_assert_msg(d != NULL, "cannot read fixture directory %s", base);
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			names = realloc(names, cap * sizeof(*names));
			ck_assert(names != NULL);
		}
		names[n] = strdup(e->d_name);
		ck_assert(names[n] != NULL);
		n++;
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), name_cmp);
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", base, names[i]);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
			fn(path, names[i], arg);
			files++;
		}
		free(names[i]);
	}
	free(names);
	free(base);
	return files;
}

void tu_expect_tensor_json(struct tfs_image *img, const char *name,
			   const json_t *want)
{
	const struct tfs_tensor *t = tu_tensor(img, name);
	const json_t *shape = json_object_get(want, "shape");
	const char *dtype = json_string_value(json_object_get(want, "dtype"));
	const char *sha = json_string_value(json_object_get(want, "sha256"));
	const char *bo, *order;
	char hex[65];
	uint8_t *bytes;
	size_t len, i;

	ck_assert_msg(t != NULL, "no tensor '%s'", name);
	ck_assert_ptr_nonnull(dtype);
	ck_assert_msg(strcmp(t->dtype, dtype) == 0, "%s: dtype %s, want %s",
		      name, t->dtype, dtype);
	ck_assert_uint_eq(t->ndim, json_array_size(shape));
	for (i = 0; i < t->ndim; i++)
		ck_assert_uint_eq(
			t->shape[i],
			(uint64_t)json_integer_value(json_array_get(shape, i)));
	bytes = tu_read_node(img, t->node, &len);
	ck_assert_msg(len == (size_t)json_integer_value(
				     json_object_get(want, "nbytes")),
		      "%s: %zu bytes", name, len);
	tu_sha256_hex(bytes, len, hex);
	free(bytes);
	if (sha)
		ck_assert_msg(strcmp(hex, sha) == 0, "%s: sha256 %s, want %s",
			      name, hex, sha);
	bo = tu_xattr(img, t->path, "byte_order");
	if (json_is_true(json_object_get(want, "big_endian")))
		ck_assert_msg(bo && strcmp(bo, "big") == 0,
			      "%s: no byte_order=big", name);
	else
		ck_assert_msg(bo == NULL, "%s: byte_order %s", name, bo);
	order = tu_xattr(img, t->path, "order");
	if (json_is_true(json_object_get(want, "fortran_order")))
		ck_assert_msg(order && strcmp(order, "F") == 0,
			      "%s: no order=F", name);
	else
		ck_assert_msg(order == NULL, "%s: order %s", name, order);
}

void tu_expect_tensor_list(struct tfs_image *img, const json_t *tensors)
{
	const json_t *t;
	size_t i;

	ck_assert_uint_eq(img->tree->ntensors, json_array_size(tensors));
	json_array_foreach(tensors, i, t)
	{
		const char *name =
			json_string_value(json_object_get(t, "name"));

		ck_assert_ptr_nonnull(name);
		ck_assert_str_eq(img->tree->tensors[i].name, name);
		tu_expect_tensor_json(img, name, t);
	}
}

size_t tu_expect_rejects_json(const char *dir, const json_t *reject,
			      const char *format)
{
	struct tfs_image *img = NULL;
	const json_t *word;
	struct tfs_diag d;
	const char *file;
	char rel[512];
	size_t n = 0;
	int ret;

	json_object_foreach((json_t *)reject, file, word)
	{
		snprintf(rel, sizeof(rel), "%s/%s", dir, file);
		ret = tu_load_file(tu_testdata(rel), &img, &d);
		ck_assert_msg(ret < 0, "%s: loaded", file);
		ck_assert_ptr_null(img);
		ck_assert_msg(strstr(d.msg, json_string_value(word)),
			      "%s: '%s' does not say '%s'", file, d.msg,
			      json_string_value(word));
		ck_assert_str_eq(d.format, format);
		n++;
	}
	return n;
}

json_t *tu_load_json(const char *path)
{
	json_error_t err;
	json_t *j = json_load_file(path, 0, &err);

	ck_assert_msg(j != NULL, "%s: %s", path, err.text);
	return j;
}

struct reject_walk {
	const char *ext;
	const struct tu_reject *v;
	size_t n, seen;
};

static void reject_listed(const char *path, const char *name, void *arg)
{
	struct reject_walk *w = arg;
	size_t i, n = strlen(name), e = strlen(w->ext);
	char want[160];

	(void)path;
	if (n < e || strcmp(name + n - e, w->ext) != 0)
		return; /* another suite's */
	for (i = 0; i < w->n; i++) {
		snprintf(want, sizeof(want), "%s%s", w->v[i].file, w->ext);
		if (strcmp(name, want) == 0) {
			w->seen++;
			return;
		}
	}
	ck_abort_msg("%s has no row in the rejects table", name);
}

void tu_check_rejects(const char *dir, const char *ext,
		      const struct tu_reject *v, size_t n)
{
	struct reject_walk w = {ext, v, n, 0};
	char rel[256];
	uint8_t *b, *p;
	size_t len, i;
	uint64_t at;

	for (i = 0; i < n; i++) {
		snprintf(rel, sizeof(rel), "%s/%s%s", dir, v[i].file, ext);
		b = tu_read_file(tu_testdata(rel), &len);
		at = v[i].at;
		if (v[i].needle) {
			p = memmem(b, len, v[i].needle, strlen(v[i].needle));
			ck_assert_msg(p != NULL, "%s: needle", v[i].file);
			at = (uint64_t)(p - b);
		}
		tu_expect_reject(b, len, v[i].err, v[i].word, at);
		free(b);
	}
	tu_each_fixture(tu_testdata(dir), reject_listed, &w);
	ck_assert_uint_eq(w.seen, n);
}

static int errno_named(const char *s)
{
	static const struct {
		const char *name;
		int err;
	} v[] = {{"EBADMSG", EBADMSG},
		 {"ENOTSUP", ENOTSUP},
		 {"E2BIG", E2BIG},
		 {"EINVAL", EINVAL}};
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		if (!strcmp(s, v[i].name))
			return -v[i].err;
	ck_abort_msg("reject.tsv: errno %s", s);
	return 0;
}

size_t tu_check_reject_tsv(const char *dir, const char *ext)
{
	char path[256], file[128], err[32], word[128];
	unsigned long long at;
	struct tu_reject *v = NULL;
	size_t n = 0, i, k, e = strlen(ext);
	FILE *f;

	snprintf(path, sizeof(path), "%s/reject.tsv", dir);
	f = fopen(tu_testdata(path), "r");
	ck_assert_msg(f != NULL, "cannot read %s", path);
	while (fscanf(f, "%127[^\t]\t%31[^\t]\t%127[^\t]\t%llu\n", file, err,
		      word, &at) == 4) {
		k = strlen(file);
		ck_assert(k > e && !strcmp(file + k - e, ext));
		file[k - e] = 0;
		v = realloc(v, (n + 1) * sizeof(*v));
		ck_assert_ptr_nonnull(v);
		v[n].file = strdup(file);
		v[n].err = errno_named(err);
		v[n].word = strdup(word);
		v[n].needle = NULL;
		v[n].at = at;
		n++;
	}
	ck_assert_msg(feof(f), "%s: a line does not parse", path);
	fclose(f);
	snprintf(path, sizeof(path), "%s/reject", dir);
	tu_check_rejects(path, ext, v, n);
	for (i = 0; i < n; i++) {
		free((char *)v[i].file);
		free((char *)v[i].word);
	}
	free(v);
	return n;
}

size_t tu_read_rows(FILE *f, const char *file, struct tu_row **out)
{
	char first[160];
	struct tu_row *v = NULL, r;
	size_t n = 0;

	while (file ? fscanf(f, "%159[^\t]\t", first) == 1 : true) {
		if (fscanf(f,
			   "%159[^\t]\t%159[^\t]\t%31[^\t]\t%63[^\t]\t%llu\t"
			   "%llu\t%64s\n",
			   r.dir, r.name, r.dtype, r.shape, &r.offset, &r.size,
			   r.sha) != 7)
			break;
		if (file && strcmp(first, file))
			continue;
		v = realloc(v, (n + 1) * sizeof(*v));
		ck_assert_ptr_nonnull(v);
		v[n++] = r;
	}
	ck_assert_msg(feof(f), "a line does not parse");
	*out = v;
	return n;
}

/* the tensor stored as @r's name, under its directory */
static const struct tfs_tensor *row_tensor(const struct tfs_image *img,
					   const struct tu_row *r)
{
	size_t n = strlen(r->dir);
	bool root = !strcmp(r->dir, "-");
	uint32_t i;

	for (i = 0; i < img->tree->ntensors; i++) {
		const struct tfs_tensor *t = &img->tree->tensors[i];

		if (t->name_len == strlen(r->name) &&
		    !memcmp(t->name, r->name, t->name_len) &&
		    (root ||
		     (!strncmp(t->path, r->dir, n) && t->path[n] == '/')))
			return t;
	}
	return NULL;
}

void tu_check_rows(struct tfs_image *img, const struct tu_row *v, size_t n)
{
	size_t i;

	ck_assert_uint_gt(n, 0);
	ck_assert_uint_eq(img->tree->ntensors, n);
	for (i = 0; i < n; i++) {
		const struct tfs_tensor *t = row_tensor(img, &v[i]);
		uint8_t *b;
		size_t len;
		char hex[65];

		ck_assert_msg(t != NULL, "no tensor %s/%s", v[i].dir,
			      v[i].name);
		ck_assert_str_eq(t->dtype, v[i].dtype);
		tu_expect_xattr(img, t->path, "shape", v[i].shape);
		ck_assert_msg(t->offset == v[i].offset, "%s at %llu", t->path,
			      (unsigned long long)t->offset);
		b = tu_read_node(img, t->node, &len);
		ck_assert_uint_eq(len, v[i].size);
		tu_sha256_hex(b, len, hex);
		ck_assert_str_eq(hex, v[i].sha);
		free(b);
	}
}

struct valid_tsv {
	const char *dir, *format;
	size_t rows;
};

static void valid_tsv_file(const char *path, const char *name, void *arg)
{
	struct valid_tsv *w = arg;
	char tsv[256];
	struct tfs_image *img;
	struct tfs_diag d;
	struct tu_row *v;
	size_t n;
	FILE *f;

	snprintf(tsv, sizeof(tsv), "%s/valid.tsv", w->dir);
	f = fopen(tu_testdata(tsv), "r");
	ck_assert_msg(f != NULL, "cannot read %s", tsv);
	n = tu_read_rows(f, name, &v);
	fclose(f);
	ck_assert_msg(tu_load_file(path, &img, &d) == 0, "%s: %s", name, d.msg);
	tu_expect_xattr(img, "", "format", w->format);
	tu_check_rows(img, v, n);
	w->rows += n;
	tfs_image_close(img);
	free(v);
}

size_t tu_check_valid_tsv(const char *dir, const char *format)
{
	struct valid_tsv w = {dir, format, 0};
	char sub[256];
	size_t lines = 0;
	FILE *f;
	int c;

	snprintf(sub, sizeof(sub), "%s/valid.tsv", dir);
	f = fopen(tu_testdata(sub), "r");
	ck_assert_msg(f != NULL, "cannot read %s", sub);
	while ((c = fgetc(f)) != EOF)
		lines += c == '\n';
	fclose(f);
	snprintf(sub, sizeof(sub), "%s/valid", dir);
	tu_each_fixture(tu_testdata(sub), valid_tsv_file, &w);
	ck_assert_uint_eq(w.rows, lines);
	return w.rows;
}

json_t *tu_meta_json(struct tfs_image *img, const char *file)
{
	char path[128];
	json_error_t err;
	uint8_t *b;
	size_t len;
	uint32_t n;
	json_t *j;

	snprintf(path, sizeof(path), ".tensorfs/%s", file);
	n = tfs_tree_resolve(img->tree, path);
	ck_assert_msg(n != TFS_NO_NODE, "no %s", path);
	b = tu_read_node(img, n, &len);
	j = json_loadb((const char *)b, len, JSON_ALLOW_NUL, &err);
	ck_assert_msg(j != NULL, "%s: %s", file, err.text);
	free(b);
	return j;
}

json_t *tu_expected_json(const char *dir)
{
	char rel[128];
	json_error_t err;
	json_t *j;

	snprintf(rel, sizeof(rel), "%s/expected.json", dir);
	j = json_load_file(tu_fixture(rel), 0, &err);
	ck_assert_msg(j != NULL, "%s: %s", rel, err.text);
	return j;
}
