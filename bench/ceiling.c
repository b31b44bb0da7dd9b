// SPDX-License-Identifier: MIT
/*
 * The FUSE ceiling (a benchmark, not part of tensorfs): the least a libfuse
 * low-level server can do to serve one file, so that a read through
 * tensorfs can be compared with what FUSE itself delivers on this kernel
 * and libfuse.  One in-memory buffer of SIZE MiB (a memfd, filled with a
 * pattern before mounting) is served read-only as MOUNTPOINT/data with
 * tensorfs's mount and file options: ro, default_permissions, libfuse's
 * default max_read and max_pages, keep_cache on open, no
 * FUSE_CAP_AUTO_INVAL_DATA, multi-threaded loop with libfuse's default
 * thread counts (the bench script sets the mount's read_ahead_kb to what
 * tensorfs sets: 1024).
 *
 *   ceiling [-s] [-c] [-r MODE] [-f FILE] SIZE_MIB MOUNTPOINT
 *     -s       single-threaded loop (tensorfs -s)
 *     -c       clone_fd: one /dev/fuse fd per worker thread
 *     -r buf   fuse_reply_buf from a mapping of the memfd (tensorfs's way)
 *     -r data  fuse_reply_data from the memfd, splice not negotiated
 *              (libfuse reads the bytes into its buffer, then writes)
 *     -r splice       same with FUSE_CAP_SPLICE_WRITE (pages spliced)
 *     -r splice-move  same with FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE
 *     -f FILE  serve the last SIZE_MIB MiB of FILE (a raw tensor at the end
 *              of a safetensors file) from a mapping of it, not prefaulted,
 *              as tensorfs does, instead of a memfd (-r buf only)
 *
 * It daemonizes once mounted, like tensorfs; fusermount3 -u ends it.
 */
#define FUSE_USE_VERSION 312
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define DATA_INO 2
#define TIMEOUT 86400.0

enum reply_mode { REPLY_BUF, REPLY_DATA, REPLY_SPLICE, REPLY_SPLICE_MOVE };

struct ceiling {
	int fd;
	const char *map;
	size_t size;
	enum reply_mode mode;
};

static struct ceiling *ceiling_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static void fill_attr(const struct ceiling *c, fuse_ino_t ino, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = getuid();
	st->st_gid = getgid();
	if (ino == FUSE_ROOT_ID) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
	} else {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = (off_t)c->size;
		st->st_blocks = (blkcnt_t)((c->size + 511) / 512);
	}
}

static void ceiling_init(void *userdata, struct fuse_conn_info *conn)
{
	struct ceiling *c = userdata;

	/* as tensorfs: the bytes never change */
	conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
	if (c->mode >= REPLY_SPLICE && (conn->capable & FUSE_CAP_SPLICE_WRITE))
		conn->want |= FUSE_CAP_SPLICE_WRITE;
	if (c->mode == REPLY_SPLICE_MOVE &&
	    (conn->capable & FUSE_CAP_SPLICE_MOVE))
		conn->want |= FUSE_CAP_SPLICE_MOVE;
}

static void ceiling_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;

	if (parent != FUSE_ROOT_ID || strcmp(name, "data") != 0) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	memset(&e, 0, sizeof(e));
	e.ino = DATA_INO;
	e.attr_timeout = TIMEOUT;
	e.entry_timeout = TIMEOUT;
	fill_attr(ceiling_of(req), DATA_INO, &e.attr);
	fuse_reply_entry(req, &e);
}

static void ceiling_getattr(fuse_req_t req, fuse_ino_t ino,
			    struct fuse_file_info *fi)
{
	struct stat st;

	(void)fi;
	if (ino != FUSE_ROOT_ID && ino != DATA_INO) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_attr(ceiling_of(req), ino, &st);
	fuse_reply_attr(req, &st, TIMEOUT);
}

static void ceiling_open(fuse_req_t req, fuse_ino_t ino,
			 struct fuse_file_info *fi)
{
	if (ino != DATA_INO) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EROFS);
		return;
	}
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

