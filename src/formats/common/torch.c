// SPDX-License-Identifier: MIT
/*
 * What the torch readers share; common/torch.h.  Moved out of pytorch.c
 * unchanged but for the TorchScript rules (z->script).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "torch.h"
#include "core/builder.h"
#include "core/checked.h"
#include "core/cursor.h"
#include "core/diag.h"
#include "core/format.h"
#include "core/names.h"
#include "core/source.h"

/*
 * values visited while walking the object (shared values count each time),
 * beyond 4 per pickle value: each visit of a leaf builds JSON (~0.5 us), so
 * an 815-byte pickle fanning out over shared lists is refused in ~0.1 s
 * (1,000,000 took 0.5 s, and over 10 s under ASan: a fuzzer timeout)
 */
#define PT_MIN_VISITS 131072u

static const struct {
	const char *cls;
	enum tfs_dtype dtype;
} pt_storages[] = {
	{"DoubleStorage", TFS_DTYPE_FLOAT64},
	{"FloatStorage", TFS_DTYPE_FLOAT32},
	{"HalfStorage", TFS_DTYPE_FLOAT16},
	{"BFloat16Storage", TFS_DTYPE_BFLOAT16},
	{"LongStorage", TFS_DTYPE_INT64},
	{"IntStorage", TFS_DTYPE_INT32},
	{"ShortStorage", TFS_DTYPE_INT16},
	{"CharStorage", TFS_DTYPE_INT8},
	{"ByteStorage", TFS_DTYPE_UINT8},
	{"BoolStorage", TFS_DTYPE_BOOL},
	{"ComplexFloatStorage", TFS_DTYPE_COMPLEX64},
	{"ComplexDoubleStorage", TFS_DTYPE_COMPLEX128},
};

/* torch.<name> globals that are plain values (dtypes in configs) */
static const char *const pt_torch_names[] = {
	"Size",	      "float64", "float32", "float16", "bfloat16", "int64",
	"int32",      "int16",	 "int8",    "uint8",   "bool",	   "complex64",
	"complex128", "double",	 "float",   "half",    "long",	   "int",
	"short",      "cfloat",	 "cdouble",
};

static const char *const pt_rebuild[] = {
	"_rebuild_tensor",
	"_rebuild_tensor_v2",
	"_rebuild_parameter",
	"_rebuild_parameter_with_state",
};

/* builtins that only make plain containers */
static const char *const pt_builtins[] = {
	"set",
	"frozenset",
	"bytearray",
	"bytes",
};

static bool name_in(const char *n, size_t nl, const char *const *v, size_t cnt)
{
	size_t i;

	for (i = 0; i < cnt; i++)
		if (strlen(v[i]) == nl && memcmp(v[i], n, nl) == 0)
			return true;
	return false;
}

#define IN(n, nl, v) name_in(n, nl, v, sizeof(v) / sizeof(v[0]))
#define MOD_IS(s) (ml == strlen(s) && memcmp(m, s, ml) == 0)

int tfs_torch_storage_dtype(const char *n, size_t nl, enum tfs_dtype *dt)
{
	size_t i;

	for (i = 0; i < sizeof(pt_storages) / sizeof(pt_storages[0]); i++)
		if (strlen(pt_storages[i].cls) == nl &&
		    memcmp(pt_storages[i].cls, n, nl) == 0) {
			*dt = pt_storages[i].dtype;
			return 0;
		}
	return -ENOENT;
}

bool tfs_torch_allow(void *arg, const char *m, size_t ml, const char *n,
		     size_t nl)
{
	enum tfs_dtype dt;

	(void)arg;
	if (MOD_IS("collections"))
		return nl == 11 && memcmp(n, "OrderedDict", 11) == 0;
	if (MOD_IS("torch._utils"))
		return IN(n, nl, pt_rebuild);
	if (MOD_IS("torch"))
		return tfs_torch_storage_dtype(n, nl, &dt) == 0 ||
		       IN(n, nl, pt_torch_names);
	if (MOD_IS("builtins") || MOD_IS("__builtin__"))
		return IN(n, nl, pt_builtins);
	/* Lightning's hyper_parameters: attribute bags, kept as dicts */
	if (MOD_IS("argparse"))
		return nl == 9 && memcmp(n, "Namespace", 9) == 0;
	if (MOD_IS("pytorch_lightning.utilities.parsing") ||
	    MOD_IS("lightning_fabric.utilities.data") ||
	    MOD_IS("lightning.fabric.utilities.data"))
		return nl == 13 && memcmp(n, "AttributeDict", 13) == 0;
	if (MOD_IS("_codecs")) /* protocol 2's bytes: encode(str, latin1) */
		return nl == 6 && memcmp(n, "encode", 6) == 0;
	return false;
}

const struct tfs_pkl_opts tfs_torch_opts = {.allow = tfs_torch_allow};

static const struct tfs_pkl_value *V(const struct tfs_torch *z, uint32_t idx)
{
	return tfs_pkl_at(&z->pk, idx);
}

static int visit(struct tfs_torch *z, const struct tfs_pkl_value *v, int depth)
{
	if (depth > TFS_PKL_MAX_DEPTH)
		return tfs_diag_at(z->d, -E2BIG, v->offset,
				   "object: nested deeper than %u",
				   TFS_PKL_MAX_DEPTH);
	if (++z->visits > z->max_visits)
		return tfs_diag_at(z->d, -E2BIG, v->offset,
				   "object: shared values are referred to "
				   "more than %llu times",
				   (unsigned long long)z->max_visits);
	return 0;
}

/* ---- what a value is --------------------------------------------------- */

static bool is_call_of(const struct tfs_torch *z, const struct tfs_pkl_value *v,
		       const char *module, const char *name)
{
	return (v->kind == TFS_PKL_REDUCE || v->kind == TFS_PKL_NEWOBJ) &&
	       tfs_pkl_is_global(V(z, v->call.a), module, name);
}

static bool is_tensor(const struct tfs_torch *z, const struct tfs_pkl_value *v)
{
	const struct tfs_pkl_value *g;

	if (v->kind != TFS_PKL_REDUCE)
		return false;
	g = V(z, v->call.a);
	return tfs_pkl_is_global(g, "torch._utils", "_rebuild_tensor") ||
	       tfs_pkl_is_global(g, "torch._utils", "_rebuild_tensor_v2") ||
	       tfs_pkl_is_global(g, "torch._utils", "_rebuild_parameter") ||
	       tfs_pkl_is_global(g, "torch._utils",
				 "_rebuild_parameter_with_state");
}

