// SPDX-License-Identifier: MIT
/*
 * The .npy header (specs/npy.md sections 1-4; numpy's
 * numpy/lib/_format_impl.py), shared by the .npy reader (npy.c), the .npz
 * reader (npz.c: its members are .npy files) and tensorfs pack: see
 * formats/common/npy_header.h.  The dict literal is read with the strict
 * literal reader (parse/pyliteral.h), never evaluated.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/common/npy_header.h"
#include "parse/pyliteral.h"
#include "core/builder.h"
#include "core/checked.h"
#include "core/cursor.h"
#include "core/diag.h"

/* nesting of structured dtypes (fields of fields) */
#define NPY_DESCR_DEPTH 8

/* a descr type string: byte order, kind, size ("<f4", "|S5", "<M8[ns]") */
struct typestr {
	char order; /* '<', '>', '|', '=' or 0 */
	char kind;
	uint64_t size; /* the number after the kind (chars for 'U') */
	bool unit;     /* a datetime unit "[..]" followed */
};

static bool read_typestr(const char *s, size_t len, struct typestr *t)
{
	size_t i = 0;

	memset(t, 0, sizeof(*t));
	if (i < len && strchr("<>|=", s[i]) && s[i])
		t->order = s[i++];
	if (i >= len || !strchr("biufcSUVOMm", s[i]) || !s[i])
		return false;
	t->kind = s[i++];
	if (i >= len || s[i] < '0' || s[i] > '9')
		return t->kind == 'O' && i == len; /* "|O" */
	for (; i < len && s[i] >= '0' && s[i] <= '9'; i++)
		if (!tfs_mul_u64(t->size, 10, &t->size) ||
		    !tfs_add_u64(t->size, (uint64_t)(s[i] - '0'), &t->size))
			return false;
	if (i < len && s[i] == '[' && (t->kind == 'M' || t->kind == 'm')) {
		while (i < len && s[i] != ']')
			i++;
		if (i == len)
			return false;
		i++;
		t->unit = true;
	}
	return i == len;
}

/* bytes of one item of type string @t, 0 when it has none we accept */
static uint64_t typestr_bytes(const struct typestr *t)
{
	uint64_t n;

	if (t->kind == 'U')
		return tfs_mul_u64(t->size, 4, &n) ? n : 0;
	return t->size;
}

static int bad_descr(struct tfs_diag *d, int err, const struct tfs_py *v,
		     const char *fmt, const char *what)
{
	return tfs_diag_at(d, err, v->offset, fmt, what);
}

/*
 * The itemsize of a structured descr: a list of (name, format[, shape])
 * where name is a str or a (title, name) tuple and format a type string
 * or, nested, another list.  numpy's descr lists every padding as a ''
 * field of type |V<n>, so the sum of the fields is the itemsize.
 */
static int fields_size(const struct tfs_py *list, unsigned depth,
		       uint64_t *size, struct tfs_diag *d)
{
	const struct tfs_py *f, *name, *fmt, *shape;
	struct typestr t;
	uint64_t total = 0, one, count;
	size_t i, k;
	int ret;

	if (depth > NPY_DESCR_DEPTH)
		return bad_descr(d, -ENOTSUP, list,
				 "descr: %s nested too deeply", "fields");
	if (list->n == 0)
		return bad_descr(d, -EBADMSG, list, "descr: %s list is empty",
				 "field");
	for (i = 0; i < list->n; i++) {
		f = &list->items[i];
		if (f->kind != TFS_PY_TUPLE || f->n < 2 || f->n > 3)
			return bad_descr(d, -EBADMSG, f,
					 "descr: a field must be a %s",
					 "(name, format[, shape]) tuple");
		name = &f->items[0];
		fmt = &f->items[1];
		if (name->kind == TFS_PY_TUPLE && name->n == 2 &&
		    name->items[1].kind == TFS_PY_STR)
			name = &name->items[1];
		if (name->kind != TFS_PY_STR)
			return bad_descr(d, -EBADMSG, name,
					 "descr: a field's name must be a %s",
					 "str or (title, name)");
		if (fmt->kind == TFS_PY_LIST) {
			ret = fields_size(fmt, depth + 1, &one, d);
			if (ret)
				return ret;
		} else if (fmt->kind == TFS_PY_STR &&
			   read_typestr(fmt->s, fmt->len, &t)) {
			if (t.kind == 'O')
				return bad_descr(
					d, -ENOTSUP, fmt,
					"descr: field of type '%s' holds "
					"Python objects (pickled): refused, "
					"never unpickled",
					fmt->s);
			one = typestr_bytes(&t);
			if (!one &&
			    !(t.kind == 'V' || t.kind == 'S' || t.kind == 'U'))
				return bad_descr(d, -EBADMSG, fmt,
						 "descr: field type '%s' has "
						 "no size",
						 fmt->s);
		} else {
			return bad_descr(d, -EBADMSG, fmt,
					 "descr: a field's format must be a "
					 "%s",
					 "type string or a list of fields");
		}
		count = 1;
		shape = f->n == 3 ? &f->items[2] : NULL;
		if (shape && shape->kind == TFS_PY_INT && shape->i >= 0) {
			count = (uint64_t)shape->i;
		} else if (shape && shape->kind == TFS_PY_TUPLE) {
			for (k = 0; k < shape->n; k++)
				if (shape->items[k].kind != TFS_PY_INT ||
				    shape->items[k].i < 0 ||
				    !tfs_mul_u64(count,
						 (uint64_t)shape->items[k].i,
						 &count))
					return bad_descr(
						d, -EBADMSG, &shape->items[k],
						"descr: %s",
						"a field's shape must be "
						"non-negative ints");
		} else if (shape) {
			return bad_descr(d, -EBADMSG, shape, "descr: %s",
					 "a field's shape must be an int or "
					 "a tuple of ints");
		}
		if (!tfs_mul_u64(one, count, &one) ||
		    !tfs_add_u64(total, one, &total) || total > UINT32_MAX)
			return bad_descr(d, -E2BIG, f, "descr: %s",
					 "the record size passes 2^32 bytes");
	}
	*size = total;
	return 0;
}

