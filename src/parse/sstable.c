// SPDX-License-Identifier: MIT
/*
 * LevelDB tables (SSTables) read with every bound checked: see sstable.h
 * and specs/tf-checkpoint.md section 2.
 */
#include "parse/sstable.h"

#include <errno.h>
#include <inttypes.h>
#include <snappy-c.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "core/cursor.h"
#include "core/diag.h"
#include "core/crc32c.h"

#define MASK_DELTA 0xa282ead8u

uint32_t tfs_sst_mask(uint32_t crc)
{
	return ((crc >> 15) | (crc << 17)) + MASK_DELTA;
}

uint32_t tfs_sst_unmask(uint32_t masked)
{
	uint32_t r = masked - MASK_DELTA;

	return (r >> 17) | (r << 15);
}

bool tfs_sst_has_magic(const uint8_t *p, uint64_t size)
{
	return size >= TFS_SST_FOOTER &&
	       tfs_load_le(p + size - 8, 8) == TFS_SST_MAGIC;
}

static int handle(struct tfs_cursor *c, struct tfs_sst_handle *h,
		  const char *what, struct tfs_diag *d)
{
	uint64_t at = tfs_cursor_offset(c);

	if (tfs_cursor_varint(c, &h->offset) || tfs_cursor_varint(c, &h->size))
		return tfs_diag_at(d, -EBADMSG, at, "%s handle: bad varint",
				   what);
	return 0;
}

int tfs_sst_footer(const uint8_t *p, uint64_t size,
		   struct tfs_sst_handle *metaindex,
		   struct tfs_sst_handle *index, struct tfs_diag *d)
{
	struct tfs_cursor c;
	int ret;

	if (size < TFS_SST_FOOTER)
		return tfs_diag_at(d, -EBADMSG, 0,
				   "table: %" PRIu64 " bytes, shorter than "
				   "the 48-byte footer",
				   size);
	if (!tfs_sst_has_magic(p, size))
		return tfs_diag_at(d, -EBADMSG, size - 8,
				   "footer: bad table magic 0x%016" PRIx64
				   " (want 0xdb4775248b80fb57)",
				   tfs_load_le(p + size - 8, 8));
	tfs_cursor_init(&c, p + size - TFS_SST_FOOTER, 40,
			size - TFS_SST_FOOTER);
	ret = handle(&c, metaindex, "footer: metaindex", d);
	return ret ? ret : handle(&c, index, "footer: index", d);
}

void tfs_sst_block_free(struct tfs_sst_block *b)
{
	free(b->owned);
	memset(b, 0, sizeof(*b));
}

int tfs_sst_block_read(const uint8_t *p, uint64_t size,
		       const struct tfs_sst_handle *h, const char *what,
		       struct tfs_sst_block *out, struct tfs_diag *d)
{
	uint64_t end;
	uint32_t crc, want;
	size_t n;
	uint8_t type;

	memset(out, 0, sizeof(*out));
	if (!tfs_add_u64(h->offset, h->size, &end) ||
	    !tfs_add_u64(end, 5, &end) || end > size)
		return tfs_diag_at(d, -EBADMSG,
				   h->offset < size ? h->offset : 0,
				   "%s: block handle past end of file "
				   "(offset %" PRIu64 ", size %" PRIu64
				   " + 5, file %" PRIu64 " bytes)",
				   what, h->offset, h->size, size);
	type = p[h->offset + h->size];
	want = tfs_sst_unmask(
		(uint32_t)tfs_load_le(p + h->offset + h->size + 1, 4));
	crc = tfs_crc32c(0, p + h->offset, (size_t)h->size);
	crc = tfs_crc32c(crc, &type, 1);
	if (crc != want)
		return tfs_diag_at(d, -EBADMSG, h->offset + h->size + 1,
				   "%s: block checksum mismatch (crc32c "
				   "0x%08x, trailer says 0x%08x)",
				   what, crc, want);
	out->at = h->offset;
	if (type == 0) {
		out->data = p + h->offset;
		out->len = h->size;
		out->raw = true;
		return 0;
	}
	if (type != 1)
		return tfs_diag_at(d, -EBADMSG, h->offset + h->size,
				   "%s: bad block type %u (0 raw, 1 snappy)",
				   what, type);
	if (snappy_uncompressed_length((const char *)p + h->offset,
				       (size_t)h->size, &n) != SNAPPY_OK)
		return tfs_diag_at(d, -EBADMSG, h->offset,
				   "%s: snappy: bad uncompressed length", what);
	if (n > TFS_SST_BLOCK_MAX)
		return tfs_diag_at(d, -E2BIG, h->offset,
				   "%s: snappy: %zu bytes decoded, above the "
				   "limit of %u",
				   what, n, TFS_SST_BLOCK_MAX);
	out->owned = malloc(n ? n : 1);
	if (!out->owned)
		return tfs_diag_oom(d);
	if (snappy_uncompress((const char *)p + h->offset, (size_t)h->size,
			      (char *)out->owned, &n) != SNAPPY_OK)
		return tfs_diag_at(d, -EBADMSG, h->offset,
				   "%s: snappy: corrupt compressed block",
				   what);
	out->data = out->owned;
	out->len = n;
	return 0;
}

