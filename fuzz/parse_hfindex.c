// SPDX-License-Identifier: MIT
/* libFuzzer target for Hugging Face shard indexes (src/parse/hfindex.h). */
#include <string.h>

#include "fuzz.h"
#include "parse/hfindex.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tfs_hf_index x;
	struct tfs_diag d;
	size_t i;
	int ret;

	tfs_diag_clear(&d);
	ret = tfs_hf_index_parse(data, size, &x, &d);
	if (ret) {
		tfs_fuzz_check_refusal(ret, &d);
		return 0;
	}
	for (i = 0; i < x.n; i++)
		if (!x.v[i].shard || !*x.v[i].shard ||
		    strchr(x.v[i].shard, '/') || x.v[i].at >= size)
			tfs_fuzz_fail("hfindex: entry %zu", i);
	tfs_hf_index_free(&x);
	return 0;
}
