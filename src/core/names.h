/* SPDX-License-Identifier: MIT */
/*
 * Name mapping: stored tensor names to safe path components.
 * The rules are a contract, written down in docs/tree.md.
 */
#ifndef TENSORFS_NAMES_H
#define TENSORFS_NAMES_H

#include <stddef.h>

#include "core/abi.h"

#define TFS_NAME_MAX 255

/*
 * Escape @len bytes into one path component (malloc'd, NUL-terminated):
 * '%', '/', NUL, control bytes (0x01-0x1f, 0x7f), C1 controls (U+0080..U+009F,
 * each of their two bytes) and bytes that are not part
 * of valid UTF-8 become "%XX"; "" becomes "%", "." "%2E", ".." "%2E%2E";
 * longer than @max bytes: cut at a character boundary and "~" + 16 hex
 * digits of a 64-bit FNV-1a hash of the full escaped text appended.
 * The mapping is injective up to that hash.  NULL on allocation failure.
 */
char *tfs_name_escape(const char *s, size_t len, size_t max);

/* Shorten @comp in place to at most @max bytes at a character boundary. */
void tfs_name_cut(char *comp, size_t max);

/*
 * A stored name as a message names it: escaped like a path component
 * (tfs_name_escape's bytes: '%' as "%25", '/', control bytes and invalid
 * UTF-8 as %XX, "" as "%"), so every "%XX" in a quoted name is an escape
 * and a name prints the same through every reader and the builder; cut to
 * fit @buf with "..." when longer.  Writes nothing but @buf (no
 * allocation); always NUL-terminates; returns @buf.
 */
#define TFS_PRINTABLE_MAX 160
char *tfs_name_printable(char *buf, size_t len, const char *name,
			 size_t name_len);

/*
 * The same into a buffer of its own that lives until the end of the
 * enclosing block: the way a message quotes a name,
 * tfs_diag_at(d, -EBADMSG, off, "tensor '%s': ...", TFS_SHOWN(p, len)).
 */
#define TFS_SHOWN(name, len)                                                   \
	tfs_name_printable((char[TFS_PRINTABLE_MAX]){0}, TFS_PRINTABLE_MAX,    \
			   (name), (len))

/* bytewise order of two stored names (memcmp, the shorter first on a tie) */
TFS_PRIVATE int tfs_name_cmp(const char *a, size_t alen, const char *b,
			     size_t blen);

/* true when @s..@len is valid UTF-8 (overlongs and surrogates invalid) */
int tfs_utf8_valid(const unsigned char *s, size_t len);

/* length of the valid UTF-8 sequence at s (1..4), or 0 if invalid */
size_t tfs_utf8_seq(const unsigned char *s, size_t len);

#endif
