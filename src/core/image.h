/* SPDX-License-Identifier: MIT */
/*
 * An image: an opened container, its reader and its tree.  The daemon and
 * the CLI both work on one.
 *
 * tfs_image_read() returns a view of a file's bytes: for raw tensors a
 * pointer into the mapping (no copy), for in-memory files a pointer into
 * the tree, for zstd tensors a pointer into a decoded buffer of the decode
 * cache (decode_cache.h), pinned until tfs_view_release().  Reads are
 * thread-safe.
 *
 * zstd tensors.  A tensor whose decoded size fits in the cache budget is
 * decoded into one buffer by a background thread, which runs up to 64 MiB
 * ahead of the furthest byte asked for; a read waits only until the bytes
 * it needs are decoded (and the stored bytes verified), and concurrent
 * readers of one tensor share one decode.  A larger tensor is decoded by
 * the reading threads as a stream of fixed windows (budget / 8, between
 * 64 KiB and 8 MiB) that are cached separately; reading backwards past an
 * evicted window restarts the stream from the start.  Memory stays within
 * the budget apart from what concurrent reads pin.  Decoded output must be
 * exactly the expected size, else the read fails.  tfs_image_close() waits
 * for the background threads.
 *
 * Digests (tfs_tensor.digest, over the stored bytes).  verify=first (the
 * default) checks a component the first time its stored bytes are needed
 * (raw: the first read; zstd: before the first decode); verify=always
 * checks every time they are read: on every read of a raw tensor (the
 * whole component is hashed per read, a full pass each time: a debugging
 * aid, not for big files) and every time a zstd tensor is (re)decoded;
 * verify=off never.  A mismatch or a decode failure makes that tensor's
 * reads fail with -EIO from then on, and is reported once through the
 * options' log callback.  Unknown digest algorithms are not checked.
 */
#ifndef TENSORFS_IMAGE_H
#define TENSORFS_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/abi.h"
#include "core/builder.h"
#include "core/digest.h"
#include "core/source.h"
#include "core/tree.h"

struct tfs_diag;
struct tfs_format;
struct tfs_read_state;

/* A container of a directory mount left out, and why (.tensorfs/errors.json) */
struct tfs_skipped {
	char *path; /* relative to the mounted directory */
	char *why;  /* one line: "FORMAT: MESSAGE (at byte offset N)" */
	/* the reader's -errno: -ENOTSUP well formed but not supported;
	 * others malformed or unreadable */
	int err;
};

struct tfs_image {
	struct tfs_source *srcs; /* the containers; tensor->source indexes */
	uint32_t nsrcs;
	char *path; /* what was opened (a file or a directory), or NULL */
	struct tfs_tree *tree;
	const struct tfs_format *format; /* the reader; NULL for several */
	struct tfs_skipped *skipped;	 /* directory mounts */
	uint32_t nskipped;
	/* srcs[0, ncontainers) are the containers, then their companions */
	uint32_t ncontainers;
	struct tfs_read_state *rs; /* private: the read path's state */
};

/* the container holding tensor record @x */
static inline const struct tfs_source *
tfs_image_source(const struct tfs_image *img, const struct tfs_tensor *x)
{
	return &img->srcs[x->source];
}

struct tfs_view {
	const void *data;
	size_t len;
	void *pin;    /* private: what to release */
	int pin_kind; /* private */
};

enum tfs_verify_mode {
	TFS_VERIFY_FIRST = 0, /* the first time a component is read */
	TFS_VERIFY_OFF,
	TFS_VERIFY_ALWAYS, /* every time the stored bytes are read */
};

#define TFS_CACHE_SIZE_MIN (1ull << 20)

struct tfs_image_options {
	uint64_t cache_size; /* decoded bytes kept; 0: the default */
	enum tfs_verify_mode verify;
	/*
	 * Integrity failures seen by reads (digest mismatch, corrupt or
	 * wrongly sized zstd data), one line without a newline naming the
	 * tensor; NULL: not reported.  Called from reader threads.
	 */
	void (*log)(void *arg, const char *line);
	/*
	 * The same failure as data, once per tensor record (@tensor indexes
	 * tree->tensors; @what says what failed); NULL: not reported.
	 */
	void (*failed)(void *arg, uint32_t tensor, const char *what);
	void *log_arg;
	/*
	 * Drop a compressed tensor's input from the page cache once a
	 * decode is done with it (the mount, unless -o keep_source_cache):
	 * random reads of a zstd model kept every input cached and mapped
	 */
	bool drop_input;
};

