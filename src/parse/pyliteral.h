/* SPDX-License-Identifier: MIT */
/*
 * A strict reader of the Python literal subset that numpy writes in .npy
 * headers (repr() of a dict, read back by numpy with ast.literal_eval):
 *
 *   value  := dict | list | tuple | '(' value ')' | str | int
 *             | 'True' | 'False' | 'None'
 *   dict   := '{' [value ':' value {',' value ':' value} [',']] '}'
 *   list   := '[' [value {',' value} [',']] ']'
 *   tuple  := '(' ')' | '(' value ',' ')' | '(' value {',' value}+ [','] ')'
 *   str    := '...' | "..." with the escapes repr() writes
 *             (\\ \' \" \n \r \t \a \b \f \v \xHH \uHHHH \UHHHHHHHH)
 *   int    := ['-'] decimal digits without leading zeros, within int64,
 *             optionally followed by 'L' (Python 2 long) when allowed
 *
 * with blanks (space, tab, CR, LF, FF) between tokens, and nothing but
 * blanks after the value.  Not an evaluator: no names, no operators, no
 * string concatenation, no other number forms.  Every refusal says what was
 * wrong and where (absolute byte offset).  Duplicate dict keys (same kind
 * and value, for str and int keys) are refused: Python would silently keep
 * the last one.
 */
#ifndef TFS_PARSE_PYLITERAL_H
#define TFS_PARSE_PYLITERAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tfs_diag;

enum tfs_py_kind {
	TFS_PY_NONE,
	TFS_PY_BOOL,
	TFS_PY_INT,
	TFS_PY_STR,
	TFS_PY_TUPLE,
	TFS_PY_LIST,
	TFS_PY_DICT,
};

struct tfs_py {
	enum tfs_py_kind kind;
	uint64_t offset; /* absolute offset of its first byte */
	uint64_t end;	 /* absolute offset just past its last byte */
	bool b;		 /* BOOL */
	int64_t i;	 /* INT */
	char *s;	 /* STR: decoded, UTF-8, NUL-terminated */
	size_t len;	 /* STR: bytes in s (it may hold NULs) */
	/* TUPLE, LIST: n items; DICT: n pairs, key items[2k], value [2k+1] */
	struct tfs_py *items;
	size_t n;
};

struct tfs_py_options {
	bool latin1;	    /* text is latin-1 (.npy 1.0, 2.0), else UTF-8 */
	bool long_suffix;   /* accept and ignore 'L' after an integer */
	unsigned max_depth; /* nesting of containers; 0: 32 */
};

/* a human name of a kind: "dict", "str", ... */
const char *tfs_py_kind_name(enum tfs_py_kind k);

/*
 * Parse the @len bytes at @text, whose first byte is at absolute offset
 * @base, into *out (free it with tfs_py_free).  0, -EBADMSG, -ENOMEM; the
 * diagnostic names the problem and the offset.
 */
int tfs_py_parse(const void *text, size_t len, uint64_t base,
		 const struct tfs_py_options *opt, struct tfs_py *out,
		 struct tfs_diag *d);
void tfs_py_free(struct tfs_py *v);

/* the value of str key @key in dict @v, or NULL */
const struct tfs_py *tfs_py_dict_get(const struct tfs_py *v, const char *key);

#endif
