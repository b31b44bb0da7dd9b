// SPDX-License-Identifier: MIT
/*
 * ZIP archives: see src/parse/zip.h.  Record layouts from PKWARE's APPNOTE
 * 6.3.10, sections 4.3.7 (local header), 4.3.12 (central entry), 4.3.14-16
 * (ZIP64 end record, locator, end record) and 4.5.3 (ZIP64 extra field).
 */
#include <errno.h>
#include <string.h>

#include "parse/zip.h"
#include "core/checked.h"
#include "core/cursor.h"
#include "core/diag.h"

#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_EOCD 0x06054b50u
#define SIG_EOCD64 0x06064b50u
#define SIG_LOCATOR 0x07064b50u

#define LOCAL_LEN 30
#define CENTRAL_LEN 46
#define EOCD_LEN 22
#define LOCATOR_LEN 20
#define EOCD64_LEN 56 /* without its extensible data */
#define MAX_COMMENT 65535

/* encryption: bit 0 (traditional or AES), bit 6 (strong encryption) */
#define FLAGS_ENCRYPTION 0x0041u
#define METHOD_AES 99

#define EXTRA_ZIP64 0x0001u

bool tfs_zip_magic(const void *data, uint64_t size)
{
	static const uint8_t local[4] = {0x50, 0x4b, 0x03, 0x04};
	static const uint8_t eocd[4] = {0x50, 0x4b, 0x05, 0x06};

	return size >= 4 && (memcmp(data, local, 4) == 0 ||
			     (size >= EOCD_LEN && memcmp(data, eocd, 4) == 0));
}

/*
 * The end of central directory record: the last signature whose comment
 * length makes the record end exactly at the end of the file (a comment
 * may itself hold the signature bytes; the exact end decides).
 */
static int find_eocd(const uint8_t *p, uint64_t size, uint64_t *at,
		     struct tfs_diag *d)
{
	uint64_t lo, off;

	if (size < EOCD_LEN)
		return tfs_diag_at(d, -EBADMSG, 0,
				   "end of central directory: file of %llu "
				   "bytes is shorter than the 22-byte record",
				   (unsigned long long)size);
	lo = size - EOCD_LEN > MAX_COMMENT ? size - EOCD_LEN - MAX_COMMENT : 0;
	off = size - EOCD_LEN;
	for (;;) {
		if (tfs_load_le(p + off, 4) == SIG_EOCD &&
		    off + EOCD_LEN + tfs_load_le(p + off + 20, 2) == size) {
			*at = off;
			return 0;
		}
		if (off == lo)
			break;
		off--;
	}
	return tfs_diag_at(d, -EBADMSG, size - EOCD_LEN,
			   "end of central directory: no record (signature "
			   "50 4b 05 06) ends the file");
}

