// SPDX-License-Identifier: MIT
/*
 * The public C API (include/tensorfs/tensorfs.h) through that header only:
 * data/sample.zt against its generator's formula, tests/fixtures/npy
 * against the sha256s its generator wrote, corrupt members, errors, and
 * concurrent reads of one model.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensorfs/tensorfs.h"
#include "testutil.h"

static char sample[1024];

static struct tfs_model *open_ok(const char *path)
{
	struct tfs_model *m = NULL;
	char err[256];
	int ret = tfs_open(path, NULL, &m, err, sizeof(err));

	ck_assert_msg(ret == 0, "%s: %s", path, err);
	ck_assert_ptr_nonnull(m);
	return m;
}

static const char *sample_path(void)
{
	snprintf(sample, sizeof(sample), "%s/data/sample.zt",
		 getenv("TFS_SOURCE_ROOT") ? getenv("TFS_SOURCE_ROOT") : ".");
	return sample;
}

/* tools/make_sample.py: embed.weight[i] = round(sin(i) / 2, 6) */
static float embed_value(int i)
{
	return (float)(nearbyint(sin(i) / 2 * 1e6) / 1e6);
}

START_TEST(sample_tensors)
{
	struct tfs_model *m = open_ok(sample_path());
	struct tfs_tensor_info t;
	const float *p;
	float v[32], b[32];
	size_t len;
	const char *meta;
	int i;

	ck_assert_str_eq(tfs_format(m), "ztensor");
	ck_assert_uint_eq(tfs_tensor_count(m), 9);
	ck_assert_int_eq(tfs_tensor_find(m, "embed/weight", 12), 0);
	ck_assert_int_eq(tfs_tensor_find(m, "embed.weight", 12), 0);
	ck_assert_int_eq(tfs_tensor_find(m, "embed", 5), -ENOENT);
	ck_assert_int_eq(tfs_tensor_info(m, 0, &t, sizeof(t)), 0);
	ck_assert_uint_eq(t.name_len, 12);
	ck_assert(memcmp(t.name, "embed.weight", 12) == 0);
	ck_assert_str_eq(t.path, "embed/weight");
	ck_assert_str_eq(t.dtype, "float32");
	ck_assert_uint_eq(t.ndim, 2);
	ck_assert_uint_eq(t.shape[0], 8);
	ck_assert_uint_eq(t.shape[1], 4);
	ck_assert_uint_eq(t.itemsize, 4);
	ck_assert_uint_eq(t.nbytes, 128);
	ck_assert_uint_eq(t.count, 32);
	ck_assert_str_eq(t.byte_order, "little");
	ck_assert_str_eq(t.order, "C");
	ck_assert_ptr_null(t.role);
	ck_assert_int_eq(t.raw, 1);
	ck_assert_int_eq(t.numeric, 1);
	/* the values, three ways: the mapping, a copy, as float32 */
	p = tfs_tensor_data(m, 0);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(tfs_read(m, 0, 0, b, sizeof(b)), 128);
	ck_assert_int_eq(tfs_read_float32(m, 0, 0, 32, v), 0);
	for (i = 0; i < 32; i++) {
		ck_assert_float_eq_tol(p[i], embed_value(i), 1e-7);
		ck_assert(memcmp(&p[i], &b[i], 4) == 0);
		ck_assert(memcmp(&p[i], &v[i], 4) == 0);
	}
	/* a range, short at the end, nothing past it */
	memset(b, 0, sizeof(b));
	ck_assert_int_eq(tfs_read(m, 0, 126, b, 8), 2);
	ck_assert(memcmp(b, (const char *)p + 126, 2) == 0);
	ck_assert_int_eq(tfs_read(m, 0, 128, b, 8), 0);
	ck_assert_int_eq(tfs_read(m, 0, 1000, b, 8), 0);
	ck_assert_int_eq(tfs_read_float32(m, 0, 30, 3, v), -ERANGE);
	ck_assert_int_eq(tfs_read(m, 9, 0, b, 8), -ENOENT);
	ck_assert_ptr_null(tfs_tensor_data(m, 9));
	ck_assert_int_eq(tfs_tensor_info(m, 9, &t, sizeof(t)), -ENOENT);
	ck_assert_int_eq(tfs_verify(m, 0, NULL, 0), 0);
	meta = tfs_metadata_json(m, &len);
	ck_assert_ptr_nonnull(meta);
	ck_assert_uint_eq(strlen(meta), len);
	ck_assert_ptr_nonnull(strstr(meta, "\"format\": \"ztensor\""));
	ck_assert_ptr_eq(tfs_metadata_json(m, NULL), meta);
	ck_assert_int_eq(tfs_init(0, NULL, NULL, 0), -EALREADY);
	tfs_close(m);
	tfs_close(NULL);
}
END_TEST

