// SPDX-License-Identifier: MIT
/*
 * HDF5: every file of the shared fixtures (written by libhdf5 1.10.8
 * through h5py 3.7) against its expected.json: every dataset's dtype,
 * byte order, shape, size and sha256 of the bytes as served, the
 * contiguous / compact offsets, the chunk lists of chunked datasets
 * (through the parser's chunk index walk: coordinates, addresses, stored
 * sizes, filter masks), attributes, links not followed, variable-length
 * values, Keras layouts; every reject refused with a message naming the
 * structure and a byte offset inside the file; truncated files refused or
 * loaded, never read out of bounds; and the parser's own structures
 * (lookup3 against known values, crafted superblocks).
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse/hdf5/h5.h"
#include "core/diag.h"
#include "core/image.h"
#include "core/tree.h"
#include "testutil.h"

/* ---- helpers ------------------------------------------------------------ */

/* the tensorfs dtype expected for an expected.json dataset */
static void want_dtype(const json_t *ds, char *out, size_t len)
{
	const char *dt = json_string_value(json_object_get(ds, "dtype"));
	const char *path = json_string_value(json_object_get(ds, "path"));
	json_int_t item = json_integer_value(json_object_get(ds, "itemsize"));

	const char *kdt = json_string_value(json_object_get(
		json_object_get(json_object_get(ds, "attributes"), "dtype"),
		"value"));

	if (kdt && !strcmp(kdt, "bfloat16")) /* Keras 3's opaque bfloat16 */
		snprintf(out, len, "bfloat16");
	else if (!strcmp(dt, "compound") &&
		 (strstr(path, "complex") || strstr(path, "_c8")))
		snprintf(out, len, "complex%d", (int)item * 8);
	else if (!strcmp(dt, "compound") || !strncmp(dt, "string", 6) ||
		 !strncmp(dt, "opaque", 6))
		snprintf(out, len, "void%d", (int)item);
	else if (!strncmp(dt, "enum:", 5) || !strncmp(dt, "array:", 6))
		snprintf(out, len, "%s", strchr(dt, ':') + 1);
	else
		snprintf(out, len, "%s", dt);
}

static void sha_of(struct tfs_image *img, const struct tfs_tensor *x,
		   char hex[65])
{
	size_t len;
	uint8_t *b = tu_read_node(img, x->node, &len);

	ck_assert_uint_eq(len, x->size);
	tu_sha256_hex(b, len, hex);
	free(b);
}

/* every value of @v flattened into @out (a vlen dataset's values) */
static void flatten(json_t *v, json_t *out)
{
	size_t i;

	if (!json_is_array(v)) {
		json_array_append(out, v);
		return;
	}
	for (i = 0; i < json_array_size(v); i++)
		flatten(json_array_get(v, i), out);
}

/* one expected dataset against the image */
static void check_dataset(struct tfs_image *img, json_t *meta, const char *file,
			  json_t *ds)
{
	const char *path = json_string_value(json_object_get(ds, "path"));
	const char *dt = json_string_value(json_object_get(ds, "dtype"));
	const char *bo = json_string_value(json_object_get(ds, "byte_order"));
	json_t *lay = json_object_get(ds, "layout"), *shape;
	const char *kind = json_string_value(json_object_get(lay, "kind"));
	const struct tfs_tensor *x = tu_tensor(img, path);
	char want[32], hex[65];
	size_t i;

	if (!strcmp(dt, "string")) { /* vlen: values in metadata.json */
		json_t *got = json_object_get(
			json_object_get(meta, "vlen_datasets"), path);
		json_t *flat = json_array();

		ck_assert_msg(x == NULL, "%s: vlen %s is a tensor", file, path);
		ck_assert_msg(got != NULL, "%s: no vlen values for %s", file,
			      path);
		flatten(got, flat);
		ck_assert_msg(json_equal(flat, json_object_get(ds, "vlen")),
			      "%s: %s vlen values differ", file, path);
		json_decref(flat);
		return;
	}
	ck_assert_msg(x != NULL, "%s: no tensor '%s'", file, path);
	want_dtype(ds, want, sizeof(want));
	ck_assert_msg(!strcmp(x->dtype, want), "%s: %s is %s, want %s", file,
		      path, x->dtype, want);
	ck_assert_uint_eq(x->size,
			  json_integer_value(json_object_get(ds, "nbytes")));
	shape = json_object_get(ds, "shape");
	if (!strcmp(json_string_value(json_object_get(ds, "dataspace")),
		    "null")) {
		ck_assert_uint_eq(x->ndim, 1);
		ck_assert_uint_eq(x->shape[0], 0);
		tu_expect_xattr(img, x->path, "hdf5.dataspace", "null");
	} else {
		/* array types append their dims */
		ck_assert_uint_ge(x->ndim, json_array_size(shape));
		for (i = 0; i < json_array_size(shape); i++)
			ck_assert_uint_eq(
				x->shape[i],
				json_integer_value(json_array_get(shape, i)));
	}
	if (!strcmp(bo, ">"))
		tu_expect_xattr(img, x->path, "byte_order", "big");
	else
		ck_assert_ptr_null(tu_xattr(img, x->path, "byte_order"));
	tu_expect_xattr(img, x->path, "hdf5.layout", kind);
	if (!strcmp(kind, "contiguous") &&
	    json_is_integer(json_object_get(lay, "offset"))) {
		ck_assert_uint_eq(x->offset, json_integer_value(json_object_get(
						     lay, "offset")));
	} else if (!strcmp(kind, "compact")) {
		ck_assert_uint_eq(x->offset, json_integer_value(json_object_get(
						     lay, "offset")));
	}
	/* every dataset is served: chunked ones through the chunked codec,
	 * unallocated ones as the fill value */
	ck_assert_msg(x->unreadable == NULL, "%s: %s unreadable: %s", file,
		      path, x->unreadable);
	sha_of(img, x, hex);
	ck_assert_msg(
		!strcmp(hex, json_string_value(json_object_get(ds, "sha256"))),
		"%s: %s sha256 %s", file, path, hex);
}