/* The ZIP64 locator just before the EOCD and the record it points to. */
static int read_zip64_end(struct tfs_zip *z, uint64_t loc,
			  uint64_t *records_start, struct tfs_diag *d)
{
	const uint8_t *p = z->data;
	uint64_t rec, rec_size, disk, cd_disk, on_disk, total, ndisks;

	disk = tfs_load_le(p + loc + 4, 4);
	rec = tfs_load_le(p + loc + 8, 8);
	ndisks = tfs_load_le(p + loc + 16, 4);
	if (disk != 0 || ndisks > 1)
		return tfs_diag_at(d, -ENOTSUP, loc + 4,
				   "ZIP64 locator: archive spans %llu disks "
				   "(only single-file archives are read)",
				   (unsigned long long)ndisks);
	if (rec > loc || loc - rec < EOCD64_LEN)
		return tfs_diag_at(d, -EBADMSG, loc + 8,
				   "ZIP64 locator: end record offset %llu "
				   "leaves no room for the 56-byte record "
				   "before the locator at %llu",
				   (unsigned long long)rec,
				   (unsigned long long)loc);
	if (tfs_load_le(p + rec, 4) != SIG_EOCD64)
		return tfs_diag_at(d, -EBADMSG, rec,
				   "ZIP64 end record: bad signature (want "
				   "50 4b 06 06)");
	rec_size = tfs_load_le(p + rec + 4, 8);
	if (rec_size < EOCD64_LEN - 12 || rec_size > loc - rec - 12)
		return tfs_diag_at(d, -EBADMSG, rec + 4,
				   "ZIP64 end record: size %llu does not end "
				   "at the locator (%llu bytes)",
				   (unsigned long long)rec_size,
				   (unsigned long long)(loc - rec - 12));
	disk = tfs_load_le(p + rec + 16, 4);
	cd_disk = tfs_load_le(p + rec + 20, 4);
	on_disk = tfs_load_le(p + rec + 24, 8);
	total = tfs_load_le(p + rec + 32, 8);
	if (disk != 0 || cd_disk != 0 || on_disk != total)
		return tfs_diag_at(d, -ENOTSUP, rec + 16,
				   "ZIP64 end record: multi-disk archive");
	z->count = total;
	z->cd_size = tfs_load_le(p + rec + 40, 8);
	z->cd_offset = tfs_load_le(p + rec + 48, 8);
	z->zip64 = true;
	*records_start = rec;
	return 0;
}

/* a 32-bit EOCD field that is not saturated must agree with ZIP64's */
static int check_agrees(uint64_t v32, uint64_t sat, uint64_t v64, uint64_t at,
			const char *what, struct tfs_diag *d)
{
	if (v32 != sat && v32 != v64)
		return tfs_diag_at(d, -EBADMSG, at,
				   "end of central directory: %s %llu "
				   "disagrees with the ZIP64 record (%llu)",
				   what, (unsigned long long)v32,
				   (unsigned long long)v64);
	return 0;
}

int tfs_zip_open(struct tfs_zip *z, const void *data, uint64_t size,
		 struct tfs_diag *d)
{
	const uint8_t *p = data;
	uint64_t eocd = 0, disk, cd_disk, on_disk, total, cd_size, cd_off;
	uint64_t records_start, end;
	bool saturated;
	int ret;

	memset(z, 0, sizeof(*z));
	z->data = p;
	z->size = size;
	ret = find_eocd(p, size, &eocd, d);
	if (ret)
		return ret;
	z->eocd_offset = eocd;
	disk = tfs_load_le(p + eocd + 4, 2);
	cd_disk = tfs_load_le(p + eocd + 6, 2);
	on_disk = tfs_load_le(p + eocd + 8, 2);
	total = tfs_load_le(p + eocd + 10, 2);
	cd_size = tfs_load_le(p + eocd + 12, 4);
	cd_off = tfs_load_le(p + eocd + 16, 4);
	z->comment_len = (uint16_t)tfs_load_le(p + eocd + 20, 2);
	z->comment = p + eocd + EOCD_LEN;
	saturated = disk == 0xffff || cd_disk == 0xffff || on_disk == 0xffff ||
		    total == 0xffff || cd_size == 0xffffffff ||
		    cd_off == 0xffffffff;
	records_start = eocd;
	if (eocd >= LOCATOR_LEN &&
	    tfs_load_le(p + eocd - LOCATOR_LEN, 4) == SIG_LOCATOR) {
		ret = read_zip64_end(z, eocd - LOCATOR_LEN, &records_start, d);
		if (ret)
			return ret;
		ret = check_agrees(total, 0xffff, z->count, eocd + 10,
				   "entry count", d);
		if (!ret)
			ret = check_agrees(cd_size, 0xffffffff, z->cd_size,
					   eocd + 12, "directory size", d);
		if (!ret)
			ret = check_agrees(cd_off, 0xffffffff, z->cd_offset,
					   eocd + 16, "directory offset", d);
		if (ret)
			return ret;
	} else if (saturated) {
		return tfs_diag_at(d, -EBADMSG, eocd,
				   "end of central directory: a field is "
				   "0xFFFF/0xFFFFFFFF but no ZIP64 locator "
				   "precedes the record");
	} else {
		if (disk != 0 || cd_disk != 0 || on_disk != total)
			return tfs_diag_at(d, -ENOTSUP, eocd + 4,
					   "end of central directory: "
					   "multi-disk archive");
		z->count = total;
		z->cd_size = cd_size;
		z->cd_offset = cd_off;
	}
	/* the directory lies before the end records */
	if (!tfs_add_u64(z->cd_offset, z->cd_size, &end) || end > records_start)
		return tfs_diag_at(d, -EBADMSG,
				   z->zip64 ? records_start + 40 : eocd + 12,
				   "end of central directory: directory of "
				   "%llu bytes at %llu runs past the end "
				   "records at %llu",
				   (unsigned long long)z->cd_size,
				   (unsigned long long)z->cd_offset,
				   (unsigned long long)records_start);
	/* every entry takes 46 bytes at least: bounds the count */
	if (z->count > z->cd_size / CENTRAL_LEN)
		return tfs_diag_at(d, -EBADMSG,
				   z->zip64 ? records_start + 32 : eocd + 10,
				   "end of central directory: %llu entries "
				   "cannot fit in a %llu-byte directory",
				   (unsigned long long)z->count,
				   (unsigned long long)z->cd_size);
	return 0;
}

