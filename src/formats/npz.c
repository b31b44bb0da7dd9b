// SPDX-License-Identifier: MIT
/*
 * NumPy .npz (specs/npy.md section 5; numpy's savez/savez_compressed and
 * NpzFile): a zip archive (parse/zip.h) whose members NAME.npy are .npy
 * files (formats/common/npy_header.h); member NAME.npy is the tensor NAME,
 * split at '.' and '/' as usual.
 *
 * Stored members (np.savez) are served from the mapping: the tensor is the
 * member's array bytes, and the member's CRC-32 is its digest, covering the
 * whole member (the .npy header too).  Deflated members
 * (np.savez_compressed) are decoded by the decode engine with the deflate
 * codec (codec/deflate.h): their .npy header is inflated here to learn the
 * array, then skipped by the codec, which checks the CRC-32 of the whole
 * inflated member.  Either way a mismatch fails reads with EIO and a log
 * line, and `tensorfs verify` reports it.
 *
 * Rules beyond the zip reader's: methods 0 and 8 only, a member's .npy
 * exactly as long as its header and array (numpy ignores extra bytes; a
 * member is a whole file, so they mean damage), member names unique (the
 * builder), members that are not .npy files skipped with a warning.
 *
 * Detection: a zip is claimed with full confidence when its members are all
 * .npy files (or it has none), less when only some are, and with very little
 * when it is too damaged to tell (so the refusal says what is wrong).  Other
 * zips are not claimed: a zip whose first folder holds data.pkl is a
 * PyTorch checkpoint, for that reader; a zip of other files is nobody's
 * (a directory mount leaves it out silently).  Never by the file's name.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/deflate.h"
#include "formats/common/npy_header.h"
#include "parse/zip.h"
#include "core/builder.h"
#include "core/diag.h"
#include "core/format.h"
#include "core/names.h"
#include "core/source.h"

#define NPY_SUFFIX ".npy"
#define NPY_SUFFIX_LEN 4

/* confidences: ours; partly ours; a zip too damaged to tell, to refuse */
#define CONF_NPZ 100
#define CONF_SOME_NPY 60
#define CONF_DAMAGED_ZIP 5

/* "top/data.pkl": the record PyTorch's zip checkpoints start with */
static bool is_torch_pickle(const struct tfs_zip_entry *e)
{
	const char *slash = memchr(e->name, '/', e->name_len);

	return slash &&
	       (size_t)(e->name + e->name_len - slash) ==
		       sizeof("/data.pkl") - 1 &&
	       memcmp(slash, "/data.pkl", sizeof("/data.pkl") - 1) == 0;
}

struct census {
	uint64_t npy, other;
	bool torch;
};

/* walk the directory: how many members are .npy; 0 or the walk's error */
static void census_entry(void *ctx, const struct tfs_zip_entry *e)
{
	struct census *c = ctx;

	if (tfs_zip_name_ends(e, NPY_SUFFIX))
		c->npy++;
	else
		c->other++;
	if (is_torch_pickle(e))
		c->torch = true;
}

static int take_census(const struct tfs_zip *z, struct census *c,
		       struct tfs_diag *d)
{
	memset(c, 0, sizeof(*c));
	return tfs_zip_walk(z, census_entry, c, d);
}

static int npz_probe(const struct tfs_source *src)
{
	struct tfs_zip z;
	struct census c;

	if (!tfs_zip_magic(src->data, src->size))
		return 0;
	if (tfs_zip_open(&z, src->data, src->size, NULL) ||
	    take_census(&z, &c, NULL))
		return CONF_DAMAGED_ZIP; /* refused by load, with the reason */
	if (c.torch || (!c.npy && c.other))
		return 0; /* some other zip: not ours to refuse */
	return c.other ? CONF_SOME_NPY : CONF_NPZ;
}

struct npz_ctx {
	const struct tfs_source *src;
	struct tfs_builder *b;
	struct tfs_diag *d;
	json_t *members;
	char name[TFS_PRINTABLE_MAX]; /* the member's, for messages */
};

