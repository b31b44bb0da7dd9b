/* SPDX-License-Identifier: MIT */
/*
 * Private to the remote source's files (see remote.c for its threads):
 *   remote.c    the source: open, its ops, close, fork handling, settings
 *   options.c   remote options, URL schemes, redaction
 *   transfer.c  one range request (curl), its checks and retries; the probe
 *   fetch.c     the fetch engine: pieces queued, workers, waits, pins,
 *               prefetch past a read
 *   blocks.c    the disk cache's blocks: files fetched into and mapped, the
 *               cache writer, drops held back for them; remote_mem
 *   pages.c     the mapping: pages installed, the userfaultfd's faults
 * Chunk and block states live under struct remote's one lock.
 */
#ifndef TFS_REMOTE_REMOTE_I_H
#define TFS_REMOTE_REMOTE_I_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <curl/curl.h>

#include "remote/chunk_cache.h"
#include "remote/range_plan.h"
#include "remote/remote.h"
#include "remote/resolve.h"

#define CHUNK (256u << 10)
#define BLOCK_CHUNKS 16 /* a cache file: 4 MiB */
#define BLOCK_SIZE ((uint64_t)BLOCK_CHUNKS * CHUNK)
#define RETRIES 4

/* a cache block's state */
enum {
	BL_NONE,   /* not known to be in the disk cache */
	BL_QUEUED, /* complete in the memfd, queued for the cache writer */
	BL_CACHED, /* in the disk cache (or given up on) */
	BL_MAPPED, /* a disk cache file is mapped in its place */
};

enum {
	CH_MISSING = TFS_CHUNK_MISSING,
	CH_FETCHING = TFS_CHUNK_FETCHING,
	CH_PRESENT = TFS_CHUNK_PRESENT,
	CH_FAILED = TFS_CHUNK_FAILED,
};

struct piece {
	uint64_t first, count; /* chunks */
	struct piece *next;
};

struct remote {
	struct tfs_remote_config cfg;
	struct tfs_remote_target tgt; /* what is fetched: never shown */
	char *shown;		      /* redacted, for messages */
	char *etag;    /* the pinned version ("" when the server gave none) */
	bool if_match; /* send If-Match: a strong ETag was given */
	uint64_t size, nchunks, piece_chunks, page;
	int memfd, poison_fd;
	uint8_t *map;
	size_t maplen;
	int uffd;
	int stop_pipe[2];
	bool fault_running;
	pthread_t fault_thread;
	pthread_t *workers;
	unsigned nworkers, busy;
	/*
	 * Threads that have entered their function: past the sanitizers'
	 * thread start, which allocates (see before_fork)
	 */
	unsigned started;
	bool fault_ready, writer_started;
	pthread_mutex_t lock;
	pthread_cond_t done; /* chunks changed state */
	pthread_cond_t work; /* the queue grew, or stopping */
	uint8_t *state;
	int *err;
	struct piece *head, *tail;
	bool stopping, stale_logged;
	uint64_t timed_out_ms; /* when a chunk last failed by a timeout */
	/* the prefetch past a tensor (prefetch_last): where the last read
	 * ended, and the window reads in file order have opened, in chunks */
	uint64_t seq_next, seq_window;
	bool restart_uffd; /* forked: a new userfaultfd at the next fetch */
	struct tfs_chunk_cache *cache;
	/*
	 * The cache writer: complete blocks are stored off the fetch
	 * workers' path, from the memfd; a block queued keeps its chunks in
	 * the memfd (a drop of them waits in @dropreq) and counts in
	 * remote_mem (tfs_remote_mem_take), so the workers wait for a writer
	 * behind.
	 */
	uint64_t nblocks;
	uint8_t *bstate, *dropreq;
	/*
	 * Reads between their fetch and the end of their reply, per chunk
	 * (remote_fetch_in to remote_unpin): a drop of a chunk a read is
	 * waiting for or copying waits in @dropreq too.  Unpinned, a reply
	 * of a user-mode-only userfaultfd (no root) would copy a punched
	 * page as zeros, and a read waiting for the rest of its range would
	 * fetch again what it had.
	 */
	uint16_t *pins;
	/*
	 * With a disk cache, fetched bytes go straight into the block's
	 * temporary cache file (@bfd, @btmp: -1 and NULL until a first
	 * piece of the block is fetched), whose pages are then mapped in
	 * place (@fmap, per chunk): no memfd page, no copy, no hole punch;
	 * the cache writer checksums, names and maps the block when whole.
	 */
	int *bfd;
	char **btmp;
	uint8_t *fmap;
	unsigned partial; /* blocks with a file (bfd >= 0) */
	struct piece *wq_head, *wq_tail;
	bool writer_running, writing;
	pthread_t writer;
	pthread_cond_t wwork;
	struct tfs_remote_stats stats;
	struct remote *next; /* every open remote (fork handling) */
};

