// SPDX-License-Identifier: MIT
/*
 * The restricted pickle reader (src/parse/pickle.h) against CPython:
 * tests/fixtures/pickle/generate.py writes pickles with CPython's pickler
 * (protocols 2 to 5) and by hand, and what CPython's own unpickler makes of
 * each (globals stubbed, nothing called) in a canonical text form; this
 * suite renders the reader's tree the same way and compares.  Every
 * supported opcode is in a valid file (the generator checks).  The hostile
 * pickles of reject/ are refused with the errno, word and opcode offset of
 * reject.json.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse/pickle.h"
#include "testutil.h"

/* the generator's ALLOWED set */
static bool allow_listed(void *arg, const char *m, size_t ml, const char *n,
			 size_t nl)
{
	static const char *const ok[] = {
		"collections.OrderedDict",
		"torch._utils._rebuild_tensor_v2",
		"torch.FloatStorage",
		"mod.Obj",
		"builtins.set",
		"__builtin__.set",
		"_codecs.encode",
		"mod.fn",
		"__builtin__.bytes",
		"__builtin__.bytearray",
		"builtins.bytearray",
		"__builtin__.frozenset",
		"builtins.frozenset",
	};
	char full[1100];
	size_t i;

	(void)arg;
	if (ml + nl + 2 > sizeof(full))
		return false;
	memcpy(full, m, ml);
	full[ml] = '.';
	memcpy(full + ml + 1, n, nl);
	full[ml + 1 + nl] = 0;
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (strcmp(full, ok[i]) == 0)
			return true;
	return false;
}

static const struct tfs_pkl_opts listed = {.allow = allow_listed};

static void put(struct tu_buf *b, const char *s)
{
	tu_buf_put(b, s, strlen(s));
}

static void hex(struct tu_buf *b, const char *p, size_t n)
{
	char h[3];
	size_t i;

	for (i = 0; i < n; i++) {
		snprintf(h, sizeof(h), "%02x", (unsigned char)p[i]);
		put(b, h);
	}
}

static void render(const struct tfs_pkl *p, uint32_t idx, struct tu_buf *b,
		   int depth);

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* items of a set: rendered, sorted */
static void render_set(const struct tfs_pkl *p, const struct tfs_pkl_value *v,
		       struct tu_buf *b, int depth)
{
	char **s = calloc(v->nitems + 1, sizeof(*s));
	uint32_t i;

	ck_assert_ptr_nonnull(s);
	for (i = 0; i < v->nitems; i++) {
		struct tu_buf one = {0};

		render(p, v->items[i], &one, depth + 1);
		tu_buf_put(&one, "", 1);
		s[i] = (char *)one.p;
	}
	qsort(s, v->nitems, sizeof(*s), cmp_str);
	put(b, "[");
	for (i = 0; i < v->nitems; i++) {
		put(b, s[i]);
		put(b, ",");
		free(s[i]);
	}
	put(b, "]");
	free(s);
}

static void render_items(const struct tfs_pkl *p, const struct tfs_pkl_value *v,
			 struct tu_buf *b, int depth)
{
	uint32_t i;

	put(b, v->dict_items ? "{" : "[");
	for (i = 0; i < v->nitems; i++) {
		render(p, v->items[i], b, depth + 1);
		put(b, v->dict_items && i % 2 == 0 ? ":" : ",");
	}
	put(b, v->dict_items ? "}" : "]");
}