/* a dict, or an OrderedDict (REDUCE + SETITEMS) */
static bool is_dict(const struct tfs_torch *z, const struct tfs_pkl_value *v)
{
	return v->kind == TFS_PKL_DICT ||
	       (is_call_of(z, v, "collections", "OrderedDict") &&
		(v->dict_items || !v->nitems));
}

/*
 * TorchScript: an object of a __torch__ class (NEWOBJ), its attributes the
 * dict BUILD gave it.
 */
static bool is_object(const struct tfs_torch *z, const struct tfs_pkl_value *v)
{
	const struct tfs_pkl_value *g;

	if (!z->script || v->kind != TFS_PKL_NEWOBJ)
		return false;
	g = V(z, v->call.a);
	return g->kind == TFS_PKL_GLOBAL && g->g.module.len >= 9 &&
	       !memcmp(g->g.module.p, "__torch__", 9) &&
	       (g->g.module.len == 9 || g->g.module.p[9] == '.');
}

/*
 * TorchScript's torch.jit._pickle helpers: build_intlist([1, 2]) and its
 * kin, restore_type_tag(value, type) are their first argument; 0 when
 * @v is none of them.
 */
static const struct tfs_pkl_value *jit_identity(const struct tfs_torch *z,
						const struct tfs_pkl_value *v,
						uint32_t *arg)
{
	const struct tfs_pkl_value *g, *args;

	if (!z->script || v->kind != TFS_PKL_REDUCE)
		return NULL;
	g = V(z, v->call.a);
	args = V(z, v->call.b);
	if (g->kind != TFS_PKL_GLOBAL || args->kind != TFS_PKL_TUPLE ||
	    !args->nitems || g->g.module.len != 17 ||
	    memcmp(g->g.module.p, "torch.jit._pickle", 17))
		return NULL;
	*arg = args->items[0];
	return V(z, *arg);
}

/* the BUILD state of __torch__ object @v, checked to be a dict */
static int object_state(struct tfs_torch *z, const struct tfs_pkl_value *v,
			uint32_t *state)
{
	const struct tfs_pkl_value *g = V(z, v->call.a), *args, *s;

	args = V(z, v->call.b);
	if (args->nitems)
		return tfs_diag_at(z->d, -EBADMSG, v->offset,
				   "object %.*s.%.*s: NEWOBJ with %u "
				   "arguments, not ()",
				   (int)g->g.module.len, g->g.module.p,
				   (int)g->g.name.len, g->g.name.p,
				   args->nitems);
	if (v->state == TFS_PKL_NO_VALUE) {
		*state = TFS_PKL_NO_VALUE;
		return 0;
	}
	s = V(z, v->state);
	if (s->kind != TFS_PKL_DICT)
		return tfs_diag_at(z->d, -EBADMSG, s->offset,
				   "object %.*s.%.*s: BUILD state is a %s, "
				   "not a dict",
				   (int)g->g.module.len, g->g.module.p,
				   (int)g->g.name.len, g->g.name.p,
				   tfs_pkl_kind_name(s->kind));
	*state = v->state;
	return 0;
}

/*
 * argparse.Namespace (BUILD with its attributes) and Lightning's
 * AttributeDict (a dict subclass: SETITEMS on the object): walked as dicts
 */
static bool is_attrs(const struct tfs_torch *z, const struct tfs_pkl_value *v)
{
	const struct tfs_pkl_value *g;

	if (v->kind != TFS_PKL_NEWOBJ && v->kind != TFS_PKL_REDUCE)
		return false;
	g = V(z, v->call.a);
	return tfs_pkl_is_global(g, "argparse", "Namespace") ||
	       tfs_pkl_is_global(g, "pytorch_lightning.utilities.parsing",
				 "AttributeDict") ||
	       tfs_pkl_is_global(g, "lightning_fabric.utilities.data",
				 "AttributeDict") ||
	       tfs_pkl_is_global(g, "lightning.fabric.utilities.data",
				 "AttributeDict");
}

/* the attribute dict of @v (is_attrs): its BUILD state, if a dict */
static uint32_t attrs_state(const struct tfs_torch *z,
			    const struct tfs_pkl_value *v)
{
	if (v->state != TFS_PKL_NO_VALUE &&
	    V(z, v->state)->kind == TFS_PKL_DICT && V(z, v->state)->nitems)
		return v->state;
	return TFS_PKL_NO_VALUE;
}

static int has_tensor(struct tfs_torch *z, uint32_t idx, int depth, bool *yes)
{
	const struct tfs_pkl_value *v = V(z, idx);
	uint32_t i;
	int ret = visit(z, v, depth);

	if (ret || *yes)
		return ret;
	if (is_tensor(z, v)) {
		*yes = true;
		return 0;
	}
	if (v->kind == TFS_PKL_REDUCE || v->kind == TFS_PKL_NEWOBJ)
		ret = has_tensor(z, v->call.b, depth + 1, yes);
	if (!ret && is_object(z, v) && v->state != TFS_PKL_NO_VALUE)
		ret = has_tensor(z, v->state, depth + 1, yes);
	for (i = 0; !ret && !*yes && i < v->nitems; i++)
		ret = has_tensor(z, v->items[i], depth + 1, yes);
	return ret;
}

/* ---- leaves as JSON ---------------------------------------------------- */

/*
 * Text that JSON readers take: UTF-8 without NUL bytes (jansson refuses
 * "\u0000" unless asked).  Other text (a BINSTRING, a lone surrogate, a
 * NUL) is written escaped like a path component (docs/tree.md).
 */
static bool json_plain(const char *p, size_t n)
{
	return !memchr(p, 0, n) && tfs_utf8_valid((const unsigned char *)p, n);
}

json_t *tfs_torch_text_json(const char *p, size_t n)
{
	char *esc;
	json_t *j;

	if (json_plain(p, n))
		return json_stringn(p, n);
	esc = tfs_name_escape(p, n, 3 * n + 16);
	j = esc ? json_string(esc) : NULL;
	free(esc);
	return j;
}

