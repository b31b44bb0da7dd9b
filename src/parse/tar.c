// SPDX-License-Identifier: MIT
/*
 * Uncompressed tar archives: parse/tar.h.  The layout (POSIX.1-2001 ustar,
 * pax, GNU) as ../shared/specs/torchscript.md section 5 has it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "parse/tar.h"
#include "core/checked.h"
#include "core/diag.h"

#define F_NAME 0
#define F_SIZE 124
#define F_CHKSUM 148
#define F_TYPE 156
#define F_MAGIC 257
#define F_PREFIX 345

static bool zero_block(const uint8_t *h)
{
	size_t i;

	for (i = 0; i < TFS_TAR_BLOCK; i++)
		if (h[i])
			return false;
	return true;
}

/*
 * An octal field: leading spaces, at least one digit, then NULs or spaces
 * to its end.  0 or -EBADMSG.
 */
static int octal(const uint8_t *f, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i = 0;
	bool digit = false;

	while (i < len && f[i] == ' ')
		i++;
	for (; i < len && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v > (UINT64_MAX >> 3))
			return -EBADMSG;
		v = v << 3 | (uint64_t)(f[i] - '0');
		digit = true;
	}
	for (; i < len; i++)
		if (f[i] != 0 && f[i] != ' ')
			return -EBADMSG;
	if (!digit)
		return -EBADMSG;
	*out = v;
	return 0;
}

static bool checksum_ok(const uint8_t *h)
{
	uint64_t want;
	uint32_t u = 0;
	int32_t s = 0;
	size_t i;

	if (octal(h + F_CHKSUM, 8, &want))
		return false;
	for (i = 0; i < TFS_TAR_BLOCK; i++) {
		uint8_t c = i >= F_CHKSUM && i < F_CHKSUM + 8 ? ' ' : h[i];

		u += c;
		s += (int8_t)c;
	}
	/* the historic signed sum too */
	return want == u || (s >= 0 && want == (uint64_t)s);
}

static bool ustar(const uint8_t *h)
{
	return !memcmp(h + F_MAGIC, "ustar\0", 6) ||
	       !memcmp(h + F_MAGIC, "ustar  \0", 8);
}

bool tfs_tar_magic(const void *data, uint64_t size)
{
	return size >= TFS_TAR_BLOCK && ustar(data) && checksum_ok(data);
}

void tfs_tar_iter_init(struct tfs_tar_iter *it)
{
	memset(it, 0, sizeof(*it));
}

/* the size field: octal, or GNU base-256 (byte 0 exactly 0x80) */
static int size_field(const uint8_t *h, uint64_t at, uint64_t *out,
		      struct tfs_diag *d)
{
	const uint8_t *f = h + F_SIZE;
	uint64_t v = 0;
	size_t i;

	if (!(f[0] & 0x80))
		return octal(f, 12, out)
			       ? tfs_diag_at(d, -EBADMSG, at + F_SIZE,
					     "tar: size: not an octal number")
			       : 0;
	if (f[0] != 0x80 || f[1] || f[2] || f[3] || (f[4] & 0x80))
		return tfs_diag_at(d, -EBADMSG, at + F_SIZE,
				   "tar: size: a base-256 number of 2^63 or "
				   "more");
	for (i = 4; i < 12; i++)
		v = v << 8 | f[i];
	*out = v;
	return 0;
}

/*
 * Make @p/@n (not NUL-terminated) the member's contained name: "."
 * components and repeated slashes dropped, a trailing slash dropped; a
 * leading '/' or a ".." component refused (at @at, the field's offset).
 */
static int set_name(struct tfs_tar_member *m, const char *p, size_t n,
		    uint64_t at, struct tfs_diag *d)
{
	size_t i = 0, j, len = 0;

	if (n && p[0] == '/')
		return tfs_diag_at(d, -EBADMSG, at,
				   "tar: member name '%.*s': absolute",
				   (int)(n > 200 ? 200 : n), p);
	if (memchr(p, 0, n))
		n = strnlen(p, n);
	while (i < n) {
		for (j = i; j < n && p[j] != '/'; j++)
			;
		if (j - i == 2 && p[i] == '.' && p[i + 1] == '.')
			return tfs_diag_at(d, -EBADMSG, at,
					   "tar: member name '%.*s': a '..' "
					   "component",
					   (int)(n > 200 ? 200 : n), p);
		if (j > i && !(j - i == 1 && p[i] == '.')) {
			if (len + (len ? 1 : 0) + (j - i) > TFS_TAR_NAME_MAX)
				return tfs_diag_at(d, -E2BIG, at,
						   "tar: member name: longer "
						   "than %u bytes",
						   TFS_TAR_NAME_MAX);
			if (len)
				m->name[len++] = '/';
			memcpy(m->name + len, p + i, j - i);
			len += j - i;
		}
		i = j + 1;
	}
	m->name[len] = 0;
	m->name_len = len;
	return 0;
}

struct pending {
	const char *path; /* from pax or a GNU long name (into the file) */
	size_t path_len;
	uint64_t path_at;
	bool has_size;
	uint64_t size;
};

/* pax records "<len> key=value\n" in [@p, @p + @n), at file offset @at */
static int pax(const uint8_t *p, uint64_t n, uint64_t at, struct pending *x,
	       struct tfs_diag *d)
{
	uint64_t pos = 0, len, v, i;
	const uint8_t *r, *eq;
	size_t kl;

