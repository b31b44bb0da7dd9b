/* SPDX-License-Identifier: MIT */
/* Private exports of reader-owned functions (src/lib/private.h). */
#include "lib/private.h"

#include "formats/common/npy_header.h"

int tfs_npy_header_parse(const uint8_t *p, uint64_t avail, struct tfs_npy *h)
{
	return tfs_npy_parse(p, avail, 0, h, NULL);
}

void tfs_npy_header_free(struct tfs_npy *h)
{
	tfs_npy_free(h);
}
