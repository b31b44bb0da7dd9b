// SPDX-License-Identifier: MIT
/*
 * PyTorch checkpoints (torch.save), both generations; docs/formats/
 * pytorch.md.  Nothing in the file is ever executed: the pickles are run by
 * the restricted reader (parse/pickle.h), which only builds values, with
 * the allow list of common/torch.c (what torch.load(weights_only=True)
 * accepts for tensors and plain containers, and Lightning's attribute
 * bags); any other global refuses the file by name.  The walk of the
 * object, the storages and the tensor files are common/torch.c's too,
 * shared with TorchScript archives (torchscript.c).
 *
 * Zip format (torch >= 1.6): every record under one top folder P/ (any
 * name): P/data.pkl the object, P/data/<key> each storage's raw bytes
 * (stored), P/byteorder "little" or "big" (absent: little).  Detected by
 * the members, never by the file name.
 *
 * Legacy format (torch < 1.6): five protocol-2 pickles back to back (the
 * magic number 0x1950a86a20f9469cfc6c, the protocol version 1001, sys_info,
 * the object, the list of storage keys), then for each key in that list an
 * int64 element count and the storage's bytes.
 *
 * The object is walked as torch.load would rebuild it: dicts and
 * OrderedDicts by key, lists (and tuples holding a tensor) by index, names
 * joined with '.'; a tensor is _rebuild_tensor_v2(storage, offset, size,
 * stride, ...) (or wrapped in _rebuild_parameter*), its storage a
 * persistent id ('storage', torch.<X>Storage, key, location, numel[, None]).
 * Every other value is a leaf for metadata.json.  A tensor whose strides
 * are row-major is served zero-copy; any other view (transpose, slice,
 * expand) through the gather codec.  Tensors may share a storage.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse/pickle.h"
#include "parse/zip.h"
#include "core/builder.h"
#include "core/checked.h"
#include "codec/codec.h"
#include "core/cursor.h"
#include "core/diag.h"
#include "core/dtype.h"
#include "core/format.h"
#include "core/names.h"
#include "core/source.h"

#include "common/hf_index.h"
#include "common/torch.h"

#define PT_PROBE_ENTRIES 1000
#define PT_LEGACY_PROTOCOL 1001

/* pickle protocol 2: PROTO 2, LONG1 of 10 bytes, the magic number */
static const uint8_t legacy_magic[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c,
				       0xfc, 0x9c, 0x46, 0xf9, 0x20,
				       0x6a, 0xa8, 0x50, 0x19};

#define V(z, i) tfs_pkl_at(&(z)->pk, (i))

/* ---- zip --------------------------------------------------------------- */

/* "P/data.pkl" with P one non-empty component: *plen = strlen(P) */
static bool is_data_pkl(const struct tfs_zip_entry *e, size_t *plen)
{
	const char *slash = memchr(e->name, '/', e->name_len);

	if (!slash || slash == e->name)
		return false;
	*plen = (size_t)(slash - e->name);
	return e->name_len == *plen + 9 && memcmp(slash, "/data.pkl", 9) == 0;
}

static int pt_zip_find(const struct tfs_zip *zip, struct tfs_zip_entry *pkl,
		       size_t *plen, uint64_t max_entries, struct tfs_diag *d)
{
	struct tfs_zip_iter it;
	struct tfs_zip_entry e;
	size_t pl;
	bool found = false;
	int ret;

	tfs_zip_iter_init(&it);
	while ((ret = tfs_zip_next(zip, &it, &e, d)) == 1 &&
	       it.index <= max_entries) {
		if (!is_data_pkl(&e, &pl))
			continue;
		if (!d) /* a probe: one is enough to claim the file */
			return 0;
		if (found)
			return tfs_diag_at(d, -EBADMSG, e.central_offset,
					   "zip: a second data.pkl");
		found = true;
		*pkl = e;
		*plen = pl;
	}
	if (ret < 0)
		return ret;
	return found ? 0 : -ENOENT;
}