/* the decoded-bytes cache (src/core/decode_cache.h) */
struct tfs_cache_stats {
	uint64_t budget;
	uint64_t bytes; /* held now (including pinned) */
	uint64_t peak_bytes;
	uint64_t entries;
	uint64_t hits;	 /* get/find that found an entry */
	uint64_t misses; /* get that created one */
	uint64_t evictions;
};

struct tfs_image_stats {
	struct tfs_cache_stats cache;
	uint64_t decodes; /* decode passes started */
	uint64_t decoded_bytes;
	uint64_t digest_checks; /* full hashes of a component's bytes */
	uint64_t digest_failures;
};

/*
 * Open @path, detect its format, load and validate it.  A directory is
 * opened with tfs_image_open_dir().
 */
TFS_PRIVATE int tfs_image_open(struct tfs_image **out, const char *path,
			       const struct tfs_build_options *opts,
			       struct tfs_diag *d);

/*
 * Open every container under directory @dir (recursively; symlinks to files
 * followed, symlinked directories followed once, never in a cycle): each
 * becomes the directory of its relative path less its final extension
 * (the full file name where that collides).  Files no reader claims are not
 * shown; a container that fails to load is left out and listed in
 * img->skipped and .tensorfs/errors.json.  -ENOEXEC (with @d) when no
 * container loads.
 */
int tfs_image_open_dir(struct tfs_image **out, const char *dir,
		       const struct tfs_build_options *opts,
		       struct tfs_diag *d);

/*
 * The lister of remote directories (set once by the program, src/remote):
 * every file under @dir, a URL the finder of tfs_source_url_index() gave
 * without an index, as sorted malloc'd paths relative to it.  Such a
 * directory then mounts as tfs_image_open_dir() mounts a local one.
 */
typedef int (*tfs_image_url_lister)(const char *dir, char ***names, size_t *n,
				    struct tfs_diag *d);
TFS_PRIVATE void tfs_image_set_url_lister(tfs_image_url_lister list);

/*
 * Several files in one mount, each as a directory named by its file name
 * less the extension.  Unlike a directory, every file must load: the first
 * failure fails the open (the diagnostic names the file).
 */
TFS_PRIVATE int tfs_image_open_files(struct tfs_image **out,
				     const char *const *paths, size_t n,
				     const struct tfs_build_options *opts,
				     struct tfs_diag *d);

/*
 * Load an already-initialised source (ownership of *src passes to the
 * image, also on failure).
 */
int tfs_image_load(struct tfs_image **out, struct tfs_source *src,
		   const struct tfs_build_options *opts, struct tfs_diag *d);

/*
 * The same with a given reader instead of detection (@format NULL:
 * detect).  For tests and fuzzing: a reader may be handed bytes its probe
 * would not claim.
 */
int tfs_image_load_format(struct tfs_image **out, struct tfs_source *src,
			  const struct tfs_format *format,
			  const struct tfs_build_options *opts,
			  struct tfs_diag *d);

TFS_PRIVATE void tfs_image_close(struct tfs_image *img);

/*
 * Change the read options (cache size, verify mode, log) of a loaded image;
 * call before the first read.  -EINVAL for a cache size below
 * TFS_CACHE_SIZE_MIN.
 */
TFS_PRIVATE int tfs_image_configure(struct tfs_image *img,
				    const struct tfs_image_options *opts);

/*
 * The default cache size: 1 GiB, or a quarter of the memory we may use
 * when less: of the RAM, and of our memory cgroup's limit (a systemd
 * MemoryMax=, a container's limit), which the kernel enforces by killing
 * the daemon.
 */
uint64_t tfs_default_cache_size(void);

/*
 * The memory limit of the cgroup @proc_cgroup (a /proc/PID/cgroup file)
 * names, under cgroup file systems mounted at @root (/sys/fs/cgroup): the
 * smallest memory.max from it up to the root (v2), or its
 * hierarchical_memory_limit (v1's memory controller); UINT64_MAX when none
 * is set or readable.
 */
uint64_t tfs_cgroup_memory_limit(const char *proc_cgroup, const char *root);

/*
 * "1073741824", "512M", "2G", "64KiB", "1.5G": a byte count with an
 * optional binary suffix (K, M, G, T, with or without "iB"/"B").
 * -EINVAL when malformed, -ERANGE when above 2^63.
 */
TFS_PRIVATE int tfs_parse_size(const char *s, uint64_t *out);
/* "off", "first", "always"; -EINVAL otherwise */
TFS_PRIVATE int tfs_parse_verify_mode(const char *s, enum tfs_verify_mode *out);
const char *tfs_verify_mode_name(enum tfs_verify_mode m);