START_TEST(xattrs)
{
	struct tfs_model *m = open_ok(sample_path());
	char buf[64];

	ck_assert_int_eq(tfs_getxattr(m, "embed/weight", "dtype", NULL, 0), 7);
	ck_assert_int_eq(tfs_getxattr(m, "embed/weight", "user.tensorfs.shape",
				      buf, sizeof(buf)),
			 5);
	ck_assert(memcmp(buf, "[8,4]", 5) == 0);
	ck_assert_int_eq(tfs_getxattr(m, "embed/weight", "shape", buf, 2),
			 -ERANGE);
	ck_assert_int_eq(tfs_getxattr(m, "embed/weight", "nope", buf, 8),
			 -ENODATA);
	ck_assert_int_eq(tfs_getxattr(m, "no/such", "dtype", buf, 8), -ENOENT);
	ck_assert_int_gt(tfs_listxattr(m, "embed/weight", NULL, 0), 0);
	ck_assert_int_ge(tfs_listxattr(m, "", NULL, 0), 0);
	tfs_close(m);
}
END_TEST

/* tensor @name of tests/fixtures/npy/@file: its sha256 in expected.json */
static const char *expected_sha(const char *file, const char *name)
{
	static char hex[65];
	json_error_t je;
	json_t *root = json_load_file(tu_testdata("npy/expected.json"), 0, &je);
	const char *s;

	ck_assert_ptr_nonnull(root);
	s = json_string_value(json_object_get(
		json_object_get(json_object_get(root, file), name), "sha256"));
	ck_assert_ptr_nonnull(s);
	snprintf(hex, sizeof(hex), "%s", s);
	json_decref(root);
	return hex;
}

START_TEST(compressed_is_copied)
{
	struct tfs_model *m =
		open_ok(tu_testdata("npy/valid/compressed_big.npz"));
	struct tfs_tensor_info t;
	ssize_t i = tfs_tensor_find(m, "ramp", 4);
	uint8_t *buf;
	uint64_t off;
	ssize_t n;
	char hex[65];

	ck_assert_int_ge(i, 0);
	ck_assert_int_eq(tfs_tensor_info(m, (size_t)i, &t, sizeof(t)), 0);
	ck_assert_int_eq(t.raw, 0);
	ck_assert_ptr_null(tfs_tensor_data(m, (size_t)i));
	buf = malloc(t.nbytes);
	ck_assert_ptr_nonnull(buf);
	/* in odd pieces */
	for (off = 0; off < t.nbytes; off += (uint64_t)n) {
		n = tfs_read(m, (size_t)i, off, buf + off, 99991);
		ck_assert_int_gt(n, 0);
	}
	ck_assert_uint_eq(off, t.nbytes);
	tu_sha256_hex(buf, t.nbytes, hex);
	ck_assert_str_eq(hex, expected_sha("compressed_big.npz", "ramp"));
	free(buf);
	tfs_close(m);
}
END_TEST

