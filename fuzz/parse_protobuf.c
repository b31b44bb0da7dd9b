// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the protobuf wire reader (src/parse/protobuf.h):
 * walk the input as a message, every LEN payload again as a message (up to
 * the depth limit) and every field as each kind of repeated scalar.
 * Checks: a refusal carries a message and an offset inside the input; every
 * field's key and value lie inside the input, in order; a payload lies
 * inside its parent; a value iteration yields exactly the counted values;
 * the nesting limits hold.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "parse/protobuf.h"

#define BASE 7 /* a non-zero base: offsets are absolute */

static const uint8_t *in_data;
static size_t in_size;

static void refused(int ret, const struct tfs_diag *d)
{
	tfs_fuzz_check_refusal(ret, d);
	if (!d->has_offset || d->offset < BASE || d->offset > BASE + in_size)
		tfs_fuzz_fail("protobuf: refusal without an offset in the input");
}

static void values(const struct tfs_pb_field *f)
{
	static const enum tfs_pb_scalar kinds[] = {
		TFS_PB_SCALAR_VARINT, TFS_PB_SCALAR_FIXED32,
		TFS_PB_SCALAR_FIXED64};
	struct tfs_pb_values it;
	struct tfs_diag d;
	uint64_t v, n;
	unsigned k;
	int ret;

	for (k = 0; k < 3; k++) {
		tfs_diag_clear(&d);
		ret = tfs_pb_values_init(&it, f, kinds[k], "fuzz", "v", &d);
		if (ret) {
			refused(ret, &d);
			continue;
		}
		for (n = 0; tfs_pb_values_next(&it, &v) == 1; n++)
			if (n > in_size)
				tfs_fuzz_fail("protobuf: more values than bytes");
		if (n != it.count)
			tfs_fuzz_fail("protobuf: %llu values, %llu counted",
				      (unsigned long long)n,
				      (unsigned long long)it.count);
	}
}

static void walk(struct tfs_cursor *c, struct tfs_pb_limits *l)
{
	struct tfs_pb_field f;
	struct tfs_cursor sub;
	struct tfs_diag d;
	uint64_t prev = 0, start = c->base, end = c->base + c->len;
	int ret;

	tfs_diag_clear(&d);
	while ((ret = tfs_pb_next(c, "fuzz", &f, &d)) == 1) {
		if (f.at < start || f.at < prev || f.value_at > end ||
		    f.number == 0 || f.number > TFS_PB_MAX_FIELD)
			tfs_fuzz_fail("protobuf: field outside its message");
		prev = f.value_at;
		values(&f);
		if (f.wire != TFS_PB_LEN)
			continue;
		if (f.data < in_data || f.data + f.len > in_data + in_size ||
		    f.value_at + f.len > end ||
		    (uint64_t)(f.data - in_data) + BASE != f.value_at)
			tfs_fuzz_fail("protobuf: payload outside its parent");
		if (tfs_pb_enter(l, f.value_at, "fuzz", &d)) {
			if (l->depth > l->max_depth)
				tfs_fuzz_fail("protobuf: depth limit passed");
			refused(-E2BIG, &d);
			tfs_diag_clear(&d);
			continue;
		}
		tfs_pb_sub(&f, &sub);
		walk(&sub, l);
		tfs_pb_leave(l);
	}
	if (ret)
		refused(ret, &d);
	else if (tfs_cursor_remaining(c))
		tfs_fuzz_fail("protobuf: end before the message's end");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tfs_pb_limits l = {.max_depth = 20, .max_messages = 4096};
	struct tfs_cursor c;

	in_data = data;
	in_size = size;
	tfs_cursor_init(&c, data, size, BASE);
	walk(&c, &l);
	return 0;
}