/* the first piece of the queue *@head .. *@tail, taken off it */
static inline struct piece *piece_pop(struct piece **head, struct piece **tail)
{
	struct piece *p = *head;

	*head = p->next;
	if (!*head)
		*tail = NULL;
	return p;
}

static inline uint64_t chunk_off(uint64_t i)
{
	return i * CHUNK;
}

static inline uint64_t chunk_len(const struct remote *r, uint64_t i)
{
	uint64_t end = chunk_off(i) + CHUNK;

	return (end > r->size ? r->size : end) - chunk_off(i);
}

static inline uint64_t block_off(uint64_t b)
{
	return b * BLOCK_CHUNKS * (uint64_t)CHUNK;
}

static inline uint64_t block_len(const struct remote *r, uint64_t b)
{
	uint64_t end = block_off(b) + BLOCK_CHUNKS * (uint64_t)CHUNK;

	return (end > r->size ? r->size : end) - block_off(b);
}

static inline uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* remote.c */
void tfs_remote_log(const struct remote *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* tfs_remote_mounted() was called: a failed fault no longer exits */
bool tfs_remote_is_mounted(void);
/* tfs_remote_fail_as_zeros() was called */
bool tfs_remote_fails_as_zeros(void);
/* page @off of @r could not be fetched (-@err) and reads as zeros */
void tfs_remote_fault_failed(const struct remote *r, uint64_t off, int err);

/* transfer.c */
CURL *tfs_remote_new_handle(const struct remote *r);
/*
 * [@off, @off + @len) into the memfd, or (@files) into the blocks' cache
 * files, retried on EAGAIN/ETIMEDOUT in the time; one log line on failure
 */
int tfs_remote_fetch_range(struct remote *r, CURL *h, uint64_t off,
			   uint64_t len, bool files);
/* the first chunk, the size and the version, in one request */
int tfs_remote_probe(struct remote *r, struct tfs_diag *d, uint8_t **first,
		     uint64_t *got);

/* fetch.c */
/* [off, off + len) present, then a prefetch behind it: see fetch.c */
int tfs_remote_fetch(struct remote *r, uint64_t off, uint64_t len, bool ahead,
		     uint64_t ext_off, uint64_t ext_end, bool pin);
void tfs_remote_unpin_locked(struct remote *r, uint64_t c0, uint64_t c1);
void tfs_remote_stop_threads(struct remote *r);

/* blocks.c */
void tfs_remote_mem_take(const struct remote *r, uint64_t n);
void tfs_remote_mem_give(uint64_t n);
/* remote_mem's lock and condition anew in a fork's child */
void tfs_remote_mem_reset(void);
bool tfs_remote_file_backed(const struct remote *r, uint64_t c);
void tfs_remote_drop_when_free(struct remote *r, uint64_t c);
void tfs_remote_queue_blocks(struct remote *r, uint64_t c0, uint64_t c1);
void *tfs_remote_cache_writer(void *arg);
int tfs_remote_map_cached(struct remote *r, uint64_t b);
bool tfs_remote_block_file(struct remote *r, uint64_t b);
int tfs_remote_map_fetched(struct remote *r, uint64_t c0, uint64_t n);

/* pages.c */
void tfs_remote_wake_range(struct remote *r, uint64_t off, uint64_t len);
int tfs_remote_pwrite_all(int fd, const uint8_t *p, uint64_t len, uint64_t off);
int tfs_remote_put_pages(const struct remote *r, const uint8_t *p, uint64_t len,
			 uint64_t off);
int tfs_remote_start_uffd(struct remote *r);

#endif
