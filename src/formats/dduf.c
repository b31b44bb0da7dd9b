// SPDX-License-Identifier: MIT
/*
 * DDUF, Hugging Face's "DDUF's Diffusion Unified Format"
 * (docs/formats/dduf.md): a zip, every entry stored, of a diffusers
 * pipeline folder: model_index.json at the top, one folder per component
 * (vae/, text_encoder/, ...) with its config and weights, at most one
 * level deep.  The rules are huggingface_hub's read_dduf_file
 * (serialization/_dduf.py).  Each `.safetensors` entry (and `.gguf`, which
 * some versions allow) is read by its reader in place as a slice of the
 * archive, zero-copy, under the directory of its component (the entry's
 * folder; an entry at the top under its own name); model_index.json and
 * the JSON configs are parsed into metadata.json.
 *
 * Detection: a zip with an entry model_index.json.
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

#define DDUF_JSON_MAX (1u << 20)    /* bytes of one JSON entry parsed */
#define DDUF_JSON_TOTAL (16u << 20) /* bytes of JSON parsed in all */
#define DDUF_INDEX "model_index.json"

extern const struct tfs_format tfs_format_safetensors;
extern const struct tfs_format tfs_format_gguf;

static bool is_index(const struct tfs_zip_entry *e, const void *arg)
{
	(void)arg;
	return tfs_zip_name_is(e, DDUF_INDEX);
}

static int dduf_probe(const struct tfs_source *src)
{
	return tfs_zip_source_count(src, is_index, NULL) == 1 ? 90 : 0;
}

/* huggingface_hub's DDUF_ALLOWED_ENTRIES (and .gguf, in some versions) */
static bool allowed_suffix(const char *name)
{
	static const char *const ok[] = {".json", ".model", ".safetensors",
					 ".txt", ".gguf"};
	const char *dot = strrchr(name, '.');
	size_t i;

	for (i = 0; dot && i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!strcmp(dot, ok[i]))
			return true;
	return false;
}

