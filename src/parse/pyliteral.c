// SPDX-License-Identifier: MIT
/*
 * Python literals, the subset numpy writes: see src/parse/pyliteral.h.
 * A recursive descent over the bytes, depth-bounded; every value takes at
 * least one byte of input, so what is allocated is bounded by the input.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "parse/pyliteral.h"
#include "core/diag.h"
#include "core/names.h"

#define DEFAULT_DEPTH 32

struct parser {
	const uint8_t *p;
	size_t len, pos;
	uint64_t base;
	struct tfs_py_options opt;
	struct tfs_diag *d;
};

const char *tfs_py_kind_name(enum tfs_py_kind k)
{
	static const char *const names[] = {
		[TFS_PY_NONE] = "None",	  [TFS_PY_BOOL] = "bool",
		[TFS_PY_INT] = "int",	  [TFS_PY_STR] = "str",
		[TFS_PY_TUPLE] = "tuple", [TFS_PY_LIST] = "list",
		[TFS_PY_DICT] = "dict",
	};

	return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

static int fail(struct parser *ps, size_t pos, const char *what)
{
	return tfs_diag_at(ps->d, -EBADMSG, ps->base + pos, "%s", what);
}

static void skip_blanks(struct parser *ps)
{
	while (ps->pos < ps->len && strchr(" \t\r\n\f", ps->p[ps->pos]) &&
	       ps->p[ps->pos])
		ps->pos++;
}

static bool at(struct parser *ps, char c)
{
	return ps->pos < ps->len && ps->p[ps->pos] == (uint8_t)c;
}

/* a growable output buffer for decoded strings */
struct strbuf {
	char *p;
	size_t len, cap;
};