/* the parser's chunk list of @ds equals its chunk_list */
static void check_chunks(const uint8_t *buf, size_t len, uint64_t sb,
			 const char *file, json_t *ds)
{
	json_t *lay = json_object_get(ds, "layout");
	json_t *list = json_object_get(lay, "chunk_list");
	const char *path = json_string_value(json_object_get(ds, "path"));
	struct h5_file f = {.p = buf, .size = len};
	struct tfs_diag d;
	struct h5_ohdr oh;
	struct h5_space s;
	struct h5_layout l;
	struct h5_type *t = NULL;
	struct h5_pipeline pl = {0};
	struct h5_chunks ch;
	struct tfs_cursor c;
	const struct h5_msg *m;
	size_t i, k;

	tfs_diag_clear(&d);
	f.d = &d;
	ck_assert_int_eq(h5_superblock(&f), 0);
	ck_assert_uint_eq(f.base, sb);
	ck_assert_int_eq(
		h5_ohdr_read(&f,
			     (uint64_t)json_integer_value(json_object_get(
				     ds, "object_header_address")),
			     &oh),
		0);
	ck_assert_uint_eq(oh.version, json_integer_value(json_object_get(
					      ds, "object_header_version")));
	h5_msg_cursor(h5_ohdr_find(&oh, 0x01), &c);
	ck_assert_int_eq(h5_space_parse(&f, &c, &s), 0);
	h5_msg_cursor(h5_ohdr_find(&oh, 0x03), &c);
	ck_assert_int_eq(h5_type_parse(&f, &c, &t), 0);
	ck_assert_int_eq(h5_layout_parse(&f, h5_ohdr_find(&oh, 0x08), &l), 0);
	ck_assert_uint_eq(l.version, json_integer_value(json_object_get(
					     lay, "message_version")));
	m = h5_ohdr_find(&oh, 0x0b);
	if (m)
		ck_assert_int_eq(h5_pipeline_parse(&f, m, &pl), 0);
	ck_assert_uint_eq(pl.n,
			  json_array_size(json_object_get(lay, "filters")));
	ck_assert_msg(h5_chunks_collect(&f, &s, &l, t->size, pl.n > 0, &ch) ==
			      0,
		      "%s: %s: %s", file, path, d.msg);
	ck_assert_msg(ch.n == json_array_size(list), "%s: %s: %zu chunks", file,
		      path, ch.n);
	/* both sorted by coordinates */
	for (i = 0; i < ch.n; i++) {
		json_t *e = json_array_get(list, i);
		json_t *co = json_object_get(e, "coords");

		ck_assert_uint_eq(
			sb + ch.c[i].addr,
			json_integer_value(json_object_get(e, "addr")));
		ck_assert_uint_eq(
			ch.c[i].size,
			json_integer_value(json_object_get(e, "size")));
		ck_assert_uint_eq(
			ch.c[i].mask,
			json_integer_value(json_object_get(e, "filter_mask")));
		for (k = 0; k < ch.rank; k++)
			ck_assert_uint_eq(
				ch.coords[i * ch.rank + k],
				json_integer_value(json_array_get(co, k)));
	}
	h5_chunks_free(&ch);
	h5_type_free(t);
	h5_ohdr_free(&oh);
}

