// SPDX-License-Identifier: MIT
/*
 * TorchScript archives (torch.jit.save); docs/formats/torchscript.md.
 *
 * The same zip as torch.save, everything under one folder P/: P/data.pkl
 * the module tree, P/data/<key> its storages, P/constants.pkl a tuple of
 * constants with storages in P/constants/<key>, P/code/ the TorchScript
 * source (never read: nothing from the file is run or compiled),
 * P/version.  Detected by the members: data.pkl with constants.pkl or
 * code/ beside it (data.pkl alone is torch.save's, pytorch.c).
 *
 * A module is NEWOBJ of a __torch__ class with BUILD giving it a dict of
 * every attribute (parameters, buffers, submodules, plain values): the
 * restricted pickle reader (parse/pickle.h) makes it an inert object and
 * common/torch.c walks its dict, so names are module paths (conv1.weight)
 * and everything else is a metadata leaf.  Constants are CONSTANTS.c<i>, as
 * the code names them.  The allow list is torch.save's plus __torch__.*
 * classes and the torch.jit._pickle helpers that only wrap a value.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/torch.h"
#include "parse/pickle.h"
#include "parse/zip.h"
#include "core/builder.h"
#include "core/diag.h"
#include "core/format.h"
#include "core/source.h"

#define TS_PROBE_ENTRIES 4096
#define TS_MAX_VERSION 16 /* bytes of P/version */

static const char *const ts_jit[] = {
	"build_intlist",    "build_doublelist", "build_boollist",
	"build_tensorlist", "restore_type_tag",
};

static bool ts_allow(void *arg, const char *m, size_t ml, const char *n,
		     size_t nl)
{
	size_t i;

	if (ml >= 9 && !memcmp(m, "__torch__", 9) && (ml == 9 || m[9] == '.'))
		return true;
	if (ml == 17 && !memcmp(m, "torch.jit._pickle", 17)) {
		for (i = 0; i < sizeof(ts_jit) / sizeof(ts_jit[0]); i++)
			if (strlen(ts_jit[i]) == nl &&
			    !memcmp(ts_jit[i], n, nl))
				return true;
		return false;
	}
	if (ml == 5 && !memcmp(m, "torch", 5) && nl == 6 &&
	    !memcmp(n, "device", 6))
		return true;
	return tfs_torch_allow(arg, m, ml, n, nl);
}

static const struct tfs_pkl_opts ts_opts = {.allow = ts_allow};

struct ts_members {
	struct tfs_zip_entry data, constants, version;
	size_t plen;
	bool has_data, has_constants, has_version, has_code;
};

/* P/<rest> with P the folder of data.pkl (@plen bytes; 0: not known yet) */
static bool member_is(const struct tfs_zip_entry *e, size_t plen,
		      const char *rest)
{
	size_t rl = strlen(rest);

	return e->name_len == plen + rl && !memcmp(e->name + plen, rest, rl);
}

/*
 * Find P/data.pkl, P/constants.pkl, P/version and any P/code/ record.
 * @d NULL: a probe (at most @max entries, no diagnostics).
 */
static int ts_find(const struct tfs_zip *zip, struct ts_members *m,
		   uint64_t max, struct tfs_diag *d)
{
	struct tfs_zip_iter it;
	struct tfs_zip_entry e;
	const char *slash;
	int ret;

	memset(m, 0, sizeof(*m));
	tfs_zip_iter_init(&it);
	while ((ret = tfs_zip_next(zip, &it, &e, d)) == 1 && it.index <= max) {
		slash = memchr(e.name, '/', e.name_len);
		if (!slash || slash == e.name)
			continue;
		if (!m->has_data &&
		    member_is(&e, slash - e.name, "/data.pkl")) {
			m->data = e;
			m->has_data = true;
			m->plen = (size_t)(slash - e.name);
		} else if (m->has_data && member_is(&e, m->plen, "/data.pkl") &&
			   !memcmp(e.name, m->data.name, m->plen)) {
			if (d)
				return tfs_diag_at(d, -EBADMSG,
						   e.central_offset,
						   "zip: a second data.pkl");
		}
	}
	if (ret < 0)
		return ret;
	if (!m->has_data)
		return -ENOENT;
	tfs_zip_iter_init(&it);
	while ((ret = tfs_zip_next(zip, &it, &e, d)) == 1 && it.index <= max) {
		if (e.name_len <= m->plen ||
		    memcmp(e.name, m->data.name, m->plen))
			continue;
		if (member_is(&e, m->plen, "/constants.pkl")) {
			m->constants = e;
			m->has_constants = true;
		} else if (member_is(&e, m->plen, "/version")) {
			m->version = e;
			m->has_version = true;
		} else if (e.name_len > m->plen + 6 &&
			   !memcmp(e.name + m->plen, "/code/", 6)) {
			m->has_code = true;
		}
	}
	if (ret < 0)
		return ret;
	return m->has_constants || m->has_code ? 0 : -ENOENT;
}

