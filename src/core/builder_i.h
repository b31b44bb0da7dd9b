/* SPDX-License-Identifier: MIT */
/*
 * Private to the builder's modules (builder.c: sources, warnings and
 * finishing; build_entries.c: entries and xattrs; build_paths.c: paths;
 * build_tree.c: records, nodes and JSON files; build_rules.c: names and
 * overlaps; companions.c: companion files, slices and segments).
 */
#ifndef TFS_CORE_BUILDER_I_H
#define TFS_CORE_BUILDER_I_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/builder.h"
#include "core/source.h"
#include "core/tree.h"
#include "strmap.h"
#include "core/kept_strings.h"

/*
 * ENTRY_DIR: the directory of one container in a multi-container mount (its
 * wanted path is the container's directory); the reader's root xattrs go
 * there.
 */
enum entry_kind {
	ENTRY_ROOT,
	ENTRY_TENSOR,
	ENTRY_GROUP,
	ENTRY_COMPONENT,
	ENTRY_DIR,
};

struct entry {
	enum entry_kind kind;
	char *name;
	size_t name_len;
	/*
	 * escaped wanted path (leaves) or role: the builder's interned
	 * strings (intern_comp), shared between entries, never written
	 */
	const char **comps;
	size_t ncomps, comps_cap;
	char *dtype; /* its name */
	enum tfs_dtype dtype_id;
	uint32_t record_size;
	uint64_t desc_offset;
	uint32_t source;     /* index into b->sources */
	bool big, fortran;   /* byte_order=big / order=F, own or group's */
	uint32_t ndim;
	uint64_t *shape;
	uint64_t offset, length, size;
	uint32_t sib;		  /* handle of the bytes' file: 0 container */
	uint32_t nsegs;		  /* several pieces: segs[], else none */
	struct tfs_segment *segs; /* handles, not sources; mem copied */
	enum tfs_encoding encoding;
	struct tfs_codec_params codec;
	char *digest;
	bool has_digest_extent;
	uint64_t digest_offset, digest_length;
	char *npy_descr; /* -o npy: the header's descr literal, or NULL */
	bool digest_decoded;
	char *unreadable; /* spec->unreadable */
	bool unreadable_is_fault;
	uint32_t group;	   /* components: their group's handle */
	uint32_t *members; /* groups: component handles */
	uint32_t nmembers, members_cap;
	struct tfs_xattr *xattrs;
	uint32_t nxattrs, xattrs_cap;
	json_t *extra;
	bool extra_shared; /* @extra is other entries' too: copy to change */
	char *path;	   /* final path (finish) */
	uint32_t node; /* its node (finish) */
};

struct meta_file {
	char *name;
	char *data;
	size_t len;
};

/* One container of the mount (a single-container mount has one). */
struct bsource {
	const struct tfs_source *src;
	char *label;   /* path relative to the mounted directory, or NULL */
	char *shard;   /* user.tensorfs.shard of its tensors, or NULL */
	char **prefix; /* escaped components of its directory */
	size_t nprefix;
	bool own_dir;	/* names are unique per container, not per mount */
	uint32_t space; /* own_dir: its namespace, the first joined source */
	uint32_t root;	/* the handle TFS_BUILDER_ROOT means for it */
	enum tfs_overlap_rule overlap;
	json_t *metadata; /* its metadata.json member (multi) */
	/* what existed before it: tfs_builder_abort_source() goes back */
	uint32_t first_entry, first_warning, first_file;
};

/* A metadata member made on first read (tfs_builder_defer_metadata). */
struct deferred {
	json_t *parent; /* a container's metadata object, or NULL: the root */
	char *key;
	json_t *(*make)(void *arg);
	void *arg;
	void (*free_arg)(void *arg);
	uint32_t source;
};

struct tfs_builder {
	const struct tfs_source *src; /* the current container's bytes */
	struct tfs_build_options opts;
	json_t *model_config;	 /* tfs_builder_set_model_config, or NULL */
	struct tfs_mf *manifest; /* the draft's (build_tree.c), for the views */
	struct entry *e;
	uint32_t n, cap;
	json_t *metadata;
	struct meta_file *files;
	uint32_t nfiles;
	struct bsource *sources;
	uint32_t nsources, cur; /* cur: the container being described */
	bool multi;		/* tfs_builder_begin_source() was used */
	bool in_source;		/* between begin and end/abort */
	json_t *containers;	/* multi: metadata by container label */
	struct tfs_warning *warnings;
	uint32_t nwarnings, warnings_cap;
	struct deferred *deferred;
	uint32_t ndeferred;
	/* companion files and slices (companions.c): handle k + 1 is
	 * companions[k]; each allocated alone, so a slice's source stays
	 * put while its reader opens more */
	struct companion **companions;
	uint32_t ncompanions;
	uint32_t self;	    /* what handle 0 means: 0, or the slice loading */
	json_t *slice_meta; /* a slice's metadata object while it loads */
	unsigned slice_depth; /* slices loading now, one inside the other */
	/*
	 * the path components, one copy of each distinct text (90,000 MoE
	 * tensor paths are 700,000 components but ~400 texts)
	 */
	struct tfs_strmap comp_ids;
	char **comp_texts;
	uint32_t ncomp_texts, comp_texts_cap;
};