/* attributes of every group/dataset path listed in expected.json */
static void check_attrs(json_t *meta, const char *file, json_t *want)
{
	const char *path, *name;
	json_t *attrs, *a;

	json_object_foreach(want, path, attrs)
	{
		json_t *got = json_object_get(
			json_object_get(meta, "attributes"), path);

		json_object_foreach(attrs, name, a)
		{
			json_t *v = json_object_get(got, name);
			json_t *w = json_object_get(a, "value");

			ck_assert_msg(v != NULL, "%s: %s: no attribute %s",
				      file, path, name);
			/* JSON text attributes are parsed */
			if (!strcmp(name, "model_config") ||
			    !strcmp(name, "training_config")) {
				json_t *p = json_loads(json_string_value(w), 0,
						       NULL);

				ck_assert_msg(json_equal(v, p),
					      "%s: %s parsed differently", file,
					      name);
				json_decref(p);
				continue;
			}
			ck_assert_msg(json_equal(v, w),
				      "%s: %s: attribute %s = %s", file, path,
				      name, json_dumps(v, JSON_ENCODE_ANY));
		}
	}
}

/* @file in the set @dir; one of four static buffers */
static const char *in(const char *dir, const char *file)
{
	static char buf[4][8192];
	static unsigned k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", dir, file);
	return buf[k];
}

/* a copy of @p in @buf (tu_fixture and tu_testdata share one buffer) */
static const char *keep(char *buf, size_t size, const char *p)
{
	size_t n = strlen(p);

	ck_assert_uint_lt(n, size);
	memcpy(buf, p, n + 1);
	return buf;
}

/* the shared set's directory and the project's, in static buffers */
static const char *shared_dir(const char *sub)
{
	static char buf[4096];

	return keep(buf, sizeof(buf), tu_fixture(sub));
}

static const char *project_dir(const char *sub)
{
	static char buf[4096];

	return keep(buf, sizeof(buf), tu_testdata(sub));
}

/* ---- the fixture sets -------------------------------------------------- */

/*
 * Every file of @valid (an expected.json "valid" object) in directory @dir:
 * ../shared/fixtures/hdf5 (written by the shared generator) or the
 * project's tests/fixtures/hdf5/valid (tests/fixtures/hdf5/sets.py); both
 * record what h5py says of each dataset.
 */
static void check_valid_set(const char *dir, json_t *valid, unsigned *files,
			    unsigned *datasets, unsigned *chunked)
{
	const char *file;
	json_t *v;

	json_object_foreach(valid, file, v)
	{
		char path[4096];
		struct tfs_image *img;
		struct tfs_diag d;
		json_t *meta, *ds, *links;
		uint8_t *buf;
		size_t len, i, vlen = 0;
		uint64_t sb;

		if (strstr(file, ".keras"))
			continue; /* needs slices of a zip member */
		snprintf(path, sizeof(path), "%s/%s", dir, file);
		ck_assert_msg(tu_load_file(path, &img, &d) == 0, "%s: %s", file,
			      d.msg);
		meta = tu_meta_json(img, "metadata.json");
		ck_assert_str_eq(
			json_string_value(json_object_get(meta, "format")),
			"hdf5");
		ck_assert_int_eq(json_integer_value(json_object_get(
					 meta, "superblock_version")),
				 json_integer_value(json_object_get(
					 v, "superblock_version")));
		buf = tu_read_file(path, &len);
		sb = (uint64_t)json_integer_value(
			json_object_get(v, "superblock_offset"));
		ds = json_object_get(v, "datasets");
		for (i = 0; i < json_array_size(ds); i++) {
			json_t *x = json_array_get(ds, i);
			json_t *lay = json_object_get(x, "layout");

			check_dataset(img, meta, file, x);
			if (!strcmp(json_string_value(
					    json_object_get(lay, "kind")),
				    "chunked")) {
				check_chunks(buf, len, sb, file, x);
				(*chunked)++;
			}
			/* variable-length strings are not tensors */
			if (!strcmp(json_string_value(
					    json_object_get(x, "dtype")),
				    "string"))
				vlen++;
			(*datasets)++;
		}
		ck_assert_uint_eq(
			json_integer_value(json_object_get(
				json_object_get(meta, "summary"), "datasets")),
			json_array_size(ds) - vlen);
		check_attrs(meta, file, json_object_get(v, "attributes"));
		links = json_object_get(v, "links_not_followed");
		if (links)
			ck_assert_msg(
				json_equal(links,
					   json_object_get(meta, "links")),
				"%s: links %s", file,
				json_dumps(json_object_get(meta, "links"), 0));
		json_decref(meta);
		free(buf);
		tfs_image_close(img);
		(*files)++;
	}
}

START_TEST(every_valid_fixture)
{
	TU_NEED_SHARED("hdf5/expected.json");
	json_t *exp = tu_expected_json("hdf5");
	unsigned files = 0, datasets = 0, chunked = 0;
	check_valid_set(shared_dir("hdf5"), json_object_get(exp, "valid"),
			&files, &datasets, &chunked);
	ck_assert_uint_eq(files, 13);
	ck_assert_uint_ge(datasets, 200);
	ck_assert_uint_ge(chunked, 45);
	json_decref(exp);
}
END_TEST

