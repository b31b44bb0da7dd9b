/* SPDX-License-Identifier: MIT */
/*
 * A container's bytes: a read-only mapping of a file, or a caller's buffer.
 *
 * The file is opened O_RDONLY and mapped PROT_READ/MAP_SHARED; it is never
 * written.  data/size stay valid until tfs_source_close().  A source is
 * immutable after open and may be read from any thread.
 *
 * A mapped file can shrink under us (another process truncates it): touching
 * a page past the new end raises SIGBUS.  Two defences:
 *   - the daemon re-checks the live size with tfs_source_live_range_ok()
 *     before it hands a range to the kernel (which then copies it; a page
 *     that vanishes during that copy fails the request with EIO in the
 *     kernel, no signal);
 *   - code that reads the mapping itself for a long time (zstd decoding,
 *     digests) runs inside tfs_source_guard(), which turns a SIGBUS into
 *     -EFAULT once tfs_source_catch_sigbus() installed the handler.
 */
#ifndef TENSORFS_SOURCE_H
#define TENSORFS_SOURCE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "core/abi.h"

struct tfs_diag;

/*
 * A source whose bytes are not all there at open (a remote object,
 * docs/remote.md).  Its data still spans the whole container, but a range
 * must be fetched before code outside its parser reads it:
 * tfs_source_live_range_ok() and tfs_source_fetch() do that.
 */
struct tfs_source_ops {
	/* make [off, off + len) present: 0 or -errno (-ESTALE, -EAGAIN) */
	int (*fetch)(void *impl, uint64_t off, uint64_t len);
	/* as tfs_source_drop_cache() */
	void (*drop)(void *impl, uint64_t off, uint64_t len);
	/*
	 * Optional: as fetch, for a read of [off, off + len) inside one
	 * tensor whose stored bytes are [ext_off, ext_off + ext_len): what
	 * a prefetch may aim at (the rest of that tensor; past it only when
	 * reads move on in file order).  With unpin: 0 pins the range (a
	 * drop leaves it) until unpin() of the same range.
	 */
	int (*fetch_in)(void *impl, uint64_t off, uint64_t len,
			uint64_t ext_off, uint64_t ext_len);
	void (*close)(void *impl);
	/* optional: the end of a read fetch_in() pinned */
	void (*unpin)(void *impl, uint64_t off, uint64_t len);
};

struct tfs_source {
	const uint8_t *data;   /* first byte, NULL when size == 0 */
	uint64_t size;	       /* bytes at open time */
	int fd;		       /* -1 for a memory source */
	void *map;	       /* the mapping, NULL for a memory source */
	struct timespec mtime; /* the container's mtime (0 for memory) */
	char *path;	       /* owned copy of the path, or NULL */
	const struct tfs_source_ops *ops; /* NULL: a file or memory */
	void *impl;			  /* the ops' object */
	uint64_t base;	  /* file offset of data[0] (a slice), else 0 */
	uint64_t map_off; /* file offset of the mapping's first byte */
	size_t map_len;	  /* the mapping's length */
	/*
	 * The same bytes mapped again with MADV_RANDOM, which reads are
	 * served from (tfs_source_serve): a fault there never reads around
	 * into the pages of other tensors, which would stay cached after
	 * the mount dropped its own; NULL: serve from @map.
	 */
	void *serve_map;
};

/*
 * The opener of URLs ("scheme://..."): tfs_source_open() hands them to it.
 * Set once by the program (src/remote); without one a URL is refused.
 */
typedef int (*tfs_source_url_opener)(struct tfs_source *s, const char *url,
				     struct tfs_diag *d);
TFS_PRIVATE void tfs_source_set_url_opener(tfs_source_url_opener open);

/*
 * The finder of remote directories: a URL naming a prefix or a repository
 * (a remote directory), perhaps holding a sharded model's index.  Returns 1
 * with *@dir (a URL the index's file names are joined to with '/') and
 * *@index (its name, or NULL when there is none), both malloc'd; 0 when
 * @url names one object; -errno with @d filled.
 */
typedef int (*tfs_source_url_index_finder)(const char *url, char **dir,
					   char **index, struct tfs_diag *d);
TFS_PRIVATE void
tfs_source_set_url_index_finder(tfs_source_url_index_finder find);
int tfs_source_url_index(const char *url, char **dir, char **index,
			 struct tfs_diag *d);

/* does @path look like a URL ("scheme://")? */
bool tfs_source_is_url(const char *path);

/*
 * Does @src have a path (a file or a URL) ending with @suffix (".onnx",
 * "model.json")?  What a probe asks of a container's name; false for a
 * container read from memory.
 */
bool tfs_source_name_ends(const struct tfs_source *src, const char *suffix);