START_TEST(byte_order_and_order)
{
	struct tfs_model *m = open_ok(tu_testdata("npy/valid/be_f4.npy"));
	struct tfs_tensor_info t;
	uint8_t raw[4096], sw[4];
	float v[1024], w;
	uint64_t k;

	ck_assert_int_eq(tfs_tensor_info(m, 0, &t, sizeof(t)), 0);
	ck_assert_str_eq(t.byte_order, "big");
	ck_assert_uint_le(t.nbytes, sizeof(raw));
	ck_assert_int_eq(tfs_read(m, 0, 0, raw, t.nbytes), (ssize_t)t.nbytes);
	ck_assert_int_eq(tfs_read_float32(m, 0, 0, t.count, v), 0);
	for (k = 0; k < t.count; k++) {
		sw[0] = raw[4 * k + 3];
		sw[1] = raw[4 * k + 2];
		sw[2] = raw[4 * k + 1];
		sw[3] = raw[4 * k];
		memcpy(&w, sw, 4);
		ck_assert(memcmp(&w, &v[k], 4) == 0);
	}
	tfs_close(m);
	m = open_ok(tu_testdata("npy/valid/fortran_f4.npy"));
	ck_assert_int_eq(tfs_tensor_info(m, 0, &t, sizeof(t)), 0);
	ck_assert_str_eq(t.order, "F");
	ck_assert_str_eq(t.byte_order, "little");
	tfs_close(m);
}
END_TEST

START_TEST(corrupt_member)
{
	struct tfs_model *m =
		open_ok(tu_testdata("npy/corrupt/stored_crc_mismatch.npz"));
	char msg[256], b[16], want[1024];
	size_t i, bad = 0;

	for (i = 0; i < tfs_tensor_count(m); i++) {
		int ret = tfs_verify(m, i, msg, sizeof(msg));

		if (ret == 0)
			continue;
		ck_assert_int_eq(ret, -EBADMSG);
		ck_assert_str_ne(msg, "");
		ck_assert_ptr_null(tfs_tensor_data(m, i));
		ck_assert_int_eq(tfs_read(m, i, 0, b, sizeof(b)), -EIO);
		/* the line `tensorfs cat` prints, after its program name */
		snprintf(want, sizeof(want),
			 "%s: tensor 'w': %s; its reads fail with EIO",
			 tu_testdata("npy/corrupt/stored_crc_mismatch.npz"),
			 msg);
		ck_assert_str_eq(tfs_errmsg(m), want);
		/* the reason stays with the tensor: a second read says it */
		ck_assert_int_eq(tfs_read(m, i, 0, b, sizeof(b)), -EIO);
		ck_assert_str_eq(tfs_errmsg(m), want);
		ck_assert_str_eq(tfs_errmsg(NULL), "");
		bad++;
	}
	ck_assert_uint_eq(bad, 1);
	tfs_close(m);
}
END_TEST

/* a directory of containers holding the same stored names: find and
 * find_next give every tensor of a name once, in order, as a scan does */
START_TEST(same_names)
{
	struct tfs_model *m = open_ok(tu_testdata("gguf/valid"));
	struct tfs_tensor_info t, u;
	size_t n = tfs_tensor_count(m), i, k, want, got, repeated = 0;
	ssize_t j, prev;

	ck_assert_uint_gt(n, 10);
	for (i = 0; i < n; i++) {
		ck_assert_int_eq(tfs_tensor_info(m, i, &t, sizeof(t)), 0);
		want = 0;
		for (k = 0; k < n; k++) {
			ck_assert_int_eq(tfs_tensor_info(m, k, &u, sizeof(u)),
					 0);
			want += u.name_len == t.name_len &&
				!memcmp(u.name, t.name, t.name_len);
		}
		repeated += want > 1;
		got = 0;
		prev = -1;
		for (j = tfs_tensor_find(m, t.name, t.name_len); j >= 0;
		     j = tfs_tensor_find_next(m, (size_t)j)) {
			ck_assert_int_gt(j, prev);
			ck_assert_int_eq(
				tfs_tensor_info(m, (size_t)j, &u, sizeof(u)),
				0);
			ck_assert_uint_eq(u.name_len, t.name_len);
			ck_assert_mem_eq(u.name, t.name, t.name_len);
			prev = j;
			got++;
		}
		ck_assert_int_eq(j, -ENOENT);
		ck_assert_uint_eq(got, want);
	}
	ck_assert_uint_gt(repeated, 0);
	ck_assert_int_eq(tfs_tensor_find(m, "no such", 7), -ENOENT);
	ck_assert_ptr_nonnull(strstr(tfs_errmsg(m), "no such: no such tensor"));
	ck_assert_int_eq(tfs_tensor_find_next(m, n), -ENOENT);
	tfs_close(m);
}
END_TEST