void tfs_image_get_stats(struct tfs_image *img, struct tfs_image_stats *st);

/*
 * View up to @len bytes of regular file @node from @off.  A read at or past
 * the end gives an empty view.  Returns 0, or -EISDIR, -EIO (the bytes are
 * no longer backed by the file), -ENOMEM.
 */
TFS_PRIVATE int tfs_image_read(struct tfs_image *img, uint32_t node,
			       uint64_t off, size_t len, struct tfs_view *v);
TFS_PRIVATE void tfs_view_release(struct tfs_image *img, struct tfs_view *v);

/*
 * @v's bytes stay valid after its release while the image is open: a
 * pointer into a container (a remote one's too: only the mount drops
 * served bytes) or into the tree, not a buffer or a cache entry.
 */
bool tfs_view_stays(const struct tfs_view *v);

/*
 * View up to @len bytes from @off of tensor record @tensor's own bytes
 * (decoded, in its stored dtype), without the file's views (-o npy's
 * header, -o as=float32): what values.h decodes.  Same returns as
 * tfs_image_read().
 */
TFS_PRIVATE int tfs_image_read_tensor(struct tfs_image *img, uint32_t tensor,
				      uint64_t off, size_t len,
				      struct tfs_view *v);

/*
 * View up to @len bytes from @off of what record @tensor's file shows after
 * its prefix: its own bytes, or the view's that shows it (-o as=float32's
 * converted elements, through the view's read_tensor hook).  What the
 * export copies.  Same returns as tfs_image_read().
 */
int tfs_image_read_shown(struct tfs_image *img, uint32_t tensor, uint64_t off,
			 size_t len, struct tfs_view *v);

/*
 * Bytes [@off, @off + @len) of regular file @node have just been copied
 * into the mount's page cache.  When the file's bytes are the container's
 * own (raw, served from the mapping), drop the container's cached pages
 * that the file has served, so reading a model through the mount does not
 * cache it twice: in windows of TFS_DROP_WINDOW as a reader moves on, and
 * the whole tensor once its end is served (then the window of any read
 * that finishes later: the kernel's readahead sends several at once).
 */
#define TFS_DROP_WINDOW (64ull << 20)
TFS_PRIVATE void tfs_image_drop_source_cache(struct tfs_image *img,
					     uint32_t node, uint64_t off,
					     uint64_t len);

/*
 * true when regular file @node failed an integrity check (digest mismatch,
 * corrupt or wrongly sized zstd data): its reads give -EIO for good and the
 * reason was reported once through the log callback.  A -EIO from a node
 * for which this is false means the container no longer holds the bytes.
 */
TFS_PRIVATE bool tfs_image_node_failed(const struct tfs_image *img,
				       uint32_t node);

/*
 * A view's own xattrs (a preview's value scale, src/core/view_ops.h) beside
 * the tree's: getxattr of @name, -ENODATA when it has none of that name;
 * listxattr: its names appended to the @used bytes already in @buf (size
 * 0 asks for the length), @used when it has none.
 */
TFS_PRIVATE ssize_t tfs_image_view_getxattr(struct tfs_image *img,
					    uint32_t node, const char *name,
					    char *buf, size_t size);
TFS_PRIVATE ssize_t tfs_image_view_listxattr(struct tfs_image *img,
					     uint32_t node, char *buf,
					     size_t size, size_t used);

/*
 * What `tensorfs verify` does for one tensor record (img->tree->tensors
 * index): the stored range is still in the file, its digest (any known
 * algorithm) matches, and a zstd component decodes to exactly its size.
 * A file the reader marked unreadable fails with its reason (-EBADMSG)
 * when that is a fault of the container, else it is skipped.
 * It runs in one pass over the stored bytes with bounded memory, whatever
 * the verify mode, and leaves the cache alone.  @progress (may be NULL) is
 * called now and then with the stored bytes of this tensor done so far.
 */
struct tfs_check_result {
	int err;      /* 0, -EBADMSG (mismatch, bad data), -EIO */
	bool skipped; /* not checkable here (tfs_tensor.unreadable, not a
			 fault): err is 0, msg says why */
	enum tfs_digest_alg digest; /* the digest's algorithm (NONE: none) */
	bool digest_checked;
	char msg[256]; /* why it failed, or "" */
};

TFS_PRIVATE int
tfs_image_check_tensor(struct tfs_image *img, uint32_t tensor,
		       struct tfs_check_result *r,
		       void (*progress)(void *arg, uint64_t done), void *arg);

#endif