/* the project's set: the same checks, earliest and latest files */
START_TEST(every_project_valid_fixture)
{
	json_error_t err;
	json_t *exp = json_load_file(tu_testdata("hdf5/valid/expected.json"), 0,
				     &err);
	unsigned files = 0, datasets = 0, chunked = 0;
	ck_assert_msg(exp != NULL, "expected.json: %s", err.text);
	check_valid_set(project_dir("hdf5/valid"),
			json_object_get(exp, "valid"), &files, &datasets,
			&chunked);
	ck_assert_uint_eq(files, 14);
	ck_assert_uint_ge(datasets, 100);
	ck_assert_uint_ge(chunked, 20);
	json_decref(exp);
}
END_TEST

static void check_keras_layouts(const char *dir)
{
	struct tfs_image *img;
	struct tfs_diag d;
	json_t *meta, *k;

	ck_assert_int_eq(
		tu_load_file(in(dir, "keras2_save_weights.h5"), &img, &d), 0);
	meta = tu_meta_json(img, "metadata.json");
	k = json_object_get(meta, "keras");
	ck_assert_str_eq(json_string_value(json_object_get(k, "layout")),
			 "keras2-weights");
	ck_assert_str_eq(json_string_value(json_array_get(
				 json_object_get(k, "layer_names"), 3)),
			 "dense_1");
	ck_assert_str_eq(
		json_string_value(json_array_get(
			json_object_get(json_object_get(k, "weight_names"),
					"dense"),
			0)),
		"dense/kernel:0");
	/* kernel:0 is shown as kernel; its stored name keeps ":0" */
	ck_assert_uint_ne(tfs_tree_resolve(img->tree, "dense/dense/kernel"),
			  TFS_NO_NODE);
	ck_assert_ptr_nonnull(tu_tensor(img, "dense/dense/kernel:0"));
	tu_expect_xattr(img, "", "hdf5.attr.backend", "tensorflow");
	json_decref(meta);
	/* Keras' load order in manifest.json: [layer_names, weight_names] */
	{
		uint32_t n =
			tfs_tree_resolve(img->tree, ".tensorfs/manifest.json");
		size_t len, i, seen = 0;
		uint8_t *b = tu_read_node(img, n, &len);
		json_t *man = json_loadb((const char *)b, len, 0, NULL);
		json_t *t = json_object_get(man, "tensors");

		for (i = 0; i < json_array_size(t); i++) {
			json_t *x = json_array_get(t, i);
			const char *nm =
				json_string_value(json_object_get(x, "name"));
			char *o = json_dumps(json_object_get(x, "keras_order"),
					     JSON_COMPACT | JSON_ENCODE_ANY);

			if (!strcmp(nm, "dense/dense/kernel:0")) {
				ck_assert_str_eq(o, "[0,0]");
				seen++;
			}
			if (!strcmp(nm, "dense/dense/bias:0")) {
				ck_assert_str_eq(o, "[0,1]");
				seen++;
			}
			if (!strcmp(nm, "dense_1/dense_1/bias:0")) {
				ck_assert_str_eq(o, "[3,1]");
				seen++;
			}
			free(o);
		}
		ck_assert_uint_eq(seen, 3);
		json_decref(man);
		free(b);
	}
	tfs_image_close(img);

	ck_assert_int_eq(
		tu_load_file(in(dir, "keras2_model_save.h5"), &img, &d), 0);
	meta = tu_meta_json(img, "metadata.json");
	k = json_object_get(meta, "keras");
	ck_assert_str_eq(json_string_value(json_object_get(k, "layout")),
			 "keras2-model");
	ck_assert(json_is_object(json_object_get(k, "model_config")));
	ck_assert(json_is_object(json_object_get(k, "training_config")));
	ck_assert_ptr_nonnull(tu_tensor(img, "optimizer_weights/Adam/iter:0"));
	json_decref(meta);
	tfs_image_close(img);

	ck_assert_int_eq(
		tu_load_file(in(dir, "keras3_model.weights.h5"), &img, &d), 0);
	meta = tu_meta_json(img, "metadata.json");
	ck_assert_str_eq(json_string_value(json_object_get(
				 json_object_get(meta, "keras"), "layout")),
			 "keras3-weights");
	ck_assert_str_eq(tu_tensor(img, "layers/dense_1/vars/2")->dtype,
			 "bfloat16");
	json_decref(meta);
	tfs_image_close(img);
}

/* a clash: "w" and "w:0" in one group keep their names */
static void check_strip_suffix_only_without_clash(const char *dir)
{
	struct tfs_image *img;
	struct tfs_diag d;

	ck_assert_int_eq(tu_load_file(in(dir, "hf_tf_model.h5"), &img, &d), 0);
	ck_assert_uint_ne(tfs_tree_resolve(img->tree,
					   "tf_tiny_model/tf_tiny_model/bert/"
					   "embeddings/word_embeddings/"
					   "weight"),
			  TFS_NO_NODE);
	tfs_image_close(img);
}

/*
 * tests/fixtures/hdf5/generate.py: 100 links in a dense group whose name
 * index is a v2 B-tree of depth 1, 12 dense attributes
 */
