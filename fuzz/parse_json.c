// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the JSON pull reader (src/parse/json.h): walk every
 * token, decode every string, check offsets stay inside the input and the
 * reader ends (END or a refusal with a message); then convert the whole
 * document to jansson under a node cap.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "parse/json.h"

#define BASE 8

static void walk(const uint8_t *data, size_t size)
{
	struct tfs_json j;
	struct tfs_json_token t;
	struct tfs_diag d;
	size_t steps = 0;
	char *s;
	int ret;

	tfs_diag_clear(&d);
	tfs_json_init(&j, data, size, BASE, 0);
	for (;;) {
		ret = tfs_json_next(&j, &t, &d);
		if (ret) {
			tfs_fuzz_check_refusal(ret, &d);
			if (d.offset < BASE || d.offset > BASE + size)
				tfs_fuzz_fail("json: refusal offset %llu "
					      "outside the input",
					      (unsigned long long)d.offset);
			return;
		}
		if (t.offset < BASE || t.offset > BASE + size)
			tfs_fuzz_fail("json: token offset outside the input");
		if (t.kind == TFS_JSON_END)
			return;
		if (t.kind == TFS_JSON_STRING || t.kind == TFS_JSON_KEY) {
			size_t n;

			s = tfs_json_strdup(&t, &n);
			if (!s || n != tfs_json_decoded_len(&t) ||
			    n > 4 * t.len)
				tfs_fuzz_fail("json: string decode");
			free(s);
		}
		if (++steps > size + 2)
			tfs_fuzz_fail("json: more tokens than bytes");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tfs_json j;
	struct tfs_json_token t;
	struct tfs_diag d;
	json_t *v = NULL;
	int ret;

	walk(data, size);
	tfs_diag_clear(&d);
	tfs_json_init(&j, data, size, BASE, 0);
	ret = tfs_json_next(&j, &t, &d);
	if (!ret && t.kind != TFS_JSON_END) {
		ret = tfs_json_to_jansson(&j, &t, 10000, &v, &d);
		if (ret)
			tfs_fuzz_check_refusal(ret, &d);
		json_decref(v);
	}
	return 0;
}
