// SPDX-License-Identifier: MIT
/*
 * PyTorch checkpoints: every file of ../shared/fixtures/pytorch (written by
 * the real torch.save, zip and legacy) against its expected.json, written
 * by the fixtures' generator from torch itself: names, dtypes, shapes, the
 * sha256 of every tensor's row-major bytes (views included), zero-copy
 * offsets of contiguous tensors, storages, parameters, leaves.  Every file
 * of reject/ refused for its reason.  The files of tests/fixtures/pytorch
 * (generate.py: hostile pickles and layouts torch does not write), and
 * of tests/fixtures/pytorch/torch_written (torch.save's own files, checked
 * like the shared ones).  The
 * gather codec against index arithmetic done here.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/image_i.h"
#include "codec/codec.h"
#include "core/image.h"
#include "testutil.h"

static json_t *expected(void)
{
	json_error_t err;
	json_t *e =
		json_load_file(tu_fixture("pytorch/expected.json"), 0, &err);

	ck_assert_msg(e != NULL, "expected.json: %s", err.text);
	return e;
}

static void dims_text(json_t *a, char *buf, size_t len)
{
	size_t i, n = 0;

	n += (size_t)snprintf(buf + n, len - n, "[");
	for (i = 0; i < json_array_size(a); i++)
		n += (size_t)snprintf(
			buf + n, len - n, "%s%lld", i ? "," : "",
			(long long)json_integer_value(json_array_get(a, i)));
	snprintf(buf + n, len - n, "]");
}

static void check_tensor(struct tfs_image *img, const char *file, json_t *t,
			 bool big)
{
	const char *name = json_string_value(json_object_get(t, "name"));
	const struct tfs_tensor *x = tu_tensor(img, name);
	json_t *fo = json_object_get(t, "file_offset");
	char want[256], hex[65];
	uint8_t *b;
	size_t len;

	ck_assert_msg(x != NULL, "%s: no tensor '%s'", file, name);
	ck_assert_str_eq(x->path,
			 json_string_value(json_object_get(t, "path")));
	ck_assert_str_eq(x->dtype,
			 json_string_value(json_object_get(t, "dtype")));
	dims_text(json_object_get(t, "shape"), want, sizeof(want));
	tu_expect_xattr(img, x->path, "shape", want);
	dims_text(json_object_get(t, "stride"), want, sizeof(want));
	tu_expect_xattr(img, x->path, "pytorch.stride", want);
	tu_expect_xattr(img, x->path, "pytorch.storage",
			json_string_value(json_object_get(t, "storage")));
	snprintf(want, sizeof(want), "%lld",
		 (long long)json_integer_value(
			 json_object_get(t, "storage_offset")));
	tu_expect_xattr(img, x->path, "pytorch.storage_offset", want);
	if (json_is_true(json_object_get(t, "parameter")))
		tu_expect_xattr(img, x->path, "pytorch.parameter", "true");
	else
		ck_assert_ptr_null(tu_xattr(img, x->path, "pytorch.parameter"));
	if (big)
		tu_expect_xattr(img, x->path, "byte_order", "big");
	else
		ck_assert_ptr_null(tu_xattr(img, x->path, "byte_order"));
	ck_assert_uint_eq(x->size, (uint64_t)json_integer_value(
					   json_object_get(t, "nbytes")));
	if (json_is_true(json_object_get(t, "contiguous"))) {
		/* zero-copy: the stored bytes are the file's bytes */
		ck_assert_int_eq(x->encoding, TFS_ENCODING_RAW);
		if (fo)
			ck_assert_uint_eq(x->offset,
					  (uint64_t)json_integer_value(fo));
	} else {
		ck_assert_int_eq(x->encoding, TFS_ENCODING_GATHER);
		tu_expect_xattr(img, x->path, "encoding", "gather");
	}
	b = tu_read_node(img, x->node, &len);
	tu_sha256_hex(b, len, hex);
	ck_assert_msg(strcmp(hex, json_string_value(
					  json_object_get(t, "sha256"))) == 0,
		      "%s: '%s': sha256 %s", file, name, hex);
	free(b);
}

static void check_own_reject(const char *path, const char *name, void *arg);

