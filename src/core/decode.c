// SPDX-License-Identifier: MIT
/*
 * The decode engine: encoded tensors (zstd, ...) decoded through the codec
 * seam (src/codec/codec.h) into the decode cache, the digest checks
 * of stored bytes, and the background decoder threads.  The behaviour is
 * described in src/core/image.h; image.c dispatches reads here.
 *
 * Locks, outermost first:
 *   ts->fill     one per tensor: whoever holds it continues that tensor's
 *                zstd decode (whole buffer or window stream);
 *   rs->dlock    the digest state of every tensor (first-read checks wait
 *                on rs->dcond for the thread doing the check);
 *   the cache's own lock (decode_cache.c), never held across a call out.
 * Bytes of the container are touched only after tfs_source_live_range_ok():
 * a container that shrank gives -EIO; one that shrinks during a decode or a
 * digest is caught by the SIGBUS guard (source.h).
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/diag.h"
#include "core/image.h"
#include "codec/codec.h"
#include "core/image_i.h"

/* whole mode: bytes decoded per publication */
#define STEP (2u << 20)
/* whole mode: decode this far past the furthest byte asked for */
#define AHEAD (64ull << 20)
#define PREFAULT_MIN (8u << 20) /* whole mode: prefault buffers this large */
#define PREFAULT_CHUNK (4u << 20)
#define WINDOW_MIN (64u << 10)
/* window mode: consumed input dropped in steps this large (whole folios) */
#define INPUT_DROP_STEP (1u << 20)
#define WINDOW_MAX (8u << 20)
#define WHOLE_KEY 0xffffffffu /* window number of a whole-mode entry */

/*
 * The state of a whole-mode entry being filled (entry->state), under
 * ts->fill.  The decoder may run before the stored bytes are verified
 * (the check runs at the same time, on the first reader's thread), but
 * what it decodes is published (entry->valid) only once they are.
 */
struct whole_state {
	struct tfs_stream *z;  /* the decoder, NULL once complete */
	atomic_size_t decoded; /* bytes decoded so far */
	uint64_t want;	       /* the furthest byte a reader asked for */
	bool running;	       /* a decoder is at work (only it touches z) */
	bool verified;	       /* the digest rule passed: publish */
	/*
	 * The codec checks a checksum of the whole output at its end (a zip
	 * member's CRC-32): nothing is published before the decoder got
	 * there, as nothing is before a digest matched.
	 */
	bool end_check_pending;
	atomic_int err; /* this entry failed; its readers get it */
};

/* ---- read state ---------------------------------------------------------- */

static void drop_whole(void *state)
{
	struct whole_state *ws = state;

	if (ws) {
		tfs_stream_free(ws->z);
		free(ws);
	}
}

size_t tfs_decode_window_for(uint64_t budget)
{
	uint64_t w = budget / 8;

	if (w > WINDOW_MAX)
		w = WINDOW_MAX;
	w -= w % WINDOW_MIN;
	return w < WINDOW_MIN ? WINDOW_MIN : (size_t)w;
}

void tfs_read_state_free(struct tfs_read_state *rs)
{
	uint32_t i;

	if (!rs)
		return;
	/* background decoders use the mapping and the cache: wait for them */
	atomic_store(&rs->closing, true);
	pthread_mutex_lock(&rs->bg_lock);
	while (rs->bg_running)
		pthread_cond_wait(&rs->bg_done, &rs->bg_lock);
	pthread_mutex_unlock(&rs->bg_lock);
	for (i = 0; rs->ts && i < rs->nstates; i++) {
		tfs_stream_free(rs->ts[i].stream);
		pthread_mutex_destroy(&rs->ts[i].fill);
		pthread_cond_destroy(&rs->ts[i].progress);
	}
	free(rs->ts);
	free(rs->state);
	free(rs->flags);
	tfs_cache_free(rs->cache);
	pthread_mutex_destroy(&rs->dlock);
	pthread_cond_destroy(&rs->dcond);
	pthread_mutex_destroy(&rs->bg_lock);
	pthread_cond_destroy(&rs->bg_done);
	pthread_mutex_destroy(&rs->twin_lock);
	pthread_mutex_destroy(&rs->stream_lock);
	free(rs->twin);
	free(rs);
}

