// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the zip reader (src/parse/zip.h): open the input as
 * an archive and walk every central entry.  Checks: a refusal is a
 * negative errno with a message and an offset inside the input; every
 * entry's name, local header and data lie inside the input, its data before
 * the central directory, and the walk ends after at most count entries.
 */
#include <string.h>

#include "fuzz.h"
#include "parse/zip.h"

static void refused(int ret, const struct tfs_diag *d, size_t size)
{
	tfs_fuzz_check_refusal(ret, d);
	if (!d->has_offset || d->offset > size)
		tfs_fuzz_fail("zip: refusal without an offset in the input");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tfs_zip z;
	struct tfs_zip_iter it;
	struct tfs_zip_entry e;
	struct tfs_diag d;
	uint64_t n = 0;
	int ret;

	tfs_diag_clear(&d);
	ret = tfs_zip_open(&z, data, size, &d);
	if (ret) {
		refused(ret, &d, size);
		return 0;
	}
	if (z.cd_offset + z.cd_size > z.eocd_offset || z.eocd_offset >= size ||
	    z.count > z.cd_size / 46)
		tfs_fuzz_fail("zip: directory outside the input");
	tfs_zip_iter_init(&it);
	while ((ret = tfs_zip_next(&z, &it, &e, &d)) == 1) {
		const uint8_t *name = (const uint8_t *)e.name;

		if (name < data ||
		    name + e.name_len > data + z.cd_offset + z.cd_size ||
		    memchr(e.name, 0, e.name_len))
			tfs_fuzz_fail("zip: name outside the directory");
		if (e.local_offset + 30 + e.name_len > e.data_offset ||
		    e.data_offset > z.cd_offset ||
		    e.comp_size > z.cd_offset - e.data_offset)
			tfs_fuzz_fail("zip: data outside the members");
		if (memcmp(data + e.local_offset + 30, e.name, e.name_len))
			tfs_fuzz_fail("zip: local name differs");
		if (e.index != n++ || n > z.count)
			tfs_fuzz_fail("zip: more entries than the count");
	}
	if (ret)
		refused(ret, &d, size);
	else if (n != z.count)
		tfs_fuzz_fail("zip: walk ended early");
	return 0;
}