/* A file beside a container, or a window of it (a slice). */
struct companion {
	struct tfs_source src;
	char *name;	/* as the reader asked for it (slices: NULL) */
	uint32_t owner; /* the builder source that opened it */
};

#define META_DIR TFS_META_DIR
/* META_DIR as the directory of tensors it would otherwise be (paths.c) */
#define META_DIR_ESCAPED "%2Etensorfs"
#define TFS_PATH_MAX_DEPTH 64

struct tfs_node_list;

/* build_entries.c: a new zeroed entry (its index in *@idx), or the last
 * one taken back; a path component @s of @len bytes (escaped, interned) */
int tfs_build_push_entry(struct tfs_builder *b, uint32_t *idx);
void tfs_build_pop_entry(struct tfs_builder *b);
int tfs_build_add_comp(struct tfs_builder *b, struct entry *e, const char *s,
		       size_t len);
/* @e's xattr @key (without the prefix): @replace an existing one or not */
int tfs_build_entry_set_xattr(struct entry *e, const char *key, const void *v,
			      size_t len, bool replace);
/* builder.c: what an entry owns; deferred metadata members */
void tfs_build_entry_free(struct entry *e);
void tfs_build_deferred_free(struct deferred *v, uint32_t n);

/* build_rules.c: the rules over entries [@from, b->n); 0 or -errno, @d */
int tfs_build_check_names(struct tfs_builder *b, uint32_t from,
			  struct tfs_diag *d);
int tfs_build_check_overlaps(struct tfs_builder *b, uint32_t from,
			     struct tfs_diag *d);

/* build_paths.c: strings a path map borrows, freed together */
struct path_state {
	struct tfs_strmap claims;     /* path -> CLAIM_* */
	struct tfs_kept_strings kept; /* strings the map borrows */
};
/* @s (malloc'd, or NULL: -ENOMEM) kept until tfs_path_state_free */
int tfs_path_own(struct path_state *ps, char *s);
void tfs_path_state_free(struct path_state *ps);
/* every leaf's path (entry.path), by the rules of docs/tree.md */
int tfs_build_place_leaves(struct tfs_builder *b);

/* build_tree.c: the nodes and records of every entry into @nl and @t */
int tfs_build_nodes(struct tfs_builder *b, struct tfs_node_list *nl,
		    struct tfs_tree *t, const char *format);

/* the source a spec's handle @h means (0: the container described now) */
static inline uint32_t tfs_builder_handle(const struct tfs_builder *b,
					  uint32_t h)
{
	return h ? h : b->self;
}

/* the bytes behind handle @h (resolved: 0 is the container) */
const struct tfs_source *tfs_builder_handle_src(const struct tfs_builder *b,
						uint32_t h);

/*
 * Check @s's stored bytes (extent, companion or segments) and keep them in
 * @e; 0 or -errno with @d filled naming @nm.
 */
int tfs_builder_take_stored(struct tfs_builder *b, struct entry *e,
			    const struct tfs_tensor_spec *s,
			    struct tfs_diag *d);

/*
 * @s's name made printable into the array @buf: written as a diagnostic's
 * argument, so the escaping is paid on the error path only (a MoE directory
 * has 90,000 names).
 */
#define TFS_SPEC_NAME(buf, s)                                                  \
	tfs_name_printable((buf), sizeof(buf), (s)->name, (s)->name_len)

/* the tree record's segments from @e's (finish); 0 or -ENOMEM */
int tfs_builder_put_segments(const struct tfs_builder *b, const struct entry *e,
			     struct tfs_tree *tree, struct tfs_tensor *t);

/* the image source index of an entry's handle @h (finish) */
uint32_t tfs_builder_source_index(const struct tfs_builder *b,
				  const struct entry *e, uint32_t h);

/* close the companions opened while source @src was described */
void tfs_builder_drop_companions(struct tfs_builder *b, uint32_t src);
void tfs_builder_free_companions(struct tfs_builder *b);

#endif
