// SPDX-License-Identifier: MIT
/*
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78, init and final xor
 * 0xFFFFFFFF): see src/core/crc32c.h.  No Debian library exposes it
 * conveniently, so it is here: the SSE4.2 crc32 instruction on x86-64 CPUs
 * that have it (about 8 bytes per 3 cycles), slicing-by-8 tables
 * otherwise.  The tables are built once, on first use, under pthread_once.
 * libc only: the parsers (a LevelDB table's block checksums) use it too.
 */
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "core/crc32c.h"

#define CRC32C_POLY 0x82F63B78u

static uint32_t crc_table[8][256];
static bool crc_have_hw;
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
	uint32_t c;
	unsigned i, k;

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	__builtin_cpu_init();
	crc_have_hw = __builtin_cpu_supports("sse4.2");
#endif
	for (i = 0; i < 256; i++) {
		c = i;
		for (k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ CRC32C_POLY : c >> 1;
		crc_table[0][i] = c;
	}
	for (i = 0; i < 256; i++)
		for (k = 1; k < 8; k++)
			crc_table[k][i] =
				(crc_table[k - 1][i] >> 8) ^
				crc_table[0][crc_table[k - 1][i] & 0xff];
}

uint32_t tfs_crc32c_sw(uint32_t crc, const void *p, size_t len)
{
	const uint8_t *b = p;
	uint32_t c = ~crc, lo, hi;

	pthread_once(&crc_once, crc_init);
	while (len >= 8) {
		/* bytes assembled explicitly: no alignment or endianness games
		 */
		lo = c ^ ((uint32_t)b[0] | (uint32_t)b[1] << 8 |
			  (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24);
		hi = (uint32_t)b[4] | (uint32_t)b[5] << 8 |
		     (uint32_t)b[6] << 16 | (uint32_t)b[7] << 24;
		c = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
		    crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
		    crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
		    crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
		b += 8;
		len -= 8;
	}
	while (len--)
		c = (c >> 8) ^ crc_table[0][(c ^ *b++) & 0xff];
	return ~c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("sse4.2"))) static uint32_t
crc32c_hw(uint32_t crc, const void *p, size_t len)
{
	const uint8_t *b = p;
	uint64_t c = ~crc, w;

	while (len && ((uintptr_t)b & 7)) {
		c = __builtin_ia32_crc32qi((uint32_t)c, *b++);
		len--;
	}
	while (len >= 8) {
		memcpy(&w, b, 8); /* x86 is little-endian: the byte order */
		c = __builtin_ia32_crc32di(c, w);
		b += 8;
		len -= 8;
	}
	while (len--)
		c = __builtin_ia32_crc32qi((uint32_t)c, *b++);
	return ~(uint32_t)c;
}

uint32_t tfs_crc32c(uint32_t crc, const void *p, size_t len)
{
	pthread_once(&crc_once, crc_init);
	return crc_have_hw ? crc32c_hw(crc, p, len)
			   : tfs_crc32c_sw(crc, p, len);
}
#else
uint32_t tfs_crc32c(uint32_t crc, const void *p, size_t len)
{
	return tfs_crc32c_sw(crc, p, len);
}
#endif
