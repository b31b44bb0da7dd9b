// SPDX-License-Identifier: MIT
/*
 * The tar reader (src/parse/tar.h): the members of the shared mlp.nemo
 * (written by Python's tarfile) at the offsets its expected.json gives, the
 * tar rejects at the field they break, and archives written here header by
 * header (checksums computed here by their definition): POSIX prefix, pax
 * path and size, GNU long names and base-256 sizes, links skipped, names
 * made contained, limits.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse/tar.h"
#include "core/diag.h"
#include "testutil.h"

/* a header: @name, @size (octal), @type, ustar magic, its checksum */
static void header(uint8_t *h, const char *name, uint64_t size, char type,
		   bool gnu)
{
	unsigned sum = 0;
	size_t i;

	memset(h, 0, 512);
	memcpy(h, name, strlen(name) > 100 ? 100 : strlen(name));
	memcpy(h + 100, "0000644", 7);
	snprintf((char *)h + 124, 12, "%011llo", (unsigned long long)size);
	h[156] = (uint8_t)type;
	if (gnu)
		memcpy(h + 257, "ustar  ", 8);
	else
		memcpy(h + 257,
		       "ustar\0"
		       "00",
		       8);
	memset(h + 148, ' ', 8);
	for (i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
}

static void resum(uint8_t *h)
{
	unsigned sum = 0;
	size_t i;

	memset(h + 148, ' ', 8);
	for (i = 0; i < 512; i++)
		sum += h[i];
	snprintf((char *)h + 148, 8, "%06o", sum);
}

/* walk @b: the members' names joined with ',' into @out; ret of the walk */
static int walk(const uint8_t *b, size_t len, char *out, size_t cap,
		struct tfs_diag *d)
{
	struct tfs_tar_member *m = malloc(sizeof(*m));
	struct tfs_tar_iter it;
	size_t n = 0;
	int ret;

	ck_assert_ptr_nonnull(m);
	out[0] = 0;
	tfs_diag_clear(d);
	tfs_tar_iter_init(&it);
	while ((ret = tfs_tar_next(b, len, &it, m, d)) == 1)
		n += (size_t)snprintf(
			out + n, cap - n, "%s%s:%c:%llu", n ? "," : "", m->name,
			m->type ? m->type : '0', (unsigned long long)m->size);
	free(m);
	return ret;
}

/* the members of the tar @path are @ms (name, offsets, size, sha256) */
static void check_members(const char *path, json_t *ms)
{
	struct tfs_tar_member m;
	struct tfs_tar_iter it;
	struct tfs_diag d;
	json_t *w;
	uint8_t *b;
	size_t len, i = 0;
	char hex[65];

	tfs_diag_clear(&d);
	b = tu_read_file(path, &len);
	ck_assert(tfs_tar_magic(b, len));
	tfs_tar_iter_init(&it);
	while (tfs_tar_next(b, len, &it, &m, &d) == 1) {
		w = json_array_get(ms, i++);
		ck_assert_ptr_nonnull(w);
		/* "./model_config.yaml": the "." component dropped */
		ck_assert_str_eq(m.name,
				 json_string_value(json_object_get(w, "name")) +
					 2);
		ck_assert_uint_eq(m.header_offset,
				  json_integer_value(
					  json_object_get(w, "header_offset")));
		ck_assert_uint_eq(
			m.data_offset,
			json_integer_value(json_object_get(w, "data_offset")));
		ck_assert_uint_eq(
			m.size, json_integer_value(json_object_get(w, "size")));
		tu_sha256_hex(b + m.data_offset, m.size, hex);
		ck_assert_str_eq(
			hex, json_string_value(json_object_get(w, "sha256")));
	}
	ck_assert_uint_eq(i, json_array_size(ms));
	free(b);
}

START_TEST(shared_nemo)
{
	json_error_t err;
	json_t *e;
	char path[4096];

	TU_NEED_SHARED("torchscript/mlp.nemo");
	e = json_load_file(tu_fixture("torchscript/expected.json"), 0, &err);
	ck_assert_ptr_nonnull(e);
	snprintf(path, sizeof(path), "%s", tu_fixture("torchscript/mlp.nemo"));
	check_members(path, json_object_get(
				    json_object_get(json_object_get(e, "valid"),
						    "mlp.nemo"),
				    "members"));
	json_decref(e);
}
END_TEST

/* the project's mlp.nemo: Python tarfile's USTAR, its member offsets */
START_TEST(project_nemo)
{
	json_error_t err;
	json_t *e = json_load_file(
		tu_testdata("nemo/torch_written/expected.json"), 0, &err);
	char path[4096];

	ck_assert_ptr_nonnull(e);
	snprintf(path, sizeof(path), "%s",
		 tu_testdata("nemo/torch_written/mlp.nemo"));
	check_members(path, json_object_get(json_object_get(e, "mlp.nemo"),
					    "members"));
	json_decref(e);
}
END_TEST

/* the three tar rejects in @dir; the second header at @second */
static void check_rejects(const char *dir, uint64_t second)
{
	struct tfs_diag d;
	char names[512], path[4096];
	uint8_t *b;
	size_t len;

	snprintf(path, sizeof(path), "%s/tar_bad_checksum.nemo", dir);
	b = tu_read_file(path, &len);
	ck_assert(!tfs_tar_magic(b, len));
	ck_assert_int_eq(walk(b, len, names, sizeof(names), &d), -EBADMSG);
	ck_assert(strstr(d.msg, "chksum"));
	ck_assert_uint_eq(d.offset, 148);
	free(b);
	snprintf(path, sizeof(path), "%s/tar_member_past_eof.nemo", dir);
	b = tu_read_file(path, &len);
	ck_assert_int_eq(walk(b, len, names, sizeof(names), &d), -EBADMSG);
	ck_assert(strstr(d.msg, "size") && strstr(d.msg, "past the end"));
	ck_assert_uint_eq(d.offset, second + 124); /* its size field */
	free(b);
	snprintf(path, sizeof(path), "%s/tar_path_traversal.nemo", dir);
	b = tu_read_file(path, &len);
	ck_assert_int_eq(walk(b, len, names, sizeof(names), &d), -EBADMSG);
	ck_assert(strstr(d.msg, "'..'"));
	ck_assert_uint_eq(d.offset, 0);
	free(b);
}

START_TEST(shared_rejects)
{
	char dir[4096];

	TU_NEED_SHARED("torchscript/reject/tar_bad_checksum.nemo");
	snprintf(dir, sizeof(dir), "%s", tu_fixture("torchscript/reject"));
	check_rejects(dir, 1024);
}
END_TEST

/* the second member's header where tarfile put it (expected.json) */
START_TEST(project_rejects)
{
	json_error_t err;
	json_t *e = json_load_file(
		tu_testdata("nemo/torch_written/expected.json"), 0, &err);
	char dir[4096];

	ck_assert_ptr_nonnull(e);
	snprintf(dir, sizeof(dir), "%s",
		 tu_testdata("nemo/torch_written/reject"));
	check_rejects(
		dir,
		(uint64_t)json_integer_value(json_object_get(
			json_array_get(
				json_object_get(json_object_get(e, "mlp.nemo"),
						"members"),
				1),
			"header_offset")));
	json_decref(e);
}
END_TEST

START_TEST(crafted)
{
	static uint8_t b[512 * 16];
	struct tfs_diag d;
	char names[1024], rec[128];
	size_t n;

	/* POSIX prefix, a directory, a symlink, a file; "a//./b" cleaned */
	memset(b, 0, sizeof(b));
	header(b, "dir/", 0, '5', false);
	header(b + 512, "x.bin", 3, '0', false);
	memcpy(b + 512 + 345, "pre/fix", 7);
	resum(b + 512);
	memcpy(b + 1024, "abc", 3);
	header(b + 1536, "link", 0, '2', false);
	header(b + 2048, "a//./b", 0, '0', true);
	ck_assert_int_eq(walk(b, 512 * 8, names, sizeof(names), &d), 0);
	ck_assert_str_eq(names, "dir:5:0,pre/fix/x.bin:0:3,link:2:0,a/b:0:0");

	/* pax path and size override the header's */
	memset(b, 0, sizeof(b));
	n = (size_t)snprintf(rec, sizeof(rec), "%s%s",
			     "22 path=long/pax/nm.x\n", "12 size=700\n");
	header(b, "PaxHeader", n, 'x', false);
	memcpy(b + 512, rec, n);
	header(b + 1024, "short", 0, '0', false);
	ck_assert_int_eq(walk(b, 512 * 6, names, sizeof(names), &d), 0);
	ck_assert_str_eq(names, "long/pax/nm.x:0:700");
	/* a pax record whose length is wrong */
	b[512] = '9';
	ck_assert_int_eq(walk(b, 512 * 6, names, sizeof(names), &d), -EBADMSG);
	ck_assert(strstr(d.msg, "pax record"));
	ck_assert_uint_eq(d.offset, 512);

	/* GNU long name, base-256 size */
	memset(b, 0, sizeof(b));
	header(b, "././@LongLink", 11, 'L', true);
	memcpy(b + 512, "./long/name", 11);
	header(b + 1024, "long/na", 0, '0', true);
	memset(b + 1024 + 124, 0, 12);
	b[1024 + 124] = 0x80;
	b[1024 + 135] = 2; /* 2 bytes */
	resum(b + 1024);
	ck_assert_int_eq(walk(b, 512 * 5, names, sizeof(names), &d), 0);
	ck_assert_str_eq(names, "long/name:0:2");
	b[1024 + 125] = 1; /* 2^80 and more */
	resum(b + 1024);
	ck_assert_int_eq(walk(b, 512 * 5, names, sizeof(names), &d), -EBADMSG);
	ck_assert_uint_eq(d.offset, 1024 + 124);

	/* names: absolute, "..", and a GNU long name with ".." */
	memset(b, 0, sizeof(b));
	header(b, "/etc/passwd", 0, '0', false);
	ck_assert_int_eq(walk(b, 512 * 3, names, sizeof(names), &d), -EBADMSG);
	ck_assert(strstr(d.msg, "absolute"));
	header(b, "a/../../b", 0, '0', false);
	ck_assert_int_eq(walk(b, 512 * 3, names, sizeof(names), &d), -EBADMSG);
	header(b, "././@LongLink", 5, 'L', true);
	memcpy(b + 512, "x/../", 5);
	header(b + 1024, "fine", 0, '0', true);
	ck_assert_int_eq(walk(b, 512 * 4, names, sizeof(names), &d), -EBADMSG);
	ck_assert_uint_eq(d.offset, 512);

	/* a size that is not octal; a header cut by the end of the file */
	memset(b, 0, sizeof(b));
	header(b, "f", 0, '0', false);
	b[124] = '9';
	resum(b);
	ck_assert_int_eq(walk(b, 512 * 3, names, sizeof(names), &d), -EBADMSG);
	ck_assert_uint_eq(d.offset, 124);
	header(b, "f", 0, '0', false);
	ck_assert_int_eq(walk(b, 700, names, sizeof(names), &d), -EBADMSG);
	ck_assert_uint_eq(d.offset, 512);
	/* no end blocks at all: tolerated */
	ck_assert_int_eq(walk(b, 512, names, sizeof(names), &d), 0);
	ck_assert_str_eq(names, "f:0:0");
}
END_TEST

START_TEST(member_limit)
{
	size_t n = TFS_TAR_MAX_MEMBERS + 1, i;
	uint8_t *b = calloc(n + 2, 512);
	struct tfs_diag d;
	int ret;

	ck_assert_ptr_nonnull(b);
	header(b, "d/", 0, '5', false);
	for (i = 1; i < n; i++)
		memcpy(b + i * 512, b, 512);
	{
		struct tfs_tar_member *m = malloc(sizeof(*m));
		struct tfs_tar_iter it;

		tfs_diag_clear(&d);
		tfs_tar_iter_init(&it);
		while ((ret = tfs_tar_next(b, (n + 2) * 512, &it, m, &d)) == 1)
			;
		free(m);
	}
	ck_assert_int_eq(ret, -E2BIG);
	ck_assert(d.has_offset);
	ck_assert_uint_eq(d.offset, (uint64_t)TFS_TAR_MAX_MEMBERS * 512);
	free(b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tar");
	TCase *tc = tcase_create("tar");

	tcase_add_test(tc, shared_nemo);
	tcase_add_test(tc, shared_rejects);
	tcase_add_test(tc, project_nemo);
	tcase_add_test(tc, project_rejects);
	tcase_add_test(tc, crafted);
	tcase_add_test(tc, member_limit);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