START_TEST(deep_v2_btree_group)
{
	struct tfs_image *img;
	struct tfs_diag d;
	json_t *meta, *a;
	unsigned i;

	ck_assert_int_eq(
		tu_load_file(tu_testdata("hdf5/links100_latest.h5"), &img, &d),
		0);
	ck_assert_uint_eq(img->tree->ntensors, 100);
	for (i = 0; i < 100; i++) {
		char name[32], path[32];
		const struct tfs_tensor *x;
		uint8_t *b;
		size_t len;

		snprintf(name, sizeof(name), "big/w%03u:0", i);
		snprintf(path, sizeof(path), "big/w%03u", i);
		x = tu_tensor(img, name);
		ck_assert_ptr_nonnull(x);
		ck_assert_str_eq(x->path, path);
		b = tu_read_node(img, x->node, &len);
		ck_assert_uint_eq(len, 4);
		ck_assert_uint_eq(b[0] | b[1] << 8, i);
		ck_assert_uint_eq(b[2] | b[3] << 8, i + 1);
		free(b);
	}
	meta = tu_meta_json(img, "metadata.json");
	a = json_object_get(json_object_get(meta, "attributes"), "big");
	ck_assert_uint_eq(json_object_size(a), 12);
	ck_assert_int_eq(json_integer_value(json_object_get(a, "a11")), 11);
	json_decref(meta);
	tfs_image_close(img);
}
END_TEST

/* extensible arrays past their index block: data and super blocks */
START_TEST(extensible_array_data_blocks)
{
	struct tfs_image *img;
	struct tfs_diag d;
	const struct tfs_tensor *x;
	uint8_t *b;
	size_t len, i;

	ck_assert_int_eq(
		tu_load_file(tu_testdata("hdf5/earray_latest.h5"), &img, &d),
		0);
	x = tu_tensor(img, "e300");
	ck_assert_ptr_nonnull(x);
	ck_assert_ptr_null(x->unreadable);
	b = tu_read_node(img, x->node, &len);
	ck_assert_uint_eq(len, 3600);
	for (i = 0; i < 900; i++)
		ck_assert_uint_eq(b[4 * i] | b[4 * i + 1] << 8, i);
	free(b);
	x = tu_tensor(img, "sparse");
	b = tu_read_node(img, x->node, &len);
	ck_assert_uint_eq(len, 2000);
	for (i = 0; i < 1000; i++)
		ck_assert_uint_eq(b[2 * i], (i / 2) % 7 ? 9 : 1);
	free(b);
	tfs_image_close(img);
}
END_TEST

/* fixed arrays with paged data blocks, some pages never initialized */
START_TEST(fixed_array_pages)
{
	struct tfs_image *img;
	struct tfs_diag d;
	const struct tfs_tensor *x;
	uint8_t *b;
	size_t len, i;

	ck_assert_int_eq(tu_load_file(tu_testdata("hdf5/"
						  "farray_paged_latest.h5"),
				      &img, &d),
			 0);
	x = tu_tensor(img, "big");
	ck_assert_ptr_null(x->unreadable);
	b = tu_read_node(img, x->node, &len);
	ck_assert_uint_eq(len, 24000);
	for (i = 0; i < 6000; i++)
		ck_assert_uint_eq(b[4 * i] | b[4 * i + 1] << 8, i);
	free(b);
	x = tu_tensor(img, "sparse");
	b = tu_read_node(img, x->node, &len);
	ck_assert_uint_eq(len, 12800);
	for (i = 0; i < 6400; i++)
		ck_assert_uint_eq(b[2 * i], i / 80 == 40 ? 1 : 5);
	free(b);
	tfs_image_close(img);
}
END_TEST

/* a committed datatype used by a dataset and an attribute */
START_TEST(committed_datatype)
{
	static const uint8_t want[36] = {
		1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,    0x40, /* 1, 2.0 */
		3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0x40, /* 3, 4.0 */
		5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x18, 0x40, /* 5, 6.0 */
	};
	struct tfs_image *img;
	struct tfs_diag d;
	const struct tfs_tensor *x;
	json_t *meta, *t;
	uint8_t *b;
	size_t len;

	ck_assert_int_eq(tu_load_file(tu_testdata("hdf5/"
						  "committed_earliest.h5"),
				      &img, &d),
			 0);
	x = tu_tensor(img, "x");
	ck_assert_ptr_nonnull(x);
	ck_assert_str_eq(x->dtype, "void12");
	b = tu_read_node(img, x->node, &len);
	ck_assert_uint_eq(len, 36);
	ck_assert(memcmp(b, want, 36) == 0);
	free(b);
	meta = tu_meta_json(img, "metadata.json");
	t = json_object_get(
		json_object_get(json_object_get(meta, "attributes"), "y"), "t");
	ck_assert_int_eq(json_integer_value(json_object_get(t, "a")), 7);
	ck_assert(json_real_value(json_object_get(t, "b")) == 8.5);
	ck_assert_ptr_nonnull(json_object_get(
		json_object_get(meta, "not_exposed"), "mytype"));
	json_decref(meta);
	tfs_image_close(img);
}
END_TEST

