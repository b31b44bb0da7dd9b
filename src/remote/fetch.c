// SPDX-License-Identifier: MIT
/*
 * The fetch engine of a remote source: a read's missing chunks queued as
 * pieces (its own at the front, prefetch at the back), the workers that
 * take them (disk cache first, then the network), the reader's wait with
 * its deadline, the pins that keep a read's chunks until its reply, and
 * the window of prefetch past a read.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "remote/range_plan.h"
#include "remote/remote_i.h"
#include "core/checked.h"

/*
 * Fetch chunks [@c0, @c1) (none present): each block's into its cache file
 * where it has one, the rest into the memfd, in as few requests as that
 * allows.  A request is cut where neighbouring blocks differ, so a block
 * still filling always gets its bytes in its file, whatever its neighbour
 * (a block cached and dropped from memory, fetched again).
 */
static int fetch_run(struct remote *r, CURL *h, uint64_t c0, uint64_t c1)
{
	uint64_t c = c0, e, len;
	bool files;
	int ret = 0;

	while (!ret && c < c1) {
		files = tfs_remote_block_file(r, c / BLOCK_CHUNKS);
		e = (c / BLOCK_CHUNKS + 1) * BLOCK_CHUNKS;
		while (e < c1 &&
		       tfs_remote_block_file(r, e / BLOCK_CHUNKS) == files)
			e += BLOCK_CHUNKS;
		if (e > c1)
			e = c1;
		len = chunk_off(e - 1) + chunk_len(r, e - 1) - chunk_off(c);
		ret = tfs_remote_fetch_range(r, h, chunk_off(c), len, files);
		if (!ret && files)
			ret = tfs_remote_map_fetched(r, c, e - c);
		if (!ret) {
			pthread_mutex_lock(&r->lock);
			r->stats.bytes_fetched += len;
			pthread_mutex_unlock(&r->lock);
		}
		c = e;
	}
	return ret;
}

/*
 * One piece: the disk cache block by block (copied into the memfd), the
 * network for the rest (straight into the memfd); then its whole blocks
 * go to the cache writer.
 */
static int run_piece(struct remote *r, CURL *h, const struct piece *p)
{
	uint64_t i, j, k, end = p->first + p->count, hit = 0, hit_bytes = 0;
	bool have[TFS_PLAN_MAX_PIECE] = {false};
	int ret = 0, mapped;

	for (i = p->first; r->cache && i < end; i = j) {
		uint64_t b = i / BLOCK_CHUNKS, c0 = b * BLOCK_CHUNKS, c;

		j = (b + 1) * BLOCK_CHUNKS < end ? (b + 1) * BLOCK_CHUNKS : end;
		mapped = tfs_remote_map_cached(r, b);
		if (mapped < 0)
			continue;
		for (k = i; k < j; k++)
			have[k - p->first] = true;
		hit += j - i;
		hit_bytes +=
			chunk_off(j - 1) + chunk_len(r, j - 1) - chunk_off(i);
		pthread_mutex_lock(&r->lock);
		r->bstate[b] = mapped ? BL_CACHED : BL_MAPPED;
		/* the block's other chunks are there too now */
		for (c = c0; c < c0 + BLOCK_CHUNKS && c < r->nchunks; c++)
			if ((c < i || c >= j) && (r->state[c] == CH_MISSING ||
						  r->state[c] == CH_FAILED))
				r->state[c] = CH_PRESENT;
		pthread_mutex_unlock(&r->lock);
	}
	for (i = 0; !ret && i < p->count; i = j) {
		for (j = i; j < p->count && !have[j]; j++)
			;
		if (j == i) {
			j++;
			continue;
		}
		ret = fetch_run(r, h, p->first + i, p->first + j);
	}
	pthread_mutex_lock(&r->lock);
	r->stats.cache_hits += hit;
	r->stats.cache_bytes += hit_bytes;
	for (i = 0; i < p->count; i++) {
		r->state[p->first + i] = ret ? CH_FAILED : CH_PRESENT;
		r->err[p->first + i] = ret;
	}
	if (ret == -ETIMEDOUT)
		r->timed_out_ms = now_ms();
	if (!ret)
		tfs_remote_queue_blocks(r, p->first, end - 1);
	pthread_cond_broadcast(&r->done);
	pthread_mutex_unlock(&r->lock);
	tfs_remote_wake_range(r, chunk_off(p->first),
			      p->count * (uint64_t)CHUNK);
	return ret;
}

