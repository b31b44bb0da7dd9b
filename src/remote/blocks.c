// SPDX-License-Identifier: MIT
/*
 * The disk cache's blocks of a remote source (BLOCK_CHUNKS chunks, one
 * cache file each): the files fetched into and mapped in place, the cache
 * writer that names each block made whole, the drops of memory held back
 * for them; and remote_mem, the bound on bytes in flight.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "remote/remote_i.h"

/*
 * remote_mem, one bound for the whole mount (every object of a sharded
 * model): the bytes of range requests being answered plus the blocks
 * waiting for a cache writer.  A request starts only once it fits (or
 * nothing else is in flight); blocks are added as their piece lands.
 */
static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t mem_free = PTHREAD_COND_INITIALIZER;
static uint64_t mem_used;

void tfs_remote_mem_take(const struct remote *r, uint64_t n)
{
	pthread_mutex_lock(&mem_lock);
	while (mem_used && mem_used + n > r->cfg.mem)
		pthread_cond_wait(&mem_free, &mem_lock);
	mem_used += n;
	pthread_mutex_unlock(&mem_lock);
}

static void mem_add(uint64_t n)
{
	pthread_mutex_lock(&mem_lock);
	mem_used += n;
	pthread_mutex_unlock(&mem_lock);
}

void tfs_remote_mem_give(uint64_t n)
{
	pthread_mutex_lock(&mem_lock);
	mem_used -= n;
	pthread_cond_broadcast(&mem_free);
	pthread_mutex_unlock(&mem_lock);
}

/* remote_mem's lock and condition anew: every transfer and cache write
 * had finished before the fork (before_fork) */
void tfs_remote_mem_reset(void)
{
	pthread_mutex_init(&mem_lock, NULL);
	pthread_cond_init(&mem_free, NULL);
}

/* its memory back; a later access faults and is fetched (disk cache) */
static void drop_chunk(struct remote *r, uint64_t c)
{
	r->state[c] = CH_MISSING;
	fallocate(r->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		  (off_t)chunk_off(c), (off_t)chunk_len(r, c));
}

/* chunk @c's bytes are a cache file's pages, not the memfd's */
bool tfs_remote_file_backed(const struct remote *r, uint64_t c)
{
	return r->bstate[c / BLOCK_CHUNKS] == BL_MAPPED ||
	       (r->fmap && r->fmap[c]);
}

/*
 * chunk @c served, its memory asked back: given now, or held in @dropreq
 * while a read pins it or the cache writer still needs it (a block half
 * dropped would never be whole, never cached).  Under lock.
 */
void tfs_remote_drop_when_free(struct remote *r, uint64_t c)
{
	if (r->state[c] != CH_PRESENT || tfs_remote_file_backed(r, c))
		return; /* a cache file's pages: the kernel's to reclaim */
	if (r->pins[c] ||
	    (r->writer_running && r->bstate[c / BLOCK_CHUNKS] != BL_CACHED)) {
		r->dropreq[c] = 1;
		return;
	}
	drop_chunk(r, c);
}

/* queue the blocks of chunks [c0, c1] now whole in the memfd; under lock */
void tfs_remote_queue_blocks(struct remote *r, uint64_t c0, uint64_t c1)
{
	uint64_t b, c, last;
	struct piece *q;

	if (!r->writer_running)
		return;
	for (b = c0 / BLOCK_CHUNKS; b <= c1 / BLOCK_CHUNKS; b++) {
		if (r->bstate[b] != BL_NONE)
			continue;
		last = (b + 1) * BLOCK_CHUNKS;
		if (last > r->nchunks)
			last = r->nchunks;
		for (c = b * BLOCK_CHUNKS;
		     c < last && r->state[c] == CH_PRESENT; c++)
			;
		if (c < last)
			continue;
		q = malloc(sizeof(*q));
		if (!q)
			continue; /* best effort, as the cache is */
		q->first = b;
		q->count = 1;
		q->next = NULL;
		if (r->wq_tail)
			r->wq_tail->next = q;
		else
			r->wq_head = q;
		r->wq_tail = q;
		r->bstate[b] = BL_QUEUED;
		mem_add(block_len(r, b));
		pthread_cond_signal(&r->wwork);
	}
}

/* map @len bytes of block @b's cache file @fd from object offset @off */
static int map_file(struct remote *r, int fd, uint64_t b, uint64_t off,
		    uint64_t len)
{
	size_t span = (size_t)((len + r->page - 1) / r->page * r->page);

	if (mmap(r->map + off, span, PROT_READ, MAP_SHARED | MAP_FIXED, fd,
		 (off_t)(TFS_CHUNK_HEADER + off - block_off(b))) == MAP_FAILED)
		return -errno;
	return 0;
}

