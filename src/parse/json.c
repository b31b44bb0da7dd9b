// SPDX-License-Identifier: MIT
/* The JSON pull reader: see src/parse/json.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse/json.h"
#include "core/diag.h"
#include "core/names.h"

/* what may come next inside an open container */
enum {
	ST_FIRST = 0, /* just opened: a value/key or the end */
	ST_VALUE,     /* object: after "key": */
	ST_AFTER,     /* after a value: ',' or the end */
	ST_NEXT,      /* after ',': a value/key, not the end */
};

void tfs_json_init(struct tfs_json *j, const void *buf, size_t len,
		   uint64_t base, unsigned max_depth)
{
	memset(j, 0, sizeof(*j));
	j->buf = buf;
	j->len = len;
	j->base = base;
	j->max_depth = max_depth && max_depth <= TFS_JSON_MAX_DEPTH
			       ? max_depth
			       : TFS_JSON_MAX_DEPTH;
}

static int fail(struct tfs_json *j, size_t at, struct tfs_diag *d,
		const char *what)
{
	return tfs_diag_at(d, -EBADMSG, j->base + at, "JSON: %s", what);
}

static void skip_ws(struct tfs_json *j)
{
	while (j->pos < j->len) {
		char c = j->buf[j->pos];

		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
		j->pos++;
	}
}

static int hex4(const char *p, unsigned *v)
{
	unsigned i, c;

	*v = 0;
	for (i = 0; i < 4; i++) {
		c = (unsigned char)p[i];
		if (c >= '0' && c <= '9')
			c -= '0';
		else if (c >= 'a' && c <= 'f')
			c -= 'a' - 10;
		else if (c >= 'A' && c <= 'F')
			c -= 'A' - 10;
		else
			return -1;
		*v = *v << 4 | c;
	}
	return 0;
}

/* a string at j->pos (the opening quote): validated, the span in @t */
static int scan_string(struct tfs_json *j, struct tfs_json_token *t,
		       struct tfs_diag *d)
{
	size_t start = j->pos + 1, i = start, n;
	unsigned cp, lo;

	t->escaped = false;
	while (i < j->len) {
		unsigned char c = (unsigned char)j->buf[i];

		if (c == '"') {
			t->p = j->buf + start;
			t->len = i - start;
			j->pos = i + 1;
			return 0;
		}
		if (c < 0x20)
			return fail(j, i, d,
				    "a control byte inside a string (must be "
				    "escaped)");
		if (c == '\\') {
			t->escaped = true;
			if (i + 1 >= j->len)
				break;
			c = (unsigned char)j->buf[i + 1];
			if (strchr("\"\\/bfnrt", c) && c) {
				i += 2;
				continue;
			}
			if (c != 'u')
				return fail(j, i, d, "an invalid escape");
			if (i + 6 > j->len || hex4(j->buf + i + 2, &cp))
				return fail(j, i, d,
					    "\\u needs four hex digits");
			i += 6;
			if (cp >= 0xdc00 && cp <= 0xdfff)
				return fail(j, i - 6, d,
					    "a lone low surrogate escape");
			if (cp >= 0xd800 && cp <= 0xdbff) {
				if (i + 6 > j->len || j->buf[i] != '\\' ||
				    j->buf[i + 1] != 'u' ||
				    hex4(j->buf + i + 2, &lo) || lo < 0xdc00 ||
				    lo > 0xdfff)
					return fail(j, i - 6, d,
						    "a high surrogate escape "
						    "without its low half");
				i += 6;
			}
			continue;
		}
		if (c < 0x80) {
			i++;
			continue;
		}
		n = tfs_utf8_seq((const unsigned char *)j->buf + i, j->len - i);
		if (!n)
			return fail(j, i, d, "invalid UTF-8 in a string");
		i += n;
	}
	return fail(j, j->pos, d, "a string without its closing quote");
}