/* a simple (string) descr: dtype, itemsize, byte order */
static int simple_descr(const struct tfs_py *v, struct tfs_npy *h,
			struct tfs_diag *d)
{
	static const struct {
		char kind;
		unsigned size;
		enum tfs_dtype dtype;
	} map[] = {
		{'b', 1, TFS_DTYPE_BOOL},      {'i', 1, TFS_DTYPE_INT8},
		{'i', 2, TFS_DTYPE_INT16},     {'i', 4, TFS_DTYPE_INT32},
		{'i', 8, TFS_DTYPE_INT64},     {'u', 1, TFS_DTYPE_UINT8},
		{'u', 2, TFS_DTYPE_UINT16},    {'u', 4, TFS_DTYPE_UINT32},
		{'u', 8, TFS_DTYPE_UINT64},    {'f', 2, TFS_DTYPE_FLOAT16},
		{'f', 4, TFS_DTYPE_FLOAT32},   {'f', 8, TFS_DTYPE_FLOAT64},
		{'c', 8, TFS_DTYPE_COMPLEX64}, {'c', 16, TFS_DTYPE_COMPLEX128},
	};
	struct typestr t;
	uint64_t bytes;
	size_t i;

	if (!read_typestr(v->s, v->len, &t))
		return bad_descr(d, -EBADMSG, v,
				 "descr: '%s' is not a numpy type string",
				 v->s);
	if (t.kind == 'O')
		return bad_descr(d, -ENOTSUP, v,
				 "descr: '%s' is an object array (pickled "
				 "Python objects): refused, never unpickled",
				 v->s);
	if (t.kind == 'M' || t.kind == 'm')
		return bad_descr(d, -ENOTSUP, v,
				 "descr: '%s' (datetime/timedelta) is not "
				 "supported",
				 v->s);
	bytes = typestr_bytes(&t);
	if (t.kind == 'S' || t.kind == 'U' || t.kind == 'V') {
		if (!bytes || bytes > UINT32_MAX)
			return bad_descr(d, -EBADMSG, v,
					 "descr: '%s': records of 0 or more "
					 "than 2^32 bytes",
					 v->s);
		h->dtype = TFS_DTYPE_VOID;
		h->itemsize = (uint32_t)bytes;
		h->big_endian = t.kind == 'U' && t.order == '>';
		return 0;
	}
	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (map[i].kind == t.kind && map[i].size == t.size)
			break;
	if (i == sizeof(map) / sizeof(map[0]))
		return bad_descr(d, -ENOTSUP, v,
				 t.kind == 'f' || t.kind == 'c'
					 ? "descr: '%s' (long double: the "
					   "writer's platform's layout) is "
					   "not supported"
					 : "descr: '%s': no such type",
				 v->s);
	if (t.order == '|' && t.size > 1)
		return bad_descr(d, -EBADMSG, v,
				 "descr: '%s': a multi-byte type needs a "
				 "byte order ('<' or '>')",
				 v->s);
	h->dtype = map[i].dtype;
	h->itemsize = map[i].size;
	h->big_endian = t.order == '>' && t.size > 1;
	return 0;
}

