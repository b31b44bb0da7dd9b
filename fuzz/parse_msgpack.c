// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the MessagePack pull reader (src/parse/msgpack.h):
 * skip objects until the input is used up; every object's head must lie
 * inside the input, with its payload, and a refusal must carry a message
 * and an offset inside the input.
 */
#include "fuzz.h"
#include "parse/msgpack.h"

#define BASE 7

struct seen {
	size_t size;
};

static void each(void *arg, const struct tfs_mp_obj *o)
{
	const struct seen *s = arg;

	if (o->start < BASE || o->start >= BASE + s->size)
		tfs_fuzz_fail("msgpack: object outside the input");
	if ((o->type == TFS_MP_STR || o->type == TFS_MP_BIN ||
	     o->type == TFS_MP_EXT) &&
	    (o->at < BASE || o->n > BASE + s->size - o->at))
		tfs_fuzz_fail("msgpack: payload outside the input");
	if ((o->type == TFS_MP_ARRAY || o->type == TFS_MP_MAP) &&
	    o->n > s->size)
		tfs_fuzz_fail("msgpack: more items than bytes");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen s = {size};
	struct tfs_diag d;
	struct tfs_mp m;
	int ret;

	tfs_diag_clear(&d);
	tfs_mp_init(&m, data, size, BASE, &d);
	while (tfs_cursor_remaining(&m.c)) {
		ret = tfs_mp_skip(&m, "object", 64, each, &s);
		if (ret) {
			tfs_fuzz_check_refusal(ret, &d);
			if (!d.has_offset || d.offset < BASE ||
			    d.offset > BASE + size)
				tfs_fuzz_fail("msgpack: refusal offset outside "
					      "the input");
			break;
		}
	}
	return 0;
}
