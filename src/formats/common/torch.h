/* SPDX-License-Identifier: MIT */
/*
 * What the torch readers share (pytorch.c: torch.save; torchscript.c:
 * torch.jit.save): the storage classes and their dtypes, the allow list of
 * globals, the walk of an unpickled object into dotted tensor names and
 * metadata leaves, storages located in zip records, and the tensor files
 * made from them (zero-copy, or through the gather codec for a strided
 * view).  Nothing from a file is ever run: the pickles go through the
 * restricted reader (parse/pickle.h), which only builds values.
 */
#ifndef TFS_FORMATS_COMMON_TORCH_H
#define TFS_FORMATS_COMMON_TORCH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "parse/pickle.h"
#include "parse/zip.h"
#include "codec/codec.h"
#include "core/dtype.h"

struct tfs_builder;
struct tfs_diag;
struct tfs_source;

#define TFS_TORCH_MAX_DIMS TFS_GATHER_MAX_DIMS

struct tfs_torch_storage {
	const char *key; /* into the pickle's input */
	size_t key_len;
	enum tfs_dtype dtype;
	const char *cls;
	uint64_t numel;
	uint64_t at; /* its persistent id (diagnostics) */
	bool located;
	uint64_t data; /* absolute offset of its bytes */
	bool has_crc;  /* a zip member: its CRC-32 and size */
	uint32_t crc32;
	uint64_t member_size;
};

struct tfs_torch_tensor {
	char *name;
	size_t name_len;
	uint32_t storage;
	uint64_t offset; /* elements */
	uint32_t ndim;
	uint64_t *dims; /* shape[ndim], then stride[ndim] */
	bool parameter;
	uint64_t at;
};

struct tfs_torch {
	const struct tfs_source *src;
	struct tfs_builder *b;
	struct tfs_diag *d;
	struct tfs_pkl pk;
	struct tfs_torch_storage *st;
	size_t nst, stcap;
	uint32_t *slots; /* hash of storage keys: index + 1, 0 empty */
	size_t nslots;
	struct tfs_torch_tensor *t;
	size_t nt, tcap;
	json_t *info, *leaves, *states;
	bool big;
	uint64_t visits, max_visits;
	char *name; /* the dotted name being built */
	size_t len, cap;
	/* TorchScript: __torch__ objects are walked by their BUILD dict, the
	 * torch.jit._pickle helpers are the identity */
	bool script;
	bool quiet; /* no warning for records outside the folder */
};

/* torch.save's allow list (torch.load(weights_only=True)'s, for tensors) */
extern const struct tfs_pkl_opts tfs_torch_opts;
bool tfs_torch_allow(void *arg, const char *m, size_t ml, const char *n,
		     size_t nl);
/* the dtype of storage class torch.@n (FloatStorage...): 0 or -ENOENT */
int tfs_torch_storage_dtype(const char *n, size_t nl, enum tfs_dtype *dt);

/* a context for @src; 0 or -ENOMEM (with @d); free it with tfs_torch_free */
int tfs_torch_init(struct tfs_torch *z, const struct tfs_source *src,
		   struct tfs_builder *b, struct tfs_diag *d);
void tfs_torch_free(struct tfs_torch *z);

/* run the pickle at [@at, @at + @len) of the file into z->pk */
int tfs_torch_pickle(struct tfs_torch *z, uint64_t at, uint64_t len,
		     const struct tfs_pkl_opts *opts);
/* every persistent id of z->pk is ('storage', ...) */
int tfs_torch_zip_ids(struct tfs_torch *z);
/* walk value @idx under the name being built (z->name) */
int tfs_torch_walk(struct tfs_torch *z, uint32_t idx, int depth);
/* walk value @idx named @p/@n (a component under the current name) */
int tfs_torch_walk_named(struct tfs_torch *z, const char *p, size_t n,
			 uint32_t idx);
int tfs_torch_to_json(struct tfs_torch *z, uint32_t idx, int depth,
		      json_t **out);
json_t *tfs_torch_text_json(const char *p, size_t n);
int tfs_torch_storage_by_key(const struct tfs_torch *z, const char *k,
			     size_t n);
/*
 * The zip's records under folder @prefix (@plen bytes): @dir/<key>
 * ("/data/") are the storages, /byteorder the byte order.
 */
int tfs_torch_zip_records(struct tfs_torch *z, const struct tfs_zip *zip,
			  const char *prefix, size_t plen, const char *dir);
/*
 * A storage of @dt that is the whole of stored zip member @e (PT2
 * archives' payloads), keyed @key (kept alive by the caller until
 * tfs_torch_finish); its index in *@out.  The same key again gives the
 * same storage, when its dtype is the same.
 */
int tfs_torch_zip_storage(struct tfs_torch *z, const char *key, size_t klen,
			  enum tfs_dtype dt, const struct tfs_zip_entry *e,
			  uint32_t *out);
/*
 * A tensor @name (copied) viewing storage @st from element @offset: @ndim
 * sizes, then @ndim strides in @dims; described at @at
 */
int tfs_torch_view(struct tfs_torch *z, const char *name, size_t len,
		   uint32_t st, uint64_t offset, uint32_t ndim,
		   const uint64_t *dims, bool parameter, uint64_t at);
/*
 * Every storage located: the tensors to the builder, z->info into
 * metadata member @info_key (NULL: none), the leaves and object states
 * merged into "leaves" and "object_state".
 */
int tfs_torch_finish(struct tfs_torch *z, const char *info_key);

#endif