static void *worker(void *arg)
{
	struct remote *r = arg;
	CURL *h = tfs_remote_new_handle(r);
	struct piece *p;

	pthread_mutex_lock(&r->lock);
	r->started++;
	pthread_cond_broadcast(&r->done);
	while (!r->stopping) {
		if (!r->head) {
			pthread_cond_wait(&r->work, &r->lock);
			continue;
		}
		p = piece_pop(&r->head, &r->tail);
		r->busy++;
		pthread_mutex_unlock(&r->lock);
		if (h) {
			uint64_t n = chunk_off(p->first + p->count - 1) +
				     chunk_len(r, p->first + p->count - 1) -
				     chunk_off(p->first);

			tfs_remote_mem_take(r, n);
			run_piece(r, h, p);
			tfs_remote_mem_give(n);
		} else {
			uint64_t i;

			pthread_mutex_lock(&r->lock);
			for (i = 0; i < p->count; i++) {
				r->state[p->first + i] = CH_FAILED;
				r->err[p->first + i] = -ENOMEM;
			}
			pthread_cond_broadcast(&r->done);
			pthread_mutex_unlock(&r->lock);
		}
		free(p);
		pthread_mutex_lock(&r->lock);
		r->busy--;
		pthread_cond_broadcast(&r->done);
	}
	pthread_mutex_unlock(&r->lock);
	if (h)
		curl_easy_cleanup(h);
	return NULL;
}

static int start_workers(struct remote *r)
{
	unsigned i;

	free(r->workers);
	r->workers = calloc(r->cfg.conns, sizeof(*r->workers));
	if (!r->workers)
		return -ENOMEM;
	for (i = 0; i < r->cfg.conns; i++) {
		if (pthread_create(&r->workers[i], NULL, worker, r))
			break;
		r->nworkers++;
	}
	if (r->cache && !r->writer_running &&
	    pthread_create(&r->writer, NULL, tfs_remote_cache_writer, r) == 0)
		r->writer_running = true;
	return r->nworkers ? 0 : -EAGAIN;
}

/* the smallest piece a range is split into to share it out: 1 MiB */
#define SHARE_MIN_CHUNKS 4

/*
 * queue the chunks of [c0, c1] not present or on their way; under lock.
 * The range is split over the connections (pieces of at least 1 MiB, at
 * most one request's worth): an 8 MiB tensor read alone arrives over eight
 * connections, not one, where a server limits each connection's rate.
 */
static int schedule(struct remote *r, uint64_t c0, uint64_t c1, bool front)
{
	struct tfs_plan_piece pieces[64];
	struct piece *head = NULL, *tail = NULL, *p;
	uint64_t from = c0, share = (c1 - c0) / r->cfg.conns + 1;
	size_t n, i;
	int ret;

	if (share < SHARE_MIN_CHUNKS)
		share = SHARE_MIN_CHUNKS;
	if (share > r->piece_chunks)
		share = r->piece_chunks;

	/* workers start with the first need: a mount of 100 shards reads
	 * most of them only at open */
	if (!r->nworkers) {
		ret = start_workers(r);
		if (ret)
			return ret;
	}

	while (from <= c1) {
		n = tfs_plan_pieces(r->state, from, c1, share, pieces, 64,
				    &from);
		for (i = 0; i < n; i++) {
			uint64_t k;

			p = malloc(sizeof(*p));
			if (!p)
				return -ENOMEM;
			p->first = pieces[i].first;
			p->count = pieces[i].count;
			p->next = NULL;
			for (k = 0; k < p->count; k++) {
				r->state[p->first + k] = CH_FETCHING;
				r->err[p->first + k] = 0;
			}
			if (tail)
				tail->next = p;
			else
				head = p;
			tail = p;
		}
		if (!n)
			break;
	}
	if (!head)
		return 0;
	if (front) {
		tail->next = r->head;
		r->head = head;
		if (!r->tail)
			r->tail = tail;
	} else {
		if (r->tail)
			r->tail->next = head;
		else
			r->head = head;
		r->tail = tail;
	}
	pthread_cond_broadcast(&r->work);
	return 0;
}