static void render(const struct tfs_pkl *p, uint32_t idx, struct tu_buf *b,
		   int depth)
{
	const struct tfs_pkl_value *v;
	char num[TFS_PKL_MAX_LONG * 3 + 4];
	uint64_t bits;
	uint32_t i;

	ck_assert_uint_lt(idx, p->n);
	ck_assert_int_lt(depth, TFS_PKL_MAX_DEPTH + 2);
	v = tfs_pkl_at(p, idx);
	switch (v->kind) {
	case TFS_PKL_NONE:
		put(b, "None");
		break;
	case TFS_PKL_BOOL:
		put(b, v->b ? "True" : "False");
		break;
	case TFS_PKL_INT:
	case TFS_PKL_LONG:
		ck_assert_int_eq(tfs_pkl_long_decimal(v, num, sizeof(num)), 0);
		put(b, num);
		break;
	case TFS_PKL_FLOAT:
		memcpy(&bits, &v->f, sizeof(bits));
		snprintf(num, sizeof(num), "f:%016llx",
			 (unsigned long long)bits);
		put(b, num);
		break;
	case TFS_PKL_STR:
		put(b, "s:");
		hex(b, v->s.p, v->s.len);
		break;
	case TFS_PKL_BYTES:
		put(b, "b:");
		hex(b, v->s.p, v->s.len);
		break;
	case TFS_PKL_TUPLE:
		put(b, "(");
		for (i = 0; i < v->nitems; i++) {
			render(p, v->items[i], b, depth + 1);
			put(b, ",");
		}
		put(b, ")");
		break;
	case TFS_PKL_LIST:
	case TFS_PKL_DICT:
		render_items(p, v, b, depth);
		break;
	case TFS_PKL_SET:
	case TFS_PKL_FROZENSET:
		put(b, v->kind == TFS_PKL_SET ? "set" : "frozenset");
		render_set(p, v, b, depth);
		break;
	case TFS_PKL_GLOBAL:
		put(b, "G(");
		tu_buf_put(b, v->g.module.p, v->g.module.len);
		put(b, ".");
		tu_buf_put(b, v->g.name.p, v->g.name.len);
		put(b, ")");
		break;
	case TFS_PKL_REDUCE:
	case TFS_PKL_NEWOBJ:
		put(b, v->kind == TFS_PKL_REDUCE ? "R(" : "N(");
		render(p, v->call.a, b, depth + 1);
		put(b, ",");
		render(p, v->call.b, b, depth + 1);
		put(b, ")");
		if (v->nitems)
			render_items(p, v, b, depth);
		if (v->state != TFS_PKL_NO_VALUE) {
			put(b, "|S(");
			render(p, v->state, b, depth + 1);
			put(b, ")");
		}
		break;
	case TFS_PKL_PERSID:
		put(b, "P(");
		render(p, v->call.a, b, depth + 1);
		put(b, ")");
		break;
	}
}

static void check_valid(const char *path, const char *name, void *arg)
{
	struct tfs_pkl p;
	struct tfs_diag d;
	struct tu_buf out = {0};
	char txt[4096];
	uint8_t *blob, *want;
	size_t len, wlen;
	int ret;

	(void)arg;
	if (strlen(name) < 5 || strcmp(name + strlen(name) - 4, ".pkl"))
		return;
	blob = tu_read_file(path, &len);
	snprintf(txt, sizeof(txt), "%.*s.txt", (int)strlen(path) - 4, path);
	want = tu_read_file(txt, &wlen);
	ck_assert_uint_gt(wlen, 0);
	ck_assert_int_eq(want[wlen - 1], '\n');
	tfs_diag_clear(&d);
	ret = tfs_pkl_parse(&p, blob, len, 100, &listed, &d);
	ck_assert_msg(ret == 0, "%s: %s", name, d.msg);
	ck_assert_uint_eq(p.end, 100 + len); /* STOP is the last byte */
	render(&p, p.root, &out, 0);
	ck_assert_msg(out.len == wlen - 1 && memcmp(out.p, want, out.len) == 0,
		      "%s: got %.*s", name,
		      (int)(out.len < 300 ? out.len : 300),
		      (const char *)out.p);
	tfs_pkl_free(&p);
	free(out.p);
	free(blob);
	free(want);
}

START_TEST(cpython_pickles)
{
	ck_assert_uint_ge(
		tu_each_fixture(tu_testdata("pickle/valid"), check_valid, NULL),
		20);
}
END_TEST