/* the header text from @from to @to as UTF-8 (latin-1 in v1/v2) */
static char *text_utf8(const uint8_t *p, uint64_t len, bool latin1)
{
	char *s = malloc(2 * len + 1), *o = s;
	uint64_t i;

	if (!s)
		return NULL;
	for (i = 0; i < len; i++) {
		if (latin1 && p[i] >= 0x80) {
			*o++ = (char)(0xc0 | p[i] >> 6);
			*o++ = (char)(0x80 | (p[i] & 0x3f));
		} else {
			*o++ = (char)p[i];
		}
	}
	*o = 0;
	return s;
}

/*
 * Records (strings, voids, structured): the descr literal the -o npy view
 * writes, so numpy reads them back as what they are; ASCII only (the view
 * writes format 1.0/2.0 headers).  -ENOMEM or 0.
 */
static int view_descr(const struct tfs_py *descr, const uint8_t *text,
		      uint64_t text_base, struct tfs_npy *h)
{
	const uint8_t *p = text + (descr->offset - text_base);
	uint64_t i, n = descr->end - descr->offset;

	if (h->dtype != TFS_DTYPE_VOID)
		return 0;
	for (i = 0; i < n; i++)
		if (p[i] >= 0x80 || p[i] < 0x20)
			return 0;
	h->view_descr = strndup((const char *)p, (size_t)n);
	return h->view_descr ? 0 : -ENOMEM;
}

static int read_dict(const struct tfs_py *dict, const uint8_t *text,
		     uint64_t text_base, struct tfs_npy *h, struct tfs_diag *d)
{
	static const char *const keys[] = {"descr", "fortran_order", "shape"};
	const struct tfs_py *descr, *fo, *shape, *k;
	uint64_t size;
	size_t i, j;
	int ret;

	if (dict->kind != TFS_PY_DICT)
		return tfs_diag_at(d, -EBADMSG, dict->offset,
				   "header: not a dict (found %s)",
				   tfs_py_kind_name(dict->kind));
	for (i = 0; i < dict->n; i += 2) {
		k = &dict->items[i];
		for (j = 0; j < 3; j++)
			if (k->kind == TFS_PY_STR && strcmp(k->s, keys[j]) == 0)
				break;
		if (j == 3)
			return tfs_diag_at(d, -EBADMSG, k->offset,
					   "header: unexpected key (the keys "
					   "are exactly descr, fortran_order, "
					   "shape)");
	}
	for (j = 0; j < 3; j++)
		if (!tfs_py_dict_get(dict, keys[j]))
			return tfs_diag_at(d, -EBADMSG, dict->offset,
					   "header: no '%s' key", keys[j]);
	descr = tfs_py_dict_get(dict, "descr");
	fo = tfs_py_dict_get(dict, "fortran_order");
	shape = tfs_py_dict_get(dict, "shape");
	if (fo->kind != TFS_PY_BOOL)
		return tfs_diag_at(
			d, -EBADMSG, fo->offset,
			"fortran_order: not True or False (found %s)",
			tfs_py_kind_name(fo->kind));
	h->fortran = fo->b;
	if (shape->kind != TFS_PY_TUPLE)
		return tfs_diag_at(d, -EBADMSG, shape->offset,
				   "shape: not a tuple (found %s)",
				   tfs_py_kind_name(shape->kind));
	h->ndim = shape->n;
	h->shape = calloc(h->ndim ? h->ndim : 1, sizeof(*h->shape));
	if (!h->shape)
		return tfs_diag_oom(d);
	h->count = 1;
	for (i = 0; i < h->ndim; i++) {
		k = &shape->items[i];
		if (k->kind != TFS_PY_INT || k->i < 0)
			return tfs_diag_at(d, -EBADMSG, k->offset,
					   "shape: dimension %zu is not a "
					   "non-negative int",
					   i);
		h->shape[i] = (uint64_t)k->i;
		if (!tfs_mul_u64(h->count, h->shape[i], &h->count))
			return tfs_diag_at(d, -EBADMSG, k->offset,
					   "shape: the element count "
					   "overflows 64 bits");
	}
	if (descr->kind == TFS_PY_STR) {
		ret = simple_descr(descr, h, d);
		h->descr = strdup(descr->s);
	} else if (descr->kind == TFS_PY_LIST) {
		ret = fields_size(descr, 0, &size, d);
		if (!ret && !size)
			ret = tfs_diag_at(d, -EBADMSG, descr->offset,
					  "descr: records of 0 bytes");
		h->structured = true;
		h->dtype = TFS_DTYPE_VOID;
		h->itemsize = (uint32_t)size;
		h->descr = text_utf8(text + (descr->offset - text_base),
				     descr->end - descr->offset, h->major < 3);
	} else {
		return tfs_diag_at(d, -EBADMSG, descr->offset,
				   "descr: not a type string or a list of "
				   "fields (found %s)",
				   tfs_py_kind_name(descr->kind));
	}
	if (ret)
		return ret;
	if (!h->descr || view_descr(descr, text, text_base, h))
		return tfs_diag_oom(d);
	if (!tfs_mul_u64(h->count, h->itemsize, &h->nbytes))
		return tfs_diag_at(d, -EBADMSG, shape->offset,
				   "shape: %llu elements of %u bytes overflow "
				   "64 bits",
				   (unsigned long long)h->count, h->itemsize);
	return 0;
}

