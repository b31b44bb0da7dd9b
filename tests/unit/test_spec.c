// SPDX-License-Identifier: MIT
/*
 * The setters of a reader's tensor spec (src/core/spec.c): each sets its
 * own fields and leaves every other one as it was; a spec made through them
 * is what the builder takes.
 */
#include <errno.h>
#include <string.h>

#include "core/builder.h"
#include "core/source.h"
#include "core/tree.h"
#include "testutil.h"

static const uint64_t shape2[2] = {2, 3};
static const char *const comps[2] = {"a", "b"};
static const struct tfs_segment segs[2] = {{.offset = 1, .length = 2},
					   {.offset = 5, .length = 4}};
static const uint8_t mem[6] = {1, 2, 3, 4, 5, 6};

/*
 * A spec with every field set to something no setter writes: what a setter
 * leaves alone must still compare equal afterwards.
 */
static void busy(struct tfs_tensor_spec *s)
{
	static const uint64_t other_shape[1] = {99};
	static const char *const other_path[1] = {"z"};
	static const struct tfs_segment other_seg = {.offset = 77};

	memset(s, 0, sizeof(*s));
	s->name = "old";
	s->name_len = 3;
	s->path = other_path;
	s->path_len = 1;
	s->dtype = TFS_DTYPE_BFLOAT16;
	s->record_size = 7;
	s->ndim = 1;
	s->shape = other_shape;
	s->offset = 1000;
	s->length = 2000;
	s->source = 9;
	s->mem = "old";
	s->segs = &other_seg;
	s->nsegs = 1;
	s->encoding = TFS_ENCODING_ZSTD;
	s->size = 3000;
	s->digest = "crc32c:0x00000000";
	s->digest_decoded = true;
	s->desc_offset = 4000;
	s->codec.skip = 11;
	s->codec.check_crc32 = true;
	s->codec.crc32 = 0xdeadbeef;
	s->has_digest_extent = true;
	s->digest_offset = 5000;
	s->digest_length = 6000;
	s->npy_descr = "'<U5'";
	s->unreadable = "old reason";
	s->unreadable_is_fault = true;
}

/* @got equals @want field by field (padding aside) */
static void same(const struct tfs_tensor_spec *got,
		 const struct tfs_tensor_spec *want)
{
	ck_assert_ptr_eq(got->name, want->name);
	ck_assert_uint_eq(got->name_len, want->name_len);
	ck_assert_ptr_eq(got->path, want->path);
	ck_assert_uint_eq(got->path_len, want->path_len);
	ck_assert_int_eq(got->dtype, want->dtype);
	ck_assert_uint_eq(got->record_size, want->record_size);
	ck_assert_uint_eq(got->ndim, want->ndim);
	ck_assert_ptr_eq(got->shape, want->shape);
	ck_assert_uint_eq(got->offset, want->offset);
	ck_assert_uint_eq(got->length, want->length);
	ck_assert_uint_eq(got->source, want->source);
	ck_assert_ptr_eq(got->mem, want->mem);
	ck_assert_ptr_eq(got->segs, want->segs);
	ck_assert_uint_eq(got->nsegs, want->nsegs);
	ck_assert_int_eq(got->encoding, want->encoding);
	ck_assert_uint_eq(got->size, want->size);
	ck_assert_ptr_eq(got->digest, want->digest);
	ck_assert_int_eq(got->digest_decoded, want->digest_decoded);
	ck_assert_uint_eq(got->desc_offset, want->desc_offset);
	ck_assert_uint_eq(got->codec.skip, want->codec.skip);
	ck_assert_int_eq(got->codec.check_crc32, want->codec.check_crc32);
	ck_assert_uint_eq(got->codec.crc32, want->codec.crc32);
	ck_assert_ptr_eq(got->codec.gather, want->codec.gather);
	ck_assert_ptr_eq(got->codec.chunks, want->codec.chunks);
	ck_assert_int_eq(got->has_digest_extent, want->has_digest_extent);
	ck_assert_uint_eq(got->digest_offset, want->digest_offset);
	ck_assert_uint_eq(got->digest_length, want->digest_length);
	ck_assert_ptr_eq(got->npy_descr, want->npy_descr);
	ck_assert_ptr_eq(got->unreadable, want->unreadable);
	ck_assert_int_eq(got->unreadable_is_fault, want->unreadable_is_fault);
}