static int pt_probe(const struct tfs_source *src)
{
	struct tfs_zip zip;
	struct tfs_zip_entry e;
	size_t pl;

	if (src->size >= sizeof(legacy_magic) &&
	    memcmp(src->data, legacy_magic, sizeof(legacy_magic)) == 0)
		return 100;
	if (!tfs_zip_magic(src->data, src->size) ||
	    tfs_zip_open(&zip, src->data, src->size, NULL))
		return 0;
	return pt_zip_find(&zip, &e, &pl, PT_PROBE_ENTRIES, NULL) == 0 ? 90 : 0;
}

static int load_zip(struct tfs_torch *z)
{
	struct tfs_zip zip;
	struct tfs_zip_entry pkl;
	size_t plen = 0;
	int ret = tfs_zip_open(&zip, z->src->data, z->src->size, z->d);

	if (!ret)
		ret = pt_zip_find(&zip, &pkl, &plen, UINT64_MAX, z->d);
	if (ret == -ENOENT)
		return tfs_diag_at(z->d, -EBADMSG, zip.cd_offset,
				   "zip: no P/data.pkl record");
	if (ret)
		return ret;
	if (pkl.method != TFS_ZIP_STORED)
		return tfs_diag_at(z->d, -ENOTSUP, pkl.local_offset,
				   "zip: data.pkl is compressed (method %u)",
				   pkl.method);
	if (json_object_set_new(z->info, "format", json_string("zip")) ||
	    json_object_set_new(z->info, "folder",
				tfs_torch_text_json(pkl.name, plen)))
		return tfs_diag_oom(z->d);
	ret = tfs_torch_pickle(z, pkl.data_offset, pkl.comp_size,
			       &tfs_torch_opts);
	if (!ret)
		ret = tfs_torch_zip_ids(z);
	if (!ret)
		ret = tfs_torch_walk(z, z->pk.root, 0);
	if (!ret)
		ret = tfs_torch_zip_records(z, &zip, pkl.name, plen, "/data/");
	return ret;
}

/* ---- legacy ------------------------------------------------------------- */

/* one of the small pickles before the object: parsed, checked, freed */
static int legacy_header(struct tfs_torch *z, uint64_t *pos, int which)
{
	const struct tfs_pkl_value *v;
	json_t *j = NULL;
	int64_t i = 0;
	int ret =
		tfs_torch_pickle(z, *pos, z->src->size - *pos, &tfs_torch_opts);

	if (ret)
		return ret;
	v = V(z, z->pk.root);
	if (which == 0 &&
	    (v->kind != TFS_PKL_LONG || v->s.len != sizeof(legacy_magic) - 4 ||
	     memcmp(v->s.p, legacy_magic + 4, v->s.len)))
		ret = tfs_diag_at(z->d, -EBADMSG, v->offset,
				  "legacy: the magic number pickle holds "
				  "another value");
	if (!ret && which == 1 &&
	    (tfs_pkl_int64(v, &i) || i != PT_LEGACY_PROTOCOL))
		ret = tfs_diag_at(z->d, -ENOTSUP, v->offset,
				  "legacy: protocol version: not %d",
				  PT_LEGACY_PROTOCOL);
	if (!ret && which == 2) { /* sys_info, kept as metadata */
		ret = v->kind == TFS_PKL_DICT
			      ? tfs_torch_to_json(z, z->pk.root, 0, &j)
			      : tfs_diag_at(z->d, -EBADMSG, v->offset,
					    "legacy: sys_info: not a dict");
		if (!ret && json_object_set_new(z->info, "sys_info", j))
			ret = tfs_diag_oom(z->d);
	}
	*pos = z->pk.end;
	tfs_pkl_free(&z->pk);
	return ret;
}

