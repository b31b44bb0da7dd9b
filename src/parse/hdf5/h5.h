/* SPDX-License-Identifier: MIT */
/*
 * tensorfs's own bounded HDF5 reader (specs/hdf5.md), one file per
 * structure:
 *   lookup3.c    Jenkins lookup3, the checksum of every v2 structure (§4)
 *   superblock.c the signature search, superblocks 0-3 (§2, §3)
 *   ohdr.c       object headers v1/v2 and their continuation blocks (§5)
 *   dataspace.c  the dataspace message (§6)
 *   datatype.c   the datatype message, every class, nested (§7)
 *   layout.c     data layout v1-v4, fill value, filter pipeline (§8, §9)
 *   btree1.c     v1 B-trees (TREE), groups and chunks (§10.1)
 *   btree2.c     v2 B-trees (BTHD/BTIN/BTLF) of any depth (§10.2)
 *   fheap.c      the fractal heap (FRHP/FHIB/FHDB) (§11.3)
 *   group.c      old-style groups (local heap, SNOD), link messages,
 *                dense groups (§11)
 *   attr.c       attribute messages, compact and dense (§12)
 *   gheap.c      the global heap (GCOL) of variable-length data (§12.1)
 *   set.c        visited sets of addresses
 *   chunks.c     every chunk index: v1 B-tree, single, implicit, fixed
 *                array, extensible array, v2 B-tree (§8.3)
 *
 * Every address is relative to the superblock's position (the base) and
 * checked against the bytes before it is used (h5_span); every failure
 * returns -errno and fills the diagnostic with the structure, the field
 * and the absolute byte offset.  Structures that can loop (continuation
 * blocks, B-tree nodes) are read with visited sets and depth limits.
 * Pointers handed out point into the file's bytes, which outlive the
 * parse.  Nothing here prints or includes a core builder header.
 */
#ifndef TENSORFS_PARSE_H5_H
#define TENSORFS_PARSE_H5_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cursor.h"

struct tfs_diag;

#define H5_UNDEF UINT64_MAX
#define H5_MAX_RANK 32
#define H5_MAX_MSGS 65536
#define H5_MAX_BLOCKS 4096   /* object header blocks per object */
#define H5_MAX_TREE_DEPTH 64 /* B-tree levels */
#define H5_MAX_NODES 1000000 /* B-tree nodes, heap blocks per walk */
#define H5_TYPE_DEPTH 8
#define H5_TYPE_MEMBERS 4096
#define H5_MAX_FILTERS 32
#define H5_MAX_CHUNK (1ull << 32) /* bytes of one unfiltered chunk */

struct h5_file {
	const uint8_t *p; /* the HDF5 file's bytes */
	uint64_t size;	  /* bytes at p */
	uint64_t base;	  /* offset of the superblock in p */
	unsigned so, sl;  /* size of offsets, of lengths */
	unsigned sb_version;
	uint64_t eof;  /* end-of-file field */
	uint64_t root; /* root object header (relative) */
	uint64_t ext;  /* superblock extension, or H5_UNDEF */
	unsigned leaf_k, internal_k, chunk_k;
	struct tfs_diag *d;
};

/* ---- lookup3.c */
uint32_t h5_lookup3(const void *p, size_t n, uint32_t init);
/* the 4 bytes after [at, at + n) are the lookup3 of it; @what names it */
int h5_checksum(struct h5_file *f, uint64_t at, uint64_t n, const char *what);

/* ---- superblock.c */
/*
 * The offset of the signature in @p (0, 512, 1024... below @max, at most
 * 2^30) or -ENOENT
 */
int64_t h5_find_signature(const uint8_t *p, uint64_t size, uint64_t max);
/* the superblock at its signature; fills @f (p, size, d preset) */
int h5_superblock(struct h5_file *f);

/* ---- helpers (superblock.c) */
/*
 * A cursor over [base + addr, + len) of the file, or -EBADMSG naming
 * @what and @at (where the address was read) when it is undefined or
 * does not fit.
 */
int h5_span(struct h5_file *f, uint64_t addr, uint64_t len, const char *what,
	    uint64_t at, struct tfs_cursor *c);