static int sb_put(struct strbuf *b, const void *s, size_t n)
{
	char *q;
	size_t cap;

	if (b->len + n + 1 > b->cap) {
		cap = (b->len + n + 1) * 2;
		q = realloc(b->p, cap);
		if (!q)
			return -ENOMEM;
		b->p = q;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
	return 0;
}

/* append code point @cp as UTF-8 */
static int sb_utf8(struct strbuf *b, uint32_t cp)
{
	uint8_t u[4];
	size_t n;

	if (cp < 0x80) {
		u[0] = (uint8_t)cp;
		n = 1;
	} else if (cp < 0x800) {
		u[0] = (uint8_t)(0xc0 | cp >> 6);
		u[1] = (uint8_t)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		u[0] = (uint8_t)(0xe0 | cp >> 12);
		u[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (uint8_t)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		u[0] = (uint8_t)(0xf0 | cp >> 18);
		u[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3f));
		u[3] = (uint8_t)(0x80 | (cp & 0x3f));
		n = 4;
	}
	return sb_put(b, u, n);
}

static int hex_digits(struct parser *ps, size_t pos, unsigned n, uint32_t *out)
{
	uint32_t v = 0;
	unsigned i;
	uint8_t c;

	if (ps->len - pos < n)
		return fail(ps, pos, "str: escape cut short");
	for (i = 0; i < n; i++) {
		c = ps->p[pos + i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (uint32_t)(c - 'A' + 10);
		else
			return fail(ps, pos + i,
				    "str: bad hex digit in escape");
	}
	*out = v;
	return 0;
}

static int parse_escape(struct parser *ps, struct strbuf *b)
{
	static const char simple[] = "\\\\''\"\"n\nr\rt\ta\ab\bf\fv\v";
	size_t at_pos = ps->pos; /* the backslash */
	uint32_t cp = 0;
	unsigned n;
	uint8_t c;
	int ret;
	size_t i;

	if (ps->pos + 1 >= ps->len)
		return fail(ps, at_pos, "str: unterminated string");
	c = ps->p[ps->pos + 1];
	for (i = 0; simple[i]; i += 2)
		if (c == (uint8_t)simple[i]) {
			ps->pos += 2;
			return sb_put(b, &simple[i + 1], 1);
		}
	n = c == 'x' ? 2 : c == 'u' ? 4 : c == 'U' ? 8 : 0;
	if (!n)
		return fail(ps, at_pos, "str: unsupported escape");
	ret = hex_digits(ps, ps->pos + 2, n, &cp);
	if (ret)
		return ret;
	if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return fail(ps, at_pos, "str: escape is not a code point");
	ps->pos += 2 + n;
	return sb_utf8(b, cp);
}

static int parse_str(struct parser *ps, struct tfs_py *v)
{
	uint8_t quote = ps->p[ps->pos], c;
	struct strbuf b = {0};
	size_t start = ps->pos, n;
	int ret = 0;

	ps->pos++;
	ret = sb_put(&b, "", 0);
	while (!ret) {
		if (ps->pos >= ps->len) {
			ret = fail(ps, start, "str: unterminated string");
			break;
		}
		c = ps->p[ps->pos];
		if (c == quote) {
			ps->pos++;
			break;
		}
		if (c == '\n' || c == '\r') {
			ret = fail(ps, ps->pos, "str: line break in a string");
		} else if (c == '\\') {
			ret = parse_escape(ps, &b);
		} else if (c < 0x80) {
			ret = sb_put(&b, &c, 1);
			ps->pos++;
		} else if (ps->opt.latin1) {
			ret = sb_utf8(&b, c);
			ps->pos++;
		} else if ((n = tfs_utf8_seq(ps->p + ps->pos,
					     ps->len - ps->pos)) == 0) {
			ret = fail(ps, ps->pos, "str: invalid UTF-8");
		} else {
			ret = sb_put(&b, ps->p + ps->pos, n);
			ps->pos += n;
		}
	}
	if (ret) {
		free(b.p);
		return ret == -ENOMEM ? tfs_diag_oom(ps->d) : ret;
	}
	v->kind = TFS_PY_STR;
	v->s = b.p;
	v->len = b.len;
	return 0;
}

static int parse_int(struct parser *ps, struct tfs_py *v)
{
	size_t start = ps->pos, digits;
	bool neg = false;
	uint64_t mag = 0, limit;
	uint8_t c;

	if (at(ps, '-')) {
		neg = true;
		ps->pos++;
	}
	digits = ps->pos;
	limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	while (ps->pos < ps->len && (c = ps->p[ps->pos]) >= '0' && c <= '9') {
		if (mag > (limit - (c - '0')) / 10)
			return fail(ps, start, "int: out of the 64-bit range");
		mag = mag * 10 + (c - '0');
		ps->pos++;
	}
	if (ps->pos == digits)
		return fail(ps, start, "int: '-' without digits");
	if (ps->p[digits] == '0' && ps->pos - digits > 1)
		return fail(ps, start, "int: leading zero");
	if (at(ps, 'L') && ps->opt.long_suffix)
		ps->pos++;
	if (ps->pos < ps->len &&
	    ((ps->p[ps->pos] >= 'a' && ps->p[ps->pos] <= 'z') ||
	     (ps->p[ps->pos] >= 'A' && ps->p[ps->pos] <= 'Z') ||
	     ps->p[ps->pos] == '_' || ps->p[ps->pos] == '.'))
		return fail(ps, ps->pos, "int: not a plain decimal integer");
	v->kind = TFS_PY_INT;
	v->i = neg ? (int64_t)(0 - mag) : (int64_t)mag;
	return 0;
}

static int parse_value(struct parser *ps, struct tfs_py *v, unsigned depth);
static int parse_one(struct parser *ps, struct tfs_py *v, unsigned depth);

static int push(struct parser *ps, struct tfs_py *v, size_t *cap)
{
	struct tfs_py *q;
	size_t ncap;

	if (v->n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 4;
	q = realloc(v->items, ncap * sizeof(*q));
	if (!q)
		return tfs_diag_oom(ps->d);
	v->items = q;
	*cap = ncap;
	return 0;
}

/* one more item of container @v, a level deeper */
static int parse_item(struct parser *ps, struct tfs_py *v, size_t *cap,
		      unsigned depth)
{
	int ret = push(ps, v, cap);

	return ret ? ret : parse_value(ps, &v->items[v->n++], depth + 1);
}

static bool same_key(const struct tfs_py *a, const struct tfs_py *b)
{
	if (a->kind != b->kind)
		return false;
	if (a->kind == TFS_PY_STR)
		return a->len == b->len && memcmp(a->s, b->s, a->len) == 0;
	if (a->kind == TFS_PY_INT || a->kind == TFS_PY_BOOL)
		return a->i == b->i && a->b == b->b;
	return false;
}

/*
 * The items of a dict, list or tuple after its opening bracket, up to
 * @close.  *comma: a comma followed the last item.
 */
static int parse_items(struct parser *ps, struct tfs_py *v, char close,
		       unsigned depth, bool *comma)
{
	bool dict = v->kind == TFS_PY_DICT;
	size_t cap = 0, k;
	int ret;

	*comma = false;
	for (;;) {
		skip_blanks(ps);
		if (at(ps, close)) {
			ps->pos++;
			return 0;
		}
		if (v->n && !*comma)
			return fail(ps, ps->pos,
				    dict ? "dict: expected ',' or '}'"
				    : close == ']'
					    ? "list: expected ',' or ']'"
					    : "tuple: expected ',' or ')'");
		ret = parse_item(ps, v, &cap, depth);
		if (ret)
			return ret;
		if (dict) {
			struct tfs_py *key = &v->items[v->n - 1];

			if (key->kind != TFS_PY_STR && key->kind != TFS_PY_INT)
				return fail(ps, key->offset - ps->base,
					    "dict: key is not a str or int");
			for (k = 0; k + 1 < v->n; k += 2)
				if (same_key(&v->items[k], key))
					return fail(ps, key->offset - ps->base,
						    "dict: duplicate key");
			skip_blanks(ps);
			if (!at(ps, ':'))
				return fail(ps, ps->pos, "dict: expected ':'");
			ps->pos++;
			ret = parse_item(ps, v, &cap, depth);
			if (ret)
				return ret;
		}
		skip_blanks(ps);
		*comma = at(ps, ',');
		if (*comma)
			ps->pos++;
	}
}

static bool word(struct parser *ps, const char *w)
{
	size_t n = strlen(w);
	uint8_t c;

	if (ps->len - ps->pos < n || memcmp(ps->p + ps->pos, w, n) != 0)
		return false;
	if (ps->len - ps->pos > n) {
		c = ps->p[ps->pos + n];
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '_')
			return false;
	}
	ps->pos += n;
	return true;
}

static int parse_one(struct parser *ps, struct tfs_py *v, unsigned depth)
{
	struct tfs_py inner;
	bool comma;
	uint8_t c;
	int ret;

	memset(v, 0, sizeof(*v));
	skip_blanks(ps);
	v->offset = ps->base + ps->pos;
	if (ps->pos >= ps->len)
		return fail(ps, ps->pos, "expected a value, found the end");
	if (depth > ps->opt.max_depth)
		return fail(ps, ps->pos, "nested too deep");
	c = ps->p[ps->pos];
	switch (c) {
	case '{':
	case '[':
		v->kind = c == '{' ? TFS_PY_DICT : TFS_PY_LIST;
		ps->pos++;
		return parse_items(ps, v, c == '{' ? '}' : ']', depth, &comma);
	case '(':
		v->kind = TFS_PY_TUPLE;
		ps->pos++;
		ret = parse_items(ps, v, ')', depth, &comma);
		if (ret || v->n != 1 || comma)
			return ret;
		/* (x) is x in parentheses, not a tuple */
		inner = v->items[0];
		free(v->items);
		*v = inner;
		return 0;
	case '\'':
	case '"':
		return parse_str(ps, v);
	default:
		break;
	}
	if (c == '-' || (c >= '0' && c <= '9'))
		return parse_int(ps, v);
	if (word(ps, "True") || word(ps, "False")) {
		v->kind = TFS_PY_BOOL;
		v->b = c == 'T';
		v->i = v->b;
		return 0;
	}
	if (word(ps, "None")) {
		v->kind = TFS_PY_NONE;
		return 0;
	}
	return fail(ps, ps->pos,
		    "not a literal (dict, list, tuple, str, "
		    "int, True, False or None)");
}

static int parse_value(struct parser *ps, struct tfs_py *v, unsigned depth)
{
	int ret = parse_one(ps, v, depth);

	if (!ret && v->end == 0) /* (x) keeps x's own end */
		v->end = ps->base + ps->pos;
	return ret;
}

int tfs_py_parse(const void *text, size_t len, uint64_t base,
		 const struct tfs_py_options *opt, struct tfs_py *out,
		 struct tfs_diag *d)
{
	struct parser ps = {.p = text, .len = len, .base = base, .d = d};
	int ret;

	if (opt)
		ps.opt = *opt;
	if (!ps.opt.max_depth)
		ps.opt.max_depth = DEFAULT_DEPTH;
	ret = parse_value(&ps, out, 0);
	if (!ret) {
		skip_blanks(&ps);
		if (ps.pos < ps.len)
			ret = fail(&ps, ps.pos, "text after the value");
	}
	if (ret)
		tfs_py_free(out);
	return ret;
}

void tfs_py_free(struct tfs_py *v)
{
	size_t i;

	if (!v)
		return;
	for (i = 0; i < v->n; i++)
		tfs_py_free(&v->items[i]);
	free(v->items);
	free(v->s);
	memset(v, 0, sizeof(*v));
}

const struct tfs_py *tfs_py_dict_get(const struct tfs_py *v, const char *key)
{
	size_t k, n = strlen(key);

	if (v->kind != TFS_PY_DICT)
		return NULL;
	for (k = 0; k + 1 < v->n; k += 2)
		if (v->items[k].kind == TFS_PY_STR && v->items[k].len == n &&
		    memcmp(v->items[k].s, key, n) == 0)
			return &v->items[k + 1];
	return NULL;
}
