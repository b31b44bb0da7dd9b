// SPDX-License-Identifier: MIT
/*
 * The FUSE low-level operations over an immutable image.
 *
 * inode = node index + 1, so the root is FUSE_ROOT_ID and lookup is a
 * binary search in the parent's sorted children.  Nothing ever changes, so
 * the kernel may cache everything: entries, attributes and negative lookups
 * for a long time, directory listings and page cache across opens.  Reads
 * are served straight from the container's mapping (fuse_reply_buf writes
 * from it; no bounce buffer).  Every operation that would modify anything
 * gets EROFS.  Each handler sends exactly one reply (forget: none).
 */
#define FUSE_USE_VERSION 312
#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "fuse/errors.h"
#include "fuse/fs.h"
#include "core/image.h"
#include "core/tree.h"

/* the tree never changes: let the kernel keep what it learns */
#define TFS_CACHE_TIMEOUT 86400.0

/* echo KiB > /sys/class/bdi/MAJ:MIN/read_ahead_kb; root only, best effort */
static void set_readahead(struct tfs_fs *fs)
{
	char path[96];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/bdi/%s/read_ahead_kb",
		 fs->bdi);
	f = fopen(path, "w");
	if (!f) {
		fuse_log(FUSE_LOG_DEBUG, "tensorfs: readahead: %s: %s\n", path,
			 strerror(errno));
		return;
	}
	fprintf(f, "%llu\n", (unsigned long long)(fs->readahead >> 10));
	if (fclose(f) != 0)
		fuse_log(FUSE_LOG_DEBUG, "tensorfs: readahead: %s: %s\n", path,
			 strerror(errno));
}

long long tfs_fs_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec;
}

static struct tfs_fs *fs_of(fuse_req_t req)
{
	struct tfs_fs *fs = fuse_req_userdata(req);

	if (fs->idle_watch)
		atomic_store_explicit(&fs->last_request, tfs_fs_now(),
				      memory_order_relaxed);
	if (fs->readahead && fs->bdi[0] &&
	    !atomic_load_explicit(&fs->readahead_done, memory_order_relaxed) &&
	    !atomic_exchange(&fs->readahead_done, true))
		set_readahead(fs);
	return fs;
}

/* the node of @ino, or TFS_NO_NODE for an inode we never handed out */
static uint32_t node_of(const struct tfs_fs *fs, fuse_ino_t ino)
{
	if (ino < 1 || ino > fs->img->tree->nnodes)
		return TFS_NO_NODE;
	return (uint32_t)(ino - 1);
}

/*
 * The 512-byte blocks du counts for @node, whose file is @size bytes: a
 * tensor's own bytes, not the .npy header before them; one block for any
 * other file that is not empty (metadata, the export, previews: made from
 * the tensors), so that du does not count the model twice.  Not 0: GNU
 * tar --sparse archives a file of 0 blocks as all holes, without reading it.
 */
static blkcnt_t node_blocks(const struct tfs_tree *t, uint32_t node,
			    uint64_t size)
{
	const struct tfs_node *n = &t->nodes[node];

	if (n->kind == TFS_NODE_TENSOR)
		size -= t->tensors[n->tensor].prefix_len;
	else if (size)
		return 1;
	return (blkcnt_t)(size / 512 + (size % 512 != 0));
}

static void fill_stat(const struct tfs_fs *fs, uint32_t node, struct stat *st)
{
	const struct tfs_tree *t = fs->img->tree;
	const struct tfs_node *n = &t->nodes[node];

	memset(st, 0, sizeof(*st));
	st->st_ino = node + 1;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_atim = fs->img->srcs[0].mtime;
	st->st_mtim = fs->img->srcs[0].mtime;
	st->st_ctim = fs->img->srcs[0].mtime;
	st->st_blksize = 4096;
	if (n->kind == TFS_NODE_DIR) {
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2 + n->nsubdirs;
	} else {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = (off_t)tfs_node_size(t, node);
		if (node == tfs_errors_node(fs->errors)) {
			size_t len = 0;
			char *s = tfs_errors_text(fs->errors, &len);

			if (s)
				st->st_size = (off_t)len;
			free(s);
		}
		st->st_blocks = node_blocks(t, node, (uint64_t)st->st_size);
	}
}