/* a byte of a fractal heap direct block changed: its checksum fails */
static void check_direct_block_checksum(const char *dir)
{
	size_t len;
	uint8_t *b = tu_read_file(in(dir, "groups_latest.h5"), &len);
	uint8_t *p = memmem(b, len, "FHDB", 4);

	ck_assert_ptr_nonnull(p);
	p[40] ^= 0x20;
	tu_expect_reject(b, len, -EBADMSG, "direct block", TU_ANY_OFFSET);
	p[40] ^= 0x20;
	tfs_image_close(tu_load_ok(b, len));
	free(b);
}

/* an attribute stored as a huge fractal heap object */
START_TEST(huge_heap_object)
{
	struct tfs_image *img;
	struct tfs_diag d;
	json_t *meta, *a, *big;
	size_t i;

	ck_assert_int_eq(
		tu_load_file(tu_testdata("hdf5/huge_attr_latest.h5"), &img, &d),
		0);
	meta = tu_meta_json(img, "metadata.json");
	a = json_object_get(json_object_get(meta, "attributes"), "x");
	ck_assert_uint_eq(json_object_size(a), 11);
	big = json_object_get(a, "big");
	ck_assert_uint_eq(json_array_size(big), 8300);
	for (i = 0; i < 8300; i += 83)
		ck_assert(json_real_value(json_array_get(big, i)) == (double)i);
	ck_assert_int_eq(json_integer_value(json_object_get(a, "a9")), 9);
	ck_assert_ptr_null(json_object_get(meta, "warnings"));
	json_decref(meta);
	tfs_image_close(img);
}
END_TEST

struct reject_row {
	const char *file;
	int err;
	const char *words[2];
	uint64_t at; /* TU_ANY_OFFSET: any offset inside the file */
};

/*
 * the rejects of @dir (the shared set, or the project's: the same files);
 * the shared dims_overflow.h5 keeps its max dims (so dim 0 is above its
 * maximum), the project's overflows the element count: @dims_word
 */
static void check_every_reject(const char *dir, const char *dims_word)
{
	static const struct reject_row rows[] = {
		{"bad_signature.h5", -ENOEXEC, {"not a container", NULL}, 0},
		{"root_past_eof.h5",
		 -EBADMSG,
		 {"root object header", "past the end"},
		 64},
		{"superblock_checksum.h5",
		 -EBADMSG,
		 {"superblock", "checksum"},
		 44},
		{"ohdr_checksum.h5",
		 -EBADMSG,
		 {"object header", "checksum"},
		 TU_ANY_OFFSET},
		{"ohdr_continuation_loop.h5",
		 -EBADMSG,
		 {"continuation block", "loop"},
		 TU_ANY_OFFSET},
		{"btree_cycle.h5",
		 -EBADMSG,
		 {"B-tree", "cycle"},
		 TU_ANY_OFFSET},
		{"dims_overflow.h5",
		 -EBADMSG,
		 {"dataspace", NULL},
		 TU_ANY_OFFSET},
		{"chunk_past_eof.h5",
		 -EBADMSG,
		 {"chunk", "past the end"},
		 TU_ANY_OFFSET},
		{"contiguous_past_eof.h5",
		 -EBADMSG,
		 {"contiguous data", "past the end"},
		 TU_ANY_OFFSET},
	};
	size_t i, k, len;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint8_t *b;

		b = tu_read_file(in(dir, rows[i].file), &len);
		for (k = 0; k < 2 && rows[i].words[k]; k++)
			tu_expect_reject(b, len, rows[i].err, rows[i].words[k],
					 rows[i].at);
		if (strstr(rows[i].file, "dims"))
			tu_expect_reject(b, len, rows[i].err, dims_word,
					 rows[i].at);
		if (rows[i].at == TU_ANY_OFFSET) {
			struct tfs_image *img = NULL;
			struct tfs_diag d;

			tu_load_mem(b, len, &img, &d);
			ck_assert_uint_gt(d.offset, 0);
			ck_assert_uint_lt(d.offset, len);
		}
		free(b);
	}
}

/* the refused filter hides one dataset: the rest mounts */
static void check_unknown_filter_hides_one_dataset(const char *dir)
{
	struct tfs_image *img;
	struct tfs_diag d;
	const struct tfs_tensor *x;

	ck_assert_int_eq(tu_load_file(in(dir, "unknown_filter.h5"), &img, &d),
			 0);
	x = tu_tensor(img, "gzip");
	ck_assert_ptr_nonnull(x);
	ck_assert_ptr_nonnull(x->unreadable);
	ck_assert_msg(strstr(x->unreadable, "4660") != NULL, "%s",
		      x->unreadable);
	ck_assert_ptr_null(tu_tensor(img, "contiguous")->unreadable);
	tfs_image_close(img);
}