/* an address (so bytes, all ones = H5_UNDEF), a length (sl bytes) */
int h5_addr(struct h5_file *f, struct tfs_cursor *c, uint64_t *v);
int h5_len(struct h5_file *f, struct tfs_cursor *c, uint64_t *v);
/* a truncated structure: the message at the cursor's place */
int h5_short(struct h5_file *f, const struct tfs_cursor *c, const char *what);
/*
 * The structure with signature @sig at @addr: a cursor over its @len bytes
 * (as h5_span), the signature checked and, with @sum, the lookup3 of the
 * @len bytes in the 4 that follow.  @what names it in messages.
 */
int h5_struct(struct h5_file *f, uint64_t addr, uint64_t len, const char *sig,
	      bool sum, const char *what, uint64_t at, struct tfs_cursor *c);
/* the absolute container offset of relative address @addr */
uint64_t h5_abs(const struct h5_file *f, uint64_t addr);
/* bytes needed to hold @v (1 for 0) */
unsigned h5_enc_size(uint64_t v);
/* floor(log2(@v)), 0 for 0 and 1 */
unsigned h5_log2(uint64_t v);

/* ---- set.c: a set of addresses (visited sets) */
struct h5_set {
	uint64_t *v; /* open addressing, H5_UNDEF = empty */
	size_t n, cap;
};

/* 1 when @x was added, 0 when it was there, -ENOMEM */
int h5_set_add(struct h5_set *s, uint64_t x);
bool h5_set_has(const struct h5_set *s, uint64_t x);
/* add node @addr of a walk over @what: a node reached twice is a cycle */
int h5_visit(struct h5_file *f, struct h5_set *s, uint64_t addr, uint64_t at,
	     const char *what);
void h5_set_free(struct h5_set *s);

/* ---- ohdr.c */
struct h5_msg {
	uint16_t type;
	uint8_t flags;
	uint32_t size;
	const uint8_t *p; /* the message data */
	uint64_t at;	  /* absolute offset of the data */
};

struct h5_ohdr {
	uint64_t addr; /* relative */
	unsigned version;
	struct h5_msg *m;
	size_t n, cap;
};

int h5_ohdr_read(struct h5_file *f, uint64_t addr, struct h5_ohdr *oh);
void h5_ohdr_free(struct h5_ohdr *oh);
/* the first message of @type, or NULL */
const struct h5_msg *h5_ohdr_find(const struct h5_ohdr *oh, uint16_t type);
/* a cursor over a message's data */
void h5_msg_cursor(const struct h5_msg *m, struct tfs_cursor *c);

/* ---- dataspace.c */
enum { H5_SPACE_SCALAR, H5_SPACE_SIMPLE, H5_SPACE_NULL };

struct h5_space {
	unsigned kind, rank;
	bool has_max;
	uint64_t dims[H5_MAX_RANK], maxdims[H5_MAX_RANK]; /* UNDEF: unlimited */
	uint64_t nelem;					  /* 0 for null */
};

int h5_space_parse(struct h5_file *f, struct tfs_cursor *c, struct h5_space *s);

/* ---- datatype.c */
enum {
	H5T_FIXED = 0,
	H5T_FLOAT = 1,
	H5T_TIME = 2,
	H5T_STRING = 3,
	H5T_BITFIELD = 4,
	H5T_OPAQUE = 5,
	H5T_COMPOUND = 6,
	H5T_REFERENCE = 7,
	H5T_ENUM = 8,
	H5T_VLEN = 9,
	H5T_ARRAY = 10,
};

struct h5_type;

struct h5_member {
	const char *name; /* NUL-terminated inside the message */
	uint32_t offset;
	struct h5_type *type;
};

struct h5_type {
	uint8_t cls, version;
	uint32_t bits; /* the class bit field */
	uint32_t size;
	bool be, sign;
	uint16_t bit_off, prec;		  /* fixed, float, bitfield */
	uint8_t eloc, esize, mloc, msize; /* float */
	uint32_t bias;			  /* float */
	uint32_t nmemb;			  /* compound, enum */
	struct h5_member *memb;		  /* compound; enum: names */
	const uint8_t *enum_values;	  /* nmemb x base->size */
	struct h5_type *base;		  /* enum, vlen, array */
	unsigned arank;			  /* array */
	uint32_t adims[H5_MAX_RANK];
	const char *tag; /* opaque: NUL-padded */
	size_t tag_len;
};