static bool ends(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

struct dduf_ctx {
	const struct tfs_source *src;
	struct tfs_builder *b;
	struct tfs_diag *d;
	json_t *members, *configs, *folders, *index;
	uint64_t json_total;
};

/* the entry's name checked as read_dduf_file checks it; *@slash: its '/' */
static int check_name(struct dduf_ctx *c, const struct tfs_zip_entry *e,
		      const char *name, const char **slash)
{
	const char *s;

	if (e->method != TFS_ZIP_STORED)
		return tfs_diag_at(c->d, -EBADMSG, e->local_offset,
				   "entry '%s': compression method %u "
				   "(DDUF stores every entry)",
				   name, e->method);
	if (!allowed_suffix(name))
		return tfs_diag_at(c->d, -EBADMSG, e->central_offset + 46,
				   "entry '%s': file type not allowed "
				   "(.json, .model, .safetensors, .txt, .gguf)",
				   name);
	if (strchr(name, '\\'))
		return tfs_diag_at(c->d, -EBADMSG, e->central_offset + 46,
				   "entry '%s': a '\\' (names use '/')", name);
	s = strchr(name, '/');
	if (s && (s == name || strchr(s + 1, '/')))
		return tfs_diag_at(c->d, -EBADMSG, e->central_offset + 46,
				   "entry '%s': not one folder deep at "
				   "most",
				   name);
	*slash = s;
	return 0;
}

/* a JSON entry parsed (or kept as text), within the bounds */
static json_t *entry_json(struct dduf_ctx *c, const struct tfs_zip_entry *e)
{
	const char *p = (const char *)c->src->data + e->data_offset;
	json_t *j;

	if (e->comp_size > DDUF_JSON_MAX ||
	    c->json_total + e->comp_size > DDUF_JSON_TOTAL)
		return json_pack("{s:s,s:I}", "not_read", "too large", "bytes",
				 (json_int_t)e->comp_size);
	c->json_total += e->comp_size;
	j = json_loadb(p, (size_t)e->comp_size, 0, NULL);
	return j ? j : json_stringn_nocheck(p, (size_t)e->comp_size);
}

static int entry(void *ctx, const struct tfs_zip_entry *e, const char *name)
{
	struct dduf_ctx *c = ctx;
	const struct tfs_format *fmt = NULL;
	const char *slash = NULL, *as = "listed";
	char *dir = NULL;
	int ret;

	ret = check_name(c, e, name, &slash);
	if (ret)
		return ret;
	if (ends(name, ".safetensors"))
		fmt = &tfs_format_safetensors;
	else if (ends(name, ".gguf"))
		fmt = &tfs_format_gguf;
	if (slash) {
		dir = strndup(name, (size_t)(slash - name));
		if (!dir || json_object_set_new(c->folders, dir, json_true())) {
			free(dir);
			return tfs_diag_oom(c->d);
		}
	}
	if (fmt) {
		ret = tfs_zip_member_load(c->b, e, name, dir ? dir : name, fmt,
					  c->d);
		as = tfs_format_shown(fmt);
	} else if (ends(name, ".json")) {
		json_t *j = entry_json(c, e);

		as = "json";
		if (!strcmp(name, DDUF_INDEX))
			c->index = json_incref(j);
		if (!j || json_object_set_new(c->configs, name, j))
			ret = tfs_diag_oom(c->d);
	}
	free(dir);
	if (!ret && tfs_zip_member_list(c->members, e, name, as))
		ret = tfs_diag_oom(c->d);
	return ret;
}

/* the structure read_dduf_file checks after reading the entries */
static int check_structure(struct dduf_ctx *c, const struct tfs_zip *z)
{
	static const char *const need[] = {
		"config.json", "tokenizer_config.json",
		"preprocessor_config.json", "scheduler_config.json"};
	const char *folder;
	json_t *v;
	char key[512];
	size_t i;

	if (!c->index)
		return tfs_diag_at(c->d, -EBADMSG, z->cd_offset,
				   "no entry " DDUF_INDEX);
	if (!json_is_object(c->index))
		return tfs_diag_at(c->d, -EBADMSG, z->cd_offset,
				   DDUF_INDEX ": not a JSON object");
	json_object_foreach(c->folders, folder, v)
	{
		if (!json_object_get(c->index, folder))
			return tfs_diag_at(c->d, -EBADMSG, z->cd_offset,
					   "folder '%s' is not a "
					   "component of " DDUF_INDEX,
					   folder);
		for (i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
			snprintf(key, sizeof(key), "%s/%s", folder, need[i]);
			if (json_object_get(c->configs, key))
				break;
		}
		if (i == sizeof(need) / sizeof(need[0]))
			return tfs_diag_at(
				c->d, -EBADMSG, z->cd_offset,
				"folder '%s' has no config "
				"(config.json, tokenizer_config.json, "
				"preprocessor_config.json or "
				"scheduler_config.json)",
				folder);
	}
	return 0;
}

static int dduf_load(const struct tfs_source *src, struct tfs_builder *b,
		     struct tfs_diag *d)
{
	struct dduf_ctx c = {.src = src, .b = b, .d = d};
	struct tfs_zip z;
	json_t *dduf = NULL;
	int ret;

	c.members = json_array();
	c.configs = json_object();
	c.folders = json_object();
	if (!c.members || !c.configs || !c.folders) {
		ret = tfs_diag_oom(d);
		goto out;
	}
	ret = tfs_zip_open(&z, src->data, src->size, d);
	if (ret)
		goto out;
	ret = tfs_zip_each_member(&z, entry, &c, d);
	if (ret)
		goto out;
	ret = check_structure(&c, &z);
	if (ret)
		goto out;
	dduf = json_pack("{s:O,s:O,s:O}", "model_index", c.index, "json",
			 c.configs, "members", c.members);
	if (!dduf || json_object_set(tfs_builder_metadata(b), "dduf", dduf))
		ret = tfs_diag_oom(d);
out:
	json_decref(dduf);
	json_decref(c.index);
	json_decref(c.members);
	json_decref(c.configs);
	json_decref(c.folders);
	return ret;
}

TFS_FORMAT(dduf, "DDUF (zip of a diffusers pipeline's safetensors)",
	   .probe = dduf_probe, .load = dduf_load);
