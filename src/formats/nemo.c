// SPDX-License-Identifier: MIT
/*
 * Uncompressed tar archives of checkpoints, NeMo's .nemo among them;
 * docs/formats/nemo.md.  The archive is walked by parse/tar.h (checksums,
 * bounds, contained names).  Every regular member that is a container
 * tensorfs reads (a torch.save model_weights.ckpt, a safetensors file, a
 * nested .nemo) mounts as a directory named after the member, zero-copy:
 * its bytes are a slice of the archive (tfs_builder_load_slice), read by
 * its own reader.  Small text members (model_config.yaml, tokenizer
 * vocabularies) go into metadata.json under "text" (a top-level one is
 * also .tensorfs/<name>); every member is listed with its size and offset.
 * A gzip-compressed archive (older NeMo) is refused: gunzip it first.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "parse/tar.h"
#include "core/builder.h"
#include "core/diag.h"
#include "core/format.h"
#include "core/names.h"
#include "core/source.h"

#define TAR_TEXT_MAX (64u << 10)  /* bytes of one text member shown */
#define TAR_TEXT_TOTAL (1u << 20) /* bytes of text shown in all */

extern const struct tfs_format tfs_format_nemo;

static bool gzip_magic(const struct tfs_source *src)
{
	return src->size >= 10 && src->data[0] == 0x1f &&
	       src->data[1] == 0x8b && src->data[2] == 8;
}

static int tar_probe(const struct tfs_source *src)
{
	if (tfs_tar_magic(src->data, src->size))
		return 80;
	/* claimed to say why it is refused (no other reader is gzip) */
	return gzip_magic(src) ? 20 : 0;
}

static bool is_text(const uint8_t *p, uint64_t n)
{
	return n <= TAR_TEXT_MAX && !memchr(p, 0, (size_t)n) &&
	       tfs_utf8_valid(p, (size_t)n);
}

/* the reader of member @m, or NULL: probed on its bytes alone */
static const struct tfs_format *member_format(const struct tfs_source *src,
					      const struct tfs_tar_member *m)
{
	struct tfs_source s = {0};

	if (!m->size)
		return NULL;
	s.data = src->data + m->data_offset;
	s.size = m->size;
	s.fd = -1;
	s.base = src->base + m->data_offset;
	return tfs_format_detect(&s);
}

/* an inner reader's refusal, said of the member, at an offset in the tar */
static int inner_failed(struct tfs_diag *d, int ret,
			const struct tfs_tar_member *m)
{
	char msg[TFS_DIAG_MSG_MAX];
	const char *fmt = d->format;
	uint64_t at = m->data_offset + (d->has_offset ? d->offset : 0);

	if (ret == -ENOMEM)
		return ret;
	memcpy(msg, d->msg, sizeof(msg));
	msg[sizeof(msg) - 1] = 0;
	d->format = NULL;
	return tfs_diag_at(d, ret, at, "member '%s': %s%s%s", m->name,
			   fmt ? fmt : "", fmt ? ": " : "", msg);
}

struct tar_ctx {
	const struct tfs_source *src;
	struct tfs_builder *b;
	struct tfs_diag *d;
	json_t *members, *text, *seen;
	uint64_t text_total;
	unsigned mounted;
};

