// SPDX-License-Identifier: MIT
/*
 * The restricted pickle reader (src/parse/pickle.h).  Opcodes as defined by
 * CPython's Lib/pickletools.py; only those of protocols 2 to 5 that build
 * plain values are run, and "running" one only ever makes a value:
 * nothing is looked up, imported or called.
 *
 * The memo is a dense array of value indexes.  Python's pickler numbers
 * memo entries 0, 1, 2... in order, so an index far above the number of
 * values made so far can only come from a crafted file; refusing it keeps
 * the array bounded by the input (MEMO_SLACK).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse/pickle.h"
#include "core/cursor.h"
#include "core/diag.h"
#include "core/names.h"

#define MEMO_SLACK 256

/* opcodes (pickletools' names) */
enum {
	OP_MARK = '(',
	OP_STOP = '.',
	OP_POP = '0',
	OP_POP_MARK = '1',
	OP_DUP = '2',
	OP_FLOAT = 'F',
	OP_INT = 'I',
	OP_BININT = 'J',
	OP_BININT1 = 'K',
	OP_LONG = 'L',
	OP_BININT2 = 'M',
	OP_NONE = 'N',
	OP_PERSID = 'P',
	OP_BINPERSID = 'Q',
	OP_REDUCE = 'R',
	OP_STRING = 'S',
	OP_BINSTRING = 'T',
	OP_SHORT_BINSTRING = 'U',
	OP_UNICODE = 'V',
	OP_BINUNICODE = 'X',
	OP_APPEND = 'a',
	OP_BUILD = 'b',
	OP_GLOBAL = 'c',
	OP_DICT = 'd',
	OP_EMPTY_DICT = '}',
	OP_APPENDS = 'e',
	OP_GET = 'g',
	OP_BINGET = 'h',
	OP_INST = 'i',
	OP_LONG_BINGET = 'j',
	OP_LIST = 'l',
	OP_EMPTY_LIST = ']',
	OP_OBJ = 'o',
	OP_PUT = 'p',
	OP_BINPUT = 'q',
	OP_LONG_BINPUT = 'r',
	OP_SETITEM = 's',
	OP_TUPLE = 't',
	OP_EMPTY_TUPLE = ')',
	OP_SETITEMS = 'u',
	OP_BINFLOAT = 'G',
	OP_PROTO = 0x80,
	OP_NEWOBJ = 0x81,
	OP_EXT1 = 0x82,
	OP_EXT2 = 0x83,
	OP_EXT4 = 0x84,
	OP_TUPLE1 = 0x85,
	OP_TUPLE2 = 0x86,
	OP_TUPLE3 = 0x87,
	OP_NEWTRUE = 0x88,
	OP_NEWFALSE = 0x89,
	OP_LONG1 = 0x8a,
	OP_LONG4 = 0x8b,
	OP_BINBYTES = 'B',
	OP_SHORT_BINBYTES = 'C',
	OP_SHORT_BINUNICODE = 0x8c,
	OP_BINUNICODE8 = 0x8d,
	OP_BINBYTES8 = 0x8e,
	OP_EMPTY_SET = 0x8f,
	OP_ADDITEMS = 0x90,
	OP_FROZENSET = 0x91,
	OP_NEWOBJ_EX = 0x92,
	OP_STACK_GLOBAL = 0x93,
	OP_MEMOIZE = 0x94,
	OP_FRAME = 0x95,
	OP_BYTEARRAY8 = 0x96,
	OP_NEXT_BUFFER = 0x97,
	OP_READONLY_BUFFER = 0x98,
};