/* parse at @c (advanced past it); *out allocated, h5_type_free it */
int h5_type_parse(struct h5_file *f, struct tfs_cursor *c,
		  struct h5_type **out);
void h5_type_free(struct h5_type *t);
/*
 * A shared datatype reference at @c (specs/hdf5.md 5.5): a committed
 * datatype's object header, whose own datatype message is parsed (followed
 * once: a committed type that is itself shared is refused, as are shared
 * message heap references).
 */
int h5_type_shared(struct h5_file *f, struct tfs_cursor *c,
		   struct h5_type **out);
/* the datatype message @m (0x03), shared (flag bit 1) or not */
int h5_type_msg(struct h5_file *f, const struct h5_msg *m,
		struct h5_type **out);
/* the class's name: "fixed-point", "compound"... */
const char *h5_class_name(unsigned cls);

/* ---- layout.c */
enum { H5_COMPACT = 0, H5_CONTIGUOUS = 1, H5_CHUNKED = 2, H5_VIRTUAL = 3 };
enum {
	H5_IDX_BTREE1 = 0,
	H5_IDX_SINGLE = 1,
	H5_IDX_IMPLICIT = 2,
	H5_IDX_FARRAY = 3,
	H5_IDX_EARRAY = 4,
	H5_IDX_BTREE2 = 5,
};

struct h5_layout {
	unsigned version, cls;
	uint64_t at; /* absolute offset of the message data */
	/* contiguous: address (relative, UNDEF = not allocated), size */
	uint64_t addr, size;
	/* compact: the data inside the header */
	const uint8_t *compact;
	uint64_t compact_at;
	uint32_t compact_size;
	/* chunked */
	unsigned flags, ndims; /* ndims = rank + 1 */
	uint64_t cdims[H5_MAX_RANK + 1];
	unsigned index;
	uint64_t idx_addr;
	uint64_t single_size;
	uint32_t single_mask;
	uint8_t idx_params[6];
};

int h5_layout_parse(struct h5_file *f, const struct h5_msg *m,
		    struct h5_layout *l);

struct h5_fill {
	bool has_value;
	const uint8_t *value;
	uint32_t size;
};

/* the fill value of @oh (messages 0x05, else 0x04), or none */
int h5_fill_parse(struct h5_file *f, const struct h5_ohdr *oh,
		  struct h5_fill *fill);

struct h5_filter {
	uint16_t id, flags;
	uint32_t nvals;
	const uint8_t *vals; /* nvals u32 LE */
	const char *name;    /* NUL-terminated inside the message, or NULL */
};

struct h5_pipeline {
	unsigned n;
	struct h5_filter f[H5_MAX_FILTERS];
	uint64_t at;
};

int h5_pipeline_parse(struct h5_file *f, const struct h5_msg *m,
		      struct h5_pipeline *pl);
/* "deflate", "shuffle"..., or NULL for one tensorfs does not know */
const char *h5_filter_name(uint16_t id);
/* the client value @i of a filter, 0 when absent */
uint32_t h5_filter_val(const struct h5_filter *fl, unsigned i);

/* ---- btree1.c */
/*
 * Walk a v1 B-tree of node type @type (0 groups, 1 chunks) with @key_size
 * bytes per key, calling @leaf(arg, key, child, at) for every child of a
 * leaf node (key = the key before it, at = its absolute offset).
 */
typedef int (*h5_bt1_fn)(void *arg, const uint8_t *key, uint64_t child,
			 uint64_t at);
int h5_btree1_walk(struct h5_file *f, uint64_t addr, unsigned type,
		   unsigned key_size, h5_bt1_fn leaf, void *arg);

/* ---- btree2.c */
typedef int (*h5_bt2_fn)(void *arg, const uint8_t *rec, uint64_t at);
/* every record of the v2 B-tree at @addr (its type must be @type) */
int h5_btree2_walk(struct h5_file *f, uint64_t addr, unsigned type,
		   unsigned min_rec, h5_bt2_fn fn, void *arg);

/* ---- fheap.c */
struct h5_fheap {
	uint64_t addr;
	uint16_t id_len;
	uint8_t flags;
	uint16_t width;
	uint64_t start, max_direct;
	uint16_t max_bits, cur_rows;
	uint64_t root;
	uint64_t huge_bt; /* v2 B-tree (type 1) of huge objects */
	unsigned off_bytes, len_bytes, max_direct_rows;
	/* direct blocks whose checksum was verified (NULL: verify each time) */
	struct h5_set *verified;
};