int tfs_read_state_new(struct tfs_image *img, struct tfs_diag *d)
{
	const struct tfs_tree *t = img->tree;
	struct tfs_read_state *rs;
	uint32_t i, n = 0;
	int ret;

	rs = calloc(1, sizeof(*rs));
	if (!rs)
		return tfs_diag_oom(d);
	pthread_mutex_init(&rs->dlock, NULL);
	pthread_cond_init(&rs->dcond, NULL);
	pthread_mutex_init(&rs->bg_lock, NULL);
	pthread_cond_init(&rs->bg_done, NULL);
	pthread_mutex_init(&rs->twin_lock, NULL);
	pthread_mutex_init(&rs->stream_lock, NULL);
	rs->opts.cache_size = tfs_default_cache_size();
	rs->opts.verify = TFS_VERIFY_FIRST;
	rs->window = tfs_decode_window_for(rs->opts.cache_size);
	for (i = 0; i < t->nrecords; i++)
		if (t->tensors[i].encoding != TFS_ENCODING_RAW ||
		    t->tensors[i].digest)
			n++;
	rs->ts = calloc(n ? n : 1, sizeof(*rs->ts));
	rs->state =
		malloc((t->nrecords ? t->nrecords : 1) * sizeof(*rs->state));
	rs->flags = calloc(t->nrecords ? t->nrecords : 1, sizeof(*rs->flags));
	ret = rs->ts && rs->state && rs->flags
		      ? tfs_cache_new(&rs->cache, rs->opts.cache_size,
				      drop_whole)
		      : -ENOMEM;
	if (ret) {
		tfs_read_state_free(rs);
		return tfs_diag_oom(d);
	}
	rs->ntensors = t->nrecords;
	for (i = 0; i < t->nrecords; i++) {
		struct tensor_state *ts;

		/* bytes that cannot be served: every read is refused */
		if (t->tensors[i].unreadable)
			atomic_store(&rs->flags[i], TS_FAILED);
		rs->state[i] = TFS_NO_STATE;
		if (t->tensors[i].encoding == TFS_ENCODING_RAW &&
		    !t->tensors[i].digest)
			continue;
		rs->state[i] = rs->nstates;
		ts = &rs->ts[rs->nstates++];
		pthread_mutex_init(&ts->fill, NULL);
		pthread_cond_init(&ts->progress, NULL);
		if (tfs_digest_parse(t->tensors[i].digest, &ts->digest)) {
			tfs_read_state_free(rs);
			return tfs_diag_set(d, -EBADMSG,
					    "tensor '%s': digest: malformed "
					    "value '%s'",
					    t->tensors[i].path,
					    t->tensors[i].digest);
		}
	}
	img->rs = rs;
	return 0;
}

/* ---- failures ------------------------------------------------------------ */