/* every prefix of two files: refused or loaded, never out of bounds */
static void check_every_truncation(const char *dir)
{
	const char *files[] = {"userblock512.h5", "dtypes_latest.h5",
			       "groups_earliest.h5"};
	size_t f, len, n;

	for (f = 0; f < 3; f++) {
		uint8_t *b = tu_read_file(in(dir, files[f]), &len);

		for (n = 0; n < len; n += f ? 13 : 1) {
			struct tfs_image *img = NULL;
			struct tfs_diag d;
			uint8_t *cut = malloc(n ? n : 1);

			memcpy(cut, b, n);
			if (tu_load_mem(cut, n, &img, &d) == 0)
				tfs_image_close(img);
			else
				ck_assert_ptr_null(img);
			free(cut);
		}
		free(b);
	}
}

/* ---- the parser alone ---------------------------------------------------- */

START_TEST(lookup3_known_values)
{
	/* Bob Jenkins' lookup3.c driver5 values for hashlittle */
	ck_assert_uint_eq(h5_lookup3("", 0, 0), 0xdeadbeef);
	ck_assert_uint_eq(h5_lookup3("", 0, 0xdeadbeef), 0xbd5b7dde);
	ck_assert_uint_eq(h5_lookup3("Four score and seven years ago", 30, 0),
			  0x17770551);
	ck_assert_uint_eq(h5_lookup3("Four score and seven years ago", 30, 1),
			  0xcd628161);
}
END_TEST

/* the superblock of the worked example (spec 15.2) and its checksum */
/*
 * the v3 superblock of @file (libver latest): the root object header right
 * after it (0x30), the end-of-file address the file's length, the lookup3
 * checksum at 44 the one libhdf5 stored
 */
static void check_superblock_v3(const char *file)
{
	size_t len;
	uint8_t *b = tu_read_file(file, &len);
	struct h5_file f = {.p = b, .size = len};
	struct tfs_diag d;

	tfs_diag_clear(&d);
	f.d = &d;
	ck_assert_int_eq(h5_superblock(&f), 0);
	ck_assert_uint_eq(f.sb_version, 3);
	ck_assert_uint_eq(f.root, 0x30);
	ck_assert_uint_eq(f.eof, len);
	ck_assert_uint_eq(h5_lookup3(b, 44, 0), (uint32_t)b[44] |
							(uint32_t)b[45] << 8 |
							(uint32_t)b[46] << 16 |
							(uint32_t)b[47] << 24);
	/* O = 3 is refused by name */
	b[9] = 3;
	ck_assert_int_eq(h5_superblock(&f), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(d.msg, "size of offsets"));
	free(b);
}

/* the worked example (spec 15.2): its checksum value */
START_TEST(superblock_v3_example)
{
	TU_NEED_SHARED("hdf5/dtypes_latest.h5");
	size_t len;
	uint8_t *b = tu_read_file(tu_fixture("hdf5/dtypes_latest.h5"), &len);

	ck_assert_uint_eq(len, 13387);
	ck_assert_uint_eq(h5_lookup3(b, 44, 0), 0x52933c43);
	free(b);
	check_superblock_v3(tu_fixture("hdf5/dtypes_latest.h5"));
}
END_TEST

START_TEST(project_superblock_v3)
{
	check_superblock_v3(in(project_dir("hdf5/valid"), "dtypes_latest.h5"));
}
END_TEST

/* a user block of 512 bytes: dataset x's data at @x_offset */
static void check_user_block_base(const char *dir, uint64_t x_offset)
{
	size_t len;
	uint8_t *b = tu_read_file(in(dir, "userblock512.h5"), &len);
	struct tfs_image *img;
	const struct tfs_tensor *x;

	ck_assert_int_eq(h5_find_signature(b, len, UINT64_MAX), 512);
	/* a bound below the user block (a remote probe's) finds nothing */
	ck_assert_int_eq(h5_find_signature(b, len, 512), -ENOENT);
	img = tu_load_ok(b, len);
	x = tu_tensor(img, "x");
	ck_assert_uint_eq(x->offset, x_offset);
	tfs_image_close(img);
	/* a base address field that is not the superblock's place */
	b[512 + 24] = 1;
	tu_expect_reject(b, len, -EBADMSG, "base address", 512 + 24);
	free(b);
}

/* ---- the same checks over both sets ---------------------------------------
 */

START_TEST(keras_layouts)
{
	TU_NEED_SHARED("hdf5/keras2_save_weights.h5");
	check_keras_layouts(shared_dir("hdf5"));
}
END_TEST

START_TEST(project_keras_layouts)
{
	check_keras_layouts(project_dir("hdf5/valid"));
}
END_TEST

START_TEST(strip_suffix_only_without_clash)
{
	TU_NEED_SHARED("hdf5/hf_tf_model.h5");
	check_strip_suffix_only_without_clash(shared_dir("hdf5"));
}
END_TEST