void tfs_zip_iter_init(struct tfs_zip_iter *it)
{
	it->pos = 0;
	it->index = 0;
}

/*
 * Apply the ZIP64 extended information extra field (APPNOTE 4.5.3): it
 * holds, in this order, only the fields whose 32-bit value is saturated.
 */
static int apply_zip64_extra(struct tfs_zip_entry *e, const uint8_t *extra,
			     uint64_t extra_len, uint64_t at, bool need_usize,
			     bool need_csize, bool need_offset,
			     struct tfs_diag *d)
{
	struct tfs_cursor c, f;
	uint64_t id, len, want;
	const uint8_t *body;

	want = 8 * (uint64_t)(need_usize + need_csize + need_offset);
	tfs_cursor_init(&c, extra, extra_len, at);
	while (tfs_cursor_remaining(&c)) {
		uint64_t field_at = tfs_cursor_offset(&c);

		if (tfs_cursor_le(&c, 2, &id) || tfs_cursor_le(&c, 2, &len) ||
		    tfs_cursor_bytes(&c, len, &body))
			return tfs_diag_at(d, -EBADMSG, field_at,
					   "central entry %llu: extra field "
					   "runs past its %llu bytes",
					   (unsigned long long)e->index,
					   (unsigned long long)extra_len);
		if (id != EXTRA_ZIP64 || !want)
			continue;
		if (len < want)
			return tfs_diag_at(d, -EBADMSG, field_at + 2,
					   "central entry %llu: ZIP64 extra "
					   "field of %llu bytes, needs %llu",
					   (unsigned long long)e->index,
					   (unsigned long long)len,
					   (unsigned long long)want);
		tfs_cursor_init(&f, body, len, field_at + 4);
		if (need_usize)
			tfs_cursor_u64le(&f, &e->uncomp_size);
		if (need_csize)
			tfs_cursor_u64le(&f, &e->comp_size);
		if (need_offset)
			tfs_cursor_u64le(&f, &e->local_offset);
		want = 0;
	}
	if (want)
		return tfs_diag_at(d, -EBADMSG, e->central_offset,
				   "central entry %llu: a size or offset is "
				   "0xFFFFFFFF but there is no ZIP64 extra "
				   "field",
				   (unsigned long long)e->index);
	return 0;
}

/* The local header: its signature, name and own lengths give the data. */
static int resolve_local(const struct tfs_zip *z, struct tfs_zip_entry *e,
			 struct tfs_diag *d)
{
	const uint8_t *lh;
	uint64_t lo = e->local_offset, nlen, xlen, method, end;