/* @obj[@p/@n] = @v (a new reference, taken even on failure) */
static int set_key(struct tfs_torch *z, json_t *obj, const char *p, size_t n,
		   json_t *v)
{
	char *esc = NULL;
	int ret;

	if (!v)
		return tfs_diag_oom(z->d);
	if (!json_plain(p, n)) {
		esc = tfs_name_escape(p, n, 3 * n + 16);
		if (!esc) {
			json_decref(v);
			return tfs_diag_oom(z->d);
		}
		p = esc;
		n = strlen(esc);
	}
	ret = json_object_setn_new(obj, p, n, v);
	free(esc);
	return ret ? tfs_diag_oom(z->d) : 0;
}

static json_t *bytes_json(const struct tfs_pkl_value *v)
{
	char *hex = malloc(v->s.len * 2 + 1);
	json_t *j;
	size_t i;

	if (!hex)
		return NULL;
	for (i = 0; i < v->s.len; i++)
		snprintf(hex + 2 * i, 3, "%02x", (unsigned char)v->s.p[i]);
	hex[2 * v->s.len] = 0;
	j = json_pack("{s:s}", "bytes", hex);
	free(hex);
	return j;
}

static json_t *float_json(double f)
{
	if (isnan(f))
		return json_string("nan");
	if (isinf(f))
		return json_string(f > 0 ? "inf" : "-inf");
	return json_real(f);
}

static json_t *global_json(const struct tfs_pkl_value *g)
{
	char buf[2 * TFS_PKL_MAX_GLOBAL + 2];

	snprintf(buf, sizeof(buf), "%.*s.%.*s", (int)g->g.module.len,
		 g->g.module.p, (int)g->g.name.len, g->g.name.p);
	return json_string(buf);
}

static int key_text(struct tfs_torch *z, const struct tfs_pkl_value *k,
		    char *buf, size_t len, const char **p, size_t *n);

static int items_json(struct tfs_torch *z, const struct tfs_pkl_value *v,
		      uint32_t first, int depth, json_t **out)
{
	json_t *a = json_array(), *x;
	uint32_t i;
	int ret = 0;

	if (!a)
		return tfs_diag_oom(z->d);
	for (i = first; !ret && i < v->nitems; i++) {
		ret = tfs_torch_to_json(z, v->items[i], depth + 1, &x);
		if (!ret && json_array_append_new(a, x))
			ret = tfs_diag_oom(z->d);
	}
	if (ret)
		json_decref(a);
	else
		*out = a;
	return ret;
}

static int dict_json(struct tfs_torch *z, const struct tfs_pkl_value *v,
		     int depth, json_t **out)
{
	char kb[64];
	const char *kp;
	size_t kn;
	json_t *o = json_object(), *x;
	uint32_t i;
	int ret = 0;

	if (!o)
		return tfs_diag_oom(z->d);
	for (i = 0; !ret && i + 1 < v->nitems; i += 2) {
		ret = key_text(z, V(z, v->items[i]), kb, sizeof(kb), &kp, &kn);
		if (!ret)
			ret = tfs_torch_to_json(z, v->items[i + 1], depth + 1,
						&x);
		if (!ret)
			ret = set_key(z, o, kp, kn, x);
	}
	if (ret)
		json_decref(o);
	else
		*out = o;
	return ret;
}

/* a call kept as data: {"call": "module.name", "args": [...]} */
static int call_json(struct tfs_torch *z, const struct tfs_pkl_value *v,
		     int depth, json_t **out)
{
	json_t *args = NULL;
	int ret = tfs_torch_to_json(z, v->call.b, depth + 1, &args);

	if (ret)
		return ret;
	*out = json_pack("{s:o,s:o}", "call", global_json(V(z, v->call.a)),
			 "args", args);
	return *out ? 0 : tfs_diag_oom(z->d);
}

int tfs_torch_to_json(struct tfs_torch *z, uint32_t idx, int depth,
		      json_t **out)
{
	const struct tfs_pkl_value *v = V(z, idx), *args;
	uint32_t jidx;
	char num[TFS_PKL_MAX_LONG * 3 + 2];
	int ret = visit(z, v, depth);

	if (ret)
		return ret;
	*out = NULL;
	switch (v->kind) {
	case TFS_PKL_NONE:
		*out = json_null();
		break;
	case TFS_PKL_BOOL:
		*out = json_boolean(v->b);
		break;
	case TFS_PKL_INT:
		*out = json_integer((json_int_t)v->i);
		break;
	case TFS_PKL_LONG: /* beyond int64: its decimal digits */
		if (tfs_pkl_long_decimal(v, num, sizeof(num)) == 0)
			*out = json_string(num);
		break;
	case TFS_PKL_FLOAT:
		*out = float_json(v->f);
		break;
	case TFS_PKL_STR:
		*out = tfs_torch_text_json(v->s.p, v->s.len);
		break;
	case TFS_PKL_BYTES:
		*out = bytes_json(v);
		break;
	case TFS_PKL_TUPLE:
	case TFS_PKL_LIST:
	case TFS_PKL_SET:
	case TFS_PKL_FROZENSET:
		return items_json(z, v, 0, depth, out);
	case TFS_PKL_DICT:
		return dict_json(z, v, depth, out);
	case TFS_PKL_GLOBAL:
		*out = global_json(v);
		break;
	case TFS_PKL_REDUCE:
	case TFS_PKL_NEWOBJ:
		args = V(z, v->call.b);
		if (is_object(z, v)) {
			ret = object_state(z, v, &jidx);
			if (ret || jidx == TFS_PKL_NO_VALUE)
				return ret ? ret : call_json(z, v, depth, out);
			return tfs_torch_to_json(z, jidx, depth + 1, out);
		}
		if (jit_identity(z, v, &jidx))
			return tfs_torch_to_json(z, jidx, depth + 1, out);
		if (is_attrs(z, v) && !v->nitems &&
		    attrs_state(z, v) != TFS_PKL_NO_VALUE)
			return tfs_torch_to_json(z, v->state, depth + 1, out);
		if (is_attrs(z, v) && (v->dict_items || !v->nitems))
			return dict_json(z, v, depth, out);
		if (is_dict(z, v))
			return dict_json(z, v, depth, out);
		/* torch.Size((2, 3)), set([1]): the sequence itself */
		if ((is_call_of(z, v, "torch", "Size") ||
		     is_call_of(z, v, "builtins", "set") ||
		     is_call_of(z, v, "__builtin__", "set") ||
		     is_call_of(z, v, "builtins", "frozenset") ||
		     is_call_of(z, v, "__builtin__", "frozenset")) &&
		    args->nitems == 1)
			return tfs_torch_to_json(z, args->items[0], depth + 1,
						 out);
		return call_json(z, v, depth, out);
	case TFS_PKL_PERSID:
		ret = tfs_torch_to_json(z, v->call.a, depth + 1, out);
		if (!ret)
			*out = json_pack("{s:o}", "persistent_id", *out);
		break;
	}
	return *out ? ret : tfs_diag_oom(z->d);
}