static void fill_entry(const struct tfs_fs *fs, uint32_t node,
		       struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = node + 1;
	e->generation = 1;
	e->attr_timeout = TFS_CACHE_TIMEOUT;
	e->entry_timeout = TFS_CACHE_TIMEOUT;
	fill_stat(fs, node, &e->attr);
	/* errors.json grows while mounted: never cache its size */
	if (node == tfs_errors_node(fs->errors))
		e->attr_timeout = 0;
}

static void tfs_init(void *userdata, struct fuse_conn_info *conn)
{
	struct tfs_fs *fs = userdata;

	if (conn->capable & FUSE_CAP_READDIRPLUS)
		conn->want |= FUSE_CAP_READDIRPLUS;
	/* no dirent or attr changes ever: let the kernel trust its cache */
	if (conn->capable & FUSE_CAP_CACHE_SYMLINKS)
		conn->want |= FUSE_CAP_CACHE_SYMLINKS;
	conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
	/*
	 * Directories need no open: the kernel's default for a filesystem
	 * without opendir is to cache the listing and the pages (what
	 * tfs_opendir answers), and it saves two requests per directory
	 * (OPENDIR, RELEASEDIR), 0.8 per entry of a first `ls -lR` of a
	 * mixture-of-experts model.  No POSIX ACLs either
	 * (FUSE_CAP_POSIX_ACL would make the kernel check ACLs on access,
	 * asking us): tfs_getxattr says such names are not supported.
	 * But not with auto_unmount: once the daemon is gone, fusermount3
	 * unmounts only if opening the mount point fails with ENOTCONN, and
	 * a kernel that opens directories itself lets that open succeed (a
	 * killed daemon left a dead mount once any directory had been read).
	 */
	if ((conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT) &&
	    !fs->auto_unmount) {
		conn->want |= FUSE_CAP_NO_OPENDIR_SUPPORT;
		fs->no_opendir = true;
	}
}

static void tfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct tfs_fs *fs = fs_of(req);
	struct fuse_entry_param e;
	uint32_t dir = node_of(fs, parent), child;

	if (dir == TFS_NO_NODE) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (fs->img->tree->nodes[dir].kind != TFS_NODE_DIR) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	child = tfs_tree_lookup(fs->img->tree, dir, name, strlen(name));
	if (child == TFS_NO_NODE) {
		/* a zero-inode entry: the kernel caches the negative answer */
		memset(&e, 0, sizeof(e));
		e.entry_timeout = TFS_CACHE_TIMEOUT;
		fuse_reply_entry(req, &e);
		return;
	}
	fill_entry(fs, child, &e);
	fuse_reply_entry(req, &e);
}

static void tfs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	(void)ino;
	(void)nlookup;
	fuse_reply_none(req); /* nodes live as long as the mount */
}

static void tfs_forget_multi(fuse_req_t req, size_t count,
			     struct fuse_forget_data *forgets)
{
	(void)count;
	(void)forgets;
	fuse_reply_none(req);
}

static void tfs_getattr(fuse_req_t req, fuse_ino_t ino,
			struct fuse_file_info *fi)
{
	struct tfs_fs *fs = fs_of(req);
	uint32_t node = node_of(fs, ino);
	struct stat st;

	(void)fi;
	if (node == TFS_NO_NODE) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fill_stat(fs, node, &st);
	fuse_reply_attr(
		req, &st,
		node == tfs_errors_node(fs->errors) ? 0 : TFS_CACHE_TIMEOUT);
}

static void tfs_opendir(fuse_req_t req, fuse_ino_t ino,
			struct fuse_file_info *fi)
{
	struct tfs_fs *fs = fs_of(req);
	uint32_t node = node_of(fs, ino);