static int scan_number(struct tfs_json *j, struct tfs_json_token *t,
		       struct tfs_diag *d)
{
	size_t i = j->pos;
	const char *b = j->buf;

#define DIGIT(k) ((k) < j->len && b[k] >= '0' && b[k] <= '9')
	if (i < j->len && b[i] == '-')
		i++;
	if (!DIGIT(i))
		return fail(j, i, d, "a digit expected");
	if (b[i] == '0') {
		i++;
		if (DIGIT(i))
			return fail(j, i, d, "a number with a leading zero");
	} else {
		while (DIGIT(i))
			i++;
	}
	if (i < j->len && b[i] == '.') {
		i++;
		if (!DIGIT(i))
			return fail(j, i, d, "a digit expected after '.'");
		while (DIGIT(i))
			i++;
	}
	if (i < j->len && (b[i] == 'e' || b[i] == 'E')) {
		i++;
		if (i < j->len && (b[i] == '+' || b[i] == '-'))
			i++;
		if (!DIGIT(i))
			return fail(j, i, d,
				    "a digit expected in the exponent");
		while (DIGIT(i))
			i++;
	}
#undef DIGIT
	t->p = b + j->pos;
	t->len = i - j->pos;
	j->pos = i;
	return 0;
}

static int scan_literal(struct tfs_json *j, const char *word,
			enum tfs_json_kind kind, struct tfs_json_token *t,
			struct tfs_diag *d)
{
	size_t n = strlen(word);

	if (j->len - j->pos < n || memcmp(j->buf + j->pos, word, n) != 0)
		return fail(j, j->pos, d, "a value expected");
	t->kind = kind;
	t->p = j->buf + j->pos;
	t->len = n;
	j->pos += n;
	return 0;
}

/* a value starting at j->pos */
static int scan_value(struct tfs_json *j, struct tfs_json_token *t,
		      struct tfs_diag *d)
{
	char c;

	if (j->pos >= j->len)
		return fail(j, j->pos, d, "a value expected, the input ends");
	c = j->buf[j->pos];
	t->offset = j->base + j->pos;
	switch (c) {
	case '{':
	case '[':
		if (j->depth == j->max_depth)
			return fail(j, j->pos, d, "nested too deeply");
		j->depth++;
		j->kind[j->depth] = c == '{' ? 'o' : 'a';
		j->state[j->depth] = ST_FIRST;
		t->kind = c == '{' ? TFS_JSON_OBJECT : TFS_JSON_ARRAY;
		t->depth = j->depth;
		t->p = j->buf + j->pos++;
		t->len = 1;
		return 0;
	case '"':
		t->kind = TFS_JSON_STRING;
		return scan_string(j, t, d);
	case 't':
		return scan_literal(j, "true", TFS_JSON_TRUE, t, d);
	case 'f':
		return scan_literal(j, "false", TFS_JSON_FALSE, t, d);
	case 'n':
		return scan_literal(j, "null", TFS_JSON_NULL, t, d);
	default:
		if (c == '-' || (c >= '0' && c <= '9')) {
			t->kind = TFS_JSON_NUMBER;
			return scan_number(j, t, d);
		}
		return fail(j, j->pos, d, "a value expected");
	}
}

static int close_container(struct tfs_json *j, struct tfs_json_token *t)
{
	t->kind = j->kind[j->depth] == 'o' ? TFS_JSON_OBJECT_END
					   : TFS_JSON_ARRAY_END;
	t->offset = j->base + j->pos;
	t->p = j->buf + j->pos++;
	t->len = 1;
	j->depth--;
	if (j->depth)
		j->state[j->depth] = ST_AFTER;
	else
		j->done = true;
	return 0;
}

int tfs_json_next(struct tfs_json *j, struct tfs_json_token *t,
		  struct tfs_diag *d)
{
	uint8_t *st;
	char c, end;
	int ret;