/* ---- names --------------------------------------------------------------- */

/* a dict key as a name component: str as stored, numbers in decimal */
static int key_text(struct tfs_torch *z, const struct tfs_pkl_value *k,
		    char *buf, size_t len, const char **p, size_t *n)
{
	switch (k->kind) {
	case TFS_PKL_STR:
		*p = k->s.p;
		*n = k->s.len;
		return 0;
	case TFS_PKL_INT:
		snprintf(buf, len, "%lld", (long long)k->i);
		break;
	case TFS_PKL_BOOL:
		snprintf(buf, len, "%s", k->b ? "True" : "False");
		break;
	case TFS_PKL_NONE:
		snprintf(buf, len, "None");
		break;
	case TFS_PKL_FLOAT:
		snprintf(buf, len, "%.17g", k->f);
		break;
	default:
		return tfs_diag_at(z->d, -ENOTSUP, k->offset,
				   "object: a dict key that is a %s (only "
				   "strings and numbers name tensors)",
				   tfs_pkl_kind_name(k->kind));
	}
	*p = buf;
	*n = strlen(buf);
	return 0;
}

/* append ".component" (no dot at the start); *old gets the length before */
static int name_push(struct tfs_torch *z, const char *p, size_t n, size_t *old)
{
	size_t need = z->len + 1 + n + 1;

	*old = z->len;
	if (need > z->cap) {
		size_t cap = z->cap ? z->cap : 256;
		char *s;

		while (cap < need)
			cap *= 2;
		s = realloc(z->name, cap);
		if (!s)
			return tfs_diag_oom(z->d);
		z->name = s;
		z->cap = cap;
	}
	if (z->len)
		z->name[z->len++] = '.';
	memcpy(z->name + z->len, p, n);
	z->len += n;
	z->name[z->len] = 0;
	return 0;
}

/* ---- tensors ----------------------------------------------------------- */

static int uint_of(struct tfs_torch *z, const struct tfs_pkl_value *v,
		   const char *what, uint64_t *out)
{
	int64_t i;

	if (tfs_pkl_int64(v, &i) || i < 0)
		return tfs_diag_at(z->d, -EBADMSG, v->offset,
				   "tensor: %s: not a non-negative integer",
				   what);
	*out = (uint64_t)i;
	return 0;
}

/* ---- storages by key: an open-addressing hash of (pointer, length) ---- */

static uint64_t key_hash(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

	while (n--)
		h = (h ^ (uint8_t)*p++) * 0x100000001b3ull;
	return h;
}

/* the slot of key @p/@n: where it is, or the empty one it would take */
static size_t slot_of(const struct tfs_torch *z, const char *p, size_t n)
{
	size_t i = (size_t)key_hash(p, n) & (z->nslots - 1);
	const struct tfs_torch_storage *s;

	while (z->slots[i]) {
		s = &z->st[z->slots[i] - 1];
		if (s->key_len == n && memcmp(s->key, p, n) == 0)
			break;
		i = (i + 1) & (z->nslots - 1);
	}
	return i;
}

int tfs_torch_storage_by_key(const struct tfs_torch *z, const char *k, size_t n)
{
	size_t i;

	if (!z->nslots)
		return -1;
	i = slot_of(z, k, n);
	return z->slots[i] ? (int)(z->slots[i] - 1) : -1;
}

/* index storage z->st[idx] (its key is new), growing the table at half */
static int storage_index(struct tfs_torch *z, uint32_t idx)
{
	size_t i;

	if ((idx + 1) * 2 > z->nslots) {
		size_t cap = z->nslots ? z->nslots * 2 : 64;
		uint32_t *old = z->slots;

		z->slots = calloc(cap, sizeof(*z->slots));
		if (!z->slots) {
			z->slots = old;
			return tfs_diag_oom(z->d);
		}
		free(old);
		z->nslots = cap;
		for (i = 0; i < idx; i++)
			z->slots[slot_of(z, z->st[i].key, z->st[i].key_len)] =
				(uint32_t)i + 1;
	}
	z->slots[slot_of(z, z->st[idx].key, z->st[idx].key_len)] = idx + 1;
	return 0;
}

/* a new zeroed storage at z->st[z->nst] (counted by the caller) */
static int storage_push(struct tfs_torch *z, struct tfs_torch_storage **out)
{
	struct tfs_torch_storage *s;

	if (z->nst == z->stcap) {
		size_t cap = z->stcap ? z->stcap * 2 : 16;

		s = reallocarray(z->st, cap, sizeof(*s));
		if (!s)
			return tfs_diag_oom(z->d);
		z->st = s;
		z->stcap = cap;
	}
	*out = &z->st[z->nst];
	memset(*out, 0, sizeof(**out));
	return 0;
}