	while (pos < n) {
		r = p + pos;
		len = 0;
		for (i = 0; pos + i < n && r[i] >= '0' && r[i] <= '9' && i < 8;
		     i++)
			len = len * 10 + (uint64_t)(r[i] - '0');
		if (!i || pos + i >= n || r[i] != ' ' || len <= i + 1 ||
		    len > n - pos || r[len - 1] != '\n')
			return tfs_diag_at(d, -EBADMSG, at + pos,
					   "tar: pax record: not '<length> "
					   "key=value\\n' inside the header");
		eq = memchr(r + i + 1, '=', len - i - 1);
		if (!eq)
			return tfs_diag_at(d, -EBADMSG, at + pos,
					   "tar: pax record: no '='");
		kl = (size_t)(eq - (r + i + 1));
		if (kl == 4 && !memcmp(r + i + 1, "path", 4)) {
			x->path = (const char *)eq + 1;
			x->path_len = (size_t)(r + len - 1 - (eq + 1));
			x->path_at = at + pos;
		} else if (kl == 4 && !memcmp(r + i + 1, "size", 4)) {
			const uint8_t *s = eq + 1, *e = r + len - 1;

			v = 0;
			if (s == e || e - s > 19)
				goto bad_size;
			for (; s < e; s++) {
				if (*s < '0' || *s > '9')
					goto bad_size;
				v = v * 10 + (uint64_t)(*s - '0');
			}
			x->has_size = true;
			x->size = v;
		}
		pos += len;
	}
	return 0;
bad_size:
	return tfs_diag_at(d, -EBADMSG, at + pos,
			   "tar: pax record size: not a decimal number");
}

/* the extended header at @at (@what) holds @len bytes, above @max */
static int too_long(uint64_t at, const char *what, uint64_t len, unsigned max,
		    struct tfs_diag *d)
{
	return tfs_diag_at(d, -E2BIG, at + F_SIZE,
			   "tar: %s of %llu bytes, above the limit of %u", what,
			   (unsigned long long)len, max);
}

int tfs_tar_next(const uint8_t *data, uint64_t size, struct tfs_tar_iter *it,
		 struct tfs_tar_member *m, struct tfs_diag *d)
{
	struct pending x = {0};
	const uint8_t *h;
	uint64_t at, len = 0, blocks, next;
	char full[TFS_TAR_NAME_MAX + 1];
	size_t nl, pl;
	int ret;

	while (!it->done) {
		at = it->pos;
		if (at == size) { /* no end blocks: tolerated */
			it->done = true;
			break;
		}
		if (!tfs_range_ok(at, TFS_TAR_BLOCK, size))
			return tfs_diag_at(d, -EBADMSG, at,
					   "tar: header: runs past the end of "
					   "the file");
		h = data + at;
		if (zero_block(h)) {
			it->done = true;
			break;
		}
		if (!checksum_ok(h))
			return tfs_diag_at(d, -EBADMSG, at + F_CHKSUM,
					   "tar: chksum: does not match the "
					   "header's bytes");
		ret = size_field(h, at, &len, d);
		if (ret)
			return ret;
		if (x.has_size && h[F_TYPE] != 'x' && h[F_TYPE] != 'L')
			len = x.size;
		if (!tfs_range_ok(at + TFS_TAR_BLOCK, len, size))
			return tfs_diag_at(d, -EBADMSG, at + F_SIZE,
					   "tar: size: member of %llu bytes "
					   "runs past the end of the file "
					   "(%llu bytes)",
					   (unsigned long long)len,
					   (unsigned long long)size);
		blocks = len / TFS_TAR_BLOCK + (len % TFS_TAR_BLOCK != 0);
		next = at + TFS_TAR_BLOCK + blocks * TFS_TAR_BLOCK;
		if (next > size) /* the last member's padding: tolerated */
			next = size;
		it->pos = next;
		switch (h[F_TYPE]) {
		case 'x':
		case 'g':
			if (len > TFS_TAR_PAX_MAX)
				return too_long(at, "pax header", len,
						TFS_TAR_PAX_MAX, d);
			if (h[F_TYPE] == 'x') {
				ret = pax(data + at + TFS_TAR_BLOCK, len,
					  at + TFS_TAR_BLOCK, &x, d);
				if (ret)
					return ret;
			}
			continue;
		case 'L':
			if (len > TFS_TAR_NAME_MAX)
				return too_long(at, "GNU long name", len,
						TFS_TAR_NAME_MAX, d);
			x.path = (const char *)data + at + TFS_TAR_BLOCK;
			x.path_len = strnlen(x.path, (size_t)len);
			x.path_at = at + TFS_TAR_BLOCK;
			continue;
		case 'K':
			continue;
		}
		if (++it->count > TFS_TAR_MAX_MEMBERS)
			return tfs_diag_at(d, -E2BIG, at,
					   "tar: more than %u members",
					   TFS_TAR_MAX_MEMBERS);
		if (x.path) {
			ret = set_name(m, x.path, x.path_len, x.path_at, d);
		} else {
			nl = strnlen((const char *)h + F_NAME, 100);
			pl = !memcmp(h + F_MAGIC, "ustar\0", 6)
				     ? strnlen((const char *)h + F_PREFIX, 155)
				     : 0;
			if (pl) {
				memcpy(full, h + F_PREFIX, pl);
				full[pl] = '/';
				memcpy(full + pl + 1, h + F_NAME, nl);
				nl += pl + 1;
			} else {
				memcpy(full, h + F_NAME, nl);
			}
			ret = set_name(m, full, nl, at + (pl ? F_PREFIX : 0),
				       d);
		}
		if (ret)
			return ret;
		m->type = (char)h[F_TYPE];
		m->header_offset = at;
		m->data_offset = at + TFS_TAR_BLOCK;
		m->size = len;
		return 1;
	}
	return 0;
}
