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
 * The value @t began as a jansson value (the caller owns *out), reading
 * the rest of it.  At most @max_nodes values: -E2BIG (with @d) beyond.
 * Big integers that do not fit int64 become their decimal strings.
 */
int tfs_json_to_jansson(struct tfs_json *j, const struct tfs_json_token *t,
			size_t max_nodes, json_t **out, struct tfs_diag *d);

#endif