/*
 * Open and map @path read-only (a URL through the URL opener).  On failure
 * fills @d and returns -errno.
 */
int tfs_source_open(struct tfs_source *s, const char *path, struct tfs_diag *d);

/*
 * Open @name, a file beside @of ("model.onnx_data"), relative to @of's
 * directory: a local directory (openat2 with RESOLVE_BENEATH: no absolute
 * name, no "..", no symlink out of it) or a remote one (the URL's path up
 * to its last '/').  Absolute names, backslashes, empty and ".." components
 * are refused (-EPERM) naming @name; a missing file is -ENOENT.
 */
int tfs_source_open_companion(struct tfs_source *s, const struct tfs_source *of,
			      const char *name, struct tfs_diag *d);

/*
 * A window [@off, +@len) of @parent as a source of its own (a container
 * inside an archive), named "PARENT/@name", its @base @parent's plus @off:
 *   - of a file: a mapping of its own of the same file, from the page
 *     holding @base (so the page cache, drops and read-ahead work on the
 *     file's pages as for the parent); @parent may be closed first;
 *   - of a memory source: @parent's bytes, which must outlive it;
 *   - of a source with ops (a remote object, or a slice of one): @parent's
 *     bytes and ops with @off added (fetch, fetch_in, drop, unpin), going
 *     straight to the root object, which the slice BORROWS: its owner
 *     closes every slice of it first (the builder pops companions last
 *     first; an image closes its sources last first, and slices always
 *     come after what they are slices of).
 */
int tfs_source_slice(struct tfs_source *s, const struct tfs_source *parent,
		     uint64_t off, uint64_t len, const char *name,
		     struct tfs_diag *d);

/* Wrap a caller-owned buffer (tests, fuzzing); the buffer must outlive @s. */
void tfs_source_init_memory(struct tfs_source *s, const void *data,
			    uint64_t size);

void tfs_source_close(struct tfs_source *s);

/*
 * Bytes [@off, @off + @len) of @s have been copied somewhere that keeps
 * them (the mount's page cache): let the kernel drop the container's own
 * cached pages wholly inside, so they are not cached twice.  Best effort;
 * a memory source is ignored.  The kernel drops only whole folios (large
 * ones on ext4/xfs), so ranges of several MiB work, single pages may not.
 */
void tfs_source_drop_cache(const struct tfs_source *s, uint64_t off,
			   uint64_t len);

/* true when [off, off + len) lies inside the source (overflow-safe) */
bool tfs_source_range_ok(const struct tfs_source *s, uint64_t off,
			 uint64_t len);

/*
 * Is [off, off + len) still backed by the file right now?  fstat()s the file
 * (memory sources always answer yes; a remote source fetches the range
 * first, and answers whether that worked).  Thread-safe.
 */
bool tfs_source_live_range_ok(const struct tfs_source *s, uint64_t off,
			      uint64_t len);

/* as tfs_source_live_range_ok(), but 0 or -errno (-EIO for a file) */
int tfs_source_fetch(const struct tfs_source *s, uint64_t off, uint64_t len);

/*
 * The same for a read inside one tensor whose stored bytes are
 * [@ext_off, +@ext_len) of @s: a remote source prefetches the rest of that
 * tensor, and further only while reads move on in file order.  On 0 the
 * range is pinned: a drop (tfs_source_drop_cache) leaves its bytes until
 * tfs_source_unpin() of the same range, once they are copied.
 */
int tfs_source_fetch_in(const struct tfs_source *s, uint64_t off, uint64_t len,
			uint64_t ext_off, uint64_t ext_len);
void tfs_source_unpin(const struct tfs_source *s, uint64_t off, uint64_t len);

/*
 * The bytes [off, off + len) of @s to copy into a reply, read ahead only
 * up to @limit (the end of the tensor's extent): the kernel's own
 * readahead around a fault would bring in the neighbours' pages, which
 * then stay cached beside the mount's copy.  The range must have been
 * fetched.  Thread-safe.
 */
const uint8_t *tfs_source_serve(const struct tfs_source *s, uint64_t off,
				size_t len, uint64_t limit);

/*
 * Install the process-wide SIGBUS handler that tfs_source_guard() needs.
 * Call once, early (main does).  0 or -errno.
 */
TFS_PRIVATE int tfs_source_catch_sigbus(void);

/*
 * Run @fn(@arg).  If it touches a mapped page whose file bytes are gone
 * (SIGBUS), it is abandoned at that point and -EFAULT is returned instead.
 * @fn must only read memory and compute: hold no lock, allocate nothing
 * that an abandoned run would leak, and leave any state it updates
 * unusable for the caller to discard.  Without the handler installed this
 * is a plain call.  Thread-safe; nests.
 */
int tfs_source_guard(int (*fn)(void *arg), void *arg);

#endif