static void ceiling_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			 struct fuse_file_info *fi)
{
	struct ceiling *c = ceiling_of(req);
	struct fuse_bufvec bv = FUSE_BUFVEC_INIT(0);

	(void)ino;
	(void)fi;
	if (off < 0 || (size_t)off >= c->size) {
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	if (size > c->size - (size_t)off)
		size = c->size - (size_t)off;
	if (c->mode == REPLY_BUF) {
		fuse_reply_buf(req, c->map + off, size);
		return;
	}
	bv.buf[0].size = size;
	bv.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	bv.buf[0].fd = c->fd;
	bv.buf[0].pos = off;
	fuse_reply_data(req, &bv, FUSE_BUF_SPLICE_MOVE);
}

static void ceiling_readdir(fuse_req_t req, fuse_ino_t ino, size_t size,
			    off_t off, struct fuse_file_info *fi)
{
	static const char *const names[] = {".", "..", "data"};
	static const fuse_ino_t inos[] = {FUSE_ROOT_ID, FUSE_ROOT_ID, DATA_INO};
	char buf[512];
	size_t pos = 0, n;
	struct stat st;

	(void)fi;
	if (ino != FUSE_ROOT_ID) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	for (; off >= 0 && off < 3; off++) {
		fill_attr(ceiling_of(req), inos[off], &st);
		n = fuse_add_direntry(req, buf + pos, sizeof(buf) - pos,
				      names[off], &st, off + 1);
		if (n > sizeof(buf) - pos || pos + n > size)
			break;
		pos += n;
	}
	fuse_reply_buf(req, buf, pos);
}

static const struct fuse_lowlevel_ops ceiling_ops = {
	.init = ceiling_init,
	.lookup = ceiling_lookup,
	.getattr = ceiling_getattr,
	.open = ceiling_open,
	.read = ceiling_read,
	.readdir = ceiling_readdir,
};

/* a memfd of @size bytes holding a pattern, mapped read-only into @c */
static int make_buffer(struct ceiling *c, size_t size)
{
	size_t i;
	char *w;

	c->size = size;
	c->fd = memfd_create("ceiling", 0);
	if (c->fd < 0 || ftruncate(c->fd, (off_t)size))
		return -errno;
	w = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, 0);
	if (w == MAP_FAILED)
		return -errno;
	for (i = 0; i < size; i++)
		w[i] = (char)(i * 131 + (i >> 12));
	c->map = w;
	return 0;
}

/* the last @size bytes of @path, mapped read-only into @c */
static int map_file(struct ceiling *c, const char *path, size_t size)
{
	struct stat st;
	char *m;

	c->size = size;
	c->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (c->fd < 0 || fstat(c->fd, &st))
		return -errno;
	if ((uint64_t)st.st_size < size)
		return -EINVAL;
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, c->fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	c->map = m + ((size_t)st.st_size - size);
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: ceiling [-s] [-c] [-r buf|data|splice|"
			"splice-move] [-f FILE] SIZE_MIB MOUNTPOINT\n");
	return 2;
}

int main(int argc, char **argv)
{
	static const char *const modes[] = {"buf", "data", "splice",
					    "splice-move"};
	struct fuse_args fa = FUSE_ARGS_INIT(0, NULL);
	struct fuse_loop_config *lc = NULL;
	struct fuse_session *se = NULL;
	struct ceiling c = {.mode = REPLY_BUF};
	const char *file = NULL;
	int single = 0, clone_fd = 0, opt, ret = 1;
	unsigned long mib;
	size_t m;

	while ((opt = getopt(argc, argv, "scr:f:")) != -1) {
		if (opt == 's') {
			single = 1;
		} else if (opt == 'c') {
			clone_fd = 1;
		} else if (opt == 'f') {
			file = optarg;
		} else if (opt == 'r') {
			for (m = 0; m < 4 && strcmp(optarg, modes[m]); m++)
				;
			if (m == 4)
				return usage();
			c.mode = (enum reply_mode)m;
		} else {
			return usage();
		}
	}
	if (argc - optind != 2 || (file && c.mode != REPLY_BUF))
		return usage();
	mib = strtoul(argv[optind], NULL, 10);
	if (mib == 0 || mib > (1ul << 20))
		return usage();
	if (file ? map_file(&c, file, (size_t)mib << 20)
		 : make_buffer(&c, (size_t)mib << 20)) {
		perror("ceiling: buffer");
		return 1;
	}
	if (fuse_opt_add_arg(&fa, "ceiling") || fuse_opt_add_arg(&fa, "-o") ||
	    fuse_opt_add_arg(&fa, "ro,default_permissions,subtype=ceiling"))
		goto out;
	se = fuse_session_new(&fa, &ceiling_ops, sizeof(ceiling_ops), &c);
	if (!se)
		goto out;
	if (fuse_set_signal_handlers(se) != 0)
		goto out;
	if (fuse_session_mount(se, argv[optind + 1]) != 0)
		goto out_signals;
	if (fuse_daemonize(0) != 0)
		goto out_unmount;
	if (single) {
		ret = fuse_session_loop(se);
	} else {
		lc = fuse_loop_cfg_create();
		if (!lc)
			goto out_unmount;
		fuse_loop_cfg_set_clone_fd(lc, clone_fd);
		ret = fuse_session_loop_mt(se, lc);
		fuse_loop_cfg_destroy(lc);
	}
out_unmount:
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out:
	if (se)
		fuse_session_destroy(se);
	fuse_opt_free_args(&fa);
	return ret ? 1 : 0;
}