	if (fs->no_opendir) { /* once: the kernel asks no more (tfs_init) */
		fuse_reply_err(req, ENOSYS);
		return;
	}
	if (node == TFS_NO_NODE) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (fs->img->tree->nodes[node].kind != TFS_NODE_DIR) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	fi->cache_readdir = 1;
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

/*
 * Directory offsets: 0 ".", 1 "..", 2 + i the i-th child.  The offset
 * stored with an entry is the offset of the next one.
 */
static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       bool plus)
{
	struct tfs_fs *fs = fs_of(req);
	const struct tfs_tree *t = fs->img->tree;
	uint32_t node = node_of(fs, ino), child;
	const struct tfs_node *d;
	struct fuse_entry_param e;
	const char *name;
	size_t pos = 0, need;
	char *buf;

	if (node == TFS_NO_NODE) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	d = &t->nodes[node];
	if (d->kind != TFS_NODE_DIR) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	tfs_tree_dir_ready(t, node);
	buf = malloc(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	for (; off >= 0 && (uint64_t)off < 2ull + d->nchildren; off++) {
		if (off == 0) {
			child = node;
			name = ".";
		} else if (off == 1) {
			child = d->parent;
			name = "..";
		} else {
			child = t->children[d->first_child + (uint32_t)off - 2];
			name = t->nodes[child].name;
		}
		fill_entry(fs, child, &e);
		if (plus)
			need = fuse_add_direntry_plus(
				req, buf + pos, size - pos, name, &e, off + 1);
		else
			need = fuse_add_direntry(req, buf + pos, size - pos,
						 name, &e.attr, off + 1);
		if (need > size - pos)
			break;
		pos += need;
	}
	fuse_reply_buf(req, buf, pos);
	free(buf);
}

static void tfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
			struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, false);
}

static void tfs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			    off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, true);
}

static void tfs_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct tfs_fs *fs = fs_of(req);
	uint32_t node = node_of(fs, ino);

	if (node == TFS_NO_NODE) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (fs->img->tree->nodes[node].kind == TFS_NODE_DIR) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY ||
	    (fi->flags & (O_TRUNC | O_APPEND))) {
		fuse_reply_err(req, EROFS);
		return;
	}
	if (node == tfs_errors_node(fs->errors))
		fi->direct_io = 1; /* its bytes change: read them each time */
	else
		fi->keep_cache = 1;
	if (fuse_reply_open(req, fi) == 0 && fs->idle_watch)
		atomic_fetch_add(&fs->open_files, 1);
}

static void tfs_release(fuse_req_t req, fuse_ino_t ino,
			struct fuse_file_info *fi)
{
	struct tfs_fs *fs = fs_of(req);

	if (fs->idle_watch)
		atomic_fetch_sub(&fs->open_files, 1);
	fuse_reply_err(req, 0);
}

/* .tensorfs/errors.json as it is now */
static void read_errors(fuse_req_t req, struct tfs_fs *fs, size_t size,
			off_t off)
{
	size_t len = 0;
	char *s = tfs_errors_text(fs->errors, &len);

	if (!s) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if ((uint64_t)off >= len)
		fuse_reply_buf(req, NULL, 0);
	else
		fuse_reply_buf(req, s + off,
			       len - (size_t)off < size ? len - (size_t)off
							: size);
	free(s);
}

static void tfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	struct tfs_fs *fs = fs_of(req);
	uint32_t node = node_of(fs, ino);
	struct tfs_view v;
	int ret;

	(void)fi;
	if (node == TFS_NO_NODE || off < 0) {
		fuse_reply_err(req, node == TFS_NO_NODE ? ENOENT : EINVAL);
		return;
	}
	if (node == tfs_errors_node(fs->errors)) {
		read_errors(req, fs, size, off);
		return;
	}
	ret = tfs_image_read(fs->img, node, (uint64_t)off, size, &v);
	if (ret) {
		/* integrity failures were logged once, with their reason */
		if (ret == -EIO && !tfs_image_node_failed(fs->img, node))
			fuse_log(FUSE_LOG_ERR,
				 "tensorfs: %s: read of '%s' at %lld failed: "
				 "the container no longer holds these bytes "
				 "(truncated or replaced?)\n",
				 fs->img->path, fs->img->tree->nodes[node].name,
				 (long long)off);
		fuse_reply_err(req, -ret);
		return;
	}
	fuse_reply_buf(req, v.data, v.len);
	/* the mount's page cache holds these bytes now (keep_cache) */
	if (fs->drop_source_cache)
		tfs_image_drop_source_cache(fs->img, node, (uint64_t)off,
					    v.len);
	tfs_view_release(fs->img, &v);
}

static void tfs_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct tfs_fs *fs = fs_of(req);
	struct statvfs sv;

	(void)ino;
	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = 4096;
	sv.f_frsize = 4096;
	sv.f_blocks = (fs->img->tree->total_bytes + 4095) / 4096;
	sv.f_files = fs->img->tree->nnodes;
	sv.f_namemax = 255;
	sv.f_flag = ST_RDONLY | ST_NOSUID | ST_NODEV;
	fuse_reply_statfs(req, &sv);
}

