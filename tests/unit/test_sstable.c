// SPDX-License-Identifier: MIT
/*
 * The SSTable reader (src/parse/sstable.c): LevelDB's mask and unmask
 * against the spec's worked value, the real bundle of the spec's worked
 * example (footer, handles, blocks, entries), snappy blocks of the shared
 * fixtures, our own tables (tests/fixtures/tf_checkpoint: raw and snappy
 * blocks, keys as its expected.json lists them), and blocks made here
 * that break each rule: a restart count
 * past the block, a shared prefix longer than the previous key, a value
 * past the entries, a handle past the file, a flipped CRC.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse/sstable.h"
#include "core/diag.h"
#include "core/digest.h"
#include "testutil.h"

START_TEST(mask_as_leveldb)
{
	/* CRC32C("\0\0\0\0") = 0x48674bc7, masked 0x3a117ba6 (spec 10) */
	ck_assert_uint_eq(tu_crc32c_bitwise("\0\0\0\0", 4), 0x48674bc7u);
	ck_assert_uint_eq(tfs_sst_mask(0x48674bc7u), 0x3a117ba6u);
	ck_assert_uint_eq(tfs_sst_unmask(0x3a117ba6u), 0x48674bc7u);
}
END_TEST

/* the spec's worked example: real/counter/variables.index */
START_TEST(worked_example)
{
	size_t len;
	uint8_t *p;
	struct tfs_sst_handle meta, index, h;
	struct tfs_sst_block ib, db;
	struct tfs_sst_iter it;
	struct tfs_diag d = {0};

	TU_NEED_SHARED("tf-checkpoint/real/counter/variables.index");
	p = tu_read_file(
		tu_fixture("tf-checkpoint/real/counter/variables.index"), &len);
	ck_assert_uint_eq(len, 123);
	ck_assert(tfs_sst_has_magic(p, len));
	ck_assert_int_eq(tfs_sst_footer(p, len, &meta, &index, &d), 0);
	ck_assert_uint_eq(meta.offset, 43);
	ck_assert_uint_eq(meta.size, 8);
	ck_assert_uint_eq(index.offset, 56);
	ck_assert_uint_eq(index.size, 14);
	ck_assert_int_eq(tfs_sst_block_read(p, len, &index, "index", &ib, &d),
			 0);
	ck_assert_int_eq(tfs_sst_iter_init(&it, &ib, "index", &d), 0);
	ck_assert_int_eq(tfs_sst_iter_next(&it, &d), 1);
	ck_assert_uint_eq(it.key_len, 1);
	ck_assert_int_eq(it.key[0], 'd');
	ck_assert_int_eq(
		tfs_sst_handle_decode(it.value, it.value_len, 0, &h, &d), 0);
	ck_assert_uint_eq(h.offset, 0);
	ck_assert_uint_eq(h.size, 38);
	ck_assert_int_eq(tfs_sst_iter_next(&it, &d), 0);
	tfs_sst_iter_free(&it);
	ck_assert_int_eq(tfs_sst_block_read(p, len, &h, "data", &db, &d), 0);
	ck_assert(db.raw);
	ck_assert_int_eq(tfs_sst_iter_init(&it, &db, "data", &d), 0);
	ck_assert_int_eq(tfs_sst_iter_next(&it, &d), 1);
	ck_assert_uint_eq(it.key_len, 0);
	ck_assert_uint_eq(it.value_len, 6);
	ck_assert_uint_eq(it.value_at, 3);
	ck_assert_int_eq(tfs_sst_iter_next(&it, &d), 1);
	ck_assert_uint_eq(it.key_len, 7);
	ck_assert(memcmp(it.key, "counter", 7) == 0);
	ck_assert_uint_eq(it.at, 9);
	ck_assert_uint_eq(it.value_at, 19);
	ck_assert_int_eq(tfs_sst_iter_next(&it, &d), 0);
	tfs_sst_iter_free(&it);
	tfs_sst_block_free(&db);
	tfs_sst_block_free(&ib);
	/* a flipped byte: the block's CRC */
	p[20] ^= 1;
	tfs_diag_clear(&d);
	ck_assert_int_eq(tfs_sst_block_read(p, len, &h, "data", &db, &d),
			 -EBADMSG);
	ck_assert_msg(strstr(d.msg, "checksum mismatch"), "%s", d.msg);
	ck_assert_uint_eq(d.offset, 39);
	tfs_sst_block_free(&db);
	/* a handle past the file */
	h.size = 200;
	tfs_diag_clear(&d);
	ck_assert_int_eq(tfs_sst_block_read(p, len, &h, "data", &db, &d),
			 -EBADMSG);
	ck_assert(strstr(d.msg, "past end of file"));
	tfs_sst_block_free(&db);
	free(p);
}
END_TEST

