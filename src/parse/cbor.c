// SPDX-License-Identifier: MIT
/* CBOR helpers: see src/parse/cbor.h and shared/specs/cbor.md. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse/cbor.h"
#include "core/cursor.h"
#include "core/diag.h"
#include "core/names.h"

/* ---- the structural pre-pass --------------------------------------------- */

struct frame {
	uint64_t remaining; /* items left (definite) */
	uint64_t seen;	    /* items seen (indefinite maps: parity) */
	uint8_t mt;	    /* major type of the container */
	bool indefinite;
};

#define CBOR_BREAK 0xff

int tfs_cbor_walk(const uint8_t *p, uint64_t len, uint64_t base,
		  unsigned max_depth, uint64_t *used, struct tfs_diag *d)
{
	/* a manifest walks 100,000 items: no allocation for the usual depth */
	struct frame local[TFS_CBOR_MAX_DEPTH + 1], *stack = local;
	struct tfs_cursor c;
	unsigned depth = 0;
	uint64_t arg, at;
	uint8_t ib, mt, ai;
	int ret = 0;

	if (max_depth > TFS_CBOR_MAX_DEPTH)
		stack = calloc(max_depth + 1, sizeof(*stack));
	if (!stack)
		return tfs_diag_oom(d);
	tfs_cursor_init(&c, p, len, base);
	do {
		at = tfs_cursor_offset(&c);
		if (tfs_cursor_u8(&c, &ib)) {
			ret = tfs_diag_at(d, -EBADMSG, at,
					  "CBOR: truncated (item expected)");
			goto out;
		}
		mt = ib >> 5;
		ai = ib & 0x1f;
		arg = ai;
		if (ai >= 24 && ai <= 27) {
			if (tfs_cursor_be(&c, 1u << (ai - 24), &arg)) {
				ret = tfs_diag_at(d, -EBADMSG, at,
						  "CBOR: truncated item head");
				goto out;
			}
		} else if (ai >= 28 && ai <= 30) {
			ret = tfs_diag_at(d, -EBADMSG, at,
					  "CBOR: reserved additional info %u",
					  ai);
			goto out;
		}
		if (depth && stack[depth - 1].indefinite &&
		    (stack[depth - 1].mt == 2 || stack[depth - 1].mt == 3) &&
		    ib != CBOR_BREAK &&
		    (mt != stack[depth - 1].mt || ai == 31)) {
			ret = tfs_diag_at(d, -EBADMSG, at,
					  "CBOR: bad chunk in an indefinite "
					  "string");
			goto out;
		}
		if (ib == CBOR_BREAK) {
			if (!depth || !stack[depth - 1].indefinite ||
			    (stack[depth - 1].mt == 5 &&
			     stack[depth - 1].seen % 2)) {
				ret = tfs_diag_at(d, -EBADMSG, at,
						  "CBOR: unexpected break");
				goto out;
			}
			depth--;
			goto item_done;
		}
		if (ai == 31) {
			if (mt < 2 || mt == 6 || mt == 7) {
				ret = tfs_diag_at(d, -EBADMSG, at,
						  "CBOR: indefinite length on "
						  "major type %u",
						  mt);
				goto out;
			}
		}
		switch (mt) {
		case 0:
		case 1:
		case 7:
			goto item_done;
		case 2:
		case 3:
			if (ai != 31) {
				if (tfs_cursor_need(&c, arg)) {
					ret = tfs_diag_at(
						d, -EBADMSG, at,
						"CBOR: string of %llu bytes "
						"runs past the end",
						(unsigned long long)arg);
					goto out;
				}
				if (mt == 3 &&
				    !tfs_utf8_valid(c.p + c.pos, (size_t)arg)) {
					ret = tfs_diag_at(
						d, -EBADMSG, at,
						"CBOR: text string is not "
						"valid UTF-8");
					goto out;
				}
				c.pos += arg;
				goto item_done;
			}
			break;
		case 4:
		case 5:
			if (ai != 31) {
				/* each item needs at least one byte */
				if (arg > tfs_cursor_remaining(&c) ||
				    (mt == 5 &&
				     arg > tfs_cursor_remaining(&c) / 2)) {
					ret = tfs_diag_at(
						d, -EBADMSG, at,
						"CBOR: %s of %llu items cannot "
						"fit in the %llu bytes left",
						mt == 4 ? "array" : "map",
						(unsigned long long)arg,
						(unsigned long long)
							tfs_cursor_remaining(
								&c));
					goto out;
				}
				if (arg == 0)
					goto item_done;
				if (mt == 5)
					arg *= 2;
			}
			break;
		case 6:
			arg = 1;
			break;
		}
		if (depth == max_depth) {
			ret = tfs_diag_at(d, -EBADMSG, at,
					  "CBOR: nesting deeper than %u",
					  max_depth);
			goto out;
		}
		stack[depth].mt = mt;
		stack[depth].indefinite = ai == 31 && mt != 6;
		stack[depth].remaining = arg;
		stack[depth].seen = 0;
		depth++;
		continue;
	item_done:
		while (depth) {
			struct frame *f = &stack[depth - 1];

			f->seen++;
			if (f->indefinite)
				break;
			if (--f->remaining)
				break;
			depth--;
		}
	} while (depth);

	*used = c.pos;
out:
	if (stack != local)
		free(stack);
	return ret;
}