/*
 * The .npy header of a deflated member: inflate its first bytes (at most
 * what the longest header takes) and parse them.  Offsets inside inflated
 * bytes have no place in the file: a refusal points at the member's data
 * and says which inflated byte.
 */
static int deflated_header(struct npz_ctx *x, const struct tfs_zip_entry *e,
			   struct tfs_npy *h)
{
	char msg[TFS_DEFLATE_MSG_MAX] = "";
	size_t cap, got;
	struct tfs_diag inner;
	uint8_t *buf;
	int ret;

	cap = e->uncomp_size < TFS_NPY_PREFIX_MAX ? (size_t)e->uncomp_size
						  : TFS_NPY_PREFIX_MAX;
	buf = malloc(cap ? cap : 1);
	if (!buf)
		return tfs_diag_oom(x->d);
	ret = tfs_deflate_prefix(x->src->data + e->data_offset,
				 (size_t)e->comp_size, buf, cap, &got, msg);
	if (ret) {
		free(buf);
		return ret == -EBADMSG
			       ? tfs_diag_at(x->d, ret, e->data_offset,
					     "member '%s': %s", x->name, msg)
			       : tfs_diag_oom(x->d);
	}
	tfs_diag_clear(&inner);
	ret = tfs_npy_parse(buf, got, 0, h, &inner);
	free(buf);
	if (ret == -ENOMEM)
		return tfs_diag_oom(x->d);
	if (ret)
		return tfs_diag_at(x->d, ret, e->data_offset,
				   "member '%s' (deflated): %s (at byte %llu "
				   "of the inflated member)",
				   x->name, inner.msg,
				   (unsigned long long)inner.offset);
	return 0;
}

/* the .npy header of a stored member, refusals naming the member */
static int stored_header(struct npz_ctx *x, const struct tfs_zip_entry *e,
			 struct tfs_npy *h)
{
	struct tfs_diag inner;
	int ret;

	tfs_diag_clear(&inner);
	ret = tfs_npy_parse(x->src->data + e->data_offset, e->uncomp_size,
			    e->data_offset, h, &inner);
	if (ret == -ENOMEM)
		return tfs_diag_oom(x->d);
	if (ret)
		return tfs_diag_at(x->d, ret, inner.offset, "member '%s': %s",
				   x->name, inner.msg);
	return 0;
}