START_TEST(name_starts_a_new_spec)
{
	struct tfs_tensor_spec s, want;

	busy(&s);
	tfs_spec_name(&s, "w.x", 3, 42);
	memset(&want, 0, sizeof(want));
	want.name = s.name;
	want.name_len = 3;
	want.desc_offset = 42;
	same(&s, &want);
	ck_assert_str_eq(s.name, "w.x");

	busy(&s);
	tfs_spec_tensor(&s, "t", 1, TFS_DTYPE_INT16, shape2, 2, 7);
	memset(&want, 0, sizeof(want));
	want.name = s.name;
	want.name_len = 1;
	want.dtype = TFS_DTYPE_INT16;
	want.shape = shape2;
	want.ndim = 2;
	want.desc_offset = 7;
	same(&s, &want);
}
END_TEST

START_TEST(setters_touch_their_fields_only)
{
	struct tfs_tensor_spec s, want;
	struct tfs_codec_params p = {
		.skip = 3, .check_crc32 = true, .crc32 = 0x1234};

	/* setters of disjoint fields: any stray write shows in one compare */
	busy(&s);
	tfs_spec_type(&s, TFS_DTYPE_FLOAT32, shape2, 2);
	tfs_spec_path(&s, comps, 2);
	tfs_spec_records(&s, 12);
	tfs_spec_npy_descr(&s, "[('x', '<f4')]");
	/* the size first: the extent alone must leave it */
	tfs_spec_size(&s, 48);
	tfs_spec_stored(&s, 16, 24);
	tfs_spec_in(&s, 3);
	tfs_spec_segments(&s, segs, 2);
	tfs_spec_digest(&s, "sha256:ab", false);
	tfs_spec_unreadable(&s, "elsewhere", false);
	busy(&want);
	want.dtype = TFS_DTYPE_FLOAT32;
	want.shape = shape2;
	want.ndim = 2;
	want.path = comps;
	want.path_len = 2;
	want.record_size = 12;
	want.npy_descr = s.npy_descr;
	want.offset = 16;
	want.length = 24;
	want.size = 48;
	want.source = 3;
	want.segs = segs;
	want.nsegs = 2;
	want.digest = s.digest;
	want.digest_decoded = false;
	want.unreadable = s.unreadable;
	want.unreadable_is_fault = false;
	same(&s, &want);
	ck_assert_str_eq(s.npy_descr, "[('x', '<f4')]");
	ck_assert_str_eq(s.digest, "sha256:ab");
	ck_assert_str_eq(s.unreadable, "elsewhere");

	/* the digest's own extent; a digest of the decoded bytes */
	tfs_spec_digest_over(&s, "crc32:0x1", 8, 64);
	want.digest = s.digest;
	want.has_digest_extent = true;
	want.digest_offset = 8;
	want.digest_length = 64;
	same(&s, &want);
	tfs_spec_digest(&s, "crc32c:0x2", true);
	want.digest = s.digest;
	want.digest_decoded = true;
	same(&s, &want);

	/* readable again; a fault */
	tfs_spec_unreadable(&s, NULL, true);
	want.unreadable = NULL;
	want.unreadable_is_fault = true;
	same(&s, &want);

	/* the parameters are copied whole, NULL clears them */
	tfs_spec_encoded(&s, TFS_ENCODING_DEFLATE, &p);
	p.skip = 99;
	want.encoding = TFS_ENCODING_DEFLATE;
	want.codec.skip = 3;
	want.codec.check_crc32 = true;
	want.codec.crc32 = 0x1234;
	same(&s, &want);
	tfs_spec_encoded(&s, TFS_ENCODING_ZSTD, NULL);
	want.encoding = TFS_ENCODING_ZSTD;
	memset(&want.codec, 0, sizeof(want.codec));
	same(&s, &want);
}
END_TEST