int tfs_cbor_decode(const uint8_t *p, uint64_t len, uint64_t base,
		    unsigned max_depth, cbor_item_t **out, uint64_t *used,
		    struct tfs_diag *d)
{
	int ret;

	*out = NULL;
	ret = tfs_cbor_walk(p, len, base, max_depth, used, d);
	return ret ? ret : tfs_cbor_load_walked(p, *used, base, out, used, d);
}

int tfs_cbor_load_walked(const uint8_t *p, uint64_t len, uint64_t base,
			 cbor_item_t **out, uint64_t *used, struct tfs_diag *d)
{
	struct cbor_load_result res;
	int ret = 0;

	*out = cbor_load(p, (size_t)len, &res);
	*used = res.read;
	if (!*out || res.error.code != CBOR_ERR_NONE) {
		if (*out)
			cbor_decref(out);
		ret = tfs_diag_at(d,
				  res.error.code == CBOR_ERR_MEMERROR
					  ? -ENOMEM
					  : -EBADMSG,
				  base + res.error.position,
				  "CBOR: cannot decode (libcbor error %d)",
				  (int)res.error.code);
	}
	return ret;
}

/* ---- reading in place (tfs_cbor_pull) ------------------------------------ */

/* the head of the item at c->pos, of major type @mt: its argument */
static int pull_head(struct tfs_cbor_pull *c, unsigned mt, uint64_t *arg,
		     uint64_t *at)
{
	uint64_t pos = c->pos, i, n;
	uint8_t ib;

	if (pos >= c->len)
		return -EAGAIN;
	ib = c->p[pos++];
	if (ib >> 5 != mt || (ib & 0x1f) > 27)
		return -EAGAIN; /* another type, a tag, an indefinite length */
	*arg = ib & 0x1f;
	if (*arg >= 24) {
		n = 1u << (*arg - 24);
		if (n > c->len - pos)
			return -EAGAIN;
		for (*arg = 0, i = 0; i < n; i++)
			*arg = *arg << 8 | c->p[pos++];
	}
	*at = pos;
	return 0;
}

int tfs_cbor_pull_uint(struct tfs_cbor_pull *c, uint64_t *out)
{
	uint64_t at;
	int ret = pull_head(c, 0, out, &at);

	if (!ret)
		c->pos = at;
	return ret;
}

int tfs_cbor_pull_text(struct tfs_cbor_pull *c, const char **s, size_t *n)
{
	uint64_t len, at;
	int ret = pull_head(c, 3, &len, &at);

	if (ret)
		return ret;
	if (len > c->len - at || !tfs_utf8_valid(c->p + at, (size_t)len))
		return -EAGAIN;
	*s = (const char *)c->p + at;
	*n = (size_t)len;
	c->pos = at + len;
	return 0;
}

static int pull_count(struct tfs_cbor_pull *c, unsigned mt, uint64_t *n)
{
	uint64_t at;
	int ret = pull_head(c, mt, n, &at);

	if (!ret)
		c->pos = at;
	return ret;
}

