// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the bounded XML reader (src/parse/xml.h): every
 * element's tag and attribute offsets lie inside the input, the depth
 * stays within the limit, and a refusal carries a message and an offset
 * inside the input.
 */
#include <string.h>

#include "fuzz.h"
#include "parse/xml.h"

struct seen {
	size_t size;
	unsigned max_depth;
};

static int start(void *arg, const char *name, unsigned depth, uint64_t at,
		 const struct tfs_xml_attr *a, size_t n)
{
	const struct seen *s = arg;
	size_t i;

	if (at >= s->size)
		tfs_fuzz_fail("xml: tag outside the input");
	if (depth == 0 || depth > s->max_depth)
		tfs_fuzz_fail("xml: depth %u past the limit", depth);
	if (n > 8)
		tfs_fuzz_fail("xml: %zu attributes past the limit", n);
	for (i = 0; i < n; i++)
		if (a[i].at < at || a[i].at >= s->size ||
		    a[i].value_len != strlen(a[i].value) ||
		    a[i].value_len > 4096)
			tfs_fuzz_fail("xml: attribute outside the input");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen s = {size, 6};
	struct tfs_xml_limits lim = {.max_depth = 6,
				     .max_attrs = 8,
				     .max_value = 4096,
				     .max_size = 1 << 20};
	struct tfs_xml_handler h = {.start = start, .arg = &s};
	struct tfs_diag d;
	int ret;

	tfs_diag_clear(&d);
	ret = tfs_xml_parse(data, size, &lim, &h, &d);
	if (ret) {
		tfs_fuzz_check_refusal(ret, &d);
		if (!d.has_offset || d.offset > size)
			tfs_fuzz_fail("xml: refusal offset outside the input");
	}
	return 0;
}