/*
 * -ETIMEDOUT when a chunk of [c0, c1] has just cost a reader a whole
 * remote_timeout: still on its way after a reader gave up on it, or failed
 * by a timeout less than a second ago.  The kernel retries a failed
 * readahead at once with a read of its first page: that retry must not
 * wait a second remote_timeout.  Under lock.
 */
static int timed_out(const struct remote *r, uint64_t c0, uint64_t c1)
{
	uint64_t c;

	for (c = c0; c <= c1; c++) {
		if (r->err[c] != -ETIMEDOUT)
			continue;
		if (r->state[c] == CH_FETCHING ||
		    (r->state[c] == CH_FAILED &&
		     now_ms() - r->timed_out_ms < 1000))
			return -ETIMEDOUT;
	}
	return 0;
}

/* how far a read may land from the last one's end and still follow it */
#define SEQ_SLACK (16 * CHUNK)

/*
 * How far to prefetch after chunk @c1 for a read of [@off, +@len) inside a
 * tensor whose stored bytes are [@ext_off, @ext_end) (@ext_end UINT64_MAX:
 * not known, the whole remote_prefetch window); under lock.  A read of one
 * tensor fetches that tensor; the window past it opens (and doubles, up to
 * remote_prefetch) only while reads move on in file order, and closes on a
 * jump, the way object-store file systems grow theirs.
 */
static uint64_t prefetch_last(struct remote *r, uint64_t off, uint64_t len,
			      uint64_t c1, uint64_t ext_off, uint64_t ext_end)
{
	uint64_t n = r->cfg.prefetch / CHUNK, last, ext_last;
	/*
	 * one reader's reads come out of order: the kernel's readahead
	 * requests (1 MiB each) are served by several threads at once
	 */
	bool sequential = off <= r->seq_next + SEQ_SLACK &&
			  off + SEQ_SLACK >= r->seq_next;

	if (!sequential || off + len > r->seq_next)
		r->seq_next = off + len;
	if (ext_end == UINT64_MAX)
		return c1 + n;
	if (!sequential)
		r->seq_window = 0;
	else if (off == ext_off && off) /* moved on to the next tensor */
		r->seq_window =
			r->seq_window ? r->seq_window * 2 : r->piece_chunks;
	if (r->seq_window > n)
		r->seq_window = n;
	ext_last = ext_end ? (ext_end - 1) / CHUNK : 0;
	last = ext_last > c1 + r->seq_window ? ext_last : c1 + r->seq_window;
	return last > c1 + n ? c1 + n : last;
}

/* a read's pins of chunks [c0, c1] let go, and the drops they held back */
void tfs_remote_unpin_locked(struct remote *r, uint64_t c0, uint64_t c1)
{
	uint64_t c;

	for (c = c0; c <= c1; c++)
		if (r->pins[c] && !--r->pins[c] && r->dropreq[c]) {
			r->dropreq[c] = 0;
			tfs_remote_drop_when_free(r, c);
		}
}

/*
 * make [off, off + len) present; @ahead: then prefetch behind it, aiming
 * at a tensor [@ext_off, @ext_end) (@ext_end UINT64_MAX: none known);
 * @pin: its chunks stay until tfs_remote_unpin_locked() (0 returned only)
 */