/* a snappy data block (TF Serving's half_plus_two_cpu): keys a a2 b c c2 */
START_TEST(snappy_block)
{
	static const char *keys[] = {"", "a", "a2", "b", "c", "c2"};
	size_t len, i;
	uint8_t *p;
	struct tfs_sst_handle h = {0, 87};
	struct tfs_sst_block b;
	struct tfs_sst_iter it;
	struct tfs_diag d = {0};

	TU_NEED_SHARED("tf-checkpoint/real/half_plus_two_cpu/variables.index");
	p = tu_read_file(tu_fixture("tf-checkpoint/real/half_plus_two_cpu/"
				    "variables.index"),
			 &len);
	ck_assert_int_eq(tfs_sst_block_read(p, len, &h, "data", &b, &d), 0);
	ck_assert(!b.raw);
	ck_assert_uint_eq(b.len, 100);
	ck_assert_int_eq(tfs_sst_iter_init(&it, &b, "data", &d), 0);
	for (i = 0; i < 6; i++) {
		ck_assert_int_eq(tfs_sst_iter_next(&it, &d), 1);
		ck_assert_uint_eq(it.key_len, strlen(keys[i]));
		/* the first key is empty: no bytes, maybe no pointer */
		ck_assert(!it.key_len ||
			  memcmp(it.key, keys[i], it.key_len) == 0);
		ck_assert_uint_eq(it.at, 0); /* in a snappy block: the block */
	}
	ck_assert_int_eq(tfs_sst_iter_next(&it, &d), 0);
	tfs_sst_iter_free(&it);
	tfs_sst_block_free(&b);
	free(p);
}
END_TEST

/*
 * A table of ours (tests/fixtures/tf_checkpoint/generate.py): the index
 * block's handles lead to as many data blocks as expected.json says, raw
 * or snappy as it says, whose keys are, in order, "" then every key it
 * lists; a flipped byte of the first data block fails its CRC.  Returns
 * whether its blocks are snappy.
 */
static bool our_table(const char *bundle)
{
	char path[4096];
	json_error_t err;
	json_t *e, *t;
	size_t len, nblocks = 0, nkeys = 0;
	uint8_t *p;
	struct tfs_sst_handle meta, index, h, first = {0, 0};
	struct tfs_sst_block ib, db;
	struct tfs_sst_iter it, dit;
	struct tfs_diag d = {0};
	const char *want;
	json_t *b;
	bool snappy;

	snprintf(path, sizeof(path), "%s",
		 tu_testdata("tf_checkpoint/expected.json"));
	e = json_load_file(path, 0, &err);
	ck_assert_msg(e != NULL, "%s: %s", path, err.text);
	b = json_object_get(json_object_get(e, "valid"), bundle);
	t = json_object_get(b, "tensors");
	snappy = json_is_true(json_object_get(b, "compressed"));
	ck_assert_uint_gt(json_array_size(t), 0);
	snprintf(path, sizeof(path), "%s", tu_testdata("tf_checkpoint/"));
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "%s.index",
		 bundle);
	p = tu_read_file(path, &len);
	ck_assert(tfs_sst_has_magic(p, len));
	ck_assert_int_eq(tfs_sst_footer(p, len, &meta, &index, &d), 0);
	ck_assert_int_eq(tfs_sst_block_read(p, len, &index, "index", &ib, &d),
			 0);
	ck_assert_int_eq(tfs_sst_iter_init(&it, &ib, "index", &d), 0);
	while (tfs_sst_iter_next(&it, &d) == 1) {
		ck_assert_int_eq(tfs_sst_handle_decode(it.value, it.value_len,
						       0, &h, &d),
				 0);
		if (!nblocks++)
			first = h;
		ck_assert_int_eq(
			tfs_sst_block_read(p, len, &h, "data", &db, &d), 0);
		ck_assert(db.raw == !snappy);
		ck_assert_int_eq(tfs_sst_iter_init(&dit, &db, "data", &d), 0);
		while (tfs_sst_iter_next(&dit, &d) == 1) {
			want = nkeys ? json_string_value(json_object_get(
					       json_array_get(t, nkeys - 1),
					       "key"))
				     : "";
			ck_assert_msg(want != NULL, "%s: key %zu", bundle,
				      nkeys);
			ck_assert_uint_eq(dit.key_len, strlen(want));
			ck_assert(!dit.key_len ||
				  memcmp(dit.key, want, dit.key_len) == 0);
			nkeys++;
		}
		ck_assert_str_eq(d.msg, "");
		tfs_sst_iter_free(&dit);
		tfs_sst_block_free(&db);
	}
	tfs_sst_iter_free(&it);
	tfs_sst_block_free(&ib);
	ck_assert_uint_eq(nblocks,
			  json_integer_value(json_object_get(b, "blocks")));
	ck_assert_uint_eq(nkeys, json_array_size(t) + 1);
	/* a flipped byte: the block's CRC */
	p[first.offset + 3] ^= 1;
	tfs_diag_clear(&d);
	ck_assert_int_eq(tfs_sst_block_read(p, len, &first, "data", &db, &d),
			 -EBADMSG);
	ck_assert_msg(strstr(d.msg, "checksum mismatch"), "%s", d.msg);
	ck_assert_uint_eq(d.offset, first.offset + first.size + 1);
	tfs_sst_block_free(&db);
	free(p);
	json_decref(e);
	return snappy;
}

