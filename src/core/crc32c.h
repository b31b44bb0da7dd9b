/* SPDX-License-Identifier: MIT */
/*
 * CRC-32C (src/core/crc32c.c): libc-only arithmetic every layer may use,
 * like checked.h (the digests of the core, a LevelDB table's block
 * checksums in src/parse/sstable.c).
 */
#ifndef TENSORFS_CRC32C_H
#define TENSORFS_CRC32C_H

#include <stddef.h>
#include <stdint.h>

#include "core/abi.h"

/* CRC-32C of @len bytes continuing from @crc (start with 0). */
uint32_t tfs_crc32c(uint32_t crc, const void *p, size_t len);
/* the portable table version (the tests compare both) */
uint32_t tfs_crc32c_sw(uint32_t crc, const void *p, size_t len);

#endif