/* the storage a persistent id names, registered on first use */
static int storage_of(struct tfs_torch *z, const struct tfs_pkl_value *pid,
		      uint32_t *out)
{
	const struct tfs_pkl_value *t, *cls, *key;
	struct tfs_torch_storage *s;
	enum tfs_dtype dt;
	uint64_t numel = 0;
	int ret, si;

	if (pid->kind != TFS_PKL_PERSID)
		return tfs_diag_at(z->d, -EBADMSG, pid->offset,
				   "tensor: the storage is a %s, not a "
				   "persistent id",
				   tfs_pkl_kind_name(pid->kind));
	t = V(z, pid->call.a);
	if (t->kind != TFS_PKL_TUPLE || t->nitems < 5 || t->nitems > 6 ||
	    !tfs_pkl_str_eq(V(z, t->items[0]), "storage"))
		return tfs_diag_at(z->d, -EBADMSG, t->offset,
				   "persistent id: not ('storage', type, key, "
				   "location, numel)");
	if (t->nitems == 6 && V(z, t->items[5])->kind != TFS_PKL_NONE)
		return tfs_diag_at(z->d, -ENOTSUP, V(z, t->items[5])->offset,
				   "persistent id: a storage view (torch < "
				   "1.0) is not supported");
	cls = V(z, t->items[1]);
	if (cls->kind != TFS_PKL_GLOBAL || cls->g.module.len != 5 ||
	    memcmp(cls->g.module.p, "torch", 5) ||
	    tfs_torch_storage_dtype(cls->g.name.p, cls->g.name.len, &dt))
		return tfs_diag_at(z->d, -EBADMSG, cls->offset,
				   "persistent id: the storage type is not a "
				   "torch storage class");
	key = V(z, t->items[2]);
	if (key->kind != TFS_PKL_STR)
		return tfs_diag_at(z->d, -EBADMSG, key->offset,
				   "persistent id: the key is a %s, not a "
				   "string",
				   tfs_pkl_kind_name(key->kind));
	ret = uint_of(z, V(z, t->items[4]), "storage numel", &numel);
	if (ret)
		return ret;
	si = tfs_torch_storage_by_key(z, key->s.p, key->s.len);
	if (si >= 0) {
		s = &z->st[si];
		if (s->dtype != dt || s->numel != numel)
			return tfs_diag_at(
				z->d, -EBADMSG, t->offset,
				"persistent id: storage '%s' was "
				"%s of %llu elements before",
				tfs_name_printable((char[64]){0}, 64, s->key,
						   s->key_len),
				s->cls, (unsigned long long)s->numel);
		*out = (uint32_t)si;
		return 0;
	}
	ret = storage_push(z, &s);
	if (ret)
		return ret;
	s->key = key->s.p;
	s->key_len = key->s.len;
	s->dtype = dt;
	s->cls = tfs_dtype_name(dt);
	s->numel = numel;
	s->at = t->offset;
	*out = (uint32_t)z->nst++;
	return storage_index(z, *out);
}

/* a tuple of non-negative ints (or torch.Size of one) into @out */
static int dims_of(struct tfs_torch *z, uint32_t idx, const char *what,
		   uint64_t *out, uint32_t *n)
{
	const struct tfs_pkl_value *v = V(z, idx);
	uint32_t i;
	int ret;

	if (is_call_of(z, v, "torch", "Size") && V(z, v->call.b)->nitems == 1)
		v = V(z, V(z, v->call.b)->items[0]);
	if (v->kind != TFS_PKL_TUPLE && v->kind != TFS_PKL_LIST)
		return tfs_diag_at(z->d, -EBADMSG, v->offset,
				   "tensor: %s: a %s, not a tuple", what,
				   tfs_pkl_kind_name(v->kind));
	if (v->nitems > TFS_TORCH_MAX_DIMS)
		return tfs_diag_at(z->d, -E2BIG, v->offset,
				   "tensor: %s: %u dimensions, above the "
				   "limit of %u",
				   what, v->nitems, TFS_TORCH_MAX_DIMS);
	for (i = 0; i < v->nitems; i++) {
		ret = uint_of(z, V(z, v->items[i]), what, &out[i]);
		if (ret)
			return ret;
	}
	*n = v->nitems;
	return 0;
}

static int tensor_push(struct tfs_torch *z, struct tfs_torch_tensor **x)
{
	if (z->nt == z->tcap) {
		size_t cap = z->tcap ? z->tcap * 2 : 64;
		struct tfs_torch_tensor *t =
			reallocarray(z->t, cap, sizeof(*t));

		if (!t)
			return tfs_diag_oom(z->d);
		z->t = t;
		z->tcap = cap;
	}
	*x = &z->t[z->nt++];
	memset(*x, 0, sizeof(**x));
	return 0;
}

/* _rebuild_tensor(_v2)(storage, offset, size, stride, ...), or a Parameter */
static int add_tensor(struct tfs_torch *z, const struct tfs_pkl_value *v)
{
	const struct tfs_pkl_value *args = V(z, v->call.b);
	uint64_t shape[TFS_TORCH_MAX_DIMS], stride[TFS_TORCH_MAX_DIMS];
	uint32_t ns = 0, nd = 0, st = 0;
	struct tfs_torch_tensor *x = NULL;
	bool parameter = false;
	uint64_t off = 0;
	int ret;

	if (!tfs_pkl_is_global(V(z, v->call.a), "torch._utils",
			       "_rebuild_tensor") &&
	    !tfs_pkl_is_global(V(z, v->call.a), "torch._utils",
			       "_rebuild_tensor_v2")) {
		/* _rebuild_parameter(data, requires_grad, hooks[, state]) */
		if (!args->nitems || !is_tensor(z, V(z, args->items[0])) ||
		    V(z, args->items[0]) == v)
			return tfs_diag_at(z->d, -EBADMSG, v->offset,
					   "parameter: its data is not a "
					   "tensor");
		parameter = true;
		v = V(z, args->items[0]);
		args = V(z, v->call.b);
		if (!tfs_pkl_is_global(V(z, v->call.a), "torch._utils",
				       "_rebuild_tensor_v2") &&
		    !tfs_pkl_is_global(V(z, v->call.a), "torch._utils",
				       "_rebuild_tensor"))
			return tfs_diag_at(z->d, -EBADMSG, v->offset,
					   "parameter: its data is not a "
					   "rebuilt tensor");
	}
	if (args->nitems < 4)
		return tfs_diag_at(z->d, -EBADMSG, args->offset,
				   "tensor: %u arguments, not (storage, "
				   "offset, size, stride, ...)",
				   args->nitems);
	ret = storage_of(z, V(z, args->items[0]), &st);
	if (!ret)
		ret = uint_of(z, V(z, args->items[1]), "storage offset", &off);
	if (!ret)
		ret = dims_of(z, args->items[2], "size", shape, &ns);
	if (!ret)
		ret = dims_of(z, args->items[3], "stride", stride, &nd);
	if (!ret && ns != nd)
		ret = tfs_diag_at(z->d, -EBADMSG, args->offset,
				  "tensor: %u sizes but %u strides", ns, nd);
	if (!ret)
		ret = tensor_push(z, &x);
	if (ret)
		return ret;
	x->storage = st;
	x->offset = off;
	x->ndim = ns;
	x->parameter = parameter;
	x->at = v->offset;
	x->dims = malloc(ns ? 2 * ns * sizeof(uint64_t) : 1);
	x->name = malloc(z->len + 1);
	if (!x->dims || !x->name)
		return tfs_diag_oom(z->d);
	memcpy(x->dims, shape, ns * sizeof(uint64_t));
	memcpy(x->dims + ns, stride, ns * sizeof(uint64_t));
	memcpy(x->name, z->name ? z->name : "", z->len + 1);
	x->name_len = z->len;
	return 0;
}