/* a leaf of expected.json equals the value in metadata.json */
static bool same_value(json_t *want, json_t *got)
{
	size_t i;

	if (json_is_real(want) || json_is_real(got))
		return json_is_number(got) && json_is_number(want) &&
		       json_number_value(want) == json_number_value(got);
	if (json_is_array(want)) {
		if (!json_is_array(got) ||
		    json_array_size(got) != json_array_size(want))
			return false;
		for (i = 0; i < json_array_size(want); i++)
			if (!same_value(json_array_get(want, i),
					json_array_get(got, i)))
				return false;
		return true;
	}
	return json_equal(want, got);
}

static json_t *metadata(struct tfs_image *img)
{
	uint32_t n = tfs_tree_resolve(img->tree, ".tensorfs/metadata.json");
	json_error_t err;
	uint8_t *b;
	size_t len;
	json_t *m;

	ck_assert_uint_ne(n, TFS_NO_NODE);
	b = tu_read_node(img, n, &len);
	m = json_loadb((const char *)b, len, 0, &err);
	free(b);
	ck_assert_msg(m != NULL, "metadata.json: %s", err.text);
	return m;
}

/*
 * every file of @valid (expected.json's "valid") in @dir: the shared set
 * or the project's torch_written (tests/fixtures/pytorch/torch_written.py),
 * both written by torch.save and described from torch
 */
static size_t check_valid_set(const char *dir, json_t *valid)
{
	json_t *v, *t, *l, *meta, *leaves;
	struct tfs_image *img;
	struct tfs_diag d;
	const char *file;
	char path[4096];
	size_t i, files = 0;
	bool big;

	json_object_foreach(valid, file, v)
	{
		snprintf(path, sizeof(path), "%s/%s", dir, file);
		ck_assert_msg(tu_load_file(path, &img, &d) == 0, "%s: %s", file,
			      d.msg);
		ck_assert_str_eq(img->tree->format, "pytorch");
		tu_expect_xattr(img, "", "format", "pytorch");
		tu_expect_xattr(
			img, "", "pytorch.format",
			json_string_value(json_object_get(v, "format")));
		t = json_object_get(v, "tensors");
		ck_assert_uint_eq(img->tree->ntensors, json_array_size(t));
		big = json_object_get(v, "zip") &&
		      json_is_string(json_object_get(json_object_get(v, "zip"),
						     "byteorder_record"));
		for (i = 0; i < json_array_size(t); i++)
			check_tensor(img, file, json_array_get(t, i), big);
		meta = metadata(img);
		leaves = json_object_get(meta, "leaves");
		l = json_object_get(v, "leaves");
		ck_assert_uint_eq(json_object_size(leaves), json_array_size(l));
		for (i = 0; i < json_array_size(l); i++) {
			const char *n = json_string_value(
				json_object_get(json_array_get(l, i), "name"));

			ck_assert_msg(
				same_value(json_object_get(json_array_get(l, i),
							   "value"),
					   json_object_get(leaves, n)),
				"%s: leaf '%s'", file, n);
		}
		ck_assert_int_eq(json_integer_value(json_object_get(
					 json_object_get(meta, "pytorch"),
					 "pickle_protocol")),
				 json_integer_value(json_object_get(
					 v, "pickle_protocol")));
		json_decref(meta);
		tfs_image_close(img);
		files++;
	}
	return files;
}

START_TEST(every_valid_fixture)
{
	json_t *e;
	char dir[4096];

	TU_NEED_SHARED("pytorch/expected.json");
	e = expected();
	snprintf(dir, sizeof(dir), "%s", tu_fixture("pytorch"));
	ck_assert_uint_ge(check_valid_set(dir, json_object_get(e, "valid")), 8);
	json_decref(e);
}
END_TEST

/*
 * The project's torch-written set, and its rejects: each refused as
 * expected.json says, a refused global at the offset of its opcode
 */