int h5_fheap_open(struct h5_file *f, uint64_t addr, struct h5_fheap *h);
/* the object of heap ID @id (id_len bytes): *p, *len and its offset *at */
int h5_fheap_get(struct h5_file *f, const struct h5_fheap *h, const uint8_t *id,
		 uint64_t id_at, const uint8_t **p, uint64_t *len,
		 uint64_t *at);

/*
 * Dense storage: the link info (0x02) or attribute info (0x15) message @m
 * (@what; @crt bytes of maximum creation index when its flag bit 0 is
 * set) names a fractal heap and a v2 B-tree of record @type whose records
 * hold a heap ID at byte @id_off: @fn(arg, object, its length, its offset)
 * for every object, in B-tree order.  *@dense: the heap address is
 * defined (else nothing is stored densely).
 */
typedef int (*h5_obj_fn)(void *arg, const uint8_t *p, uint64_t len,
			 uint64_t at);
int h5_dense_walk(struct h5_file *f, const struct h5_msg *m, const char *what,
		  unsigned crt, unsigned type, unsigned id_off, h5_obj_fn fn,
		  void *arg, bool *dense);

/* ---- group.c */
enum { H5_LINK_HARD = 0, H5_LINK_SOFT = 1, H5_LINK_EXTERNAL = 64 };

struct h5_link {
	const char *name; /* not NUL-terminated */
	size_t name_len;
	unsigned type;
	uint64_t addr;	    /* hard */
	const char *target; /* soft: the path; external: the file name */
	size_t target_len;
	const char *obj; /* external: the object path */
	size_t obj_len;
	uint64_t at;
};

typedef int (*h5_link_fn)(void *arg, const struct h5_link *l);
/* is @oh a group (symbol table, link info or link messages)? */
bool h5_is_group(const struct h5_ohdr *oh);
/* every link of the group @oh, in storage order; *dense set for a group
 * whose links are in a fractal heap */
int h5_group_links(struct h5_file *f, const struct h5_ohdr *oh, h5_link_fn fn,
		   void *arg, bool *dense);

/* ---- attr.c */
struct h5_attr {
	const char *name; /* NUL-terminated inside the message */
	size_t name_len;
	struct h5_type *type;
	struct h5_space space;
	const uint8_t *data;
	uint64_t data_len;
	uint64_t at; /* the message */
};

typedef int (*h5_attr_fn)(void *arg, const struct h5_attr *a);
/* every attribute of @oh, compact and dense */
int h5_attrs(struct h5_file *f, const struct h5_ohdr *oh, h5_attr_fn fn,
	     void *arg);

/* ---- gheap.c */
/* the global heap object @index of collection @coll */
int h5_gheap_get(struct h5_file *f, uint64_t coll, uint32_t index, uint64_t at,
		 const uint8_t **p, uint64_t *len);
/*
 * A variable-length element (4 + so + 4 bytes at @e): its bytes, of at
 * least @count x @unit bytes; a zero length gives *len 0.
 */
int h5_vlen_get(struct h5_file *f, const uint8_t *e, uint64_t at, uint32_t unit,
		const uint8_t **p, uint64_t *len);

/* ---- chunks.c */
struct h5_chunk {
	uint64_t addr; /* relative */
	uint64_t size; /* stored bytes */
	uint32_t mask;
	uint64_t at; /* where it is listed */
};

struct h5_chunks {
	unsigned rank;
	uint64_t chunk_bytes; /* unfiltered */
	size_t n, cap;
	struct h5_chunk *c;
	uint64_t *coords; /* n x rank element coordinates */
};

/*
 * Every allocated chunk of a chunked dataset (space, layout, element
 * size, filtered or not), each checked: inside the file, its coordinates
 * multiples of the chunk dims and inside the dataspace, listed once, its
 * stored size bounded.  Sorted by coordinates.
 */
int h5_chunks_collect(struct h5_file *f, const struct h5_space *s,
		      const struct h5_layout *l, uint32_t elem_size,
		      bool filtered, struct h5_chunks *out);
void h5_chunks_free(struct h5_chunks *c);
const char *h5_index_name(unsigned index);

#endif