int tfs_cbor_pull_array(struct tfs_cbor_pull *c, uint64_t *n)
{
	return pull_count(c, 4, n);
}

int tfs_cbor_pull_map(struct tfs_cbor_pull *c, uint64_t *npairs)
{
	return pull_count(c, 5, npairs);
}

int tfs_cbor_map_head(const uint8_t *p, uint64_t len, uint64_t *npairs,
		      uint64_t *head)
{
	struct tfs_cbor_pull c = {p, len, 0};

	if (tfs_cbor_pull_map(&c, npairs))
		return -ENOENT;
	*head = c.pos;
	return 0;
}

int tfs_cbor_pull_skip(struct tfs_cbor_pull *c)
{
	struct tfs_diag d;
	uint64_t used;

	tfs_diag_clear(&d);
	if (c->pos >= c->len || tfs_cbor_walk(c->p + c->pos, c->len - c->pos, 0,
					      TFS_CBOR_MAX_DEPTH, &used, &d))
		return -EAGAIN;
	c->pos += used;
	return 0;
}

/* ---- core deterministic encoding (tfs_cbor_check_deterministic) ---------- */

struct det {
	const uint8_t *p;
	uint64_t len, pos, base;
	unsigned max_depth;
	enum tfs_cbor_violation v;
	struct tfs_diag *d;
};

static int det_fail(struct det *k, enum tfs_cbor_violation v, uint64_t at,
		    const char *what)
{
	k->v = v;
	return tfs_diag_at(k->d, -EBADMSG, k->base + at, "CBOR: %s", what);
}

/* the value of an IEEE half @h */
static double half_value(uint16_t h)
{
	int e = (h >> 10) & 0x1f, m = h & 0x3ff;
	double v;

	if (e == 0)
		v = ldexp(m, -24);
	else if (e == 31)
		v = m ? NAN : INFINITY;
	else
		v = ldexp(m + 1024, e - 25);
	return (h & 0x8000) ? -v : v;
}

/*
 * Does finite or infinite @v fit exactly in a float of @mant significand
 * bits (implicit one included), minimum normal exponent @emin (as frexp
 * gives it, minus one), largest finite value @max?
 */
static bool fits_float(double v, int mant, int emin, double max)
{
	double m;
	int e;

	if (isinf(v) || v == 0)
		return true;
	v = fabs(v);
	if (v > max)
		return false;
	m = frexp(v, &e);
	if (e - 1 >= emin)
		return ldexp(m, mant) == floor(ldexp(m, mant));
	/* subnormal: a multiple of the smallest step */
	m = ldexp(v, mant - 1 - emin);
	return m == floor(m);
}

static int det_item(struct det *k, unsigned depth);

static int det_map(struct det *k, uint64_t n, unsigned depth)
{
	uint64_t i, pk = 0, pklen = 0, kstart, klen, m;
	int cmp, ret;

	for (i = 0; i < n; i++) {
		kstart = k->pos;
		ret = det_item(k, depth + 1);
		if (ret)
			return ret;
		klen = k->pos - kstart;
		if (i) {
			m = klen < pklen ? klen : pklen;
			cmp = memcmp(k->p + pk, k->p + kstart, (size_t)m);
			if (!cmp && klen == pklen)
				return det_fail(k, TFS_CBOR_DUPLICATE_KEY,
						kstart,
						"map key given twice in a row");
			if (cmp > 0 || (!cmp && klen < pklen))
				return det_fail(k, TFS_CBOR_DETERMINISM, kstart,
						"map keys not in ascending "
						"order of their encoded bytes");
		}
		pk = kstart;
		pklen = klen;
		ret = det_item(k, depth + 1);
		if (ret)
			return ret;
	}
	return 0;
}