/* what member @m is: mounted, text, or only listed (*@as) */
static int member_add(struct tar_ctx *z, const struct tfs_tar_member *m,
		      const char *key, const uint8_t *p, const char **as)
{
	const struct tfs_format *fmt;
	int ret = 0;

	if (!tfs_tar_is_file(m) || !m->name_len) {
		*as = !tfs_tar_is_file(m) && m->type == '5' ? "directory"
		      : tfs_tar_is_file(m)		    ? "listed"
					   : "skipped (link or device)";
		return 0;
	}
	if (json_object_get(z->seen, key))
		return tfs_diag_at(z->d, -EBADMSG, m->header_offset,
				   "tar: member name '%s': a second regular "
				   "file of that name",
				   m->name);
	if (json_object_set_new(z->seen, key, json_true()))
		return tfs_diag_oom(z->d);
	fmt = member_format(z->src, m);
	if (fmt && fmt == &tfs_format_nemo && !tfs_tar_magic(p, m->size))
		fmt = NULL; /* a .tar.gz inside: listed */
	if (fmt) {
		/* said here, at the member: the builder's limit, its offset */
		if (tfs_builder_slice_depth(z->b) >= TFS_MAX_SLICE_DEPTH)
			return tfs_diag_at(z->d, -E2BIG, m->header_offset,
					   "tar: member '%s': archives nested "
					   "deeper than %u",
					   m->name, TFS_MAX_SLICE_DEPTH);
		ret = tfs_builder_load_slice(z->b, m->data_offset, m->size,
					     m->name, m->name, fmt, z->d);
		if (ret)
			return inner_failed(z->d, ret, m);
		*as = tfs_format_shown(fmt);
		z->mounted++;
	} else if (is_text(p, m->size) &&
		   z->text_total + m->size <= TAR_TEXT_TOTAL) {
		z->text_total += m->size;
		*as = "text";
		if (json_object_set_new(
			    z->text, key,
			    json_stringn((const char *)p, (size_t)m->size)))
			return tfs_diag_oom(z->d);
		if (!strchr(key, '/') && key[0] != '.') {
			ret = tfs_builder_add_meta_file(z->b, key, p,
							(size_t)m->size);
			if (ret == -ENOMEM)
				return tfs_diag_oom(z->d);
			ret = 0; /* a name the builder has: metadata only */
		}
	}
	return ret;
}

static int member(struct tar_ctx *z, const struct tfs_tar_member *m)
{
	const char *as = "listed";
	const uint8_t *p = z->src->data + m->data_offset;
	char *esc = NULL;
	json_t *j;
	int ret = 0;

	/* JSON takes UTF-8: another name is written escaped (docs/tree.md) */
	if (!tfs_utf8_valid((const unsigned char *)m->name, m->name_len)) {
		esc = tfs_name_escape(m->name, m->name_len,
				      3 * m->name_len + 16);
		if (!esc)
			return tfs_diag_oom(z->d);
	}
	ret = member_add(z, m, esc ? esc : m->name, p, &as);
	if (!ret) {
		j = json_pack("{s:s,s:I,s:I,s:s}", "name", esc ? esc : m->name,
			      "size", (json_int_t)m->size, "offset",
			      (json_int_t)m->data_offset, "as", as);
		if (!j || json_array_append_new(z->members, j))
			ret = tfs_diag_oom(z->d);
	}
	free(esc);
	return ret;
}

static int tar_load(const struct tfs_source *src, struct tfs_builder *b,
		    struct tfs_diag *d)
{
	struct tar_ctx z = {.src = src, .b = b, .d = d};
	struct tfs_tar_member *m = NULL;
	struct tfs_tar_iter it;
	json_t *meta = tfs_builder_metadata(b), *tar;
	char sum[128];
	int ret;

	if (gzip_magic(src))
		return tfs_diag_at(d, -ENOTSUP, 0,
				   "gzip: a compressed archive (an older "
				   ".nemo?): gunzip it first (tensorfs "
				   "mounts uncompressed tar, zero-copy)");
	z.members = json_array();
	z.text = json_object();
	z.seen = json_object();
	m = malloc(sizeof(*m));
	if (!z.members || !z.text || !z.seen || !m) {
		ret = tfs_diag_oom(d);
		goto out;
	}
	tfs_tar_iter_init(&it);
	while ((ret = tfs_tar_next(src->data, src->size, &it, m, d)) == 1) {
		ret = member(&z, m);
		if (ret)
			goto out;
	}
	if (ret)
		goto out;
	snprintf(sum, sizeof(sum),
		 "tar of %zu members: %u mounted as directories, %zu shown "
		 "as text",
		 json_array_size(z.members), z.mounted,
		 json_object_size(z.text));
	tar = json_pack("{s:O,s:I}", "members", z.members, "count",
			(json_int_t)json_array_size(z.members));
	if (!tar || json_object_set_new(meta, "tar", tar) ||
	    (json_object_size(z.text) &&
	     json_object_set(meta, "text", z.text)) ||
	    tfs_builder_set_xattr_str(b, TFS_BUILDER_ROOT, "summary", sum))
		ret = tfs_diag_oom(d);
out:
	free(m);
	json_decref(z.members);
	json_decref(z.text);
	json_decref(z.seen);
	return ret;
}

TFS_FORMAT(nemo, "NeMo .nemo or tar archive of checkpoints (uncompressed)",
	   .probe = tar_probe, .load = tar_load);
