/* SPDX-License-Identifier: MIT */
/* Helpers shared by the Check suites. */
#ifndef TFS_TESTUTIL_H
#define TFS_TESTUTIL_H

#include <check.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/diag.h"
#include "core/image.h"

/* path of a file under the shared fixtures (TFS_FIXTURES); static buffer */
const char *tu_fixture(const char *rel);
/*
 * Cases that need a file of ../shared (real third-party files, or
 * reference-written ones the project cannot regenerate) start with
 * TU_NEED_SHARED("dir/file"): when it is missing (a clone without ../shared
 * beside it) the case prints one line "SKIP-CASE: <case>: needs
 * ../shared/fixtures/<rel>" and ends as passed without checking anything.
 * scripts/skipped counts those lines, so the summary says how many cases
 * were skipped one by one; the rest of the suite runs.
 */
bool tu_shared(const char *func, const char *rel);
#define TU_NEED_SHARED(rel)                                                   \
	do {                                                                  \
		if (!tu_shared(__func__, (rel)))                              \
			return;                                               \
	} while (0)
/* path under the repo's tests/fixtures (TFS_TESTDATA); static buffer */
const char *tu_testdata(const char *rel);
/* whole file into a malloc'd buffer; fails the test when unreadable */
uint8_t *tu_read_file(const char *path, size_t *len);
/* load a container from memory; @buf must outlive the image */
int tu_load_mem(const void *buf, size_t len, struct tfs_image **img,
		struct tfs_diag *d);
/* load from a file path */
int tu_load_file(const char *path, struct tfs_image **img, struct tfs_diag *d);
/* the whole content of a regular file of the tree, through tfs_image_read */
uint8_t *tu_read_node(struct tfs_image *img, uint32_t node, size_t *len);
/* the tensor record whose stored name is @name, or NULL */
const struct tfs_tensor *tu_tensor(const struct tfs_image *img,
				   const char *name);
/* lowercase hex SHA-256 */
void tu_sha256_hex(const void *p, size_t len, char out[65]);
/* value of xattr "user.tensorfs.<key>" on the node at @path, NUL-terminated
 * copy in a static buffer, or NULL */
const char *tu_xattr(const struct tfs_image *img, const char *path,
		     const char *key);
/* TU_ANY_OFFSET: tu_expect_reject does not check the offset */
#define TU_ANY_OFFSET UINT64_MAX
/*
 * Loading @b must fail with @err, no image, a message containing @word and
 * a byte offset equal to @offset (unless TU_ANY_OFFSET).
 */
void tu_expect_reject(const void *b, size_t len, int err, const char *word,
		      uint64_t offset);
/* loading @b must succeed; the image is returned */
struct tfs_image *tu_load_ok(const void *b, size_t len);
/* xattr "user.tensorfs.<key>" of @path must exist and equal @want */
void tu_expect_xattr(const struct tfs_image *img, const char *path,
		     const char *key, const char *want);
/* CRC-32C by its definition, bit by bit: independent of the library */
uint32_t tu_crc32c_bitwise(const void *p, size_t len);
/* a growable byte buffer for writing containers in memory */
struct tu_buf {
	uint8_t *p;
	size_t len, cap;
};
/* append @n bytes (fails the test when out of memory) */
void tu_buf_put(struct tu_buf *b, const void *p, size_t n);
/*
 * The data-driven fixture walk: calls @fn(path, name, arg) for every regular
 * file directly in directory @dir (absolute, e.g. tu_testdata("x/reject")),
 * in name order, skipping dot files; returns how many.  Fails the test when
 * @dir cannot be read, so a missing directory never passes as "no files".
 */
size_t tu_each_fixture(const char *dir,
		       void (*fn)(const char *path, const char *name,
				  void *arg),
		       void *arg);
/*
 * The tensor stored as @name must match @want, an object with "dtype"
 * (tensorfs name), "shape", "nbytes", "sha256" of its bytes as served,
 * and optional "big_endian" / "fortran_order" booleans: then the xattrs
 * byte_order=big / order=F must be there, else absent.  (numpy-written
 * expectations: tests/fixtures/npy/generate.py.)
 */
void tu_expect_tensor_json(struct tfs_image *img, const char *name,
			   const json_t *want);
/*
 * @img holds exactly the tensors of the JSON array @tensors, in its order
 * (each as tu_expect_tensor_json wants it, with its "name")
 */
void tu_expect_tensor_list(struct tfs_image *img, const json_t *tensors);
/*
 * Every file of the object @reject (file name -> a word of its refusal),
 * TFS_TESTDATA/@dir/FILE loaded from its path (so files beside it count),
 * is refused by reader @format with a message holding the word; returns
 * how many
 */
size_t tu_expect_rejects_json(const char *dir, const json_t *reject,
			      const char *format);
/* a JSON file, parsed; fails the test if not */
json_t *tu_load_json(const char *path);
/* one reject sample and its refusal */
struct tu_reject {
	const char *file; /* name without @ext */
	int err;
	const char *word;   /* in the message */
	const char *needle; /* the refusal's offset is its first byte; or */
	uint64_t at;	    /* NULL: this offset (or TU_ANY_OFFSET) */
};
/*
 * Every row's file (TFS_TESTDATA/@dir/FILE@ext) is refused as the row
 * says, and every file of @dir ending in @ext has a row.
 */
void tu_check_rejects(const char *dir, const char *ext,
		      const struct tu_reject *v, size_t n);
/*
 * The same from a generator's table: TFS_TESTDATA/@dir/reject.tsv, rows
 * "FILE<TAB>ERRNO<TAB>WORD<TAB>OFFSET" (ERRNO: EBADMSG, ENOTSUP, E2BIG,
 * EINVAL), each file in @dir/reject; returns the rows' count
 */
size_t tu_check_reject_tsv(const char *dir, const char *ext);
/*
 * A generator's table of the tensors of archives whose members mount as
 * directories: rows "[FILE<TAB>]DIR<TAB>NAME<TAB>DTYPE<TAB>SHAPE<TAB>OFFSET
 * <TAB>BYTES<TAB>SHA256"; DIR "-": the member is at the root
 */
struct tu_row {
	char dir[160], name[160], dtype[32], shape[64], sha[65];
	unsigned long long offset, size;
};
/* the rows of @f (with a first column, those of @file; without: NULL) */
size_t tu_read_rows(FILE *f, const char *file, struct tu_row **out);
/*
 * @img holds exactly the @n tensors of @v: each stored NAME under DIR, its
 * dtype, shape xattr, offset, and bytes (their sha256)
 */
void tu_check_rows(struct tfs_image *img, const struct tu_row *v, size_t n);
/*
 * Every file of TFS_TESTDATA/@dir/valid loads as @format and holds the
 * tensors of its rows of @dir/valid.tsv (tu_check_rows); returns how
 * many rows were checked (all of the table's, or the test fails)
 */
size_t tu_check_valid_tsv(const char *dir, const char *format);
/* run one suite; returns the process exit status */
int tu_run(Suite *s);
/* the same for a suite that reads ../shared/fixtures: 77 (skipped, with a
 * line saying why) when they are missing */
int tu_run_with_fixtures(Suite *s);
/*
 * .tensorfs/@file of @img ("metadata.json", "manifest.json"), parsed (a
 * NUL inside a string allowed); fails the test when missing or not JSON
 */
json_t *tu_meta_json(struct tfs_image *img, const char *file);
/* ../shared/fixtures/@dir/expected.json, parsed; fails the test if not */
json_t *tu_expected_json(const char *dir);

#endif