struct rejects {
	json_t *table;
	size_t seen;
};

static int errno_of(const char *name)
{
	if (strcmp(name, "EBADMSG") == 0)
		return -EBADMSG;
	if (strcmp(name, "ENOTSUP") == 0)
		return -ENOTSUP;
	if (strcmp(name, "E2BIG") == 0)
		return -E2BIG;
	ck_abort_msg("unknown errno name %s", name);
	return 0;
}

static void check_reject(const char *path, const char *name, void *arg)
{
	struct rejects *r = arg;
	json_t *e = json_object_get(r->table, name);
	struct tfs_pkl p;
	struct tfs_diag d;
	uint8_t *blob;
	size_t len;
	int ret;

	ck_assert_msg(e != NULL, "%s is not in reject.json", name);
	r->seen++;
	blob = tu_read_file(path, &len);
	tfs_diag_clear(&d);
	ret = tfs_pkl_parse(&p, blob, len, 1000, &listed, &d);
	ck_assert_msg(
		ret == errno_of(json_string_value(json_object_get(e, "err"))),
		"%s: %d (%s)", name, ret, d.msg);
	ck_assert_msg(strstr(d.msg, json_string_value(json_object_get(
					    e, "word"))) != NULL,
		      "%s: %s", name, d.msg);
	ck_assert(d.has_offset);
	ck_assert_msg(d.offset == 1000 + (uint64_t)json_integer_value(
						 json_object_get(e, "offset")),
		      "%s: offset %llu (%s)", name,
		      (unsigned long long)d.offset, d.msg);
	ck_assert_ptr_null(p.v);
	free(blob);
}

START_TEST(hostile_pickles)
{
	struct rejects r = {0};
	json_error_t err;

	r.table = json_load_file(tu_testdata("pickle/reject.json"), 0, &err);
	ck_assert_msg(r.table != NULL, "reject.json: %s", err.text);
	tu_each_fixture(tu_testdata("pickle/reject"), check_reject, &r);
	ck_assert_uint_eq(r.seen, json_object_size(r.table));
	ck_assert_uint_ge(r.seen, 30);
	json_decref(r.table);
}
END_TEST

static int parse_str(struct tfs_pkl *p, const char *s, size_t n,
		     const struct tfs_pkl_opts *o, struct tfs_diag *d)
{
	tfs_diag_clear(d);
	return tfs_pkl_parse(p, s, n, 0, o, d);
}

/* no allow list: every global is refused, by name */
START_TEST(no_allow_list)
{
	static const char pk[] = "\x80\x02"
				 "ccollections\nOrderedDict\n)R.";
	struct tfs_pkl p;
	struct tfs_diag d;

	ck_assert_int_eq(parse_str(&p, pk, sizeof(pk) - 1, NULL, &d), -ENOTSUP);
	ck_assert_ptr_nonnull(strstr(d.msg, "collections.OrderedDict"));
	ck_assert_ptr_nonnull(strstr(d.msg, "not loadable without executing"));
	ck_assert_uint_eq(d.offset, 2);
	ck_assert_int_eq(parse_str(&p, pk, sizeof(pk) - 1, &listed, &d), 0);
	ck_assert(tfs_pkl_is_global(
		tfs_pkl_at(&p, tfs_pkl_at(&p, p.root)->call.a), "collections",
		"OrderedDict"));
	tfs_pkl_free(&p);
}
END_TEST

/* a memo GET is the same value, as in Python; bytes after STOP unread */
START_TEST(memo_shares)
{
	static const char pk[] = "\x80\x02]q\x00h\x00\x86.garbage";
	struct tfs_pkl p;
	struct tfs_diag d;
	const struct tfs_pkl_value *t;

	ck_assert_int_eq(parse_str(&p, pk, sizeof(pk) - 1, NULL, &d), 0);
	t = tfs_pkl_at(&p, p.root);
	ck_assert_int_eq(t->kind, TFS_PKL_TUPLE);
	ck_assert_uint_eq(t->nitems, 2);
	ck_assert_uint_eq(t->items[0], t->items[1]);
	ck_assert_uint_eq(p.end, 9);
	ck_assert_int_eq(p.protocol, 2);
	tfs_pkl_free(&p);
}
END_TEST

