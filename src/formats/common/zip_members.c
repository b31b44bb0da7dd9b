// SPDX-License-Identifier: MIT
/* Members of a zip read in place by their own reader (zip_members.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "formats/common/zip_members.h"
#include "parse/zip.h"
#include "core/builder.h"
#include "core/diag.h"
#include "core/format.h"
#include "core/names.h"
#include "core/source.h"

char *tfs_zip_member_name(const struct tfs_zip_entry *e)
{
	char *s;

	if (!tfs_utf8_valid((const unsigned char *)e->name, e->name_len))
		return tfs_name_escape(e->name, e->name_len,
				       3 * (size_t)e->name_len + 16);
	s = malloc((size_t)e->name_len + 1);
	if (s) {
		memcpy(s, e->name, e->name_len);
		s[e->name_len] = 0;
	}
	return s;
}

struct member_count {
	bool (*match)(const struct tfs_zip_entry *e, const void *arg);
	const void *arg;
	int64_t n;
};

static void count_entry(void *ctx, const struct tfs_zip_entry *e)
{
	struct member_count *c = ctx;

	c->n += c->match(e, c->arg);
}

int64_t tfs_zip_member_count(const struct tfs_zip *z,
			     bool (*match)(const struct tfs_zip_entry *e,
					   const void *arg),
			     const void *arg, struct tfs_diag *d)
{
	struct member_count c = {.match = match, .arg = arg};
	int ret = tfs_zip_walk(z, count_entry, &c, d);

	return ret ? ret : c.n;
}

int64_t tfs_zip_source_count(const struct tfs_source *src,
			     bool (*match)(const struct tfs_zip_entry *e,
					   const void *arg),
			     const void *arg)
{
	struct tfs_zip z;
	int64_t n;

	if (!tfs_zip_magic(src->data, src->size) ||
	    tfs_zip_open(&z, src->data, src->size, NULL))
		return 0;
	n = tfs_zip_member_count(&z, match, arg, NULL);
	return n > 0 ? n : 0;
}

int tfs_zip_each_member(const struct tfs_zip *z,
			int (*fn)(void *ctx, const struct tfs_zip_entry *e,
				  const char *name),
			void *ctx, struct tfs_diag *d)
{
	struct tfs_zip_iter it;
	struct tfs_zip_entry e;
	char *name;
	int ret;

	tfs_zip_iter_init(&it);
	while ((ret = tfs_zip_next(z, &it, &e, d)) == 1) {
		name = tfs_zip_member_name(&e);
		ret = name ? fn(ctx, &e, name) : tfs_diag_oom(d);
		free(name);
		if (ret)
			return ret;
	}
	return ret;
}

/* an inner reader's refusal, said of the member, at an archive offset */
static int inner_failed(struct tfs_diag *d, int ret, const char *name,
			uint64_t data_offset, bool nested)
{
	char msg[TFS_DIAG_MSG_MAX];
	const char *fmt = d->format;
	uint64_t at = d->has_offset ? d->offset : 0;

	if (ret == -ENOMEM)
		return ret;
	/* at the root, the slice's offsets are already the archive's */
	if (nested && d->has_offset)
		at += data_offset;
	else if (!d->has_offset)
		at = data_offset;
	memcpy(msg, d->msg, sizeof(msg));
	msg[sizeof(msg) - 1] = 0;
	d->format = NULL;
	d->msg[0] = 0; /* the first message stands: this one replaces it */
	return tfs_diag_at(d, ret, at, "member '%s': %s%s%s", name,
			   fmt ? fmt : "", fmt ? ": " : "", msg);
}

int tfs_zip_member_load(struct tfs_builder *b, const struct tfs_zip_entry *e,
			const char *name, const char *dir,
			const struct tfs_format *fmt, struct tfs_diag *d)
{
	int ret;

	if (e->method != TFS_ZIP_STORED)
		return tfs_diag_at(d, -ENOTSUP, e->local_offset,
				   "zip: member '%s': compression method %u "
				   "(only stored members are read in place)",
				   name, e->method);
	if (e->comp_size != e->uncomp_size)
		return tfs_diag_at(d, -EBADMSG, e->central_offset + 20,
				   "zip: member '%s': stored with %llu bytes "
				   "but %llu uncompressed",
				   name, (unsigned long long)e->comp_size,
				   (unsigned long long)e->uncomp_size);
	if (tfs_builder_slice_depth(b) >= TFS_MAX_SLICE_DEPTH)
		return tfs_diag_at(d, -E2BIG, e->local_offset,
				   "zip: member '%s': archives nested deeper "
				   "than %u",
				   name, TFS_MAX_SLICE_DEPTH);
	ret = tfs_builder_load_slice(b, e->data_offset, e->comp_size, name, dir,
				     fmt, d);
	if (ret)
		return inner_failed(d, ret, name, e->data_offset, dir && *dir);
	return 0;
}

int tfs_zip_member_list(json_t *members, const struct tfs_zip_entry *e,
			const char *name, const char *as)
{
	json_t *j = json_pack("{s:s,s:I,s:I,s:i,s:s}", "name", name, "size",
			      (json_int_t)e->uncomp_size, "offset",
			      (json_int_t)e->data_offset, "method",
			      (int)e->method, "as", as);

	if (!j || json_array_append_new(members, j))
		return -ENOMEM;
	return 0;
}