static int det_float(struct det *k, uint64_t at, unsigned ai, uint64_t bits)
{
	union {
		uint32_t u;
		float f;
	} f32;
	union {
		uint64_t u;
		double f;
	} f64;

	if (ai == 25) {
		if (isnan(half_value((uint16_t)bits)) && bits != 0x7e00)
			return det_fail(k, TFS_CBOR_DETERMINISM, at,
					"a half-float NaN other than 7E00");
		return 0;
	}
	if (ai == 26) {
		f32.u = (uint32_t)bits;
		if (isnan(f32.f) || fits_float(f32.f, 11, -14, 65504.0))
			return det_fail(k, TFS_CBOR_DETERMINISM, at,
					"a single float that is NaN or fits "
					"a half float exactly");
		return 0;
	}
	f64.u = bits;
	if (isnan(f64.f) || fits_float(f64.f, 24, -126, FLT_MAX))
		return det_fail(k, TFS_CBOR_DETERMINISM, at,
				"a double float that is NaN or fits a single "
				"float exactly");
	return 0;
}

static int det_item(struct det *k, unsigned depth)
{
	uint64_t at = k->pos, arg, i, left;
	unsigned mt, ai, n;
	int ret;

	if (depth > k->max_depth)
		return det_fail(k, TFS_CBOR_DEPTH, at, "nesting too deep");
	if (k->pos >= k->len)
		return det_fail(k, TFS_CBOR_SYNTAX, at,
				"truncated (item expected)");
	mt = k->p[k->pos] >> 5;
	ai = k->p[k->pos] & 0x1f;
	k->pos++;
	if (mt == 6)
		return det_fail(k, TFS_CBOR_SYNTAX, at, "a tag");
	if (mt == 7 && (ai < 20 || ai == 23 || ai == 24 || ai > 27))
		return det_fail(k, TFS_CBOR_SYNTAX, at,
				"a simple value other than false, true, null "
				"or a float");
	if (ai >= 28)
		return det_fail(k, TFS_CBOR_SYNTAX, at,
				"reserved or indefinite-length item");
	arg = ai;
	if (ai >= 24) {
		n = 1u << (ai - 24);
		if (k->len - k->pos < n)
			return det_fail(k, TFS_CBOR_SYNTAX, at,
					"truncated item head");
		arg = tfs_load_be(k->p + k->pos, n);
		k->pos += n;
		if (mt == 7)
			return det_float(k, at, ai, arg);
		if ((ai == 24 && arg < 24) || (ai == 25 && arg <= 0xff) ||
		    (ai == 26 && arg <= 0xffff) ||
		    (ai == 27 && arg <= 0xffffffffull))
			return det_fail(k, TFS_CBOR_DETERMINISM, at,
					"argument not in its shortest form");
	}
	left = k->len - k->pos;
	switch (mt) {
	case 2:
	case 3:
		if (arg > left)
			return det_fail(k, TFS_CBOR_SYNTAX, at,
					"string runs past the end");
		if (mt == 3 && !tfs_utf8_valid(k->p + k->pos, (size_t)arg))
			return det_fail(k, TFS_CBOR_SYNTAX, at,
					"text string is not valid UTF-8");
		k->pos += arg;
		return 0;
	case 4:
		if (arg > left)
			return det_fail(k, TFS_CBOR_SYNTAX, at,
					"array count larger than the bytes "
					"left");
		for (i = 0; i < arg; i++) {
			ret = det_item(k, depth + 1);
			if (ret)
				return ret;
		}
		return 0;
	case 5:
		if (arg > left / 2)
			return det_fail(k, TFS_CBOR_SYNTAX, at,
					"map count larger than the bytes left "
					"can hold");
		return det_map(k, arg, depth);
	default:
		return 0;
	}
}

int tfs_cbor_check_deterministic(const uint8_t *p, uint64_t len, uint64_t base,
				 unsigned max_depth,
				 enum tfs_cbor_violation *violation,
				 struct tfs_diag *d)
{
	struct det k = {.p = p,
			.len = len,
			.base = base,
			.max_depth = max_depth,
			.d = d};
	int ret = det_item(&k, 0);

	if (!ret && k.pos != len)
		ret = det_fail(&k, TFS_CBOR_SYNTAX, k.pos,
			       "bytes left after the top-level item");
	*violation = k.v;
	return ret;
}

/* ---- accessors ------------------------------------------------------------
 */