static int leaf(struct tfs_torch *z, uint32_t idx, int depth)
{
	json_t *j;
	int ret = tfs_torch_to_json(z, idx, depth, &j);

	if (ret)
		return ret;
	return set_key(z, z->leaves, z->name ? z->name : "", z->len, j);
}

/* one member of a container: name it, walk it, unname it */
static int walk_member(struct tfs_torch *z, const char *p, size_t n,
		       uint32_t idx, int depth)
{
	size_t old;
	int ret = name_push(z, p, n, &old);

	if (!ret)
		ret = tfs_torch_walk(z, idx, depth + 1);
	z->len = old;
	if (z->name)
		z->name[old] = 0;
	return ret;
}

static int walk_dict(struct tfs_torch *z, const struct tfs_pkl_value *v,
		     int depth)
{
	char kb[64];
	const char *kp;
	size_t kn;
	json_t *state;
	uint32_t i;
	int ret = 0;

	for (i = 0; !ret && i + 1 < v->nitems; i += 2) {
		ret = key_text(z, V(z, v->items[i]), kb, sizeof(kb), &kp, &kn);
		if (!ret)
			ret = walk_member(z, kp, kn, v->items[i + 1], depth);
	}
	/* an OrderedDict's BUILD state (a state_dict's _metadata) */
	if (!ret && v->state != TFS_PKL_NO_VALUE) {
		ret = tfs_torch_to_json(z, v->state, depth + 1, &state);
		if (!ret)
			ret = set_key(z, z->states, z->name ? z->name : "",
				      z->len, state);
	}
	return ret;
}

int tfs_torch_walk_named(struct tfs_torch *z, const char *p, size_t n,
			 uint32_t idx)
{
	return walk_member(z, p, n, idx, 0);
}

int tfs_torch_walk(struct tfs_torch *z, uint32_t idx, int depth)
{
	const struct tfs_pkl_value *v = V(z, idx);
	char kb[24];
	bool tensor_inside = false;
	uint32_t i;
	int ret = visit(z, v, depth);

	if (ret)
		return ret;
	if (is_tensor(z, v))
		return add_tensor(z, v);
	if (is_object(z, v)) {
		ret = object_state(z, v, &i);
		if (ret || i == TFS_PKL_NO_VALUE)
			return ret ? ret : leaf(z, idx, depth);
		return tfs_torch_walk(z, i, depth + 1);
	}
	if (jit_identity(z, v, &i))
		return tfs_torch_walk(z, i, depth + 1);
	if (is_attrs(z, v) && !v->nitems &&
	    attrs_state(z, v) != TFS_PKL_NO_VALUE)
		return tfs_torch_walk(z, v->state, depth + 1);
	if (is_attrs(z, v) && v->dict_items && v->nitems)
		return walk_dict(z, v, depth);
	if (is_dict(z, v) && v->nitems)
		return walk_dict(z, v, depth);
	if (v->kind == TFS_PKL_TUPLE && v->nitems)
		ret = has_tensor(z, idx, depth, &tensor_inside);
	if (ret)
		return ret;
	if ((v->kind == TFS_PKL_LIST || tensor_inside) && v->nitems) {
		for (i = 0; !ret && i < v->nitems; i++) {
			snprintf(kb, sizeof(kb), "%u", i);
			ret = walk_member(z, kb, strlen(kb), v->items[i],
					  depth);
		}
		return ret;
	}
	return leaf(z, idx, depth);
}

/* ---- from storages to tensor files -------------------------------------- */

static bool contiguous(const uint64_t *shape, const uint64_t *stride,
		       uint32_t n)
{
	uint64_t expect = 1;
	uint32_t i;

	for (i = n; i-- > 0;) {
		if (shape[i] == 0)
			return true;
		if (shape[i] != 1 && stride[i] != expect)
			return false;
		if (!tfs_mul_u64(expect, shape[i], &expect))
			return false;
	}
	return true;
}

static int set_xattrs(struct tfs_torch *z, uint32_t h,
		      const struct tfs_torch_tensor *x,
		      const struct tfs_torch_storage *s)
{
	char num[24];
	json_t *stride = json_array();
	uint32_t i;
	int ret = stride ? 0 : -ENOMEM;

	for (i = 0; !ret && i < x->ndim; i++)
		if (json_array_append_new(
			    stride,
			    json_integer((json_int_t)x->dims[x->ndim + i])))
			ret = -ENOMEM;
	snprintf(num, sizeof(num), "%llu", (unsigned long long)x->offset);
	if (!ret)
		ret = tfs_builder_set_xattr(z->b, h, "pytorch.storage", s->key,
					    s->key_len);
	if (!ret)
		ret = tfs_builder_set_xattr_str(z->b, h,
						"pytorch.storage_offset", num);
	if (!ret)
		ret = tfs_builder_set_xattr_json(z->b, h, "pytorch.stride",
						 stride);
	if (!ret && x->parameter)
		ret = tfs_builder_set_xattr_str(z->b, h, "pytorch.parameter",
						"true");
	if (!ret && z->big)
		ret = tfs_builder_set_xattr_str(z->b, h, "byte_order", "big");
	json_decref(stride);
	return ret ? tfs_diag_oom(z->d) : 0;
}

