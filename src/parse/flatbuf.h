/* SPDX-License-Identifier: MIT */
/*
 * A bounded reader of FlatBuffers binaries (google/flatbuffers, "FlatBuffers
 * internals"), for the containers that are flatbuffers: TFLite models.  It
 * knows nothing of any schema; a format reader walks its own schema with it.
 *
 * Everything is checked before a byte is read, as the official verifier
 * does: every uoffset is non-zero and lands inside the buffer, every table
 * is 4-aligned with its vtable (even size >= 4, 2-aligned) and itself
 * (size >= 4) inside the buffer, a field fits inside its table's declared
 * size and is naturally aligned, a vector is 4-aligned with count x element
 * size inside the buffer (64-bit arithmetic; 8-byte elements 8-aligned), a
 * string has its NUL inside the buffer.  Tables are counted (at most
 * @max_tables opened per reader) and their nesting is bounded
 * (@max_depth), so a hostile buffer costs bounded time.
 *
 * Failures return -EBADMSG (a rule broken) or -E2BIG (a limit exceeded)
 * and fill the diagnostic with the caller's name of the field ("what",
 * e.g. "SubGraph.tensors") and the absolute byte offset of the offending
 * bytes.  Nothing is allocated: strings and vectors point into the buffer,
 * which must outlive the reader.  Not thread-safe (a reader counts tables).
 */
#ifndef TFS_PARSE_FLATBUF_H
#define TFS_PARSE_FLATBUF_H

#include <stdbool.h>
#include <stdint.h>

struct tfs_diag;

#define TFS_FB_MAX_DEPTH 64	   /* the official verifier's default */
#define TFS_FB_MAX_TABLES 1000000u /* ″ */

struct tfs_fb {
	const uint8_t *p; /* the buffer (file offset 0 = p[0]) */
	uint64_t n;	  /* its length: nothing is read at or past n */
	uint64_t high;	  /* end of the furthest object checked so far */
	uint32_t tables;  /* tables opened so far */
	uint32_t max_tables;
	unsigned max_depth;
};

/* A table: its position, its vtable and its nesting depth (root: 0). */
struct tfs_fb_table {
	uint64_t pos;
	uint64_t vt;
	uint16_t vsize; /* bytes of the vtable */
	uint16_t tsize; /* bytes of the table's inline part */
	unsigned depth;
};

/* A vector: @count elements of @elem bytes from @pos; its length at @at. */
struct tfs_fb_vec {
	uint64_t at;
	uint64_t pos;
	uint32_t count;
	uint32_t elem;
};

/* A string: @len bytes at @p (into the buffer, NUL after them), at @at. */
struct tfs_fb_str {
	const char *p;
	uint32_t len;
	uint64_t at;
};

/*
 * Start reading the @n bytes at @p with the default limits (the fields may
 * be changed before use).
 */
void tfs_fb_init(struct tfs_fb *fb, const void *p, uint64_t n);

/* The root table, through the uoffset at byte 0. */
int tfs_fb_root(struct tfs_fb *fb, struct tfs_fb_table *t, struct tfs_diag *d);

/* Follow the uoffset stored at @at: *target = @at + value. */
int tfs_fb_deref(struct tfs_fb *fb, uint64_t at, const char *what,
		 uint64_t *target, struct tfs_diag *d);

/* Open the table at @pos (depth @depth), checking it and its vtable. */
int tfs_fb_table_at(struct tfs_fb *fb, uint64_t pos, unsigned depth,
		    const char *what, struct tfs_fb_table *t,
		    struct tfs_diag *d);

/*
 * Where field @id of @t is, when present: 1 and *pos, 0 when absent (an id
 * beyond the vtable or a zero entry), or -errno when its @size bytes do not
 * fit in the table or are not @size-aligned (size 1, 2, 4 or 8).
 */
int tfs_fb_field(struct tfs_fb *fb, const struct tfs_fb_table *t, unsigned id,
		 unsigned size, const char *what, uint64_t *pos,
		 struct tfs_diag *d);

/*
 * A scalar field of @size bytes, little-endian, zero-extended into *out;
 * @def when absent.  The caller casts (int8_t etc.) for signed fields.
 */
int tfs_fb_scalar(struct tfs_fb *fb, const struct tfs_fb_table *t, unsigned id,
		  unsigned size, uint64_t def, const char *what, uint64_t *out,
		  struct tfs_diag *d);

/*
 * A vector field of @elem-byte elements (1, 2, 4, 8, or any size for
 * structs): 1 with *v filled, 0 when absent (*v zeroed), -E2BIG when its
 * count exceeds @max_count, -EBADMSG when it breaks a rule.
 */
int tfs_fb_vector(struct tfs_fb *fb, const struct tfs_fb_table *t, unsigned id,
		  uint32_t elem, uint32_t max_count, const char *what,
		  struct tfs_fb_vec *v, struct tfs_diag *d);

/* A string field: 1 with *s filled, 0 when absent (*s zeroed), -errno. */
int tfs_fb_string(struct tfs_fb *fb, const struct tfs_fb_table *t, unsigned id,
		  const char *what, struct tfs_fb_str *s, struct tfs_diag *d);

/* A sub-table field (depth + 1): 1 with *child, 0 when absent, -errno. */
int tfs_fb_child(struct tfs_fb *fb, const struct tfs_fb_table *t, unsigned id,
		 const char *what, struct tfs_fb_table *child,
		 struct tfs_diag *d);

/*
 * Element @i (< v->count) of a vector of tables (uoffsets, @elem 4) whose
 * holder is @parent: the table at depth parent->depth + 1.
 */
int tfs_fb_vec_table(struct tfs_fb *fb, const struct tfs_fb_table *parent,
		     const struct tfs_fb_vec *v, uint32_t i, const char *what,
		     struct tfs_fb_table *t, struct tfs_diag *d);

/* Element @i (< v->count) of a vector of scalars, zero-extended. */
static inline uint64_t tfs_fb_vec_le(const struct tfs_fb *fb,
				     const struct tfs_fb_vec *v, uint32_t i)
{
	const uint8_t *b = fb->p + v->pos + (uint64_t)i * v->elem;
	uint64_t x = 0;
	unsigned k = v->elem > 8 ? 8 : v->elem;

	while (k--)
		x = (x << 8) | b[k];
	return x;
}

#endif