static int ts_probe(const struct tfs_source *src)
{
	struct tfs_zip zip;
	struct ts_members m;

	if (!tfs_zip_magic(src->data, src->size) ||
	    tfs_zip_open(&zip, src->data, src->size, NULL))
		return 0;
	return ts_find(&zip, &m, TS_PROBE_ENTRIES, NULL) == 0 ? 95 : 0;
}

/* the stored pickle @e (@what), its persistent ids resolved: its root */
static int stored_pickle(struct tfs_torch *z, const struct tfs_zip_entry *e,
			 const char *what, const struct tfs_pkl_value **root)
{
	int ret;

	if (e->method != TFS_ZIP_STORED)
		return tfs_diag_at(z->d, -ENOTSUP, e->local_offset,
				   "zip: %s is compressed (method %u)", what,
				   e->method);
	ret = tfs_torch_pickle(z, e->data_offset, e->comp_size, &ts_opts);
	if (!ret)
		ret = tfs_torch_zip_ids(z);
	if (!ret)
		*root = tfs_pkl_at(&z->pk, z->pk.root);
	return ret;
}

/* P/version: decimal text, kept as a number */
static int ts_version(struct tfs_torch *z, const struct tfs_zip_entry *e)
{
	const char *p = (const char *)z->src->data + e->data_offset;
	uint64_t n = e->comp_size, i;
	json_int_t v = 0;

	while (n && (p[n - 1] == '\n' || p[n - 1] == '\r' || p[n - 1] == ' '))
		n--;
	if (e->method != TFS_ZIP_STORED || !n || n > TS_MAX_VERSION)
		return tfs_diag_at(z->d, -EBADMSG, e->data_offset,
				   "zip: version: not a stored decimal number");
	for (i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return tfs_diag_at(z->d, -EBADMSG, e->data_offset + i,
					   "zip: version: not a decimal "
					   "number");
		v = v * 10 + (p[i] - '0');
	}
	return json_object_set_new(z->info, "version", json_integer(v))
		       ? tfs_diag_oom(z->d)
		       : 0;
}

/* the module tree: data.pkl, rooted at a __torch__ object */
static int ts_modules(struct tfs_torch *z, const struct tfs_zip *zip,
		      const struct ts_members *m)
{
	const struct tfs_pkl_value *root, *g;
	char cls[2 * TFS_PKL_MAX_GLOBAL + 2];
	int ret = stored_pickle(z, &m->data, "data.pkl", &root);

	if (ret)
		return ret;
	g = root->kind == TFS_PKL_NEWOBJ ? tfs_pkl_at(&z->pk, root->call.a)
					 : NULL;
	if (!g || g->kind != TFS_PKL_GLOBAL || g->g.module.len < 9 ||
	    memcmp(g->g.module.p, "__torch__", 9))
		return tfs_diag_at(z->d, -EBADMSG, root->offset,
				   "data.pkl: the root is a %s, not a "
				   "__torch__ module object",
				   tfs_pkl_kind_name(root->kind));
	snprintf(cls, sizeof(cls), "%.*s.%.*s", (int)g->g.module.len,
		 g->g.module.p, (int)g->g.name.len, g->g.name.p);
	if (json_object_set_new(z->info, "format",
				json_string("torchscript")) ||
	    json_object_set_new(z->info, "folder",
				tfs_torch_text_json(m->data.name, m->plen)) ||
	    json_object_set_new(z->info, "root_class", json_string(cls)))
		return tfs_diag_oom(z->d);
	if (m->has_version) {
		ret = ts_version(z, &m->version);
		if (ret)
			return ret;
	}
	ret = tfs_torch_walk(z, z->pk.root, 0);
	if (!ret)
		ret = tfs_torch_zip_records(z, zip, m->data.name, m->plen,
					    "/data/");
	return ret;
}