	memset(t, 0, sizeof(*t));
	skip_ws(j);
	if (j->depth == 0) {
		if (j->done) {
			if (j->pos != j->len)
				return fail(j, j->pos, d,
					    "bytes after the top-level value");
			t->kind = TFS_JSON_END;
			t->offset = j->base + j->pos;
			return 0;
		}
		ret = scan_value(j, t, d);
		if (!ret && j->depth == 0)
			j->done = true; /* a scalar document */
		return ret;
	}
	st = &j->state[j->depth];
	end = j->kind[j->depth] == 'o' ? '}' : ']';
	c = j->pos < j->len ? j->buf[j->pos] : 0;
	if (j->pos >= j->len)
		return fail(j, j->pos, d,
			    end == '}' ? "the input ends inside an object"
				       : "the input ends inside an array");
	if (*st == ST_AFTER) {
		if (c == end)
			return close_container(j, t);
		if (c != ',')
			return fail(j, j->pos, d,
				    end == '}' ? "',' or '}' expected"
					       : "',' or ']' expected");
		j->pos++;
		*st = ST_NEXT;
		skip_ws(j);
		c = j->pos < j->len ? j->buf[j->pos] : 0;
	} else if (*st == ST_FIRST && c == end) {
		return close_container(j, t);
	}
	if (j->kind[j->depth] == 'o' && *st != ST_VALUE) {
		/* a member: "key" ':' */
		if (c != '"')
			return fail(j, j->pos, d,
				    *st == ST_NEXT ? "a member name expected "
						     "(no trailing comma)"
						   : "a member name or '}' "
						     "expected");
		t->kind = TFS_JSON_KEY;
		t->offset = j->base + j->pos;
		ret = scan_string(j, t, d);
		if (ret)
			return ret;
		skip_ws(j);
		if (j->pos >= j->len || j->buf[j->pos] != ':')
			return fail(j, j->pos, d, "':' expected");
		j->pos++;
		*st = ST_VALUE;
		return 0;
	}
	if (*st == ST_NEXT && c == end)
		return fail(j, j->pos, d,
			    "a value expected (no trailing comma)");
	skip_ws(j);
	*st = ST_AFTER; /* set before a nested open changes the level */
	return scan_value(j, t, d);
}

int tfs_json_skip(struct tfs_json *j, const struct tfs_json_token *t,
		  struct tfs_diag *d)
{
	struct tfs_json_token x;
	unsigned depth;
	int ret;

	if (t->kind != TFS_JSON_OBJECT && t->kind != TFS_JSON_ARRAY)
		return 0;
	depth = j->depth;
	while (j->depth >= depth) {
		ret = tfs_json_next(j, &x, d);
		if (ret)
			return ret;
		if (x.kind == TFS_JSON_END)
			break;
	}
	return 0;
}

/* decode into @out (may be NULL: count only) */
static size_t decode(const struct tfs_json_token *t, char *out)
{
	size_t i = 0, o = 0;
	unsigned cp, lo;

	while (i < t->len) {
		char c = t->p[i];

		if (c != '\\') {
			if (out)
				out[o] = c;
			o++;
			i++;
			continue;
		}
		c = t->p[i + 1];
		i += 2;
		if (c != 'u') {
			static const char from[] = "\"\\/bfnrt",
					  to[] = "\"\\/\b\f\n\r\t";

			if (out)
				out[o] = to[strchr(from, c) - from];
			o++;
			continue;
		}
		hex4(t->p + i, &cp);
		i += 4;
		if (cp >= 0xd800 && cp <= 0xdbff) {
			hex4(t->p + i + 2, &lo);
			i += 6;
			cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
		}
		if (cp < 0x80) {
			if (out)
				out[o] = (char)cp;
			o += 1;
		} else if (cp < 0x800) {
			if (out) {
				out[o] = (char)(0xc0 | cp >> 6);
				out[o + 1] = (char)(0x80 | (cp & 0x3f));
			}
			o += 2;
		} else if (cp < 0x10000) {
			if (out) {
				out[o] = (char)(0xe0 | cp >> 12);
				out[o + 1] = (char)(0x80 | ((cp >> 6) & 0x3f));
				out[o + 2] = (char)(0x80 | (cp & 0x3f));
			}
			o += 3;
		} else {
			if (out) {
				out[o] = (char)(0xf0 | cp >> 18);
				out[o + 1] = (char)(0x80 | ((cp >> 12) & 0x3f));
				out[o + 2] = (char)(0x80 | ((cp >> 6) & 0x3f));
				out[o + 3] = (char)(0x80 | (cp & 0x3f));
			}
			o += 4;
		}
	}
	if (out)
		out[o] = '\0';
	return o;
}

size_t tfs_json_decoded_len(const struct tfs_json_token *t)
{
	return t->escaped ? decode(t, NULL) : t->len;
}

