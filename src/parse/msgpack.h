/* SPDX-License-Identifier: MIT */
/*
 * A MessagePack pull reader over the bounds-checked cursor (msgpack/msgpack
 * spec.md), shared by primitiv (a fixed grammar with exact type bytes) and
 * Flax checkpoints (any object).
 *
 * Nothing is allocated: a str, bin or ext payload is a pointer into the
 * mapping and its absolute offset; an array or map gives its count, and the
 * cursor stands at its first item.  Every count is checked against the bytes
 * left (an array item takes at least 1 byte, a map entry 2), so a hostile
 * count costs nothing.  Every refusal fills the diagnostic as
 * "<field>: <what>" at the absolute offset of the object's type byte.
 */
#ifndef TFS_PARSE_MSGPACK_H
#define TFS_PARSE_MSGPACK_H

#include <stdbool.h>
#include <stdint.h>

#include "core/cursor.h"

struct tfs_diag;

struct tfs_mp {
	struct tfs_cursor c;
	struct tfs_diag *d; /* may be NULL (a probe) */
};

/* the length-prefixed kinds */
enum tfs_mp_kind { TFS_MP_KSTR, TFS_MP_KBIN, TFS_MP_KARRAY, TFS_MP_KMAP };

/* what tfs_mp_next found */
enum tfs_mp_type {
	TFS_MP_NIL,
	TFS_MP_BOOL,
	TFS_MP_INT,   /* negative: @i */
	TFS_MP_UINT,  /* non-negative: @u */
	TFS_MP_FLOAT, /* float32 or float64: @f */
	TFS_MP_STR,
	TFS_MP_BIN,
	TFS_MP_ARRAY,
	TFS_MP_MAP,
	TFS_MP_EXT,
};

struct tfs_mp_obj {
	enum tfs_mp_type type;
	uint8_t byte;	/* the type byte */
	uint64_t start; /* its absolute offset */
	bool b;
	int64_t i;
	uint64_t u;
	double f;
	/* str, bin, ext: payload bytes; array: items; map: entries */
	uint64_t n;
	const uint8_t *p; /* str, bin, ext: the payload (in the mapping) */
	uint64_t at;	  /* its absolute offset */
	int8_t ext;	  /* ext: the application type */
};

/* a cursor over [@p, @p + @len) whose first byte is at offset @base */
void tfs_mp_init(struct tfs_mp *m, const void *p, uint64_t len, uint64_t base,
		 struct tfs_diag *d);

/* record "<field>: <message>" at @off; returns @err */
int tfs_mp_fail(struct tfs_mp *m, int err, uint64_t off, const char *field,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* the next object's type byte; *@start gets its offset */
int tfs_mp_type(struct tfs_mp *m, const char *field, const char *expect,
		uint8_t *type, uint64_t *start);

/* "expected @expect, found type byte 0x..@hint" at @start */
int tfs_mp_wrong_type(struct tfs_mp *m, uint64_t start, const char *field,
		      const char *expect, uint8_t type, const char *hint);

/* the big-endian @width-byte payload after a type byte (@what: messages) */
int tfs_mp_payload(struct tfs_mp *m, uint64_t start, const char *field,
		   const char *what, unsigned width, uint64_t *v);

/* the header of a str/bin/array/map: its length or count in *@n */
int tfs_mp_len(struct tfs_mp *m, const char *field, enum tfs_mp_kind kind,
	       uint64_t *n, uint64_t *start);

/* a str or bin: *@bytes into the mapping, *@at its payload's offset */
int tfs_mp_bytes(struct tfs_mp *m, const char *field, enum tfs_mp_kind kind,
		 const uint8_t **bytes, uint64_t *len, uint64_t *start,
		 uint64_t *at);

/* refuse @n items of at least @min_each bytes that cannot fit */
int tfs_mp_count_fits(struct tfs_mp *m, const char *field, uint64_t start,
		      uint64_t n, uint64_t min_each, const char *what);

/*
 * Any object's head into *@o: scalars whole, str/bin/ext with their
 * payload (the cursor moves past it), arrays and maps with their count
 * (checked against the bytes left; the cursor at the first item).
 * 0xc1 (never used) is refused.
 */
int tfs_mp_next(struct tfs_mp *m, const char *field, struct tfs_mp_obj *o);

/*
 * Skip one whole object whose arrays and maps nest at most @max_depth
 * levels (an array or map at the top is level 1).  @each, when not NULL, sees every object's head.
 */
int tfs_mp_skip(struct tfs_mp *m, const char *field, unsigned max_depth,
		void (*each)(void *arg, const struct tfs_mp_obj *o), void *arg);

#endif
