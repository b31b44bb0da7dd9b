// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the SSTable reader (src/parse/sstable.h): the
 * input as a whole table (footer, index block, every data block it
 * names, every entry), and as one raw block of entries.  Checks: a
 * refusal carries a message and an offset inside the input; every entry's
 * key and value lie inside their block.
 */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "parse/sstable.h"

static const uint8_t *in_data;
static size_t in_size;

static void refused(int ret, const struct tfs_diag *d)
{
	tfs_fuzz_check_refusal(ret, d);
	if (ret != -ENOMEM && (!d->has_offset || d->offset > in_size))
		tfs_fuzz_fail(
			"sstable: refusal without an offset in the input");
}

static int entries(const struct tfs_sst_block *b,
		   int (*fn)(const uint8_t *, uint64_t))
{
	struct tfs_sst_iter it;
	struct tfs_diag d;
	int ret;

	tfs_diag_clear(&d);
	ret = tfs_sst_iter_init(&it, b, "block", &d);
	while (!ret && (ret = tfs_sst_iter_next(&it, &d)) == 1) {
		ret = 0;
		if (it.value < b->data ||
		    it.value + it.value_len > b->data + b->len)
			tfs_fuzz_fail("sstable: value outside its block");
		if (fn)
			fn(it.value, it.value_len);
	}
	tfs_sst_iter_free(&it);
	if (ret < 0)
		refused(ret, &d);
	return 0;
}

static int data_block(const uint8_t *v, uint64_t len)
{
	struct tfs_sst_handle h;
	struct tfs_sst_block b;
	struct tfs_diag d;
	int ret;

	tfs_diag_clear(&d);
	ret = tfs_sst_handle_decode(v, len, 0, &h, &d);
	if (ret)
		return 0;
	ret = tfs_sst_block_read(in_data, in_size, &h, "data", &b, &d);
	if (ret)
		refused(ret, &d);
	else
		entries(&b, NULL);
	tfs_sst_block_free(&b);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tfs_sst_handle meta, index;
	struct tfs_sst_block b = {.data = data, .len = size, .raw = true};
	struct tfs_diag d;
	int ret;

	in_data = data;
	in_size = size;
	entries(&b, NULL);
	tfs_diag_clear(&d);
	ret = tfs_sst_footer(data, size, &meta, &index, &d);
	if (ret) {
		refused(ret, &d);
		return 0;
	}
	ret = tfs_sst_block_read(data, size, &index, "index", &b, &d);
	if (ret)
		refused(ret, &d);
	else
		entries(&b, data_block);
	tfs_sst_block_free(&b);
	return 0;
}
