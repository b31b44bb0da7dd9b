/* SPDX-License-Identifier: MIT */
/*
 * The one escaper of text that reaches a terminal or a log.
 *
 * Every message (diagnostics, builder warnings, listings, info lines) may
 * quote bytes of a container: a tensor name, a dtype string, a metadata
 * value.  Such bytes can hold newlines, terminal escapes or broken UTF-8.
 * Diagnostics and warnings are made safe when they are recorded
 * (src/core/diag.c, the builder's warnings); the CLI and the daemon print
 * what they add through the same function, so every line they print is one
 * printable line.
 */
#ifndef TENSORFS_TEXT_H
#define TENSORFS_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "core/abi.h"

/*
 * Copy @n bytes of @s into @buf (@len bytes, always NUL-terminated) as
 * printable text: C0 control bytes, DEL, C1 controls (U+0080..U+009F) and
 * bytes that are not part of valid UTF-8 become "%XX" (one per byte); valid
 * UTF-8 and every other byte ('%' and '/' included) stay as they are: the
 * text it prints holds paths of the mount, whose "%XX" must not become
 * "%25XX".  A stored name inside a message is escaped before, by
 * TFS_SHOWN() (names.h: '%' as "%25" like a path component).  When
 * @buf is too small the text is cut at a character boundary, never inside
 * a UTF-8 sequence or a "%XX".  Returns @buf.
 */
char *tfs_text_safe(char *buf, size_t len, const char *s, size_t n);

/*
 * The length of @s (@n bytes) without a UTF-8 sequence cut at its end (the
 * text was truncated by a fixed-size buffer): what tfs_text_safe() should
 * be given so that the cut does not show as escaped bytes.
 */
size_t tfs_text_whole(const char *s, size_t n);

/*
 * The bytes of the character at @s (@n > 0 bytes) that tfs_text_safe()
 * keeps as they are (1..4), or 0 when it escapes its first byte.
 */
TFS_PRIVATE size_t tfs_text_safe_len(const char *s, size_t n);

/* true when tfs_text_safe() would leave @s (@n bytes) as it is */
bool tfs_text_is_safe(const char *s, size_t n);

/* the same into a malloc'd string, NULL when out of memory */
TFS_PRIVATE char *tfs_text_safe_dup(const char *s, size_t n);

/*
 * @path as it may be shown: a URL ("scheme://...") without its
 * "user:password@" and without its query or fragment (a signature);
 * anything else as it is.  Written into @buf (@len bytes) through
 * tfs_text_safe(); returns @buf.
 */
TFS_PRIVATE char *tfs_text_location(char *buf, size_t len, const char *path);

#endif