	if (lo >= z->cd_offset || z->cd_offset - lo < LOCAL_LEN)
		return tfs_diag_at(d, -EBADMSG, e->central_offset + 42,
				   "central entry %llu: local header offset "
				   "%llu is not before the central directory "
				   "(at %llu)",
				   (unsigned long long)e->index,
				   (unsigned long long)lo,
				   (unsigned long long)z->cd_offset);
	lh = z->data + lo;
	if (tfs_load_le(lh, 4) != SIG_LOCAL)
		return tfs_diag_at(d, -EBADMSG, lo,
				   "local header of entry %llu: bad signature "
				   "(want 50 4b 03 04)",
				   (unsigned long long)e->index);
	method = tfs_load_le(lh + 8, 2);
	nlen = tfs_load_le(lh + 26, 2);
	xlen = tfs_load_le(lh + 28, 2);
	if (LOCAL_LEN + nlen + xlen > z->cd_offset - lo)
		return tfs_diag_at(d, -EBADMSG, lo + 26,
				   "local header of entry %llu: name and extra "
				   "(%llu + %llu bytes) run into the central "
				   "directory",
				   (unsigned long long)e->index,
				   (unsigned long long)nlen,
				   (unsigned long long)xlen);
	if (nlen != e->name_len ||
	    memcmp(lh + LOCAL_LEN, e->name, e->name_len) != 0)
		return tfs_diag_at(d, -EBADMSG, lo + LOCAL_LEN,
				   "local header of entry %llu: its name "
				   "differs from the central directory's",
				   (unsigned long long)e->index);
	if (method != e->method)
		return tfs_diag_at(d, -EBADMSG, lo + 8,
				   "local header of entry %llu: method %llu, "
				   "the central directory says %u",
				   (unsigned long long)e->index,
				   (unsigned long long)method, e->method);
	e->data_offset = lo + LOCAL_LEN + nlen + xlen;
	if (!tfs_add_u64(e->data_offset, e->comp_size, &end) ||
	    end > z->cd_offset)
		return tfs_diag_at(d, -EBADMSG, e->data_offset,
				   "entry %llu: %llu bytes of data at %llu run "
				   "into the central directory (at %llu)",
				   (unsigned long long)e->index,
				   (unsigned long long)e->comp_size,
				   (unsigned long long)e->data_offset,
				   (unsigned long long)z->cd_offset);
	return 0;
}

int tfs_zip_next(const struct tfs_zip *z, struct tfs_zip_iter *it,
		 struct tfs_zip_entry *e, struct tfs_diag *d)
{
	struct tfs_cursor c;
	const uint8_t *fixed, *name, *extra;
	uint64_t at, nlen, xlen, clen, disk, csize, usize, lo;
	int ret;