/* the absolute offset of block byte @pos (a decoded block: the block's) */
static uint64_t where(const struct tfs_sst_iter *it, uint64_t pos)
{
	return it->b->raw ? it->b->at + pos : it->b->at;
}

int tfs_sst_iter_init(struct tfs_sst_iter *it, const struct tfs_sst_block *b,
		      const char *what, struct tfs_diag *d)
{
	uint64_t n, first, i;

	memset(it, 0, sizeof(*it));
	it->b = b;
	it->what = what;
	if (b->len < 4)
		return tfs_diag_at(d, -EBADMSG, b->at,
				   "%s: %" PRIu64 " bytes, no restart count",
				   what, b->len);
	n = tfs_load_le(b->data + b->len - 4, 4);
	if (n < 1 || n > (b->len - 4) / 4)
		return tfs_diag_at(d, -EBADMSG, where(it, b->len - 4),
				   "%s: bad restart count %" PRIu64
				   " in a %" PRIu64 "-byte block",
				   what, n, b->len);
	it->nrestarts = (uint32_t)n;
	it->restarts = b->len - 4 - 4 * n;
	it->end = it->restarts;
	first = tfs_load_le(b->data + it->restarts, 4);
	if (first != 0 && it->end)
		return tfs_diag_at(d, -EBADMSG, where(it, it->restarts),
				   "%s: restart[0] %" PRIu64 ", not 0", what,
				   first);
	/* increasing, inside the entries (an empty block: the one 0) */
	for (i = 1; i < n; i++) {
		uint64_t r = tfs_load_le(b->data + it->restarts + 4 * i, 4);

		if (r >= it->end || r <= first)
			return tfs_diag_at(d, -EBADMSG,
					   where(it, it->restarts + 4 * i),
					   "%s: restart[%" PRIu64 "] %" PRIu64
					   " past the entries (%" PRIu64
					   " bytes) or not increasing",
					   what, i, r, it->end);
		first = r;
	}
	return 0;
}

void tfs_sst_iter_free(struct tfs_sst_iter *it)
{
	free(it->key);
	it->key = NULL;
}

int tfs_sst_iter_next(struct tfs_sst_iter *it, struct tfs_diag *d)
{
	const struct tfs_sst_block *b = it->b;
	struct tfs_cursor c;
	uint64_t shared, unshared, vlen, len;
	const uint8_t *delta;

	if (it->pos >= it->end)
		return 0;
	it->at = where(it, it->pos);
	/* the next restart point: entries at it start with shared 0 */
	while (it->next_restart < it->nrestarts) {
		uint64_t r = tfs_load_le(b->data + it->restarts +
						 4 * (uint64_t)it->next_restart,
					 4);

		if (r >= it->end)
			return tfs_diag_at(
				d, -EBADMSG,
				where(it, it->restarts + 4 * it->next_restart),
				"%s: restart[%u] %" PRIu64
				" past the entries (%" PRIu64 " bytes)",
				it->what, it->next_restart, r, it->end);
		if (r > it->pos)
			break;
		if (r < it->pos)
			return tfs_diag_at(
				d, -EBADMSG,
				where(it, it->restarts + 4 * it->next_restart),
				"%s: restart[%u] %" PRIu64
				" is not at an entry",
				it->what, it->next_restart, r);
		it->next_restart++;
		it->key_len = 0; /* shared must be 0 here */
		break;
	}
	tfs_cursor_init(&c, b->data, it->end, 0);
	c.pos = it->pos;
	if (tfs_cursor_varint(&c, &shared) ||
	    tfs_cursor_varint(&c, &unshared) || tfs_cursor_varint(&c, &vlen))
		return tfs_diag_at(d, -EBADMSG, it->at,
				   "%s: entry header: bad varint or past the "
				   "entries",
				   it->what);
	if (shared > it->key_len)
		return tfs_diag_at(d, -EBADMSG, it->at,
				   "%s: entry: shared %" PRIu64
				   " longer than the previous key (%" PRIu64
				   ")",
				   it->what, shared, it->key_len);
	if (tfs_cursor_bytes(&c, unshared, &delta) ||
	    tfs_cursor_bytes(&c, vlen, &it->value))
		return tfs_diag_at(d, -EBADMSG, it->at,
				   "%s: entry: key (%" PRIu64
				   " bytes) or value (%" PRIu64
				   ") past the entries",
				   it->what, unshared, vlen);
	len = shared + unshared;
	if (len > it->key_cap) {
		uint8_t *k = realloc(it->key, (size_t)len);

		if (!k)
			return tfs_diag_oom(d);
		it->key = k;
		it->key_cap = len;
	}
	if (unshared)
		memcpy(it->key + shared, delta, (size_t)unshared);
	it->key_len = len;
	it->value_len = vlen;
	it->value_at = where(it, (uint64_t)(it->value - b->data));
	it->pos = c.pos;
	return 1;
}

int tfs_sst_handle_decode(const uint8_t *p, uint64_t len, uint64_t at,
			  struct tfs_sst_handle *h, struct tfs_diag *d)
{
	struct tfs_cursor c;

	tfs_cursor_init(&c, p, len, at);
	return handle(&c, h, "index entry: block", d);
}
