/* SPDX-License-Identifier: MIT */
/*
 * Shared by the fuzz targets (fuzz/target.c) and the corpus replay driver
 * (fuzz/replay.c): the libFuzzer entry point and the tree walk that checks
 * a loaded image's invariants (fuzz/walk.c).
 */
#ifndef TFS_FUZZ_H
#define TFS_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/diag.h"
#include "core/image.h"

/* The libFuzzer entry point each target defines. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Walk the whole tree of a successfully loaded @img (loaded from the
 * @size-byte input by the reader named @format) and abort() on the first
 * violated invariant; see docs/fuzzing.md for the list.  Also reads every
 * file as the daemon does and verifies every tensor.
 */
void tfs_fuzz_walk(struct tfs_image *img, const char *format, uint64_t size);

/*
 * Check a refusal: a negative errno and a message saying why.  @ret is what
 * the load returned, @d its diagnostic.
 */
void tfs_fuzz_check_refusal(int ret, const struct tfs_diag *d);

/* number of trees tfs_fuzz_walk() checked (the replay driver reports it) */
extern unsigned long long tfs_fuzz_walked;

/* Report a violated invariant on stderr and abort(). */
void tfs_fuzz_fail(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

#endif