size_t tfs_json_decode(const struct tfs_json_token *t, char *out)
{
	return decode(t, out);
}

char *tfs_json_strdup(const struct tfs_json_token *t, size_t *len)
{
	size_t n = tfs_json_decoded_len(t);
	char *s = malloc(n + 1);

	if (!s)
		return NULL;
	decode(t, s);
	if (len)
		*len = n;
	return s;
}

bool tfs_json_eq(const struct tfs_json_token *t, const char *s)
{
	size_t n = strlen(s);
	char *tmp;
	bool eq;

	if (!t->escaped)
		return t->len == n && memcmp(t->p, s, n) == 0;
	if (tfs_json_decoded_len(t) != n)
		return false;
	tmp = tfs_json_strdup(t, NULL);
	eq = tmp && memcmp(tmp, s, n) == 0;
	free(tmp);
	return eq;
}

int tfs_json_u64(const struct tfs_json_token *t, uint64_t *v)
{
	uint64_t x = 0;
	size_t i;

	if (t->kind != TFS_JSON_NUMBER || !t->len)
		return -EINVAL;
	for (i = 0; i < t->len; i++) {
		unsigned dgt = (unsigned)(t->p[i] - '0');

		if (dgt > 9)
			return -EINVAL; /* '-', '.', 'e' */
		if (x > (UINT64_MAX - dgt) / 10)
			return -ERANGE;
		x = x * 10 + dgt;
	}
	*v = x;
	return 0;
}

/* ---- typed field checks ------------------------------------------------ */

static const char *kind_name(enum tfs_json_kind kind)
{
	switch (kind) {
	case TFS_JSON_OBJECT:
		return "an object";
	case TFS_JSON_ARRAY:
		return "an array";
	case TFS_JSON_STRING:
		return "a string";
	case TFS_JSON_NUMBER:
		return "a number";
	case TFS_JSON_TRUE:
	case TFS_JSON_FALSE:
		return "a boolean";
	case TFS_JSON_NULL:
		return "null";
	default:
		return "a value";
	}
}

static int want(const struct tfs_json_token *t, enum tfs_json_kind kind,
		struct tfs_diag *d, const char *what)
{
	if (t->kind == kind)
		return 0;
	return tfs_diag_at(d, -EBADMSG, t->offset, "%s: not %s", what,
			   kind_name(kind));
}

int tfs_json_want(const struct tfs_json_token *t, enum tfs_json_kind kind,
		  struct tfs_diag *d, const char *fmt, ...)
{
	char what[TFS_DIAG_MSG_MAX];
	va_list ap;

	if (t->kind == kind)
		return 0;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return want(t, kind, d, what);
}

int tfs_json_root(struct tfs_json *j, struct tfs_json_token *t,
		  const char *what, struct tfs_diag *d)
{
	int ret = tfs_json_next(j, t, d);

	if (!ret && t->kind != TFS_JSON_OBJECT)
		ret = tfs_diag_at(d, -EBADMSG, t->offset,
				  "%s: not a JSON object", what);
	return ret;
}

/* back to the level of @open: what is left of a value the caller did not read
 */
static int next_in(struct tfs_json *j, const struct tfs_json_token *open,
		   struct tfs_json_token *t, struct tfs_diag *d)
{
	int ret;

	while (j->depth > open->depth) {
		ret = tfs_json_next(j, t, d);
		if (ret)
			return ret;
	}
	return tfs_json_next(j, t, d);
}

int tfs_json_member(struct tfs_json *j, const struct tfs_json_token *open,
		    struct tfs_json_token *k, struct tfs_json_token *v,
		    struct tfs_diag *d)
{
	int ret = next_in(j, open, k, d);

	if (ret)
		return ret;
	if (k->kind == TFS_JSON_OBJECT_END)
		return 0;
	ret = tfs_json_next(j, v, d);
	return ret ? ret : 1;
}

int tfs_json_item(struct tfs_json *j, const struct tfs_json_token *open,
		  struct tfs_json_token *e, struct tfs_diag *d)
{
	int ret = next_in(j, open, e, d);

	if (ret)
		return ret;
	return e->kind != TFS_JSON_ARRAY_END;
}