	if (it->index == z->count) {
		if (it->pos != z->cd_size)
			return tfs_diag_at(
				d, -EBADMSG, z->cd_offset + it->pos,
				"central directory: %llu entries "
				"end %llu bytes before its end",
				(unsigned long long)z->count,
				(unsigned long long)(z->cd_size - it->pos));
		return 0;
	}
	memset(e, 0, sizeof(*e));
	e->index = it->index;
	at = z->cd_offset + it->pos;
	e->central_offset = at;
	tfs_cursor_init(&c, z->data + z->cd_offset, z->cd_size, z->cd_offset);
	tfs_cursor_seek(&c, it->pos);
	if (tfs_cursor_need(&c, CENTRAL_LEN))
		return tfs_diag_at(d, -EBADMSG, at,
				   "central entry %llu: its 46 bytes run past "
				   "the directory's end",
				   (unsigned long long)e->index);
	fixed = c.p + c.pos;
	if (tfs_load_le(fixed, 4) != SIG_CENTRAL)
		return tfs_diag_at(d, -EBADMSG, at,
				   "central entry %llu: bad signature (want "
				   "50 4b 01 02)",
				   (unsigned long long)e->index);
	e->flags = (uint16_t)tfs_load_le(fixed + 8, 2);
	e->method = (uint16_t)tfs_load_le(fixed + 10, 2);
	e->crc32 = (uint32_t)tfs_load_le(fixed + 16, 4);
	csize = tfs_load_le(fixed + 20, 4);
	usize = tfs_load_le(fixed + 24, 4);
	nlen = tfs_load_le(fixed + 28, 2);
	xlen = tfs_load_le(fixed + 30, 2);
	clen = tfs_load_le(fixed + 32, 2);
	disk = tfs_load_le(fixed + 34, 2);
	lo = tfs_load_le(fixed + 42, 4);
	tfs_cursor_skip(&c, CENTRAL_LEN);
	if (tfs_cursor_need(&c, nlen + xlen + clen))
		return tfs_diag_at(
			d, -EBADMSG, at + 28,
			"central entry %llu: name, extra and "
			"comment (%llu + %llu + %llu bytes) run "
			"past the directory's end",
			(unsigned long long)e->index, (unsigned long long)nlen,
			(unsigned long long)xlen, (unsigned long long)clen);
	name = c.p + c.pos;
	extra = name + nlen;
	tfs_cursor_skip(&c, nlen + xlen + clen);
	e->name = (const char *)name;
	e->name_len = (uint16_t)nlen;
	if (memchr(name, 0, nlen))
		return tfs_diag_at(d, -EBADMSG, at + CENTRAL_LEN,
				   "central entry %llu: name holds a NUL byte",
				   (unsigned long long)e->index);
	if ((e->flags & FLAGS_ENCRYPTION) || e->method == METHOD_AES)
		return tfs_diag_at(d, -ENOTSUP, at + 8,
				   "central entry %llu: encrypted member",
				   (unsigned long long)e->index);
	e->comp_size = csize;
	e->uncomp_size = usize;
	e->local_offset = lo;
	ret = apply_zip64_extra(e, extra, xlen, at + CENTRAL_LEN + nlen,
				usize == 0xffffffff, csize == 0xffffffff,
				lo == 0xffffffff, d);
	if (ret)
		return ret;
	if (disk != 0 && disk != 0xffff)
		return tfs_diag_at(d, -ENOTSUP, at + 34,
				   "central entry %llu: on disk %llu "
				   "(multi-disk archive)",
				   (unsigned long long)e->index,
				   (unsigned long long)disk);
	if (e->method == TFS_ZIP_STORED && e->comp_size != e->uncomp_size)
		return tfs_diag_at(d, -EBADMSG, at + 20,
				   "central entry %llu: stored member with "
				   "compressed size %llu != size %llu",
				   (unsigned long long)e->index,
				   (unsigned long long)e->comp_size,
				   (unsigned long long)e->uncomp_size);
	ret = resolve_local(z, e, d);
	if (ret)
		return ret;
	it->pos = c.pos;
	it->index++;
	return 1;
}

int tfs_zip_walk(const struct tfs_zip *z,
		 void (*fn)(void *ctx, const struct tfs_zip_entry *e), void *ctx,
		 struct tfs_diag *d)
{
	struct tfs_zip_iter it;
	struct tfs_zip_entry e;
	int ret;

	tfs_zip_iter_init(&it);
	while ((ret = tfs_zip_next(z, &it, &e, d)) == 1)
		fn(ctx, &e);
	return ret;
}

bool tfs_zip_name_is(const struct tfs_zip_entry *e, const char *s)
{
	size_t n = strlen(s);

	return n == e->name_len && memcmp(e->name, s, n) == 0;
}

bool tfs_zip_name_ends(const struct tfs_zip_entry *e, const char *suffix)
{
	size_t n = strlen(suffix);

	return n <= e->name_len &&
	       memcmp(e->name + e->name_len - n, suffix, n) == 0;
}