cbor_item_t *tfs_cbor_untag(cbor_item_t *item)
{
	cbor_item_t *inner;

	while (item && cbor_isa_tag(item)) {
		/* cbor_tag_item() takes a reference: give it back at once */
		inner = cbor_tag_item(item);
		item = inner ? cbor_move(inner) : NULL;
	}
	return item;
}

bool tfs_cbor_uint(cbor_item_t *item, uint64_t *out)
{
	item = tfs_cbor_untag(item);
	if (!item || !cbor_isa_uint(item))
		return false;
	*out = cbor_get_int(item);
	return true;
}

int tfs_cbor_text(cbor_item_t *item, char **out, size_t *len)
{
	size_t n = 0, i, total = 0;
	cbor_item_t **chunks;
	char *s;

	item = tfs_cbor_untag(item);
	if (!item || !cbor_isa_string(item))
		return -EBADMSG;
	if (cbor_string_is_definite(item)) {
		total = cbor_string_length(item);
	} else {
		chunks = cbor_string_chunks_handle(item);
		n = cbor_string_chunk_count(item);
		for (i = 0; i < n; i++)
			total += cbor_string_length(chunks[i]);
	}
	s = malloc(total + 1);
	if (!s)
		return -ENOMEM;
	if (cbor_string_is_definite(item)) {
		if (total)
			memcpy(s, cbor_string_handle(item), total);
	} else {
		chunks = cbor_string_chunks_handle(item);
		total = 0;
		for (i = 0; i < n; i++) {
			size_t l = cbor_string_length(chunks[i]);

			if (l)
				memcpy(s + total, cbor_string_handle(chunks[i]),
				       l);
			total += l;
		}
	}
	s[total] = '\0';
	if (!tfs_utf8_valid((const unsigned char *)s, total)) {
		free(s);
		return -EBADMSG;
	}
	*out = s;
	if (len)
		*len = total;
	return 0;
}

bool tfs_cbor_text_eq(cbor_item_t *item, const char *s)
{
	size_t l = strlen(s);

	item = tfs_cbor_untag(item);
	if (!item || !cbor_isa_string(item) || !cbor_string_is_definite(item))
		return false;
	return cbor_string_length(item) == l &&
	       (l == 0 || memcmp(cbor_string_handle(item), s, l) == 0);
}

cbor_item_t *tfs_cbor_get(cbor_item_t *map, const char *key)
{
	struct cbor_pair *pairs;
	size_t i, n;
	char *k;
	bool eq;

	map = tfs_cbor_untag(map);
	if (!map || !cbor_isa_map(map))
		return NULL;
	pairs = cbor_map_handle(map);
	n = cbor_map_size(map);
	for (i = 0; i < n; i++) {
		if (tfs_cbor_text_eq(pairs[i].key, key))
			return pairs[i].value;
		/* chunked keys are legal, if unusual */
		if (cbor_isa_string(tfs_cbor_untag(pairs[i].key)) &&
		    !cbor_string_is_definite(tfs_cbor_untag(pairs[i].key)) &&
		    tfs_cbor_text(pairs[i].key, &k, NULL) == 0) {
			eq = strcmp(k, key) == 0;
			free(k);
			if (eq)
				return pairs[i].value;
		}
	}
	return NULL;
}

static int cmp_keys(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* a definite text key without NUL: its bytes and length */
static bool plain_key(cbor_item_t *k, const char **p, size_t *len)
{
	if (!cbor_isa_string(k) || !cbor_string_is_definite(k))
		return false;
	*p = (const char *)cbor_string_handle(k);
	*len = cbor_string_length(k);
	return !*len || !memchr(*p, 0, *len);
}

/* strcmp() order of two NUL-free keys */
static int key_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);

	return c ? c : (alen > blen) - (alen < blen);
}

/*
 * A small map of definite text keys (a tensor's fields): compared in
 * place, no copies; the smallest key given twice, as sorting would find.
 * 1: checked (0 or -EBADMSG in *ret); 0: not such a map.
 */