int tfs_json_u64s(struct tfs_json *j, const struct tfs_json_token *open,
		  uint64_t *out, uint32_t max, uint32_t *count,
		  struct tfs_diag *d, const char *fmt, ...)
{
	struct tfs_json_token v;
	char what[TFS_DIAG_MSG_MAX];
	uint32_t n = 0;
	va_list ap;
	int ret;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	ret = want(open, TFS_JSON_ARRAY, d, what);
	if (ret)
		return ret;
	while ((ret = tfs_json_item(j, open, &v, d)) > 0) {
		if (n == max)
			return tfs_diag_at(d, -EBADMSG, v.offset,
					   "%s: more than %u entries", what,
					   max);
		ret = tfs_json_u64(&v, &out[n]);
		if (ret == -ERANGE)
			return tfs_diag_at(d, -EBADMSG, v.offset,
					   "%s: %.*s is above 2^64-1", what,
					   (int)v.len, v.p);
		if (ret)
			return tfs_diag_at(d, -EBADMSG, v.offset,
					   "%s: not a non-negative integer",
					   what);
		n++;
	}
	*count = n;
	return ret;
}

/* ---- to jansson --------------------------------------------------------- */

static json_t *scalar(const struct tfs_json_token *t)
{
	char buf[64], *s;
	json_t *v;
	long long ll;
	char *end;

	switch (t->kind) {
	case TFS_JSON_STRING:
		s = tfs_json_strdup(t, NULL);
		v = s ? json_stringn(s, tfs_json_decoded_len(t)) : NULL;
		free(s);
		return v;
	case TFS_JSON_TRUE:
		return json_true();
	case TFS_JSON_FALSE:
		return json_false();
	case TFS_JSON_NULL:
		return json_null();
	case TFS_JSON_NUMBER:
		if (t->len >= sizeof(buf))
			return json_stringn(t->p, t->len);
		memcpy(buf, t->p, t->len);
		buf[t->len] = '\0';
		if (!strpbrk(buf, ".eE")) {
			errno = 0;
			ll = strtoll(buf, &end, 10);
			if (errno == 0 && *end == '\0')
				return json_integer(ll);
			return json_string(buf); /* beyond int64: exact */
		}
		return json_real(strtod(buf, NULL));
	default:
		return NULL;
	}
}

static int to_jansson(struct tfs_json *j, const struct tfs_json_token *t,
		      size_t *budget, json_t **out, struct tfs_diag *d)
{
	struct tfs_json_token x, key;
	json_t *c, *v;
	char *k;
	int ret;

	if (!*budget)
		return tfs_diag_at(d, -E2BIG, t->offset,
				   "JSON: more values than the limit");
	(*budget)--;
	if (t->kind != TFS_JSON_OBJECT && t->kind != TFS_JSON_ARRAY) {
		*out = scalar(t);
		return *out ? 0 : tfs_diag_oom(d);
	}
	c = t->kind == TFS_JSON_OBJECT ? json_object() : json_array();
	if (!c)
		return tfs_diag_oom(d);
	for (;;) {
		ret = tfs_json_next(j, &x, d);
		if (ret)
			goto fail;
		if (x.kind == TFS_JSON_OBJECT_END ||
		    x.kind == TFS_JSON_ARRAY_END)
			break;
		if (x.kind == TFS_JSON_KEY) {
			key = x;
			ret = tfs_json_next(j, &x, d);
			if (ret)
				goto fail;
		}
		ret = to_jansson(j, &x, budget, &v, d);
		if (ret)
			goto fail;
		if (json_is_array(c)) {
			ret = json_array_append_new(c, v);
		} else {
			k = tfs_json_strdup(&key, NULL);
			ret = k ? json_object_setn_new(
					  c, k, tfs_json_decoded_len(&key), v)
				: -1;
			free(k);
		}
		if (ret) {
			ret = tfs_diag_oom(d);
			goto fail;
		}
	}
	*out = c;
	return 0;
fail:
	json_decref(c);
	return ret;
}

int tfs_json_to_jansson(struct tfs_json *j, const struct tfs_json_token *t,
			size_t max_nodes, json_t **out, struct tfs_diag *d)
{
	size_t budget = max_nodes;

	*out = NULL;
	return to_jansson(j, t, &budget, out, d);
}
