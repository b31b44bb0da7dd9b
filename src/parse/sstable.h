/* SPDX-License-Identifier: MIT */
/*
 * A bounded reader of LevelDB's table format (SSTable, google/leveldb
 * doc/table_format.md), as TensorFlow copied it for a checkpoint bundle's
 * `.index` (specs/tf-checkpoint.md section 2): the 48-byte footer with its
 * magic and two block handles, blocks with their 5-byte trailer (type 0
 * raw or 1 snappy, masked CRC32C of the stored bytes and the type), and
 * the entries of a block (prefix-compressed keys, restart points).
 *
 * Every handle is checked against the file, every CRC32C checked, a
 * snappy block's declared length capped (TFS_SST_BLOCK_MAX) before it is
 * decoded (Debian's libsnappy); every entry's key and value lie inside the
 * entry area, shared prefixes inside the previous key, restart offsets
 * inside the entry area with shared = 0 at each.  Failures return
 * -EBADMSG (-E2BIG for a limit) with the diagnostic naming the field and
 * its absolute offset (inside a snappy block: the block's offset).
 */
#ifndef TFS_PARSE_SSTABLE_H
#define TFS_PARSE_SSTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tfs_diag;

#define TFS_SST_FOOTER 48
#define TFS_SST_MAGIC 0xdb4775248b80fb57ull
#define TFS_SST_BLOCK_MAX (64u << 20) /* a block's bytes, decoded */

struct tfs_sst_handle {
	uint64_t offset, size;
};

/* a block's contents: in the file (raw) or decoded (owned) */
struct tfs_sst_block {
	const uint8_t *data;
	uint64_t len;
	uint64_t at; /* file offset of its stored bytes */
	bool raw;    /* stored uncompressed: entry offsets are file offsets */
	uint8_t *owned; /* the decoded bytes, or NULL */
};

/* masked CRC32C (LevelDB's crc32c::Mask / Unmask) */
uint32_t tfs_sst_mask(uint32_t crc);
uint32_t tfs_sst_unmask(uint32_t masked);

/* does the file end with the table magic? */
bool tfs_sst_has_magic(const uint8_t *p, uint64_t size);

/* the footer's metaindex and index handles; 0 or -EBADMSG */
int tfs_sst_footer(const uint8_t *p, uint64_t size,
		   struct tfs_sst_handle *metaindex,
		   struct tfs_sst_handle *index, struct tfs_diag *d);

/*
 * The block at @h (@what names it: "index block"): inside the file with
 * its trailer, its CRC checked, decoded if snappy.  0 or -errno;
 * tfs_sst_block_free() afterwards (also after a failure).
 */
int tfs_sst_block_read(const uint8_t *p, uint64_t size,
		       const struct tfs_sst_handle *h, const char *what,
		       struct tfs_sst_block *out, struct tfs_diag *d);
void tfs_sst_block_free(struct tfs_sst_block *b);

/* the entries of a block, in order */
struct tfs_sst_iter {
	const struct tfs_sst_block *b;
	const char *what;
	uint64_t pos, end;		  /* entry area: [0, end) */
	uint64_t restarts;		  /* offset of the restart array */
	uint32_t nrestarts, next_restart; /* index of the next restart */
	uint8_t *key;			  /* the current key (malloc'd) */
	uint64_t key_len, key_cap;
	const uint8_t *value;
	uint64_t value_len;
	uint64_t at;	   /* the entry's absolute offset (or the block's) */
	uint64_t value_at; /* the value's (or the block's) */
};

/* 0 or -EBADMSG (restart array); tfs_sst_iter_free() afterwards */
int tfs_sst_iter_init(struct tfs_sst_iter *it, const struct tfs_sst_block *b,
		      const char *what, struct tfs_diag *d);
/* 1 with the next entry, 0 at the end, -errno */
int tfs_sst_iter_next(struct tfs_sst_iter *it, struct tfs_diag *d);
void tfs_sst_iter_free(struct tfs_sst_iter *it);

/* a block handle (two varints) from an index entry's value */
int tfs_sst_handle_decode(const uint8_t *p, uint64_t len, uint64_t at,
			  struct tfs_sst_handle *h, struct tfs_diag *d);

#endif