static int emit(struct tfs_torch *z, const struct tfs_torch_tensor *x)
{
	const struct tfs_torch_storage *s = &z->st[x->storage];
	struct tfs_gather_params g = {0};
	struct tfs_tensor_spec sp;
	char digest[32];
	uint64_t span, size, start, end, have;
	uint32_t h;
	int ret;

	g.itemsize = tfs_dtype_size(s->dtype);
	g.ndim = x->ndim;
	memcpy(g.shape, x->dims, x->ndim * sizeof(uint64_t));
	memcpy(g.stride, x->dims + x->ndim, x->ndim * sizeof(uint64_t));
	have = s->numel * g.itemsize; /* checked when located */
	if (tfs_gather_extent(&g, &span, &size) ||
	    !tfs_mul_u64(x->offset, g.itemsize, &start) ||
	    !tfs_add_u64(start, span, &end))
		return tfs_diag_at(z->d, -EBADMSG, x->at,
				   "tensor '%s': size x stride overflows 64 "
				   "bits",
				   TFS_SHOWN(x->name, x->name_len));
	if (span && end > have)
		return tfs_diag_at(z->d, -EBADMSG, x->at,
				   "tensor '%s': its elements reach byte %llu "
				   "of storage '%s', which holds %llu",
				   TFS_SHOWN(x->name, x->name_len),
				   (unsigned long long)end,
				   tfs_name_printable((char[64]){0}, 64, s->key,
						      s->key_len),
				   (unsigned long long)have);
	tfs_spec_tensor(&sp, x->name, x->name_len, s->dtype, x->dims, x->ndim,
			x->at);
	tfs_spec_size(&sp, size);
	if (!span) { /* empty: nothing stored */
		tfs_spec_stored(&sp, s->data, 0);
	} else if (contiguous(g.shape, g.stride, g.ndim)) {
		tfs_spec_stored(&sp, s->data + start, size);
	} else {
		tfs_spec_stored(&sp, s->data + start, span);
		tfs_spec_encoded(&sp, TFS_ENCODING_GATHER,
				 &(struct tfs_codec_params){.gather = &g});
	}
	/*
	 * A zip member's CRC-32 covers its whole storage, as an npz
	 * member's: checked like a digest (EIO on read, FAILED in verify).
	 */
	if (s->has_crc && span) {
		snprintf(digest, sizeof(digest), "crc32:0x%08X",
			 (unsigned)s->crc32);
		tfs_spec_digest_over(&sp, digest, s->data, s->member_size);
	}
	ret = tfs_builder_add_tensor(z->b, &sp, &h, z->d);
	return ret ? ret : set_xattrs(z, h, x, s);
}

int tfs_torch_pickle(struct tfs_torch *z, uint64_t at, uint64_t len,
		     const struct tfs_pkl_opts *opts)
{
	int ret = tfs_pkl_parse(&z->pk, z->src->data + at, (size_t)len, at,
				opts, z->d);

	if (!ret)
		z->max_visits = (uint64_t)z->pk.n * 4 + PT_MIN_VISITS;
	return ret;
}

/*
 * Every persistent id of a zip's pickle names a storage: torch.load's
 * persistent_load refuses any other type (e.g. ('module', 'x')), wherever
 * the id sits, so it is refused here too rather than shown as a leaf.
 */
int tfs_torch_zip_ids(struct tfs_torch *z)
{
	const struct tfs_pkl_value *v, *t, *type;
	char nb[64];
	uint32_t i;

	for (i = 0; i < z->pk.n; i++) {
		v = &z->pk.v[i];
		if (v->kind != TFS_PKL_PERSID)
			continue;
		t = V(z, v->call.a);
		type = t->kind == TFS_PKL_TUPLE && t->nitems ? V(z, t->items[0])
							     : NULL;
		if (!type || type->kind != TFS_PKL_STR)
			return tfs_diag_at(z->d, -EBADMSG, t->offset,
					   "persistent id: a %s, not a "
					   "('storage', ...) tuple",
					   tfs_pkl_kind_name(t->kind));
		if (!tfs_pkl_str_eq(type, "storage"))
			return tfs_diag_at(
				z->d, -EBADMSG, type->offset,
				"persistent id: type '%s', not 'storage' "
				"(torch.load refuses it)",
				tfs_name_printable(nb, sizeof(nb), type->s.p,
						   type->s.len));
	}
	return 0;
}

/* P/data/<key> (@plen: the length of "P/data/"): where its bytes are */
static int zip_storage(struct tfs_torch *z, const struct tfs_zip_entry *e,
		       size_t plen)
{
	struct tfs_torch_storage *s;
	uint64_t need;
	int i;

	i = tfs_torch_storage_by_key(z, e->name + plen, e->name_len - plen);
	if (i < 0)
		return tfs_builder_warn(z->b, e->central_offset,
					"zip: record '%s' is no tensor's "
					"storage",
					TFS_SHOWN(e->name, e->name_len));
	s = &z->st[i];
	if (e->method != TFS_ZIP_STORED)
		return tfs_diag_at(z->d, -ENOTSUP, e->local_offset,
				   "zip: storage record '%s' is compressed "
				   "(method %u)",
				   TFS_SHOWN(e->name, e->name_len), e->method);
	if (!tfs_mul_u64(s->numel, tfs_dtype_size(s->dtype), &need) ||
	    need > e->comp_size)
		return tfs_diag_at(z->d, -EBADMSG, e->data_offset,
				   "zip: storage '%s' holds %llu bytes, but "
				   "its persistent id declares %llu x %u",
				   TFS_SHOWN(s->key, s->key_len),
				   (unsigned long long)e->comp_size,
				   (unsigned long long)s->numel,
				   tfs_dtype_size(s->dtype));
	s->located = true;
	s->data = e->data_offset;
	s->has_crc = true;
	s->crc32 = e->crc32;
	s->member_size = e->comp_size;
	return 0;
}

static int zip_byteorder(struct tfs_torch *z, const struct tfs_zip_entry *e)
{
	const char *p = (const char *)z->src->data + e->data_offset;
	uint64_t n = e->comp_size;

	if (e->method == TFS_ZIP_STORED && n == 6 && !memcmp(p, "little", 6))
		z->big = false;
	else if (e->method == TFS_ZIP_STORED && n == 3 && !memcmp(p, "big", 3))
		z->big = true;
	else
		return tfs_diag_at(z->d, -EBADMSG, e->data_offset,
				   "zip: byteorder: not 'little' or 'big'");
	return json_object_set_new(z->info, "byteorder",
				   json_string(z->big ? "big" : "little"))
		       ? tfs_diag_oom(z->d)
		       : 0;
}