int tfs_remote_fetch(struct remote *r, uint64_t off, uint64_t len, bool ahead,
		     uint64_t ext_off, uint64_t ext_end, bool pin)
{
	uint64_t c0, c1, c, deadline;
	struct timespec ts;
	int ret = 0;

	if (!tfs_range_ok(off, len, r->size))
		return -EIO;
	if (!len)
		return 0;
	c0 = off / CHUNK;
	c1 = (off + len - 1) / CHUNK;
	clock_gettime(CLOCK_REALTIME, &ts);
	deadline = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000 +
		   r->cfg.timeout_ms;
	pthread_mutex_lock(&r->lock);
	if (r->restart_uffd) {
		r->restart_uffd = false;
		if (tfs_remote_start_uffd(r)) {
			/* nothing would serve a fault: fetch it all */
			tfs_remote_log(r,
				       "%s: userfaultfd unavailable: fetching "
				       "it whole",
				       r->shown);
			schedule(r, 0, r->nchunks - 1, false);
		}
	}
	/* from now: a drop of what it waits for would be fetched again */
	for (c = c0; pin && c <= c1; c++)
		if (r->pins[c] < UINT16_MAX)
			r->pins[c]++;
	for (c = c0; c <= c1 && r->state[c] == CH_PRESENT; c++)
		;
	if (c > c1)
		goto prefetch; /* the common case: all there */
	ret = timed_out(r, c, c1);
	if (!ret)
		ret = schedule(r, c0, c1, true);
	while (!ret) {
		for (c = c0; c <= c1 && r->state[c] == CH_PRESENT; c++)
			;
		if (c > c1)
			break;
		if (r->state[c] == CH_FAILED) {
			ret = r->err[c];
			break;
		}
		/*
		 * A reader already waited a whole remote_timeout for this
		 * chunk, still on its way: the kernel's retry of a failed
		 * readahead must not wait a second one.
		 */
		if (r->state[c] == CH_FETCHING && r->err[c] == -ETIMEDOUT) {
			ret = -ETIMEDOUT;
			break;
		}
		if (r->state[c] == CH_MISSING) {
			/* dropped (remote_drop) after it came: again */
			ret = schedule(r, c, c1, true);
			continue;
		}
		if (r->stopping) {
			ret = -EIO;
			break;
		}
		ts.tv_sec = (time_t)(deadline / 1000);
		ts.tv_nsec = (long)(deadline % 1000) * 1000000;
		if (pthread_cond_timedwait(&r->done, &r->lock, &ts) ==
		    ETIMEDOUT) {
			tfs_remote_log(
				r, "%s: bytes %llu-%llu: no answer in %u ms",
				r->shown, (unsigned long long)off,
				(unsigned long long)(off + len - 1),
				r->cfg.timeout_ms);
			for (; c <= c1; c++)
				if (r->state[c] == CH_FETCHING)
					r->err[c] = -ETIMEDOUT;
			ret = -ETIMEDOUT;
		}
	}
prefetch:
	if (!ret && ahead && r->cfg.prefetch && c1 + 1 < r->nchunks) {
		uint64_t last =
			prefetch_last(r, off, len, c1, ext_off, ext_end);

		/*
		 * The window's end moves by whole pieces: a reader going
		 * 1 MiB at a time then adds full-size requests, not 1 MiB
		 * ones at the window's tail.
		 */
		if (ext_end == UINT64_MAX &&
		    last / r->piece_chunks * r->piece_chunks > c1 + 1)
			last = last / r->piece_chunks * r->piece_chunks - 1;
		if (last >= r->nchunks)
			last = r->nchunks - 1;
		if (last > c1)
			schedule(r, c1 + 1, last, false);
	}
	if (ret && pin)
		tfs_remote_unpin_locked(r, c0, c1);
	pthread_mutex_unlock(&r->lock);
	return ret;
}

void tfs_remote_stop_threads(struct remote *r)
{
	unsigned i;
	char c = 1;

	pthread_mutex_lock(&r->lock);
	r->stopping = true;
	pthread_cond_broadcast(&r->work);
	pthread_cond_broadcast(&r->done);
	pthread_cond_broadcast(&r->wwork);
	pthread_mutex_unlock(&r->lock);
	for (i = 0; i < r->nworkers; i++)
		pthread_join(r->workers[i], NULL);
	if (r->writer_running) {
		pthread_join(r->writer, NULL);
		r->writer_running = false;
	}
	r->writer_started = false;
	free(r->workers);
	r->workers = NULL;
	r->nworkers = 0;
	r->started = 0;
	if (r->fault_running) {
		if (write(r->stop_pipe[1], &c, 1) != 1)
			c = 0;
		pthread_join(r->fault_thread, NULL);
		close(r->stop_pipe[0]);
		close(r->stop_pipe[1]);
		r->fault_running = false;
	}
}