static int add_member(struct npz_ctx *x, const struct tfs_zip_entry *e)
{
	struct tfs_tensor_spec spec;
	bool deflated = e->method == TFS_ZIP_DEFLATED;
	char digest[32], crc[16];
	uint64_t header_bytes, end;
	struct tfs_npy h;
	uint32_t handle;
	json_t *m;
	int ret;

	memset(&h, 0, sizeof(h));
	if (e->method != TFS_ZIP_STORED && !deflated)
		return tfs_diag_at(x->d, -ENOTSUP, e->central_offset + 10,
				   "member '%s': compression method %u (only "
				   "0, stored, and 8, deflate)",
				   x->name, e->method);
	if (deflated)
		ret = deflated_header(x, e, &h);
	else
		ret = stored_header(x, e, &h);
	if (ret)
		goto out;
	/* header bytes: where the array starts, relative to the member */
	header_bytes = h.data_offset - (deflated ? 0 : e->data_offset);
	end = header_bytes + h.nbytes; /* both bounded: no overflow */
	if (end < header_bytes || end != e->uncomp_size) {
		ret = tfs_diag_at(x->d, -EBADMSG, e->data_offset,
				  "member '%s': the .npy is %llu bytes, its "
				  "header and array take %llu",
				  x->name, (unsigned long long)e->uncomp_size,
				  (unsigned long long)header_bytes + h.nbytes);
		goto out;
	}
	tfs_spec_name(&spec, e->name, e->name_len - NPY_SUFFIX_LEN,
		      e->central_offset);
	tfs_npy_spec(&h, &spec);
	snprintf(crc, sizeof(crc), "0x%08X", (unsigned)e->crc32);
	if (deflated) {
		struct tfs_codec_params p = {.skip = header_bytes,
					     .check_crc32 = true,
					     .crc32 = e->crc32};

		tfs_spec_stored(&spec, e->data_offset, e->comp_size);
		tfs_spec_size(&spec, h.nbytes);
		tfs_spec_encoded(&spec, TFS_ENCODING_DEFLATE, &p);
	} else {
		tfs_spec_raw(&spec, h.data_offset, h.nbytes);
		snprintf(digest, sizeof(digest), "crc32:%s", crc);
		tfs_spec_digest_over(&spec, digest, e->data_offset,
				     e->uncomp_size);
	}
	ret = tfs_builder_add_tensor(x->b, &spec, &handle, x->d);
	if (ret)
		goto out;
	if (tfs_npy_describe(x->b, handle, &h) ||
	    tfs_builder_set_xattr(x->b, handle, "npz.member", e->name,
				  e->name_len) ||
	    tfs_builder_set_xattr_str(x->b, handle, "npz.crc32", crc)) {
		ret = tfs_diag_oom(x->d);
		goto out;
	}
	m = json_object();
	/* JSON holds UTF-8 only: other names as escaped for messages */
	json_object_set_new(
		m, "name",
		tfs_utf8_valid((const unsigned char *)e->name, e->name_len)
			? json_stringn(e->name, e->name_len)
			: json_string(x->name));
	json_object_set_new(m, "method",
			    json_string(deflated ? "deflate" : "stored"));
	json_object_set_new(m, "crc32", json_string(crc));
	json_object_set_new(m, "compressed_size",
			    json_integer((json_int_t)e->comp_size));
	json_object_set_new(m, "size",
			    json_integer((json_int_t)e->uncomp_size));
	json_object_set_new(m, "local_header",
			    json_integer((json_int_t)e->local_offset));
	json_object_set_new(m, "data_offset",
			    json_integer((json_int_t)e->data_offset));
	json_object_set_new(m, "npy_version", json_sprintf("%u.0", h.major));
	json_object_set_new(m, "descr", json_string(h.descr));
	json_object_set_new(m, "fortran_order", json_boolean(h.fortran));
	json_array_append_new(x->members, m);
out:
	tfs_npy_free(&h);
	return ret;
}

static int npz_load(const struct tfs_source *src, struct tfs_builder *b,
		    struct tfs_diag *d)
{
	struct npz_ctx x = {.src = src, .b = b, .d = d};
	struct tfs_zip_iter it;
	struct tfs_zip_entry e;
	struct tfs_zip z;
	struct census c;
	json_t *meta;
	int ret;

	ret = tfs_zip_open(&z, src->data, src->size, d);
	if (!ret)
		ret = take_census(&z, &c, d);
	if (ret)
		return ret;
	if (c.torch)
		return tfs_diag_at(d, -ENOTSUP, z.cd_offset,
				   "zip: a PyTorch checkpoint (a folder holds "
				   "data.pkl), not an .npz");
	if (!c.npy && c.other)
		return tfs_diag_at(d, -ENOTSUP, z.cd_offset,
				   "zip: not an .npz (none of its %llu members "
				   "is an .npy file)",
				   (unsigned long long)c.other);
	tfs_builder_set_overlap_rule(b, TFS_OVERLAP_FORBID);
	meta = tfs_builder_metadata(b);
	x.members = json_array();
	json_object_set_new(meta, "members", x.members);
	json_object_set_new(meta, "zip64", json_boolean(z.zip64));
	tfs_zip_iter_init(&it);
	while ((ret = tfs_zip_next(&z, &it, &e, d)) == 1) {
		tfs_name_printable(x.name, sizeof(x.name), e.name, e.name_len);
		if (!tfs_zip_name_ends(&e, NPY_SUFFIX)) {
			if (tfs_builder_warn(b, e.central_offset,
					     "member '%s' is not an .npy file: "
					     "skipped",
					     x.name))
				return tfs_diag_oom(d);
			continue;
		}
		ret = add_member(&x, &e);
		if (ret)
			return ret;
	}
	return ret;
}

TFS_FORMAT(npz, "NumPy .npz (zip of .npy, stored or deflated)",
	   .probe = npz_probe, .load = npz_load);
