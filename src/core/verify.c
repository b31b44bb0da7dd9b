// SPDX-License-Identifier: MIT
/*
 * `tensorfs verify` for one tensor (tfs_image_check_tensor, image.h): the
 * stored range is still in the file, every known digest matches, and a
 * zstd component decodes to exactly its size.  Works slice by slice, so a
 * huge tensor needs little memory and can report progress.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/digest.h"
#include "core/image.h"
#include "core/source.h"
#include "codec/codec.h"
#include "image_i.h"

#define CHECK_SLICE (16u << 20) /* hash/decode this much per step */
#define CHECK_SCRATCH (1u << 20)

struct check_ctx {
	struct tfs_image *img;
	const struct tfs_tensor *x;
	struct tfs_check_result *r;
	struct tfs_digest_ctx *dg;
	uint64_t base;	 /* what the digest covers: the stored extent, or */
	uint64_t hashed; /* the tensor's own digest extent */
	void (*progress)(void *arg, uint64_t done);
	void *arg;
};

static int hash_piece(void *arg, const uint8_t *p, size_t n)
{
	struct check_ctx *c = arg;

	if (c->dg && !c->x->digest_decoded && tfs_digest_update(c->dg, p, n))
		return -ENOMEM;
	return 0;
}

/* hash stored bytes up to @upto (relative), with a live check per slice */
static int check_hash_to(struct check_ctx *c, uint64_t upto)
{
	const struct tfs_source *src = tfs_image_source(c->img, c->x);
	uint64_t n;
	int ret;

	while (c->hashed < upto) {
		n = upto - c->hashed;
		if (n > CHECK_SLICE)
			n = CHECK_SLICE;
		if (!c->x->has_digest_extent) {
			/* the stored bytes, wherever their pieces lie */
			ret = tfs_stored_each(c->img, c->x, c->hashed, n,
					      hash_piece, c);
		} else if (!tfs_source_live_range_ok(src, c->base + c->hashed,
						     n)) {
			ret = -EIO;
		} else {
			ret = hash_piece(c, src->data + c->base + c->hashed,
					 (size_t)n);
		}
		if (ret)
			return ret;
		c->hashed += n;
		if (c->progress)
			c->progress(c->arg, c->hashed);
	}
	return 0;
}

static int check_decode(struct check_ctx *c)
{
	const struct tfs_tensor *x = c->x;
	struct tfs_stream *z;
	uint8_t *scratch = malloc(CHECK_SCRATCH);
	uint64_t total = 0;
	size_t pos;
	int ret;

	if (!scratch)
		return -ENOMEM;
	ret = tfs_stream_new(&z, x->encoding,
			     tfs_image_source(c->img, x)->data + x->offset,
			     (size_t)x->stored_length, false, &x->codec);
	if (ret) {
		free(scratch);
		return ret;
	}
	while (!ret && !tfs_stream_finished(z)) {
		if (!tfs_source_live_range_ok(tfs_image_source(c->img, c->x),
					      x->offset, x->stored_length)) {
			ret = -EIO;
			break;
		}
		pos = 0;
		ret = tfs_stream_decode(z, scratch, CHECK_SCRATCH, &pos,
					CHECK_SCRATCH);
		if (ret) {
			snprintf(c->r->msg, sizeof(c->r->msg), "%s",
				 tfs_stream_message(z));
			break;
		}
		if (c->dg && x->digest_decoded &&
		    tfs_digest_update(c->dg, scratch, pos)) {
			ret = -ENOMEM;
			break;
		}
		total += pos;
		if (total > x->size) {
			snprintf(c->r->msg, sizeof(c->r->msg),
				 "%s: the data decodes to more than the "
				 "expected %llu bytes",
				 tfs_encoding_name(x->encoding),
				 (unsigned long long)x->size);
			ret = -EBADMSG;
			break;
		}
		ret = check_hash_to(c, tfs_stream_consumed(z));
	}
	if (!ret && total != x->size) {
		snprintf(c->r->msg, sizeof(c->r->msg),
			 "%s: the data decodes to %llu bytes, fewer than the "
			 "expected %llu",
			 tfs_encoding_name(x->encoding),
			 (unsigned long long)total,
			 (unsigned long long)x->size);
		ret = -EBADMSG;
	}
	tfs_stream_free(z);
	free(scratch);
	return ret;
}

int tfs_image_check_tensor(struct tfs_image *img, uint32_t tensor,
			   struct tfs_check_result *r,
			   void (*progress)(void *arg, uint64_t done),
			   void *arg)
{
	struct check_ctx c = {
		.img = img, .r = r, .progress = progress, .arg = arg};
	const struct tensor_state *ts;
	struct tfs_digest got;
	char want_s[TFS_DIGEST_TEXT_MAX], got_s[TFS_DIGEST_TEXT_MAX];
	int ret = 0, dret;

	memset(r, 0, sizeof(*r));
	if (tensor >= img->tree->nrecords)
		return r->err = -ENOENT;
	c.x = &img->tree->tensors[tensor];
	c.base = c.x->has_digest_extent ? c.x->digest_offset : c.x->offset;
	ts = state_of(img->rs, tensor);
	r->digest = ts ? ts->digest.alg : TFS_DIGEST_NONE;
	if (c.x->unreadable) {
		snprintf(r->msg, sizeof(r->msg), "%s", c.x->unreadable);
		r->skipped = !c.x->unreadable_is_fault;
		return r->err = r->skipped ? 0 : -EBADMSG;
	}
	if (!tfs_stored_live(img, c.x)) {
		snprintf(r->msg, sizeof(r->msg),
			 "the stored bytes [%llu, +%llu) are no longer in the "
			 "file",
			 (unsigned long long)c.x->offset,
			 (unsigned long long)c.x->stored_length);
		return r->err = -EIO;
	}
	if (digest_known(ts) && tfs_digest_begin(&c.dg, ts->digest.alg))
		return r->err = -ENOMEM;
	if (c.x->encoding != TFS_ENCODING_RAW)
		ret = check_decode(&c);
	/* the digest covers all its bytes, even after a decode error */
	dret = check_hash_to(&c, c.x->has_digest_extent ? c.x->digest_length
							: c.x->stored_length);
	if (dret == -EIO || (!ret && dret))
		ret = dret;
	if (ret == -EIO)
		snprintf(r->msg, sizeof(r->msg),
			 "the stored bytes are no longer in the file");
	if (c.dg && ret != -EIO) {
		dret = tfs_digest_final(c.dg, &got);
		c.dg = NULL;
		if (dret)
			return r->err = dret;
		r->digest_checked = true;
		if (got.len != ts->digest.len ||
		    memcmp(got.value, ts->digest.value, got.len)) {
			tfs_digest_format(&ts->digest, want_s, sizeof(want_s));
			tfs_digest_format(&got, got_s, sizeof(got_s));
			snprintf(r->msg, sizeof(r->msg),
				 "digest mismatch: the container says %s, the "
				 "%s bytes have %s",
				 want_s,
				 c.x->digest_decoded ? "decoded" : "stored",
				 got_s);
			ret = -EBADMSG;
		}
	}
	tfs_digest_abort(c.dg);
	return r->err = ret;
}
