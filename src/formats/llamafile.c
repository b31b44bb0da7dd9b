// SPDX-License-Identifier: MIT
/*
 * llamafile (docs/formats/llamafile.md): an executable (an Actually
 * Portable Executable, or any program) with a zip appended whose offsets
 * are absolute in the file, the GGUF weights stored in it uncompressed and
 * page-aligned (zipalign) so that llama.cpp maps them in place.  parse/zip.h
 * finds the end of the central directory at the end of the file and walks
 * it; each stored `.gguf` member is read by the GGUF reader as a slice of
 * the file (tfs_builder_load_slice), zero-copy: one at the root (its names
 * are the GGUF's), several each under a directory named after the member
 * (a LLaVA llamafile holds the model and its mmproj).  The `.args` member
 * (default arguments, one a line) is shown in metadata.json, every member
 * listed.  A compressed `.gguf` member is refused, as llamafile does.
 *
 * Detection: a file starting as a program (APE, ELF, PE, a script) or a
 * zip, with a zip at its end holding a `.gguf` member (a plain zip of
 * GGUFs is claimed too, with less confidence).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "formats/common/zip_members.h"
#include "parse/zip.h"
#include "core/builder.h"
#include "core/diag.h"
#include "core/format.h"
#include "core/source.h"

#define ARGS_MAX (64u << 10) /* bytes of .args shown */

extern const struct tfs_format tfs_format_gguf;

static bool is_gguf(const struct tfs_zip_entry *e)
{
	return tfs_zip_name_ends(e, ".gguf") && e->name_len > 5 &&
	       e->name[e->name_len - 6] != '/';
}

static bool gguf_member(const struct tfs_zip_entry *e, const void *arg)
{
	(void)arg;
	return is_gguf(e);
}

static int64_t count_gguf(const struct tfs_zip *z, struct tfs_diag *d)
{
	return tfs_zip_member_count(z, gguf_member, NULL, d);
}

/* what precedes the zip: which kind of program */
static const char *program_kind(const uint8_t *p, uint64_t n)
{
	if (n >= 6 && !memcmp(p, "MZqFpD", 6))
		return "ape";
	if (n >= 4 && !memcmp(p, "\177ELF", 4))
		return "elf";
	if (n >= 2 && !memcmp(p, "MZ", 2))
		return "pe";
	if (n >= 2 && !memcmp(p, "#!", 2))
		return "script";
	return n ? "other" : "none";
}

static int llamafile_probe(const struct tfs_source *src)
{
	struct tfs_zip z;

	/* a program or a zip at byte 0: others are not read at their end
	 * (a remote file's tail would be fetched for nothing) */
	if (src->size < 22 ||
	    (!strcmp(program_kind(src->data, src->size), "other") &&
	     !tfs_zip_magic(src->data, src->size)) ||
	    tfs_zip_open(&z, src->data, src->size, NULL) ||
	    count_gguf(&z, NULL) <= 0)
		return 0;
	return tfs_zip_magic(src->data, src->size) ? 60 : 90;
}

struct llamafile_ctx {
	const struct tfs_source *src;
	struct tfs_builder *b;
	struct tfs_diag *d;
	json_t *members, *meta;
	bool one;	/* a single GGUF: at the root */
	uint64_t first; /* the lowest local header: where the zip starts */
};

static int member(void *ctx, const struct tfs_zip_entry *e, const char *name)
{
	struct llamafile_ctx *c = ctx;
	const char *as = "listed";
	int ret = 0;

	if (e->local_offset < c->first)
		c->first = e->local_offset;
	if (is_gguf(e)) {
		ret = tfs_zip_member_load(c->b, e, name, c->one ? "" : name,
					  &tfs_format_gguf, c->d);
		as = "gguf";
	} else if (tfs_zip_name_is(e, ".args") && e->method == TFS_ZIP_STORED &&
		   e->comp_size <= ARGS_MAX) {
		as = "text";
		if (json_object_set_new(
			    c->meta, "args",
			    json_stringn((const char *)c->src->data +
						 e->data_offset,
					 (size_t)e->comp_size)))
			ret = tfs_diag_oom(c->d);
	}
	if (!ret && tfs_zip_member_list(c->members, e, name, as))
		ret = tfs_diag_oom(c->d);
	return ret;
}

static int llamafile_load(const struct tfs_source *src, struct tfs_builder *b,
			  struct tfs_diag *d)
{
	struct llamafile_ctx c = {.src = src, .b = b, .d = d,
				  .first = UINT64_MAX};
	struct tfs_zip z;
	int64_t n;
	int ret;

	c.members = json_array();
	c.meta = json_object();
	if (!c.members || !c.meta) {
		ret = tfs_diag_oom(d);
		goto out;
	}
	ret = tfs_zip_open(&z, src->data, src->size, d);
	if (ret)
		goto out;
	n = count_gguf(&z, d);
	if (n < 0) {
		ret = (int)n;
		goto out;
	}
	if (!n) {
		ret = tfs_diag_at(d, -EBADMSG, z.cd_offset,
				  "zip: no member ending .gguf");
		goto out;
	}
	c.one = n == 1;
	ret = tfs_zip_each_member(&z, member, &c, d);
	if (ret)
		goto out;
	if (c.first > z.cd_offset)
		c.first = z.cd_offset;
	if (json_object_set_new(c.meta, "program",
				json_string(program_kind(src->data, c.first))) ||
	    json_object_set_new(c.meta, "program_bytes",
				json_integer((json_int_t)c.first)) ||
	    json_object_set_new(c.meta, "gguf_members", json_integer(n)) ||
	    json_object_set(c.meta, "members", c.members) ||
	    json_object_set(tfs_builder_metadata(b), "llamafile", c.meta))
		ret = tfs_diag_oom(d);
out:
	json_decref(c.members);
	json_decref(c.meta);
	return ret;
}

TFS_FORMAT(llamafile, "llamafile (GGUF stored in the zip of an executable)",
	   .probe = llamafile_probe, .load = llamafile_load);