static int small_keys_check(struct cbor_pair *pairs, size_t n, char **bad,
			    int *ret)
{
	const char *p[16], *dup = NULL;
	size_t len[16], i, j, dlen = 0;

	if (n > 16)
		return 0;
	for (i = 0; i < n; i++)
		if (!plain_key(pairs[i].key, &p[i], &len[i]))
			return 0;
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++) {
			if (len[i] != len[j] || memcmp(p[i], p[j], len[i]))
				continue;
			if (!dup || key_cmp(p[i], len[i], dup, dlen) < 0) {
				dup = p[i];
				dlen = len[i];
			}
		}
	*ret = 0;
	if (dup) {
		*bad = strndup(dup, dlen);
		*ret = *bad ? -EBADMSG : -ENOMEM;
	}
	return 1;
}

const char *tfs_cbor_key_twice(char **keys, size_t n)
{
	size_t i;

	qsort(keys, n, sizeof(*keys), cmp_keys);
	for (i = 1; i < n; i++)
		if (strcmp(keys[i - 1], keys[i]) == 0)
			return keys[i];
	return NULL;
}

int tfs_cbor_keys_check(cbor_item_t *map, char **bad)
{
	struct cbor_pair *pairs;
	size_t i, n, len;
	char **keys;
	const char *dup;
	int ret = 0;

	*bad = NULL;
	map = tfs_cbor_untag(map);
	if (!map || !cbor_isa_map(map))
		return -EBADMSG;
	n = cbor_map_size(map);
	pairs = cbor_map_handle(map);
	if (small_keys_check(pairs, n, bad, &ret))
		return ret;
	keys = calloc(n ? n : 1, sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		ret = tfs_cbor_text(pairs[i].key, &keys[i], &len);
		if (!ret && strlen(keys[i]) != len)
			ret = -EBADMSG; /* NUL inside a key */
		if (ret)
			goto out;
	}
	dup = tfs_cbor_key_twice(keys, n);
	if (dup) {
		*bad = strdup(dup);
		ret = -EBADMSG;
	}
out:
	for (i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
	return ret;
}

/* ---- JSON ---------------------------------------------------------------- */

static json_t *bytes_to_json(cbor_item_t *item)
{
	size_t n, i, k, total = 0, o = 0;
	cbor_item_t **chunks = NULL;
	json_t *j;
	char *hex;

	if (cbor_bytestring_is_definite(item)) {
		total = cbor_bytestring_length(item);
		n = 1;
	} else {
		chunks = cbor_bytestring_chunks_handle(item);
		n = cbor_bytestring_chunk_count(item);
		for (i = 0; i < n; i++)
			total += cbor_bytestring_length(chunks[i]);
	}
	hex = malloc(total * 2 + 1);
	if (!hex)
		return NULL;
	for (i = 0; i < n; i++) {
		cbor_item_t *c = chunks ? chunks[i] : item;
		const unsigned char *b = cbor_bytestring_handle(c);

		for (k = 0; k < cbor_bytestring_length(c); k++, o += 2)
			sprintf(hex + o, "%02x", b[k]);
	}
	hex[o] = '\0';
	j = json_string(hex);
	free(hex);
	return j;
}

static json_t *float_ctrl_to_json(cbor_item_t *item)
{
	double v;

	if (cbor_float_get_width(item) == CBOR_FLOAT_0) {
		switch (cbor_ctrl_value(item)) {
		case CBOR_CTRL_TRUE:
			return json_true();
		case CBOR_CTRL_FALSE:
			return json_false();
		default:
			return json_null(); /* null, undefined, simple */
		}
	}
	v = cbor_float_get_float(item);
	return isfinite(v) ? json_real(v) : json_null();
}

json_t *tfs_cbor_to_json(cbor_item_t *item)
{
	struct cbor_pair *pairs;
	size_t i, n, len;
	json_t *j, *v;
	bool text_keys = true;
	char num[32];
	char *s;

	item = tfs_cbor_untag(item);
	if (!item)
		return NULL;
	switch (cbor_typeof(item)) {
	case CBOR_TYPE_UINT:
		if (cbor_get_int(item) <= (uint64_t)INT64_MAX)
			return json_integer((json_int_t)cbor_get_int(item));
		/* beyond JSON's safe 64-bit range: exact, as a decimal string
		 */
		snprintf(num, sizeof(num), "%llu",
			 (unsigned long long)cbor_get_int(item));
		return json_string(num);
	case CBOR_TYPE_NEGINT:
		/* -1 - n */
		if (cbor_get_int(item) <= (uint64_t)INT64_MAX)
			return json_integer(-1 -
					    (json_int_t)cbor_get_int(item));
		if (cbor_get_int(item) == UINT64_MAX)
			return json_string("-18446744073709551616");
		snprintf(num, sizeof(num), "-%llu",
			 (unsigned long long)cbor_get_int(item) + 1ull);
		return json_string(num);
	case CBOR_TYPE_BYTESTRING:
		return bytes_to_json(item);
	case CBOR_TYPE_STRING:
		if (tfs_cbor_text(item, &s, &len))
			return NULL;
		j = json_stringn(s, len);
		free(s);
		return j;
	case CBOR_TYPE_ARRAY:
		j = json_array();
		n = cbor_array_size(item);
		for (i = 0; j && i < n; i++) {
			v = tfs_cbor_to_json(cbor_array_handle(item)[i]);
			if (!v || json_array_append_new(j, v)) {
				json_decref(j);
				return NULL;
			}
		}
		return j;
	case CBOR_TYPE_MAP:
		pairs = cbor_map_handle(item);
		n = cbor_map_size(item);
		/* text keys (without NUL, which JSON objects cannot hold) */
		for (i = 0; i < n && text_keys; i++) {
			if (tfs_cbor_text(pairs[i].key, &s, &len)) {
				text_keys = false;
				continue;
			}
			text_keys = strlen(s) == len;
			free(s);
		}
		j = text_keys ? json_object() : json_array();
		for (i = 0; j && i < n; i++) {
			v = tfs_cbor_to_json(pairs[i].value);
			if (!v)
				goto fail;
			if (text_keys) {
				if (tfs_cbor_text(pairs[i].key, &s, &len)) {
					json_decref(v);
					goto fail;
				}
				json_object_setn_new(j, s, len, v);
				free(s);
			} else {
				json_t *k = tfs_cbor_to_json(pairs[i].key);

				if (!k) {
					json_decref(v);
					goto fail;
				}
				json_array_append_new(j,
						      json_pack("[oo]", k, v));
			}
		}
		return j;
	fail:
		json_decref(j);
		return NULL;
	case CBOR_TYPE_FLOAT_CTRL:
		return float_ctrl_to_json(item);
	default:
		return NULL;
	}
}

bool tfs_cbor_scalar_text(cbor_item_t *v, char *buf, size_t len)
{
	char *s;
	size_t n;
	double d;
	int prec;

	v = tfs_cbor_untag(v);
	if (!v)
		return false;
	switch (cbor_typeof(v)) {
	case CBOR_TYPE_UINT:
		snprintf(buf, len, "%llu", (unsigned long long)cbor_get_int(v));
		return true;
	case CBOR_TYPE_NEGINT:
		if (cbor_get_int(v) == UINT64_MAX)
			snprintf(buf, len, "-18446744073709551616");
		else
			snprintf(buf, len, "-%llu",
				 (unsigned long long)cbor_get_int(v) + 1);
		return true;
	case CBOR_TYPE_STRING:
		if (tfs_cbor_text(v, &s, &n))
			return false;
		if (n >= len || memchr(s, '\0', n)) {
			free(s);
			return false;
		}
		memcpy(buf, s, n + 1);
		free(s);
		return true;
	case CBOR_TYPE_FLOAT_CTRL:
		if (cbor_float_get_width(v) == CBOR_FLOAT_0) {
			if (cbor_is_bool(v))
				snprintf(buf, len, "%s",
					 cbor_get_bool(v) ? "true" : "false");
			else if (cbor_is_null(v))
				snprintf(buf, len, "null");
			else
				return false;
			return true;
		}
		d = cbor_float_get_float(v);
		/* the shortest text that reads back as the stored width */
		for (prec = 1; prec <= 17; prec++) {
			snprintf(buf, len, "%.*g", prec, d);
			if (cbor_float_get_width(v) == CBOR_FLOAT_64
				    ? strtod(buf, NULL) == d
				    : (float)strtod(buf, NULL) == (float)d)
				break;
		}
		return true;
	default:
		return false;
	}
}