START_TEST(raw_and_mem_are_their_own_size)
{
	struct tfs_tensor_spec s, want;

	busy(&s);
	busy(&want);
	tfs_spec_raw(&s, 100, 24);
	want.offset = 100;
	want.length = 24;
	want.size = 24;
	want.encoding = TFS_ENCODING_RAW;
	same(&s, &want);

	busy(&s);
	busy(&want);
	tfs_spec_mem(&s, mem, sizeof(mem));
	want.mem = mem;
	want.length = sizeof(mem);
	want.size = sizeof(mem);
	want.encoding = TFS_ENCODING_RAW;
	same(&s, &want);
}
END_TEST

/* specs made through the setters, through the builder into a tree */
START_TEST(builder_takes_them)
{
	static uint8_t bytes[64];
	struct tfs_tensor_spec s;
	struct tfs_builder *b;
	struct tfs_source src;
	struct tfs_tree *t = NULL;
	struct tfs_diag d = {0};
	const struct tfs_tensor *x;
	uint64_t one[1] = {6};
	uint32_t h;

	tfs_source_init_memory(&src, bytes, sizeof(bytes));
	ck_assert_int_eq(tfs_builder_new(&b, &src, NULL), 0);
	tfs_spec_tensor(&s, "a.w", 3, TFS_DTYPE_INT16, shape2, 2, 5);
	tfs_spec_raw(&s, 8, 12);
	ck_assert_int_eq(tfs_builder_add_tensor(b, &s, &h, &d), 0);
	/* a described size the extent does not hold: refused at @at */
	tfs_spec_tensor(&s, "bad", 3, TFS_DTYPE_INT16, shape2, 2, 9);
	tfs_spec_size(&s, 12);
	tfs_spec_stored(&s, 20, 10);
	ck_assert_int_eq(tfs_builder_add_tensor(b, &s, NULL, &d), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(d.msg, "differs from the stored length"));
	ck_assert_uint_eq(d.offset, 9);
	tfs_diag_clear(&d);
	tfs_spec_tensor(&s, "in.mem", 6, TFS_DTYPE_UINT8, one, 1, 0);
	tfs_spec_path(&s, comps, 2);
	tfs_spec_mem(&s, mem, sizeof(mem));
	ck_assert_int_eq(tfs_builder_add_tensor(b, &s, NULL, &d), 0);
	tfs_spec_tensor(&s, "gone", 4, TFS_DTYPE_UINT8, one, 1, 0);
	tfs_spec_size(&s, 6);
	tfs_spec_unreadable(&s, "not here", true);
	ck_assert_int_eq(tfs_builder_add_tensor(b, &s, NULL, &d), 0);
	ck_assert_int_eq(tfs_builder_finish(b, "test", &t, &d), 0);
	tfs_builder_free(b);

	ck_assert_uint_eq(t->ntensors, 3);
	x = &t->tensors[0];
	ck_assert_uint_eq(x->offset, 8);
	ck_assert_uint_eq(x->stored_length, 12);
	ck_assert_uint_eq(x->size, 12);
	ck_assert_uint_eq(x->ndim, 2);
	ck_assert_uint_eq(tfs_tree_resolve(t, "a/w"), x->node);
	x = &t->tensors[1];
	ck_assert_uint_eq(tfs_tree_resolve(t, "a/b"), x->node);
	ck_assert_uint_eq(x->size, 6);
	ck_assert_uint_eq(x->nsegs, 1);
	ck_assert_mem_eq(x->segs[0].mem, mem, sizeof(mem));
	x = &t->tensors[2];
	ck_assert_str_eq(x->unreadable, "not here");
	ck_assert(x->unreadable_is_fault);
	ck_assert_uint_eq(x->size, 6);
	tfs_tree_free(t);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("spec");
	TCase *tc = tcase_create("spec");

	tcase_add_test(tc, name_starts_a_new_spec);
	tcase_add_test(tc, setters_touch_their_fields_only);
	tcase_add_test(tc, raw_and_mem_are_their_own_size);
	tcase_add_test(tc, builder_takes_them);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
