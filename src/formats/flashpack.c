// SPDX-License-Identifier: MIT
/*
 * flashpack (docs/formats/flashpack.md), fal-ai's disk-to-GPU format: the
 * tensors' elements packed in one payload from byte 0, then a JSON footer,
 * its length (u64 LE) and the magic "FLASHPK\0" at the very end.  Format
 * flashpack_v3: one dtype, an index of (name, shape, element offset,
 * length); flashpack_v4: one macroblock per dtype (offset_bytes,
 * length_bytes, length_elems), each index record naming its macroblock.
 * Every tensor is served zero-copy from the payload; a macroblock
 * compressed by fpz (its record's "fpz": split-plane zstd frames, bf16
 * only) is listed, its tensors unreadable.
 *
 * Detection: the magic in the last 8 bytes.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "formats/common/dtype_labels.h"
#include "core/builder.h"
#include "core/checked.h"
#include "core/cursor.h"
#include "core/diag.h"
#include "core/dtype.h"
#include "core/format.h"
#include "core/names.h"
#include "core/source.h"

#define FP_MAGIC "FLASHPK" /* and a NUL: 8 bytes */
#define FP_TAIL 16u	   /* the footer's length and the magic */
#define FP_JSON_MAX (256u << 20)
#define FP_MAX_DIMS 64u

static int fp_probe(const struct tfs_source *src)
{
	/*
	 * the magic is at the end: of a remote object (ops) that costs a
	 * range request at every mount, so only a .flashpack name is looked
	 * at there
	 */
	if (src->ops && !tfs_source_name_ends(src, ".flashpack"))
		return 0;
	return src->size >= FP_TAIL &&
			       !memcmp(src->data + src->size - 8, FP_MAGIC, 8)
		       ? 100
		       : 0;
}

/*
 * flashpack's dtype_to_string: torch's names without "torch.", which are
 * numpy's and ml_dtypes' but for these
 */
static const struct tfs_dtype_label fp_torch_only[] = {
	{"complex32", TFS_DTYPE_COMPLEX32},
	{"float8_e8m0fnu", TFS_DTYPE_FLOAT8_E8M0},
};

static enum tfs_dtype torch_dtype(const char *s)
{
	const struct tfs_dtype_label *l = NULL;

	if (s) {
		l = tfs_numpy_dtype_label(s, strlen(s));
		if (!l)
			l = tfs_dtype_label_find(TFS_DTYPE_LABELS(fp_torch_only),
						 s, strlen(s));
	}
	return l ? l->dtype : TFS_DTYPE_INVALID;
}

/* one payload region of one dtype: v3's whole payload, a v4 macroblock */
struct fp_block {
	enum tfs_dtype dt;
	uint64_t off, len, elems;
	const char *codec; /* compressed: not read in place */
};

struct fp_ctx {
	const struct tfs_source *src;
	struct tfs_builder *b;
	struct tfs_diag *d;
	uint64_t json_at, payload; /* the footer's offset: the payload's end */
	struct fp_block *blk;
	size_t nblk;
};

static int bad(struct fp_ctx *c, const char *fmt, const char *what)
{
	return tfs_diag_at(c->d, -EBADMSG, c->json_at, fmt, what);
}

static bool u64_of(json_t *j, uint64_t *out)
{
	if (!json_is_integer(j) || json_integer_value(j) < 0)
		return false;
	*out = (uint64_t)json_integer_value(j);
	return true;
}

static int block(struct fp_ctx *c, json_t *m, struct fp_block *k)
{
	const char *dts = json_string_value(json_object_get(m, "dtype"));
	uint64_t need, end;

	k->dt = torch_dtype(dts);
	if (k->dt == TFS_DTYPE_INVALID)
		return tfs_diag_at(c->d, -ENOTSUP, c->json_at,
				   "macroblock: dtype '%s' is not one "
				   "flashpack writes",
				   dts ? dts : "(none)");
	if (!u64_of(json_object_get(m, "offset_bytes"), &k->off) ||
	    !u64_of(json_object_get(m, "length_bytes"), &k->len) ||
	    !u64_of(json_object_get(m, "length_elems"), &k->elems))
		return bad(c, "macroblock: %s are not non-negative integers",
			   "offset_bytes, length_bytes, length_elems");
	/* an fpz block: {"codec": "zstd-splitplane-v1", "frames": [...]} */
	if (json_object_get(m, "fpz")) {
		k->codec = json_string_value(
			json_object_get(json_object_get(m, "fpz"), "codec"));
		if (!k->codec)
			k->codec = "fpz";
	}
	if (!tfs_add_u64(k->off, k->len, &end) || end > c->payload)
		return bad(c, "macroblock: %s past the payload",
			   "its bytes end");
	if (!k->codec &&
	    (!tfs_mul_u64(k->elems, tfs_dtype_size(k->dt), &need) ||
	     need != k->len))
		return bad(c, "macroblock: %s",
			   "length_bytes is not length_elems x the dtype's "
			   "size");
	return 0;
}