START_TEST(torch_written)
{
	json_error_t err;
	json_t *e = json_load_file(
		tu_testdata("pytorch/torch_written/expected.json"), 0, &err);
	json_t *rej, *r;
	const char *name;
	char dir[4096];
	size_t n, len;
	uint8_t *b;

	ck_assert_msg(e != NULL, "expected.json: %s", err.text);
	snprintf(dir, sizeof(dir), "%s", tu_testdata("pytorch/torch_written"));
	ck_assert_uint_eq(check_valid_set(dir, json_object_get(e, "valid")), 5);
	rej = json_object_get(e, "reject");
	n = tu_each_fixture(tu_testdata("pytorch/torch_written/reject"),
			    check_own_reject, rej);
	ck_assert_uint_eq(n, json_object_size(rej));
	json_object_foreach(rej, name, r)
	{
		const char *at = json_string_value(json_object_get(r, "at"));
		struct tfs_image *img = NULL;
		struct tfs_diag d;
		char path[8192];
		const uint8_t *p;

		if (!at)
			continue;
		snprintf(path, sizeof(path), "%s/reject/%s", dir, name);
		b = tu_read_file(path, &len);
		p = memmem(b, len, at, strlen(at));
		ck_assert_ptr_nonnull(p);
		ck_assert_int_eq(tu_load_mem(b, len, &img, &d), -ENOTSUP);
		ck_assert_uint_eq(d.offset, (uint64_t)(p - b));
		free(b);
	}
	json_decref(e);
}
END_TEST

/*
 * Tied weights: torch's own file, whose expected.json says which tensors
 * are contiguous runs of which storage at which file offset.  Two raw
 * tensors whose byte ranges overlap are in one group of tfs_twins_find()
 * (the read path gives their container pages back once both are served);
 * no other tensor is in any group.
 */
START_TEST(tied_weights_are_twins)
{
	json_t *e = json_load_file(
		tu_testdata("pytorch/torch_written/expected.json"), 0, NULL);
	json_t *ts =
		json_object_get(json_object_get(json_object_get(e, "valid"),
						"shared_and_views_zip.pt"),
				"tensors");
	struct tfs_image *img = NULL;
	struct tfs_diag d;
	uint32_t *twin, ia, ib, k;
	size_t a, b, grouped = 0;
	bool in_ring;

	ck_assert_ptr_nonnull(ts);
	ck_assert_int_eq(tu_load_file(tu_testdata("pytorch/torch_written/"
						  "shared_and_views_zip.pt"),
				      &img, &d),
			 0);
	ck_assert_int_eq(tfs_twins_find(img->tree, &twin), 0);
	ck_assert_ptr_nonnull(twin);
	for (a = 0; a < json_array_size(ts); a++) {
		json_t *ta = json_array_get(ts, a);
		json_int_t oa, na;
		bool shares = false;

		if (!json_is_true(json_object_get(ta, "contiguous")) ||
		    !json_object_get(ta, "file_offset"))
			continue;
		oa = json_integer_value(json_object_get(ta, "file_offset"));
		na = json_integer_value(json_object_get(ta, "nbytes"));
		ia = (uint32_t)(tu_tensor(img,
					  json_string_value(json_object_get(
						  ta, "name"))) -
				img->tree->tensors);
		for (b = 0; b < json_array_size(ts); b++) {
			json_t *tb = json_array_get(ts, b);
			json_int_t ob, nb;

			if (b == a ||
			    !json_is_true(json_object_get(tb, "contiguous")) ||
			    !json_object_get(tb, "file_offset"))
				continue;
			ob = json_integer_value(
				json_object_get(tb, "file_offset"));
			nb = json_integer_value(json_object_get(tb, "nbytes"));
			if (ob >= oa + na || oa >= ob + nb || !na || !nb)
				continue;
			shares = true;
			ib = (uint32_t)(tu_tensor(
						img,
						json_string_value(
							json_object_get(
								tb, "name"))) -
					img->tree->tensors);
			for (in_ring = false, k = twin[ia];
			     k != TFS_NO_TWIN && k != ia; k = twin[k])
				in_ring |= k == ib;
			ck_assert_msg(
				in_ring, "%s and %s share bytes",
				json_string_value(json_object_get(ta, "path")),
				json_string_value(json_object_get(tb, "path")));
		}
		if (shares)
			grouped++;
		else
			ck_assert_uint_eq(twin[ia], TFS_NO_TWIN);
	}
	ck_assert_uint_ge(grouped, 2); /* embed.weight and lm_head.weight */
	free(twin);
	tfs_image_close(img);
	json_decref(e);
}
END_TEST

