/* SPDX-License-Identifier: MIT */
/*
 * CBOR helpers over libcbor, shared by the CBOR-based readers (zTensor,
 * Burnpack).  See shared/specs/cbor.md.
 *
 * tfs_cbor_decode() first walks the bytes itself: every declared length and
 * count is checked against the bytes that remain, nesting is capped and
 * reserved encodings are refused, each with its exact byte offset.  Only a
 * well-formed item is handed to cbor_load(), so libcbor never allocates for
 * counts the input cannot hold.
 */
#ifndef TENSORFS_CBOR_H
#define TENSORFS_CBOR_H

#include <cbor.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tfs_diag;

#define TFS_CBOR_MAX_DEPTH 128

/*
 * Decode the one CBOR item at the start of @p (@len bytes, at absolute
 * offset @base).  *used gets its encoded length (bytes after it are the
 * caller's business).  The caller owns *out (cbor_decref).
 */
int tfs_cbor_decode(const uint8_t *p, uint64_t len, uint64_t base,
		    unsigned max_depth, cbor_item_t **out, uint64_t *used,
		    struct tfs_diag *d);

/* tfs_cbor_decode()'s checks alone: the item's length in *used, no DOM */
int tfs_cbor_walk(const uint8_t *p, uint64_t len, uint64_t base,
		  unsigned max_depth, uint64_t *used, struct tfs_diag *d);

/*
 * tfs_cbor_decode() without its checks, for an item inside bytes that
 * tfs_cbor_walk() accepted (a pair of a walked map): *used gets its length.
 */
int tfs_cbor_load_walked(const uint8_t *p, uint64_t len, uint64_t base,
			 cbor_item_t **out, uint64_t *used, struct tfs_diag *d);

/*
 * The item at @p is a definite-length map (untagged): its pair count in
 * *npairs and the length of its head in *head (its first key follows);
 * else -ENOENT.  Lengths are not checked: walk the item first.
 */
int tfs_cbor_map_head(const uint8_t *p, uint64_t len, uint64_t *npairs,
		      uint64_t *head);

/*
 * Reading CBOR in place, without a DOM, for items tfs_cbor_walk() accepted
 * and in their plain form only: definite lengths, no tags.  Each call
 * reads the item at @pos and moves past it: 0, or -EAGAIN when the item is
 * not of the asked type in that form (or runs past @len), leaving @pos
 * where it was: the caller then decodes it with libcbor, which knows every
 * form and says what is wrong.  100,000 small maps read so cost no
 * allocation each.
 */
struct tfs_cbor_pull {
	const uint8_t *p;
	uint64_t len, pos;
};

int tfs_cbor_pull_uint(struct tfs_cbor_pull *c, uint64_t *out);
/* definite text, valid UTF-8: its bytes in place (not NUL-terminated) */
int tfs_cbor_pull_text(struct tfs_cbor_pull *c, const char **s, size_t *n);
/* the head of a definite array or map: its item or pair count */
int tfs_cbor_pull_array(struct tfs_cbor_pull *c, uint64_t *n);
int tfs_cbor_pull_map(struct tfs_cbor_pull *c, uint64_t *npairs);
/* past the next item, whatever its form (walked again: bounded) */
int tfs_cbor_pull_skip(struct tfs_cbor_pull *c);

/*
 * RFC 8949 "core deterministic encoding", checked on the bytes before
 * decoding (zTensor 2.x; shared/specs/ztensor-v2.md section 2): definite
 * lengths only, shortest heads, no tags, simple values false/true/null
 * only, floats in their shortest exact width with F9 7E00 the only NaN,
 * map keys strictly ascending by their encoded bytes, valid UTF-8, counts
 * that fit the bytes left, item depth (root 0) at most @max_depth, and
 * nothing after the one item.  The first violation in byte order is
 * reported in @d (exact offset) and its class returned in *violation.
 * Returns 0, -EBADMSG or -ENOMEM.  Recursion is bounded by @max_depth.
 */
enum tfs_cbor_violation {
	TFS_CBOR_OK = 0,
	TFS_CBOR_SYNTAX,	/* not well-formed, or outside the subset */
	TFS_CBOR_DETERMINISM,	/* not the deterministic encoding */
	TFS_CBOR_DUPLICATE_KEY, /* a map key equal to the previous one */
	TFS_CBOR_DEPTH,		/* nested deeper than allowed */
};
int tfs_cbor_check_deterministic(const uint8_t *p, uint64_t len, uint64_t base,
				 unsigned max_depth,
				 enum tfs_cbor_violation *violation,
				 struct tfs_diag *d);

/* The item under any tags. */
cbor_item_t *tfs_cbor_untag(cbor_item_t *item);

/* an unsigned integer (under tags); false for anything else */
bool tfs_cbor_uint(cbor_item_t *item, uint64_t *out);

/*
 * A text string's bytes (definite or chunked), checked to be UTF-8; *out
 * is malloc'd and NUL-terminated, *len (may be NULL) its length.
 * -EBADMSG when not text or not UTF-8, -ENOMEM.
 */
int tfs_cbor_text(cbor_item_t *item, char **out, size_t *len);

/* true when @item is a text string equal to @s */
bool tfs_cbor_text_eq(cbor_item_t *item, const char *s);

/*
 * For a struct-like map (fixed field names): the value of key @key, or NULL.
 * Duplicate or non-text keys are reported by tfs_cbor_struct_check().
 */
cbor_item_t *tfs_cbor_get(cbor_item_t *map, const char *key);

/*
 * Check that every key of @map is a UTF-8 text string and that no key
 * appears twice; on failure *bad gets the offending key text (malloc'd,
 * may be NULL) and -EBADMSG is returned.
 */
/*
 * The smallest of @n NUL-terminated keys that is given twice, or NULL;
 * @keys is sorted (strcmp order) on return
 */
const char *tfs_cbor_key_twice(char **keys, size_t n);

int tfs_cbor_keys_check(cbor_item_t *map, char **bad);

/*
 * Convert to JSON (cbor.md section 5): ints exact, floats as numbers
 * (non-finite as null), bytes as lowercase hex, maps with text keys as
 * objects, other maps as arrays of [key, value] pairs, tags dropped.
 * NULL on invalid UTF-8 or allocation failure.  Caller owns the result.
 */
json_t *tfs_cbor_to_json(cbor_item_t *item);

/*
 * A scalar (unsigned or negative int, UTF-8 text without NUL, bool, null,
 * float in the shortest text that reads back as its width) as text in @buf
 * of @len bytes; false for anything else or text that does not fit.
 */
bool tfs_cbor_scalar_text(cbor_item_t *v, char *buf, size_t len);


#endif