/*
 * The cache writer: stores each queued block from the memfd (its chunks
 * stay there until it is written), then lets the drops it held back go.
 * Stopping, it writes what is queued first: the next mount finds it.
 */
void *tfs_remote_cache_writer(void *arg)
{
	struct remote *r = arg;
	uint64_t b, c, last, off, len;
	uint8_t infile[BLOCK_CHUNKS];
	struct piece *q;
	bool mapped;
	char *tmp;
	int fd;

	pthread_mutex_lock(&r->lock);
	r->writer_started = true;
	pthread_cond_broadcast(&r->done);
	for (;;) {
		if (!r->wq_head) {
			if (r->stopping)
				break;
			pthread_cond_wait(&r->wwork, &r->lock);
			continue;
		}
		q = piece_pop(&r->wq_head, &r->wq_tail);
		b = q->first;
		free(q);
		r->writing = true;
		off = block_off(b);
		len = block_len(r, b);
		last = (b + 1) * BLOCK_CHUNKS;
		if (last > r->nchunks)
			last = r->nchunks;
		/* bfd, btmp and fmap change under the lock (block_files) */
		fd = r->bfd ? r->bfd[b] : -1;
		tmp = r->btmp ? r->btmp[b] : NULL;
		for (c = b * BLOCK_CHUNKS; fd >= 0 && c < last; c++)
			infile[c - b * BLOCK_CHUNKS] = r->fmap[c];
		pthread_mutex_unlock(&r->lock);
		/* best effort: a failure (disk full) leaves it uncached */
		mapped = false;
		if (fd < 0) {
			tfs_chunk_cache_put(r->cache, b, off, r->map + off,
					    (size_t)len);
		} else {
			int ret = 0;

			/* what came into the memfd (the probe's chunk) */
			for (c = b * BLOCK_CHUNKS; !ret && c < last; c++)
				if (!infile[c - b * BLOCK_CHUNKS])
					ret = tfs_remote_pwrite_all(
						fd, r->map + chunk_off(c),
						chunk_len(r, c),
						TFS_CHUNK_HEADER +
							chunk_off(c) - off);
			if (!ret)
				ret = tfs_chunk_cache_commit(
					r->cache, b, off, r->map + off,
					(size_t)len, fd, tmp);
			else
				unlink(tmp);
			/* all of it from the file now: no memfd page */
			mapped = !ret && !map_file(r, fd, b, off, len);
			if (mapped)
				fallocate(r->memfd,
					  FALLOC_FL_PUNCH_HOLE |
						  FALLOC_FL_KEEP_SIZE,
					  (off_t)off, (off_t)len);
			close(fd);
			free(tmp);
		}
		pthread_mutex_lock(&r->lock);
		if (fd >= 0) {
			r->bfd[b] = -1;
			r->btmp[b] = NULL;
			r->partial--;
		}
		r->writing = false;
		r->bstate[b] = mapped ? BL_MAPPED : BL_CACHED;
		tfs_remote_mem_give(len);
		last = (b + 1) * BLOCK_CHUNKS;
		if (last > r->nchunks)
			last = r->nchunks;
		for (c = b * BLOCK_CHUNKS; c < last; c++)
			if (r->dropreq[c] && (mapped || !r->pins[c])) {
				r->dropreq[c] = 0;
				/* a mapped file's pages: the kernel's */
				if (r->state[c] == CH_PRESENT && !mapped)
					drop_chunk(r, c);
			}
		pthread_cond_broadcast(&r->work);
		pthread_cond_broadcast(&r->done);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

/*
 * Block @b from the disk cache, checked whole, then its file mapped in the
 * place of its range of the memfd mapping (mremap: at once), so a hit is
 * served from the cache file's page cache like a local file, no copy;
 * those pages are the kernel's to reclaim, and a drop leaves them.  The
 * memfd's pages under it are freed.  0, 1 when the bytes were copied into
 * the memfd instead (no mapping to be had: vm.max_map_count), or -ENOENT
 * (a miss).
 */
int tfs_remote_map_cached(struct remote *r, uint64_t b)
{
	uint64_t off = block_off(b), len = block_len(r, b);
	size_t span = (size_t)((len + r->page - 1) / r->page * r->page);
	struct tfs_chunk_map m = {0};
	const uint8_t *data;
	void *at;

	data = tfs_chunk_cache_map(r->cache, b, off, (size_t)len, &m);
	if (!data)
		return -ENOENT;
	at = mremap((void *)(uintptr_t)data, span, span,
		    MREMAP_MAYMOVE | MREMAP_FIXED, r->map + off);
	if (at == MAP_FAILED) {
		/* the mapping is whole pages: its tail past the data reads 0 */
		int ret = tfs_remote_put_pages(r, data, len, off) ? -ENOENT : 1;

		tfs_chunk_cache_unmap(&m);
		return ret;
	}
	/* what is left of the file's mapping: its header page */
	munmap(m.map, TFS_CHUNK_HEADER);
	fallocate(r->memfd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		  (off_t)off, (off_t)len);
	return 0;
}

/*
 * Block @b is not cached this mount (no file to be had): its chunks leave
 * memory as any others once served, the ones held back for it now.  Under
 * lock.
 */
static void give_up(struct remote *r, uint64_t b)
{
	uint64_t c, last = (b + 1) * BLOCK_CHUNKS;

	r->bstate[b] = BL_CACHED;
	for (c = b * BLOCK_CHUNKS; c < last && c < r->nchunks; c++)
		if (r->dropreq[c]) {
			r->dropreq[c] = 0;
			/* a pinned one waits again */
			tfs_remote_drop_when_free(r, c);
		}
}

/*
 * Block @b's cache file, created if need be: true when it is there (its
 * chunks are then fetched into it), false to fetch into the memfd (no
 * cache, the block written already or given up).  A block that cannot
 * have one -- TFS_REMOTE_MAX_PARTIAL blocks partly fetched already (a
 * reader jumping about a large object), or an error (no space, no
 * descriptor) -- is given up: were its chunks in the memfd kept for a
 * block never whole, memory would grow until the mount ends.
 */
bool tfs_remote_block_file(struct remote *r, uint64_t b)
{
	bool ok = r->bfd && r->writer_running;
	int fd;

	pthread_mutex_lock(&r->lock);
	if (ok && r->bstate[b] != BL_NONE) {
		ok = false;
	} else if (ok && r->bfd[b] < 0) {
		fd = r->partial < TFS_REMOTE_MAX_PARTIAL
			     ? tfs_chunk_cache_create(r->cache, b,
						      block_len(r, b),
						      &r->btmp[b])
			     : -EMFILE;
		ok = fd >= 0;
		r->bfd[b] = fd;
		if (ok)
			r->partial++;
		else
			give_up(r, b);
	}
	pthread_mutex_unlock(&r->lock);
	return ok;
}

/*
 * [@off, @off + @len) of block @b's file @fd copied into the memfd: where
 * no mapping can be had (vm.max_map_count reached: a mapping per block).
 */
static int copy_file_in(struct remote *r, int fd, uint64_t b, uint64_t off,
			uint64_t len)
{
	size_t step = 1u << 20, n;
	uint8_t *buf = malloc(step);
	int ret = buf ? 0 : -ENOMEM;

	for (; !ret && len; off += n, len -= n) {
		n = len < step ? (size_t)len : step;
		if (pread(fd, buf, n,
			  (off_t)(TFS_CHUNK_HEADER + off - block_off(b))) !=
		    (ssize_t)n) {
			ret = -EIO;
			break;
		}
		/* the object's last page: put_pages takes it whole */
		memset(buf + n, 0, (step - n) % r->page);
		ret = tfs_remote_put_pages(r, buf, n, off);
	}
	free(buf);
	return ret;
}

/* chunks [@c0, @c0 + @n) fetched into their blocks' files: mapped */
int tfs_remote_map_fetched(struct remote *r, uint64_t c0, uint64_t n)
{
	uint64_t c = c0, e, b, k, len;
	int ret;

	while (c < c0 + n) {
		b = c / BLOCK_CHUNKS;
		e = (b + 1) * BLOCK_CHUNKS < c0 + n ? (b + 1) * BLOCK_CHUNKS
						    : c0 + n;
		len = chunk_off(e - 1) + chunk_len(r, e - 1) - chunk_off(c);
		if (map_file(r, r->bfd[b], b, chunk_off(c), len)) {
			ret = copy_file_in(r, r->bfd[b], b, chunk_off(c), len);
			if (ret)
				return ret;
			c = e;
			continue;
		}
		pthread_mutex_lock(&r->lock);
		for (k = c; k < e; k++)
			r->fmap[k] = 1;
		pthread_mutex_unlock(&r->lock);
		c = e;
	}
	return 0;
}