/* why each shared reject is refused: errno and a word of the message */
static const struct {
	const char *file;
	int err;
	const char *word;
} shared_rejects[] = {
	{"bad_pickle_zip.pt", -EBADMSG, "memo index 250"},
	{"evil_builtins_eval_legacy.pt", -ENOTSUP, "builtins.eval"},
	{"evil_global_zip.pt", -ENOTSUP, "os.system"},
	{"truncated_legacy.pt", -EBADMSG, "past the end"},
	{"truncated_storage_zip.pt", -EBADMSG, "holds 300 bytes"},
};

static void check_shared_reject(const char *path, const char *name, void *arg)
{
	struct tfs_image *img = NULL;
	struct tfs_diag d;
	size_t i, *seen = arg;
	int ret;

	for (i = 0; i < sizeof(shared_rejects) / sizeof(shared_rejects[0]); i++)
		if (strcmp(shared_rejects[i].file, name) == 0)
			break;
	ck_assert_msg(i < sizeof(shared_rejects) / sizeof(shared_rejects[0]),
		      "reject/%s has no expected reason here", name);
	ret = tu_load_file(path, &img, &d);
	ck_assert_msg(ret == shared_rejects[i].err, "%s: %d (%s)", name, ret,
		      d.msg);
	ck_assert_ptr_null(img);
	ck_assert_str_eq(d.format, "pytorch");
	ck_assert_msg(strstr(d.msg, shared_rejects[i].word) != NULL, "%s: '%s'",
		      name, d.msg);
	ck_assert(d.has_offset);
	(*seen)++;
}

START_TEST(every_shared_reject)
{
	TU_NEED_SHARED("pytorch/reject");
	json_t *e = expected();
	size_t seen = 0;

	tu_each_fixture(tu_fixture("pytorch/reject"), check_shared_reject,
			&seen);
	ck_assert_uint_eq(seen,
			  sizeof(shared_rejects) / sizeof(shared_rejects[0]));
	ck_assert_uint_eq(seen, json_object_size(json_object_get(e, "reject")));
	json_decref(e);
}
END_TEST

/* the refused global is named with its offset: the GLOBAL opcode's */
START_TEST(evil_global_offset)
{
	TU_NEED_SHARED("pytorch/reject/evil_global_zip.pt");
	struct tfs_image *img = NULL;
	struct tfs_diag d;
	size_t len;
	uint8_t *b = tu_read_file(
		tu_fixture("pytorch/reject/evil_global_zip.pt"), &len);
	const uint8_t *at = memmem(b, len, "cos\nsystem\n", 11);

	ck_assert_ptr_nonnull(at);
	ck_assert_int_eq(tu_load_mem(b, len, &img, &d), -ENOTSUP);
	ck_assert_ptr_nonnull(strstr(d.msg, "not loadable without executing"));
	ck_assert_uint_eq(d.offset, (uint64_t)(at - b));
	free(b);
}
END_TEST

/* ---- the gather codec ------------------------------------------------- */

/* the whole output of a gather, read @step bytes at a time */
static uint8_t *gather_all(const void *src, size_t src_len,
			   const struct tfs_gather_params *g, size_t step,
			   size_t *len)
{
	struct tfs_stream *s;
	uint64_t span, size;
	uint8_t *out;
	size_t pos = 0;

	ck_assert_int_eq(tfs_gather_extent(g, &span, &size), 0);
	ck_assert_int_eq(
		tfs_stream_new(
			&s, TFS_ENCODING_GATHER, src, src_len, false,
			&(struct tfs_codec_params){
				.gather = (struct tfs_gather_params *)g}),
		0);
	out = malloc(size + 1);
	ck_assert_ptr_nonnull(out);
	while (pos < size) {
		size_t want = pos + step < size ? pos + step : size;

		ck_assert_int_eq(tfs_stream_decode(s, out, size, &pos, want),
				 0);
		ck_assert_uint_eq(pos, want);
	}
	ck_assert(tfs_stream_finished(s));
	ck_assert_int_eq(tfs_stream_expect_end(s, out, size), 0);
	tfs_stream_free(s);
	*len = size;
	return out;
}

