/* SPDX-License-Identifier: MIT */
/*
 * A restricted pickle reader: a stack machine over the opcodes of pickle
 * protocols 2 to 5 that builds a tree of values and never calls anything.
 *
 * What Python's unpickler would call (GLOBAL + REDUCE, NEWOBJ, BUILD,
 * persistent ids) becomes a value that says what would have been called
 * with what: a GLOBAL is a (module, name) pair, REDUCE a (callable, args)
 * node, BUILD sets the state of the object it applies to, BINPERSID wraps
 * the persistent id.  The caller interprets the tree.  Every GLOBAL must
 * pass the caller's allow list (struct tfs_pkl_opts); any other refuses the
 * pickle with -ENOTSUP naming it, the way torch.load(weights_only=True)
 * does, so a tree never even mentions a callable nobody vetted.
 *
 * Strings, bytes and big integers point into the input (which must
 * outlive the tree).  Values live in one array and refer to each other by
 * index; memo GETs share a value, as in Python.  A list or dict can be made
 * to contain itself (APPEND of a memoized list into itself): the tree is a
 * graph, and walkers must bound their depth (TFS_PKL_MAX_DEPTH).
 *
 * Refusals name the opcode and its absolute byte offset: -EBADMSG for a
 * malformed pickle (stack underflow, memo index never PUT, truncated
 * argument, unknown opcode), -ENOTSUP for a global outside the allow list
 * or an opcode outside the supported set (protocol 0/1 text opcodes,
 * extension registry, out-of-band buffers), -E2BIG past a limit.
 */
#ifndef TFS_PARSE_PICKLE_H
#define TFS_PARSE_PICKLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tfs_diag;

/* limits (a pickle past one is refused with -E2BIG) */
#define TFS_PKL_MAX_DEPTH 200	      /* nesting of marks and of values */
#define TFS_PKL_MAX_VALUES (1u << 24) /* values in one tree */
#define TFS_PKL_MAX_LONG 1024	      /* bytes of a LONG1/LONG4 integer */
#define TFS_PKL_MAX_GLOBAL 512	      /* bytes of a GLOBAL's module/name */

#define TFS_PKL_NO_VALUE UINT32_MAX

enum tfs_pkl_kind {
	TFS_PKL_NONE,
	TFS_PKL_BOOL,
	TFS_PKL_INT,   /* fits int64: .i */
	TFS_PKL_LONG,  /* bigger: .s is its little-endian two's complement */
	TFS_PKL_FLOAT, /* .f */
	TFS_PKL_STR,   /* .s: UTF-8 as stored (not validated) */
	TFS_PKL_BYTES, /* .s (BINBYTES*, BYTEARRAY8) */
	TFS_PKL_TUPLE, /* .items */
	TFS_PKL_LIST,  /* .items */
	TFS_PKL_DICT,  /* .items: key, value, key, value... in order */
	TFS_PKL_SET,   /* .items (EMPTY_SET + ADDITEMS) */
	TFS_PKL_FROZENSET,
	TFS_PKL_GLOBAL, /* .module, .name (passed the allow list) */
	TFS_PKL_REDUCE, /* .a callable (a GLOBAL), .b its args (a TUPLE) */
	TFS_PKL_NEWOBJ, /* .a class (a GLOBAL), .b args (a TUPLE) */
	TFS_PKL_PERSID, /* .a the persistent id */
};

struct tfs_pkl_str {
	const char *p;
	size_t len;
};

struct tfs_pkl_value {
	enum tfs_pkl_kind kind;
	uint64_t offset; /* absolute offset of the opcode that made it */
	union {
		bool b;
		int64_t i;
		double f;
		struct tfs_pkl_str s;
		struct {
			struct tfs_pkl_str module, name;
		} g;
		struct {
			uint32_t a, b;
		} call;
	};
	/*
	 * Containers, and REDUCE/NEWOBJ objects that SETITEM(S) or
	 * APPEND(S) applied to (an OrderedDict is REDUCE + SETITEMS):
	 * @nitems value indexes.  @dict_items: they are key/value pairs.
	 */
	uint32_t *items;
	uint32_t nitems, cap;
	bool dict_items;
	uint32_t state; /* BUILD's state, or TFS_PKL_NO_VALUE */
	uint16_t depth; /* 0 for scalars; 1 + its deepest part when made */
};

/*
 * May GLOBAL @module.@name be named in the tree?  (The names are as stored:
 * not NUL-terminated, any bytes.)
 */
typedef bool (*tfs_pkl_allow_fn)(void *arg, const char *module, size_t mlen,
				 const char *name, size_t nlen);

struct tfs_pkl_opts {
	tfs_pkl_allow_fn allow; /* NULL: no global is allowed */
	void *arg;
};

struct tfs_pkl {
	struct tfs_pkl_value *v; /* every value made */
	uint32_t n, cap;
	uint32_t root; /* the value STOP returned */
	int protocol;  /* from PROTO, or 0 */
	uint64_t end;  /* absolute offset just past STOP */
};

/*
 * Run the pickle at @buf (@len bytes available; the pickle ends at its
 * STOP, bytes after it are not read).  @base is the absolute offset of
 * @buf[0] in the container, for diagnostics.  0 and *out filled (free it
 * with tfs_pkl_free), or -errno with @d.
 */
int tfs_pkl_parse(struct tfs_pkl *out, const void *buf, size_t len,
		  uint64_t base, const struct tfs_pkl_opts *opts,
		  struct tfs_diag *d);
void tfs_pkl_free(struct tfs_pkl *p);

/* value @idx (which must be < p->n) */
static inline const struct tfs_pkl_value *tfs_pkl_at(const struct tfs_pkl *p,
						     uint32_t idx)
{
	return &p->v[idx];
}

/* "none", "int", "tuple", ... */
const char *tfs_pkl_kind_name(enum tfs_pkl_kind k);

/* true when @v is a GLOBAL named @module.@name */
bool tfs_pkl_is_global(const struct tfs_pkl_value *v, const char *module,
		       const char *name);

/* true when @v is a STR equal to @s */
bool tfs_pkl_str_eq(const struct tfs_pkl_value *v, const char *s);

/*
 * An INT or a LONG that fits int64 into *out: 0, or -ERANGE (too big),
 * -EINVAL (not an integer; a BOOL is not one either).
 */
int tfs_pkl_int64(const struct tfs_pkl_value *v, int64_t *out);

/*
 * A LONG as decimal digits (with '-' when negative) into @buf: 0, or
 * -ENOSPC when @len is too small.
 */
int tfs_pkl_long_decimal(const struct tfs_pkl_value *v, char *buf, size_t len);

/* the name of opcode byte @op ("BINPUT"), or NULL when unknown */
const char *tfs_pkl_opcode_name(uint8_t op);

#endif