static const struct {
	uint8_t op;
	const char *name;
} opnames[] = {
	{OP_MARK, "MARK"},
	{OP_STOP, "STOP"},
	{OP_POP, "POP"},
	{OP_POP_MARK, "POP_MARK"},
	{OP_DUP, "DUP"},
	{OP_FLOAT, "FLOAT"},
	{OP_INT, "INT"},
	{OP_BININT, "BININT"},
	{OP_BININT1, "BININT1"},
	{OP_LONG, "LONG"},
	{OP_BININT2, "BININT2"},
	{OP_NONE, "NONE"},
	{OP_PERSID, "PERSID"},
	{OP_BINPERSID, "BINPERSID"},
	{OP_REDUCE, "REDUCE"},
	{OP_STRING, "STRING"},
	{OP_BINSTRING, "BINSTRING"},
	{OP_SHORT_BINSTRING, "SHORT_BINSTRING"},
	{OP_UNICODE, "UNICODE"},
	{OP_BINUNICODE, "BINUNICODE"},
	{OP_APPEND, "APPEND"},
	{OP_BUILD, "BUILD"},
	{OP_GLOBAL, "GLOBAL"},
	{OP_DICT, "DICT"},
	{OP_EMPTY_DICT, "EMPTY_DICT"},
	{OP_APPENDS, "APPENDS"},
	{OP_GET, "GET"},
	{OP_BINGET, "BINGET"},
	{OP_INST, "INST"},
	{OP_LONG_BINGET, "LONG_BINGET"},
	{OP_LIST, "LIST"},
	{OP_EMPTY_LIST, "EMPTY_LIST"},
	{OP_OBJ, "OBJ"},
	{OP_PUT, "PUT"},
	{OP_BINPUT, "BINPUT"},
	{OP_LONG_BINPUT, "LONG_BINPUT"},
	{OP_SETITEM, "SETITEM"},
	{OP_TUPLE, "TUPLE"},
	{OP_EMPTY_TUPLE, "EMPTY_TUPLE"},
	{OP_SETITEMS, "SETITEMS"},
	{OP_BINFLOAT, "BINFLOAT"},
	{OP_PROTO, "PROTO"},
	{OP_NEWOBJ, "NEWOBJ"},
	{OP_EXT1, "EXT1"},
	{OP_EXT2, "EXT2"},
	{OP_EXT4, "EXT4"},
	{OP_TUPLE1, "TUPLE1"},
	{OP_TUPLE2, "TUPLE2"},
	{OP_TUPLE3, "TUPLE3"},
	{OP_NEWTRUE, "NEWTRUE"},
	{OP_NEWFALSE, "NEWFALSE"},
	{OP_LONG1, "LONG1"},
	{OP_LONG4, "LONG4"},
	{OP_BINBYTES, "BINBYTES"},
	{OP_SHORT_BINBYTES, "SHORT_BINBYTES"},
	{OP_SHORT_BINUNICODE, "SHORT_BINUNICODE"},
	{OP_BINUNICODE8, "BINUNICODE8"},
	{OP_BINBYTES8, "BINBYTES8"},
	{OP_EMPTY_SET, "EMPTY_SET"},
	{OP_ADDITEMS, "ADDITEMS"},
	{OP_FROZENSET, "FROZENSET"},
	{OP_NEWOBJ_EX, "NEWOBJ_EX"},
	{OP_STACK_GLOBAL, "STACK_GLOBAL"},
	{OP_MEMOIZE, "MEMOIZE"},
	{OP_FRAME, "FRAME"},
	{OP_BYTEARRAY8, "BYTEARRAY8"},
	{OP_NEXT_BUFFER, "NEXT_BUFFER"},
	{OP_READONLY_BUFFER, "READONLY_BUFFER"},
};

const char *tfs_pkl_opcode_name(uint8_t op)
{
	size_t i;

	for (i = 0; i < sizeof(opnames) / sizeof(opnames[0]); i++)
		if (opnames[i].op == op)
			return opnames[i].name;
	return NULL;
}

const char *tfs_pkl_kind_name(enum tfs_pkl_kind k)
{
	static const char *const names[] = {
		[TFS_PKL_NONE] = "none",     [TFS_PKL_BOOL] = "bool",
		[TFS_PKL_INT] = "int",	     [TFS_PKL_LONG] = "int",
		[TFS_PKL_FLOAT] = "float",   [TFS_PKL_STR] = "str",
		[TFS_PKL_BYTES] = "bytes",   [TFS_PKL_TUPLE] = "tuple",
		[TFS_PKL_LIST] = "list",     [TFS_PKL_DICT] = "dict",
		[TFS_PKL_SET] = "set",	     [TFS_PKL_FROZENSET] = "frozenset",
		[TFS_PKL_GLOBAL] = "global", [TFS_PKL_REDUCE] = "reduce",
		[TFS_PKL_NEWOBJ] = "newobj", [TFS_PKL_PERSID] = "persistent id",
	};

	if ((unsigned)k >= sizeof(names) / sizeof(names[0]))
		return "?";
	return names[k];
}

/* the machine */
struct pk {
	struct tfs_pkl *p;
	struct tfs_cursor c;
	const struct tfs_pkl_opts *o;
	struct tfs_diag *d;
	uint32_t *stack;
	uint32_t sn, scap;
	uint32_t marks[TFS_PKL_MAX_DEPTH];
	uint32_t mn;
	uint32_t *memo; /* TFS_PKL_NO_VALUE: never set */
	uint32_t memo_cap;
	uint32_t memo_used; /* distinct indexes set: MEMOIZE's next index */
	uint64_t op_at;	    /* absolute offset of the current opcode */
	const char *op_name;
};

