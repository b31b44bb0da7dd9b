// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the tar reader (src/parse/tar.h): walk every member.
 * Checks: a refusal is a negative errno with a message and an offset
 * inside the input; every member's header and data lie inside the input,
 * headers advance, names are contained (no leading '/', no ".."
 * component, no empty component) and at most TFS_TAR_MAX_MEMBERS.
 */
#include <string.h>

#include "fuzz.h"
#include "parse/tar.h"

static bool contained(const char *n, size_t len)
{
	size_t i = 0, j;

	if (len && n[0] == '/')
		return false;
	while (i < len) {
		for (j = i; j < len && n[j] != '/'; j++)
			;
		if (j == i || (j - i == 2 && !memcmp(n + i, "..", 2)) ||
		    (j - i == 1 && n[i] == '.'))
			return false;
		i = j + 1;
	}
	return strlen(n) == len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct tfs_tar_member m;
	struct tfs_tar_iter it;
	struct tfs_diag d;
	uint64_t last = 0, n = 0;
	int ret;

	tfs_diag_clear(&d);
	(void)tfs_tar_magic(data, size);
	tfs_tar_iter_init(&it);
	while ((ret = tfs_tar_next(data, size, &it, &m, &d)) == 1) {
		if (n && m.header_offset <= last)
			tfs_fuzz_fail("tar: headers do not advance");
		last = m.header_offset;
		if (m.data_offset != m.header_offset + TFS_TAR_BLOCK ||
		    m.data_offset > size || m.size > size - m.data_offset)
			tfs_fuzz_fail("tar: data outside the input");
		if (!contained(m.name, m.name_len))
			tfs_fuzz_fail("tar: name not contained");
		if (++n > TFS_TAR_MAX_MEMBERS)
			tfs_fuzz_fail("tar: too many members");
	}
	if (ret) {
		tfs_fuzz_check_refusal(ret, &d);
		if (!d.has_offset || d.offset > size)
			tfs_fuzz_fail("tar: refusal without an offset in the "
				      "input");
	}
	return 0;
}