/* after the key list: for each key, u64 numel and the bytes */
static int legacy_storages(struct tfs_torch *z, struct tfs_pkl *keys,
			   uint64_t pos)
{
	const struct tfs_pkl_value *list = tfs_pkl_at(keys, keys->root), *k;
	struct tfs_torch_storage *s;
	uint64_t numel, bytes;
	uint32_t i;
	int si;

	if (list->kind != TFS_PKL_LIST)
		return tfs_diag_at(z->d, -EBADMSG, list->offset,
				   "legacy: storage keys: a %s, not a list",
				   tfs_pkl_kind_name(list->kind));
	for (i = 0; i < list->nitems; i++) {
		k = tfs_pkl_at(keys, list->items[i]);
		si = k->kind == TFS_PKL_STR
			     ? tfs_torch_storage_by_key(z, k->s.p, k->s.len)
			     : -1;
		if (si < 0)
			return tfs_diag_at(z->d, -EBADMSG, k->offset,
					   "legacy: storage key %u is no "
					   "tensor's storage",
					   i);
		s = &z->st[si];
		if (s->located)
			return tfs_diag_at(z->d, -EBADMSG, k->offset,
					   "legacy: storage '%s' is listed "
					   "twice",
					   TFS_SHOWN(s->key, s->key_len));
		if (!tfs_range_ok(pos, 8, z->src->size))
			return tfs_diag_at(z->d, -EBADMSG, pos,
					   "legacy: storage '%s': the element "
					   "count runs past the end of the "
					   "file",
					   TFS_SHOWN(s->key, s->key_len));
		numel = tfs_load_le(z->src->data + pos, 8);
		if (numel != s->numel)
			return tfs_diag_at(z->d, -EBADMSG, pos,
					   "legacy: storage '%s' holds %llu "
					   "elements, its persistent id says "
					   "%llu",
					   TFS_SHOWN(s->key, s->key_len),
					   (unsigned long long)numel,
					   (unsigned long long)s->numel);
		if (!tfs_mul_u64(numel, tfs_dtype_size(s->dtype), &bytes) ||
		    !tfs_range_ok(pos + 8, bytes, z->src->size))
			return tfs_diag_at(z->d, -EBADMSG, pos + 8,
					   "legacy: storage '%s' (%llu x %u "
					   "bytes) runs past the end of the "
					   "file",
					   TFS_SHOWN(s->key, s->key_len),
					   (unsigned long long)numel,
					   tfs_dtype_size(s->dtype));
		s->located = true;
		s->data = pos + 8;
		pos += 8 + bytes;
	}
	if (pos < z->src->size)
		return tfs_builder_warn(
			z->b, pos,
			"legacy: %llu bytes after the last "
			"storage",
			(unsigned long long)(z->src->size - pos));
	return 0;
}

static int load_legacy(struct tfs_torch *z)
{
	struct tfs_pkl keys = {0};
	uint64_t pos = 0;
	int ret = 0, i;

	if (json_object_set_new(z->info, "format", json_string("legacy")))
		return tfs_diag_oom(z->d);
	for (i = 0; !ret && i < 3; i++)
		ret = legacy_header(z, &pos, i);
	if (!ret)
		ret = tfs_torch_pickle(z, pos, z->src->size - pos,
				       &tfs_torch_opts);
	if (!ret)
		ret = tfs_torch_walk(z, z->pk.root, 0);
	if (ret)
		return ret;
	ret = tfs_pkl_parse(&keys, z->src->data + z->pk.end,
			    (size_t)(z->src->size - z->pk.end), z->pk.end,
			    &tfs_torch_opts, z->d);
	if (!ret)
		ret = legacy_storages(z, &keys, keys.end);
	tfs_pkl_free(&keys);
	return ret;
}

/* ---- the reader ---------------------------------------------------------- */

static int pt_load(const struct tfs_source *src, struct tfs_builder *b,
		   struct tfs_diag *d)
{
	struct tfs_torch z;
	int ret = tfs_torch_init(&z, src, b, d);

	if (ret)
		;
	else if (src->size >= sizeof(legacy_magic) &&
		 memcmp(src->data, legacy_magic, sizeof(legacy_magic)) == 0)
		ret = load_legacy(&z);
	else
		ret = load_zip(&z);
	if (!ret)
		ret = tfs_torch_finish(&z, "pytorch");
	if (!ret &&
	    tfs_builder_set_xattr_str(
		    b, TFS_BUILDER_ROOT, "pytorch.format",
		    json_string_value(json_object_get(z.info, "format"))))
		ret = tfs_diag_oom(d);
	tfs_torch_free(&z);
	return ret;
}

/* pytorch_model.bin.index.json (after a safetensors index) */
TFS_FORMAT(pytorch, "PyTorch checkpoint (torch.save: zip or legacy)",
	   .probe = pt_probe, .load = pt_load,
	   .index_suffix = ".bin.index.json", .index_rank = 1,
	   .read_index = tfs_hf_read_index);