static int fail(struct pk *k, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct pk *k, int err, const char *fmt, ...)
{
	char msg[TFS_DIAG_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return tfs_diag_at(k->d, err, k->op_at, "pickle: %s: %s", k->op_name,
			   msg);
}

static struct tfs_pkl_value *val(struct pk *k, uint32_t idx)
{
	return &k->p->v[idx];
}

static int new_value(struct pk *k, enum tfs_pkl_kind kind, uint32_t *idx)
{
	struct tfs_pkl *p = k->p;
	struct tfs_pkl_value *x;

	if (p->n == p->cap) {
		uint32_t cap = p->cap ? p->cap * 2 : 64;

		if (p->n >= TFS_PKL_MAX_VALUES)
			return fail(k, -E2BIG, "more than %u values",
				    TFS_PKL_MAX_VALUES);
		x = reallocarray(p->v, cap, sizeof(*x));
		if (!x)
			return tfs_diag_oom(k->d);
		p->v = x;
		p->cap = cap;
	}
	*idx = p->n++;
	x = &p->v[*idx];
	memset(x, 0, sizeof(*x));
	x->kind = kind;
	x->offset = k->op_at;
	x->state = TFS_PKL_NO_VALUE;
	return 0;
}

static int push(struct pk *k, uint32_t idx);

/* a new value of @kind pushed; *x points at it until the next new value */
static int push_new(struct pk *k, enum tfs_pkl_kind kind,
		    struct tfs_pkl_value **x)
{
	uint32_t idx;
	int ret = new_value(k, kind, &idx);

	if (!ret)
		ret = push(k, idx);
	if (!ret)
		*x = val(k, idx);
	return ret;
}

static int push(struct pk *k, uint32_t idx)
{
	if (k->sn == k->scap) {
		uint32_t cap = k->scap ? k->scap * 2 : 64;
		uint32_t *s = reallocarray(k->stack, cap, sizeof(*s));

		if (!s)
			return tfs_diag_oom(k->d);
		k->stack = s;
		k->scap = cap;
	}
	k->stack[k->sn++] = idx;
	return 0;
}

/* the first stack slot above the innermost mark */
static uint32_t floor_of(const struct pk *k)
{
	return k->mn ? k->marks[k->mn - 1] : 0;
}

static int need(struct pk *k, uint32_t n)
{
	uint32_t have = k->sn - floor_of(k);

	if (have < n)
		return fail(k, -EBADMSG,
			    "stack underflow: needs %u value%s, %u above "
			    "the %s",
			    n, n == 1 ? "" : "s", have,
			    k->mn ? "mark" : "bottom");
	return 0;
}

static int pop(struct pk *k, uint32_t *idx)
{
	int ret = need(k, 1);

	if (!ret)
		*idx = k->stack[--k->sn];
	return ret;
}

/* the values above the innermost mark: stack[*start, k->sn); mark dropped */
static int pop_mark(struct pk *k, uint32_t *start)
{
	if (!k->mn)
		return fail(k, -EBADMSG, "no MARK to pop");
	*start = k->marks[--k->mn];
	return 0;
}

static int deepen(struct pk *k, uint32_t idx, uint32_t part)
{
	struct tfs_pkl_value *x = val(k, idx);
	uint32_t dp = (uint32_t)val(k, part)->depth + 1u;

	if (dp > TFS_PKL_MAX_DEPTH)
		return fail(k, -E2BIG, "values nested deeper than %u",
			    TFS_PKL_MAX_DEPTH);
	if (dp > x->depth)
		x->depth = (uint16_t)dp;
	return 0;
}

static int add_item(struct pk *k, uint32_t idx, uint32_t item)
{
	struct tfs_pkl_value *x = val(k, idx);

	if (x->nitems == x->cap) {
		uint32_t cap = x->cap ? x->cap * 2 : 4;
		uint32_t *it;

		if (x->nitems >= TFS_PKL_MAX_VALUES * 2u)
			return fail(k, -E2BIG, "too many items");
		it = reallocarray(x->items, cap, sizeof(*it));
		if (!it)
			return tfs_diag_oom(k->d);
		x->items = it;
		x->cap = cap;
	}
	x->items[x->nitems++] = item;
	return deepen(k, idx, item);
}

/* a new container of @kind holding stack[start, k->sn), which it pops */
static int collect(struct pk *k, enum tfs_pkl_kind kind, uint32_t start)
{
	uint32_t idx, i;
	int ret = new_value(k, kind, &idx);

	for (i = start; !ret && i < k->sn; i++)
		ret = add_item(k, idx, k->stack[i]);
	if (ret)
		return ret;
	if (kind == TFS_PKL_DICT) {
		if ((k->sn - start) % 2)
			return fail(k, -EBADMSG,
				    "%u values: not key/value pairs",
				    k->sn - start);
		val(k, idx)->dict_items = true;
	}
	k->sn = start;
	return push(k, idx);
}

/*
 * Append stack[start, k->sn) to the object just below them: a list (or a
 * set with @set), a dict with @pairs, or an object made by REDUCE/NEWOBJ
 * (whose __setitem__/append Python would call: an OrderedDict is one).
 */
static int extend(struct pk *k, uint32_t start, bool pairs, bool set)
{
	struct tfs_pkl_value *x;
	uint32_t target, i;
	bool object;
	int ret;

	/* the object sits in the same mark frame, just below the items */
	if (start == 0 || start - 1 < floor_of(k))
		return fail(k, -EBADMSG,
			    "stack underflow: no object below the items");
	target = k->stack[start - 1];
	x = val(k, target);
	object = x->kind == TFS_PKL_REDUCE || x->kind == TFS_PKL_NEWOBJ;
	if (set) {
		if (x->kind != TFS_PKL_SET)
			return fail(k, -EBADMSG, "adds to a %s, not a set",
				    tfs_pkl_kind_name(x->kind));
	} else if (pairs) {
		if (x->kind != TFS_PKL_DICT &&
		    !(object && (x->dict_items || !x->nitems)))
			return fail(k, -EBADMSG,
				    "sets items of a %s, not a dict",
				    tfs_pkl_kind_name(x->kind));
		if ((k->sn - start) % 2)
			return fail(k, -EBADMSG,
				    "%u values: not key/value pairs",
				    k->sn - start);
		x->dict_items = true;
	} else if (x->kind != TFS_PKL_LIST && !(object && !x->dict_items)) {
		return fail(k, -EBADMSG, "appends to a %s, not a list",
			    tfs_pkl_kind_name(x->kind));
	}
	for (i = start; i < k->sn; i++) {
		ret = add_item(k, target, k->stack[i]);
		if (ret)
			return ret;
	}
	k->sn = start;
	return 0;
}

static int memo_put(struct pk *k, uint64_t at)
{
	uint32_t top, i;
	int ret = need(k, 1);

	if (ret)
		return ret;
	top = k->stack[k->sn - 1];
	if (at >= (uint64_t)k->p->n * 2 + MEMO_SLACK)
		return fail(k, -EBADMSG,
			    "memo index %llu: far above the %u values made "
			    "so far",
			    (unsigned long long)at, k->p->n);
	if (at >= k->memo_cap) {
		uint32_t cap = k->memo_cap ? k->memo_cap : 64;
		uint32_t *m;

		while (cap <= at)
			cap *= 2;
		m = reallocarray(k->memo, cap, sizeof(*m));
		if (!m)
			return tfs_diag_oom(k->d);
		for (i = k->memo_cap; i < cap; i++)
			m[i] = TFS_PKL_NO_VALUE;
		k->memo = m;
		k->memo_cap = cap;
	}
	if (k->memo[at] == TFS_PKL_NO_VALUE)
		k->memo_used++;
	k->memo[at] = top;
	return 0;
}

static int memo_get(struct pk *k, uint64_t at)
{
	if (at >= k->memo_cap || k->memo[at] == TFS_PKL_NO_VALUE)
		return fail(k, -EBADMSG, "memo index %llu was never PUT",
			    (unsigned long long)at);
	return push(k, k->memo[at]);
}

/* an argument of @n bytes, or a refusal naming what is missing */
static int arg_le(struct pk *k, unsigned n, uint64_t *out)
{
	if (tfs_cursor_le(&k->c, n, out))
		return fail(k, -EBADMSG,
			    "truncated: its %u-byte argument runs past the "
			    "end",
			    n);
	return 0;
}

/*
 * The bytes of a length-prefixed argument whose length takes @lbytes
 * bytes (a 4-byte length with @is_signed may not be negative), at most
 * @max long: *p borrows them from the input.
 */
static int counted_bytes(struct pk *k, unsigned lbytes, bool is_signed,
			 uint64_t max, const uint8_t **p, uint64_t *n)
{
	int ret = arg_le(k, lbytes, n);

	if (ret)
		return ret;
	if (is_signed && (*n & 0x80000000u))
		return fail(k, -EBADMSG, "negative length");
	if (*n > max)
		return fail(k, -E2BIG,
			    "a %llu-byte integer, above the limit "
			    "of %llu",
			    (unsigned long long)*n, (unsigned long long)max);
	if (*n > tfs_cursor_remaining(&k->c))
		return fail(k, -EBADMSG,
			    "length %llu, but only %llu bytes are left",
			    (unsigned long long)*n,
			    (unsigned long long)tfs_cursor_remaining(&k->c));
	return tfs_cursor_bytes(&k->c, *n, p);
}

/* a STR, BYTES or LONG made of bytes of the input */
static int push_span(struct pk *k, enum tfs_pkl_kind kind, const uint8_t *p,
		     uint64_t n)
{
	struct tfs_pkl_value *x;
	int ret = push_new(k, kind, &x);

	if (!ret) {
		x->s.p = (const char *)p;
		x->s.len = (size_t)n;
	}
	return ret;
}

/* a length-prefixed string of @lbytes' length: STR or BYTES */
static int counted(struct pk *k, unsigned lbytes, bool is_signed,
		   enum tfs_pkl_kind kind)
{
	const uint8_t *p = NULL;
	uint64_t n;
	int ret = counted_bytes(k, lbytes, is_signed, UINT64_MAX, &p, &n);

	return ret ? ret : push_span(k, kind, p, n);
}

static int push_int(struct pk *k, int64_t v)
{
	struct tfs_pkl_value *x;
	int ret = push_new(k, TFS_PKL_INT, &x);

	if (!ret)
		x->i = v;
	return ret;
}

/* LONG1 / LONG4: little-endian two's complement of @lbytes' length */
static int long_n(struct pk *k, unsigned lbytes)
{
	const uint8_t *p = NULL;
	uint64_t n, u = 0, i;
	int ret =
		counted_bytes(k, lbytes, lbytes == 4, TFS_PKL_MAX_LONG, &p, &n);

	if (ret)
		return ret;
	if (n > 8)
		return push_span(k, TFS_PKL_LONG, p, n);
	for (i = 0; i < n; i++)
		u |= (uint64_t)p[i] << (8 * i);
	if (n && n < 8 && (p[n - 1] & 0x80))
		u |= ~0ull << (8 * n); /* sign-extend */
	return push_int(k, (int64_t)u);
}

static int check_global(struct pk *k, const char *m, size_t ml, const char *nm,
			size_t nl)
{
	char pm[TFS_PRINTABLE_MAX], pn[TFS_PRINTABLE_MAX];
	uint32_t idx;
	int ret;

	if (!k->o || !k->o->allow || !k->o->allow(k->o->arg, m, ml, nm, nl))
		return fail(k, -ENOTSUP,
			    "global %s.%s: not loadable without executing "
			    "code (not in the allow list)",
			    tfs_name_printable(pm, 64, m, ml),
			    tfs_name_printable(pn, 64, nm, nl));
	ret = new_value(k, TFS_PKL_GLOBAL, &idx);
	if (ret)
		return ret;
	val(k, idx)->g.module.p = m;
	val(k, idx)->g.module.len = ml;
	val(k, idx)->g.name.p = nm;
	val(k, idx)->g.name.len = nl;
	return push(k, idx);
}

/* one '\n'-terminated line of GLOBAL's argument */
static int line(struct pk *k, const char **s, size_t *len)
{
	const uint8_t *p = k->c.p + k->c.pos;
	uint64_t left = tfs_cursor_remaining(&k->c), i;

	for (i = 0; i < left && i <= TFS_PKL_MAX_GLOBAL; i++)
		if (p[i] == '\n') {
			*s = (const char *)p;
			*len = (size_t)i;
			k->c.pos += i + 1;
			return 0;
		}
	if (i > TFS_PKL_MAX_GLOBAL)
		return fail(k, -E2BIG, "a name longer than %u bytes",
			    TFS_PKL_MAX_GLOBAL);
	return fail(k, -EBADMSG, "truncated: no newline after the name");
}

static int op_global(struct pk *k)
{
	const char *m, *nm;
	size_t ml, nl;
	int ret = line(k, &m, &ml);

	if (!ret)
		ret = line(k, &nm, &nl);
	return ret ? ret : check_global(k, m, ml, nm, nl);
}

static int op_stack_global(struct pk *k)
{
	uint32_t m, nm;
	int ret = need(k, 2);

	if (ret)
		return ret;
	nm = k->stack[--k->sn];
	m = k->stack[--k->sn];
	if (val(k, m)->kind != TFS_PKL_STR || val(k, nm)->kind != TFS_PKL_STR)
		return fail(k, -EBADMSG,
			    "module and name are a %s and a %s, "
			    "not strings",
			    tfs_pkl_kind_name(val(k, m)->kind),
			    tfs_pkl_kind_name(val(k, nm)->kind));
	return check_global(k, val(k, m)->s.p, val(k, m)->s.len,
			    val(k, nm)->s.p, val(k, nm)->s.len);
}

/* REDUCE and NEWOBJ: (callable, args) -> an object of @kind */
static int op_call(struct pk *k, enum tfs_pkl_kind kind)
{
	uint32_t fn, args, idx;
	int ret = need(k, 2);

	if (ret)
		return ret;
	args = k->stack[--k->sn];
	fn = k->stack[--k->sn];
	if (val(k, fn)->kind != TFS_PKL_GLOBAL)
		return fail(k, -EBADMSG, "calls a %s, not a global",
			    tfs_pkl_kind_name(val(k, fn)->kind));
	if (val(k, args)->kind != TFS_PKL_TUPLE)
		return fail(k, -EBADMSG, "the arguments are a %s, not a tuple",
			    tfs_pkl_kind_name(val(k, args)->kind));
	ret = new_value(k, kind, &idx);
	if (ret)
		return ret;
	val(k, idx)->call.a = fn;
	val(k, idx)->call.b = args;
	ret = deepen(k, idx, args);
	return ret ? ret : push(k, idx);
}

static int op_newobj_ex(struct pk *k)
{
	uint32_t kw;
	int ret = need(k, 3);

	if (ret)
		return ret;
	kw = k->stack[--k->sn];
	if (val(k, kw)->kind != TFS_PKL_DICT || val(k, kw)->nitems)
		return fail(k, -ENOTSUP, "keyword arguments are not supported");
	return op_call(k, TFS_PKL_NEWOBJ);
}

static int op_build(struct pk *k)
{
	struct tfs_pkl_value *x;
	uint32_t state, obj;
	int ret = need(k, 2);

	if (ret)
		return ret;
	state = k->stack[--k->sn];
	obj = k->stack[k->sn - 1];
	x = val(k, obj);
	if (x->kind != TFS_PKL_REDUCE && x->kind != TFS_PKL_NEWOBJ)
		return fail(k, -EBADMSG,
			    "sets the state of a %s, not of an "
			    "object",
			    tfs_pkl_kind_name(x->kind));
	x->state = state;
	return deepen(k, obj, state);
}

static int op_persid(struct pk *k)
{
	uint32_t pid, idx;
	int ret = pop(k, &pid);

	if (!ret)
		ret = new_value(k, TFS_PKL_PERSID, &idx);
	if (ret)
		return ret;
	val(k, idx)->call.a = pid;
	ret = deepen(k, idx, pid);
	return ret ? ret : push(k, idx);
}

static int simple(struct pk *k, enum tfs_pkl_kind kind, bool b)
{
	struct tfs_pkl_value *x;
	int ret = push_new(k, kind, &x);

	if (!ret)
		x->b = b;
	return ret;
}

static int op_tuple_n(struct pk *k, uint32_t n)
{
	int ret = need(k, n);

	return ret ? ret : collect(k, TFS_PKL_TUPLE, k->sn - n);
}

static int op_float(struct pk *k)
{
	uint64_t bits;
	uint32_t idx;
	int ret;

	if (tfs_cursor_be(&k->c, 8, &bits))
		return fail(k, -EBADMSG,
			    "truncated: its 8-byte argument runs past the "
			    "end");
	ret = new_value(k, TFS_PKL_FLOAT, &idx);
	if (ret)
		return ret;
	memcpy(&val(k, idx)->f, &bits, sizeof(bits));
	return push(k, idx);
}

static int op_pop(struct pk *k)
{
	uint32_t x;

	/* as CPython: with nothing above the mark, POP drops the mark */
	if (k->mn && k->sn == floor_of(k)) {
		k->mn--;
		return 0;
	}
	return pop(k, &x);
}

static int op_dup(struct pk *k)
{
	int ret = need(k, 1);

	return ret ? ret : push(k, k->stack[k->sn - 1]);
}

/* one opcode; *stop set by STOP */
static int step(struct pk *k, bool *stop)
{
	uint64_t v;
	uint32_t start = 0;
	uint8_t op;
	int ret;

	k->op_at = tfs_cursor_offset(&k->c);
	if (tfs_cursor_u8(&k->c, &op)) {
		k->op_name = "STOP";
		return fail(k, -EBADMSG,
			    "truncated: the pickle ends without "
			    "STOP");
	}
	k->op_name = tfs_pkl_opcode_name(op);
	if (!k->op_name)
		k->op_name = "opcode";
	switch (op) {
	case OP_PROTO:
		ret = arg_le(k, 1, &v);
		if (!ret && (v < 2 || v > 5))
			ret = fail(k, -ENOTSUP,
				   "protocol %llu: only 2 to 5 "
				   "are supported",
				   (unsigned long long)v);
		if (!ret)
			k->p->protocol = (int)v;
		return ret;
	case OP_FRAME:
		ret = arg_le(k, 8, &v);
		if (!ret && v > tfs_cursor_remaining(&k->c))
			ret = fail(k, -EBADMSG,
				   "a frame of %llu bytes, but only %llu are "
				   "left",
				   (unsigned long long)v,
				   (unsigned long long)tfs_cursor_remaining(
					   &k->c));
		return ret;
	case OP_STOP:
		if (k->mn)
			return fail(k, -EBADMSG, "a MARK is still open");
		if (k->sn != 1)
			return fail(k, -EBADMSG,
				    "%u values on the stack, not one", k->sn);
		k->p->root = k->stack[0];
		*stop = true;
		return 0;
	case OP_MARK:
		if (k->mn == TFS_PKL_MAX_DEPTH)
			return fail(k, -E2BIG, "marks nested deeper than %u",
				    TFS_PKL_MAX_DEPTH);
		k->marks[k->mn++] = k->sn;
		return 0;
	case OP_POP:
		return op_pop(k);
	case OP_POP_MARK:
		ret = pop_mark(k, &start);
		if (!ret)
			k->sn = start;
		return ret;
	case OP_DUP:
		return op_dup(k);
	case OP_NONE:
		return simple(k, TFS_PKL_NONE, false);
	case OP_NEWTRUE:
		return simple(k, TFS_PKL_BOOL, true);
	case OP_NEWFALSE:
		return simple(k, TFS_PKL_BOOL, false);
	case OP_BININT:
		ret = arg_le(k, 4, &v);
		return ret ? ret : push_int(k, (int32_t)(uint32_t)v);
	case OP_BININT1:
		ret = arg_le(k, 1, &v);
		return ret ? ret : push_int(k, (int64_t)v);
	case OP_BININT2:
		ret = arg_le(k, 2, &v);
		return ret ? ret : push_int(k, (int64_t)v);
	case OP_LONG1:
		return long_n(k, 1);
	case OP_LONG4:
		return long_n(k, 4);
	case OP_BINFLOAT:
		return op_float(k);
	case OP_SHORT_BINUNICODE:
	case OP_SHORT_BINSTRING:
		return counted(k, 1, false, TFS_PKL_STR);
	case OP_BINUNICODE:
		return counted(k, 4, false, TFS_PKL_STR);
	case OP_BINSTRING:
		return counted(k, 4, true, TFS_PKL_STR);
	case OP_BINUNICODE8:
		return counted(k, 8, false, TFS_PKL_STR);
	case OP_SHORT_BINBYTES:
		return counted(k, 1, false, TFS_PKL_BYTES);
	case OP_BINBYTES:
		return counted(k, 4, false, TFS_PKL_BYTES);
	case OP_BINBYTES8:
	case OP_BYTEARRAY8:
		return counted(k, 8, false, TFS_PKL_BYTES);
	case OP_EMPTY_TUPLE:
		return collect(k, TFS_PKL_TUPLE, k->sn);
	case OP_TUPLE1:
		return op_tuple_n(k, 1);
	case OP_TUPLE2:
		return op_tuple_n(k, 2);
	case OP_TUPLE3:
		return op_tuple_n(k, 3);
	case OP_TUPLE:
		ret = pop_mark(k, &start);
		return ret ? ret : collect(k, TFS_PKL_TUPLE, start);
	case OP_EMPTY_LIST:
		return collect(k, TFS_PKL_LIST, k->sn);
	case OP_LIST:
		ret = pop_mark(k, &start);
		return ret ? ret : collect(k, TFS_PKL_LIST, start);
	case OP_EMPTY_DICT:
		return collect(k, TFS_PKL_DICT, k->sn);
	case OP_DICT:
		ret = pop_mark(k, &start);
		return ret ? ret : collect(k, TFS_PKL_DICT, start);
	case OP_EMPTY_SET:
		return collect(k, TFS_PKL_SET, k->sn);
	case OP_FROZENSET:
		ret = pop_mark(k, &start);
		return ret ? ret : collect(k, TFS_PKL_FROZENSET, start);
	case OP_APPEND:
		ret = need(k, 2);
		return ret ? ret : extend(k, k->sn - 1, false, false);
	case OP_SETITEM:
		ret = need(k, 3);
		return ret ? ret : extend(k, k->sn - 2, true, false);
	case OP_APPENDS:
	case OP_SETITEMS:
	case OP_ADDITEMS:
		ret = pop_mark(k, &start);
		return ret ? ret
			   : extend(k, start, op == OP_SETITEMS,
				    op == OP_ADDITEMS);
	case OP_GLOBAL:
		return op_global(k);
	case OP_STACK_GLOBAL:
		return op_stack_global(k);
	case OP_REDUCE:
		return op_call(k, TFS_PKL_REDUCE);
	case OP_NEWOBJ:
		return op_call(k, TFS_PKL_NEWOBJ);
	case OP_NEWOBJ_EX:
		return op_newobj_ex(k);
	case OP_BUILD:
		return op_build(k);
	case OP_BINPERSID:
		return op_persid(k);
	case OP_BINGET:
		ret = arg_le(k, 1, &v);
		return ret ? ret : memo_get(k, v);
	case OP_LONG_BINGET:
		ret = arg_le(k, 4, &v);
		return ret ? ret : memo_get(k, v);
	case OP_BINPUT:
		ret = arg_le(k, 1, &v);
		return ret ? ret : memo_put(k, v);
	case OP_LONG_BINPUT:
		ret = arg_le(k, 4, &v);
		return ret ? ret : memo_put(k, v);
	case OP_MEMOIZE:
		return memo_put(k, k->memo_used);
	default:
		if (tfs_pkl_opcode_name(op))
			return fail(k, -ENOTSUP,
				    "opcode 0x%02x is not supported (protocol "
				    "0/1 text, extension registry or "
				    "out-of-band buffer)",
				    op);
		return fail(k, -EBADMSG, "unknown opcode 0x%02x", op);
	}
}

void tfs_pkl_free(struct tfs_pkl *p)
{
	uint32_t i;

	if (!p)
		return;
	for (i = 0; i < p->n; i++)
		free(p->v[i].items);
	free(p->v);
	memset(p, 0, sizeof(*p));
}

int tfs_pkl_parse(struct tfs_pkl *out, const void *buf, size_t len,
		  uint64_t base, const struct tfs_pkl_opts *opts,
		  struct tfs_diag *d)
{
	struct pk k = {.p = out, .o = opts, .d = d};
	bool stop = false;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	out->root = TFS_PKL_NO_VALUE;
	tfs_cursor_init(&k.c, buf, len, base);
	while (!ret && !stop)
		ret = step(&k, &stop);
	out->end = tfs_cursor_offset(&k.c);
	free(k.stack);
	free(k.memo);
	if (ret)
		tfs_pkl_free(out);
	return ret;
}

bool tfs_pkl_is_global(const struct tfs_pkl_value *v, const char *module,
		       const char *name)
{
	return v->kind == TFS_PKL_GLOBAL && v->g.module.len == strlen(module) &&
	       memcmp(v->g.module.p, module, v->g.module.len) == 0 &&
	       v->g.name.len == strlen(name) &&
	       memcmp(v->g.name.p, name, v->g.name.len) == 0;
}

bool tfs_pkl_str_eq(const struct tfs_pkl_value *v, const char *s)
{
	return v->kind == TFS_PKL_STR && v->s.len == strlen(s) &&
	       memcmp(v->s.p, s, v->s.len) == 0;
}

int tfs_pkl_int64(const struct tfs_pkl_value *v, int64_t *out)
{
	const uint8_t *p = (const uint8_t *)v->s.p;
	uint8_t ext;
	size_t i;

	if (v->kind == TFS_PKL_INT) {
		*out = v->i;
		return 0;
	}
	if (v->kind != TFS_PKL_LONG)
		return -EINVAL;
	/* a LONG longer than 8 bytes fits only when the rest is sign */
	ext = (p[7] & 0x80) ? 0xff : 0;
	for (i = 8; i < v->s.len; i++)
		if (p[i] != ext)
			return -ERANGE;
	*out = (int64_t)tfs_load_le(p, 8);
	return 0;
}

int tfs_pkl_long_decimal(const struct tfs_pkl_value *v, char *buf, size_t len)
{
	uint8_t mag[TFS_PKL_MAX_LONG];
	char digits[TFS_PKL_MAX_LONG * 3 + 2];
	size_t n = v->s.len, nd = 0, i, j;
	bool neg;
	unsigned carry;

	if (v->kind == TFS_PKL_INT) {
		if ((size_t)snprintf(buf, len, "%lld", (long long)v->i) >= len)
			return -ENOSPC;
		return 0;
	}
	if (v->kind != TFS_PKL_LONG || n > TFS_PKL_MAX_LONG)
		return -EINVAL;
	memcpy(mag, v->s.p, n);
	neg = n && (mag[n - 1] & 0x80);
	if (neg) { /* two's complement: negate */
		carry = 1;
		for (i = 0; i < n; i++) {
			carry += (uint8_t)~mag[i];
			mag[i] = (uint8_t)carry;
			carry >>= 8;
		}
	}
	/* repeated division by 10 of the little-endian magnitude */
	for (;;) {
		bool zero = true;
		unsigned rem = 0;

		for (i = n; i-- > 0;) {
			unsigned cur = (rem << 8) | mag[i];

			mag[i] = (uint8_t)(cur / 10);
			rem = cur % 10;
			if (mag[i])
				zero = false;
		}
		digits[nd++] = (char)('0' + rem);
		if (zero)
			break;
	}
	if (nd + neg + 1 > len)
		return -ENOSPC;
	j = 0;
	if (neg)
		buf[j++] = '-';
	while (nd)
		buf[j++] = digits[--nd];
	buf[j] = 0;
	return 0;
}
