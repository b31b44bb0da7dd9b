/* SPDX-License-Identifier: MIT */
/*
 * libtensorfs: the public C API (docs/library.md).
 *
 * Open a tensor container (a file, a directory of them, a sharded model,
 * or a URL), list its tensors and read their bytes or values, as the
 * tensorfs mount and CLI show them.  Everything else under
 * include/tensorfs/ is internal and may change; this header is the stable
 * interface of libtensorfs.so.0 (link with `pkg-config --libs tensorfs`).
 *
 * Conventions: functions returning int return 0 (or a count) on success
 * and -errno on failure; the library never prints and never exits.
 * Strings the library returns are NUL-terminated and owned by the model:
 * valid until tfs_close().  Tensors are numbered 0 .. tfs_tensor_count()
 * - 1, sorted bytewise by their path in the mount (the order of
 * `tensorfs ls`).
 *
 * Threads: tfs_init() and tfs_open() may be called from any thread.  On one
 * open model every call but tfs_close() is thread-safe (the model is
 * immutable after open; its read path, decode cache and lazily made
 * metadata have their own locks).  tfs_close() must not race any other
 * call on that model.
 *
 * Errors: a call that fails also leaves one line saying why (the line the
 * tensorfs CLI would print, without its program name) for tfs_errmsg(), per
 * thread: the calling thread's last failure on that model.
 *
 * Process-wide state (tfs_init): the SIGBUS handler that turns a container
 * truncated under a read into -EIO/-EFAULT instead of a crash, and the
 * openers of remote URLs (http(s)://, s3://, hf://: docs/remote.md).
 */
#ifndef TENSORFS_TENSORFS_H
#define TENSORFS_TENSORFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TFS_API __attribute__((visibility("default")))
#else
#define TFS_API
#endif

/* the version of this API; it grows only compatibly within SONAME 0 */
#define TFS_API_VERSION 1 /* 1: tfs_errmsg, tfs_tensor_find_next */

/* an open container (or several, as one tree); opaque */
struct tfs_model;

/* tfs_init() flags */
#define TFS_INIT_NO_SIGBUS 1u /* leave SIGBUS alone (the program's own) */

/*
 * One-time process-wide setup.  @remote_options: the options of remote
 * sources, as `-o` takes them ("remote_mem=64M,cache_dir=/tmp/c,no_cache",
 * docs/remote.md); NULL: the defaults and $TENSORFS_REMOTE_OPTIONS.  Unless
 * TFS_INIT_NO_SIGBUS, installs a process-wide SIGBUS handler (chained by
 * nothing: a program with its own should pass the flag, and then a file
 * truncated while it is read may kill the process).
 *
 * Optional: the first tfs_open() calls tfs_init(0, NULL, ...) itself.  A
 * second call (or one after that first tfs_open) returns -EALREADY and
 * changes nothing.  -EINVAL (a bad remote option, said in @err).
 * Thread-safe.
 *
 * Remote containers: a page of a container that cannot be fetched (while
 * tfs_open() parses its header, or while a tensor is read) is an error of
 * that call (-EIO, -ETIMEDOUT, -ESTALE; tfs_errmsg() says which bytes and
 * why), never a signal.
 */
TFS_API int tfs_init(unsigned flags, const char *remote_options, char *err,
		     size_t errlen);

/* tfs_open_options.flags */
#define TFS_OPEN_FLAT 1u	  /* every tensor at the root, unsplit */
#define TFS_OPEN_VERIFY_OFF 2u	  /* never check digests on reads */
#define TFS_OPEN_VERIFY_ALWAYS 4u /* check digests on every read */

struct tfs_open_options {
	uint32_t size;	     /* sizeof(struct tfs_open_options) */
	uint32_t flags;	     /* TFS_OPEN_* */
	uint64_t cache_size; /* decoded bytes kept; 0: the default */
};

/*
 * Open @path: a container file, a directory (a sharded model is one tree;
 * otherwise every container under it is a directory, those that fail to
 * load left out), or a URL.  @opts may be NULL (the defaults).  On failure
 * *@out is NULL, a one-line message goes to @err (when @errlen > 0) and
 * -errno is returned: -ENOENT, -EACCES, -EBADMSG (malformed), -ENOTSUP,
 * -ENOEXEC (not a container we know), -E2BIG, -ENOMEM, -EIO.
 */
TFS_API int tfs_open(const char *path, const struct tfs_open_options *opts,
		     struct tfs_model **out, char *err, size_t errlen);

/*
 * Why the calling thread's last failed call on @m failed: one line, as the
 * CLI prints it ("model.safetensors: tensor 'w': digest mismatch: ...");
 * @m NULL: its last failed tfs_open().  "" when that thread has none.
 * Valid until the thread's next call into the library.  Since API 1.
 */
TFS_API const char *tfs_errmsg(const struct tfs_model *m);

/* Close @m (NULL is ignored); pointers it gave become invalid. */
TFS_API void tfs_close(struct tfs_model *m);

/* the reader's short name ("safetensors", "gguf"; "multi" for several) */
TFS_API const char *tfs_format(const struct tfs_model *m);