/*
 * getxattr of @name, or listxattr (@name NULL): size 0 asks for the
 * length; too small a buffer is ERANGE.  The kernel asks at most 64 KiB.
 */
static void reply_xattr(fuse_req_t req, size_t size, struct tfs_image *img,
			uint32_t node, const char *name)
{
	const struct tfs_tree *t = img->tree;
	char *buf = NULL;
	ssize_t n;

	if (size > 65536)
		size = 65536;
	if (size && !(buf = malloc(size))) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	/* a view's own (a picture's value scale: made with the picture) */
	n = name ? tfs_image_view_getxattr(img, node, name, buf, size)
		 : -ENODATA;
	if (n == -ENODATA)
		n = name ? tfs_tree_getxattr(t, node, name, buf, size)
			 : tfs_tree_listxattr(t, node, buf, size);
	if (!name && n >= 0)
		n = tfs_image_view_listxattr(img, node, buf, size, (size_t)n);
	if (n < 0)
		fuse_reply_err(req, (int)-n);
	else if (size == 0)
		fuse_reply_xattr(req, (size_t)n);
	else
		fuse_reply_buf(req, buf, (size_t)n);
	free(buf);
}

static void tfs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			 size_t size)
{
	struct tfs_fs *fs = fs_of(req);
	uint32_t node = node_of(fs, ino);

	if (node == TFS_NO_NODE) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	/*
	 * Only user.* names exist.  security.selinux and system.posix_acl_*
	 * are "not supported", not "absent": `ls -l` then stops asking for
	 * the whole filesystem after one file (coreutils caches ENOTSUP per
	 * device), 2.4 requests fewer per entry of a first `ls -lR`
	 */
	if (strncmp(name, "user.", 5) != 0) {
		fuse_reply_err(req, EOPNOTSUPP);
		return;
	}
	reply_xattr(req, size, fs->img, node, name);
}

static void tfs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	struct tfs_fs *fs = fs_of(req);
	uint32_t node = node_of(fs, ino);

	if (node == TFS_NO_NODE) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	reply_xattr(req, size, fs->img, node, NULL);
}

/* ---- everything that would write ----------------------------------------- */

static void erofs(fuse_req_t req)
{
	fuse_reply_err(req, EROFS);
}

static void tfs_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
			int to_set, struct fuse_file_info *fi)
{
	erofs(req);
}

static void tfs_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, dev_t rdev)
{
	erofs(req);
}

static void tfs_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode)
{
	erofs(req);
}

static void tfs_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	erofs(req);
}

static void tfs_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
			const char *name)
{
	erofs(req);
}

static void tfs_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		       fuse_ino_t newparent, const char *newname,
		       unsigned int flags)
{
	erofs(req);
}

static void tfs_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		     const char *newname)
{
	erofs(req);
}

static void tfs_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		      size_t size, off_t off, struct fuse_file_info *fi)
{
	erofs(req);
}

static void tfs_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		       mode_t mode, struct fuse_file_info *fi)
{
	erofs(req);
}

static void tfs_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			 const char *value, size_t size, int flags)
{
	erofs(req);
}

static void tfs_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	erofs(req);
}

static void tfs_fallocate(fuse_req_t req, fuse_ino_t ino, int mode,
			  off_t offset, off_t length, struct fuse_file_info *fi)
{
	erofs(req);
}

const struct fuse_lowlevel_ops tfs_fuse_ops = {
	.init = tfs_init,
	.lookup = tfs_lookup,
	.forget = tfs_forget,
	.forget_multi = tfs_forget_multi,
	.getattr = tfs_getattr,
	.opendir = tfs_opendir,
	.readdir = tfs_readdir,
	.readdirplus = tfs_readdirplus,
	.open = tfs_open,
	.read = tfs_read,
	.release = tfs_release,
	.statfs = tfs_statfs,
	.getxattr = tfs_getxattr,
	.listxattr = tfs_listxattr,
	.setattr = tfs_setattr,
	.mknod = tfs_mknod,
	.mkdir = tfs_mkdir,
	.unlink = tfs_unlink,
	.rmdir = tfs_unlink,
	.symlink = tfs_symlink,
	.rename = tfs_rename,
	.link = tfs_link,
	.write = tfs_write,
	.create = tfs_create,
	.setxattr = tfs_setxattr,
	.removexattr = tfs_removexattr,
	.fallocate = tfs_fallocate,
};
