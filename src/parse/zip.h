/* SPDX-License-Identifier: MIT */
/*
 * A reader of ZIP archives (PKWARE APPNOTE 6.3) over a mapped file, for
 * the containers that are zips: NumPy .npz, PyTorch checkpoints.  It knows
 * nothing of what the members hold.
 *
 * The central directory is authoritative (what every zip reader trusts):
 * tfs_zip_open() finds the end of central directory record (and the ZIP64
 * locator and record when present), tfs_zip_next() walks the central
 * entries one at a time and, for each, reads the local header at the
 * entry's offset only for its own name and extra lengths, which give where
 * the member's bytes start (numpy writes a 20-byte extra field in local
 * headers and none in central ones).  A local name that differs from the
 * central one is refused: two readers would see two different archives.
 *
 * Every count, offset and size is checked against the file before use;
 * nothing is allocated (entries point into the mapping).  Failures return
 * -EBADMSG (malformed), -ENOTSUP (encryption, multi-disk) and fill the
 * diagnostic with the field and the absolute byte offset.
 */
#ifndef TFS_PARSE_ZIP_H
#define TFS_PARSE_ZIP_H

#include <stdbool.h>
#include <stdint.h>

struct tfs_diag;

/* compression methods a reader may meet */
#define TFS_ZIP_STORED 0
#define TFS_ZIP_DEFLATED 8

/* general-purpose flag bits */
#define TFS_ZIP_FLAG_ENCRYPTED 0x0001u
#define TFS_ZIP_FLAG_DESCRIPTOR 0x0008u /* sizes/CRC after the data */
#define TFS_ZIP_FLAG_UTF8 0x0800u

struct tfs_zip {
	const uint8_t *data; /* the whole archive */
	uint64_t size;
	uint64_t count;		/* central directory entries */
	uint64_t cd_offset;	/* first central directory entry */
	uint64_t cd_size;	/* bytes of the central directory */
	uint64_t eocd_offset;	/* the end of central directory record */
	bool zip64;		/* a ZIP64 end record was read */
	const uint8_t *comment; /* archive comment, into data */
	uint16_t comment_len;
};

struct tfs_zip_entry {
	const char *name; /* into the mapping; not NUL-terminated */
	uint16_t name_len;
	uint16_t method; /* TFS_ZIP_STORED, TFS_ZIP_DEFLATED, ... */
	uint16_t flags;
	uint32_t crc32;		 /* CRC-32 of the uncompressed bytes */
	uint64_t comp_size;	 /* bytes stored in the archive */
	uint64_t uncomp_size;	 /* bytes after decompression */
	uint64_t index;		 /* 0-based position in the directory */
	uint64_t central_offset; /* its central directory entry */
	uint64_t local_offset;	 /* its local file header */
	uint64_t data_offset;	 /* first byte of its (compressed) data */
};

struct tfs_zip_iter {
	uint64_t pos;	/* next central entry, relative to cd_offset */
	uint64_t index; /* entries returned so far */
};

/*
 * true when @data looks like the start of a zip: a local file header, or
 * an empty archive (only an end of central directory record).  A cheap
 * test for probes; tfs_zip_open() decides.
 */
bool tfs_zip_magic(const void *data, uint64_t size);

/*
 * Find and check the end of the central directory of the @size-byte
 * archive at @data: a record of at most 65535 bytes of comment that ends
 * exactly at the end of the file; single disk; the central directory lies
 * before the end records and holds at least 46 bytes per entry.
 */
int tfs_zip_open(struct tfs_zip *z, const void *data, uint64_t size,
		 struct tfs_diag *d);

void tfs_zip_iter_init(struct tfs_zip_iter *it);

/*
 * The next central entry into *e: 1, or 0 after the last one (when the
 * entries filled the central directory exactly), or a -errno.  Each entry
 * is checked: its ZIP64 extra field when a 32-bit field is saturated,
 * not encrypted, its local header signature and name, and its data
 * [data_offset, data_offset + comp_size) before the central directory.
 * The method is not checked: the caller says which ones it reads.
 */
int tfs_zip_next(const struct tfs_zip *z, struct tfs_zip_iter *it,
		 struct tfs_zip_entry *e, struct tfs_diag *d);

/*
 * Each entry of @z, in directory order, given to @fn: 0, or the first
 * -errno of tfs_zip_next.
 */
int tfs_zip_walk(const struct tfs_zip *z,
		 void (*fn)(void *ctx, const struct tfs_zip_entry *e), void *ctx,
		 struct tfs_diag *d);

/* true when the entry's name is @s (a NUL-terminated string) */
bool tfs_zip_name_is(const struct tfs_zip_entry *e, const char *s);

/* true when the entry's name ends with @suffix */
bool tfs_zip_name_ends(const struct tfs_zip_entry *e, const char *suffix);

#endif