static void report(struct tfs_image *img, uint32_t idx, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* one line through the log callback, at most once per tensor */
static void report(struct tfs_image *img, uint32_t idx, const char *fmt, ...)
{
	struct tfs_read_state *rs = img->rs;
	char what[400], line[600];
	va_list ap;

	if ((!rs->opts.log && !rs->opts.failed) ||
	    (atomic_fetch_or(&rs->flags[idx], TS_LOGGED) & TS_LOGGED))
		return;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (rs->opts.failed)
		rs->opts.failed(rs->opts.log_arg, idx, what);
	if (!rs->opts.log)
		return;
	snprintf(line, sizeof(line),
		 "%s: tensor '%s': %s; its reads fail with EIO",
		 tfs_image_source(img, &img->tree->tensors[idx])->path
			 ?: "(memory)",
		 img->tree->tensors[idx].path, what);
	rs->opts.log(rs->opts.log_arg, line);
}

/* tensor @idx's digest did not match (@what bytes: stored, decoded): it
 * failed for good, said once */
static void mismatch(struct tfs_image *img, uint32_t idx,
		     const struct tfs_digest *got, const char *what)
{
	struct tfs_read_state *rs = img->rs;
	char want_s[TFS_DIGEST_TEXT_MAX], got_s[TFS_DIGEST_TEXT_MAX];

	atomic_fetch_add(&rs->digest_failures, 1);
	tfs_digest_format(&state_of(rs, idx)->digest, want_s, sizeof(want_s));
	tfs_digest_format(got, got_s, sizeof(got_s));
	atomic_fetch_or(&rs->flags[idx], TS_FAILED);
	report(img, idx,
	       "digest mismatch: the container says %s, the %s bytes have %s",
	       want_s, what, got_s);
}

/* the tensor's bytes are wrong for good: remember, report, -EIO */
static int fail_tensor(struct tfs_image *img, uint32_t idx, const char *why)
{
	atomic_fetch_or(&img->rs->flags[idx], TS_FAILED);
	report(img, idx, "%s", why);
	return -EIO;
}

static int hash_piece(void *arg, const uint8_t *p, size_t n)
{
	return tfs_digest_update(arg, p, n);
}

/* the digest of @x's stored pieces against @want: 0, -EBADMSG, -EIO */
static int stored_digest(const struct tfs_image *img,
			 const struct tfs_tensor *x,
			 const struct tfs_digest *want, struct tfs_digest *got)
{
	struct tfs_digest_ctx *c;
	int ret = tfs_digest_begin(&c, want->alg);

	if (ret)
		return ret;
	ret = tfs_stored_each(img, x, 0, x->stored_length, hash_piece, c);
	if (ret) {
		tfs_digest_abort(c);
		return ret;
	}
	ret = tfs_digest_final(c, got);
	if (ret)
		return ret;
	return got->len == want->len &&
			       memcmp(got->value, want->value, got->len) == 0
		       ? 0
		       : -EBADMSG;
}

/*
 * Hash the stored bytes of tensor @idx and compare: 0, -EBADMSG on a
 * mismatch (reported, the tensor failed), -EIO when the bytes are gone.
 */
static int digest_verify(struct tfs_image *img, uint32_t idx)
{
	struct tfs_read_state *rs = img->rs;
	const struct tfs_tensor *x = &img->tree->tensors[idx];
	struct tfs_digest got;
	int ret;

	uint64_t off = x->has_digest_extent ? x->digest_offset : x->offset;
	uint64_t len =
		x->has_digest_extent ? x->digest_length : x->stored_length;

	if (x->nsegs) { /* pieces: hashed one after the other */
		ret = stored_digest(img, x, &state_of(rs, idx)->digest, &got);
		if (ret == -EIO)
			return ret;
	} else {
		if (!tfs_source_live_range_ok(tfs_image_source(img, x), off,
					      len))
			return -EIO;
		/* through the serving mapping: its readahead stops at the
		 * extent's end, as the reads that follow do */
		ret = tfs_digest_check(
			&state_of(rs, idx)->digest,
			len ? tfs_source_serve(tfs_image_source(img, x), off,
					       (size_t)len, off + len)
			    : (const uint8_t *)"",
			(size_t)len, &got);
	}
	atomic_fetch_add(&rs->digest_checks, 1);
	if (ret != -EBADMSG)
		return ret;
	mismatch(img, idx, &got, "stored");
	return -EBADMSG;
}

/* verify=first: one thread checks, concurrent first readers wait for it */
static int digest_first(struct tfs_image *img, uint32_t idx)
{
	struct tfs_read_state *rs = img->rs;
	struct tensor_state *ts = state_of(rs, idx);
	int ret, st;

	if (atomic_load_explicit(&ts->dg, memory_order_acquire) == DG_OK)
		return 0;
	pthread_mutex_lock(&rs->dlock);
	while ((st = atomic_load(&ts->dg)) == DG_CHECKING)
		pthread_cond_wait(&rs->dcond, &rs->dlock);
	if (st == DG_OK || st == DG_FAILED) {
		pthread_mutex_unlock(&rs->dlock);
		return st == DG_OK ? 0 : -EIO;
	}
	atomic_store(&ts->dg, DG_CHECKING);
	pthread_mutex_unlock(&rs->dlock);
	ret = digest_verify(img, idx);
	pthread_mutex_lock(&rs->dlock);
	atomic_store_explicit(&ts->dg,
			      ret == 0		? DG_OK
			      : ret == -EBADMSG ? DG_FAILED
						: DG_UNCHECKED,
			      memory_order_release);
	pthread_cond_broadcast(&rs->dcond);
	pthread_mutex_unlock(&rs->dlock);
	return ret == -EBADMSG ? -EIO : ret;
}

/* the digest rule before the stored bytes of @idx are used */
int tfs_digest_gate(struct tfs_image *img, uint32_t idx)
{
	struct tfs_read_state *rs = img->rs;
	int ret;

	if (failed(rs, idx))
		return -EIO;
	/* a digest of the decoded bytes is checked when they are complete */
	if (!digest_known(state_of(rs, idx)) ||
	    img->tree->tensors[idx].digest_decoded)
		return 0;
	switch (rs->opts.verify) {
	case TFS_VERIFY_OFF:
		return 0;
	case TFS_VERIFY_ALWAYS:
		ret = digest_verify(img, idx);
		return ret == -EBADMSG ? -EIO : ret;
	default:
		return digest_first(img, idx);
	}
}

/* ---- zstd: one buffer for the whole tensor ------------------------------- */

/*
 * A decode of @idx is done with its compressed input: its pages out of the
 * page cache (and of our mapping), or every input read at random stays
 * resident beside the decoded bytes.  Decoding it again reads the disk.
 * Not while the first read's digest check still reads them.
 */
static void input_done(struct tfs_image *img, uint32_t idx)
{
	const struct tfs_tensor *x = &img->tree->tensors[idx];

	if (img->rs->opts.drop_input && !x->nsegs &&
	    atomic_load(&state_of(img->rs, idx)->dg) != DG_CHECKING)
		tfs_source_drop_cache(tfs_image_source(img, x), x->offset,
				      x->stored_length);
}

/*
 * The digest of the decoded bytes of @idx, all of them in @p: 0, or -EIO
 * (reported, the tensor failed) on a mismatch.
 */
static int decoded_digest_check(struct tfs_image *img, uint32_t idx,
				const uint8_t *p, size_t len)
{
	struct tfs_read_state *rs = img->rs;
	struct tfs_digest got;
	int ret;

	atomic_fetch_add(&rs->digest_checks, 1);
	ret = tfs_digest_check(&state_of(rs, idx)->digest,
			       len ? p : (const uint8_t *)"", len, &got);
	if (ret != -EBADMSG)
		return ret ? -EIO : 0;
	mismatch(img, idx, &got, "decoded");
	return -EIO;
}

/* does @idx wait for its whole decode to check a digest of the output? */
static bool digest_after_decode(const struct tfs_image *img, uint32_t idx)
{
	return img->tree->tensors[idx].digest_decoded &&
	       digest_known(state_of(img->rs, idx)) &&
	       img->rs->opts.verify != TFS_VERIFY_OFF;
}

static int decode_failed(struct tfs_image *img, uint32_t idx,
			 struct tfs_stream *z)
{
	return fail_tensor(img, idx, tfs_stream_message(z));
}

static int short_output(struct tfs_image *img, uint32_t idx, uint64_t got,
			uint64_t want)
{
	char why[160];

	snprintf(why, sizeof(why),
		 "%s: the data decodes to %llu bytes, fewer than the "
		 "expected %llu",
		 tfs_encoding_name(img->tree->tensors[idx].encoding),
		 (unsigned long long)got, (unsigned long long)want);
	return fail_tensor(img, idx, why);
}

/*
 * One step of the running decoder of @e: decode up to @target.  No lock is
 * held: only the running decoder touches ws->z and the buffer past
 * ws->decoded.
 */
static int whole_step(struct tfs_image *img, uint32_t idx,
		      struct tfs_cache_entry *e, struct whole_state *ws,
		      size_t target)
{
	const struct tfs_tensor *x = &img->tree->tensors[idx];
	size_t from = atomic_load(&ws->decoded), pos = from;
	int ret;

	if (!tfs_stored_live(img, x))
		return -EIO;
	ret = tfs_stream_decode(ws->z, e->data, e->len, &pos, target);
	if (!ret && pos == e->len)
		ret = tfs_stream_expect_end(ws->z, e->data, e->len);
	else if (!ret && pos < target)
		return short_output(img, idx, pos, e->len);
	if (ret == -EBADMSG)
		return decode_failed(img, idx, ws->z);
	if (ret)
		return ret;
	atomic_fetch_add(&img->rs->decoded_bytes, pos - from);
	atomic_store(&ws->decoded, pos);
	return 0;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/* the entry failed (ts->fill held): its readers get @err */
static void whole_fail(struct tfs_read_state *rs, struct tfs_cache_entry *e,
		       struct whole_state *ws, int err)
{
	ws->err = err;
	tfs_cache_forget(rs->cache, e);
}

/*
 * The decoder's loop: decode in STEPs, publishing each once verified,
 * until the entry is complete or AHEAD bytes past what readers asked for.
 * ts->fill is held on entry and on return, dropped around each step.
 */
static void whole_run(struct tfs_image *img, uint32_t idx,
		      struct tfs_cache_entry *e, struct whole_state *ws)
{
	struct tfs_read_state *rs = img->rs;
	struct tensor_state *ts = state_of(rs, idx);
	size_t done, target;
	int ret;

	while (!ws->err && (done = atomic_load(&ws->decoded)) < e->len &&
	       done < sat_add(ws->want, AHEAD) && !atomic_load(&rs->closing)) {
		target = e->len - done > STEP ? done + STEP : e->len;
		pthread_mutex_unlock(&ts->fill);
		ret = whole_step(img, idx, e, ws, target);
		pthread_mutex_lock(&ts->fill);
		if (!ret && atomic_load(&ws->decoded) == e->len)
			ws->end_check_pending = false; /* passed */
		if (ret)
			whole_fail(rs, e, ws, ret);
		else if (ws->verified && !ws->end_check_pending)
			tfs_cache_set_valid(e, atomic_load(&ws->decoded));
		else if (atomic_load(&ws->decoded) == e->len &&
			 digest_after_decode(img, idx)) {
			/* nothing was served: check the output, publish */
			if (decoded_digest_check(img, idx, e->data, e->len)) {
				whole_fail(rs, e, ws, -EIO);
			} else {
				ws->verified = true;
				tfs_cache_set_valid(e, e->len);
			}
		}
		pthread_cond_broadcast(&ts->progress);
	}
	if (atomic_load(&ws->decoded) == e->len && ws->z) {
		tfs_stream_free(ws->z);
		ws->z = NULL;
		input_done(img, idx);
	}
	ws->running = false;
	pthread_cond_broadcast(&ts->progress);
}

/* ---- background jobs (decoders, prefaulting) ----------------------------- */

struct bg_job {
	struct tfs_image *img;
	uint32_t idx;
	struct tfs_cache_entry *e; /* pinned for the job */
	void (*run)(struct bg_job *job);
};

static void *bg_main(void *arg)
{
	struct bg_job *job = arg;
	struct tfs_read_state *rs = job->img->rs;

	job->run(job);
	tfs_cache_put(rs->cache, job->e);
	pthread_mutex_lock(&rs->bg_lock);
	rs->bg_running--;
	pthread_cond_broadcast(&rs->bg_done);
	pthread_mutex_unlock(&rs->bg_lock);
	free(job);
	return NULL;
}

/* run @fn on a detached thread with @e pinned; -errno when none starts */
static int bg_launch(struct tfs_image *img, uint32_t idx,
		     struct tfs_cache_entry *e, void (*fn)(struct bg_job *))
{
	struct tfs_read_state *rs = img->rs;
	struct bg_job *job = malloc(sizeof(*job));
	pthread_attr_t attr;
	pthread_t th;
	int ret;

	if (!job)
		return -ENOMEM;
	*job = (struct bg_job){img, idx, e, fn};
	tfs_cache_pin(rs->cache, e);
	pthread_mutex_lock(&rs->bg_lock);
	rs->bg_running++;
	pthread_mutex_unlock(&rs->bg_lock);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	ret = -pthread_create(&th, &attr, bg_main, job);
	pthread_attr_destroy(&attr);
	if (!ret)
		return 0;
	pthread_mutex_lock(&rs->bg_lock);
	rs->bg_running--;
	pthread_mutex_unlock(&rs->bg_lock);
	tfs_cache_put(rs->cache, e);
	free(job);
	return ret;
}

static void bg_decode(struct bg_job *job)
{
	struct tensor_state *ts = state_of(job->img->rs, job->idx);

	pthread_mutex_lock(&ts->fill);
	whole_run(job->img, job->idx, job->e, job->e->state);
	pthread_mutex_unlock(&ts->fill);
}

/*
 * Map the buffer's pages ahead of the decoder, on another CPU: the kernel
 * zeroing 256 MiB costs ~0.1 s that would otherwise be on the decoder's
 * path.  It stops where the decoder already is, and never touches the
 * contents (MADV_POPULATE_WRITE), so racing with the decoder is harmless.
 */
static void bg_prefault(struct bg_job *job)
{
	struct tfs_cache_entry *e = job->e;
	struct whole_state *ws = e->state;
	size_t off;

	for (off = 0; off < e->len; off += PREFAULT_CHUNK) {
		if (atomic_load(&job->img->rs->closing) ||
		    atomic_load(&ws->err) ||
		    atomic_load(&ws->decoded) >= e->len)
			break;
		if (atomic_load(&ws->decoded) > off + PREFAULT_CHUNK)
			continue;
		if (tfs_cache_prefault(e, off, PREFAULT_CHUNK))
			break;
	}
}

/* start a decoder for @e (ts->fill held, none running) */
static void whole_start(struct tfs_image *img, uint32_t idx,
			struct tfs_cache_entry *e, struct whole_state *ws)
{
	ws->running = true;
	/* no thread to be had: the calling reader decodes */
	if (bg_launch(img, idx, e, bg_decode))
		whole_run(img, idx, e, ws);
}

/*
 * The compressed bytes of @x, asked for ahead in one go: through the
 * serving mapping, whose readahead stops at the extent's end, so the
 * neighbours' pages are not brought in beside them (they would stay cached
 * after the mount dropped this input, tfs_image_drop_source_cache)
 */
static const uint8_t *encoded_input(struct tfs_image *img,
				    const struct tfs_tensor *x)
{
	return tfs_source_serve(tfs_image_source(img, x), x->offset,
				(size_t)x->stored_length,
				x->offset + x->stored_length);
}

/*
 * The first read of a whole-mode entry (ts->fill held): make the decoder
 * and start it, then check the digest meanwhile, and publish.
 */
static int whole_begin(struct tfs_image *img, uint32_t idx,
		       struct tfs_cache_entry *e)
{
	struct tfs_read_state *rs = img->rs;
	struct tensor_state *ts = state_of(rs, idx);
	const struct tfs_tensor *x = &img->tree->tensors[idx];
	struct whole_state *ws;
	int ret;

	if (failed(rs, idx))
		return -EIO;
	if (!tfs_stored_live(img, x))
		return -EIO;
	ws = calloc(1, sizeof(*ws));
	if (!ws)
		return -ENOMEM;
	ret = tfs_stream_new(&ws->z, x->encoding, encoded_input(img, x),
			     (size_t)x->stored_length, true, &x->codec);
	if (ret) {
		free(ws);
		return ret;
	}
	atomic_init(&ws->decoded, 0);
	e->state = ws;
	atomic_fetch_add(&rs->decodes, 1);
	if (e->len >= PREFAULT_MIN)
		bg_launch(img, idx, e, bg_prefault);
	/* a digest of the decoded bytes: decode all of it before serving */
	ws->want = digest_after_decode(img, idx) ? e->len : STEP;
	if (x->codec.check_crc32 && rs->opts.verify != TFS_VERIFY_OFF) {
		ws->end_check_pending = true;
		ws->want = e->len; /* decode to the end, where the check is */
	}
	whole_start(img, idx, e, ws);
	pthread_mutex_unlock(&ts->fill);
	ret = tfs_digest_gate(img, idx);
	pthread_mutex_lock(&ts->fill);
	if (ret) {
		whole_fail(rs, e, ws, ret);
	} else if (!digest_after_decode(img, idx)) {
		ws->verified = true;
		if (!ws->end_check_pending)
			tfs_cache_set_valid(e, atomic_load(&ws->decoded));
	}
	pthread_cond_broadcast(&ts->progress);
	return 0;
}

/*
 * Wait until the first @need bytes of @e are published, starting its
 * decoder on the first read and keeping one running while readers are
 * within AHEAD / 2 of the decoded end.
 */
static int whole_wait(struct tfs_image *img, uint32_t idx,
		      struct tfs_cache_entry *e, size_t need)
{
	struct tfs_read_state *rs = img->rs;
	struct tensor_state *ts = state_of(rs, idx);
	struct whole_state *ws;
	int ret = 0;

	pthread_mutex_lock(&ts->fill);
	if (!e->state)
		ret = whole_begin(img, idx, e);
	ws = e->state;
	if (ret || !ws) {
		pthread_mutex_unlock(&ts->fill);
		return ret ? ret : -EIO;
	}
	if (need > ws->want)
		ws->want = need;
	while (!ws->err && !failed(rs, idx)) {
		if (atomic_load(&ws->decoded) < e->len && !ws->running &&
		    atomic_load(&ws->decoded) < sat_add(ws->want, AHEAD / 2))
			whole_start(img, idx, e, ws);
		if (tfs_cache_valid(e) >= need || ws->err)
			break;
		pthread_cond_wait(&ts->progress, &ts->fill);
	}
	if (ws->err)
		ret = ws->err;
	else if (failed(rs, idx))
		ret = -EIO;
	pthread_mutex_unlock(&ts->fill);
	return ret;
}

/* ---- zstd: a stream of windows ------------------------------------------- */

static uint64_t window_key(uint32_t idx, uint32_t k)
{
	return (uint64_t)idx << 32 | k;
}

static size_t window_len(const struct tfs_read_state *rs,
			 const struct tfs_tensor *x, uint32_t k)
{
	uint64_t start = (uint64_t)k * rs->window;

	return x->size - start < rs->window ? (size_t)(x->size - start)
					    : rs->window;
}

/* decode window k of the running stream (ts->fill held) into @dst */
static int window_decode(struct tfs_image *img, uint32_t idx, uint32_t k,
			 uint8_t *dst, size_t len)
{
	struct tfs_read_state *rs = img->rs;
	struct tensor_state *ts = state_of(rs, idx);
	const struct tfs_tensor *x = &img->tree->tensors[idx];
	size_t pos = 0;
	int ret;

	if (!tfs_stored_live(img, x))
		return -EIO;
	ret = tfs_stream_decode(ts->stream, dst, len, &pos, len);
	if (!ret && pos < len)
		return short_output(img, idx, (uint64_t)k * rs->window + pos,
				    x->size);
	if (!ret && (uint64_t)k * rs->window + len == x->size)
		ret = tfs_stream_expect_end(ts->stream, dst, len);
	if (ret == -EBADMSG)
		ret = decode_failed(img, idx, ts->stream);
	if (!ret)
		atomic_fetch_add(&rs->decoded_bytes, len);
	return ret;
}

/* @idx's stream is freed (ts->fill held): off the live list */
static void stream_gone(struct tfs_read_state *rs, uint32_t idx)
{
	uint32_t i;

	pthread_mutex_lock(&rs->stream_lock);
	for (i = 0; i < rs->nlive && rs->live[i] != idx; i++)
		;
	if (i < rs->nlive) {
		memmove(rs->live + i, rs->live + i + 1,
			(rs->nlive - i - 1) * sizeof(*rs->live));
		rs->nlive--;
	}
	pthread_mutex_unlock(&rs->stream_lock);
}

/*
 * @idx's stream was made (ts->fill held): listed last; past the limit
 * (two, or a quarter of the budget in windows), the oldest streams of
 * tensors no reader is decoding now are freed (a later read of theirs
 * starts again at window 0).  Random reads over many large tensors kept
 * a decoder, and its window, alive for every one of them.
 */
static void stream_born(struct tfs_read_state *rs, uint32_t idx)
{
	uint64_t limit = rs->opts.cache_size / 4 / rs->window;
	struct tensor_state *o;
	uint32_t i;

	if (limit < 2)
		limit = 2;
	if (limit > TFS_MAX_LIVE_STREAMS - 1)
		limit = TFS_MAX_LIVE_STREAMS - 1;
	pthread_mutex_lock(&rs->stream_lock);
	for (i = 0; rs->nlive >= limit && i < rs->nlive;) {
		o = state_of(rs, rs->live[i]);
		if (rs->live[i] == idx || pthread_mutex_trylock(&o->fill)) {
			i++;
			continue;
		}
		tfs_stream_free(o->stream);
		o->stream = NULL;
		pthread_mutex_unlock(&o->fill);
		memmove(rs->live + i, rs->live + i + 1,
			(rs->nlive - i - 1) * sizeof(*rs->live));
		rs->nlive--;
	}
	if (rs->nlive < TFS_MAX_LIVE_STREAMS)
		rs->live[rs->nlive++] = idx;
	pthread_mutex_unlock(&rs->stream_lock);
}

/*
 * The input the window stream of @idx has consumed, out of the page cache
 * (ts->fill held): a stream held over random reads of a large tensor
 * otherwise kept all of its input resident.  A restart reads it again.
 */
static void input_behind(struct tfs_image *img, uint32_t idx)
{
	struct tensor_state *ts = state_of(img->rs, idx);
	const struct tfs_tensor *x = &img->tree->tensors[idx];
	uint64_t to = tfs_stream_consumed(ts->stream);

	to -= to % INPUT_DROP_STEP;
	if (!img->rs->opts.drop_input || x->nsegs || to <= ts->input_dropped)
		return;
	tfs_source_drop_cache(tfs_image_source(img, x),
			      x->offset + ts->input_dropped,
			      to - ts->input_dropped);
	ts->input_dropped = to;
}

/* (re)start the window stream of @idx at window 0 (ts->fill held) */
static int window_restart(struct tfs_image *img, uint32_t idx)
{
	struct tfs_read_state *rs = img->rs;
	struct tensor_state *ts = state_of(rs, idx);
	const struct tfs_tensor *x = &img->tree->tensors[idx];
	const uint8_t *in;
	int ret = tfs_digest_gate(img, idx);

	if (ret)
		return ret;
	in = encoded_input(img, x); /* read ahead again after a reset */
	if (ts->stream) {
		tfs_stream_reset(ts->stream);
	} else {
		ret = tfs_stream_new(&ts->stream, x->encoding, in,
				     (size_t)x->stored_length, false,
				     &x->codec);
		if (!ret)
			stream_born(rs, idx);
	}
	ts->next_window = 0;
	ts->input_dropped = 0;
	if (!ret)
		atomic_fetch_add(&rs->decodes, 1);
	return ret;
}

/* window @k of tensor @idx, pinned and valid */
static int window_get(struct tfs_image *img, uint32_t idx, uint32_t k,
		      struct tfs_cache_entry **out)
{
	struct tfs_read_state *rs = img->rs;
	struct tensor_state *ts = state_of(rs, idx);
	const struct tfs_tensor *x = &img->tree->tensors[idx];
	struct tfs_cache_entry *e, *ej;
	uint8_t *scratch = NULL, *dst;
	size_t len = window_len(rs, x, k), lj;
	uint32_t j;
	int ret;

	ret = tfs_cache_get(rs->cache, window_key(idx, k), len, &e, NULL);
	if (ret)
		return ret;
	if (tfs_cache_valid(e) == len) {
		*out = e;
		return 0;
	}
	pthread_mutex_lock(&ts->fill);
	while (!ret && tfs_cache_valid(e) < len) {
		if (failed(rs, idx)) {
			ret = -EIO;
			break;
		}
		if (!ts->stream || ts->next_window > k) {
			ret = window_restart(img, idx);
			if (ret)
				break;
		}
		j = ts->next_window;
		lj = window_len(rs, x, j);
		ej = e;
		if (j != k)
			ret = tfs_cache_get(rs->cache, window_key(idx, j), lj,
					    &ej, NULL);
		if (ret)
			break;
		dst = ej->data;
		if (tfs_cache_valid(ej) == lj) {
			/* cached already: decode past it into scratch */
			if (!scratch)
				scratch = malloc(rs->window);
			dst = scratch;
		}
		ret = dst ? window_decode(img, idx, j, dst, lj) : -ENOMEM;
		if (ret) {
			/* the stream's position is unknown now */
			tfs_stream_free(ts->stream);
			ts->stream = NULL;
			stream_gone(rs, idx);
		} else {
			if (dst == ej->data)
				tfs_cache_set_valid(ej, lj);
			ts->next_window = j + 1;
			input_behind(img, idx);
			if ((uint64_t)ts->next_window * rs->window >= x->size) {
				tfs_stream_free(ts->stream);
				ts->stream = NULL;
				stream_gone(rs, idx);
				input_done(img, idx);
			}
		}
		if (j != k)
			tfs_cache_put(rs->cache, ej);
	}
	pthread_mutex_unlock(&ts->fill);
	free(scratch);
	if (ret) {
		tfs_cache_put(rs->cache, e);
		return ret;
	}
	*out = e;
	return 0;
}

/* ---- reads --------------------------------------------------------------- */

static int read_whole(struct tfs_image *img, uint32_t idx, uint64_t off,
		      size_t len, struct tfs_view *v)
{
	struct tfs_read_state *rs = img->rs;
	const struct tfs_tensor *x = &img->tree->tensors[idx];
	struct tfs_cache_entry *e;
	size_t valid;
	int ret;

	ret = tfs_cache_get_within(rs->cache, window_key(idx, WHOLE_KEY),
				   (size_t)x->size, &e);
	if (ret)
		return ret;
	valid = tfs_cache_valid(e);
	/* the fast path: decoded, and not near the decoded end */
	if (valid < off + len ||
	    (valid < e->len && valid < sat_add(off + len, AHEAD / 2)))
		ret = whole_wait(img, idx, e, (size_t)(off + len));
	if (ret) {
		tfs_cache_put(rs->cache, e);
		return ret;
	}
	v->data = e->data + off;
	v->len = len;
	v->pin = e;
	v->pin_kind = PIN_ENTRY;
	return 0;
}

static int read_windows(struct tfs_image *img, uint32_t idx, uint64_t off,
			size_t len, struct tfs_view *v)
{
	struct tfs_read_state *rs = img->rs;
	struct tfs_cache_entry *e;
	uint64_t k0 = off / rs->window, k1 = (off + len - 1) / rs->window;
	uint64_t k, start, from, to;
	uint8_t *bounce;
	int ret;

	if (k0 == k1) {
		ret = window_get(img, idx, (uint32_t)k0, &e);
		if (ret)
			return ret;
		v->data = e->data + (off - k0 * rs->window);
		v->len = len;
		v->pin = e;
		v->pin_kind = PIN_ENTRY;
		return 0;
	}
	/* the read straddles windows: assemble a copy */
	bounce = malloc(len);
	if (!bounce)
		return -ENOMEM;
	for (k = k0; k <= k1; k++) {
		ret = window_get(img, idx, (uint32_t)k, &e);
		if (ret) {
			free(bounce);
			return ret;
		}
		start = k * rs->window;
		from = off > start ? off - start : 0;
		to = off + len - start < e->len ? off + len - start : e->len;
		memcpy(bounce + (start + from - off), e->data + from,
		       (size_t)(to - from));
		tfs_cache_put(rs->cache, e);
	}
	tfs_view_own(v, bounce, len);
	return 0;
}

int tfs_decode_read(struct tfs_image *img, uint32_t idx, uint64_t off,
		    size_t len, struct tfs_view *v)
{
	struct tfs_read_state *rs = img->rs;
	int ret;

	if (failed(rs, idx))
		return -EIO;
	if (img->tree->tensors[idx].size <= rs->opts.cache_size &&
	    !(atomic_load(&rs->flags[idx]) & TS_WINDOWED)) {
		ret = read_whole(img, idx, off, len, v);
		if (ret != -ENOSPC)
			return ret;
		/* other readers' buffers fill the budget: a window at a time */
		atomic_fetch_or(&rs->flags[idx], TS_WINDOWED);
	}
	return read_windows(img, idx, off, len, v);
}