START_TEST(open_errors)
{
	struct tfs_model *m = (struct tfs_model *)1;
	struct tfs_open_options o = {sizeof(o), 0, 1000};
	char err[256] = "x";

	ck_assert_int_eq(tfs_open("/nonexistent/model.safetensors", NULL, &m,
				  err, sizeof(err)),
			 -ENOENT);
	ck_assert_ptr_null(m);
	ck_assert_ptr_nonnull(strstr(err, "No such file"));
	ck_assert_str_eq(tfs_errmsg(NULL), err);
	ck_assert_int_eq(tfs_open(tu_testdata("npy/not_npz/text_files.zip"),
				  NULL, &m, err, sizeof(err)),
			 -ENOEXEC);
	ck_assert_int_eq(tfs_open(sample_path(), &o, &m, err, sizeof(err)),
			 -EINVAL);
	o.cache_size = 0;
	o.flags = TFS_OPEN_FLAT | TFS_OPEN_VERIFY_ALWAYS;
	ck_assert_int_eq(tfs_open(sample_path(), &o, &m, err, sizeof(err)), 0);
	/* flat: every tensor at the root under its stored name */
	ck_assert_int_eq(tfs_tensor_find(m, "embed.weight", 12), 0);
	ck_assert_int_eq(tfs_getxattr(m, "embed.weight", "dtype", NULL, 0), 7);
	tfs_close(m);
}
END_TEST

struct reader {
	struct tfs_model *m;
	const float *want; /* embed.weight as tfs_tensor_data gives it */
	int bad;
};

static void *read_loop(void *arg)
{
	struct reader *r = arg;
	float v[32];
	uint8_t b[128];
	int k, i;

	for (k = 0; k < 200; k++) {
		if (tfs_read_float32(r->m, 0, 0, 32, v) ||
		    tfs_read(r->m, 0, 0, b, sizeof(b)) != 128 ||
		    !tfs_metadata_json(r->m, NULL)) {
			r->bad++;
			continue;
		}
		for (i = 0; i < 32; i++)
			if (memcmp(&r->want[i], &v[i], 4) ||
			    memcmp(b + 4 * i, &v[i], 4))
				r->bad++;
	}
	return NULL;
}

START_TEST(concurrent_reads)
{
	struct tfs_model *m = open_ok(sample_path());
	struct reader r[4];
	pthread_t th[4];
	int i;

	for (i = 0; i < 4; i++) {
		r[i].m = m;
		r[i].want = tfs_tensor_data(m, 0);
		ck_assert_ptr_nonnull(r[i].want);
		r[i].bad = 0;
		ck_assert_int_eq(pthread_create(&th[i], NULL, read_loop, &r[i]),
				 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(r[i].bad, 0);
	}
	tfs_close(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("api");
	TCase *tc = tcase_create("api");

	tcase_add_test(tc, sample_tensors);
	tcase_add_test(tc, xattrs);
	tcase_add_test(tc, compressed_is_copied);
	tcase_add_test(tc, byte_order_and_order);
	tcase_add_test(tc, corrupt_member);
	tcase_add_test(tc, same_names);
	tcase_add_test(tc, open_errors);
	tcase_add_test(tc, concurrent_reads);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
