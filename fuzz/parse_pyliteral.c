// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the Python literal reader (src/parse/pyliteral.h):
 * parse the input both as latin-1 and as UTF-8; a refusal must carry a
 * message and an offset inside the input, a value must have every node's
 * offset inside the input and every string NUL-terminated.
 */
#include <string.h>

#include "fuzz.h"
#include "parse/pyliteral.h"

#define BASE 12

static void check(const struct tfs_py *v, size_t size, unsigned depth)
{
	size_t i;

	if (v->offset < BASE || v->offset >= BASE + size)
		tfs_fuzz_fail("pyliteral: value offset outside the input");
	if (depth > 40)
		tfs_fuzz_fail("pyliteral: deeper than the limit");
	if (v->kind == TFS_PY_STR && (!v->s || v->s[v->len] != 0))
		tfs_fuzz_fail("pyliteral: string not terminated");
	if (v->kind == TFS_PY_DICT && v->n % 2)
		tfs_fuzz_fail("pyliteral: dict with an odd item count");
	if (v->n > size)
		tfs_fuzz_fail("pyliteral: more items than bytes");
	for (i = 0; i < v->n; i++)
		check(&v->items[i], size, depth + 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tfs_py_options o = {.long_suffix = true};
	struct tfs_py v;
	struct tfs_diag d;
	int pass, ret;

	for (pass = 0; pass < 2; pass++) {
		o.latin1 = pass == 0;
		tfs_diag_clear(&d);
		ret = tfs_py_parse(data, size, BASE, &o, &v, &d);
		if (ret) {
			tfs_fuzz_check_refusal(ret, &d);
			if (!d.has_offset || d.offset < BASE ||
			    d.offset > BASE + size)
				tfs_fuzz_fail("pyliteral: refusal offset "
					      "outside the input");
			continue;
		}
		check(&v, size, 0);
		tfs_py_free(&v);
	}
	return 0;
}