/* constants.pkl: a tuple, its members CONSTANTS.c<i> */
static int ts_constants(struct tfs_torch *z, const struct tfs_zip *zip,
			const struct ts_members *m)
{
	const struct tfs_pkl_value *root;
	char name[32];
	uint32_t i;
	int ret = stored_pickle(z, &m->constants, "constants.pkl", &root);

	if (ret)
		return ret;
	if (root->kind != TFS_PKL_TUPLE)
		return tfs_diag_at(z->d, -EBADMSG, root->offset,
				   "constants.pkl: a %s, not a tuple",
				   tfs_pkl_kind_name(root->kind));
	for (i = 0; !ret && i < root->nitems; i++) {
		snprintf(name, sizeof(name), "CONSTANTS.c%u", i);
		ret = tfs_torch_walk_named(z, name, strlen(name),
					   root->items[i]);
	}
	if (!ret)
		ret = tfs_torch_zip_records(z, zip, m->data.name, m->plen,
					    "/constants/");
	return ret;
}

/* the root's one-line "summary" (tensorfs info) */
static int ts_summary(struct tfs_torch *mod, struct tfs_torch *con)
{
	char buf[TFS_PKL_MAX_GLOBAL * 2 + 96];

	snprintf(buf, sizeof(buf),
		 "TorchScript module %s, archive version %lld, %zu tensors, "
		 "%zu constants",
		 json_string_value(json_object_get(mod->info, "root_class")),
		 (long long)json_integer_value(
			 json_object_get(mod->info, "version")),
		 mod->nt, con->nt);
	return tfs_builder_set_xattr_str(mod->b, TFS_BUILDER_ROOT, "summary",
					 buf)
		       ? tfs_diag_oom(mod->d)
		       : 0;
}

static int ts_load(const struct tfs_source *src, struct tfs_builder *b,
		   struct tfs_diag *d)
{
	struct tfs_torch mod, con;
	struct tfs_zip zip;
	struct ts_members m;
	int ret, ret2;

	ret = tfs_torch_init(&mod, src, b, d);
	ret2 = tfs_torch_init(&con, src, b, d);
	if (ret || ret2)
		goto out;
	mod.script = con.script = true;
	con.quiet = true;
	ret = tfs_zip_open(&zip, src->data, src->size, d);
	if (!ret)
		ret = ts_find(&zip, &m, UINT64_MAX, d);
	if (ret == -ENOENT)
		ret = tfs_diag_at(d, -EBADMSG, zip.cd_offset,
				  "zip: no P/data.pkl with P/constants.pkl or "
				  "P/code/ beside it");
	if (!ret)
		ret = ts_modules(&mod, &zip, &m);
	if (!ret && m.has_constants)
		ret = ts_constants(&con, &zip, &m);
	if (!ret && json_object_set_new(mod.info, "constants",
					json_integer((json_int_t)con.nt)))
		ret = tfs_diag_oom(d);
	if (!ret)
		ret = tfs_torch_finish(&mod, "torchscript");
	if (!ret)
		ret = tfs_torch_finish(&con, NULL);
	if (!ret)
		ret = ts_summary(&mod, &con);
out:
	if (!ret && ret2)
		ret = ret2;
	tfs_torch_free(&mod);
	tfs_torch_free(&con);
	return ret;
}

TFS_FORMAT(torchscript, "TorchScript archive (torch.jit.save)",
	   .probe = ts_probe, .load = ts_load);
