/* SPDX-License-Identifier: MIT */
/*
 * The on-disk chunk cache of remote objects (docs/remote.md "Cache").
 *
 * DIR/<key>/ holds one object's blocks, key = sha256(URL without query,
 * version, size, layout) in hex; block i is the file <i as 16 hex
 * digits>: a header page ("TFSBLK02", offset, length, XXH3-64 of the data,
 * all little-endian, zeros to 4,096 bytes) and the data, so the data is
 * page-aligned in the file.  A block is written to a temporary name
 * and renamed into place, so readers in any process see a whole chunk or
 * none; a chunk whose header or checksum does not match is removed and
 * counts as a miss.  A hit sets the file's mtime: eviction removes the
 * least recently used chunks of the whole DIR once it holds more than its
 * budget.
 */
#ifndef TFS_CHUNK_CACHE_H
#define TFS_CHUNK_CACHE_H

#include <stddef.h>
#include <stdint.h>

#define TFS_CHUNK_HEADER 4096

struct tfs_chunk_cache;

/* 0 or -errno; @info is written once to DIR/<key>/info for humans */
int tfs_chunk_cache_open(struct tfs_chunk_cache **out, const char *dir,
			 uint64_t max, const char *url, const char *version,
			 uint64_t size);
void tfs_chunk_cache_close(struct tfs_chunk_cache *c);

/* block @idx holding [@off, @off + @len): 0 (in @buf), -ENOENT on a miss */
int tfs_chunk_cache_get(struct tfs_chunk_cache *c, uint64_t idx, uint64_t off,
			void *buf, size_t len);
/*
 * Block @idx holding [@off, @off + @len), checked whole and mapped: its
 * data (valid until tfs_chunk_cache_unmap(@m)), or NULL on a miss.
 */
struct tfs_chunk_map {
	void *map;
	size_t len;
};
const uint8_t *tfs_chunk_cache_map(struct tfs_chunk_cache *c, uint64_t idx,
				   uint64_t off, size_t len,
				   struct tfs_chunk_map *m);
void tfs_chunk_cache_unmap(struct tfs_chunk_map *m);
/* store it (best effort: 0 or -errno, the caller goes on either way) */
int tfs_chunk_cache_put(struct tfs_chunk_cache *c, uint64_t idx, uint64_t off,
			const void *buf, size_t len);

/*
 * A block written in place (fetched straight into it): a new temporary
 * file of the block's size plus the header, data at TFS_CHUNK_HEADER.
 * Its descriptor (read-write), *@tmp its name, or -errno.
 */
int tfs_chunk_cache_create(struct tfs_chunk_cache *c, uint64_t idx,
			   uint64_t len, char **tmp);
/*
 * Its data is all there (@data, @len: the same bytes, to checksum): its
 * header, then its name.  0, or -errno and the file is removed.  @fd
 * stays open (the caller maps it, then closes it).
 */
int tfs_chunk_cache_commit(struct tfs_chunk_cache *c, uint64_t idx,
			   uint64_t off, const void *data, size_t len, int fd,
			   const char *tmp);
/* never committed: removed, closed, @tmp freed */
void tfs_chunk_cache_discard(int fd, char *tmp);

/* the object's directory (tests) */
const char *tfs_chunk_cache_path(const struct tfs_chunk_cache *c);

/* remove least recently used chunks of @dir until it holds <= @target */
int tfs_chunk_cache_evict(const char *dir, uint64_t target);

#endif