/* integers: LONG1 of every width round-trips through int64 or decimal */
START_TEST(longs)
{
	/* torch's legacy magic number 0x1950a86a20f9469cfc6c */
	static const char magic[] =
		"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19.";
	static const char minus_one[] = "\x80\x02\x8a\x01\xff.";
	static const char wide_small[] =
		"\x80\x02\x8a\x0a\xfe\xff\xff\xff\xff\xff\xff\xff\xff\xff.";
	struct tfs_pkl p;
	struct tfs_diag d;
	char buf[64];
	int64_t v;

	ck_assert_int_eq(parse_str(&p, magic, sizeof(magic) - 1, NULL, &d), 0);
	ck_assert_int_eq(tfs_pkl_at(&p, p.root)->kind, TFS_PKL_LONG);
	ck_assert_int_eq(tfs_pkl_int64(tfs_pkl_at(&p, p.root), &v), -ERANGE);
	ck_assert_int_eq(
		tfs_pkl_long_decimal(tfs_pkl_at(&p, p.root), buf, sizeof(buf)),
		0);
	ck_assert_str_eq(buf, "119547037146038801333356");
	ck_assert_int_eq(tfs_pkl_long_decimal(tfs_pkl_at(&p, p.root), buf, 5),
			 -ENOSPC);
	tfs_pkl_free(&p);
	ck_assert_int_eq(
		parse_str(&p, minus_one, sizeof(minus_one) - 1, NULL, &d), 0);
	ck_assert_int_eq(tfs_pkl_int64(tfs_pkl_at(&p, p.root), &v), 0);
	ck_assert_int_eq(v, -1);
	tfs_pkl_free(&p);
	ck_assert_int_eq(
		parse_str(&p, wide_small, sizeof(wide_small) - 1, NULL, &d), 0);
	ck_assert_int_eq(tfs_pkl_int64(tfs_pkl_at(&p, p.root), &v), 0);
	ck_assert_int_eq(v, -2);
	tfs_pkl_free(&p);
}
END_TEST

/* every cut of a valid pickle is refused cleanly, never read past */
START_TEST(every_truncation)
{
	size_t len, n;
	uint8_t *blob =
		tu_read_file(tu_testdata("pickle/valid/torchlike.pkl"), &len);
	struct tfs_pkl p;
	struct tfs_diag d;

	for (n = 0; n < len; n++) {
		uint8_t *cut = malloc(n ? n : 1);

		ck_assert_ptr_nonnull(cut);
		memcpy(cut, blob, n);
		tfs_diag_clear(&d);
		ck_assert_int_eq(tfs_pkl_parse(&p, cut, n, 0, &listed, &d),
				 -EBADMSG);
		ck_assert(d.has_offset && d.offset <= n);
		free(cut);
	}
	free(blob);
}
END_TEST

START_TEST(opcode_names)
{
	ck_assert_str_eq(tfs_pkl_opcode_name('q'), "BINPUT");
	ck_assert_str_eq(tfs_pkl_opcode_name(0x93), "STACK_GLOBAL");
	ck_assert_ptr_null(tfs_pkl_opcode_name(0xff));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pickle");
	TCase *tc = tcase_create("pickle");

	tcase_add_test(tc, cpython_pickles);
	tcase_add_test(tc, hostile_pickles);
	tcase_add_test(tc, no_allow_list);
	tcase_add_test(tc, memo_shares);
	tcase_add_test(tc, longs);
	tcase_add_test(tc, every_truncation);
	tcase_add_test(tc, opcode_names);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