static int record(struct fp_ctx *c, json_t *r, size_t i)
{
	const char *name = json_string_value(json_object_get(r, "name"));
	json_t *shape = json_object_get(r, "shape");
	uint64_t dims[FP_MAX_DIMS], off, len, bi = 0, numel = 1, end, bytes;
	const struct fp_block *k;
	struct tfs_tensor_spec sp;
	size_t n = json_array_size(shape), j;
	uint32_t h;

	if (!name || !json_is_array(shape) || n > FP_MAX_DIMS ||
	    !u64_of(json_object_get(r, "offset"), &off) ||
	    !u64_of(json_object_get(r, "length"), &len) ||
	    (json_object_get(r, "macroblock") &&
	     !u64_of(json_object_get(r, "macroblock"), &bi)))
		return tfs_diag_at(c->d, -EBADMSG, c->json_at,
				   "index[%zu]: not {name, shape, offset, "
				   "length[, macroblock]}",
				   i);
	for (j = 0; j < n; j++)
		if (!u64_of(json_array_get(shape, j), &dims[j]) ||
		    !tfs_mul_u64(numel, dims[j], &numel))
			return tfs_diag_at(c->d, -EBADMSG, c->json_at,
					   "tensor '%s': shape: not "
					   "non-negative integers",
					   name);
	if (bi >= c->nblk)
		return tfs_diag_at(c->d, -EBADMSG, c->json_at,
				   "tensor '%s': macroblock %llu of %zu", name,
				   (unsigned long long)bi, c->nblk);
	k = &c->blk[bi];
	if (numel != len || !tfs_add_u64(off, len, &end) || end > k->elems)
		return tfs_diag_at(c->d, -EBADMSG, c->json_at,
				   "tensor '%s': %llu elements at element "
				   "%llu (its shape has %llu, its block %llu)",
				   name, (unsigned long long)len,
				   (unsigned long long)off,
				   (unsigned long long)numel,
				   (unsigned long long)k->elems);
	bytes = len * tfs_dtype_size(k->dt); /* within the block's bytes */
	tfs_spec_tensor(&sp, name, strlen(name), k->dt, dims, (uint32_t)n,
			c->json_at);
	if (k->codec) {
		tfs_spec_size(&sp, bytes);
		tfs_spec_unreadable(&sp, "in a compressed (fpz) macroblock",
				    false);
	} else {
		tfs_spec_raw(&sp, k->off + off * tfs_dtype_size(k->dt), bytes);
	}
	return tfs_builder_add_tensor(c->b, &sp, &h, c->d);
}

static int fp_load(const struct tfs_source *src, struct tfs_builder *b,
		   struct tfs_diag *d)
{
	struct fp_ctx c = {.src = src, .b = b, .d = d};
	json_t *j = NULL, *idx, *mb, *x;
	json_error_t err;
	const char *fmt;
	uint64_t jlen;
	size_t i;
	int ret = 0;

	if (src->size < FP_TAIL ||
	    memcmp(src->data + src->size - 8, FP_MAGIC, 8))
		return tfs_diag_at(d, -EBADMSG,
				   src->size < 8 ? 0 : src->size - 8,
				   "magic: not FLASHPK at the end");
	jlen = tfs_load_le(src->data + src->size - FP_TAIL, 8);
	if (jlen > src->size - FP_TAIL || jlen > FP_JSON_MAX)
		return tfs_diag_at(d, jlen > FP_JSON_MAX ? -E2BIG : -EBADMSG,
				   src->size - FP_TAIL,
				   "footer length: %llu bytes (%llu before it, "
				   "at most 256 MiB read)",
				   (unsigned long long)jlen,
				   (unsigned long long)(src->size - FP_TAIL));
	c.json_at = c.payload = src->size - FP_TAIL - jlen;
	j = json_loadb((const char *)src->data + c.json_at, (size_t)jlen, 0,
		       &err);
	if (!j)
		return tfs_diag_at(d, -EBADMSG,
				   c.json_at + (uint64_t)err.position,
				   "footer: %s", err.text);
	fmt = json_string_value(json_object_get(j, "format"));
	idx = json_object_get(j, "index");
	mb = json_object_get(j, "macroblocks");
	if (!fmt ||
	    (strcmp(fmt, "flashpack_v3") && strcmp(fmt, "flashpack_v4"))) {
		ret = tfs_diag_at(d, -ENOTSUP, c.json_at,
				  "format: '%s' (flashpack_v3 and v4 are read)",
				  fmt ? fmt : "(none)");
		goto out;
	}
	if (!json_is_array(idx)) {
		ret = bad(&c, "footer: %s", "no array 'index'");
		goto out;
	}
	c.nblk = strcmp(fmt, "flashpack_v3") ? json_array_size(mb) : 1;
	c.blk = calloc(c.nblk ? c.nblk : 1, sizeof(*c.blk));
	if (!c.blk) {
		ret = tfs_diag_oom(d);
		goto out;
	}
	if (!strcmp(fmt, "flashpack_v3")) {
		c.blk[0].dt = torch_dtype(
			json_string_value(json_object_get(j, "target_dtype")));
		if (c.blk[0].dt == TFS_DTYPE_INVALID ||
		    !u64_of(json_object_get(j, "total_elems"),
			    &c.blk[0].elems) ||
		    !tfs_mul_u64(c.blk[0].elems, tfs_dtype_size(c.blk[0].dt),
				 &c.blk[0].len) ||
		    c.blk[0].len > c.payload)
			ret = bad(&c, "footer: %s",
				  "target_dtype and total_elems do not fit "
				  "the payload");
	} else if (!json_is_array(mb)) {
		ret = bad(&c, "footer: %s", "no array 'macroblocks'");
	}
	for (i = 0; !ret && strcmp(fmt, "flashpack_v3") && i < c.nblk; i++)
		ret = block(&c, json_array_get(mb, i), &c.blk[i]);
	json_array_foreach(idx, i, x)
	{
		if (ret)
			break;
		ret = record(&c, x, i);
	}
	/* the footer but its index (the tree says it) */
	if (!ret && (json_object_del(j, "index") ||
		     json_object_set(tfs_builder_metadata(b), "flashpack", j)))
		ret = tfs_diag_oom(d);
out:
	free(c.blk);
	json_decref(j);
	return ret;
}

TFS_FORMAT(flashpack, "flashpack (fal-ai, payload + JSON footer)",
	   .probe = fp_probe, .load = fp_load);