/* the number of tensors */
TFS_API size_t tfs_tensor_count(const struct tfs_model *m);

struct tfs_tensor_info {
	const char *name; /* stored name: any bytes, @name_len of them */
	size_t name_len;
	const char *path;  /* its path in the mount ("/"-separated) */
	const char *dtype; /* "float32", "bfloat16", "q4_0", "void12"... */
	const uint64_t *shape;
	uint32_t ndim;
	uint32_t itemsize;	/* bytes per element; 0: sub-byte or blocks */
	uint64_t nbytes;	/* the tensor's bytes (decoded) */
	uint64_t count;		/* elements (0 for opaque dtypes) */
	const char *byte_order; /* "little" or "big" */
	const char *order;	/* "C" (row-major) or "F" (column-major) */
	/* a component of a group: its role and the group's stored name */
	const char *role; /* NULL when not a component */
	const char *group;
	size_t group_len;
	/* 1: the bytes lie raw in a local mapping (tfs_tensor_data) */
	int raw;
	/* 1: values can be read as float32 (tfs_read_float32) */
	int numeric;
};

/*
 * Describe tensor @index into @info, whose size is @size (pass
 * sizeof(*info): fields added later are not written for an older
 * caller).  -ENOENT past the end, -EINVAL for a @size too small.
 * The pointers are valid until tfs_close().
 */
TFS_API int tfs_tensor_info(const struct tfs_model *m, size_t index,
			    struct tfs_tensor_info *info, size_t size);

/*
 * The index of the tensor whose path in the mount, or else stored name
 * (@len bytes), is @name; -ENOENT.  Both are looked up in O(log n) and
 * O(1); of several tensors with that stored name (a directory of several
 * containers), the first in path order.
 */
TFS_API ssize_t tfs_tensor_find(const struct tfs_model *m, const char *name,
				size_t len);

/*
 * The next tensor after @index with the same stored name, in path order,
 * or -ENOENT: with tfs_tensor_find(), every tensor of one name.  Since
 * API 1.
 */
TFS_API ssize_t tfs_tensor_find_next(const struct tfs_model *m, size_t index);

/*
 * Copy up to @len bytes of tensor @index from byte @off into @buf (its
 * own bytes in its stored dtype, decoded when compressed): the number
 * copied (short only at the end), or -ENOENT, -EIO (a digest mismatch,
 * corrupt data, or the file no longer holds the bytes), -ENOMEM.
 */
TFS_API ssize_t tfs_read(struct tfs_model *m, size_t index, uint64_t off,
			 void *buf, size_t len);

/*
 * The tensor's bytes where they lie raw in a local mapping (no copy):
 * nbytes of them, valid until tfs_close(); NULL when they do not (they are
 * compressed, scattered, remote, empty, or failed their digest: use
 * tfs_read()).  The digest, if any, is checked as for a read first.  A
 * container truncated by another process while this pointer is used
 * raises SIGBUS in the caller.
 */
TFS_API const void *tfs_tensor_data(struct tfs_model *m, size_t index);

/*
 * Elements [@first, @first + @count) of tensor @index, in stored order, as
 * float32 values at @out: any numeric dtype (integers, bool, float16,
 * bfloat16, float8 kinds, float4, ggml's quantized blocks, big-endian
 * data; complex as its magnitude).  0, or -ENOTSUP (not numeric), -ERANGE
 * (past the end), -EIO, -ENOMEM, -ENOENT.
 */
TFS_API int tfs_read_float32(struct tfs_model *m, size_t index, uint64_t first,
			     size_t count, float *out);

/*
 * What `tensorfs verify` checks for tensor @index (its stored range is in
 * the file, its digest matches, compressed data decodes to its size), in
 * one pass with bounded memory.  0 good, 1 not checkable here (@msg says
 * why), -EBADMSG (it fails: @msg says why), -EIO, -ENOMEM, -ENOENT.
 */
TFS_API int tfs_verify(struct tfs_model *m, size_t index, char *msg,
		       size_t msglen);

/*
 * Extended attribute @name ("user.tensorfs.dtype", or just "dtype") of
 * the node at @path in the mount ("" for the root, a tensor's
 * tfs_tensor_info.path, a group's directory): as getxattr(2), its length,
 * its bytes copied to @buf when @size > 0 (no NUL added); -ENODATA,
 * -ENOENT (no such path), -ERANGE (@size too small).
 */
TFS_API ssize_t tfs_getxattr(const struct tfs_model *m, const char *path,
			     const char *name, void *buf, size_t size);

/* as listxattr(2): the names NUL-terminated, sorted, at @path */
TFS_API ssize_t tfs_listxattr(const struct tfs_model *m, const char *path,
			      char *buf, size_t size);

/*
 * .tensorfs/metadata.json: the container's metadata as JSON text, NUL-
 * terminated, length in *@len (may be NULL); "{}"-like when it has none.
 * Made on the first call (a big vocabulary is not JSON at open), then
 * kept.  NULL only when out of memory.
 */
TFS_API const char *tfs_metadata_json(struct tfs_model *m, size_t *len);

/* "0.1.0" */
TFS_API const char *tfs_version(void);

#ifdef __cplusplus
}
#endif

#endif