int tfs_npy_parse(const uint8_t *p, uint64_t avail, uint64_t base,
		  struct tfs_npy *h, struct tfs_diag *d)
{
	struct tfs_py_options opt = {0};
	struct tfs_py dict;
	uint64_t pre;
	int ret;

	memset(h, 0, sizeof(*h));
	if (avail < 8 || memcmp(p, TFS_NPY_MAGIC, TFS_NPY_MAGIC_LEN) != 0)
		return tfs_diag_at(d, -EBADMSG, base,
				   avail < 8 ? "magic: %llu bytes, shorter "
					       "than magic and version"
					     : "magic: not \\x93NUMPY (%llu "
					       "bytes)",
				   (unsigned long long)avail);
	h->major = p[6];
	if ((h->major < 1 || h->major > 3) || p[7] != 0)
		return tfs_diag_at(d, -ENOTSUP, base + 6,
				   "version: %u.%u is not supported (1.0, "
				   "2.0, 3.0)",
				   p[6], p[7]);
	pre = h->major == 1 ? 10 : 12;
	if (avail < pre)
		return tfs_diag_at(d, -EBADMSG, base + 8,
				   "HEADER_LEN: cut short (%llu bytes)",
				   (unsigned long long)avail);
	h->header_len = tfs_load_le(p + 8, (unsigned)(pre - 8));
	if (h->header_len > TFS_NPY_HEADER_MAX)
		return tfs_diag_at(d, -E2BIG, base + 8,
				   "HEADER_LEN: %llu bytes, more than numpy's "
				   "max_header_size of %u",
				   (unsigned long long)h->header_len,
				   TFS_NPY_HEADER_MAX);
	if (h->header_len > avail - pre)
		return tfs_diag_at(d, -EBADMSG, base + 8,
				   "HEADER_LEN: %llu bytes of header, only "
				   "%llu follow",
				   (unsigned long long)h->header_len,
				   (unsigned long long)(avail - pre));
	h->data_offset = base + pre + h->header_len;
	opt.latin1 = h->major < 3;
	opt.long_suffix = h->major < 3;
	ret = tfs_py_parse(p + pre, (size_t)h->header_len, base + pre, &opt,
			   &dict, d);
	if (ret)
		return ret;
	ret = read_dict(&dict, p + pre, base + pre, h, d);
	tfs_py_free(&dict);
	return ret;
}

void tfs_npy_free(struct tfs_npy *h)
{
	free(h->shape);
	free(h->descr);
	free(h->view_descr);
	memset(h, 0, sizeof(*h));
}

void tfs_npy_spec(const struct tfs_npy *h, struct tfs_tensor_spec *spec)
{
	tfs_spec_type(spec, h->dtype, h->shape, h->ndim);
	tfs_spec_records(spec, h->dtype == TFS_DTYPE_VOID ? h->itemsize : 0);
	tfs_spec_npy_descr(spec, h->view_descr);
}

int tfs_npy_describe(struct tfs_builder *b, uint32_t handle,
		     const struct tfs_npy *h)
{
	int ret = tfs_builder_set_xattr_str(b, handle, "npy.descr", h->descr);

	if (!ret && h->big_endian)
		ret = tfs_builder_set_xattr_str(b, handle, "byte_order", "big");
	if (!ret && h->fortran)
		ret = tfs_builder_set_xattr_str(b, handle, "order", "F");
	return ret;
}
