/* SPDX-License-Identifier: MIT */
/*
 * BLAKE3 (unkeyed hash mode, default 32-byte output), portable C.
 *
 * Debian 12 ships no C BLAKE3 library; readers that must check a stored
 * BLAKE3 value (the gpt-rs checkpoint base ids) use this.  It is checked
 * against the official test vectors of the BLAKE3 repository
 * (tests/unit/test_gptrs.c).  Only the plain hash mode is implemented: no
 * keyed hash, no key derivation, no extended output.
 */
#ifndef TENSORFS_BLAKE3_H
#define TENSORFS_BLAKE3_H

#include <stddef.h>
#include <stdint.h>

#define TFS_BLAKE3_OUT_LEN 32

/* the BLAKE3 hash of @len bytes at @data into @out */
void tfs_blake3(const void *data, size_t len, uint8_t out[TFS_BLAKE3_OUT_LEN]);

#endif
