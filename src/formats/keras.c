// SPDX-License-Identifier: MIT
/*
 * The Keras 3 `.keras` archive (specs/hdf5.md section 13.4): a zip
 * (parse/zip.h) written by Python's zipfile with members metadata.json,
 * config.json, model.weights.h5 and optional assets/.  The weights member
 * is an HDF5 file read in place by the HDF5 reader as a slice of the
 * archive loaded at its root (tfs_builder_load_slice: the archive's own
 * content, every offset absolute in the archive): stored, so every
 * contiguous dataset is served zero-copy, from a local or a remote archive
 * alike.  config.json
 * and metadata.json are parsed into metadata.json ("keras_archive");
 * other members are listed there.
 *
 * Detection: a zip with a member model.weights.h5 (full confidence with
 * config.json too).  A deflated weights member is refused by name (other
 * writers than Keras); a config that does not parse is kept as text.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "parse/zip.h"
#include "core/builder.h"
#include "core/diag.h"
#include "core/format.h"
#include "core/source.h"

#define KERAS_WEIGHTS "model.weights.h5"
#define KERAS_JSON_MAX (64u << 20)

extern const struct tfs_format tfs_format_hdf5;

struct keras_census {
	bool weights, config;
};

static void census_entry(void *ctx, const struct tfs_zip_entry *e)
{
	struct keras_census *c = ctx;

	if (tfs_zip_name_is(e, KERAS_WEIGHTS))
		c->weights = true;
	if (tfs_zip_name_is(e, "config.json"))
		c->config = true;
}

static int keras_census(const struct tfs_zip *z, struct keras_census *c)
{
	memset(c, 0, sizeof(*c));
	return tfs_zip_walk(z, census_entry, c, NULL);
}

static int keras_probe(const struct tfs_source *src)
{
	struct tfs_zip z;
	struct keras_census c;

	if (!tfs_zip_magic(src->data, src->size) ||
	    tfs_zip_open(&z, src->data, src->size, NULL) ||
	    keras_census(&z, &c) || !c.weights)
		return 0;
	return c.config ? 100 : 80;
}

/* a stored JSON member, parsed (or as text when it does not parse) */
static json_t *keras_json(const struct tfs_source *src,
			  const struct tfs_zip_entry *e)
{
	const char *p = (const char *)src->data + e->data_offset;
	json_t *j;

	if (e->method != TFS_ZIP_STORED || e->comp_size > KERAS_JSON_MAX)
		return json_pack("{s:s,s:I}", "not_read",
				 e->method != TFS_ZIP_STORED
					 ? "compressed member"
					 : "larger than 64 MiB",
				 "bytes", (json_int_t)e->uncomp_size);
	j = json_loadb(p, (size_t)e->comp_size, 0, NULL);
	return j ? j : json_stringn_nocheck(p, (size_t)e->comp_size);
}

static int keras_load(const struct tfs_source *src, struct tfs_builder *b,
		      struct tfs_diag *d)
{
	struct tfs_zip z;
	struct tfs_zip_iter it;
	struct tfs_zip_entry e, w = {0};
	json_t *arch = json_object(), *members = json_array();
	bool have_w = false;
	int ret;

	if (!arch || !members) {
		ret = tfs_diag_oom(d);
		goto out;
	}
	ret = tfs_zip_open(&z, src->data, src->size, d);
	if (ret)
		goto out;
	tfs_zip_iter_init(&it);
	while ((ret = tfs_zip_next(&z, &it, &e, d)) == 1) {
		json_t *v = NULL;

		ret = 0;
		if (json_array_append_new(
			    members,
			    json_stringn_nocheck(e.name, e.name_len))) {
			ret = tfs_diag_oom(d);
			goto out;
		}
		if (tfs_zip_name_is(&e, KERAS_WEIGHTS)) {
			if (have_w) {
				ret = tfs_diag_at(d, -EBADMSG, e.central_offset,
						  "zip: " KERAS_WEIGHTS
						  " is given twice");
				goto out;
			}
			w = e;
			have_w = true;
		} else if (tfs_zip_name_is(&e, "config.json")) {
			v = keras_json(src, &e);
			ret = !v || json_object_set_new(arch, "config", v);
		} else if (tfs_zip_name_is(&e, "metadata.json")) {
			v = keras_json(src, &e);
			ret = !v || json_object_set_new(arch, "metadata", v);
		}
		if (ret) {
			ret = tfs_diag_oom(d);
			goto out;
		}
	}
	if (ret)
		goto out;
	if (!have_w) {
		ret = tfs_diag_at(d, -EBADMSG, z.cd_offset,
				  "zip: no member " KERAS_WEIGHTS);
		goto out;
	}
	if (w.method != TFS_ZIP_STORED) {
		ret = tfs_diag_at(d, -ENOTSUP, w.local_offset,
				  KERAS_WEIGHTS ": compression method %u (only "
						"stored members are read)",
				  w.method);
		goto out;
	}
	if (json_object_set(arch, "members", members) ||
	    json_object_set_new(arch, "weights_offset",
				json_integer((json_int_t)w.data_offset)) ||
	    json_object_set(tfs_builder_metadata(b), "keras_archive", arch)) {
		ret = tfs_diag_oom(d);
		goto out;
	}
	ret = tfs_builder_load_slice(b, w.data_offset, w.comp_size,
				     KERAS_WEIGHTS, "", &tfs_format_hdf5, d);
out:
	json_decref(arch);
	json_decref(members);
	return ret;
}

TFS_FORMAT(keras, "Keras 3 .keras archive (zip around HDF5 weights)",
	   .probe = keras_probe, .load = keras_load);