/* element (i0..in) of the view by its definition, odometer order */
static void naive_gather(const uint8_t *src, const struct tfs_gather_params *g,
			 uint8_t *out)
{
	uint64_t idx[TFS_GATHER_MAX_DIMS] = {0}, count = 1, e, off;
	uint32_t k;

	for (k = 0; k < g->ndim; k++)
		count *= g->shape[k];
	for (e = 0; e < count; e++) {
		off = 0;
		for (k = 0; k < g->ndim; k++)
			off += idx[k] * g->stride[k];
		memcpy(out + e * g->itemsize, src + off * g->itemsize,
		       g->itemsize);
		for (k = g->ndim; k-- > 0;) {
			if (++idx[k] < g->shape[k])
				break;
			idx[k] = 0;
		}
	}
}

START_TEST(gather_codec)
{
	/* a 2x3 int16 matrix 0..5 */
	static const uint16_t m[6] = {0, 1, 2, 3, 4, 5};
	static const uint16_t t_want[6] = {0, 3, 1, 4, 2, 5};
	struct tfs_gather_params t = {
		.itemsize = 2, .ndim = 2, .shape = {3, 2}, .stride = {1, 3}};
	struct tfs_gather_params p = {.itemsize = 4,
				      .ndim = 3,
				      .shape = {3, 4, 5},
				      .stride = {1, 15, 3}};
	struct tfs_gather_params bad = t;
	struct tfs_stream *s;
	uint8_t src[4 * 60], want[4 * 60], *got;
	size_t len, step;
	uint64_t span, size;
	int i;

	for (step = 1; step < 14; step++) {
		got = gather_all(m, sizeof(m), &t, step, &len);
		ck_assert_uint_eq(len, sizeof(t_want));
		ck_assert_mem_eq(got, t_want, len);
		free(got);
	}
	/* a permuted 3-d view, against the definition, in odd reads */
	for (i = 0; i < (int)sizeof(src); i++)
		src[i] = (uint8_t)(i * 7 + 3);
	naive_gather(src, &p, want);
	for (step = 1; step < 30; step += 7) {
		got = gather_all(src, sizeof(src), &p, step, &len);
		ck_assert_uint_eq(len, 240);
		ck_assert_mem_eq(got, want, len);
		free(got);
	}
	/* a broadcast (stride 0) and a scalar */
	p = (struct tfs_gather_params){
		.itemsize = 4, .ndim = 2, .shape = {3, 4}, .stride = {0, 1}};
	naive_gather(src, &p, want);
	got = gather_all(src, 16, &p, 5, &len);
	ck_assert_uint_eq(len, 48);
	ck_assert_mem_eq(got, want, len);
	free(got);
	p = (struct tfs_gather_params){.itemsize = 8, .ndim = 0};
	got = gather_all(src, 8, &p, 3, &len);
	ck_assert_uint_eq(len, 8);
	ck_assert_mem_eq(got, src, 8);
	free(got);
	/* the stored bytes must hold the furthest element */
	ck_assert_int_eq(tfs_gather_extent(&t, &span, &size), 0);
	ck_assert_uint_eq(span, 12);
	ck_assert_uint_eq(size, 12);
	ck_assert_int_eq(
		tfs_stream_new(&s, TFS_ENCODING_GATHER, m, 11, false,
			       &(struct tfs_codec_params){.gather = &t}),
		-EINVAL);
	/* no layout, or parameters of another codec */
	ck_assert_int_eq(
		tfs_stream_new(&s, TFS_ENCODING_GATHER, m, 12, false, NULL),
		-EINVAL);
	ck_assert_int_eq(tfs_stream_new(&s, TFS_ENCODING_GATHER, m, 12, false,
					&(struct tfs_codec_params){.gather = &t,
								   .skip = 1}),
			 -EINVAL);
	ck_assert_int_eq(
		tfs_stream_new(&s, TFS_ENCODING_ZSTD, m, 12, false,
			       &(struct tfs_codec_params){.gather = &t}),
		-EINVAL);
	bad.stride[0] = UINT64_MAX / 2;
	ck_assert_int_eq(tfs_gather_extent(&bad, &span, &size), -EOVERFLOW);
	bad.ndim = TFS_GATHER_MAX_DIMS + 1;
	ck_assert_int_eq(tfs_gather_extent(&bad, &span, &size), -EINVAL);
}
END_TEST