START_TEST(our_raw_tables)
{
	ck_assert(!our_table("bundles/all_dtypes/ckpt"));
	ck_assert(!our_table("bundles/multi_shard/model.ckpt-7"));
}
END_TEST

START_TEST(our_snappy_table)
{
	ck_assert(our_table("bundles/snappy_multi_shard/model.ckpt-7"));
}
END_TEST

static int iterate(const void *data, size_t len, struct tfs_diag *d)
{
	struct tfs_sst_block b = {
		.data = data, .len = len, .raw = true, .at = 100};
	struct tfs_sst_iter it;
	int ret;

	tfs_diag_clear(d);
	ret = tfs_sst_iter_init(&it, &b, "block", d);
	if (!ret)
		while ((ret = tfs_sst_iter_next(&it, d)) == 1)
			;
	tfs_sst_iter_free(&it);
	return ret;
}

START_TEST(block_rules)
{
	struct tfs_diag d;
	/* entry "k"="v", restart [0], count 1 */
	static const uint8_t good[] = {0, 1, 1, 'k', 'v', 0, 0,
				       0, 0, 1, 0,   0,	  0};
	/* count 1000 */
	static const uint8_t count[] = {0, 1, 1,    'k', 'v', 0, 0,
					0, 0, 0xe8, 3,	 0,   0};
	/* second entry shares 5 bytes of a 1-byte key */
	static const uint8_t shared[] = {0, 1, 1, 'k', 'v', 5, 1, 0, 'x',
					 0, 0, 0, 0,   1,   0, 0, 0};
	/* value of 9 bytes in a 5-byte entry area */
	static const uint8_t value[] = {0, 1, 9, 'k', 'v', 0, 0,
					0, 0, 1, 0,   0,   0};
	/* restart offset past the entries */
	static const uint8_t restart[] = {0,  1, 1, 'k', 'v', 0, 0, 0, 0,
					  40, 0, 0, 0,	 2,   0, 0, 0};

	ck_assert_int_eq(iterate(good, sizeof(good), &d), 0);
	ck_assert_int_eq(iterate(count, sizeof(count), &d), -EBADMSG);
	ck_assert(strstr(d.msg, "bad restart count 1000"));
	ck_assert_uint_eq(d.offset, 109);
	ck_assert_int_eq(iterate(shared, sizeof(shared), &d), -EBADMSG);
	ck_assert(strstr(d.msg, "shared 5"));
	ck_assert_uint_eq(d.offset, 105);
	ck_assert_int_eq(iterate(value, sizeof(value), &d), -EBADMSG);
	ck_assert(strstr(d.msg, "past the entries"));
	ck_assert_int_eq(iterate(restart, sizeof(restart), &d), -EBADMSG);
	ck_assert(strstr(d.msg, "restart[1] 40"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("sstable");
	TCase *tc = tcase_create("sstable");

	tcase_add_test(tc, mask_as_leveldb);
	tcase_add_test(tc, block_rules);
	tcase_add_test(tc, our_raw_tables);
	tcase_add_test(tc, our_snappy_table);
	suite_add_tcase(s, tc);
	tc = tcase_create("fixtures");
	tcase_add_test(tc, worked_example);
	tcase_add_test(tc, snappy_block);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
