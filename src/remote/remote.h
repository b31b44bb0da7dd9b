/* SPDX-License-Identifier: MIT */
/*
 * Remote containers (docs/remote.md): an http(s):// URL opened as a
 * struct tfs_source whose bytes are fetched by range when first needed.
 *
 * The source's data is a read-only shared mapping of a memfd the size of
 * the object.  Bytes arrive in it in chunks (installed whole pages at a
 * time, or -- with a disk cache -- the cache files they were fetched into
 * mapped in place); a userfaultfd registered on the mapping serves any
 * access to a chunk that has not arrived yet (the readers' parsers touch
 * their headers that way, unchanged), and tfs_source_live_range_ok() --
 * which every read path already calls before it hands a range on --
 * fetches that range first, so the FUSE reply's kernel-mode copy never
 * faults.
 */
#ifndef TFS_REMOTE_H
#define TFS_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/abi.h"

struct tfs_source;
struct tfs_diag;

struct tfs_remote_config {
	uint64_t mem;	     /* bytes of fetch buffers in flight (remote_mem) */
	unsigned timeout_ms; /* per read (remote_timeout), and per request */
	unsigned conns;	     /* parallel range requests per object */
	uint64_t prefetch;   /* bytes fetched ahead of a read in file order */
	char *cache_dir;     /* NULL: no disk cache */
	uint64_t cache_max;  /* bytes of the disk cache */
	bool insecure;	     /* do not verify TLS certificates (tests) */
	/* one line, no newline; tokens and query strings never reach it */
	void (*log)(const char *line);
};

/* the defaults, with cache_dir from $XDG_CACHE_HOME or $HOME */
TFS_PRIVATE void tfs_remote_config_default(struct tfs_remote_config *c);

/*
 * Parse one remote option ("remote_mem=64M", "insecure", ...) into @c.
 * Returns 1 if it was one (0 if not ours), -EINVAL if its value is bad.
 */
TFS_PRIVATE int tfs_remote_option(struct tfs_remote_config *c, const char *opt,
				  size_t len);

/* Use @c for every remote source opened from now on (copied). */
TFS_PRIVATE int tfs_remote_configure(const struct tfs_remote_config *c);
void tfs_remote_config_free(struct tfs_remote_config *c);

/* Is @path a URL of a scheme we open? */
bool tfs_remote_is_url(const char *path);

/*
 * Open @url as @s (the opener tfs_source_open() uses for URLs): probes the
 * object (size, version), fetches nothing else.  -errno with @d filled:
 * -ENOENT (404), -EACCES (401/403), -EHOSTUNREACH (no connection), -EIO.
 */
TFS_PRIVATE int tfs_remote_open(struct tfs_source *s, const char *url,
				struct tfs_diag *d);

/*
 * The container is loaded and being served (the mount calls it): from now
 * on a page fault that cannot be fetched gets SIGBUS (EFAULT, EIO to the
 * reader) instead of ending the process with status 4.
 */
TFS_PRIVATE void tfs_remote_mounted(void);

/*
 * The library (src/lib): a page fault that cannot be fetched neither ends
 * the process nor raises SIGBUS; the page reads as zeros, and the failure
 * is counted (tfs_remote_faults_failed) for the caller to report instead
 * of what it parsed or read from the mapping.
 */
void tfs_remote_fail_as_zeros(void);

/*
 * How many page faults could not be fetched so far (process-wide), and
 * the last one's line in @msg ("URL: bytes A-B: cannot fetch: REASON").
 */
unsigned long tfs_remote_faults_failed(char *msg, size_t len);

/* the finder tfs_source_url_index() uses: s3:// prefixes, hf:// repos */
TFS_PRIVATE int tfs_remote_find_index(const char *url, char **dir, char **index,
				      struct tfs_diag *d);

/* the lister tfs_image_open_sharded() uses for a directory without index */
TFS_PRIVATE int tfs_remote_list(const char *dir, char ***names, size_t *n,
				struct tfs_diag *d);

/* @url without user info and query (what may be shown); malloc'd */
char *tfs_remote_redact(const char *url);

/*
 * The most cache blocks of one object partly fetched at a time (each an
 * open temporary file of up to 4 MiB); a block started past it is not
 * cached this mount, so its chunks may leave memory once served.
 */
#define TFS_REMOTE_MAX_PARTIAL 64

/*
 * Counters of one remote source, for tests and the benchmark: @partial,
 * blocks partly fetched into their cache files now (at most
 * TFS_REMOTE_MAX_PARTIAL); @held, chunks served and asked to leave memory
 * but kept in it for their block's cache file.
 */
struct tfs_remote_stats {
	uint64_t requests, bytes_fetched, cache_hits, cache_bytes;
	uint64_t partial, held;
};
int tfs_remote_stats(const struct tfs_source *s, struct tfs_remote_stats *st);

#endif