/* ---- tests/fixtures/pytorch: layouts torch does not write -------------- */

static void check_own_valid(const char *path, const char *name, void *arg)
{
	json_t *all = arg, *want = json_object_get(all, name), *t, *meta,
	       *leaves;
	size_t i;
	struct tfs_image *img;
	struct tfs_diag d;
	const char *tname;
	char hex[65];
	uint8_t *b;
	size_t len;

	ck_assert_msg(want != NULL, "valid/%s is not in expected.json", name);
	ck_assert_msg(tu_load_file(path, &img, &d) == 0, "%s: %s", name, d.msg);
	ck_assert_uint_eq(img->tree->ntensors,
			  json_object_size(json_object_get(want, "tensors")));
	/* metadata.json is JSON that readers take, whatever the keys held */
	meta = metadata(img);
	leaves = json_object_get(meta, "leaves");
	ck_assert_uint_eq(json_object_size(leaves),
			  json_array_size(json_object_get(want, "leaves")));
	json_array_foreach(json_object_get(want, "leaves"), i, t)
		ck_assert_msg(json_object_get(leaves, json_string_value(t)),
			      "%s: no leaf %s", name, json_string_value(t));
	json_decref(meta);
	json_object_foreach(json_object_get(want, "tensors"), tname, t)
	{
		const struct tfs_tensor *x = tu_tensor(img, tname);

		ck_assert_msg(x != NULL, "%s: no '%s'", name, tname);
		ck_assert_str_eq(x->dtype, json_string_value(json_object_get(
						   t, "dtype")));
		/* zero-copy exactly when torch calls it contiguous */
		ck_assert_int_eq(x->encoding,
				 json_is_true(json_object_get(t, "contiguous"))
					 ? TFS_ENCODING_RAW
					 : TFS_ENCODING_GATHER);
		b = tu_read_node(img, x->node, &len);
		tu_sha256_hex(b, len, hex);
		ck_assert_msg(strcmp(hex, json_string_value(json_object_get(
						  t, "sha256"))) == 0,
			      "%s: '%s'", name, tname);
		free(b);
	}
	tfs_image_close(img);
}

static void check_own_reject(const char *path, const char *name, void *arg)
{
	json_t *want = json_object_get(arg, name);
	struct tfs_image *img = NULL;
	struct tfs_diag d;
	const char *err;
	int ret, code;

	ck_assert_msg(want != NULL, "reject/%s is not in expected.json", name);
	err = json_string_value(json_object_get(want, "err"));
	code = strcmp(err, "ENOTSUP") == 0   ? -ENOTSUP
	       : strcmp(err, "E2BIG") == 0   ? -E2BIG
	       : strcmp(err, "ENOEXEC") == 0 ? -ENOEXEC
					     : -EBADMSG;
	ret = tu_load_file(path, &img, &d);
	ck_assert_msg(ret == code, "%s: %d (%s)", name, ret, d.msg);
	ck_assert_ptr_null(img);
	ck_assert_msg(strstr(d.msg, json_string_value(json_object_get(
					    want, "word"))) != NULL,
		      "%s: '%s'", name, d.msg);
}

START_TEST(own_fixtures)
{
	json_error_t err;
	json_t *e =
		json_load_file(tu_testdata("pytorch/expected.json"), 0, &err);

	ck_assert_msg(e != NULL, "expected.json: %s", err.text);
	ck_assert_uint_eq(tu_each_fixture(tu_testdata("pytorch/valid"),
					  check_own_valid,
					  json_object_get(e, "valid")),
			  json_object_size(json_object_get(e, "valid")));
	ck_assert_uint_eq(tu_each_fixture(tu_testdata("pytorch/reject"),
					  check_own_reject,
					  json_object_get(e, "reject")),
			  json_object_size(json_object_get(e, "reject")));
	json_decref(e);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pytorch");
	TCase *tc = tcase_create("pytorch");

	tcase_add_test(tc, every_valid_fixture);
	tcase_add_test(tc, torch_written);
	tcase_add_test(tc, tied_weights_are_twins);
	tcase_add_test(tc, every_shared_reject);
	tcase_add_test(tc, evil_global_offset);
	tcase_add_test(tc, gather_codec);
	tcase_add_test(tc, own_fixtures);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
