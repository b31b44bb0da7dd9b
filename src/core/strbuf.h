/* SPDX-License-Identifier: MIT */
/*
 * A growing text (manifest.json, the export's header): appends that fail
 * (out of memory, too big) set @failed and make the rest no-ops, so a
 * writer checks once at the end.  With @count set nothing is stored: only
 * @len grows (the export sizes a header it makes later).  For src/core
 * and the readers (a dotted or slashed name that grows and shrinks as a
 * reader walks a tree: tfs_strbuf_sep, tfs_strbuf_cut).
 */
#ifndef TFS_CORE_STRBUF_H
#define TFS_CORE_STRBUF_H

#include <stddef.h>

struct tfs_strbuf {
	char *p; /* NUL-terminated, malloc'd, or NULL when empty */
	size_t len, cap;
	int failed;
	int count; /* only count the bytes: @p stays NULL */
};

void tfs_strbuf_put(struct tfs_strbuf *t, const char *s, size_t n);
void tfs_strbuf_puts(struct tfs_strbuf *t, const char *s);
/* @sep, unless @t is empty: what stands between a path's components */
void tfs_strbuf_sep(struct tfs_strbuf *t, char sep);
/* Cut @t back to its first @len bytes (what was pushed since goes). */
void tfs_strbuf_cut(struct tfs_strbuf *t, size_t len);
/*
 * @s (@n bytes of valid UTF-8) as a quoted JSON string, escaped as
 * jansson's json_dumps() escapes it without flags: '"', '\\' and the
 * controls below 0x20, nothing else
 */
void tfs_strbuf_put_json_str(struct tfs_strbuf *t, const char *s, size_t n);

#endif
