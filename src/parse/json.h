/* SPDX-License-Identifier: MIT */
/*
 * An offset-keeping pull reader of untrusted JSON (RFC 8259, as strict as
 * serde_json): a safetensors header (up to 100 MB), a Hugging Face
 * *.index.json.  jansson stays for writing JSON; this reads.
 *
 * The reader allocates nothing: memory is O(nesting depth) in the struct,
 * whatever the document's counts.  tfs_json_next() returns one token at a
 * time with its absolute byte offset (the caller gives the file offset of
 * the buffer's first byte), so a reader can refuse a field naming where it
 * is.  Strings are validated (UTF-8, escapes, no raw control bytes) as they
 * are scanned; their decoded value is produced on demand.  Exactly one
 * top-level value, surrounded by optional whitespace (space, tab, CR, LF).
 *
 * Every failure is -EBADMSG with a diagnostic naming what was expected and
 * the absolute offset of the offending byte.
 */
#ifndef TFS_PARSE_JSON_H
#define TFS_PARSE_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tfs_diag;

#define TFS_JSON_MAX_DEPTH 64

enum tfs_json_kind {
	TFS_JSON_NONE = 0,
	TFS_JSON_OBJECT,     /* '{' */
	TFS_JSON_OBJECT_END, /* '}' */
	TFS_JSON_ARRAY,	     /* '[' */
	TFS_JSON_ARRAY_END,  /* ']' */
	TFS_JSON_KEY,	     /* a member name (the ':' is consumed) */
	TFS_JSON_STRING,
	TFS_JSON_NUMBER,
	TFS_JSON_TRUE,
	TFS_JSON_FALSE,
	TFS_JSON_NULL,
	TFS_JSON_END, /* the document is complete */
};

struct tfs_json_token {
	enum tfs_json_kind kind;
	uint64_t offset; /* absolute offset of its first byte */
	const char *p;	 /* strings and keys: between the quotes; numbers */
	size_t len;
	bool escaped; /* a string holding backslash escapes */
	unsigned depth; /* an object or array: its nesting level (root: 1) */
};

struct tfs_json {
	const char *buf;
	size_t len, pos;
	uint64_t base;
	unsigned depth, max_depth;
	/* per open container: 'o' or 'a', and what may come next */
	char kind[TFS_JSON_MAX_DEPTH + 1];
	uint8_t state[TFS_JSON_MAX_DEPTH + 1];
	bool done;
};

/* Read @len bytes at @buf, whose first byte is at file offset @base. */
void tfs_json_init(struct tfs_json *j, const void *buf, size_t len,
		   uint64_t base, unsigned max_depth);

/* The next token: 0, or -EBADMSG with @d filled. */
int tfs_json_next(struct tfs_json *j, struct tfs_json_token *t,
		  struct tfs_diag *d);

/*
 * Skip the rest of the value @t began (an object or array: up to its end;
 * a scalar: nothing).  0 or -EBADMSG.
 */
int tfs_json_skip(struct tfs_json *j, const struct tfs_json_token *t,
		  struct tfs_diag *d);

/* Decoded length of string/key @t (a NUL from \u0000 counts). */
size_t tfs_json_decoded_len(const struct tfs_json_token *t);

/*
 * Decode string/key @t into @out (room for tfs_json_decoded_len() + 1
 * bytes; NUL-terminated).  Returns the decoded length.  @t was validated
 * by tfs_json_next().
 */
size_t tfs_json_decode(const struct tfs_json_token *t, char *out);

/* A malloc'd decoded copy (NULL when out of memory); *len may be NULL. */
char *tfs_json_strdup(const struct tfs_json_token *t, size_t *len);

/* string/key @t decodes to exactly @s */
bool tfs_json_eq(const struct tfs_json_token *t, const char *s);

/*
 * A number token as a non-negative integer (no sign, fraction or
 * exponent): 0, -EINVAL when it is not one, -ERANGE above UINT64_MAX.
 */
int tfs_json_u64(const struct tfs_json_token *t, uint64_t *v);

/*
 * Typed field checks and loops, so that every reader refuses a field of
 * the wrong kind in one message shape, "WHAT: not an object" (WHAT is
 * printf'd from @fmt: "tensor 'w': shape"), at the value's offset.
 */

/* @t is a value of @kind (OBJECT, ARRAY, STRING, NUMBER): 0 or -EBADMSG. */
int tfs_json_want(const struct tfs_json_token *t, enum tfs_json_kind kind,
		  struct tfs_diag *d, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * The document's first token, which must open an object: 0 with it in
 * @t, or -EBADMSG ("WHAT: not a JSON object").
 */
int tfs_json_root(struct tfs_json *j, struct tfs_json_token *t,
		  const char *what, struct tfs_diag *d);

/*
 * The next member of the object @open began: 1 with its key in @k and the
 * first token of its value in @v, 0 at the object's end, or -EBADMSG.
 * What the caller left unread of the member before (an object or array it
 * did not want) is skipped first, so "while ((ret = tfs_json_member(...))
 * > 0)" walks an object reading only the members it knows.  @k and @v
 * must not be @open.
 */
int tfs_json_member(struct tfs_json *j, const struct tfs_json_token *open,
		    struct tfs_json_token *k, struct tfs_json_token *v,
		    struct tfs_diag *d);

/* The next element of the array @open began: 1 with it in @e, 0 at its end
 * (an element left unread is skipped, as by tfs_json_member). */
int tfs_json_item(struct tfs_json *j, const struct tfs_json_token *open,
		  struct tfs_json_token *e, struct tfs_diag *d);

/*
 * Read the array @open began (checked with tfs_json_want) into @out: at
 * most @max non-negative integers, each at most UINT64_MAX; *count gets
 * how many.  0, or -EBADMSG ("WHAT: more than MAX entries", "WHAT: N is
 * above 2^64-1", "WHAT: not a non-negative integer").
 */
int tfs_json_u64s(struct tfs_json *j, const struct tfs_json_token *open,
		  uint64_t *out, uint32_t max, uint32_t *count,
		  struct tfs_diag *d, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));

/*
 * The value @t began as a jansson value (the caller owns *out), reading
 * the rest of it.  At most @max_nodes values: -E2BIG (with @d) beyond.
 * Big integers that do not fit int64 become their decimal strings.
 */
int tfs_json_to_jansson(struct tfs_json *j, const struct tfs_json_token *t,
			size_t max_nodes, json_t **out, struct tfs_diag *d);

#endif