/* the project's file: "embeddings" and "embeddings:0" both keep theirs */
START_TEST(project_strip_suffix)
{
	const char *dir = project_dir("hdf5/valid");
	struct tfs_image *img;
	struct tfs_diag d;
	const struct tfs_tensor *a, *b;
	static const char pos[] = "tf_tiny_model/tf_tiny_model/bert/"
				  "embeddings/position_embeddings/";

	check_strip_suffix_only_without_clash(dir);
	ck_assert_int_eq(tu_load_file(in(dir, "hf_tf_model.h5"), &img, &d), 0);
	a = tu_tensor(img, "tf_tiny_model/tf_tiny_model/bert/embeddings/"
			   "position_embeddings/embeddings:0");
	b = tu_tensor(img, "tf_tiny_model/tf_tiny_model/bert/embeddings/"
			   "position_embeddings/embeddings");
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_uint_eq(strncmp(a->path, pos, strlen(pos)), 0);
	ck_assert_str_eq(a->path + strlen(pos), "embeddings:0");
	ck_assert_str_eq(b->path + strlen(pos), "embeddings");
	ck_assert_uint_eq(a->shape[0], 6);
	tfs_image_close(img);
}
END_TEST

START_TEST(direct_block_checksum)
{
	TU_NEED_SHARED("hdf5/groups_latest.h5");
	check_direct_block_checksum(shared_dir("hdf5"));
}
END_TEST

START_TEST(project_direct_block_checksum)
{
	check_direct_block_checksum(project_dir("hdf5/valid"));
}
END_TEST

START_TEST(every_reject)
{
	TU_NEED_SHARED("hdf5/reject/bad_signature.h5");
	check_every_reject(shared_dir("hdf5/reject"), "dim 0");
}
END_TEST

START_TEST(project_every_reject)
{
	check_every_reject(project_dir("hdf5/reject"), "overflows");
}
END_TEST

START_TEST(unknown_filter_hides_one_dataset)
{
	TU_NEED_SHARED("hdf5/reject/unknown_filter.h5");
	check_unknown_filter_hides_one_dataset(shared_dir("hdf5/reject"));
}
END_TEST

START_TEST(project_unknown_filter)
{
	check_unknown_filter_hides_one_dataset(project_dir("hdf5/partial"));
}
END_TEST

START_TEST(every_truncation)
{
	TU_NEED_SHARED("hdf5/userblock512.h5");
	check_every_truncation(shared_dir("hdf5"));
}
END_TEST

START_TEST(project_every_truncation)
{
	check_every_truncation(project_dir("hdf5/valid"));
}
END_TEST

START_TEST(user_block_base)
{
	TU_NEED_SHARED("hdf5/userblock512.h5");
	check_user_block_base(shared_dir("hdf5"), 2560);
}
END_TEST

/* x's offset as H5Dget_offset gave it (expected.json) */
START_TEST(project_user_block_base)
{
	json_error_t err;
	json_t *exp = json_load_file(tu_testdata("hdf5/valid/expected.json"), 0,
				     &err);
	json_t *x;

	ck_assert_ptr_nonnull(exp);
	x = json_array_get(
		json_object_get(json_object_get(json_object_get(exp, "valid"),
						"userblock512.h5"),
				"datasets"),
		0);
	ck_assert_str_eq(json_string_value(json_object_get(x, "path")), "x");
	check_user_block_base(project_dir("hdf5/valid"),
			      (uint64_t)json_integer_value(json_object_get(
				      json_object_get(x, "layout"), "offset")));
	json_decref(exp);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hdf5");
	TCase *tc = tcase_create("fixtures");

	tcase_add_test(tc, every_valid_fixture);
	tcase_add_test(tc, every_project_valid_fixture);
	tcase_add_test(tc, project_keras_layouts);
	tcase_add_test(tc, project_strip_suffix);
	tcase_add_test(tc, project_direct_block_checksum);
	tcase_add_test(tc, project_every_reject);
	tcase_add_test(tc, project_unknown_filter);
	tcase_add_test(tc, project_every_truncation);
	tcase_add_test(tc, project_superblock_v3);
	tcase_add_test(tc, project_user_block_base);
	tcase_add_test(tc, keras_layouts);
	tcase_add_test(tc, strip_suffix_only_without_clash);
	tcase_add_test(tc, deep_v2_btree_group);
	tcase_add_test(tc, extensible_array_data_blocks);
	tcase_add_test(tc, fixed_array_pages);
	tcase_add_test(tc, committed_datatype);
	tcase_add_test(tc, direct_block_checksum);
	tcase_add_test(tc, huge_heap_object);
	tcase_add_test(tc, every_reject);
	tcase_add_test(tc, unknown_filter_hides_one_dataset);
	tcase_add_test(tc, every_truncation);
	tcase_add_test(tc, lookup3_known_values);
	tcase_add_test(tc, superblock_v3_example);
	tcase_add_test(tc, user_block_base);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