/* the records after the object is known: storages and byteorder */
int tfs_torch_zip_records(struct tfs_torch *z, const struct tfs_zip *zip,
			  const char *prefix, size_t plen, const char *dir)
{
	struct tfs_zip_iter it;
	struct tfs_zip_entry e;
	size_t dl = strlen(dir);
	int ret = 0, more;

	tfs_zip_iter_init(&it);
	while ((more = tfs_zip_next(zip, &it, &e, z->d)) == 1) {
		ret = 0;
		if (e.name_len <= plen || memcmp(e.name, prefix, plen) ||
		    e.name[plen] != '/')
			ret = z->quiet ? 0
				       : tfs_builder_warn(
						 z->b, e.central_offset,
						 "zip: record '%s' is outside "
						 "the folder '%.*s'",
						 TFS_SHOWN(e.name, e.name_len),
						 (int)plen, prefix);
		else if (e.name_len > plen + dl &&
			 !memcmp(e.name + plen, dir, dl))
			ret = zip_storage(z, &e, plen + dl);
		else if (e.name_len == plen + 10 &&
			 !memcmp(e.name + plen, "/byteorder", 10))
			ret = zip_byteorder(z, &e);
		if (ret)
			return ret;
	}
	return ret ? ret : more;
}

/* merge object @add into metadata member @key */
static int meta_merge(json_t *meta, const char *key, json_t *add)
{
	json_t *have = json_object_get(meta, key);

	if (!json_object_size(add))
		return have || !strcmp(key, "object_state")
			       ? 0
			       : json_object_set(meta, key, add);
	if (!have)
		return json_object_set(meta, key, add);
	return json_object_update(have, add);
}

int tfs_torch_zip_storage(struct tfs_torch *z, const char *key, size_t klen,
			  enum tfs_dtype dt, const struct tfs_zip_entry *e,
			  uint32_t *out)
{
	struct tfs_torch_storage *s;
	int si = tfs_torch_storage_by_key(z, key, klen), ret;

	if (si >= 0) {
		if (z->st[si].dtype != dt)
			return tfs_diag_at(z->d, -ENOTSUP, e->central_offset,
					   "storage '%s': viewed as %s and %s",
					   TFS_SHOWN(key, klen),
					   tfs_dtype_name(z->st[si].dtype),
					   tfs_dtype_name(dt));
		*out = (uint32_t)si;
		return 0;
	}
	if (e->method != TFS_ZIP_STORED)
		return tfs_diag_at(z->d, -ENOTSUP, e->local_offset,
				   "zip: storage record '%s' is compressed "
				   "(method %u)",
				   TFS_SHOWN(e->name, e->name_len), e->method);
	ret = storage_push(z, &s);
	if (ret)
		return ret;
	s->key = key;
	s->key_len = klen;
	s->dtype = dt;
	s->cls = tfs_dtype_name(dt);
	s->numel = e->comp_size / tfs_dtype_size(dt);
	s->at = e->central_offset;
	s->located = true;
	s->data = e->data_offset;
	s->has_crc = true;
	s->crc32 = e->crc32;
	s->member_size = e->comp_size;
	*out = (uint32_t)z->nst++;
	return storage_index(z, *out);
}

int tfs_torch_view(struct tfs_torch *z, const char *name, size_t len,
		   uint32_t st, uint64_t offset, uint32_t ndim,
		   const uint64_t *dims, bool parameter, uint64_t at)
{
	struct tfs_torch_tensor *x = NULL;
	int ret = tensor_push(z, &x);

	if (ret)
		return ret;
	x->storage = st;
	x->offset = offset;
	x->ndim = ndim;
	x->parameter = parameter;
	x->at = at;
	x->dims = malloc(ndim ? 2 * ndim * sizeof(uint64_t) : 1);
	x->name = malloc(len + 1);
	if (!x->dims || !x->name)
		return tfs_diag_oom(z->d);
	memcpy(x->dims, dims, 2 * ndim * sizeof(uint64_t));
	memcpy(x->name, name, len);
	x->name[len] = 0;
	x->name_len = len;
	return 0;
}

int tfs_torch_finish(struct tfs_torch *z, const char *info_key)
{
	json_t *meta = tfs_builder_metadata(z->b);
	size_t i;
	int ret = 0;

	for (i = 0; i < z->nst; i++)
		if (!z->st[i].located)
			return tfs_diag_at(
				z->d, -EBADMSG, z->st[i].at,
				"storage '%s': its bytes are not "
				"in the file",
				TFS_SHOWN(z->st[i].key, z->st[i].key_len));
	for (i = 0; !ret && i < z->nt; i++)
		ret = emit(z, &z->t[i]);
	if (!ret && info_key &&
	    (json_object_set_new(z->info, "pickle_protocol",
				 json_integer(z->pk.protocol)) ||
	     json_object_set_new(z->info, "storages",
				 json_integer((json_int_t)z->nst)) ||
	     json_object_set(meta, info_key, z->info)))
		ret = tfs_diag_oom(z->d);
	if (!ret && (meta_merge(meta, "leaves", z->leaves) ||
		     meta_merge(meta, "object_state", z->states)))
		ret = tfs_diag_oom(z->d);
	return ret;
}

int tfs_torch_init(struct tfs_torch *z, const struct tfs_source *src,
		   struct tfs_builder *b, struct tfs_diag *d)
{
	memset(z, 0, sizeof(*z));
	z->src = src;
	z->b = b;
	z->d = d;
	z->info = json_object();
	z->leaves = json_object();
	z->states = json_object();
	if (!z->info || !z->leaves || !z->states)
		return tfs_diag_oom(d);
	return 0;
}

void tfs_torch_free(struct tfs_torch *z)
{
	size_t i;

	tfs_pkl_free(&z->pk);
	for (i = 0; i < z->nt; i++) {
		free(z->t[i].name);
		free(z->t[i].dims);
	}
	free(z->t);
	free(z->st);
	free(z->slots);
	free(z->name);
	json_decref(z->info);
	json_decref(z->leaves);
	json_decref(z->states);
	memset(z, 0, sizeof(*z));
}
